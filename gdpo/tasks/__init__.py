"""Task families: data, prompt format, reward functions (TRL's contract) and evaluation.

A family module exposes ``REWARD_FUNCTIONS`` (name → ``(completions, **kwargs) -> list[float | None]``),
``build_dataset(split, size, seed, **options)`` returning a ``datasets.Dataset`` with a conversational
``prompt`` column and the columns its reward functions read (options are the task's config keys of
:data:`DATA_OPTION_KEYS`), and ``evaluate(request)`` (:mod:`gdpo.evaluation`). Optional:
``required_files(options)`` (data files made by a workflow rule), ``reference_completion(row)``
(answers for the format warm-up, :mod:`gdpo.training.warmup`) and
``completion_diagnostics(completions, **columns)`` (name → per-completion indicator, 1.0/0.0/NaN: what the
policy does, logged per training step as ``diagnostics/<name>``; the signs of a collapse).
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Task config keys passed to the family's ``build_dataset`` (and its evaluator) as keyword options.
DATA_OPTION_KEYS = ("length_limit", "train_data", "eval_data", "data_dir", "generators", "max_prompt_chars",
                    "decline_share", "time_limit", "max_tests", "eval_backend")

#: Family name → module.
FAMILIES = {"arithmetic": "gdpo.tasks.arithmetic", "code": "gdpo.tasks.code",
            "tool_calling": "gdpo.tasks.tool_calling", "math": "gdpo.tasks.math"}


def get_family(name: str) -> ModuleType:
    """The module of a task family; unknown names raise ``ValueError`` listing the valid ones."""
    if name not in FAMILIES:
        raise ValueError(f"Unknown task family {name!r}; valid families are: {', '.join(sorted(FAMILIES))}.")
    return importlib.import_module(FAMILIES[name])


def required_files(spec: dict) -> list[str]:
    """Data files a task needs before training or evaluation (made by a workflow rule or by the user).

    ``spec`` is the task's config block; families without such files need none.
    """
    family = get_family(spec["family"])
    if not hasattr(family, "required_files"):
        return []
    return family.required_files({k: spec[k] for k in DATA_OPTION_KEYS if k in spec})
