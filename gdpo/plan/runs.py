"""What a config runs: every training run (:func:`plan_runs`, after checking each task's model spec, family
and settings) and every evaluation (:func:`plan_evaluations`), and what each task runs as the claims ledger
labels it (:func:`describe_runs`)."""

from __future__ import annotations

from gdpo.plan.chain import updates_per_generation
from gdpo.plan.conflicts import check_settings
from gdpo.plan.eval_settings import resolve_eval_settings
from gdpo.plan.layout import BASE_METHOD, RunKey, runs_root
from gdpo.plan.models import check_model_spec
from gdpo.plan.task_config import task_methods, task_seeds
from gdpo.tasks import check_required_options


def plan_runs(config: dict) -> list[RunKey]:
    """Every training run of the config, under ``results/<scale>/runs``: each task's methods × its seeds.

    Checks every task's model spec and family first (``ValueError`` naming the valid forms), then the settings
    that conflict with each other (:func:`check_settings`).
    """
    for task, spec in (config.get("tasks") or {}).items():
        try:
            check_model_spec(spec["model"])
            check_required_options(spec["family"], spec)
        except ValueError as error:
            raise ValueError(f"task {task!r}: {error}") from None
    check_settings(config)
    root = runs_root(config["scale"])
    return [RunKey(task, method, seed, root)
            for task in (config.get("tasks") or {})
            for method in task_methods(config, task)
            for seed in task_seeds(config, task)]


def plan_evaluations(config: dict) -> list[RunKey]:
    """Every evaluation of the config: each planned training run, plus the base model per task.

    The base model is evaluated once per seed when sampling (the seed changes its samples) and once,
    with the first seed, under greedy decoding (every seed would give the same result); not at all for a
    task with ``evaluate_base: false`` (a variant whose base model and evaluation are another task's).
    """
    runs = plan_runs(config)
    base = []
    for task in dict.fromkeys(run.task for run in runs):
        if not config["tasks"][task].get("evaluate_base", True):
            continue
        all_seeds = task_seeds(config, task)
        temperature = resolve_eval_settings(config, task, BASE_METHOD, all_seeds[0]).temperature
        seeds = all_seeds if temperature > 0 else all_seeds[:1]
        base += [RunKey(task, BASE_METHOD, seed, runs_root(config["scale"])) for seed in seeds]
    return runs + base


def describe_runs(config: dict) -> dict[str, dict]:
    """What each task runs, for the claims ledger's labels and minima: task → ``{"model": spec,
    "max_steps": int, "prompts_per_batch": int, "max_completion_length": int, "length_limit", "decline_share",
    "train_data"}`` (the last three as the task sets them, None where it does not). ``max_steps`` counts training
    steps as the paper does (generation batches: TRL's optimizer steps ÷ :func:`updates_per_generation`);
    ``prompts_per_batch`` counts the prompts of one generation batch (per-device batch × steps per generation ×
    processes of the ``launch:`` section ÷ rollouts per prompt), the batch GDPO's batch step normalises over.
    TRL's defaults where the config sets none."""
    processes = int((config.get("launch") or {}).get("num_processes", 1))
    described = {}
    for task, spec in (config.get("tasks") or {}).items():
        trl_args = {**config.get("training", {}), **spec.get("training", {})}
        per_generation = trl_args.get("steps_per_generation") or trl_args.get("gradient_accumulation_steps", 1)
        completions = trl_args.get("per_device_train_batch_size", 8) * per_generation * processes
        max_steps = trl_args.get("max_steps")
        described[task] = {"model": spec["model"],
                           "max_steps": max_steps // updates_per_generation(trl_args) if max_steps else max_steps,
                           "prompts_per_batch": completions // trl_args.get("num_generations", 8),
                           "max_completion_length": trl_args.get("max_completion_length", 256),
                           # the claims' validity conditions (gdpo.reporting.verdicts.validity) read these
                           "length_limit": spec.get("length_limit"), "decline_share": spec.get("decline_share"),
                           "train_data": spec.get("train_data")}
    return described
