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


def test_the_registered_codes_ledger_is_the_published_one():
    """The registered rules' verdicts are the headline (PREREGISTRATION.md): registered/claims.csv, built by the
    code the runs were made with, must equal claims.csv. If a rule changes, publish both and say so."""
    registered = (PUBLISHED / "registered" / "claims.csv").read_bytes()
    assert registered == (PUBLISHED / "claims.csv").read_bytes()
