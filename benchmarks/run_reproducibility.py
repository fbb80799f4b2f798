"""Does the same seed give the same run? Trains one short run of a config's task twice, each in a fresh process,
and compares them step by step; optionally compares with a reference recorded on another machine.

Each repeat is a separate ``python -m gdpo train`` process (what the workflow runs), with the config's
settings and ``--steps`` optimizer steps. Compared per step: every logged reward mean, the completion
lengths and the loss (exactly, as recorded in metrics.jsonl), then the trained adapter's weights (largest
absolute difference). ``--save-reference FILE`` writes the first repeat's metrics with this machine's CPU
record (``env.json``); ``--reference FILE`` compares with such a file made elsewhere.

    python benchmarks/run_reproducibility.py --config config/cpu-evidence.yaml --task math --steps 6
    python benchmarks/run_reproducibility.py --config config/cpu-evidence.yaml --task math --steps 6 \\
        --reference benchmarks/reference/math_seed0_6steps.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from gdpo.config import load_config
from gdpo.plan import RunSettings, resolve_run_settings
from gdpo.training.run import read_metrics

COMPARED = ("loss", "completions/mean_length", "completions/max_length", "reward")


def compared_values(step: dict) -> dict:
    """The per-step values compared between runs: the loss, lengths, total reward and every reward mean."""
    return {k: v for k, v in step.items() if k in COMPARED or (k.startswith("rewards/") and k.endswith("/mean"))}


def first_difference(a: list[dict], b: list[dict]) -> str | None:
    """``"step 2: rewards/correct/mean 0.5 vs 0.25"`` for the first differing value, or None."""
    for step_a, step_b in zip(a, b):
        values_a, values_b = compared_values(step_a), compared_values(step_b)
        for key in sorted(values_a.keys() | values_b.keys()):
            if values_a.get(key) != values_b.get(key):
                return f"step {step_a.get('step')}: {key} {values_a.get(key)} vs {values_b.get(key)}"
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} steps"
    return None


def adapter_difference(a: Path, b: Path) -> float:
    from safetensors.torch import load_file

    weights_a, weights_b = load_file(a / "adapter_model.safetensors"), load_file(b / "adapter_model.safetensors")
    return max(float((weights_a[k] - weights_b[k]).abs().max()) for k in weights_a)


def train_once(settings: RunSettings, model_dir: str, run_dir: Path, threads: int) -> list[dict]:
    subprocess.run([sys.executable, "-m", "gdpo", "train", "--settings", settings.to_json(), "--model-dir",
                    model_dir, "--run-dir", str(run_dir), "--threads", str(threads)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return read_metrics(run_dir / "metrics.jsonl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="config/cpu-evidence.yaml")
    parser.add_argument("--task", default="math")
    parser.add_argument("--method", default="gdpo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--model-dir", help="the starting model (default: the prepared model of the task)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--save-reference", help="write the first repeat's metrics and CPU record here")
    parser.add_argument("--reference", help="compare with a reference written on another machine")
    args = parser.parse_args()
    config = load_config(args.config)
    settings = resolve_run_settings(config, args.task, args.method, args.seed)
    settings = dataclasses.replace(settings, trl={**settings.trl, "max_steps": args.steps,
                                                  "save_steps": 10 * args.steps})
    model_dir = args.model_dir or "resources/models/smollm2-135m-instruct"
    print(f"torch {torch.__version__}, {args.threads} thread(s); {args.task}/{args.method} seed {args.seed}, "
          f"{args.steps} steps, from {model_dir}")
    with tempfile.TemporaryDirectory() as scratch:
        runs = [Path(scratch) / f"repeat{i}" for i in (1, 2)]
        metrics = [train_once(settings, model_dir, run, args.threads) for run in runs]
        cpu = json.loads((runs[0] / "env.json").read_text())["cpu"]
        difference = first_difference(*metrics)
        print(f"CPU: {cpu['model']}, kernels {cpu['torch_capability']}, flags {' '.join(cpu['kernel_flags'])}")
        print("same machine, two processes: " + (f"differ at {difference}" if difference else
              f"identical over {len(metrics[0])} steps") +
              f"; adapter weights differ by at most {adapter_difference(runs[0] / 'model', runs[1] / 'model'):.3g}")
        if args.save_reference:
            Path(args.save_reference).parent.mkdir(parents=True, exist_ok=True)
            Path(args.save_reference).write_text(json.dumps(
                {"settings": settings.to_dict(), "cpu": cpu, "metrics": metrics[0]}, indent=1), encoding="utf-8")
            print(f"wrote {args.save_reference}")
        if args.reference:
            reference = json.loads(Path(args.reference).read_text(encoding="utf-8"))
            if reference["settings"] != json.loads(settings.to_json()):
                raise SystemExit(f"{args.reference} was made with other settings; rerun with the same options.")
            other = reference["cpu"]
            difference = first_difference(reference["metrics"], metrics[0])
            print(f"against {args.reference} ({other['model']}, kernels {other['torch_capability']}, flags "
                  f"{' '.join(other['kernel_flags'])}): " + (f"differ at {difference}" if difference else
                                                             f"identical over {len(metrics[0])} steps"))


if __name__ == "__main__":
    main()
