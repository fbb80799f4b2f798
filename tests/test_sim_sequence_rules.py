"""Sim-scale ledger rows of the sequence bench (C4, C5, C8, C10): decisions over a grid of settings, their power
and their calibration on data where the methods do not differ."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gdpo.reporting.contract import (
    INCONCLUSIVE, NOT_MODELLED, NOT_REPRODUCED, NOT_RUN, REPRODUCED, SMALLER, UNDERPOWERED,
)
from gdpo.reporting.verdicts import decisions, sim


def events_table(study: str, methods: dict[str, list[int]], seeds: int = 64, steps: int = 1000,
                 prompts: int = 8) -> pd.DataFrame:
    """per_seed rows of an event study: ``methods[m][c]`` events of method m in cell c (first seeds fail)."""
    rows = []
    for method, counts in methods.items():
        for cell, count in enumerate(counts):
            for seed in range(seeds):
                rows.append({"study": study, "variant": f"cell{cell}", "method": method, "reward": "correctness",
                             "seed": seed, "final_success": 0.5, "initial_success": 0.1, "n_final_samples": 6400,
                             "outcome_event": seed < count, "steps": steps, "prompts": prompts})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("counts_a, counts_b, verdict", [
    ([30, 0, 0, 0], [0, 0, 0, 0], REPRODUCED),       # one corner shows it; the others hold 0, not the opposite
    ([30, 0, 0, 0], [0, 0, 30, 0], INCONCLUSIVE),    # another corner shows the opposite
    ([0, 0, 0, 0], [0, 0, 0, 0], NOT_MODELLED),      # no event in any arm and no control: not a refutation
    ([4, 3, 4, 3], [4, 3, 4, 3], NOT_MODELLED),      # events alike in both arms: no control shows a contrast
    ([10, 0, 0, 0], [3, 0, 0, 0], INCONCLUSIVE),     # a hint in one corner, not enough
    ([6, 0, 0, 0], [0, 0, 0, 0], SMALLER),           # 6/64 vs 0/64: shown above 0 (exact test), and below 0.2
])
def test_c10_is_decided_over_the_grid(counts_a, counts_b, verdict):
    table = events_table("seq_batch_step", {"gdpo_nobn": counts_a, "gdpo": counts_b}, steps=200)
    result = sim.judge_c10(table, "x")
    assert result.verdict == verdict, result.measured_value
    assert "4 cells" in result.measured_value and "rate ≤" in result.measured_value
    if verdict == NOT_MODELLED:  # the design cannot decide what the bench is not shown to produce
        assert np.isnan(result.power)
    else:
        assert 0 < result.power <= 1


def test_c5_needs_the_claims_steps_and_seeds():
    table = events_table("seq_math_length", {"grpo": [30, 0], "gdpo": [0, 0]}, steps=200)
    assert sim.judge_c5(table, "x").verdict == UNDERPOWERED
    table = events_table("seq_math_length", {"grpo": [2, 0], "gdpo": [0, 0]}, seeds=2)
    assert sim.judge_c5(table, "x").verdict == UNDERPOWERED


def test_a_grid_with_too_few_seeds_says_no_rate_is_detectable():
    measured = sim.judge_c5(events_table("seq_math_length", {"grpo": [2, 0], "gdpo": [0, 0]}, seeds=2),
                            "x").measured_value
    assert "nan" not in measured
    assert "Per cell the design detects no grpo rate, not even 1 (with none for gdpo), with 80 % power" in measured


def test_smallest_detectable_rate_is_the_one_with_80_percent_power():
    alpha = 0.05 / 4  # one of 4 cells
    rate = decisions.smallest_detectable_rate(64, 64, alpha, claim_id="C5")
    assert (decisions.detection_power(64, 64, rate, alpha, claim_id="C5") >= 0.8
            > decisions.detection_power(64, 64, rate - 0.01, alpha, claim_id="C5"))
    assert decisions.smallest_detectable_rate(32, 32, alpha, claim_id="C5") > rate  # fewer seeds, larger rate


@pytest.mark.parametrize("rate", [0.05, 0.3])
def test_event_rules_almost_never_reproduce_when_methods_do_not_differ(rate):
    """Calibration: both methods with the same event rate in each of 4 cells × 64 seeds; false ``reproduced``
    must stay at or below the nominal 2.5 % one-sided rate (Bonferroni over the cells), here with a margin for
    the 400 replicates' own noise."""
    generator = np.random.default_rng(0)
    false_positives = 0
    replicates = 400
    for _ in range(replicates):
        events = {f"cell{c}": (pd.Series(generator.random(64) < rate), pd.Series(generator.random(64) < rate))
                  for c in range(4)}
        outcome = decisions.decide_sim_events("C10", events).outcome
        false_positives += outcome == REPRODUCED
    assert false_positives / replicates <= 0.04


def format_table(nostd_format: float, grpo_correct: float = 0.6, nostd_correct: float = 0.6, seeds: int = 32,
                 cells: int = 2, spread: float = 0.02, seed: int = 0) -> pd.DataFrame:
    generator = np.random.default_rng(seed)
    rows = []
    for cell in range(cells):
        for method, format_final, correct in (("grpo", 0.8, grpo_correct), ("grpo_nostd", nostd_format, nostd_correct),
                                              ("gdpo", 0.85, grpo_correct)):
            for s in range(seeds):
                for reward, final, initial in (("format", format_final, 0.1), ("correctness", correct, 0.2)):
                    value = float(np.clip(final + spread * generator.standard_normal(), 0, 1))
                    rows.append({"study": "seq_tool_calling", "variant": f"cell{cell}", "method": method,
                                 "reward": reward, "seed": s, "final_success": value, "initial_success": initial,
                                 "n_final_samples": 10 * 32, "outcome_event": False, "steps": 100, "prompts": 8})
    return pd.DataFrame(rows)


def test_c4_shows_or_rules_out_the_format_failure():
    assert sim.judge_c4(format_table(0.0), "x").verdict == REPRODUCED
    learned = sim.judge_c4(format_table(0.7), "x")
    assert learned.verdict == NOT_REPRODUCED and "Cells: not reproduced in 2/2" in learned.measured_value
    # correctness far below GRPO's: not the paper's "matches correctness"
    assert sim.judge_c4(format_table(0.0, nostd_correct=0.3), "x").verdict == NOT_REPRODUCED


def test_c4_calibration_methods_alike_never_show_the_failure():
    verdicts = [sim.judge_c4(format_table(0.8, seed=k, spread=0.1), "x").verdict for k in range(20)]
    assert REPRODUCED not in verdicts


def conditioned_table(gdpo_shift: float, seed: int = 0) -> pd.DataFrame:
    generator = np.random.default_rng(seed)
    rows = []
    for variant in ("learning_rate=0.03,conditioning=none", "learning_rate=0.03,conditioning=length|correctness"):
        for method in ("grpo", "gdpo"):
            for s in range(32):
                for reward in ("correctness", "length"):
                    value = 0.5 + (gdpo_shift if method == "gdpo" else 0) + 0.05 * generator.standard_normal()
                    rows.append({"study": "seq_conditioned_length", "variant": variant, "method": method,
                                 "reward": reward, "seed": s, "final_success": value, "n_final_samples": 30 * 64})
    return pd.DataFrame(rows)


def test_c8_reads_the_conditioned_cells_and_reports_the_plain_ones():
    verdict = sim.judge_c8(conditioned_table(0.1), "x")
    assert verdict.verdict == REPRODUCED and "plain length" in verdict.measured_value
    assert verdict.measured_value.endswith("Conditioned cells: reproduced in 1/1")
    assert sim.judge_c8(conditioned_table(-0.1), "x").verdict == NOT_REPRODUCED
    nulls = [sim.judge_c8(conditioned_table(0.0, seed=k), "x").verdict for k in range(20)]
    assert nulls.count(REPRODUCED) <= 1


def test_c8_cells_must_agree_and_the_row_names_the_odd_ones():
    """An extra cell where the methods do not differ leaves the refutation of the other cells inconclusive."""
    table = conditioned_table(-0.1)
    extra = conditioned_table(0.0, seed=1)
    extra = extra[extra["variant"].str.contains("length|correctness", regex=False)]
    extra = extra.assign(variant=extra["variant"] + ",prompts=2")
    verdict = sim.judge_c8(pd.concat([table, extra]), "x")
    assert verdict.verdict == INCONCLUSIVE, verdict.measured_value
    assert verdict.measured_value.endswith(
        "Conditioned cells: not reproduced in 1/2, inconclusive in 1/2 "
        "(learning_rate=0.03,conditioning=length|correctness,prompts=2)")
    assert "3 cells" in verdict.run


def test_a_positive_control_lets_a_grid_without_events_refute():
    """The grid never shows the claimed contrast, but a control cell engineered to produce it does, through the
    same detector and rule: the refutation stands, the control is reported and not counted as a grid cell."""
    table = events_table("seq_batch_step", {"gdpo_nobn": [0, 0, 0, 0, 40], "gdpo": [0, 0, 0, 0, 2]}, steps=200)
    table["positive_control"] = table["variant"] == "cell4"
    verdict = sim.judge_c10(table, "x")
    assert verdict.verdict == NOT_REPRODUCED, verdict.measured_value
    assert "4 cells" in verdict.measured_value and "Positive control" in verdict.measured_value
    assert "cell4: gdpo_nobn 40/64, gdpo 2/64" in verdict.measured_value
    # A control with the event in both methods alike shows the detector fires, not the claimed contrast.
    table.loc[(table["variant"] == "cell4") & (table["method"] == "gdpo"), "outcome_event"] = \
        table.loc[(table["variant"] == "cell4") & (table["method"] == "gdpo_nobn"), "outcome_event"].to_numpy()
    alike = sim.judge_c10(table, "x")
    assert alike.verdict == NOT_MODELLED and "its control gave" in alike.measured_value
    # A control that produced nothing shows nothing either.
    table.loc[table["variant"] == "cell4", "outcome_event"] = False
    assert sim.judge_c10(table, "x").verdict == NOT_MODELLED


def test_sim_event_power_is_the_whole_grids_probability_of_reproduced():
    """Exact power against a Monte Carlo of the same rule: every cell at rates 0.05 + effect vs 0.05."""
    generator = np.random.default_rng(3)
    cells, seeds, replicates, hits = 4, 32, 2000, 0
    for _ in range(replicates):
        events = {f"cell{c}": (pd.Series(generator.random(seeds) < 0.25), pd.Series(generator.random(seeds) < 0.05))
                  for c in range(cells)}
        hits += decisions.decide_sim_events("C10", events).outcome == REPRODUCED
    assert decisions.sim_event_power("C10", cells, seeds) == pytest.approx(hits / replicates, abs=0.03)


def test_ledger_reads_the_sequence_studies_or_says_they_did_not_run(tmp_path):
    from gdpo.reporting.ledger import build_ledger

    path = tmp_path / "per_seed.csv"
    events_table("seq_batch_step", {"gdpo_nobn": [0, 0], "gdpo": [0, 0]}, steps=200).to_csv(path, index=False)
    ledger = build_ledger("mini", None, path, scale_rows=False).set_index(["claim_id", "scale"])
    assert ledger.loc[("C10", "sim"), "verdict"] == NOT_MODELLED  # no event anywhere, no positive control
    for claim in ("C4", "C5", "C8"):
        row = ledger.loc[(claim, "sim")]
        assert row["verdict"] == NOT_RUN and sim.SEQUENCE_STUDIES[claim] in row["evidence"]


PUBLISHED_SIM = "paper_figures/mini/evidence/sim_per_seed.csv"


@pytest.mark.parametrize("claim", ["C3", "C4", "C7", "C8"])
def test_sim_table_rows_are_calibrated_on_the_published_benchs_own_cells(claim):
    """1000 simulated benches with the published study's cells, seeds, sampled completions and measured spread,
    through the ledger's own decision: no difference between the methods gives a verdict in the paper's
    direction at most 5 % of the time; the paper's effect in points gives ``not reproduced`` at most 5 %."""
    from gdpo.reporting import calibration
    from gdpo.reporting.contract import IN_PAPERS_DIRECTION

    per_seed = pd.read_csv(PUBLISHED_SIM)
    null = calibration.simulate_sim(claim, per_seed, False, 1000, seed=21)
    effect = calibration.simulate_sim(claim, per_seed, True, 1000, seed=22)
    if claim == "C7":  # C7's null is "weight 0.25 changes nothing": the claim's own refutation
        assert null.get(NOT_REPRODUCED, 0.0) >= 0.95, null
    else:
        assert sum(null.get(v, 0.0) for v in IN_PAPERS_DIRECTION) <= 0.05, null
    assert effect.get(NOT_REPRODUCED, 0.0) <= 0.05, effect


def test_the_control_flag_is_read_strictly_and_only_the_compared_methods_event_counts():
    table = events_table("seq_batch_step", {"gdpo_nobn": [0, 0, 0, 0, 40], "gdpo": [0, 0, 0, 0, 0]}, steps=200)
    for spelled in (True, "True", 1, 1.0, "1.0", " true"):
        marked = table.assign(positive_control=[spelled if v == "cell4" else False for v in table["variant"]])
        assert sim.judge_c10(marked, "x").verdict == NOT_REPRODUCED, spelled
    bad = table.assign(positive_control=["yes" if v == "cell4" else False for v in table["variant"]])
    with pytest.raises(ValueError, match="must be True or False"):
        sim.judge_c10(bad, "x")
    # One event of the reference method alone does not show the compared method's event can be seen.
    only_reference = events_table("seq_batch_step", {"gdpo_nobn": [0, 0, 0, 0], "gdpo": [1, 0, 0, 0]}, steps=200)
    assert sim.judge_c10(only_reference, "x").verdict == NOT_MODELLED
