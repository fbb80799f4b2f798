"""Sampling completions from a policy (transformers ``generate``, or the bfloat16 rollout engine).

Used by the families whose evaluators score text themselves (tool calling, code, arithmetic) and by the math
family's solve-rate calibration; math evaluation goes through lm-eval, whose engine model
(:mod:`gdpo.tasks.math.engine_lm`) takes :func:`eos_token_ids` from here.

Where an evaluation runs is one choice, :func:`evaluation_device`: the job's GPU in bfloat16 when there is
one, else the CPU in float32 (the CPU scales' engine and dtype). The bfloat16 rollout engine
(:mod:`gdpo.generation.rollout`) is CPU code; on a GPU, completions come from ``generate`` on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class Completion:
    """One sampled completion: its text (special tokens removed), length in tokens, and whether generation
    stopped at ``max_new_tokens`` instead of an end-of-sequence token."""

    text: str
    num_tokens: int
    truncated: bool


@dataclass(frozen=True)
class EvalDevice:
    """Where an evaluation's model runs: ``device`` (``"cpu"`` or ``"cuda"``, the job's GPU) and the weights'
    ``dtype``."""

    device: str
    dtype: torch.dtype

    @property
    def dtype_name(self) -> str:
        """The dtype as lm-eval and the records spell it (``"float32"``, ``"bfloat16"``)."""
        return str(self.dtype).removeprefix("torch.")

    def record(self) -> dict:
        """``{"device", "dtype"}`` for eval.json's settings."""
        return {"device": self.device, "dtype": self.dtype_name}


def evaluation_device() -> EvalDevice:
    """The device and dtype of every transformers evaluation: the job's GPU (``cuda``, the first device of the
    job's ``CUDA_VISIBLE_DEVICES``) in bfloat16 when torch sees one; else the CPU in float32, the CPU scales'
    dtype, so their results are unchanged."""
    if torch.cuda.is_available():
        return EvalDevice("cuda", torch.bfloat16)
    return EvalDevice("cpu", torch.float32)


def policy_files(model_dir: str | Path, adapter_dir: str | Path | None = None) -> tuple[Path, Path | None, Path]:
    """Where a policy's parts live: ``(weights_dir, lora_dir, tokenizer_dir)``.

    ``adapter_dir`` is a training run's ``model/`` directory: a PEFT adapter (``adapter_config.json``; then
    ``weights_dir`` is ``model_dir`` and ``lora_dir`` the adapter) or a full model (``weights_dir``, no LoRA).
    The tokenizer is the one the trained run saved next to its weights, else the base model's (the same one).
    ``ValueError`` saying which rule makes a missing directory.
    """
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").exists():
        raise ValueError(f"{model_dir} is not a model directory (no config.json); run the prepare_model rule first.")
    adapter_dir = Path(adapter_dir) if adapter_dir else None
    if adapter_dir is not None and not adapter_dir.is_dir():
        raise ValueError(f"Trained model directory {adapter_dir} does not exist; run the train rule first.")
    is_adapter = adapter_dir is not None and (adapter_dir / "adapter_config.json").exists()
    weights_dir = adapter_dir if adapter_dir is not None and not is_adapter else model_dir
    tokenizer_dir = adapter_dir if adapter_dir and (adapter_dir / "tokenizer_config.json").exists() else model_dir
    return weights_dir, adapter_dir if is_adapter else None, tokenizer_dir


def load_tokenizer(tokenizer_dir: str | Path):
    """A policy's tokenizer as generation uses it: padding on the left (batched generation), the EOS token
    padding where the tokenizer has no pad token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_policy(model_dir: str | Path, adapter_dir: str | Path | None = None,
                dtype: torch.dtype = torch.float32, device: str = "cpu"):
    """The policy to evaluate: the base model, with the run's trained weights when ``adapter_dir`` is given.

    ``adapter_dir`` is a training run's ``model/`` directory: a PEFT adapter (``adapter_config.json``),
    merged into the base weights so generation runs at the base model's speed, or a full model, loaded as is
    (:func:`policy_files`). ``dtype`` and ``device``: where the weights live (:func:`evaluation_device` chooses
    them for evaluations).

    Returns:
        ``(model, tokenizer)``, the model in eval mode, the tokenizer padding on the left (batched generation).
    """
    from transformers import AutoModelForCausalLM

    weights_dir, lora_dir, tokenizer_dir = policy_files(model_dir, adapter_dir)
    model = AutoModelForCausalLM.from_pretrained(weights_dir, dtype=dtype)
    if lora_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, lora_dir).merge_and_unload()
    model = model.to(device)
    tokenizer = load_tokenizer(tokenizer_dir)
    model.eval()
    return model, tokenizer


def encode_prompts(tokenizer, prompts: list[list[dict]]) -> list[list[int]]:
    """The token ids generation starts from: each conversation's chat template with the generation prompt,
    tokenised without adding special tokens (the template has its own)."""
    texts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def completion_from_ids(ids: list[int], eos_ids: set[int] | frozenset[int], tokenizer) -> Completion:
    """The :class:`Completion` of one sequence of generated token ids: cut after its first end-of-sequence
    token (counted in ``num_tokens``), ``truncated`` when there is none; the text decodes the tokens other
    than end-of-sequence and padding, special tokens skipped."""
    length = next((k + 1 for k, token in enumerate(ids) if token in eos_ids), None)
    truncated = length is None
    ids = ids[: length if length is not None else len(ids)]
    content_ids = [t for t in ids if t not in eos_ids and t != tokenizer.pad_token_id]
    return Completion(tokenizer.decode(content_ids, skip_special_tokens=True), len(ids), truncated)


@torch.inference_mode()
def generate_completions(
    model,
    tokenizer,
    prompts: list[list[dict]],
    *,
    num_samples: int = 1,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 128,
    batch_size: int = 8,
    seed: int = 0,
    fast: bool = False,
    continuous_batching: bool = True,
    attention: str = "manual",
) -> list[list[Completion]]:
    """Sample ``num_samples`` completions for each chat prompt.

    Args:
        prompts: P conversations (lists of ``{"role", "content"}``); the chat template is applied with
            ``add_generation_prompt=True``.
        temperature: 0 means greedy decoding (then every sample of a prompt is the same).
        batch_size: sequences per ``generate`` call (prompt-sample pairs, prompts of similar length together).
        seed: seeds torch's generator once, before the first batch.
        fast: sample with :class:`gdpo.generation.rollout.RolloutEngine` (bfloat16, CPU only) instead of
            ``generate``; ``ValueError`` for a model on a GPU.
        continuous_batching: with ``fast``, decode with continuous batching
            (:meth:`~gdpo.generation.rollout.RolloutEngine.generate_continuous`: a finished sequence's slot is
            taken by the next waiting one; greedy completions are the same as batch by batch). ``False``: one
            batch of ``batch_size`` at a time, the earlier path (the speed benchmark's baseline).
        attention: with ``fast``, the engine's attention kernel (:class:`~gdpo.generation.rollout.RolloutEngine`;
            ``"manual"``, the default, or the fused ``"sdpa"``).

    Returns:
        P lists of ``num_samples`` :class:`Completion`, in the order of ``prompts``.
    """
    if num_samples < 1 or batch_size < 1 or max_new_tokens < 1:
        raise ValueError("num_samples, batch_size and max_new_tokens must be at least 1.")
    if temperature < 0 or not 0 < top_p <= 1:
        raise ValueError(f"Need temperature >= 0 and 0 < top_p <= 1, got {temperature} and {top_p}.")
    if fast and model.device.type != "cpu":
        raise ValueError(f"The rollout engine (fast generation) runs on the CPU; the model is on "
                         f"{model.device}: sample with generate() there (fast=False).")
    encoded = encode_prompts(tokenizer, prompts)
    pairs = [(i, s) for i in range(len(prompts)) for s in range(num_samples)]
    # Prompts of similar length in one batch waste less compute on padding.
    pairs.sort(key=lambda pair: len(encoded[pair[0]]))
    sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p} if temperature > 0 else {"do_sample": False}
    eos_ids = set(eos_token_ids(model, tokenizer))
    engine = None
    if fast:
        from gdpo.generation.rollout import RolloutEngine, SamplingSettings

        engine = RolloutEngine(model.config, batch_size_hint=batch_size, attention=attention)
        engine.load_from(model)
        settings = SamplingSettings(temperature=temperature, top_p=top_p if temperature > 0 else None)
    torch.manual_seed(seed)
    results: list[list[Completion | None]] = [[None] * num_samples for _ in prompts]

    def decoded_batches():
        """``(pairs, new token ids per pair)`` of each decoding call."""
        if engine is not None and continuous_batching:
            yield pairs, engine.generate_continuous([encoded[i] for i, _ in pairs], max_new_tokens, sorted(eos_ids),
                                                    tokenizer.pad_token_id, settings, batch_size=batch_size)
            return
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start : start + batch_size]
            if engine is not None:
                yield batch, engine.generate([encoded[i] for i, _ in batch], max_new_tokens, sorted(eos_ids),
                                             tokenizer.pad_token_id, settings)
                continue
            inputs = tokenizer.pad({"input_ids": [encoded[i] for i, _ in batch]}, return_tensors="pt")
            inputs = inputs.to(model.device)
            output = model.generate(
                **inputs,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                top_k=None,
                **sampling,
            )
            yield batch, output[:, inputs["input_ids"].shape[1] :].tolist()

    for batch, new_tokens in decoded_batches():
        for (i, s), ids in zip(batch, new_tokens):
            results[i][s] = completion_from_ids(ids, eos_ids, tokenizer)
    return results  # type: ignore[return-value]


def eos_token_ids(model, tokenizer) -> list[int]:
    """Every token id that ends generation (the generation config may list several), sorted, no repeats."""
    return generation_eos_ids(model.generation_config, tokenizer)


def generation_eos_ids(generation_config, tokenizer) -> list[int]:
    """:func:`eos_token_ids` from a generation config (``GenerationConfig``) and the tokenizer."""
    eos = generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])  # a copy: the config is untouched
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return sorted(ids)


def load_policy_for_request(request) -> tuple:
    """:func:`load_policy` for an :class:`gdpo.evaluation.EvalRequest`, on :func:`evaluation_device`'s device
    and dtype; returns ``(model, tokenizer, device)`` (device: the :class:`EvalDevice`)."""
    device = evaluation_device()
    model, tokenizer = load_policy(request.model_dir, request.adapter_dir, dtype=device.dtype,
                                   device=device.device)
    return model, tokenizer, device


def generate_for_request(model, tokenizer, prompts: list[list[dict]], request) -> list[list[Completion]]:
    """:func:`generate_completions` with the sampling settings of an :class:`gdpo.evaluation.EvalRequest`; the
    request's ``fast_generation`` (the CPU rollout engine) applies to a model on the CPU only; a model on a
    GPU samples with ``generate`` there."""
    return generate_completions(
        model, tokenizer, prompts, num_samples=request.num_samples, temperature=request.temperature,
        top_p=request.top_p, max_new_tokens=request.max_new_tokens, batch_size=request.batch_size,
        seed=request.seed, fast=request.fast_generation and model.device.type == "cpu",
        continuous_batching=request.continuous_batching,
    )
