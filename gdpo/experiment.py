"""The driver of a long pre-registered experiment (scale cpu-evidence): runs in a fixed order, each finished
run's evidence committed as it finishes, a wall-time budget as the stopping rule.

Order: seed by seed, ascending (the first seed's batch also evaluates the base models), so that a stop at any
point leaves every method with the same seeds. Each batch is one Snakemake call for the evaluations of that
seed's runs (Snakemake trains what they need, two jobs at once on two cores); then every run of the batch that
finished is saved (:func:`gdpo.evidence.save_evidence`) and committed with the timeline. Committed runs are
skipped, so the driver resumes where the last machine stopped. A crashed run is retried once in the same
call's next attempt and, if it fails again, the driver stops with the error (the note reports every rerun).

The budget counts the wall time of the batches in ``timeline.jsonl`` (committed beside the evidence): no new
batch starts once it is spent; the batch under way finishes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from gdpo.evaluation.run import BASE_METHOD, plan_evaluations
from gdpo.evidence import committed, run_key_dir, save_evidence

TIMELINE = "timeline.jsonl"


def experiment_batches(config: dict) -> list[list[dict]]:
    """The config's evaluations (:func:`gdpo.evaluation.run.plan_evaluations`: trained runs and base models)
    grouped by seed, ascending; within a batch, tasks and methods in config order, base models last."""
    by_seed: dict[int, list[dict]] = {}
    for evaluation in plan_evaluations(config):
        by_seed.setdefault(evaluation["seed"], []).append(evaluation)
    return [sorted(runs, key=lambda r: r["method"] == BASE_METHOD) for _, runs in sorted(by_seed.items())]


def read_timeline(evidence_dir: Path) -> list[dict]:
    path = evidence_dir / TIMELINE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def spent_hours(evidence_dir: Path) -> float:
    """Wall hours of the batches recorded in the timeline."""
    return sum(entry["seconds"] for entry in read_timeline(evidence_dir)) / 3600


def _head(repo: Path) -> str | None:
    """The commit the batch ran from (the pre-registered one, or an evidence commit on top of it)."""
    process = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=False)
    return process.stdout.strip() or None


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)


def run_experiment(config: dict, configfile: str, repo: str | Path, cores: int = 2, budget_hours: float = 12.0,
                   commit: bool = True, attempts: int = 2, snakemake_args: tuple[str, ...] = ()) -> int:
    """Run the experiment's batches in order from the repository ``repo`` (the pre-registered worktree); see
    the module docstring. Returns 0 when every planned run is committed, 3 when the budget stopped it, and
    Snakemake's exit code when a batch failed ``attempts`` times."""
    repo = Path(repo).resolve()
    scale, evidence_dir = config["scale"], repo / config["evidence_dir"]
    evidence_dir.mkdir(parents=True, exist_ok=True)
    for batch in experiment_batches(config):
        done_runs, done_evals = committed(evidence_dir, trained=True), committed(evidence_dir, trained=False)
        pending = [r for r in batch if (r["task"], r["method"], r["seed"]) not in
                   (done_evals if r["method"] == BASE_METHOD else done_runs & done_evals)]
        if not pending:
            continue
        spent = spent_hours(evidence_dir)
        if spent >= budget_hours:
            print(f"Budget of {budget_hours:g} h spent ({spent:.2f} h in {TIMELINE}); "
                  f"stopping before seed {batch[0]['seed']}: {len(pending)} planned runs of it not run.", flush=True)
            return 3
        targets = [str(run_key_dir(f"results/{scale}/runs", r["task"], r["method"], r["seed"]) / "eval.json")
                   for r in pending]
        for attempt in range(1, attempts + 1):
            started = time.time()
            process = subprocess.run(
                [sys.executable, "-m", "snakemake", "--profile", "profiles/workstation", "--configfile", configfile,
                 "--cores", str(cores), *snakemake_args, *targets], cwd=repo, check=False)
            entry = {"seed": batch[0]["seed"], "runs": [f"{r['task']}/{r['method']}" for r in pending],
                     "commit": _head(repo),
                     "attempt": attempt, "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                     "seconds": round(time.time() - started, 1), "exit_code": process.returncode}
            with (evidence_dir / TIMELINE).open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")
            saved = []
            for run in pending:
                run_dir = repo / run_key_dir(f"results/{scale}/runs", run["task"], run["method"], run["seed"])
                dest = run_key_dir(evidence_dir, run["task"], run["method"], run["seed"])
                try:
                    saved += save_evidence(run_dir, dest, trained=run["method"] != BASE_METHOD)
                except ValueError:
                    continue  # not finished: retried below or reported by the exit code
            if commit:
                _git(repo, "add", "--", *[str(p.relative_to(repo)) for p in saved],
                     str((evidence_dir / TIMELINE).relative_to(repo)))
                _git(repo, "commit", "-m", f"{scale} evidence: seed {entry['seed']}, attempt {attempt}, "
                     f"{len(saved)} files ({', '.join(entry['runs'])})")
            if process.returncode == 0:
                break
        else:
            return process.returncode
    return 0
