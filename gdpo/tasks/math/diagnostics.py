"""What the math policy actually does, per completion: is there an answer to grade at all?

``answer_present`` is 1 when the completion states a final answer in a final-answer form
(:func:`has_final_answer`):

- a non-empty ``\\boxed{…}`` (the last one), the form the prompt asks for ("output the final answer within
  \\boxed{}", :data:`gdpo.tasks.math.data.INSTRUCTION`) and the reward reads first;
- an answer statement — "the answer is 12", "Final answer: 12", "**Answer:** $\\frac{1}{2}$", "the result
  is 12", "the final answer, which is 8" — with the expression right after it (starting with a digit, a
  sign, ``$``, ``(`` or a LaTeX command) and read by math-verify;
- or a closing equation: the response's last line ends with ``= <expression>`` without words ("7 + 3 = 10",
  not "= 5, but then I got lost").

A number somewhere in prose ("There are 3 apples", "I have 3 ideas but I am not sure"), an expression alone
("10 - 5": the question restated), or reasoning cut before its conclusion, is no final answer. The correctness
reward grades only these forms (:func:`gdpo.tasks.math.rewards.final_answer`), so what this counts is what
the reward can pay. So a policy that learns to stop answering (e.g. to win the length reward) shows here, and in the
evaluation's ``answers`` (the collapse gate's indicator, :mod:`gdpo.generation.health`), before accuracy
says why. Length and truncation are TRL's own ``completions/*`` metrics.
"""

from __future__ import annotations

from gdpo.tasks.math.rewards import completion_text, final_answer, plain_number

INDICATORS = ("answer_present",)


def has_final_answer(text: str, verifier: str = "math_verify") -> bool:
    """Whether ``text`` states a final answer in a final-answer form (the module docstring;
    :func:`gdpo.tasks.math.rewards.final_answer`); on rows with verifier ``number``, a plain number (a
    restated question in a box is no answer there, since the reward can never pay it)."""
    stated = final_answer(text)
    if stated is None:
        return False
    return verifier != "number" or plain_number(stated) is not None


def completion_diagnostics(completions, verifier=None, **kwargs) -> dict[str, list[float]]:
    """``answer_present`` (1.0 / 0.0) for each of the B completions, in TRL's reward-function convention
    (``verifier``: the rows' verifier column, ``math_verify`` where absent)."""
    verifiers = list(verifier) if verifier is not None else ["math_verify"] * len(completions)
    return {"answer_present": [1.0 if has_final_answer(completion_text(c), v or "math_verify") else 0.0
                               for c, v in zip(completions, verifiers)]}
