"""The published cpu-evidence experiment: every planned run reported, run from its registration, labelled
with what ran. (The ledger itself is rebuilt from the committed evidence in test_published.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

PUBLISHED = Path(__file__).resolve().parents[1] / "paper_figures" / "cpu-evidence"
pytestmark = pytest.mark.skipif(not (PUBLISHED / "PROVENANCE.json").is_file(),
                                reason="the cpu-evidence experiment is not published yet")

#: The pre-registered runs (PREREGISTRATION.md): (task, method) → seeds, and each family's training steps.
PLANNED = {**{("tool_calling", m): range(3) for m in ("grpo", "grpo_nostd", "gdpo")}, ("tool_calling", "base"): [0],
           **{("math", m): range(6) for m in ("grpo", "gdpo", "base")}}
STEPS = {"tool_calling": 100, "math": 500}


def test_every_planned_run_is_published_with_its_steps_and_evaluation():
    evals = pd.read_csv(PUBLISHED / "evidence" / "eval.csv")
    steps = pd.read_csv(PUBLISHED / "evidence" / "steps.csv")
    for (task, method), seeds in PLANNED.items():
        for seed in seeds:
            run = (evals["task"] == task) & (evals["method"] == method) & (evals["seed"] == seed)
            assert run.any(), f"{task}/{method} seed {seed}: no evaluation published"
            if method != "base":
                logged = steps[(steps["task"] == task) & (steps["method"] == method) & (steps["seed"] == seed)]
                assert logged["step"].max() == STEPS[task], f"{task}/{method} seed {seed}: not {STEPS[task]} steps"
    published = set(evals[["task", "method", "seed"]].itertuples(index=False, name=None))
    planned = {(task, method, seed) for (task, method), seeds in PLANNED.items() for seed in seeds}
    assert published == planned  # nothing beyond the plan either (no repeated or extra seed)


def test_the_runs_descend_from_the_registration_and_the_wall_time_is_recorded():
    experiment = json.loads((PUBLISHED / "PROVENANCE.json").read_text())["experiment"]
    assert len(experiment["in_force_commit"]) == 40 and experiment["runs_descend_from_registration"]
    summary = experiment["timeline"]["summary"]
    assert summary["under_way"] == 0 and summary["failed"] == 0 and summary["wall_hours"] > 0
    assert {run["commit"] for run in experiment["runs"] if run["commit"]} == set(experiment["run_commits"])


def test_the_ledger_rows_name_what_ran():
    ledger = pd.read_csv(PUBLISHED / "claims.csv", keep_default_na=False).set_index("claim_id")
    rows = ledger[ledger["scale"] == "cpu-evidence"]
    for claim in ("C3", "C4", "C5", "C6"):
        assert rows.loc[claim, "run"].startswith("SmolLM2-135M-Instruct, "), rows.loc[claim, "run"]
        assert rows.loc[claim, "verdict"] != "not run"


def test_the_registered_codes_ledger_is_kept_as_it_was_built():
    """registered/claims.csv is what the registered code built on this evidence (PREREGISTRATION.md), byte for byte
    as it was published; claims.csv is the current rules' ledger on the same evidence (republished when the rules
    changed: validity before verdicts, intersection-union intervals, exact event tests), and the report says both."""
    import hashlib

    registered = (PUBLISHED / "registered" / "claims.csv").read_bytes()
    assert hashlib.sha256(registered).hexdigest() == (
        "b2ec7326167a6585b6268a5369d6a9b9d4467074cbcb26f0a353dac29c59e704")
    current = pd.read_csv(PUBLISHED / "claims.csv", keep_default_na=False).set_index(["scale", "claim_id"])
    before = pd.read_csv(PUBLISHED / "registered" / "claims.csv", keep_default_na=False).set_index(["scale", "claim_id"])
    # What the registered rules refuted, the current rules find the design could not test.
    for claim in ("C4", "C5"):
        assert before.loc[("cpu-evidence", claim), "verdict"] == "not reproduced"
        assert current.loc[("cpu-evidence", claim), "verdict"] == "not tested"


def test_provenance_runs_are_completed_from_the_recorded_config_never_changed():
    """Fields later rules read (C3's decline share, C5's length limit) come from the config at the recorded commit,
    whose hash PROVENANCE records; a recorded field that disagrees stops the republication."""
    import json

    from gdpo.reporting.publish import described_runs

    provenance = json.loads((PUBLISHED / "PROVENANCE.json").read_text())
    root = PUBLISHED.parents[1]
    runs = described_runs(provenance, root)
    assert runs["tool_calling"]["decline_share"] == 0.0 and runs["math"]["length_limit"] == 64
    assert runs["math"]["max_steps"] == 500 and runs["tool_calling"]["max_completion_length"] == 96
    tampered = {**provenance, "runs": {**provenance["runs"], "math": {**provenance["runs"]["math"], "max_steps": 400}}}
    with pytest.raises(ValueError, match=r"disagree with config/cpu-evidence.yaml"):
        described_runs(tampered, root)


def test_the_ledger_of_the_published_config_restores_every_run_and_trains_none(tmp_path):
    """The headline ledger is built by the workflow from the published config and the committed evidence: its
    dry run schedules restores and analysis only, never a train, evaluate or warm-up job (a planned run missing
    from the evidence would be trained here, after the results are known)."""
    import os
    import re
    import subprocess
    import sys

    root = PUBLISHED.parents[1]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    process = subprocess.run(
        [sys.executable, "-m", "snakemake", "results/cpu-evidence/paper_figures/claims.csv", "--dry-run",
         "--quiet", "rules", "--cores", "1", "--configfile", "config/cpu-evidence.yaml"],
        cwd=root, env=env, capture_output=True, text=True, check=False, timeout=300)
    assert process.returncode == 0, process.stderr[-2000:]
    if "Job stats:" not in process.stdout:  # the ledger is already built in results/: nothing would run
        assert "Nothing to be done" in process.stdout + process.stderr, process.stdout[-2000:]
        return
    stats = process.stdout.split("Job stats:", 1)[1]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.MULTILINE))
    assert "claims_ledger" in jobs, jobs
    assert not {"train", "evaluate", "warmup_model"} & set(jobs), jobs
