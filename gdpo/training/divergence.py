"""Divergence detection (claim C5): where correctness starts a sustained fall while max length climbs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _centred_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean over ``window`` points centred on each step (fewer at the ends)."""
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    centres = np.arange(len(values))
    starts = np.maximum(0, centres - window // 2)
    ends = np.minimum(len(values), centres + (window - window // 2))
    return (cumulative[ends] - cumulative[starts]) / (ends - starts)


def detect_divergence(
    steps: Sequence[int],
    correctness: Sequence[float],
    max_length: Sequence[float],
    window: int | None = None,
    relative_drop: float = 0.1,
    min_drop: float = 0.02,
    min_duration: int | None = None,
    length_rise: float = 0.2,
) -> int | None:
    """The step at which a run diverges, or None.

    Rule (both curves first smoothed by a centred mean over ``window`` steps, default ``max(3, n // 25)``):

    1. *Sustained fall*: there is a step u from which the smoothed correctness stays, until the end of the
       run, below ``peak − max(relative_drop · |peak|, min_drop)``, where ``peak`` is the highest smoothed
       correctness at or before u; the low stretch lasts at least ``min_duration`` steps
       (default ``max(3, n // 10)``). A dip that recovers above that line before the end is not a fall.
    2. *Max length climbs*: over that stretch the mean smoothed max response length is at least
       ``(1 + length_rise)`` times its value at the peak.

    For the earliest u satisfying both, the divergence step is the last step before u at which the smoothed
    correctness was still on or above that line (where the fall starts). Curves must have equal length;
    NaN points are dropped.

    Args:
        steps: (T,) training steps.
        correctness: (T,) mean correctness reward per step.
        max_length: (T,) maximum completion length per step (tokens).

    Returns:
        The divergence step, or None if the run does not diverge by this rule.
    """
    steps_array = np.asarray(steps)
    correct = np.asarray(correctness, dtype=float)
    length = np.asarray(max_length, dtype=float)
    if not len(steps_array) == len(correct) == len(length):
        raise ValueError(
            f"steps, correctness and max_length must have the same length, got {len(steps_array)}, "
            f"{len(correct)}, {len(length)}."
        )
    keep = ~(np.isnan(correct) | np.isnan(length))
    steps_array, correct, length = steps_array[keep], correct[keep], length[keep]
    n = len(correct)
    window = window or max(3, n // 25)
    min_duration = min_duration or max(3, n // 10)
    if n < min_duration + 2:
        return None
    correct = _centred_mean(correct, window)
    length = _centred_mean(length, window)

    running_peak_index = np.array([int(np.argmax(correct[: u + 1])) for u in range(n)])
    tail_max = np.maximum.accumulate(correct[::-1])[::-1]  # max of correct[u:]
    tail_length_mean = np.cumsum(length[::-1])[::-1] / np.arange(n, 0, -1)  # mean of length[u:]
    for u in range(1, n - min_duration + 1):
        peak_index = running_peak_index[u]
        peak = correct[peak_index]
        threshold = peak - max(relative_drop * abs(peak), min_drop)
        if tail_max[u] < threshold and tail_length_mean[u] >= (1 + length_rise) * length[peak_index]:
            last_above = peak_index + int(np.nonzero(correct[peak_index:u] >= threshold)[0].max())
            return int(steps_array[last_above])
    return None
