"""Verdict rules at the language-model scales, on synthetic eval.csv / steps.csv: every rule gives every verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from gdpo.reporting import claims, verdicts
from gdpo.reporting.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, Evidence

REPORTING = {
    "figures": {"fig5": "math", "fig8": "math",
                "fig6": {"1.0": {"plain": "math"}, "0.75": {"plain": "math_w075"}, "0.5": {"plain": "math_w05"},
                         "0.25": {"plain": "math_w025"}}},
    "tables": {"table1": {"Qwen2.5-1.5B": "tool"}, "table3": {"R1-1.5B": "math"},
               "table4": {"R1-7B": "math_cond"}, "table5": {"2obj": "code", "3obj": "code3"}},
}


def eval_rows(task: str, values: dict[tuple[str, str], list[float]], benchmark: str = "bench") -> list[dict]:
    """eval.csv rows: ``values[(method, metric)]`` lists one value per seed (seeds 0, 1, …)."""
    return [{"task": task, "method": method, "seed": seed, "benchmark": benchmark, "metric": metric,
             "value": value, "n_items": 20, "note": ""}
            for (method, metric), per_seed in values.items() for seed, value in enumerate(per_seed)]


def evidence(*row_lists, steps: pd.DataFrame | None = None, reporting=REPORTING) -> Evidence:
    evals = pd.DataFrame([row for rows in row_lists for row in rows])
    return Evidence(evals, steps, reporting, "mini")


# --- C3: GDPO beats GRPO on accuracy and format --------------------------------------------------------

@pytest.mark.parametrize(("gdpo_avg", "gdpo_format", "expected"), [
    ([12, 13, 12.5], [80, 82, 81], REPRODUCED),       # both differences clearly above 0
    ([8, 7, 7.5], [80, 82, 81], NOT_REPRODUCED),      # accuracy clearly below GRPO's
    ([12, 8, 10.5], [80, 82, 81], INCONCLUSIVE),      # accuracy difference spans 0
])
def test_c3_gives_each_verdict(gdpo_avg, gdpo_format, expected):
    rows = eval_rows("tool", {("grpo", "avg"): [10, 10, 10], ("grpo", "format"): [70, 71, 70],
                              ("gdpo", "avg"): gdpo_avg, ("gdpo", "format"): gdpo_format})
    verdict = verdicts.rule_c3(evidence(rows))
    assert verdict.verdict == expected, verdict
    assert "Qwen2.5-1.5B (tool, 3 seeds)" in verdict.measured_value


def test_c3_not_run_names_the_missing_run_or_mapping():
    rows = eval_rows("tool", {("grpo", "avg"): [10, 10], ("grpo", "format"): [70, 71]})
    missing = verdicts.rule_c3(evidence(rows))
    assert missing.verdict == NOT_RUN and "no 'avg' for tool/gdpo" in missing.evidence
    unmapped = verdicts.rule_c3(evidence(rows, reporting={}))
    assert unmapped.verdict == NOT_RUN and "maps no task to table1" in unmapped.evidence
    absent = verdicts.rule_c3(Evidence(None, None, REPORTING, "mini"))
    assert absent.verdict == NOT_RUN and "aggregate rule has not run" in absent.evidence


def test_one_seed_has_no_interval_and_is_inconclusive():
    rows = eval_rows("tool", {("grpo", "avg"): [10], ("grpo", "format"): [70], ("gdpo", "avg"): [20],
                              ("gdpo", "format"): [90]})
    verdict = verdicts.rule_c3(evidence(rows))
    assert verdict.verdict == INCONCLUSIVE and "1 seed, no interval" in verdict.measured_value


def test_benchmarks_of_a_task_are_averaged_per_seed():
    rows = (eval_rows("math", {("gdpo", "acc"): [10, 20]}, benchmark="a")
            + eval_rows("math", {("gdpo", "acc"): [30, 40]}, benchmark="b"))
    assert evidence(rows).per_seed("math", "gdpo", "acc").tolist() == [20.0, 30.0]


# --- C4: GRPO w/o std never learns format --------------------------------------------------------------

@pytest.mark.parametrize(("nostd_format", "expected"), [
    ([1, 0, 2], REPRODUCED),          # stays at the base's 1 %, GDPO far above
    ([40, 45, 42], NOT_REPRODUCED),   # learns format
    ([1, 12, 4], INCONCLUSIVE),       # the rise's interval reaches past the 5-point margin
])
def test_c4_gives_each_verdict(nostd_format, expected):
    rows = eval_rows("tool", {("base", "format"): [1.0], ("grpo_nostd", "format"): nostd_format,
                              ("gdpo", "format"): [60, 65, 62]})
    assert verdicts.rule_c4(evidence(rows)).verdict == expected


def test_c4_not_run_without_the_base_model():
    rows = eval_rows("tool", {("grpo_nostd", "format"): [1, 2], ("gdpo", "format"): [60, 65]})
    verdict = verdicts.rule_c4(evidence(rows))
    assert verdict.verdict == NOT_RUN and "tool/base" in verdict.evidence


# --- C6, C8: math accuracy up, Exceed down ------------------------------------------------------------

@pytest.mark.parametrize(("rule", "task"), [(verdicts.rule_c6, "math"), (verdicts.rule_c8, "math_cond")])
@pytest.mark.parametrize(("gdpo_exceed", "expected"), [
    ([5, 6, 5], REPRODUCED), ([30, 31, 32], NOT_REPRODUCED), ([5, 25, 15], INCONCLUSIVE)])
def test_math_tables_give_each_verdict(rule, task, gdpo_exceed, expected):
    rows = eval_rows(task, {("grpo", "acc"): [20, 21, 20], ("grpo", "exceed"): [20, 21, 20],
                            ("gdpo", "acc"): [25, 26, 26], ("gdpo", "exceed"): gdpo_exceed})
    assert rule(evidence(rows)).verdict == expected


def test_c8_not_run_when_no_conditioned_task_is_mapped():
    verdict = verdicts.rule_c8(evidence([], reporting={"tables": {"table3": {"R1-1.5B": "math"}}}))
    assert verdict.verdict == NOT_RUN and "table4" in verdict.evidence


# --- C9: code keeps pass, lowers Exceed (and bug with 3 objectives) -------------------------------------

@pytest.mark.parametrize(("gdpo_pass", "gdpo_bug", "expected"), [
    ([50, 51, 50], [5, 6, 5], REPRODUCED),
    ([30, 31, 30], [5, 6, 5], NOT_REPRODUCED),      # the pass rate drops clearly
    ([50, 51, 50], [20, 22, 21], NOT_REPRODUCED),   # 3obj: more bugs
    ([50, 40, 60], [5, 6, 5], INCONCLUSIVE),        # pass interval reaches below −5 points
])
def test_c9_gives_each_verdict(gdpo_pass, gdpo_bug, expected):
    def rows(task):
        return eval_rows(task, {("grpo", "pass"): [50, 50, 51], ("grpo", "exceed"): [30, 31, 30],
                                ("grpo", "bug"): [10, 11, 10], ("gdpo", "pass"): gdpo_pass,
                                ("gdpo", "exceed"): [10, 11, 10], ("gdpo", "bug"): gdpo_bug})
    assert verdicts.rule_c9(evidence(rows("code"), rows("code3"))).verdict == expected


def test_c9_two_objectives_ignore_bug():
    rows = eval_rows("code", {("grpo", "pass"): [50, 50, 51], ("grpo", "exceed"): [30, 31, 30],
                              ("gdpo", "pass"): [50, 51, 50], ("gdpo", "exceed"): [10, 11, 10]})
    only_2obj = {"tables": {"table5": {"2obj": "code"}}}
    assert verdicts.rule_c9(evidence(rows, reporting=only_2obj)).verdict == REPRODUCED


# --- C7: the length-weight sweep ----------------------------------------------------------------------

@pytest.mark.parametrize(("w05_acc", "w025_acc", "expected"), [
    ([30, 31, 30], [10, 11, 10], REPRODUCED),       # 0.5 barely changes, 0.25 changes
    ([10, 11, 10], [10, 11, 10], NOT_REPRODUCED),   # 0.5 already changes
    ([30, 31, 30], [25, 36, 30], INCONCLUSIVE),     # 0.25's interval straddles the margin
])
def test_c7_gives_each_verdict(w05_acc, w025_acc, expected):
    def sweep(task, acc):
        return eval_rows(task, {(m, "acc"): acc for m in ("grpo", "gdpo")} | {(m, "exceed"): [5, 6, 5] for m in ("grpo", "gdpo")})
    rows = sweep("math", [30, 31, 30]) + sweep("math_w075", [30, 30, 31]) + sweep("math_w05", w05_acc) + sweep(
        "math_w025", w025_acc)
    assert verdicts.rule_c7(evidence(rows)).verdict == expected


def test_c7_not_run_without_all_four_weights():
    reporting = {"figures": {"fig6": {"1.0": {"plain": "math"}, "0.25": {"plain": "math_w025"}}}}
    verdict = verdicts.rule_c7(evidence([], reporting=reporting))
    assert verdict.verdict == NOT_RUN and "0.75, 0.5 and 0.25" in verdict.evidence


# --- C5 and C10: from the training curves -------------------------------------------------------------

def curve_rows(task: str, method: str, seed: int, correct: list[float], max_length: list[float]) -> list[dict]:
    return [{"task": task, "method": method, "seed": seed, "step": step + 1, "rewards/correct/mean": c,
             "completions/max_length": length} for step, (c, length) in enumerate(zip(correct, max_length))]


STABLE = ([0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.72, 0.75], [60] * 10)
COLLAPSE = ([0.2, 0.3, 0.4, 0.5, 0.5, 0.2, 0.1, 0.05, 0.0, 0.0], [60, 60, 60, 60, 60, 90, 120, 128, 128, 128])


@pytest.mark.parametrize(("grpo_curves", "expected"), [
    ([COLLAPSE, COLLAPSE, COLLAPSE], REPRODUCED),      # GRPO diverges on every seed, GDPO never
    ([STABLE, STABLE, STABLE], NOT_REPRODUCED),        # neither diverges
    ([COLLAPSE, STABLE, STABLE], INCONCLUSIVE),        # one seed of three
])
def test_c5_gives_each_verdict(grpo_curves, expected):
    rows = []
    for seed, curve in enumerate(grpo_curves):
        rows += curve_rows("math", "grpo", seed, *curve) + curve_rows("math", "gdpo", seed, *STABLE)
    verdict = verdicts.rule_c5(evidence([], steps=pd.DataFrame(rows)))
    assert verdict.verdict == expected, verdict
    assert "over 10 steps" in verdict.measured_value


def test_c5_not_run_without_steps_or_grpo_runs():
    assert verdicts.rule_c5(evidence([])).verdict == NOT_RUN
    only_gdpo = pd.DataFrame(curve_rows("math", "gdpo", 0, *STABLE))
    assert verdicts.rule_c5(evidence([], steps=only_gdpo)).verdict == NOT_RUN


FLAT = ([0.5, 0.4, 0.45, 0.4, 0.5, 0.45, 0.4, 0.4], [60] * 8)
RISING = ([0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7], [60] * 8)


@pytest.mark.parametrize(("nobn", "expected"), [
    ([FLAT, FLAT, FLAT], REPRODUCED), ([RISING, RISING, RISING], NOT_REPRODUCED), ([FLAT, RISING, RISING], INCONCLUSIVE)])
def test_c10_gives_each_verdict(nobn, expected):
    rows = []
    for seed, curve in enumerate(nobn):
        rows += curve_rows("math", "gdpo_nobn", seed, *curve) + curve_rows("math", "gdpo", seed, *RISING)
    assert verdicts.rule_c10(evidence([], steps=pd.DataFrame(rows))).verdict == expected


# --- C11 and the ledger ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("family_verdicts", "expected"), [
    ({"C3": REPRODUCED, "C6": REPRODUCED, "C9": REPRODUCED}, REPRODUCED),
    ({"C3": REPRODUCED, "C6": NOT_REPRODUCED, "C9": REPRODUCED}, NOT_REPRODUCED),
    ({"C3": REPRODUCED, "C6": INCONCLUSIVE, "C9": REPRODUCED}, INCONCLUSIVE),
    ({"C3": REPRODUCED, "C6": NOT_RUN, "C9": REPRODUCED}, NOT_RUN),
])
def test_c11_combines_the_families(family_verdicts, expected):
    assert verdicts.rule_c11(family_verdicts).verdict == expected


def test_ledger_has_a_row_per_claim_at_the_scale_with_rules_over_the_summaries(tmp_path):
    rows = eval_rows("tool", {("grpo", "avg"): [10, 10, 10], ("grpo", "format"): [70, 71, 70],
                              ("gdpo", "avg"): [12, 13, 12.5], ("gdpo", "format"): [80, 82, 81]})
    eval_csv = tmp_path / "eval.csv"
    pd.DataFrame(rows).to_csv(eval_csv, index=False)
    ledger = claims.build_ledger("mini", None, eval_csv=eval_csv, steps_csv=tmp_path / "absent.csv",
                                 reporting=REPORTING)
    mini = ledger[ledger.scale == "mini"].set_index("claim_id")
    assert list(mini.index) == [f"C{i}" for i in range(3, 12)]
    assert mini.loc["C3", "verdict"] == REPRODUCED
    assert mini.loc["C5", "verdict"] == NOT_RUN and "absent.csv" in mini.loc["C5", "evidence"]
    assert mini.loc["C6", "verdict"] == NOT_RUN and "math/gdpo" in mini.loc["C6", "evidence"]
    assert mini.loc["C11", "verdict"] == NOT_RUN and "C6, C9 not run" in mini.loc["C11", "evidence"]


def test_event_rates_need_two_seeds():
    rows = curve_rows("math", "grpo", 0, *COLLAPSE) + curve_rows("math", "gdpo", 0, *STABLE)
    verdict = verdicts.rule_c5(evidence([], steps=pd.DataFrame(rows)))
    assert verdict.verdict == INCONCLUSIVE and "no interval" in verdict.measured_value
