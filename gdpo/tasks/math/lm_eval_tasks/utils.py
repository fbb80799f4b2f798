"""lm-eval hooks of the math tasks: the prompt and the math-verify scoring of every sampled response.

lm-eval loads this file by path (``!function utils.…``); the logic lives in ``gdpo.tasks.math``.
"""

from gdpo.tasks.math.data import make_prompt
from gdpo.tasks.math.rewards import is_correct


def doc_to_text(doc: dict) -> str:
    """The user turn of a problem (lm-eval applies the model's chat template around it)."""
    return make_prompt(doc["problem"])[0]["content"]


def process_results(doc: dict, results: list) -> dict:
    """pass@1 of one problem averaged over its samples.

    Args:
        doc: a data row (``answer``, ``verifier``, ``verifier_data``).
        results: one entry per request; with the ``all_samples`` filter it is the list of the k responses.

    Returns:
        ``{"acc": fraction of the k responses that are correct}`` (a float in [0, 1]).
    """
    responses = results[0]
    if isinstance(responses, str):
        responses = [responses]
    verdicts = [
        is_correct(
            text, str(doc["answer"]), doc.get("verifier") or "math_verify", doc.get("verifier_data") or ""
        )
        for text in responses
    ]
    return {"acc": sum(verdicts) / len(verdicts)}
