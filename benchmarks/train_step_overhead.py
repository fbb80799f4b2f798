"""One training step: the suite's trainer against bare TRL, same settings, same run.

For each scale, trains the same task per round with

- ``bare TRL``: ``trl.GRPOTrainer`` (TRL's built-in GDPO path, raw reward functions, default ``generate``);
- ``ours``: the suite's ``RegistryGRPOTrainer`` (registry advantages, guarded reward functions, per-step
  metrics file) with the same ``generate``;
- ``ours, workflow``: the suite's trainer as the workflow runs it: rollouts from the bfloat16 engine
  (``fast_generation``) and micro-batches scored as packed sequences (``pack_prompts``), as the scale's
  config sets them;
- ``bare TRL, fp32``: bare TRL at TRL's own precision and batching defaults (float32, all 8 completions in
  one forward/backward, activation checkpointing) — the trainer before the mini config's mixed precision
  and micro-batches;

alternating over rounds, and prints the median seconds per optimizer step of each and the ratios. All
see the same model, data, seed, and the scale's TRL arguments (except the last kind's precision and
batching). The learning rate is 0 so that every kind samples from the same, unchanging policy: step
times then differ by implementation only, not by how long the completions of diverging policies are.

    python benchmarks/train_step_overhead.py                       # smoke and mini
    python benchmarks/train_step_overhead.py --scales mini --mini-task code --rounds 2
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
import yaml

from gdpo.plan import RunSettings

REPO = Path(__file__).resolve().parents[1]
STEPS = {"smoke": 20, "mini": 4}
BARE, OURS, FAST, BARE_FP32 = "bare TRL", "ours", "ours, workflow", "bare TRL, fp32"
#: TRL's defaults for what the mini config changes for speed and memory (one batch of 8 per step).
TRL_DEFAULT_PRECISION = {"bf16": False, "gradient_checkpointing": True, "gradient_accumulation_steps": 1}


def step_timer():
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.seconds, self._start = [], None

        def on_step_begin(self, args, state, control, **kwargs):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self._start)

    return StepTimer()


def run_once(kind: str, settings: RunSettings, model_dir: Path, steps: int) -> list[float]:
    """Seconds of each optimizer step (the first, warm-up step dropped)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from gdpo.tasks import get_family
    from gdpo.training.rewards import guard_reward_function
    from gdpo.training.run import _metrics_callback
    from gdpo.training.trainer import TRL_BUILTIN_EQUIVALENT, RegistryGRPOTrainer

    family = get_family(settings.family)
    with tempfile.TemporaryDirectory() as out:
        trl_args = {**settings.trl, "max_steps": steps, "save_strategy": "no", "learning_rate": 0.0}
        dtype = getattr(torch, settings.policy_dtype)
        if kind == BARE_FP32:
            batch = trl_args.get("per_device_train_batch_size", 8) * trl_args.get("gradient_accumulation_steps", 1)
            trl_args.update(TRL_DEFAULT_PRECISION, per_device_train_batch_size=batch)
            dtype = torch.float32
        arguments = GRPOConfig(output_dir=out, seed=0, logging_steps=1, report_to="none", disable_tqdm=True,
                               reward_weights=list(settings.reward_weights), **TRL_BUILTIN_EQUIVALENT["gdpo"], **trl_args)
        peft_config = None
        if settings.peft:
            from peft import LoraConfig

            peft_config = LoraConfig(task_type="CAUSAL_LM", **settings.peft)
        timer = step_timer()
        common = dict(model=AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype), args=arguments,
                      train_dataset=family.build_dataset("train", settings.train_size, 0, **settings.data_options),
                      processing_class=AutoTokenizer.from_pretrained(model_dir), peft_config=peft_config)
        if kind in (BARE, BARE_FP32):
            trainer = GRPOTrainer(reward_funcs=[family.REWARD_FUNCTIONS[n] for n in settings.reward_names],
                                  callbacks=[timer], **common)
        else:
            trainer = RegistryGRPOTrainer(
                reward_funcs=[guard_reward_function(n, family.REWARD_FUNCTIONS[n]) for n in settings.reward_names],
                callbacks=[timer, _metrics_callback(Path(out) / "metrics.jsonl")],
                advantage_method="gdpo", advantage_convention="trl", fast_generation=kind == FAST and settings.fast_generation,
                pack_prompts=kind == FAST and settings.pack_prompts, **common)
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # keep the benchmark's output to its table
        trainer.train()
    return timer.seconds[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scales", nargs="+", default=["smoke", "mini"])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of the four trainers")
    parser.add_argument("--mini-task", default="math", help="task of config/mini.yaml (smoke: its first task)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from datasets import disable_progress_bars

    from gdpo.plan import model_slug, resolve_run_settings
    from gdpo.training.models import prepare_model

    disable_progress_bars()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'scale':<6} {'trainer':<15} {'steps':>5} {'median s/step':>14}")
    for scale in args.scales:
        config = yaml.safe_load((REPO / "config" / f"{scale}.yaml").read_text())
        task = args.mini_task if scale == "mini" else next(iter(config["tasks"]))
        settings = resolve_run_settings(config, task, "gdpo", 0)
        model_dir = REPO / "resources" / "models" / model_slug(settings.model)
        if not (model_dir / "config.json").is_file():
            prepare_model(settings.model, model_dir)
        times = {BARE: [], OURS: [], FAST: [], BARE_FP32: []}
        for _ in range(args.rounds):
            for kind in times:
                times[kind] += run_once(kind, settings, model_dir, STEPS[scale])
        medians = {kind: statistics.median(values) for kind, values in times.items()}
        for kind, values in times.items():
            print(f"{scale:<6} {kind:<15} {len(values):>5} {medians[kind]:>14.4f}")
        print(f"{scale:<6} {task}: overhead ours / bare TRL = {medians[OURS] / medians[BARE]:.3f}; "
              f"speed-up bare TRL / (ours, workflow) = {medians[BARE] / medians[FAST]:.2f}x; "
              f"bare TRL, fp32 / (ours, workflow) = {medians[BARE_FP32] / medians[FAST]:.2f}x")


if __name__ == "__main__":
    main()
