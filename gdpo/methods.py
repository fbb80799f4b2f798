"""The advantage methods and numeric conventions by name, without torch: what a config may name, and how
every figure shows a method.

It imports nothing of the package and nothing heavy, so planning (:mod:`gdpo.plan`, the config schema, the
bench's study files), the reporting layer's figures and the bench's all read it without importing torch or
each other; :mod:`gdpo.advantages` computes every method declared here (its module docstring defines them
and explains each convention).

- :class:`Method` names the built-in estimators and gives each its figure label (the paper's name) and
  colour, in the paper's order.
- :class:`MethodSpec` — a method's name, one-line description, whether GDPO's batch step follows it, the
  GRPO method a per-reward method falls back to, whether it is group-local, and the method it is without the
  batch step of; :func:`declare_method`, :func:`available_methods`,
  :func:`get_method`. A new estimator registered with :func:`gdpo.advantages.register_estimator` is declared
  here too; to make it nameable in a config (planned without torch), declare it in this module and
  implement it in :mod:`gdpo.advantages` with ``_implements``.
- :class:`Convention` — the numeric details of one peer implementation; :func:`register_convention`,
  :func:`available_conventions`, :func:`get_convention`, and the registered conventions.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from enum import StrEnum
from typing import Literal

__all__ = [
    "Convention",
    "Method",
    "MethodSpec",
    "available_conventions",
    "available_methods",
    "builtin",
    "declare_method",
    "get_convention",
    "get_method",
    "method_color",
    "method_label",
    "paper_order",
    "register_convention",
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
    """

    name: str
    description: str
    batch_step: bool = False
    grpo_counterpart: str | None = None
    group_local: bool = False
    without_batch_step_of: str | None = None

    def __post_init__(self) -> None:
        # A Method member is stored as its plain name.
        object.__setattr__(self, "name", str(self.name))
        for field in ("grpo_counterpart", "without_batch_step_of"):
            if getattr(self, field) is not None:
                object.__setattr__(self, field, str(getattr(self, field)))

    @property
    def per_reward(self) -> bool:
        """The method normalises each reward separately (GDPO family), so ``single_reward`` applies."""
        return self.grpo_counterpart is not None


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


declare_method(MethodSpec(Method.GRPO, "GRPO on the weighted reward sum: (r − group mean) / group std",
                          group_local=True))
declare_method(MethodSpec(Method.GRPO_NOSTD, "GRPO without std scaling (Dr.GRPO): r − group mean",
                          group_local=True))
declare_method(MethodSpec(Method.GDPO, "GDPO: per-reward group normalisation, weighted sum, batch whitening",
                          batch_step=True, grpo_counterpart=Method.GRPO, group_local=True))
declare_method(MethodSpec(Method.GDPO_NOBN, "GDPO without the batch step (App. A ablation)",
                          grpo_counterpart=Method.GRPO, group_local=True, without_batch_step_of=Method.GDPO))
declare_method(MethodSpec(Method.GDPO_NOSTD, "GDPO without the per-reward std: centring per reward, weighted "
                                             "sum, batch whitening", batch_step=True,
                          grpo_counterpart=Method.GRPO_NOSTD, group_local=True))
