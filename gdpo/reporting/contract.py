"""The verdict contract of the claims ledger, and the statistics every verdict rests on.

**Verdicts.** Each row of the ledger gets one of eight words, with one meaning at every scale. For a part of a
claim whose paper effect is δ (oriented so that the paper's direction is up, δ ≥ 0) and the 95 % interval
[low, high] of the measured effect:

- ``reproduced``: low > 0 and high ≥ δ — the interval excludes no effect in the paper's direction and does not
  rule out an effect as large as the paper's (larger effects included);
- ``smaller than the paper's``: low > 0 and high < δ — an effect in the paper's direction, but ruled smaller
  than the paper's;
- ``not reproduced``: high < δ and low ≤ 0 — the paper's effect is ruled out and no effect (or the opposite
  direction) is not;
- ``inconclusive``: low ≤ 0 and high ≥ δ — the interval holds both no effect and the paper's effect;
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
reproduced when the interval lies within ±m and not reproduced when it lies outside; "changed" the reverse.
A claim with parts gets a verdict per part (:func:`combine` says how they add up: any part ``not
reproduced`` refutes; all ``reproduced`` reproduce; all decided in the paper's direction with one or more
``smaller`` give ``smaller``; anything else is ``inconclusive``), so a part with a large effect is decided and
shown even when another is not.

**The unit of replication and the intervals.** The unit is the training seed; every seed is scored on the same
evaluated items (× samples per item). The variance of one seed's paired difference has two parts: the seeds'
own spread and the evaluation's noise. A run's score on n items with m samples each varies at most
binomially, p(1 − p)/(n m) (Agresti–Coull-adjusted, so 0 % and 100 % keep a non-zero variance); where the
seeds vary more than that, their sample variance s² is the estimate and the interval is Student's t with
k − 1 degrees of freedom (k seeds); where they vary less (ties, one seed, runs that agree to the item), the
binomial variance v enters as one more observation: ((k − 1) s² + v) / k, still with k − 1 degrees of freedom
(1 for one seed), so that the interval never narrows as v grows (fewer items never look like more evidence). The method: a seed interval floored by the
evaluation's binomial variance, pooled. It never collapses to a point; more seeds that agree on an equal or
larger effect never widen it nor weaken its verdict (``tests/test_contract.py``, property tests); and it is
conservative where runs agree better than independent item flips would make them (greedy evaluation of a
model that changed little). Rates of events over seeds (divergence, failure to converge) get Wilson intervals
and their differences Newcombe's hybrid score interval (statsmodels).

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
from collections.abc import Sequence

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

#: Confidence level of every interval of the ledger.
LEVEL = 0.95
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
    """A mean with its two-sided interval at ``level``; ``source`` says where the width comes from."""

    mean: float
    low: float
    high: float
    source: str
    level: float = LEVEL

    def __post_init__(self) -> None:
        if self.low >= self.high:  # NaN bounds (no interval could be formed) compare False and pass
            raise AssertionError(f"an interval must have positive width, got [{self.low}, {self.high}]")

    def oriented(self, direction: int) -> tuple[float, float]:
        """(low, high) of ``direction`` × the interval: +1 keeps it, −1 flips it so that "up" is good."""
        return (self.low, self.high) if direction > 0 else (-self.high, -self.low)

    def text(self, unit: str = " pts", digits: int = 1) -> str:
        return f"{self.mean:+.{digits}f}{unit} [{self.low:+.{digits}f}, {self.high:+.{digits}f}]"


@functools.lru_cache(maxsize=512)
def _t_quantile(dof: int, level: float = LEVEL) -> float:
    return float(stats.t.ppf(0.5 + level / 2, dof))


_Z = float(stats.norm.ppf(0.5 + LEVEL / 2))


def binomial_variance(percent: float | np.ndarray, n_items: float | np.ndarray) -> np.ndarray:
    """Variance (points²) of a percentage measured on ``n_items`` items, binomial with the Agresti–Coull
    adjustment p̃ = (x + z²/2) / (n + z²): an upper bound for any per-item score in [0, 1] (pass rates and
    averaged category accuracies included), and never 0, even at 0 % or 100 %."""
    n = np.asarray(n_items, dtype=float)
    successes = np.asarray(percent, dtype=float) / 100 * n
    adjusted = (successes + _Z**2 / 2) / (n + _Z**2)
    return 1e4 * adjusted * (1 - adjusted) / (n + _Z**2)


def paired_interval(differences: Sequence[float], item_variances: Sequence[float],
                    common_variance: float = 0.0, level: float = LEVEL) -> Interval:
    """Interval of the mean of per-seed paired differences (points): a seed interval floored by the
    evaluation's binomial variance, pooled (the module docstring says why).

    Args:
        differences: (k,) the per-seed differences a − b, k ≥ 1.
        item_variances: (k,) the evaluation's variance of each difference (points²), e.g. the sum of
            :func:`binomial_variance` of a and of b over their items × samples.
        common_variance: variance of a term shared by every difference (points²), e.g. a base model
            evaluated once and compared with every seed: it does not average out over seeds, so it is
            added to the variance of the mean.
        level: two-sided confidence level (default :data:`LEVEL`; lower it per comparison when a rule
            decides on any of several comparisons, Bonferroni).

    With s² the seeds' sample variance (0 for one seed) and v the mean item variance: where s² ≥ v (k ≥ 2) the
    variance of one difference is s² (Student's t); otherwise it is ((k − 1) s² + v) / k; both with k − 1
    degrees of freedom (1 for one seed). The half-width is t · √(variance / k + common_variance).
    A missing item count (NaN variance) gives a NaN interval: no decision.
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
        source = f"t over {k} seed{'s' if k > 1 else ''}, floored by the evaluation's binomial noise ({why})"
    half = _t_quantile(dof, level) * math.sqrt(variance / k + common_variance)
    if not half > 0:  # a zero variance can only come from zero item variances: not a measurement
        half = math.nan
    return Interval(mean, mean - half, mean + half, source, level)


def rate_interval(events: int, trials: int, level: float = LEVEL) -> Interval:
    """Wilson score interval of ``events / trials`` (statsmodels), as a fraction, at two-sided ``level``."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(events, trials, alpha=1 - level, method="wilson")
    return Interval(events / trials, float(low), float(high), f"Wilson, {trials} seeds", level)


def rate_difference_interval(events_a: int, trials_a: int, events_b: int, trials_b: int,
                             level: float = LEVEL) -> Interval:
    """Newcombe's hybrid score interval of the difference of two rates a − b (statsmodels, ``newcomb``), at
    two-sided ``level``."""
    from statsmodels.stats.proportion import confint_proportions_2indep

    low, high = confint_proportions_2indep(events_a, trials_a, events_b, trials_b, method="newcomb",
                                           compare="diff", alpha=1 - level)
    return Interval(events_a / trials_a - events_b / trials_b, float(low), float(high),
                    f"Newcombe, {trials_a} vs {trials_b} seeds", level)


# --------------------------------------------------------------------------------------------------
# Decisions on one interval
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Criterion:
    """What one metric's interval must show.

    ``kind``:
        - ``"better"``: the effect lies on the ``direction`` side of 0 (reproduced); refuted when the
          interval lies below ``effect`` on that side (the paper's effect, or 0 where units differ);
        - ``"kept"``: non-inferiority: the interval lies above −``margin`` on the ``direction`` side;
          refuted when it lies below −``margin``;
        - ``"same"``: equivalence: the interval lies within ±``margin``; refuted when it lies outside;
        - ``"changed"``: the interval excludes ±``margin`` (either side); refuted when it lies within ±``margin``.
    """

    kind: str
    direction: int = 1
    effect: float = 0.0
    margin: float = 0.0

    def decide(self, interval: Interval) -> str:
        """One of :data:`REPRODUCED`, :data:`SMALLER`, :data:`NOT_REPRODUCED`, :data:`INCONCLUSIVE`: disjoint
        regions of (low, high), so no interval meets two definitions; a NaN interval is inconclusive."""
        low, high = interval.oriented(self.direction)
        if self.kind == "better":
            effect = max(self.effect, 0.0)
            if low > 0:
                return REPRODUCED if high >= effect else SMALLER
            return NOT_REPRODUCED if high < effect else INCONCLUSIVE
        if self.kind == "kept":
            return REPRODUCED if low > -self.margin else NOT_REPRODUCED if high < -self.margin else INCONCLUSIVE
        if self.kind == "same":
            if -self.margin < low and high < self.margin:
                return REPRODUCED
            return NOT_REPRODUCED if low > self.margin or high < -self.margin else INCONCLUSIVE
        if self.kind == "changed":
            if low > self.margin or high < -self.margin:
                return REPRODUCED
            return NOT_REPRODUCED if -self.margin < low and high < self.margin else INCONCLUSIVE
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
    in the paper's direction with one or more ``smaller than the paper's`` give ``smaller``; anything else
    (a part undecided) is ``inconclusive``."""
    if NOT_REPRODUCED in outcomes:
        return NOT_REPRODUCED
    if outcomes and all(o == REPRODUCED for o in outcomes):
        return REPRODUCED
    if outcomes and all(o in (REPRODUCED, SMALLER) for o in outcomes):
        return SMALLER
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
    uses it (unit included); ``minimum``: the least evidence for a decision at the language-model scales.
    """

    claim_id: str
    statement: str
    paper_value: str
    source: str
    family: str
    metrics: str = ""
    paper_effect: str = ""
    minimum: Minimum | None = None


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
    """
    a, b = comparison
    if claim_id in ("C3", "C4"):
        return _mean_difference("1", setup, metric, a, b)
    if claim_id == "C6":
        return _mean_difference("3", setup, metric, a, b)
    if claim_id == "C8":
        return _mean_difference("4", pn.R1_7B, metric, a, b)
    if claim_id == "C9":
        return _mean_difference("5", pn.R1_7B, metric, a, b, setting=setup)
    raise KeyError(f"{claim_id} has no tabulated effect")


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
          "+2.63 / +4.33 pts (1.5B), +1.67 / +0.59 pts (3B)", Minimum(MIN_SEEDS, MIN_ITEMS)),
    Claim("C4", "GRPO w/o std matches correctness but never learns format",
          "0.00 % correct format (base 4.74 %); avg acc 29.26 vs GRPO 30.18 (1.5B)", "Tab. 2, Fig. 4", "tool_calling",
          "GRPO w/o std's format (%) against the base model's and 0 %; its avg accuracy against GRPO's",
          "format −4.74 pts from base to 0.00 %; accuracy −0.92 pts (within ±2)", Minimum(MIN_SEEDS, MIN_ITEMS)),
    Claim("C5", "math: GRPO's correctness falls and max response length spikes after about step 400; "
                "GDPO keeps improving",
          "divergence of GRPO near step 400 (R1-1.5B); none for GDPO", "Fig. 5", "math",
          "rate of divergence over seeds (correctness falls for good while the max length climbs), GRPO − GDPO",
          "GRPO diverged, GDPO did not (one run each)", Minimum(MIN_SEEDS, steps=400)),
    Claim("C6", "math accuracy and length-exceed table", "e.g. R1-1.5B AIME acc/exceed 23.1/10.8 (GRPO) vs "
                "29.4/6.5 (GDPO)", "Tab. 3", "math",
          "GDPO − GRPO of accuracy (higher) and Exceed (lower), % averaged over benchmarks and Table 3's models",
          "acc +3.24 / +0.60 / +0.32 pts, exceed −1.60 / −0.68 / −0.90 pts (R1-1.5B / R1-7B / Qwen3-4B)",
          Minimum(MIN_SEEDS, MIN_ITEMS)),
    Claim("C7", "lowering the length weight (1, 0.75, 0.5) barely changes behaviour; only 0.25 does",
          "qualitative (Fig. 6; its Table 8 numbers are not given)", "Fig. 6", "math",
          "accuracy and Exceed (%) at weight w − at weight 1, GRPO and GDPO",
          f"w 0.75, 0.5 within ±{BARELY_MARGIN:g} pts; w 0.25 outside (qualitative)", Minimum(MIN_SEEDS, MIN_ITEMS)),
    Claim("C8", "conditioning length on correctness: GDPO +4.4 AIME accuracy and 16.9 points lower exceed than GRPO",
          "AIME 57.7/12.3 (GDPO) vs 53.3/29.2 (GRPO), R1-7B", "Tab. 4, Fig. 7", "math",
          "GDPO − GRPO of accuracy (higher) and Exceed (lower), % averaged over benchmarks",
          "acc +2.00 pts, exceed −5.72 pts (mean of Table 4's benchmarks; AIME +4.4 / −16.9)",
          Minimum(MIN_SEEDS, MIN_ITEMS)),
    Claim("C9", "coding, 2 and 3 objectives: GDPO keeps pass rate and lowers exceed and bug ratio",
          "e.g. Codeforces 3-obj pass 69.4 vs 69.5, exceed 13.6 vs 16.9, bug 1.8 vs 2.5", "Tab. 5", "code",
          "GDPO − GRPO of pass (kept), Exceed (kept at 2 objectives, lower at 3) and bug % (lower at 3)",
          "2obj pass +2.53, exceed +0.07; 3obj pass +0.08, exceed −3.17, bug −1.20 pts",
          Minimum(MIN_SEEDS, MIN_ITEMS)),
    Claim("C10", "GDPO without the batch step occasionally fails to converge",
          "qualitative (App. A, Fig. 8)", "App. A, Fig. 8", "math",
          "rate of failure to converge over seeds (final correctness not above the initial), gdpo_nobn − gdpo",
          "occasional failures without the batch step, none with it (qualitative)",
          Minimum(MIN_SEEDS, steps=100, prompts_per_batch=2)),
    Claim("C11", "gains hold across model sizes (1.5B, 3B, 4B, 7B) and all three task families",
          "Tabs. 1, 3, 5", "Tabs. 1, 3, 5", "all", "C3, C6 and C9 together, on at least two model sizes",
          "C3, C6, C9 reproduced; 1.5B–7B"),
)
CLAIMS_BY_ID = {claim.claim_id: claim for claim in CLAIMS}


#: Units of a :class:`MeasuredInterval`.
POINTS = "percentage points"
RATE = "rate difference"


@dataclasses.dataclass(frozen=True)
class MeasuredInterval:
    """One interval a verdict rests on (or reports beside), as numbers: what it measures (``name``, e.g.
    ``"Qwen2.5-1.5B avg"``), the measured ``mean`` and its two-sided ``level`` bounds ``low`` and ``high`` (NaN
    where none could be formed), in ``unit`` (:data:`POINTS`, :data:`RATE`, or what the name measures)."""

    name: str
    mean: float
    low: float
    high: float
    level: float
    unit: str

    @classmethod
    def of(cls, name: str, interval: Interval, unit: str = POINTS) -> MeasuredInterval:
        return cls(name, interval.mean, interval.low, interval.high, interval.level, unit)


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
