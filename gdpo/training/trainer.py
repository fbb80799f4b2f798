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

With ``loop_options`` (:class:`gdpo.loop_options.LoopOptions`, the config's ``dynamic_sampling``,
``kl_estimator`` and ``kl_in_reward``) the loop does what verl does where TRL has no option:

- **dynamic sampling**: groups without signal are dropped and more prompts generated until each process holds
  as many groups with signal as its share of the generation batch (:meth:`RegistryGRPOTrainer._dynamically_sampled`);
  the advantage is computed on the assembled batch. Each process fills its own share from its own rollouts
  (verl fills the whole batch in order; with one process the two are the same). TRL's logs of a step (rewards,
  lengths, the completions table) are those of its first round: one generation batch of fresh prompts per
  record, unbiased by the filter; the ``dynamic_sampling/…`` metrics count the rounds and groups;
- **another KL estimator in the loss** (k2): TRL's loss is computed without its k3 term, and β times the chosen
  estimate, reduced as TRL reduces its per-token loss (:func:`gdpo.training.loop.aggregate_like_trl`), is
  added;
- **the KL in the reward**: the reference's log-probabilities TRL computes (β > 0) and the policy's at
  generation give each rollout's β Σ_t KL_t, subtracted from its summed reward before the advantage (as an
  extra reward column of weight 1) for the methods that sum first; the loss has no KL term.

Every step logs ``training_signal/silent_groups`` (the share of the trained batch's groups without signal under
dynamic sampling's metric, ``auto`` when it is off), ``training_signal/silent_groups_generated`` (the same share
among every group the step generated) and ``training_signal/zero_advantage_batch`` (1 when every advantage of
the batch is 0: no policy-gradient update).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import time
from pathlib import Path

import torch
from trl import GRPOTrainer
from trl.trainer.utils import split_tensor_dict

from gdpo.advantages import (
    compute_advantages,
    distinct_advantage_counts,
    get_convention,
    get_estimator,
    resolve_estimator,
)
from gdpo.loop_options import FILTER_METRICS, DynamicSampling, LoopOptions
from gdpo.methods import Method
from gdpo.training.loop import (
    KL_TERM_LOSS_TYPES,
    aggregate_like_trl,
    concatenate_rows,
    groups_with_signal,
    kl_per_token,
    refill_prompt_indices,
    sequence_kl,
)

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


@dataclasses.dataclass
class _Round:
    """One generation round: TRL's output (this process's rows) and the gathered batch's rewards (B_global, n),
    completion lengths (B_global,) and, with the KL in the reward, β Σ_t KL_t per rollout (B_global,)."""

    output: dict
    rewards: torch.Tensor
    lengths: torch.Tensor
    penalty: torch.Tensor | None


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
        advantage_options: the method's options (``{"clip": 3.0}``; :class:`gdpo.methods.MethodOption`), checked
            at construction; None: the method as declared.
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
        loop_options: the loop's options beyond TRL's (default: none; ``ValueError`` at construction for
            settings they do not cover, e.g. a KL option with ``beta`` 0).
        *args, **kwargs: as for ``trl.GRPOTrainer``; ``args.reward_weights`` are the registry's weights.
    """

    def __init__(self, *args, advantage_method: str, advantage_convention: str = "trl", fast_generation: bool = False,
                 pack_prompts: bool = False, completion_diagnostics=None, advantage_audit_dir=None,
                 loop_options: LoopOptions | None = None, advantage_options: dict | None = None, **kwargs):
        # Unknown names and options fail before any model is loaded.
        self.advantage_options = get_estimator(advantage_method).method.check_options(advantage_options)
        self.loop_options = loop_options or LoopOptions()
        # The estimator of a KL loss term computed here instead of by TRL (None: TRL's own k3 term, or none).
        self._loss_kl_estimator = (self.loop_options.kl_estimator
                                   if self.loop_options.changes_the_kl and not self.loop_options.kl_in_reward else None)
        self._capture_loss_log_probs = False
        self._loss_log_probs: torch.Tensor | None = None
        self._generation_step, self._generation_in_step = -1, 0
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
        self._check_loop_options()

    def _check_loop_options(self):
        options = self.loop_options
        if options.changes_the_kl:
            what = "kl_in_reward" if options.kl_in_reward else f"kl_estimator {options.kl_estimator}"
            if self.beta == 0.0:
                raise ValueError(f"{what} needs a KL coefficient; set `training.beta:` (β > 0).")
            if self.args.use_liger_kernel:
                raise ValueError(f"{what} is computed outside Liger's fused loss; set use_liger_kernel false.")
            if self._loss_kl_estimator is not None and self.loss_type not in KL_TERM_LOSS_TYPES:
                raise ValueError(f"{what} adds its KL term for loss_type {', '.join(KL_TERM_LOSS_TYPES)}, not "
                                 f"{self.loss_type!r}; set one of them.")
        if options.dynamic_sampling is not None:
            local_rows = self.args.per_device_train_batch_size * self.args.steps_per_generation
            if local_rows % self.num_generations:
                raise ValueError(
                    f"dynamic_sampling keeps or drops whole groups on each process, but each process generates "
                    f"{local_rows} completions (per_device_train_batch_size × steps_per_generation), not a multiple "
                    f"of num_generations {self.num_generations}; make it one.")
            if not hasattr(self.train_dataset, "__len__"):
                raise ValueError("dynamic_sampling draws refill prompts by index; give a map-style dataset.")
            metric = options.dynamic_sampling.metric
            if metric not in FILTER_METRICS and metric not in self.reward_func_names:
                raise ValueError(f"dynamic_sampling.metric {metric!r} is neither one of {', '.join(FILTER_METRICS)} "
                                 f"nor a reward of this trainer ({', '.join(self.reward_func_names)}).")

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
        result = self._log_probs_and_entropies(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                                               compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss,
                                               **multimodal)
        if self._capture_loss_log_probs:  # the loss's own forward pass, for a KL term computed here
            self._loss_log_probs = result[0]
        return result

    def _log_probs_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
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

    def _compute_loss(self, model, inputs):
        if self._loss_kl_estimator is None and not self.loop_options.kl_in_reward:
            return super()._compute_loss(model, inputs)
        # TRL's loss without its k3 term (β read as 0), from one forward pass whose log-probabilities are kept.
        beta, self.beta = self.beta, 0.0
        self._capture_loss_log_probs, self._loss_log_probs = True, None
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self.beta, self._capture_loss_log_probs = beta, False
        if self.loop_options.kl_in_reward:  # the KL went into the reward
            return loss
        log_probs, self._loss_log_probs = self._loss_log_probs, None
        mask = inputs["completion_mask"] if inputs.get("tool_mask") is None \
            else inputs["completion_mask"] * inputs["tool_mask"]
        kl = kl_per_token(log_probs, inputs["ref_per_token_logps"], self._loss_kl_estimator, clamp=False)
        if self.args.use_bias_correction_kl:
            # TRL's importance weight on its KL term (TRL's default; verl has none: the paper configs turn it off).
            old = inputs.get("old_per_token_logps")
            log_ratio = log_probs - (log_probs.detach() if old is None else old)
            if self.importance_sampling_level == "sequence":
                log_ratio = (log_ratio * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1.0)
            kl = kl * torch.exp(log_ratio)
        mode = "train" if self.model.training else "eval"
        term = aggregate_like_trl(
            kl, mask, self.loss_type, training=mode == "train",
            gradient_accumulation_steps=self.current_gradient_accumulation_steps,
            steps_per_generation=self.args.steps_per_generation, num_processes=self.accelerator.num_processes,
            num_items_in_batch=inputs.get("num_items_in_batch"), max_completion_length=self.max_completion_length)
        mask = mask.to(kl.dtype)
        totals = self.accelerator.reduce(torch.stack([(kl.detach() * mask).sum(), mask.sum()]), reduction="sum")
        self._metrics[mode]["kl"].append((totals[0] / totals[1].clamp(min=1.0)).item())
        return loss + beta * term

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
        # Summed over a step's generation rounds (reset by _generate_and_score_completions).
        self._generation_seconds += time.perf_counter() - start
        completion_ids = result[1]
        local = torch.tensor(sum(len(ids) for ids in completion_ids), device=self.accelerator.device)
        self._generated_tokens += int(self.accelerator.gather(local).sum().item())
        return result

    def _generate_and_score_completions(self, inputs):
        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        self._generation_seconds, self._generated_tokens = 0.0, 0
        if mode == "train":  # the index of this generation batch within its optimizer step
            step = self.state.global_step
            self._generation_in_step = self._generation_in_step + 1 if step == self._generation_step else 0
            self._generation_step = step
        first = self._scored_round(inputs, mode)
        if num_generations is None or num_generations < 2:  # eval with one sample: nothing to normalise
            return first.output
        self._log_reward_spread(first.rewards, num_generations, mode)
        if self.loop_options.dynamic_sampling is not None and mode == "train":
            output = self._dynamically_sampled(first, num_generations)
        else:
            output = first.output
            self._set_advantages(output, mode, num_generations, first.rewards, first.lengths, first.penalty)
            if mode == "train":  # without dynamic sampling, what trains is what was generated
                metrics = self._metrics[mode]
                metrics["training_signal/silent_groups_generated"].append(metrics["training_signal/silent_groups"][-1])
        if mode == "train" and self._generation_seconds > 0:
            metrics = self._metrics[mode]
            metrics["generation/seconds"].append(self._generation_seconds)
            metrics["generation/tokens_per_second"].append(self._generated_tokens / self._generation_seconds)
        return output

    def _scored_round(self, inputs, mode: str) -> _Round:
        """TRL's generation and scoring of ``inputs``, with the gathered rewards and lengths (and the KL
        penalty of each rollout when the KL goes into the reward)."""
        output = super()._generate_and_score_completions(inputs)
        rewards = self._captured_rewards  # (B_global, n), gathered over processes, NaN = None
        lengths = self.accelerator.gather(output["completion_mask"].sum(dim=1))
        penalty = self._reward_kl_penalty(output, mode) if self.loop_options.kl_in_reward else None
        return _Round(output, rewards, lengths, penalty)

    def _normalises_each_reward(self, num_rewards: int) -> bool:
        """The method (as it runs with this many rewards) normalises each reward: the GDPO family."""
        return resolve_estimator(self.advantage_method, self.advantage_convention, num_rewards).grpo_counterpart \
            is not None

    def _policy_log_probs(self, output: dict, mode: str) -> torch.Tensor:
        """(B_local, T) log-probabilities of the completions under the policy that generated them (the model as
        it is: no update happens between generation and this call)."""
        input_ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention_mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        batch_size = self.args.per_device_train_batch_size if mode == "train" else self.args.per_device_eval_batch_size
        with torch.no_grad():
            log_probs, _, _ = self._get_per_token_logps_and_entropies(
                self.model, input_ids, attention_mask, output["completion_ids"].size(1), batch_size=batch_size)
        return log_probs

    def _reward_kl_penalty(self, output: dict, mode: str) -> torch.Tensor:
        """(B_global,) β Σ_t KL_t of each rollout, verl's ``apply_kl_penalty`` with the policy's log-probabilities
        at generation (verl's ``old_log_probs``) against the reference's; the reference's are then dropped
        from ``output`` (the loss has no KL term)."""
        policy = output.get("old_per_token_logps")
        if policy is None:
            policy = self._policy_log_probs(output, mode)
        reference = output.pop("ref_per_token_logps")
        per_rollout, token_mean = sequence_kl(policy.float(), reference.float(), output["completion_mask"],
                                              self.loop_options.kl_estimator)
        self._metrics[mode]["kl_in_reward/kl"].append(self.accelerator.gather(token_mean.reshape(1)).mean().item())
        penalty = self.beta * self.accelerator.gather(per_rollout)
        self._metrics[mode]["kl_in_reward/penalty"].append(penalty.mean().item())
        return penalty

    def _set_advantages(self, output: dict, mode: str, num_generations: int, rewards: torch.Tensor,
                        lengths: torch.Tensor, penalty: torch.Tensor | None, show: bool = True) -> torch.Tensor:
        """Replace ``output["advantages"]`` by the registry's advantages of the gathered batch (``rewards``:
        (B_global, n)), log their statistics and return them (B_global,). ``show``: the completions table
        shows them (dynamic sampling shows its first round instead)."""
        names = list(self.reward_func_names)
        weights = self.reward_weights.to(rewards.device)
        advantage_rewards = rewards.float()
        method = self.advantage_method
        if penalty is not None and not self._normalises_each_reward(rewards.shape[1]):
            # verl subtracts the KL from the token-level rewards an outcome advantage sums: one more reward
            # column of weight 1, under the method as it runs with the run's rewards (a per-reward method that
            # falls back to GRPO with one reward stays GRPO with the extra column). Where the convention leaves
            # a rollout without rewards out of every statistic, its penalty is left missing too.
            method = resolve_estimator(self.advantage_method, self.advantage_convention, rewards.shape[1]).name
            column = -penalty.to(advantage_rewards)
            if self.advantage_convention.missing_rewards != "zero":
                unscorable = torch.isnan(advantage_rewards).all(dim=1)
                column = torch.where(unscorable, torch.full_like(column, float("nan")), column)
            advantage_rewards = torch.cat([advantage_rewards, column.unsqueeze(1)], dim=1)
            weights = torch.cat([weights, weights.new_ones(1)])
            names.append("kl_in_reward")
        advantages = compute_advantages(
            advantage_rewards,
            num_generations,
            method,
            weights=weights,
            convention=self.advantage_convention,
            response_lengths=lengths,
            options=self.advantage_options,
        )
        local_size = output["completion_ids"].shape[0]
        index = self.accelerator.process_index
        output["advantages"] = advantages[index * local_size:(index + 1) * local_size].to(
            device=output["advantages"].device, dtype=output["advantages"].dtype
        )
        if self.advantage_audit_dir is not None:
            self._write_advantage_audit(mode, num_generations, advantage_rewards, names, weights, lengths,
                                        output["advantages"])
        if show:  # the completions table shows the advantages that train, not TRL's replaced ones
            self._show_advantages(advantages)

        metrics = self._metrics[mode]
        per_group, in_batch = distinct_advantage_counts(advantages.view(-1, num_generations))
        metrics["advantages/mean"].append(advantages.mean().item())
        metrics["advantages/std"].append(advantages.std().item() if advantages.numel() > 1 else 0.0)
        metrics["advantages/distinct_per_group"].append(per_group.double().mean().item())
        metrics["advantages/distinct_in_batch"].append(float(in_batch))
        if mode == "train":
            metric = self._filter_metric(rewards.shape[1])
            signal = groups_with_signal(rewards, self.reward_weights.to(rewards.device), num_generations, metric,
                                        self.reward_func_names)
            metrics["training_signal/silent_groups"].append((~signal).float().mean().item())
            metrics["training_signal/zero_advantage_batch"].append(float(bool((advantages == 0).all())))
        return advantages

    def _show_advantages(self, advantages: torch.Tensor) -> None:
        """The completions table's advantages of the generation batch logged last (TRL's replaced)."""
        logged = self._logs["advantages"]
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(advantages.tolist())

    def _filter_metric(self, num_rewards: int) -> str:
        """Dynamic sampling's metric, resolved (``auto`` when dynamic sampling is off)."""
        settings = self.loop_options.dynamic_sampling or DynamicSampling()
        return settings.resolved_metric(self._normalises_each_reward(num_rewards))

    def _log_reward_spread(self, rewards: torch.Tensor, num_generations: int, mode: str) -> None:
        """Per reward, the share of groups where it is constant (or missing) and the share of missing values; with
        more than one reward, the share of groups where at least two vary (``rewards/frac_groups_several_vary``):
        the only groups where GDPO's advantages differ from GRPO's other than by a scale, since where one reward
        alone varies, normalising it or the sum gives the same values."""
        metrics = self._metrics[mode]
        weights = self.reward_weights.to(rewards.device)
        varying = []
        for k, name in enumerate(self.reward_func_names):
            # constant (or with fewer than two values) in a group: the filter's test on this reward alone
            silent = ~groups_with_signal(rewards, weights, num_generations, name, self.reward_func_names)
            varying.append(~silent)
            metrics[f"rewards/{name}/frac_zero_std_groups"].append(silent.float().mean().item())
            metrics[f"rewards/{name}/frac_none"].append(torch.isnan(rewards[:, k]).float().mean().item())
        if len(varying) > 1:
            several = torch.stack(varying).sum(dim=0) >= 2
            metrics["rewards/frac_groups_several_vary"].append(several.float().mean().item())

    @contextlib.contextmanager
    def _logged_as_first_round_only(self, mode: str):
        """TRL's metrics and completion logs of a refill round are discarded: a step's record is its first
        round's generation batch."""
        metrics = self._metrics[mode]
        lengths = {key: len(values) for key, values in metrics.items()}
        logs = copy.deepcopy(self._logs)
        try:
            yield
        finally:
            for key in list(metrics):
                if key not in lengths:
                    del metrics[key]
                else:
                    del metrics[key][lengths[key]:]
            self._logs = logs

    def _generations_per_step(self) -> int:
        """Generation batches per optimizer step (1 unless steps_per_generation < gradient_accumulation_steps)."""
        generate_every = self.args.steps_per_generation * self.num_iterations
        return max(1, self.args.gradient_accumulation_steps // generate_every)

    def _refill_inputs(self, round_index: int, groups: int, num_generations: int) -> list[dict]:
        """This process's prompts of a refill round: ``groups`` dataset rows
        (:func:`gdpo.training.loop.refill_prompt_indices`: a function of the seed, step, round and process),
        each repeated ``num_generations`` times as TRL's sampler repeats them."""
        # Several generation batches per optimizer step (steps_per_generation < gradient_accumulation_steps) draw
        # apart: the draw is keyed by the generation batch (step × batches per step + its index in the step).
        generation = self.state.global_step * self._generations_per_step() + self._generation_in_step
        indices = refill_prompt_indices(len(self.train_dataset), groups, self.args.seed, generation,
                                        round_index, self.accelerator.process_index)
        rows = [dict(self.train_dataset[index]) for index in indices]
        return [dict(row) for row in rows for _ in range(num_generations)]

    def _dynamically_sampled(self, first: _Round, num_generations: int) -> dict:
        """DAPO's filter groups (verl's DAPO trainer loop): keep the groups with signal, generate refill rounds
        until each process has its share of groups with signal or ``max_rounds`` rounds ran, and return this
        process's assembled batch with the advantage computed on the assembled gathered batch.

        Every process decides from the gathered rewards, so all run the same rounds. At the cap a process's
        share is completed with its first round's silent groups. Rows keep generation order (round, then group).
        """
        settings = self.loop_options.dynamic_sampling
        mode = "train"
        local_rows = first.output["completion_ids"].shape[0]
        share = local_rows // num_generations  # groups per process
        processes, me = self.accelerator.num_processes, self.accelerator.process_index
        metric = self._filter_metric(first.rewards.shape[1])
        weights = self.reward_weights.to(first.rewards.device)

        def signal_of(round_: _Round) -> torch.Tensor:  # (processes, share)
            return groups_with_signal(round_.rewards, weights, num_generations, metric,
                                      self.reward_func_names).view(processes, share).cpu()

        rounds, signals = [first], [signal_of(first)]
        kept = [[(0, g) for g in range(share) if signals[0][p, g]] for p in range(processes)]
        while len(rounds) < settings.max_rounds and any(len(kept[p]) < share for p in range(processes)):
            refill = self._refill_inputs(len(rounds), share, num_generations)
            with self._logged_as_first_round_only(mode):
                round_ = self._scored_round(refill, mode)
            rounds.append(round_)
            signals.append(signal_of(round_))
            for p in range(processes):
                kept[p].extend((len(rounds) - 1, g) for g in range(share) if signals[-1][p, g])

        selections, filled = [], 0
        for p in range(processes):
            chosen = kept[p][:share]
            if len(chosen) < share:
                silent = [(0, g) for g in range(share) if not signals[0][p, g]]
                filled += share - len(chosen)
                chosen = chosen + silent[:share - len(chosen)]
            selections.append(sorted(chosen))

        def rows_of(groups: list[int]) -> torch.Tensor:
            return torch.tensor([g * num_generations + i for g in groups for i in range(num_generations)],
                                dtype=torch.long)

        parts = []
        for r, round_ in enumerate(rounds):
            groups = [g for (rr, g) in selections[me] if rr == r]
            if groups:
                order = rows_of(groups)
                parts.append({key: _take_rows(value, order) for key, value in round_.output.items()
                              if key != "num_items_in_batch"})
        output = concatenate_rows(parts, self._tokenizer.pad_token_id)
        loss_mask = output["completion_mask"] if output.get("tool_mask") is None \
            else output["completion_mask"] * output["tool_mask"]
        output["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()

        # The gathered batch as every process assembles it: processes in order, each its selection; rows are
        # indexed into the rounds' gathered tensors stacked one after the other.
        batch_rows = processes * local_rows
        global_rows = torch.tensor([r * batch_rows + p * local_rows + g * num_generations + i for p in range(processes)
                                    for (r, g) in selections[p] for i in range(num_generations)], dtype=torch.long)

        def gathered(field: str) -> torch.Tensor | None:
            if getattr(first, field) is None:
                return None
            stacked = torch.cat([getattr(round_, field) for round_ in rounds])
            return stacked[global_rows.to(stacked.device)]

        rewards, lengths, penalty = gathered("rewards"), gathered("lengths"), gathered("penalty")
        advantages = self._set_advantages(output, mode, num_generations, rewards, lengths, penalty, show=False)
        # The completions table shows the first round: a row's advantage if it trains, else 0.
        from_first = global_rows < batch_rows
        shown = torch.zeros(batch_rows, dtype=advantages.dtype, device=advantages.device)
        shown[global_rows[from_first].to(shown.device)] = advantages[from_first.to(advantages.device)]
        self._show_advantages(shown)

        metrics = self._metrics[mode]
        generated = len(rounds) * share * processes
        metrics["dynamic_sampling/rounds"].append(float(len(rounds)))
        metrics["dynamic_sampling/groups_generated"].append(float(generated))
        metrics["dynamic_sampling/groups_dropped"].append(float(sum(int((~s).sum()) for s in signals)))
        metrics["dynamic_sampling/groups_kept"].append(float(sum(min(len(k), share) for k in kept)))
        metrics["dynamic_sampling/groups_filled_silent"].append(float(filled))
        metrics["training_signal/silent_groups_generated"].append(
            metrics["dynamic_sampling/groups_dropped"][-1] / generated)
        return output

    def _write_advantage_audit(self, mode: str, num_generations: int, rewards: torch.Tensor, names: list[str],
                               weights: torch.Tensor, lengths: torch.Tensor, local_advantages: torch.Tensor) -> None:
        """Append this process's record of one generation batch to ``advantages.process<k>.jsonl``.

        Each process writes its own file (no shared file, no locking), one JSON line per generation batch:

        - ``step``: the optimizer step (numbered as in ``metrics.jsonl``) whose first micro-batch trains on
          the batch; ``mode``: ``"train"`` or ``"eval"``;
        - ``process_index``, ``num_processes``; ``rows``: ``[start, end)`` of this process's rows in the
          gathered batch;
        - ``method``, ``convention``, ``num_generations``, ``reward_weights`` and, for a method with options,
          ``method_options``: the inputs of :func:`gdpo.advantages.compute_advantages` besides the rewards;
        - ``rewards``: reward name → the gathered batch's rewards (every process's rows, in process order;
          ``null`` = no reward); ``completion_lengths``: the gathered completion lengths in tokens;
        - ``advantages``: the advantages this process trains on (its rows).

        So ``compute_advantages(rewards, num_generations, method, reward_weights, convention,
        completion_lengths, options=method_options)[start:end]`` equals ``advantages`` on every process. A resumed run appends:
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
            **({"method_options": self.advantage_options} if self.advantage_options else {}),
            "convention": self.advantage_convention.name,
            "num_generations": num_generations,
            "reward_weights": weights.double().cpu().tolist(),
            "rewards": {name: numbers(rewards[:, k]) for k, name in enumerate(names)},
            "completion_lengths": [int(value) for value in lengths.cpu().tolist()],
            "advantages": numbers(local_advantages),
        }
        self.advantage_audit_dir.mkdir(parents=True, exist_ok=True)
        with (self.advantage_audit_dir / f"advantages.process{index}.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
