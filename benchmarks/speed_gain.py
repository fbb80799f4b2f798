"""The speed work's gain in one run: training steps and evaluation at the cpu-evidence settings, one thread.

For each family's cpu-evidence task (``config/cpu-evidence.yaml``: tool calling, math) it trains, with the
task's own TRL settings (learning rate 0, so that every kind samples from the same unchanging policy), as

- ``bare TRL``: ``trl.GRPOTrainer`` with TRL's ``generate`` and padded rows (TRL's built-in GDPO);
- ``padded rows``: the suite's trainer with its rollout engine, but every completion carrying its prompt
  (``pack_prompts`` off: the path before the shared-prefix forward);
- ``today``: the workflow's path as the configs set it (engine with the float32-score attention, packed
  shared-prefix micro-batches);
- ``new``: ``today`` with the engine's fused attention (``attention="sdpa"``);

one kind after the other in each round, and prints the median seconds per optimizer step (the first step
of each run, warm-up, dropped) with the ratios. Then it evaluates the tool-calling task's first
``--eval-items`` held-out items with the evaluator's own prompts and greedy settings (batch 16, 96 new
tokens), as

- ``generate``: ``transformers``' ``generate`` (what an evaluation without the engine runs);
- ``batch by batch``: the engine, one batch of 16 at a time (the path before continuous batching);
- ``continuous``: the engine with continuous batching (evaluation's default);
- ``continuous, fused``: continuous batching with the fused attention;

and prints items per second. With ``--math-eval-items``, it evaluates the math task's first held-out
problems through lm-eval with the engine-backed model (the task's cpu-evidence evaluation settings, greedy),
``batch by batch`` (lm-eval's batches) and ``continuous``, and says whether the per-item outcomes are equal.
Each figure is also put against this machine, measured in the same run with one thread: training's useful FLOPs (4 per parameter and trained token, 6 with activation checkpointing)
over the matrix peak of the precision it runs in, and an evaluation's FLOPs (2 per parameter and token,
prompts included) over the float32 peak.

    python benchmarks/speed_gain.py                      # both families, 2 rounds, 4 steps, 48 items
    python benchmarks/speed_gain.py --families tool_calling --rounds 1 --steps 3 --eval-items 32
    python benchmarks/speed_gain.py --families math --kinds --math-eval-items 48   # math evaluation only

The tool-calling data are the workflow's BFCL split (``resources/data/bfcl_v3_split``, rule ``bfcl_split``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_evidence_speed import PARAMETERS, matmul_gflops  # noqa: E402
from rollout_speed import read_bandwidth_gb_s  # noqa: E402
from train_step_overhead import step_timer  # noqa: E402

BARE, PADDED, TODAY, NEW = "bare TRL", "padded rows", "today", "new"
GENERATE, STATIC, CONTINUOUS, FUSED = "generate", "batch by batch", "continuous", "continuous, fused"
#: The cpu-evidence task of each family (named after it).
FAMILIES = ("tool_calling", "math")


def train_step_seconds(kind: str, settings, model_dir: Path, steps: int) -> tuple[list[float], list[float]]:
    """(seconds of each optimizer step after the first, packed tokens trained per step) of one short run."""
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from gdpo.generation.precision import cpu_dtype
    from gdpo.tasks import get_family
    from gdpo.training.rewards import guard_reward_function
    from gdpo.training.run import _metrics_callback
    from gdpo.training.trainer import TRL_BUILTIN_EQUIVALENT, RegistryGRPOTrainer

    family = get_family(settings.family)
    with tempfile.TemporaryDirectory() as out:
        trl_args = {**settings.trl, "max_steps": steps, "save_strategy": "no", "learning_rate": 0.0}
        # Every kind runs the precision the workflow would here: bfloat16 autocast only where it is native.
        trl_args["bf16"] = bool(trl_args.get("bf16")) and cpu_dtype(torch.bfloat16) == torch.bfloat16
        arguments = GRPOConfig(output_dir=out, seed=0, logging_steps=1, report_to="none", disable_tqdm=True,
                               reward_weights=list(settings.reward_weights), **TRL_BUILTIN_EQUIVALENT["gdpo"],
                               **trl_args)
        timer = step_timer()
        common = dict(model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32), args=arguments,
                      train_dataset=family.build_dataset("train", settings.train_size, 0, **settings.data_options),
                      processing_class=AutoTokenizer.from_pretrained(model_dir),
                      peft_config=LoraConfig(task_type="CAUSAL_LM", **settings.peft) if settings.peft else None)
        metrics = Path(out) / "metrics.jsonl"
        if kind == BARE:
            trainer = GRPOTrainer(reward_funcs=[family.REWARD_FUNCTIONS[n] for n in settings.reward_names],
                                  callbacks=[timer, _metrics_callback(metrics)], **common)
        else:
            trainer = RegistryGRPOTrainer(
                reward_funcs=[guard_reward_function(n, family.REWARD_FUNCTIONS[n]) for n in settings.reward_names],
                callbacks=[timer, _metrics_callback(metrics)], advantage_method="gdpo", advantage_convention="trl",
                fast_generation=True, pack_prompts=kind != PADDED, **common)
            trainer.rollout_engine.attention = "sdpa" if kind == NEW else "manual"
        trainer.remove_callback(PrinterCallback)
        trainer.train()
        rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    tokens, previous = [], 0.0
    batch = settings.trl["per_device_train_batch_size"] * settings.trl["gradient_accumulation_steps"]
    groups = batch // settings.trl["num_generations"]
    for row in rows:
        if "num_tokens" not in row or "completions/mean_length" not in row:
            continue
        completion = batch * row["completions/mean_length"]
        prompt = (row["num_tokens"] - previous - completion) / batch
        tokens.append(groups * prompt + completion)  # each prompt once per group, as the packed layout trains
        previous = row["num_tokens"]
    return timer.seconds[1:], tokens[1:]


def tool_calling_prompts(settings, items: int) -> list[list[dict]]:
    """The evaluator's prompts for the first ``items`` held-out items it would evaluate."""
    from gdpo.tasks.tool_calling import evaluation as tool_eval

    options = tool_eval.validate_options(dict(settings.data_options))
    rows = tool_eval.read_split_file(tool_eval.eval_split_dir(options) / "eval.jsonl")
    prompts = {row["id"]: tool_eval.build_prompt(row["question"], row["tools"]) for row in rows}
    if options["max_prompt_chars"] is not None:
        rows = [row for row in rows if tool_eval.prompt_chars(prompts[row["id"]]) <= options["max_prompt_chars"]]
    return [prompts[row["id"]] for row in tool_eval.select_items(rows, items, tool_eval.EVAL_SUBSET_SEED)]


def evaluation_seconds(kind: str, model, tokenizer, prompts, max_new_tokens: int, batch_size: int):
    """(seconds, completions) of one greedy generation of every prompt."""
    from gdpo.generation.generate import generate_completions

    start = time.perf_counter()
    completions = generate_completions(model, tokenizer, prompts, temperature=0.0, max_new_tokens=max_new_tokens,
                                       batch_size=batch_size, fast=kind != GENERATE,
                                       continuous_batching=kind in (CONTINUOUS, FUSED),
                                       attention="sdpa" if kind == FUSED else "manual")
    return time.perf_counter() - start, completions


def math_evaluation_seconds(continuous: bool, settings, model_dir: Path, work_dir: Path) -> tuple[float, dict]:
    """(seconds, per-item outcomes) of one greedy math evaluation of the base model through lm-eval."""
    from gdpo.evaluation import EvalRequest
    from gdpo.files import ITEMS_KEY
    from gdpo.tasks import get_family

    request = EvalRequest(task=settings.task, method="base", seed=0, model_dir=model_dir, adapter_dir=None,
                          options=dict(settings.options), eval_size=settings.eval_size,
                          num_samples=settings.num_samples, temperature=0.0, top_p=1.0,
                          max_new_tokens=settings.max_new_tokens, batch_size=settings.batch_size, work_dir=work_dir,
                          threads=1, fast_generation=True, continuous_batching=continuous)
    start = time.perf_counter()
    result = get_family(settings.family).evaluate(request)
    return time.perf_counter() - start, result[ITEMS_KEY]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the training kinds, one after the other")
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps per training run (first dropped)")
    parser.add_argument("--eval-items", type=int, default=48, help="tool-calling items evaluated per kind (0: none)")
    parser.add_argument("--kinds", nargs="*", default=[BARE, PADDED, TODAY, NEW],
                        help="training kinds to run (none: evaluation only)")
    parser.add_argument("--math-eval-items", type=int, default=0,
                        help="math problems evaluated per kind through lm-eval (0: none)")
    args = parser.parse_args()
    torch.set_num_threads(1)

    from datasets import disable_progress_bars

    from gdpo.generation.precision import cpu_dtype, native_cpu_bf16
    from gdpo.plan import model_slug, resolve_run_settings
    from gdpo.training.models import prepare_model

    disable_progress_bars()
    config = yaml.safe_load((REPO / "config" / "cpu-evidence.yaml").read_text())
    bandwidth = read_bandwidth_gb_s()
    bf16, fp32 = matmul_gflops(torch.bfloat16), matmul_gflops(torch.float32)
    train_peak = bf16 if cpu_dtype(torch.bfloat16) == torch.bfloat16 else fp32
    print(f"torch {torch.__version__}, one thread; native bfloat16: {native_cpu_bf16()}; memory read "
          f"{bandwidth:.1f} GB/s; matrix products bf16 {bf16:.1f} GFLOP/s, fp32 {fp32:.1f} GFLOP/s; training runs in "
          f"{'bfloat16' if train_peak == bf16 else 'float32'}", flush=True)
    for family in args.families:
        settings = resolve_run_settings(config, family, "gdpo", 0)
        model_dir = REPO / "resources" / "models" / model_slug(settings.model)
        if not (model_dir / "config.json").is_file():
            prepare_model(settings.model, model_dir)
        times: dict[str, list[float]] = {kind: [] for kind in args.kinds}
        tokens: dict[str, list[float]] = {kind: [] for kind in args.kinds}
        for _ in range(args.rounds):
            for kind in args.kinds:
                seconds, trained = train_step_seconds(kind, settings, model_dir, args.steps)
                times[kind] += seconds
                tokens[kind] += trained
                print(f"  {family} {kind}: {[round(s, 1) for s in seconds]} s", flush=True)
        if args.kinds:
            flops_per_token = (6 if settings.trl.get("gradient_checkpointing", True) else 4) * PARAMETERS
            print(f"\n{family} training step ({settings.trl['max_completion_length']} new tokens at most, "
                  f"{settings.trl['per_device_train_batch_size'] * settings.trl['gradient_accumulation_steps']} completions):")
            print(f"{'kind':<16} {'steps':>5} {'median s':>9} {'/ today':>8} {'packed tokens':>14} {'of peak':>8}")
            reference = statistics.median(times[TODAY]) if times.get(TODAY) else None
            for kind in args.kinds:
                median = statistics.median(times[kind])
                packed = statistics.median(tokens[kind]) if tokens[kind] else float("nan")
                ratio = f"{median / reference:.2f}" if reference else "-"
                print(f"{kind:<16} {len(times[kind]):>5} {median:>9.1f} {ratio:>8} {packed:>14.0f} "
                      f"{flops_per_token * packed / median / 1e9 / train_peak:>8.0%}")
        if family == "math" and args.math_eval_items:
            import dataclasses

            from gdpo.plan import resolve_eval_settings

            eval_settings = dataclasses.replace(resolve_eval_settings(config, family, "base", 0),
                                                eval_size=args.math_eval_items)
            runs = {}
            for kind in (STATIC, CONTINUOUS):
                with tempfile.TemporaryDirectory() as work:
                    runs[kind] = math_evaluation_seconds(kind == CONTINUOUS, eval_settings, model_dir, Path(work))
                print(f"  math evaluation {kind}: {runs[kind][0]:.1f} s", flush=True)
            print(f"\nmath evaluation (lm-eval, engine model), {args.math_eval_items} problems x "
                  f"{eval_settings.num_samples} samples, greedy, batch {eval_settings.batch_size}, "
                  f"{eval_settings.max_new_tokens} new tokens at most:")
            print(f"{'kind':<18} {'items/s':>8} {'x batch by batch':>17} {'same outcomes':>14}")
            for kind, (seconds, items) in runs.items():
                print(f"{kind:<18} {args.math_eval_items / seconds:>8.3f} {runs[STATIC][0] / seconds:>17.2f} "
                      f"{str(items == runs[STATIC][1]):>14}")
        if family == "tool_calling" and args.eval_items:
            from gdpo.generation.generate import load_policy

            eval_settings = config["tasks"][family]["evaluation"]
            max_new = eval_settings.get("max_new_tokens", config["evaluation"]["max_new_tokens"])
            batch_size = config["evaluation"]["batch_size"]
            prompts = tool_calling_prompts(settings, args.eval_items)
            model, tokenizer = load_policy(model_dir)
            prompt_tokens = sum(len(tokenizer.apply_chat_template(p, tokenize=True, add_generation_prompt=True)
                                    ["input_ids"]) for p in prompts)
            results = {}
            for kind in (GENERATE, STATIC, CONTINUOUS, FUSED):
                seconds, completions = evaluation_seconds(kind, model, tokenizer, prompts, max_new, batch_size)
                results[kind] = (seconds, completions)
                print(f"  evaluation {kind}: {seconds:.1f} s", flush=True)
            print(f"\ntool-calling evaluation, {len(prompts)} items, greedy, batch {batch_size}, {max_new} new tokens "
                  f"at most, {prompt_tokens / len(prompts):.0f} prompt tokens on average:")
            print(f"{'kind':<18} {'items/s':>8} {'x batch by batch':>17} {'of fp32 peak':>13} {'same completions':>17}")
            for kind, (seconds, completions) in results.items():
                generated = sum(c.num_tokens for samples in completions for c in samples)
                flops = 2 * PARAMETERS * (prompt_tokens + generated)
                same = completions == results[STATIC][1]
                print(f"{kind:<18} {len(prompts) / seconds:>8.3f} {results[STATIC][0] / seconds:>17.2f} "
                      f"{flops / seconds / 1e9 / fp32:>13.0%} {str(same):>17}")


if __name__ == "__main__":
    main()
