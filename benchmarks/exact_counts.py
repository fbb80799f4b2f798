"""Benchmark of the exact collapse analysis (claims C1, C2).

Prints (1) the wall time of the whole grid of the workflow (G = 2..16 at n = 2, n = 2..8 at G = 4, three
methods), median of --repeats runs, and (2) the vectorised count against a straightforward enumeration
(itertools over multisets, numpy per multiset) on the largest case(s) both finish, in the same run, with
the ratio. Both paths must give the same counts; the script stops if they do not.

    python benchmarks/exact_counts.py                  # default cases
    python benchmarks/exact_counts.py --naive 4x7      # a larger naive case (minutes)
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch

from gdpo.analysis import exact


def timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="runs of the full grid (median reported)")
    parser.add_argument("--naive", nargs="+", default=["4x6"], help="GxN cases for the naive comparison")
    args = parser.parse_args()

    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    points = exact.grid_points()
    grid_times = [timed(exact.distinct_counts_table, points)[1] for _ in range(args.repeats)]
    print(f"full grid ({len(points)} points x 3 methods): median {statistics.median(grid_times):.2f} s "
          f"over {args.repeats} runs (all: {', '.join(f'{t:.2f}' for t in grid_times)})")

    print(f"\n{'case':<8} {'method':<11} {'multisets':>10} {'naive s':>9} {'ours s':>8} {'speed-up':>9}")
    for case in args.naive:
        G, n = (int(v) for v in case.split("x"))
        for method in exact.COUNTED_METHODS:
            naive, naive_s = timed(exact.naive_count_distinct, G, n, method)
            fast_runs = [timed(exact.count_distinct, G, n, method) for _ in range(args.repeats)]
            fast, fast_s = fast_runs[0][0], statistics.median(t for _, t in fast_runs)
            if naive != fast:
                raise SystemExit(f"counts differ at G={G}, n={n}, {method}: naive {naive}, ours {fast}")
            multisets = exact.enumeration_size(G, n)["rows"]
            print(f"{case:<8} {method:<11} {multisets:>10,} {naive_s:>9.2f} {fast_s:>8.3f} {naive_s / fast_s:>8.0f}x")


if __name__ == "__main__":
    main()
