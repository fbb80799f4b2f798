"""Two runs scored on the same items: the paired (item-clustered) noise floor of their difference.

eval.json keeps each benchmark's per-item, per-sample outcomes under ``items`` (:func:`gdpo.files.item_outcomes`).
Where runs a and b answered the same items, the difference of their scores is a mean of per-item differences
``d_i = ā_i − b̄_i`` (each run's samples averaged within the item), and its variance is that of those d_i, not
the sum of two independent binomials: an item that is easy for a is easy for b.

Which variance answers which question (fractions here; × 10⁴ for points²):

- ``var_paired = var(d_i) / n`` (cluster-robust, items as clusters; with item weights the linearised form):
  the sampling variance of a − b on one evaluation, counting both the draw of the n items from a population
  of items and each run's decoding noise. It is the noise floor of one seed's difference.
- ``var_independent`` = the Agresti–Coull binomial variance of a plus that of b over their n·m responses
  (:func:`gdpo.reporting.contract.binomial_variance`, what the ledger has used): right only if a and b
  answered different, independent items with independent samples. When outcomes correlate across items
  (ρ > 0) it overstates var_paired by about 1 / (1 − ρ).
- ``var_adjusted``: var_paired computed with Agresti and Min's (2005) half-counts: one half is added to each
  cell of the 2×2 table of (a right?, b right?) per item, i.e. pseudo-items with d = +1 (½), d = −1 (½) and
  d = 0 (1) join the n real ones, and the variance is the plug-in variance of the mean over n + 2. For 0/1
  outcomes it is exactly the adjusted-Wald paired interval's variance; it is never 0, so an interval built
  on it never collapses to a point when a and b agree on every item (var ≥ 1/(n + 2)² then).
- ``decoding_a``/``decoding_b``: the decoding-sampling part, Σ w_i² s_i² / m_i with s_i² the within-item
  sample variance (p_i(1 − p_i)·m/(m − 1) for 0/1 outcomes, the unbiased form of p_i(1 − p_i)/m per sample);
  it is a property of one run and averages out over seeds. With one sample per item (m = 1) it cannot be
  estimated and is reported as 0 (``decoding_estimable`` False): that is exact for greedy deterministic
  decoding, and with sampling at m = 1 the decoding noise hides inside the item term.
- ``item_population`` = var_paired − decoding_a − decoding_b (≥ 0): the part from which items were drawn.
  With the SAME items for every seed and method this term is common to every seed: it does not average out
  over seeds (a mean over k seeds keeps it whole, while the decoding and training parts shrink as 1/k), and
  it is paired (it enters through d_i, the items' difference between the methods, not through each
  method's accuracy). It matters only when the claim is about the population of items ("GDPO is better on
  problems like these"); for "better on this benchmark" the item set is fixed and the term is no noise.
  With greedy evaluation (m = 1, deterministic) a run's score on fixed items has no evaluation noise at all;
  seeds then differ only through training.

Discordant items (as McNemar counts them): items where a's mean beats b's (``a_only``) and the reverse
(``b_only``); for 0/1 outcomes these are McNemar's off-diagonal cells and ``p_value`` is the exact McNemar
test (two-sided binomial test of a_only among a_only + b_only at ½); with several samples per item it is the
sign test on the items' differences.

Pure numpy/scipy; the only evidence read is :func:`paired_items`, which takes two eval.json dicts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import binomtest

from gdpo.files import ITEMS_KEY, decode_sample_scores
from gdpo.reporting.contract import binomial_variance

#: What a reader says for an evaluation made before per-item outcomes were kept (every committed one so far).
NO_ITEM_OUTCOMES = "no per-item outcomes recorded"


class ItemOutcomesMissing(ValueError):
    """An eval.json without the per-item outcomes a paired comparison needs (message: the reason)."""


@dataclass(frozen=True)
class PairedItems:
    """Two runs' per-sample outcomes on their common items.

    Attributes:
        ids: (n,) item ids present in both runs, in run a's order.
        a, b: (n, m_a), (n, m_b) per-sample scores in [0, 1]; NaN pads items with fewer samples.
        weights: (n,) each item's weight in the metric, summing to 1 (equal unless the benchmark weights
            its items, e.g. BFCL's live/non_live/avg by category; ``avg`` weights are rescaled to sum 1).
        only_a, only_b: number of items scored in one run only (left out); items of weight 0 in the
            weighted metric are left out as well.
    """

    ids: np.ndarray
    a: np.ndarray
    b: np.ndarray
    weights: np.ndarray
    only_a: int = 0
    only_b: int = 0


@dataclass(frozen=True)
class ItemComparison:
    """The paired statistics of a − b on n common items (fractions in [0, 1]; variances in fraction²).

    Attributes:
        n: common items. samples_a, samples_b: samples per item (the largest).
        mean_a, mean_b: the runs' (weighted) scores. mean_difference: Σ w_i d_i.
        var_paired: item-clustered variance of the mean difference (module docstring).
        var_independent: two independent Agresti–Coull binomials over n·m responses each.
        var_adjusted: Agresti–Min half-count variance, never 0.
        ratio: var_paired / var_independent.
        correlation: Pearson correlation of the items' means ā_i and b̄_i (NaN when either is constant).
        decoding_a, decoding_b: decoding-sampling part of each run's score variance (0 when m = 1).
        decoding_estimable: both runs have ≥ 2 samples per item.
        item_population: var_paired − decoding_a − decoding_b, floored at 0.
        binary: every item's outcome in both runs is 0 or 1 (one sample, or all samples agree).
        a_only, b_only: discordant items (a's item mean above b's, and the reverse); both_right,
            both_wrong: concordant items at 1 and at 0 (binary outcomes; items tied in between count in
            neither).
        p_value: exact two-sided McNemar (binary) or sign-test p-value on the discordant items; 1 when none.
    """

    n: int
    samples_a: int
    samples_b: int
    mean_a: float
    mean_b: float
    mean_difference: float
    var_paired: float
    var_independent: float
    var_adjusted: float
    ratio: float
    correlation: float
    decoding_a: float
    decoding_b: float
    decoding_estimable: bool
    item_population: float
    binary: bool
    a_only: int
    b_only: int
    both_right: int
    both_wrong: int
    p_value: float

    def to_dict(self) -> dict:
        return asdict(self)


def _matrix(scores: Sequence) -> np.ndarray:
    """(n, m) per-sample scores from per-item lists or 0/1 strings; NaN pads shorter items."""
    rows = [decode_sample_scores(item) if isinstance(item, str) else [float(v) for v in item] for item in scores]
    if any(not row for row in rows):
        raise ValueError("An item has no sample scores; every evaluated item needs at least one sample.")
    # NaN is padding here only: a stored NaN would be read as a missing sample, or make the item's mean NaN.
    if any(math.isnan(v) for row in rows for v in row):
        raise ValueError("Sample scores must lie in [0, 1]; an item holds NaN.")
    width = max((len(row) for row in rows), default=1)
    out = np.full((len(rows), width), np.nan)
    for index, row in enumerate(rows):
        out[index, : len(row)] = row
    if np.any((out < 0) | (out > 1)):
        raise ValueError("Sample scores must lie in [0, 1].")
    return out


def _weights(weights: Sequence[float] | None, n: int) -> np.ndarray:
    if weights is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"weights must be {n} non-negative numbers with a positive sum.")
    return w / w.sum()


def item_means(scores: np.ndarray) -> np.ndarray:
    """(n,) each item's mean over its samples (NaN padding ignored)."""
    return np.nanmean(np.asarray(scores, dtype=float), axis=1)


def decoding_variance(scores: np.ndarray, weights: Sequence[float] | None = None) -> float:
    """Decoding-sampling variance of one run's (weighted) mean score: Σ w_i² s_i² / m_i, s_i² the unbiased
    within-item variance of the item's m_i samples (p(1 − p)·m/(m − 1) for 0/1); items with one sample add 0.

    Args:
        scores: (n, m) per-sample scores, NaN padding allowed.
        weights: (n,) item weights (normalised to sum 1); None: equal.
    """
    scores = np.asarray(scores, dtype=float)
    w = _weights(weights, len(scores))
    counts = np.sum(~np.isnan(scores), axis=1)
    within = np.zeros(len(scores))
    several = counts >= 2
    if np.any(several):
        within[several] = np.nanvar(scores[several], axis=1, ddof=1) / counts[several]
    return float(np.sum(w**2 * within))


def paired_variance(differences: np.ndarray, weights: Sequence[float] | None = None) -> float:
    """Item-clustered variance of Σ w_i d_i: n/(n − 1) Σ (w_i d_i − T/n)², T = Σ w_i d_i; with equal weights
    exactly var(d_i, ddof=1) / n. NaN for one item (no spread to estimate)."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n < 2:
        return float("nan")
    z = _weights(weights, n) * d
    return float(n / (n - 1) * np.sum((z - z.sum() / n) ** 2))


def adjusted_paired_variance(differences: np.ndarray, weights: Sequence[float] | None = None) -> float:
    """Agresti–Min half-count variance of the mean difference, never 0 (module docstring): pseudo-items
    d = +1 and d = −1 with frequency ½ each and d = 0 with frequency 1 join the n items, each pseudo-item
    weighing as an average item; the plug-in variance over the N = n + 2 items. For 0/1 outcomes and equal
    weights: ((p̃₁₀ + p̃₀₁) − (p̃₁₀ − p̃₀₁)²) / (n + 2), p̃₁₀ = (n₁₀ + ½)/(n + 2)."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    total = n + 2
    w = _weights(weights, n) * n / total  # real items keep their relative weights; pseudo-items 1/N each
    values = np.concatenate([d, [1.0, -1.0, 0.0]])
    freq = np.concatenate([np.ones(n), [0.5, 0.5, 1.0]])
    weight = np.concatenate([w, np.full(3, 1.0 / total)])
    z = weight * values
    mean_z = np.sum(freq * z) / total
    return float(np.sum(freq * (z - mean_z) ** 2))


def independent_variance(a: np.ndarray, b: np.ndarray) -> float:
    """The ledger's floor: :func:`gdpo.reporting.contract.binomial_variance` of a and of b, each over its
    responses (items × samples), Agresti–Coull adjusted; in fraction²."""
    total = 0.0
    for scores in (a, b):
        scores = np.asarray(scores, dtype=float)
        responses = int(np.sum(~np.isnan(scores)))
        total += float(binomial_variance(100.0 * np.nanmean(scores), responses)) / 1e4
    return total


def discordant_items(a_means: np.ndarray, b_means: np.ndarray) -> tuple[int, int, int, int, float]:
    """(a_only, b_only, both_right, both_wrong, p_value): items where a's mean beats b's and the reverse,
    items both score 1 and both score 0, and the exact two-sided binomial test of a_only out of the
    discordant items at ½ (McNemar's exact test for 0/1 outcomes; 1.0 with no discordant item)."""
    a_means, b_means = np.asarray(a_means, dtype=float), np.asarray(b_means, dtype=float)
    a_only, b_only = int(np.sum(a_means > b_means)), int(np.sum(a_means < b_means))
    both_right = int(np.sum((a_means == 1) & (b_means == 1)))
    both_wrong = int(np.sum((a_means == 0) & (b_means == 0)))
    discordant = a_only + b_only
    p_value = binomtest(a_only, discordant, 0.5).pvalue if discordant else 1.0
    return a_only, b_only, both_right, both_wrong, float(p_value)


def compare_items(a: np.ndarray, b: np.ndarray, weights: Sequence[float] | None = None) -> ItemComparison:
    """Every statistic of :class:`ItemComparison` from two runs' per-sample scores on the same items.

    Args:
        a, b: (n, m_a) and (n, m_b) per-sample scores in [0, 1], row i the same item in both (NaN pads).
        weights: (n,) item weights in the metric; None: equal (a plain mean over items).
    """
    a, b = np.atleast_2d(np.asarray(a, dtype=float)), np.atleast_2d(np.asarray(b, dtype=float))
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"Need the same items, at least one, in both runs; got {len(a)} and {len(b)} rows.")
    n = len(a)
    w = _weights(weights, n)
    a_means, b_means = item_means(a), item_means(b)
    differences = a_means - b_means
    var_paired = paired_variance(differences, w)
    var_independent = independent_variance(a, b)
    decoding_a, decoding_b = decoding_variance(a, w), decoding_variance(b, w)
    samples_a = int(np.max(np.sum(~np.isnan(a), axis=1)))
    samples_b = int(np.max(np.sum(~np.isnan(b), axis=1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        correlation = (float(np.corrcoef(a_means, b_means)[0, 1])
                       if n >= 2 and np.std(a_means) > 0 and np.std(b_means) > 0 else float("nan"))
    a_only, b_only, both_right, both_wrong, p_value = discordant_items(a_means, b_means)
    binary = bool(np.all(np.isin(a_means, (0.0, 1.0))) and np.all(np.isin(b_means, (0.0, 1.0))))
    return ItemComparison(
        n=n, samples_a=samples_a, samples_b=samples_b,
        mean_a=float(np.sum(w * a_means)), mean_b=float(np.sum(w * b_means)),
        mean_difference=float(np.sum(w * differences)),
        var_paired=var_paired, var_independent=var_independent,
        var_adjusted=adjusted_paired_variance(differences, w),
        ratio=var_paired / var_independent if var_independent > 0 else float("nan"),
        correlation=correlation,
        decoding_a=decoding_a, decoding_b=decoding_b,
        decoding_estimable=samples_a >= 2 and samples_b >= 2,
        item_population=(max(0.0, var_paired - decoding_a - decoding_b) if var_paired == var_paired
                         else float("nan")),
        binary=binary, a_only=a_only, b_only=b_only, both_right=both_right, both_wrong=both_wrong,
        p_value=p_value,
    )


def planned_paired_variance(p_a: float, p_b: float, correlation: float, n_items: int) -> float:
    """Variance (fraction²) of a − b on n shared items for planning (``gdpo power``), before any outcome is
    recorded: (σ_a² + σ_b² − 2ρ σ_a σ_b) / n with σ² = p(1 − p), the largest variance an item score in [0, 1]
    with mean p can have (exact for one 0/1 sample per item), and ρ the items' correlation between the
    methods (measured: ``gdpo item-pairing``). ρ = 0 gives the independent-binomial variance over n items."""
    if not (0 <= p_a <= 1 and 0 <= p_b <= 1 and -1 <= correlation <= 1 and n_items >= 1):
        raise ValueError(f"Need p_a, p_b in [0, 1], correlation in [-1, 1], n_items >= 1; got "
                         f"{p_a}, {p_b}, {correlation}, {n_items}.")
    sd_a, sd_b = np.sqrt(p_a * (1 - p_a)), np.sqrt(p_b * (1 - p_b))
    return float(max(0.0, sd_a**2 + sd_b**2 - 2 * correlation * sd_a * sd_b) / n_items)


def _where(record: Mapping) -> str:
    return f"{record.get('task', '?')}/{record.get('method', '?')} seed {record.get('seed', '?')}"


#: The key beside a benchmark's ``scores`` that lists the items whose ``<metric>`` was regraded differently from
#: the evaluator's logged outcome (math: :func:`gdpo.tasks.math.evaluation.benchmark_items`).
REGRADED_DIFFERS = "{metric}_regraded_differs"


def _repeated(values: Sequence) -> list:
    seen, repeated = set(), []
    for value in values:
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated


def _listed(values: Sequence, limit: int = 5) -> str:
    return ", ".join(str(value) for value in values[:limit]) + (", ..." if len(values) > limit else "")


def item_outcomes_problem(record: Mapping) -> str | None:
    """What makes one eval.json's (or items.json entry's) per-item outcomes unfit to read, or None.

    Per benchmark: item ids that are not strings or integers, or that repeat (runs pair by id: a repeated id
    would count its item twice, paired with one of its outcomes); a metric without one score list per id; a
    sample score that is not a number in [0, 1] (NaN passes every tolerance and makes a noise floor NaN); and
    ids listed as regraded differently (:data:`REGRADED_DIFFERS`) that are not the benchmark's items, or repeat
    (each listed item widens the agreement with eval.csv that :class:`~.model_evidence.Evidence` checks).
    """
    for benchmark, bench in (record.get(ITEMS_KEY) or {}).items():
        ids = bench.get("ids")
        if not isinstance(ids, list) or not all(isinstance(item, (str, int)) for item in ids):
            return f"{benchmark}: item ids must be a list of strings or integers"
        if repeated := _repeated(ids):
            return f"{benchmark}: item ids repeat ({_listed(repeated)})"
        for metric, per_item in (bench.get("scores") or {}).items():
            if not isinstance(per_item, list) or len(per_item) != len(ids):
                count = len(per_item) if isinstance(per_item, list) else "no"
                return f"{benchmark}/{metric}: {count} score lists for {len(ids)} item ids"
            for item, encoded in zip(ids, per_item):
                try:
                    values = decode_sample_scores(encoded)
                except (TypeError, ValueError):
                    values = None
                # not (0 <= v <= 1) also holds for NaN, which every comparison calls false
                if not values or any(not 0.0 <= value <= 1.0 for value in values):
                    return f"{benchmark}/{metric}: item {item} has scores {encoded!r}, not numbers in [0, 1]"
            key = REGRADED_DIFFERS.format(metric=metric)
            listed = bench.get(key)
            if listed is None:
                continue
            if not isinstance(listed, list) or not all(isinstance(item, (str, int)) for item in listed):
                return f"{benchmark}: {key} must be a list of item ids"
            known = set(ids)
            if unknown := [item for item in listed if item not in known]:
                return f"{benchmark}: {key} lists {len(unknown)} ids that are not its items ({_listed(unknown)})"
            if repeated := _repeated(listed):
                return f"{benchmark}: {key} repeats {_listed(repeated)}"
    return None


def item_outcomes_missing(record: Mapping, benchmark: str, metric: str) -> str | None:
    """Why ``record`` (one eval.json) has no per-item ``metric`` on ``benchmark``; None when it has them."""
    items = record.get(ITEMS_KEY)
    where = _where(record)
    if not items:
        return f"{NO_ITEM_OUTCOMES} for {where} (evaluated before eval.json kept them)"
    if benchmark not in items:
        return f"{NO_ITEM_OUTCOMES} for {where} on {benchmark} (it has {', '.join(sorted(items))})"
    if metric not in (items[benchmark].get("scores") or {}):
        return (f"{NO_ITEM_OUTCOMES} for {where} on {benchmark}/{metric} "
                f"(it has {', '.join(sorted(items[benchmark].get('scores') or {}))})")
    return None


def _item_weights(bench: Mapping, ids: list, weights_metric: str | None) -> np.ndarray | None:
    """Per-item weights of ``weights_metric`` (BFCL: category weight / items of that category), or None."""
    if weights_metric is None:
        return None
    table = (bench.get("weights") or {}).get(weights_metric)
    groups = bench.get("groups")
    if table is None or groups is None:
        raise ValueError(f"eval.json's items have no weights for {weights_metric!r}; "
                         f"it has {sorted(bench.get('weights') or {})}.")
    group_of = dict(zip(bench["ids"], groups))
    counts: dict[str, int] = {}
    for item in ids:
        counts[group_of[item]] = counts.get(group_of[item], 0) + 1
    return np.array([table.get(group_of[item], 0.0) / counts[group_of[item]] for item in ids])


def paired_items(eval_a: Mapping, eval_b: Mapping, benchmark: str, metric: str,
                 weights_metric: str | None = None) -> PairedItems:
    """The two evaluations' per-sample ``metric`` on the items of ``benchmark`` they share.

    Args:
        eval_a, eval_b: two eval.json contents.
        benchmark, metric: e.g. ``"reasoning_gym", "acc"``; BFCL: ``"bfcl_v3", "correct"`` or ``"format"``.
        weights_metric: a summary score whose item weights to apply (BFCL ``"live"``, ``"non_live"``,
            ``"avg"``; eval.json's ``weights``, computed on the common items' categories); None: equal.

    Raises:
        ItemOutcomesMissing: either record has no per-item outcomes for them (old eval.json), with the
            reason (:data:`NO_ITEM_OUTCOMES` …), or the two share no item.
        ValueError: a record's per-item outcomes are corrupt (:func:`item_outcomes_problem`).
    """
    for record in (eval_a, eval_b):
        reason = item_outcomes_missing(record, benchmark, metric)
        if reason:
            raise ItemOutcomesMissing(reason)
        problem = item_outcomes_problem(record)
        if problem:
            raise ValueError(f"{_where(record)} {problem}: its eval.json's items are corrupt; restore the file "
                             "from the run's committed evidence, or evaluate the run again.")
    bench_a, bench_b = eval_a[ITEMS_KEY][benchmark], eval_b[ITEMS_KEY][benchmark]
    rows_b = {item: index for index, item in enumerate(bench_b["ids"])}
    common = [item for item in bench_a["ids"] if item in rows_b]
    if not common:
        raise ItemOutcomesMissing(f"the two evaluations of {benchmark} share no item (different item sets, "
                                  "e.g. arithmetic problems drawn from different evaluation seeds)")
    rows_a = {item: index for index, item in enumerate(bench_a["ids"])}
    a = _matrix([bench_a["scores"][metric][rows_a[item]] for item in common])
    b = _matrix([bench_b["scores"][metric][rows_b[item]] for item in common])
    weights = _item_weights(bench_a, common, weights_metric)
    if weights is not None:
        # Items that do not count in the metric (e.g. live items for non_live) are no clusters of it.
        keep = weights > 0
        if not np.any(keep):
            raise ItemOutcomesMissing(f"no common item of {benchmark} counts in {weights_metric}")
        a, b, weights, common = a[keep], b[keep], weights[keep], [item for item, k in zip(common, keep) if k]
    return PairedItems(ids=np.array(common, dtype=object), a=a, b=b,
                       weights=_weights(weights, len(common)),
                       only_a=len(bench_a["ids"]) - len(common), only_b=len(bench_b["ids"]) - len(common))


def compare_evaluations(eval_a: Mapping, eval_b: Mapping, benchmark: str, metric: str,
                        weights_metric: str | None = None) -> ItemComparison:
    """:func:`compare_items` on :func:`paired_items` (same arguments and errors)."""
    paired = paired_items(eval_a, eval_b, benchmark, metric, weights_metric)
    return compare_items(paired.a, paired.b, paired.weights)


# --------------------------------------------------------------------------------------------------
# The rules' paired noise floor: per-seed item scores carried by a Sample, paired between two samples
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ItemScores:
    """One run's per-item outcomes of one metric, averaged over its samples, per benchmark: what a rule's
    :class:`gdpo.reporting.verdicts.samples.Sample` carries per seed to pair with another run's.

    Attributes:
        benchmarks: benchmark → (ids (n,), item means (n,) in [0, 1], weights (n,) summing to 1).
    """

    benchmarks: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class SimulatedItems:
    """A simulated run's evaluation for the power plan: its score (percent) over ``trials`` Bernoulli draws,
    with item outcomes correlated at ``correlation`` with any other run scored on the same items."""

    percent: float
    trials: float
    correlation: float


@dataclass(frozen=True)
class PairNoise:
    """The paired noise floor of one seed's difference a − b and its discordant items.

    Attributes:
        variance: points² (Agresti–Min, :func:`adjusted_paired_variance`, × 10⁴; averaged over benchmarks as
            the value is, Σ / B²).
        items: common items over the benchmarks. a_only, b_only: discordant items (NaN for a simulation).
    """

    variance: float
    items: int
    a_only: float = float("nan")
    b_only: float = float("nan")


def item_scores(record: Mapping, benchmarks: Sequence[str], metric: str) -> ItemScores | None:
    """The per-item means of ``metric`` on ``benchmarks`` from one eval.json (or one items.json entry), or None
    where any benchmark lacks them. A summary metric that BFCL weights by category (``live``, ``non_live``,
    ``avg``) reads the items' ``correct`` outcomes with those weights."""
    items = record.get(ITEMS_KEY) or {}
    out = {}
    for benchmark in benchmarks:
        bench = items.get(benchmark)
        if not bench:
            return None
        scores = bench.get("scores") or {}
        if metric in scores:
            name, weights_metric = metric, None
        elif "correct" in scores and metric in (bench.get("weights") or {}):
            name, weights_metric = "correct", metric
        else:
            return None
        ids = list(bench["ids"])
        means = item_means(_matrix(scores[name]))
        weights = _item_weights(bench, ids, weights_metric)
        if weights is None:
            weights = np.full(len(ids), 1.0)
        out[benchmark] = (np.array(ids, dtype=object), means, np.asarray(weights, dtype=float))
    return ItemScores(out)


def pair_noise(a: ItemScores | SimulatedItems | None, b: ItemScores | SimulatedItems | None) -> PairNoise | None:
    """The paired noise floor of a − b (:class:`PairNoise`) where both runs' items pair, else None (the rule
    then floors with two independent binomials).

    Real runs pair on the items both scored, per benchmark (weights renormalised on them); a benchmark they
    share no item of gives None. Simulated runs: (v_a + v_b − 2ρ√(v_a v_b)), v the Agresti–Coull binomial
    variance of each score over its draws, at least 10⁴/(n + 2)² like Agresti–Min's."""
    if isinstance(a, SimulatedItems) and isinstance(b, SimulatedItems):
        va = float(binomial_variance(a.percent, a.trials))
        vb = float(binomial_variance(b.percent, b.trials))
        rho = min(a.correlation, b.correlation)
        trials = min(a.trials, b.trials)
        floor = 1e4 / (trials + 2) ** 2
        return PairNoise(max(va + vb - 2 * rho * math.sqrt(va * vb), floor), int(trials))
    if not (isinstance(a, ItemScores) and isinstance(b, ItemScores)) or set(a.benchmarks) != set(b.benchmarks):
        return None
    variance, items, a_only, b_only = 0.0, 0, 0, 0
    for benchmark, (ids_a, means_a, weights_a) in a.benchmarks.items():
        ids_b, means_b, _ = b.benchmarks[benchmark]
        rows_b = {item: index for index, item in enumerate(ids_b)}
        keep = [index for index, item in enumerate(ids_a) if item in rows_b and weights_a[index] > 0]
        if not keep:
            return None
        x = means_a[keep]
        y = means_b[[rows_b[ids_a[index]] for index in keep]]
        w = weights_a[keep]
        variance += 1e4 * adjusted_paired_variance(x - y, w)
        items += len(keep)
        a_only += int(np.sum(x > y))
        b_only += int(np.sum(x < y))
    count = len(a.benchmarks)
    return PairNoise(variance / count**2, items, a_only, b_only)
