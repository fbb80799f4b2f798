"""The checks of plain config values that every part of planning shares: a whole number at least some
minimum, a finite number (neither a bool)."""

from __future__ import annotations

import math
from typing import Any


def whole_number(value: Any, minimum: int) -> bool:
    """``value`` is an integer (not a bool) ≥ ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def finite_number(value: Any) -> bool:
    """``value`` is a finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
