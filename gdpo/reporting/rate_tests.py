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
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats
from scipy.special import xlogy

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


def fisher_statistic(x: np.ndarray, n_a: int, y: np.ndarray, n_b: int) -> np.ndarray:
    """−log of Fisher's one-sided p-value of a's rate above b's (hypergeometric, margins fixed), elementwise: the
    ordering of Boschloo's test (larger is more extreme)."""
    x, y = np.asarray(x), np.asarray(y)
    return -np.log(np.maximum(stats.hypergeom.sf(x - 1, n_a + n_b, x + y, n_a), 1e-300))


def _p_values(n_a: int, n_b: int, d0: float, upper: bool, ordering: str = "score") -> np.ndarray:
    """(n_a + 1, n_b + 1) exact p-values of every table: sup over the boundary p_a − p_b = d₀ (on the grid) of
    P(z ≥ z_obs) (``upper``) or P(z ≤ z_obs)."""
    x, y = np.meshgrid(np.arange(n_a + 1), np.arange(n_b + 1), indexing="ij")
    if ordering == "fisher":
        z = fisher_statistic(x.ravel(), n_a, y.ravel(), n_b)
    else:  # "score", or "score@d": the score statistic against d, sized at the null boundary d₀
        against = float(ordering.partition("@")[2] or d0)
        z = score_statistic(x.ravel(), n_a, y.ravel(), n_b, against)
        z = z if upper else -z
    z = np.round(z, 9)  # larger is more extreme; ties to 1e-9 are one value
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
def _cached_p_values(n_a: int, n_b: int, d0: float, upper: bool, ordering: str = "score") -> np.ndarray:
    values = _p_values(n_a, n_b, d0, upper, ordering)
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


def _null_table_probabilities(n_a: int, n_b: int, d0: float) -> np.ndarray:
    """(GRID, n_a + 1, n_b + 1) each table's probability at every grid point of the boundary p_a − p_b = d₀."""
    pb_grid = np.linspace(0.0, 1.0 - d0, GRID) if d0 >= 0 else np.linspace(-d0, 1.0, GRID)
    pa_grid = np.clip(pb_grid + d0, 0.0, 1.0)
    prob_a = stats.binom.pmf(np.arange(n_a + 1)[None, :], n_a, pa_grid[:, None])
    prob_b = stats.binom.pmf(np.arange(n_b + 1)[None, :], n_b, pb_grid[:, None])
    return prob_a[:, :, None] * prob_b[:, None, :]


@functools.lru_cache(maxsize=1024)
def reproduction_region(n_a: int, n_b: int, alpha: float, rate_a: float, rate_b: float) -> np.ndarray:
    starts = ("score", "fisher", "empty", *(f"score@{f * (rate_a - rate_b):.6f}" for f in (0.25, 0.5, 0.75, 1.0)))
    best = max((_grown_region(n_a, n_b, alpha, rate_a, rate_b, start) for start in starts),
               key=lambda region: float((table_probabilities(n_a, n_b, rate_a, rate_b) * region).sum()))
    best.setflags(write=False)
    return best


def _grown_region(n_a: int, n_b: int, alpha: float, rate_a: float, rate_b: float, start: str) -> np.ndarray:
    """(n_a + 1, n_b + 1) bool, read-only: the tables that show a's rate above b's at one-sided ``alpha``.

    The exact score test's region (:func:`above_region`), grown while its exact size allows: tables are added
    one at a time, most likely under the stated alternative (``rate_a`` vs ``rate_b``) relative to their worst
    probability under the null first, each only if the region stays Barnard-convex (a table with more a-events
    or fewer b-events is in it too) and its size, the maximum over the null boundary p_a = p_b (grid of
    :data:`GRID` points), stays ≤ ``alpha``. A region of an exact test cannot reach its nominal size (the
    tables are discrete), and how far below it falls jumps with the seed count; growing it to the size shrinks
    those jumps, so that power no longer falls as seeds are added (``tests/test_rate_tests.py`` checks it at
    3–40 seeds per method for both event claims). The region depends on the seeds and the alternative only,
    never on the data, so the test stays exact."""
    if start == "empty":
        region = np.zeros((n_a + 1, n_b + 1), dtype=bool)
    else:
        region = _cached_p_values(n_a, n_b, 0.0, True, start) <= alpha - SIZE_MARGIN
    null = _null_table_probabilities(n_a, n_b, 0.0)
    size = (null * region).sum(axis=(1, 2))
    worst = null.max(axis=0)
    alternative = table_probabilities(n_a, n_b, rate_a, rate_b)
    priority = alternative / np.maximum(worst, 1e-300)
    refused = np.zeros_like(region)
    while True:
        inside_up = np.ones_like(region)
        inside_up[:-1, :] = region[1:, :]  # (x + 1, y) in the region, or x at its maximum
        inside_left = np.ones_like(region)
        inside_left[:, 1:] = region[:, :-1]  # (x, y − 1) in the region, or y at 0
        candidates = ~region & ~refused & inside_up & inside_left
        if not candidates.any():
            break
        x, y = np.unravel_index(np.argmax(np.where(candidates, priority, -1.0)), region.shape)
        grown = size + null[:, x, y]
        if grown.max() <= alpha - SIZE_MARGIN:
            region[x, y], size = True, grown
        else:
            refused[x, y] = True
    return region
