"""Claim rules at scale ``sim``: the policy-gradient bench's ``per_seed.csv`` (:mod:`gdpo.sim`).

C3 and C7 read the Bernoulli bench; C4, C5, C8 and C10 the sequence bench, each a failure mode looked for over a
grid of settings, its cells' in-direction tests at the grid's Bonferroni level, combined by
:func:`~gdpo.reporting.verdicts.decisions.over_cells`. Each rule: ``(per_seed, evidence) -> Verdict``, registered
with the study it reads and its power design (:class:`~.registry.SimPower`: the bench's cells simulated under the
paper's effect in points, for the table-like rows; the event rows state their own exact power).
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from gdpo.curve_events import final_window
from gdpo.methods import Method
from gdpo.reporting import paper_numbers as pn
from gdpo.reporting.contract import (
    ALPHA, BARELY_MARGIN, CLAIMS_BY_ID, MIN_SEEDS, NO_FORMAT_RATE, NOT_MODELLED, NOT_REPRODUCED, NOT_RUN, PARITY_MARGIN,
    REPRODUCED, UNDERPOWERED, MeasuredInterval, Verdict, binomial_variance, paper_effect, rate_interval,
)
from gdpo.reporting.verdicts.decisions import (
    C7_CHANGE, EVENT_EFFECTS, bonferroni_level, decide_c4, decide_c7, decide_events, decide_sim_events,
    decide_sim_pairs, interval_text, over_cells, parts_text, sim_event_power, smallest_detectable_rate,
)
from gdpo.reporting.verdicts.registry import NoPower, Scale, SimPower, claim_rule
from gdpo.reporting.verdicts.samples import Sample, paired


# --------------------------------------------------------------------------------------------------
# Reading per_seed.csv
# --------------------------------------------------------------------------------------------------


#: The Bernoulli-bench study each claim's sim row reads.
BERNOULLI_STUDIES = {"C3": "format_vs_correctness", "C7": "easy_vs_hard_weights"}
#: The sequence-bench study each claim's sim row reads.
SEQUENCE_STUDIES = {"C4": "seq_tool_calling", "C5": "seq_math_length", "C8": "seq_conditioned_length",
                    "C10": "seq_batch_step"}


def final_success_sample(per_seed: pd.DataFrame, study: str, variant: str, method: str, reward: str) -> Sample:
    """Final success (percent) of one (variant, method, reward) over seeds, with its binomial variance over
    the samples of the final window (``n_final_samples``; NaN if the column is absent)."""
    rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant) & (per_seed["method"] == method)
                    & (per_seed["reward"] == reward)].sort_values("seed")
    if rows["seed"].duplicated().any():
        raise ValueError(f"per_seed.csv repeats seeds of ({study}, {variant}, {method}, {reward}); each seed must "
                         "appear once (remake it with `gdpo sim-summary`).")
    values = 100 * rows["final_success"].to_numpy(dtype=float)
    n = rows["n_final_samples"].to_numpy(dtype=float) if "n_final_samples" in rows else np.full(len(rows), np.nan)
    return Sample(tuple(int(s) for s in rows["seed"]), values, binomial_variance(values, n), n)


def initial_success_sample(per_seed: pd.DataFrame, study: str, variant: str, method: str, reward: str) -> Sample:
    """Success at step 0 (percent) of one (variant, method, reward) over seeds; items: one step's completions."""
    rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant) & (per_seed["method"] == method)
                    & (per_seed["reward"] == reward)].sort_values("seed")
    values = 100 * rows["initial_success"].to_numpy(dtype=float)
    items = rows["n_final_samples"].to_numpy(dtype=float) / np.array([final_window(int(n)) for n in rows["steps"]])
    return Sample(tuple(int(s) for s in rows["seed"]), values, binomial_variance(values, items), items)


def pair_cells(per_seed: pd.DataFrame, study: str, variants: Sequence[str], rewards: Sequence[str]) -> dict:
    """The cells GDPO and GRPO are compared on: (variant, method, reward) → :func:`final_success_sample`."""
    return {(v, m, r): final_success_sample(per_seed, study, v, m, r)
            for v in variants for m in (Method.GDPO, Method.GRPO) for r in rewards}


def _seed_events(per_seed: pd.DataFrame, study: str, variant: str, method: str) -> pd.Series:
    """Per-seed outcome events (bool, by seed) of one (variant, method)."""
    rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant) & (per_seed["method"] == method)]
    return rows.groupby("seed")["outcome_event"].first().astype(bool)


def study_variants(per_seed: pd.DataFrame, study: str) -> list[str]:
    """The study's cells (variants), in file order."""
    return list(dict.fromkeys(per_seed.loc[per_seed["study"] == study, "variant"]))


#: per_seed.csv's column marking a positive-control cell (settings engineered so that the event happens).
POSITIVE_CONTROL = "positive_control"


#: How per_seed.csv may spell the positive-control flag (pandas writes booleans, or 1.0 / 0.0 after a
#: concatenation with a study that lacks the column, NaN there).
_FLAG = {"true": True, "1": True, "1.0": True, "false": False, "0": False, "0.0": False, "nan": False, "": False}


def _control_cells(per_seed: pd.DataFrame, study: str) -> set[str]:
    """The study's positive-control cells (``positive_control`` true on their rows).

    Raises:
        ValueError: a flag that is neither true nor false, or a cell whose rows disagree.
    """
    rows = per_seed[per_seed["study"] == study]
    if POSITIVE_CONTROL not in rows:
        return set()
    spelled = rows[POSITIVE_CONTROL].astype(str).str.strip().str.lower()
    unknown = sorted(set(spelled) - set(_FLAG))
    if unknown:
        raise ValueError(f"per_seed.csv: {POSITIVE_CONTROL} of study {study} holds {unknown}; it must be True or False "
                         "(remake the file with `gdpo sim-summary`).")
    flags = spelled.map(_FLAG)
    mixed = flags.groupby(rows["variant"]).nunique()
    if (mixed > 1).any():
        raise ValueError(f"per_seed.csv: cell {mixed[mixed > 1].index[0]!r} of study {study} is marked a positive "
                         "control on some rows only (remake the file with `gdpo sim-summary`).")
    return set(rows.loc[flags.to_numpy(), "variant"])


def _paired_seeds(*pairs: tuple[Sample, Sample]) -> int:
    """Seeds common to both sides of every comparison."""
    return min(len(set(a.seeds) & set(b.seeds)) for a, b in pairs)


def _bench_run(per_seed: pd.DataFrame, study: str) -> str:
    seeds = per_seed.loc[per_seed["study"] == study, "seed"].nunique()
    return f"policy-gradient bench, study {study}, {seeds} seeds"


def _shortfall(claim_id: str, per_seed: pd.DataFrame, study: str, seeds: int) -> list[str]:
    rows = per_seed[per_seed["study"] == study]
    minimum = CLAIMS_BY_ID[claim_id].minimum
    steps = float(rows["steps"].min()) if "steps" in rows else None
    prompts = float(rows["prompts"].min()) if "prompts" in rows else None
    return minimum.shortfall(seeds, steps=steps, prompts_per_batch=prompts)


def _underpowered(pairs: int, text: str, comparison: str, evidence: str, run: str,
                  intervals: tuple[MeasuredInterval, ...]) -> Verdict:
    return Verdict(f"{text} — not decided: needs ≥ {MIN_SEEDS} seeds per method (have {pairs})", comparison,
                   UNDERPOWERED, evidence, run=run, intervals=intervals)


def _tally(outcomes: Mapping[str, str]) -> str:
    """``"reproduced in 3/4, inconclusive in 1/4 (cell_a)"``: cells by outcome, the odd ones named."""
    counts = collections.Counter(outcomes.values())
    if not counts:
        return "no cells"
    most = counts.most_common(1)[0][0]
    return ", ".join(f"{outcome} in {count}/{len(outcomes)}" + ("" if outcome == most else " (" + ", ".join(
        n for n, o in outcomes.items() if o == outcome) + ")") for outcome, count in counts.most_common())


# --------------------------------------------------------------------------------------------------
# Power designs of the table-like rows: the bench's cells, each at its reference cell's measured rate, shifted by
# the paper's effect in points (the bench's success rates are percentages too, though not the paper's benchmarks)
# --------------------------------------------------------------------------------------------------


def pairs_power(rewards: tuple[str, str], effects: Callable[[], dict[str, float]], where: str,
                conditioned_only: bool = False) -> SimPower:
    """The power design of a rule deciding GDPO − GRPO on two rewards per cell (:func:`decide_sim_pairs`): GDPO's
    cells shifted by ``effects()`` (reward → points, the paper's effect ``where`` it is tabulated), GRPO's not;
    ``conditioned_only``: the cells deciding are those whose length reward is conditioned on correctness."""
    def design(per_seed: pd.DataFrame, study: str):
        variants = study_variants(per_seed, study)
        decided = [v for v in variants if "conditioning=none" not in v] if conditioned_only else variants
        cells = pair_cells(per_seed, study, decided, rewards)
        shift = effects()
        shifts = {k: shift[k[2]] if k[1] == Method.GDPO else 0.0 for k in cells}
        reference = {k: (k[0], Method.GRPO, k[2]) for k in cells}
        return cells, lambda c: decide_sim_pairs(c, decided, rewards).outcome, shifts, reference

    def alternative() -> str:
        return ("GDPO − GRPO " + ", ".join(f"{reward} {shift:+.2f}" for reward, shift in effects().items())
                + f" points ({where})")

    return SimPower(design, alternative)


#: C3's sim power: correctness and format of GDPO shifted by Table 1's 1.5B effects on avg and format.
C3_SIM_POWER = pairs_power(("correctness", "format"), lambda: {
    "correctness": paper_effect("C3", pn.QWEN25_1_5B, "avg"),
    "format": paper_effect("C3", pn.QWEN25_1_5B, "format")}, "Table 1, 1.5B")
#: C8's sim power: Table 4's effects, Exceed lower by 5.72 points standing for the share within the limit higher
#: by as much.
C8_SIM_POWER = pairs_power(("correctness", "length"), lambda: {
    "correctness": paper_effect("C8", "", "acc"), "length": -paper_effect("C8", "", "exceed")}, "Table 4",
    conditioned_only=True)


def _c4_gap() -> float:
    return paper_effect("C4", pn.QWEN25_1_5B, "avg", (Method.GRPO_NOSTD, Method.GRPO))


def _c4_design(per_seed: pd.DataFrame, study: str):
    variants = study_variants(per_seed, study)
    cells = cells_c4(per_seed, study, variants)
    gap = _c4_gap()
    # Under the claim: w/o std's format at 0 % (the base's is measured), its correctness GRPO's + the gap.
    reference = {k: ((k[0], "base", "format") if k[2] == "format" else (k[0], Method.GRPO, "avg")) for k in cells}
    shifts = {k: (-math.inf if k == (k[0], Method.GRPO_NOSTD, "format")
                  else gap if k[1] == Method.GRPO_NOSTD else 0.0)
              for k in cells}
    return cells, lambda c: over_cells(decide_c4(c, variants).by_setup), shifts, reference


#: C4's sim power: w/o std's format at 0 %, its correctness GRPO's + Table 2's gap.
C4_SIM_POWER = SimPower(_c4_design, lambda: (f"w/o std at 0 % format and {_c4_gap():+.2f} points of correctness "
                                             "from GRPO's (Table 2)"))


def _c7_design(per_seed: pd.DataFrame, study: str):
    cells = cells_c7(per_seed, study)
    reference = {k: ("1", k[1], k[2]) for k in cells}
    shifts = {k: (-C7_CHANGE if k[0] == "0.25" and k[2] == "acc" else 0.0) for k in cells}
    return cells, lambda c: decide_c7(c).outcome, shifts, reference


#: C7's sim power: weight 0.25 moving correctness by :data:`~.decisions.C7_CHANGE` points, the others not.
C7_SIM_POWER = SimPower(_c7_design,
                        lambda: f"weight 0.25 moving correctness by {C7_CHANGE:g} points, the others not")
#: The event rows' power design: stated by the rule itself, exactly (:func:`sim_event_power`).
EVENT_ROW_POWER = NoPower("the rule states its power exactly (sim_event_power: the claim's smallest effect in "
                          "every cell), not simulated by the calibration")


# --------------------------------------------------------------------------------------------------
# Bernoulli bench (C3, C7)
# --------------------------------------------------------------------------------------------------


@claim_rule("C3", Scale.SIM, study=BERNOULLI_STUDIES["C3"], design=C3_SIM_POWER)
def judge_c3(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C3 at scale sim (study ``format_vs_correctness``): :func:`decide_sim_pairs` on correctness and format."""
    study = BERNOULLI_STUDIES["C3"]
    variants = study_variants(per_seed, study)
    cells = pair_cells(per_seed, study, variants, ("correctness", "format"))
    decision = decide_sim_pairs(cells, variants, ("correctness", "format"))
    pairs = min(_paired_seeds(*((cells[(v, Method.GDPO, r)], cells[(v, Method.GRPO, r)])
                                for r in ("correctness", "format")))
                for v in variants)
    text = f"GDPO − GRPO final success {decision.text}. Cells: {_tally(decision.by_setup)}"
    comparison = "both paired differences above 0, combined over cells (shown in a cell and refuted in none)"
    run = _bench_run(per_seed, study)
    if pairs < MIN_SEEDS:
        return _underpowered(pairs, text, comparison, evidence, run, decision.intervals)
    return Verdict(text, comparison, decision.outcome, evidence, run=run, parts=parts_text(decision.parts),
                   intervals=decision.intervals)


#: The bench's rewards standing for C7's metrics.
C7_REWARDS = {"acc": "correctness", "exceed": "length"}


def cells_c7(per_seed: pd.DataFrame, study: str) -> dict[tuple[str, str, str], Sample]:
    """C7's cells: (weight, method, metric) → the final success of the reward standing for the metric in the
    variant ``w<weight>``."""
    return {(weight, method, metric): final_success_sample(per_seed, study, f"w{weight}", method, reward)
            for weight in ("1", "0.75", "0.5", "0.25") for method in (Method.GRPO, Method.GDPO)
            for metric, reward in C7_REWARDS.items()}


def _with_reward_name(interval: MeasuredInterval) -> MeasuredInterval:
    """``"grpo w0.5 acc"`` → ``"grpo w0.5 correctness"``: C7's interval named by the reward standing for its metric."""
    setting, metric = interval.name.rsplit(" ", 1)
    return dataclasses.replace(interval, name=f"{setting} {C7_REWARDS[metric]}")


@claim_rule("C7", Scale.SIM, study=BERNOULLI_STUDIES["C7"], design=C7_SIM_POWER)
def judge_c7(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C7 at scale sim (study ``easy_vs_hard_weights``): :func:`decide_c7` with the final success of
    correctness standing for accuracy and that of the length reward for Exceed (variants ``w<w>``)."""
    study = BERNOULLI_STUDIES["C7"]
    cells = cells_c7(per_seed, study)
    decision = decide_c7(cells)
    outcome, text = decision.outcome, decision.text
    text = "final success " + text.replace(" acc ", " correctness ").replace(" exceed ", " length ")
    intervals = tuple(_with_reward_name(i) for i in decision.intervals)
    comparison = f"w 0.75, 0.5 within ±{BARELY_MARGIN:g} pts of w 1; w 0.25 outside it (both methods)"
    run = _bench_run(per_seed, study)
    pairs = _paired_seeds(*((cells[(w, m, r)], cells[("1", m, r)]) for w in ("0.75", "0.5", "0.25")
                            for m in (Method.GRPO, Method.GDPO) for r in ("acc", "exceed")))
    if pairs < MIN_SEEDS:
        return _underpowered(pairs, text, comparison, evidence, run, intervals)
    return Verdict(text, comparison, outcome, evidence, run=run, parts=parts_text(decision.parts),
                   intervals=intervals)


# --------------------------------------------------------------------------------------------------
# Sequence bench (C4, C5, C8, C10): a failure mode looked for over a grid of settings
# --------------------------------------------------------------------------------------------------


def cells_c4(per_seed: pd.DataFrame, study: str, variants: Sequence[str]) -> dict[tuple[str, str, str], Sample]:
    """C4's cells per variant: GRPO w/o std's final format success against its step-0 format (standing for the
    base model's), and its correctness credit against GRPO's (standing for avg accuracy)."""
    cells: dict[tuple[str, str, str], Sample] = {}
    for v in variants:
        nostd, grpo = Method.GRPO_NOSTD, Method.GRPO
        cells[(v, nostd, "format")] = final_success_sample(per_seed, study, v, nostd, "format")
        cells[(v, "base", "format")] = initial_success_sample(per_seed, study, v, nostd, "format")
        cells[(v, nostd, "avg")] = final_success_sample(per_seed, study, v, nostd, "correctness")
        cells[(v, grpo, "avg")] = final_success_sample(per_seed, study, v, grpo, "correctness")
    return cells


@claim_rule("C4", Scale.SIM, study=SEQUENCE_STUDIES["C4"], design=C4_SIM_POWER)
def judge_c4(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C4 at scale sim (study ``seq_tool_calling``): per cell, :func:`decide_c4` with GRPO w/o std's final format
    success against its step-0 format (the base model) and :data:`NO_FORMAT_RATE`, and its correctness credit
    (graded, points) against GRPO's within ±:data:`PARITY_MARGIN`, the in-direction bounds at the grid's
    Bonferroni level (:func:`decide_setups` for a grid); :func:`over_cells` across cells."""
    study = SEQUENCE_STUDIES["C4"]
    variants = study_variants(per_seed, study)
    cells = cells_c4(per_seed, study, variants)
    decision = decide_c4(cells, variants, any_setup=True)
    outcomes, text = decision.by_setup, decision.text
    outcome = over_cells(outcomes)
    seeds = _paired_seeds(*((cells[(v, Method.GRPO_NOSTD, "avg")], cells[(v, Method.GRPO, "avg")])
                            for v in variants))
    measured = (f"per cell ({len(variants)} cells, in-direction bounds at one-sided "
                f"{100 * bonferroni_level(len(variants)):.4g} %, refuting bounds at {100 * bonferroni_level(4):.4g} %; "
                "avg = correctness credit): "
                f"{text.replace('GRPO w/o std', 'w/o std')}. Cells: {_tally(outcomes)}")
    comparison = (f"in a cell: w/o std's format below the base's and below {NO_FORMAT_RATE:g} %, its correctness "
                  f"within ±{PARITY_MARGIN:g} pts of GRPO's; combined over cells (shown in a cell and refuted in none; "
                  "refuted in every cell rules it out)")
    run = f"sequence bench, study {study}, {len(variants)} cells × {seeds} seeds per method"
    shortfall = _shortfall("C4", per_seed, study, seeds)
    shortfall = [s for s in shortfall if "items" not in s]
    if shortfall:
        return Verdict(f"{measured} — not decided: needs " + ", ".join(shortfall), comparison, UNDERPOWERED,
                       evidence, run=run, intervals=decision.intervals)
    return Verdict(measured, comparison, outcome, evidence, run=run, parts=parts_text(outcomes),
                   intervals=decision.intervals)


def _judge_events(claim_id: str, per_seed: pd.DataFrame, evidence: str, methods: tuple[str, str],
                  event_name: str) -> Verdict:
    """An event claim over a grid (:func:`decide_sim_events`), its positive controls apart: a refutation
    stands only where a positive control (a cell with settings engineered to produce the claim's effect)
    shows the claimed contrast through the same detector and rule (:func:`decide_events` reproduces in it);
    without one the row is ``not modelled``."""
    study = SEQUENCE_STUDIES[claim_id]
    a_name, b_name = methods
    controls = _control_cells(per_seed, study)
    variants = [v for v in study_variants(per_seed, study) if v not in controls]
    events = {v: (_seed_events(per_seed, study, v, a_name), _seed_events(per_seed, study, v, b_name))
              for v in variants}
    control_events = {v: (_seed_events(per_seed, study, v, a_name), _seed_events(per_seed, study, v, b_name))
                      for v in sorted(controls)}
    decision = decide_sim_events(claim_id, events)
    outcome, outcomes, text = decision.outcome, decision.by_setup, decision.text
    cells = len(events)
    level = bonferroni_level(cells)
    alpha = ALPHA / max(1, cells)
    seeds = min(min(len(a), len(b)) for a, b in events.values())
    bounds = []
    for index, name in enumerate(methods):
        total = sum(int(pair[index].sum()) for pair in events.values())
        runs = sum(len(pair[index]) for pair in events.values())
        bounds.append(f"{name} {total}/{runs} runs, rate ≤ {rate_interval(total, runs).high:.3f}")
    detectable = smallest_detectable_rate(seeds, seeds, alpha, claim_id=claim_id)
    # NaN: no rate up to 1 reaches 80 % power with these seeds (too few to detect anything).
    detects = (f"detects a {a_name} rate ≥ {detectable:.2f} (with none for {b_name})" if not math.isnan(detectable)
               else f"detects no {a_name} rate, not even 1 (with none for {b_name}),")
    power = round(sim_event_power(claim_id, cells, seeds), 3)
    control_text = "; ".join(f"{v}: {a_name} {int(a.sum())}/{len(a)}, {b_name} {int(b.sum())}/{len(b)}"
                             for v, (a, b) in control_events.items())
    # A refutation needs a positive control that shows the claimed contrast through the same detector and rule
    # (the compared method's event more often than the reference's, decided as in a cell): events of both
    # methods alike show only that the detector fires, not that the bench can produce the claim's effect.
    control_outcomes = {v: decide_events(claim_id, a.to_numpy(), b.to_numpy())[0] for v, (a, b) in control_events.items()}
    control_shows = [v for v, o in control_outcomes.items() if o == REPRODUCED]
    measured = (f"{event_name} {a_name} vs {b_name} per cell ({cells} cells, {seeds} seeds each, exact tests: "
                f"above 0 at one-sided {100 * level:.2f} %, below {EVENT_EFFECTS[claim_id]:g} at "
                f"{100 * (1 - ALPHA):g} %): {text}. Cells: {_tally(outcomes)}"
                + f". Over the grid: {'; '.join(bounds)} (95 % Wilson upper bounds). Per cell the design {detects} "
                "with 80 % power"
                + (f". Positive control{'s' if len(control_events) > 1 else ''} (settings engineered to produce the "
                   f"event, not part of the grid): {control_text}" if control_events else ". No positive control"))
    comparison = (f"{event_name} rate {a_name} − {b_name} (exact unconditional tests, above 0 Bonferroni over the "
                  "grid's cells), combined "
                  f"over cells (shown in a cell and the opposite in none; ruled below {EVENT_EFFECTS[claim_id]:g} in "
                  "every cell refutes, if a positive control shows the bench can produce the claimed contrast)")
    run = (f"sequence bench, study {study}, {cells} cells × {seeds} seeds per method"
           + (f" + {len(control_events)} positive control cell{'s' if len(control_events) > 1 else ''}"
              if control_events else ""))
    shortfall = _shortfall(claim_id, per_seed[~per_seed["variant"].isin(controls)], study, seeds)
    parts = parts_text(outcomes)
    if shortfall:
        return Verdict(f"{measured} — not decided: needs " + ", ".join(shortfall), comparison, UNDERPOWERED, evidence,
                       power=power, run=run, parts=parts, intervals=decision.intervals)
    if outcome == NOT_REPRODUCED and not control_shows:
        why = ("no positive control shows that the bench can produce the claimed contrast ("
               + (f"its control{'s' if len(control_events) > 1 else ''} gave {_tally(control_outcomes)}"
                  if control_events else "none declared")
               + f"), so ruling it out in every cell is not a refutation")
        # No power: the design cannot decide a claim whose effect the bench is not shown to produce.
        return Verdict(f"{measured} — {why}", comparison, NOT_MODELLED, evidence, run=run, parts=parts,
                       intervals=decision.intervals)
    return Verdict(measured, comparison, outcome, evidence, power=power, run=run, parts=parts,
                   intervals=decision.intervals)


@claim_rule("C5", Scale.SIM, study=SEQUENCE_STUDIES["C5"], design=EVENT_ROW_POWER)
def judge_c5(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C5 at scale sim (study ``seq_math_length``): per cell, the collapse rate (the training scale's divergence
    detector on correctness against the maximum response length) of GRPO minus GDPO; see
    :func:`decide_sim_events`. The power column: probability of ``reproduced`` in one cell if GRPO collapsed
    in half its runs and GDPO never (the claim's effect, :data:`EVENT_EFFECTS`)."""
    return _judge_events("C5", per_seed, evidence, (Method.GRPO, Method.GDPO), "collapse")


@claim_rule("C8", Scale.SIM, study=SEQUENCE_STUDIES["C8"], design=C8_SIM_POWER)
def judge_c8(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C8 at scale sim (study ``seq_conditioned_length``): :func:`decide_sim_pairs` on correctness and the length
    reward (share of responses within the limit, whether paid or not) over the cells whose length reward is
    conditioned on correctness (Eq. 8); the row counts them by outcome. The unconditioned cells
    (``conditioning=none`` in the cell's name: grid cells and extra cells both carry the grid's coordinates)
    are reported beside them."""
    study = SEQUENCE_STUDIES["C8"]
    variants = study_variants(per_seed, study)
    conditioned = [v for v in variants if "conditioning=none" not in v]
    comparison = ("conditioned length: both paired differences above 0, combined over the conditioned cells (shown in "
                  "a cell and refuted in none; refuted in every cell rules it out)")
    run = f"sequence bench, study {study}, {len(variants)} cells"
    if not conditioned:
        return Verdict("", comparison, NOT_RUN, f"{evidence}: no cell of {study} conditions the length reward")
    cells = pair_cells(per_seed, study, variants, ("correctness", "length"))
    decision = decide_sim_pairs(cells, conditioned, ("correctness", "length"))
    reported = {(v, r): paired(cells[(v, Method.GDPO, r)], cells[(v, Method.GRPO, r)]) for v in variants
                if v not in conditioned for r in ("correctness", "length")}
    plain = [f"{v}: " + ", ".join(f"{r} {interval_text(reported[(v, r)])}" for r in ("correctness", "length"))
             for v in variants if v not in conditioned]
    intervals = decision.intervals + tuple(MeasuredInterval.of(f"{v} {r}", i.interval()) for (v, r), i in reported.items())
    pairs = min(_paired_seeds(*((cells[(v, Method.GDPO, r)], cells[(v, Method.GRPO, r)])
                                for r in ("correctness", "length")))
                for v in conditioned)
    text = (f"GDPO − GRPO final success, conditioned length {decision.text}"
            + ("; plain length (for comparison): " + "; ".join(plain) if plain else "")
            + f". Conditioned cells: {_tally(decision.by_setup)}")
    if pairs < MIN_SEEDS:
        return _underpowered(pairs, text, comparison, evidence, run, intervals)
    return Verdict(text, comparison, decision.outcome, evidence, run=run, parts=parts_text(decision.parts),
                   intervals=intervals)


@claim_rule("C10", Scale.SIM, study=SEQUENCE_STUDIES["C10"], design=EVENT_ROW_POWER)
def judge_c10(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C10 at scale sim (study ``seq_batch_step``): per cell, the failure-to-converge rate
    (:func:`gdpo.curve_events.fails_to_converge` on correctness) of gdpo_nobn minus gdpo; see :func:`decide_sim_events`. The
    power column: probability of ``reproduced`` in one cell if gdpo_nobn failed in a fifth of its runs and
    gdpo never."""
    return _judge_events("C10", per_seed, evidence, (Method.GDPO_NOBN, Method.GDPO), "failure to converge")
