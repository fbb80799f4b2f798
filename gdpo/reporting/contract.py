"""The verdict contract of the claims ledger, and the statistics every verdict rests on.

**Verdicts.** Each row of the ledger gets one of eight words, with one meaning at every scale. For a part of a
claim whose paper effect is δ (oriented so that the paper's direction is up, δ ≥ 0), with *low* the one-sided
lower bound of the measured effect at the claim's level 1 − α (α = :data:`ALPHA` = 5 %) and *high* its one-sided
upper bound at 1 − α / K, K the number of tests of the claim that can each refute it:

- ``reproduced``: low > 0 and high ≥ δ — no effect in the paper's direction is excluded, and an effect as
  large as the paper's (larger effects included) is not ruled out;
- ``smaller than the paper's``: low > 0 and high < δ — an effect in the paper's direction, but ruled smaller
  than the paper's;
- ``not reproduced``: high < δ and low ≤ 0 — the paper's effect is ruled out and no effect (or the opposite
  direction) is not;
- ``inconclusive``: low ≤ 0 and high ≥ δ — the bounds hold both no effect and the paper's effect;
- ``underpowered``: the evidence is below the claim's stated minimum (:class:`Minimum`); the row says what would
  be needed, and no interval is read as a decision;
- ``not tested``: the design could not have shown the claim either way: a validity condition the claim's rule
  declares (:mod:`gdpo.reporting.verdicts.validity`: e.g. a start model that already has the format C4 says is
  never learned, training steps without any reward variance in the window C5 reads, an Exceed at the floor) is
  checked from the evidence before any interval is read, and failed; the row names the condition, its
  measured value and its threshold. A condition that gates one part of a claim (C3's format, an Exceed part)
  makes that part ``not tested`` and the claim is decided on its tested parts (the row says so);
- ``not run``: the evidence does not exist (a run, a file or a setup is missing);
- ``not modelled``: at scale sim, the bench has no mechanism through which the claim could show, or it never
  produced the event in any arm and no positive control shows that it can.

The four interval labels partition the plane of (low, high): they cannot overlap. Where no paper magnitude
applies (δ = 0: the bench's units are not the paper's; C4's fall from a base rate that depends on the model),
``smaller`` is empty and ``not reproduced`` means the opposite direction. Parity and non-inferiority parts have
a stated margin m instead (the smallest effect of interest, :data:`PARITY_MARGIN`, :data:`BARELY_MARGIN`):
"kept" (non-inferior) is reproduced when low > −m and not reproduced when high < −m; "same" (equivalent) is
reproduced when both one-sided bounds at 1 − α lie within ±m (two one-sided tests) and not reproduced when a
bound at the refuting level lies outside (either side: two routes of refutation); "changed" the reverse
(either side shows it, so its bounds are at 1 − α / 2 for that; refuted when both refuting bounds lie within).
A claim with parts gets a verdict per part (:func:`combine` says how they add up: any part ``not
reproduced`` refutes; all ``reproduced`` reproduce; all decided in the paper's direction with one or more
``smaller`` give ``smaller``; anything else is ``inconclusive``), so a part with a large effect is decided and
shown even when another is not.

**Why two levels (intersection–union).** A claim is in the paper's direction only when every part is, so a false
``reproduced`` needs every part's lower bound to miss: each part at the claim's level 1 − α keeps it within α,
and no correction is needed however many parts a claim has (:meth:`Criterion.levels`). Any one part can refute,
so a false refutation needs only one refuting bound to miss: those bounds share α over the claim's K routes
(Bonferroni). Hence adding a setup whose every part reproduces never moves a claim out of the paper's direction
and never makes it ``not reproduced``; it may turn a refutation into ``inconclusive`` (its error budget then
shared by more parts), and a ``smaller`` into ``reproduced``. Where a verdict can be reached through any one of
several bounds (C7's weight 0.25 changing accuracy or Exceed, on either side), that direction is corrected the
same way. At scale sim, a grid shows a claim where any one cell shows it: there the in-direction bounds share α
over the cells, and a refutation (every cell refutes) reads each cell's refuting bounds at the cell's level.

**The unit of replication and the intervals.** The unit is the training seed; every seed is scored on the same
evaluated items (× samples per item). The variance of one seed's paired difference has two parts: the seeds'
own spread and the evaluation's noise. A run's score on n items with m samples each varies at most
binomially, p(1 − p)/(n m) (Agresti–Coull-adjusted, so 0 % and 100 % keep a non-zero variance); where the
seeds vary more than that, their sample variance s² is the estimate and the bounds are Student's t with
k − 1 degrees of freedom (k seeds); where they vary less (ties, one seed, runs that agree to the item), the
binomial variance v enters as one more observation: ((k − 1) s² + v) / k, still with k − 1 degrees of freedom
(1 for one seed), so that the interval never narrows as v grows (fewer items never look like more evidence)
(:func:`paired_estimate`, an :class:`Estimate` read at any level). Where both runs of a difference kept their
per-item outcomes on the same items (items.json beside eval.csv), v is instead the paired, item-clustered
variance of their difference with Agresti and Min's half-counts (never 0; :mod:`gdpo.reporting.verdicts.items`),
since an item easy for one method is easy for the other; the source text says which floor was used and, for
paired items, the discordant items of each seed (as McNemar counts them). Bounds are clipped to what the metric can
take (a difference of two percentages to [−100, 100], a percentage minus c to [−c, 100 − c]; the source text
says "clipped" where it acted; no threshold lies outside, so clipping never moves a verdict). The interval
never collapses to a point; more seeds that agree with the mean (or tighter around it) on an equal or larger
effect never widen it nor weaken its verdict, while a seed that disagrees (an outlier) can widen a t interval
(``tests/test_contract.py``, property tests); and it is conservative where runs agree better than independent
item flips would make them (greedy evaluation of a model that changed little).

**Event claims** (C5, C10: rates of an event over seeds) are decided by exact unconditional tests on the 2 × 2
table of seeds with and without the event (:mod:`gdpo.reporting.rate_tests`; their size computed exactly by
enumeration, never above α at 3–40 seeds per method); their Wilson and Newcombe intervals are shown only.

**Power** is one thing on every row: the probability that this design (its seeds, evaluated items × samples,
steps, the spread measured or assumed, the claim's minimum) gives ``reproduced`` if the paper's effect is
true, by simulating the whole data-generating process through the rule itself
(:mod:`gdpo.reporting.calibration`). Event claims also state the smallest event rate the design detects.

**One contract per claim** (:data:`CLAIMS`): the statement, the metric(s) and their direction, the paper's
effect in the metric's unit (computed from :mod:`gdpo.reporting.paper_numbers`, never typed twice), the
unit of replication (the training seed) and the minimum evidence. The rules that apply the contract are in
:mod:`gdpo.reporting.verdicts` (a registry, one module per scale); the ledger files are written by
:mod:`gdpo.reporting.ledger`; the calibration (null, power and paper-number replicates) is in
:mod:`gdpo.reporting.calibration`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from gdpo.methods import Method
from gdpo.reporting import paper_numbers as pn

REPRODUCED = "reproduced"
SMALLER = "smaller than the paper's"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
UNDERPOWERED = "underpowered"
NOT_RUN = "not run"
NOT_MODELLED = "not modelled"
#: The design could not show the claim either way (a validity condition failed; not decisive).
NOT_TESTED = "not tested"
VERDICTS = (REPRODUCED, SMALLER, NOT_REPRODUCED, INCONCLUSIVE, UNDERPOWERED, NOT_TESTED, NOT_RUN, NOT_MODELLED)
#: The verdicts that state a decision about the claim.
DECISIVE = (REPRODUCED, SMALLER, NOT_REPRODUCED)
#: The verdicts that say the effect exists in the paper's direction (a false positive under no difference).
IN_PAPERS_DIRECTION = (REPRODUCED, SMALLER)

#: Two-sided confidence level of the intervals reported beside a verdict (not decided on).
LEVEL = 0.95
#: Error rate of every verdict: a part is in the paper's direction when its one-sided bound at 1 − ALPHA
#: excludes no effect; refutations split ALPHA over the tests that can each refute (:func:`one_sided_level`).
ALPHA = 0.05
#: Points within which two methods "match" (C4's accuracy parity) or a metric is "kept" (C9's
#: non-inferiority): the paper's own parity gaps are below 1 point (C4: −0.92, C9 3obj pass: −0.3 … +0.7).
PARITY_MARGIN = 2.0
#: Points within which lowering the length weight "barely changes" a metric (C7; the paper gives no numbers).
BARELY_MARGIN = 5.0
#: Format rate (percent) below which a method "never learned format" (C4's "0 % correct format").
NO_FORMAT_RATE = 5.0


# --------------------------------------------------------------------------------------------------
# Intervals
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Interval:
    """A mean and the two bounds shown with it: ``low`` a one-sided lower bound at ``low_level``, ``high`` a
    one-sided upper bound at ``high_level`` (together a two-sided interval of coverage ``level`` =
    ``low_level`` + ``high_level`` − 1); ``source`` says where the width comes from."""

    mean: float
    low: float
    high: float
    source: str
    low_level: float = 1 - ALPHA
    high_level: float = 1 - ALPHA

    def __post_init__(self) -> None:
        if self.low >= self.high:  # NaN bounds (no interval could be formed) compare False and pass
            raise AssertionError(f"an interval must have positive width, got [{self.low}, {self.high}]")

    @property
    def level(self) -> float:
        """Two-sided coverage of [low, high]."""
        return self.low_level + self.high_level - 1

    def oriented(self, direction: int) -> tuple[float, float]:
        """(low, high) of ``direction`` × the interval: +1 keeps it, −1 flips it so that "up" is good."""
        return (self.low, self.high) if direction > 0 else (-self.high, -self.low)

    def text(self, unit: str = " pts", digits: int = 1) -> str:
        """``"+2.1 pts [+0.4 (95 %), +3.8 (98.75 %)]"``: each bound with its one-sided level (one level, once, where
        both share it: ``"+2.1 pts [+0.4, +3.8] (95 % one-sided each)"``)."""
        if abs(self.low_level - self.high_level) < 1e-12:
            return (f"{self.mean:+.{digits}f}{unit} [{self.low:+.{digits}f}, {self.high:+.{digits}f}] "
                    f"({level_text(self.low_level)} one-sided each)")
        return (f"{self.mean:+.{digits}f}{unit} [{self.low:+.{digits}f} ({level_text(self.low_level)}), "
                f"{self.high:+.{digits}f} ({level_text(self.high_level)})]")


def level_text(level: float) -> str:
    """``0.9875`` → ``"98.75 %"``."""
    return f"{100 * level:.4g} %"


def one_sided_level(routes: int = 1) -> float:
    """One-sided confidence level of each bound through which any one of ``routes`` tests can reach a verdict:
    1 − :data:`ALPHA` / routes (Bonferroni), so that the verdict's error stays within :data:`ALPHA`."""
    return 1 - ALPHA / max(1, routes)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A measured mean with its sampling distribution, from which bounds at any level are read: ``mean`` ±
    Student's t on ``dof`` degrees of freedom × ``scale`` (the standard error), clipped to ``limits``, the range
    the quantity can take (a difference of two percentages lies in [−100, 100], a percentage minus c in
    [−c, 100 − c]). A NaN scale: no interval could be formed (the bounds are NaN; no decision)."""

    mean: float
    scale: float
    dof: float
    source: str
    limits: tuple[float, float] = (-math.inf, math.inf)

    def lower(self, level: float) -> float:
        """One-sided lower bound at ``level``, clipped to the range."""
        return max(self.mean - _t_quantile(self.dof, level) * self.scale, self.limits[0])

    def upper(self, level: float) -> float:
        """One-sided upper bound at ``level``, clipped to the range."""
        return min(self.mean + _t_quantile(self.dof, level) * self.scale, self.limits[1])

    def interval(self, low_level: float = 1 - ALPHA, high_level: float = 1 - ALPHA) -> Interval:
        """The bounds at these one-sided levels; the source says where the range clipped one."""
        low, high = self.lower(low_level), self.upper(high_level)
        raw_low = self.mean - _t_quantile(self.dof, low_level) * self.scale
        raw_high = self.mean + _t_quantile(self.dof, high_level) * self.scale
        clipped = [bound for bound, raw, kept in (("low", raw_low, low), ("high", raw_high, high))
                   if not math.isnan(raw) and raw != kept]
        source = self.source + (f"; {' and '.join(clipped)} clipped to the metric's range "
                                f"[{self.limits[0]:+g}, {self.limits[1]:+g}]" if clipped else "")
        return Interval(self.mean, low, high, source, low_level, high_level)


@functools.lru_cache(maxsize=4096)
def _t_quantile(dof: float, level: float = LEVEL) -> float:
    """The ``level`` quantile of Student's t on ``dof`` degrees of freedom (normal for inf)."""
    return float(stats.norm.ppf(level)) if math.isinf(dof) else float(stats.t.ppf(level, dof))


_Z = float(stats.norm.ppf(0.5 + LEVEL / 2))


def binomial_variance(percent: float | np.ndarray, n_items: float | np.ndarray) -> np.ndarray:
    """Variance (points²) of a percentage measured on ``n_items`` items, binomial with the Agresti–Coull
    adjustment p̃ = (x + z²/2) / (n + z²): an upper bound for any per-item score in [0, 1] (pass rates and
    averaged category accuracies included), and never 0, even at 0 % or 100 %."""
    n = np.asarray(n_items, dtype=float)
    successes = np.asarray(percent, dtype=float) / 100 * n
    adjusted = (successes + _Z**2 / 2) / (n + _Z**2)
    return 1e4 * adjusted * (1 - adjusted) / (n + _Z**2)


def paired_estimate(differences: Sequence[float], item_variances: Sequence[float], common_variance: float = 0.0,
                    limits: tuple[float, float] = (-math.inf, math.inf),
                    floor_name: str = "the evaluation's binomial noise", note: str = "") -> Estimate:
    """The mean of per-seed paired differences (points) and its t distribution: a seed spread floored by the
    evaluation's binomial variance, pooled (the module docstring says why).

    Args:
        differences: (k,) the per-seed differences a − b, k ≥ 1.
        item_variances: (k,) the evaluation's variance of each difference (points²), e.g. the sum of
            :func:`binomial_variance` of a and of b over their items × samples.
        common_variance: variance of a term shared by every difference (points²), e.g. a base model
            evaluated once and compared with every seed: it does not average out over seeds, so it is
            added to the variance of the mean.
        limits: the range the mean can take (bounds are clipped to it).
        floor_name: what ``item_variances`` are, for the source text (the paired item noise where the two runs'
            per-item outcomes pair, :func:`gdpo.reporting.verdicts.items.pair_noise`).
        note: appended to the source text (e.g. the discordant items).

    With s² the seeds' sample variance (0 for one seed) and v the mean item variance: where s² ≥ v (k ≥ 2) the
    variance of one difference is s² (Student's t); otherwise it is ((k − 1) s² + v) / k; both with k − 1
    degrees of freedom (1 for one seed). The standard error is √(variance / k + common_variance).
    A missing item count (NaN variance) gives a NaN scale: no decision.
    """
    d = np.asarray(differences, dtype=float)
    v = np.asarray(item_variances, dtype=float)
    if d.size == 0 or d.size != v.size:
        raise ValueError(f"need one item variance per seed difference, got {d.size} and {v.size}")
    k = d.size
    mean = float(d.mean())
    spread = float(d.var(ddof=1)) if k > 1 else 0.0
    floor = float(v.mean())
    # k − 1 degrees of freedom in both branches (1 for a single seed): the variance, max(s², ((k − 1) s² + v) / k),
    # never falls as v grows, so fewer evaluated items never give a narrower interval.
    if k > 1 and spread >= floor:  # NaN floor compares False: no decision below
        variance, dof, source = spread, k - 1, f"t over {k} seeds"
    else:
        variance, dof = ((k - 1) * spread + floor) / k, max(k - 1, 1)
        why = "one seed" if k == 1 else f"{k} seeds vary less than it"
        source = f"t over {k} seed{'s' if k > 1 else ''}, floored by {floor_name} ({why})"
    source += note
    scale = math.sqrt(variance / k + common_variance) if variance / k + common_variance >= 0 else math.nan
    if not scale > 0:  # a zero variance can only come from zero item variances: not a measurement
        scale = math.nan
    return Estimate(mean, scale, dof, source, limits)


def paired_interval(differences: Sequence[float], item_variances: Sequence[float],
                    common_variance: float = 0.0, level: float = LEVEL,
                    limits: tuple[float, float] = (-math.inf, math.inf)) -> Interval:
    """Two-sided ``level`` interval of :func:`paired_estimate` (each bound one-sided at (1 + level) / 2)."""
    one_sided = (1 + level) / 2
    return paired_estimate(differences, item_variances, common_variance, limits).interval(one_sided, one_sided)


def rate_interval(events: int, trials: int, level: float = LEVEL) -> Interval:
    """Wilson score interval of ``events / trials`` (statsmodels), as a fraction, at two-sided ``level``."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(events, trials, alpha=1 - level, method="wilson")
    one_sided = (1 + level) / 2
    return Interval(events / trials, float(low), float(high), f"Wilson, {trials} seeds", one_sided, one_sided)


def rate_difference_interval(events_a: int, trials_a: int, events_b: int, trials_b: int,
                             level: float = LEVEL) -> Interval:
    """Newcombe's hybrid score interval of the difference of two rates a − b (statsmodels, ``newcomb``), at
    two-sided ``level``; inside [−1, 1] by construction. Shown beside the event verdicts, which the exact tests
    of :mod:`gdpo.reporting.rate_tests` decide."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    low, high = confint_proportions_2indep(events_a, trials_a, events_b, trials_b, method="newcomb",
                                           compare="diff", alpha=1 - level)
    one_sided = (1 + level) / 2
    return Interval(events_a / trials_a - events_b / trials_b, float(low), float(high),
                    f"Newcombe, {trials_a} vs {trials_b} seeds", one_sided, one_sided)


# --------------------------------------------------------------------------------------------------
# Decisions on one interval
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Criterion:
    """What one metric's estimate must show.

    ``kind``:
        - ``"better"``: the effect lies on the ``direction`` side of 0 (reproduced); refuted when the
          estimate lies below ``effect`` on that side (the paper's effect, or 0 where units differ);
        - ``"kept"``: non-inferiority: the estimate lies above −``margin`` on the ``direction`` side;
          refuted when it lies below −``margin``;
        - ``"same"``: equivalence: the estimate lies within ±``margin`` (two one-sided tests, each bound at the
          in-direction level); refuted when it lies outside (either side: two routes);
        - ``"changed"``: the estimate lies outside ±``margin`` (either side: two routes); refuted when it lies
          within ±``margin`` (both bounds).
    """

    kind: str
    direction: int = 1
    effect: float = 0.0
    margin: float = 0.0

    @property
    def refutation_routes(self) -> int:
        """Bounds through any one of which this criterion can refute: 2 for ``same`` (either side), else 1."""
        return 2 if self.kind == "same" else 1

    @property
    def reproduction_routes(self) -> int:
        """Bounds through any one of which this criterion can reproduce: 2 for ``changed``, else 1."""
        return 2 if self.kind == "changed" else 1

    def levels(self, refuters: int = 1, reproducers: int = 1) -> tuple[float, float]:
        """(one-sided level of the in-direction bounds, of the refuting bounds): 1 − α / ``reproducers`` and
        1 − α / ``refuters`` (:func:`one_sided_level`). ``refuters``: the routes of the whole claim that can each
        refute it (this criterion's among them); ``reproducers``: the routes through any one of which this part
        reaches its in-direction verdict (:attr:`reproduction_routes`, times any "or" across metrics)."""
        return one_sided_level(reproducers), one_sided_level(refuters)

    def shown(self, estimate: Estimate, refuters: int = 1, reproducers: int = 1) -> Interval:
        """The interval the ledger shows: for ``better`` and ``kept`` the bound in the paper's direction at the
        in-direction level and the other at the refuting level (the two bounds the verdict reads); for ``same``
        and ``changed`` both at the in-direction level (their refutation reads both at the refuting level)."""
        reproduce, refute = self.levels(refuters, reproducers)
        if self.kind in ("same", "changed"):
            return estimate.interval(reproduce, reproduce)
        return estimate.interval(reproduce, refute) if self.direction > 0 else estimate.interval(refute, reproduce)

    def decide(self, estimate: Estimate | Interval, refuters: int = 1, reproducers: int = 1) -> str:
        """One of :data:`REPRODUCED`, :data:`SMALLER`, :data:`NOT_REPRODUCED`, :data:`INCONCLUSIVE`: disjoint
        regions, so no estimate meets two definitions; a NaN estimate is inconclusive. An :class:`Estimate` is
        read at :meth:`levels`; an :class:`Interval` as its two bounds (at whatever levels it has)."""
        reproduce, refute = self.levels(refuters, reproducers)

        def bounds(level: float) -> tuple[float, float]:
            """(low, high) oriented so that the paper's direction is up."""
            if isinstance(estimate, Interval):
                return estimate.oriented(self.direction)
            low, high = estimate.lower(level), estimate.upper(level)
            return (low, high) if self.direction > 0 else (-high, -low)

        low, _ = bounds(reproduce)
        _, high = bounds(refute)
        if self.kind == "better":
            effect = max(self.effect, 0.0)
            if low > 0:
                return REPRODUCED if high >= effect else SMALLER
            return NOT_REPRODUCED if high < effect else INCONCLUSIVE
        if self.kind == "kept":
            return REPRODUCED if low > -self.margin else NOT_REPRODUCED if high < -self.margin else INCONCLUSIVE
        inner_low, inner_high = bounds(reproduce)
        outer_low, outer_high = bounds(refute)
        if self.kind == "same":
            if -self.margin < inner_low and inner_high < self.margin:
                return REPRODUCED
            return NOT_REPRODUCED if outer_low > self.margin or outer_high < -self.margin else INCONCLUSIVE
        if self.kind == "changed":
            if inner_low > self.margin or inner_high < -self.margin:
                return REPRODUCED
            return NOT_REPRODUCED if -self.margin < outer_low and outer_high < self.margin else INCONCLUSIVE
        raise ValueError(f"unknown criterion kind {self.kind!r}")

    def text(self, metric: str) -> str:
        side = "above" if self.direction > 0 else "below"
        if self.kind == "better":
            if self.effect > 0:
                return f"{metric} {side} 0, not ruled below the paper's {self.effect * self.direction:+.2f}"
            return f"{metric} {side} 0"
        if self.kind == "kept":
            return f"{metric} {side} {-self.margin * self.direction:+g}"
        if self.kind == "same":
            return f"{metric} within ±{self.margin:g}"
        return f"{metric} outside ±{self.margin:g}"


def combine(outcomes: Sequence[str]) -> str:
    """All parts of a claim together: any ``not reproduced`` refutes it; all ``reproduced`` reproduce it; all
    in the paper's direction with one or more ``smaller than the paper's`` give ``smaller``; a ``smaller``
    part beside a part not shown in the paper's direction (``inconclusive``) refutes it too, since that part
    already excludes the paper's effect; anything else (a part undecided, none excluding the paper's effect) is
    ``inconclusive``.

    Monotone in every part: a part moving toward the paper's claim (``not reproduced`` → ``smaller`` →
    ``reproduced``, or ``inconclusive`` → any decided outcome) never turns a decided claim undecided. (Were
    ``smaller`` + ``inconclusive`` combined to ``inconclusive``, a part narrowing from ``not reproduced`` to
    ``smaller`` with more agreeing seeds would undecide the claim.)"""
    if NOT_REPRODUCED in outcomes:
        return NOT_REPRODUCED
    if outcomes and all(o == REPRODUCED for o in outcomes):
        return REPRODUCED
    if outcomes and all(o in (REPRODUCED, SMALLER) for o in outcomes):
        return SMALLER
    if SMALLER in outcomes and all(o in (REPRODUCED, SMALLER, INCONCLUSIVE) for o in outcomes):
        return NOT_REPRODUCED
    return INCONCLUSIVE


# --------------------------------------------------------------------------------------------------
# The contract of each claim
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Minimum:
    """The least evidence on which a claim's rule may decide; below it the verdict is ``underpowered``.

    ``seeds``: training seeds of each compared method (the unit of replication); ``items``: evaluated items
    per run, summed over the benchmarks a metric averages; ``steps``: training steps of each run;
    ``prompts_per_batch``: prompts in one optimisation batch (the batch step only acts across prompts).
    """

    seeds: int = 3
    items: int = 0
    steps: int = 0
    prompts_per_batch: int = 0

    def shortfall(self, seeds: int, items: float | None = None, steps: float | None = None,
                  prompts_per_batch: float | None = None) -> list[str]:
        """What is missing, as ``["≥ 3 seeds per method (have 2)", ...]``; empty when the minimum is met.
        A quantity the minimum asks for but the evidence does not record (None or NaN) counts as missing."""
        missing = []
        for name, need, have in (("seeds per method", self.seeds, seeds), ("evaluated items per run", self.items, items),
                                 ("training steps", self.steps, steps),
                                 ("prompts per batch", self.prompts_per_batch, prompts_per_batch)):
            if not need:
                continue
            if have is None or have != have:
                missing.append(f"≥ {need:,} {name} (not recorded)")
            elif have < need:
                missing.append(f"≥ {need:,} {name} (have {int(have):,})")
        return missing

    def text(self) -> str:
        parts = [f"{self.seeds} seeds per method"]
        if self.items:
            parts.append(f"{self.items} evaluated items per run")
        if self.steps:
            parts.append(f"{self.steps} training steps")
        if self.prompts_per_batch:
            parts.append(f"{self.prompts_per_batch} prompts per batch")
        return "≥ " + ", ".join(parts)


#: Evaluated items below which a run's percentages cannot resolve effects of a few points: with 100 items
#: one run's binomial standard error is up to 5 points, already larger than most of the paper's effects.
MIN_ITEMS = 100
#: Seeds per method: a t-interval over 2 seeds has one degree of freedom (its 95 % multiplier is 12.7),
#: and a difference of event rates over 2 seeds cannot keep its false-positive rate under 2.5 % (a 2/2 vs
#: 0/2 split happens 6 % of the time under the null); 3 is the least on which both are sound.
MIN_SEEDS = 3


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of the paper (PAPER.md §2) and its verdict contract.

    ``family``: the task family whose runs decide it (``exact`` for the exact analysis, ``all`` for C11);
    ``metrics``: what is measured and in which direction; ``paper_effect``: the paper's effect as the rule
    uses it (unit included); ``minimum``: the least evidence for a decision at the language-model scales;
    ``effect``: the paper's effect in numbers, ``effect(setup, metric, comparison)`` → points of
    ``comparison[0]`` − ``comparison[1]``, computed from :mod:`gdpo.reporting.paper_numbers` (KeyError where
    the paper has none; :func:`paper_effect` asks it); ``event_effect``: an event claim's smallest implied
    difference of event rates (the rules' δ; ``gdpo.reporting.verdicts.decisions.EVENT_EFFECTS``).
    """

    claim_id: str
    statement: str
    paper_value: str
    source: str
    family: str
    metrics: str = ""
    paper_effect: str = ""
    minimum: Minimum | None = None
    effect: Callable[[str, str, tuple[str, str]], float] | None = dataclasses.field(default=None, compare=False)
    event_effect: float | None = None


def _mean_difference(table: str, model: str, metric: str, a: str = Method.GDPO, b: str = Method.GRPO,
                     setting: str = "", b_setting: str | None = None) -> float:
    """Mean over the paper's benchmarks (those with both numbers) of a − b, from the paper's tables."""
    numbers = pn.paper_numbers()
    rows = numbers[(numbers["table"].isin([table, "2"] if table == "1" else [table])) & (numbers["model"] == model)
                   & (numbers["metric"] == metric)]
    left = rows[(rows["method"] == a) & (rows["setting"] == setting)].set_index("benchmark")["value"]
    right = rows[(rows["method"] == b) & (rows["setting"] == (setting if b_setting is None else b_setting))]
    difference = (left - right.set_index("benchmark")["value"]).dropna()
    if difference.empty:
        raise KeyError(f"the paper has no {metric} of {a} and {b} for {model} in Table {table}")
    return float(difference.mean())


@functools.lru_cache(maxsize=256)
def paper_effect(claim_id: str, setup: str, metric: str,
                 comparison: tuple[str, str] = (Method.GDPO, Method.GRPO)) -> float:
    """The paper's effect (points, ``comparison[0]`` − ``comparison[1]``, averaged over the paper's benchmarks)
    for one setup label of the config's ``reporting:`` block (a model label, or ``2obj``/``3obj`` in Table 5).

    >>> round(paper_effect("C3", "Qwen2.5-1.5B", "avg"), 2)
    2.63

    Raises:
        KeyError: the claim has no tabulated effect (its contract's ``effect`` is None), or the paper has no such
            numbers.
    """
    claim = CLAIMS_BY_ID.get(claim_id)
    if claim is None or claim.effect is None:
        raise KeyError(f"{claim_id} has no tabulated effect")
    return claim.effect(setup, metric, tuple(comparison))


def table_effect(table: str, model: str | None = None, settings: bool = False
                 ) -> Callable[[str, str, tuple[str, str]], float]:
    """A claim's ``effect`` read from one of the paper's tables: the mean difference over its benchmarks, for the
    setup's model (or ``model``), the setup being the trained columns' setting where ``settings``."""
    def effect(setup: str, metric: str, comparison: tuple[str, str]) -> float:
        a, b = comparison
        if settings:
            return _mean_difference(table, model or setup, metric, a, b, setting=setup)
        return _mean_difference(table, model or setup, metric, a, b)

    return effect


CLAIMS: tuple[Claim, ...] = (
    Claim("C1", "G = 2, two binary rewards: GRPO has 2 distinct advantage groups, GDPO 3",
          "GRPO 2, GDPO 3", "Fig. 2", "exact", "distinct advantage groups (exact count)", "GRPO 2, GDPO 3"),
    Claim("C2", "distinct advantage groups grow with rollouts G (n = 2) and rewards n (G = 4); "
                "GDPO ≫ GRPO w/o std > GRPO",
          "monotone growth; GDPO ≫ GRPO w/o std > GRPO (G ≤ 11, n ≤ 6 for GDPO)", "Fig. 3", "exact",
          "distinct advantage groups (exact count)", "monotone growth and order"),
    Claim("C3", "tool calling: GDPO beats GRPO on BFCL-v3 avg accuracy and format correctness at 1.5B and 3B",
          "avg acc 32.81 vs 30.18 (1.5B), 40.87 vs 39.20 (3B); format 80.66 vs 76.33, 82.23 vs 81.64",
          "Tab. 1, Fig. 4", "tool_calling", "GDPO − GRPO of BFCL avg accuracy and correct format (%, higher)",
          "+2.63 / +4.33 pts (1.5B), +1.67 / +0.59 pts (3B)", Minimum(MIN_SEEDS, MIN_ITEMS),
          effect=table_effect("1")),
    Claim("C4", "GRPO w/o std matches correctness but never learns format",
          "0.00 % correct format (base 4.74 %); avg acc 29.26 vs GRPO 30.18 (1.5B)", "Tab. 2, Fig. 4", "tool_calling",
          "GRPO w/o std's format (%) against the base model's and 0 %; its avg accuracy against GRPO's",
          "format −4.74 pts from base to 0.00 %; accuracy −0.92 pts (within ±2)", Minimum(MIN_SEEDS, MIN_ITEMS),
          effect=table_effect("1")),
    Claim("C5", "math: GRPO's correctness falls and max response length spikes after about step 400; "
                "GDPO keeps improving",
          "divergence of GRPO near step 400 (R1-1.5B); none for GDPO", "Fig. 5", "math",
          "rate of divergence over seeds (correctness falls for good while the max length climbs), GRPO − GDPO",
          "GRPO diverged, GDPO did not (one run each)", Minimum(MIN_SEEDS, steps=400),
          # "GRPO diverges in at least half the runs in which GDPO does not" (one run each in the paper)
          event_effect=0.5),
    Claim("C6", "math accuracy and length-exceed table", "e.g. R1-1.5B AIME acc/exceed 23.1/10.8 (GRPO) vs "
                "29.4/6.5 (GDPO)", "Tab. 3", "math",
          "GDPO − GRPO of accuracy (higher) and Exceed (lower), % averaged over benchmarks and Table 3's models",
          "acc +3.24 / +0.60 / +0.32 pts, exceed −1.60 / −0.68 / −0.90 pts (R1-1.5B / R1-7B / Qwen3-4B)",
          Minimum(MIN_SEEDS, MIN_ITEMS), effect=table_effect("3")),
    Claim("C7", "lowering the length weight (1, 0.75, 0.5) barely changes behaviour; only 0.25 does",
          "qualitative (Fig. 6; its Table 8 numbers are not given)", "Fig. 6", "math",
          "accuracy and Exceed (%) at weight w − at weight 1, GRPO and GDPO",
          f"w 0.75, 0.5 within ±{BARELY_MARGIN:g} pts; w 0.25 outside (qualitative)", Minimum(MIN_SEEDS, MIN_ITEMS)),
    Claim("C8", "conditioning length on correctness: GDPO +4.4 AIME accuracy and 16.9 points lower exceed than GRPO",
          "AIME 57.7/12.3 (GDPO) vs 53.3/29.2 (GRPO), R1-7B", "Tab. 4, Fig. 7", "math",
          "GDPO − GRPO of accuracy (higher) and Exceed (lower), % averaged over benchmarks",
          "acc +2.00 pts, exceed −5.72 pts (mean of Table 4's benchmarks; AIME +4.4 / −16.9)",
          Minimum(MIN_SEEDS, MIN_ITEMS), effect=table_effect("4", pn.R1_7B)),
    Claim("C9", "coding, 2 and 3 objectives: GDPO keeps pass rate and lowers exceed and bug ratio",
          "e.g. Codeforces 3-obj pass 69.4 vs 69.5, exceed 13.6 vs 16.9, bug 1.8 vs 2.5", "Tab. 5", "code",
          "GDPO − GRPO of pass (kept), Exceed (kept at 2 objectives, lower at 3) and bug % (lower at 3)",
          "2obj pass +2.53, exceed +0.07; 3obj pass +0.08, exceed −3.17, bug −1.20 pts",
          Minimum(MIN_SEEDS, MIN_ITEMS), effect=table_effect("5", pn.R1_7B, settings=True)),
    Claim("C10", "GDPO without the batch step occasionally fails to converge",
          "qualitative (App. A, Fig. 8)", "App. A, Fig. 8", "math",
          "rate of failure to converge over seeds (final correctness not above the initial), gdpo_nobn − gdpo",
          "occasional failures without the batch step, none with it (qualitative)",
          Minimum(MIN_SEEDS, steps=100, prompts_per_batch=2),
          event_effect=0.2),  # "occasionally": at least one run in five
    Claim("C11", "gains hold across model sizes (1.5B, 3B, 4B, 7B) and all three task families",
          "Tabs. 1, 3, 5", "Tabs. 1, 3, 5", "all", "C3, C6 and C9 together, on at least two model sizes",
          "C3, C6, C9 reproduced; 1.5B–7B"),
)
#: Every claim the ledger judges: the paper's (:data:`CLAIMS`), then any added since with
#: :func:`gdpo.reporting.verdicts.registry.register_claim`.
CLAIMS_BY_ID: dict[str, Claim] = {claim.claim_id: claim for claim in CLAIMS}


#: Units of a :class:`MeasuredInterval`.
POINTS = "percentage points"
RATE = "rate difference"


@dataclasses.dataclass(frozen=True)
class MeasuredInterval:
    """One interval a verdict rests on (or reports beside), as numbers: what it measures (``name``, e.g.
    ``"Qwen2.5-1.5B avg"``), the measured ``mean``, its bounds ``low`` and ``high`` (NaN where none could be
    formed) and their two-sided coverage ``level``, in ``unit`` (:data:`POINTS`, :data:`RATE`, or what the name
    measures); ``low_level`` and ``high_level``: each bound's one-sided level (NaN where not recorded)."""

    name: str
    mean: float
    low: float
    high: float
    level: float
    unit: str
    low_level: float = math.nan
    high_level: float = math.nan

    @classmethod
    def of(cls, name: str, interval: Interval, unit: str = POINTS) -> MeasuredInterval:
        return cls(name, interval.mean, interval.low, interval.high, interval.level, unit, interval.low_level,
                   interval.high_level)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Outcome of one rule: what was measured (on what), the rule applied, the verdict, the evidence file,
    the design's power (probability of ``reproduced`` if the paper's effect were true; NaN where no design
    can be read), what was run, the verdict of each part of the claim (``"<part>: <verdict>; ..."``), the
    intervals the measured text shows, as numbers (in memory only: the ledger's files keep the text), and the
    validity conditions checked before any interval was read (:class:`gdpo.reporting.verdicts.validity.Condition`,
    passed or failed; the ledger's ``validity`` column)."""

    measured_value: str
    comparison: str
    verdict: str
    evidence: str
    power: float = math.nan
    run: str = ""
    parts: str = ""
    intervals: tuple[MeasuredInterval, ...] = ()
    conditions: tuple = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
