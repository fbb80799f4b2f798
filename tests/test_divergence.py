"""Divergence detection (C5) on synthetic curves."""

from __future__ import annotations

import numpy as np
import pytest

from gdpo.curve_events import detect_divergence

STEPS = np.arange(500)
FLAT_LENGTH = np.full(500, 3000.0)


def test_a_run_that_diverges_is_found_near_its_peak():
    # Correctness climbs to step 400, then collapses while the max length climbs from 3k to 8k tokens.
    correctness = np.where(STEPS < 400, 0.3 + 0.3 * STEPS / 400, 0.6 - 0.5 * (STEPS - 400) / 100)
    length = np.where(STEPS < 400, 3000.0, 3000.0 + 5000.0 * (STEPS - 400) / 100)
    step = detect_divergence(STEPS, correctness, length)
    assert step is not None and 395 <= step <= 415


def test_a_dip_that_recovers_is_not_a_divergence():
    correctness = np.where((STEPS > 200) & (STEPS < 260), 0.3, 0.5)
    length = np.where((STEPS > 200) & (STEPS < 260), 6000.0, 3000.0)
    assert detect_divergence(STEPS, correctness, length) is None


def test_a_flat_run_does_not_diverge():
    assert detect_divergence(STEPS, np.full(500, 0.5), FLAT_LENGTH) is None


def test_a_fall_without_length_growth_is_not_the_c5_pattern():
    correctness = np.where(STEPS < 400, 0.6, 0.2)
    assert detect_divergence(STEPS, correctness, FLAT_LENGTH) is None


def test_noisy_divergence_is_still_found():
    rng = np.random.default_rng(0)
    correctness = np.where(STEPS < 300, 0.5, 0.5 - 0.4 * (STEPS - 300) / 200) + rng.normal(0, 0.03, 500)
    length = np.where(STEPS < 300, 3000.0, 3000.0 + 20.0 * (STEPS - 300)) + rng.normal(0, 100, 500)
    step = detect_divergence(STEPS, correctness, length)
    assert step is not None and 250 <= step <= 340


def test_nan_points_are_dropped_and_lengths_must_match():
    correctness = np.full(500, 0.5)
    correctness[10] = np.nan
    assert detect_divergence(STEPS, correctness, FLAT_LENGTH) is None
    with pytest.raises(ValueError, match="same length"):
        detect_divergence(STEPS, correctness[:-1], FLAT_LENGTH)


def test_too_short_runs_return_none():
    assert detect_divergence([0, 1, 2], [0.5, 0.1, 0.0], [1, 10, 100]) is None
