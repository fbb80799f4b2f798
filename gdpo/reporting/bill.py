"""The bill of a config: how many jobs it submits, their GPU-hours and node-days, and what each claim's seeds
for 80 % power cost (``python -m gdpo plan``).

One source for the hours: each task's ``resources`` in the config, the same numbers its jobs ask the cluster
for (:func:`gdpo.plan.job_resources`). A training run longer than the config's wall limit is a chain of
jobs (:func:`gdpo.plan.train_segments`); it costs its expected hours, not the chain's requested maximum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from gdpo.plan import (
    JOB_KINDS,
    RUNTIME_SAFETY,
    job_resources,
    plan_evaluations,
    plan_runs,
    task_resources,
    task_seeds,
    train_segments,
    wall_limit_hours,
)
from gdpo.reporting.calibration import (
    DEFAULT_ITEM_CORRELATION,
    claim_runs,
    designs_from_config,
    seeds_for_power,
)


def gpu_hours_per_job(config: Mapping, task: str, kind: str) -> float:
    """Expected GPU-hours of one ``kind`` ("train": a whole training run, all its chained jobs together;
    "evaluate": one evaluation) of ``task``: GPUs × expected hours; 0 for a task without resources."""
    needs = task_resources(config, task).get(kind)
    return float(needs.get("gpus", 0) * needs["hours"]) if needs else 0.0


def job_table(config: Mapping) -> pd.DataFrame:
    """One row per (task, job kind): runs or evaluations, cluster jobs (a training run longer than the wall
    limit is several), GPUs and the wall time each job asks for (hours), expected GPU-hours in all."""
    runs, evaluations = plan_runs(config), plan_evaluations(config)
    rows = []
    for task in dict.fromkeys(run.task for run in [*runs, *evaluations]):
        for kind, keys in (("train", runs), ("evaluate", evaluations)):
            count = sum(key.task == task for key in keys)
            if not count:
                continue
            asked = job_resources(config, task, kind)
            jobs = count * (train_segments(config, task) if kind == "train" else 1)
            rows.append({"task": task, "kind": kind, "runs": count, "jobs": jobs, "GPUs/job": asked["gpu"],
                         "asked h/job": round(asked["runtime"] / 60, 2),
                         "GPU-h": count * gpu_hours_per_job(config, task, kind)})
    return pd.DataFrame(rows, columns=["task", "kind", "runs", "jobs", "GPUs/job", "asked h/job", "GPU-h"])


def claim_cost_table(config: Mapping, target: float = 0.8, replicates: int = 400,
                     item_correlation: float = DEFAULT_ITEM_CORRELATION) -> pd.DataFrame:
    """Per claim the config decides: its tasks, the seeds per method it plans and those that reach ``target``
    power (:func:`gdpo.reporting.calibration.seeds_for_power`, paired items at ``item_correlation`` as
    ``gdpo power`` plans by default), and the GPU-hours of the trained runs (train and evaluate) at each:
    tasks × compared methods × seeds."""
    designs = designs_from_config(config, item_correlation=item_correlation)
    rows = []
    for claim_id, (tasks, methods) in claim_runs(config).items():
        per_seed = sum(len(methods) * (gpu_hours_per_job(config, t, "train") + gpu_hours_per_job(config, t, "evaluate"))
                       for t in tasks)
        planned = min(len(task_seeds(config, t)) for t in tasks)
        needed = seeds_for_power(designs[claim_id], target, replicates=replicates)
        rows.append({"claim": claim_id, "tasks": ", ".join(tasks), "methods": ", ".join(methods),
                     "seeds": planned, "GPU-h": planned * per_seed,
                     f"seeds for {target:.0%} power": needed if needed is not None else "more than 64",
                     f"GPU-h at those seeds": needed * per_seed if needed is not None else math.nan})
    return pd.DataFrame(rows)


def format_bill(config: Mapping, name: str = "", target: float = 0.8, replicates: int = 400) -> str:
    """What ``gdpo plan`` prints: the job table, GPU-hours per job kind and in total, node-days, and each
    claim's seeds for ``target`` power with their cost."""
    jobs = job_table(config)
    gpu = config.get("gpu") or {}
    per_node = int(gpu.get("per_node") or 8)
    lines = [f"{name or config['scale']}: the bill (hours are the config's `resources:`, the same numbers the jobs "
             f"ask for; a job asks for its expected hours × {RUNTIME_SAFETY:g}, at most the wall limit of "
             f"{wall_limit_hours(config):g} h)"]
    if gpu:
        lines.append(f"GPU: {gpu.get('name')} ({gpu.get('memory_gib')} GiB), {per_node} per node")
    if jobs.empty:
        return "\n".join([*lines, "no train or evaluate jobs"])
    lines.append(jobs.to_string(index=False, formatters={"GPU-h": "{:,.1f}".format}))
    total = 0.0
    for kind in JOB_KINDS:
        part = jobs[jobs["kind"] == kind]
        total += part["GPU-h"].sum()
        lines.append(f"{kind:>8}: {int(part['jobs'].sum())} jobs ({int(part['runs'].sum())} "
                     f"{'runs' if kind == 'train' else 'evaluations'}), {part['GPU-h'].sum():,.1f} GPU-h")
    lines.append(f"   total: {int(jobs['jobs'].sum())} jobs, {total:,.1f} GPU-h = {total / per_node / 24:,.1f} "
                 f"node-days of one {per_node}-GPU node")
    if total == 0:
        lines.append("(a CPU-scale config: its jobs ask for no GPU)")
    claims = claim_cost_table(config, target, replicates)
    if not claims.empty:
        lines.append(f"Seeds per method for {target:.0%} power (gdpo.reporting.calibration.seeds_for_power, the "
                     "paper's effect, the default seed spread, paired items at ρ = "
                     f"{DEFAULT_ITEM_CORRELATION:g} as `gdpo power` plans) and the GPU-hours of the claim's trained "
                     "runs:")
        for column in ("GPU-h", "GPU-h at those seeds"):  # pandas prints NaN before any formatter sees it
            claims[column] = claims[column].map(_hours_text)
        lines.append(claims.to_string(index=False))
    return "\n".join(lines)


def _hours_text(hours: float) -> str:
    """GPU-hours as printed: whole hours with thousands separators, "—" where the seeds are not reachable."""
    return "—" if math.isnan(hours) else f"{hours:,.0f}"
