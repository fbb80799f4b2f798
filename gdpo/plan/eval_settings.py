"""An evaluation's settings: :class:`EvalSettings` (``python -m gdpo evaluate --settings``), made from the config
by :func:`resolve_eval_settings` over :data:`EVAL_DEFAULTS`."""

from __future__ import annotations

import dataclasses
from pathlib import Path, PurePath

from gdpo.methods import MethodVariant, available_methods
from gdpo.plan.layout import BASE_METHOD, RunKey
from gdpo.plan.models import check_model_spec
from gdpo.plan.settings import JobSettings, check_data_options, check_method_options, copied_mapping
from gdpo.plan.task_config import task_method_variants, task_spec
from gdpo.plan.values import finite_number, whole_number
from gdpo.plan.warmup_settings import RL_ONLY_OPTIONS
from gdpo.tasks import DATA_OPTION_KEYS, family_spec


#: Evaluation defaults where neither the scale's nor the task's ``evaluation`` block sets a value.
EVAL_DEFAULTS = {
    "eval_size": None,
    "num_samples": 1,
    "temperature": 0.0,
    "top_p": 1.0,
    "max_new_tokens": 128,
    "batch_size": 8,
}


@dataclasses.dataclass(frozen=True)
class EvalSettings(JobSettings):
    """Everything one evaluation needs: ``python -m gdpo evaluate --settings <to_json()>``.

    Made from the config by :func:`resolve_eval_settings`; the evaluator (:func:`gdpo.evaluation.run.evaluate_run`)
    writes them to the run's ``eval.json`` under ``settings``, followed by its own. :meth:`to_json` keeps the
    field names and order the evaluations have always written: the committed evidence holds them, and restoring
    it compares them with the config's (:func:`gdpo.evidence.restore`, rule ``restore_eval``).

    Evaluation:
        task (str): the config's task name. family (str): its task family (:data:`gdpo.tasks.FAMILIES`).
        model (str): model spec (:func:`check_model_spec`). method (str): the trained run's advantage method,
        or :data:`BASE_METHOD` for the untrained model. seed (int): the run's seed (the sampling seed), ≥ 0.
        method_options (dict | None, last in the JSON): the trained run's method options, None (left out) for
        none; the evaluation goes by the run's name (:meth:`key`: ``gdpo_clip3``).
        options (dict): the task's keys of :data:`gdpo.tasks.DATA_OPTION_KEYS`. fast_generation (bool):
        completions from the bfloat16 rollout engine.
    Sampling (:data:`EVAL_DEFAULTS` < the scale's ``evaluation`` < the task's):
        eval_size (int | None): held-out items per benchmark (None: every item). num_samples (int): samples
        per item. temperature (float): ≥ 0, 0 is greedy. top_p (float): nucleus threshold in (0, 1].
        max_new_tokens (int): generation limit per sample, tokens. batch_size (int): sequences generated
        together.
    """

    task: str
    family: str
    model: str
    method: str
    seed: int
    options: dict = dataclasses.field(default_factory=dict)
    fast_generation: bool = False
    eval_size: int | None = EVAL_DEFAULTS["eval_size"]
    num_samples: int = EVAL_DEFAULTS["num_samples"]
    temperature: float = EVAL_DEFAULTS["temperature"]
    top_p: float = EVAL_DEFAULTS["top_p"]
    max_new_tokens: int = EVAL_DEFAULTS["max_new_tokens"]
    batch_size: int = EVAL_DEFAULTS["batch_size"]
    method_options: dict | None = None

    _WHAT = "evaluation settings"
    _MADE_BY = "gdpo.plan.resolve_eval_settings"
    _LEFT_OUT_WHEN_NONE = ("method_options",)

    def __post_init__(self) -> None:
        copied_mapping(self, "options", "; they are the task's data options")
        self._check()

    def _check(self) -> None:
        RunKey(self.task, self.method, self.seed)  # a name or seed that cannot be a path stops here
        where = f"evaluation {self.task}/{self.method}/seed{self.seed}"
        if self.method != BASE_METHOD and self.method not in available_methods():
            raise ValueError(f"{where}: unknown method {self.method!r}; evaluate a run of one of "
                             f"{', '.join(available_methods())}, or {BASE_METHOD!r} for the untrained model.")
        check_method_options(self, where)
        try:
            family_spec(self.family)
            check_model_spec(self.model)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        check_data_options(where, self.options)
        if not isinstance(self.fast_generation, bool):
            raise ValueError(f"{where}: fast_generation {self.fast_generation!r} must be true or false; set "
                             "`fast_generation:` (the scale's or the task's).")
        if self.eval_size is not None and not whole_number(self.eval_size, 1):
            raise ValueError(f"{where}: eval_size {self.eval_size!r} must be a positive integer; set "
                             "`evaluation.eval_size:` to 1 or more, or leave it out for every held-out item.")
        for name in ("num_samples", "max_new_tokens", "batch_size"):
            value = getattr(self, name)
            if not whole_number(value, 1):
                raise ValueError(f"{where}: {name} {value!r} must be a positive integer; set "
                                 f"`evaluation.{name}:` (the scale's or the task's) to 1 or more.")
        if not finite_number(self.temperature) or self.temperature < 0:
            raise ValueError(f"{where}: temperature {self.temperature!r} must be a number ≥ 0; set "
                             "`evaluation.temperature:` to 0 for greedy decoding or more to sample.")
        if not finite_number(self.top_p) or not 0 < self.top_p <= 1:
            raise ValueError(f"{where}: top_p {self.top_p!r} must be a number in (0, 1]; set `evaluation.top_p:` "
                             "(1: no nucleus cut).")

    def key(self, root: str | PurePath = ".") -> RunKey:
        """The evaluated run's :class:`RunKey` under ``root``."""
        name = self.method if self.method == BASE_METHOD else MethodVariant(self.method, self.method_options).name
        return RunKey(self.task, name, self.seed, Path(root))


def resolve_eval_settings(config: dict, task: str, method: str, seed: int) -> EvalSettings:
    """The settings of one evaluation: defaults < the scale's ``evaluation`` < the task's ``evaluation``.

    ``method`` is one of the task's methods or ``"base"`` (the untrained model). ``ValueError`` when the config
    does not define the task, the task does not train the method, or the settings fail
    :class:`EvalSettings`'s checks.
    """
    spec = task_spec(config, task)
    methods = task_method_variants(config, task)
    variant = methods.get(method)  # None for the untrained model
    if method != BASE_METHOD and variant is None:
        raise ValueError(
            f"Method {method!r} is not among task {task!r}'s methods ({', '.join(methods)}) nor {BASE_METHOD!r}."
        )
    family_spec(spec["family"])  # unknown families stop here, with the valid names
    evaluation = {**EVAL_DEFAULTS, **(config.get("evaluation") or {}), **(spec.get("evaluation") or {})}
    return EvalSettings(
        task=task,
        family=spec["family"],
        model=spec["model"],
        method=variant.method if variant else method,
        seed=seed,
        # The RL training's item mix (decline_share) is not read by an evaluation: a change to it must not send
        # the untrained start back to be evaluated again, nor refuse its committed evaluation.
        options={k: spec[k] for k in DATA_OPTION_KEYS if k in spec and k not in RL_ONLY_OPTIONS},
        fast_generation=bool(spec.get("fast_generation", config.get("fast_generation", False))),
        **evaluation,
        method_options=(variant.options or None) if variant else None,
    )
