"""Task families: data, prompt format, reward functions (TRL's contract) and evaluation.

A family module exposes ``REWARD_FUNCTIONS`` (name → ``(completions, **kwargs) -> list[float | None]``)
and ``build_dataset(split, size, seed, **options)`` returning a ``datasets.Dataset`` with a conversational
``prompt`` column and the columns its reward functions read (options come from the task's config,
e.g. ``length_limit``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Task config keys passed to the family's ``build_dataset`` (and its evaluator) as keyword options.
DATA_OPTION_KEYS = ("length_limit", "train_data", "eval_data", "data_dir", "generators", "eval_fraction",
                    "max_prompt_chars", "time_limit", "max_tests")

#: Family name → module. The families of the paper join this table as they are built.
FAMILIES = {"arithmetic": "gdpo.tasks.arithmetic", "code": "gdpo.tasks.code"}
#: The paper's families that configs may already name; their tasks are left out of the workflow (and
#: reported as not run) until their module exists.
PLANNED_FAMILIES = ("tool_calling", "math", "code")


def get_family(name: str) -> ModuleType:
    """The module of a task family; unknown names raise ``ValueError`` listing the valid ones."""
    if name in PLANNED_FAMILIES and name not in FAMILIES:
        raise ValueError(f"Task family {name!r} is not built yet; built families: {', '.join(sorted(FAMILIES))}.")
    if name not in FAMILIES:
        raise ValueError(f"Unknown task family {name!r}; valid families are: {', '.join(sorted(FAMILIES))}.")
    return importlib.import_module(FAMILIES[name])
