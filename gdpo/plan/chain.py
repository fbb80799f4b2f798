"""Training steps, and a training run as a chain of jobs within the wall limit: optimizer updates per
generation batch (:func:`updates_per_generation`, :func:`optimizer_steps_per_generation`), a task's
``resources:`` block (:func:`task_resources`) and the config's wall limit (:func:`wall_limit_hours`), the chain
of segments one run takes (:func:`plan_training_chain`, :class:`TrainingSegment`), and the checkpoint interval
that bounds what a lost job costs (:func:`checkpoint_interval_steps`, :func:`planned_seconds_per_step`)."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping

from gdpo.plan.task_config import task_spec
from gdpo.plan.values import finite_number, whole_number


def updates_per_generation(trl_args: Mapping) -> int:
    """Optimizer updates per generation batch under TRL's settings (verl's PPO mini-batches per training step):
    ``steps_per_generation`` (default ``gradient_accumulation_steps``) × ``num_iterations`` ÷
    ``gradient_accumulation_steps``. ``ValueError`` when ``steps_per_generation`` is no multiple of
    ``gradient_accumulation_steps`` (an update would straddle two generation batches)."""
    accumulation = int(trl_args.get("gradient_accumulation_steps", 1))
    per_generation = int(trl_args.get("steps_per_generation") or accumulation)
    if per_generation % accumulation:
        raise ValueError(f"steps_per_generation {per_generation} must be a multiple of gradient_accumulation_steps "
                         f"{accumulation} (micro-batches per update), so that each update lies within one "
                         "generation batch; set it to updates per generation batch × gradient_accumulation_steps.")
    return per_generation // accumulation * int(trl_args.get("num_iterations", 1))


#: Longest wall time of one cluster job, hours, where the config sets no ``wall_limit_hours``.
DEFAULT_WALL_LIMIT_HOURS = 24.0
#: A job asks for this multiple of its expected hours (estimates, not measurements), and a chain is cut so
#: that each segment's request stays within the wall limit: a segment is planned at most
#: ``wall_limit_hours / CHAIN_SAFETY_FACTOR`` expected hours.
CHAIN_SAFETY_FACTOR = 1.5


def wall_limit_hours(config: dict) -> float:
    """The longest wall time one cluster job may take, hours (config ``wall_limit_hours``, default 24)."""
    value = config.get("wall_limit_hours", DEFAULT_WALL_LIMIT_HOURS)
    if not finite_number(value) or value <= 0:
        raise ValueError(f"wall_limit_hours {value!r} must be a number of hours > 0 (your cluster's time "
                         "limit per job); leave it out for 24.")
    return float(value)


def task_resources(config: dict, task: str) -> dict:
    """What the jobs of ``task`` need (the task's ``resources:`` block: ``train`` and/or ``evaluate``, each with
    ``hours`` and, for a GPU job, ``gpus``, ``cpus_per_gpu`` and ``mem_mb``; a CPU job may state ``cpus`` and
    ``mem_mb``); ``{}`` for a task without one (CPU scales)."""
    return copy.deepcopy(dict(task_spec(config, task).get("resources") or {}))


def optimizer_steps_per_generation(trl: Mapping) -> int:
    """Optimizer steps between two generation batches of TRL's ``GRPOTrainer``: a checkpoint that resumes the
    run exactly lies on a multiple of it.

    TRL generates every ``steps_per_generation × num_iterations`` micro-batches (``steps_per_generation``
    defaults to ``gradient_accumulation_steps``) and keeps the batch in memory, not in the checkpoint; a run
    resumed between two generations generates a new batch, and its micro-batch counter restarts at 0.
    """
    accumulation = int(trl.get("gradient_accumulation_steps", 1))
    per_generation = int(trl.get("steps_per_generation") or accumulation) * int(trl.get("num_iterations", 1))
    return math.lcm(per_generation, accumulation) // accumulation


@dataclasses.dataclass(frozen=True)
class TrainingSegment:
    """One job of a training run cut into a chain of jobs.

    Attributes:
        index: 1-based position in the chain; the last segment is the ``train`` job, the others
            ``train_segment`` jobs.
        start_step: optimizer step the segment resumes from (0: the start).
        end_step: optimizer step after which it saves a checkpoint and stops (the last one: ``max_steps``).
        hours: expected wall time of the segment, hours (None where the config states no
            ``resources.train.hours``).
    """

    index: int
    start_step: int
    end_step: int
    hours: float | None

    def request_minutes(self) -> int | None:
        """The runtime the job asks for, minutes: expected hours × :data:`CHAIN_SAFETY_FACTOR`, rounded up."""
        # rounded to the second first: 7 h × 1.5 × 60 is 630.0000000000001 in floating point
        return None if self.hours is None else math.ceil(round(self.hours * CHAIN_SAFETY_FACTOR * 60, 4))


def plan_training_chain(config: dict, task: str) -> list[TrainingSegment]:
    """The jobs one training run of ``task`` takes: segments of whole optimizer steps, each planned at most
    ``wall_limit_hours / CHAIN_SAFETY_FACTOR`` expected hours, every segment end on a generation-batch
    boundary (:func:`optimizer_steps_per_generation`), so that the chain trains the model of one uninterrupted
    run.

    A task without ``resources.train.hours`` (the CPU scales) is one segment: the single ``train`` job.
    ``ValueError`` when a run cannot be cut within the limit (one generation batch alone would exceed it).
    """
    hours = (task_resources(config, task).get("train") or {}).get("hours")
    spec = task_spec(config, task)
    trl = {**config.get("training", {}), **spec.get("training", {})}
    max_steps = trl.get("max_steps")
    if hours is None:
        return [TrainingSegment(1, 0, max_steps if whole_number(max_steps, 1) else 0, None)]
    if not finite_number(hours) or hours <= 0:
        raise ValueError(f"task {task!r}: resources.train.hours {hours!r} must be a number of hours > 0.")
    if not whole_number(max_steps, 1):
        raise ValueError(f"task {task!r}: a run with resources.train.hours needs training.max_steps (whole "
                         "optimizer steps) to be cut into jobs within the wall limit; set "
                         "`training.max_steps:`.")
    limit = wall_limit_hours(config)
    budget = limit / CHAIN_SAFETY_FACTOR  # expected hours one segment may take
    unit = optimizer_steps_per_generation(trl)
    hours_per_step = hours / max_steps
    if unit * hours_per_step > budget:
        raise ValueError(
            f"task {task!r}: one generation batch ({unit} optimizer steps, about {unit * hours_per_step:.1f} h "
            f"of the run's {hours} h) takes longer than a job may ({limit} h wall limit / safety factor "
            f"{CHAIN_SAFETY_FACTOR}); raise `wall_limit_hours:` or use fewer updates per generation batch.")
    count = math.ceil(hours / budget)
    ends: list[int] = []
    while True:
        # Even cuts of whole generation batches, each at most `budget` expected hours.
        units = math.ceil(max_steps / unit)
        ends = sorted({min(max_steps, round(units * k / count) * unit) for k in range(1, count + 1)})
        starts = [0, *ends[:-1]]
        fits = all((end - start) * hours_per_step <= budget for start, end in zip(starts, ends))
        if ends[-1] == max_steps and fits:
            break
        count += 1
    starts = [0, *ends[:-1]]
    return [TrainingSegment(k + 1, start, end, (end - start) * hours_per_step)
            for k, (start, end) in enumerate(zip(starts, ends))]


#: Longest planned time between two checkpoints of a run, seconds: a job ended without a warning it could act on
#: (a node failure, a preemption whose grace is shorter than the rest of a generation batch) loses at most this
#: much of the run's planned time (× its GPUs in GPU time).
CHECKPOINT_INTERVAL_SECONDS = 3600


def planned_seconds_per_step(config: Mapping, task: str) -> float | None:
    """Planned wall seconds of one optimizer step of ``task``'s runs: the task's ``resources.train.hours`` × 3600
    ÷ ``training.max_steps`` (the run's mean; the first update of a generation batch also generates it); None
    where no hours (or no whole ``max_steps``) are planned, as at the CPU scales."""
    hours = (task_resources(dict(config), task).get("train") or {}).get("hours")
    spec = task_spec(dict(config), task)
    max_steps = {**config.get("training", {}), **spec.get("training", {})}.get("max_steps")
    if not finite_number(hours) or hours <= 0 or not whole_number(max_steps, 1):
        return None
    return hours * 3600 / max_steps


def checkpoint_interval_steps(config: Mapping, task: str) -> int | None:
    """``save_steps`` of ``task``'s runs, optimizer steps: the config's ``training.save_steps``, lowered where it
    would leave more than :data:`CHECKPOINT_INTERVAL_SECONDS` of planned time (:func:`planned_seconds_per_step`)
    between two checkpoints, to the most whole generation batches (:func:`updates_per_generation`: a checkpoint
    between two generations would not resume the same run) within it, at least one. Without planned hours, the
    config's value (None where it sets none)."""
    spec = task_spec(dict(config), task)
    trl = {**config.get("training", {}), **spec.get("training", {})}
    asked = trl.get("save_steps")
    per_step = planned_seconds_per_step(config, task)
    if per_step is None:
        return asked
    unit = updates_per_generation(trl)
    within = max(unit, int(CHECKPOINT_INTERVAL_SECONDS / per_step) // unit * unit)
    return within if not whole_number(asked, 1) else min(asked, within)
