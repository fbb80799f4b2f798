"""Task families: data, prompt format, reward functions (TRL's contract) and evaluation.

A family module exposes ``REWARD_FUNCTIONS`` (name → ``(completions, **kwargs) -> list[float | None]``),
``build_dataset(split, size, seed, **options)`` returning a ``datasets.Dataset`` with a conversational
``prompt`` column and the columns its reward functions read (options are the task's config keys of
:data:`DATA_OPTION_KEYS`), and ``evaluate(request)`` (:mod:`gdpo.evaluation`). Optional:
``required_files(options)`` (data files made by a workflow rule), ``reference_completion(row)``
(answers for the format warm-up, :mod:`gdpo.training.warmup`) and
``completion_diagnostics(completions, **columns)`` (name → per-completion indicator, 1.0/0.0/NaN: what the
policy does, logged per training step as ``diagnostics/<name>``; the signs of a collapse).

:data:`FAMILIES` says what planning needs of each family without importing it (its data stack: ``datasets``,
``sympy``, ...): the module, its reward names in ``REWARD_FUNCTIONS`` order, and the module with its
``required_files`` if it has one. :func:`get_family` checks the declared reward names against the module.
"""

from __future__ import annotations

import dataclasses
import importlib
from types import ModuleType

#: Task config keys passed to the family's ``build_dataset`` (and its evaluator) as keyword options.
DATA_OPTION_KEYS = ("length_limit", "train_data", "eval_data", "data_dir", "generators", "rl_generators",
                    "eval_generators", "max_prompt_chars", "decline_share", "time_limit", "max_tests", "eval_backend")


@dataclasses.dataclass(frozen=True)
class FamilySpec:
    """A task family as planning sees it.

    Attributes:
        module: the family's module (data, rewards, evaluator).
        reward_names: the keys of its ``REWARD_FUNCTIONS``, in order (every reward a task may name).
        defaults: the rewards a task without ``reward_weights`` trains on, each at weight 1 (None: all of
            ``reward_names``); the paper's main setup of the family, never two alternatives of one reward.
        files_module: a light module with the family's ``required_files(options)``, or None when the family
            reads no files a rule makes.
        required_options: task keys of :data:`DATA_OPTION_KEYS` the family has no default for (a paper setting
            each config must state); planning refuses a task without them (:func:`check_required_options`).
        length_limit: the family's default ``length_limit`` (tokens) of its length rewards, where it has one
            (planning checks it against the completion cap; the family module's own default must equal it).
        local_data_dir: whether a task's ``data_dir`` is a local copy the user provides (math, code: without
            one the data come from the hub), which planning requires to exist; tool calling's is made by a rule.
    """

    module: str
    reward_names: tuple[str, ...]
    files_module: str | None = None
    required_options: tuple[str, ...] = ()
    length_limit: int | None = None
    local_data_dir: bool = False
    defaults: tuple[str, ...] | None = None

    @property
    def default_rewards(self) -> tuple[str, ...]:
        """The rewards a task without ``reward_weights`` trains on (weight 1 each)."""
        return self.reward_names if self.defaults is None else self.defaults


#: Family name → :class:`FamilySpec`.
FAMILIES = {
    "arithmetic": FamilySpec("gdpo.tasks.arithmetic", ("correct", "format", "length"), length_limit=64),
    "code": FamilySpec("gdpo.tasks.code", ("pass", "length_conditioned", "bug"), required_options=("length_limit",),
                       local_data_dir=True),
    "tool_calling": FamilySpec("gdpo.tasks.tool_calling", ("correct", "format"), "gdpo.tasks.tool_calling.data"),
    # The paper's math runs train on correctness and the plain length reward (Table 3); the conditioned length
    # reward replaces the plain one in Table 4's runs, which name it.
    "math": FamilySpec("gdpo.tasks.math", ("correct", "length", "length_conditioned"), length_limit=64,
                       local_data_dir=True, defaults=("correct", "length")),
}


def family_spec(name: str) -> FamilySpec:
    """What planning knows of a family, without importing it; unknown names raise ``ValueError`` listing the
    valid ones."""
    if name not in FAMILIES:
        raise ValueError(f"Unknown task family {name!r}; valid families are: {', '.join(sorted(FAMILIES))}.")
    return FAMILIES[name]


def check_required_options(name: str, spec: dict) -> None:
    """``ValueError`` naming the options of family ``name`` that task ``spec`` (its config block) leaves unset."""
    missing = [option for option in family_spec(name).required_options if spec.get(option) is None]
    if missing:
        raise ValueError(f"family {name!r} has no default for {', '.join(missing)}: set it in the task (for code, "
                         "length_limit is the paper's l of the conditioned length reward, in tokens).")


def get_family(name: str) -> ModuleType:
    """The module of a task family; unknown names raise ``ValueError`` listing the valid ones."""
    spec = family_spec(name)
    module = importlib.import_module(spec.module)
    if tuple(module.REWARD_FUNCTIONS) != spec.reward_names:
        raise RuntimeError(f"{spec.module}.REWARD_FUNCTIONS has rewards {list(module.REWARD_FUNCTIONS)}, but "
                           f"gdpo.tasks.FAMILIES declares {list(spec.reward_names)} for family {name!r}; make the "
                           "declaration match (planning reads it).")
    return module


def required_files(spec: dict) -> list[str]:
    """Data files a task needs before training or evaluation (made by a workflow rule or by the user).

    ``spec`` is the task's config block; families without such files need none.
    """
    files_module = family_spec(spec["family"]).files_module
    if files_module is None:
        return []
    options = {k: spec[k] for k in DATA_OPTION_KEYS if k in spec}
    return importlib.import_module(files_module).required_files(options)
