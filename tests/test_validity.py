"""Validity before verdicts (gdpo.reporting.verdicts.validity): each condition trips and passes, the paper's own
setup passes every one, and the committed cpu-evidence experiment trips C4, C5 and C6 as measured."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gdpo.config import load_config
from gdpo.plan import describe_runs
from gdpo.reporting import ledger, paper_numbers as pn
from gdpo.reporting.calibration import TableDesign, designs_from_config, power_of
from gdpo.reporting.contract import (
    DECISIVE, INCONCLUSIVE, NOT_REPRODUCED, NOT_TESTED, REPRODUCED, VERDICTS,
)
from gdpo.reporting.verdicts import model, validity
from gdpo.reporting.verdicts.model_evidence import Evidence

ROOT = Path(__file__).resolve().parents[1]
CPU = ROOT / "paper_figures" / "cpu-evidence"


def test_not_tested_is_a_verdict_that_decides_nothing_and_the_ledger_explains_it():
    assert NOT_TESTED in VERDICTS and NOT_TESTED not in DECISIVE
    assert NOT_TESTED in ledger.VERDICT_MEANINGS and "validity" in ledger.LEDGER_COLUMNS
    assert "| `not tested` |" in (ROOT / "docs" / "ledger.md").read_text(encoding="utf-8")


# --- each condition: a case that trips it and one that passes ---------------------------------------------

@pytest.mark.parametrize(("condition", "passed"), [
    (validity.start_format("C4", 47.3), False),
    (validity.start_format("C4", 4.74), True),
    (validity.training_signal("C5", {"grpo": [0.0, 0.025], "gdpo": [0.23, 0.0]}, "steps 301–500"), False),
    (validity.training_signal("C5", {"grpo": [0.9, 0.6], "gdpo": [0.7, 0.95]}, "steps 301–500"), True),
    (validity.training_signal("C10", {"gdpo_nobn": [0.2, 0.3, 0.9], "gdpo": [0.9, 0.9, 0.9]}, "steps 1–100"), False),
    (validity.length_cap_room("C5", 96, 64), False),
    (validity.length_cap_room("C5", 8000, 4000), True),
    (validity.length_reached("C5", {"grpo": 40, "gdpo": 128}, 64), False),
    (validity.length_reached("C5", {"grpo": 64, "gdpo": 128}, 64), True),
    (validity.accuracy_band("C6", {"gdpo": 99.0, "grpo": 97.5}), False),
    (validity.accuracy_band("C6", {"gdpo": 2.0, "grpo": 30.0}), False),
    (validity.accuracy_band("C6", {"gdpo": 74.4, "grpo": 72.8}), True),
    (validity.exceed_room("C6", 0.0), False),
    (validity.exceed_room("C8", 6.2), True),
    (validity.declining_trainable("C3", 0.0, "bfcl_v3_split"), False),
    (validity.declining_trainable("C3", 0.2, "bfcl_v3_split"), True),
    (validity.declining_trainable("C3", None, "bfcl_v3_split"), True),
    # the math pilot trained on three- and four-term sums: length varied in 1-3 % of groups
    (validity.rewards_vary("C6", {"correct": 0.25, "length": 0.022}, ("grpo", "gdpo")), False),
    (validity.rewards_vary("C3", {"correct": 0.6, "format": 0.1}, ("grpo", "gdpo")), True),
    (validity.estimators_differ("C6", 0.05, ("grpo", "gdpo")), False),
    (validity.estimators_differ("C3", 0.1, ("grpo", "gdpo")), True),
    (validity.start_exceeded("C3", {"gdpo": 6.1, "grpo": 5.7}, 20.5), False),
    (validity.start_exceeded("C3", {"gdpo": 6.1, "grpo": 5.7}, 6.1), False),
    (validity.start_exceeded("C3", {"gdpo": 21.0, "grpo": 5.7}, 20.5), True),
    # both arms lose more than 5 points of the start's accuracy: the part compares ways of losing
    (validity.accuracy_kept("C6", {"gdpo": 31.0, "grpo": 30.0}, 36.7), False),
    (validity.accuracy_kept("C6", {"gdpo": 31.7, "grpo": 30.0}, 36.7), True),
    # the paper's Qwen3-4B: GRPO 1.3 points below its base
    (validity.accuracy_kept("C6", {"grpo": 58.7}, 60.0), True),
    (validity.collapse_leaves_comparison("C6", {"gdpo": (4, 6), "grpo": (6, 6)}), False),
    (validity.collapse_leaves_comparison("C6", {"gdpo": (4, 6), "grpo": (3, 6)}), True),
])
def test_each_condition_trips_and_passes(condition, passed):
    assert condition.passed is passed
    assert condition.summary().split(": ", 1)[1].startswith("passed" if passed else "failed")


def test_a_value_the_evidence_does_not_record_is_not_checked_and_never_fails():
    for condition in (validity.start_format("C4", float("nan")), validity.length_cap_room("C5", None, 64),
                      validity.length_reached("C5", {}, 64), validity.training_signal("C5", {}, "the window"),
                      validity.declining_trainable("C3", None, "toolrl"), validity.rewards_vary("C6", {}, ("gdpo",)),
                      validity.estimators_differ("C6", None, ("gdpo",)),
                      validity.accuracy_kept("C6", {"gdpo": 30.0}, float("nan")),
                      validity.start_exceeded("C4", {"grpo": 30.0}, float("nan"))):
        assert condition.passed is None and condition.status == validity.NOT_CHECKED
    assert validity.gated({"acc": REPRODUCED}, [validity.start_format("C4", float("nan"))])[0] == REPRODUCED


def test_the_failed_text_names_the_measured_value_and_the_threshold():
    text = validity.failed_text([validity.start_format("C4", 47.29), validity.start_format("C4", 3.0)])
    assert text == ("the RL start's format is 47.3 %; the claim needs a start below 10 % (else it tests whether a "
                    "format is kept, not learned)")


def test_a_failed_part_condition_leaves_the_claim_decided_on_its_other_parts():
    parts = {"R1-7B acc": REPRODUCED, "R1-7B exceed": NOT_REPRODUCED}
    exceed = validity.exceed_room("C8", 0.0, "R1-7B")
    outcome, gated, note = validity.gated(parts, [exceed])
    assert outcome == REPRODUCED and gated == {"R1-7B acc": REPRODUCED, "R1-7B exceed": NOT_TESTED}
    assert note == "decided on R1-7B acc only (R1-7B exceed not tested)"
    # a condition on another setup leaves these parts alone
    assert validity.gated(parts, [validity.exceed_room("C8", 0.0, "R1-1.5B")])[0] == NOT_REPRODUCED
    # every part untested, or a whole-claim condition failed: the claim is not tested, and so is every part
    assert validity.gated({"exceed": INCONCLUSIVE}, [validity.exceed_room("C6", 0.0)])[0] == NOT_TESTED
    outcome, gated, _ = validity.gated(parts, [validity.start_format("C4", 47.3)])
    assert outcome == NOT_TESTED and set(gated.values()) == {NOT_TESTED}


# --- the paper's own setup passes every condition ---------------------------------------------------------

def _paper_means(table: str, model_name: str, metric: str) -> dict[str, float]:
    numbers = pn.paper_numbers()
    rows = numbers[(numbers["table"] == table) & (numbers["model"] == model_name) & (numbers["metric"] == metric)
                   & numbers["method"].isin(["gdpo", "grpo"])]
    return rows.groupby("method")["value"].mean().to_dict()


def _paper_largest(table: str, model_name: str, metric: str) -> float:
    numbers = pn.paper_numbers()
    rows = numbers[(numbers["table"] == table) & (numbers["model"] == model_name) & (numbers["metric"] == metric)
                   & numbers["method"].isin(["gdpo", "grpo"])]
    return float(rows["value"].max())


def paper_like_steps(rng: np.random.Generator, seeds: int = 3, steps: int = 500) -> pd.DataFrame:
    """A synthetic paper-like math run: an update on about 90 % of the steps (DAPO-style groups with differing
    rewards), max lengths wandering up to the 8,000-token cap past the 4,000-token limit."""
    rows = []
    for method in ("grpo", "gdpo"):
        for seed in range(seeds):
            grad = np.where(rng.random(steps) < 0.9, rng.uniform(0.05, 0.5, steps), 0.0)
            length = np.clip(rng.normal(3500, 900, steps), 500, 8000)
            rows += [{"task": "math_1.5b", "method": method, "seed": seed, "step": s + 1, "grad_norm": grad[s],
                      "completions/max_length": length[s]} for s in range(steps)]
    return pd.DataFrame(rows)


def test_the_papers_own_numbers_pass_every_condition():
    numbers = pn.paper_numbers()
    base = numbers[(numbers["table"] == "1") & (numbers["model"] == "Qwen2.5-1.5B") & (numbers["method"] == "base")
                   & (numbers["metric"] == "format")]["value"]
    conditions = [validity.start_format("C4", float(base.iloc[0]))]
    for table, models in (("3", ("R1-1.5B", "R1-7B", "Qwen3-4B")), ("4", ("R1-7B",))):
        for name in models:
            conditions += [validity.accuracy_band("C6", _paper_means(table, name, "acc"), name),
                           validity.exceed_room("C6", _paper_largest(table, name, "exceed"), name)]
    tool_runs = describe_runs(load_config(ROOT / "config" / "paper-tool_calling.yaml"))
    conditions += [validity.declining_trainable("C3", r["decline_share"], r["train_data"]) for r in tool_runs.values()]
    trained = _paper_means("1", "Qwen2.5-1.5B", "avg")
    start = numbers[(numbers["table"] == "1") & (numbers["model"] == "Qwen2.5-1.5B") & (numbers["method"] == "base")
                    & (numbers["metric"] == "avg")]["value"]
    conditions.append(validity.start_exceeded("C3", trained, float(start.iloc[0]), "Qwen2.5-1.5B"))
    math_run = describe_runs(load_config(ROOT / "config" / "paper-math.yaml"))["math_r1_1.5b"]
    steps = paper_like_steps(np.random.default_rng(0))
    shares, window = validity.signal_shares(steps, "math_1.5b", ("grpo", "gdpo"), validity.C5_WINDOW_START)
    assert window == "steps 301–500 (gradient norm > 0)"
    conditions += [validity.training_signal("C5", shares, window),
                   validity.length_cap_room("C5", math_run["max_completion_length"], math_run["length_limit"]),
                   validity.length_reached("C5", validity.max_lengths(steps, "math_1.5b", ("grpo", "gdpo")),
                                           math_run["length_limit"]),
                   validity.collapse_leaves_comparison("C6", {"gdpo": (0, 1), "grpo": (0, 1)})]
    failed = [c.summary() for c in conditions if c.passed is False]
    assert not failed, failed
    # ToolRL's training mix: its share of items that expect no call is not recorded here, so not checked
    assert {c.status for c in conditions} <= {validity.PASSED, validity.NOT_CHECKED}
    assert conditions[0].measured == pytest.approx(4.74)


# --- the committed cpu-evidence experiment ----------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu_evidence() -> Evidence:
    config = load_config(ROOT / "config" / "cpu-evidence.yaml")
    return Evidence(pd.read_csv(CPU / "evidence" / "eval.csv"), pd.read_csv(CPU / "evidence" / "steps.csv"),
                    config["reporting"], "cpu-evidence", runs=describe_runs(config))


def _condition(verdict, name: str) -> validity.Condition:
    return next(c for c in verdict.conditions if c.name == name)


def test_cpu_evidence_c4_is_not_tested_from_a_start_that_had_the_format(cpu_evidence):
    verdict = model.judge_c4(cpu_evidence)
    assert verdict.verdict == NOT_TESTED
    start = _condition(verdict, "start's format")
    assert start.passed is False and start.measured == pytest.approx(47.29, abs=0.01)
    assert verdict.measured_value.startswith("not tested: SmolLM2-135M standing in for Qwen2.5-1.5B the RL start's "
                                             "format is 47.3 %; the claim needs a start below 10 %")


def test_cpu_evidence_c5_is_not_tested_without_training_signal_after_step_300(cpu_evidence):
    verdict = model.judge_c5(cpu_evidence)
    assert verdict.verdict == NOT_TESTED
    signal = _condition(verdict, "training signal")
    assert signal.passed is False and signal.measured == pytest.approx(0.0075)
    assert "steps 301–500 (gradient norm > 0): grpo 0.0–2.5 %, gdpo 0.0–23.0 %" in signal.text
    # the length had room: the cap is twice the limit and lengths reached it early on
    assert _condition(verdict, "cap over the length limit").passed
    assert _condition(verdict, "lengths reach the limit").measured == 128


def test_cpu_evidence_c6_is_not_tested_collapsed_in_both_arms_and_at_the_exceed_floor(cpu_evidence):
    verdict = model.judge_c6(cpu_evidence)
    assert verdict.verdict == NOT_TESTED
    collapse = _condition(verdict, "collapse leaves a comparison")
    assert collapse.passed is False and collapse.text.startswith("collapsed runs: gdpo 4/6, grpo 6/6")
    exceed = _condition(verdict, "some run exceeds")
    assert exceed.passed is False and exceed.measured == 0.0
    band = _condition(verdict, "accuracy off ceiling and floor")
    assert band.passed and "gdpo 74.4 %, grpo 72.8 %" in band.text


def test_cpu_evidence_c3_is_not_tested_declining_never_trained_and_avg_below_the_start(cpu_evidence):
    verdict = model.judge_c3(cpu_evidence)
    declining = _condition(verdict, "declining trained")
    assert declining.passed is False and declining.measured == 0.0
    # every trained arm lost BFCL avg against its start: the avg part compares ways of losing
    gains = _condition(verdict, "training gains")
    assert gains.passed is False and gains.part == "avg" and gains.threshold == pytest.approx(11.1, abs=0.05)
    assert "gdpo 4.6 %, grpo 4.8 %" in gains.text
    assert _condition(verdict, "rewards vary").passed  # both rewards varied: not the reason
    setup = "SmolLM2-135M standing in for Qwen2.5-1.5B"  # cpu-evidence trains SmolLM2 for the paper's setup
    assert verdict.parts == f"{setup} avg: not tested; {setup} format: not tested"
    assert verdict.verdict == NOT_TESTED


def test_cpu_evidence_c4s_parity_part_is_gated_by_the_gains_and_c5_c6_by_the_length_rewards_spread(cpu_evidence):
    c4 = model.judge_c4(cpu_evidence)
    gains = _condition(c4, "training gains")
    assert gains.passed is False and gains.part == "avg − GRPO's"
    assert c4.parts.endswith("avg − GRPO's: not tested")
    for verdict in (model.judge_c5(cpu_evidence), model.judge_c6(cpu_evidence)):
        spread = _condition(verdict, "rewards vary")
        # pooled over every step of the 12 runs: the length reward varied in 3.8 % of the groups
        assert spread.passed is False and spread.measured == pytest.approx(0.038, abs=0.001)
        assert "pooled): correct " in spread.text
        assert ", length 3.8 %; the claim needs" in spread.text
        # the first experiment did not log the groups where both rewards vary: not checked, never failed
        assert _condition(verdict, "estimators differ").status == validity.NOT_CHECKED
        assert verdict.verdict == NOT_TESTED


def _math_steps(runs: dict, steps: int = 150) -> pd.DataFrame:
    """steps.csv rows of math runs: (method, seed) → step → (correct constant, length constant, several vary)."""
    return pd.DataFrame([
        {"task": "math", "method": method, "seed": seed, "step": step,
         "rewards/correct/frac_zero_std_groups": values(step)[0], "rewards/length/frac_zero_std_groups": values(step)[1],
         "rewards/frac_groups_several_vary": values(step)[2]}
        for (method, seed), values in runs.items() for step in range(1, steps + 1)])


def test_reward_variation_is_pooled_over_the_compared_runs_so_it_judges_the_design_not_a_method():
    """GDPO learns the length reward by step 15 and stops varying it; GRPO keeps it varying in 30 % of its groups.
    Read per method the design would fail for GDPO's success; pooled it passes, the same for both. A design whose
    length reward varies in no run fails, whoever learned what."""
    learned = _math_steps({("gdpo", 0): lambda step: (0.5, 0.5 if step <= 15 else 1.0, 0.3 if step <= 15 else 0.0),
                           ("grpo", 0): lambda step: (0.5, 0.7, 0.2)})
    shares = validity.reward_variation_shares(learned, "math", ("grpo", "gdpo"))
    assert shares == {"correct": pytest.approx(0.5), "length": pytest.approx((0.05 + 0.3) / 2)}
    assert validity.rewards_vary("C6", shares, ("grpo", "gdpo")).passed
    silent = _math_steps({(m, 0): lambda step: (0.5, 1.0, 0.0) for m in ("grpo", "gdpo")})
    assert validity.rewards_vary("C6", validity.reward_variation_shares(silent, "math", ("grpo", "gdpo")),
                                 ("grpo", "gdpo")).passed is False


def test_a_length_reward_both_methods_learn_early_leaves_c6_untested_by_its_accuracy_alone():
    """The review's case: the length reward varies in 40 % of groups for 15 steps, then never (both methods learned
    it), and Exceed sits at 0 %. Each reward varied somewhere, but the estimators coincided for 90 % of training:
    'estimators differ' fails (4 % of groups), so C6 is not decided on the accuracy that one shared estimator
    trained."""
    early = _math_steps({(m, seed): lambda step: (0.5, 0.6 if step <= 15 else 1.0, 0.4 if step <= 15 else 0.0)
                         for m in ("grpo", "gdpo") for seed in (0, 1, 2)})
    share = validity.several_varying_share(early, "math", ("grpo", "gdpo"))
    assert share == pytest.approx(0.04)
    assert validity.estimators_differ("C6", share, ("grpo", "gdpo")).passed is False
    evals = pd.DataFrame([{"task": "math", "method": m, "seed": seed, "benchmark": "reasoning_gym", "metric": metric,
                           "value": value, "n_items": 384, "n_samples": 4}
                          for m in ("grpo", "gdpo") for seed in (0, 1, 2)
                          for metric, value in (("acc", 40.0 + (2.0 if m == "gdpo" else 0.0) + seed), ("exceed", 0.0))])
    evidence = Evidence(evals, early, {"tables": {"table3": {"R1-1.5B": "math"}}}, "cpu-evidence-2")
    verdict = model.judge_c6(evidence)
    assert _condition(verdict, "estimators differ").passed is False
    assert verdict.verdict == NOT_TESTED
    # the same runs with both rewards varying together in a fifth of the groups throughout: tested
    lasting = _math_steps({(m, seed): lambda step: (0.5, 0.6, 0.2) for m in ("grpo", "gdpo") for seed in (0, 1, 2)})
    decided = model.judge_c6(Evidence(evals, lasting, {"tables": {"table3": {"R1-1.5B": "math"}}}, "cpu-evidence-2"))
    assert decided.parts == "acc: reproduced; exceed: not tested"
    # and with a start 8 points above both arms (the limit met by dropping the working): the accuracy part is not
    # tested either
    start = pd.DataFrame([{"task": "math", "method": "base", "seed": 0, "benchmark": "reasoning_gym", "metric": metric,
                           "value": value, "n_items": 384, "n_samples": 4}
                          for metric, value in (("acc", 51.0), ("exceed", 20.0))])
    fallen = model.judge_c6(Evidence(pd.concat([evals, start]), lasting, {"tables": {"table3": {"R1-1.5B": "math"}}},
                                     "cpu-evidence-2"))
    kept = _condition(fallen, "training keeps accuracy")
    assert kept.passed is False and kept.threshold == 46.0 and kept.measured == pytest.approx(43.0)
    assert fallen.verdict == NOT_TESTED


def test_each_reward_varying_but_never_together_fails_the_estimators_condition():
    """Correctness varies in half the groups and length in the other half: each reward passes 'rewards vary', but
    no group has both, so GDPO and GRPO give the same advantages everywhere."""
    apart = _math_steps({(m, 0): lambda step: (0.5, 0.5, 0.0) for m in ("grpo", "gdpo")})
    assert validity.rewards_vary("C6", validity.reward_variation_shares(apart, "math", ("grpo", "gdpo")),
                                 ("grpo", "gdpo")).passed
    assert validity.estimators_differ("C6", validity.several_varying_share(apart, "math", ("grpo", "gdpo")),
                                      ("grpo", "gdpo")).passed is False


def test_reward_variation_shares_read_each_reward_from_steps_csv_and_leave_other_tasks_and_methods_out():
    steps = pd.DataFrame([
        {"task": "math", "method": m, "seed": seed, "step": step,
         "rewards/correct/frac_zero_std_groups": 0.5, "rewards/length/frac_zero_std_groups": constant}
        for m, seed, constants in (("grpo", 0, (1.0, 0.8)), ("grpo", 1, (0.9, float("nan"))),
                                   ("gdpo", 0, (1.0, 1.0)), ("grpo_nostd", 0, (0.0, 0.0)))
        for step, constant in enumerate(constants, 1)] + [
        {"task": "other", "method": "grpo", "seed": 0, "step": 1, "rewards/correct/frac_zero_std_groups": 0.0,
         "rewards/length/frac_zero_std_groups": 0.0}])
    shares = validity.reward_variation_shares(steps, "math", ("grpo", "gdpo"))
    # grpo seed 1's unlogged step is left out, not counted as varying or constant; grpo_nostd and "other" too
    assert shares == {"correct": pytest.approx(0.5), "length": pytest.approx(1 - (1.0 + 0.8 + 0.9 + 1.0 + 1.0) / 5)}
    condition = validity.rewards_vary("C6", shares, ("grpo", "gdpo"))
    assert condition.passed is False and "correct 50.0 %, length 6.0 %" in condition.text
    # no per-reward column, or no steps at all: not recorded, so not checked
    assert validity.reward_variation_shares(steps.drop(columns=["rewards/length/frac_zero_std_groups",
                                                                 "rewards/correct/frac_zero_std_groups"]),
                                            "math", ("grpo",)) == {}
    assert validity.reward_variation_shares(None, "math", ("grpo",)) == {}
    assert validity.several_varying_share(steps, "math", ("grpo",)) is None
    assert validity.several_varying_share(None, "math", ("grpo",)) is None


def test_a_part_condition_gates_a_part_named_with_several_words():
    parts = {"Qwen2.5-1.5B format − base": REPRODUCED, "Qwen2.5-1.5B avg − GRPO's": NOT_REPRODUCED}
    gains = validity.start_exceeded("C4", {"grpo": 5.0}, 20.0, "Qwen2.5-1.5B", part="avg − GRPO's")
    outcome, gated, _ = validity.gated(parts, [gains])
    assert outcome == REPRODUCED and gated["Qwen2.5-1.5B avg − GRPO's"] == NOT_TESTED
    # a part is matched by whole words at the end of the name: "RPO's" names no part
    other = validity.start_exceeded("C4", {"grpo": 5.0}, 20.0, "Qwen2.5-1.5B", part="RPO's")
    assert validity.gated(parts, [other])[0] == NOT_REPRODUCED


# --- collapse in the power plan ----------------------------------------------------------------------------

def test_comparable_probability():
    assert validity.comparable_probability(6, 0.0) == 1.0
    assert validity.comparable_probability(6, 1.0) == 0.0
    # 3 seeds: more than half is 2 or 3 of 3, probability 0.5 at rate 0.5 in each of two arms
    assert validity.comparable_probability(3, 0.5) == pytest.approx(0.75)
    assert validity.comparable_probability(8, 0.2) > validity.comparable_probability(8, 0.4)
    with pytest.raises(ValueError, match="collapse rate"):
        validity.comparable_probability(3, 1.5)


def test_the_power_plan_counts_a_stated_collapse_rate():
    design = designs_from_config(load_config(ROOT / "config" / "paper-math.yaml"))["C8"]
    assert isinstance(design, TableDesign) and design.seeds == 3
    plain = power_of(design, 200)
    assert power_of(design, 200, collapse_rate=0.5) == pytest.approx(plain * 0.75)
    assert power_of(design, 200, collapse_rate=validity.DEFAULT_COLLAPSE_RATE) == plain


def test_declining_is_not_checked_where_the_training_data_is_not_recorded():
    from gdpo.reporting.verdicts.validity import declining_trainable

    assert declining_trainable("C3", None, None, "s", recorded=False).passed is None
    assert declining_trainable("C3", None, None, "s").passed is True  # BFCL's own mix
    assert declining_trainable("C3", 0.0, None, "s").passed is False


def test_a_run_that_ended_before_its_last_step_is_named_beside_the_verdict_and_still_counted(cpu_evidence):
    """A run cut short (non-finite gradients stop training, gdpo.training.run) counts with its scores; the ledger
    names it so that a reader sees which comparison holds a run that trained less. Complete runs are not named."""
    complete = model.judge_c4(cpu_evidence)
    assert "ended before the last step" not in complete.measured_value
    steps = cpu_evidence.steps
    planned = cpu_evidence.runs["tool_calling"]["max_steps"]
    cut = (steps["task"] == "tool_calling") & (steps["method"] == "grpo") & (steps["seed"] == 1) & (steps["step"] > 40)
    short = Evidence(cpu_evidence.evals, steps[~cut], cpu_evidence.reporting, "cpu-evidence", runs=cpu_evidence.runs)
    assert validity.runs_ended_early(short, "tool_calling", ("grpo", "grpo_nostd", "base")) == [
        f"grpo seed 1 (step 40 of {planned})"]
    verdict = model.judge_c4(short)
    assert f"ended before the last step, counted with their scores: grpo seed 1 (step 40 of {planned})" in \
        verdict.measured_value
    assert verdict.verdict == complete.verdict  # named, not dropped or re-judged
    # A run logging every 2nd optimizer step (two updates per generation batch) is complete at 2 × max_steps.
    strided = steps[(steps["task"] == "tool_calling") & (steps["method"] == "grpo") & (steps["seed"] == 1)].copy()
    strided["step"] = strided["step"] * 2
    doubled = Evidence(cpu_evidence.evals, strided, cpu_evidence.reporting, "cpu-evidence", runs=cpu_evidence.runs)
    assert validity.runs_ended_early(doubled, "tool_calling", ("grpo",)) == []
