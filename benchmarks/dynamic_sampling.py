"""Dynamic sampling on and off in a short math run at mini scale: silent groups and steps without an update.

Trains the mini config's ``math`` task (SmolLM2-135M, LoRA, reasoning-gym problems, rewards correct and length)
with GRPO and GDPO, once with the config's loop and once with ``dynamic_sampling: true`` (verl's filter groups:
``auto`` metric, at most 10 generation rounds per step), for ``--steps`` optimizer steps, and prints per run and
per step:

- ``silent``: the share of the trained batch's groups without signal (``training_signal/silent_groups``);
- ``silent_generated``: the share among every group the step generated (``training_signal/silent_groups_generated``);
- ``no_update``: every advantage of the batch was 0 (``training_signal/zero_advantage_batch``);
- ``rounds``: generation rounds of the step (1 without dynamic sampling).

    python benchmarks/dynamic_sampling.py --steps 16 --out benchmarks/reference/dynamic_sampling-mini.jsonl

Writes one JSON line per (run, step) to ``--out`` and a summary line per run to stdout. The runs go to
``--work`` (default a temporary directory) and are deleted afterwards.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import tempfile
import time
from pathlib import Path

from gdpo.config import load_config
from gdpo.plan import resolve_run_settings
from gdpo.training import models
from gdpo.training.run import read_metrics, train

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=["grpo", "gdpo"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()

    config = load_config(REPO / "config" / "mini.yaml")
    config["training"] = {**config["training"], "max_steps": args.steps, "save_steps": args.steps}
    work = args.work or Path(tempfile.mkdtemp(prefix="dynamic-sampling-"))
    model_dir = REPO / "resources" / "models" / "smollm2-135m-instruct"
    if not (model_dir / "config.json").exists():
        model_dir = Path(models.prepare_model(config["tasks"]["math"]["model"], work / "model"))
    cpu = "avx512_bf16" if "avx512_bf16" in Path("/proc/cpuinfo").read_text() else "no native bf16"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for dynamic in (False, True):
            for method in args.methods:
                variant = copy.deepcopy(config)
                if dynamic:
                    variant["training"]["dynamic_sampling"] = True
                settings = resolve_run_settings(variant, "math", method, args.seed)
                run_dir = work / f"{method}-{'dynamic' if dynamic else 'plain'}"
                started = time.perf_counter()
                train(settings, model_dir, run_dir, threads=args.threads)
                seconds = time.perf_counter() - started
                records = read_metrics(run_dir / "metrics.jsonl")
                rows = []
                for record in records:
                    row = {"method": method, "dynamic_sampling": dynamic, "step": record["step"],
                           "silent": record["training_signal/silent_groups"],
                           "silent_generated": record["training_signal/silent_groups_generated"],
                           "no_update": record["training_signal/zero_advantage_batch"],
                           "rounds": record.get("dynamic_sampling/rounds", 1.0),
                           "correct": record.get("rewards/correct/mean"), "length": record.get("rewards/length/mean")}
                    rows.append(row)
                    out.write(json.dumps(row) + "\n")
                out.flush()
                summary = {
                    "method": method, "dynamic_sampling": dynamic, "steps": len(rows), "seconds": round(seconds, 1),
                    "mean_silent": sum(r["silent"] for r in rows) / len(rows),
                    "mean_silent_generated": sum(r["silent_generated"] for r in rows) / len(rows),
                    "steps_without_update": int(sum(r["no_update"] for r in rows)),
                    "mean_rounds": sum(r["rounds"] for r in rows) / len(rows),
                    "model": settings.model, "task": "math (mini)", "cpu": f"{platform.machine()}, {cpu}",
                }
                print(json.dumps(summary), flush=True)
    if args.work is None:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
