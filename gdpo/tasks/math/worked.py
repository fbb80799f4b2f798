"""Worked reference solutions of sum problems, for the math family's optional warm-up.

The paper's math runs start from reasoning models (DeepSeek-R1 distills) that already write their steps out.
SmolLM2-135M-Instruct does not: on sums of four one-digit terms it answers with a short guess, right 1–3 % of
the time (benchmarks/README.md, "Math headroom"). A warm-up on a few worked solutions gives it the habit of
writing the running total after each term, the step-by-step form whose length a length limit can then bind.
Only sums and differences of integers evaluated left to right are worked (reasoning-gym's ``chain_sum`` and
``basic_arithmetic`` at the family's settings); other problems have no reference and are left out.
"""

from __future__ import annotations

import re

#: An expression of integers joined by + and -, as reasoning-gym writes chain sums ("3 - 8 + 7 =") and two-term
#: arithmetic ("Calculate 7 - 9.").
_EXPRESSION = re.compile(r"(-?\d+(?:\s*[+-]\s*\d+)+)\s*(?:=|\.|\?|$)")
_TERM = re.compile(r"([+-])\s*(\d+)")


def running_totals(expression: str) -> list[tuple[int, str, int, int]] | None:
    """The left-to-right steps of ``expression`` ("3 - 8 + 7"): (total before, operator, term, total after)
    per term after the first, or None when it is not integers joined by + and -."""
    text = expression.strip()
    first = re.match(r"-?\d+", text)
    if first is None:
        return None
    total, rest = int(first.group()), text[first.end():]
    steps = []
    for match in _TERM.finditer(rest):
        operator, term = match.group(1), int(match.group(2))
        after = total + term if operator == "+" else total - term
        steps.append((total, operator, term, after))
        total = after
    if not steps or _TERM.sub("", rest).strip():
        return None
    return steps


def worked_solution(problem: str, answer: str) -> str | None:
    """The running totals of ``problem``'s sum, one line each, then the boxed answer; None when the problem holds
    no such sum or its total is not ``answer`` (a problem this module does not understand gets no reference)."""
    match = _EXPRESSION.search(problem)
    if match is None:
        return None
    steps = running_totals(match.group(1))
    if steps is None or str(steps[-1][3]) != str(answer).strip():
        return None
    lines = [f"{before} {operator} {term} = {after}" for before, operator, term, after in steps]
    return "\n".join(lines) + f"\nThe final answer is \\boxed{{{steps[-1][3]}}}."


def reference_completion(row: dict) -> str | None:
    """A worked solution of one ``build_dataset`` row (warm-up data), or None where the problem is no sum."""
    return worked_solution(row["problem"], row["answer"])
