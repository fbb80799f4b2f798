"""Uncertainty over seeds for figures and tables: the mean with its 95 % Student-t interval.

With the 2–5 seeds of a training grid a percentile bootstrap cannot reach 95 % coverage (with two seeds
it has at most three distinct resamples), so per-seed means get a t-interval; the bench's 32-seed
summaries keep their bootstrap (:func:`gdpo.sim.summary.bootstrap_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats


def t_quantile_975(dof: int) -> float:
    """The 0.975 quantile of Student's t with ``dof`` ≥ 1 degrees of freedom."""
    if dof < 1:
        raise ValueError(f"A t-interval needs at least 1 degree of freedom (2 seeds), got {dof}.")
    return float(stats.t.ppf(0.975, dof))


def mean_and_half_width(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean of per-seed values (NaN left out) and the half-width of its 95 % t-interval (None for one value)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        raise ValueError("No values to summarise (every seed is NaN or there are no seeds).")
    if values.size == 1:
        return float(values[0]), None
    half_width = t_quantile_975(values.size - 1) * float(values.std(ddof=1)) / math.sqrt(values.size)
    return float(values.mean()), half_width


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """``(mean, low, high)`` of the 95 % t-interval; low and high are NaN for a single seed."""
    mean, half_width = mean_and_half_width(values)
    if half_width is None:
        return mean, math.nan, math.nan
    return mean, mean - half_width, mean + half_width
