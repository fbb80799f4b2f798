"""The collapse gate: is an evaluated policy still doing the task at all?

A policy can improve a benchmark's average while doing nothing: a tool-calling policy that stops calling
tools scores 100 % on BFCL's irrelevance categories, a math policy that stops answering wins every length
reward. Each family's evaluator reports, in eval.json's ``health`` block, the share of held-out items on
which the policy still does the task's basic act (percent) and the share of responses cut at the token
limit. A run is **collapsed** when

- the act happens on fewer than :data:`MIN_ACTIVITY_PERCENT` % of the items that need it (the family's
  :data:`ACTIVITY` indicator), or
- at least :data:`MAX_TRUNCATED_PERCENT` % of its responses are cut at the token limit.

Collapse is an outcome of the method: the tables mark a collapsed run's cells, and the ledger counts the run
with its measured scores and in its method's collapse rate; a comparison is ``not tested`` only where most runs
of every compared method collapsed (:mod:`gdpo.reporting.verdicts.validity`).

A run is **not judged** when the gate lacks the numbers to say (:func:`not_judged_reason`): no ``health``
block (an eval.json written before the gate existed), or one without the family's activity indicator or the
truncated share. Not judged is never read as healthy: the ledger names such runs beside the collapse rates.
"""

from __future__ import annotations

import math

#: Family → (health indicator, the degenerate behaviour when it is (near) zero).
ACTIVITY = {
    "tool_calling": ("calls", "tool calls on the held-out items that need one"),
    "math": ("answers", "responses with a final answer"),
    "code": ("programs", "responses with a program that parses"),
    "arithmetic": ("answers", "responses with an <answer> block"),
}
#: Below this share (percent) of items the act counts as absent: 0 of 24, or 1 of 24 (4.2 %), but not 2.
MIN_ACTIVITY_PERCENT = 5.0
#: At or above this share (percent) of truncated responses, the policy no longer ends its answers.
MAX_TRUNCATED_PERCENT = 95.0
TRUNCATED = "truncated"


def collapse_reasons(family: str, health: dict | None) -> list[str]:
    """Why a run with this eval.json ``health`` block is collapsed; empty when it is not.

    Args:
        family: the task family (:data:`ACTIVITY` key).
        health: ``{<activity indicator>: percent, "truncated": percent, ...}``; a missing indicator is
            not judged (older eval.json files, families without one).
    """
    health = health or {}
    reasons = []
    if family in ACTIVITY:
        indicator, what = ACTIVITY[family]
        value = health.get(indicator)
        if isinstance(value, (int, float)) and not math.isnan(value) and value < MIN_ACTIVITY_PERCENT:
            reasons.append(f"{what}: {value:.1f} % (below {MIN_ACTIVITY_PERCENT:g} %)")
    truncated = health.get(TRUNCATED)
    if isinstance(truncated, (int, float)) and not math.isnan(truncated) and truncated >= MAX_TRUNCATED_PERCENT:
        reasons.append(f"responses cut at the token limit: {truncated:.1f} % (at least {MAX_TRUNCATED_PERCENT:g} %)")
    return reasons


#: Why a run whose eval.json has no ``health`` block is not judged.
NO_HEALTH_BLOCK = ("no health block in eval.json: evaluated before the collapse gate existed; "
                   "re-run its evaluation")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def not_judged_reason(family: str, health: dict | None) -> str | None:
    """Why the gate cannot judge a run with this eval.json ``health`` block; None when it can.

    It can when the block holds a number for the family's activity indicator (:data:`ACTIVITY`) and for
    ``truncated``. A run that :func:`collapse_reasons` already finds collapsed is collapsed whatever else is
    missing.
    """
    if not isinstance(health, dict) or not health:
        return NO_HEALTH_BLOCK
    if family not in ACTIVITY:
        return (f"eval.json's family {family!r} has no activity indicator for the collapse gate "
                f"(known: {', '.join(ACTIVITY)})")
    missing = [name for name in (ACTIVITY[family][0], TRUNCATED) if not _number(health.get(name))]
    if missing:
        return (f"eval.json's health block has no number for {' or '.join(repr(m) for m in missing)} "
                "(no evaluated item to count it on, or an older evaluator); re-run its evaluation")
    return None


def health_record(family: str, indicators: dict[str, float]) -> dict:
    """eval.json's ``health`` block: the indicators (percent) and ``collapsed``, the list of reasons."""
    return {**indicators, "collapsed": collapse_reasons(family, indicators)}
