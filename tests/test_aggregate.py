"""Aggregation of per-run files into steps.csv and eval.csv."""

from __future__ import annotations

import json

import pytest

from gdpo.reporting.aggregate import gather_evals, gather_steps, run_identity


def write_run(root, task, method, seed, steps=None, evaluation=None):
    run = root / "runs" / task / method / f"seed{seed}"
    run.mkdir(parents=True)
    if steps is not None:
        (run / "metrics.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    if evaluation is not None:
        (run / "eval.json").write_text(json.dumps(evaluation))
    return run


def test_run_identity_comes_from_the_path(tmp_path):
    assert run_identity("results/mini/runs/math_mini/gdpo/seed3/eval.json") == {
        "task": "math_mini", "method": "gdpo", "seed": 3}
    with pytest.raises(ValueError, match="not inside a run directory"):
        run_identity(tmp_path / "eval.json")


def test_steps_of_every_run_in_one_table(tmp_path):
    a = write_run(tmp_path, "t", "gdpo", 0, steps=[{"step": 1, "reward": 0.25}, {"step": 2, "reward": 0.5}])
    b = write_run(tmp_path, "t", "grpo", 1, steps=[{"step": 1, "reward": 1.0, "rewards/x/mean": 0.0}])
    steps = gather_steps([b / "metrics.jsonl", a / "metrics.jsonl"])
    assert list(steps.columns) == ["task", "method", "seed", "step", "reward", "rewards/x/mean"]
    assert steps[["method", "step", "reward"]].values.tolist() == [["gdpo", 1, 0.25], ["gdpo", 2, 0.5],
                                                                     ["grpo", 1, 1.0]]
    assert steps["rewards/x/mean"].isna().sum() == 2  # a metric only one run logged stays empty elsewhere


def test_a_run_without_steps_is_an_error_naming_it(tmp_path):
    run = write_run(tmp_path, "t", "gdpo", 0, steps=[])
    with pytest.raises(ValueError, match="no logged steps"):
        gather_steps([run / "metrics.jsonl"])


def test_evals_become_long_rows_with_not_run_columns_kept(tmp_path):
    run = write_run(tmp_path, "tool", "base", 0, evaluation={
        "benchmarks": {"bfcl_v3": {"live": 40.0, "format": 12.5, "n_items": 80}},
        "not_run": {"multi_turn": "needs BFCL's multi-turn executor"},
    })
    evals = gather_evals([run / "eval.json"])
    values = evals.dropna(subset=["value"]).set_index("metric")["value"].to_dict()
    assert values == {"format": 12.5, "live": 40.0}
    assert set(evals["n_items"].dropna()) == {80}
    missing = evals[evals["value"].isna()].iloc[0]
    assert missing["benchmark"] == "multi_turn" and missing["note"].startswith("not run: needs")
    # no health block: the run is not judged (never healthy), and nothing says it collapsed
    assert set(evals["health"]) == {"not judged: no health block in eval.json: evaluated before the collapse gate "
                                    "existed; re-run its evaluation"}
    assert set(evals["collapsed"]) == {""}


def test_every_eval_row_carries_the_start_models_digest(tmp_path):
    digest = "0e4e936a" * 8
    recorded = write_run(tmp_path, "tool", "grpo", 0, evaluation={
        "model_weights_sha256": digest, "benchmarks": {"bfcl_v3": {"live": 40.0, "n_items": 80}}})
    unrecorded = write_run(tmp_path, "tool", "gdpo", 0, evaluation={
        "benchmarks": {"bfcl_v3": {"live": 41.0, "n_items": 80}}})
    evals = gather_evals([recorded / "eval.json", unrecorded / "eval.json"]).set_index("method")
    assert evals.loc["grpo", "start_weights_sha256"] == digest
    assert evals.loc["gdpo", "start_weights_sha256"] == ""


def test_items_json_gathers_per_item_outcomes_and_names_runs_without(tmp_path, capsys):
    from gdpo.cli import main
    from gdpo.reporting.verdicts.items import compare_evaluations

    outcomes = {"bench": {"ids": [0, 1, 2], "scores": {"acc": ["1", "1", "0"]}}}
    a = write_run(tmp_path, "math", "gdpo", 0, steps=[{"step": 1}],
                  evaluation={"family": "math", "benchmarks": {}, "items": outcomes})
    b = write_run(tmp_path, "math", "grpo", 0, steps=[{"step": 1}], evaluation={
        "family": "math", "benchmarks": {}, "items": {"bench": {"ids": [0, 1, 2], "scores": {"acc": ["1", "0", "0"]}}}})
    old = write_run(tmp_path, "math", "base", 0, evaluation={"family": "math", "benchmarks": {}})
    out = tmp_path / "summary"
    assert main(["aggregate", "--metrics", str(a / "metrics.jsonl"), str(b / "metrics.jsonl"),
                 "--evals", *(str(run / "eval.json") for run in (a, b, old)), "--out-steps", str(out / "steps.csv"),
                 "--out-eval", str(out / "eval.csv"), "--out-items", str(out / "items.json")]) == 0
    assert "2 runs with per-item outcomes, 1 without" in capsys.readouterr().out
    items = json.loads((out / "items.json").read_text())
    assert items["without_items"] == ["math/base/seed0"]
    runs = {run["method"]: run for run in items["runs"]}
    assert runs["gdpo"]["items"] == outcomes and runs["gdpo"]["seed"] == 0
    # an entry pairs as its eval.json would
    assert compare_evaluations(runs["gdpo"], runs["grpo"], "bench", "acc").a_only == 1


def test_a_gap_or_a_repeat_in_a_runs_steps_is_an_error_naming_the_run_and_the_steps(tmp_path):
    run = write_run(tmp_path, "t", "gdpo", 0, steps=[{"step": s} for s in range(1, 9) if s != 4])
    with pytest.raises(ValueError) as error:
        gather_steps([run / "metrics.jsonl"])
    message = str(error.value)
    assert str(run) in message and "misses step 4 " in message and "7 lines, of 8" in message
    # a run that logs every 4th optimizer step (TRL's logging_steps, in its config.json) is whole from step 4
    every4 = write_run(tmp_path, "t", "grpo", 0, steps=[{"step": s} for s in (4, 8, 12)])
    (every4 / "config.json").write_text(json.dumps({"trl": {"logging_steps": 4}}))
    assert gather_steps([every4 / "metrics.jsonl"])["step"].tolist() == [4, 8, 12]
    (every4 / "metrics.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in (4, 12, 20)))
    with pytest.raises(ValueError, match=r"misses steps 8, 16 .*one line every 4 steps from step 4"):
        gather_steps([every4 / "metrics.jsonl"])
    # a step logged twice
    twice = write_run(tmp_path, "t", "gdpo", 1, steps=[{"step": s} for s in (1, 2, 2, 3)])
    with pytest.raises(ValueError, match=rf"{twice / 'metrics.jsonl'} line 3: step 2 after step 2"):
        gather_steps([twice / "metrics.jsonl"])
