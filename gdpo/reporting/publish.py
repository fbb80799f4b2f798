"""Publishing a workflow's results with the repository: the evidence behind ``paper_figures/<scale>/`` and the
provenance that produced it, so that readers see results without running anything and a change of rule shows
up as a diff of the committed ledger (``tests/test_published.py`` rebuilds it from the evidence).

A workflow writes its ledger, figures, tables and report under ``results/<scale>/paper_figures/``
(:data:`BUILT`); only :func:`publish` writes ``paper_figures/<scale>/``, the evidence together with everything
built from it. Published evidence is history: :func:`publish` refuses to drop or change a committed row or
run, or to move the registered commit; adding runs, and replacing a draw, are amendments stated by someone for a
reason (:class:`Amendment`), kept in ``PROVENANCE.json``'s ``amendments`` with the digests they replaced. Every
rebuild of a published ledger first checks the evidence against the digests ``PROVENANCE.json`` records
(:func:`verify_published`).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gdpo.config import apply_grid, load_config, read_yaml
from gdpo.evidence import MANIFEST, TIMELINE, check_run_evidence, committed, read_timeline, run_records, \
    timeline_summary
from gdpo.files import DigestMismatch, file_sha256
from gdpo.plan import RunKey, describe_runs

#: Where a workflow writes what is published (ledger, figures, tables, report): ``results/<scale>/paper_figures``;
#: the bench's figures, shared by the scales that run it, in ``results/sim/paper_figures``.
BUILT = "results/{scale}/paper_figures"
#: The run-identity columns of the evidence tables (a dropped run is named by them).
RUN_COLUMNS = ["task", "method", "seed"]
#: What to do when published evidence differs from its provenance.
_CHANGED_FIX = ("Restore the published files from git (git checkout -- <file>); evidence that is meant to change "
                "is republished as a stated amendment: --amend-by NAME --amend-why TEXT.")


@dataclass(frozen=True)
class Amendment:
    """Who changes published evidence, and why; recorded in ``PROVENANCE.json``'s ``amendments`` with the
    commit it was made at and the digests it replaced."""

    by: str
    why: str

    def __post_init__(self):
        if not self.by.strip() or not self.why.strip():
            raise ValueError("An amendment names who makes it and why (--amend-by NAME --amend-why TEXT), "
                             "both non-empty.")

    def record(self, root: Path, **details) -> dict:
        return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "by": self.by, "why": self.why, "commit": _git_output("rev-parse", "HEAD", cwd=root), **details}


class EvidenceChanged(DigestMismatch):
    """Published evidence differs from the digests its ``PROVENANCE.json`` records, and no amendment says why."""


class PublishingRefused(ValueError):
    """Publishing would drop or change committed evidence or move the registered commit."""

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


def publish(config_file: str | Path, root: str | Path = ".", grid: str = "default",
            amendment: Amendment | None = None, replace: bool = False) -> Path:
    """Publish a finished workflow run: its evidence (:data:`EVIDENCE`) into ``paper_figures/<scale>/evidence/``,
    everything the workflow built from it (``results/<scale>/paper_figures/``, and the bench's figures in
    ``results/sim/paper_figures/``) beside it, and ``PROVENANCE.json`` (git commit and state, config file and its
    SHA-256, grid, date, what each task ran, the digest of every input and of every committed run's files).

    Where the scale is published already, the committed evidence is history:

    - the same evidence: the built files are refreshed (new rules), the registered commit stays;
    - more rows or runs and every committed row unchanged: an addition, which needs ``amendment``;
    - either way the registered commit keeps its ``date``, and a ``config``, ``config_sha256`` or ``grid`` that
      differs from the recorded one is recorded in ``amendments`` (``changed``: old and new value), in the stated
      amendment or, where none is stated, in an entry that says so: never overwritten silently;
    - a committed row or run missing or changed (a subset of seeds, another draw): refused, unless ``replace``
      with an ``amendment`` (a new draw replaces the old: the old commit and digests stay in the amendment).

    Every check is made before anything is written.

    Raises:
        FileNotFoundError: the workflow has not produced the evidence or the ledger yet (run it first).
        PublishingRefused: the change the new evidence makes is not allowed without ``amendment``/``replace``.
    """
    root = Path(root)
    config_path = Path(config_file) if Path(config_file).is_absolute() else root / config_file
    config = apply_grid({**load_config(config_path), "grid": grid})
    scale = config["scale"]
    out = root / "paper_figures" / scale
    built = root / BUILT.format(scale=scale)
    if not (built / "claims.csv").is_file():
        raise FileNotFoundError(f"{built / 'claims.csv'} does not exist: run the workflow with {config_file} first "
                                "(make workflow, or snakemake --cores N --configfile ...).")
    sources = {name: root / source.format(scale=scale) for source, name in EVIDENCE.items()
               if (root / source.format(scale=scale)).is_file()}
    previous = _read_provenance(out)
    head = _git_output("rev-parse", "HEAD", cwd=root)
    amendments = list(previous.get("amendments", [])) if previous else []
    commit = head
    stated, kept = None, False  # this publication's amendment entry, if any; whether the registered commit stays
    if previous:
        change = evidence_change(out / "evidence", sources)
        if change["dropped"] or change["changed_files"]:
            if not (replace and amendment):
                raise PublishingRefused(
                    f"Publishing would drop or change evidence committed in {out / 'evidence'}: "
                    + "; ".join(change["dropped"] + change["changed_files"])
                    + ". A workflow over a subset of seeds or tasks is compared with the published draw "
                    f"(gdpo compare-ledgers), never published over it. To publish a new draw in its place, state it: "
                    "--replace --amend-by NAME --amend-why TEXT (the old commit and digests stay in PROVENANCE.json).")
            stated = amendment.record(root, replaced={
                "commit": previous.get("commit"), "date": previous.get("date"),
                "config_sha256": previous.get("config_sha256"), "inputs": previous.get("inputs", {})})
        elif change["added"]:
            if not amendment:
                raise PublishingRefused(
                    f"The new evidence adds to what {out / 'evidence'} holds ({'; '.join(change['added'])}): an "
                    "addition is an amendment: state who and why with --amend-by NAME --amend-why TEXT.")
            stated = amendment.record(root, added=change["added"], inputs_before=previous.get("inputs", {}))
            commit, kept = previous.get("commit", head), True
        else:
            commit, kept = previous.get("commit", head), True
            if amendment:
                stated = amendment.record(root, note="the evidence is unchanged; built files refreshed")
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    date, config_sha256 = now, file_sha256(config_path)
    if kept:
        # The registered commit stays, and with it the date it was published; the config it was read with is
        # history too: a field that differs now is recorded with its old and new value, not overwritten.
        date = previous.get("date", now)
        current = {"config": str(config_file), "config_sha256": config_sha256, "grid": grid}
        changed = {key: {"old": previous[key], "new": value} for key, value in current.items()
                   if key in previous and previous[key] != value}
        if changed:
            stated = stated or {"date": now, "commit": head,
                                "note": "the evidence is unchanged; the config changed since it was published, and "
                                        "no amendment was stated (--amend-by NAME --amend-why TEXT)"}
            stated["changed"] = changed
    if stated:
        amendments.append(stated)
    run_evidence = run_evidence_digests(root, config)
    # Whether the code that publishes differs from its commit, read before this publication's own writes
    # (which would otherwise always show as changes); the published files themselves are not code.
    uncommitted = bool(_git_output("status", "--porcelain", "--untracked-files=no", "--", ".", ":!paper_figures",
                                   cwd=root))
    # Everything is checked: write.
    (out / "evidence").mkdir(parents=True, exist_ok=True)
    copied = {}
    for source, name in EVIDENCE.items():
        if name in sources:
            shutil.copyfile(sources[name], out / "evidence" / name)
            copied[name] = source.format(scale=scale)
    built_files = _copy_tree(built, out)
    # Files an earlier publication built that this run did not: they would describe other evidence.
    for stale in sorted(set((previous or {}).get("built", [])) - set(built_files)):
        (out / stale).unlink(missing_ok=True)
    if (config.get("sim") or {}).get("studies") and (root / BUILT.format(scale="sim")).is_dir():
        _copy_tree(root / BUILT.format(scale="sim"), root / "paper_figures" / "sim")
    provenance = {
        "commit": commit,
        "ledger_commit": head,
        "uncommitted_changes": uncommitted,
        "config": str(config_file),
        "config_sha256": config_sha256,
        "grid": grid,
        "scale": scale,
        "date": date,
        "evidence": copied,
        "reporting": config.get("reporting") or {},
        "runs": describe_runs(config),
        "inputs": input_hashes(out, root, config),
        "built": built_files,
    }
    if run_evidence:
        provenance["run_evidence"] = run_evidence
    made_at = runs_made_at(root / "results" / scale / "runs")
    if made_at:
        provenance["runs_made_at"] = made_at
    experiment = experiment_provenance(out, root, config)
    if experiment:
        provenance["experiment"] = experiment
    if amendments:
        provenance["amendments"] = amendments
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return out.resolve()


def runs_made_at(runs_dir: Path) -> list[str]:
    """The distinct commits the runs under ``runs_dir`` trained at (each ``env.json``'s ``git_commit``): the code
    that made the draw, which may be older than the commit that publishes it."""
    commits = set()
    for env in runs_dir.glob(RunKey.pattern(".").format(task="*", method="*", seed="*") + "/env.json"):
        with contextlib.suppress(json.JSONDecodeError, OSError, AttributeError):
            commits.add(json.loads(env.read_text(encoding="utf-8")).get("git_commit"))
    return sorted(commit for commit in commits if commit)


def _read_provenance(published: Path) -> dict | None:
    path = published / "PROVENANCE.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON ({error}); restore it from git before publishing.") from error


def _copy_tree(src: Path, dest: Path) -> list[str]:
    """Copy every file under ``src`` to the same relative path under ``dest``; returns those paths (POSIX)."""
    copied = []
    for path in sorted(src.rglob("*")):
        if path.is_file():
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copied.append(path.relative_to(src).as_posix())
    return copied


def _table_rows(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _runs_of(frame: pd.DataFrame) -> set[tuple]:
    return set(frame[RUN_COLUMNS].itertuples(index=False, name=None)) if set(RUN_COLUMNS) <= set(frame) else set()


def evidence_change(committed_dir: Path, sources: dict[str, Path]) -> dict[str, list[str]]:
    """How the new evidence files (``sources``: name → path) change what ``committed_dir`` holds.

    Returns ``{"dropped": [...], "changed_files": [...], "added": [...]}``, each a list of sentences: runs or rows
    of a committed file absent from the new one (or a committed file with no new counterpart), a file whose
    columns or committed rows changed, and rows or runs only the new files have.
    """
    dropped, changed, added = [], [], []
    for path in sorted(committed_dir.glob("*")):
        if not path.is_file():
            continue
        name = path.name
        if name not in sources:
            dropped.append(f"{name} (no new {name})")
            continue
        if file_sha256(path) == file_sha256(sources[name]):
            continue
        if name.endswith(".json"):
            old_runs, new_runs = _json_runs(path), _json_runs(sources[name])
            if old_runs is None or new_runs is None or any(run not in new_runs for run in old_runs.values()):
                lost = sorted(set(old_runs or {}) - set(new_runs or {}))
                (dropped if lost else changed).append(
                    f"{name}: " + (f"runs {', '.join(lost)} dropped" if lost else "committed runs' records changed"))
            else:
                added.append(f"{name}: {len(new_runs) - len(old_runs)} run(s) added")
            continue
        old, new = _table_rows(path), _table_rows(sources[name])
        if list(old.columns) != list(new.columns):
            changed.append(f"{name}: columns {list(old.columns)} became {list(new.columns)}")
            continue
        lost_runs = sorted(_runs_of(old) - _runs_of(new))
        if lost_runs:
            dropped.append(f"{name}: {len(lost_runs)} committed run(s) dropped ("
                           + ", ".join(f"{t}/{m}/seed{s}" for t, m, s in lost_runs[:6])
                           + (", ..." if len(lost_runs) > 6 else "") + ")")
            continue
        merged = old.merge(new.drop_duplicates(), how="left", indicator=True)
        missing = int((merged["_merge"] == "left_only").sum())
        if missing:
            changed.append(f"{name}: {missing} of {len(old)} committed rows changed or dropped")
        elif len(new) > len(old):
            added.append(f"{name}: {len(new) - len(old)} row(s) added"
                         + (f" ({len(_runs_of(new) - _runs_of(old))} new run(s))" if _runs_of(new) else ""))
    return {"dropped": dropped, "changed_files": changed, "added": added}


def _json_runs(path: Path) -> dict[str, object] | None:
    """items.json's runs by ``task/method/seed<k>`` (None when it is not such a file)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
        return {f"{run['task']}/{run['method']}/seed{run['seed']}": run for run in value["runs"]}
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def run_evidence_digests(root: Path, config: dict) -> dict[str, dict[str, str]]:
    """The digests of every committed run under the config's ``evidence_dir`` (relative run path → its
    :data:`~gdpo.evidence.MANIFEST`'s ``sha256``), each checked against its files first; {} without one.

    Raises:
        gdpo.files.DigestMismatch, gdpo.evidence.EvidenceInconsistent: a run's files differ from its manifest,
            or it has none.
    """
    evidence_dir = config.get("evidence_dir")
    if not evidence_dir or not (root / evidence_dir).is_dir():
        return {}
    digests = {}
    keys = committed(root / evidence_dir, trained=False)
    for task, method, seed in sorted(keys):
        run_dir = RunKey(task, method, seed, root / evidence_dir).path()
        digests[run_dir.relative_to(root).as_posix()] = check_run_evidence(run_dir)["sha256"]
    return digests


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


def input_hashes(published: Path, root: Path, config: dict) -> dict[str, str]:
    """SHA-256 of every input of the published ledger: each evidence file, the config, and the sim study
    files the bench ran (``config/sim/<study>.yaml``), by path relative to the repository."""
    files = sorted((published / "evidence").glob("*.csv")) + sorted((published / "evidence").glob("items.json"))
    files += [root / "config" / "sim" / f"{study}.yaml" for study in (config.get("sim") or {}).get("studies", [])]
    return {path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix(): file_sha256(path)
            for path in files if path.is_file()}


def verify_published(published: str | Path, root: str | Path | None = None) -> dict:
    """Check a published scale against its ``PROVENANCE.json``: every input's digest (``inputs``), and every
    committed run's files against their manifest and the digests ``run_evidence`` records. Returns the provenance.

    Raises:
        EvidenceChanged: a file differs from its recorded digest or is missing (file, recorded and found digest).
        gdpo.evidence.EvidenceInconsistent: a committed run's files disagree with each other.
    """
    published = Path(published)
    root = Path(root) if root is not None else published.resolve().parents[1]
    provenance = _read_provenance(published)
    if provenance is None:
        raise FileNotFoundError(f"{published / 'PROVENANCE.json'} does not exist: {published} is not published.")
    changes = published_changes(published, root, provenance)
    if changes:
        raise EvidenceChanged(f"{published} differs from the digests its PROVENANCE.json records: "
                              + "; ".join(_describe(changes)) + f". {_CHANGED_FIX}")
    return provenance


def published_changes(published: Path, root: Path, provenance: dict) -> dict[str, tuple[str, str]]:
    """Every recorded digest of a published scale that its files no longer have: path → (recorded, found);
    ``found`` is ``"missing"`` for a file that is gone. Committed runs are checked against their manifests
    first (a tampered run stops with its file named)."""
    changes = {}
    for path, digest in (provenance.get("inputs") or {}).items():
        found = file_sha256(root / path) if (root / path).is_file() else "missing"
        if found != digest:
            changes[path] = (digest, found)
    for run, files in (provenance.get("run_evidence") or {}).items():
        run_dir = root / run
        if not (run_dir / MANIFEST).is_file():
            changes[f"{run}/{MANIFEST}"] = ("recorded", "missing")
            continue
        manifest = check_run_evidence(run_dir)
        for name in sorted(set(files) | set(manifest["sha256"])):
            if files.get(name) != manifest["sha256"].get(name):
                changes[f"{run}/{name}"] = (files.get(name, "not recorded"), manifest["sha256"].get(name, "missing"))
    return changes


def _describe(changes: dict[str, tuple[str, str]]) -> list[str]:
    return [f"{path}: recorded sha256 {recorded}, found {found}" for path, (recorded, found) in sorted(changes.items())]


def republish_ledger(published: str | Path, root: str | Path = ".", amendment: Amendment | None = None) -> Path:
    """Rebuild a published scale's ``claims.csv`` and ``CLAIMS.md`` from its committed evidence with the current
    rules, and record in ``PROVENANCE.json`` the commit of the rules (``ledger_commit``) and the digest of every
    input (:func:`input_hashes`) and committed run (:func:`run_evidence_digests`). The evidence itself and the
    commit that produced it are left as they were.

    Evidence that differs from the digests PROVENANCE.json records is refused unless ``amendment`` states who
    changed it and why; the amendment is kept in ``amendments`` with the digests it replaced.

    Raises:
        EvidenceChanged: the evidence differs from its provenance and no amendment is given (nothing is written).
    """
    import tempfile

    from gdpo.reporting.ledger import LEDGER_COLUMNS, ledger_markdown

    published, root = Path(published), Path(root)
    provenance = _read_provenance(published)
    if provenance is None:
        raise FileNotFoundError(f"{published / 'PROVENANCE.json'} does not exist: publish the scale first "
                                "(gdpo publish-results).")
    config = apply_grid({**load_config(root / provenance["config"]), "grid": provenance.get("grid", "default")})
    changes = published_changes(published, root, provenance)
    inputs, run_evidence = input_hashes(published, root, config), run_evidence_digests(root, config)
    # Inputs the record never held (a new evidence file, run digests recorded for the first time) are recorded;
    # an input that disappears is a change.
    changes.update({path: (digest, "missing") for path, digest in (provenance.get("inputs") or {}).items()
                    if path not in inputs and path not in changes})
    if changes and amendment is None:
        raise EvidenceChanged(f"{published}: the evidence differs from the digests PROVENANCE.json records ("
                              + "; ".join(_describe(changes)) + "), so the ledger is not rebuilt. " + _CHANGED_FIX)
    provenance["runs"] = described_runs(provenance, root)
    with tempfile.TemporaryDirectory() as workdir:
        ledger = rebuild_ledger(published, workdir, root=root, verify=False)
    ledger[LEDGER_COLUMNS].to_csv(published / "claims.csv", index=False, float_format="%.3f")
    (published / "CLAIMS.md").write_text(ledger_markdown(ledger, provenance["scale"]), encoding="utf-8")
    if changes:
        provenance.setdefault("amendments", []).append(amendment.record(root, replaced={
            path: {"recorded": recorded, "found": found} for path, (recorded, found) in sorted(changes.items())}))
    elif amendment is not None:
        provenance.setdefault("amendments", []).append(amendment.record(root, note="no evidence changed"))
    provenance["ledger_commit"] = _git_output("rev-parse", "HEAD", cwd=root)
    provenance["inputs"] = inputs
    if run_evidence:
        provenance["run_evidence"] = run_evidence
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


def rebuild_ledger(published: str | Path, workdir: str | Path, root: str | Path | None = None, verify: bool = True):
    """The ledger the current rules give on a published scale's evidence, built as the workflow builds it
    (the same relative paths, inside ``workdir``), after :func:`verify_published` (``verify``; ``root``: the
    repository, by default two folders above ``published``)."""
    from gdpo.reporting.ledger import build_ledger

    published, workdir = Path(published), Path(workdir)
    if verify:
        verify_published(published, root)
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
