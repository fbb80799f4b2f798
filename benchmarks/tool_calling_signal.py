"""Does a tool-calling starting point give GRPO/GDPO a training signal? Sampled rollouts, no training.

Samples G completions for each of P training prompts the way the RL stage does (the bfloat16 rollout
engine, the given temperature and top-p), scores them with the task's rewards and prints:

- call rate, format rate and exact-call rate of the *sampled* completions (greedy ones can look fine while
  sampled ones are not well formed);
- the share of groups in which some reward varies (a group without variation has zero advantage under
  every estimator), and the share of RL steps of ``--prompts-per-step`` groups that would train at all.

    python benchmarks/tool_calling_signal.py --model results/mini/warmup/tool_calling/model \
        --prompts 32 --generations 4 --temperature 1.0

Prints one JSON line per setting (a setting = a model and a temperature/top-p pair).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import torch

from gdpo.generation.generate import generate_completions, load_policy
from gdpo.tasks.tool_calling import build_dataset
from gdpo.tasks.tool_calling.diagnostics import completion_diagnostics
from gdpo.tasks.tool_calling.rewards import REWARD_FUNCTIONS


def mean(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def probe(model, tokenizer, rows, generations: int, temperature: float, top_p: float, max_new_tokens: int,
          prompts_per_step: int, seed: int) -> dict:
    started = time.perf_counter()
    samples = generate_completions(model, tokenizer, rows["prompt"], num_samples=generations, temperature=temperature,
                                   top_p=top_p, max_new_tokens=max_new_tokens, batch_size=8, seed=seed, fast=True)
    texts = [c.text for group in samples for c in group]
    repeat = lambda column: [value for value in rows[column] for _ in range(generations)]  # noqa: E731
    columns = {name: repeat(name) for name in ("answer_type", "ground_truth_calls")}
    rewards = {name: function(texts, **columns) for name, function in REWARD_FUNCTIONS.items()}
    indicators = completion_diagnostics(texts, **columns)
    varies = []
    for g in range(len(samples)):
        window = slice(g * generations, (g + 1) * generations)
        varies.append(any(len({v for v in values[window] if v is not None}) > 1 for values in rewards.values()))
    steps = [varies[i:i + prompts_per_step] for i in range(0, len(varies) - prompts_per_step + 1, prompts_per_step)]
    return {
        "temperature": temperature, "top_p": top_p, "prompts": len(samples), "generations": generations,
        "call_made": mean(indicators["call_made"]), "call_when_expected": mean(indicators["call_when_expected"]),
        "exact_call": mean(indicators["exact_call"]), "format": mean(rewards["format"]),
        "correct": mean([v for v in rewards["correct"] if v is not None]),
        "truncated": mean([float(c.truncated) for group in samples for c in group]),
        "groups_with_signal": mean([float(v) for v in varies]),
        "steps_with_signal": mean([float(any(step)) for step in steps]),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a model directory (e.g. the warm-up's output)")
    parser.add_argument("--data-dir", default="resources/data/bfcl_v3_split")
    parser.add_argument("--max-prompt-chars", type=int, default=2000)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--prompts-per-step", type=int, default=2)
    parser.add_argument("--temperature", type=float, nargs="+", default=[1.0])
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--seed", type=int, default=0, help="the training items drawn (as a run's seed)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = build_dataset("train", args.prompts, args.seed, train_data="bfcl_v3_split", data_dir=args.data_dir,
                         max_prompt_chars=args.max_prompt_chars)
    model, tokenizer = load_policy(args.model)
    for temperature in args.temperature:
        result = probe(model, tokenizer, rows, args.generations, temperature, args.top_p, args.max_new_tokens,
                       args.prompts_per_step, args.seed)
        print(json.dumps({"model": args.model, **{k: round(v, 3) if isinstance(v, float) else v
                                                  for k, v in result.items()}}), flush=True)


if __name__ == "__main__":
    main()
