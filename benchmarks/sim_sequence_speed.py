"""Speed of the sequence bench (gdpo.sim.sequence).

Prints (1) policy updates per second summed over seeds (one update = one optimizer step of one seed) at the
math studies' size (32 seeds, 8 prompts x G = 8, cap 24 tokens), vectorised over seeds against a per-seed
Python loop (the same seeds run one at a time), median over --repeats runs, with the ratio; (2) with
--studies, the wall and CPU time of every sequence study in config/sim/ (all cells and methods, as
`gdpo sim-run` runs them), and the time the four take as two parallel jobs on 2 idle cores (their CPU times,
longest first). CPU time is printed beside wall time because a shared machine's wall time measures its other
jobs too.

    python benchmarks/sim_sequence_speed.py                # the update rate
    python benchmarks/sim_sequence_speed.py --studies      # and the studies
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from gdpo.sim import load_study, parse_study, run_study
from gdpo.sim.sequence import SequenceBench

STUDY_DIR = Path(__file__).resolve().parents[1] / "config" / "sim"

MATH_SIZE = {
    "name": "speed", "bench": "sequence", "seeds": 32, "steps": 20, "prompts": 8, "generations": 8,
    "methods": ["gdpo"], "learning_rate": 0.03, "max_length": 24, "reasoning_needed": [0, 12],
    "rewards": [{"name": "correctness", "kind": "correctness"}, {"name": "length", "kind": "length", "limit": 12}],
}


def timed(function) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def update_rates(steps: int, repeats: int) -> None:
    config = parse_study({**MATH_SIZE, "steps": steps}).variant("default")
    seeds = config.seeds
    vectorised, loop = [], []
    for _ in range(repeats):
        wall, cpu = timed(lambda: SequenceBench(config, "gdpo").run())
        vectorised.append((len(seeds) * steps / wall, len(seeds) * steps / cpu))
        wall, cpu = timed(lambda: [SequenceBench(config, "gdpo", seeds=(seed,)).run() for seed in seeds])
        loop.append((len(seeds) * steps / wall, len(seeds) * steps / cpu))
    median = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731
    print(f"size: {len(seeds)} seeds, {config.prompts} prompts x G = {config.generations}, cap {config.max_length} "
          f"tokens, {steps} steps, gdpo; median of {repeats}")
    print(f"  vectorised over seeds: {median(vectorised, 0):8.0f} updates/s wall, {median(vectorised, 1):8.0f} per CPU s")
    print(f"  per-seed Python loop : {median(loop, 0):8.0f} updates/s wall, {median(loop, 1):8.0f} per CPU s")
    print(f"  ratio (vectorised / loop): {median(vectorised, 0) / median(loop, 0):.1f}x wall, "
          f"{median(vectorised, 1) / median(loop, 1):.1f}x CPU")


def two_job_makespan(cpu_times: list[float], jobs: int = 2) -> float:
    """Time until the last study ends when ``jobs`` run at once on idle cores, each study one job taking its CPU
    time, longest first (as the workflow's scheduler may order them; at best the longest study alone)."""
    ends = [0.0] * jobs
    for cpu in sorted(cpu_times, reverse=True):
        ends[ends.index(min(ends))] += cpu
    return max(ends)


def study_times() -> None:
    total_wall = 0.0
    cpu_times = []
    for path in sorted(STUDY_DIR.glob("*.yaml")):
        study = load_study(path)
        if study.variants[0][1].bench != "sequence":
            continue
        wall, cpu = timed(lambda: run_study(study))
        total_wall += wall
        cpu_times.append(cpu)
        print(f"  {study.name:28s} {wall:7.1f} s wall {cpu:7.1f} s CPU ({len(study.variants)} cells)")
    print(f"  {'all sequence studies':28s} {total_wall:7.1f} s wall {sum(cpu_times):7.1f} s CPU (one after another, "
          "one thread)")
    print(f"  as two parallel jobs on 2 idle cores (longest first): {two_job_makespan(cpu_times):.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="updates per timed run (default 20)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per path (default 3)")
    parser.add_argument("--studies", action="store_true", help="also time every sequence study of config/sim/")
    args = parser.parse_args()
    torch.set_num_threads(1)  # as `gdpo sim-run` runs
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
          "1 torch thread")
    update_rates(args.steps, args.repeats)
    if args.studies:
        study_times()


if __name__ == "__main__":
    main()
