"""The pure decisions: samples (or event counts) in, a :class:`Decision` out, with no evidence file read.

Every claim's ``decide_cN`` applies its criteria (``criteria_cN``) to the intervals of :mod:`.samples`; the rules
of :mod:`.model` and :mod:`.sim` read their evidence into samples and call these, and the calibration
(:mod:`gdpo.reporting.calibration`) feeds them simulated samples, so the null false-positive rates and the power it
reports are those of the rules the ledger applies.

This module names no claim: a decision that reads the paper's effects (:func:`effect_or_zero`,
:func:`~gdpo.reporting.contract.paper_effect`) or a claim's event effect (:data:`EVENT_EFFECTS`) takes the claim's
ID from its caller, the rule registered for the claim (:mod:`.registry`), which binds it in its power design.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import binom

from gdpo.methods import Method
from gdpo.reporting import rate_tests
from gdpo.reporting.contract import (
    ALPHA, BARELY_MARGIN, CLAIMS_BY_ID, INCONCLUSIVE, NO_FORMAT_RATE, NOT_REPRODUCED, PARITY_MARGIN, RATE, REPRODUCED,
    SMALLER, Criterion, Estimate, Interval, MeasuredInterval, combine, one_sided_level, paper_effect, rate_difference_interval,
)
from gdpo.reporting.verdicts.samples import Cells, paired, pooled, shifted


# --------------------------------------------------------------------------------------------------
# Decisions and their text
# --------------------------------------------------------------------------------------------------


class Decision(NamedTuple):
    """What a ``decide_*`` function returns: the claim's verdict, the verdict per setup (or cell), the
    measured text, the verdict of every part (``"<setup> <part>"`` → verdict), so that a part with a
    large effect is shown decided even where another part is not, and the intervals the text shows, as
    numbers."""

    outcome: str
    by_setup: dict[str, str]
    text: str
    parts: dict[str, str]
    intervals: tuple[MeasuredInterval, ...] = ()


def parts_text(parts: Mapping[str, str]) -> str:
    """``"Qwen2.5-1.5B avg: reproduced; Qwen2.5-1.5B format: inconclusive"``."""
    return "; ".join(f"{name}: {verdict}" for name, verdict in parts.items())


#: One part of a claim: its name, the estimate of its effect, and what the estimate must show.
Part = tuple[str, Estimate, Criterion]


def decide_setups(setup_parts: Mapping[str, Sequence[Part]], any_setup: bool = False
                  ) -> tuple[dict[str, str], dict[str, str], dict[str, str], list[MeasuredInterval]]:
    """Every part of every setup decided, as an intersection–union test.

    In the paper's direction (``reproduced``, ``smaller``) a claim needs every part, so each part's in-direction
    bound is at the claim's one-sided level 1 − α (α = :data:`ALPHA`; 1 − α / 2 for a ``changed`` part, which
    either side can show): no correction. Any one part can refute, so the refuting bounds share α over every
    route of the claim that can refute (:attr:`Criterion.refutation_routes` summed over all parts of all setups:
    Bonferroni). More parts therefore never make a part's in-direction verdict harder, and only make refutation
    harder.

    ``any_setup``: the setups are cells of a grid that show the claim where any one cell shows it and refute it
    only where every cell refutes it (:func:`over_cells`): then the in-direction bounds share α over the cells
    and the refuting bounds over one cell's routes.

    Returns (verdict per setup, text per setup, verdict per part named ``"<setup> <part>"``, the shown intervals
    as numbers, named alike).
    """
    setups = len(setup_parts)
    claim_routes = sum(c.refutation_routes for parts in setup_parts.values() for _, _, c in parts)
    outcomes, texts, verdicts, measured = {}, {}, {}, []
    for setup, parts in setup_parts.items():
        refuters = sum(c.refutation_routes for _, _, c in parts) if any_setup else claim_routes
        shown_parts = []
        for name, estimate, criterion in parts:
            reproducers = criterion.reproduction_routes * (setups if any_setup else 1)
            key = f"{setup} {name}".strip()
            verdicts[key] = criterion.decide(estimate, refuters, reproducers)
            shown = criterion.shown(estimate, refuters, reproducers)
            measured.append(MeasuredInterval.of(key, shown))
            shown_parts.append(f"{name} {interval_text(shown)}")
        outcomes[setup] = combine([verdicts[f"{setup} {name}".strip()] for name, _, _ in parts])
        texts[setup] = ", ".join(shown_parts)
    return outcomes, texts, verdicts, measured


def interval_text(interval: Interval | Estimate, unit: str = " pts") -> str:
    """``"+2.1 pts [+0.4 (95 %), +3.8 (98.75 %)] (t over 3 seeds)"``, or the mean alone where no interval could be
    formed. An :class:`Estimate` (reported, not decided on) is shown with both bounds at one-sided 1 − α."""
    if isinstance(interval, Estimate):
        interval = interval.interval()
    if math.isnan(interval.low):
        return f"{interval.mean:+.1f}{unit} (no interval: {interval.source})"
    return f"{interval.text(unit)} ({interval.source})"


def bonferroni_level(cells: int) -> float:
    """One-sided level of each of ``cells`` tests when a rule decides on any one of them: 1 − α / cells, so
    that the chance that any cell's test errs stays below α (:func:`gdpo.reporting.contract.one_sided_level`)."""
    return one_sided_level(cells)


def effect_or_zero(claim_id: str, setup: str, metric: str) -> float:
    """The paper's effect for a setup label, or 0 for a label the paper's table does not have (then only
    the opposite direction refutes)."""
    try:
        return paper_effect(claim_id, setup, metric)
    except KeyError:
        return 0.0


# --------------------------------------------------------------------------------------------------
# Table claims (C3, C4, C6, C7, C8, C9)
# --------------------------------------------------------------------------------------------------


def _per_setup(setup_parts: Mapping[str, Sequence[Part]], what: str, any_setup: bool = False) -> Decision:
    """A table claim decided per setup by :func:`decide_setups`, the setups combined by
    :func:`gdpo.reporting.contract.combine`; ``what`` prefixes each setup's text (e.g. ``"GDPO − GRPO"``)."""
    outcomes, texts, verdicts, measured = decide_setups(setup_parts, any_setup)
    text = "; ".join(f"{setup}: {what} {texts[setup]}" for setup in setup_parts)
    return Decision(combine(list(outcomes.values())), outcomes, text, verdicts, tuple(measured))


def decide_better(claim_id: str, cells: Cells, setups: Sequence[str], metrics: Sequence[str],
                  methods: tuple[str, str] = (Method.GDPO, Method.GRPO), what: str = "GDPO − GRPO") -> Decision:
    """The decision of a claim "``methods[0]`` beats ``methods[1]`` on every metric (higher is better), per
    setup", as a new claim's power design and rule use it (``docs/add-a-claim.md``): each metric's paired
    difference above 0, refuted below the paper's effect for the setup (:func:`effect_or_zero`: the claim's
    contract's ``effect``); levels by :func:`decide_setups`, setups combined by
    :func:`gdpo.reporting.contract.combine`. ``cells`` keys: (setup, method, metric)."""
    a, b = methods
    return _per_setup({setup: [(m, paired(cells[(setup, a, m)], cells[(setup, b, m)]),
                                Criterion("better", +1, effect_or_zero(claim_id, setup, m))) for m in metrics]
                       for setup in setups}, what)


def criteria_c3(setup: str, *, claim_id: str) -> dict[str, Criterion]:
    """C3's parts for a setup: avg and format above 0, refuted below ``claim_id``'s paper effect for the setup
    (:func:`effect_or_zero`)."""
    return {m: Criterion("better", +1, effect_or_zero(claim_id, setup, m)) for m in ("avg", "format")}


def decide_c3(cells: Cells, setups: Sequence[str], *, claim_id: str) -> Decision:
    """C3, per Table 1 setup: GDPO − GRPO of BFCL avg accuracy and of correct format, both above 0; refuted
    if either lies below the paper's effect for that setup (``claim_id``'s, given by the rule registered for the
    claim). Setups combined by :func:`gdpo.reporting.contract.combine`; levels by :func:`decide_setups`."""
    return _per_setup({setup: [(m, paired(cells[(setup, Method.GDPO, m)], cells[(setup, Method.GRPO, m)]), c)
                               for m, c in criteria_c3(setup, claim_id=claim_id).items()] for setup in setups},
                      "GDPO − GRPO")


def criteria_c4(setup: str) -> dict[str, Criterion]:
    # The fall is refuted only by a rise: its size depends on the base model (4.74 % at the paper's 1.5B);
    # the paper's magnitude, 0 %, is the rate criterion's.
    return {"fall": Criterion("better", -1, 0.0),
            "rate": Criterion("better", -1, 0.0),
            "parity": Criterion("same", margin=PARITY_MARGIN)}


def c4_parts(cells: Cells, setup: str) -> list[Part]:
    """C4's three parts of one setup (:func:`decide_c4`)."""
    criteria = criteria_c4(setup)
    nostd = cells[(setup, Method.GRPO_NOSTD, "format")]
    return [("format − base", paired(nostd, cells[(setup, "base", "format")]), criteria["fall"]),
            (f"format − {NO_FORMAT_RATE:g} %", shifted(nostd, NO_FORMAT_RATE), criteria["rate"]),
            ("avg − GRPO's", paired(cells[(setup, Method.GRPO_NOSTD, "avg")], cells[(setup, Method.GRPO, "avg")]),
             criteria["parity"])]


def decide_c4(cells: Cells, setups: Sequence[str], any_setup: bool = False) -> Decision:
    """C4, per Table 1 setup that trains GRPO w/o std: its format falls from the base model's (w/o std − base
    below 0; refuted above it), stays near 0 % (its rate below :data:`NO_FORMAT_RATE`; refuted when above it: it
    learned format), and its avg accuracy matches GRPO's (the difference within ±:data:`PARITY_MARGIN`; refuted
    when outside). Levels by :func:`decide_setups` (``any_setup``: the setups are a grid's cells)."""
    return _per_setup({setup: c4_parts(cells, setup) for setup in setups}, "GRPO w/o std", any_setup)


def decide_c6(cells: Cells, setups: Sequence[str], *, claim_id: str) -> Decision:
    """C6: GDPO − GRPO of accuracy above 0 and of Exceed below 0, each averaged over the benchmarks and then
    over Table 3's setups (models); refuted below the paper's mean effect over those setups (``claim_id``'s,
    given by the rule registered for the claim). Each setup is
    paired by seed within itself and the setups are pooled as independent samples (:func:`pooled`: the mean of
    the setups' paired means, Welch–Satterthwaite degrees of freedom), never by seed label across models.
    Per-setup estimates are reported beside it (both bounds at one-sided 1 − α).

    The claim is the mean over the models, as the paper's, not each model: per model, the paper's own gains at
    R1-7B and Qwen3-4B are +0.6 and +0.3 points of accuracy, too small to be decided over the seeds of one run
    each, so an intersection–union test over setups would ask every model to show what the paper shows only on
    average. Levels by :func:`decide_setups` over the two parts."""
    effects = {m: float(np.mean([effect_or_zero(claim_id, s, m) for s in setups])) for m in ("acc", "exceed")}
    criteria = {"acc": Criterion("better", +1, effects["acc"]), "exceed": Criterion("better", -1, -effects["exceed"])}
    parts = [(m, pooled([(cells[(s, Method.GDPO, m)], cells[(s, Method.GRPO, m)]) for s in setups]), c)
             for m, c in criteria.items()]
    outcomes, texts, verdicts, measured = decide_setups({"": parts})
    reported = {(s, m): paired(cells[(s, Method.GDPO, m)], cells[(s, Method.GRPO, m)])
                for s in setups for m in criteria}
    per_setup = "; ".join(f"{s}: " + ", ".join(f"{m} {interval_text(reported[(s, m)])}" for m in criteria)
                          for s in setups)
    label = "mean over setups" if len(setups) > 1 else setups[0]
    if len(setups) > 1:
        measured += [MeasuredInterval.of(f"{s} {m}", estimate.interval()) for (s, m), estimate in reported.items()]
    outcome = outcomes[""]
    return Decision(outcome, {s: outcome for s in setups}, f"GDPO − GRPO, {label}: {texts['']}" + (
        f" (per setup: {per_setup})" if len(setups) > 1 else ""), verdicts, tuple(measured))


def decide_c8(cells: Cells, setups: Sequence[str], *, claim_id: str) -> Decision:
    """C8, per Table 4 setup: GDPO − GRPO of accuracy above 0 and Exceed below 0 (benchmark averages, paired
    by seed); refuted below the paper's mean effect over Table 4's benchmarks (+2.0 acc, −5.7 exceed:
    ``claim_id``'s, given by the rule registered for the claim). Levels by :func:`decide_setups`."""
    criteria = {"acc": Criterion("better", +1, paper_effect(claim_id, "", "acc")),
                "exceed": Criterion("better", -1, -paper_effect(claim_id, "", "exceed"))}
    return _per_setup({setup: [(m, paired(cells[(setup, Method.GDPO, m)], cells[(setup, Method.GRPO, m)]), c)
                               for m, c in criteria.items()] for setup in setups}, "GDPO − GRPO")


def criteria_c9(setup: str, *, claim_id: str) -> dict[str, Criterion]:
    """Table 5 shows, GDPO − GRPO: at 2 objectives pass +2.5 (kept), exceed +0.07 (kept, not lowered: the
    paper shows no lowering there) and at 3 objectives pass +0.1 (kept), exceed −3.2 and bug −1.2 (lower: the
    refuting bounds are ``claim_id``'s paper effects)."""
    if setup == "3obj":
        return {"pass": Criterion("kept", +1, margin=PARITY_MARGIN),
                "exceed": Criterion("better", -1, -effect_or_zero(claim_id, "3obj", "exceed")),
                "bug": Criterion("better", -1, -effect_or_zero(claim_id, "3obj", "bug"))}
    return {"pass": Criterion("kept", +1, margin=PARITY_MARGIN), "exceed": Criterion("kept", -1, margin=PARITY_MARGIN)}


def decide_c9(cells: Cells, setups: Sequence[str], *, claim_id: str) -> Decision:
    """C9, per Table 5 setup: GDPO keeps the pass rate (GDPO − GRPO above −:data:`PARITY_MARGIN`); at 2
    objectives it keeps Exceed (below +:data:`PARITY_MARGIN`); at 3 objectives it lowers Exceed and the bug
    ratio (below 0; refuted below ``claim_id``'s paper effect, given by the rule registered for the claim).
    Benchmarks averaged, paired by seed; levels by :func:`decide_setups`."""
    return _per_setup({setup: [(m, paired(cells[(setup, Method.GDPO, m)], cells[(setup, Method.GRPO, m)]), c)
                               for m, c in criteria_c9(setup, claim_id=claim_id).items()] for setup in setups},
                      "GDPO − GRPO")


#: C7's alternative where the paper gives no numbers (its power design, at every scale): weight 0.25 moves
#: accuracy by twice the "barely" band, the other weights nothing.
C7_CHANGE = 2 * BARELY_MARGIN


def decide_c7(cells: Cells) -> Decision:
    """C7, for GRPO and GDPO: accuracy and Exceed at length weight 0.75 and 0.5 minus at weight 1 within
    ±:data:`BARELY_MARGIN` (equivalence), and at 0.25 outside it for accuracy or Exceed; refuted when 0.75 or
    0.5 lies outside the band or 0.25 lies within it for both metrics. ``cells`` keys: (weight label,
    method, metric) with labels ``"1"``, ``"0.75"``, ``"0.5"``, ``"0.25"``. Parts: per method, "w0.75 and
    0.5 barely change" (eight one-sided bounds, all needed: each at 1 − α) and "w0.25 changes" (any of four
    bounds, acc or Exceed on either side: each at 1 − α / 4). Refutation can come from either side of any of
    the eight "barely" bounds or from one "w0.25" part per method (both metrics within: all needed): 18 routes,
    each refuting bound at 1 − α / 18."""
    same, changed = Criterion("same", margin=BARELY_MARGIN), Criterion("changed", margin=BARELY_MARGIN)
    methods = (Method.GRPO, Method.GDPO)
    refuters = len(methods) * (4 * same.refutation_routes + 1)
    moved_reproducers = 2 * changed.reproduction_routes
    outcomes, texts, verdicts, measured = {}, [], {}, []
    for method in methods:
        estimates = {(w, m): paired(cells[(w, method, m)], cells[("1", method, m)])
                     for w in ("0.75", "0.5", "0.25") for m in ("acc", "exceed")}
        shown = {(w, m): (same if w != "0.25" else changed).shown(
            e, refuters, 1 if w != "0.25" else moved_reproducers) for (w, m), e in estimates.items()}
        measured += [MeasuredInterval.of(f"{method} w{w} {m}", i) for (w, m), i in shown.items()]
        kept = combine([same.decide(estimates[(w, m)], refuters) for w in ("0.75", "0.5") for m in ("acc", "exceed")])
        moved = [changed.decide(estimates[("0.25", m)], refuters, moved_reproducers) for m in ("acc", "exceed")]
        low_weight = REPRODUCED if REPRODUCED in moved else NOT_REPRODUCED if all(
            o == NOT_REPRODUCED for o in moved) else INCONCLUSIVE
        verdicts[f"{method} w0.75/0.5 within ±{BARELY_MARGIN:g}"] = kept
        verdicts[f"{method} w0.25 outside"] = low_weight
        outcomes[method] = combine([kept, low_weight])
        texts.append(f"{method}: " + ", ".join(f"w{w} {m} {interval_text(i)}" for (w, m), i in shown.items()))
    return Decision(combine(list(outcomes.values())), outcomes, "vs weight 1; " + "; ".join(texts), verdicts,
                    tuple(measured))


# --------------------------------------------------------------------------------------------------
# Event claims (C5, C10)
# --------------------------------------------------------------------------------------------------


class _EventEffects(Mapping[str, float]):
    """Claim → the smallest effect (difference of event rates) an event claim implies: each claim's contract's
    ``event_effect`` (:class:`gdpo.reporting.contract.Claim`), read when asked, so that a claim registered later
    is in it too."""

    def __getitem__(self, claim_id: str) -> float:
        claim = CLAIMS_BY_ID.get(claim_id)
        if claim is None or claim.event_effect is None:
            raise KeyError(claim_id)
        return claim.event_effect

    def __iter__(self):
        return (claim_id for claim_id, claim in CLAIMS_BY_ID.items() if claim.event_effect is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: Smallest effects the qualitative event claims imply (rate differences), by claim: their contracts'
#: ``event_effect`` (the paper's read in :data:`gdpo.reporting.contract.CLAIMS`).
EVENT_EFFECTS: Mapping[str, float] = _EventEffects()


#: The reference method's event rate under the alternative, at every scale (:mod:`gdpo.reporting.calibration`
#: uses the same): the compared method's rate is this plus the claim's effect.
EVENT_BASE_RATE = 0.05


def _reproduction_region(claim_id: str, trials_a: int, trials_b: int, alpha: float) -> np.ndarray:
    """The tables (a's events, b's events) in which an event claim's rule finds a's rate above b's at one-sided
    ``alpha``: the exact unconditional test of :func:`gdpo.reporting.rate_tests.reproduction_region`, grown
    toward the claim's stated alternative (b at :data:`EVENT_BASE_RATE`, a that plus the claim's effect) and
    nested over seed counts (one more seed with the claim never takes a table out)."""
    return rate_tests.reproduction_region(int(trials_a), int(trials_b), float(alpha),
                                          min(1.0, EVENT_BASE_RATE + EVENT_EFFECTS[claim_id]), EVENT_BASE_RATE)


def event_outcomes(claim_id: str, trials_a: int, trials_b: int, reproduce_alpha: float = ALPHA,
                   refute_alpha: float = ALPHA) -> np.ndarray:
    """(trials_a + 1, trials_b + 1) array of verdicts, one per table (a's events, b's events): what
    :func:`decide_events` gives for it."""
    above = _reproduction_region(claim_id, trials_a, trials_b, reproduce_alpha)
    below = rate_tests.below_region(trials_a, trials_b, EVENT_EFFECTS[claim_id], refute_alpha)
    return np.where(above, np.where(below, SMALLER, REPRODUCED), np.where(below, NOT_REPRODUCED, INCONCLUSIVE))


def decide_events(claim_id: str, events_a: Sequence[bool], events_b: Sequence[bool],
                  reproduce_alpha: float = ALPHA, refute_alpha: float = ALPHA) -> tuple[str, Interval]:
    """C5 / C10: the event rate of a (GRPO; gdpo_nobn) against b's (GDPO; gdpo), over seeds, by two exact
    unconditional tests on the 2 × 2 table (seeds with and without the event, per method;
    :mod:`gdpo.reporting.rate_tests`): a's rate above b's (H₀ p_a ≤ p_b rejected at one-sided
    ``reproduce_alpha``) is in the paper's direction; the difference below the claim's smallest effect δ
    (:data:`EVENT_EFFECTS`; H₀ p_a − p_b ≥ δ rejected at one-sided ``refute_alpha``) refutes. Both: ``smaller``;
    neither: ``inconclusive``. The interval returned is for display only (Newcombe's, each side at one-sided
    1 − α); its source states what decided: whether the table lies in the first test's region and that region's
    exact size (no p-value: its regions, grown design by design, are not built nested in α, so no p-value is
    that test's), and the second test's p-value (its region is p ≤ α)."""
    a, b = np.asarray(events_a, dtype=bool), np.asarray(events_b, dtype=bool)
    x, n_a, y, n_b = int(a.sum()), a.size, int(b.sum()), b.size
    outcome = str(event_outcomes(claim_id, n_a, n_b, reproduce_alpha, refute_alpha)[x, y])
    delta = EVENT_EFFECTS[claim_id]
    region = _reproduction_region(claim_id, n_a, n_b, reproduce_alpha)
    above, below = bool(region[x, y]), bool(rate_tests.below_region(n_a, n_b, delta, refute_alpha)[x, y])
    level = f"one-sided {100 * reproduce_alpha:.3g} %"
    above_text = (f"{x}/{n_a} vs {y}/{n_b} lies {'in' if above else 'outside'} the test's region at {level}, "
                  f"of exact size {rate_tests.null_size(region):.3g}" if region.any()
                  else f"no table of {n_a} vs {n_b} seeds lies in the test's region at {level}")
    p = rate_tests.below_p_value(x, n_a, y, n_b, delta)
    digits = 3  # enough that the printed p lies on the same side of α as p itself
    while digits < 9 and (float(f"{p:.{digits}f}") <= refute_alpha) != (p <= refute_alpha):
        digits += 1
    below_text = (f"p = {p:.{digits}f} {'≤' if below else '>'} {refute_alpha:g}" if below or p > refute_alpha
                  # p on the grid within rate_tests.SIZE_MARGIN below α: the test keeps that margin
                  else f"p = {p:.7f} > {refute_alpha - rate_tests.SIZE_MARGIN:.7f}, α less the grid's margin")
    shown = rate_difference_interval(x, n_a, y, n_b, 1 - 2 * ALPHA)
    source = (f"{shown.source}, shown only; decided by exact unconditional score tests (nuisance rate maximised): "
              f"above 0 {'shown' if above else 'not shown'} ({above_text}); below {delta:g} "
              f"{'shown' if below else 'not shown'} ({below_text})")
    return outcome, Interval(shown.mean, shown.low, shown.high, source, shown.low_level, shown.high_level)


def detection_power(trials_a: int, trials_b: int, rate_a: float, alpha: float = ALPHA, *,
                    claim_id: str) -> float:
    """Probability that :func:`decide_events` finds a's rate above b's when a's event rate is ``rate_a`` and b
    never has the event (exact: a sum over a's binomial outcomes). Not the ledger's power column, which assumes
    both methods have events (:func:`sim_event_power`, :func:`gdpo.reporting.calibration.event_power`)."""
    detected = np.flatnonzero(_reproduction_region(claim_id, trials_a, trials_b, alpha)[:, 0])
    return float(binom.pmf(detected, trials_a, rate_a).sum())


def smallest_detectable_rate(trials_a: int, trials_b: int, alpha: float = ALPHA, power: float = 0.8, *,
                             claim_id: str) -> float:
    """Smallest event rate of a (b: none) that :func:`decide_events` detects with probability ≥ ``power``
    (:func:`detection_power`, searched in steps of 0.01)."""
    for rate in np.arange(0.01, 1.0001, 0.01):
        if detection_power(trials_a, trials_b, float(rate), alpha, claim_id=claim_id) >= power:
            return float(rate)
    return math.nan


# --------------------------------------------------------------------------------------------------
# Grids of cells (scale sim)
# --------------------------------------------------------------------------------------------------


def over_cells(outcomes: Mapping[str, str], opposite: set[str] | None = None) -> str:
    """The one rule by which every sim claim combines the cells of its grid, each cell's in-direction tests at
    one-sided 1 − α / cells (:func:`bonferroni_level`) and its refuting tests at the cell's own level: the claim
    is shown where some cell shows it and no cell shows the opposite (``reproduced`` if a cell reproduces, else ``smaller`` if a cell finds a smaller effect); ruled
    out (``not reproduced``) only where every cell rules it out; otherwise ``inconclusive``. ``opposite``: the
    cells whose interval lies on the other side of no effect (default: every ``not reproduced`` cell, which
    for δ = 0 and for parity parts is the same thing; an event claim's cell that only rules out the claim's
    rate difference, holding 0, is no evidence against the mechanism elsewhere). A false ``reproduced`` needs
    a cell's in-direction test to err, which the Bonferroni level keeps below α over the grid; a false
    ``not reproduced`` needs every cell's refutation to err."""
    values = list(outcomes.values())
    if values and all(v == NOT_REPRODUCED for v in values):
        return NOT_REPRODUCED
    against = {c for c, v in outcomes.items() if v == NOT_REPRODUCED} if opposite is None else set(opposite)
    if not against:
        if REPRODUCED in values:
            return REPRODUCED
        if SMALLER in values:
            return SMALLER
    return INCONCLUSIVE


def decide_sim_pairs(cells: Cells, variants: Sequence[str], rewards: tuple[str, str]) -> Decision:
    """Sim C3 / C8 on their cells (keys (variant, method, reward)): per cell, GDPO − GRPO of the final success of
    both ``rewards``, paired by seed, each above 0 (δ = 0: the bench's units are not the paper's); levels by
    :func:`decide_setups` for a grid (a cell shows the claim: its in-direction bounds share α over the cells; a
    cell refutes: its refuting bounds share α over its two parts); cells combined by :func:`over_cells`."""
    better = Criterion("better", +1, 0.0)
    setup_parts = {variant: [(r, paired(cells[(variant, Method.GDPO, r)], cells[(variant, Method.GRPO, r)]), better)
                             for r in rewards] for variant in variants}
    outcomes, texts, verdicts, measured = decide_setups(setup_parts, any_setup=True)
    level = one_sided_level(len(variants))
    return Decision(over_cells(outcomes), outcomes, f"(lower bounds at one-sided {100 * level:.4g} %, upper at "
                    f"{100 * one_sided_level(len(rewards)):.4g} %) " + "; ".join(
                        f"{variant}: {texts[variant]}" for variant in variants), verdicts, tuple(measured))


def decide_sim_events(claim_id: str, events: Mapping[str, tuple[pd.Series, pd.Series]]) -> Decision:
    """C5 / C10 over a grid: per cell, :func:`decide_events` (a − b, paired nothing: rates over seeds) with the
    reproduction test at one-sided α / cells (any cell shows the claim: Bonferroni) and the refutation test at α
    (refuting the claim needs every cell); :func:`over_cells` across cells, a cell whose b rate is shown above
    a's (the exact score test at α, roles swapped) counting as the opposite. ``events``: cell → (a's, b's)."""
    alpha = ALPHA / max(1, len(events))
    outcomes, parts, opposite, measured = {}, [], set(), []
    for cell, (a, b) in events.items():
        outcomes[cell], interval = decide_events(claim_id, a.to_numpy(), b.to_numpy(), alpha, ALPHA)
        measured.append(MeasuredInterval.of(cell, interval, RATE))
        if rate_tests.above_region(len(b), len(a), ALPHA)[int(b.sum()), int(a.sum())]:
            opposite.add(cell)
        parts.append(f"{cell}: {int(a.sum())}/{len(a)} vs {int(b.sum())}/{len(b)}, difference "
                     f"{interval.text('', 2)}")
    return Decision(over_cells(outcomes, opposite), outcomes, "; ".join(parts), dict(outcomes), tuple(measured))


def sim_event_power(claim_id: str, cells: int, seeds: int) -> float:
    """The sim event rows' power, defined as every row's: P(``reproduced``) of :func:`decide_sim_events` over
    ``cells`` cells of ``seeds`` seeds per method when in every cell the compared method's event rate is
    :data:`EVENT_BASE_RATE` + the claim's effect and the reference's :data:`EVENT_BASE_RATE` (exact:
    per cell by enumeration, cells independent)."""
    rate_b = EVENT_BASE_RATE
    rate_a = min(1.0, rate_b + EVENT_EFFECTS[claim_id])
    tables = rate_tests.table_probabilities(seeds, seeds, rate_a, rate_b)
    outcomes = event_outcomes(claim_id, seeds, seeds, ALPHA / max(1, cells), ALPHA)
    reproduced = float(tables[outcomes == REPRODUCED].sum())
    opposite = float(tables[rate_tests.above_region(seeds, seeds, ALPHA).T].sum())
    # Reproduced over the grid (:func:`over_cells`): no cell on the other side, and some cell reproduced.
    return float((1 - opposite) ** cells - (1 - opposite - reproduced) ** cells)
