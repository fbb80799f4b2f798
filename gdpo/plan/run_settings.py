"""A training run's settings: :class:`RunSettings` (``python -m gdpo train --settings``), made from the config by
:func:`resolve_run_settings`, with the policy dtypes it allows and the TRL arguments a run sets itself."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path, PurePath

from gdpo.loop_options import LoopOptions, loop_options_from_training
from gdpo.methods import MethodVariant, available_conventions, available_methods, resolve_method
from gdpo.plan.chain import checkpoint_interval_steps, updates_per_generation
from gdpo.plan.layout import BASE_METHOD, RunKey
from gdpo.plan.settings import (
    JobSettings, check_method_options, copied_mapping, report_backends, set_field,
)
from gdpo.plan.task_config import task_method_variants, task_spec
from gdpo.plan.values import whole_number
from gdpo.tasks import DATA_OPTION_KEYS, family_spec


#: Dtypes the trained policy's weights may have.
POLICY_DTYPES = ("float32", "bfloat16", "float16")
#: TRL arguments each run sets from its own fields (``gdpo.training.run.trl_arguments``); a config value for
#: one of them would silently override the run's identity, so it is refused with where to set it instead.
RUN_OWNED_TRL_ARGUMENTS = {
    "seed": "seeds come from the config's `seeds:` (or a task's own), one run per seed",
    "data_seed": "the run's data order follows its seed",
    "reward_weights": "set a task's `reward_weights:` (reward name -> weight)",
    "output_dir": "checkpoints go to <run directory>.work",
}


@dataclasses.dataclass(frozen=True)
class RunSettings(JobSettings):
    """Everything one training run needs: ``python -m gdpo train --settings <to_json()>``.

    Made from the config by :func:`resolve_run_settings`; the trainer (:func:`gdpo.training.run.train`) writes
    them to the run's ``config.json`` with TRL's completed arguments. :meth:`to_json` keeps the field order
    and names of the run's JSON, so a run's settings read the same in every file.

    Run:
        task (str): the config's task name. family (str): its task family (:data:`gdpo.tasks.FAMILIES`).
        model (str): model spec (:func:`check_model_spec`). method (str): advantage method
        (:mod:`gdpo.methods`). convention (str): numeric convention. seed (int): training seed, ≥ 0.
        method_options (dict | None, last in the JSON): the method's options (``{"clip": 3.0}``), None (left out)
        for none; the run goes by :attr:`variant`'s name (``gdpo_clip3``).
    Rewards:
        reward_names (tuple[str, ...]): the family's reward functions used, in order.
        reward_weights (tuple[float, ...]): one weight per reward name.
    Data:
        train_size (int | None): training items drawn (None: the family's default, or every item of a data
        set). data_options (dict): the task's keys of :data:`gdpo.tasks.DATA_OPTION_KEYS`.
    CPU speed:
        fast_generation (bool): rollouts from the bfloat16 rollout engine. pack_prompts (bool): one packed
        sequence per micro-batch. policy_dtype (str | None): dtype of the trained weights
        (:data:`POLICY_DTYPES`); None means bfloat16 when ``trl["bf16"]`` is set, else float32.
    TRL:
        peft (dict | None): ``peft.LoraConfig`` arguments, or None for full fine-tuning. trl (dict):
        ``trl.GRPOConfig`` arguments (the config's ``training:``, a task's own overriding the scale's);
        ``report_to`` (:func:`report_backends`) is among them only where the config sets it.
    The loop beyond TRL:
        loop (dict | None): the config's ``training:`` keys of :data:`gdpo.loop_options.LOOP_KEYS`
        (dynamic sampling, the KL estimator, the KL in the reward) as it sets them; None (left out of the JSON)
        where it sets none. :attr:`loop_options` reads them.
    """

    task: str
    family: str
    model: str
    method: str
    convention: str
    seed: int
    reward_names: tuple[str, ...]
    reward_weights: tuple[float, ...]
    train_size: int | None = None
    data_options: dict = dataclasses.field(default_factory=dict)
    fast_generation: bool = False
    pack_prompts: bool = False
    policy_dtype: str | None = None
    peft: dict | None = None
    trl: dict = dataclasses.field(default_factory=dict)
    loop: dict | None = None
    method_options: dict | None = None

    _WHAT = "run settings"
    _MADE_BY = "gdpo.plan.resolve_run_settings"
    _LEFT_OUT_WHEN_NONE = ("loop", "method_options")

    @property
    def variant(self) -> MethodVariant:
        """The method with its options; ``variant.name`` is the name the run goes by (``gdpo``, ``gdpo_clip3``)."""
        return MethodVariant(self.method, self.method_options)

    @property
    def loop_options(self) -> LoopOptions:
        """The loop's options (:class:`gdpo.loop_options.LoopOptions`; the defaults where ``loop`` is None)."""
        return LoopOptions.from_config(self.loop)

    def __post_init__(self) -> None:
        # Lists from JSON become tuples; mappings are copied so the config is never shared with a run.
        set_field(self, "reward_names", tuple(self.reward_names))
        set_field(self, "reward_weights", tuple(float(weight) for weight in self.reward_weights))
        for name in ("data_options", "trl"):
            copied_mapping(self, name, "")
        if self.peft is not None:
            if not isinstance(self.peft, Mapping):
                raise ValueError(f"run settings: peft must be LoraConfig arguments (a mapping) or None, got "
                                 f"{self.peft!r}; set the config's `training.peft:` block or remove it.")
            set_field(self, "peft", copy.deepcopy(dict(self.peft)))
        if self.loop is not None:
            if not isinstance(self.loop, Mapping):
                raise ValueError(f"run settings: loop must be the training-loop options (a mapping) or None, got "
                                 f"{self.loop!r}.")
            set_field(self, "loop", copy.deepcopy(dict(self.loop)))
        if self.policy_dtype is None:
            set_field(self, "policy_dtype", "bfloat16" if self.trl.get("bf16") else "float32")
        self._check()

    def _check(self) -> None:
        where = f"run {self.task}/{self.method}/seed{self.seed}"
        RunKey(self.task, self.method, self.seed)  # a name or seed that cannot be a path stops here
        if self.method == BASE_METHOD:
            raise ValueError(f"{where}: {BASE_METHOD!r} is the untrained model's evaluation, not a training "
                             f"method; train one of {', '.join(available_methods())}.")
        if self.method not in available_methods():
            raise ValueError(f"{where}: unknown advantage method {self.method!r}; use one of "
                             f"{', '.join(available_methods())} (gdpo methods lists them).")
        check_method_options(self, where)
        if self.convention not in available_conventions():
            raise ValueError(f"{where}: unknown advantage convention {self.convention!r}; set "
                             f"`advantage_convention:` to one of {', '.join(available_conventions())}.")
        family_rewards = family_spec(self.family).reward_names  # an unknown family: ValueError naming the valid
        if not self.reward_names:
            raise ValueError(f"{where}: no rewards; give the task `reward_weights:` naming some of family "
                             f"{self.family!r}'s rewards {list(family_rewards)}, or leave it out for all.")
        if len(self.reward_weights) != len(self.reward_names):
            raise ValueError(f"{where}: {len(self.reward_names)} reward names {list(self.reward_names)} but "
                             f"{len(self.reward_weights)} weights; give one weight per reward.")
        unknown = sorted(set(self.reward_names) - set(family_rewards))
        if unknown:
            raise ValueError(f"task {self.task!r}: reward_weights names {unknown}, but family {self.family!r} "
                             f"has rewards {sorted(family_rewards)}.")
        if len(set(self.reward_names)) != len(self.reward_names):
            raise ValueError(f"{where}: reward names {list(self.reward_names)} repeat a reward; name each "
                             "once.")
        if not all(math.isfinite(weight) for weight in self.reward_weights):
            raise ValueError(f"{where}: reward weights {list(self.reward_weights)} must be finite numbers.")
        if self.method_options:  # a per-reward method that falls back to GRPO with one reward must keep them
            try:
                resolve_method(self.method, self.convention, len(self.reward_names), self.method_options)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
        size = self.train_size
        if size is not None and not whole_number(size, 1):
            raise ValueError(f"{where}: train_size {size!r} must be a positive integer, or left out for the "
                             "family's default.")
        if self.policy_dtype not in POLICY_DTYPES:
            raise ValueError(f"{where}: policy_dtype {self.policy_dtype!r} is not one of "
                             f"{', '.join(POLICY_DTYPES)}.")
        owned = sorted(set(self.trl) & set(RUN_OWNED_TRL_ARGUMENTS))
        if owned:
            reasons = "; ".join(f"{key}: {RUN_OWNED_TRL_ARGUMENTS[key]}" for key in owned)
            raise ValueError(f"{where}: the config's training: sets {', '.join(owned)}, which the run sets "
                             f"itself and a config value would override: remove it ({reasons}).")
        try:
            report_backends(self.trl.get("report_to", "none"))
        except ValueError as error:
            raise ValueError(f"{where}: the config's training: {error}") from None
        updates = updates_per_generation(self.trl)
        for name in ("max_steps", "save_steps"):
            if updates > 1 and self.trl.get(name, updates) % updates:
                raise ValueError(f"{where}: {name} {self.trl[name]} must be a multiple of the {updates} optimizer "
                                 "updates per generation batch (steps_per_generation ÷ gradient_accumulation_steps "
                                 "× num_iterations), so that training stops and checkpoints between generation "
                                 f"batches; set `training.{name}:` to paper steps × {updates}.")
        options = LoopOptions.from_config(self.loop, f"{where}: training")
        options.check(where, self.reward_names, self.trl.get("beta", 0.0))
        if self.pack_prompts and self.trl.get("loss_type") == "bnpo":
            raise ValueError(f"{where}: pack_prompts does not cover loss_type 'bnpo' (it normalises per "
                             "micro-batch, so group-aligned micro-batches change it); set `pack_prompts: false` "
                             "or another loss_type.")

    def key(self, root: str | PurePath = ".") -> RunKey:
        """The run's :class:`RunKey` under ``root``."""
        return RunKey(self.task, self.variant.name, self.seed, Path(root))


def resolve_run_settings(config: dict, task: str, method: str, seed: int) -> RunSettings:
    """The settings of one run: the scale's ``training`` defaults overridden by the task's ``training``.

    ``ValueError`` when the config does not define the task, the task does not train the method, or the
    settings fail :class:`RunSettings`'s checks.
    """
    spec = task_spec(config, task)
    methods = task_method_variants(config, task)
    if method not in methods:
        raise ValueError(f"Method {method!r} is not among task {task!r}'s methods: {', '.join(methods)}.")
    trl_args = {**config.get("training", {}), **spec.get("training", {})}
    interval = checkpoint_interval_steps(config, task)
    if interval is not None:  # at least hourly checkpoints of planned time: a lost job costs at most an hour
        trl_args["save_steps"] = interval
    peft = trl_args.pop("peft", None)
    loop = loop_options_from_training(trl_args)
    weights = spec.get("reward_weights") or dict.fromkeys(family_spec(spec["family"]).default_rewards, 1.0)
    return RunSettings(
        task=task,
        family=spec["family"],
        model=spec["model"],
        method=methods[method].method,
        convention=config["advantage_convention"],
        seed=seed,
        reward_names=tuple(weights),
        reward_weights=tuple(weights.values()),
        # None: every item of a data set (a paper run trains on all of ToolRL's, DeepScaleR's or Eurus's
        # problems); generated data use their family's default size.
        train_size=spec.get("train_size"),
        data_options={k: spec[k] for k in DATA_OPTION_KEYS if k in spec},
        fast_generation=bool(spec.get("fast_generation", config.get("fast_generation", False))),
        pack_prompts=bool(spec.get("pack_prompts", config.get("pack_prompts", False))),
        # Weights of the trained policy; with bf16 and float32 weights, TRL's Trainer runs the forward and
        # backward under bfloat16 autocast (mixed precision, float32 master weights and optimizer state).
        policy_dtype=spec.get("policy_dtype", config.get("policy_dtype")),
        peft=peft,
        trl=trl_args,
        loop=loop,
        method_options=methods[method].options or None,
    )
