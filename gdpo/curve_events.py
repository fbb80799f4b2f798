"""Events of a training curve: its final window, divergence (C5) and failure to converge (C10).

One definition for every scale: the policy-gradient bench (:mod:`gdpo.sim.study`), the trainer's run summary
(:mod:`gdpo.training.run`) and the claims ledger (:mod:`gdpo.reporting.verdicts`) all import from here, so none of
them imports another for a curve's events. numpy only: no torch, no pandas, no matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Share of a run's last steps in its final window.
FINAL_FRACTION = 0.1
#: Steps averaged into a run's starting level (:func:`fails_to_converge`).
START_STEPS = 3


def final_window(num_steps: int, minimum: int = 1) -> int:
    """Number of last steps averaged into a run's final value: :data:`FINAL_FRACTION` of its ``num_steps``,
    at least ``minimum`` (1 for the bench's final success; 3 where a window's spread is used)."""
    return max(minimum, math.ceil(FINAL_FRACTION * num_steps))


def _centred_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean over ``window`` points centred on each step (fewer at the ends)."""
    cumulative = np.concatenate([[0.0], np.cumsum(values)])
    centres = np.arange(len(values))
    starts = np.maximum(0, centres - window // 2)
    ends = np.minimum(len(values), centres + (window - window // 2))
    return (cumulative[ends] - cumulative[starts]) / (ends - starts)


#: How much the smoothed max length must rise over its value at the correctness peak for a divergence (× 1.2).
LENGTH_RISE = 0.2


def default_window(steps: int) -> int:
    """Steps of the centred mean both curves are smoothed with: ``max(3, steps // 25)``."""
    return max(3, steps // 25)


def detect_divergence(
    steps: Sequence[int],
    correctness: Sequence[float],
    max_length: Sequence[float],
    window: int | None = None,
    relative_drop: float = 0.1,
    min_drop: float = 0.02,
    min_duration: int | None = None,
    length_rise: float = LENGTH_RISE,
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
    window = window or default_window(n)
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


def divergence_measures(correctness: Sequence[float], max_length: Sequence[float],
                        window: int | None = None) -> dict[str, float]:
    """Continuous per-run measures of C5's divergence, defined before the cpu-evidence experiment's data:

    - ``correctness_fall``: (peak − final) / peak, where final is the mean raw correctness over the last
      :data:`FINAL_FRACTION` of the steps (at least 3, :func:`final_window`) and peak the highest smoothed
      correctness (centred mean over ``window`` steps, default ``max(3, n // 25)``, as
      :func:`detect_divergence`) before that final window. Positive when the run fell from its peak, negative when it was still improving at the end; NaN
      when the peak is not positive (nothing to fall from).
    - ``length_growth``: log of the mean raw max length over that final window divided by the smoothed max
      length at the peak step: 0 when the longest responses end as long as at the peak, log 2 when they doubled.
    - ``peak_max_length``: that smoothed max length at the peak step (tokens): above cap / (1 + LENGTH_RISE)
      the run's longest responses cannot rise enough for a divergence.

    Args:
        correctness: (T,) mean correctness reward per step.
        max_length: (T,) maximum completion length per step (tokens).
    """
    correct = np.asarray(correctness, dtype=float)
    length = np.asarray(max_length, dtype=float)
    if len(correct) != len(length):
        raise ValueError(f"correctness and max_length must have the same length, got {len(correct)} and {len(length)}.")
    keep = ~(np.isnan(correct) | np.isnan(length))
    correct, length = correct[keep], length[keep]
    final = final_window(len(correct), minimum=3)
    if len(correct) < 2 * final:
        raise ValueError(f"a curve of {len(correct)} steps is too short for the divergence measures (need {2 * final}).")
    window = window or default_window(len(correct))
    smoothed_correct, smoothed_length = _centred_mean(correct, window), _centred_mean(length, window)
    before_final = smoothed_correct[:-final]
    # the last step at the peak (a tolerance, since the running sums round a plateau unevenly)
    peak_index = int(np.nonzero(before_final >= before_final.max() - 1e-9)[0].max())
    peak = smoothed_correct[peak_index]
    fall = (peak - correct[-final:].mean()) / peak if peak > 0 else float("nan")
    growth = float(np.log(length[-final:].mean() / smoothed_length[peak_index]))
    return {"correctness_fall": float(fall), "length_growth": growth, "peak_step_index": peak_index,
            "peak_max_length": float(smoothed_length[peak_index])}


def fails_to_converge(curve: Sequence[float]) -> bool:
    """A run fails to converge when the mean of its correctness-type reward over its final window (the last
    10 % of its steps, at least 3) is not above its starting level (the mean of its first :data:`START_STEPS`
    steps, before learning has moved it) by more than two standard errors of that difference (each window's
    step-to-step spread): "it did not learn", not "it learned slowly" nor "it learned fast". A run that starts
    at its ceiling has nothing to converge to and counts as not converging; methods compared start from the
    same model, so both alike. NaN points are dropped.

    Raises:
        ValueError: the curve is shorter than the two windows.
    """
    values = np.asarray(curve, dtype=float)
    values = values[~np.isnan(values)]
    window = final_window(len(values), minimum=3)
    if len(values) < START_STEPS + window:
        raise ValueError(f"a curve of {len(values)} steps is too short to judge convergence "
                         f"(need {START_STEPS + window})")
    first, last = values[:START_STEPS], values[-window:]
    error = math.sqrt(first.var(ddof=1) / len(first) + last.var(ddof=1) / len(last))
    return not last.mean() - first.mean() > 2 * max(error, 1e-9)
