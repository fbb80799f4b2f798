"""Evaluation and warm-up settings (gdpo.plan): the JSON every planned job gets, byte for byte.

Snakemake re-runs a job whose settings text changes, and the committed evidence of scale cpu-evidence stores each
evaluation's settings, which the rule ``restore_eval`` compares with the config's. So the text of every shipped
config's settings is pinned: ``tests/data/eval_settings_golden.json`` holds it as the code at commit 3bc5d8f
wrote it (``json.dumps`` of the dicts ``resolve_eval_settings`` and ``resolve_warmup_settings`` returned then).
A deliberate change of a shipped config's evaluation or warm-up changes its entries: update them in the same
commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdpo.config import apply_grid, apply_miniature, read_yaml, validate_config
from gdpo.plan import plan_evaluations, resolve_eval_settings, resolve_warmup_settings
from tests.test_plan import CONFIGS

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "data" / "eval_settings_golden.json"
OVERLAY = REPO / "config" / "overlays" / "miniature.yaml"


def planned_configs() -> dict[str, dict]:
    """Every config the workflow plans from the shipped files, built as common.smk builds it (validated, its
    grid applied, its miniature block applied): each of ``CONFIGS`` under each grid it has, and each paper
    config with the miniature overlay. Named ``<config>:<grid>`` and ``<config>+miniature``."""
    configs = {}
    for name in CONFIGS:
        config = read_yaml((REPO / "config" / f"{name}.yaml").read_text(encoding="utf-8"))
        variants = {f"{name}:{grid}": {**config, "grid": grid}
                    for grid in ("default", "full") if grid == "default" or config.get("full_grid")}
        if name.startswith("paper-"):
            variants[f"{name}+miniature"] = {**config, **read_yaml(OVERLAY.read_text(encoding="utf-8"))}
        for label, variant in variants.items():
            validate_config(variant)
            variant = apply_miniature(apply_grid(variant))
            validate_config(variant)
            configs[label] = variant
    return configs


def settings_texts() -> dict[str, dict[str, str]]:
    """The settings text of every planned evaluation (``<config>/<task>/<method>/seed<seed>``) and of every
    task's warm-up (``<config>/<task>``; ``null`` for a task without one)."""
    texts: dict[str, dict[str, str]] = {"evaluate": {}, "warmup": {}}
    for label, config in planned_configs().items():
        for key in plan_evaluations(config):
            settings = resolve_eval_settings(config, key.task, key.method, key.seed)
            texts["evaluate"][f"{label}/{key.task}/{key.method}/seed{key.seed}"] = json.dumps(settings)
        for task in config["tasks"]:
            texts["warmup"][f"{label}/{task}"] = json.dumps(resolve_warmup_settings(config, task))
    return texts


def test_every_shipped_config_is_covered():
    assert sorted(path.stem for path in (REPO / "config").glob("*.yaml")) == sorted(CONFIGS)


@pytest.mark.parametrize("kind", ["evaluate", "warmup"])
def test_every_planned_jobs_settings_text_is_the_committed_one(kind):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))[kind]
    texts = settings_texts()[kind]
    assert list(texts) == list(golden)
    for name, text in texts.items():
        assert text == golden[name], name
