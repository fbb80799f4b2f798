"""The controlled policy-gradient bench: a Bernoulli policy, sampled G times per prompt, updated with the
clipped policy-gradient objective and an advantage from :func:`gdpo.advantages.compute_advantages`.

Shapes: S seeds, P prompts, G rollouts per prompt, D behaviours, n rewards; B = P·G rollouts per seed.
Every tensor carries the seed axis first; nothing loops over seeds in Python, and nothing mixes seeds
(seed k's numbers are the same whichever other seeds run beside it).

Policy. Behaviour d of a rollout of prompt p is Bernoulli(σ(ℓ[s, p, d])), with logits
``ℓ = context[p, d] + shared[s, d] + tabular[s, p, d]``: ``context`` holds the calibrated step-0 logits
(fixed, from :mod:`gdpo.sim.rewards`), ``shared`` is one trainable logit per behaviour common to all
prompts (as an LM's weights are: every group's advantage moves it, so the groups' relative advantage
scales matter), ``tabular`` one per (prompt, behaviour). ``policy: shared | tabular | mixed`` keeps one or
both trainable parts; both start at 0.

Update. Per seed, maximise the mean over its B rollouts of ``min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A)``,
ρ = π(a)/π_sampling(a), for ``inner_epochs`` optimizer steps on each sampled batch. The gradient with
respect to the logits is analytic (∂ log π(a)/∂ℓ_d = a_d − σ(ℓ_d)); the tests check it against autograd.
Adam (β = 0.9, 0.999, ε = 1e-8, no weight decay) or plain SGD, elementwise, so seeds stay independent.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from gdpo.advantages import (
    DISTINCT_DECIMALS,
    batch_whiten,
    compute_advantages,
    condition_rewards,
    distinct_advantage_counts,
    get_convention,
    resolve_estimator,
)
from gdpo.sim import rng
from gdpo.sim.schema import RunConfig
from gdpo.sim.rewards import RewardModel, build_reward_model

_ADAM_BETAS = (0.9, 0.999)
_ADAM_EPS = 1e-8


def seedwise_advantages(
    rewards: torch.Tensor,
    num_generations: int,
    method: str,
    weights,
    convention: str,
    response_lengths: torch.Tensor | None = None,
    path: str = "batched",
) -> torch.Tensor:
    """Advantages of every seed's batch from the registry, never normalising across seeds.

    Args:
        rewards: (S, B, n) float64, each seed's rows grouped contiguously G at a time.
        num_generations: G.
        method, weights, convention: as :func:`gdpo.advantages.compute_advantages`.
        response_lengths: (S, B) token-count proxy (used only by token- or response-weighted conventions).
        path: ``"batched"``: a group-local method (its spec's ``group_local``: a rollout's advantage
            depends on its own group only, so one registry call over all seeds' rows equals a call per
            seed) in one call over all seeds; a method with a batch step (as the convention resolves it for
            n rewards, :func:`gdpo.advantages.resolve_estimator`; group-local before it) as one call without
            it plus :func:`gdpo.advantages.batch_whiten` per seed; other methods (a newly registered one
            unless it declares itself group-local) one call per seed. ``"per_seed"``: one registry call per
            seed for every method (the reference the tests compare the batched path with).

    Returns:
        (S, B) float64 advantages.
    """
    num_seeds, batch, num_rewards = rewards.shape
    conv = get_convention(convention)
    lengths = response_lengths if conv.needs_response_lengths else None
    flat_lengths = None if lengths is None else lengths.reshape(-1)
    if path not in ("batched", "per_seed"):
        raise ValueError(f"path must be 'batched' or 'per_seed', got {path!r}.")
    spec = resolve_estimator(method, conv, num_rewards)
    if path == "batched" and (spec.batch_step or spec.group_local):
        flat = compute_advantages(rewards.reshape(-1, num_rewards), num_generations, spec.name, weights, conv,
                                  flat_lengths, batch_step=False).view(num_seeds, batch)
        # The bench has no missing rewards, so every rollout takes part in its seed's batch step.
        return batch_whiten(flat, conv, response_lengths=lengths) if spec.batch_step else flat
    return torch.stack([
        compute_advantages(rewards[k], num_generations, method, weights, conv,
                           None if lengths is None else lengths[k])
        for k in range(num_seeds)
    ])


@dataclasses.dataclass
class BenchTrace:
    """Per-step, per-seed metrics of one run (T steps; step t is measured on the batch sampled before
    update t, so step 0 is the initial policy).

    Attributes:
        reward_mean: (T, S, n) mean reward as paid to the advantage (after conditioning), reward units.
        success: (T, S, n) mean graded value in [0, 1] before conditioning (e.g. the share of short
            responses for a length reward, whether or not it was paid).
        zero_std_fraction: (T, S, n) share of groups whose paid reward k is equal across the G rollouts.
        distinct_per_group: (T, S) mean over groups of the number of distinct advantages (6 decimals).
        distinct_in_batch: (T, S) distinct advantage values in the seed's batch.
        distinct_groups_in_batch: (T, S) distinct sorted advantage tuples among the seed's P groups.
        length_mean, length_max: (T, S) mean and max over the batch of the response-length proxy.
    """

    reward_mean: np.ndarray
    success: np.ndarray
    zero_std_fraction: np.ndarray
    distinct_per_group: np.ndarray
    distinct_in_batch: np.ndarray
    distinct_groups_in_batch: np.ndarray
    length_mean: np.ndarray
    length_max: np.ndarray



def batch_metrics(graded: torch.Tensor, paid: torch.Tensor, lengths: torch.Tensor, advantages: torch.Tensor,
                  hash_positions: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-seed metrics of one batch, as :class:`BenchTrace` without the step axis.

    Args:
        graded, paid: (S, P, G, n); lengths: (S, P, G); advantages: (S, P, G);
        hash_positions: (G,) :func:`gdpo.sim.rng.counter_offsets` of G (to fingerprint sorted groups).
    """
    distinct_per_group, distinct_in_batch = distinct_advantage_counts(advantages)
    sorted_groups = torch.round(advantages * 10**DISTINCT_DECIMALS).to(torch.int64).sort(dim=2).values
    # A 64-bit fingerprint per sorted tuple; two different tuples collide with probability ~2^-64.
    fingerprints = rng.mix64(sorted_groups * rng.GOLDEN_GAMMA + hash_positions).sum(dim=2)
    fingerprints = fingerprints.sort(dim=1).values
    distinct_groups = 1 + (fingerprints.diff(dim=1) != 0).sum(dim=1)
    return {
        "reward_mean": paid.mean(dim=(1, 2)),
        "success": graded.mean(dim=(1, 2)),
        "zero_std_fraction": (paid.amax(dim=2) == paid.amin(dim=2)).to(torch.float64).mean(dim=1),
        "distinct_per_group": distinct_per_group.to(torch.float64).mean(dim=1),
        "distinct_in_batch": distinct_in_batch.to(torch.float64),
        "distinct_groups_in_batch": distinct_groups.to(torch.float64),
        "length_mean": lengths.mean(dim=(1, 2)),
        "length_max": lengths.amax(dim=(1, 2)),
    }


def run_steps(step, steps: int) -> BenchTrace:
    """Call ``step(0) … step(steps − 1)`` (each returning per-seed metric tensors) and stack them into a
    :class:`BenchTrace`; shared by every bench."""
    records: dict[str, list[torch.Tensor]] = {}
    for index in range(steps):
        for name, value in step(index).items():
            records.setdefault(name, []).append(value)
    return BenchTrace(**{name: torch.stack(values).numpy() for name, values in records.items()})


class PolicyGradientBench:
    """One (config, method) run over all of ``config.seeds`` at once (see the module docstring).

    Args:
        config: the resolved run configuration.
        method: a registered advantage method.
        seeds: override ``config.seeds`` (e.g. a subset, for tests).
        advantage_path: see :func:`seedwise_advantages`.
        reward_model: a prebuilt :func:`gdpo.sim.rewards.build_reward_model` of ``config`` (built if None).
    """

    def __init__(self, config: RunConfig, method: str, seeds=None, advantage_path: str = "batched",
                 reward_model: RewardModel | None = None):
        self.config = config
        self.method = method
        self.advantage_path = advantage_path
        self.seeds = tuple(config.seeds if seeds is None else seeds)
        self.model = reward_model or build_reward_model(config)
        self.num_seeds = len(self.seeds)
        self.num_prompts = config.prompts
        self.num_generations = config.generations
        self.num_behaviours = self.model.num_behaviours
        self.num_rewards = len(config.rewards)
        self.context = torch.from_numpy(self.model.initial_logits).to(torch.float64)  # (P, D)
        shape_shared = (self.num_seeds, self.num_behaviours)
        shape_tabular = (self.num_seeds, self.num_prompts, self.num_behaviours)
        trains_shared = config.policy in ("shared", "mixed")
        trains_tabular = config.policy in ("tabular", "mixed")
        self.shared = torch.zeros(shape_shared, dtype=torch.float64) if trains_shared else None
        self.tabular = torch.zeros(shape_tabular, dtype=torch.float64) if trains_tabular else None
        self._moments = {name: (torch.zeros_like(p), torch.zeros_like(p)) for name, p in self._parameters().items()}
        self._adam_steps = 0
        self._keys = rng.seed_keys(self.seeds)
        self._offsets = rng.counter_offsets(self.num_prompts * self.num_generations * self.num_behaviours)
        self.weights = torch.tensor([r.weight for r in config.rewards], dtype=torch.float64)
        conditioning = config.conditioning
        self._conditioning = None if conditioning is None else (
            [config.reward_index(e) for e in conditioning.easy], config.reward_index(conditioning.hard),
            conditioning.threshold)
        self._hash_positions = rng.counter_offsets(self.num_generations)

    def _parameters(self) -> dict[str, torch.Tensor]:
        return {name: p for name, p in (("shared", self.shared), ("tabular", self.tabular)) if p is not None}

    def logits(self) -> torch.Tensor:
        """(S, P, D) float64 current logits."""
        logits = self.context.expand(self.num_seeds, -1, -1)
        if self.shared is not None:
            logits = logits + self.shared[:, None, :]
        if self.tabular is not None:
            logits = logits + self.tabular
        return logits

    def sample(self, step: int, logits: torch.Tensor | None = None) -> torch.Tensor:
        """(S, P, G, D) float64 0/1 behaviours of step ``step`` (deterministic given seed and step)."""
        logits = self.logits() if logits is None else logits
        u = rng.uniforms(rng.step_keys(self._keys, step), self._offsets)
        u = u.view(self.num_seeds, self.num_prompts, self.num_generations, self.num_behaviours)
        return (u < torch.sigmoid(logits)[:, :, None, :]).to(torch.float64)

    def score(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Rewards of sampled behaviours.

        Args:
            actions: (S, P, G, D).

        Returns:
            graded (S, P, G, n) in [0, 1]; paid (S, P, G, n) rewards as the advantage sees them (scale
            applied, conditioning applied); lengths (S, P, G) response-length proxy.
        """
        graded = self.model.graded(actions)
        paid = self.model.raw(graded)
        if self._conditioning is not None:
            easy, hard, threshold = self._conditioning
            paid = condition_rewards(paid.reshape(-1, self.num_rewards), easy, hard, threshold).view_as(paid)
        return graded, paid, self.model.length_proxy(actions)

    def advantages(self, paid: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(S, P, G) advantages of the paid rewards (S, P, G, n), per seed."""
        S, P, G = paid.shape[:3]
        advantages = seedwise_advantages(
            paid.reshape(S, P * G, self.num_rewards), G, self.method, self.weights, self.config.convention,
            lengths.reshape(S, P * G), self.advantage_path,
        )
        return advantages.view(S, P, G)

    def surrogate_gradient(self, actions: torch.Tensor, advantages: torch.Tensor, logits: torch.Tensor,
                           sampling_log_prob: torch.Tensor | None) -> torch.Tensor:
        """Gradient of the per-seed loss −mean_rollouts min(ρA, clip(ρ)A) with respect to the logits.

        Args:
            actions: (S, P, G, D) sampled behaviours.
            advantages: (S, P, G).
            logits: (S, P, D) current logits.
            sampling_log_prob: (S, P, G) log π_sampling(a), or None when the logits are still the
                sampling ones (ρ = 1: the first epoch).

        Returns:
            (S, P, D) float64.
        """
        if sampling_log_prob is None:
            coefficient = advantages
        else:
            ratio = torch.exp(self.log_prob(actions, logits) - sampling_log_prob)
            epsilon = self.config.clip_epsilon
            # Where the clipped term is the smaller one it is constant in ρ: no gradient.
            unclipped = torch.where(advantages >= 0, ratio <= 1 + epsilon, ratio >= 1 - epsilon)
            coefficient = advantages * ratio * unclipped
        # Σ_g c·(a − σ(ℓ)) without materialising the (S, P, G, D) difference.
        weighted = (torch.einsum("spg,spgd->spd", coefficient, actions)
                    - coefficient.sum(2)[..., None] * torch.sigmoid(logits))
        return -weighted / (self.num_prompts * self.num_generations)

    @staticmethod
    def log_prob(actions: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """(S, P, G) log π(a) of (S, P, G, D) behaviours under (S, P, D) logits."""
        log_normaliser = torch.nn.functional.softplus(logits).sum(-1)  # Σ_d log(1 + e^ℓ_d)
        return torch.einsum("spgd,spd->spg", actions, logits) - log_normaliser[..., None]

    def _optimizer_step(self, logit_gradient: torch.Tensor) -> None:
        gradients = {}
        if self.shared is not None:
            gradients["shared"] = logit_gradient.sum(dim=1)
        if self.tabular is not None:
            gradients["tabular"] = logit_gradient
        learning_rate = self.config.learning_rate
        if self.config.optimizer == "sgd":
            for name, parameter in self._parameters().items():
                parameter.sub_(learning_rate * gradients[name])
            return
        self._adam_steps += 1
        beta1, beta2 = _ADAM_BETAS
        correction1 = 1 - beta1**self._adam_steps
        correction2 = 1 - beta2**self._adam_steps
        for name, parameter in self._parameters().items():
            first, second = self._moments[name]
            gradient = gradients[name]
            first.mul_(beta1).add_(gradient, alpha=1 - beta1)
            second.mul_(beta2).addcmul_(gradient, gradient, value=1 - beta2)
            denominator = (second / correction2).sqrt_().add_(_ADAM_EPS)
            parameter.addcdiv_(first, denominator, value=-learning_rate / correction1)

    def update(self, actions: torch.Tensor, advantages: torch.Tensor, sampling_logits: torch.Tensor) -> None:
        """``inner_epochs`` optimizer steps on one sampled batch, the ratio taken against the sampling policy.

        Args:
            actions: (S, P, G, D); advantages: (S, P, G); sampling_logits: (S, P, D) logits they were drawn with.
        """
        sampling_log_prob = self.log_prob(actions, sampling_logits) if self.config.inner_epochs > 1 else None
        for epoch in range(self.config.inner_epochs):
            # First epoch: the logits are still the sampling ones, so ρ = 1 exactly.
            reference = None if epoch == 0 else sampling_log_prob
            self._optimizer_step(self.surrogate_gradient(actions, advantages, self.logits(), reference))

    def step(self, step: int) -> dict[str, torch.Tensor]:
        """Sample, score, compute advantages, update; returns this step's metrics (see :class:`BenchTrace`)."""
        logits = self.logits()
        actions = self.sample(step, logits)
        graded, paid, lengths = self.score(actions)
        advantages = self.advantages(paid, lengths)
        metrics = self.measure(graded, paid, lengths, advantages)
        self.update(actions, advantages, logits)
        return metrics

    def measure(self, graded, paid, lengths, advantages) -> dict[str, torch.Tensor]:
        """Per-seed metrics of one batch; shapes as :class:`BenchTrace` without the step axis."""
        return batch_metrics(graded, paid, lengths, advantages, self._hash_positions)

    def run(self, steps: int | None = None) -> BenchTrace:
        """Train for ``steps`` (default ``config.steps``) and return the metrics of every step."""
        return run_steps(self.step, self.config.steps if steps is None else steps)

