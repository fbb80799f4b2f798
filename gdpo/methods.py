"""The advantage methods and numeric conventions by name, without torch: what a config may name, and how
every figure shows a method.

It imports nothing of the package and nothing heavy, so planning (:mod:`gdpo.plan`, the config schema, the
bench's study files), the reporting layer's figures and the bench's all read it without importing torch or
each other; :mod:`gdpo.advantages` computes every method declared here (its module docstring defines them
and explains each convention).

- :class:`Method` names the built-in estimators and gives each its figure label (the paper's name) and
  colour, in the paper's order.
- :class:`MethodSpec` — a method's name, one-line description, whether GDPO's batch step follows it, the
  GRPO method a per-reward method falls back to, whether it is group-local, the method it is without the
  batch step of, and the options a config may give it (:class:`MethodOption`); :func:`declare_method`,
  :func:`available_methods`, :func:`get_method`, :func:`resolve_method`.
  A new estimator registered with :func:`gdpo.advantages.register_estimator` is declared here too; to make
  it nameable in a config (planned without torch), declare it in this module and implement it in
  :mod:`gdpo.advantages` with ``_implements``.
- :class:`MethodVariant` — a method with its options as a config names it (``gdpo`` or ``{gdpo: {clip: 3.0}}``)
  and the name its runs go by (``gdpo``, ``gdpo_clip3``); :func:`method_variants` reads a config's list.
- :class:`Convention` — the numeric details of one peer implementation; :func:`register_convention`,
  :func:`available_conventions`, :func:`get_convention`, and the registered conventions.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, Literal

__all__ = [
    "Convention",
    "Method",
    "MethodOption",
    "MethodSpec",
    "MethodVariant",
    "available_conventions",
    "available_methods",
    "builtin",
    "declare_method",
    "get_convention",
    "get_method",
    "method_color",
    "method_label",
    "method_variants",
    "paper_order",
    "register_convention",
    "resolve_method",
]


# --------------------------------------------------------------------------------------------------
# The built-in methods and their figure style
# --------------------------------------------------------------------------------------------------


class Method(StrEnum):
    """A built-in advantage method; its value is the registry's name (``Method.GDPO == "gdpo"``)."""

    GRPO = "grpo", "GRPO", "#1f77b4"
    GRPO_NOSTD = "grpo_nostd", "GRPO w/o std", "#7f7f7f"
    GDPO = "gdpo", "GDPO", "#d62728"
    GDPO_NOBN = "gdpo_nobn", "GDPO w/o batch norm", "#ff7f0e"
    GDPO_NOSTD = "gdpo_nostd", "GDPO w/o std", "#9467bd"

    label: str
    color: str

    def __new__(cls, name: str, label: str, color: str) -> Method:
        member = str.__new__(cls, name)
        member._value_ = name
        member.label = label
        member.color = color
        return member


def builtin(method: str) -> Method | None:
    """The :class:`Method` named ``method``, or None for a method registered elsewhere."""
    try:
        return Method(method)
    except ValueError:
        return None


def method_label(method: str) -> str:
    """A method's figure label; a method registered elsewhere shows its name."""
    member = builtin(method)
    return member.label if member else str(method)


def method_color(method: str) -> str | None:
    """A method's figure colour, or None for a method registered elsewhere (the figure picks one)."""
    member = builtin(method)
    return member.color if member else None


def paper_order(methods: Iterable[str]) -> list[str]:
    """``methods`` with the paper's in the paper's order first, then any other alphabetically."""
    present = set(methods)
    return [m.value for m in Method if m.value in present] + sorted(present - {m.value for m in Method})


# --------------------------------------------------------------------------------------------------
# Numeric conventions
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Convention:
    """Numeric details of one peer implementation (PAPER.md §1, second table).

    Attributes:
        name: registry key, recorded with every result.
        group_eps: ε in ``(x − baseline) / (std_group + ε)``.
        leave_one_out: the baseline and std (ddof = 1) of a rollout are those of the *other* valid
            rollouts of its group, and the difference is left undivided where those others are all equal
            (NeMo-RL's ``use_leave_one_out_baseline``).
        missing_rewards: ``"exclude"``: a NaN reward is left out of that reward's statistics and
            contributes 0 to its rollout's sum (TRL ≥ 0.27); ``"zero"``: every NaN, even in a rollout
            without any reward, is read as reward 0 before any statistic (NVlabs/GDPO's ``nan_to_num``).
        unscored_rollouts: a rollout whose rewards are all NaN (only possible under
            ``missing_rewards="exclude"``): ``"exclude"`` leaves it out of every statistic with advantage 0
            (TRL ≥ 1.6); ``"zero"`` gives it the reward sum 0, which takes part in the statistics of sums
            (GRPO's group mean and std, GDPO's batch step) while its per-reward NaNs stay out of the
            per-reward statistics (TRL 0.27–1.5's ``nansum``).
        singleton_group: a group with one valid value gives ``"zero"`` advantage, or ``"identity"``
            (verl's mean 0 and std 1: the value divided by ``1 + group_eps``, or the value itself when
            the method does not divide by the std).
        batch_whitening: the units GDPO's batch step whitens over: ``"sample"`` (each rollout once),
            ``"token"`` (each response token: a rollout weighted by its length; verl) or ``"response"``
            (each rollout with at least one response token once; verl PR #6497). The last two need
            ``response_lengths``.
        batch_eps: ε of the batch step.
        batch_eps_in_sqrt: the batch step divides by ``sqrt(var + ε)`` (verl's ``rsqrt``) instead of
            ``std + ε``.
        single_reward: what the per-reward (GDPO) methods do with one reward function: ``"gdpo"``
            compute it as defined, ``"grpo"`` run the GRPO counterpart instead (NVlabs fork), ``"error"``
            refuse it (NeMo-RL).
        source: where this convention comes from (recorded in results).
    """

    name: str
    group_eps: float = 1e-4
    leave_one_out: bool = False
    missing_rewards: Literal["exclude", "zero"] = "exclude"
    unscored_rollouts: Literal["exclude", "zero"] = "exclude"
    singleton_group: Literal["zero", "identity"] = "zero"
    batch_whitening: Literal["sample", "token", "response"] = "sample"
    batch_eps: float = 1e-4
    batch_eps_in_sqrt: bool = False
    single_reward: Literal["gdpo", "grpo", "error"] = "gdpo"
    source: str = ""

    def __post_init__(self) -> None:
        allowed = {
            "missing_rewards": ("exclude", "zero"),
            "unscored_rollouts": ("exclude", "zero"),
            "singleton_group": ("zero", "identity"),
            "batch_whitening": ("sample", "token", "response"),
            "single_reward": ("gdpo", "grpo", "error"),
        }
        for field, values in allowed.items():
            if getattr(self, field) not in values:
                raise ValueError(
                    f"Convention {self.name!r}: {field}={getattr(self, field)!r} is not one of {values}."
                )
        for field in ("group_eps", "batch_eps"):
            value = getattr(self, field)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"Convention {self.name!r}: {field} must be a finite number ≥ 0, got {value!r}.")

    @property
    def needs_response_lengths(self) -> bool:
        """The batch step counts response tokens (``"token"``) or non-empty responses (``"response"``)."""
        return self.batch_whitening != "sample"


_CONVENTIONS: dict[str, Convention] = {}


def register_convention(convention: Convention) -> Convention:
    """Add a named convention; a name can be registered once."""
    if convention.name in _CONVENTIONS:
        raise ValueError(f"A convention named {convention.name!r} is already registered; choose another name.")
    _CONVENTIONS[convention.name] = convention
    return convention


def available_conventions() -> list[str]:
    """Names of the registered conventions, sorted."""
    return sorted(_CONVENTIONS)


def get_convention(convention: str | Convention) -> Convention:
    """Look up a convention by name (a :class:`Convention` is returned as is)."""
    if isinstance(convention, Convention):
        return convention
    try:
        return _CONVENTIONS[convention]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown advantage convention {convention!r}; valid conventions are: "
            f"{', '.join(available_conventions())}."
        ) from None


# Each convention names the peer file it reproduces; tests/test_advantages_peers.py holds reimplementations
# of those files (repository, path, function and commit) and the cases where the peer is wrong.
_TRL = register_convention(
    Convention(
        name="trl",
        group_eps=1e-4,
        batch_eps=1e-4,
        missing_rewards="exclude",
        unscored_rollouts="exclude",
        source='TRL >= 1.6 GRPOTrainer (multi_objective_aggregation="normalize_then_sum" for GDPO; '
               "a rollout without any reward is left out)",
    )
)
register_convention(
    dataclasses.replace(
        _TRL,
        name="trl_0_27",
        unscored_rollouts="zero",
        source="TRL 0.27-1.5 GRPOTrainer (a rollout without any reward counts as reward sum 0)",
    )
)
register_convention(
    dataclasses.replace(
        _TRL,
        name="nvlabs",
        missing_rewards="zero",
        single_reward="grpo",
        source="NVlabs/GDPO (TRL 0.18 fork, apply_gdpo=True: None read as 0, GRPO with one reward)",
    )
)
_VERL = register_convention(
    Convention(
        name="verl",
        group_eps=1e-6,
        singleton_group="identity",
        batch_whitening="token",
        batch_eps=1e-8,
        batch_eps_in_sqrt=True,
        source="verl adv_estimator=gdpo (token-weighted masked_whiten of the summed advantage)",
    )
)
register_convention(
    dataclasses.replace(
        _VERL,
        name="verl_pr6497",
        batch_whitening="response",
        source="verl adv_estimator=gdpo with PR #6497 (open): masked_whiten over responses, not tokens",
    )
)
_NEMO = register_convention(
    Convention(
        name="nemo",
        group_eps=1e-6,
        batch_eps=0.0,
        single_reward="error",
        source="NeMo-RL GDPOAdvantageEstimator (use_leave_one_out_baseline=False)",
    )
)
register_convention(
    dataclasses.replace(
        _NEMO,
        name="nemo_loo",
        leave_one_out=True,
        source="NeMo-RL GDPOAdvantageEstimator with the leave-one-out baseline (NeMo-RL's default)",
    )
)
register_convention(
    Convention(
        name="exact",
        group_eps=0.0,
        batch_eps=0.0,
        source="the paper's equations with no ε (exact analysis, toy checks)",
    )
)


# --------------------------------------------------------------------------------------------------
# Advantage methods by name
# --------------------------------------------------------------------------------------------------


#: An option's name: it becomes part of its runs' name (``gdpo_clip3``), which letters, digits and ``_`` spell.
_OPTION_NAME = re.compile(r"[a-z][a-z0-9_]*")
#: A ``str`` option's value, for the same reason.
_OPTION_WORD = re.compile(r"[A-Za-z0-9]+")
_OPTION_KINDS = {float: "number", int: "integer", bool: "boolean", str: "string"}


@dataclasses.dataclass(frozen=True)
class MethodOption:
    """A setting of an advantage method that a config may give it: ``methods: [grpo, {gdpo: {clip: 3.0}}]``.

    The method's function reads it as ``inputs.options["<name>"]`` (:class:`gdpo.advantages.AdvantageInputs`);
    an option the config leaves out is absent there, and the function computes the method as declared.

    Attributes:
        name: its key in the config and in ``inputs.options``: lower-case letters, digits and ``_``.
        description: one line with the unit (``gdpo methods``, the config schema).
        kind: ``float``, ``int``, ``bool`` or ``str``; a float option takes an integer too (3 is 3.0).
        minimum, maximum: bounds of a number, inclusive (None: unbounded).
        exclusive_minimum: the value must lie above ``minimum``.
        choices: the values of a ``str`` option (required for one; letters and digits).
    """

    name: str
    description: str
    kind: type = float
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "choices", tuple(self.choices))
        if not isinstance(self.name, str) or not _OPTION_NAME.fullmatch(self.name):
            raise ValueError(f"option name {self.name!r}: use lower-case letters, digits and _, starting with a "
                             "letter (it becomes part of a run directory's name).")
        if self.kind not in _OPTION_KINDS:
            raise ValueError(f"option {self.name!r}: kind {self.kind!r} is not one of float, int, bool, str.")
        if (self.kind is str) != bool(self.choices) or not all(map(_OPTION_WORD.fullmatch, self.choices)):
            raise ValueError(f"option {self.name!r}: a str option needs choices of letters and digits (they name "
                             "run directories), and only a str option has choices.")

    def allowed(self) -> str:
        """What the option takes, in words: ``a number > 0``, ``true or false``, ``one of a, b``."""
        if self.kind is bool:
            return "true or false"
        if self.kind is str:
            return "one of " + ", ".join(self.choices)
        bounds = ([f"{'>' if self.exclusive_minimum else '≥'} {self.minimum:g}"] if self.minimum is not None else []) \
            + ([f"≤ {self.maximum:g}"] if self.maximum is not None else [])
        return " ".join(["a number" if self.kind is float else "an integer", " and ".join(bounds)]).strip()

    def check(self, value: Any, where: str = "") -> Any:
        """``value`` as the option holds it (a float option's integer as a float); ``ValueError`` naming the
        option, the value and what it takes."""
        if self.kind is bool:
            valid = isinstance(value, bool)
        elif self.kind is str:
            valid = isinstance(value, str) and value in self.choices
        else:
            valid = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                     and (self.kind is float or isinstance(value, int)))
            if valid:
                value = self.kind(value)
                above = self.minimum is None or value > self.minimum or (value == self.minimum
                                                                         and not self.exclusive_minimum)
                valid = above and (self.maximum is None or value <= self.maximum)
        if not valid:
            raise ValueError(f"{where}option {self.name!r} = {value!r} is not allowed: it takes {self.allowed()}; "
                             f"{self.name}: {self.description}.")
        return value

    def schema(self) -> dict:
        """The option's JSON schema in a config (:func:`gdpo.config.load_schema`)."""
        schema: dict = {"type": _OPTION_KINDS[self.kind], "description": f"{self.description}: {self.allowed()}"}
        if self.choices:
            schema["enum"] = list(self.choices)
        if self.minimum is not None:
            schema["exclusiveMinimum" if self.exclusive_minimum else "minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        return schema

    def name_part(self, value: Any) -> str:
        """``<name><value>`` as a run's name spells it (letters, digits and ``_`` only): ``clip3``, ``clip0p5``,
        ``clipm1``, ``clip1em05``, ``normon``; a float in its shortest form without a trailing ``.0``, ``.``
        as ``p``, ``-`` as ``m``. ``value`` is checked (:meth:`check`), so 3 and 3.0 spell the same."""
        if isinstance(value, bool):
            text = "on" if value else "off"
        elif isinstance(value, float):
            text = repr(value).removesuffix(".0")
        else:
            text = str(value)
        return self.name + text.replace("-", "m").replace(".", "p").replace("+", "")


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    """An advantage method as planning sees it (no computation; :mod:`gdpo.advantages` holds the function).

    Attributes:
        name: registry key; the ``<method>`` of ``results/<scale>/runs/<task>/<method>/``.
        description: one line (``gdpo methods``).
        batch_step: GDPO's batch step (:func:`gdpo.advantages.batch_whiten`) follows the method's function.
        grpo_counterpart: for a per-reward (GDPO-family) method, the method a convention with
            ``single_reward="grpo"`` runs instead when there is one reward; None for other methods.
        group_local: a rollout's advantage before any batch step depends on its own group only, so the
            batches of independent runs can be computed in one call (the bench batches its seeds so, with the
            batch step per seed); False: one call per batch.
        without_batch_step_of: the method this one is without GDPO's batch step (``gdpo_nobn``: ``gdpo``):
            both compute the same advantage before it, so e.g. their distinct advantage groups are the same;
            None for other methods.
        options: the settings a config may give it (:class:`MethodOption`; ``{gdpo: {clip: 3.0}}``), which
            its function reads from ``inputs.options``; none by default.
    """

    name: str
    description: str
    batch_step: bool = False
    grpo_counterpart: str | None = None
    group_local: bool = False
    without_batch_step_of: str | None = None
    options: tuple[MethodOption, ...] = ()

    def __post_init__(self) -> None:
        # A Method member is stored as its plain name.
        object.__setattr__(self, "name", str(self.name))
        for field in ("grpo_counterpart", "without_batch_step_of"):
            if getattr(self, field) is not None:
                object.__setattr__(self, field, str(getattr(self, field)))
        object.__setattr__(self, "options", tuple(self.options))
        if len(set(self.option_names)) != len(self.options):
            raise ValueError(f"method {self.name!r} declares options {list(self.option_names)}; name each once.")

    @property
    def per_reward(self) -> bool:
        """The method normalises each reward separately (GDPO family), so ``single_reward`` applies."""
        return self.grpo_counterpart is not None

    @property
    def option_names(self) -> tuple[str, ...]:
        """The names of its options, in declared order."""
        return tuple(option.name for option in self.options)

    def check_options(self, options: Mapping | None, where: str = "") -> dict:
        """``options`` (option → value; None for none) checked and as the function reads them, in name order;
        ``ValueError`` naming an option the method does not take (and those it does) or a value it refuses."""
        if options is None:
            return {}
        if not isinstance(options, Mapping):
            # A config's value: a ValueError, as every other config error.
            raise ValueError(f"{where}the options of method {self.name!r} must be a mapping option → value, got "  # noqa: TRY004
                             f"{options!r}.")
        declared = dict(zip(self.option_names, self.options, strict=True))
        unknown = sorted(map(str, set(options) - set(declared)))
        if unknown:
            takes = f"its options are: {', '.join(declared)}" if declared else "it takes no options"
            raise ValueError(f"{where}method {self.name!r} has no option {', '.join(map(repr, unknown))}; {takes}.")
        return {name: declared[name].check(options[name], f"{where}method {self.name!r}: ")
                for name in sorted(options)}

    def options_schema(self) -> dict:
        """The JSON schema of the method's options in a config's ``methods:`` entry ``{<name>: {...}}``: its
        options' schemas, at least one of them (an entry without options is the name alone)."""
        takes = f"options: {', '.join(self.option_names)}" if self.options else "no options"
        return {"type": "object", "minProperties": 1, "additionalProperties": False,
                "properties": {option.name: option.schema() for option in self.options},
                "description": f"{self.name} takes {takes}; without options, write the name alone"}


_METHODS: dict[str, MethodSpec] = {}


def declare_method(spec: MethodSpec) -> MethodSpec:
    """Add a method by name; a name can be declared once."""
    if spec.name in _METHODS:
        raise ValueError(f"An advantage estimator named {spec.name!r} is already registered; choose another "
                         "name.")
    _METHODS[spec.name] = spec
    return spec


def available_methods() -> list[str]:
    """Names of the declared methods, sorted."""
    return sorted(_METHODS)


def get_method(name: str) -> MethodSpec:
    """Look up a method by name; unknown names raise ``ValueError`` listing the valid ones."""
    try:
        return _METHODS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown advantage method {name!r}; valid methods are: {', '.join(available_methods())}."
        ) from None


def resolve_method(method: str, convention: str | Convention, num_rewards: int,
                   options: Mapping | None = None) -> MethodSpec:
    """The method that runs for ``method`` with ``num_rewards`` reward functions under ``convention``.

    With one reward a per-reward method follows ``convention.single_reward``: itself (``"gdpo"``), its GRPO
    counterpart (``"grpo"``), or ``ValueError`` (``"error"``). ``ValueError`` too where the counterpart runs but
    does not take one of ``options`` (the method's), which would otherwise be dropped without a word.
    """
    spec = get_method(method)
    convention = get_convention(convention)
    if num_rewards != 1 or not spec.per_reward or convention.single_reward == "gdpo":
        return spec
    if convention.single_reward == "error":
        raise ValueError(
            f"Method {spec.name!r} normalises each reward separately, and convention {convention.name!r} follows "
            f"{convention.source.split(' (')[0]}, which refuses that with a single reward function: pass two or "
            f"more reward columns, use {spec.grpo_counterpart!r}, or a convention that allows one reward ('trl')."
        )
    counterpart = get_method(spec.grpo_counterpart)
    lost = sorted(set(options or {}) - set(counterpart.option_names))
    if lost:
        raise ValueError(
            f"Method {spec.name!r} runs as {counterpart.name!r} with a single reward function under convention "
            f"{convention.name!r}, and {counterpart.name!r} has no option {', '.join(map(repr, lost))}: pass two or "
            "more reward columns, or use a convention that computes the method as defined with one reward ('trl')."
        )
    return counterpart


@dataclasses.dataclass(frozen=True)
class MethodVariant:
    """A method with the options a config gives it: ``gdpo`` (none) or ``{gdpo: {clip: 3.0}}``.

    Attributes:
        method: a declared method's name: the estimator that runs.
        options: its options, checked and in name order (:meth:`MethodSpec.check_options`); empty for the
            method as declared.
    """

    method: str
    options: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", str(self.method))
        object.__setattr__(self, "options", get_method(self.method).check_options(self.options))

    @property
    def name(self) -> str:
        """The name its runs go by: the ``<method>`` of ``results/<scale>/runs/<task>/<method>/seed<s>`` and
        the method column of every result. The method's name without options, else ``<method>`` and each
        option's ``<option><value>`` in name order, joined by ``_`` (``gdpo_clip3``, ``gdpo_clip0p5``;
        :meth:`MethodOption.name_part`): a function of what runs, so the same entry always gives it."""
        spec = get_method(self.method)
        declared = dict(zip(spec.option_names, spec.options, strict=True))
        return "_".join([self.method, *(declared[name].name_part(value) for name, value in self.options.items())])

    @classmethod
    def from_entry(cls, entry: Any, where: str = "methods") -> MethodVariant:
        """The variant of one entry of a config's ``methods:``: a method's name, or a one-key mapping method →
        options; ``ValueError`` beginning with ``where`` otherwise."""
        if isinstance(entry, str):
            return cls(entry)
        if isinstance(entry, Mapping) and len(entry) == 1:
            ((method, options),) = entry.items()
            if isinstance(options, Mapping) and not options:
                raise ValueError(f"{where}: {method!r} is given no options; write the method's name alone.")
            try:
                return cls(method, options)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
        raise ValueError(f"{where}: {entry!r} is no method: write a method's name (gdpo) or one method with its "
                         "options ({gdpo: {clip: 3.0}}).")


def method_variants(entries: Iterable, where: str = "methods") -> list[MethodVariant]:
    """The variants of a config's ``methods:`` list (:meth:`MethodVariant.from_entry`); ``ValueError`` where two
    entries run under one name, or a variant's name is another declared method's."""
    variants = [MethodVariant.from_entry(entry, f"{where}[{index}]") for index, entry in enumerate(entries)]
    names = [variant.name for variant in variants]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{where} runs {repeated} more than once (a float option's 3 and 3.0 are one value); "
                         "give each method or set of options once.")
    taken = [variant.name for variant in variants if variant.options and variant.name in _METHODS]
    if taken:
        raise ValueError(f"{where}: the runs of {taken} (a method with options) would go by the name of the "
                         "declared method of that name; rename that method.")
    return variants


declare_method(MethodSpec(Method.GRPO, "GRPO on the weighted reward sum: (r − group mean) / group std",
                          group_local=True))
declare_method(MethodSpec(Method.GRPO_NOSTD, "GRPO without std scaling (Dr.GRPO): r − group mean",
                          group_local=True))
declare_method(MethodSpec(Method.GDPO, "GDPO: per-reward group normalisation, weighted sum, batch whitening",
                          batch_step=True, grpo_counterpart=Method.GRPO, group_local=True, options=(
                              # |z| ≤ (G − 1)/√G within a group, so c bites only below that (G = 16: 3.75).
                              MethodOption("clip", "clip each reward's group-normalised advantage to [-c, c] before "
                                                   "the weighted sum (c in group stds)",
                                           float, minimum=0.0, exclusive_minimum=True),)))
declare_method(MethodSpec(Method.GDPO_NOBN, "GDPO without the batch step (App. A ablation)",
                          grpo_counterpart=Method.GRPO, group_local=True, without_batch_step_of=Method.GDPO))
declare_method(MethodSpec(Method.GDPO_NOSTD, "GDPO without the per-reward std: centring per reward, weighted "
                                             "sum, batch whitening", batch_step=True,
                          grpo_counterpart=Method.GRPO_NOSTD, group_local=True))
