"""Advantage estimators for multi-reward group-relative RL: the one place advantages are computed.

Every part of the suite (the TRL trainer subclass, the policy-gradient bench, the exact collapse
analysis) calls :func:`compute_advantages`; a new estimator is added in one place with
:func:`register_estimator`. The built-in ones are registered under the members of :class:`gdpo.methods.Method`,
which also say how figures show them.

Shapes used throughout: ``B`` rollouts in the batch, grouped contiguously in ``P = B / G`` groups of
``G = num_generations`` rollouts of the same prompt (TRL's layout), ``n`` reward functions.
A reward of NaN means "no reward" (a TRL reward function returned ``None``). A peer that groups by prompt
id (verl, NeMo-RL) allows groups of unequal size; here a smaller group is padded with all-NaN rows, which
(under ``unscored_rollouts="exclude"``) take part in no statistic.

Methods (PAPER.md §1), with weights ``w``:

- ``grpo``       r = Σ_k w_k r_k ; A = (r − mean_group) / std_group
- ``grpo_nostd`` A = r − mean_group (Dr.GRPO style; TRL ``scale_rewards="none"``)
- ``gdpo``       A_k = (r_k − mean_group) / std_group per reward ; A = batch_whiten(Σ_k w_k A_k); with the
  option ``clip`` c (``options={"clip": c}``, a config's ``{gdpo: {clip: c}}``) each A_k is clipped to [−c, c]
  first
- ``gdpo_nobn``  GDPO without the batch step (the paper's App. A ablation)
- ``gdpo_nostd`` A = batch_whiten(Σ_k w_k (r_k − mean_group)): GDPO without the per-reward std (verl's GDPO
  with ``norm_adv_by_std_in_grpo=False``, NeMo-RL's with ``normalize_rewards=False``). Centring is linear,
  so with complete rewards the sum before the batch step *is* GRPO w/o std's advantage; only a missing
  reward (left out of its own reward's mean) or the batch step tells them apart.

GDPO with one reward function (``Convention.single_reward``): a documented equivalence, not an error.
The decoupling is vacuous, so the method is computed as defined — ``gdpo_nobn`` is w·(r − mean)/(std + ε),
i.e. |w| times GRPO's advantage (exactly under ``exact``), and ``gdpo`` that whitened over the batch — for
three reasons: it is what TRL's ``normalize_then_sum`` and verl's GDPO compute, so ``trl`` and ``verl`` must;
it is a well-defined estimator (GRPO plus a batch step), which the bench's one-reward test trains; and an
error would make a config valid or not depending on its task's reward count. The conventions of the
peers that decide otherwise follow them: ``nvlabs`` runs GRPO (the fork applies GDPO only with more than one
reward), ``nemo``/``nemo_loo`` raise ``ValueError`` (NeMo-RL refuses GDPO with fewer than two rewards).

The numeric details that peer implementations disagree on (ε placement, missing rewards, token- vs
sample-weighted batch whitening, leave-one-out baselines, one reward) are a named :class:`Convention`;
each registered convention reproduces one peer (the convention table of docs/advantages.md;
``tests/test_advantages_peers.py`` checks each against a reimplementation of the peer's source):

- ``trl``: TRL ≥ 1.6 ``GRPOTrainer``. A rollout for which every reward function returned None is left out
  of every statistic and gets advantage 0 (TRL ≥ 1.6 marks it unscorable, as we do).
- ``trl_0_27``: TRL 0.27–1.5, which summed such a rollout's rewards with ``nansum`` to 0, so it took part
  in GRPO's group statistics and GDPO's batch step as a zero-reward rollout.
- ``nvlabs``: the NVlabs/GDPO TRL 0.18 fork (``apply_gdpo=True``): every None is read as 0 before any
  statistic (``nan_to_num``), so an all-None rollout is a zero-reward rollout; one reward runs GRPO.
- ``verl``: verl's GDPO (also the NVlabs verl fork): ε 1e-6, a single-rollout group has mean 0 and std 1
  and is still divided by (1 + ε), token-weighted ``masked_whiten``. verl has no missing rewards (a None
  becomes NaN and poisons the whole batch); ours leaves it out as ``trl`` does.
- ``verl_pr6497``: verl with its open PR #6497, which whitens per response instead of per token.
- ``nemo`` / ``nemo_loo``: NeMo-RL's ``GDPOAdvantageEstimator`` without / with the leave-one-out
  baseline; refuses one reward. Where we deliberately differ: its batch step has no ε, so a batch whose
  summed advantages cancel to rounding noise (complementary rewards r2 = 1 − r1: ~1e-16) is rescaled to
  unit std (−0.58, −0.58, 1.15 at G = 3); ours returns 0 there, the exact value. Its std is the one-pass
  E[x²] − E[x]², which loses digits at large reward offsets; ours is two-pass.
- ``exact``: the paper's equations without ε (exact analysis, toy checks).

Rules that hold in every convention (so no NaN ever leaves :func:`compute_advantages`):

- std is the sample std (ddof = 1), as in every official implementation;
- a group whose valid values are all equal (zero std) contributes advantage 0 (peers divide the rounding
  residue of the mean by ε; ours is exactly 0);
- a group with a single valid value contributes 0 (``singleton_group="zero"``) or, with verl's mean 0 and
  std 1 (``"identity"``), the value divided by (1 + ε), or the value itself without the std division;
- a rollout without any reward takes part in no statistic and gets advantage 0, unless the convention
  reads it as a zero reward (``missing_rewards="zero"`` or ``unscored_rollouts="zero"``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

# Names, method descriptions and conventions live in the torch-free gdpo.methods (planning checks them there);
# re-exported because this module is the estimators' public entry point.
from gdpo.methods import (
    Convention,
    Method,
    MethodOption,
    MethodSpec,
    available_conventions,
    declare_method,
    get_convention,
    get_method,
    register_convention,
    resolve_method,
)
from gdpo.methods import available_methods as declared_methods

__all__ = [
    "AdvantageInputs",
    "Convention",
    "MethodOption",
    "available_conventions",
    "batch_whiten",
    "compute_advantages",
    "condition_rewards",
    "distinct_advantage_counts",
    "get_convention",
    "get_estimator",
    "group_normalise",
    "register_convention",
    "register_estimator",
    "registered_estimators",
    "resolve_estimator",
]


# --------------------------------------------------------------------------------------------------
# Building blocks (public, so that a new estimator is a few lines)
# --------------------------------------------------------------------------------------------------


def group_normalise(values: torch.Tensor, num_generations: int, convention: Convention, scale: bool = True) -> torch.Tensor:
    """Normalise each column within each group of ``num_generations`` consecutive rows.

    Args:
        values: (B, K) float, NaN = missing (left out of the statistics).
        num_generations: G; B must be a multiple of G.
        convention: ε, baseline and singleton handling. With ``leave_one_out`` the baseline and the std
            (ddof = 1) of a rollout are those of the other valid rollouts of its group, and where those
            others are all equal the difference is left undivided (NeMo-RL).
        scale: divide by the std (+ ε); ``False`` only subtracts the baseline.

    Returns:
        (B, K) advantages; 0 where the value is missing, where the group's valid values are all equal,
        and for single-value groups unless ``convention.singleton_group == "identity"`` (then the value,
        divided by ``1 + group_eps`` when ``scale``).
    """
    num_rows, num_cols = values.shape
    grouped = values.reshape(num_rows // num_generations, num_generations, num_cols)
    valid = ~torch.isnan(grouped)
    zeros = torch.zeros_like(grouped)
    count = valid.sum(dim=1, keepdim=True).to(grouped.dtype)
    filled = torch.where(valid, grouped, zeros)
    total = filled.sum(dim=1, keepdim=True)
    if convention.leave_one_out:
        baseline = (total - filled) / (count - 1).clamp(min=1)
        advantages = filled - baseline
        if scale:
            # (P, G_i, G_j, K): rollout j as seen from rollout i's comparison set.
            others = valid.unsqueeze(1) & ~torch.eye(num_generations, dtype=torch.bool).view(
                1, num_generations, num_generations, 1
            )
            deviation = torch.where(others, grouped.unsqueeze(1) - baseline.unsqueeze(2), 0.0)
            std = ((deviation**2).sum(dim=2) / (count - 2).clamp(min=1)).sqrt()
            others_constant = _all_equal(grouped.unsqueeze(1).expand_as(others), others, dim=2)
            divide = (std > 0) & ~others_constant
            advantages = torch.where(divide, advantages / (std + convention.group_eps).clamp_min(_TINY), advantages)
    else:
        mean = total / count.clamp(min=1)
        advantages = filled - mean
        if scale:
            squares = torch.where(valid, (grouped - mean) ** 2, zeros)
            std = (squares.sum(dim=1, keepdim=True) / (count - 1).clamp(min=1)).sqrt()
            advantages = advantages / (std + convention.group_eps).clamp_min(_TINY)

    # Exact zero-spread test: float rounding of the mean would otherwise leave ±1e-17 residues that
    # a zero ε turns into ±1.
    singleton = count == 1
    advantages = torch.where(_all_equal(grouped, valid, dim=1, keepdim=True) & ~singleton, zeros, advantages)
    if convention.singleton_group == "identity":
        # verl sets mean 0 and std 1 for a one-rollout group and still adds its ε to the std.
        kept = filled / (1.0 + convention.group_eps) if scale else filled
    else:
        kept = zeros
    advantages = torch.where(singleton, kept, advantages)
    advantages = torch.where(valid, advantages, zeros)
    return advantages.reshape(num_rows, num_cols)


_TINY = torch.finfo(torch.float64).tiny


def _all_equal(values: torch.Tensor, mask: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    """True where the values selected by ``mask`` along ``dim`` are all equal (or there are none)."""
    inf = torch.full_like(values, float("inf"))
    low = torch.where(mask, values, inf).amin(dim=dim, keepdim=keepdim)
    high = torch.where(mask, values, -inf).amax(dim=dim, keepdim=keepdim)
    return (low == high) | ~mask.any(dim=dim, keepdim=keepdim)


def batch_whiten(
    values: torch.Tensor,
    convention: Convention,
    valid: torch.Tensor | None = None,
    response_lengths: torch.Tensor | None = None,
) -> torch.Tensor:
    """GDPO's batch step: whiten ``values`` over every valid rollout of the batch (the last axis).

    Args:
        values: (..., B) float; each leading index is a separate batch (the bench's seeds).
        convention: the units counted (``batch_whitening``), ε and its placement.
        valid: (..., B) bool; rows outside it take no part and are returned as 0. Default: all rows.
        response_lengths: (..., B) response lengths in tokens; required unless the convention whitens
            over samples. ``"token"``: a rollout counts once per token (mean and unbiased variance over
            all response tokens, verl's ``masked_whiten``); ``"response"``: once if it has any token.

    Returns:
        (..., B) whitened values; all 0 in a batch whose counted values are all equal or number ≤ 1.
    """
    if valid is None:
        valid = torch.ones_like(values, dtype=torch.bool)
    zeros = torch.zeros_like(values)
    if convention.needs_response_lengths:
        if response_lengths is None:
            raise ValueError(
                f"Convention {convention.name!r} whitens over {convention.batch_whitening}s, so it needs "
                "response_lengths: pass response_lengths=(B,) token counts of each completion, or use a "
                "sample-weighted convention such as 'trl'."
            )
        lengths = response_lengths.to(values.dtype)
        per_rollout = lengths if convention.batch_whitening == "token" else (lengths > 0).to(values.dtype)
        weight = torch.where(valid, per_rollout, zeros)
    else:
        weight = valid.to(values.dtype)
    total_weight = weight.sum(dim=-1, keepdim=True)
    mean = (weight * values).sum(dim=-1, keepdim=True) / total_weight.clamp_min(_TINY)
    # Unbiased over the counted units (rollouts or tokens), as torch.std and verl's masked_var.
    variance = (weight * (values - mean) ** 2).sum(dim=-1, keepdim=True) / (total_weight - 1).clamp_min(_TINY)
    if convention.batch_eps_in_sqrt:
        denominator = (variance + convention.batch_eps).sqrt()
    else:
        denominator = variance.sqrt() + convention.batch_eps
    whitened = (values - mean) / denominator.clamp_min(_TINY)
    # Exact all-equal test, for the reason given in group_normalise.
    degenerate = _all_equal(values, valid & (weight > 0), dim=-1, keepdim=True) | (total_weight <= 1)
    return torch.where(valid & ~degenerate, whitened, zeros)


# --------------------------------------------------------------------------------------------------
# Estimator registry
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AdvantageInputs:
    """Validated inputs handed to every registered estimator.

    Attributes:
        rewards: (B, n) float64, NaN = no reward (no NaN left under ``missing_rewards="zero"``).
        weights: (n,) float64.
        num_generations: G ≥ 2, with B a multiple of G.
        convention: the numeric convention.
        response_lengths: (B,) float64 token counts, or None.
        options: the method's options (:class:`gdpo.methods.MethodOption`) as checked, option → value; an
            option not given is absent.
    """

    rewards: torch.Tensor
    weights: torch.Tensor
    num_generations: int
    convention: Convention
    response_lengths: torch.Tensor | None
    options: dict = dataclasses.field(default_factory=dict)

    @property
    def rollout_has_reward(self) -> torch.Tensor:
        """(B,) bool: at least one reward is not NaN."""
        return ~torch.isnan(self.rewards).all(dim=1)

    @property
    def rollout_counts(self) -> torch.Tensor:
        """(B,) bool: the rollout takes part in the statistics of reward sums and gets an advantage
        (every rollout with a reward, and under ``unscored_rollouts="zero"`` those without any)."""
        if self.convention.unscored_rollouts == "zero":
            return torch.ones_like(self.rollout_has_reward)
        return self.rollout_has_reward

    def weighted_sum(self) -> torch.Tensor:
        """(B,) Σ_k w_k r_k over the non-NaN rewards (0 if none); NaN for rollouts that do not count."""
        summed = torch.nansum(self.rewards * self.weights, dim=1)
        return torch.where(self.rollout_counts, summed, torch.full_like(summed, float("nan")))


Estimator = Callable[[AdvantageInputs], torch.Tensor]


@dataclasses.dataclass(frozen=True)
class EstimatorSpec:
    """A registered estimator: its declared method and its function.

    Attributes:
        method: the declaration (:class:`gdpo.methods.MethodSpec`): name, description, batch step, GRPO
            fallback, group-locality, options; read through the properties below.
        function: ``f(inputs) -> (B,)``; for a method with a batch step, the values *before* it. A function
            followed by the batch step must be group-local (a rollout's value depends on its own group only),
            so that the bench can batch many seeds into one call and whiten per seed.
    """

    method: MethodSpec
    function: Estimator

    @property
    def name(self) -> str:
        """Registry key."""
        return self.method.name

    @property
    def description(self) -> str:
        """One line (``gdpo methods``)."""
        return self.method.description

    @property
    def batch_step(self) -> bool:
        """:func:`compute_advantages` applies GDPO's batch step (:func:`batch_whiten`) to the function's output."""
        return self.method.batch_step

    @property
    def grpo_counterpart(self) -> str | None:
        """What a convention with ``single_reward="grpo"`` runs with one reward; None unless per-reward."""
        return self.method.grpo_counterpart

    @property
    def group_local(self) -> bool:
        """A rollout's value depends on its own group only, so the bench computes all its seeds in one call."""
        return self.method.group_local

    @property
    def per_reward(self) -> bool:
        """The method normalises each reward separately (GDPO family), so ``single_reward`` applies."""
        return self.method.per_reward


_ESTIMATORS: dict[str, EstimatorSpec] = {}


def _refuse_duplicate(name: str) -> None:
    if name in _ESTIMATORS:
        function = _ESTIMATORS[name].function
        raise ValueError(f"An advantage estimator named {name!r} is already registered "
                         f"({function.__module__}.{function.__qualname__}); choose another name.")


def _add_estimator(method: MethodSpec, function: Estimator) -> None:
    _refuse_duplicate(method.name)
    _ESTIMATORS[method.name] = EstimatorSpec(method, function)


def register_estimator(
    name: str, description: str = "", batch_step: bool = False, grpo_counterpart: str | None = None,
    group_local: bool = False, options: Sequence[MethodOption] = (),
) -> Callable[[Estimator], Estimator]:
    """Decorator adding an estimator ``f(inputs: AdvantageInputs) -> (B,) tensor`` under ``name``.

    The name is declared in :mod:`gdpo.methods` too, so that this process's config checks accept it; to plan a
    workflow with it (the Snakefile never imports this module), declare it in :mod:`gdpo.methods` instead and
    implement it here with ``_implements``.

    Args:
        name: registry key.
        description: one line; default the function's docstring.
        batch_step: follow ``f`` by GDPO's batch step (see :class:`EstimatorSpec`).
        grpo_counterpart: mark ``f`` as a per-reward method and name its one-reward GRPO fallback.
        group_local: ``f``'s value for a rollout depends on its own group only (see :class:`EstimatorSpec`).
        options: the settings ``f`` reads from ``inputs.options`` (:class:`gdpo.methods.MethodOption`).

    Example::

        @register_estimator("grpo_max", description="group max as baseline")
        def grpo_max(inputs):
            ...
    """
    name = str(name)  # a Method member is stored as its plain name

    def decorate(function: Estimator) -> Estimator:
        _refuse_duplicate(name)
        method = MethodSpec(name, description or (function.__doc__ or "").strip(), batch_step,
                            grpo_counterpart, group_local, options=tuple(options))
        _add_estimator(declare_method(method), function)
        return function

    return decorate


def _implements(name: Method) -> Callable[[Estimator], Estimator]:
    """Decorator giving the method ``name`` declared in :mod:`gdpo.methods` its function."""

    def decorate(function: Estimator) -> Estimator:
        _add_estimator(get_method(name), function)
        return function

    return decorate


def registered_estimators() -> list[str]:
    """Names of the registered estimators, sorted."""
    return sorted(_ESTIMATORS)


def get_estimator(name: str) -> EstimatorSpec:
    """Look up an estimator by name; unknown names raise ``ValueError`` listing the valid ones."""
    try:
        return _ESTIMATORS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown advantage method {name!r}; valid methods are: {', '.join(registered_estimators())}."
        ) from None


def resolve_estimator(method: str, convention: str | Convention, num_rewards: int,
                      options: Mapping | None = None) -> EstimatorSpec:
    """The estimator :func:`compute_advantages` runs for ``method`` with ``num_rewards`` reward functions.

    With one reward a per-reward method follows ``convention.single_reward``: itself (``"gdpo"``), its GRPO
    counterpart (``"grpo"``), or ``ValueError`` (``"error"``); ``ValueError`` too where the counterpart does not
    take one of ``options`` (:func:`gdpo.methods.resolve_method`).
    """
    get_estimator(method)
    return get_estimator(resolve_method(method, convention, num_rewards, options).name)


@_implements(Method.GRPO)
def _grpo(inputs: AdvantageInputs) -> torch.Tensor:
    summed = inputs.weighted_sum().unsqueeze(1)
    return group_normalise(summed, inputs.num_generations, inputs.convention, scale=True).squeeze(1)


@_implements(Method.GRPO_NOSTD)
def _grpo_nostd(inputs: AdvantageInputs) -> torch.Tensor:
    summed = inputs.weighted_sum().unsqueeze(1)
    return group_normalise(summed, inputs.num_generations, inputs.convention, scale=False).squeeze(1)


def _gdpo_sum(inputs: AdvantageInputs, scale: bool = True, clip: float | None = None) -> torch.Tensor:
    """(B,) Σ_k w_k × (each reward's group-normalised advantage, clipped to [−clip, clip] if given), before any
    batch step."""
    per_reward = group_normalise(inputs.rewards, inputs.num_generations, inputs.convention, scale=scale)
    if clip is not None:
        per_reward = per_reward.clamp(-clip, clip)
    terms = per_reward * inputs.weights
    summed = terms.sum(dim=1)
    # Where the weighted terms cancel (e.g. complementary rewards), the float sum is rounding noise of
    # order eps·Σ|terms| rather than 0; a batch step without ε would blow that noise up to unit scale.
    rounding_bound = 4 * terms.shape[1] * torch.finfo(terms.dtype).eps * terms.abs().sum(dim=1)
    return torch.where(summed.abs() <= rounding_bound, torch.zeros_like(summed), summed)


@_implements(Method.GDPO)
def _gdpo(inputs: AdvantageInputs) -> torch.Tensor:
    return _gdpo_sum(inputs, clip=inputs.options.get("clip"))


@_implements(Method.GDPO_NOBN)
def _gdpo_nobn(inputs: AdvantageInputs) -> torch.Tensor:
    return _gdpo_sum(inputs)


@_implements(Method.GDPO_NOSTD)
def _gdpo_nostd(inputs: AdvantageInputs) -> torch.Tensor:
    return _gdpo_sum(inputs, scale=False)


# A method a config may name (declared in gdpo.methods) must have a function here.
if set(declared_methods()) - set(_ESTIMATORS):
    raise ImportError(f"gdpo.methods declares {sorted(set(declared_methods()) - set(_ESTIMATORS))}, which "
                      "gdpo.advantages does not implement; give each a function with @_implements(name).")


# --------------------------------------------------------------------------------------------------
# Input validation and the public entry point
# --------------------------------------------------------------------------------------------------


def _as_float64(values, what: str) -> tuple[torch.Tensor, torch.device | None, torch.dtype | None]:
    """Convert a tensor or array-like (``None`` entries allowed, read as NaN) to a float64 tensor."""
    if isinstance(values, torch.Tensor):
        if values.is_complex() or not (values.is_floating_point() or values.dtype in _INTEGER_DTYPES):
            raise ValueError(f"{what} must be real numbers, got a tensor of dtype {values.dtype}.")
        out_dtype = values.dtype if values.is_floating_point() else None
        return values.detach().to(torch.float64), values.device, out_dtype
    try:
        array = np.asarray(values)
        if array.dtype == object:
            array = np.vectorize(lambda v: np.nan if v is None else v, otypes=[object])(array)
        if array.dtype.kind not in "biuf" and array.dtype != object:
            raise TypeError(array.dtype)
        array = array.astype(np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{what} must be numbers (None or NaN for 'no reward') in a rectangular array: could not read "
            f"them as float ({error}). Check that every reward function returns a float or None."
        ) from None
    return torch.from_numpy(array), None, None


_INTEGER_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _checked_rewards(
    rewards, num_generations
) -> tuple[torch.Tensor, torch.device | None, torch.dtype | None, int]:
    """The (B, n) float64 reward matrix, the input's device and float dtype, and G as an int; or why not."""
    reward_matrix, device, out_dtype = _as_float64(rewards, "rewards")
    if reward_matrix.ndim == 1:
        reward_matrix = reward_matrix.unsqueeze(1)
    if reward_matrix.ndim != 2:
        raise ValueError(
            f"rewards must have shape (B, n) — one row per rollout, one column per reward function — "
            f"got shape {tuple(reward_matrix.shape)}."
        )
    num_rows, num_rewards = reward_matrix.shape
    if isinstance(num_generations, bool) or not isinstance(num_generations, (int, np.integer)) or num_generations < 2:
        raise ValueError(
            f"num_generations must be an integer ≥ 2 (got {num_generations!r}): group-relative advantages "
            "compare the rollouts of one prompt, so each prompt needs at least 2 rollouts."
        )
    num_generations = int(num_generations)
    if num_rows % num_generations:
        raise ValueError(
            f"rewards has {num_rows} rows, which is not a multiple of num_generations={num_generations}: "
            f"pass all {num_generations} rollouts of every prompt, grouped contiguously (TRL's layout)."
        )
    if num_rewards == 0:
        raise ValueError("rewards has no columns: pass at least one reward function's values.")
    infinite = torch.isinf(reward_matrix)
    if infinite.any():
        rows = torch.nonzero(infinite.any(dim=1)).flatten()[:5].tolist()
        raise ValueError(
            f"rewards contain ±inf (rows {rows}): rewards must be finite, with NaN/None meaning 'no reward'. "
            "Fix or clip the reward function."
        )
    return reward_matrix, device, out_dtype, num_generations


def _checked_weights(weights, num_rewards: int) -> torch.Tensor:
    """The (n,) float64 reward weights (default all 1); or why they do not fit the rewards."""
    if weights is None:
        return torch.ones(num_rewards, dtype=torch.float64)
    weight_vector = _as_float64(weights, "weights")[0].flatten()
    if weight_vector.numel() != num_rewards:
        raise ValueError(
            f"weights has {weight_vector.numel()} entries but rewards has {num_rewards} columns: "
            "give one weight per reward function, in the same order."
        )
    if not torch.isfinite(weight_vector).all():
        raise ValueError(f"weights must be finite numbers, got {weight_vector.tolist()}.")
    return weight_vector


def _checked_lengths(response_lengths, num_rows: int) -> torch.Tensor | None:
    """The (B,) float64 response lengths, or None if not given; or why they do not fit the rewards."""
    if response_lengths is None:
        return None
    lengths = _as_float64(response_lengths, "response_lengths")[0].flatten()
    if lengths.numel() != num_rows:
        raise ValueError(
            f"response_lengths has {lengths.numel()} entries but rewards has {num_rows} rows: give the "
            "token count of every completion, in the same order."
        )
    if not torch.isfinite(lengths).all() or (lengths < 0).any():
        raise ValueError("response_lengths must be finite token counts ≥ 0.")
    return lengths


def compute_advantages(
    rewards,
    num_generations: int,
    method: str,
    weights: Sequence[float] | torch.Tensor | None = None,
    convention: str | Convention = "trl",
    response_lengths: Sequence[float] | torch.Tensor | None = None,
    batch_step: bool = True,
    options: Mapping | None = None,
) -> torch.Tensor:
    """Advantages of a batch of rollouts under a registered method and numeric convention.

    Args:
        rewards: (B, n) rewards — tensor or array-like — rows grouped contiguously in groups of
            ``num_generations`` (TRL's layout); NaN or None = no reward. A 1-D input is one reward.
        num_generations: G, rollouts per prompt (≥ 2).
        method: a registered estimator (:func:`registered_estimators`): ``grpo``, ``grpo_nostd``, ``gdpo``,
            ``gdpo_nobn``, ``gdpo_nostd``, … With one reward a per-reward method follows the convention's
            ``single_reward`` (:func:`resolve_estimator`).
        weights: (n,) reward weights (default all 1): applied before normalisation in GRPO, after the
            per-reward normalisation in GDPO.
        convention: a registered convention name (:func:`available_conventions`) or a :class:`Convention`.
        response_lengths: (B,) response lengths in tokens; needed by token- and response-weighted
            conventions (``verl``, ``verl_pr6497``).
        batch_step: apply the method's batch step, if it has one; ``False`` returns the values before it
            (the exact analysis counts there; the bench whitens each seed's batch itself).
        options: the method's options (``gdpo methods`` lists them), e.g. ``{"clip": 3.0}`` for ``gdpo``;
            None or empty: the method as declared.

    Returns:
        (B,) advantages, never NaN; float dtype of ``rewards`` if it is a floating tensor (else float64),
        on its device.

    Raises:
        ValueError: bad shapes, G < 2, B not a multiple of G, weights of the wrong length, non-numeric
            or infinite rewards, missing ``response_lengths`` for a token-weighted convention, unknown
            method or convention, one reward under a convention that refuses per-reward methods with one,
            an option the method does not take or a value it refuses. The message says how to fix it.
    """
    checked_options = get_estimator(method).method.check_options(options)
    convention = get_convention(convention)
    reward_matrix, device, out_dtype, num_generations = _checked_rewards(rewards, num_generations)
    num_rows, num_rewards = reward_matrix.shape
    weight_vector = _checked_weights(weights, num_rewards)
    lengths = _checked_lengths(response_lengths, num_rows)

    estimator = resolve_estimator(method, convention, num_rewards, checked_options)
    if convention.missing_rewards == "zero":
        # NVlabs/GDPO zero-fills the whole reward matrix: a rollout without any reward is a zero-reward one.
        reward_matrix = torch.nan_to_num(reward_matrix, nan=0.0)

    inputs = AdvantageInputs(reward_matrix, weight_vector, num_generations, convention, lengths, checked_options)
    advantages = estimator.function(inputs)
    if estimator.batch_step and batch_step:
        advantages = batch_whiten(advantages, convention, inputs.rollout_counts, lengths)
    advantages = torch.where(inputs.rollout_counts, advantages, torch.zeros_like(advantages))
    if torch.isnan(advantages).any():  # a registered estimator broke the contract
        raise RuntimeError(f"Advantage method {method!r} produced NaN; this is a bug in that estimator.")
    if out_dtype is not None:
        advantages = advantages.to(out_dtype)
    if device is not None:
        advantages = advantages.to(device)
    return advantages


# --------------------------------------------------------------------------------------------------
# Reward transforms
# --------------------------------------------------------------------------------------------------


def condition_rewards(rewards, easy: int | Sequence[int], hard: int, threshold: float = 1.0) -> torch.Tensor:
    """Reward conditioning (Eq. 8): pay the easy reward(s) only where the hard one reaches ``threshold``.

    ``r_easy ← r_easy if r_hard ≥ threshold else 0``; a NaN hard reward counts as not reached.

    Args:
        rewards: (B, n) tensor or array-like.
        easy: column index (or indices) of the reward(s) to condition, e.g. the length reward.
        hard: column index of the conditioning reward, e.g. correctness.
        threshold: the hard reward's pass mark.

    Returns:
        (B, n) float tensor, a new tensor (the input is not modified).
    """
    matrix, device, out_dtype = _as_float64(rewards, "rewards")
    if matrix.ndim != 2:
        raise ValueError(f"rewards must have shape (B, n), got {tuple(matrix.shape)}.")
    easy_columns = [easy] if isinstance(easy, (int, np.integer)) else list(easy)
    num_rewards = matrix.shape[1]
    for column in [*easy_columns, hard]:
        if not isinstance(column, (int, np.integer)) or not -num_rewards <= column < num_rewards:
            raise ValueError(f"reward column {column!r} does not exist: rewards has {num_rewards} columns.")
    if hard % num_rewards in {c % num_rewards for c in easy_columns}:
        raise ValueError("the hard (conditioning) reward cannot also be an easy (conditioned) reward.")
    conditioned = matrix.clone()
    reached = matrix[:, hard] >= threshold
    for column in easy_columns:
        conditioned[:, column] = torch.where(reached, matrix[:, column], torch.zeros_like(matrix[:, column]))
    if out_dtype is not None:
        conditioned = conditioned.to(out_dtype)
    if device is not None:
        conditioned = conditioned.to(device)
    return conditioned


# --------------------------------------------------------------------------------------------------
# Diagnostics
# --------------------------------------------------------------------------------------------------

#: Advantages are compared after rounding to this many decimals when counting distinct values.
DISTINCT_DECIMALS = 6


def distinct_advantage_counts(advantages: torch.Tensor, decimals: int = DISTINCT_DECIMALS) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct advantage values per group and per batch — the live form of claims C1/C2.

    Args:
        advantages: (..., P, G) advantages, P groups of G rollouts per batch (any leading batch axes).
        decimals: values equal after rounding to this many decimals count as one.

    Returns:
        ((..., P) distinct values in each group, (...) distinct values in each batch), int64.
    """
    *leading, groups, rollouts = advantages.shape
    keys = torch.round(advantages.double() * 10**decimals).to(torch.int64)
    per_group = 1 + (keys.sort(dim=-1).values.diff(dim=-1) != 0).sum(dim=-1)
    batch = keys.reshape(*leading, groups * rollouts).sort(dim=-1).values
    in_batch = 1 + (batch.diff(dim=-1) != 0).sum(dim=-1)
    return per_group, in_batch
