"""The provenance of a published pre-registered experiment (gdpo.reporting.publish.experiment_provenance and
gdpo.evidence's timeline and run records): its registration's commits, wall time, runs and incidents."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gdpo.evidence import TIMELINE, read_timeline, run_records, timeline_summary
from gdpo.reporting.publish import IN_FORCE, INCIDENTS, PREREGISTRATION, experiment_provenance

EVIDENCE = "paper_figures/exp/evidence/runs"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def write_run(evidence: Path, task: str, method: str, seed: int, commit: str | None, steps: int) -> None:
    run = evidence / task / method / f"seed{seed}"
    run.mkdir(parents=True)
    (run / "eval.json").write_text(json.dumps({"model_weights_sha256": "e" * 64,
                                               "settings": {"eval_size": 200, "num_samples": 2},
                                               "eval_seconds": 45.0, "benchmarks": {}}))
    if commit:  # a trained run; a base model's evaluation has eval.json only
        (run / "env.json").write_text(json.dumps({"git_commit": commit, "start_model": {"weights_sha256": "s" * 64}}))
        (run / "metrics.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in range(1, steps + 1)))


@pytest.fixture
def experiment(tmp_path):
    """A repository with a registration committed, then amended, and a driver's evidence."""
    root = tmp_path
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "t")
    published = root / "paper_figures/exp"
    published.mkdir(parents=True)
    (published / PREREGISTRATION).write_text("**Status: draft**\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "draft")
    (published / PREREGISTRATION).write_text(f"{IN_FORCE} from this commit\n")
    git(root, "commit", "-qam", "register")
    (published / PREREGISTRATION).write_text(f"{IN_FORCE} from this commit\namended\n")
    git(root, "commit", "-qam", "amend")
    evidence = root / EVIDENCE
    write_run(evidence, "math", "grpo", 0, "a" * 40, 500)
    write_run(evidence, "math", "gdpo", 0, "b" * 40, 500)
    write_run(evidence, "math", "base", 0, None, 0)
    (evidence / "math" / "gdpo" / "seed0" / "summary.json").write_text(json.dumps(
        {"steps": 500, "stopped_early": {"step": 500, "reason": "non-finite gradients"}}))
    (evidence / "math" / "gdpo" / "seed1.work").mkdir()  # a checkpoint directory, not a run
    entries = [{"seed": 0, "seconds": 3600.0, "exit_code": "stopped"},
               {"seed": 0, "seconds": 6.5, "exit_code": "locked"},
               {"seed": 0, "seconds": 1800.0, "exit_code": 0},
               {"seed": 1, "seconds": 900.0, "exit_code": 1},
               {"seed": 1, "start": "2026-11-25T06:19:02Z", "alive": "2026-11-25T06:28:02Z"}]
    (evidence / TIMELINE).write_text("".join(json.dumps(e) + "\n" for e in entries))
    return root, published, {"scale": "exp", "evidence_dir": EVIDENCE}


def test_timeline_summary_counts_the_wall_time_and_each_outcome(experiment):
    root, _, _ = experiment
    summary = timeline_summary(read_timeline(root / EVIDENCE))
    assert summary == {"wall_hours": round((3600 + 6.5 + 1800 + 900) / 3600, 3), "entries": 5, "finished": 1,
                       "failed": 1, "stopped": 1, "locked": 1, "under_way": 1}


def test_run_records_give_each_runs_commit_start_model_steps_and_items(experiment):
    root, _, _ = experiment
    records = run_records(root / EVIDENCE)
    assert [(r["method"], r["seed"]) for r in records] == [("base", 0), ("gdpo", 0), ("grpo", 0)]
    base, gdpo, grpo = records
    assert base["commit"] is None and base["logged_steps"] is None and base["evaluated_model_sha256"] == "e" * 64
    assert gdpo["commit"] == "b" * 40 and gdpo["logged_steps"] == 500 and gdpo["start_model_sha256"] == "s" * 64
    assert grpo["eval_items"] == 200 and grpo["eval_samples_per_item"] == 2
    # a run stopped by non-finite gradients says where; the others (no summary, or none stopped) say None
    assert gdpo["stopped_early_step"] == 500 and grpo["stopped_early_step"] is None
    assert base["stopped_early_step"] is None


def test_experiment_provenance_lists_the_registration_commits_runs_and_incidents(experiment):
    root, published, config = experiment
    (published / INCIDENTS).write_text(json.dumps([{"when": "03:00", "what": "a stale lock", "runs": [],
                                                    "effect": "none"}]))
    provenance = experiment_provenance(published, root, config)
    assert [(e["subject"], e["in_force"]) for e in provenance["preregistration"]] == [
        ("draft", False), ("register", True), ("amend", True)]
    assert provenance["in_force_commit"] == git(root, "rev-parse", "HEAD~1")
    assert not provenance["runs_descend_from_registration"]  # the fixture's run commits are not in the history
    assert provenance["run_commits"] == ["a" * 40, "b" * 40]
    assert provenance["timeline"]["summary"]["wall_hours"] == pytest.approx(1.75, abs=1e-2)
    assert len(provenance["timeline"]["entries"]) == 5
    assert provenance["incidents"][0]["what"] == "a stale lock"


def test_a_scale_without_a_driver_timeline_has_no_experiment_block(experiment, tmp_path):
    root, published, config = experiment
    assert experiment_provenance(published, root, {"scale": "mini"}) is None
    (root / EVIDENCE / TIMELINE).unlink()
    assert experiment_provenance(published, root, config) is None


def test_malformed_incidents_are_refused_with_the_fix(experiment):
    root, published, config = experiment
    (published / INCIDENTS).write_text(json.dumps({"what": "not a list"}))
    with pytest.raises(ValueError, match="JSON list of objects"):
        experiment_provenance(published, root, config)


def test_runs_made_after_the_registration_descend_from_it_and_a_run_before_it_does_not(experiment):
    root, published, config = experiment
    evidence = root / EVIDENCE
    for method, ref in (("grpo", "HEAD"), ("gdpo", "HEAD~1")):
        env = evidence / "math" / method / "seed0" / "env.json"
        env.write_text(json.dumps({"git_commit": git(root, "rev-parse", ref)}))
    assert experiment_provenance(published, root, config)["runs_descend_from_registration"]
    env.write_text(json.dumps({"git_commit": git(root, "rev-parse", "HEAD~2")}))  # the draft's commit
    assert not experiment_provenance(published, root, config)["runs_descend_from_registration"]
