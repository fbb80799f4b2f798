"""The length limit of cpu-evidence-2's math design, by the rules its pre-registration states before the
lengths they read are seen (`paper_figures/cpu-evidence-2/PREREGISTRATION.md`, "Pilot"):

- the first rule: L = max(the start's 90th percentile of four-term lengths, its median five-term length);
- the stated last math change (2026-11-30): L = the 90th percentile of the lengths of the start's *correct*
  five-term answers, pooled over the base evaluations given (a correct answer within the limit then exists,
  as in the paper, whose trained policies meet their limit while keeping the bases' accuracy).

Reads the start's (the base evaluations') held-out samples, grades each response with the reward's own
``is_correct``, counts its tokens with the model's tokenizer, and prints the length quantiles, accuracy and
share over ``--limit`` per generator, then both rules' L.

    python benchmarks/math_length_rule.py --tokenizer results/cpu-evidence-2-pilot/warmup/math/model \\
        --limit 44 results/cpu-evidence-2-pilot/runs/math/base/seed{100,101}/eval/samples_reasoning_gym.jsonl
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
    """Generator → (tokens of each response, 1.0 if that response is correct else 0.0), over every response of
    lm-eval's samples file, graded as the evaluation grades it (``gdpo.tasks.math.rewards.is_correct``)."""
    from gdpo.tasks.math.rewards import is_correct

    rows: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for line in samples.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        doc = record["doc"]
        for response in record["resps"][0]:
            tokens = len(tokenizer(response)["input_ids"])
            correct = is_correct(response, str(doc["answer"]), doc.get("verifier") or "math_verify",
                                 doc.get("verifier_data") or "")
            rows[doc["source"]].append((tokens, float(correct)))
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


def correct_five_term_lengths(rows: dict[str, list[tuple[int, float]]]) -> np.ndarray:
    """Tokens of each correct five-term response."""
    return np.array([n for n, right in rows.get(FIVE_TERMS, []) if right])


def limit_by_correct_answers(rows: dict[str, list[tuple[int, float]]]) -> int:
    """The stated last rule's L (tokens): the 90th percentile of the correct five-term responses' lengths,
    rounded up."""
    correct = correct_five_term_lengths(rows)
    if not correct.size:
        raise ValueError(f"the samples hold no correct {FIVE_TERMS} response: the rule needs the start's "
                         f"correct five-term answers (evaluate with eval_generators including {FIVE_TERMS})")
    return int(np.ceil(np.percentile(correct, 90)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samples", type=Path, nargs="+",
                        help="the base evaluations' samples_reasoning_gym.jsonl (pooled)")
    parser.add_argument("--tokenizer", required=True,
                        help="the model's directory (its tokenizer counts tokens)")
    parser.add_argument("--limit", type=int, required=True, help="the limit the evaluation ran with (tokens)")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    rows: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for samples in args.samples:
        for name, values in lengths_by_generator(samples, tokenizer).items():
            rows[name].extend(values)
    print("| generator | responses | tokens: min, 10th, median, 90th, max | accuracy | over the limit |")
    print("|---|---|---|---|---|")
    for name, values in sorted(rows.items()):
        tokens = np.array([n for n, _ in values])
        quantiles = ", ".join(f"{q:g}" for q in np.percentile(tokens, [0, 10, 50, 90, 100]))
        accuracy = 100 * float(np.mean([a for _, a in values]))
        over = 100 * float(np.mean(tokens > args.limit))
        print(f"| {name} | {len(values)} | {quantiles} | {accuracy:.1f} % | {over:.1f} % |")
    correct = correct_five_term_lengths(rows)
    if correct.size:
        quantiles = ", ".join(f"{q:g}" for q in np.percentile(correct, [0, 10, 50, 90, 100]))
        print(f"\ncorrect {FIVE_TERMS} responses: {correct.size}; tokens: min, 10th, median, 90th, max {quantiles}")
    try:
        print(f"\nL by the first rule: {limit_by_rule(rows)} tokens")
        print(f"L by the correct five-term answers (the stated last change): {limit_by_correct_answers(rows)} tokens")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
