"""The pure decisions: samples (or event counts) in, a :class:`Decision` out, with no evidence file read.

Every claim's ``decide_cN`` applies its criteria (``criteria_cN``) to the intervals of :mod:`.samples`; the rules
of :mod:`.model` and :mod:`.sim` read their evidence into samples and call these, and the calibration
(:mod:`gdpo.reporting.calibration`) feeds them simulated samples, so the null false-positive rates and the power it
reports are those of the rules the ledger applies.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.stats import binom

from gdpo.methods import Method
from gdpo.reporting.contract import (
    BARELY_MARGIN, INCONCLUSIVE, LEVEL, NO_FORMAT_RATE, NOT_REPRODUCED, PARITY_MARGIN, RATE, REPRODUCED,
    SMALLER, Criterion, Interval, MeasuredInterval, combine, paper_effect, rate_difference_interval,
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


def _decide_parts(parts: Sequence[tuple[str, Interval, Criterion]], prefix: str = ""
                  ) -> tuple[str, str, dict[str, str], list[MeasuredInterval]]:
    """Each part's interval decided by its criterion: the parts combined, their text, each part's verdict and
    its interval as numbers (both named ``prefix`` + the part's name)."""
    outcomes = {f"{prefix}{name}": criterion.decide(interval) for name, interval, criterion in parts}
    text = ", ".join(f"{name} {interval_text(interval)}" for name, interval, _ in parts)
    measured = [MeasuredInterval.of(f"{prefix}{name}", interval) for name, interval, _ in parts]
    return combine(list(outcomes.values())), text, outcomes, measured


def interval_text(interval: Interval, unit: str = " pts") -> str:
    """``"+2.1 pts [+0.4, +3.8] (t over 3 seeds)"``, or the mean alone where no interval could be formed."""
    if math.isnan(interval.low):
        return f"{interval.mean:+.1f}{unit} (no interval: {interval.source})"
    return f"{interval.text(unit)} ({interval.source})"


def part_level(parts: int, level: float = LEVEL) -> float:
    """The confidence level of each of a claim's ``parts`` intervals when any one of them can refute the claim
    (or, for C7's weight 0.25, reproduce a part): Bonferroni, so that the claim's false refutation under the
    paper's effect, and its false ``reproduced`` under no difference, stay within 1 − ``level``."""
    return 1 - (1 - level) / max(1, parts)


def bonferroni_level(cells: int) -> float:
    """Confidence level of each of ``cells`` comparisons when a rule decides on any one of them: the chance
    that any cell's interval misses stays below 1 − :data:`LEVEL`."""
    return 1 - (1 - LEVEL) / max(1, cells)


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


def criteria_c3(setup: str) -> dict[str, Criterion]:
    return {m: Criterion("better", +1, effect_or_zero("C3", setup, m)) for m in ("avg", "format")}


def decide_c3(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C3, per Table 1 setup: GDPO − GRPO of BFCL avg accuracy and of correct format, both above 0; refuted
    if either lies below the paper's effect for that setup. Setups combined by
    :func:`gdpo.reporting.contract.combine`; every part's interval at the Bonferroni level over the parts
    (:func:`part_level`)."""
    level = part_level(2 * len(setups), level)
    outcomes, texts, verdicts, measured = {}, [], {}, []
    for setup in setups:
        parts = [(m, paired(cells[(setup, Method.GDPO, m)], cells[(setup, Method.GRPO, m)], level), c)
                 for m, c in criteria_c3(setup).items()]
        outcomes[setup], text, part_verdicts, part_intervals = _decide_parts(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        measured += part_intervals
        texts.append(f"{setup}: GDPO − GRPO {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts, tuple(measured))


def criteria_c4(setup: str) -> dict[str, Criterion]:
    # The fall is refuted only by a rise: its size depends on the base model (4.74 % at the paper's 1.5B);
    # the paper's magnitude, 0 %, is the rate criterion's.
    return {"fall": Criterion("better", -1, 0.0),
            "rate": Criterion("better", -1, 0.0),
            "parity": Criterion("same", margin=PARITY_MARGIN)}


def decide_c4(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C4, per Table 1 setup that trains GRPO w/o std: its format falls from the base model's (interval of
    w/o std − base below 0; refuted below the paper's fall), stays near 0 % (interval of its rate below
    :data:`NO_FORMAT_RATE`; refuted when above it: it learned format), and its avg accuracy matches GRPO's
    (interval of the difference within ±:data:`PARITY_MARGIN`; refuted when outside). Intervals at the
    Bonferroni level over the parts (:func:`part_level`)."""
    level = part_level(3 * len(setups), level)
    outcomes, texts, verdicts, measured = {}, [], {}, []
    for setup in setups:
        criteria = criteria_c4(setup)
        nostd = cells[(setup, Method.GRPO_NOSTD, "format")]
        parts = [("format − base", paired(nostd, cells[(setup, "base", "format")], level), criteria["fall"]),
                 (f"format − {NO_FORMAT_RATE:g} %", shifted(nostd, NO_FORMAT_RATE, level), criteria["rate"]),
                 ("avg − GRPO's",
                  paired(cells[(setup, Method.GRPO_NOSTD, "avg")], cells[(setup, Method.GRPO, "avg")], level),
                  criteria["parity"])]
        outcomes[setup], text, part_verdicts, part_intervals = _decide_parts(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        measured += part_intervals
        texts.append(f"{setup}: GRPO w/o std {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts, tuple(measured))


def decide_c6(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C6: GDPO − GRPO of accuracy above 0 and of Exceed below 0, each averaged over the benchmarks and then
    over Table 3's setups (models), paired by seed; refuted below the paper's mean effect. Per-setup
    intervals are reported beside it. (Per model, the paper's own gains at R1-7B and Qwen3-4B are +0.6 and
    +0.3 points of accuracy: too small to be decided over the seeds of one run each.) Intervals at the
    Bonferroni level over the two parts."""
    level = part_level(2, level)
    effects = {m: float(np.mean([effect_or_zero("C6", s, m) for s in setups])) for m in ("acc", "exceed")}
    criteria = {"acc": Criterion("better", +1, effects["acc"]), "exceed": Criterion("better", -1, -effects["exceed"])}
    parts = [(m, pooled([(cells[(s, Method.GDPO, m)], cells[(s, Method.GRPO, m)]) for s in setups], level), c)
             for m, c in criteria.items()]
    outcome, text, verdicts, measured = _decide_parts(parts)
    reported = {(s, m): paired(cells[(s, Method.GDPO, m)], cells[(s, Method.GRPO, m)])
                for s in setups for m in criteria}
    per_setup = "; ".join(f"{s}: " + ", ".join(f"{m} {interval_text(reported[(s, m)])}" for m in criteria)
                          for s in setups)
    label = "mean over setups" if len(setups) > 1 else setups[0]
    if len(setups) > 1:
        measured += [MeasuredInterval.of(f"{s} {m}", interval) for (s, m), interval in reported.items()]
    return Decision(outcome, {s: outcome for s in setups}, f"GDPO − GRPO, {label}: {text}" + (
        f" (per setup: {per_setup})" if len(setups) > 1 else ""), verdicts, tuple(measured))


def decide_c8(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C8, per Table 4 setup: GDPO − GRPO of accuracy above 0 and Exceed below 0 (benchmark averages, paired
    by seed); refuted below the paper's mean effect over Table 4's benchmarks (+2.0 acc, −5.7 exceed).
    Intervals at the Bonferroni level over the parts."""
    level = part_level(2 * len(setups), level)
    criteria = {"acc": Criterion("better", +1, paper_effect("C8", "", "acc")),
                "exceed": Criterion("better", -1, -paper_effect("C8", "", "exceed"))}
    outcomes, texts, verdicts, measured = {}, [], {}, []
    for setup in setups:
        parts = [(m, paired(cells[(setup, Method.GDPO, m)], cells[(setup, Method.GRPO, m)], level), c)
                 for m, c in criteria.items()]
        outcomes[setup], text, part_verdicts, part_intervals = _decide_parts(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        measured += part_intervals
        texts.append(f"{setup}: GDPO − GRPO {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts, tuple(measured))


def criteria_c9(setup: str) -> dict[str, Criterion]:
    """Table 5 shows, GDPO − GRPO: at 2 objectives pass +2.5 (kept), exceed +0.07 (kept, not lowered: the
    paper shows no lowering there) and at 3 objectives pass +0.1 (kept), exceed −3.2 and bug −1.2 (lower)."""
    if setup == "3obj":
        return {"pass": Criterion("kept", +1, margin=PARITY_MARGIN),
                "exceed": Criterion("better", -1, -effect_or_zero("C9", "3obj", "exceed")),
                "bug": Criterion("better", -1, -effect_or_zero("C9", "3obj", "bug"))}
    return {"pass": Criterion("kept", +1, margin=PARITY_MARGIN), "exceed": Criterion("kept", -1, margin=PARITY_MARGIN)}


def decide_c9(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C9, per Table 5 setup: GDPO keeps the pass rate (GDPO − GRPO above −:data:`PARITY_MARGIN`); at 2
    objectives it keeps Exceed (below +:data:`PARITY_MARGIN`); at 3 objectives it lowers Exceed and the bug
    ratio (below 0; refuted below the paper's effect). Benchmarks averaged, paired by seed; intervals at the
    Bonferroni level over the parts."""
    level = part_level(sum(len(criteria_c9(s)) for s in setups), level)
    outcomes, texts, verdicts, measured = {}, [], {}, []
    for setup in setups:
        parts = [(m, paired(cells[(setup, Method.GDPO, m)], cells[(setup, Method.GRPO, m)], level), c)
                 for m, c in criteria_c9(setup).items()]
        outcomes[setup], text, part_verdicts, part_intervals = _decide_parts(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        measured += part_intervals
        texts.append(f"{setup}: GDPO − GRPO {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts, tuple(measured))


def decide_c7(cells: Cells, level: float = LEVEL) -> Decision:
    """C7, for GRPO and GDPO: accuracy and Exceed at length weight 0.75 and 0.5 minus at weight 1 within
    ±:data:`BARELY_MARGIN` (equivalence), and at 0.25 outside it for accuracy or Exceed; refuted when 0.75 or
    0.5 lies outside the band or 0.25 lies within it for both metrics. ``cells`` keys: (weight label,
    method, metric) with labels ``"1"``, ``"0.75"``, ``"0.5"``, ``"0.25"``. Parts: per method, "w0.75 and
    0.5 barely change" and "w0.25 changes"; the twelve intervals at the Bonferroni level over them."""
    level = part_level(12, level)
    same, changed = Criterion("same", margin=BARELY_MARGIN), Criterion("changed", margin=BARELY_MARGIN)
    outcomes, texts, verdicts, measured = {}, [], {}, []
    for method in (Method.GRPO, Method.GDPO):
        intervals = {(w, m): paired(cells[(w, method, m)], cells[("1", method, m)], level)
                     for w in ("0.75", "0.5", "0.25") for m in ("acc", "exceed")}
        measured += [MeasuredInterval.of(f"{method} w{w} {m}", i) for (w, m), i in intervals.items()]
        kept = combine([same.decide(intervals[(w, m)]) for w in ("0.75", "0.5") for m in ("acc", "exceed")])
        moved = [changed.decide(intervals[("0.25", m)]) for m in ("acc", "exceed")]
        low_weight = REPRODUCED if REPRODUCED in moved else NOT_REPRODUCED if all(
            o == NOT_REPRODUCED for o in moved) else INCONCLUSIVE
        verdicts[f"{method} w0.75/0.5 within ±{BARELY_MARGIN:g}"] = kept
        verdicts[f"{method} w0.25 outside"] = low_weight
        outcomes[method] = combine([kept, low_weight])
        texts.append(f"{method}: " + ", ".join(f"w{w} {m} {interval_text(i)}" for (w, m), i in intervals.items()))
    return Decision(combine(list(outcomes.values())), outcomes, "vs weight 1; " + "; ".join(texts), verdicts,
                    tuple(measured))


# --------------------------------------------------------------------------------------------------
# Event claims (C5, C10)
# --------------------------------------------------------------------------------------------------


#: Smallest effects the qualitative event claims imply (rate differences): C5's single GRPO run diverged and
#: GDPO's did not, read as "GRPO diverges in at least half the runs in which GDPO does not"; C10's
#: "occasionally" as "at least one run in five".
EVENT_EFFECTS = {"C5": 0.5, "C10": 0.2}


#: The reference method's event rate under the alternative, at every scale (:mod:`gdpo.reporting.calibration`
#: uses the same): the compared method's rate is this plus the claim's effect.
EVENT_BASE_RATE = 0.05


def decide_events(claim_id: str, events_a: Sequence[bool], events_b: Sequence[bool],
                  level: float = LEVEL) -> tuple[str, Interval]:
    """C5 / C10: the event rate of a (GRPO; gdpo_nobn) minus b's (GDPO; gdpo), Newcombe interval over seeds at
    ``level``: above 0 reproduces; below :data:`EVENT_EFFECTS` refutes."""
    a, b = np.asarray(events_a, dtype=bool), np.asarray(events_b, dtype=bool)
    interval = rate_difference_interval(int(a.sum()), a.size, int(b.sum()), b.size, level)
    return Criterion("better", +1, EVENT_EFFECTS[claim_id]).decide(interval), interval


def _detected_counts(trials_a: int, trials_b: int, level: float) -> list[int]:
    """a's event counts out of ``trials_a`` whose rate difference against none of ``trials_b`` lies above 0."""
    return [k for k in range(trials_a + 1) if rate_difference_interval(k, trials_a, 0, trials_b, level).low > 0]


def detection_power(trials_a: int, trials_b: int, rate_a: float, level: float = LEVEL) -> float:
    """Probability that :func:`decide_events` finds a's rate above b's when a's event rate is ``rate_a`` and b
    never has the event (exact: a sum over a's binomial outcomes). Not the ledger's power column, which assumes
    both methods have events (:func:`sim_event_power`, :func:`gdpo.reporting.calibration.event_power`)."""
    return float(sum(binom.pmf(k, trials_a, rate_a) for k in _detected_counts(trials_a, trials_b, level)))


def smallest_detectable_rate(trials_a: int, trials_b: int, level: float = LEVEL, power: float = 0.8) -> float:
    """Smallest event rate of a (b: none) that :func:`decide_events` detects with probability ≥ ``power``
    (:func:`detection_power`, searched in steps of 0.01)."""
    detected = _detected_counts(trials_a, trials_b, level)
    for rate in np.arange(0.01, 1.0001, 0.01):
        if binom.pmf(detected, trials_a, rate).sum() >= power:
            return float(rate)
    return math.nan


# --------------------------------------------------------------------------------------------------
# Grids of cells (scale sim)
# --------------------------------------------------------------------------------------------------


def over_cells(outcomes: Mapping[str, str], opposite: set[str] | None = None) -> str:
    """The one rule by which every sim claim combines the cells of its grid, each cell decided at the grid's
    Bonferroni level (:func:`bonferroni_level`): the claim is shown where some cell shows it and no cell shows
    the opposite (``reproduced`` if a cell reproduces, else ``smaller`` if a cell finds a smaller effect); ruled
    out (``not reproduced``) only where every cell rules it out; otherwise ``inconclusive``. ``opposite``: the
    cells whose interval lies on the other side of no effect (default: every ``not reproduced`` cell, which
    for δ = 0 and for parity parts is the same thing; an event claim's cell that only rules out the claim's
    rate difference, holding 0, is no evidence against the mechanism elsewhere). A false ``reproduced`` needs
    a cell's interval to miss, which the Bonferroni level keeps below 5 % over the grid."""
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
    both ``rewards``, paired by seed, each above 0 (δ = 0: the bench's units are not the paper's), at the
    Bonferroni level over the cells' parts; cells combined by :func:`over_cells`."""
    better = Criterion("better", +1, 0.0)
    level = bonferroni_level(2 * len(variants))
    outcomes, texts, verdicts, measured = {}, [], {}, []
    for variant in variants:
        intervals = {r: paired(cells[(variant, Method.GDPO, r)], cells[(variant, Method.GRPO, r)], level)
                     for r in rewards}
        measured += [MeasuredInterval.of(f"{variant} {r}", i) for r, i in intervals.items()]
        cell = {f"{variant} {r}": better.decide(i) for r, i in intervals.items()}
        verdicts.update(cell)
        outcomes[variant] = combine(list(cell.values()))
        texts.append(f"{variant}: " + ", ".join(f"{r} {interval_text(i)}" for r, i in intervals.items()))
    return Decision(over_cells(outcomes), outcomes, f"(intervals at {100 * level:.2f} %) " + "; ".join(texts),
                    verdicts, tuple(measured))


def decide_sim_events(claim_id: str, events: Mapping[str, tuple[pd.Series, pd.Series]]) -> Decision:
    """C5 / C10 over a grid: per cell, :func:`decide_events` (a − b, paired nothing: rates over seeds) at the
    Bonferroni level of the grid; :func:`over_cells` across cells. ``events``: cell → (a's, b's). Each cell is
    one part, its interval the rate difference."""
    level = bonferroni_level(len(events))
    outcomes, parts, opposite, measured = {}, [], set(), []
    for cell, (a, b) in events.items():
        outcomes[cell], interval = decide_events(claim_id, a.to_numpy(), b.to_numpy(), level)
        measured.append(MeasuredInterval.of(cell, interval, RATE))
        if interval.high < 0:
            opposite.add(cell)
        parts.append(f"{cell}: {int(a.sum())}/{len(a)} vs {int(b.sum())}/{len(b)}, difference "
                     f"{interval.text('', 2)}")
    return Decision(over_cells(outcomes, opposite), outcomes, "; ".join(parts), dict(outcomes), tuple(measured))


def sim_event_power(claim_id: str, cells: int, seeds: int) -> float:
    """The sim event rows' power, defined as every row's: P(``reproduced``) of :func:`decide_sim_events` over
    ``cells`` cells of ``seeds`` seeds per method when in every cell the compared method's event rate is
    :data:`EVENT_BASE_RATE` + the claim's effect and the reference's :data:`EVENT_BASE_RATE` (exact:
    per cell by enumeration, cells independent)."""
    level = bonferroni_level(cells)
    rate_b = EVENT_BASE_RATE
    rate_a = min(1.0, rate_b + EVENT_EFFECTS[claim_id])
    pa, pb = binom.pmf(np.arange(seeds + 1), seeds, rate_a), binom.pmf(np.arange(seeds + 1), seeds, rate_b)
    reproduced, opposite = 0.0, 0.0
    criterion = Criterion("better", +1, EVENT_EFFECTS[claim_id])
    for x in range(seeds + 1):
        if pa[x] < 1e-12:
            continue
        for y in range(seeds + 1):
            if pb[y] < 1e-12:
                continue
            interval = rate_difference_interval(x, seeds, y, seeds, level)
            reproduced += float(pa[x] * pb[y]) * (criterion.decide(interval) == REPRODUCED)
            opposite += float(pa[x] * pb[y]) * (interval.high < 0)
    # Reproduced over the grid (:func:`over_cells`): no cell on the other side, and some cell reproduced.
    return float((1 - opposite) ** cells - (1 - opposite - reproduced) ** cells)
