"""Measure how often a model solves each reasoning-gym generator (how the default mix was chosen).

A generator is useful for GRPO/GDPO training only if the policy solves it sometimes but not always:
otherwise every group of rollouts gets the same correctness reward and no advantage. This samples
``samples`` completions for ``problems`` training problems per generator and reports, per generator,
the solve rate (pass@1 over all samples), the share of problems whose samples disagree (groups with
a non-zero correctness advantage), and the share of completions that box their answer.

Run: ``python -m gdpo.tasks.math.calibrate MODEL_DIR [--problems 8 --samples 4 --max-new-tokens 128]``.
"""

from __future__ import annotations

import argparse
import json
import time

from gdpo.tasks.math.data import GENERATORS, generate_problems, make_prompt
from gdpo.tasks.math.rewards import is_correct, last_boxed


def measure_solve_rates(
    model_dir,
    generators=None,
    *,
    problems: int = 8,
    samples: int = 4,
    max_new_tokens: int = 128,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 16,
) -> dict[str, dict]:
    """Per generator: ``solve_rate``, ``varying_groups``, ``boxed`` (fractions in [0, 1]) and ``seconds``."""
    from gdpo.generation.generate import generate_completions, load_policy

    model, tokenizer = load_policy(model_dir)
    report = {}
    for name in generators or GENERATORS:
        start = time.perf_counter()
        spec = GENERATORS[name]
        entries = generate_problems(name, "train", problems, seed)
        outputs = generate_completions(
            model,
            tokenizer,
            [make_prompt(e["question"]) for e in entries],
            num_samples=samples,
            temperature=temperature,
            top_p=1.0,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            seed=seed,
        )
        scores, varying, boxed = [], 0, 0
        for entry, completions in zip(entries, outputs):
            data = json.dumps(entry, default=str) if spec.verifier == "reasoning_gym" else ""
            group = [is_correct(c.text, str(entry["answer"]), spec.verifier, data) for c in completions]
            scores += group
            varying += len(set(group)) > 1
            boxed += sum(last_boxed(c.text) is not None for c in completions)
        report[name] = {
            "solve_rate": sum(scores) / len(scores),
            "varying_groups": varying / len(entries),
            "boxed": boxed / len(scores),
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(name, json.dumps(report[name]), flush=True)
    return report


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir")
    parser.add_argument("--generators", nargs="*", default=None, help="default: every known generator")
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    report = measure_solve_rates(
        args.model_dir,
        args.generators,
        problems=args.problems,
        samples=args.samples,
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        seed=args.seed,
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
