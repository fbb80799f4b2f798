"""One training micro-batch's loss and backward: the shared-prefix (packed) forward against TRL's padded rows.

TRL scores a GRPO micro-batch of G rows that share one prompt as G padded rows, so the prompt goes through
the policy's forward and backward G times. The shared-prefix forward (``gdpo.training.packing``, switched on
by ``pack_prompts``) lays out the prompt once followed by the G completions, with a block attention mask.
This script times both on the same LoRA policy (bfloat16 autocast over float32 weights, as the CPU scales
train) at a tool-calling shape (a long prompt carrying tool schemas, short completions) and a math shape
(short prompt), alternating the two layouts, and prints the median seconds and the ratio.

    python benchmarks/shared_prefix_speed.py --model-dir resources/models/smollm2-135m-instruct --rounds 5

Without ``--model-dir`` a randomly initialised model with SmolLM2-135M's dimensions is used (the time of a
step does not depend on the weights).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

#: (prompt tokens, completions per micro-batch, completion tokens) per family; completion lengths vary
#: around the given one, one completion is truncated (no EOS), and the cpu-evidence micro-batch is one group.
SHAPES = {"tool_calling": (500, 4, 40), "math": (60, 4, 30)}


def smollm2_sized_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True,
                         max_position_embeddings=8192, rope_theta=100000.0)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


def micro_batch(prompt_tokens: int, rows: int, completion_tokens: int, vocab: int, seed: int = 0):
    """TRL's layout of one group: the shared prompt, then right-padded completions of uneven length."""
    generator = torch.Generator().manual_seed(seed)
    prompt = torch.randint(3, vocab, (prompt_tokens,), generator=generator)
    spread = torch.linspace(-(completion_tokens // 2), completion_tokens // 2, rows).int().tolist()
    lengths = [max(1, completion_tokens + delta) for delta in spread]
    width = max(lengths)
    completions = torch.zeros(rows, width, dtype=torch.long)
    completion_mask = torch.zeros(rows, width, dtype=torch.long)
    for row, length in enumerate(lengths):
        completions[row, :length] = torch.randint(3, vocab, (length,), generator=generator)
        completion_mask[row, :length] = 1
    input_ids = torch.cat([prompt.expand(rows, -1), completions], 1)
    attention_mask = torch.cat([torch.ones(rows, prompt_tokens, dtype=torch.long), completion_mask], 1)
    return input_ids, attention_mask, width


def padded_log_probs(causal_lm, input_ids, attention_mask, logits_to_keep):
    """TRL's scoring: every row through the model, logits of the completion columns."""
    logits = causal_lm(input_ids=input_ids, attention_mask=attention_mask,
                       logits_to_keep=logits_to_keep + 1).logits
    log_probs = logits[:, :-1].float().log_softmax(-1)
    return log_probs.gather(-1, input_ids[:, -logits_to_keep:, None]).squeeze(-1)


def step_seconds(causal_lm, layout: str, batch) -> float:
    from gdpo.training.packing import packed_log_probs

    input_ids, attention_mask, keep = batch
    mask = attention_mask[:, -keep:].float()
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        if layout == "shared prefix":
            log_probs, _ = packed_log_probs(causal_lm, input_ids, attention_mask, keep)
        else:
            log_probs = padded_log_probs(causal_lm, input_ids, attention_mask, keep)
    loss = -((log_probs * mask).sum(-1) / mask.sum(-1)).mean()
    loss.backward()
    causal_lm.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir",
                        help="a local causal LM (default: SmolLM2-135M's dimensions, random weights)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--families", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from peft import LoraConfig, get_peft_model

    if args.model_dir:
        from transformers import AutoModelForCausalLM

        base = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32,
                                                    attn_implementation="sdpa")
    else:
        base = smollm2_sized_model()
    model = get_peft_model(base, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    model.train()
    causal_lm = model.get_base_model()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), LoRA r=16, bf16 autocast")
    print("family        prompt  rows  completion  padded s  shared prefix s  ratio")
    for family in args.families:
        prompt_tokens, rows, completion_tokens = SHAPES[family]
        batch = micro_batch(prompt_tokens, rows, completion_tokens, causal_lm.config.vocab_size)
        times = {"padded": [], "shared prefix": []}
        step_seconds(causal_lm, "padded", batch), step_seconds(causal_lm, "shared prefix", batch)  # warm-up
        for round_index in range(args.rounds):
            order = ["padded", "shared prefix"] if round_index % 2 == 0 else ["shared prefix", "padded"]
            for layout in order:
                times[layout].append(step_seconds(causal_lm, layout, batch))
        padded, shared = statistics.median(times["padded"]), statistics.median(times["shared prefix"])
        print(f"{family:<13} {prompt_tokens:>6}  {rows:>4}  {completion_tokens:>10}  {padded:>8.3f}  "
              f"{shared:>15.3f}  {shared / padded:>5.2f}", flush=True)


if __name__ == "__main__":
    main()
