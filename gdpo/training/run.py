"""One training run: ``train(settings)`` from a run's :class:`gdpo.plan.RunSettings` to the files of the run.

Layout of a run directory ``results/<scale>/runs/<task>/<method>/seed<seed>/``:

- ``metrics.jsonl`` — one line per optimizer step (TRL's metrics plus the suite's);
- ``model/`` — the final model (or LoRA adapter) and tokenizer;
- ``config.json`` — the run's settings (:meth:`gdpo.plan.RunSettings.to_dict`) with TRL's completed
  arguments and the number of processes;
- ``env.json`` — package versions, git commit, device, threads;
- ``summary.json`` — final metrics and the divergence step (C5);
- ``logs/<backend>/`` — only with the config's ``training.report_to``: the live logs of TensorBoard, trackio or
  W&B (:mod:`gdpo.training.tracking`), not among the workflow's declared outputs.

Resumable state lives beside it in ``…/seed<seed>.work/`` (checkpoints and the live metrics), outside the
workflow's declared outputs, so an interrupted run resumes from its last checkpoint (one with a file cut short is
named, and the previous complete one resumed: :func:`resumable_checkpoint`). ``run_settings.json``
there records the settings the checkpoints were trained under (:func:`run_identity`, with their digest): a run
resumes only under the same ones, and otherwise stops naming the settings that differ
(:class:`SettingsChanged`); ``gdpo train --restart-changed`` or ``GDPO_RESTART_CHANGED=1`` deletes such a
run's checkpoints and trains it afresh.

A run longer than a cluster's wall limit is a chain of jobs (:func:`gdpo.plan.plan_training_chain`): each job
but the last trains to its ``stop_at_step``, saves a checkpoint there and leaves the run directory alone; the
last one resumes and writes it. SIGURG (the workflow's warning before a job's wall limit, ``sbatch --signal``:
:mod:`gdpo.training.checkpoint_plan`), SIGTERM (a preemption, the limit itself) or SIGUSR1 makes a job save a
checkpoint at the next generation-batch boundary and stop (:class:`TrainingInterrupted`, ``gdpo train`` exits 75),
so that the next job resumes there and trains the run an uninterrupted job would have.

Under a multi-process launch (``accelerate launch``/``torchrun``, the config's ``launch:`` section) every
process runs :func:`train`; only the main process writes the files above. With the environment variable
``GDPO_ADVANTAGE_AUDIT`` set to a directory, every process also records the advantages it trains on in
``$GDPO_ADVANTAGE_AUDIT/<task>/<method>/seed<seed>/advantages.process<k>.jsonl``
(:meth:`gdpo.training.trainer.RegistryGRPOTrainer._write_advantage_audit`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import torch

from gdpo.curve_events import detect_divergence
from gdpo.files import weights_digest
from gdpo.generation.precision import check_numerics, cpu_dtype, numerics_record, precision_record
from gdpo.numerics import cpuinfo_fields
from gdpo.plan import RunSettings, report_backends, updates_per_generation
from gdpo.tasks import get_family
from gdpo.training.device import GPURequiredError, check_device  # noqa: F401 (re-exported)
from gdpo.training.rewards import guard_reward_function
from gdpo.training.tracking import (
    backend_environment,
    check_backends_installed,
    reporting_arguments,
    run_logs_dir,
)

#: Metric keys that measure time, not behaviour: excluded when comparing runs for reproducibility.
TIMING_KEYS = ("seconds_per_step", "step_time", "generation/seconds", "generation/tokens_per_second", "train_runtime",
               "train_samples_per_second", "train_steps_per_second")

#: Environment variable: a directory for the per-process advantage audit (off when unset or empty).
ADVANTAGE_AUDIT_ENV = "GDPO_ADVANTAGE_AUDIT"

#: The packages whose versions every run records.
RECORDED_PACKAGES = ("torch", "transformers", "trl", "accelerate", "peft", "datasets", "numpy", "gdpo-repro")


class TrainingInterrupted(RuntimeError):
    """A stop signal ended the job early; its checkpoint is saved and running the job again resumes there."""


class SettingsChanged(RuntimeError):
    """The run's checkpoint was trained under other settings than the run's now (or under unrecorded ones):
    resuming would continue the old run under the new settings' name."""


class DamagedCheckpoint(ValueError):
    """The run's newest checkpoint has a file (weights, optimizer state) cut short or unreadable, and no complete
    checkpoint is before it: resuming would stop every rerun on safetensors' error, which names no file."""


#: The file in ``<run>.work`` recording the settings its checkpoints were trained under (:func:`run_identity`).
RUN_IDENTITY_FILE = "run_settings.json"
#: Environment variable: with ``1``, a run whose checkpoint was trained under other settings is started afresh
#: (its checkpoints deleted) instead of stopping; what ``gdpo train --restart-changed`` does, for the workflow.
RESTART_CHANGED_ENV = "GDPO_RESTART_CHANGED"
#: TRL arguments that change neither the trained weights nor the metrics (where live logs go, how often a
#: checkpoint is kept): a run may resume under other values of them.
NOT_DEFINING_TRL_ARGUMENTS = ("report_to", "save_steps")


def run_identity(settings: RunSettings, num_processes: int) -> dict:
    """What defines a run, so that resuming its checkpoint continues the same run: its settings
    (:meth:`gdpo.plan.RunSettings.to_dict`, but :data:`NOT_DEFINING_TRL_ARGUMENTS`) and the number of
    processes it trains on (each takes its share of a batch). Not in it: what one job of a chain is told
    (``stop_at_step``), the CPU threads, where the files go.

    Returns ``{"digest": sha256 hex of the canonical JSON of "settings", "settings": {...}}``.
    """
    defining = settings.to_dict()
    defining["trl"] = {k: v for k, v in defining["trl"].items() if k not in NOT_DEFINING_TRL_ARGUMENTS}
    defining["num_processes"] = num_processes
    canonical = json.dumps(defining, sort_keys=True, separators=(",", ":"), default=str)
    return {"digest": hashlib.sha256(canonical.encode()).hexdigest(), "settings": defining}


def _flatten(data: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def settings_differences(recorded: dict, current: dict) -> list[str]:
    """``"key: old -> new"`` for every setting that differs between two :func:`run_identity` settings (nested
    keys dotted, e.g. ``trl.learning_rate``; a key only one of them has shows ``(unset)`` on the other side)."""
    old, new = _flatten(recorded), _flatten(current)
    unset = "(unset)"
    return [f"{key}: {json.dumps(old[key]) if key in old else unset} -> {json.dumps(new[key]) if key in new else unset}"
            for key in sorted(set(old) | set(new)) if old.get(key, unset) != new.get(key, unset)]


def restart_fix(work_dir: Path) -> str:
    """How to start afresh a run whose checkpoint :func:`resume_refusal` refuses."""
    return (f"To train this run afresh under the current settings (deleting the checkpoints in {work_dir}), run "
            f"the workflow again with {RESTART_CHANGED_ENV}=1 in its environment (`{RESTART_CHANGED_ENV}=1 "
            "snakemake ...`) or pass --restart-changed to `gdpo train`; to continue the old run instead, put its "
            "settings back in the config.")


def resume_refusal(work_dir: Path, checkpoint: Path, identity: dict) -> str | None:
    """Why ``checkpoint`` may not be resumed under ``identity`` (:func:`run_identity`), or None when it was
    trained under the same settings. A checkpoint without a readable record (made before runs recorded their
    settings) is refused too: nothing says it is the same run."""
    record_path = work_dir / RUN_IDENTITY_FILE
    try:
        recorded = json.loads(record_path.read_text(encoding="utf-8"))
        recorded_digest, recorded_settings = recorded["digest"], recorded["settings"]
    except (OSError, ValueError, KeyError, TypeError):
        return (f"{checkpoint} has no record of the settings it was trained under ({record_path} is missing or "
                "unreadable: it was made before runs recorded them), so resuming it under the current settings "
                "could continue another run.")
    if recorded_digest == identity["digest"]:
        return None
    differences = settings_differences(recorded_settings, identity["settings"]) or [
        "(the recorded digest differs, but no setting does: the record was edited)"]
    return (f"{checkpoint} was trained under other settings than this run's; resuming it would continue the old "
            "run under the new settings' name. Settings that differ (checkpoint -> now):\n  "
            + "\n  ".join(differences))


#: Signals that make a training job save a checkpoint and stop: the workflow's warning before the wall limit
#: (``sbatch --signal=URG@<seconds>``: ignored by every other process of the job, :mod:`gdpo.training.checkpoint_plan`),
#: the scheduler's terminate, and SLURM's usual warning for a job script of one's own (``--signal=USR1@...``).
STOP_SIGNALS = (signal.SIGURG, signal.SIGTERM, signal.SIGUSR1)
#: Exit status of ``gdpo train`` stopped by a signal after saving its checkpoint (``EX_TEMPFAIL``: run again).
INTERRUPTED_EXIT_CODE = 75


@contextlib.contextmanager
def stop_requests() -> Iterator[list[int]]:
    """Within the block, :data:`STOP_SIGNALS` are recorded instead of killing the process.

    Yields the list the received signal numbers are appended to (the training loop reads it after each
    optimizer step); the previous handlers are restored on exit. Outside the main thread (no handlers there)
    it yields a list that stays empty.
    """
    received: list[int] = []
    try:
        previous = {number: signal.signal(number, lambda number, frame: received.append(number))
                    for number in STOP_SIGNALS}
    except ValueError:  # not the main thread: signals cannot be handled here
        previous = {}
    try:
        yield received
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def launched_processes() -> int:
    """How many processes the launcher started (``WORLD_SIZE``, set by torchrun and ``accelerate launch``)."""
    return int(os.environ.get("WORLD_SIZE") or 1)


def use_cpu_when_launched_without_cuda() -> None:
    """Under a multi-process launcher on a machine without CUDA, make the processes one CPU process group.

    accelerate's multi-process launcher (``distributed_type: MULTI_GPU``, which runs torchrun) and torchrun
    itself do not tell the processes to use the CPU; transformers then sets each process up as a separate
    single-process run, and the processes train independently and overwrite each other's files.
    ``ACCELERATE_USE_CPU`` makes transformers join them in one gloo process group instead.
    """
    if launched_processes() > 1 and not torch.cuda.is_available():
        os.environ.setdefault("ACCELERATE_USE_CPU", "true")


#: CPU flags that decide which kernels run (bfloat16 and int8 matrix units, vector widths).
KERNEL_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8")


def cpu_record(cpuinfo: str | None = None) -> dict:
    """The CPU's model name, its kernel-relevant flags (:data:`KERNEL_FLAGS`), and the vector instruction set
    torch's kernels dispatch to (``torch.backends.cpu.get_cpu_capability()``: e.g. AVX512, AVX2). Two machines
    that differ in any of these can round differently, so one seed need not give the same run on both.

    ``cpuinfo``: the text of /proc/cpuinfo (read when None; empty off Linux).
    """
    fields = cpuinfo_fields(cpuinfo)
    flags = set(fields.get("flags", "").split())
    return {
        "model": fields.get("model name") or platform.processor() or None,
        "kernel_flags": [flag for flag in KERNEL_FLAGS if flag in flags],
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
    }


def environment_record() -> dict:
    """Package versions, git commit, device, threads, CPU (:func:`cpu_record`), what its bfloat16 work runs in
    (:func:`gdpo.generation.precision.precision_record`) and its numeric setting
    (:func:`gdpo.generation.precision.numerics_record`) of this process."""
    versions = {}
    for package in RECORDED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                                cwd=Path(__file__).resolve().parents[2]).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "packages": versions,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git_commit": commit,
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "cuda_devices": torch.cuda.device_count(),
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "cpu": cpu_record(),
        "precision": precision_record(),
        "numerics": numerics_record(),
    }


def _metrics_callback(path: Path):
    from transformers import TrainerCallback

    class MetricsJsonl(TrainerCallback):
        """Appends one JSON line per logged step to ``path`` (TRL's logs + seconds per step)."""

        def __init__(self) -> None:
            self.step_start = None
            self.last_step_seconds = None

        def on_step_begin(self, args, state, control, **kwargs):
            self.step_start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            if self.step_start is not None:
                self.last_step_seconds = time.perf_counter() - self.step_start

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "train_runtime" in logs or not state.is_world_process_zero:
                return
            record = {"step": state.global_step, **logs}
            if self.last_step_seconds is not None:
                record["seconds_per_step"] = self.last_step_seconds
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    return MetricsJsonl()


def _stop_callback(stop_at_step: int | None, received: list[int], accelerator, boundary: int = 1):
    from transformers import TrainerCallback

    class StopAfterStep(TrainerCallback):
        """After an optimizer step, save a checkpoint and stop: at ``stop_at_step`` (a segment's end), or once
        a stop signal has been ``received`` (by any process: every process stops at the same step, as the
        checkpoint of a multi-process run is collective), at the first step after it that is a multiple of
        ``boundary`` (the updates per generation batch: TRL keeps a generation batch in memory, not in the
        checkpoint, so a run resumed between two generations would generate a new batch and differ)."""

        def __init__(self) -> None:
            self.stopped_by_signal = False

        def on_step_end(self, args, state, control, **kwargs):
            signalled = bool(received)
            if accelerator.num_processes > 1:
                flag = torch.tensor([float(signalled)], device=accelerator.device)
                signalled = bool(accelerator.gather(flag).max().item())
            target = min(stop_at_step or state.max_steps, state.max_steps)
            if state.global_step >= target:
                # A segment's end: its checkpoint is the next job's start (the last step saves the model).
                control.should_save = control.should_save or state.global_step < state.max_steps
                control.should_training_stop = True
            elif signalled and state.global_step % boundary == 0:
                self.stopped_by_signal = True
                control.should_save = True
                control.should_training_stop = True
            return control

    return StopAfterStep()


def _nonfinite_stop_callback(accelerator):
    from transformers import TrainerCallback

    class StopOnNonFiniteGradient(TrainerCallback):
        """Before an optimizer step whose gradients hold a NaN or ±inf (in any process), drop that step's
        gradients (the optimizer skips parameters without one, so the weights stay those of the last finite
        step) and stop training after it. The run then ends like any other: its model is saved, evaluated and
        counted, and ``stopped_at_step`` says where. Why stop rather than fail: a run that diverges from its
        own training is an outcome of its method, and leaving it out (with its seed's pair) would select the
        compared runs on their outcome. Gradients a sharded engine holds outside ``param.grad`` are not seen."""

        def __init__(self) -> None:
            self.stopped_at_step: int | None = None

        def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
            grads = [p.grad for p in (model.parameters() if model is not None else ()) if p.grad is not None]
            bad = any(not torch.isfinite(g).all() for g in grads)
            if accelerator.num_processes > 1:
                flag = torch.tensor([float(bad)], device=accelerator.device)
                bad = bool(accelerator.gather(flag).max().item())
            if bad:
                for parameter in model.parameters():
                    parameter.grad = None
                self.stopped_at_step = state.global_step + 1  # the step being taken (counted after it)
            return control

        def on_step_end(self, args, state, control, **kwargs):
            if self.stopped_at_step is not None:
                control.should_training_stop = True
            return control

    return StopOnNonFiniteGradient()


def _checkpoints(work_dir: Path) -> list[Path]:
    """The ``checkpoint-<step>`` directories of ``work_dir``, newest first."""
    return sorted(work_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]), reverse=True)


def _state_written(checkpoint: Path) -> bool:
    try:
        json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))
        return True
    except (OSError, ValueError):
        return False


def last_complete_checkpoint(work_dir: Path, delete_partial: bool = True) -> Path | None:
    """The newest checkpoint that was written completely; newer, partial ones are deleted (if asked).

    transformers writes ``trainer_state.json`` last (after model, optimizer and RNG states), so a
    checkpoint whose state file is missing or unreadable was interrupted while being written. Its other files are
    checked by :func:`resumable_checkpoint`.
    """
    for checkpoint in _checkpoints(work_dir):
        if _state_written(checkpoint):
            return checkpoint
        if delete_partial:
            shutil.rmtree(checkpoint, ignore_errors=True)
    return None


def damaged_file(checkpoint: Path) -> str | None:
    """``"<file> is damaged (<why>)"`` for the first file of ``checkpoint`` that cannot be loaded, or None.

    Checked without loading anything: each ``*.safetensors`` (model, LoRA adapter, shards) has its header read,
    which also checks that the tensors it lists cover the file exactly; each torch file (``*.pt``, ``*.pth``,
    ``*.bin``: optimizer, scheduler, RNG states, all zip archives since torch 1.6) has its zip directory read,
    which sits at the end. A file cut short fails either in milliseconds, where transformers would fail while
    resuming and name no file."""
    import zipfile

    from safetensors import SafetensorError, safe_open

    try:
        files = sorted(checkpoint.iterdir())
    except OSError as error:  # another process deleted it while this one looked (a damaged one, stepped over)
        return f"{checkpoint} is unreadable ({error})"
    for path in files:
        try:
            if path.suffix == ".safetensors":
                with safe_open(str(path), framework="pt"):
                    pass
            elif path.suffix in (".pt", ".pth", ".bin"):
                with zipfile.ZipFile(path):
                    pass
        except (SafetensorError, zipfile.BadZipFile, OSError) as error:
            return f"{path} is damaged (cut short or unreadable: {error})"
    return None


def rng_state_files(processes: int) -> list[str]:
    """The random-state files transformers saves in a checkpoint: one per process (``rng_state_<rank>.pth``), or
    ``rng_state.pth`` for a single process. It skips a missing one on resume with an info line and continues with
    other random draws, so a checkpoint without all of them would resume into a different run without a word."""
    return ["rng_state.pth"] if processes == 1 else [f"rng_state_{rank}.pth" for rank in range(processes)]


def resumable_checkpoint(work_dir: Path, checkpoint: Path, delete_damaged: bool = True, processes: int = 1) -> Path:
    """``checkpoint`` (:func:`last_complete_checkpoint`), or where one of its files is damaged (:func:`damaged_file`)
    the newest complete checkpoint before it whose files are whole. The damaged ones are then said and (if asked)
    deleted: left in place, the newest by number, they would be what transformers keeps when it next saves (one
    checkpoint kept) and what the next job tries again.

    Raises:
        DamagedCheckpoint: no complete checkpoint with whole files is before it (the message names the file
            and the fix; nothing is deleted).
    """
    damaged = []
    step = _checkpoint_step(checkpoint)
    for candidate in [checkpoint, *(c for c in _checkpoints(work_dir) if _checkpoint_step(c) < step)]:
        if not _state_written(candidate):
            continue
        problem = damaged_file(candidate)
        missing = [name for name in rng_state_files(processes) if not (candidate / name).is_file()]
        if problem is None and missing:
            problem = (f"{candidate / missing[0]} is missing (a process stopped before saving its random state; "
                       "resumed from there, the run would continue with other random draws)")
        if problem is None:
            if damaged and delete_damaged:
                print(f"gdpo train: {'; '.join(why for _, why in damaged)}; resuming from the previous complete "
                      f"checkpoint {candidate} and deleting {', '.join(str(c) for c, _ in damaged)}, which cannot "
                      "be resumed.", flush=True)
                for old, _ in damaged:
                    shutil.rmtree(old, ignore_errors=True)
            return candidate
        damaged.append((candidate, problem))
    named = " ".join(str(c) for c, _ in damaged)
    raise DamagedCheckpoint(
        f"{'; '.join(why for _, why in damaged)}, and no complete checkpoint before it is in {work_dir}, so "
        f"the run cannot resume. To train it afresh, delete {named} (`rm -r {named}`) and run again; to resume it "
        "instead, put back a whole copy of the file.")


def read_metrics(path: str | Path, drop_cut_last_line: bool = False) -> list[dict]:
    """The records of a ``metrics.jsonl``; with ``drop_cut_last_line``, a last line that is not valid JSON (a
    run killed while writing it) is left out instead of raising."""
    path = Path(path)
    if not path.is_file():
        return []
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = []
    for number, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except ValueError:
            if not drop_cut_last_line or number < len(lines) - 1:
                raise
    return records


def _truncate_metrics(path: Path, last_step: int) -> None:
    """Keep only the records up to ``last_step`` (a resumed run re-logs the steps after its checkpoint).

    A last line cut short (the run was killed while writing it) is dropped; it is after the checkpoint.
    """
    kept = [r for r in read_metrics(path, drop_cut_last_line=True) if r["step"] <= last_step]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")


def summarise(records: list[dict], reward_names: list[str]) -> dict:
    """Final metrics of a run and its divergence step (C5) from the per-step records."""
    summary = {"steps": records[-1]["step"] if records else 0}
    if records:
        last = records[-1]
        summary["final"] = {k: v for k, v in last.items() if k not in TIMING_KEYS}
    correctness_key = next((f"rewards/{n}/mean" for n in reward_names if "correct" in n), None)
    if correctness_key and records and all(correctness_key in r for r in records):
        summary["divergence_step"] = detect_divergence(
            [r["step"] for r in records],
            [r[correctness_key] for r in records],
            [r.get("completions/max_length", float("nan")) for r in records],
        )
        summary["divergence_metric"] = correctness_key
    else:
        summary["divergence_step"] = None
        summary["divergence_metric"] = None
    seconds = [r["seconds_per_step"] for r in records if "seconds_per_step" in r]
    if seconds:
        summary["median_seconds_per_step"] = sorted(seconds)[len(seconds) // 2]
    # Did RL have anything to learn from? A step whose groups all got equal rewards has zero advantages.
    spread = [r["advantages/std"] for r in records if "advantages/std" in r]
    if spread:
        summary["steps_with_signal"] = sum(value > 0 for value in spread) / len(spread)
    diagnostics = sorted({key for r in records for key in r if key.startswith("diagnostics/")})
    if diagnostics:
        logged = {key: [r[key] for r in records if key in r] for key in diagnostics}
        summary["diagnostics"] = {key: {"first": values[0], "last": values[-1]} for key, values in logged.items()}
    return summary


def trl_arguments(settings: RunSettings, work_dir: str | Path) -> dict:
    """The keyword arguments of the run's ``trl.GRPOConfig``: the suite's fixed ones (one log record per
    generation batch, one checkpoint kept, the seed, no live reporting), TRL's own switches for a method it has
    built in, the config's ``training`` settings (``steps_per_generation`` and ``num_iterations`` among them, as
    TRL reads them), and with a ``report_to`` backend the run's name for it.

    With several optimizer updates per generation batch (:func:`gdpo.plan.updates_per_generation`), TRL logs the
    rewards only at the first update after a generation; logging every that many steps gives each record of
    ``metrics.jsonl`` one generation batch's rewards and the mean of its updates' losses (steps still count
    optimizer updates)."""
    from gdpo.training.trainer import TRL_BUILTIN_EQUIVALENT

    backends = report_backends(settings.trl.get("report_to", "none"))
    return {
        "output_dir": str(work_dir),
        "seed": settings.seed,
        "data_seed": settings.seed,
        "logging_steps": updates_per_generation(settings.trl),
        "save_strategy": "steps",
        "save_total_limit": 1,
        "report_to": "none",
        "reward_weights": list(settings.reward_weights),
        **TRL_BUILTIN_EQUIVALENT.get(settings.method, {}),
        **settings.trl,
        **reporting_arguments(backends, run_name=settings.key().path().as_posix()),
    }


def train(settings: RunSettings, model_dir: str | Path, run_dir: str | Path,
          threads: int | None = None, stop_at_step: int | None = None,
          segment_record: str | Path | None = None, restart_changed: bool = False) -> dict:
    """Train one policy and write the run directory; resumes from ``<run_dir>.work`` if a checkpoint exists.

    Args:
        settings: the run's settings (:func:`gdpo.plan.resolve_run_settings`).
        model_dir: the prepared model directory (``prepare_model`` rule).
        run_dir: ``results/<scale>/runs/<task>/<method>/seed<seed>``.
        threads: torch CPU threads (the rule's ``threads``).
        stop_at_step: a segment of a chain of jobs (:func:`gdpo.plan.plan_training_chain`) ending before
            ``max_steps``: train to this optimizer step, save a checkpoint there and stop, leaving the run
            directory unwritten (nothing is trained when the last checkpoint is at or past it). None, or a step
            at or past ``max_steps``: train to the end and write the run directory.
        segment_record: with ``stop_at_step``, where the main process writes the segment's record (JSON).
        restart_changed: when the checkpoint in ``<run_dir>.work`` was trained under other settings (or
            unrecorded ones), delete the checkpoints and train afresh instead of raising
            :class:`SettingsChanged`. A checkpoint of the same settings is resumed either way.

    Returns:
        The run summary (also written to ``summary.json``), or for a segment its record: ``{"stop_at_step",
        "global_step", "checkpoint", "resumed_from"}``.

    Raises:
        SettingsChanged: ``<run_dir>.work`` holds a checkpoint trained under other settings (the message lists
            them, old -> new, and the fix), and ``restart_changed`` is false.
        DamagedCheckpoint: a file of the newest checkpoint is cut short or unreadable and no complete
            checkpoint is before it (the message names the file and the fix); with one before it, the run says
            so and resumes there.
        TrainingInterrupted: a stop signal (:data:`STOP_SIGNALS`) came before the end; the checkpoint after
            the optimizer step in progress is saved, and the same call resumes from it.
    """
    check_device(settings.trl, settings.task)
    check_numerics()  # a job of a portable experiment that is not portable stops before it trains
    backends = report_backends(settings.trl.get("report_to", "none"))
    check_backends_installed(backends)
    # Before TRL is imported: trackio, which TRL imports, reads where its store is once.
    with backend_environment(backends, run_logs_dir(run_dir)) as log_dirs, stop_requests() as received:
        return _train(settings, model_dir, Path(run_dir), threads, list(log_dirs.values()), stop_at_step,
                      segment_record, received, restart_changed)


def _resume_point(accelerator, work_dir: Path, live_metrics: Path, run_dir: Path,
                  log_dirs: list[Path], identity: dict, restart_changed: bool = False) -> str | None:
    """The checkpoint to resume from (None: start over), after checking that the launcher's processes train
    as one run and that the checkpoint was trained under the run's settings (``identity``,
    :func:`run_identity`; :class:`SettingsChanged` otherwise, or with ``restart_changed`` its checkpoints are
    deleted and the run starts over), and that its files are whole (:func:`resumable_checkpoint`: else the
    previous complete checkpoint, or :class:`DamagedCheckpoint`). The main process cuts the live metrics back to
    that checkpoint (or, when starting over, removes them and the live logs and records ``identity``) and creates
    the backends' log directories."""
    if accelerator.num_processes != launched_processes():
        raise RuntimeError(
            f"The launcher started {launched_processes()} processes (WORLD_SIZE), but each trains as one of "
            f"{accelerator.num_processes}: they would train independently and overwrite each other's files. "
            "Check the accelerate config's distributed_type and device (envs/accelerate/)."
        )
    # With several processes (accelerate launch) only the main one touches shared files.
    checkpoint = last_complete_checkpoint(work_dir, delete_partial=accelerator.is_main_process)
    accelerator.wait_for_everyone()
    if checkpoint:
        refusal = resume_refusal(work_dir, checkpoint, identity)  # every process reads the same files
        if refusal and not restart_changed:
            raise SettingsChanged(f"{refusal}\n{restart_fix(work_dir)}")
        if refusal:
            if accelerator.is_main_process:
                print(f"gdpo train: restarting as asked (--restart-changed): deleting the checkpoints in {work_dir} "
                      f"and training afresh. {refusal}", flush=True)
                for old in work_dir.glob("checkpoint-*"):
                    shutil.rmtree(old)
            accelerator.wait_for_everyone()
            checkpoint = None
    if checkpoint:
        # Every process reads the same files; only the main one deletes the damaged checkpoints it steps over.
        checkpoint = resumable_checkpoint(work_dir, checkpoint, delete_damaged=accelerator.is_main_process,
                                          processes=accelerator.num_processes)
        accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        if checkpoint:
            _truncate_metrics(live_metrics, int(checkpoint.name.split("-")[-1]))
        else:
            # A run that never reached a checkpoint starts over, and so do its live logs.
            live_metrics.unlink(missing_ok=True)
            shutil.rmtree(run_logs_dir(run_dir), ignore_errors=True)
            _write_json_atomically(work_dir / RUN_IDENTITY_FILE, identity)
        for directory in log_dirs:
            directory.mkdir(parents=True, exist_ok=True)
    return str(checkpoint) if checkpoint else None


def _write_run_dir(run_dir: Path, settings: RunSettings, trl_kwargs: dict, num_processes: int,
                   model_dir: str | Path, tokenizer, summary: dict, live_metrics: Path) -> None:
    """The run directory's files beside the saved model: the tokenizer, config.json, env.json, summary.json
    and metrics.jsonl (main process only)."""
    tokenizer.save_pretrained(str(run_dir / "model"))
    resolved = {**settings.to_dict(), "trl": {k: v for k, v in trl_kwargs.items() if k != "output_dir"},
                "num_processes": num_processes}
    (run_dir / "config.json").write_text(json.dumps(resolved, indent=2, default=str), encoding="utf-8")
    # The saved weights' digest lets an evaluation show it read this run's adapter (eval.json's
    # adapter_weights_sha256; gdpo.evidence.check_consistency compares them): the adapter is not committed.
    env = {**environment_record(), "start_model": {"dir": str(model_dir), "weights_sha256": weights_digest(model_dir)},
           "saved_model": {"dir": "model", "weights_sha256": weights_digest(run_dir / "model")}}
    (run_dir / "env.json").write_text(json.dumps(env, indent=2), encoding="utf-8")
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    shutil.copyfile(live_metrics, run_dir / "metrics.jsonl")


def _checkpoint_step(checkpoint: str | Path | None) -> int:
    """The optimizer step of a ``checkpoint-<step>`` directory (0 for none)."""
    return int(Path(checkpoint).name.split("-")[-1]) if checkpoint else 0


def _write_json_atomically(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(partial, path)


def _train(settings: RunSettings, model_dir: str | Path, run_dir: Path, threads: int | None,
           log_dirs: list[Path], stop_at_step: int | None, segment_record: str | Path | None,
           received: list[int], restart_changed: bool = False) -> dict:
    """:func:`train` once the checks have passed and the backends log into ``log_dirs``."""
    from datasets import disable_progress_bars
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from gdpo.training.trainer import RegistryGRPOTrainer

    use_cpu_when_launched_without_cuda()
    method, seed = settings.method, settings.seed
    if threads:
        torch.set_num_threads(threads)
    disable_progress_bars()
    work_dir = Path(f"{run_dir}.work")
    work_dir.mkdir(parents=True, exist_ok=True)
    live_metrics = work_dir / "metrics.jsonl"

    family = get_family(settings.family)
    dataset = family.build_dataset("train", settings.train_size, seed, **settings.data_options)
    reward_functions = [guard_reward_function(name, family.REWARD_FUNCTIONS[name])
                        for name in settings.reward_names]
    trl_kwargs = trl_arguments(settings, work_dir)
    policy_dtype = getattr(torch, settings.policy_dtype)
    if not torch.cuda.is_available():
        # A CPU that emulates bfloat16 computes it in float32 (gdpo.generation.precision; env.json records it).
        policy_dtype = cpu_dtype(policy_dtype)
        if trl_kwargs.get("bf16") and cpu_dtype(torch.bfloat16) != torch.bfloat16:
            trl_kwargs["bf16"] = False
    arguments = GRPOConfig(**trl_kwargs)

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=policy_dtype)
    peft_config = None
    if settings.peft:
        from peft import LoraConfig

        peft_config = LoraConfig(task_type="CAUSAL_LM", **settings.peft)

    trainer = RegistryGRPOTrainer(
        model=model,
        reward_funcs=reward_functions,
        args=arguments,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        advantage_method=method,
        advantage_options=settings.method_options,
        advantage_convention=settings.convention,
        fast_generation=settings.fast_generation,
        pack_prompts=settings.pack_prompts,
        completion_diagnostics=getattr(family, "completion_diagnostics", None),
        callbacks=[_metrics_callback(live_metrics)],
        advantage_audit_dir=(settings.key(os.environ[ADVANTAGE_AUDIT_ENV]).path()
                             if os.environ.get(ADVANTAGE_AUDIT_ENV) else None),
        loop_options=settings.loop_options,
    )
    accelerator = trainer.accelerator
    stopper = _stop_callback(stop_at_step, received, accelerator, updates_per_generation(settings.trl))
    trainer.add_callback(stopper)
    nonfinite = _nonfinite_stop_callback(accelerator)
    trainer.add_callback(nonfinite)
    checkpoint = _resume_point(accelerator, work_dir, live_metrics, run_dir, log_dirs,
                               run_identity(settings, accelerator.num_processes), restart_changed)
    segment = stop_at_step is not None and stop_at_step < arguments.max_steps
    if received and accelerator.num_processes == 1:  # several processes decide together, after a step
        raise TrainingInterrupted(f"stopped by signal {received[0]} before training; the run resumes from "
                                  f"{checkpoint or 'its start'} when started again.")
    if not (segment and _checkpoint_step(checkpoint) >= stop_at_step):
        trainer.train(resume_from_checkpoint=checkpoint)
    if stopper.stopped_by_signal:
        accelerator.wait_for_everyone()  # every process has written its part of the checkpoint before any exits
        raise TrainingInterrupted(
            f"stopped by signal {received[0]} after optimizer step {trainer.state.global_step}, whose "
            f"checkpoint is saved in {work_dir}; run the same command again to resume from it.")
    if segment:
        reached = last_complete_checkpoint(work_dir, delete_partial=False)
        record = {"stop_at_step": stop_at_step, "global_step": _checkpoint_step(reached),
                  "checkpoint": str(reached) if reached else None, "resumed_from": checkpoint}
        if accelerator.is_main_process and segment_record is not None:
            _write_json_atomically(Path(segment_record), record)
        accelerator.wait_for_everyone()
        return record

    trainer.save_model(str(run_dir / "model"))  # collective under DeepSpeed: every process calls it
    summary = summarise(read_metrics(live_metrics), list(settings.reward_names))
    if settings.method_options:  # the run's directory is named by them (gdpo_clip3); say what they are
        summary["method"], summary["method_options"] = settings.method, settings.method_options
    summary["resumed_from"] = checkpoint
    if nonfinite.stopped_at_step is not None:
        summary["stopped_early"] = {
            "step": nonfinite.stopped_at_step,  # logged (loss, grad_norm NaN), not applied
            "updates_applied": nonfinite.stopped_at_step - 1,
            "reason": "non-finite gradients: that step was not applied, the model is the last finite step's"}
    accelerator.wait_for_everyone()  # every process has read the live metrics before they are removed
    if accelerator.is_main_process:
        _write_run_dir(run_dir, settings, trl_kwargs, accelerator.num_processes, model_dir, tokenizer, summary,
                       live_metrics)
        shutil.rmtree(work_dir)  # checkpoints only serve resuming; the final model is in run_dir/model
    accelerator.wait_for_everyone()
    return summary
