"""What the math policy actually does, per completion: is there an answer to grade at all?

``answer_present`` is 1 when math-verify finds a final answer in the completion (the last ``\\boxed{}``,
else the last expression) — the reward's own reading, so a policy that learns to stop answering (e.g.
to win the length reward) shows here before accuracy says why. Length and truncation are TRL's own
``completions/*`` metrics.
"""

from __future__ import annotations

from gdpo.tasks.math.rewards import completion_text, parse_final_answer

INDICATORS = ("answer_present",)


def completion_diagnostics(completions, **kwargs) -> dict[str, list[float]]:
    """``answer_present`` (1.0 / 0.0) for each of the B completions, in TRL's reward-function convention."""
    return {"answer_present": [1.0 if parse_final_answer(completion_text(c)) else 0.0 for c in completions]}
