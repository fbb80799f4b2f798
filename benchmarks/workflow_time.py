"""Where a workflow run's time went, from the jobs' Snakemake ``benchmark:`` files.

Every train, evaluate and warm-up job writes ``results/<scale>/benchmarks/<rule>/<task>/…tsv`` (wall
seconds ``s`` and peak resident memory ``max_rss`` in MB). This prints, per rule and task family, the
number of jobs, their mean and summed wall seconds, the share of all job-seconds and the largest peak
memory, then the total job-seconds and what they amount to on the given number of cores.

    python benchmarks/workflow_time.py                      # results/mini, 2 cores
    python benchmarks/workflow_time.py --results results/mini --cores 2
    python benchmarks/workflow_time.py --by rule             # one row per rule
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def job_table(benchmarks: Path) -> pd.DataFrame:
    """One row per benchmark file: ``rule, task, job, seconds, max_rss_mb``."""
    rows = []
    for path in sorted(benchmarks.rglob("*.tsv")):
        parts = path.relative_to(benchmarks).with_suffix("").parts
        record = pd.read_csv(path, sep="\t").iloc[-1]
        rows.append({"rule": parts[0], "task": parts[1] if len(parts) > 2 else parts[-1], "job": "/".join(parts[1:]),
                     "seconds": float(record["s"]), "max_rss_mb": float(record["max_rss"])})
    if not rows:
        raise SystemExit(f"no benchmark files under {benchmarks}; run the workflow first.")
    return pd.DataFrame(rows)


def summarise(jobs: pd.DataFrame, by: tuple[str, ...] = ("rule", "task")) -> pd.DataFrame:
    """Per ``by`` group: jobs, mean and summed seconds, share of all job-seconds, peak memory."""
    table = jobs.groupby(list(by)).agg(jobs=("seconds", "size"), mean_s=("seconds", "mean"),
                                               sum_s=("seconds", "sum"), peak_rss_gb=("max_rss_mb", "max"))
    table["share"] = table["sum_s"] / table["sum_s"].sum()
    table["peak_rss_gb"] = table["peak_rss_gb"] / 1000
    return table.sort_values("sum_s", ascending=False).reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, default=Path("results/mini"))
    parser.add_argument("--cores", type=int, default=2, help="cores the jobs shared (one thread per job)")
    parser.add_argument("--by", choices=["task", "rule"], default="task", help="one row per rule and task, or per rule")
    args = parser.parse_args()
    by = ("rule", "task") if args.by == "task" else ("rule",)
    table = summarise(job_table(args.results / "benchmarks"), by)
    print("| " + " | ".join(by) + " | jobs | mean s | sum s | share | peak RSS GB |")
    print("|" + "---|" * (len(by) + 5))
    for row in table.itertuples():
        keys = " | ".join(str(getattr(row, key)) for key in by)
        print(f"| {keys} | {row.jobs} | {row.mean_s:.0f} | {row.sum_s:.0f} | {row.share:.0%} | {row.peak_rss_gb:.2f} |")
    total = table["sum_s"].sum()
    print(f"\n{int(table['jobs'].sum())} jobs, {total:.0f} job-seconds = {total / args.cores / 60:.1f} min on "
          f"{args.cores} cores at one job per core")


if __name__ == "__main__":
    main()
