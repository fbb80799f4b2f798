"""The sequence bench: a small autoregressive policy over a token vocabulary, sampled G times for each of P
prompts, rewarded from the sampled sequences (:mod:`gdpo.sim.sequence_rewards`), updated with the clipped
policy-gradient objective and an advantage from :func:`gdpo.advantages.compute_advantages`.

Shapes: S seeds, P prompts, G rollouts per prompt, T = ``max_length`` (the response cap), V tokens, V + 1
states (the previous token, or the start). Every tensor carries the seed axis first; no Python loop over
seeds, and seed k's numbers do not depend on the other seeds (counter-based random numbers per seed, elementwise
optimizer, per-seed advantages and loss normalisation).

Policy. The next token's logits given the previous token ``x`` at position t of a response to prompt p:
``base[p, x] + habit[s, t, x] + knowledge[s, p, x]``. ``base`` is the fixed step-0 policy
(:func:`gdpo.sim.sequence_rewards.base_logits`); ``habit`` is shared by all prompts and knows the position (an
LM's general habits: format, how long to reason, when to stop: every group's advantage moves it);
``knowledge`` is per prompt, without position (what the model knows about this problem: its answer).
Both trainable parts start at 0. Sampling runs position by position, vectorised over (S, P, G); a response ends
at its first END; one without END is truncated at T and, as in TRL (``mask_truncated_completions=False``),
scored as it is and trained on.

Update. The loss of a seed is −Σ_tokens c·min(ρ·A, clip(ρ, 1 − ε, 1 + ε)·A), ρ the token's probability ratio
against the sampling policy, A the rollout's advantage, c = 1 / (the seed's response tokens) for
``token_mean`` (verl's default) or 1 / (P·G·|response|) for ``sequence_mean`` (TRL's ``grpo`` loss). Its
gradient with respect to a token's logits is −c·ρ·A·(onehot − softmax) where unclipped (analytic; the tests
check it against autograd), summed into ``habit`` and ``knowledge``. Adam (β = 0.9, 0.999, ε = 1e-8) or SGD.
"""

from __future__ import annotations

import torch

from gdpo.advantages import condition_rewards
from gdpo.sim import rng
from gdpo.sim.engine import BenchTrace, batch_metrics, run_steps, seedwise_advantages
from gdpo.sim.schema import SequenceRunConfig
from gdpo.sim.sequence_rewards import (
    END, base_logits, graded_rewards, make_prompts, paid_rewards, parse_responses, vocabulary_size,
)

_ADAM_BETAS = (0.9, 0.999)
_ADAM_EPS = 1e-8
#: Separates the token stream from the Bernoulli bench's stream of the same seed.
SEQUENCE_PURPOSE = 0x5E9


class SequenceBench:
    """One (config, method) run of the sequence bench over all of ``config.seeds`` at once.

    Args:
        config: the resolved run configuration.
        method: a registered advantage method.
        seeds: override ``config.seeds`` (e.g. a subset, for tests).
        advantage_path: see :func:`gdpo.sim.engine.seedwise_advantages`.
    """

    def __init__(self, config: SequenceRunConfig, method: str, seeds=None, advantage_path: str = "batched"):
        self.config = config
        self.method = method
        self.advantage_path = advantage_path
        self.seeds = tuple(config.seeds if seeds is None else seeds)
        self.num_seeds = len(self.seeds)
        self.num_prompts = config.prompts
        self.num_generations = config.generations
        self.cap = config.max_length
        self.vocabulary = vocabulary_size(config.answer_choices)
        self.prompts = make_prompts(config)
        self.base = base_logits(config, self.prompts)  # (P, V + 1, V)
        S, P, T, V = self.num_seeds, self.num_prompts, self.cap, self.vocabulary
        self.habit = torch.zeros(S, T, V + 1, V, dtype=torch.float64)
        self.knowledge = torch.zeros(S, P, V + 1, V, dtype=torch.float64)
        self._moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in (self.habit, self.knowledge)]
        self._adam_steps = 0
        self._keys = rng.seed_keys(self.seeds, purpose=SEQUENCE_PURPOSE)
        self._offsets = rng.counter_offsets(T * P * self.num_generations)
        self._hash_positions = rng.counter_offsets(self.num_generations)
        self.weights = torch.tensor([r.weight for r in config.rewards], dtype=torch.float64)
        conditioning = config.conditioning
        self._conditioning = None if conditioning is None else (
            [config.reward_index(e) for e in conditioning.easy], config.reward_index(conditioning.hard),
            conditioning.threshold)
        # Index helpers, (S, P, G) broadcastable.
        self._seed_index = torch.arange(S)[:, None, None]
        self._prompt_index = torch.arange(P)[None, :, None]

    # ----------------------------------------------------------------------------------------------
    # Sampling and scoring
    # ----------------------------------------------------------------------------------------------

    def token_logits(self, states: torch.Tensor) -> torch.Tensor:
        """(S, P, G, T, V) float64 logits of the next token at every position, given (S, P, G, T) previous-token
        states in 0..V (the reference formula; sampling builds the same numbers table by table)."""
        seed, prompt = self._seed_index[..., None], self._prompt_index[..., None]
        position = torch.arange(self.cap)[None, None, None, :]
        return self.base[prompt, states] + self.habit[seed, position, states] + self.knowledge[seed, prompt, states]

    def sample(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample every seed's batch of step ``step`` (deterministic given seed and step).

        Returns:
            tokens (S, P, G, T) int64 (END after a response's end); states (S, P, G, T) the previous token of each
            position (V at position 0); in_response (S, P, G, T) bool; probabilities (S, P, G, T, V) float64 of
            the sampling policy at each position's state.
        """
        S, P, G, T, V = self.num_seeds, self.num_prompts, self.num_generations, self.cap, self.vocabulary
        uniforms = rng.uniforms(rng.step_keys(self._keys, step), self._offsets).view(S, T, P * G)
        # Position-first buffers: each position writes one contiguous block.
        tokens = torch.empty(T, S, P * G, dtype=torch.int64)
        states = torch.empty(T, S, P * G, dtype=torch.int64)
        in_response = torch.empty(T, S, P * G, dtype=torch.bool)
        probabilities = torch.empty(T, S, P * G, V, dtype=torch.float64)
        previous = torch.full((S, P * G), V, dtype=torch.int64)
        alive = torch.ones(S, P * G, dtype=torch.bool)
        # The logits depend on (seed, prompt, position, state) only: build that table once per position and
        # pick each rollout's row from it (cheaper than adding three gathered tensors per rollout).
        static = (self.base[None] + self.knowledge).view(S, P * (V + 1), V)
        row_base = (torch.arange(S)[:, None] * P + torch.arange(P).repeat_interleave(G)[None, :]) * (V + 1)
        for position in range(T):
            table = (static.view(S, P, V + 1, V) + self.habit[:, None, position]).view(-1, V)
            logits = table.index_select(0, (row_base + previous).view(-1)).view(S, P * G, V)
            weights = torch.exp(logits - logits.amax(-1, keepdim=True), out=probabilities[position])
            cumulative = weights.cumsum(-1)
            # u < 1, so u·total < the last cumulative sum: the draw is at most V − 1.
            drawn = (cumulative < uniforms[:, position, :, None] * cumulative[..., -1:]).sum(-1)
            tokens[position] = drawn
            states[position] = previous
            in_response[position] = alive
            alive = alive & (drawn != END)
            previous = drawn
        probabilities /= probabilities.sum(-1, keepdim=True)
        tokens.masked_fill_(~in_response, END)
        to_rollouts = lambda values: values.movedim(0, 2).reshape(S, P, G, T, *values.shape[3:])  # noqa: E731
        return to_rollouts(tokens), to_rollouts(states), to_rollouts(in_response), to_rollouts(probabilities)

    def score(self, tokens: torch.Tensor, in_response: torch.Tensor):
        """graded (S, P, G, n) in [0, 1]; paid (S, P, G, n) as the advantage sees them (range and conditioning
        applied); lengths (S, P, G) response tokens."""
        parsed = parse_responses(tokens, in_response, self.prompts.answers, self.config.answer_choices)
        graded = graded_rewards(parsed, self.config, self.prompts.need)
        paid = paid_rewards(graded, self.config)
        if self._conditioning is not None:
            easy, hard, threshold = self._conditioning
            paid = condition_rewards(paid.reshape(-1, paid.shape[-1]), easy, hard, threshold).view_as(paid)
        return graded, paid, parsed.length.to(torch.float64)

    def advantages(self, paid: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(S, P, G) advantages of the paid rewards (S, P, G, n), per seed."""
        S, P, G, n = paid.shape
        advantages = seedwise_advantages(paid.reshape(S, P * G, n), G, self.method, self.weights,
                                         self.config.convention, lengths.reshape(S, P * G), self.advantage_path)
        return advantages.view(S, P, G)

    # ----------------------------------------------------------------------------------------------
    # Update
    # ----------------------------------------------------------------------------------------------

    def token_weights(self, in_response: torch.Tensor) -> torch.Tensor:
        """(S, P, G, T) the loss's weight c of every token (0 outside the response)."""
        mask = in_response.to(torch.float64)
        if self.config.loss == "token_mean":
            return mask / mask.sum(dim=(1, 2, 3), keepdim=True).clamp_min(1)
        lengths = mask.sum(-1, keepdim=True).clamp_min(1)
        return mask / (lengths * self.num_prompts * self.num_generations)

    def logit_gradient(self, tokens, in_response, advantages, probabilities,
                       sampling_probabilities=None) -> torch.Tensor:
        """Gradient of the per-seed loss with respect to every sampled position's logits.

        Args:
            tokens: (S, P, G, T); in_response: (S, P, G, T); advantages: (S, P, G);
            probabilities: (S, P, G, T, V) current next-token probabilities at the sampled states;
            sampling_probabilities: the sampling policy's, or None when they are the current ones (ρ = 1).

        Returns:
            (S, P, G, T, V) float64.
        """
        coefficient = self.token_weights(in_response) * advantages[..., None]
        if sampling_probabilities is not None:
            chosen = probabilities.gather(-1, tokens[..., None])[..., 0]
            ratio = chosen / sampling_probabilities.gather(-1, tokens[..., None])[..., 0]
            epsilon = self.config.clip_epsilon
            # Where the clipped term is the smaller one it is constant in ρ: no gradient.
            unclipped = torch.where(advantages[..., None] >= 0, ratio <= 1 + epsilon, ratio >= 1 - epsilon)
            coefficient = coefficient * ratio * unclipped
        # d(−c·log π(x))/d logits = −c·(onehot(x) − π)
        gradient = coefficient[..., None] * probabilities
        gradient.scatter_add_(-1, tokens[..., None], -coefficient[..., None])
        return gradient

    def parameter_gradients(self, logit_gradient: torch.Tensor, states: torch.Tensor):
        """Sum the per-position logit gradients (S, P, G, T, V) into ``habit`` (S, T, V + 1, V) and ``knowledge``
        (S, P, V + 1, V) at the positions' states."""
        S, P, G, T, V = logit_gradient.shape
        rows = logit_gradient.reshape(-1, V)
        seed = torch.arange(S).view(S, 1, 1, 1)
        prompt = torch.arange(P).view(1, P, 1, 1)
        position = torch.arange(T).view(1, 1, 1, T)
        habit_index = ((seed * T + position) * (V + 1) + states).reshape(-1)
        knowledge_index = ((seed * P + prompt) * (V + 1) + states).reshape(-1)
        habit = torch.zeros(S * T * (V + 1), V, dtype=torch.float64).index_add_(0, habit_index, rows)
        knowledge = torch.zeros(S * P * (V + 1), V, dtype=torch.float64).index_add_(0, knowledge_index, rows)
        return habit.view_as(self.habit), knowledge.view_as(self.knowledge)

    def response_gradients(self, tokens, states, in_response, advantages, probabilities):
        """The first epoch's (ρ = 1) parameter gradients computed on the response's positions only: the same
        numbers as :meth:`parameter_gradients` of :meth:`logit_gradient` (the positions after a response have
        weight 0, and dropping zeros from the sums in their order changes no bit), without the work on them.

        Returns:
            (habit (S, T, V + 1, V), knowledge (S, P, V + 1, V)) gradients.
        """
        S, P, G, T, V = probabilities.shape
        seed, prompt, rollout, position = in_response.nonzero(as_tuple=True)  # row-major: the sums' order
        weights = self.token_weights(in_response)[seed, prompt, rollout, position]
        coefficient = weights * advantages[seed, prompt, rollout]
        rows = coefficient[:, None] * probabilities[seed, prompt, rollout, position]
        rows[torch.arange(len(rows)), tokens[seed, prompt, rollout, position]] -= coefficient
        state = states[seed, prompt, rollout, position]
        habit_index = (seed * T + position) * (V + 1) + state
        knowledge_index = (seed * P + prompt) * (V + 1) + state
        habit = torch.zeros(S * T * (V + 1), V, dtype=torch.float64).index_add_(0, habit_index, rows)
        knowledge = torch.zeros(S * P * (V + 1), V, dtype=torch.float64).index_add_(0, knowledge_index, rows)
        return habit.view_as(self.habit), knowledge.view_as(self.knowledge)

    def _optimizer_step(self, gradients) -> None:
        learning_rate = self.config.learning_rate
        parameters = (self.habit, self.knowledge)
        if self.config.optimizer == "sgd":
            for parameter, gradient in zip(parameters, gradients):
                parameter.sub_(learning_rate * gradient)
            return
        self._adam_steps += 1
        beta1, beta2 = _ADAM_BETAS
        correction1 = 1 - beta1**self._adam_steps
        correction2 = 1 - beta2**self._adam_steps
        for parameter, gradient, (first, second) in zip(parameters, gradients, self._moments):
            first.mul_(beta1).add_(gradient, alpha=1 - beta1)
            second.mul_(beta2).addcmul_(gradient, gradient, value=1 - beta2)
            denominator = (second / correction2).sqrt_().add_(_ADAM_EPS)
            parameter.addcdiv_(first, denominator, value=-learning_rate / correction1)

    def update(self, tokens, states, in_response, advantages, sampling_probabilities) -> None:
        """``inner_epochs`` optimizer steps on one sampled batch (ratio against the sampling policy)."""
        for epoch in range(self.config.inner_epochs):
            if epoch == 0:  # the parameters are still the sampling ones: ρ = 1 exactly
                self._optimizer_step(self.response_gradients(tokens, states, in_response, advantages,
                                                             sampling_probabilities))
                continue
            current = torch.softmax(self.token_logits(states), dim=-1)
            gradient = self.logit_gradient(tokens, in_response, advantages, current, sampling_probabilities)
            self._optimizer_step(self.parameter_gradients(gradient, states))

    def step(self, step: int) -> dict[str, torch.Tensor]:
        """Sample, score, compute advantages, update; returns this step's metrics (see :class:`BenchTrace`)."""
        tokens, states, in_response, probabilities = self.sample(step)
        graded, paid, lengths = self.score(tokens, in_response)
        advantages = self.advantages(paid, lengths)
        metrics = batch_metrics(graded, paid, lengths, advantages, self._hash_positions)
        self.update(tokens, states, in_response, advantages, probabilities)
        return metrics

    def run(self, steps: int | None = None) -> BenchTrace:
        """Train for ``steps`` (default ``config.steps``) and return the metrics of every step."""
        return run_steps(self.step, self.config.steps if steps is None else steps)


__all__ = ["SequenceBench"]
