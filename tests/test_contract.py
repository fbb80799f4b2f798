"""The verdict contract's statistics: intervals never collapse, rates get score intervals, criteria decide."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from gdpo.reporting import contract
from gdpo.reporting.contract import (
    CLAIMS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Criterion, Interval, Minimum, binomial_variance,
    paired_interval, paper_effect, rate_difference_interval, rate_interval,
)


def test_t_interval_over_seeds_matches_scipy():
    differences = np.array([1.0, 3.0, 2.5, 4.0])
    interval = paired_interval(differences, np.full(4, 9.0))
    low, high = stats.ttest_1samp(differences, 0).confidence_interval(0.95)
    assert (interval.low, interval.high) == pytest.approx((low, high))
    assert interval.source == "t over 4 seeds"


@pytest.mark.parametrize("differences", [[4.2, 4.2], [4.2, 4.2, 4.2, 4.2, 4.2], [0.0, 0.0, 0.0], [4.2]])
def test_tied_seeds_or_one_seed_take_their_width_from_the_items(differences):
    # The reviewer's case: GDPO one item better out of 24 on both seeds used to give +4.2 [+4.2, +4.2].
    k = len(differences)
    item_variance = binomial_variance(30.0, 24) + binomial_variance(25.8, 24)
    interval = paired_interval(differences, np.full(k, item_variance))
    assert interval.high - interval.low == pytest.approx(2 * 1.959964 * math.sqrt(item_variance), rel=1e-5)
    assert interval.low < 0 < interval.high  # one item in 24 decides nothing
    assert "evaluated items" in interval.source


def test_binomial_variance_is_positive_at_zero_and_hundred_percent():
    assert binomial_variance(0.0, 32) > 0 and binomial_variance(100.0, 32) > 0
    # Away from the edges it is close to p(1 - p)/n (in points²) and shrinks with the items.
    assert binomial_variance(50.0, 10_000) == pytest.approx(2500 / 10_000, rel=1e-3)
    assert binomial_variance(50.0, 100) > binomial_variance(50.0, 1000)


def test_a_shared_base_value_adds_its_variance_to_the_mean():
    plain = paired_interval([1.0, 2.0, 3.0], [1.0] * 3)
    shared = paired_interval([1.0, 2.0, 3.0], [1.0] * 3, common_variance=4.0)
    assert shared.high - shared.low > plain.high - plain.low


def test_zero_width_is_refused():
    with pytest.raises(AssertionError, match="positive width"):
        Interval(1.0, 1.0, 1.0, "x")


def test_rates_get_wilson_and_their_differences_newcombe():
    # 0/32 does not exclude a 10 % rate (the review's sim case), and 0/32 vs 0/32 is not a point.
    none = rate_interval(0, 32)
    assert none.low == 0.0 and none.high > 0.10
    difference = rate_difference_interval(0, 32, 0, 32)
    assert difference.low < 0 < difference.high
    # Newcombe's hybrid score interval, his example (56/70 vs 48/80): (0.0524, 0.3339).
    assert (rate_difference_interval(56, 70, 48, 80).low, rate_difference_interval(56, 70, 48, 80).high) == \
        pytest.approx((0.0524, 0.3339), abs=1e-4)


@pytest.mark.parametrize(("kind", "interval", "expected"), [
    # "better" with the paper's effect 3: above 0 reproduces, below 3 refutes, else inconclusive.
    (Criterion("better", +1, 3.0), (0.5, 4.0), REPRODUCED),
    (Criterion("better", +1, 3.0), (-1.0, 2.0), NOT_REPRODUCED),
    (Criterion("better", +1, 3.0), (-1.0, 4.0), INCONCLUSIVE),
    (Criterion("better", -1, 1.0), (-3.0, -0.5), REPRODUCED),     # lower is the paper's direction
    (Criterion("better", -1, 1.0), (-0.8, 0.5), NOT_REPRODUCED),   # cannot be 1 point lower
    (Criterion("kept", +1, margin=2.0), (-1.5, 3.0), REPRODUCED),
    (Criterion("kept", +1, margin=2.0), (-5.0, -2.5), NOT_REPRODUCED),
    (Criterion("kept", +1, margin=2.0), (-3.0, 1.0), INCONCLUSIVE),
    (Criterion("same", margin=2.0), (-1.0, 1.5), REPRODUCED),
    (Criterion("same", margin=2.0), (2.5, 4.0), NOT_REPRODUCED),
    (Criterion("same", margin=2.0), (-1.0, 3.0), INCONCLUSIVE),
    (Criterion("changed", margin=5.0), (6.0, 9.0), REPRODUCED),
    (Criterion("changed", margin=5.0), (-4.0, 4.0), NOT_REPRODUCED),
    (Criterion("changed", margin=5.0), (-4.0, 7.0), INCONCLUSIVE),
])
def test_criteria(kind, interval, expected):
    low, high = interval
    assert kind.decide(Interval((low + high) / 2, low, high, "x")) == expected


def test_an_interval_that_could_not_be_formed_decides_nothing():
    interval = paired_interval([2.0, 2.0], [math.nan, math.nan])  # ties and no item counts
    assert math.isnan(interval.low)
    for criterion in (Criterion("better", 1, 1.0), Criterion("same", margin=2), Criterion("changed", margin=2),
                      Criterion("kept", margin=2)):
        assert criterion.decide(interval) == INCONCLUSIVE


def test_paper_effects_come_from_the_paper_tables():
    assert paper_effect("C3", "Qwen2.5-1.5B", "avg") == pytest.approx(32.81 - 30.18)
    assert paper_effect("C3", "Qwen2.5-3B", "format") == pytest.approx(82.23 - 81.64)
    assert paper_effect("C4", "Qwen2.5-1.5B", "avg", ("grpo_nostd", "grpo")) == pytest.approx(29.26 - 30.18)
    # Table 5, 2 objectives: the exceed difference the old rule refuted the paper with (+0.07 points).
    assert paper_effect("C9", "2obj", "exceed") == pytest.approx((-0.2 + 0.1 + 0.3) / 3)
    assert paper_effect("C8", "", "acc") == pytest.approx((0.7 + 4.4 + 3.0 + 0.2 + 1.7) / 5)
    with pytest.raises(KeyError):
        paper_effect("C3", "SmolLM2", "avg")


def test_every_language_model_claim_states_metric_effect_and_minimum():
    for claim in CLAIMS:
        assert claim.metrics and claim.paper_effect, claim.claim_id
        if claim.family not in ("exact", "all"):
            assert claim.minimum is not None and claim.minimum.seeds >= 3, claim.claim_id


def test_minimum_says_what_is_missing():
    minimum = Minimum(seeds=3, items=100, steps=400)
    assert minimum.shortfall(2, 24, 8) == ["≥ 3 seeds per method (have 2)", "≥ 100 evaluated items per run (have 24)",
                                            "≥ 400 training steps (have 8)"]
    assert minimum.shortfall(3, 100, 400) == []
    # What the evidence does not record is not assumed to be there.
    assert minimum.shortfall(3, None, 400) == ["≥ 100 evaluated items per run (not recorded)"]
    assert Minimum(seeds=3).shortfall(3, None, None) == []


def test_verdict_values_are_checked():
    with pytest.raises(ValueError, match="verdict must be one of"):
        contract.Verdict("", "", "kinda", "")
