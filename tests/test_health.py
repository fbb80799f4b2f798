"""The collapse gate: which evaluations count as a policy that stopped doing the task."""

from __future__ import annotations

import json
import math

import pytest

from gdpo.generation.health import NO_HEALTH_BLOCK, collapse_reasons, health_record, not_judged_reason
from gdpo.reporting.aggregate import gather_evals
from gdpo.tasks.tool_calling.diagnostics import offered_tool_names, parsed_calls
from gdpo.tasks.tool_calling.evaluation import call_metrics


@pytest.mark.parametrize("family, health, collapsed", [
    ("tool_calling", {"calls": 0.0, "truncated": 10.0}, ["tool calls on the held-out items that need one: 0.0 %"]),
    ("tool_calling", {"calls": 4.2, "truncated": 10.0}, ["tool calls"]),          # 1 of 24: still nothing
    ("tool_calling", {"calls": 8.3, "truncated": 10.0}, []),                      # 2 of 24: calling, if badly
    ("tool_calling", {"calls": 60.0, "truncated": 100.0}, ["responses cut at the token limit: 100.0 %"]),
    ("tool_calling", {"calls": None, "truncated": 0.0}, []),                      # no item needs a call
    ("math", {"answers": 0.0, "truncated": 0.0}, ["responses with a final answer: 0.0 %"]),
    ("code", {"programs": 50.0, "truncated": 96.0}, ["responses cut"]),
    ("code", {"programs": 50.0, "truncated": 90.0}, []),
    ("math", {}, []),                                                             # older eval.json: not judged
    ("math", {"answers": math.nan}, []),
])
def test_collapse_reasons(family, health, collapsed):
    reasons = collapse_reasons(family, health)
    assert len(reasons) == len(collapsed)
    for reason, start in zip(reasons, collapsed):
        assert reason.startswith(start)
    assert health_record(family, health)["collapsed"] == reasons


TOOLS = [{"name": "f", "description": "d", "parameters": {}}, {"name": "math.factorial", "parameters": {}}]


def test_call_metrics_separate_calls_from_declining():
    rows = [{"id": "a", "answer_type": "tool_call", "tools": TOOLS}, {"id": "b", "answer_type": "tool_call", "tools": TOOLS},
            {"id": "c", "answer_type": "response", "tools": TOOLS}]
    call = '<think>x</think>\n<tool_call>\n{"name": "f", "parameters": {}}\n</tool_call>'
    think_only = "<think>I can call the tools in the response</think>"
    metrics = call_metrics(rows, [[call, think_only], [think_only, think_only], [think_only, call]],
                           {"a": [True, False], "b": [False, False], "c": [True, True]})
    assert metrics == {"calls": 25.0, "ast_calls": 25.0, "declined": 50.0, "declined_in_format": 0.0, "n_need_call": 2}


@pytest.mark.parametrize("text, no_parsable_call, declined_in_format", [
    ("<think>none of these tools fits</think>\n<response>I cannot help with that.</response>", 100.0, 100.0),
    # a call cut at the length cap: BFCL's irrelevance check passes it, yet it is no decline
    ('<think>x</think>\n<tool_call>\n{"name": "f", "parameters": {"a": "a", "a": "a", "a', 100.0, 0.0),
    # broken JSON in a whole block: no parsable call, and not the response-only structure
    ("<think>x</think>\n<tool_call>\n{name: f}\n</tool_call>", 100.0, 0.0),
    ("<think>x</think>", 100.0, 0.0),                  # no answer at all
    ('<think>x</think>\n<tool_call>\n{"name": "f", "parameters": {}}\n</tool_call>', 0.0, 0.0),
    # a response that also holds a call tag is not the response-only structure
    ("<think>x</think>\n<response>no</response>\n<tool_call>\n</tool_call>", 100.0, 0.0),
])
def test_no_parsable_call_is_not_declining(text, no_parsable_call, declined_in_format):
    """`declined` counts what BFCL's irrelevance check passes (no parsable call); `declined_in_format` only an
    answer without a call in the structure the format reward pays on such items."""
    rows = [{"id": "c", "answer_type": "response", "tools": TOOLS}]
    metrics = call_metrics(rows, [[text]], {"c": [False]})
    assert (metrics["declined"], metrics["declined_in_format"]) == (no_parsable_call, declined_in_format)


def _call(*names: str) -> str:
    lines = "\n".join(json.dumps({"name": name, "parameters": {}}) for name in names)
    return f"<think>x</think>\n<tool_call>\n{lines}\n</tool_call>"


@pytest.mark.parametrize("text, counts", [
    (_call("f"), True),
    (_call("math.factorial", "f"), True),
    (_call(""), False),                         # an empty tool name
    (_call(" "), False),
    (_call("g"), False),                        # a tool the item does not offer
    (_call("f", "g"), False),                   # one of the calls names a tool not offered
    (_call("math_factorial"), False),           # not the name the prompt lists
    ("<think>x</think>\n<tool_call>\n\n</tool_call>", False),
])
def test_calls_count_only_calls_to_the_items_tools(text, counts):
    rows = [{"id": "a", "answer_type": "tool_call", "tools": TOOLS}, {"id": "b", "answer_type": "response", "tools": TOOLS}]
    metrics = call_metrics(rows, [[text], [text]], {"a": [False], "b": [False]})
    assert metrics["calls"] == (100.0 if counts else 0.0)
    # a call to a tool not offered still is no decline
    assert metrics["declined"] == (0.0 if parsed_calls(text) else 100.0)


def test_calls_read_the_tools_as_the_split_stores_them_or_as_json():
    assert offered_tool_names(json.dumps(TOOLS)) == {"f", "math.factorial"}
    assert offered_tool_names([{"type": "function", "function": {"name": "g"}}, {"name": ""}, "h"]) == {"g"}
    assert offered_tool_names(None) == set() and offered_tool_names("not json") == set()
    row = {"id": "a", "answer_type": "tool_call"}  # an item offering no tool: no call can count
    assert call_metrics([row], [[_call("f")]], {})["calls"] == 0.0


def test_eval_csv_marks_every_row_of_a_collapsed_run(tmp_path):
    paths = []
    for method, reasons in (("grpo", ["tool calls on the held-out items that need one: 0.0 % (below 5 %)"]),
                            ("gdpo", [])):
        path = tmp_path / "runs" / "tool_calling" / method / "seed0" / "eval.json"
        path.parent.mkdir(parents=True)
        calls = 0.0 if reasons else 50.0
        path.write_text(json.dumps({"family": "tool_calling",
                                    "benchmarks": {"bfcl_v3": {"avg": 36.9, "calls": calls, "n_items": 24}},
                                    "not_run": {"multi_turn": "needs BFCL's environments"},
                                    "health": {"calls": calls, "truncated": 0.0, "collapsed": reasons}}))
        paths.append(path)
    older = tmp_path / "runs" / "tool_calling" / "base" / "seed0" / "eval.json"  # before the health block
    older.parent.mkdir(parents=True)
    older.write_text(json.dumps({"benchmarks": {"bfcl_v3": {"avg": 3.8, "n_items": 24}}}))
    evals = gather_evals([*paths, older])
    by_method = evals.groupby("method")["collapsed"].agg(set)
    assert by_method["grpo"] == {"tool calls on the held-out items that need one: 0.0 % (below 5 %)"}
    assert by_method["gdpo"] == {""} and by_method["base"] == {""}
    # the health column tells the healthy run from the one evaluated before the gate existed
    health = evals.groupby("method")["health"].agg(set)
    assert health["grpo"] == {"collapsed"} and health["gdpo"] == {"healthy"}
    assert health["base"] == {f"not judged: {NO_HEALTH_BLOCK}"}
    assert NO_HEALTH_BLOCK == ("no health block in eval.json: evaluated before the collapse gate existed; "
                               "re-run its evaluation")


def test_eval_csv_judges_the_health_numbers_not_a_stored_verdict(tmp_path):
    path = tmp_path / "runs" / "tool_calling" / "gdpo" / "seed0" / "eval.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"family": "tool_calling", "benchmarks": {"bfcl_v3": {"avg": 40.0, "n_items": 24}},
                                "health": {"calls": 0.0, "truncated": 0.0}}))  # no stored "collapsed" list
    assert set(gather_evals([path])["collapsed"]) == {"tool calls on the held-out items that need one: 0.0 % "
                                                      "(below 5 %)"}


@pytest.mark.parametrize("family, health, missing", [
    ("tool_calling", None, "no health block"),
    ("tool_calling", {}, "no health block"),
    ("math", {"collapsed": []}, "no number for 'answers' or 'truncated'"),
    ("tool_calling", {"calls": None, "truncated": 0.0}, "no number for 'calls'"),   # no item needed a call
    ("code", {"programs": math.nan, "truncated": 10.0}, "no number for 'programs'"),
    ("code", {"programs": 50.0}, "no number for 'truncated'"),
    ("", {"answers": 50.0, "truncated": 0.0}, "family '' has no activity indicator"),
    ("code", {"programs": 50.0, "truncated": 10.0}, None),
    ("code", {"programs": 0.0, "truncated": 10.0}, None),                            # judged: collapsed
])
def test_not_judged_reason(family, health, missing):
    reason = not_judged_reason(family, health)
    assert reason is None if missing is None else missing in reason


def test_eval_csv_health_column_says_healthy_collapsed_or_not_judged(tmp_path):
    cases = {"healthy": {"answers": 80.0, "truncated": 10.0}, "collapsed": {"answers": 80.0, "truncated": 100.0},
             "unjudged": {"truncated": 10.0}, "cut": {"truncated": 100.0}}  # collapsed although not judged otherwise
    paths = []
    for method, health in cases.items():
        path = tmp_path / "runs" / "math" / method / "seed0" / "eval.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"family": "math", "benchmarks": {"b": {"acc": 1.0, "n_items": 8}},
                                    "health": health}))
        paths.append(path)
    evals = gather_evals(paths).set_index("method")
    assert evals.loc["healthy", "health"] == "healthy" and evals.loc["healthy", "collapsed"] == ""
    assert evals.loc["collapsed", "health"] == "collapsed"
    assert evals.loc["collapsed", "collapsed"].startswith("responses cut at the token limit: 100.0 %")
    assert evals.loc["unjudged", "health"].startswith("not judged: eval.json's health block has no number for "
                                                      "'answers'")
    assert evals.loc["unjudged", "collapsed"] == ""
    assert evals.loc["cut", "health"] == "collapsed"
