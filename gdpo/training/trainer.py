"""TRL's ``GRPOTrainer`` with the advantage taken from the suite's estimator registry.

The subclass is minimal: it keeps every part of TRL (generation, rewards, loss, logging) and changes
one thing — after TRL has scored a generation batch, the advantage is recomputed with
:func:`gdpo.advantages.compute_advantages` from the per-reward rewards TRL gathered, so every
registered method (``grpo``, ``grpo_nostd``, ``gdpo``, ``gdpo_nobn``, ``gdpo_nostd``, …) and convention
trains. It also logs the live form of claims C1/C2 (distinct advantage values) and generation throughput.

With ``fast_generation=True`` the rollouts are sampled by :class:`gdpo.generation.rollout.RolloutEngine`
(a bfloat16 copy of the policy, refreshed after every optimizer step) instead of ``generate``; everything
else — rewards, advantages, the loss on the float32 policy — is TRL's. With ``pack_prompts=True`` each
micro-batch is scored as one packed sequence that holds a group's shared prompt once
(:mod:`gdpo.training.packing`: the same log-probabilities and gradients as TRL's padded rows), and
micro-batches are cut along group boundaries so that they share prompts.

With ``advantage_audit_dir`` set, every process appends what it trains on to
``<advantage_audit_dir>/advantages.process<k>.jsonl`` (see :meth:`RegistryGRPOTrainer._write_advantage_audit`),
so that a multi-process run can be checked against the single-process computation on the gathered batch.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import torch
from trl import GRPOTrainer
from trl.trainer.utils import split_tensor_dict

from gdpo.advantages import compute_advantages, distinct_advantage_counts, get_convention, get_estimator
from gdpo.methods import Method

#: TRL's built-in advantage path that matches a registry method (used for TRL's own logged statistics
#: and by the equivalence test); methods without one run TRL's default path, whose result is replaced.
TRL_BUILTIN_EQUIVALENT = {
    Method.GRPO: {"multi_objective_aggregation": "sum_then_normalize", "scale_rewards": "group"},
    Method.GRPO_NOSTD: {"multi_objective_aggregation": "sum_then_normalize", "scale_rewards": "none"},
    Method.GDPO: {"multi_objective_aggregation": "normalize_then_sum", "scale_rewards": "group"},
}


def _causal_lm(model):
    """The causal LM inside a PEFT wrapper (LoRA layers injected in place), or ``model`` itself."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _take_rows(value, order: torch.Tensor):
    """``value``'s rows in ``order`` (tensors along dim 0, lists by index; scalars and ``None`` as they are)."""
    if value is None or (isinstance(value, torch.Tensor) and value.ndim == 0):
        return value
    if isinstance(value, torch.Tensor):
        return value[order.to(value.device)]
    return [value[i] for i in order.tolist()]


class RegistryGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose advantages come from ``gdpo.advantages``.

    Args:
        advantage_method: a registered method name.
        advantage_convention: a registered convention name (default ``"trl"``).
        fast_generation: sample rollouts with the bfloat16 :class:`~gdpo.generation.rollout.RolloutEngine`
            (single process, no vLLM; ``ValueError`` at construction if the model or sampling settings are
            outside what the engine implements).
        pack_prompts: score each micro-batch as one packed sequence with each shared prompt once, and cut
            micro-batches along group boundaries (``ValueError`` at construction for a model, attention
            implementation or setting that packing does not cover).
        completion_diagnostics: a task family's ``completion_diagnostics(completions, **columns)``
            (name → per-completion 1.0/0.0/NaN); the batch means over all processes are logged per step as
            ``diagnostics/<name>`` (NaN entries left out), so a policy that stops calling tools, answering
            or writing code shows in the metrics while it trains.
        advantage_audit_dir: a directory for the per-process advantage audit (off when ``None``, the
            default): one JSON line per generation batch and process, see :meth:`_write_advantage_audit`.
        *args, **kwargs: as for ``trl.GRPOTrainer``; ``args.reward_weights`` are the registry's weights.
    """

    def __init__(self, *args, advantage_method: str, advantage_convention: str = "trl", fast_generation: bool = False,
                 pack_prompts: bool = False, completion_diagnostics=None, advantage_audit_dir=None, **kwargs):
        get_estimator(advantage_method)  # unknown names fail before any model is loaded
        self.advantage_method = advantage_method
        self.advantage_audit_dir = Path(advantage_audit_dir) if advantage_audit_dir is not None else None
        self.advantage_convention = get_convention(advantage_convention)
        self._captured_rewards: torch.Tensor | None = None
        self.completion_diagnostics = completion_diagnostics
        self._generation_seconds = 0.0
        self._generated_tokens = 0
        super().__init__(*args, **kwargs)
        self.rollout_engine = self._make_rollout_engine() if fast_generation else None
        self.pack_prompts = pack_prompts
        if pack_prompts:
            self._check_packing()

    def _check_packing(self):
        from gdpo.training.packing import packing_unsupported_reason

        reason = packing_unsupported_reason(_causal_lm(self.accelerator.unwrap_model(self.model)))
        if reason is None and self._entropy_bonus_enabled:
            reason = "an entropy bonus (packed entropies carry no gradient)"
        if reason is None and self.aux_loss_enabled:
            reason = "a mixture-of-experts auxiliary loss"
        if reason is None and self.loss_type == "bnpo":
            reason = "loss_type 'bnpo' (it normalises per micro-batch, so group-aligned micro-batches change it)"
        if reason is not None:
            raise ValueError(f"pack_prompts does not cover {reason}; set `pack_prompts: false` to score padded rows.")

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **multimodal):
        from gdpo.training.packing import packed_log_probs, packing_obstacle

        if (not self.pack_prompts or compute_aux_loss or any(value is not None for value in multimodal.values())
                or packing_obstacle(input_ids, attention_mask, logits_to_keep) is not None):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **multimodal)
        causal_lm = _causal_lm(self.accelerator.unwrap_model(model))
        batch_size = batch_size or input_ids.size(0)
        log_probs, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):
            with self.accelerator.autocast():
                chunk_log_probs, chunk_entropies = packed_log_probs(
                    causal_lm, input_ids[start:start + batch_size], attention_mask[start:start + batch_size],
                    logits_to_keep, temperature=self.temperature, compute_entropy=compute_entropy,
                    head_in_float32=self.args.cast_lm_head_to_fp32)
            log_probs.append(chunk_log_probs)
            entropies.append(chunk_entropies)
        return torch.cat(log_probs), (torch.cat(entropies) if compute_entropy else None), None

    def _prepare_inputs(self, generation_batch):
        if not (self.pack_prompts and self.model.training):
            return super()._prepare_inputs(generation_batch)
        from gdpo.training.packing import group_preserving_permutation

        # TRL's buffering, with a shuffle that keeps each group's rows together, so that a micro-batch holds
        # whole groups (or parts of one) and packing shares their prompt. Under GRPO's per-sequence loss the
        # gradient of an optimizer step does not depend on how its rows are cut into micro-batches.
        generate_every = self.args.steps_per_generation * self.num_iterations
        if self._step % generate_every == 0 or self._buffered_inputs is None:
            batch = self._generate_and_score_completions(generation_batch)
            rows = batch["completion_ids"].shape[0]
            order = group_preserving_permutation(rows, self.num_generations) if rows % self.num_generations == 0 \
                else torch.randperm(rows)
            batch = {key: _take_rows(value, order) for key, value in batch.items()}
            self._buffered_inputs = split_tensor_dict(batch, self.args.steps_per_generation)
        return self._buffered_inputs[self._step % self.args.steps_per_generation]

    def _make_rollout_engine(self):
        from gdpo.generation.rollout import RolloutEngine, SamplingSettings

        if self.use_vllm or self.use_transformers_continuous_batching or self.accelerator.num_processes > 1:
            raise ValueError("fast_generation runs in a single process without vLLM or continuous batching; "
                             "set `fast_generation: false` for multi-process or vLLM runs.")
        if self.accelerator.device.type != "cpu":
            raise ValueError(f"fast_generation is the CPU rollout engine, and this run trains on "
                             f"{self.accelerator.device}; set `fast_generation: false` (generate() or vLLM on "
                             "the GPU).")
        self._sampling_settings = SamplingSettings.from_generation_config(self.generation_config)
        config = _causal_lm(self.accelerator.unwrap_model(self.model)).config
        return RolloutEngine(config, batch_size_hint=self.args.generation_batch_size)

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        if self.rollout_engine is None or images is not None or multimodal_fields:
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                 has_tool_images=has_tool_images)
        if self.rollout_engine.loaded_version != self.state.global_step:
            self.rollout_engine.load_from(self.accelerator.unwrap_model(self.model), version=self.state.global_step)
        completion_ids = self.rollout_engine.generate(
            prompt_ids, self.max_completion_length, self.eos_token_ids, self._tokenizer.pad_token_id,
            self._sampling_settings,
        )
        return completion_ids, None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._captured_rewards = rewards_per_func  # (B_global, n), gathered over processes, NaN = None
        if self.completion_diagnostics is not None:
            self._log_completion_diagnostics(inputs, completions, completion_ids_list)
        return rewards_per_func

    def _log_completion_diagnostics(self, inputs, completions, completion_ids_list):
        columns = {key: [example[key] for example in inputs] for key in inputs[0]
                   if key not in ("prompt", "completion", "completion_ids")}
        indicators = self.completion_diagnostics(completions=completions, completion_ids=completion_ids_list,
                                                 **columns)
        names = sorted(indicators)
        local = torch.tensor([[float(indicators[name][i]) for name in names] for i in range(len(completions))],
                             dtype=torch.float32, device=self.accelerator.device).reshape(len(completions), len(names))
        gathered = self.accelerator.gather(local)  # (B_global, k): every process logs the same batch means
        metrics = self._metrics["train" if self.model.training else "eval"]
        for k, name in enumerate(names):
            column = gathered[:, k]
            valid = ~torch.isnan(column)
            if valid.any():
                metrics[f"diagnostics/{name}"].append(column[valid].mean().item())

    def _generate(self, prompts: list):
        start = time.perf_counter()
        result = super()._generate(prompts)
        self._generation_seconds = time.perf_counter() - start
        completion_ids = result[1]
        local = torch.tensor(sum(len(ids) for ids in completion_ids), device=self.accelerator.device)
        self._generated_tokens = int(self.accelerator.gather(local).sum().item())
        return result

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        if num_generations is None or num_generations < 2:  # eval with one sample: nothing to normalise
            return output

        rewards = self._captured_rewards
        lengths = self.accelerator.gather(output["completion_mask"].sum(dim=1))
        advantages = compute_advantages(
            rewards.float(),
            num_generations,
            self.advantage_method,
            weights=self.reward_weights.to(rewards.device),
            convention=self.advantage_convention,
            response_lengths=lengths,
        )
        local_size = output["completion_ids"].shape[0]
        index = self.accelerator.process_index
        output["advantages"] = advantages[index * local_size:(index + 1) * local_size].to(
            device=output["advantages"].device, dtype=output["advantages"].dtype
        )
        if self.advantage_audit_dir is not None:
            self._write_advantage_audit(mode, num_generations, rewards, lengths, output["advantages"])
        # The completions table shows the advantages that train, not TRL's replaced ones.
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages.tolist())

        metrics = self._metrics[mode]
        per_group, in_batch = distinct_advantage_counts(advantages.view(-1, num_generations))
        metrics["advantages/mean"].append(advantages.mean().item())
        metrics["advantages/std"].append(advantages.std().item() if advantages.numel() > 1 else 0.0)
        metrics["advantages/distinct_per_group"].append(per_group.double().mean().item())
        metrics["advantages/distinct_in_batch"].append(float(in_batch))
        grouped = rewards.view(-1, num_generations, rewards.shape[1])
        for k, name in enumerate(self.reward_func_names):
            column = grouped[:, :, k]
            valid = ~torch.isnan(column)
            low = torch.where(valid, column, torch.inf).amin(dim=1)
            high = torch.where(valid, column, -torch.inf).amax(dim=1)
            metrics[f"rewards/{name}/frac_zero_std_groups"].append(((low == high) | ~valid.any(dim=1)).float().mean().item())
            metrics[f"rewards/{name}/frac_none"].append((~valid).float().mean().item())
        if mode == "train" and self._generation_seconds > 0:
            metrics["generation/seconds"].append(self._generation_seconds)
            metrics["generation/tokens_per_second"].append(self._generated_tokens / self._generation_seconds)
        return output

    def _write_advantage_audit(self, mode: str, num_generations: int, rewards: torch.Tensor, lengths: torch.Tensor,
                               local_advantages: torch.Tensor) -> None:
        """Append this process's record of one generation batch to ``advantages.process<k>.jsonl``.

        Each process writes its own file (no shared file, no locking), one JSON line per generation batch:

        - ``step``: the optimizer step (numbered as in ``metrics.jsonl``) whose first micro-batch trains on
          the batch; ``mode``: ``"train"`` or ``"eval"``;
        - ``process_index``, ``num_processes``; ``rows``: ``[start, end)`` of this process's rows in the
          gathered batch;
        - ``method``, ``convention``, ``num_generations``, ``reward_weights``: the inputs of
          :func:`gdpo.advantages.compute_advantages` besides the rewards;
        - ``rewards``: reward name → the gathered batch's rewards (every process's rows, in process order;
          ``null`` = no reward); ``completion_lengths``: the gathered completion lengths in tokens;
        - ``advantages``: the advantages this process trains on (its rows).

        So ``compute_advantages(rewards, num_generations, method, reward_weights, convention,
        completion_lengths)[start:end]`` equals ``advantages`` on every process. A resumed run appends:
        the steps after its checkpoint appear again, and a step's last record is the one that trained.
        """
        index = self.accelerator.process_index
        start = index * local_advantages.shape[0]

        def numbers(values: torch.Tensor) -> list:
            return [None if math.isnan(value) else value for value in values.double().cpu().tolist()]

        record = {
            "step": self.state.global_step + 1,
            "mode": mode,
            "process_index": index,
            "num_processes": self.accelerator.num_processes,
            "rows": [start, start + local_advantages.shape[0]],
            "method": self.advantage_method,
            "convention": self.advantage_convention.name,
            "num_generations": num_generations,
            "reward_weights": self.reward_weights.double().cpu().tolist(),
            "rewards": {name: numbers(rewards[:, k]) for k, name in enumerate(self.reward_func_names)},
            "completion_lengths": [int(value) for value in lengths.cpu().tolist()],
            "advantages": numbers(local_advantages),
        }
        self.advantage_audit_dir.mkdir(parents=True, exist_ok=True)
        with (self.advantage_audit_dir / f"advantages.process{index}.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
