"""Rollout sampling speed: the bfloat16 rollout engine against ``transformers``' default ``generate``.

Same model (the mini policy, SmolLM2-135M-Instruct with a LoRA adapter on every linear layer, as in
training), same prompts (the mini tasks' own), same batch (8 = 2 prompts × 4 rollouts), same number of
new tokens (every completion runs to the full length: no end-of-sequence), temperature 1. Paths:

- ``generate (policy)``: what TRL's ``GRPOTrainer`` runs — ``generate`` on the float32 PEFT model;
- ``generate (plain fp32)``: ``generate`` on the float32 model with the adapter merged (a stricter baseline);
- ``engine``: :class:`gdpo.generation.rollout.RolloutEngine` (bfloat16, fused and prepacked weights).

Rounds alternate between paths; medians are printed with the ratios and the fraction of the machine's
memory-bandwidth limit the engine reaches (weight bytes read per decoding step × steps per second ÷
the read bandwidth measured here).

    python benchmarks/rollout_speed.py
    python benchmarks/rollout_speed.py --rounds 5 --new-tokens 128 --task math
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import yaml

REPO = Path(__file__).resolve().parents[1]


def read_bandwidth_gb_s(megabytes: int = 512, repeats: int = 10) -> float:
    """Sustained memory read bandwidth (GB/s): summing a buffer far larger than the caches."""
    buffer = torch.ones(megabytes * 1024 * 1024 // 4)  # touched pages, not the shared zero page
    buffer.sum()
    start = time.perf_counter()
    for _ in range(repeats):
        buffer.sum()
    return repeats * buffer.numel() * 4 / (time.perf_counter() - start) / 1e9


def engine_weight_bytes(engine) -> int:
    """Bytes of weights one decoding step reads: every layer's matrices, the norms and the output head."""
    tensors = [t for layer in engine.layers for t in layer.values()] + [engine.lm_head, engine.final_norm]
    return sum(t.numel() * t.element_size() for t in tensors)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="math", help="a task of config/mini.yaml whose prompts are used")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from gdpo.generation.rollout import RolloutEngine, SamplingSettings, merged_state_dict
    from gdpo.plan import model_slug, resolve_run_settings
    from gdpo.tasks import get_family
    from gdpo.training.models import prepare_model

    config = yaml.safe_load((REPO / "config" / "mini.yaml").read_text())
    settings = resolve_run_settings(config, args.task, "gdpo", 0)
    model_dir = REPO / "resources" / "models" / model_slug(settings.model)
    if not (model_dir / "config.json").is_file():
        prepare_model(settings.model, model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    dataset = get_family(settings.family).build_dataset("train", 16, 0, **settings.data_options)
    prompts = [tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True)["input_ids"]
               for row in dataset.select(range(args.batch // 4))]
    batch = [ids for ids in prompts for _ in range(4)][:args.batch]

    torch.manual_seed(0)
    policy = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                            LoraConfig(task_type="CAUSAL_LM", **settings.peft)).eval()
    for name, param in policy.named_parameters():
        if "lora_B" in name:  # a trained-looking adapter, so that merging matters
            param.data.normal_(0, 1e-3)
    plain = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    unexpected = plain.load_state_dict(merged_state_dict(policy), strict=False).unexpected_keys
    assert not unexpected, unexpected
    engine = RolloutEngine(plain.config, batch_size_hint=args.batch)
    engine.load_from(policy)

    tokenizer.padding_side = "left"
    encoded = tokenizer.pad({"input_ids": batch}, return_tensors="pt")
    new = args.new_tokens

    def with_generate(model):
        with torch.no_grad():
            out = model.generate(**encoded, max_new_tokens=new, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                                 eos_token_id=None, pad_token_id=tokenizer.pad_token_id)
        assert out.shape[1] - encoded["input_ids"].shape[1] == new

    def with_engine():
        out = engine.generate(batch, new, [-1], tokenizer.pad_token_id, SamplingSettings(temperature=1.0))
        assert all(len(row) == new for row in out)

    paths = {"generate (policy)": lambda: with_generate(policy), "generate (plain fp32)": lambda: with_generate(plain),
             "engine": with_engine}
    for run in paths.values():  # warm-up: first-call allocations and oneDNN kernel selection
        run()
    seconds = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, run in paths.items():
            start = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - start)
    refresh = []  # once per optimizer step in training: LoRA merged into the weights, cast, prepacked
    for _ in range(args.rounds):
        start = time.perf_counter()
        engine.load_from(policy)
        refresh.append(time.perf_counter() - start)
    bandwidth = read_bandwidth_gb_s()

    tokens = len(batch) * new
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; task {args.task}: batch {len(batch)}, "
          f"prompt tokens {min(map(len, batch))}-{max(map(len, batch))}, {new} new tokens each, {args.rounds} rounds")
    print(f"{'path':<22} {'median s':>9} {'tokens/s':>9}")
    rates = {}
    for name, values in seconds.items():
        rates[name] = tokens / statistics.median(values)
        print(f"{name:<22} {statistics.median(values):>9.3f} {rates[name]:>9.1f}")
    print(f"engine weight refresh (LoRA merge, cast, prepack; once per optimizer step): "
          f"{statistics.median(refresh):.3f} s median")
    print(f"engine / generate (policy):     {rates['engine'] / rates['generate (policy)']:.2f}x")
    print(f"engine / generate (plain fp32): {rates['engine'] / rates['generate (plain fp32)']:.2f}x")
    steps_per_second = rates["engine"] / len(batch)
    weights = engine_weight_bytes(engine)
    print(f"memory read bandwidth {bandwidth:.1f} GB/s; engine reads {weights / 1e6:.0f} MB of weights per step, "
          f"{steps_per_second:.1f} steps/s = {weights * steps_per_second / 1e9:.1f} GB/s, "
          f"{weights * steps_per_second / 1e9 / bandwidth:.0%} of the bandwidth limit "
          f"({bandwidth * 1e9 / weights * len(batch):.0f} tokens/s at the limit)")


if __name__ == "__main__":
    main()
