"""The two rewards of the ToolRL recipe (PAPER.md §3, Tool calling), in TRL's reward contract.

- ``format`` ∈ {0, 1}: the whole completion has the tag structure of the ground truth's answer type
  (tool call only, response only, both, or think only), each of its tags exactly once
  (:func:`~gdpo.tasks.tool_calling.output_format.has_expected_format`).
- ``correct`` ∈ [−3, 3]: ``6·S/S_max − 3`` with ``S = name match + Σ_gt best(key match + exact values)``
  and ``S_max = 1 + |calls| + Σ|keys|`` (:func:`tool_call_score`). An exact match of the call list scores 3;
  no tool call, or a block that does not parse, scores −3.

Edge cases, decided here:

- The ground truth expects no tool call (response or think-only answers, BFCL irrelevance): ``correct``
  is 0 whatever the completion does, as in ToolRL. The value is the same for every completion of the
  prompt, so it adds nothing to either estimator's advantages; declining to call a tool is taught by the
  ``format`` reward, which requires the response-only structure (no ``<tool_call>`` tag) there.
- The ground truth expects a call but has no reference call list (BFCL live_relevance: any call counts):
  ``correct`` is None ("not applicable"); :func:`~gdpo.tasks.tool_calling.data.build_dataset` leaves such
  items out of training anyway.
- Only the first ``<tool_call>`` block is read; blank lines in it are skipped; any other line that is not
  a ``{"name": str, "parameters": {...}}`` JSON object makes the whole block unparsable (−3), as does a line
  nested deeper than :data:`~gdpo.tasks.tool_calling.output_format.MAX_CALL_NESTING` (which also takes the
  ``format`` reward to 0: the parser cannot read such a call at all). Both rewards run in time linear in the
  completion's length.
- A message whose ``content`` is None or missing reads as an empty completion (``format`` 0, ``correct`` −3
  where a call is expected).
- Values are compared with Python equality after JSON decoding (``5 == 5.0``; strings case-sensitive).

Standard library only (also imported by the BFCL scorer's environment).
"""

from __future__ import annotations

import json
from collections import Counter

from gdpo.tasks.tool_calling.output_format import (
    ANSWER_BOTH,
    ANSWER_TOOL_CALL,
    ToolCallParseError,
    has_expected_format,
    parse_tool_calls,
)

MAX_CORRECT = 3.0
MIN_CORRECT = -3.0


def completion_text(completion) -> str:
    """TRL passes conversational completions as ``[{"role": "assistant", "content": …}]``; a message whose
    content is None or missing (a message of tool calls only), or a None completion, reads as empty text."""
    if isinstance(completion, list):
        return "".join(message.get("content") or "" for message in completion)
    return completion or ""


def multiset_jaccard(first: list, second: list) -> float:
    """|A ∩ B| / |A ∪ B| of two multisets (counts matter, order does not); 1 when both are empty."""
    if Counter(first) == Counter(second):
        return 1.0
    if not first or not second:
        return 0.0
    count_first, count_second = Counter(first), Counter(second)
    intersection = sum((count_first & count_second).values())
    return intersection / (len(first) + len(second) - intersection)


def tool_call_score(expected: list[dict], predicted: list[dict]) -> tuple[float, float]:
    """ToolRL's match score ``(S, S_max)`` of predicted calls against the expected ones.

    ``S`` = multiset Jaccard of the tool names, plus for each expected call (in order) the best still-unused
    predicted call of the same name, scored ``key Jaccard + number of expected parameters whose value the
    call matches exactly``; a predicted call is used up only if it scores above 0.
    ``S_max = 1 + Σ_expected (1 + |parameters|)``.
    """
    score = multiset_jaccard([call["name"] for call in expected], [call["name"] for call in predicted])
    max_score = 1.0
    used = set()
    for want in expected:
        want_params = want["parameters"]
        max_score += 1.0 + len(want_params)
        best_index, best_score = None, 0.0
        for index, got in enumerate(predicted):
            if index in used or got["name"] != want["name"]:
                continue
            got_params = got["parameters"]
            candidate = multiset_jaccard(list(want_params), list(got_params)) + sum(
                1.0 for key, value in want_params.items() if key in got_params and got_params[key] == value
            )
            if candidate > best_score:
                best_index, best_score = index, candidate
        if best_index is not None:
            used.add(best_index)
            score += best_score
    return score, max_score


def correctness(text: str, answer_type: str, expected_calls: list[dict] | None) -> float | None:
    """The ``correct`` reward of one completion (see the module docstring for the edge cases)."""
    if answer_type not in (ANSWER_TOOL_CALL, ANSWER_BOTH):
        return 0.0
    if expected_calls is None:
        return None
    try:
        predicted = parse_tool_calls(text)
    except ToolCallParseError:
        return MIN_CORRECT
    if not predicted:
        return MIN_CORRECT
    if predicted == expected_calls:
        return MAX_CORRECT
    score, max_score = tool_call_score(expected_calls, predicted)
    return (MAX_CORRECT - MIN_CORRECT) * score / max_score + MIN_CORRECT


def _calls_of(value) -> list[dict] | None:
    """Ground-truth calls from a dataset cell: a JSON string (or an already decoded list); None stays None."""
    if value is None:
        return None
    return json.loads(value) if isinstance(value, str) else value


def format_reward(completions, answer_type, **kwargs) -> list[float]:
    """1 if a completion has exactly the tag structure its item's ``answer_type`` asks for, else 0."""
    return [
        1.0 if has_expected_format(completion_text(c), kind) else 0.0
        for c, kind in zip(completions, answer_type)
    ]


def correct_reward(completions, answer_type, ground_truth_calls, **kwargs) -> list[float | None]:
    """ToolRL's tool-call correctness in [−3, 3] per completion (None where no reference call exists)."""
    return [
        correctness(completion_text(c), kind, _calls_of(calls))
        for c, kind, calls in zip(completions, answer_type, ground_truth_calls)
    ]


#: Reward name → function, in the order their weights are given (the paper: correctness, then format).
REWARD_FUNCTIONS = {"correct": correct_reward, "format": format_reward}
