"""Prefill time of the rollout engine: fused attention (``attention="sdpa"``) against the earlier path that
materialises float32 scores (``"manual"``), at the tool-calling evaluation's shape.

SmolLM2-135M-Instruct (the prepared model folder), 16 distinct prompts of random token ids (``--prompt-tokens``
each; tool-calling prompts carry the tools' JSON, a few hundred tokens), one new token (so the time is the
prefill), one thread, the two paths interleaved over ``--rounds``; medians and the ratio. The engine computes in
the dtype this CPU runs bfloat16 work in (gdpo.generation.precision).

    python benchmarks/attention_prefill.py --rounds 3 --prompt-tokens 300
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from transformers import AutoModelForCausalLM

from gdpo.generation.rollout import RolloutEngine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", default="resources/models/smollm2-135m-instruct")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--prompt-tokens", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32)
    generator = torch.Generator().manual_seed(0)
    prompts = [torch.randint(100, model.config.vocab_size, (args.prompt_tokens,), generator=generator).tolist()
               for _ in range(args.batch)]
    engines = {}
    for kind in ("manual", "sdpa"):
        engines[kind] = RolloutEngine(model.config, attention=kind, batch_size_hint=args.batch)
        engines[kind].load_from(model)
        engines[kind].generate(prompts[:2], 1, [model.config.eos_token_id], 0)  # warm-up
    seconds = {kind: [] for kind in engines}
    for _ in range(args.rounds):
        for kind, engine in engines.items():
            start = time.perf_counter()
            engine.generate(prompts, 1, [model.config.eos_token_id], 0)
            seconds[kind].append(time.perf_counter() - start)
    dtype = engines["manual"].dtype
    print(f"torch {torch.__version__}, 1 thread, engine dtype {str(dtype).removeprefix('torch.')}, "
          f"{args.batch} prompts x {args.prompt_tokens} tokens, {args.rounds} rounds")
    for kind, values in seconds.items():
        print(f"{kind:>7}: median {statistics.median(values):.2f} s ({', '.join(f'{v:.2f}' for v in values)})")
    print(f"sdpa / manual: {statistics.median(seconds['sdpa']) / statistics.median(seconds['manual']):.2f}")


if __name__ == "__main__":
    main()
