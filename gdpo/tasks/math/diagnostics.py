"""What the math policy actually does, per completion: is there an answer to grade at all?

``answer_present`` is 1 when the completion states a final answer in a final-answer form
(:func:`has_final_answer`):

- a non-empty ``\\boxed{…}`` (the last one), the form the prompt asks for ("output the final answer within
  \\boxed{}", :data:`gdpo.tasks.math.data.INSTRUCTION`) and the reward reads first;
- an answer statement — "the answer is 12", "Final answer: 12", "**Answer:** $\\frac{1}{2}$", "the result
  is 12", "the final answer, which is 8" — with the expression right after it (starting with a digit, a
  sign, ``$``, ``(`` or a LaTeX command) and read by math-verify: the unboxed form the reward's docstring
  keeps paying ("a small model that writes 'the answer is 12' still scores");
- or a closing equation: the response's last line ends with ``= <expression>`` without words ("7 + 3 = 10",
  not "= 5, but then I got lost"), which is what the reward's last-expression fallback grades in a terse
  answer.

A number somewhere in prose ("There are 3 apples", "I have 3 ideas but I am not sure"), or reasoning cut
before its conclusion, is no final answer, although the reward's last-expression fallback would grade it.
So a policy that learns to stop answering (e.g. to win the length reward) shows here, and in the
evaluation's ``answers`` (the collapse gate's indicator, :mod:`gdpo.generation.health`), before accuracy
says why. Length and truncation are TRL's own ``completions/*`` metrics.
"""

from __future__ import annotations

import re

from gdpo.tasks.math.rewards import completion_text, last_boxed, parse_final_answer

INDICATORS = ("answer_present",)

#: "answer is", "answer:", "result =", "answer, which is" (any case, markdown emphasis allowed), then the
#: answer.
_ANSWER_STATEMENT = re.compile(r"\b(?:answer|result)\b[*_\s]*(?:,\s*which\s+)?(?:is\b|:|=)[*_\s:]*",
                               re.IGNORECASE)
#: A last line ending with an equation's right-hand side: "7 + 3 = 10", "So 2 * 3 = 6."
_CLOSING_EQUATION = re.compile(r"=\s*([^=\n]+?)[\s.!]*$")
#: A word (two letters or more, not a LaTeX command): a right-hand side holding one is prose, not a result.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
#: What an answer right after the statement starts with: a sign, a digit, ``$``, ``\(``/``\[``, ``(`` or a
#: LaTeX command such as ``\frac``.
_EXPRESSION_START = re.compile(r"[-+−]?\s*(?:\d|\.\d|\$|\\[(\[]|\\[A-Za-z]+|\()")


def has_final_answer(text: str) -> bool:
    """Whether ``text`` states a final answer in a final-answer form (see the module docstring)."""
    boxed = last_boxed(text)
    if boxed is not None:
        return bool(boxed)
    for statement in _ANSWER_STATEMENT.finditer(text):
        if _is_expression(text[statement.end():].split("\n", 1)[0]):
            return True
    lines = text.strip().splitlines()
    closing = _CLOSING_EQUATION.search(lines[-1]) if lines else None
    return closing is not None and not _WORD.search(closing.group(1)) and _is_expression(closing.group(1))


def _is_expression(answer: str) -> bool:
    """Whether ``answer`` starts with an expression (:data:`_EXPRESSION_START`) that math-verify reads."""
    return bool(_EXPRESSION_START.match(answer)) and bool(parse_final_answer(answer))


def completion_diagnostics(completions, **kwargs) -> dict[str, list[float]]:
    """``answer_present`` (1.0 / 0.0) for each of the B completions, in TRL's reward-function convention."""
    return {"answer_present": [1.0 if has_final_answer(completion_text(c)) else 0.0 for c in completions]}
