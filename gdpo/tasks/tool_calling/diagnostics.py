"""What the tool-calling policy actually does, per completion: the signs of a collapse.

A policy that stops calling tools scores 100 % on BFCL's irrelevance categories and 0 on every other,
and BFCL's averages can rise while it does. These indicators make that plain, during training (per step,
:mod:`gdpo.training.trainer`) and in evaluation (``eval.json``):

- ``call_made``: the completion has a ``<tool_call>`` block that parses into at least one call.
- ``call_when_expected``: ``call_made`` on items whose reference answer calls a tool (NaN elsewhere).
- ``exact_call``: the parsed call list equals the reference list exactly (ToolRL's ``correct`` = 3), on
  items with a reference call list (NaN elsewhere): the training samples' own AST-style accuracy.
- ``declined_when_expected``: on items that expect no call (irrelevance), the completion makes no parsable
  call (NaN elsewhere): a call cut at the length cap counts, so it bounds declining from above; the format
  reward's mean on those items is the share that answered in the response-only structure.

The evaluation's ``calls`` (:func:`gdpo.tasks.tool_calling.evaluation.call_metrics`, the collapse gate's
indicator) is stricter than ``call_made``: :func:`calls_offered_tools` also wants every call to name one of
the tools the item offers, so a call with an empty name, or to a tool not offered, is no call.

Standard library only (the BFCL environment imports the package).
"""

from __future__ import annotations

import json
import math

from gdpo.tasks.tool_calling.output_format import ANSWER_BOTH, ANSWER_TOOL_CALL, ToolCallParseError, parse_tool_calls
from gdpo.tasks.tool_calling.rewards import completion_text

NAN = math.nan
INDICATORS = ("call_made", "call_when_expected", "exact_call", "declined_when_expected")


def parsed_calls(text: str) -> list[dict] | None:
    """The calls of the completion's first ``<tool_call>`` block, or None when it has none that parses."""
    try:
        calls = parse_tool_calls(text)
    except ToolCallParseError:
        return None
    return calls or None


def offered_tool_names(tools) -> set[str]:
    """The names of an item's tools: JSON function schemas ``{"name": …}`` (BFCL's) or OpenAI-style
    ``{"type": "function", "function": {"name": …}}``, as a list or its JSON text; empty names are
    dropped."""
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except (ValueError, RecursionError):  # JSONDecodeError, the int digit limit, deep nesting
            return set()
    names = set()
    for tool in tools or ():
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if "name" not in tool and isinstance(function, dict) else tool.get("name")
        if isinstance(name, str) and name.strip():
            names.add(name)
    return names


def calls_offered_tools(text: str, tools) -> bool:
    """Whether the completion makes a tool call the item allows: its first ``<tool_call>`` block parses into
    at least one call and every call names one of the item's ``tools`` (exactly, as the prompt lists them)."""
    calls = parsed_calls(text)
    names = offered_tool_names(tools)
    return bool(calls) and all(call["name"] in names for call in calls)


def completion_indicators(text: str, answer_type: str, expected_calls: list[dict] | None) -> dict[str, float]:
    """The :data:`INDICATORS` of one completion: 1.0, 0.0, or NaN where the indicator does not apply."""
    calls = parsed_calls(text)
    made = 1.0 if calls else 0.0
    expects_call = answer_type in (ANSWER_TOOL_CALL, ANSWER_BOTH)
    return {
        "call_made": made,
        "call_when_expected": made if expects_call else NAN,
        "exact_call": (1.0 if calls == expected_calls else 0.0) if expects_call and expected_calls else NAN,
        "declined_when_expected": NAN if expects_call else 1.0 - made,
    }


def completion_diagnostics(completions, answer_type, ground_truth_calls, **kwargs) -> dict[str, list[float]]:
    """Per-completion indicators for a batch, in TRL's reward-function calling convention.

    Args:
        completions: B completions (text or conversational messages).
        answer_type, ground_truth_calls: the dataset's columns for those B rows.

    Returns:
        indicator name → B values (1.0, 0.0 or NaN = not applicable).
    """
    rows = [
        completion_indicators(
            completion_text(completion), kind, json.loads(calls) if isinstance(calls, str) else calls
        )
        for completion, kind, calls in zip(completions, answer_type, ground_truth_calls)
    ]
    return {name: [row[name] for row in rows] for name in INDICATORS}
