"""The advantage methods the paper compares: their names, and how every figure shows them.

:class:`Method` names the built-in estimators (:mod:`gdpo.advantages` registers each under its member) and gives
each its figure label (the paper's name) and colour, in the paper's order. It imports nothing, so the reporting
layer's figures and the bench's both read it without importing torch or each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Method(StrEnum):
    """A built-in advantage method; its value is the registry's name (``Method.GDPO == "gdpo"``)."""

    GRPO = "grpo", "GRPO", "#1f77b4"
    GRPO_NOSTD = "grpo_nostd", "GRPO w/o std", "#7f7f7f"
    GDPO = "gdpo", "GDPO", "#d62728"
    GDPO_NOBN = "gdpo_nobn", "GDPO w/o batch norm", "#ff7f0e"
    GDPO_NOSTD = "gdpo_nostd", "GDPO w/o std", "#9467bd"

    label: str
    color: str

    def __new__(cls, name: str, label: str, color: str) -> Method:
        member = str.__new__(cls, name)
        member._value_ = name
        member.label = label
        member.color = color
        return member


def builtin(method: str) -> Method | None:
    """The :class:`Method` named ``method``, or None for a method registered elsewhere."""
    try:
        return Method(method)
    except ValueError:
        return None


def method_label(method: str) -> str:
    """A method's figure label; a method registered elsewhere shows its name."""
    member = builtin(method)
    return member.label if member else str(method)


def method_color(method: str) -> str | None:
    """A method's figure colour, or None for a method registered elsewhere (the figure picks one)."""
    member = builtin(method)
    return member.color if member else None


def paper_order(methods: Iterable[str]) -> list[str]:
    """``methods`` with the paper's in the paper's order first, then any other alphabetically."""
    present = set(methods)
    return [m.value for m in Method if m.value in present] + sorted(present - {m.value for m in Method})
