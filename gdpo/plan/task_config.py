"""A task's entry in the config as planning reads it: the entry itself (:func:`task_spec`), the seeds it trains
with (:func:`task_seeds`) and its methods, by the names their runs go by (:func:`task_methods`, with their
options :func:`task_method_variants`)."""

from __future__ import annotations

from gdpo.methods import MethodVariant, method_variants


def task_spec(config: dict, task: str) -> dict:
    """The config's entry of ``task``; ``ValueError`` naming the tasks it defines when it has none."""
    tasks = config.get("tasks") or {}
    if task not in tasks:
        raise ValueError(f"Unknown task {task!r}; the config defines: {', '.join(sorted(tasks)) or 'no tasks'}.")
    return tasks[task]


def task_seeds(config: dict, task: str) -> list[int]:
    """The seeds ``task`` trains with: its own ``seeds``, else the config's."""
    return list(config["tasks"][task].get("seeds", config["seeds"]))


def task_methods(config: dict, task: str) -> list[str]:
    """The methods ``task`` trains, by the names their runs go by (``gdpo``, ``gdpo_clip3``: a method with options,
    :class:`gdpo.methods.MethodVariant`): its own ``methods``, else the config's."""
    return list(task_method_variants(config, task))


def task_method_variants(config: dict, task: str) -> dict[str, MethodVariant]:
    """The methods ``task`` trains with their options, by the names their runs go by; ``ValueError`` naming the
    entry of an unknown method or option, or of two entries that run under one name."""
    own = "methods" in config["tasks"][task]
    entries = config["tasks"][task]["methods"] if own else config["methods"]
    variants = method_variants(entries, f"task {task!r}: methods" if own else "methods")
    return {variant.name: variant for variant in variants}
