"""Math RL runs under changed settings, summarised by what C5's and C6's validity conditions read.

Each setting is a config with some keys changed (``--set``), trained and evaluated with the workflow's own
functions (``gdpo.training.run.train``, ``gdpo.evaluation.run.evaluate_run``) from the task's model, and
summarised per run: training correctness and mean length at the start and in the last 40 % of the steps, the
longest response of the run, the share of the last 40 % of steps with a training signal (some kept group's
rewards differ), the dynamic-sampling rounds per step, the seconds per step, and the held-out accuracy and
Exceed. Run it in the environment of the numeric setting the experiment uses (``cpu_numerics: portable``:
``env $(python -c 'from gdpo.numerics import PORTABLE_ENVIRONMENT as e; print(*[f"{k}={v}" for k, v in
e.items()])') python benchmarks/math_pilot.py ...``); each run's ``env.json`` records it.

    python benchmarks/math_pilot.py --config config/cpu-evidence-2.yaml config/overlays/cpu-evidence-2-pilot.yaml \
        --out results/pilot2/math_L16 \
        --set tasks.math.length_limit=16 --set tasks.math.training.max_completion_length=32 \
        --set tasks.math.training.max_steps=150 --methods grpo gdpo --seeds 100

Prints one JSON line per run; run directories go to ``--out`` (a run already there is not retrained).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tool_calling_experiment import apply_overrides

from gdpo.config import load_config
from gdpo.evaluation.run import evaluate_run
from gdpo.plan import model_dir, resolve_eval_settings, resolve_run_settings
from gdpo.training.run import read_metrics, train

TASK = "math"


def mean(rows: list[dict], key: str) -> float | None:
    values = [float(r[key]) for r in rows if r.get(key) is not None]
    return round(statistics.mean(values), 3) if values else None


def run_summary(run_dir: Path, record: dict) -> dict:
    steps = read_metrics(run_dir / "metrics.jsonl")
    window = steps[int(0.6 * len(steps)):]
    # a step trains where some advantage is not zero (the method's own: GRPO's summed reward may tie where
    # GDPO's per-reward advantages do not)
    signal = [float(s.get("advantages/std", 0.0)) > 0 for s in window]
    metrics = next(iter(record["benchmarks"].values()))
    return {
        "steps": len(steps),
        "correct_first_10": mean(steps[:10], "rewards/correct/mean"),
        "correct_last_40pc": mean(window, "rewards/correct/mean"),
        "length_first_10": mean(steps[:10], "completions/mean_length"),
        "length_last_40pc": mean(window, "completions/mean_length"),
        "max_length_run": max(float(s["completions/max_length"]) for s in steps),
        "max_length_last_40pc": max(float(s["completions/max_length"]) for s in window),
        "signal_last_40pc": round(sum(signal) / len(signal), 3),
        "rounds_last_40pc": mean(window, "dynamic_sampling/rounds"),
        "filled_silent_last_40pc": mean(window, "dynamic_sampling/groups_filled_silent"),
        "seconds_per_step": round(statistics.median(float(s["seconds_per_step"]) for s in steps), 2),
        **{f"eval_{k}": metrics[k] for k in ("acc", "exceed", "answers", "mean_tokens") if k in metrics},
        "collapsed": record["health"].get("collapsed"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", nargs="+", metavar="FILE",
                        default=["config/cpu-evidence-2.yaml", "config/overlays/cpu-evidence-2-pilot.yaml"],
                        help="config files, merged as snakemake merges them (the math task is the pilot's)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--methods", nargs="+", default=["grpo", "gdpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[100])
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--base", action="store_true", help="also evaluate the untrained model")
    args = parser.parse_args()
    config = apply_overrides(load_config(*args.config), args.set)
    start = model_dir(config["tasks"][TASK]["model"])
    out = Path(args.out)
    if args.base:
        path = out / "base" / "eval.json"
        record = (json.loads(path.read_text(encoding="utf-8")) if path.exists() else
                  evaluate_run(resolve_eval_settings(config, TASK, "base", args.seeds[0]), start, path,
                               out / "base" / "eval", threads=args.threads))
        metrics = next(iter(record["benchmarks"].values()))
        print(json.dumps({"method": "base", **{k: metrics.get(k) for k in ("acc", "exceed", "answers", "mean_tokens")}}),
              flush=True)
    for seed in args.seeds:
        for method in args.methods:
            run_dir = out / method / f"seed{seed}"
            if not (run_dir / "summary.json").exists():
                train(resolve_run_settings(config, TASK, method, seed), start, run_dir, threads=args.threads)
            eval_path = run_dir / "eval.json"
            record = (json.loads(eval_path.read_text(encoding="utf-8")) if eval_path.exists() else
                      evaluate_run(resolve_eval_settings(config, TASK, method, seed), start, eval_path,
                                   run_dir / "eval", adapter_dir=run_dir / "model", threads=args.threads))
            print(json.dumps({"method": method, "seed": seed, "settings": args.set, **run_summary(run_dir, record)}),
                  flush=True)


if __name__ == "__main__":
    main()
