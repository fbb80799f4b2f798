"""One evaluation job: resolve its settings from the config, call the family's evaluator, write eval.json."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from gdpo.evaluation import EvalRequest
from gdpo.tasks import DATA_OPTION_KEYS, get_family

#: Method name of the untrained model's evaluation (the tables' "base" rows).
BASE_METHOD = "base"

#: Evaluation defaults where neither the scale's nor the task's ``evaluation`` block sets a value.
EVAL_DEFAULTS = {
    "eval_size": None,
    "num_samples": 1,
    "temperature": 0.0,
    "top_p": 1.0,
    "max_new_tokens": 128,
    "batch_size": 8,
}


def resolve_eval_settings(config: dict, task: str, method: str, seed: int) -> dict:
    """The settings of one evaluation: defaults < the scale's ``evaluation`` < the task's ``evaluation``.

    ``method`` is one of the task's methods or ``"base"`` (the untrained model).
    Returns a JSON-serialisable dict: ``task``, ``family``, ``model``, ``method``, ``seed``, ``options`` (the
    task's data options) and the keys of :data:`EVAL_DEFAULTS`.
    """
    tasks = config.get("tasks") or {}
    if task not in tasks:
        raise ValueError(f"Unknown task {task!r}; the config defines: {', '.join(sorted(tasks)) or 'no tasks'}.")
    spec = tasks[task]
    methods = spec.get("methods", config["methods"])
    if method != BASE_METHOD and method not in methods:
        raise ValueError(
            f"Method {method!r} is not among task {task!r}'s methods ({', '.join(methods)}) nor {BASE_METHOD!r}."
        )
    get_family(spec["family"])  # unknown families stop here, with the valid names
    evaluation = {**EVAL_DEFAULTS, **(config.get("evaluation") or {}), **(spec.get("evaluation") or {})}
    return {
        "task": task,
        "family": spec["family"],
        "model": spec["model"],
        "method": method,
        "seed": seed,
        "options": {k: spec[k] for k in DATA_OPTION_KEYS if k in spec},
        "fast_generation": bool(spec.get("fast_generation", config.get("fast_generation", False))),
        **evaluation,
    }


def plan_evaluations(config: dict) -> list[dict]:
    """Every evaluation of the config: each planned training run, plus the base model per task.

    The base model is evaluated once per seed when sampling (the seed changes its samples) and once,
    with the first seed, under greedy decoding (every seed would give the same result); not at all for a
    task with ``evaluate_base: false`` (a variant whose base model and evaluation are another task's).
    Returns dicts with ``task``, ``method``, ``seed``.
    """
    from gdpo.training.run import plan_runs, task_seeds

    runs = plan_runs(config)
    base = []
    for task in dict.fromkeys(run["task"] for run in runs):
        if not config["tasks"][task].get("evaluate_base", True):
            continue
        all_seeds = task_seeds(config, task)
        temperature = resolve_eval_settings(config, task, BASE_METHOD, all_seeds[0])["temperature"]
        seeds = all_seeds if temperature > 0 else all_seeds[:1]
        base += [{"task": task, "method": BASE_METHOD, "seed": seed} for seed in seeds]
    return runs + base


def evaluate_run(
    settings: dict,
    model_dir: str | Path,
    out_path: str | Path,
    work_dir: str | Path,
    adapter_dir: str | Path | None = None,
    threads: int = 1,
) -> dict:
    """Evaluate one policy and write ``out_path`` (eval.json) atomically.

    Args:
        settings: from :func:`resolve_eval_settings`.
        model_dir: the prepared base model.
        out_path: ``results/<scale>/runs/<task>/<method>/seed<seed>/eval.json``.
        work_dir: directory for the evaluator's intermediate files (created).
        adapter_dir: the trained run's ``model/`` directory; None for the base model.
        threads: torch CPU threads.
    """
    import torch

    from gdpo.training.run import weights_digest

    if (settings["method"] == BASE_METHOD) != (adapter_dir is None):
        raise ValueError("Give --adapter-dir for a trained method and only for it (method 'base' is the untrained model).")
    torch.set_num_threads(threads)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    request = EvalRequest(
        task=settings["task"],
        method=settings["method"],
        seed=settings["seed"],
        model_dir=Path(model_dir),
        adapter_dir=Path(adapter_dir) if adapter_dir else None,
        options=dict(settings["options"]),
        eval_size=settings["eval_size"],
        num_samples=settings["num_samples"],
        temperature=settings["temperature"],
        top_p=settings["top_p"],
        max_new_tokens=settings["max_new_tokens"],
        batch_size=settings["batch_size"],
        work_dir=work_dir,
        threads=threads,
        fast_generation=settings.get("fast_generation", False),
    )
    started = time.perf_counter()
    result = get_family(settings["family"]).evaluate(request)
    record = {
        "task": settings["task"],
        "method": settings["method"],
        "seed": settings["seed"],
        "model": settings["model"],
        "model_weights_sha256": weights_digest(model_dir),
        **result,
        "settings": {**settings, **(result.get("settings") or {})},
        "eval_seconds": round(time.perf_counter() - started, 2),
    }
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_suffix(".json.partial")
    partial.write_text(json.dumps(record, indent=2), encoding="utf-8")
    os.replace(partial, out_path)
    return record
