"""Fast rollout sampling on CPU: a decode-only copy of the policy in bfloat16.

Most of a CPU training step is sampling completions. ``transformers``' ``generate`` runs the training
model itself: float32 weights, a LoRA detour in every linear layer, and seven separate matrix products
per decoder layer. :class:`RolloutEngine` keeps its own copy of the policy instead — LoRA merged in,
query/key/value and gate/up weights fused into one matrix each, stored in bfloat16 (the CPU's
``avx512_bf16`` path) — and samples with a preallocated key/value cache. After each optimizer step the
trainer copies the new weights in (:meth:`RolloutEngine.load_from`), as TRL does for vLLM.

The engine covers the decoder-only architectures of the suite's CPU models (Llama, as SmolLM2, and
Qwen2) with default rotary embeddings; :func:`unsupported_reason` names anything else, and the trainer
then refuses to start rather than sample from a different model. Sampling follows ``generate``'s logits
processors in its order: temperature, top-k, top-p, min-p; greedy when ``temperature == 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gdpo.generation.precision import cpu_dtype

#: ``config.model_type`` values whose decoder layer the engine implements.
SUPPORTED_MODEL_TYPES = ("llama", "qwen2")


def unsupported_reason(config) -> str | None:
    """Why the engine cannot run a model of this ``transformers`` config, or ``None`` if it can."""
    if config.model_type not in SUPPORTED_MODEL_TYPES:
        return f"model_type {config.model_type!r} (supported: {', '.join(SUPPORTED_MODEL_TYPES)})"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"hidden_act {config.hidden_act!r} (only silu)"
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        return f"rope_type {rope.get('rope_type', rope.get('type'))!r} (only the default rotary embedding)"
    if getattr(config, "use_sliding_window", False):
        return "sliding-window attention"
    if getattr(config, "mlp_bias", False):
        return "mlp_bias"
    if getattr(config, "pretraining_tp", 1) != 1:
        return f"pretraining_tp {config.pretraining_tp}"
    return None


#: ``GenerationConfig`` fields that change what is sampled and that the engine does not implement.
UNSUPPORTED_GENERATION_SETTINGS = (
    "repetition_penalty", "no_repeat_ngram_size", "bad_words_ids", "suppress_tokens", "begin_suppress_tokens",
    "typical_p", "epsilon_cutoff", "eta_cutoff", "min_new_tokens", "num_beams", "sequence_bias",
    "forced_bos_token_id", "forced_eos_token_id", "encoder_repetition_penalty", "top_h",
)


@dataclass(frozen=True)
class SamplingSettings:
    """The sampling settings of ``generate`` the engine reproduces (``temperature == 0``: greedy)."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None

    @classmethod
    def from_generation_config(cls, generation_config) -> SamplingSettings:
        """From a ``transformers.GenerationConfig``; ``ValueError`` names any setting the engine lacks."""
        from transformers import GenerationConfig

        defaults = GenerationConfig()
        unsupported = [f"{name}={getattr(generation_config, name)!r}" for name in UNSUPPORTED_GENERATION_SETTINGS
                       if getattr(generation_config, name, None) not in (None, getattr(defaults, name, None), 1.0)]
        if unsupported:
            raise ValueError(f"The fast rollout engine does not implement {', '.join(unsupported)}; set "
                             "`fast_generation: false` (config, scale or task level) to sample with generate().")
        if not generation_config.do_sample:
            return cls(temperature=0.0)
        return cls(temperature=float(generation_config.temperature or 1.0), top_k=generation_config.top_k,
                   top_p=generation_config.top_p, min_p=getattr(generation_config, "min_p", None))


def next_token_distribution_logits(logits: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """Logits ``(B, V)`` after temperature, top-k, top-p and min-p, in ``generate``'s order (−inf = removed)."""
    logits = logits / settings.temperature
    if settings.top_k:
        kth = torch.topk(logits, min(settings.top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    if settings.top_p is not None and settings.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=False, dim=-1)
        cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cumulative <= 1 - settings.top_p
        remove_sorted[:, -1] = False  # keep at least the most likely token
        logits = logits.masked_fill(remove_sorted.scatter(1, order, remove_sorted), -math.inf)
    if settings.min_p:
        probs = logits.softmax(dim=-1)
        threshold = settings.min_p * probs.amax(dim=-1, keepdim=True)
        logits = logits.masked_fill(probs < threshold, -math.inf)
    return logits


def sample_categorical(probs: torch.Tensor) -> torch.Tensor:
    """One draw per row of ``probs (B, V)`` by inverting the cumulative distribution: ``(B,)`` token ids.

    Exact sampling like ``torch.multinomial``, which on CPU draws an exponential variate per vocabulary
    entry (6 ms for 8 × 49k, a sixth of a decode step); this needs one uniform per row.
    """
    cumulative = probs.cumsum(dim=-1)
    uniform = torch.rand(probs.shape[0], 1, dtype=cumulative.dtype) * cumulative[:, -1:]
    # searchsorted(right=True) skips zero-probability entries: their cumulative equals the previous one.
    return torch.searchsorted(cumulative, uniform, right=True).squeeze(1).clamp(max=probs.shape[-1] - 1)


def _onednn_linear_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class RolloutEngine:
    """A bfloat16, decode-only copy of a Llama/Qwen2 causal LM for sampling rollouts.

    Args:
        config: the policy's ``transformers`` config (checked with :func:`unsupported_reason`).
        dtype: weight and cache dtype (``torch.bfloat16``; ``torch.float32`` reproduces the model's logits).
        batch_size_hint: the usual number of sequences per call, for oneDNN's weight layout (bfloat16 only).
        attention: ``"sdpa"`` (fused: ``F.scaled_dot_product_attention``, no float32 score matrix) or
            ``"manual"`` (the earlier path: float32 scores ``(B, heads, T, T)`` materialised, then softmax);
            the reference of the equality tests and the benchmark's baseline. The default stays ``"manual"``:
            in bfloat16 the two paths round differently, and greedy completions of SmolLM2-135M differed
            on 4 of 8 chat prompts (48 new tokens; measured 2026-11-28), so switching would change greedy
            results. In float32 the two give the same greedy tokens (tests/test_rollout.py).
    """

    ATTENTION_KINDS = ("sdpa", "manual")

    def __init__(self, config, dtype: torch.dtype = torch.bfloat16, batch_size_hint: int | None = None,
                 attention: str = "manual"):
        if attention not in self.ATTENTION_KINDS:
            raise ValueError(f"RolloutEngine attention={attention!r} is unknown; use one of {self.ATTENTION_KINDS}.")
        self.attention = attention
        reason = unsupported_reason(config)
        if reason:
            raise ValueError(f"The fast rollout engine does not support this model: {reason}. Set "
                             "`fast_generation: false` (config, scale or task level) to sample with generate().")
        self.config = config
        # bfloat16 where this CPU multiplies it natively, else float32 (gdpo.generation.precision)
        self.dtype = cpu_dtype(dtype)
        self.batch_size_hint = batch_size_hint
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.num_heads
        self.eps = config.rms_norm_eps
        rope = getattr(config, "rope_parameters", None) or {}
        theta = rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))
        self.inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.int64).float() / self.head_dim))
        self.layers: list[dict[str, torch.Tensor]] = []
        self.embed: torch.Tensor | None = None
        self.lm_head: torch.Tensor | None = None
        self.final_norm: torch.Tensor | None = None
        self.loaded_version: object = None
        self.packed = False

    def _prepack(self) -> None:
        """Reorder the weight matrices into oneDNN's blocked layout (bfloat16 only).

        ``F.linear`` reorders the weight on every call; prepacked weights skip that (measured: the 30-layer
        matrix chain of SmolLM2 at 8 rows takes about 30 % less time). A no-op where oneDNN is unavailable or
        the CPU lacks its bfloat16 instructions.
        """
        if self.dtype != torch.bfloat16 or not _onednn_linear_available():
            return
        try:
            packed_head = torch.ops.mkldnn._reorder_linear_weight(self.lm_head, self.batch_size_hint)
        except RuntimeError:
            # oneDNN's bfloat16 path needs AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT; other CPUs use F.linear.
            return
        for layer in self.layers:
            for name in ("qkv", "o", "gate_up", "down"):
                layer[name] = torch.ops.mkldnn._reorder_linear_weight(layer[name], self.batch_size_hint)
        self.lm_head = packed_head
        self.packed = True

    def _linear(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """``x (M, in) @ weight.T (+ bias)`` → ``(M, out)``, through oneDNN when the weights are prepacked."""
        if self.packed:
            return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
        return F.linear(x, weight, bias)

    # ---- weights -------------------------------------------------------------------------------

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Take the weights of a plain (merged) model, by ``transformers``' parameter names."""
        self.packed = False
        cast = lambda t: t.detach().to(self.dtype).contiguous()
        prefix = "model."
        self.embed = cast(state[prefix + "embed_tokens.weight"])
        self.final_norm = cast(state[prefix + "norm.weight"])
        head = state.get("lm_head.weight")
        self.lm_head = self.embed if head is None or self.config.tie_word_embeddings else cast(head)
        self.layers = []
        for i in range(self.config.num_hidden_layers):
            p = f"{prefix}layers.{i}."
            attn, mlp = p + "self_attn.", p + "mlp."
            layer = {
                "input_norm": cast(state[p + "input_layernorm.weight"]),
                "post_norm": cast(state[p + "post_attention_layernorm.weight"]),
                "qkv": cast(torch.cat([state[attn + f"{n}_proj.weight"] for n in "qkv"])),
                "o": cast(state[attn + "o_proj.weight"]),
                "gate_up": cast(torch.cat([state[mlp + "gate_proj.weight"], state[mlp + "up_proj.weight"]])),
                "down": cast(state[mlp + "down_proj.weight"]),
            }
            if attn + "q_proj.bias" in state:
                layer["qkv_bias"] = cast(torch.cat([state[attn + f"{n}_proj.bias"] for n in "qkv"]))
            if attn + "o_proj.bias" in state:
                layer["o_bias"] = cast(state[attn + "o_proj.bias"])
            self.layers.append(layer)
        self._prepack()

    @torch.no_grad()
    def load_from(self, model: torch.nn.Module, version: object = None) -> None:
        """Copy the weights of ``model`` (a ``PreTrainedModel`` or a PEFT model, LoRA merged in) into the engine.

        ``version`` (e.g. the optimizer step) is remembered as :attr:`loaded_version`; the model itself is not changed.
        """
        self.load_state(merged_state_dict(model))
        self.loaded_version = version

    # ---- forward -------------------------------------------------------------------------------

    def _rms_norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        # As transformers' RMSNorm: statistics in float32, the scale applied in the weights' dtype.
        x32 = x.float()
        return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(self.dtype)

    def _rope(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin of shape ``(B, 1, T, head_dim)`` for integer positions ``(B, T)``."""
        freqs = positions[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(self.dtype)[:, None], emb.sin().to(self.dtype)[:, None]

    def _forward(self, ids: torch.Tensor, positions: torch.Tensor, start: int | torch.Tensor,
                 key_valid: torch.Tensor, cache: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Hidden states of the last position ``(B, hidden)`` for new tokens ``ids (B, T)`` written at ``start``.

        ``start``: the cache position of the first new token, shared by every row, or per row (``(B,)``
        positions, one new token per row: continuous batching's rows of different lengths).
        ``key_valid (B, ≥ end)`` marks the cache positions a query may attend to (padding excluded), where
        ``end`` is ``start + T`` (the largest row's, per-row starts); attention is causal within the new tokens.
        """
        batch, steps = ids.shape
        h, kvh, d = self.num_heads, self.num_kv_heads, self.head_dim
        group = h // kvh
        x = F.embedding(ids.reshape(-1), self.embed)  # (B*T, hidden): 2-D rows for the matrix products
        cos, sin = self._rope(positions)
        per_row = isinstance(start, torch.Tensor)
        if per_row:
            if steps != 1:
                raise ValueError("Per-row start positions take one new token per row.")
            rows = torch.arange(batch)
            end = int(start.max()) + 1
        else:
            end = start + steps
        allowed = key_valid[:, None, None, :end].expand(batch, 1, steps, end)
        if steps > 1:
            causal = torch.ones(steps, end, dtype=torch.bool).tril(diagonal=start)
            # A padding query attends to itself so its (unused) row is finite.
            itself = torch.arange(end)[None, :] == torch.arange(start, end)[:, None]
            allowed = (allowed & causal) | itself
        for layer, (k_cache, v_cache) in zip(self.layers, cache):
            residual = x
            qkv = self._linear(self._rms_norm(x, layer["input_norm"]), layer["qkv"], layer.get("qkv_bias"))
            q, k, v = qkv.split((h * d, kvh * d, kvh * d), dim=-1)
            q = q.view(batch, steps, h, d).transpose(1, 2)
            k = k.view(batch, steps, kvh, d).transpose(1, 2)
            q = q * cos + _rotate_half(q) * sin
            k = k * cos + _rotate_half(k) * sin
            v = v.view(batch, steps, kvh, d).transpose(1, 2)
            if per_row:
                k_cache[rows, :, start] = k[:, :, 0]
                v_cache[rows, :, start] = v[:, :, 0]
            else:
                k_cache[:, :, start:end] = k
                v_cache[:, :, start:end] = v
            keys, values = k_cache[:, :, :end], v_cache[:, :, :end]
            if self.attention == "sdpa":
                # Fused kernel: softmax accumulated blockwise in float32, no (B, h, T, end) score tensor.
                attended = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed,
                                                          enable_gqa=group > 1).transpose(1, 2)
            else:
                # Grouped-query attention without repeating keys: (B, kvh, group*T, d) @ (B, kvh, d, end).
                qg = q.reshape(batch, kvh, group * steps, d)
                scores = torch.matmul(qg, keys.transpose(-1, -2)).float() * (1.0 / math.sqrt(d))
                scores = scores.view(batch, kvh, group, steps, end).masked_fill(~allowed[:, :, None], -math.inf)
                weights = scores.softmax(dim=-1).to(self.dtype).view(batch, kvh, group * steps, end)
                attended = torch.matmul(weights, values).view(batch, h, steps, d).transpose(1, 2)
            x = residual + self._linear(attended.reshape(batch * steps, h * d), layer["o"], layer.get("o_bias"))
            gate, up = self._linear(self._rms_norm(x, layer["post_norm"]), layer["gate_up"]).chunk(2, dim=-1)
            x = x + self._linear(F.silu(gate) * up, layer["down"])
        return self._rms_norm(x.view(batch, steps, -1)[:, -1], self.final_norm)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """float32 next-token logits ``(B, V)`` from last hidden states ``(B, hidden)``."""
        return self._linear(hidden, self.lm_head).float()

    @torch.no_grad()
    def generate(self, prompts: list[list[int]], max_new_tokens: int, eos_token_ids: list[int], pad_token_id: int,
                 settings: SamplingSettings = SamplingSettings()) -> list[list[int]]:
        """Sample a completion per prompt: token ids up to and including the first EOS, at most ``max_new_tokens``.

        Prompts are left-padded into one batch; draws use torch's global generator, as ``generate`` does.
        A prompt repeated in the batch (GRPO's G rollouts of one prompt) is prefilled once and its cache
        copied to its rows.
        """
        if self.embed is None:
            raise RuntimeError("RolloutEngine.generate called before any weights were loaded (load_from).")
        batch, prompt_len = len(prompts), max(len(p) for p in prompts)
        total = prompt_len + max_new_tokens
        distinct = list(dict.fromkeys(tuple(p) for p in prompts))
        row_of = torch.tensor([distinct.index(tuple(p)) for p in prompts])
        key_valid = torch.zeros(len(distinct), total, dtype=torch.bool)
        ids = torch.full((len(distinct), prompt_len), pad_token_id, dtype=torch.long)
        for row, prompt in enumerate(distinct):
            ids[row, prompt_len - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
            key_valid[row, prompt_len - len(prompt):] = True
        positions = (key_valid[:, :prompt_len].long().cumsum(-1) - 1).clamp(min=0)
        cache = [(torch.zeros(len(distinct), self.num_kv_heads, total, self.head_dim, dtype=self.dtype),
                  torch.zeros(len(distinct), self.num_kv_heads, total, self.head_dim, dtype=self.dtype))
                 for _ in self.layers]
        hidden = self._forward(ids, positions, 0, key_valid, cache)
        if len(distinct) < batch:  # from one row per distinct prompt to one row per sequence
            cache = [(k.index_select(0, row_of), v.index_select(0, row_of)) for k, v in cache]
            hidden, key_valid, positions = (t.index_select(0, row_of) for t in (hidden, key_valid, positions))
        eos = torch.tensor(eos_token_ids, dtype=torch.long)
        # Rows still sampling: a row that has sampled its EOS leaves the batch (its cache rows are dropped), so
        # the decode steps after it compute only the rows still running.
        active = torch.arange(batch)
        next_position = positions[:, -1:] + 1
        out = torch.full((batch, max_new_tokens), pad_token_id, dtype=torch.long)
        for step in range(max_new_tokens):
            logits = self.logits(hidden)
            if settings.temperature == 0:
                token = logits.argmax(dim=-1)
            else:
                token = sample_categorical(next_token_distribution_logits(logits, settings).softmax(dim=-1))
            out[active, step] = token
            running = ~torch.isin(token, eos)
            if not bool(running.any()) or step == max_new_tokens - 1:
                break
            if not bool(running.all()):
                keep = running.nonzero().flatten()
                cache = [(k.index_select(0, keep), v.index_select(0, keep)) for k, v in cache]
                active, token, key_valid, next_position = (t.index_select(0, keep)
                                                           for t in (active, token, key_valid, next_position))
            hidden = self._forward(token[:, None], next_position, prompt_len + step, key_valid, cache)
            key_valid[:, prompt_len + step] = True
            next_position = next_position + 1
        completions = []
        for row in out[:, :step + 1].tolist():
            ends = [i for i, t in enumerate(row) if t in eos_token_ids]
            completions.append(row[:ends[0] + 1] if ends else row)
        return completions


    @torch.no_grad()
    def generate_continuous(self, prompts: list[list[int]], max_new_tokens: int, eos_token_ids: list[int],
                            pad_token_id: int, settings: SamplingSettings = SamplingSettings(),
                            batch_size: int = 8) -> list[list[int]]:
        """:meth:`generate` for many prompts with continuous batching: at most ``batch_size`` sequences decode
        together, and a sequence that finishes (EOS or ``max_new_tokens``) leaves at once, its slot taken by
        the next waiting prompt, prefilled alone. A batch never waits for its longest sequence, and decoding,
        whose cost is reading the weights, keeps ``batch_size`` rows busy until the last prompts.

        Prompts are admitted in the order given; a prompt equal to the one admitted just before it (samples
        of one prompt) copies its cache instead of a second prefill. Greedy completions are those of
        :meth:`generate` (the same arithmetic, without left padding); sampled ones follow the same
        distribution but draw in a different order from torch's global generator.

        Returns:
            One completion per prompt, in the order of ``prompts``: token ids up to and including the first
            EOS, at most ``max_new_tokens``.
        """
        if self.embed is None:
            raise RuntimeError("RolloutEngine.generate_continuous called before any weights were loaded (load_from).")
        if batch_size < 1 or max_new_tokens < 1:
            raise ValueError("batch_size and max_new_tokens must be at least 1.")
        if not prompts:
            return []
        if any(not p for p in prompts):
            raise ValueError("Every prompt needs at least one token.")
        slots = min(batch_size, len(prompts))
        capacity = max(len(p) for p in prompts) + max_new_tokens
        # Slot buffers, rows 0..active-1 in use (finished rows are swapped out, so the rows in use stay a
        # contiguous block and every decode step works on views); each row's cache starts at position 0.
        cache = [(torch.zeros(slots, self.num_kv_heads, capacity, self.head_dim, dtype=self.dtype),
                  torch.zeros(slots, self.num_kv_heads, capacity, self.head_dim, dtype=self.dtype))
                 for _ in self.layers]
        eos = set(eos_token_ids)
        completions: list[list[int] | None] = [None] * len(prompts)
        item_of: list[int] = []        # per row: the prompt it completes
        cached: list[int] = []         # per row: positions in its cache (prompt + fed tokens)
        produced: list[list[int]] = []  # per row: tokens sampled so far
        hidden_rows: list[torch.Tensor] = []  # per row: last hidden state, whose next token is to be sampled
        waiting = 0

        while True:
            previous_prompt, previous_row = None, -1  # the prompt prefilled last in this round, and its row
            while len(item_of) < slots and waiting < len(prompts):
                row, prompt = len(item_of), prompts[waiting]
                if prompt == previous_prompt:  # samples of one prompt: copy its cache, not a second prefill
                    for k, v in cache:
                        k[row, :, :len(prompt)] = k[previous_row, :, :len(prompt)]
                        v[row, :, :len(prompt)] = v[previous_row, :, :len(prompt)]
                    hidden = hidden_rows[previous_row]
                else:
                    hidden = self._forward(torch.tensor([prompt], dtype=torch.long), torch.arange(len(prompt))[None],
                                           0, torch.ones(1, len(prompt), dtype=torch.bool),
                                           [(k[row:row + 1], v[row:row + 1]) for k, v in cache])[0]
                    previous_prompt, previous_row = prompt, row
                item_of.append(waiting)
                cached.append(len(prompt))
                produced.append([])
                hidden_rows.append(hidden)
                waiting += 1
            if not item_of:
                break
            logits = self.logits(torch.stack(hidden_rows))
            if settings.temperature == 0:
                tokens = logits.argmax(dim=-1)
            else:
                tokens = sample_categorical(next_token_distribution_logits(logits, settings).softmax(dim=-1))
            finished = []
            for row, token in enumerate(tokens.tolist()):
                produced[row].append(token)
                if token in eos or len(produced[row]) == max_new_tokens:
                    completions[item_of[row]] = produced[row]
                    finished.append(row)
            # Swap-remove finished rows: the last row in use moves into the hole (its cache prefix copied).
            feed = tokens.tolist()
            for row in sorted(finished, reverse=True):
                last = len(item_of) - 1
                if row != last:
                    length = cached[last]
                    for k, v in cache:
                        k[row, :, :length] = k[last, :, :length]
                        v[row, :, :length] = v[last, :, :length]
                    for state in (item_of, cached, produced, feed):
                        state[row] = state[last]
                for state in (item_of, cached, produced, feed, hidden_rows):
                    state.pop()
            active = len(item_of)
            if not active:
                continue
            starts = torch.tensor(cached)
            key_valid = torch.arange(int(starts.max()) + 1)[None, :] <= starts[:, None]
            hidden = self._forward(torch.tensor(feed)[:, None], starts[:, None], starts, key_valid,
                                   [(k[:active], v[:active]) for k, v in cache])
            hidden_rows = list(hidden.unbind(0))
            cached = [length + 1 for length in cached]
        return completions  # type: ignore[return-value]


def merged_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The plain model's parameters of ``model`` by ``transformers`` names, with any LoRA deltas added.

    Works on a ``PeftModel`` without merging it in place (the training weights stay untouched).
    """
    try:
        from peft.tuners.lora import LoraLayer
    except ImportError:  # peft is optional
        LoraLayer = ()
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    state: dict[str, torch.Tensor] = {}
    lora_modules = {name: module for name, module in base.named_modules() if LoraLayer and isinstance(module, LoraLayer)}
    for name, module in lora_modules.items():
        layer = module.get_base_layer()
        weight = layer.weight.detach().clone()
        for adapter in module.active_adapters:
            if adapter in module.lora_A:
                weight += module.get_delta_weight(adapter).to(weight.dtype)
        state[f"{name}.weight"] = weight
        if getattr(layer, "bias", None) is not None:
            state[f"{name}.bias"] = layer.bias.detach()
    for name, param in base.named_parameters():
        owner = name.rsplit(".", 1)[0]
        if ".lora_" in name or owner.endswith(".base_layer") and owner[: -len(".base_layer")] in lora_modules:
            continue
        state[name] = param.detach()
    return state
