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

Evidence proves itself: saving a run writes :data:`MANIFEST` beside its files, the SHA-256 of each and the
steps its summary states. Restoring and aggregation check every file against it and check that the files agree
with each other (:func:`check_consistency`: the metrics' last step is the summary's, each file parses as what it
is), and stop naming the file, the recorded and the found digest.

What a reader can rely on: a digest and its file can be rewritten together by the same hand, so restoring also
checks every committed run against the commit that first added its manifest (:func:`check_anchored`): the
evidence counted is byte for byte what was committed when the run finished (the driver commits each run as it
ends, beside its timeline entry). An edit after that, digests included, is refused; only rewriting the
repository's history would pass, and that shows against any earlier clone or the published repository.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from gdpo.files import MANIFEST, SAMPLE_FILE, DigestMismatch, check_digests, file_sha256, manifest_digests
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
# MANIFEST (gdpo.files): a committed run's record of its own files (write_manifest): {"sha256": {name: digest},
# "steps": summary.json's steps or None, "recorded": {"by": ..., "note": ...}}. Restored with the run into results/.
#: What to do when committed evidence does not match its digests.
_TAMPERED_FIX = ("Restore the committed files (git checkout -- <file>, or git log -- <file> to see what changed "
                 "them); evidence that is meant to change is republished as a stated amendment, never edited in place.")


class EvidenceInconsistent(ValueError):
    """A run's files disagree with each other or do not parse as what they are (e.g. fewer metrics lines than
    the steps its summary states)."""


def _json_object(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EvidenceInconsistent(f"{path} is not valid JSON ({error}); restore it from git or re-run its job.") \
            from error
    if not isinstance(value, dict):
        raise EvidenceInconsistent(f"{path} holds a JSON {type(value).__name__}, not an object; restore it from git "
                                   "or re-run its job.")
    return value


def metrics_steps(path: str | Path) -> list[int]:
    """The ``step`` of every line of a run's ``metrics.jsonl``, in order.

    Raises:
        EvidenceInconsistent: a line is not a JSON object with an integer ``step``, or the steps do not increase.
    """
    steps: list[int] = []
    path = Path(path)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise EvidenceInconsistent(f"{path} line {number} is not valid JSON ({error}): the file is cut or "
                                           "edited; restore it from git or re-run its train job.") from error
            step = record.get("step") if isinstance(record, dict) else None
            if not isinstance(step, int) or isinstance(step, bool):
                raise EvidenceInconsistent(f"{path} line {number} has no integer 'step'; restore it from git or re-run "
                                           "its train job.")
            if steps and step <= steps[-1]:
                raise EvidenceInconsistent(f"{path} line {number}: step {step} after step {steps[-1]} (steps must "
                                           "increase); restore it from git or re-run its train job.")
            steps.append(step)
    return steps


def check_consistency(run_dir: str | Path) -> None:
    """Check that a run directory's files parse as what they are and agree with each other: ``summary.json``,
    ``config.json``, ``env.json`` and ``eval.json`` are JSON objects (eval.json with a ``benchmarks`` object, the
    summary with integer ``steps``), and ``metrics.jsonl``'s steps increase up to the summary's ``steps``.
    Files that are absent are not checked (a base model has eval.json only).

    Raises:
        EvidenceInconsistent: naming the file and what is wrong.
    """
    run_dir = Path(run_dir)
    parsed = {name: _json_object(run_dir / name) for name in ("config.json", "env.json") if (run_dir / name).is_file()}
    if (run_dir / EVAL_FILE).is_file():
        evaluation = _json_object(run_dir / EVAL_FILE)
        if not isinstance(evaluation.get("benchmarks"), dict):
            raise EvidenceInconsistent(f"{run_dir / EVAL_FILE} has no 'benchmarks' object; restore it from git or "
                                       "re-run its evaluation.")
        _check_evaluated_weights(run_dir, evaluation, parsed.get("env.json"))
    summary_steps = None
    if (run_dir / "summary.json").is_file():
        summary_steps = _json_object(run_dir / "summary.json").get("steps")
        if not isinstance(summary_steps, int) or isinstance(summary_steps, bool) or summary_steps < 0:
            raise EvidenceInconsistent(f"{run_dir / 'summary.json'} states no step count ('steps': "
                                       f"{summary_steps!r}); restore it from git or re-run its train job.")
    if (run_dir / "metrics.jsonl").is_file():
        steps = metrics_steps(run_dir / "metrics.jsonl")
        last = steps[-1] if steps else 0
        if summary_steps is not None and last != summary_steps:
            raise EvidenceInconsistent(
                f"{run_dir / 'metrics.jsonl'} ends at step {last} ({len(steps)} lines) but {run_dir / 'summary.json'} "
                f"states {summary_steps} steps: the metrics are cut or the summary is not this run's; restore both "
                "from git or re-run the train job.")


def _check_evaluated_weights(run_dir: Path, evaluation: dict, env: dict | None) -> None:
    """The evaluation read the weights this run saved: eval.json's ``adapter_weights_sha256`` equals env.json's
    ``saved_model.weights_sha256`` where both are recorded (runs and evaluations made before either was kept are
    not checked). An evaluation of another run's adapter, or of an adapter saved again after it was evaluated,
    would otherwise stand beside this run's curves unnoticed."""
    evaluated = evaluation.get("adapter_weights_sha256")
    if not evaluated or env is None:
        return
    saved = (env.get("saved_model") or {}).get("weights_sha256")
    if saved and saved != evaluated:
        raise EvidenceInconsistent(
            f"{run_dir / EVAL_FILE} evaluated weights {evaluated[:12]}… but {run_dir / 'env.json'} records that this run saved "
            f"{saved[:12]}…: the evaluation is of another model; delete eval.json and re-run the run's evaluate "
            "job (snakemake remakes it), or restore both files from git.")


def write_manifest(run_dir: str | Path, names: Iterable[str], recorded: Mapping | None = None) -> dict:
    """Write :data:`MANIFEST` in ``run_dir``: the SHA-256 of each of ``names`` (files of ``run_dir``) and the
    steps ``summary.json`` states; ``recorded`` says who recorded it and when (e.g. a commit). Returns it.

    Callers check the files first (:func:`check_consistency`): a manifest vouches only for files that agree.
    """
    run_dir = Path(run_dir)
    summary = run_dir / "summary.json"
    manifest = {
        "sha256": {name: file_sha256(run_dir / name) for name in sorted(names)},
        "steps": _json_object(summary)["steps"] if summary.is_file() else None,
        "recorded": dict(recorded or {}),
    }
    (run_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def read_manifest(run_dir: str | Path) -> dict:
    """A run directory's :data:`MANIFEST`.

    Raises:
        DigestMismatch: there is none, or it is not a manifest (evidence without digests cannot prove itself).
    """
    path = Path(run_dir) / MANIFEST
    if manifest_digests(run_dir) is None:
        raise DigestMismatch(f"{path} does not exist: the evidence in {Path(run_dir)} has no digests to check it "
                             "against. Evidence saved by `gdpo run-experiment` has one; for evidence committed before "
                             "digests were kept, record them once from the committed files with "
                             "`python -m gdpo record-digests <evidence_dir>`.")
    return json.loads(path.read_text(encoding="utf-8"))


def check_run_evidence(run_dir: str | Path, names: Iterable[str] | None = None) -> dict:
    """Check a run directory against its :data:`MANIFEST`: each of ``names`` (default: every file the manifest
    records) has its recorded digest, the manifest's ``steps`` are the summary's, and the files agree
    (:func:`check_consistency`). Returns the manifest.

    Raises:
        DigestMismatch: a file differs from its digest, is missing, or is not recorded (file, recorded, found).
        EvidenceInconsistent: the files disagree with each other.
    """
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    recorded = manifest["sha256"]
    wanted = list(recorded) if names is None else list(names)
    unrecorded = [name for name in wanted if name not in recorded]
    if unrecorded:
        raise DigestMismatch(f"{run_dir / MANIFEST} records no digest for {', '.join(unrecorded)}: these files were "
                             f"added after the run was saved. {_TAMPERED_FIX}")
    check_digests({name: recorded[name] for name in wanted}, run_dir, str(run_dir / MANIFEST), _TAMPERED_FIX)
    check_consistency(run_dir)
    if manifest.get("steps") is not None and (run_dir / "summary.json").is_file():
        stated = _json_object(run_dir / "summary.json").get("steps")
        if stated != manifest["steps"]:
            raise EvidenceInconsistent(f"{run_dir / 'summary.json'} states {stated} steps, its manifest "
                                       f"{manifest['steps']}. {_TAMPERED_FIX}")
    return manifest


def _git(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=run_dir, capture_output=True, check=False)


def check_anchored(run_dir: str | Path) -> str | None:
    """Check a committed run against the commit that first added its :data:`MANIFEST` (its anchor): every file
    of ``run_dir`` must be byte for byte what that commit holds. A digest and the file it vouches for can be
    rewritten by the same hand; the commit that added them cannot without rewriting the history every clone
    holds. Returns the anchoring commit, or None where there is none to check against (``run_dir`` is outside a
    git work tree, git is not installed, or the manifest is not committed yet: a run just saved).

    A path can hold a new run only where the run it held before is kept: a pilot design dropped for a new one
    moves its runs aside (``git mv`` to a ``dropped/`` folder) and saves the new design's runs at the same paths.
    So where the manifest was added more than once, a later addition becomes the anchor only if the manifest the
    previous anchor added is still in the work tree elsewhere, byte for byte (that copy is itself a run checked
    against its own anchor). A run removed and added again edited, the old one kept nowhere, is still checked
    against the first addition, and refused.

    Raises:
        DigestMismatch: a file differs from the anchoring commit, or is absent from it (naming both).
    """
    run_dir = Path(run_dir)
    try:
        found = _git(run_dir, "log", "--diff-filter=A", "--format=%H", "--", MANIFEST)
    except (FileNotFoundError, NotADirectoryError):  # no git on this machine, or no such directory
        return None
    added = found.stdout.decode().split() if found.returncode == 0 else []
    if not added:
        return None
    anchor = _anchor(run_dir, added[::-1])
    # the data files first: an edited number is named before the manifest rewritten to cover it
    for path in sorted((p for p in run_dir.iterdir() if p.is_file()), key=lambda p: (p.name == MANIFEST, p.name)):
        committed_bytes = _git(run_dir, "show", f"{anchor}:./{path.name}")
        if committed_bytes.returncode != 0:
            raise DigestMismatch(f"{path} is not in commit {anchor[:12]}, which added {run_dir / MANIFEST}: it was "
                                 f"added after the run was committed. {_TAMPERED_FIX}")
        if committed_bytes.stdout != path.read_bytes():
            superseded = (f" The manifest was added again later ({', '.join(c[:12] for c in added[:-1])}), but the run "
                          f"it replaced is kept nowhere else in the work tree: a run replaced by a new one is moved "
                          f"aside (git mv to a dropped/ folder), never overwritten." if anchor != added[0] else "")
            raise DigestMismatch(f"{path} differs from the file commit {anchor[:12]} added with {run_dir / MANIFEST}"
                                 f" (sha256 then {hashlib.sha256(committed_bytes.stdout).hexdigest()}, now "
                                 f"{file_sha256(path)}): committed evidence was edited after the run was "
                                 f"committed, its digests with it or not.{superseded} {_TAMPERED_FIX}")
    return anchor


def _anchor(run_dir: Path, additions: list[str]) -> str:
    """The commit ``run_dir``'s files are checked against, from the commits that added its manifest, oldest first:
    the first, replaced by each later one while the manifest its predecessor added is kept elsewhere in the work
    tree (:func:`check_anchored`)."""
    anchor = additions[0]
    for later in additions[1:]:
        previous = _git(run_dir, "show", f"{anchor}:./{MANIFEST}")
        if previous.returncode != 0 or not _kept_elsewhere(run_dir, previous.stdout):
            break
        anchor = later
    return anchor


def _kept_elsewhere(run_dir: Path, manifest_bytes: bytes) -> bool:
    """Whether a tracked :data:`MANIFEST` other than ``run_dir``'s holds exactly ``manifest_bytes`` in the work tree."""
    top = _git(run_dir, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        return False
    root = Path(top.stdout.decode().strip())
    listed = _git(root, "ls-files", "-z", "--", f"*{MANIFEST}")
    own = (run_dir / MANIFEST).resolve()
    for name in listed.stdout.decode().split("\0"):
        path = root / name
        if name and path.name == MANIFEST and path.resolve() != own and path.is_file() \
                and path.read_bytes() == manifest_bytes:
            return True
    return False


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

    Writes :data:`MANIFEST` beside the copies (their digests). Raises ``ValueError`` naming the missing files when
    the run has not finished (nothing is written then), and :class:`EvidenceInconsistent` when its files disagree.
    """
    run_dir, dest = Path(run_dir), Path(dest)
    names = (*RUN_FILES, EVAL_FILE) if trained else (EVAL_FILE,)
    missing = [name for name in names if not (run_dir / name).is_file()]
    if missing:
        raise ValueError(f"{run_dir} has not finished: {', '.join(missing)} missing; train and evaluate it first "
                         f"(snakemake {run_dir / EVAL_FILE}).")
    check_consistency(run_dir)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        shutil.copyfile(run_dir / name, dest / name)
        written.append(dest / name)
    sample = completion_sample(run_dir / "eval")
    if sample:
        (dest / SAMPLE_FILE).write_text("\n".join(sample) + "\n", encoding="utf-8")
        written.append(dest / SAMPLE_FILE)
    write_manifest(dest, [path.name for path in written], {"by": "gdpo run-experiment (save_evidence)"})
    written.append(dest / MANIFEST)
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


def _as_trained_on(expected: Mapping, committed_env: Mapping) -> Mapping:
    """``expected`` as the trainer realised it on the committed run's machine: on a CPU whose bfloat16 work ran
    in float32 (env.json's ``precision.cpu_bf16_runs_in``: emulated bfloat16, or the portable numeric setting)
    ``train`` turns ``trl.bf16`` off and records that in config.json (:mod:`gdpo.training.run`), so a config
    asking for bf16 is the committed run's design there, not another one. Any other difference still counts."""
    trl = expected.get("trl")
    ran_in_float32 = (committed_env.get("device") == "cpu"
                      and (committed_env.get("precision") or {}).get("cpu_bf16_runs_in") == "float32")
    if isinstance(trl, Mapping) and trl.get("bf16") and ran_in_float32:
        return {**expected, "trl": {**trl, "bf16": False}}
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


def _recorded_numerics(record: Mapping) -> str:
    """The numeric setting (``cpu_numerics``, :mod:`gdpo.numerics`) a committed env.json or eval.json recorded
    (its ``numerics.setting``); ``native`` where none is recorded (made before the setting existed, when every
    job computed natively)."""
    numerics = record.get("numerics")
    return numerics.get("setting", "native") if isinstance(numerics, Mapping) else "native"


def restore(src: str | Path, run_dir: str | Path, names: Iterable[str], expected: Mapping | None = None,
            numerics: str | None = None) -> None:
    """Copy committed evidence ``names`` from ``src`` into ``run_dir``.

    ``expected``: the settings the config asks for, as data (for a trained run
    ``resolve_run_settings(...).to_dict()``, for an evaluation ``resolve_eval_settings(...).to_dict()``, both in
    :mod:`gdpo.plan`; the rules pass their ``to_json()``); every key must equal the committed one
    (``config.json``, or eval.json's ``settings``; ``trl.bf16`` as the run's machine realised it,
    :func:`_as_trained_on`), else ``ValueError`` lists the differences and nothing is copied. ``numerics``: the
    config's ``cpu_numerics``; the committed run (or evaluation) must have recorded the same setting
    (:func:`_recorded_numerics`), else ``ValueError``: a run computed natively on one machine is not the
    portable design, whatever its other settings. First every file is checked against the committed
    :data:`MANIFEST` (:func:`check_run_evidence`: :class:`~gdpo.files.DigestMismatch` or
    :class:`EvidenceInconsistent`, nothing copied) and, where the run is committed, against the commit that
    added it (:func:`check_anchored`); the manifest is
    copied too where ``names`` hold the run's files or a base model's evaluation (one writer per run directory).
    """
    src, run_dir, names = Path(src), Path(run_dir), list(names)
    manifest = check_run_evidence(src, names)
    check_anchored(src)
    # A run's machine record is its env.json, an evaluation's its eval.json (read once for both checks).
    record_name = "env.json" if "env.json" in names else EVAL_FILE
    record = (json.loads((src / record_name).read_text(encoding="utf-8"))
              if (numerics is not None or expected is not None) and record_name in names else {})
    if numerics is not None and (committed_numerics := _recorded_numerics(record)) != numerics:
        raise ValueError(
            f"The committed evidence in {src} was computed under cpu_numerics: {committed_numerics}, and the "
            f"config asks for {numerics} (gdpo.numerics): restore the config of the pre-registered design, or "
            "move the evidence away to run this design afresh.")
    if expected is not None:
        if "config.json" in names:
            committed_settings = json.loads((src / "config.json").read_text(encoding="utf-8"))
            expected = _as_trained_on(expected, record)
        else:
            committed_settings = record.get("settings") or {}
        differences = _differences(committed_settings, _design(expected))
        if differences:
            raise ValueError(
                f"The committed evidence in {src} was made with other settings than the config asks for ("
                + "; ".join(differences) + "). Restore the config of the pre-registered design, or move the "
                "evidence away to run this design afresh.")
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(src / name, run_dir / name)
    # restore_run and restore_eval of one trained run may run at once: only the run's restore writes the manifest.
    if "config.json" in names or "config.json" not in manifest["sha256"]:
        shutil.copyfile(src / MANIFEST, run_dir / MANIFEST)


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
    (:func:`gdpo.files.weights_digest`'s convention: file names and bytes), its logged steps, the step at which
    non-finite gradients stopped it (``summary.json``'s ``stopped_early``; None if none) and its evaluated
    items × samples."""
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
        summary_path = run_dir / "summary.json"
        summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
        records.append({
            **key.identity(),
            "commit": env.get("git_commit"),
            "start_model_sha256": (env.get("start_model") or {}).get("weights_sha256"),
            "evaluated_model_sha256": evaluation.get("model_weights_sha256"),
            "evaluated_adapter_sha256": evaluation.get("adapter_weights_sha256"),
            "logged_steps": steps,
            # a run whose gradients went non-finite: stopped after that step, with the last finite weights
            "stopped_early_step": (summary.get("stopped_early") or {}).get("step"),
            "eval_items": settings.get("eval_size"),
            "eval_samples_per_item": settings.get("num_samples", 1),
            "eval_seconds": evaluation.get("eval_seconds"),
        })
    return sorted(records, key=lambda r: (r["task"], r["method"], r["seed"]))


def record_digests(evidence_dir: str | Path) -> list[Path]:
    """Write :data:`MANIFEST` for every committed run under ``evidence_dir`` that has none (evidence committed
    before digests were kept), from the files exactly as git has them at HEAD. Returns the manifests written.

    Each manifest's ``recorded`` names the commit that last changed the run's files, so a reader can check the
    digests against that commit's blobs.

    Raises:
        ValueError: a run's files are untracked or differ from HEAD (digests must be of committed evidence:
            commit or restore them first); nothing is written for any run then.
    """
    root = Path(evidence_dir)
    pending = [seed_dir for seed_dir in (run_key_dir(root, *key) for key in sorted(committed(root, trained=False)))
               if not (seed_dir / MANIFEST).exists()]

    def git(*args: str, cwd: Path) -> str:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()

    records = []
    for seed_dir in pending:
        names = sorted(path.name for path in seed_dir.iterdir() if path.is_file())
        dirty = git("status", "--porcelain", "--untracked-files=all", "--", ".", cwd=seed_dir)
        if dirty:
            raise ValueError(f"{seed_dir} has files that differ from HEAD or are untracked ({dirty.splitlines()[0]} "
                             "...): digests are recorded only for committed evidence; commit or restore it first.")
        check_consistency(seed_dir)
        records.append((seed_dir, names, git("log", "-1", "--format=%H", "--", ".", cwd=seed_dir)))
    written = []
    for seed_dir, names, commit in records:
        write_manifest(seed_dir, names, {"by": "gdpo record-digests", "files_committed_at": commit,
                                         "note": "recorded after the run was committed, from its committed files"})
        written.append(seed_dir / MANIFEST)
    return written


def check_run_dir(run_dir: str | Path) -> None:
    """The check aggregation makes of a run directory under ``results/``: its files agree
    (:func:`check_consistency`), and where the run was restored from committed evidence (its :data:`MANIFEST`
    beside), every restored file still has its committed digest.

    Raises:
        DigestMismatch, EvidenceInconsistent: naming the file.
    """
    run_dir = Path(run_dir)
    if (run_dir / MANIFEST).is_file():
        recorded = read_manifest(run_dir)["sha256"]
        check_run_evidence(run_dir, [name for name in recorded if (run_dir / name).is_file()])
    else:
        check_consistency(run_dir)
