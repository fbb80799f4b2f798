"""Cost of the code family's rewards against a mini training step, measured in the same run.

(1) Scores one mini batch — 8 completions of procedural problems in a realistic mix (correct, wrong,
compile error, runtime error, an infinite loop, a memory hog) — with all three rewards (pass,
length_conditioned, bug; one sandbox run per completion), cache cleared before each repeat; prints the
median. (2) Trains a few mini steps of SmolLM2-135M with TRL's GRPOTrainer on the code family (the mini
config's settings, GDPO, 3 objectives), timing each step and the reward calls inside it. Target: scoring
takes under 5 % of a step.

    python benchmarks/code_reward_speed.py
    python benchmarks/code_reward_speed.py --repeats 9 --steps 0          # scoring only
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MINI_MODEL = REPO / "resources" / "models" / "smollm2-135m-instruct"


def mixed_batch():
    """8 TRL-style completions for 8 procedural problems, and the dataset columns the rewards read."""
    from gdpo.tasks.code.problems import TEMPLATES, procedural_problems

    problems = procedural_problems("train", 8, seed=0)
    templates = {t.name: t for t in TEMPLATES}
    wrong_bodies = {
        "wrong": "return None",
        "compile error": "return (",
        "runtime error": "return 1 / 0",
        "infinite loop": "while True:\n        pass",
        "memory hog": "return bytearray(4 << 30)",
    }
    kinds = ["correct"] * 3 + list(wrong_bodies)
    completions = []
    for problem, kind in zip(problems, kinds):
        template = templates[problem["problem_id"].split("-", 3)[3]]
        if kind == "correct":
            program = _reference_source(template)
        else:
            program = f"def {template.name}({template.params}):\n    {wrong_bodies[kind]}\n"
        completions.append([{"role": "assistant", "content": f"Here it is.\n```python\n{program}```"}])
    columns = {
        "tests": [p["tests"] for p in problems],
        "time_limit": [p["time_limit"] for p in problems],
        "code_prefix": [p["code_prefix"] for p in problems],
        "length_limit": [64] * 8,
        "completion_ids": [[0] * 40] * 8,
    }
    return completions, columns


_REFERENCE = {
    "add": "a + b",
    "subtract": "a - b",
    "multiply": "a * b",
    "square": "n * n",
    "double": "2 * n",
    "absolute": "abs(n)",
    "is_even": "n % 2 == 0",
    "is_positive": "n > 0",
    "maximum": "max(numbers)",
    "minimum": "min(numbers)",
    "total": "sum(numbers)",
    "first_element": "items[0]",
    "last_element": "items[-1]",
    "reverse_string": "s[::-1]",
    "string_length": "len(s)",
    "to_upper": "s.upper()",
    "concat": "a + b",
    "count_vowels": "sum(c in 'aeiou' for c in s)",
    "factorial": "__import__('math').factorial(n)",
    "count_occurrences": "items.count(x)",
}


def _reference_source(template) -> str:
    return f"def {template.name}({template.params}):\n    return {_REFERENCE[template.name]}\n"


def time_scoring(repeats: int) -> list[float]:
    from gdpo.tasks.code import rewards

    completions, columns = mixed_batch()
    times, statuses = [], None
    for _ in range(repeats):
        rewards.clear_cache()
        start = time.perf_counter()
        for function in rewards.REWARD_FUNCTIONS.values():
            function(completions, **columns)
        times.append(time.perf_counter() - start)
    results = rewards.score_completions(
        completions, columns["tests"], columns["time_limit"], columns["code_prefix"]
    )
    statuses = Counter(r.status for r in results)
    print(f"mix: {dict(statuses)}; passed fractions {[round(r.fraction_passed, 2) for r in results]}")
    return times


def time_training(model_dir: Path, steps: int) -> tuple[list[float], list[float]]:
    """Seconds of each mini training step and of the reward calls inside it (first step dropped)."""
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from gdpo.tasks import code
    from gdpo.training.trainer import TRL_BUILTIN_EQUIVALENT

    reward_seconds = [0.0]

    def timed(function):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                reward_seconds[-1] += time.perf_counter() - start

        wrapper.__name__ = function.__name__
        return wrapper

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.seconds, self.rewards, self._start = [], [], None

        def on_step_begin(self, args, state, control, **kwargs):
            self._start = time.perf_counter()
            reward_seconds.append(0.0)

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self._start)
            self.rewards.append(reward_seconds[-1])

    timer = StepTimer()
    with tempfile.TemporaryDirectory() as out:
        arguments = GRPOConfig(
            output_dir=out,
            seed=0,
            logging_steps=1,
            report_to="none",
            disable_tqdm=True,
            save_strategy="no",
            max_steps=steps + 1,
            num_generations=4,
            per_device_train_batch_size=8,
            max_completion_length=64,
            learning_rate=1e-3,
            lr_scheduler_type="constant",
            loss_type="grpo",
            beta=0.0,
            temperature=1.0,
            bf16=False,
            reward_weights=[1.0, 1.0, 1.0],
            **TRL_BUILTIN_EQUIVALENT["gdpo"],
        )
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(model_dir),
            reward_funcs=[timed(f) for f in code.REWARD_FUNCTIONS.values()],
            args=arguments,
            train_dataset=code.build_dataset("train", 64, 0, length_limit=64),
            processing_class=AutoTokenizer.from_pretrained(model_dir),
            peft_config=LoraConfig(task_type="CAUSAL_LM", r=16, lora_alpha=32, target_modules="all-linear"),
            callbacks=[timer],
        )
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    return timer.seconds[1:], timer.rewards[1:]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeats", type=int, default=7, help="scorings of the mixed batch (median reported)"
    )
    parser.add_argument(
        "--steps", type=int, default=3, help="timed training steps after one warm-up (0: skip)"
    )
    parser.add_argument("--model-dir", type=Path, default=MINI_MODEL, help="prepared SmolLM2-135M-Instruct")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads for training")
    args = parser.parse_args()

    from gdpo.tasks.code import sandbox

    # limits_mode probes once, here, outside the timing; the code before per-run cgroups had no such probe
    # (this script also times that code, for the before/after comparison in benchmarks/README.md)
    limits = sandbox.limits_mode() if hasattr(sandbox, "limits_mode") else "watchdog"
    print(
        f"machine: {os.cpu_count()} cores; sandbox {sandbox.isolation_mode()}, limits {limits}, "
        f"with {sandbox.sandbox_python()[0]}"
    )
    scoring = time_scoring(args.repeats)
    score_ms = 1000 * statistics.median(scoring)
    print(
        f"scoring 8 completions x 3 rewards: median {score_ms:.0f} ms over {args.repeats} runs "
        f"(all: {', '.join(f'{1000 * t:.0f}' for t in scoring)})"
    )
    if args.steps <= 0:
        return
    if not (args.model_dir / "config.json").exists():
        print(f"no prepared model at {args.model_dir}; compare {score_ms:.0f} ms with a measured mini step")
        return
    import torch

    torch.set_num_threads(args.threads)
    steps, in_step = time_training(args.model_dir, args.steps)
    step_s = statistics.median(steps)
    print(
        f"mini training step (SmolLM2-135M, 8 completions x 64 tokens, LoRA, code rewards): "
        f"median {step_s:.2f} s "
        f"over {len(steps)} steps (all: {', '.join(f'{t:.2f}' for t in steps)})"
    )
    print(
        f"reward calls inside those steps: {', '.join(f'{1000 * t:.0f} ms' for t in in_step)} "
        f"= {100 * statistics.median(in_step) / step_s:.1f} % of a step"
    )
    print(f"mixed batch scoring / step: {100 * score_ms / 1000 / step_s:.1f} % (target < 5 %)")


if __name__ == "__main__":
    main()
