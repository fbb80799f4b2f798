"""Committed evidence of a long experiment (scale cpu-evidence): runs that survive a stopped machine.

A finished run's small files are copied into the repository's evidence directory and committed; a later
workflow run restores them into ``results/`` (rules ``restore_run`` and ``restore_eval``), so that the run
counts as done on any machine that has the commit, and only what is missing is trained. Weights are never
committed: a restored run cannot be evaluated again, only reported.

Layout: each run's :class:`gdpo.plan.RunKey` under the evidence directory,
``<evidence_dir>/<task>/<method>/seed<seed>/``, with :data:`RUN_FILES` (a trained run), :data:`EVAL_FILE` and
:data:`SAMPLE_FILE` (an evaluation; the base model's has only these).

Restoring checks that the committed run was made with the settings the config now asks for (the run's
``config.json`` and the evaluation's ``settings``), so evidence from another design is never counted as
this one's. Where a run reports its metrics live (``training.report_to``) is no part of its design.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from gdpo.files import SAMPLE_FILE
from gdpo.plan import EVAL_FILE, RunKey

#: The experiment driver's record of its batches, one JSON object per line, beside the runs' evidence
#: (:mod:`gdpo.experiment`): seed, runs, commit, attempt, start, seconds, exit_code (an int, ``"stopped"`` or
#: ``"locked"``) and an optional note.
TIMELINE = "timeline.jsonl"
#: A trained run's evidence (metrics per step, summary, resolved settings, environment).
RUN_FILES = ("metrics.jsonl", "summary.json", "config.json", "env.json")
# An evaluation's evidence is its EVAL_FILE, and SAMPLE_FILE (gdpo.files) holds the first SAMPLE_ITEMS items
# of the evaluator's own completion file.
SAMPLE_ITEMS = 50
#: The evaluator's completion files, per family (tool calling and code; math's lm-eval samples per benchmark).
_COMPLETION_PATTERNS = ("completions.jsonl", "samples_*.jsonl")


def run_key_dir(root: str | Path, task: str, method: str, seed: int) -> Path:
    """``root/<task>/<method>/seed<seed>``: :meth:`gdpo.plan.RunKey.path` (the layout of both
    ``results/<scale>/runs`` and the evidence)."""
    return RunKey(task, method, seed, Path(root)).path()


def completion_sample(eval_work_dir: Path, items: int = SAMPLE_ITEMS) -> list[str]:
    """The first ``items`` lines of each completion file of an evaluation's work directory (sorted names)."""
    lines: list[str] = []
    for pattern in _COMPLETION_PATTERNS:
        for path in sorted(eval_work_dir.glob(pattern)):
            with path.open(encoding="utf-8") as handle:
                for index, line in enumerate(handle):
                    if index >= items:
                        break
                    if line.strip():
                        lines.append(line.rstrip("\n"))
    return lines


def save_evidence(run_dir: str | Path, dest: str | Path, trained: bool = True) -> list[Path]:
    """Copy a finished run's evidence from ``run_dir`` (``results/<scale>/runs/<task>/<method>/seed<k>``) to
    ``dest``; ``trained`` False for the base model (its evaluation only). Returns the files written.

    Raises ``ValueError`` naming the missing files when the run has not finished (nothing is written then).
    """
    run_dir, dest = Path(run_dir), Path(dest)
    names = (*RUN_FILES, EVAL_FILE) if trained else (EVAL_FILE,)
    missing = [name for name in names if not (run_dir / name).is_file()]
    if missing:
        raise ValueError(f"{run_dir} has not finished: {', '.join(missing)} missing; train and evaluate it first "
                         f"(snakemake {run_dir / EVAL_FILE}).")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        shutil.copyfile(run_dir / name, dest / name)
        written.append(dest / name)
    sample = completion_sample(run_dir / "eval")
    if sample:
        (dest / SAMPLE_FILE).write_text("\n".join(sample) + "\n", encoding="utf-8")
        written.append(dest / SAMPLE_FILE)
    return written


def committed(evidence_dir: str | Path, trained: bool = True) -> set[tuple[str, str, int]]:
    """``(task, method, seed)`` of every complete run (``trained``) or evaluation in ``evidence_dir``."""
    root = Path(evidence_dir)
    names = RUN_FILES if trained else (EVAL_FILE,)
    found = set()
    run_dirs = root.glob(RunKey.pattern(".").format(task="*", method="*", seed="*")) if root.is_dir() else []
    for seed_dir in run_dirs:
        try:
            key = RunKey.from_path(seed_dir)
        except ValueError:
            continue  # not a run directory (e.g. seed0.work)
        if all((seed_dir / name).is_file() for name in names):
            found.add((key.task, key.method, key.seed))
    return found


def _design(expected: Mapping) -> Mapping:
    """``expected`` without ``trl.report_to``: it chooses where a run's metrics are shown while it trains, not
    what it trains, so a run committed without TensorBoard is the same run."""
    trl = expected.get("trl")
    if isinstance(trl, Mapping) and "report_to" in trl:
        return {**expected, "trl": {key: value for key, value in trl.items() if key != "report_to"}}
    return expected


def _differences(committed_settings: Mapping, expected: Mapping, prefix: str = "") -> list[str]:
    """Keys of ``expected`` whose committed value differs; nested mappings compared key by key (the committed
    run may record more keys than the config sets, e.g. TRL arguments derived at run time)."""
    # Compared as JSON, the form both were written in (tuples become lists, keys strings).
    expected = json.loads(json.dumps(expected, default=str))
    differences = []
    for key, value in expected.items():
        found = committed_settings.get(key)
        if isinstance(value, dict) and isinstance(found, dict):
            differences += _differences(found, value, f"{prefix}{key}.")
        elif found != value:
            differences.append(f"{prefix}{key}: committed {json.dumps(found)}, config {json.dumps(value)}")
    return differences


def restore(src: str | Path, run_dir: str | Path, names: Iterable[str], expected: Mapping | None = None) -> None:
    """Copy committed evidence ``names`` from ``src`` into ``run_dir``.

    ``expected``: the settings the config asks for, as data (for a trained run
    ``resolve_run_settings(...).to_dict()``, for an evaluation ``resolve_eval_settings(...).to_dict()``, both in
    :mod:`gdpo.plan`; the rules pass their ``to_json()``); every key must equal the committed one
    (``config.json``, or eval.json's ``settings``), else ``ValueError`` lists the differences and nothing is
    copied.
    """
    src, run_dir, names = Path(src), Path(run_dir), list(names)
    if expected is not None:
        if "config.json" in names:
            committed_settings = json.loads((src / "config.json").read_text(encoding="utf-8"))
        else:
            committed_settings = json.loads((src / EVAL_FILE).read_text(encoding="utf-8")).get("settings") or {}
        differences = _differences(committed_settings, _design(expected))
        if differences:
            raise ValueError(
                f"The committed evidence in {src} was made with other settings than the config asks for ("
                + "; ".join(differences) + "). Restore the config of the pre-registered design, or move the "
                "evidence away to run this design afresh.")
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(src / name, run_dir / name)


def read_timeline(evidence_dir: str | Path) -> list[dict]:
    """The entries of ``<evidence_dir>/timeline.jsonl`` in order; [] when there is none."""
    path = Path(evidence_dir) / TIMELINE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def timeline_summary(entries: list[dict]) -> dict:
    """The experiment's wall time and attempts from its timeline: ``wall_hours`` (sum of the entries'
    ``seconds``: a stopped batch counts up to its last heartbeat), and the number of entries by outcome:
    ``finished`` (exit code 0), ``failed`` (another exit code), ``stopped`` (the machine stopped it) and
    ``locked`` (a stale lock; no job started). An entry without ``seconds`` (a batch under way) counts in
    ``under_way``, its time in none."""
    outcomes = {"finished": 0, "failed": 0, "stopped": 0, "locked": 0, "under_way": 0}
    for entry in entries:
        code = entry.get("exit_code")
        if "seconds" not in entry:
            outcomes["under_way"] += 1
        elif code in ("stopped", "locked"):
            outcomes[code] += 1
        else:
            outcomes["finished" if code == 0 else "failed"] += 1
    seconds = sum(entry.get("seconds", 0.0) for entry in entries)
    return {"wall_hours": round(seconds / 3600, 3), "entries": len(entries), **outcomes}


def run_records(evidence_dir: str | Path) -> list[dict]:
    """One record per committed run or evaluation under ``evidence_dir``, sorted by task, method and seed:
    its key, the commit it trained at (``env.json``'s ``git_commit``; None for a base model, whose batch
    commit is in the timeline), the SHA-256 of the model it started from or evaluated
    (:func:`gdpo.files.weights_digest`'s convention: file names and bytes), its logged steps and its
    evaluated items × samples."""
    records = []
    root = Path(evidence_dir)
    pattern = RunKey.pattern(".").format(task="*", method="*", seed="*")
    for run_dir in sorted(root.glob(pattern)) if root.is_dir() else []:
        try:
            key = RunKey.from_path(run_dir)
        except ValueError:
            continue
        if not (run_dir / EVAL_FILE).is_file():
            continue
        evaluation = json.loads((run_dir / EVAL_FILE).read_text(encoding="utf-8"))
        env_path, metrics_path = run_dir / "env.json", run_dir / "metrics.jsonl"
        env = json.loads(env_path.read_text(encoding="utf-8")) if env_path.is_file() else {}
        steps = None
        if metrics_path.is_file():
            steps = sum(1 for line in metrics_path.read_text(encoding="utf-8").splitlines() if line.strip())
        settings = evaluation.get("settings") or {}
        records.append({
            **key.identity(),
            "commit": env.get("git_commit"),
            "start_model_sha256": (env.get("start_model") or {}).get("weights_sha256"),
            "evaluated_model_sha256": evaluation.get("model_weights_sha256"),
            "logged_steps": steps,
            "eval_items": settings.get("eval_size"),
            "eval_samples_per_item": settings.get("num_samples", 1),
            "eval_seconds": evaluation.get("eval_seconds"),
        })
    return sorted(records, key=lambda r: (r["task"], r["method"], r["seed"]))
