"""lm-eval's ``hf`` model with its sampling done by the suite's rollout engine.

Registered with lm-eval as ``gdpo-engine``. Everything but ``generate`` is lm-eval's ``HFLM`` (loading,
the LoRA adapter, chat template, batching, stop strings, log-likelihood scoring); the completions of
``generate_until`` come from :class:`gdpo.generation.rollout.RolloutEngine` — a bfloat16 copy of the policy
with the adapter merged in — instead of ``transformers``' ``generate``, which on CPU is the slow part of a
math evaluation. lm-eval cuts each completion at its stop strings after decoding, as it does for ``hf``.

With ``continuous_batching`` (the default), ``generate_until`` hands all requests of one generation setting to
one ``_model_generate`` call, and the engine keeps ``batch_size`` sequences decoding, a finished one's slot taken
by the next waiting request (:meth:`~gdpo.generation.rollout.RolloutEngine.generate_continuous`), instead of
lm-eval's batch by batch, where every batch waits for its longest completion.
"""

from __future__ import annotations

import functools

import torch
from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM

from gdpo.generation.generate import eos_token_ids
from gdpo.generation.rollout import RolloutEngine, SamplingSettings, unsupported_reason

ENGINE_MODEL_NAME = "gdpo-engine"
#: lm-eval ``gen_kwargs`` the engine implements (anything else is refused, not ignored).
SUPPORTED_GENERATION_KWARGS = frozenset({"temperature", "top_k", "top_p", "min_p", "do_sample"})


@register_model(ENGINE_MODEL_NAME)
class EngineLM(HFLM):
    """``HFLM`` whose ``_model_generate`` samples with the rollout engine (Llama/Qwen2 causal LMs)."""

    def __init__(self, *args, engine_dtype: str = "bfloat16", continuous_batching: bool = True, **kwargs):
        """As ``HFLM``; ``engine_dtype`` is the engine's weight dtype (``"float32"`` reproduces ``generate``);
        ``continuous_batching`` decodes with continuous batching (greedy continuations are the same either way)."""
        super().__init__(*args, **kwargs)
        if continuous_batching and not isinstance(self.batch_size_per_gpu, int):
            raise ValueError(f"the {ENGINE_MODEL_NAME} evaluation model needs a whole-number batch_size with "
                             f"continuous batching, got {self.batch_size_per_gpu!r}.")
        self._continuous_batching = bool(continuous_batching)
        #: Sequences decoding together; lm-eval's own batch size is raised to all requests while generating.
        self._decode_batch_size = self.batch_size_per_gpu
        reason = unsupported_reason(self.model.config)
        if reason:
            raise ValueError(f"the {ENGINE_MODEL_NAME} evaluation model does not support this model: {reason}; "
                             "set `fast_generation: false` to evaluate with generate().")
        self._engine = RolloutEngine(self.model.config, dtype=getattr(torch, engine_dtype),
                                     batch_size_hint=self.batch_size_per_gpu)
        self._engine.load_from(self.model)
        self._eos_ids = eos_token_ids(self.model, self.tokenizer)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """lm-eval's ``generate_until``; with continuous batching, one ``_model_generate`` call per generation
        setting, for all its requests (lm-eval still tokenizes, cuts at stop strings and restores the order)."""
        if not self._continuous_batching:
            return super().generate_until(requests, disable_tqdm)
        self.batch_size_per_gpu = max(1, len(requests))
        try:
            return super().generate_until(requests, disable_tqdm)
        finally:
            self.batch_size_per_gpu = self._decode_batch_size

    def _model_generate(self, context, max_length: int, stop: list[str], **generation_kwargs) -> torch.Tensor:
        """``(B, L + new)`` token ids, as ``HFLM._model_generate``: the context, then each row's completion padded."""
        mask = generation_kwargs.pop("attention_mask", None)
        mask = torch.ones_like(context) if mask is None else mask
        unknown = sorted(set(generation_kwargs) - SUPPORTED_GENERATION_KWARGS)
        if unknown:
            raise ValueError(f"the {ENGINE_MODEL_NAME} evaluation model does not implement generation settings "
                             f"{unknown}; set `fast_generation: false` to evaluate with generate().")
        temperature = float(generation_kwargs.get("temperature") or 0.0)
        if generation_kwargs.get("do_sample") is False:
            temperature = 0.0
        sampling = temperature > 0
        settings = SamplingSettings(temperature=temperature,
                                    top_k=generation_kwargs.get("top_k") if sampling else None,
                                    top_p=generation_kwargs.get("top_p") if sampling else None,
                                    min_p=generation_kwargs.get("min_p") if sampling else None)
        prompts = [row[row_mask.bool()].tolist() for row, row_mask in zip(context, mask)]
        decode = (functools.partial(self._engine.generate_continuous, batch_size=self._decode_batch_size)
                  if self._continuous_batching else self._engine.generate)
        new = decode(prompts, max_length - context.shape[1], self._eos_ids, self.tokenizer.pad_token_id, settings)
        width = max(len(ids) for ids in new)
        pad = self.tokenizer.pad_token_id
        completions = torch.tensor([ids + [pad] * (width - len(ids)) for ids in new], dtype=context.dtype)
        return torch.cat([context, completions.to(context.device)], dim=1)
