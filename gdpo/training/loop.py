"""The computations of the training loop's own options (:mod:`gdpo.loop_options`): the KL estimators, the KL
in the reward, dynamic sampling's group filter and the assembly of its batch.

Each function is verl's where verl defines the quantity (``verl/trainer/ppo/core_algos.py`` ``kl_penalty``,
``verl/trainer/ppo/ray_trainer.py`` ``apply_kl_penalty``, the DAPO trainer's filter-groups loop), and TRL's
where the term enters TRL's loss (:func:`aggregate_like_trl`); ``tests/test_loop_options.py`` checks them
against vectors computed by verl's own functions and against TRL's own loss.

Shapes: ``B`` rows (completions), ``T`` completion tokens (right-padded, ``mask`` 1 on real tokens), ``n``
rewards, ``G`` rollouts per group, rows grouped contiguously (TRL's layout).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = [
    "aggregate_like_trl",
    "concatenate_rows",
    "groups_with_signal",
    "kl_per_token",
    "refill_prompt_indices",
    "sequence_kl",
]


def kl_per_token(log_probs: torch.Tensor, ref_log_probs: torch.Tensor, estimator: str,
                 clamp: bool = True) -> torch.Tensor:
    """Per-token KL estimate of π against π_ref from the sampled tokens' log-probabilities.

    Args:
        log_probs, ref_log_probs: (B, T) log π and log π_ref of the sampled tokens.
        estimator: ``k1`` = log π − log π_ref (verl ``kl``); ``k2`` = ½(log π − log π_ref)² (verl ``mse``);
            ``k3`` = e^x − x − 1 with x = log π_ref − log π (verl ``low_var_kl``, TRL's loss term).
        clamp: for ``k3``, verl's clamps (x to ±20 before the exponential, the estimate to ±10); TRL's loss
            term has none (``clamp=False``). The other estimators have no clamp in either.

    Returns:
        (B, T), differentiable in ``log_probs``.
    """
    if estimator == "k1":
        return log_probs - ref_log_probs
    if estimator == "k2":
        return 0.5 * (log_probs - ref_log_probs).square()
    if estimator == "k3":
        log_ratio = ref_log_probs - log_probs
        if clamp:
            log_ratio = torch.clamp(log_ratio, min=-20, max=20)
        estimate = torch.exp(log_ratio) - log_ratio - 1
        return torch.clamp(estimate, min=-10, max=10) if clamp else estimate
    raise ValueError(f"Unknown KL estimator {estimator!r}; use k1, k2 or k3.")


def sequence_kl(log_probs: torch.Tensor, ref_log_probs: torch.Tensor, mask: torch.Tensor,
                estimator: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The KL of each rollout as verl puts it in the reward: the per-token estimate (verl's clamps) summed over
    the completion's tokens, and verl's logged mean.

    verl's ``apply_kl_penalty`` sets ``token_level_rewards = token_level_scores − β·KL_t·mask``; an outcome
    advantage (GRPO) sums a rollout's token-level rewards, so its reward becomes R − β Σ_t KL_t.

    Returns:
        ``(per_rollout, token_mean)``: (B,) Σ_t KL_t·mask_t, and the scalar verl logs as
        ``actor/reward_kl_penalty`` (each rollout's masked token mean, averaged over rollouts).
    """
    mask = mask.to(log_probs.dtype)
    kl = kl_per_token(log_probs, ref_log_probs, estimator, clamp=True) * mask
    per_rollout = kl.sum(dim=-1)
    token_mean = (per_rollout / mask.sum(dim=-1).clamp(min=1.0)).mean()
    return per_rollout, token_mean


def groups_with_signal(rewards: torch.Tensor, weights: torch.Tensor, num_generations: int, metric: str,
                       reward_names: list[str] | tuple[str, ...]) -> torch.Tensor:
    """Which groups carry a training signal under dynamic sampling's metric (verl keeps a group iff the
    metric's ``np.std`` over it is > 0; a value is missing where a reward function returned None).

    Args:
        rewards: (B, n) rewards, NaN = no reward; B a multiple of G.
        weights: (n,) reward weights.
        num_generations: G.
        metric: ``reward_sum`` (Σ_k w_k r_k over the rewards a row has; a row with none is left out),
            ``each_reward`` (every reward of non-zero weight on its own: silent only if each is), or a reward's
            name (that column alone). ``auto`` must be resolved first
            (:meth:`gdpo.loop_options.DynamicSampling.resolved_metric`).
        reward_names: the n rewards' names, in column order.

    Returns:
        (B / G,) bool: True where the group varies (at least two values present and not all equal).
    """
    grouped = rewards.reshape(-1, num_generations, rewards.shape[1])
    if metric == "reward_sum":
        present = ~torch.isnan(grouped)
        summed = torch.where(present, grouped * weights.to(grouped), torch.zeros_like(grouped)).sum(dim=2)
        columns = summed.unsqueeze(2)
        valid = present.any(dim=2, keepdim=True)
    elif metric == "each_reward":
        keep = (weights != 0).cpu()
        columns = grouped[:, :, keep]
        valid = ~torch.isnan(columns)
    elif metric in reward_names:
        k = list(reward_names).index(metric)
        columns = grouped[:, :, k:k + 1]
        valid = ~torch.isnan(columns)
    else:
        raise ValueError(f"Unknown dynamic-sampling metric {metric!r}; use reward_sum, each_reward or one of "
                         f"{list(reward_names)}.")
    low = torch.where(valid, columns, torch.inf).amin(dim=1)
    high = torch.where(valid, columns, -torch.inf).amax(dim=1)
    varies = (valid.sum(dim=1) >= 2) & (low != high)  # (P, columns)
    return varies.any(dim=1)


def refill_prompt_indices(dataset_size: int, count: int, seed: int, step: int, round_index: int,
                          process_index: int) -> list[int]:
    """The dataset rows one process generates in a refill round of dynamic sampling.

    A function of its arguments only (a NumPy ``SeedSequence`` of seed, step, round and process): a resumed
    run draws the same prompts without any sampler state in its checkpoint. Rows are drawn without replacement
    within a round (with wrap-around when ``count`` exceeds the dataset), independently of the epoch's sampler.

    Returns:
        ``count`` row indices in ``[0, dataset_size)``.
    """
    if dataset_size < 1 or count < 0:
        raise ValueError(f"refill needs a non-empty dataset and a count ≥ 0, got {dataset_size} rows, {count}.")
    generator = np.random.default_rng(np.random.SeedSequence([seed, step, round_index, process_index]))
    rows: list[int] = []
    while len(rows) < count:
        rows.extend(int(i) for i in generator.permutation(dataset_size)[:count - len(rows)])
    return rows


#: TRL's output keys padded on the left (the prompt), and the ids that pad with the pad token.
_LEFT_PADDED = ("prompt_ids", "prompt_mask")
_TOKEN_IDS = ("prompt_ids", "completion_ids")
#: Per-row keys of TRL 1.16's ``_generate_and_score_completions`` output that dynamic sampling re-assembles.
ROW_KEYS = ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask", "advantages", "old_per_token_logps",
            "importance_sampling_ratio", "sampling_per_token_logps", "ref_per_token_logps", "tool_mask")


def concatenate_rows(parts: list[dict], pad_token_id: int) -> dict:
    """One batch from row subsets of several generation rounds' outputs, re-padded to a common width.

    Args:
        parts: outputs of TRL's ``_generate_and_score_completions`` (already cut to the rows kept), each with
            the same keys; tensors (rows, …) of :data:`ROW_KEYS`; ``num_items_in_batch`` is left out (the
            caller recomputes it for the assembled batch).
        pad_token_id: the tokenizer's pad id (prompt and completion ids); masks and log-probabilities pad
            with 0 (their positions are masked).

    Returns:
        The assembled output (rows in ``parts`` order). ``ValueError`` naming any key it cannot assemble.
    """
    keys = [key for key in parts[0] if key != "num_items_in_batch"]
    unknown = [key for key in keys if key not in ROW_KEYS]
    if unknown:
        raise ValueError(f"dynamic sampling cannot assemble the generation output's keys {unknown} (multimodal "
                         "inputs or a TRL version it does not know); turn `dynamic_sampling` off for this run.")
    assembled = {}
    for key in keys:
        values = [part[key] for part in parts]
        if any(value is None for value in values):
            assembled[key] = None
            continue
        if values[0].ndim == 1:
            assembled[key] = torch.cat(values)
            continue
        width = max(value.shape[1] for value in values)
        pad = pad_token_id if key in _TOKEN_IDS else 0
        padded = []
        for value in values:
            missing = width - value.shape[1]
            if missing:
                filler = value.new_full((value.shape[0], missing, *value.shape[2:]), pad)
                value = torch.cat([filler, value] if key in _LEFT_PADDED else [value, filler], dim=1)
            padded.append(value)
        assembled[key] = torch.cat(padded)
    return assembled


#: TRL loss types whose reduction :func:`aggregate_like_trl` reproduces (tested against TRL's own loss).
KL_TERM_LOSS_TYPES = ("grpo", "sapo", "bnpo", "dr_grpo", "dapo", "cispo")


def aggregate_like_trl(per_token: torch.Tensor, mask: torch.Tensor, loss_type: str, *, training: bool,
                       gradient_accumulation_steps: int, steps_per_generation: int, num_processes: int,
                       num_items_in_batch: torch.Tensor | None, max_completion_length: int) -> torch.Tensor:
    """A per-token term reduced to the loss exactly as TRL 1.16's ``GRPOTrainer._compute_loss`` reduces its
    per-token loss (one micro-batch's share, gradient accumulation included), so that adding β times it equals
    adding β·term to TRL's per-token loss: every reduction is linear.

    Args:
        per_token: (B, T) the term per completion token.
        mask: (B, T) TRL's loss mask (completion mask, times the tool mask where there is one).
        loss_type: TRL's ``loss_type``.
        training: train mode (gradient accumulation applies) or eval.
        gradient_accumulation_steps: TRL's ``current_gradient_accumulation_steps``.
        steps_per_generation, num_processes: TRL's; ``num_items_in_batch``: the generation batch's loss tokens
            over all processes (``dapo``, ``cispo``); ``max_completion_length`` (``dr_grpo``).
    """
    mask = mask.to(per_token.dtype)
    accumulation = gradient_accumulation_steps if training else 1.0
    if loss_type in ("grpo", "sapo"):
        return ((per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean() / accumulation
    if loss_type == "bnpo":
        return (per_token * mask).sum() / mask.sum().clamp(min=1.0) / accumulation
    if loss_type == "dr_grpo":
        return (per_token * mask).sum() / (per_token.size(0) * max_completion_length) / accumulation
    if loss_type in ("dapo", "cispo"):
        normalizer = num_items_in_batch.clamp(min=1.0) / num_processes
        if training:
            normalizer = normalizer * gradient_accumulation_steps / steps_per_generation
        return (per_token * mask).sum() / normalizer
    raise ValueError(f"loss_type {loss_type!r} is not one the KL term is reduced for: {', '.join(KL_TERM_LOSS_TYPES)}.")
