"""A task's format warm-up settings: :class:`WarmupSettings` (``python -m gdpo warmup-model --settings``), made
from the config by :func:`resolve_warmup_settings` over :data:`WARMUP_DEFAULTS`."""

from __future__ import annotations

import dataclasses

from gdpo.plan.layout import check_directory_name
from gdpo.plan.settings import JobSettings, check_data_options, copied_mapping, report_backends, set_field
from gdpo.plan.values import finite_number, whole_number
from gdpo.tasks import DATA_OPTION_KEYS, family_spec


#: Warm-up settings where the task's ``warmup`` block is silent (:mod:`gdpo.training.warmup`).
WARMUP_DEFAULTS = {"max_steps": 20, "learning_rate": 1.0e-5, "train_size": 160, "per_device_train_batch_size": 4,
                   "seed": 1000, "bf16": False, "gradient_accumulation_steps": 1, "freeze_embeddings": False}


#: Data options that choose the RL training's item mix, not the warm-up's (nor the evaluation's).
RL_ONLY_OPTIONS = ("decline_share", "rl_generators")


@dataclasses.dataclass(frozen=True)
class WarmupSettings(JobSettings):
    """Everything a task's format warm-up needs: ``python -m gdpo warmup-model --settings <to_json()>``.

    Made from the config by :func:`resolve_warmup_settings`; the warm-up (:func:`gdpo.training.warmup.warmup_model`)
    writes them to ``warmup.json`` beside the warmed-up model. :meth:`to_json` keeps the field names and order
    the warm-ups have always had.

    Warm-up:
        task (str): the config's task name. family (str): its task family (:data:`gdpo.tasks.FAMILIES`).
        options (dict): the task's data options but :data:`RL_ONLY_OPTIONS`.
    Training (:data:`WARMUP_DEFAULTS` < the task's ``warmup`` block):
        max_steps (int): optimizer steps. learning_rate (float): > 0. train_size (int): items drawn.
        per_device_train_batch_size (int): items per micro-batch. seed (int): item draw and training seed, ≥ 0.
        bf16 (bool): bfloat16 autocast over float32 weights. gradient_accumulation_steps (int): micro-batches
        per optimizer step. freeze_embeddings (bool): keep the token embeddings fixed.
    Reporting:
        report_to (str | list[str] | None): the task's ``training.report_to`` (:func:`report_backends`); None
        where the config sets none, and then no key of :meth:`to_dict`.
    """

    task: str
    family: str
    options: dict = dataclasses.field(default_factory=dict)
    max_steps: int = WARMUP_DEFAULTS["max_steps"]
    learning_rate: float = WARMUP_DEFAULTS["learning_rate"]
    train_size: int = WARMUP_DEFAULTS["train_size"]
    per_device_train_batch_size: int = WARMUP_DEFAULTS["per_device_train_batch_size"]
    seed: int = WARMUP_DEFAULTS["seed"]
    bf16: bool = WARMUP_DEFAULTS["bf16"]
    gradient_accumulation_steps: int = WARMUP_DEFAULTS["gradient_accumulation_steps"]
    freeze_embeddings: bool = WARMUP_DEFAULTS["freeze_embeddings"]
    report_to: str | list[str] | None = None

    _WHAT = "warm-up settings"
    _MADE_BY = "gdpo.plan.resolve_warmup_settings"
    _LEFT_OUT_WHEN_NONE = ("report_to",)

    def __post_init__(self) -> None:
        copied_mapping(self, "options", "; they are the task's data options")
        if isinstance(self.report_to, (list, tuple)):
            set_field(self, "report_to", list(self.report_to))
        self._check()

    def _check(self) -> None:
        check_directory_name("task", self.task)  # the warmed-up model's directory is named after it
        where = f"warm-up of task {self.task!r}"
        try:
            family_spec(self.family)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        check_data_options(where, self.options)
        rl_only = sorted(set(self.options) & set(RL_ONLY_OPTIONS))
        if rl_only:
            raise ValueError(f"{where}: options {rl_only} choose the RL training's item mix, not the warm-up's; "
                             "leave them out of its options.")
        for name in ("max_steps", "train_size", "per_device_train_batch_size", "gradient_accumulation_steps"):
            value = getattr(self, name)
            if not whole_number(value, 1):
                raise ValueError(f"{where}: {name} {value!r} must be a positive integer; set "
                                 f"`tasks.{self.task}.warmup.{name}:` to 1 or more.")
        if not whole_number(self.seed, 0):
            raise ValueError(f"{where}: seed {self.seed!r} must be an integer ≥ 0; set "
                             f"`tasks.{self.task}.warmup.seed:`.")
        if not finite_number(self.learning_rate) or self.learning_rate <= 0:
            raise ValueError(f"{where}: learning_rate {self.learning_rate!r} must be a number > 0; set "
                             f"`tasks.{self.task}.warmup.learning_rate:`.")
        for name in ("bf16", "freeze_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{where}: {name} {getattr(self, name)!r} must be true or false; set "
                                 f"`tasks.{self.task}.warmup.{name}:`.")
        if self.report_to is not None:
            try:
                report_backends(self.report_to)
            except ValueError as error:
                raise ValueError(f"{where}: the config's training: {error}") from None


def resolve_warmup_settings(config: dict, task: str) -> WarmupSettings | None:
    """The task's warm-up settings (defaults filled in), or None when it has no ``warmup`` block.

    The warm-up takes the task's data options except :data:`RL_ONLY_OPTIONS`: it teaches the output format on
    the data's natural mix (tool calling: items that expect a call and items that expect none), whatever
    share of each the RL training then draws. It reports its metrics where the task's training does
    (``training.report_to``, a key of the settings only where the config sets it)."""
    spec = (config.get("tasks") or {})[task]
    if not spec.get("warmup"):
        return None
    training = {**config.get("training", {}), **spec.get("training", {})}
    reporting = {"report_to": training["report_to"]} if "report_to" in training else {}
    return WarmupSettings(
        task=task,
        family=spec["family"],
        options={k: spec[k] for k in DATA_OPTION_KEYS if k in spec and k not in RL_ONLY_OPTIONS},
        **{**WARMUP_DEFAULTS, **spec["warmup"], **reporting},
    )
