"""The bill of a config: how many jobs it submits, their GPU-hours and node-days, and what each claim's seeds
for 80 % power cost (``python -m gdpo plan``).

One source for the hours: each task's ``resources`` in the config, the same numbers its jobs ask the cluster
for (:func:`gdpo.plan.job_resources`). A training run longer than the config's wall limit is a chain of
jobs (:func:`gdpo.plan.train_segments`); it costs its expected hours, not the chain's requested maximum.

A CPU config's hours come from measured speed instead (:func:`cpu_hours_table`): each family's median seconds
per training step and evaluated samples per second, recorded by ``benchmarks/cpu_evidence_speed.py --record``
in :data:`STEP_TIMES`, times the config's steps and evaluated items × samples.

Beside the GPU-hours, a GPU config's bill states each task's checkpoint interval, how long before a job's wall limit
it is warned, and the disk its checkpoints and final models take (:func:`checkpoint_disk_table`,
:mod:`gdpo.training.checkpoint_plan`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from gdpo.plan import (
    BASE_METHOD,
    JOB_KINDS,
    RUNTIME_SAFETY,
    job_resources,
    plan_evaluations,
    plan_runs,
    resolve_eval_settings,
    resolve_run_settings,
    task_resources,
    task_seeds,
    train_segments,
    wall_limit_hours,
)
from gdpo.reporting.calibration import (
    DEFAULT_ITEM_CORRELATION,
    EventDesign,
    TableDesign,
    claim_runs,
    decided_power,
    designs_from_config,
    searched_design,
    seeds_for_power,
)
from gdpo.training.checkpoint_plan import CHECKPOINTS_AT_ONCE, checkpoint_table


#: The measured CPU step times (``benchmarks/cpu_evidence_speed.py --record``): per family ``seconds_per_step``
#: and ``eval_samples_per_second``, and under ``measured`` the runs, their CPUs and the command.
STEP_TIMES = Path(__file__).resolve().parents[2] / "benchmarks" / "reference" / "cpu_step_times.json"


def load_step_times(path: str | Path = STEP_TIMES) -> dict | None:
    """The step-time record at ``path``; None when there is none (the bill then says so)."""
    path = Path(path)
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(record.get("families"), dict):
        raise ValueError(f"{path} has no 'families' object; rewrite it with benchmarks/cpu_evidence_speed.py --record.")
    return record


def cpu_hours_table(config: Mapping, step_times: Mapping) -> pd.DataFrame:
    """One row per (task, job kind) of a CPU config: runs or evaluations, steps or evaluated samples each, the
    measured speed of the task's family, and the CPU-hours of all of them (one job on one thread each; the
    family's speed is None where nothing was measured for it)."""
    runs, evaluations = plan_runs(config), plan_evaluations(config)
    families = step_times["families"]
    rows = []
    for task in dict.fromkeys(run.task for run in [*runs, *evaluations]):
        trained = [key for key in runs if key.task == task]
        if trained:
            settings = resolve_run_settings(config, task, trained[0].method, trained[0].seed)
            per_step = families.get(settings.family, {}).get("seconds_per_step")
            steps = int(settings.trl.get("max_steps", 0))
            rows.append({"task": task, "family": settings.family, "kind": "train", "runs": len(trained),
                         "work each": f"{steps} steps", "speed": f"{per_step:g} s/step" if per_step else "not measured",
                         "CPU-h": len(trained) * steps * per_step / 3600 if per_step else math.nan})
        evaluated = [key for key in evaluations if key.task == task]
        if evaluated:
            settings = resolve_eval_settings(config, task, evaluated[0].method, evaluated[0].seed)
            rate = families.get(settings.family, {}).get("eval_samples_per_second")
            samples = (settings.eval_size or 0) * settings.num_samples
            rows.append({"task": task, "family": settings.family, "kind": "evaluate", "runs": len(evaluated),
                         "work each": f"{samples} samples", "speed": f"{rate:g} samples/s" if rate else "not measured",
                         "CPU-h": len(evaluated) * samples / rate / 3600 if rate and samples else math.nan})
    return pd.DataFrame(rows, columns=["task", "family", "kind", "runs", "work each", "speed", "CPU-h"])


def format_cpu_hours(config: Mapping, step_times: Mapping | None, cores: int = 2) -> list[str]:
    """The bill's lines for a CPU config: :func:`cpu_hours_table` and the wall time on ``cores`` one-thread jobs."""
    if step_times is None:
        return [f"(no measured step times at {STEP_TIMES}: run benchmarks/cpu_evidence_speed.py --record to estimate "
                "this config's CPU hours)"]
    table = cpu_hours_table(config, step_times)
    measured = step_times.get("measured", {})
    cpus = ", ".join(f"{cpu.get('model')} ({cpu.get('torch_capability')})" for cpu in measured.get("run_cpus", []))
    total = table["CPU-h"].sum(min_count=1)
    lines = [f"CPU hours from measured speed ({STEP_TIMES.name}: {measured.get('date')}, runs {measured.get('runs')}"
             f"{', made on ' + cpus if cpus else ''}; medians at the settings those runs had, scaled by this "
             "config's steps and evaluated samples):",
             table.to_string(index=False, formatters={"CPU-h": lambda h: "—" if math.isnan(h) else f"{h:,.1f}"})]
    if table["CPU-h"].isna().any():
        lines.append("— : no speed measured for that family (its hours are left out of the total)")
    lines.append(f"   total: {total:,.1f} CPU-h = {total / cores:,.1f} h of wall time as {cores} one-thread jobs at "
                 "a time (a CPU without the measuring machine's bfloat16 instructions is slower: README, "
                 "\"Reproducibility\")")
    return lines


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


def checkpoint_disk_table(config: Mapping) -> pd.DataFrame:
    """One row per task that trains for planned hours (a GPU config's): its runs, the checkpoint interval
    (``save_steps`` updates and the planned minutes they take: at most an hour), the warning's lead before a train
    job's wall limit (minutes), and the disk (GB, 10⁹ bytes) of one run's checkpoint and of its final model (NaN
    where unknown: a LoRA run's, or a model without a shipped architecture). Empty for a CPU config."""
    runs = plan_runs(config)
    rows = [{"task": row["task"], "runs": sum(key.task == row["task"] for key in runs),
             "save every": f"{row['save_steps']} steps", "= min": row["minutes"],
             "warned (min)": row["lead_seconds"] / 60,
             "checkpoint GB": _gigabytes(row["checkpoint_bytes"]), "final model GB": _gigabytes(row["final_model_bytes"])}
            for row in checkpoint_table(config) if row["minutes"] is not None]
    return pd.DataFrame(rows, columns=["task", "runs", "save every", "= min", "warned (min)", "checkpoint GB",
                                       "final model GB"])


def _gigabytes(size: int | None) -> float:
    return math.nan if size is None else size / 1e9


def _gb_text(size: float) -> str:
    return "—" if math.isnan(size) else f"{size:,.0f}"


def format_checkpoint_disk(config: Mapping) -> list[str]:
    """The bill's lines on checkpoints and disk (:func:`checkpoint_disk_table`): the table, then the disk of the
    checkpoints (per run and if every run trained at once) and of the final models in all; none for a CPU config."""
    table = checkpoint_disk_table(config)
    if table.empty:
        return []
    peak = CHECKPOINTS_AT_ONCE * table["checkpoint GB"]
    lines = [("Checkpoints and disk (gdpo.training.checkpoint_plan): each run saves a checkpoint every `save every` "
              "updates (at most an hour of its planned time apart), is warned `warned` minutes before each job's wall "
              "limit (SIGURG: it saves and exits, and the job is submitted again to resume), keeps one checkpoint "
              f"({CHECKPOINTS_AT_ONCE} while the next is written), deleted when the run ends, and keeps its final "
              "model:"),
             table.to_string(index=False, formatters={"= min": "{:.0f}".format, "warned (min)": "{:.0f}".format,
                                                      "checkpoint GB": _gb_text, "final model GB": _gb_text})]
    if peak.notna().any():
        every = (peak * table["runs"]).sum()
        models = (table["final model GB"] * table["runs"]).sum()
        lines.append(f"    disk: checkpoints up to {_gb_text(peak.max())} GB per run ({table['task'][peak.idxmax()]}), "
                     f"{_gb_text(every)} GB if all {int(table['runs'].sum())} runs trained at once; final models "
                     f"{_gb_text(models)} GB in all (kept for the evaluations). `scratch_dir:` puts them on scratch "
                     "space; each train job checks its node's free disk first.")
    return lines


@dataclasses.dataclass(frozen=True)
class ClaimNeed:
    """What one claim a config decides needs: the tasks whose runs decide it and the trained methods it compares
    (:func:`gdpo.reporting.calibration.claim_runs`), the seeds per method the config plans, the fewest that reach
    the target power (None: not by 64), and its design (paired items as ``gdpo power`` plans by default)."""

    claim: str
    tasks: tuple[str, ...]
    methods: tuple[str, ...]
    planned: int
    seeds: int | None
    design: TableDesign | EventDesign


def claim_needs(config: Mapping, target: float = 0.8, replicates: int = 400,
                item_correlation: float = DEFAULT_ITEM_CORRELATION) -> list[ClaimNeed]:
    """:class:`ClaimNeed` of every claim the config decides, in the registry's order; the seeds for ``target`` by
    :func:`gdpo.reporting.calibration.seeds_for_power` (``replicates`` simulated workflows, confirmed near the
    target), computed once here for both the claim table and the budget (:func:`budget_plan`)."""
    designs = designs_from_config(config, item_correlation=item_correlation)
    return [ClaimNeed(claim_id, tasks, methods, min(len(task_seeds(config, t)) for t in tasks),
                      seeds_for_power(designs[claim_id], target, replicates=replicates), designs[claim_id])
            for claim_id, (tasks, methods) in claim_runs(config).items()]


def claim_cost_table(config: Mapping, target: float = 0.8, replicates: int = 400,
                     item_correlation: float = DEFAULT_ITEM_CORRELATION,
                     needs: Sequence[ClaimNeed] | None = None) -> pd.DataFrame:
    """Per claim the config decides: its tasks, the seeds per method it plans and those that reach ``target``
    power (:func:`gdpo.reporting.calibration.seeds_for_power`, paired items at ``item_correlation`` as
    ``gdpo power`` plans by default), and the GPU-hours of the trained runs (train and evaluate) at each:
    tasks × compared methods × seeds. ``needs``: :func:`claim_needs` already computed (else computed here)."""
    if needs is None:
        needs = claim_needs(config, target, replicates, item_correlation)
    rows = []
    for need in needs:
        claim_id, tasks, methods, planned, needed = need.claim, need.tasks, need.methods, need.planned, need.seeds
        per_seed = sum(len(methods) * (gpu_hours_per_job(config, t, "train") + gpu_hours_per_job(config, t, "evaluate"))
                       for t in tasks)
        rows.append({"claim": claim_id, "tasks": ", ".join(tasks), "methods": ", ".join(methods),
                     "seeds": planned, "GPU-h": planned * per_seed,
                     f"seeds for {target:.0%} power": needed if needed is not None else "more than 64",
                     f"GPU-h at those seeds": needed * per_seed if needed is not None else math.nan})
    return pd.DataFrame(rows)


def format_bill(config: Mapping, name: str = "", target: float = 0.8, replicates: int = 400,
                budget_gpu_hours: float | None = None) -> str:
    """What ``gdpo plan`` prints: the job table, GPU-hours per job kind and in total, node-days, and each
    claim's seeds for ``target`` power with their cost; with ``budget_gpu_hours`` (``--budget-gpu-hours``) also the
    runs that decide the most claims within that budget and those that buy no verdict (:func:`format_budget`)."""
    if budget_gpu_hours is not None:
        check_budget(budget_gpu_hours)
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
    lines += format_checkpoint_disk(config)
    lines += dynamic_sampling_note(config)
    step_times = None
    if total == 0:
        lines.append("(a CPU-scale config: its jobs ask for no GPU)")
        step_times = load_step_times()
        lines += format_cpu_hours(config, step_times)
    if budget_gpu_hours is not None and step_times is not None:
        raise ValueError("--budget-gpu-hours: this is a CPU-scale config, whose jobs ask for no GPU; budget a GPU "
                         "config (config/paper-*.yaml).")
    needs = claim_needs(config, target, replicates)
    claims = claim_cost_table(config, target, replicates, needs=needs)
    if not claims.empty and step_times is not None:
        # A CPU config: the claims' cost in CPU-hours of their trained runs, from the measured speed.
        hours = cpu_hours_table(config, step_times)
        per_run = {(row["task"], row["kind"]): row["CPU-h"] / row["runs"] for row in hours.to_dict("records")}
        runs = claim_runs(config)
        per_seed = {claim: sum(len(methods) * (per_run.get((task, "train"), math.nan) + per_run.get(
            (task, "evaluate"), math.nan)) for task in runs[claim][0]) for claim, (_, methods) in runs.items()}
        needed = claims.columns[-2]
        claims["GPU-h"] = [row.seeds * per_seed[row.claim] for row in claims.itertuples()]
        claims["GPU-h at those seeds"] = [value * per_seed[claim] if isinstance(value, int) else math.nan
                                          for claim, value in zip(claims["claim"], claims[needed])]
        claims = claims.rename(columns={"GPU-h": "CPU-h", "GPU-h at those seeds": "CPU-h at those seeds"})
    if not claims.empty:
        lines.append(f"Seeds per method for {target:.0%} power (gdpo.reporting.calibration.seeds_for_power, the "
                     "paper's effect, the default seed spread, paired items at ρ = "
                     f"{DEFAULT_ITEM_CORRELATION:g} as `gdpo power` plans) and the "
                     f"{'CPU' if step_times is not None else 'GPU'}-hours of the claim's trained runs:")
        for column in claims.columns[claims.columns.str.contains("-h")]:  # pandas prints NaN before any formatter
            claims[column] = claims[column].map(_hours_text)
        lines.append(claims.to_string(index=False))
    if budget_gpu_hours is not None:
        lines += format_budget(budget_plan(config, budget_gpu_hours, target, replicates, needs=needs), config)
    return "\n".join(lines)


def expected_generation_rounds(silent_share: float, max_rounds: int) -> float:
    """Generation batches per step under dynamic sampling when a share ``silent_share`` of the groups has no
    signal: each round keeps (1 − s) of a batch, so a full batch takes 1 / (1 − s) rounds (a large batch's
    average), at most ``max_rounds``."""
    if not 0 <= silent_share <= 1:
        raise ValueError(f"the share of silent groups must be in [0, 1], got {silent_share}.")
    return float(max_rounds) if silent_share >= 1 else min(float(max_rounds), 1.0 / (1.0 - silent_share))


def dynamic_sampling_note(config: Mapping) -> list[str]:
    """The bill's lines on dynamic sampling: which tasks use it and what it does to their generation time (the
    config's hours do not model it)."""
    tasks = {}
    for run in plan_runs(config):
        if run.task not in tasks:
            options = resolve_run_settings(config, run.task, run.method, run.seed).loop_options
            if options.dynamic_sampling is not None:
                tasks[run.task] = options.dynamic_sampling.max_rounds
    if not tasks:
        return []
    rounds = sorted(set(tasks.values()))
    shares = ", ".join(f"{share:.0%}: {expected_generation_rounds(share, max(rounds)):.2g}" for share in (0.25, 0.5, 0.75))
    return [(f"dynamic sampling ({', '.join(tasks)}): a step generates until its batch holds groups with signal, "
             f"about 1 / (1 − s) generation batches at a share s of silent groups, somewhat more on several "
             f"processes, each of which fills its own share (at most {'/'.join(map(str, rounds))}); batches per step "
             f"at s = {shares}. The train hours above are the config's estimate and do not model it: the generation "
             "share of a step grows by that factor (benchmarks/dynamic_sampling.py measures s; each run's metrics "
             "log it as training_signal/silent_groups_generated).")]


def _hours_text(hours: float) -> str:
    """GPU-hours as printed: whole hours with thousands separators, "—" where the seeds are not reachable."""
    return "—" if math.isnan(hours) else f"{hours:,.0f}"


# --- A bill that buys verdicts (`gdpo plan --budget-gpu-hours H`) ---------------------------------------------------

#: Above this many claims that fit the budget alone, :func:`budget_plan` adds claims greedily instead of searching
#: every subset (the registry holds eleven claims: the exact search is the rule in practice).
EXACT_SEARCH_CLAIMS = 16


def check_budget(budget_gpu_hours: float) -> float:
    """``budget_gpu_hours`` if it is a positive, finite number of GPU-hours; else ``ValueError`` saying so."""
    if not (isinstance(budget_gpu_hours, int | float) and math.isfinite(budget_gpu_hours) and budget_gpu_hours > 0):
        raise ValueError(f"--budget-gpu-hours {budget_gpu_hours!r}: the budget must be a positive number of "
                         "GPU-hours, e.g. --budget-gpu-hours 5000.")
    return float(budget_gpu_hours)


@dataclasses.dataclass(frozen=True)
class BudgetPlan:
    """What :func:`budget_plan` proposes within ``budget`` GPU-hours: the chosen claims (rows: claim, tasks,
    methods, seeds per method, GPU-h of its runs alone, the power stated at the seeds it gets), the runs to make
    ((task, method) → seeds; base evaluations as the workflow makes them), their GPU-hours in all, the claims not
    chosen with why ((claim, reason)), and the paper grid's runs that buy no verdict (rows: task, methods, seeds,
    GPU-h, feeds), the paper grid's GPU-hours."""

    budget: float
    target: float
    chosen: list[dict]
    runs: dict[tuple[str, str], int]
    total: float
    left_out: list[tuple[str, str]]
    no_verdict: list[dict]
    paper_total: float
    cheapest: float | None  # the GPU-hours of the cheapest claim's runs alone (None: no claim reaches the target)


def _run_costs(config: Mapping) -> tuple[dict[tuple[str, str], float], dict[str, tuple[float, bool]]]:
    """GPU-hours of one seed of each (task, trained method) (its run and its evaluation), and per task that trains
    the base model's evaluation hours and whether it is evaluated once per seed (sampling) or once (greedy; none
    at all with ``evaluate_base: false``): what :func:`gdpo.plan.plan_evaluations` plans."""
    per_seed, base = {}, {}
    for key in plan_runs(config):
        per_seed.setdefault((key.task, key.method), gpu_hours_per_job(config, key.task, "train")
                            + gpu_hours_per_job(config, key.task, "evaluate"))
    evaluated = plan_evaluations(config)
    for task in dict.fromkeys(task for task, _ in per_seed):
        count = sum(key.task == task and key.method == BASE_METHOD for key in evaluated)
        per_task = len(task_seeds(config, task))
        base[task] = (gpu_hours_per_job(config, task, "evaluate") if count else 0.0, count == per_task > 1)
    return per_seed, base


def _cost(runs: Mapping[tuple[str, str], int], per_seed: Mapping, base: Mapping) -> float:
    """GPU-hours of ``runs`` ((task, method) → seeds) with the base evaluations of their tasks."""
    seeds = {}
    for (task, _), count in runs.items():
        seeds[task] = max(seeds.get(task, 0), count)
    return (sum(count * per_seed[key] for key, count in runs.items())
            + sum(base[task][0] * (count if base[task][1] else 1) for task, count in seeds.items()))


def _union(needs: Sequence[ClaimNeed]) -> dict[tuple[str, str], int]:
    """The runs that decide every claim of ``needs`` together: per (task, method) the most seeds any needs."""
    runs: dict[tuple[str, str], int] = {}
    for need in needs:
        for task in need.tasks:
            for method in need.methods:
                runs[(task, method)] = max(runs.get((task, method), 0), need.seeds)
    return runs


def _feeds(reporting: Mapping, task: str) -> list[str]:
    """The tables and figures of the ``reporting:`` block that name ``task``."""
    def names(value) -> bool:
        if isinstance(value, Mapping):
            return any(names(v) for v in value.values())
        if isinstance(value, list | tuple):
            return any(names(v) for v in value)
        return value == task

    return [str(name) for section in ("tables", "figures") for name, value in ((reporting or {}).get(section) or {}).items()
            if names(value)]


def _why_no_verdict(claim_id: str) -> str:
    """Why a registered claim that the config's runs do not decide has no verdict from them (from its registry)."""
    from gdpo.reporting.verdicts.registry import NoPower, Scale, design_of, rules_of

    design = design_of(claim_id, Scale.MODEL)
    if isinstance(design, NoPower):
        return f"no verdict of its own from these runs: {design.why}"
    if design is not None:
        return ("no verdict from this config: the `reporting:` block maps no table or figure its design reads, or "
                "their tasks do not train the methods it compares")
    scales = "/".join(rule.scale.value for rule in rules_of(claim_id))
    return f"not decided by language-model runs (judged at scale {scales or 'none'})"


def budget_plan(config: Mapping, budget_gpu_hours: float, target: float = 0.8, replicates: int = 400,
                needs: Sequence[ClaimNeed] | None = None) -> BudgetPlan:
    """The runs that decide the most claims at ``target`` power within ``budget_gpu_hours``.

    Each claim's cheapest runs are its tasks × the methods it compares at the fewest seeds per method that reach
    ``target`` (:func:`claim_needs`; a claim that needs more than 64 seeds, or whose runs alone cost more than the
    budget, cannot be decided within it). The chosen claims are, among all subsets of the rest, one with the most
    claims whose runs together cost at most the budget (a run shared by claims counted once: per task and method
    the most seeds a chosen claim needs, with the base model's evaluations the workflow makes for each task); ties
    go to the cheaper subset, then to the registry's order; a subset is taken only if every claim in it, at the
    seeds it gets there (more than it needs where it shares runs), still has ``target`` power. Above
    :data:`EXACT_SEARCH_CLAIMS` candidates, claims are added greedily by their cost alone instead. The power stated
    is :func:`gdpo.reporting.calibration.decided_power`, what ``seeds_for_power`` compared with the target (the same
    replicates and random numbers), so a claim's own seeds state the power its search found.
    """
    budget = check_budget(budget_gpu_hours)
    if needs is None:
        needs = claim_needs(config, target, replicates)
    per_seed, base = _run_costs(config)
    alone = {need.claim: _cost(_union([need]), per_seed, base) for need in needs if need.seeds is not None}
    left_out, candidates = [], []
    for need in needs:
        if need.seeds is None:
            left_out.append((need.claim, f"cannot reach {target:.0%} power by 64 seeds per method"))
        elif alone[need.claim] > budget:
            reason = (f"cannot reach {target:.0%} power within {budget:,.0f} GPU-h: {need.seeds} seeds per method "
                      f"cost {alone[need.claim]:,.0f} GPU-h")
            left_out.append((need.claim, reason))
        else:
            candidates.append(need)
    powers: dict[tuple[str, int], float] = {}

    def power(need: ClaimNeed, seeds: int) -> float:
        if (need.claim, seeds) not in powers:
            powers[need.claim, seeds] = decided_power(searched_design(need.design).with_seeds(seeds), target,
                                                      replicates, 10 * replicates)
        return powers[need.claim, seeds]

    def seeds_in(need: ClaimNeed, runs: Mapping) -> int:
        return min(runs[(task, method)] for task in need.tasks for method in need.methods)

    def holds(subset: Sequence[ClaimNeed]) -> bool:
        runs = _union(subset)
        return all(power(need, seeds_in(need, runs)) >= target for need in subset)

    chosen: list[ClaimNeed] = []
    if len(candidates) > EXACT_SEARCH_CLAIMS:
        for need in sorted(candidates, key=lambda n: alone[n.claim]):
            if _cost(_union([*chosen, need]), per_seed, base) <= budget and holds([*chosen, need]):
                chosen.append(need)
    else:
        for size in range(len(candidates), 0, -1):
            fitting = [(cost, subset) for subset in itertools.combinations(candidates, size)
                       if (cost := _cost(_union(subset), per_seed, base)) <= budget]
            chosen = next((list(subset) for _, subset in sorted(fitting, key=lambda pair: pair[0]) if holds(subset)),
                          [])
            if chosen:
                break
    runs = _union(chosen)
    rows = [{"claim": need.claim, "tasks": ", ".join(need.tasks), "methods": ", ".join(need.methods),
             "seeds": seeds_in(need, runs), "GPU-h alone": alone[need.claim],
             "power": power(need, seeds_in(need, runs))} for need in chosen]
    names = {need.claim for need in chosen}
    left_out += [(need.claim, f"fits alone ({alone[need.claim]:,.0f} GPU-h) but not beside the claims chosen")
                 for need in candidates if need.claim not in names]
    from gdpo.reporting.verdicts.registry import claims

    decided = {need.claim for need in needs}
    left_out += [(claim.claim_id, _why_no_verdict(claim.claim_id)) for claim in claims()
                 if claim.claim_id not in decided]
    order = {claim.claim_id: index for index, claim in enumerate(claims())}
    left_out.sort(key=lambda pair: order.get(pair[0], len(order)))
    # The paper grid's runs that no claim this config can decide compares, at any budget.
    used = {(task, method) for need in needs if need.seeds is not None for task in need.tasks for method in need.methods}
    no_verdict = []
    reporting = config.get("reporting") or {}
    for task in dict.fromkeys(task for task, _ in per_seed):
        unused = [method for (t, method) in per_seed if t == task and (t, method) not in used]
        if not unused:
            continue
        seeds = len(task_seeds(config, task))
        whole = len(unused) == sum(t == task for t, _ in per_seed)
        hours = _cost({(task, method): seeds for method in unused}, per_seed, base) if whole else sum(
            seeds * per_seed[(task, method)] for method in unused)
        feeds = _feeds(reporting, task)
        no_verdict.append({"task": task, "methods": ", ".join(unused) + (" (and base evaluations)" if whole and
                                                                          base[task][0] else ""),
                           "seeds": seeds, "GPU-h": hours, "feeds": ", ".join(feeds) + " only" if feeds else "nothing"})
    paper_total = float(job_table(config)["GPU-h"].sum())
    return BudgetPlan(budget, target, rows, runs, _cost(runs, per_seed, base), left_out, no_verdict, paper_total,
                      min(alone.values(), default=None))


def format_budget(plan: BudgetPlan, config: Mapping) -> list[str]:
    """The lines ``gdpo plan --budget-gpu-hours`` adds to the bill (:func:`budget_plan`)."""
    lines = [(f"Within a budget of {plan.budget:,.0f} GPU-h (--budget-gpu-hours), the runs that decide the most "
              f"claims at {plan.target:.0%} power: each claim at the fewest seeds per method for it (above), runs "
              "shared by claims counted once, the base model's evaluations as the workflow makes them; the most "
              "claims within the budget, the cheapest such set (every subset searched), each claim's power restated "
              "at the seeds it gets (gdpo.reporting.bill.budget_plan):")]
    if not plan.chosen:
        lines.append(f"  no claim can be decided at {plan.target:.0%} power within {plan.budget:,.0f} GPU-h"
                     + (f": the cheapest needs {plan.cheapest:,.0f} GPU-h" if plan.cheapest is not None else ""))
    else:
        table = pd.DataFrame(plan.chosen)
        lines.append(table.to_string(index=False, formatters={"GPU-h alone": _hours_text, "power": "{:.2f}".format}))
        runs = pd.DataFrame([{"task": task, "method": method, "seeds": seeds} for (task, method), seeds in plan.runs.items()])
        lines.append("The runs to make (seeds per method; seeds the paper grid plans beyond these buy no further verdict):")
        lines.append(runs.to_string(index=False))
        lines.append(f"   total: {plan.total:,.0f} GPU-h of the {plan.budget:,.0f} budget, {len(plan.chosen)} "
                     f"claim{'s' if len(plan.chosen) != 1 else ''} decided (the paper grid: {plan.paper_total:,.0f} "
                     "GPU-h, `gdpo plan` without --budget-gpu-hours)")
    lines.append("Not proposed:")
    lines += [f"  {claim}: {reason}" for claim, reason in plan.left_out]
    if plan.no_verdict:
        wasted = sum(row["GPU-h"] for row in plan.no_verdict)
        lines.append(f"Runs of the paper grid that buy no verdict at any budget (no claim this config can decide "
                     f"at {plan.target:.0%} power compares them): {wasted:,.0f} GPU-h")
        lines.append(pd.DataFrame(plan.no_verdict).to_string(index=False, formatters={"GPU-h": _hours_text}))
    return lines
