"""The length limit of cpu-evidence-2's math design, by the rule its pre-registration states before the
start's five-term lengths are seen (`paper_figures/cpu-evidence-2/PREREGISTRATION.md`, "Pilot"):

    L = max(the start's 90th percentile of four-term lengths, the start's median five-term length)

Reads the start's (the base evaluation's) held-out samples, counts each response's tokens with the model's
tokenizer, and prints the length quantiles, accuracy and share over ``--limit`` per generator, then L.

    python benchmarks/math_length_rule.py \\
        results/cpu-evidence-2-pilot/runs/math/base/seed100/eval/samples_reasoning_gym.jsonl \\
        --tokenizer resources/models/smollm2-135m-instruct --limit 40
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

FOUR_TERMS, FIVE_TERMS = "chain_sum_4", "chain_sum_5"


def lengths_by_generator(samples: Path, tokenizer) -> dict[str, list[tuple[int, float]]]:
    """Generator → (tokens of each response, its item's accuracy), over every response of lm-eval's
    samples file."""
    rows: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for line in samples.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for response in record["resps"][0]:
            tokens = len(tokenizer(response)["input_ids"])
            rows[record["doc"]["source"]].append((tokens, float(record["acc"])))
    return rows


def limit_by_rule(rows: dict[str, list[tuple[int, float]]]) -> int:
    """The rule's L (tokens): the larger of the four-term 90th percentile and the five-term median, rounded
    up."""
    missing = [name for name in (FOUR_TERMS, FIVE_TERMS) if name not in rows]
    if missing:
        raise ValueError(f"the samples hold no {', '.join(missing)} problems: evaluate with "
                         f"eval_generators including {FOUR_TERMS} and {FIVE_TERMS}")
    four = np.percentile([n for n, _ in rows[FOUR_TERMS]], 90)
    five = np.median([n for n, _ in rows[FIVE_TERMS]])
    return int(np.ceil(max(four, five)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samples", type=Path, help="the base evaluation's samples_reasoning_gym.jsonl")
    parser.add_argument("--tokenizer", required=True,
                        help="the model's directory (its tokenizer counts tokens)")
    parser.add_argument("--limit", type=int, required=True, help="the limit the evaluation ran with (tokens)")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    rows = lengths_by_generator(args.samples, AutoTokenizer.from_pretrained(args.tokenizer))
    print("| generator | responses | tokens: min, 10th, median, 90th, max | accuracy | over the limit |")
    print("|---|---|---|---|---|")
    for name, values in sorted(rows.items()):
        tokens = np.array([n for n, _ in values])
        quantiles = ", ".join(f"{q:g}" for q in np.percentile(tokens, [0, 10, 50, 90, 100]))
        accuracy = 100 * float(np.mean([a for _, a in values]))
        over = 100 * float(np.mean(tokens > args.limit))
        print(f"| {name} | {len(values)} | {quantiles} | {accuracy:.1f} % | {over:.1f} % |")
    try:
        print(f"\nL by the rule: {limit_by_rule(rows)} tokens")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
