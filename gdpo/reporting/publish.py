"""Publishing a workflow's results with the repository: the evidence behind ``paper_figures/<scale>/`` and the
provenance that produced it, so that readers see results without running anything and a change of rule shows
up as a diff of the committed ledger (``tests/test_published.py`` rebuilds it from the evidence).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from gdpo.config import apply_grid, load_config, read_yaml
from gdpo.evidence import TIMELINE, read_timeline, run_records, timeline_summary
from gdpo.plan import describe_runs

#: Evidence files of a workflow run: where the workflow writes them → their name under ``evidence/``.
EVIDENCE = {
    "results/exact/distinct_counts.csv": "distinct_counts.csv",
    "results/sim/per_seed.csv": "sim_per_seed.csv",
    "results/{scale}/summary/eval.csv": "eval.csv",
    "results/{scale}/summary/steps.csv": "steps.csv",
    "results/{scale}/summary/items.json": "items.json",
}


def _git_output(*args: str, cwd: Path) -> str:
    """What ``git *args`` prints in ``cwd``, stripped; ``"unknown"`` when git fails or is missing."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def publish(config_file: str | Path, root: str | Path = ".", grid: str = "default") -> Path:
    """Copy a finished run's evidence into ``paper_figures/<scale>/evidence/`` and write ``PROVENANCE.json``
    (git commit and state, config file and its SHA-256, grid, date, the ledger command's inputs).

    Raises:
        FileNotFoundError: the workflow has not produced the evidence or the ledger yet (run it first).
    """
    root = Path(root)
    config = apply_grid({**load_config(config_file), "grid": grid})
    scale = config["scale"]
    out = root / "paper_figures" / scale
    if not (out / "claims.csv").is_file():
        raise FileNotFoundError(f"{out / 'claims.csv'} does not exist: run the workflow with {config_file} first "
                                "(make workflow, or snakemake --cores N --configfile ...).")
    (out / "evidence").mkdir(parents=True, exist_ok=True)
    copied = {}
    for source, name in EVIDENCE.items():
        path = root / source.format(scale=scale)
        if path.is_file():
            shutil.copyfile(path, out / "evidence" / name)
            copied[name] = source.format(scale=scale)
    provenance = {
        "commit": _git_output("rev-parse", "HEAD", cwd=root),
        "ledger_commit": _git_output("rev-parse", "HEAD", cwd=root),
        "uncommitted_changes": bool(_git_output("status", "--porcelain", "--untracked-files=no", cwd=root)),
        "config": str(config_file),
        "config_sha256": hashlib.sha256(Path(config_file).read_bytes()).hexdigest(),
        "grid": grid,
        "scale": scale,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "evidence": copied,
        "reporting": config.get("reporting") or {},
        "runs": describe_runs(config),
        "inputs": input_hashes(out, root, config),
    }
    experiment = experiment_provenance(out, root, config)
    if experiment:
        provenance["experiment"] = experiment
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return out.resolve()


#: A pre-registered experiment's registration, beside its published results.
PREREGISTRATION = "PREREGISTRATION.md"
#: The line a registration carries from the commit that puts it in force.
IN_FORCE = "**Status: in force**"
#: What went wrong during an experiment and what was done about it (reruns of crashed jobs, amendments,
#: changes of the machine), written by hand: a JSON list of objects, copied into ``PROVENANCE.json``.
INCIDENTS = "incidents.json"


def experiment_provenance(published: Path, root: Path, config: dict) -> dict | None:
    """The provenance of a pre-registered experiment whose runs' evidence the config commits
    (``evidence_dir`` holding the driver's ``timeline.jsonl``); None for any other scale.

    ``preregistration``: every commit that changed ``PREREGISTRATION.md``, oldest first, each marked
    ``in_force`` when the file then carried :data:`IN_FORCE` (drafts before, amendments after);
    ``in_force_commit``: the first such commit; ``runs_descend_from_registration``: whether every run's
    commit has it as an ancestor; ``timeline``: the driver's entries and their
    :func:`~gdpo.evidence.timeline_summary` (the experiment's wall time); ``runs``: each committed run's
    :func:`~gdpo.evidence.run_records` (the commit it ran at, its start model, steps and evaluated items);
    ``run_commits``: the distinct commits the runs trained at; ``incidents``: ``incidents.json`` beside the
    results, if any.

    Raises:
        ValueError: ``incidents.json`` is not a JSON list of objects (fix the file; nothing is written).
    """
    evidence_dir = config.get("evidence_dir")
    if not evidence_dir or not (root / evidence_dir / TIMELINE).is_file():
        return None
    timeline = read_timeline(root / evidence_dir)
    registration = published / PREREGISTRATION
    history = _git_output("log", "--reverse", "--format=%H %cI %s", "--", str(registration.relative_to(root)),
                          cwd=root) if registration.is_file() and registration.is_relative_to(root) else ""
    runs = run_records(root / evidence_dir)
    incidents = []
    if (published / INCIDENTS).is_file():
        incidents = json.loads((published / INCIDENTS).read_text(encoding="utf-8"))
        if not isinstance(incidents, list) or not all(isinstance(item, dict) for item in incidents):
            raise ValueError(f"{published / INCIDENTS} must be a JSON list of objects (one per incident: when, "
                             "what, runs, effect); fix it and publish again.")
    commits = [dict(zip(("commit", "date", "subject"), line.split(" ", 2)))
               for line in history.splitlines() if line and history != "unknown"]
    path = registration.relative_to(root).as_posix() if commits else ""
    for commit in commits:
        commit["in_force"] = IN_FORCE in _git_output("show", f"{commit['commit']}:{path}", cwd=root)
    in_force = next((commit["commit"] for commit in commits if commit["in_force"]), None)
    run_commits = sorted({run["commit"] for run in runs if run["commit"]})
    return {
        "evidence_dir": str(evidence_dir),
        "preregistration": commits,
        "in_force_commit": in_force,
        # A run made before the registration was in force, or beside it, would not be evidence of it.
        "runs_descend_from_registration": bool(in_force) and all(
            _is_ancestor(in_force, commit, root) for commit in run_commits),
        "timeline": {"summary": timeline_summary(timeline), "entries": timeline},
        "runs": runs,
        "run_commits": run_commits,
        "incidents": incidents,
    }


def _is_ancestor(ancestor: str, commit: str, root: Path) -> bool:
    process = subprocess.run(["git", "merge-base", "--is-ancestor", ancestor, commit], cwd=root,
                             capture_output=True, check=False)
    return process.returncode == 0


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def input_hashes(published: Path, root: Path, config: dict) -> dict[str, str]:
    """SHA-256 of every input of the published ledger: each evidence file, the config, and the sim study
    files the bench ran (``config/sim/<study>.yaml``), by path relative to the repository."""
    files = sorted((published / "evidence").glob("*.csv")) + sorted((published / "evidence").glob("items.json"))
    files += [root / "config" / "sim" / f"{study}.yaml" for study in (config.get("sim") or {}).get("studies", [])]
    return {path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix(): _sha256(path)
            for path in files if path.is_file()}


def republish_ledger(published: str | Path, root: str | Path = ".") -> Path:
    """Rebuild a published scale's ``claims.csv`` and ``CLAIMS.md`` from its committed evidence with the current
    rules, and record in ``PROVENANCE.json`` the commit of the rules (``ledger_commit``) and the hash of every
    input (:func:`input_hashes`). The evidence itself and the commit that produced it are left as they were."""
    import tempfile

    from gdpo.reporting.ledger import LEDGER_COLUMNS, ledger_markdown

    published, root = Path(published), Path(root)
    provenance = json.loads((published / "PROVENANCE.json").read_text(encoding="utf-8"))
    provenance["runs"] = described_runs(provenance, root)
    (published / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    with tempfile.TemporaryDirectory() as workdir:
        ledger = rebuild_ledger(published, workdir)
    ledger[LEDGER_COLUMNS].to_csv(published / "claims.csv", index=False, float_format="%.3f")
    (published / "CLAIMS.md").write_text(ledger_markdown(ledger, provenance["scale"]), encoding="utf-8")
    config = apply_grid({**load_config(root / provenance["config"]), "grid": provenance.get("grid", "default")})
    provenance["ledger_commit"] = _git_output("rev-parse", "HEAD", cwd=root)
    provenance["inputs"] = input_hashes(published, root, config)
    (published / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return published


def described_runs(provenance: dict, root: Path) -> dict[str, dict]:
    """PROVENANCE's ``runs`` (what each task ran, :func:`gdpo.plan.describe_runs`), completed with the fields later
    rules read (e.g. ``length_limit``, ``decline_share``) from the config the runs were made with: the file at the
    recorded ``commit``, checked against the recorded ``config_sha256``. A field already recorded is never changed,
    and one the recorded config gives differently stops the republication (the evidence would not be what the
    provenance says)."""
    recorded = provenance.get("runs") or {}
    try:
        text = _git_output("show", f"{provenance['commit']}:{provenance['config']}", cwd=root)
    except (KeyError, subprocess.CalledProcessError, FileNotFoundError):
        return recorded  # no recorded config to read: the rules say "not checked" for what is missing
    if provenance.get("config_sha256") and hashlib.sha256((text + "\n").encode()).hexdigest() != provenance[
            "config_sha256"] and hashlib.sha256(text.encode()).hexdigest() != provenance["config_sha256"]:
        return recorded
    config = apply_grid({**(read_yaml(text) or {}), "grid": provenance.get("grid", "default")})
    completed = {}
    for task, described in describe_runs(config).items():
        have = recorded.get(task, {})
        clash = {key: (have[key], value) for key, value in described.items() if key in have and have[key] != value}
        if clash:
            raise ValueError(f"PROVENANCE.json's runs[{task!r}] disagree with {provenance['config']} at commit "
                             f"{provenance['commit'][:12]}: {clash} (recorded, config); the published evidence is not "
                             "what its provenance says; restore PROVENANCE.json from git before republishing.")
        completed[task] = {**described, **have}
    return {**recorded, **completed}


def rebuild_ledger(published: str | Path, workdir: str | Path):
    """The ledger the current rules give on a published scale's evidence, built as the workflow builds it
    (the same relative paths, inside ``workdir``)."""
    from gdpo.reporting.ledger import build_ledger

    published, workdir = Path(published), Path(workdir)
    provenance = json.loads((published / "PROVENANCE.json").read_text(encoding="utf-8"))
    for name, source in provenance["evidence"].items():
        target = workdir / source
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(published / "evidence" / name, target)
    evidence = provenance["evidence"]
    with contextlib.chdir(workdir):
        return build_ledger(provenance["scale"], evidence.get("distinct_counts.csv"), evidence.get("sim_per_seed.csv"),
                            evidence.get("eval.csv"), evidence.get("steps.csv"), provenance["reporting"],
                            runs=provenance["runs"])
