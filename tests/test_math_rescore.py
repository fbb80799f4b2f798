"""Scoring a committed math completion sample again with the current reward."""

from __future__ import annotations

import json

import pytest

from gdpo.tasks.math import rescore


def write_sample(root, method, seed, samples):
    path = root / method / f"seed{seed}" / "completions_sample.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    return path


def sample(problem, answer, source, responses, recorded):
    return {"doc": {"problem": problem, "answer": answer, "verifier": "math_verify", "verifier_data": "",
                    "source": source}, "resps": [responses], "acc": recorded}


def test_a_restated_question_the_old_reward_paid_scores_zero_now(tmp_path):
    """The cpu-evidence case: "10 - 5" was paid (recorded acc 1), the current reward pays only the answer."""
    write_sample(tmp_path, "grpo", 0, [sample("Calculate 10 - 5.", "5", "basic_arithmetic", ["10 - 5", "10 - 5"], 1.0),
                                       sample("Calculate 9 - 6.", "3", "basic_arithmetic", ["9 - 6", "9 - 6"], 1.0)])
    write_sample(tmp_path, "gdpo", 0, [sample("Calculate 10 - 5.", "5", "basic_arithmetic",
                                              ["10 - 5 = 5", "10 - 5 = 4"], 0.5)])
    table = rescore.rescore_runs(tmp_path).set_index("method")
    assert table.loc["grpo", "recorded_acc"] == 100.0 and table.loc["grpo", "current_acc"] == 0.0
    assert table.loc["grpo", "current_answers"] == 0.0 and table.loc["grpo", "responses"] == 4
    assert table.loc["gdpo", "current_acc"] == 50.0 and table.loc["gdpo", "current_answers"] == 100.0
    summary = rescore.summary_by_method(rescore.rescore_runs(tmp_path)).set_index("method")
    assert summary.loc["grpo", "seeds"] == 1 and summary.loc["grpo", "recorded_acc"] == 100.0


def test_items_of_unknown_generators_keep_their_logged_verifier(tmp_path):
    # a math-verify item (e.g. a hub benchmark): the restated expression in a box is still equal to the answer
    write_sample(tmp_path, "base", 0, [sample("Compute 2 + 2.", "4", "math500", ["\\boxed{2 + 2}"], 1.0)])
    assert rescore.rescore_runs(tmp_path)["current_acc"].tolist() == [100.0]


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="no <method>/seed<N>/completions_sample.jsonl"):
        rescore.rescore_runs(tmp_path)
    write_sample(tmp_path, "base", 0, [{"doc": {"problem": "x"}, "resps": [["1"]]}])
    with pytest.raises(ValueError, match="line 1: not a logged math sample"):
        rescore.rescore_runs(tmp_path)
