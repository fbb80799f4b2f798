"""Reward functions as the trainer sees them: guarded, named, NaN read as "no reward"."""

from __future__ import annotations

import math
from collections.abc import Callable

RewardFunction = Callable[..., list]


class RewardFunctionError(RuntimeError):
    """A reward function raised; the message names it, the step and the completion it failed on."""


def _one_item(kwargs: dict, index: int, size: int) -> dict:
    """The keyword arguments of a batch call narrowed to item ``index`` (per-item lists are sliced)."""
    return {key: value[index:index + 1] if isinstance(value, list) and len(value) == size else value
            for key, value in kwargs.items()}


def guard_reward_function(name: str, function: RewardFunction) -> RewardFunction:
    """Wrap a TRL reward function ``(completions, **kwargs) -> list[float | None]``.

    - an exception becomes :class:`RewardFunctionError` naming the function, the training step and the
      first completion it fails on (found by re-running the function one completion at a time);
    - NaN is returned as None, so TRL leaves it out of that reward's statistics (the trainer counts
      it in ``rewards/<name>/frac_none``).
    """

    def guarded(completions, **kwargs):
        try:
            values = function(completions=completions, **kwargs)
        except Exception as error:  # noqa: BLE001 — re-raised with context below
            state = kwargs.get("trainer_state")
            step = getattr(state, "global_step", "?")
            size = len(completions)
            culprit, culprit_error = None, error
            for index in range(size):
                try:
                    function(completions=completions[index:index + 1], **_one_item(kwargs, index, size))
                except Exception as item_error:  # noqa: BLE001
                    culprit, culprit_error = index, item_error
                    break
            where = f"completion {culprit}: {completions[culprit]!r:.500}" if culprit is not None else \
                "the batch (no single completion reproduces it)"
            raise RewardFunctionError(
                f"reward function {name!r} raised {type(culprit_error).__name__}: {culprit_error} at training "
                f"step {step}, on {where}. Fix the reward function so that it returns a float, or None where "
                "the reward does not apply."
            ) from error
        return [None if value is None or (isinstance(value, float) and math.isnan(value)) else value
                for value in values]

    guarded.__name__ = name
    guarded.__qualname__ = name
    return guarded
