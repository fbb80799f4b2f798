"""The driver of a long pre-registered experiment (scale cpu-evidence): runs in a fixed order, each finished
run's evidence committed as it finishes, a wall-time budget as the stopping rule.

Order: seed by seed, ascending (the first seed's batch also evaluates the base models), so that a stop at any
point leaves every method with the same seeds. Each batch is one Snakemake call for the evaluations of that
seed's runs (Snakemake trains what they need, two jobs at once on two cores); then every run of the batch that
finished is saved (:func:`gdpo.evidence.save_evidence`) and committed with the timeline. Committed runs are
skipped, so the driver resumes where the last machine stopped. A crashed batch is retried once; after a second
failure (counted over every start of the driver, from the timeline) its unfinished runs are left as failed and
the next seed goes on (the note reports every rerun). An attempt recorded with exit code ``"locked"`` never
started a job (a stopped driver's Snakemake lock was left behind) and is not counted; the driver now holds its
own lock and, before its first batch, clears a Snakemake lock that no live Snakemake holds (a stale one). A lock
held by a Snakemake that runs in the worktree is never broken: the driver stops, naming that process
(:func:`clear_stale_snakemake_lock`).

The budget counts the wall time of the batches in ``timeline.jsonl`` (committed beside the evidence): no new
batch starts once it is spent; the batch under way finishes. A batch whose driver is stopped (the machine's
session ends) still counts: while it runs, ``running.json`` says when it started and when it was last alive
(rewritten every minute, committed every half hour), and the next start of the driver records that span in the
timeline as a stopped attempt before it goes on. Durations are measured on a monotonic clock, which setting the
machine's clock does not move; no entry's seconds is negative (:func:`record_stopped_attempt`).
"""

from __future__ import annotations

import calendar
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gdpo.evidence import TIMELINE, committed, read_timeline, save_evidence
from gdpo.numerics import machine_record
from gdpo.plan import BASE_METHOD, EVAL_FILE, RunKey, plan_evaluations

RUNNING = "running.json"
#: Seconds by which a heartbeat's stamps (start to last alive) may differ from its own monotonic count before the
#: stopped attempt says the clocks disagree (both are written together; a small step of the clock is no news).
CLOCK_SLACK = 60.0
#: The driver's own lock, beside Snakemake's in the worktree (not committed).
DRIVER_LOCK = ".snakemake/gdpo-run-experiment.lock"
#: Where Snakemake keeps the locks of a workflow's working directory (``0.input.lock``, ``0.output.lock``, ...).
SNAKEMAKE_LOCKS = ".snakemake/locks"


class WorkflowLocked(RuntimeError):
    """Another driver, or a live Snakemake, runs in the worktree: starting a batch would train the same runs
    twice, into the same files."""


def failed_attempt(entry: dict) -> bool:
    """Whether a timeline entry is an attempt that failed: a non-zero exit code of Snakemake. A stopped attempt
    (``"stopped"``) and one that never started a job because of a stale lock (``"locked"``) are not."""
    code = entry["exit_code"]
    return isinstance(code, int) and code != 0


def hold_driver_lock(repo: Path):
    """Take the worktree's driver lock (an open file holding an exclusive ``flock``; keep it open while the
    driver runs). Raises ``RuntimeError`` naming the other driver's pid if one holds it: two drivers would
    train the same runs twice."""
    path = repo / DRIVER_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        other = handle.read().strip() or "unknown"
        handle.close()
        raise WorkflowLocked(f"Another `gdpo run-experiment` (pid {other}) is running in {repo}; stop it first "
                           f"(kill {other}) or wait for it to end.") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def snakemake_locks(repo: Path) -> list[Path]:
    """The lock files Snakemake keeps in ``repo`` (empty when no Snakemake holds or left a lock there)."""
    return sorted((Path(repo) / SNAKEMAKE_LOCKS).glob("*.lock"))


def _workflow_dir(cmdline: list[str], cwd: str | None) -> Path | None:
    """The working directory of a Snakemake command line: its ``--directory``/``-d``, else the process's own
    (None when neither is known)."""
    directory = None
    for index, arg in enumerate(cmdline):
        if arg in ("--directory", "-d") and index + 1 < len(cmdline):
            directory = cmdline[index + 1]
        elif arg.startswith("--directory="):
            directory = arg.split("=", 1)[1]
    if directory is None:
        return Path(cwd) if cwd else None
    if not Path(directory).is_absolute():
        if not cwd:
            return None
        directory = str(Path(cwd) / directory)
    return Path(directory)


def live_snakemake_processes(repo: Path) -> list[tuple[int, str]]:
    """The processes of this machine that run Snakemake on the workflow in ``repo``: a command line with a
    ``snakemake`` program or module (``snakemake …``, ``python -m snakemake …``, a job's own snakemake call)
    whose working directory (``--directory`` or the process's) is ``repo``. Returns ``(pid, command line)``
    pairs, this process left out. Processes whose working directory cannot be read (another user's) count when
    their command line names ``repo``."""
    import psutil

    repo = Path(repo).resolve()
    live = []
    for process in psutil.process_iter(["pid", "cmdline", "cwd"]):
        cmdline = process.info.get("cmdline") or []
        if process.info["pid"] == os.getpid() or not any(Path(arg).name == "snakemake" for arg in cmdline):
            continue
        directory = _workflow_dir(cmdline, process.info.get("cwd"))
        try:
            same = directory is not None and directory.resolve() == repo
        except OSError:
            same = False
        if same or (directory is None and any(str(repo) in arg for arg in cmdline)):
            live.append((process.info["pid"], " ".join(cmdline)))
    return live


def clear_stale_snakemake_lock(repo: Path, configfile: str, cores: int) -> bool:
    """Remove Snakemake's lock in ``repo`` if no live Snakemake holds it (:func:`live_snakemake_processes`):
    a lock left by a stopped driver would fail every batch at once. Returns whether a lock was cleared.

    Raises :class:`WorkflowLocked`, naming the live processes, when a Snakemake runs there: its lock is never
    broken (two Snakemakes would train the same runs into the same files)."""
    locks = snakemake_locks(repo)
    if not locks:
        return False
    unlock = ["snakemake", "--profile", "profiles/workstation", "--configfile", configfile, "--unlock"]
    holders = live_snakemake_processes(repo)
    if holders:
        described = "; ".join(f"pid {pid}: {command}" for pid, command in holders)
        raise WorkflowLocked(
            f"A Snakemake runs on the workflow in {repo} and holds its lock ({', '.join(p.name for p in locks)} in "
            f"{repo / SNAKEMAKE_LOCKS}): {described}. The driver does not break a live lock: wait for that run to "
            f"end, or stop it (kill {' '.join(str(pid) for pid, _ in holders)}), then start the driver again. A lock "
            f"that no running Snakemake holds (e.g. one on another machine sharing this directory has stopped) is "
            f"stale: clear it with `{' '.join(unlock)}` in {repo}.")
    print(f"Clearing a stale Snakemake lock in {repo / SNAKEMAKE_LOCKS} (no Snakemake runs there): "
          f"{' '.join(unlock)}", flush=True)
    subprocess.run([sys.executable, "-m", *unlock[:-1], "--cores", str(cores), "--unlock"], cwd=repo, check=False)
    return True


def experiment_batches(config: dict) -> list[list[RunKey]]:
    """The config's evaluations (:func:`gdpo.plan.plan_evaluations`: trained runs and base models)
    grouped by seed, ascending; within a batch, tasks and methods in config order, base models last."""
    by_seed: dict[int, list[RunKey]] = {}
    for evaluation in plan_evaluations(config):
        by_seed.setdefault(evaluation.seed, []).append(evaluation)
    return [sorted(runs, key=lambda r: r.method == BASE_METHOD) for _, runs in sorted(by_seed.items())]


def spent_hours(evidence_dir: Path) -> float:
    """Wall hours of the batches recorded in the timeline. An entry never takes hours back: a negative span (one
    an older driver recorded from clocks that disagree, :func:`record_stopped_attempt`) counts 0."""
    return sum(max(0.0, entry["seconds"]) for entry in read_timeline(evidence_dir)) / 3600


def _head(repo: Path) -> str | None:
    """The commit the batch ran from (the pre-registered one, or an evidence commit on top of it)."""
    process = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=False)
    return process.stdout.strip() or None


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _seconds(stamp: str) -> float:
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))


class Heartbeat:
    """``running.json`` of the batch under way: its timeline entry so far, the last time the driver was alive
    (``alive``) and the seconds it has been alive since (``alive_seconds``, on a monotonic clock), rewritten every
    ``every`` seconds and committed every ``commit_every`` seconds (when ``commit``), so that a stop of the machine
    loses at most that much of the budget's count. On each beat ``save_finished`` saves the runs of the batch that
    finished since the last one; they are committed at once (a batch lasts hours, a finished run's evidence should
    not wait for it)."""

    def __init__(self, repo: Path, evidence_dir: Path, entry: dict, commit: bool, every: float = 60.0,
                 commit_every: float = 1800.0, save_finished: Callable[[], list[str]] | None = None) -> None:
        self.repo, self.evidence_dir, self.path = repo, evidence_dir, evidence_dir / RUNNING
        self.entry, self.commit, self.save_finished = entry, commit, save_finished
        self.every, self.commit_every = every, commit_every
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _write(self, commit: bool) -> None:
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps({**self.entry, "alive": _now(),
                                       "alive_seconds": round(time.monotonic() - self._started, 1)}) + "\n",
                           encoding="utf-8")
        partial.replace(self.path)  # atomic: a reader never sees half a file
        if commit and self.commit:
            _git(self.repo, "add", "--", str(self.path.relative_to(self.repo)))
            _git(self.repo, "commit", "-m", f"cpu-evidence heartbeat: seed {self.entry['seed']} running since "
                 f"{self.entry['start']}", "--", str(self.path.relative_to(self.repo)))

    def _beat(self) -> None:
        last_commit = time.monotonic()
        while not self._stop.wait(self.every):
            due = time.monotonic() - last_commit >= self.commit_every
            self._write(commit=due)
            finished = self.save_finished() if self.save_finished else []
            if finished and self.commit:
                _git(self.repo, "add", "-A", "--", str(self.evidence_dir.relative_to(self.repo)))
                _git(self.repo, "commit", "-m", f"cpu-evidence evidence: {', '.join(finished)} finished (seed "
                     f"{self.entry['seed']}, attempt {self.entry['attempt']})")
            last_commit = time.monotonic() if due else last_commit

    def __enter__(self) -> Heartbeat:
        self._write(commit=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.path.unlink(missing_ok=True)


class FinishedRuns:
    """Saves the batch's runs whose evaluation exists (:func:`gdpo.evidence.save_evidence`), each once; called
    on every heartbeat and after the batch. ``saved`` lists the files saved so far."""

    def __init__(self, repo: Path, scale: str, evidence_dir: Path, runs: list[RunKey]) -> None:
        self.repo, self.scale, self.evidence_dir, self.runs = repo, scale, evidence_dir, runs
        self.done: set[tuple[str, str, int]] = set()
        self.saved: list[Path] = []

    def __call__(self) -> list[str]:
        """Save what finished since the last call; returns those runs as ``"task/method seed k"``."""
        finished = []
        for run in self.runs:
            key = (run.task, run.method, run.seed)
            run_dir = self.repo / run.path()
            if key in self.done or not (run_dir / EVAL_FILE).exists():
                continue
            try:
                self.saved += save_evidence(run_dir, run.under(self.evidence_dir).path(),
                                            trained=run.method != BASE_METHOD)
            except ValueError:
                continue  # not finished: saved on a later call, or reported by the exit code
            self.done.add(key)
            finished.append(f"{run.task}/{run.method} seed {run.seed}")
        return finished


def record_stopped_attempt(evidence_dir: Path) -> dict | None:
    """If ``running.json`` is left by a driver that was stopped, append its span to the timeline as a stopped
    attempt, remove the file and return the entry; else None.

    The span is the heartbeat's ``alive_seconds`` (a monotonic clock), or for a heartbeat written before it was
    kept, last alive minus start. Its seconds are never negative: a last beat stamped before the start (the
    machine's clock was set back while the batch ran) leaves the span unknown; it counts 0 s (the budget loses
    at most that batch) and the entry says so under ``clocks_disagree``."""
    path = evidence_dir / RUNNING
    if not path.exists():
        return None
    running = json.loads(path.read_text(encoding="utf-8"))
    alive, alive_seconds = running.pop("alive"), running.pop("alive_seconds", None)
    span = _seconds(alive) - _seconds(running["start"])
    seconds = span if alive_seconds is None else alive_seconds
    entry = {**running, "seconds": round(max(0.0, seconds), 1), "exit_code": "stopped"}
    if alive_seconds is None and span < 0:
        entry["clocks_disagree"] = (f"last alive {alive} is before its start {running['start']} ({span:+.0f} s): "
                                    "the machine's clock was set back while the batch ran; counted as 0 s")
    elif alive_seconds is not None and abs(span - alive_seconds) > CLOCK_SLACK:
        entry["clocks_disagree"] = (f"start {running['start']} to last alive {alive} is {span:+.0f} s, the "
                                    f"heartbeat's own clock {alive_seconds:.0f} s: the machine's clock was changed "
                                    "while the batch ran; counted by the heartbeat's clock")
    with (evidence_dir / TIMELINE).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    path.unlink()
    return entry


def run_experiment(config: dict, configfile: str, repo: str | Path, cores: int = 2, budget_hours: float = 12.0,
                   commit: bool = True, attempts: int = 2, snakemake_args: tuple[str, ...] = (),
                   heartbeat_seconds: float = 60.0) -> int:
    """Run the experiment's batches in order from the repository ``repo`` (the pre-registered worktree); see
    the module docstring. A batch gets ``attempts`` tries in total over every start of the driver (stops of the
    machine not counted); one that fails them all is left and the next seed goes on. Returns 0 when every
    planned run is committed, 3 when the budget stopped it, else the exit code of the last batch that failed
    ``attempts`` times."""
    repo = Path(repo).resolve()
    (repo / config["evidence_dir"]).mkdir(parents=True, exist_ok=True)
    with hold_driver_lock(repo):
        return _run_batches(config, configfile, repo, cores, budget_hours, commit, attempts, snakemake_args,
                            heartbeat_seconds)


def _run_batches(config: dict, configfile: str, repo: Path, cores: int, budget_hours: float, commit: bool,
                 attempts: int, snakemake_args: tuple[str, ...], heartbeat_seconds: float) -> int:
    scale, evidence_dir = config["scale"], repo / config["evidence_dir"]
    failure, unlocked = 0, False
    stopped = record_stopped_attempt(evidence_dir)
    if stopped is not None:
        print(f"Recorded a stopped attempt of seed {stopped['seed']}: {stopped['seconds'] / 3600:.2f} h"
              + (f" ({stopped['clocks_disagree']})." if "clocks_disagree" in stopped else "."), flush=True)
        if commit:
            _git(repo, "add", "-A", "--", str(evidence_dir.relative_to(repo)))
            _git(repo, "commit", "-m", f"{scale} timeline: seed {stopped['seed']}, attempt {stopped['attempt']} "
                 f"stopped after {stopped['seconds'] / 3600:.2f} h")
    for batch in experiment_batches(config):
        done_runs, done_evals = committed(evidence_dir, trained=True), committed(evidence_dir, trained=False)
        pending = [r for r in batch if (r.task, r.method, r.seed) not in
                   (done_evals if r.method == BASE_METHOD else done_runs & done_evals)]
        if not pending:
            continue
        spent = spent_hours(evidence_dir)
        if spent >= budget_hours:
            print(f"Budget of {budget_hours:g} h spent ({spent:.2f} h in {TIMELINE}); "
                  f"stopping before seed {batch[0].seed}: {len(pending)} planned runs of it not run.", flush=True)
            return 3
        targets = [str(r.path() / EVAL_FILE) for r in pending]
        failed_before = [e for e in read_timeline(evidence_dir) if e["seed"] == batch[0].seed and failed_attempt(e)]
        if len(failed_before) >= attempts:
            # at most `attempts` in total, over every start of the driver: no run is tried until it succeeds
            print(f"Seed {batch[0].seed} failed {len(failed_before)} times; its {len(pending)} unfinished runs "
                  "are reported as failed, not tried again.", flush=True)
            failure = failed_before[-1]["exit_code"]
            continue
        if not unlocked:
            # A Snakemake lock left by a stopped driver is stale and would fail every batch at once; one that a
            # live Snakemake holds (started by hand beside the driver) stops the driver instead.
            clear_stale_snakemake_lock(repo, configfile, cores)
            unlocked = True
        for attempt in range(len(failed_before) + 1, attempts + 1):
            started = time.monotonic()  # a batch's seconds, whatever the machine's clock is set to meanwhile
            entry = {"seed": batch[0].seed, "runs": [f"{r.task}/{r.method}" for r in pending],
                     "commit": _head(repo), "attempt": attempt, "start": _now(),
                     # which kind of machine ran it: the wall time per kind, and runs split by it
                     "machine": machine_record(),
                     "cpu_numerics": config.get("cpu_numerics", "native")}
            finished_runs = FinishedRuns(repo, scale, evidence_dir, pending)
            with Heartbeat(repo, evidence_dir, entry, commit, every=heartbeat_seconds, save_finished=finished_runs):
                process = subprocess.run(
                    [sys.executable, "-m", "snakemake", "--profile", "profiles/workstation", "--configfile",
                     configfile, "--cores", str(cores), *snakemake_args, *targets], cwd=repo, check=False)
            entry = {**entry, "seconds": round(time.monotonic() - started, 1), "exit_code": process.returncode}
            with (evidence_dir / TIMELINE).open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")
            finished_runs()
            saved = finished_runs.saved
            if commit:
                # the whole evidence directory: the saved runs, the timeline and running.json's removal
                _git(repo, "add", "-A", "--", str(evidence_dir.relative_to(repo)))
                _git(repo, "commit", "-m", f"{scale} evidence: seed {entry['seed']}, attempt {attempt}, "
                     f"{len(saved)} files ({', '.join(entry['runs'])})")
            if process.returncode == 0:
                break
        else:
            failure = process.returncode
    return failure
