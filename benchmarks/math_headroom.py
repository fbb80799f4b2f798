"""Where does a model have headroom on math, and does a length limit bind there? Sampled answers, no training.

For each reasoning-gym generator (the family's named ones, or new difficulty settings given as
``--spec name=dataset:{json config}``), samples ``--samples`` completions of ``--problems`` held-out problems
the way RL and the evaluation do (the bfloat16 rollout engine, the given temperature and top-p, up to
``--cap`` tokens), scores them with the family's correctness reward and prints one JSON line per generator:

- ``accuracy``: share of samples judged correct (the validity band of C6 is 5–95 %; a pilot wants 20–70 %);
- ``groups_with_signal``: share of problems whose samples disagree (a group with signal under every estimator);
- ``constant_answer``: the commonest gold answer of the generator's held-out problems (first 200) and the
  share of them it is right on: what a policy answering that constant would be paid;
- token lengths (median, 90th percentile, max; ``at_cap``: share truncated at the cap) and, for each
  ``--limits`` L, the share of samples over L (Exceed) and the accuracy of samples within L and over L:
  a limit binds where answers over it are right more often than answers within it.

    python benchmarks/math_headroom.py --model resources/models/smollm2-135m-instruct \
        --generators chain_sum gcd --spec chain3=chain_sum:'{"min_terms":3,"max_terms":3,"min_digits":1,"max_digits":1}' \
        --problems 24 --samples 4 --cap 128 --limits 32 64
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter

from gdpo.generation.generate import generate_completions, load_policy
from gdpo.tasks.math.data import GENERATORS, Generator, distinct_problems, make_prompt
from gdpo.tasks.math.rewards import is_correct


def parse_spec(text: str) -> tuple[str, Generator]:
    """``name=dataset:{json}`` → (name, a :class:`Generator` with that reasoning-gym dataset and config)."""
    name, _, rest = text.partition("=")
    dataset, _, config = rest.partition(":")
    if not name or not dataset:
        raise ValueError(f"--spec takes name=dataset:{{json config}}, got {text!r}.")
    return name, Generator(dataset, json.loads(config) if config else {})


def share(values) -> float:
    values = list(values)
    return round(sum(values) / len(values), 4) if values else float("nan")


def probe(model, tokenizer, name: str, args) -> dict:
    started = time.perf_counter()
    spec = GENERATORS[name]
    entries = distinct_problems(name, "eval", args.problems, args.seed)
    outputs = generate_completions(model, tokenizer, [make_prompt(e["question"]) for e in entries],
                                   num_samples=args.samples, temperature=args.temperature, top_p=args.top_p,
                                   max_new_tokens=args.cap, batch_size=16, seed=args.seed, fast=True)
    samples = []
    for entry, group in zip(entries, outputs):
        data = json.dumps(entry, default=str) if spec.verifier == "reasoning_gym" else ""
        samples.append([(is_correct(c.text, str(entry["answer"]), spec.verifier, data), c.num_tokens,
                         c.truncated) for c in group])
    flat = [s for group in samples for s in group]
    lengths = sorted(length for _, length, _ in flat)
    gold = Counter(str(e["answer"]) for e in distinct_problems(name, "eval", 200, args.seed))
    constant, count = gold.most_common(1)[0]
    report = {
        "generator": name, "constant_answer": constant, "constant_answer_share": round(count / gold.total(), 3), "problems": len(entries), "samples": args.samples,
        "accuracy": share(ok for ok, _, _ in flat),
        "groups_with_signal": share(len({ok for ok, _, _ in group}) > 1 for group in samples),
        "length_median": statistics.median(lengths), "length_p90": lengths[int(0.9 * (len(lengths) - 1))],
        "length_max": lengths[-1], "at_cap": share(t for _, _, t in flat),
        "correct_length_median": statistics.median([n for ok, n, _ in flat if ok] or [float("nan")]),
    }
    for limit in args.limits:
        within = [ok for ok, n, _ in flat if n <= limit]
        over = [ok for ok, n, _ in flat if n > limit]
        report[f"exceed_{limit}"] = share(n > limit for _, n, _ in flat)
        report[f"accuracy_within_{limit}"] = share(within)
        report[f"accuracy_over_{limit}"] = share(over)
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.show:
        report["examples"] = [c.text for c in outputs[0][: args.show]]
    return report


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model directory (resources/models/…)")
    parser.add_argument("--generators", nargs="*", default=[], help="the family's named generators")
    parser.add_argument("--spec", action="append", default=[], help="name=dataset:{json config}, repeatable")
    parser.add_argument("--problems", type=int, default=24)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--cap", type=int, default=128, help="completion cap (tokens)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--limits", type=int, nargs="*", default=[32, 64])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=0, help="print the first problem's first N completions")
    args = parser.parse_args(argv)
    names = list(args.generators)
    for text in args.spec:
        name, generator = parse_spec(text)
        GENERATORS[name] = generator
        names.append(name)
    if not names:
        parser.error("name at least one generator (--generators) or difficulty (--spec)")
    model, tokenizer = load_policy(args.model)
    for name in names:
        print(json.dumps(probe(model, tokenizer, name, args)), flush=True)


if __name__ == "__main__":
    main()
