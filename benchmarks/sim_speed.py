"""Speed of the policy-gradient bench (gdpo.sim).

Prints (1) policy updates per second summed over seeds at the default study size (32 seeds, 64 prompts x
G = 8, n = 3 rewards; one update = one optimizer step of one seed), per advantage method, median over
--repeats runs, for the batched advantage path and (GDPO) the one-registry-call-per-seed reference path;
(2) the wall time of every Bernoulli study in config/sim/ (all variants and methods, as `run_study` runs them;
the sequence studies: benchmarks/sim_sequence_speed.py).
Target: >= 1,000 updates/s summed over seeds on 2 cores.

    python benchmarks/sim_speed.py                 # both parts
    python benchmarks/sim_speed.py --no-studies    # the update rate only
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from gdpo.advantages import registered_estimators
from gdpo.sim import load_study, parse_study, run_study, study_runs
from gdpo.sim.engine import PolicyGradientBench

STUDY_DIR = Path(__file__).resolve().parents[1] / "config" / "sim"

DEFAULT_SIZE = {
    "name": "speed",
    "seeds": 32,
    "prompts": 64,
    "generations": 8,
    "steps": 50,
    "methods": registered_estimators(),
    "learning_rate": 0.02,
    "prompt_spread": 0.5,
    "rewards": [
        {"name": "correctness", "behaviours": 4, "rule": "fraction", "scale": "ranged", "range": [-3, 3],
         "difficulty": 0.15},
        {"name": "format", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.3},
        {"name": "length", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.6},
    ],
    "correlations": [{"rewards": ["correctness", "length"], "value": -0.2}],
}


def updates_per_second(config, method: str, path: str) -> float:
    bench = PolicyGradientBench(config, method, advantage_path=path)
    bench.run(2)  # warm-up (allocations, first registry calls)
    start = time.perf_counter()
    bench.run(config.steps)
    return len(config.seeds) * config.steps * config.inner_epochs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (median reported)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts to measure")
    parser.add_argument("--no-studies", action="store_true", help="skip the per-study wall times")
    args = parser.parse_args()

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}")
    config = parse_study(DEFAULT_SIZE).variant("default")
    print(f"default size: {len(config.seeds)} seeds x {config.prompts} prompts x G = {config.generations}, "
          f"n = {len(config.rewards)} rewards, {config.steps} steps per run, median of {args.repeats} runs")
    print(f"\n{'threads':>7} {'method':<11} {'path':<9} {'updates/s':>10}   (all runs)")
    for threads in args.threads:
        torch.set_num_threads(threads)
        cases = [(m, "batched") for m in config.methods] + [("gdpo", "per_seed")]
        for method, path in cases:
            rates = [updates_per_second(config, method, path) for _ in range(args.repeats)]
            print(f"{threads:>7} {method:<11} {path:<9} {statistics.median(rates):>10,.0f}   "
                  f"({', '.join(f'{r:,.0f}' for r in rates)})")

    if args.no_studies:
        return
    print(f"\n{'study':<24} {'runs':>5} {'wall s':>8}   (run_study, 1 thread)")
    total = 0.0
    for path in sorted(STUDY_DIR.glob("*.yaml")):
        study = load_study(path)
        if study.variants[0][1].bench != "bernoulli":
            continue  # the sequence bench's studies: benchmarks/sim_sequence_speed.py
        start = time.perf_counter()
        run_study(study, num_threads=1)
        elapsed = time.perf_counter() - start
        total += elapsed
        print(f"{study.name:<24} {len(study_runs(study)):>5} {elapsed:>8.1f}")
    print(f"{'all studies':<24} {'':>5} {total:>8.1f}")


if __name__ == "__main__":
    main()
