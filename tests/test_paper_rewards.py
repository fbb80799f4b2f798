"""Each paper config trains every task on the rewards of the paper's setup it stands for (docs/PAPER.md §3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdpo.config import merge_configs, read_yaml
from gdpo.plan import resolve_run_settings
from gdpo.tasks import family_spec

REPO = Path(__file__).resolve().parents[1]

#: The paper's rewards per setup: tool calling R_format + R_correct; math R_correct + R_length (Table 3), the
#: conditioned length reward in place of the plain one (Table 4); code R_pass + R̃_length (2 objectives) and
#: R_bug added (3 objectives, Table 5).
PAPER_REWARDS = {"tool_calling": {"correct", "format"}, "math": {"correct", "length"},
                 "math_conditioned": {"correct", "length_conditioned"},
                 "code_2obj": {"pass", "length_conditioned"}, "code_3obj": {"pass", "length_conditioned", "bug"}}


def _setup(task: str, family: str, names: tuple[str, ...]) -> str:
    if family == "code":
        return "code_3obj" if "bug" in names else "code_2obj"
    return "math_conditioned" if family == "math" and "length_conditioned" in names else family


@pytest.mark.parametrize("name", ["paper-math", "paper-tool_calling", "paper-code", "cpu-evidence-2",
                                  "cpu-evidence-2+overlays/cpu-evidence-2-pilot", "mini"])
def test_every_task_trains_on_its_paper_setups_rewards(name):
    """Each task of a shipped config (``a+b``: config a merged with b, as snakemake merges config files)."""
    config = merge_configs(read_yaml((REPO / "config" / f"{part}.yaml").read_text(encoding="utf-8"))
                           for part in name.split("+"))
    for task, spec in config["tasks"].items():
        method = (spec.get("methods") or config["methods"])[0]
        settings = resolve_run_settings(config, task, method, 0)
        setup = _setup(task, spec["family"], settings.reward_names)
        assert set(settings.reward_names) == PAPER_REWARDS[setup], (name, task, settings.reward_names)
        # the conditioned math tasks are the ones that say so; no task trains on both length rewards
        if spec["family"] == "math":
            assert ("conditioned" in task) == (setup == "math_conditioned"), (name, task)


def test_a_math_task_without_reward_weights_trains_on_correctness_and_length_only():
    """The paper's Table 3 runs: R_correct + R_length. (The family's default once held the conditioned length
    reward too, so that paper-math's three main tasks trained on three rewards.)"""
    assert family_spec("math").default_rewards == ("correct", "length")
    config = read_yaml((REPO / "config" / "paper-math.yaml").read_text(encoding="utf-8"))
    for task in ("math_r1_1.5b", "math_r1_7b", "math_qwen3_4b"):
        assert "reward_weights" not in config["tasks"][task]
        settings = resolve_run_settings(config, task, "gdpo", 0)
        assert settings.reward_names == ("correct", "length") and settings.reward_weights == (1.0, 1.0)
