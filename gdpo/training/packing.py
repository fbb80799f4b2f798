"""Shared-prompt packing, the shared-prefix training forward: a GRPO micro-batch scored as one sequence.

The ``num_generations`` completions of a GRPO group share one prompt. TRL scores every row separately,
so a prompt of P tokens is run through the policy (forward and backward) once per completion, padded to
the longest prompt and completion of the micro-batch, and on CPU its LM head scores every position,
prompt and padding included. Packing lays the micro-batch out as one sequence — each distinct prompt
once, followed by the real tokens of each of its completions — with a block attention mask (a completion
sees its prompt and its own earlier tokens, nothing else) and each token's original position id. Every
completion token therefore sees exactly the keys and relative positions it sees in TRL's padded layout,
so the log-probabilities are the same up to float rounding (RoPE depends on relative positions only),
and gradients reach the shared prompt from all its completions, as they do in the padded layout. Only
positions that predict a completion token go through the LM head.

For a tool-calling group (a ~450-token prompt, four ~80-token completions) the policy runs on ~770
tokens instead of 4 × ~550. The attention mask is dense, T × T for T packed tokens: meant for the CPU
scales' short sequences, not for micro-batches of tens of thousands of tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: Attention implementations a boolean (sdpa) or additive (eager) 4-D mask is passed to as is.
PACKABLE_ATTENTION = ("sdpa", "eager")
#: Model families whose forward the packed call is checked against (tests/test_packing.py).
PACKABLE_MODEL_TYPES = ("llama", "qwen2")


@dataclass(frozen=True)
class PackedRows:
    """A micro-batch of B rows laid out as one sequence of T tokens.

    Attributes:
        input_ids: (1, T) token ids: each distinct prompt once, then its rows' completions.
        position_ids: (1, T) each token's column in its original row, less the row's first prompt column.
        allowed: (T, T) bool, True where query i may attend to key j.
        predictor_index: (N,) packed position whose hidden state predicts each scored token.
        target_ids: (N,) the scored completion tokens.
        rows, columns: (N,) where each scored token sits in the (B, C) completion grid.
    """

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    allowed: torch.Tensor
    predictor_index: torch.Tensor
    target_ids: torch.Tensor
    rows: torch.Tensor
    columns: torch.Tensor


def packing_obstacle(input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int) -> str | None:
    """Why a padded micro-batch cannot be packed exactly, or ``None`` if it can.

    Packing needs left-padded prompts (real tokens end at the last prompt column) and completions whose
    real tokens are a prefix of the completion columns (TRL's layout).
    """
    prompt_mask = attention_mask[:, : input_ids.shape[1] - logits_to_keep].bool()
    completion_mask = attention_mask[:, input_ids.shape[1] - logits_to_keep:].bool()
    if prompt_mask.shape[1] == 0 or not bool(prompt_mask[:, -1].all()):
        return "a prompt does not end at the last prompt column (prompts must be left-padded)"
    if bool((prompt_mask[:, 1:] < prompt_mask[:, :-1]).any()):
        return "a prompt has padding between its tokens"
    if bool((completion_mask[:, 1:] > completion_mask[:, :-1]).any()):
        return "a completion has padding before one of its tokens"
    return None


def pack_rows(input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int) -> PackedRows:
    """Lay out a padded micro-batch as one packed sequence (see the module docstring).

    Args:
        input_ids: (B, P + C) prompt columns then completion columns, as TRL builds them.
        attention_mask: (B, P + C) 1 for real tokens.
        logits_to_keep: C, the number of completion columns.
    """
    reason = packing_obstacle(input_ids, attention_mask, logits_to_keep)
    if reason is not None:
        raise ValueError(f"cannot pack this micro-batch: {reason}")
    prompt_columns = input_ids.shape[1] - logits_to_keep
    mask = attention_mask.bool().cpu()
    ids = input_ids.cpu()
    groups: dict[tuple[int, ...], list[int]] = {}
    for row in range(ids.shape[0]):
        groups.setdefault(tuple(ids[row, :prompt_columns][mask[row, :prompt_columns]].tolist()), []).append(row)

    tokens, positions, group_of, row_of = [], [], [], []
    predictors, targets, rows, columns = [], [], [], []
    for group, (prompt, members) in enumerate(groups.items()):
        start = prompt_columns - len(prompt)  # the first real prompt column: the position-id offset
        tokens.extend(prompt)
        positions.extend(range(len(prompt)))
        group_of.extend([group] * len(prompt))
        row_of.extend([-1] * len(prompt))
        last_prompt_token = len(tokens) - 1
        for row in members:
            completion = ids[row, prompt_columns:][mask[row, prompt_columns:]].tolist()
            first = len(tokens)
            tokens.extend(completion)
            positions.extend(range(prompt_columns - start, prompt_columns - start + len(completion)))
            group_of.extend([group] * len(completion))
            row_of.extend([row] * len(completion))
            if not completion:
                continue
            # Token c of a completion is predicted by the token before it: the prompt's last one for c = 0.
            predictors.extend([last_prompt_token, *range(first, first + len(completion) - 1)])
            targets.extend(completion)
            rows.extend([row] * len(completion))
            columns.extend(range(len(completion)))

    group_of_t = torch.tensor(group_of)
    row_of_t = torch.tensor(row_of)
    index = torch.arange(len(tokens))
    allowed = ((index[None, :] <= index[:, None]) & (group_of_t[None, :] == group_of_t[:, None])
               & ((row_of_t[None, :] == -1) | (row_of_t[None, :] == row_of_t[:, None])))
    device = input_ids.device

    def as_long(values: list[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=device)

    return PackedRows(
        input_ids=as_long(tokens)[None, :],
        position_ids=as_long(positions)[None, :],
        allowed=allowed.to(device),
        predictor_index=as_long(predictors),
        target_ids=as_long(targets),
        rows=as_long(rows),
        columns=as_long(columns),
    )


def packing_unsupported_reason(causal_lm) -> str | None:
    """Why ``causal_lm`` (a transformers causal LM, LoRA-wrapped or not) cannot be scored packed."""
    config = causal_lm.config
    if config.model_type not in PACKABLE_MODEL_TYPES:
        return f"model type {config.model_type!r} (packing supports {', '.join(PACKABLE_MODEL_TYPES)})"
    attention = getattr(config, "_attn_implementation", None)
    if attention not in PACKABLE_ATTENTION:
        return f"attention implementation {attention!r} (packing supports {', '.join(PACKABLE_ATTENTION)})"
    return None


def packed_log_probs(causal_lm, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int, *,
                     temperature: float = 1.0, compute_entropy: bool = False,
                     head_in_float32: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probabilities (and entropies) of the completion tokens, from one packed forward.

    Args:
        causal_lm: the unwrapped causal LM (LoRA layers injected in place are used as they are).
        input_ids, attention_mask: (B, P + C) as TRL builds them; logits_to_keep: C.
        temperature: the logits are divided by it, as in TRL's scoring.
        compute_entropy: also return the entropy of each scored position's distribution (no gradient).
        head_in_float32: run the LM head in float32 outside autocast (TRL's ``cast_lm_head_to_fp32``).

    Returns:
        (B, C) log-probabilities with gradient, and (B, C) entropies or ``None``; 0 at padding.
    """
    packed = pack_rows(input_ids, attention_mask, logits_to_keep)
    backbone = causal_lm.base_model
    attention = causal_lm.config._attn_implementation
    mask = packed.allowed[None, None]
    if attention == "eager":  # eager attention adds the mask to the scores
        mask = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device).masked_fill(~mask, torch.finfo(torch.float32).min)
    hidden = backbone(input_ids=packed.input_ids, attention_mask=mask, position_ids=packed.position_ids,
                      use_cache=False).last_hidden_state[0]
    hidden = hidden[packed.predictor_index]
    head = causal_lm.get_output_embeddings()
    if head_in_float32:
        with torch.autocast(hidden.device.type, enabled=False):
            logits = head(hidden.float())
    else:
        logits = head(hidden)
    # In place where autograd allows it: a (N, vocab) float32 tensor is ~75 MB for a tool-calling group.
    log_probs = logits.float().div_(temperature).log_softmax(dim=-1)
    shape = (input_ids.shape[0], logits_to_keep)
    per_token = log_probs.new_zeros(shape).index_put((packed.rows, packed.columns),
                                                     log_probs.gather(-1, packed.target_ids[:, None]).squeeze(-1))
    entropies = None
    if compute_entropy:
        with torch.no_grad():
            entropy = -log_probs.exp().mul_(log_probs).sum(dim=-1)
            entropies = entropy.new_zeros(shape).index_put((packed.rows, packed.columns), entropy)
    return per_token, entropies


def group_preserving_permutation(batch_size: int, group_size: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random order of ``batch_size`` rows that shuffles whole groups of ``group_size`` consecutive rows."""
    if batch_size % group_size:
        raise ValueError(f"batch of {batch_size} rows is not a whole number of groups of {group_size}")
    order = torch.randperm(batch_size // group_size, generator=generator)
    return (order[:, None] * group_size + torch.arange(group_size)).flatten()
