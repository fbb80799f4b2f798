"""The continuous C5 measures declared in the cpu-evidence pre-registration (gdpo.curve_events)."""

import math

import numpy as np
import pytest

from gdpo.curve_events import divergence_measures


def test_an_improving_run_has_no_fall_and_a_diverging_run_shows_both_measures():
    steps = np.arange(500)
    improving = 0.2 + 0.4 * steps / 499
    flat_length = np.full(500, 100.0)
    measures = divergence_measures(improving, flat_length)
    # still improving at the end: a negative fall (the final window lies above the earlier peak)
    assert -0.1 < measures["correctness_fall"] < 0
    assert measures["length_growth"] == pytest.approx(0.0, abs=1e-9)
    # correctness 0.6 until step 400, then down to 0.3 while the longest response doubles
    diverging = np.where(steps < 400, 0.6, 0.3)
    spiking = np.where(steps < 400, 100.0, 200.0)
    measures = divergence_measures(diverging, spiking)
    assert measures["correctness_fall"] == pytest.approx(0.5)
    assert measures["length_growth"] == pytest.approx(math.log(2))
    assert 380 <= measures["peak_step_index"] < 400


def test_measures_refuse_short_or_mismatched_curves_and_report_no_peak_as_nan():
    with pytest.raises(ValueError, match="too short"):
        divergence_measures([0.1] * 5, [10.0] * 5)
    with pytest.raises(ValueError, match="same length"):
        divergence_measures([0.1] * 50, [10.0] * 49)
    assert math.isnan(divergence_measures([0.0] * 50, [10.0] * 50)["correctness_fall"])
