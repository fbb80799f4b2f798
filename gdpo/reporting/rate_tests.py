"""Exact unconditional tests on two event rates (seeds with the event / without, per method): the tests the event
claims (C5, C10) decide by.

For a's ``x`` events in ``n_a`` seeds and b's ``y`` in ``n_b``, the statistic is the score statistic of the rate
difference against a value d₀ (Farrington & Manning 1990, the restricted rates found numerically; for d₀ = 0 the
pooled z of Suissa & Shuster 1985),
``z = (x/n_a − y/n_b − d₀) / √(p̃_a(1 − p̃_a)/n_a + p̃_b(1 − p̃_b)/n_b)`` with p̃ the maximum-likelihood rates under
p_a − p_b = d₀. The p-value is exact and unconditional (Chan 1998): the probability, maximised over the nuisance
rate on a grid (:data:`GRID` points, both ends included), of a table at least as extreme as the one observed, every
table's probability computed exactly (two binomials). Two one-sided tests:

- :func:`above_p_value`: H₀ p_a ≤ p_b, rejected for large z (d₀ = 0): a's rate is above b's;
- :func:`below_p_value`: H₀ p_a − p_b ≥ δ, rejected for small z (d₀ = δ): the difference is below δ.

Both nulls are composite; the maximum is taken on their boundary (p_a = p_b; p_a − p_b = δ), which is where the
size is largest because the rejection regions are monotone (Barnard-convex: a table with fewer a-events or more
b-events is at least as extreme; ``tests/test_rate_tests.py`` checks it). Rejection regions per
(n_a, n_b, d₀, α) are cached (:func:`above_region`, :func:`below_region`), so a ledger or a calibration that asks
for every table of a design computes each once.

The event claims show a's rate above b's by :func:`reproduction_region`: an exact test of the same null whose
region is grown to its exact size toward the claim's stated alternative, the regions of all designs nested so that
one more seed that agrees with the claim never takes a table out of it.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats
from scipy.special import gammaln, xlogy

#: Points of the nuisance-rate grid over which an exact p-value is maximised (its two ends included).
GRID = 1001
#: Margin by which a region's size on the grid stays below α: between grid points the size can exceed its grid
#: maximum by a few 1e-9 (at 1001 points); the margin keeps it ≤ α at every rate.
SIZE_MARGIN = 1e-6


def score_statistic(x: np.ndarray, n_a: int, y: np.ndarray, n_b: int, d0: float) -> np.ndarray:
    """Farrington–Manning score z of a − b against d₀, elementwise over tables (x, y); 0 where the restricted
    variance is 0 (both rates at one end: no evidence either way)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    pa, pb = x / n_a, y / n_b
    if d0 == 0.0:
        pooled = (x + y) / (n_a + n_b)
        ra, rb = pooled, pooled
    else:  # the restricted maximum-likelihood rates: the log-likelihood is concave in p_b on its range
        low, high = np.full(x.shape, max(0.0, -d0)), np.full(x.shape, min(1.0, 1.0 - d0))
        for _ in range(200):  # ternary search to machine precision, every table at once
            left, right = low + (high - low) / 3, high - (high - low) / 3
            better_left = _log_likelihood(x, n_a, y, n_b, left, d0) >= _log_likelihood(x, n_a, y, n_b, right, d0)
            high, low = np.where(better_left, right, high), np.where(better_left, low, left)
        rb = (low + high) / 2
        ra = np.clip(rb + d0, 0.0, 1.0)
    variance = ra * (1 - ra) / n_a + rb * (1 - rb) / n_b
    difference = pa - pb - d0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(variance > 1e-15, difference / np.sqrt(np.maximum(variance, 1e-300)), 0.0)
    return z


def _log_likelihood(x: np.ndarray, n_a: int, y: np.ndarray, n_b: int, rate_b: np.ndarray, d0: float) -> np.ndarray:
    rate_a = np.clip(rate_b + d0, 0.0, 1.0)
    return (xlogy(x, rate_a) + xlogy(n_a - x, 1 - rate_a) + xlogy(y, rate_b) + xlogy(n_b - y, 1 - rate_b))


def _p_values(n_a: int, n_b: int, d0: float, upper: bool) -> np.ndarray:
    """(n_a + 1, n_b + 1) exact p-values of every table: sup over the boundary p_a − p_b = d₀ (on the grid) of
    P(z ≥ z_obs) (``upper``) or P(z ≤ z_obs)."""
    x, y = np.meshgrid(np.arange(n_a + 1), np.arange(n_b + 1), indexing="ij")
    z = score_statistic(x.ravel(), n_a, y.ravel(), n_b, d0)
    z = np.round(z if upper else -z, 9)  # larger is more extreme; ties to 1e-9 are one value
    order = np.argsort(-z, kind="stable")
    z_sorted = z[order]
    # the index of the last table of each one's tie group: a table's tail includes its ties
    last = np.searchsorted(-z_sorted, -z_sorted, side="right") - 1
    pb_grid = np.linspace(0.0, 1.0 - d0, GRID) if d0 >= 0 else np.linspace(-d0, 1.0, GRID)
    pa_grid = np.clip(pb_grid + d0, 0.0, 1.0)
    worst = np.zeros(z.size)
    for chunk in np.array_split(np.arange(GRID), max(1, (GRID * z.size) // 2_000_000 + 1)):
        prob_a = stats.binom.pmf(np.arange(n_a + 1)[None, :], n_a, pa_grid[chunk, None])
        prob_b = stats.binom.pmf(np.arange(n_b + 1)[None, :], n_b, pb_grid[chunk, None])
        tables = (prob_a[:, :, None] * prob_b[:, None, :]).reshape(len(chunk), -1)
        tails = np.cumsum(tables[:, order], axis=1)[:, last]
        worst = np.maximum(worst, tails.max(axis=0))
    p = np.empty(z.size)
    p[order] = np.minimum(worst, 1.0)
    return p.reshape(n_a + 1, n_b + 1)


@functools.lru_cache(maxsize=1024)
def _cached_p_values(n_a: int, n_b: int, d0: float, upper: bool) -> np.ndarray:
    values = _p_values(n_a, n_b, d0, upper)
    values.setflags(write=False)
    return values


def above_p_values(n_a: int, n_b: int) -> np.ndarray:
    """(n_a + 1, n_b + 1) exact p-values of H₀ p_a ≤ p_b for every table (cached)."""
    return _cached_p_values(int(n_a), int(n_b), 0.0, True)


def below_p_values(n_a: int, n_b: int, delta: float) -> np.ndarray:
    """(n_a + 1, n_b + 1) exact p-values of H₀ p_a − p_b ≥ ``delta`` for every table (cached)."""
    return _cached_p_values(int(n_a), int(n_b), round(float(delta), 12), False)


def above_p_value(x: int, n_a: int, y: int, n_b: int) -> float:
    """Exact unconditional p-value of H₀ p_a ≤ p_b given x/n_a and y/n_b."""
    return float(above_p_values(n_a, n_b)[x, y])


def below_p_value(x: int, n_a: int, y: int, n_b: int, delta: float) -> float:
    """Exact unconditional p-value of H₀ p_a − p_b ≥ ``delta`` given x/n_a and y/n_b."""
    return float(below_p_values(n_a, n_b, delta)[x, y])


def above_region(n_a: int, n_b: int, alpha: float) -> np.ndarray:
    """(n_a + 1, n_b + 1) bool: the tables that reject H₀ p_a ≤ p_b at one-sided ``alpha``."""
    return above_p_values(n_a, n_b) <= alpha - SIZE_MARGIN


def below_region(n_a: int, n_b: int, delta: float, alpha: float) -> np.ndarray:
    """(n_a + 1, n_b + 1) bool: the tables that reject H₀ p_a − p_b ≥ ``delta`` at one-sided ``alpha``."""
    return below_p_values(n_a, n_b, delta) <= alpha - SIZE_MARGIN


def table_probabilities(n_a: int, n_b: int, rate_a: float, rate_b: float) -> np.ndarray:
    """(n_a + 1, n_b + 1) probability of each table when a's seeds have the event with ``rate_a``, b's with
    ``rate_b`` (independent binomials)."""
    return np.outer(stats.binom.pmf(np.arange(n_a + 1), n_a, rate_a), stats.binom.pmf(np.arange(n_b + 1), n_b, rate_b))


@functools.cache
def _null_pmf(n: int) -> np.ndarray:
    """(GRID, n + 1) probability of 0..n events in n seeds at each grid rate 0..1 (the common rate of
    H₀ p_a = p_b)."""
    values = stats.binom.pmf(np.arange(n + 1)[None, :], n, np.linspace(0.0, 1.0, GRID)[:, None])
    values.setflags(write=False)
    return values


@functools.cache
def _null_tail(n: int) -> np.ndarray:
    """(GRID, n + 2) probability of at least 0..n + 1 events in n seeds at each grid rate (:func:`_null_pmf`)."""
    values = np.concatenate([np.cumsum(_null_pmf(n)[:, ::-1], axis=1)[:, ::-1], np.zeros((GRID, 1))], axis=1)
    values.setflags(write=False)
    return values


def _null_sizes(region: np.ndarray) -> np.ndarray:
    """(GRID,) probability of ``region`` ((n_a + 1, n_b + 1) bool) at each grid rate of H₀ p_a = p_b."""
    n_a, n_b = region.shape[0] - 1, region.shape[1] - 1
    return ((_null_pmf(n_a) @ region.astype(float)) * _null_pmf(n_b)).sum(axis=1)


def null_size(region: np.ndarray) -> float:
    """Exact size of the test that rejects H₀ p_a ≤ p_b on ``region`` ((n_a + 1, n_b + 1) bool,
    Barnard-convex): its largest probability over the common rate of p_a = p_b (grid of :data:`GRID` points)."""
    return float(_null_sizes(region).max())


def reproduction_region(n_a: int, n_b: int, alpha: float, rate_a: float, rate_b: float) -> np.ndarray:
    """(n_a + 1, n_b + 1) bool, read-only: the tables that show a's rate above b's at one-sided ``alpha``, the
    exact test grown toward the stated alternative (``rate_a`` vs ``rate_b``).

    Each design's region is grown (:func:`_grow`) while its exact size, the maximum over the null boundary
    p_a = p_b, stays ≤ ``alpha``: a region of an exact test cannot reach its nominal size (the tables are
    discrete), and how far below it falls jumps with the seed count; growing it to the size shrinks those jumps.
    The regions of all designs are nested, so that a seed that agrees with the claim never weakens the verdict:
    (x, y) in the region of (n_a, n_b) puts (x + 1, y) in that of (n_a + 1, n_b) (one more a-seed, with the event)
    and (x, y) in that of (n_a, n_b + 1) (one more b-seed, without it). Read as (a's seeds without the event,
    b's seeds with it), every region is a down-set, and adding seeds only adds to it.

    So each design starts from its predecessors' regions (:func:`_region_inputs`), then grows. That start
    stays within the size: a region moved into a design with one more seed is no more likely, at any null
    rate, than it was (coupling: the table with the added seed is in the moved region only if the table
    without it is in the region), but the union of two such regions can exceed α. Therefore the designs with
    the same seeds in all are ordered: their regions grow toward a peak design, (m, m) for 2m seeds and
    (m, m − 1) for 2m − 1, each capped by its neighbour on the peak's side, so that of every design's two
    predecessors one contains the other, and its start is a single moved region. Equal designs (m, m), those
    calibration and power plans use, grow from (m − 1, m − 1)'s region alone, the odd peak (m, m − 1) capped
    by (m, m)'s. Two growth orders are tried for each design (:func:`_priorities`), the one more powerful at
    the alternative kept. Regions depend on the seeds and the alternative only, never on the data, so the test
    stays exact; built once per test (``alpha``, rates) and design, on demand.
    ``tests/test_event_monotonicity.py`` checks sizes, convexity and nesting (1–40 seeds per method, both
    event claims), ``tests/test_rate_tests.py`` that power at equal seeds does not fall as seeds are added
    (3–40)."""
    regions = _regions(float(alpha), float(rate_a), float(rate_b))
    pending = [(int(n_a), int(n_b))]
    while pending:  # depth first: a design is built once the regions it needs are
        design = pending[-1]
        if design in regions:
            pending.pop()
            continue
        missing = [d for d in _region_needs(*design) if d not in regions]
        if missing:
            pending.extend(missing)
            continue
        regions[design] = _nested_region(*design, regions, float(alpha), float(rate_a), float(rate_b))
        pending.pop()
    return regions[int(n_a), int(n_b)]


@functools.lru_cache(maxsize=64)
def _regions(alpha: float, rate_a: float, rate_b: float) -> dict[tuple[int, int], np.ndarray]:
    """The regions of :func:`reproduction_region` built so far for one test, by design (n_a, n_b)."""
    return {}


def _region_needs(n_a: int, n_b: int) -> list[tuple[int, int]]:
    """The designs whose regions (n_a, n_b)'s is built from: its start (:func:`_region_inputs`) and its cap."""
    starts, cap = _region_inputs(n_a, n_b)
    return starts + ([cap] if cap else [])


def _region_inputs(n_a: int, n_b: int) -> tuple[list[tuple[int, int]], tuple[int, int] | None]:
    """The designs whose regions (n_a, n_b)'s contains (its predecessors; the diagonal's: (n − 1, n − 1) alone, the
    others it contains through the caps) and the design whose region caps it (None: uncapped): among designs
    with n_a + n_b seeds, its neighbour toward the peak; the odd peak (m, m − 1) is capped by (m, m)."""
    if n_a == 0 or n_b == 0:
        return [], None
    if n_a == n_b:
        return [(n_a - 1, n_b - 1)], None
    peak = (n_a + n_b + 1) // 2  # a's seeds in the peak design
    cap = (n_a, n_a) if n_a == peak else (n_a + 1, n_b - 1) if n_a < peak else (n_a - 1, n_b + 1)
    return [(n_a - 1, n_b), (n_a, n_b - 1)], cap


def _in_design(region: np.ndarray, n_a: int, n_b: int) -> np.ndarray:
    """(n_a + 1, n_b + 1) bool: ``region`` (another design's) in design (n_a, n_b), table for table with as many
    a-seeds without the event and b-seeds with it; tables beyond the other design's seeds are out."""
    other_a, other_b = region.shape[0] - 1, region.shape[1] - 1
    moved = np.zeros((n_a + 1, n_b + 1), dtype=bool)
    rows = np.arange(n_a + 1) - (n_a - other_a)  # the other design's a-events for as many a-seeds without
    inside = rows >= 0
    columns = min(n_b, other_b) + 1
    moved[inside, :columns] = region[rows[inside], :columns]
    return moved


def _nested_region(n_a: int, n_b: int, regions: dict[tuple[int, int], np.ndarray], alpha: float, rate_a: float,
                   rate_b: float) -> np.ndarray:
    """(n_a + 1, n_b + 1) bool, read-only: design (n_a, n_b)'s region of :func:`reproduction_region`, from the
    regions of :func:`_region_inputs` (in ``regions``)."""
    starts, cap_design = _region_inputs(n_a, n_b)
    region = np.zeros((n_a + 1, n_b + 1), dtype=bool)
    if n_a and n_b:  # a method without seeds shows nothing: any table has probability 1 at the null rate 0 or 1
        for design in starts:
            region |= _in_design(regions[design], n_a, n_b)
        cap = np.ones_like(region) if cap_design is None else _in_design(regions[cap_design], n_a, n_b)
        if (region & ~cap).any():  # cannot happen: the cap's design contains the start's (see reproduction_region)
            raise RuntimeError(f"event test region of {n_a} vs {n_b} seeds: its start exceeds its cap")
        alternative = np.exp(_log_pmf(np.arange(n_a + 1), n_a, rate_a)[:, None]
                             + _log_pmf(np.arange(n_b + 1), n_b, rate_b)[None, :])
        region = max((_grow(region, cap, alpha, priority) for priority in _priorities(n_a, n_b, rate_a, rate_b)),
                     key=lambda grown: float(alternative[grown].sum()))
    region.setflags(write=False)
    return region


def _priorities(n_a: int, n_b: int, rate_a: float, rate_b: float) -> list[np.ndarray]:
    """(n_a + 1, n_b + 1) orders in which :func:`_grow` adds tables (larger first): the table's probability
    under the alternative relative to its largest under the null (log), and the pooled score z (ties by the
    former)."""
    x, y = np.meshgrid(np.arange(n_a + 1), np.arange(n_b + 1), indexing="ij")
    common = (x + y) / (n_a + n_b)  # the null rate at which the table is most likely
    evidence = (_log_pmf(x, n_a, rate_a) + _log_pmf(y, n_b, rate_b) - _log_pmf(x, n_a, common)
                - _log_pmf(y, n_b, common))
    z = np.round(score_statistic(x.ravel(), n_a, y.ravel(), n_b, 0.0), 9)  # ties to 1e-9 are one value
    ranks = np.empty(z.size)
    ranks[np.lexsort((evidence.ravel(), z))] = np.arange(z.size)
    return [evidence, ranks.reshape(x.shape)]


def _log_pmf(k: np.ndarray, n: int, rate: float | np.ndarray) -> np.ndarray:
    """Log of the binomial probability of ``k`` events in ``n`` seeds at ``rate``, elementwise (−inf where 0)."""
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + xlogy(k, rate) + xlogy(n - k, 1 - rate)


def _grow(start: np.ndarray, cap: np.ndarray, alpha: float, priority: np.ndarray) -> np.ndarray:
    """(n_a + 1, n_b + 1) bool: ``start`` (Barnard-convex, size ≤ ``alpha``) grown one table at a time, the one of
    largest ``priority`` among those whose addition keeps the region Barnard-convex (a table with more a-events
    or fewer b-events is in it too) first, each added only if it is in ``cap`` and the size, the maximum over the
    null boundary p_a = p_b (grid of :data:`GRID` points), stays ≤ ``alpha``; a table refused closes its column
    (b's events), whose next table would need it."""
    n_a, n_b = start.shape[0] - 1, start.shape[1] - 1
    pmf_a, pmf_b = _null_pmf(n_a), _null_pmf(n_b)
    # the region as a staircase: in column y (b's events) the tables with a's events ≥ first[y]
    first = np.where(start.any(axis=0), start.argmax(axis=0), n_a + 1)
    size = (_null_tail(n_a)[:, first] * pmf_b).sum(axis=1)
    if size.max() > alpha - SIZE_MARGIN:  # cannot happen: a start is one region moved (see reproduction_region)
        raise RuntimeError(f"event test region of {n_a} vs {n_b} seeds: its start exceeds the size {alpha}")
    closed = np.zeros(n_b + 1, dtype=bool)
    while True:
        x = first - 1
        open_ = ~closed & (x >= 0)
        open_[1:] &= first[:-1] <= x[1:]  # (x, y − 1) in the region already
        columns = np.flatnonzero(open_)
        if not columns.size:
            break
        y = columns[np.argmax(priority[x[columns], columns])]
        grown = size + pmf_a[:, x[y]] * pmf_b[:, y]
        if cap[x[y], y] and grown.max() <= alpha - SIZE_MARGIN:
            size, first[y] = grown, x[y]
        else:
            closed[y] = True
    return np.arange(n_a + 1)[:, None] >= first[None, :]
