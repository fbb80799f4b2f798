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
        "out/table3_math.csv", "out/table3_math.md"]
    assert planned_outputs({"scale": "mini", "tasks": {}}, "out") == []


@pytest.mark.parametrize("reporting", [
    {"figures": {"fig5": "nope"}},  # a figure's task
    {"figures": {"fig6": {0.5: {"plain": "m", "conditioned": "nope"}}}},  # a sweep variant
    {"tables": {"table1": {"Qwen2.5-1.5B": "nope"}}},  # a table's model row
])
def test_a_task_the_config_does_not_define_is_named(reporting):
    with pytest.raises(ValueError, match=r"task\(s\) \['nope'\] that the config does not define"):
        planned_outputs({**CONFIG, "reporting": reporting}, "out")
