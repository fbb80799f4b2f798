"""Reward scoring time of one mini training batch per task family, against the family's mini step time.

Target (task-families issue): scoring one training batch takes under 5 % of a mini training step.
A batch is 8 completions (2 prompts × 4 rollouts) of the mini config, built from the family's own
training rows: reference-like answers mixed with wrong, malformed and over-long ones. Step times are the
median ``seconds_per_step`` of the family's mini runs in ``results/mini/summary/steps.csv`` (run the
workflow first), so both numbers come from this machine.

    python benchmarks/reward_speed.py [--repeats 15] [--steps-csv results/mini/summary/steps.csv]

The code family's sandboxed rewards have their own benchmark (benchmarks/code_reward_speed.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

from gdpo.tasks import math as math_family
from gdpo.tasks import tool_calling

BATCH = 8


def tool_calling_batch() -> tuple[list, dict]:
    """8 completions for 2 BFCL items: the reference answer, wrong values, malformed JSON, no call."""
    rows = tool_calling.build_dataset("train", 2, 0, data_dir="resources/data/bfcl_v3_split", max_prompt_chars=2000)
    completions, columns = [], {"answer_type": [], "ground_truth_calls": []}
    for row in rows:
        reference = tool_calling.reference_completion(row) or "<think>x</think>\n<response>no</response>"
        variants = [reference, reference.replace('"', "'", 2), "<think>I call it.</think>\n<tool_call>\n{bad json\n</tool_call>",
                    "I do not know which tool to use."]
        for text in variants:
            completions.append([{"role": "assistant", "content": text}])
            columns["answer_type"].append(row["answer_type"])
            columns["ground_truth_calls"].append(row["ground_truth_calls"])
    return completions, columns


def math_batch() -> tuple[list, dict]:
    """8 completions for 2 reasoning-gym problems: boxed right, boxed wrong, unboxed, rambling."""
    rows = math_family.build_dataset("train", 2, 0, length_limit=64)
    completions, columns = [], {key: [] for key in rows.column_names if key != "prompt"}
    columns["completion_ids"] = []
    for row in rows:
        variants = [f"The answer is \\boxed{{{row['answer']}}}.", "So we get \\boxed{12345}.",
                    f"Adding them up gives {row['answer']}", "Let me think step by step. " * 20]
        for text in variants:
            completions.append([{"role": "assistant", "content": text}])
            for key in columns:
                if key != "completion_ids":
                    columns[key].append(row[key])
            columns["completion_ids"].append(list(range(len(text) // 4)))
    return completions, columns


def clear_caches(module) -> None:
    """Empty the module's memoised helpers so each repeat pays the full cost (math caches verdicts)."""
    for value in vars(module).values():
        if hasattr(value, "cache_clear"):
            value.cache_clear()


def time_rewards(functions: dict, completions: list, columns: dict, repeats: int) -> list[float]:
    """Seconds to score the batch with every reward function, ``repeats`` times, caches emptied first."""
    timings = []
    for _ in range(repeats):
        for function in functions.values():
            clear_caches(sys.modules[function.__module__])
        start = time.perf_counter()
        for function in functions.values():
            scores = function(completions, **columns)
            assert len(scores) == len(completions)
        timings.append(time.perf_counter() - start)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps-csv", type=Path, default=Path("results/mini/summary/steps.csv"))
    args = parser.parse_args()
    step_seconds = {}
    if args.steps_csv.exists():
        steps = pd.read_csv(args.steps_csv)
        step_seconds = steps.groupby("task")["seconds_per_step"].median().to_dict()
    families = {"tool_calling": (tool_calling.REWARD_FUNCTIONS, tool_calling_batch),
                "math": (math_family.REWARD_FUNCTIONS, math_batch)}
    report = {}
    for name, (functions, make_batch) in families.items():
        completions, columns = make_batch()
        assert len(completions) == BATCH
        timings = time_rewards(functions, completions, columns, args.repeats)
        median_ms = 1000 * statistics.median(timings)
        line = f"{name}: scoring {BATCH} completions × {len(functions)} rewards: median {median_ms:.2f} ms"
        if name in step_seconds:
            share = median_ms / 1000 / step_seconds[name]
            line += f"; mini step median {step_seconds[name]:.1f} s; share {100 * share:.3f} % (target < 5 %)"
        else:
            line += f" (no mini step time for {name} in {args.steps_csv})"
        print(line)
        report[name] = {"median_ms": median_ms, "step_s": step_seconds.get(name)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
