"""The collapse gate: which evaluations count as a policy that stopped doing the task."""

from __future__ import annotations

import json
import math

import pytest

from gdpo.evaluation.health import collapse_reasons, health_record
from gdpo.reporting.aggregate import gather_evals
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


def test_call_metrics_separate_calls_from_declining():
    rows = [{"id": "a", "answer_type": "tool_call"}, {"id": "b", "answer_type": "tool_call"},
            {"id": "c", "answer_type": "response"}]
    call = '<think>x</think>\n<tool_call>\n{"name": "f", "parameters": {}}\n</tool_call>'
    think_only = "<think>I can call the tools in the response</think>"
    metrics = call_metrics(rows, [[call, think_only], [think_only, think_only], [think_only, call]],
                           {"a": [True, False], "b": [False, False], "c": [True, True]})
    assert metrics == {"calls": 25.0, "ast_calls": 25.0, "declined": 50.0, "n_need_call": 2}


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


def test_eval_csv_judges_the_health_numbers_not_a_stored_verdict(tmp_path):
    path = tmp_path / "runs" / "tool_calling" / "gdpo" / "seed0" / "eval.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"family": "tool_calling", "benchmarks": {"bfcl_v3": {"avg": 40.0, "n_items": 24}},
                                "health": {"calls": 0.0, "truncated": 0.0}}))  # no stored "collapsed" list
    assert set(gather_evals([path])["collapsed"]) == {"tool calls on the held-out items that need one: 0.0 % "
                                                      "(below 5 %)"}
