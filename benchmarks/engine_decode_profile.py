"""Where the rollout engine's time goes on this CPU: one prompt's prefill, one decode step, and its kernels.

With SmolLM2-135M-Instruct in the engine's float32 (a CPU without native bfloat16) or bfloat16, one thread:

- the prefill of one prompt of ``--prompt-tokens`` tokens, per attention kind (``manual``, ``sdpa``);
- one decode step of ``--rows`` rows over a ``--cache-tokens`` cache, per attention kind, and the share of
  its operators (``torch.profiler``: linear layers are ``aten::mm``, attention's products ``aten::bmm``);
- the decode-shaped linear products (``--rows`` × SmolLM2's matrices) with ``F.linear`` against oneDNN's and
  MKL's prepacked weights, with the largest difference from ``F.linear`` (not 0: other rounding).

    python benchmarks/engine_decode_profile.py --model-dir resources/models/smollm2-135m-instruct
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def median_seconds(call, repeats: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default="resources/models/smollm2-135m-instruct")
    parser.add_argument("--prompt-tokens", type=int, default=455, help="the cpu-evidence tool-calling prompts' mean")
    parser.add_argument("--rows", type=int, default=16, help="the evaluation's batch")
    parser.add_argument("--cache-tokens", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)

    from torch.profiler import profile
    from transformers import AutoModelForCausalLM

    from gdpo.generation.rollout import RolloutEngine

    model = AutoModelForCausalLM.from_pretrained(args.model_dir).eval()
    for attention in RolloutEngine.ATTENTION_KINDS:
        engine = RolloutEngine(model.config, attention=attention)
        engine.load_from(model)
        capacity = max(args.prompt_tokens, args.cache_tokens + 1)
        cache = [(torch.zeros(args.rows, engine.num_kv_heads, capacity, engine.head_dim, dtype=engine.dtype),
                  torch.zeros(args.rows, engine.num_kv_heads, capacity, engine.head_dim, dtype=engine.dtype))
                 for _ in engine.layers]
        prompt = torch.randint(0, model.config.vocab_size, (1, args.prompt_tokens))
        prefill = median_seconds(lambda: engine._forward(
            prompt, torch.arange(args.prompt_tokens)[None], 0, torch.ones(1, args.prompt_tokens, dtype=torch.bool),
            [(k[:1], v[:1]) for k, v in cache]), args.repeats)
        starts = torch.full((args.rows,), args.cache_tokens)
        key_valid = torch.arange(args.cache_tokens + 1)[None] <= starts[:, None]
        step = lambda: engine._forward(torch.randint(0, 1000, (args.rows, 1)), starts[:, None], starts, key_valid, cache)
        decode = median_seconds(step, args.repeats)
        with profile() as profiler:
            for _ in range(3):
                step()
        by_name = {event.key: event.self_cpu_time_total for event in profiler.key_averages()}
        total = sum(by_name.values())
        shares = ", ".join(f"{name} {by_name.get(name, 0) / total:.0%}" for name in ("aten::mm", "aten::bmm", "aten::_softmax"))
        print(f"{engine.dtype} {attention}: prefill of {args.prompt_tokens} tokens {prefill:.3f} s; decode step of "
              f"{args.rows} rows over {args.cache_tokens} cached {decode:.3f} s ({shares})", flush=True)

    size, intermediate = model.config.hidden_size, model.config.intermediate_size
    heads_dim = model.config.num_attention_heads * (size // model.config.num_attention_heads)
    kv_dim = model.config.num_key_value_heads * (size // model.config.num_attention_heads)
    shapes = {"qkv": (heads_dim + 2 * kv_dim, size), "o": (size, heads_dim), "gate_up": (2 * intermediate, size),
              "down": (size, intermediate)}
    print(f"decode-shaped products, {args.rows} rows, float32 (ms, median of {4 * args.repeats}):")
    for name, (out_features, in_features) in shapes.items():
        x, weight = torch.randn(args.rows, in_features), torch.randn(out_features, in_features)
        reference = F.linear(x, weight)
        plain = median_seconds(lambda: F.linear(x, weight), 4 * args.repeats)
        onednn_weight = torch.ops.mkldnn._reorder_linear_weight(weight, args.rows)
        onednn = lambda: torch.ops.mkldnn._linear_pointwise(x, onednn_weight, None, "none", [], "")
        mkl_weight = torch.ops.mkl._mkl_reorder_linear_weight(weight, args.rows)
        mkl = lambda: torch.ops.mkl._mkl_linear(x, mkl_weight, weight, None, args.rows)
        print(f"  {name:<8} {out_features}x{in_features}: F.linear {plain * 1e3:.2f}; "
              f"oneDNN prepacked {median_seconds(onednn, 4 * args.repeats) * 1e3:.2f} "
              f"(max diff {(onednn() - reference).abs().max().item():.1e}); "
              f"MKL packed {median_seconds(mkl, 4 * args.repeats) * 1e3:.2f} "
              f"(max diff {(mkl() - reference).abs().max().item():.1e})", flush=True)


if __name__ == "__main__":
    main()
