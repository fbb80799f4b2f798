"""Training runs that survive wall limits and preemption without a person: how often they checkpoint, when a train
job is warned before its wall limit, and the disk their checkpoints take (planning: no torch).

- **Checkpoints** every :func:`gdpo.plan.checkpoint_interval_steps` optimizer steps: at most
  :data:`gdpo.plan.CHECKPOINT_INTERVAL_SECONDS` (an hour) of planned time apart, on generation-batch boundaries;
  every run's ``save_steps`` is that (:func:`gdpo.plan.resolve_run_settings`).
- **The warning**: each train job asks SLURM for SIGURG :func:`warning_lead_seconds` before its wall limit
  (``sbatch --signal=URG@<seconds>``, :func:`warning_signal_option`, the rules' ``slurm_extra``). The trainer
  then saves a checkpoint at the next generation-batch boundary and exits with status 75
  (:data:`gdpo.training.run.INTERRUPTED_EXIT_CODE`); the profile's ``retries`` resubmits the job, which resumes
  from that checkpoint. The trainer acts on SIGTERM (a preemption, the limit itself, ``scancel``) the same way,
  but the rule's shell dies of it at once and the job step may be ended before the save: the job then resumes
  from the last hourly checkpoint (docs/wall-limit.md).
- **Disk**: one checkpoint per run (:func:`checkpoint_bytes`; two while the next is written), removed when the run
  ends, and the final model, kept (:func:`final_model_bytes`); ``gdpo plan`` states both beside the GPU-hours.

Why SIGURG, sent to the job's steps (no ``B:``). Under Snakemake's SLURM executor the batch shell is the plugin's
``sh`` running Snakemake, which runs the rule in a job step (``srun``) under a second Snakemake, whose shell runs
``gdpo train``. With ``B:`` only that batch shell is signalled: it dies of SIGUSR1, the job ends, and the trainer
is left SLURM's kill grace (``KillWait``, 30 s by default). Without ``B:`` SLURM signals every process of the
job's steps: SIGUSR1 then kills the step's Snakemake at once (the step ends and its processes are killed), while
SIGURG is ignored by default by every process that installs no handler for it (Snakemake, bash, the
``accelerate``/``torchrun`` launcher), and acted on only by the training processes, which do
(:func:`gdpo.training.run.stop_requests`). Measured on the test cluster (docs/wall-limit.md has the table;
``tests/test_slurm.py`` runs a train job through the SIGURG path).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from gdpo.plan import (
    RUNTIME_SAFETY,
    checkpoint_interval_steps,
    job_resources,
    plan_runs,
    planned_seconds_per_step,
    updates_per_generation,
)
from gdpo.training.memory_plan import model_dims

#: Bytes per parameter of one training checkpoint: the bfloat16 weights (2), AdamW's float32 master weights and
#: two moments (12), and the bfloat16 weights DeepSpeed gathers for the Trainer's save (2): about 122 GB for
#: R1-7B's 7.6 B parameters (``gdpo.preflight``'s disk check reads it from here).
CHECKPOINT_BYTES_PER_PARAMETER = 16
#: Checkpoints of one run on disk at once: the Trainer writes the next before it deletes the last
#: (``save_total_limit`` 1).
CHECKPOINTS_AT_ONCE = 2
#: Bytes per parameter of a run's final model (bfloat16 weights, ``<run>/model``).
FINAL_MODEL_BYTES_PER_PARAMETER = 2
#: Write speed a checkpoint save is planned at, bytes per second: a shared filesystem written by one node (a
#: parallel filesystem is faster; a lower figure only warns earlier).
SAVE_BYTES_PER_SECOND = 0.5e9
#: The warning signal (``sbatch --signal`` name): ignored by default, so only the processes that handle it act.
WARNING_SIGNAL = "URG"
#: Least lead of the warning, seconds: the trainer's exit and Snakemake's bookkeeping in the job. (SLURM may send
#: the signal up to 60 s earlier than asked, never later.)
MIN_WARNING_LEAD_SECONDS = 120
#: Lead where no step time is planned (the CPU scales, whose checkpoints save in seconds), seconds.
DEFAULT_WARNING_LEAD_SECONDS = 600


def model_parameters(config: Mapping, task: str) -> int | None:
    """Parameters of ``task``'s trained model, from its shipped architecture (:func:`model_dims`); None where the
    memory plan has none (the CPU scales' models)."""
    try:
        return model_dims(config["tasks"][task]["model"]).parameters()
    except ValueError:
        return None


def _training(config: Mapping, task: str) -> dict:
    """The task's TRL settings: the scale's ``training`` overridden by the task's."""
    return {**config.get("training", {}), **config["tasks"][task].get("training", {})}


def _lora(config: Mapping, task: str) -> bool:
    return bool(_training(config, task).get("peft"))


def checkpoint_bytes(config: Mapping, task: str) -> int | None:
    """Bytes of one checkpoint of a ``task`` run (:data:`CHECKPOINT_BYTES_PER_PARAMETER` per parameter); None for
    a model without a shipped architecture, or a LoRA run (an adapter and its optimizer state: small)."""
    parameters = model_parameters(config, task)
    return None if parameters is None or _lora(config, task) else parameters * CHECKPOINT_BYTES_PER_PARAMETER


def final_model_bytes(config: Mapping, task: str) -> int | None:
    """Bytes of a ``task`` run's final model (:data:`FINAL_MODEL_BYTES_PER_PARAMETER` per parameter); None where
    :func:`checkpoint_bytes` is."""
    parameters = model_parameters(config, task)
    return None if parameters is None or _lora(config, task) else parameters * FINAL_MODEL_BYTES_PER_PARAMETER


def warning_lead_seconds(config: Mapping, task: str, runtime_minutes: int | None = None) -> int:
    """How long before its wall limit a train job of ``task`` is warned, seconds, in whole minutes.

    The trainer stops at the next generation-batch boundary and saves there, so the lead covers a whole generation
    batch at :data:`gdpo.plan.RUNTIME_SAFETY` × its planned time (updates per generation batch ×
    :func:`gdpo.plan.planned_seconds_per_step`: the longest step, the one that generates, is within it) plus the
    save of one checkpoint at :data:`SAVE_BYTES_PER_SECOND`; at least :data:`MIN_WARNING_LEAD_SECONDS`;
    :data:`DEFAULT_WARNING_LEAD_SECONDS` where no step time is planned. At most half of ``runtime_minutes`` (the
    job's wall time), so that a short job is not warned before it has worked.
    """
    per_step = planned_seconds_per_step(config, task)
    if per_step is None:
        lead = DEFAULT_WARNING_LEAD_SECONDS
    else:
        batch = updates_per_generation(_training(config, task)) * per_step
        lead = RUNTIME_SAFETY * batch + (checkpoint_bytes(config, task) or 0) / SAVE_BYTES_PER_SECOND
    lead = max(MIN_WARNING_LEAD_SECONDS, math.ceil(lead / 60) * 60)
    return min(lead, runtime_minutes * 60 // 2) if runtime_minutes else lead


def warning_signal_option(config: Mapping, task: str, runtime_minutes: int | None = None) -> str:
    """The sbatch option of a train job of ``task`` (the rules' ``slurm_extra``): ``--signal=URG@<seconds>``,
    :func:`warning_lead_seconds` before its wall limit of ``runtime_minutes``."""
    return f"--signal={WARNING_SIGNAL}@{warning_lead_seconds(config, task, runtime_minutes)}"


def checkpoint_table(config: Mapping) -> list[dict]:
    """Per task that trains: the checkpoint interval (steps and planned minutes), the warning's lead (seconds, for
    its longest job), and the disk of one run's checkpoint and final model (bytes; None where unknown)."""
    rows = []
    for task in dict.fromkeys(run.task for run in plan_runs(dict(config))):
        steps = checkpoint_interval_steps(config, task)
        per_step = planned_seconds_per_step(config, task)
        runtime = job_resources(config, task, "train")["runtime"]
        rows.append({"task": task, "save_steps": steps,
                     "minutes": steps * per_step / 60 if steps and per_step else None,
                     "lead_seconds": warning_lead_seconds(config, task, runtime),
                     "checkpoint_bytes": checkpoint_bytes(config, task),
                     "final_model_bytes": final_model_bytes(config, task)})
    return rows
