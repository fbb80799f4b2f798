"""The 95 % t-interval over seeds used by figures and tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gdpo.reporting.stats import mean_and_half_width, mean_ci, t_quantile_975


@pytest.mark.parametrize(("dof", "quantile"), [
    (1, 12.706),  # two seeds
    (2, 4.303),  # three seeds
    (30, 2.042),
    (10_000, 1.960),  # tends to the normal quantile
])
def test_t_quantiles_match_published_tables(dof, quantile):
    assert t_quantile_975(dof) == pytest.approx(quantile, abs=1e-3)


def test_t_interval_by_hand():
    # n = 3, values 10, 20, 30: s = 10, half-width = t(0.975, 2) · 10 / √3 = 4.302653 · 5.773503.
    mean, half = mean_and_half_width([10.0, 20.0, 30.0])
    assert mean == 20.0 and half == pytest.approx(24.841384, abs=1e-5)
    # n = 2, values 1, 3: s = √2, half-width = 12.706205 · √2 / √2.
    assert mean_and_half_width([1.0, 3.0]) == pytest.approx((2.0, 12.706205))
    # A single seed has no interval; NaN seeds are left out.
    assert mean_and_half_width([7.5, np.nan]) == (7.5, None)
    mean, low, high = mean_ci([1.0, 2.0, 3.0])  # sd 1, n 3: half width 4.303 / √3
    assert mean == 2.0 and high - mean == pytest.approx(4.302653 / math.sqrt(3)) and mean - low == high - mean
    assert math.isnan(mean_ci([5.0])[1])


@pytest.mark.parametrize(("values", "message"), [
    ([], "No values"),  # no seeds at all
    ([np.nan], "No values"),  # every seed NaN
])
def test_nothing_to_summarise_is_an_error(values, message):
    with pytest.raises(ValueError, match=message):
        mean_and_half_width(values)


def test_zero_degrees_of_freedom_is_refused():
    with pytest.raises(ValueError, match="at least 1 degree"):
        t_quantile_975(0)
