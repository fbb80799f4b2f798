"""Per-GPU memory plan of a config's GPU jobs, checked before any job runs (``gdpo memory-plan``).

For each task of a config that runs on GPUs (it names a ``gpu:``, or asks for vLLM), the plan adds up what one
GPU holds at the peak of a training step and of an evaluation, from the model's architecture (the JSON files in
``gdpo/training/model_configs/``, written from the published numbers; nothing is downloaded) and the config's
settings, and compares the sum with the GPU's memory less a headroom (:data:`HEADROOM`). :func:`check_memory_plan`
refuses a config whose jobs do not fit, naming each line of the sum; ``gdpo validate-config`` and the workflow
start run it.

Training, per GPU (micro-batch ``B`` = ``per_device_train_batch_size`` completions of ``T`` tokens, ``T`` =
``vllm_max_model_length`` = the prompt budget + ``max_completion_length``):

- model states: under DeepSpeed ZeRO-3, DeepSpeed's estimate (:func:`zero3_model_states_mem_needs`: 18 bytes
  per parameter shared by the GPUs, plus the largest layer gathered in float32); without DeepSpeed, bfloat16
  weights, gradients and AdamW moments (torch keeps the moments in the weights' dtype: 8 bytes per parameter),
  or accelerate's estimate (:func:`training_usage`) for float32 weights, all resident at the optimizer step;
- the reference model (``beta > 0``): bfloat16 weights, sharded under ZeRO-3;
- activations with gradient checkpointing: each layer's bfloat16 input kept for the backward pass
  (``L × B × T × 2h`` bytes), one layer's activations recomputed during the backward pass and its gradients
  (:meth:`ModelDims.layer_activation_bytes_per_token`, measured on CPU in ``tests/test_memory_plan.py``);
- the LM head: TRL 1.16 scores completions through a fused head (``trl.trainer.utils.add_fused_lm_head``) that
  never holds the ``B × T × V`` logits, only a 4096-token × 32768-vocabulary tile, the float32 gradients of the
  hidden states and of the head's weight, and the gathered head under ZeRO-3. The plan's table still shows the
  ``B × T × V`` bfloat16 logits a plain head would hold, the classic GRPO out-of-memory;
- tied embeddings (Qwen2.5-1.5B/3B, Qwen3-4B): autograd holds the head's bfloat16 weight gradient until the
  embedding's backward, at the end of the pass, then adds the two: two more ``V × h`` bfloat16 matrices beside
  the gradients counted in the model states (measured on CPU in ``tests/test_memory_plan.py``);
- a fixed runtime overhead (:data:`RUNTIME_OVERHEAD_GIB`: CUDA context, NCCL and DeepSpeed buffers, allocator
  slack), of which :data:`ALLOCATOR_RUNTIME_GIB` (cuBLAS workspaces and the like) is held by torch's allocator;
- colocated vLLM (``vllm_mode: colocate``): its whole reservation, ``vllm_gpu_memory_utilization`` × the GPU,
  which must itself hold the bfloat16 weights, vLLM's own overhead (:data:`VLLM_OVERHEAD_GIB`) and a KV cache of
  at least one ``vllm_max_model_length`` sequence (vLLM refuses to start otherwise).

The terms are added although they do not all coexist (the head's float32 gradient is gone before the layers'
gradients are complete): the sum bounds every moment of the step.

Evaluation, one GPU: bfloat16 weights, the KV cache of the sequences generated together (``batch_size`` ×
(prompt budget + ``max_new_tokens``)), the prefill's transient activations (one layer's MLP over the batch's
prompts) and the runtime overhead; through vLLM, the same KV check as above at :data:`EVAL_VLLM_UTILIZATION`.

How far to trust it (``benchmarks/README.md``, "Paper models on a GPU"): :func:`gpu_check_plans` is the plan of
what ``benchmarks/gpu_check.py`` runs on one GPU, and ``python benchmarks/gpu_check.py --replan RECORD`` holds
every committed record to it (a quick test): the plan of the memory torch's allocator sees
(:func:`allocator_bytes`) is at least each measured training peak and each evaluation's own peak × (1 +
:data:`RECORD_MARGIN`). On the H200 record of 2026-11-28 (sequences of 1536 and 2560 tokens, 512-token
completions) it is 4.5-28 % above the four training peaks measured and 3.6-13 % above the six evaluation peaks;
the R1-1.5B and Qwen3-4B figures of that record are the memory resident when the peak counter was reset (the
previous task's models, awaiting the garbage collector), not training peaks. Not measured on a GPU: full-length
completions (8000 tokens), DeepSpeed ZeRO-3 on 8 GPUs (sharded states, gathered layers, NCCL buffers) and
colocated vLLM (its reservation is counted whole; what fits inside it is arithmetic).

The formulas are those of DeepSpeed (``deepspeed.runtime.zero.stage3.estimate_zero3_model_states_mem_needs``) and
accelerate (``accelerate.commands.estimate.estimate_training_usage``), written out here because the check runs
while Snakemake parses the workflow, where importing either would load torch (seconds per parse), and DeepSpeed is
not installed in the CPU environment at all; ``tests/test_memory_plan.py`` holds them equal to the libraries'
functions where those import. This module imports the standard library, :mod:`gdpo.config` (PyYAML) and
:mod:`gdpo.plan` only: no torch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

from gdpo.config import read_yaml
from gdpo.plan import model_slug

GIB = 2**30
#: Where the architecture of each paper model is shipped (``<model_slug(hub id)>.json``).
MODEL_CONFIG_DIR = Path(__file__).resolve().parent / "model_configs"
#: GPU memory when a GPU config names none (``gpu.memory_gib``): an 80 GB H100 or A100.
DEFAULT_GPU_MEMORY_GIB = 80.0
#: Share of the GPU's memory the plan leaves free: allocator fragmentation, sequences longer than the average
#: the estimates assume nothing of, and the error of the estimates themselves.
HEADROOM = 0.10
#: CUDA context (~0.5 GiB), NCCL and DeepSpeed communication buffers (~1.5 GiB) and allocator slack, per GPU.
RUNTIME_OVERHEAD_GIB = 3.0
#: The part of :data:`RUNTIME_OVERHEAD_GIB` held through torch's caching allocator (and so seen by
#: ``torch.cuda.max_memory_allocated``): cuBLAS/cuBLASLt workspaces per handle and stream, kernel scratch. The
#: H200 record shows 0.19-0.23 GiB above the weights, reference, gradients and moments of R1-7B at its optimizer
#: step, where nothing else is alive; 0.5 GiB leaves room for more streams.
ALLOCATOR_RUNTIME_GIB = 0.5
#: How far the plan of a GPU record's shapes must exceed each measured peak (benchmarks/gpu_check.py --replan).
RECORD_MARGIN = 0.03
#: vLLM's own use inside its reservation besides weights and KV cache: CUDA graphs, the sampler and the
#: activations of its profiling pass over TRL's ``max_num_batched_tokens=4096``.
VLLM_OVERHEAD_GIB = 2.0
#: vLLM's memory share in an evaluation job (lm-eval's and vLLM's default), the GPU being the job's alone.
EVAL_VLLM_UTILIZATION = 0.9
#: Prompt tokens assumed where a config states no context length (no ``vllm_max_model_length``).
DEFAULT_PROMPT_BUDGET = 2048
#: TRL 1.16's fused LM head scores this many tokens × this many vocabulary entries at a time
#: (``trl.kernels.chunked_logprob.TOKEN_CHUNK_SIZE``, ``trl.trainer.utils._CHUNKED_LOGPROB_CHUNK_SIZE``).
TRL_HEAD_TOKEN_TILE, TRL_HEAD_VOCAB_TILE = 4096, 32768
BF16, FP32 = 2, 4


class MemoryPlanError(ValueError):
    """A job of the config does not fit the GPU it is planned for."""


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ModelDims:
    """The shapes of a decoder-only model (Qwen2/Qwen3 layout: GQA attention, SwiGLU MLP, RMSNorm).

    Attributes: hidden (h), intermediate (I), layers (L), heads, kv_heads, head_dim, vocab (V), tied (input and
    output embeddings shared), qkv_bias (Qwen2's biases on q, k, v), qk_norm (Qwen3's per-head RMSNorm of q, k),
    max_positions (the model's context).
    """

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    qkv_bias: bool
    qk_norm: bool
    max_positions: int

    @classmethod
    def from_config(cls, config: Mapping, name: str = "") -> ModelDims:
        """From a transformers ``config.json`` of a Qwen2 or Qwen3 model."""
        model_type = config.get("model_type")
        if model_type not in ("qwen2", "qwen3"):
            raise ValueError(f"model {name or '?'}: the memory plan knows the qwen2 and qwen3 layouts, not "
                             f"model_type {model_type!r}.")
        hidden, heads = config["hidden_size"], config["num_attention_heads"]
        return cls(
            name=name, hidden=hidden, intermediate=config["intermediate_size"], layers=config["num_hidden_layers"],
            heads=heads, kv_heads=config.get("num_key_value_heads", heads),
            head_dim=config.get("head_dim") or hidden // heads, vocab=config["vocab_size"],
            tied=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=model_type == "qwen2" or bool(config.get("attention_bias", False)),
            qk_norm=model_type == "qwen3", max_positions=config.get("max_position_embeddings", 0),
        )

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def layer_parameters(self) -> int:
        """Parameters of one decoder layer."""
        h, q, kv = self.hidden, self.q_dim, self.kv_dim
        attention = h * q + 2 * h * kv + q * h + ((q + 2 * kv) if self.qkv_bias else 0)
        norms = 2 * h + (2 * self.head_dim if self.qk_norm else 0)
        return attention + 3 * h * self.intermediate + norms

    def parameters(self) -> int:
        """All parameters (a tied head counted once)."""
        embeddings = self.vocab * self.hidden * (1 if self.tied else 2)
        return embeddings + self.layers * self.layer_parameters() + self.hidden

    def largest_layer_parameters(self) -> int:
        """Parameters of the largest single module, its own only (DeepSpeed's "largest layer"): the token
        embedding (or the head, as large) for these models, else an MLP projection."""
        return max(self.vocab * self.hidden, self.hidden * self.intermediate)

    def kv_bytes_per_token(self, dtype_bytes: int = BF16) -> int:
        """KV-cache bytes per token: keys and values of every layer."""
        return 2 * self.layers * self.kv_dim * dtype_bytes

    def layer_activation_bytes_per_token(self) -> int:
        """Bytes one decoder layer's forward keeps for its backward pass, per token, in bfloat16 with flash/SDPA
        attention (no ``T × T`` scores), tensor by tensor:

        - each of the two RMSNorms: its float32 input, float32 inverse RMS, bfloat16 normalised input (for the
          weight's gradient) and bfloat16 output (the next projections' input);
        - rotary cos and sin; the rotated q and k, v; the attention output (shared with o_proj's input) and its
          float32 log-sum-exp per head;
        - Qwen3's q and k norms: their float32 inputs, inverse RMS and bfloat16 outputs;
        - the MLP's gate output, activated gate, up output and their product (down_proj's input).

        ``tests/test_memory_plan.py`` measures it with saved-tensor hooks on a Qwen2 and a Qwen3 layer."""
        h, q, kv, i = self.hidden, self.q_dim, self.kv_dim, self.intermediate
        norms = 2 * (FP32 * h + FP32 + BF16 * h + BF16 * h)
        attention = BF16 * (2 * self.head_dim + q + 2 * kv + q) + FP32 * self.heads
        qk_norms = (FP32 + BF16) * (q + kv) + FP32 * (self.heads + self.kv_heads) if self.qk_norm else 0
        return norms + attention + qk_norms + BF16 * 4 * i

    def prefill_bytes_per_token(self) -> int:
        """Bytes per prompt token of one layer's MLP during a no-grad prefill: its gate, up, activated gate and
        their product in bfloat16."""
        return BF16 * 4 * self.intermediate

    def layer_backward_bytes_per_token(self) -> int:
        """Gradient buffers alive during one layer's backward pass, per token (an upper estimate, not measured):
        the MLP's three intermediate gradients in bfloat16 and two float32 gradients of the hidden state."""
        return BF16 * 3 * self.intermediate + 2 * FP32 * self.hidden


def model_config_file(spec: str) -> Path:
    """The shipped architecture JSON of a model spec (hub id)."""
    return MODEL_CONFIG_DIR / f"{model_slug(spec)}.json"


def model_dims(spec: str) -> ModelDims:
    """The shapes of a model from its shipped JSON; ``ValueError`` naming the shipped ones if it has none."""
    path = model_config_file(spec)
    if not path.is_file():
        shipped = sorted(p.stem.replace("--", "/") for p in MODEL_CONFIG_DIR.glob("*.json"))
        raise ValueError(f"the memory plan has no architecture for model {spec!r}; add its config.json as {path} "
                         f"(shipped: {', '.join(shipped)}).")
    return ModelDims.from_config(json.loads(path.read_text(encoding="utf-8")), spec)


# --------------------------------------------------------------------------------------------------
# The libraries' estimators, written out (see the module docstring for why)
# --------------------------------------------------------------------------------------------------


def zero3_model_states_mem_needs(total_params: int, largest_layer_params: int, num_gpus_per_node: int = 1,
                                 num_nodes: int = 1, cpu_offload: bool = True, cpu_offload_params: bool = True,
                                 zero_init: bool = True, additional_buffer_factor: float = 1.5) -> tuple[int, int, int]:
    """DeepSpeed's ``estimate_zero3_model_states_mem_needs`` (same arguments, defaults and result):
    ``(cpu_bytes, gpu_bytes_per_gpu, largest_layer_bytes)`` for parameters, gradients and Adam states."""
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = 4 * largest_layer_params
    if cpu_offload:
        if cpu_offload_params:
            gpu_mem = largest_layer_memory
            cpu_mem = total_params * (18 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 18 * gpus_factor))
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            cpu_mem = total_params * (16 * gpus_factor if zero_init else max(4 * num_gpus_per_node, 16 * gpus_factor))
        cpu_mem *= additional_buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        cpu_mem = (largest_layer_params if zero_init else total_params) * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def training_usage(model_bytes: int, mixed_precision: str) -> dict[str, int]:
    """accelerate's ``estimate_training_usage`` for ``float32``, ``float16`` and ``bfloat16``: bytes of the
    ``model``, ``gradients``, ``optimizer`` states and the optimizer ``step``, from the float32 model's bytes."""
    fp16_size = model_bytes // 2
    if mixed_precision == "float32":
        return {"model": model_bytes, "optimizer": model_bytes * 2, "gradients": model_bytes, "step": model_bytes * 4}
    if mixed_precision in ("float16", "bfloat16"):
        return {"model": model_bytes, "optimizer": model_bytes * 2, "gradients": model_bytes + fp16_size,
                "step": model_bytes * 2}
    raise ValueError(f"mixed_precision must be float32, float16 or bfloat16, got {mixed_precision!r}.")


# --------------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Line:
    """One term of a job's sum: what it is, its bytes, and how it was computed."""

    what: str
    bytes: int
    how: str


@dataclasses.dataclass(frozen=True)
class JobPlan:
    """The per-GPU memory of one job kind of a task.

    Attributes: task, job (``train`` or ``evaluate``), model, gpu_bytes (the GPU's memory), lines (the sum's
    terms), problems (what does not fit, besides the total; empty when it fits), notes (figures for the reader:
    the vLLM KV cache, the logits a plain head would hold).
    """

    task: str
    job: str
    model: str
    gpu_bytes: int
    lines: tuple[Line, ...]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return sum(line.bytes for line in self.lines)

    @property
    def budget(self) -> int:
        """What the plan allows: the GPU less :data:`HEADROOM`."""
        return int(self.gpu_bytes * (1 - HEADROOM))

    @property
    def fits(self) -> bool:
        return self.total <= self.budget and not self.problems

    def describe(self) -> str:
        """The job's sum, one line per term, then its verdict and notes."""
        rows = [f"{self.task} / {self.job} ({self.model}), per GPU:"]
        rows += [f"  {line.bytes / GIB:7.2f} GiB  {line.what}: {line.how}" for line in self.lines]
        verdict = "fits" if self.fits else "DOES NOT FIT"
        rows.append(f"  {self.total / GIB:7.2f} GiB  total, of {self.budget / GIB:.2f} GiB allowed "
                    f"({self.gpu_bytes / GIB:.0f} GiB less {HEADROOM:.0%} headroom): {verdict}")
        rows += [f"  problem: {problem}" for problem in self.problems]
        rows += [f"  note: {note}" for note in self.notes]
        return "\n".join(rows)


def gpu_memory_bytes(config: Mapping) -> int:
    """The memory of the GPU a config plans for: ``gpu.memory_gib`` (GiB), else :data:`DEFAULT_GPU_MEMORY_GIB`."""
    gib = (config.get("gpu") or {}).get("memory_gib", DEFAULT_GPU_MEMORY_GIB)
    return int(float(gib) * GIB)


def runs_on_gpu(config: Mapping) -> bool:
    """Whether the config's jobs are planned for a GPU: it names the ``gpu`` they run on (the paper configs). A
    CPU-scale config that asks for a GPU-only setting is refused by the device check instead (it names no GPU
    whose memory a plan could be held against)."""
    return bool(config.get("gpu"))


def _zero_stage(config: Mapping, base_dir: Path | None) -> tuple[int, bool]:
    """(DeepSpeed ZeRO stage, optimizer offloaded to the CPU) of the config's ``launch.accelerate_config``;
    (0, False) without DeepSpeed."""
    launch = config.get("launch") or {}
    path = launch.get("accelerate_config")
    if not path:
        return 0, False
    path = Path(path)
    if not path.is_absolute():
        path = (base_dir or Path(__file__).resolve().parents[2]) / path
    if not path.is_file():
        raise ValueError(f"launch.accelerate_config {path} does not exist; the shipped ones are in envs/accelerate/.")
    accelerate = read_yaml(path.read_text(encoding="utf-8")) or {}
    if accelerate.get("distributed_type") != "DEEPSPEED":
        return 0, False
    deepspeed = accelerate.get("deepspeed_config") or {}
    offload = deepspeed.get("offload_optimizer_device", "none") not in (None, "none")
    return int(deepspeed.get("zero_stage", 0)), offload


def _context(trl: Mapping) -> tuple[int, int]:
    """(tokens of one training sequence, prompt budget): ``vllm_max_model_length`` where set (the config's stated
    prompt budget + ``max_completion_length``), else :data:`DEFAULT_PROMPT_BUDGET` + ``max_completion_length``."""
    completion = int(trl.get("max_completion_length", 512))
    context = trl.get("vllm_max_model_length")
    if context is None:
        return DEFAULT_PROMPT_BUDGET + completion, DEFAULT_PROMPT_BUDGET
    return int(context), int(context) - completion


def _gib(value: float) -> str:
    return f"{value / GIB:.2f} GiB"


def _vllm_cache_check(dims: ModelDims, reservation: int, max_model_len: int, where: str) -> tuple[list[str], str]:
    """(problems, note) of a vLLM instance with ``reservation`` bytes serving ``max_model_len``-token sequences."""
    weights = dims.parameters() * BF16
    cache = reservation - weights - int(VLLM_OVERHEAD_GIB * GIB)
    tokens = max(cache, 0) // dims.kv_bytes_per_token()
    note = (f"{where}: {_gib(reservation)} reserved = weights {_gib(weights)} + overhead {VLLM_OVERHEAD_GIB:.1f} GiB + "
            f"KV cache {_gib(max(cache, 0))} = {tokens:,} tokens ({dims.kv_bytes_per_token():,} B/token), "
            f"{tokens // max_model_len} sequences of {max_model_len:,} tokens at once")
    problems = []
    if tokens < max_model_len:
        problems.append(f"{where}: the KV cache holds {tokens:,} tokens, fewer than one sequence of "
                        f"{max_model_len:,} (vLLM refuses to start); raise vllm_gpu_memory_utilization or lower "
                        "vllm_max_model_length")
    return problems, note


def plan_training(config: Mapping, task: str, base_dir: Path | None = None, dims: ModelDims | None = None) -> JobPlan:
    """The per-GPU memory of one training job of ``task`` (see the module docstring); ``dims``: other shapes
    than the task's model's (a benchmark's tiny stand-in)."""
    spec = config["tasks"][task]
    trl = {**(config.get("training") or {}), **(spec.get("training") or {})}
    dims = dims or model_dims(spec["model"])
    gpus = int((config.get("launch") or {}).get("num_processes", 1))
    stage, offload = _zero_stage(config, base_dir)
    params, largest = dims.parameters(), dims.largest_layer_parameters()
    # The trained weights' dtype (gdpo.plan.RunSettings.policy_dtype: bfloat16 with bf16 unless set).
    policy_dtype = spec.get("policy_dtype", config.get("policy_dtype")) or ("bfloat16" if trl.get("bf16") else "float32")
    micro_batch = int(trl.get("per_device_train_batch_size", 8))
    tokens, prompt_budget = _context(trl)
    rows = micro_batch * tokens
    problems: list[str] = []
    lines = []
    if stage == 3:
        _, states, _ = zero3_model_states_mem_needs(params, largest, num_gpus_per_node=gpus, cpu_offload=offload,
                                                    cpu_offload_params=False)
        lines.append(Line("model states", states, f"DeepSpeed ZeRO-3 estimate, {params / 1e9:.2f}B parameters × 18 B "
                                                  f"/ {gpus} GPUs + largest layer in fp32"))
    elif policy_dtype == "bfloat16":
        # accelerate's estimator assumes float32 master weights; with bfloat16 weights torch's AdamW keeps its two
        # moments in bfloat16 too: 2 + 2 + 4 bytes per parameter.
        lines.append(Line("model states", params * (BF16 + BF16 + 2 * BF16),
                          "bf16 weights + gradients + AdamW moments (bf16), one GPU"))
    else:
        precision = "bfloat16" if trl.get("bf16") else "float32"
        usage = training_usage(params * FP32, precision)
        lines.append(Line("model states", usage["model"] + usage["gradients"] + usage["optimizer"],
                          f"accelerate's estimate ({precision}): weights + gradients + Adam states, one GPU"))
    if float(trl.get("beta", 0.0)) > 0:
        reference = (params * BF16 // gpus + largest * BF16 if stage == 3
                     else params * (BF16 if policy_dtype == "bfloat16" else FP32))
        lines.append(Line("reference model", reference, (f"bf16 weights / {gpus} GPUs + gathered largest layer"
                                                          if stage == 3 else f"{policy_dtype} weights")))
    checkpointing = trl.get("gradient_checkpointing", True)  # TRL's default
    per_layer = dims.layer_activation_bytes_per_token() + dims.layer_backward_bytes_per_token()
    if checkpointing:
        lines.append(Line("checkpointed activations", dims.layers * rows * BF16 * dims.hidden,
                          f"{dims.layers} layers × {micro_batch} × {tokens:,} tokens × bf16 hidden state"))
        lines.append(Line("one layer recomputed", rows * per_layer,
                          f"{micro_batch} × {tokens:,} tokens × {per_layer:,} B (activations + gradients)"))
    else:
        lines.append(Line("activations", dims.layers * rows * dims.layer_activation_bytes_per_token()
                          + rows * dims.layer_backward_bytes_per_token(),
                          f"no gradient checkpointing: {dims.layers} layers × {micro_batch} × {tokens:,} tokens"))
    head_weight = dims.vocab * dims.hidden
    # The tile holds at most the micro-batch's completion tokens (TRL scores those alone).
    tile_tokens = min(TRL_HEAD_TOKEN_TILE, micro_batch * int(trl.get("max_completion_length", 512)))
    head = (tile_tokens * TRL_HEAD_VOCAB_TILE * BF16 + head_weight * FP32 + rows * dims.hidden * (FP32 + BF16)
            + (head_weight * BF16 if stage == 3 else 0))
    lines.append(Line("LM head (TRL's fused head)", head,
                      f"{tile_tokens}×32768 logit tile + fp32 head-weight gradient + fp32/bf16 hidden states"
                      + (" + gathered head" if stage == 3 else "")))
    if dims.tied:
        lines.append(Line("tied-embedding gradients", 2 * head_weight * BF16,
                          "the head's bf16 gradient held until the embedding's, then their sum"))
    lines.append(Line("runtime overhead", int(RUNTIME_OVERHEAD_GIB * GIB), "CUDA context, NCCL/DeepSpeed buffers"))
    gpu_bytes = gpu_memory_bytes(config)
    notes = [f"a plain LM head would hold the {micro_batch} × {tokens:,} × {dims.vocab:,} bf16 logits: "
             f"{_gib(rows * dims.vocab * BF16)} (TRL 1.16 never does)"]
    if trl.get("use_vllm") and trl.get("vllm_mode", "colocate") == "colocate":
        if "vllm_max_model_length" not in trl:
            problems.append(f"vllm_max_model_length is not set: vLLM would size its cache for the model's full "
                            f"context ({dims.max_positions:,} tokens); set it to the prompt budget + "
                            "max_completion_length")
        utilization = float(trl.get("vllm_gpu_memory_utilization", 0.3))  # TRL's default
        reservation = int(utilization * gpu_bytes)
        lines.append(Line("colocated vLLM", reservation, f"vllm_gpu_memory_utilization {utilization} × GPU"))
        # Unset, vLLM's context is the model's own (TRL passes max_model_len=None).
        vllm_context = int(trl.get("vllm_max_model_length") or dims.max_positions)
        vllm_problems, note = _vllm_cache_check(dims, reservation, vllm_context, "colocated vLLM")
        problems += vllm_problems
        generation_batch = micro_batch * int(trl.get("steps_per_generation") or trl.get("gradient_accumulation_steps", 1))
        notes.append(f"{note}; {generation_batch} completions per GPU per generation batch")
    if tokens > dims.max_positions:
        problems.append(f"{tokens:,} tokens per sequence exceed the model's context of {dims.max_positions:,}")
    if prompt_budget <= 0:
        problems.append(f"vllm_max_model_length {tokens} leaves no room for a prompt before max_completion_length")
    return JobPlan(task, "train", spec["model"], gpu_bytes, tuple(lines), tuple(problems), tuple(notes))


def plan_evaluation(config: Mapping, task: str, dims: ModelDims | None = None) -> JobPlan:
    """The memory of one evaluation job of ``task`` on one GPU (see the module docstring); ``dims`` as for
    :func:`plan_training`."""
    spec = config["tasks"][task]
    trl = {**(config.get("training") or {}), **(spec.get("training") or {})}
    evaluation = {**(config.get("evaluation") or {}), **(spec.get("evaluation") or {})}
    dims = dims or model_dims(spec["model"])
    _, prompt_budget = _context(trl)
    length = prompt_budget + int(evaluation.get("max_new_tokens", 128))
    gpu_bytes = gpu_memory_bytes(config)
    problems, notes = [], []
    if spec.get("eval_backend") == "vllm":
        reservation = int(EVAL_VLLM_UTILIZATION * gpu_bytes)
        lines = (Line("vLLM", reservation, f"gpu_memory_utilization {EVAL_VLLM_UTILIZATION} × GPU"),)
        problems, note = _vllm_cache_check(dims, reservation, length, "evaluation vLLM")
        notes.append(note)
    else:
        batch = int(evaluation.get("batch_size", 8))
        lines = (
            Line("weights", dims.parameters() * BF16, "bf16"),
            Line("KV cache", batch * length * dims.kv_bytes_per_token(),
                 f"{batch} sequences × {length:,} tokens × {dims.kv_bytes_per_token():,} B"),
            # The prefill runs the prompts through one layer at a time; its largest transient is the MLP's gate,
            # up, activated gate and their product (the H200 record: 56-90 KB per prompt token for 72-88 KB here).
            Line("prefill activations", batch * prompt_budget * dims.prefill_bytes_per_token(),
                 f"{batch} × {prompt_budget:,} prompt tokens × {dims.prefill_bytes_per_token():,} B (one layer's MLP)"),
            Line("last-token logits", batch * dims.vocab * FP32 * 2, f"{batch} × {dims.vocab:,} fp32, twice"),
            Line("runtime overhead", int(RUNTIME_OVERHEAD_GIB * GIB), "CUDA context, allocator"),
        )
    if length > dims.max_positions:
        problems.append(f"{length:,} tokens per sequence exceed the model's context of {dims.max_positions:,}")
    return JobPlan(task, "evaluate", spec["model"], gpu_bytes, lines, tuple(problems), tuple(notes))


def allocator_bytes(plan: JobPlan) -> int:
    """The part of a job's plan that torch's caching allocator holds (what ``torch.cuda.max_memory_allocated``
    measures): the total less the runtime overhead outside the allocator (CUDA context, NCCL)."""
    return plan.total - int((RUNTIME_OVERHEAD_GIB - ALLOCATOR_RUNTIME_GIB) * GIB)


def gpu_check_plans(config: Mapping, task: str, micro_batch: int, prompt_tokens: int, completion_tokens: int,
                    eval_batch: int, eval_new_tokens: int, gpu_gib: float,
                    dims: ModelDims | None = None) -> tuple[JobPlan, JobPlan]:
    """(training, evaluation) plans of what ``benchmarks/gpu_check.py`` runs for ``task``: one process on one GPU
    of ``gpu_gib`` GiB, bfloat16 weights and AdamW moments, gradient checkpointing, HF ``generate`` (no vLLM, no
    DeepSpeed), a micro-batch of ``micro_batch`` sequences of ``prompt_tokens`` + ``completion_tokens`` tokens and
    an evaluation batch of ``eval_batch`` prompts generating ``eval_new_tokens`` tokens; the task's other settings
    (``beta``) from ``config``. ``dims``: other shapes than the task's model's (the check's tiny CPU stand-in)."""
    spec = {**config["tasks"][task], "training": {}, "evaluation": {}, "eval_backend": "hf"}
    training = {**(config.get("training") or {}), **(config["tasks"][task].get("training") or {}),
                "per_device_train_batch_size": micro_batch, "gradient_accumulation_steps": 1,
                "max_completion_length": completion_tokens, "vllm_max_model_length": prompt_tokens + completion_tokens,
                "use_vllm": False, "bf16": True, "gradient_checkpointing": True}
    evaluation = {"batch_size": eval_batch, "max_new_tokens": eval_new_tokens}
    one_gpu = {"tasks": {task: spec}, "training": training, "evaluation": evaluation, "policy_dtype": "bfloat16",
               "gpu": {"memory_gib": gpu_gib}}
    return plan_training(one_gpu, task, dims=dims), plan_evaluation(one_gpu, task, dims=dims)


def plan_config(config: Mapping, base_dir: Path | None = None) -> list[JobPlan]:
    """The plan of every task's training and evaluation jobs; empty for a config whose jobs run on CPUs."""
    if not runs_on_gpu(config):
        return []
    plans = []
    for task in config.get("tasks") or {}:
        plans += [plan_training(config, task, base_dir), plan_evaluation(config, task)]
    return plans


def check_memory_plan(config: Mapping, base_dir: Path | None = None, config_name: str = "the config") -> list[JobPlan]:
    """The config's plan (:func:`plan_config`); :class:`MemoryPlanError` listing the sum of every job that does not fit."""
    plans = plan_config(config, base_dir)
    failing = [plan for plan in plans if not plan.fits]
    if failing:
        details = "\n".join(plan.describe() for plan in failing)
        raise MemoryPlanError(
            f"{config_name}: {len(failing)} GPU job(s) do not fit the memory they are planned for:\n{details}\n"
            "Lower per_device_train_batch_size (raise gradient_accumulation_steps and steps_per_generation to keep "
            "the batch), lower vllm_gpu_memory_utilization or vllm_max_model_length, or plan for a larger GPU "
            "(gpu.memory_gib). `python -m gdpo memory-plan --config <file>` prints every job's sum."
        )
    return plans


def format_table(plans: list[JobPlan]) -> str:
    """One row per job: task, job, model, the main terms, total, allowed, fits (GiB), as Markdown."""
    columns = ("model states", "reference model", "checkpointed activations", "one layer recomputed",
               "LM head (TRL's fused head)", "colocated vLLM")
    header = ["task", "job", "model", "states", "ref", "ckpt act", "layer", "head", "vLLM", "other", "total",
              "allowed", "fits"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for plan in plans:
        by_name = {line.what: line.bytes for line in plan.lines}
        by_name["colocated vLLM"] = by_name.get("colocated vLLM", 0) + by_name.get("vLLM", 0)  # training or evaluation
        main = [by_name.get(name, 0) for name in columns]
        other = plan.total - sum(main)
        cells = [plan.task, plan.job, plan.model.rsplit("/", 1)[-1]] + [f"{value / GIB:.1f}" for value in main]
        cells += [f"{other / GIB:.1f}", f"{plan.total / GIB:.1f}", f"{plan.budget / GIB:.1f}",
                  "yes" if plan.fits else "**no**"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)
