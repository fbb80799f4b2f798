"""True peak memory of the workflow's training jobs: each format warm-up and one RL run per task.

Runs the workflow's own commands (``python -m gdpo warmup-model`` and ``python -m gdpo train``, the
settings the workflow would pass) one at a time, each in its own process, and reads the process's
maximum resident set from the kernel (``wait4``'s rusage), which Snakemake's sampled ``max_rss`` can
miss. Prints each job's wall time and peak against the limit; exits 1 when a job is over it.

    python benchmarks/peak_memory.py                                   # mini: tool_calling, math, code
    python benchmarks/peak_memory.py --tasks math --method grpo --seed 1

Needs the task's base model and data as the workflow makes them (the model is converted here when
missing; BFCL's split comes from ``snakemake --cores 2 resources/data/bfcl_v3_split/train.jsonl``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
GB, GIB = 1e9, 2**30


def run_measured(command: list[str], log: Path) -> tuple[float, float]:
    """Run ``command`` (output to ``log``); return its wall seconds and peak resident bytes.

    Exits with a message naming the log when the command fails.
    """
    start = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    exit_code = os.waitstatus_to_exitcode(status)
    if exit_code != 0:
        raise SystemExit(f"{' '.join(command[1:4])} ... failed with exit code {exit_code}; its log: {log}")
    # Linux reports ru_maxrss in KiB.
    return time.perf_counter() - start, usage.ru_maxrss * 1024.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="config/mini.yaml")
    parser.add_argument("--tasks", nargs="+", default=["tool_calling", "math", "code"])
    parser.add_argument("--method", default="gdpo")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="threads per job, as the workflow's job_threads")
    parser.add_argument("--limit-gb", type=float, default=4.0, help="peak memory target, GB (10^9 bytes)")
    args = parser.parse_args()

    from gdpo.plan import model_slug, resolve_run_settings, resolve_warmup_settings
    from gdpo.tasks import required_files
    from gdpo.training.models import prepare_model

    config = yaml.safe_load((REPO / args.config).read_text())
    unknown = [task for task in args.tasks if task not in config["tasks"]]
    if unknown:
        parser.error(f"tasks {unknown} are not in {args.config}; its tasks: {sorted(config['tasks'])}")
    for task in args.tasks:
        missing = [path for path in required_files(config["tasks"][task]) if not (REPO / path).is_file()]
        if missing:
            parser.error(f"task {task!r} needs {missing}; make them with `snakemake --cores 2 {' '.join(missing)}`")

    python = [sys.executable, "-m", "gdpo"]
    threads = ["--threads", str(args.threads)]
    rows = []
    # Kept when a job fails, so that its log can be read.
    work = Path(tempfile.mkdtemp(prefix="peak_memory_"))
    for task in args.tasks:
        spec = config["tasks"][task]
        model_dir = REPO / "resources" / "models" / model_slug(spec["model"])
        if not (model_dir / "config.json").is_file():
            prepare_model(spec["model"], model_dir)
        warmup = resolve_warmup_settings(config, task)
        if warmup is not None:
            warmed = work / f"warmup_{task}"
            command = python + ["warmup-model", "--settings", warmup.to_json(), "--model-dir", str(model_dir),
                                "--out", str(warmed)] + threads
            rows.append((f"warmup_model {task}", *run_measured(command, work / f"warmup_{task}.log")))
            model_dir = warmed
        settings = resolve_run_settings(config, task, args.method, args.seed)
        command = python + ["train", "--settings", settings.to_json(), "--model-dir", str(model_dir),
                            "--run-dir", str(work / f"run_{task}")] + threads
        rows.append((f"train {task} {args.method} seed{args.seed}",
                     *run_measured(command, work / f"train_{task}.log")))
        print(f"{rows[-1][0]}: done", file=sys.stderr, flush=True)

    shutil.rmtree(work)
    print(f"{args.config}, {args.threads} thread(s) per job, one job at a time; limit {args.limit_gb} GB")
    print(f"{'job':<36} {'wall s':>7} {'peak GiB':>9} {'peak GB':>8} {'under limit':>12}")
    over = 0
    for name, seconds, peak in rows:
        under = peak < args.limit_gb * GB
        over += not under
        print(f"{name:<36} {seconds:>7.0f} {peak / GIB:>9.2f} {peak / GB:>8.2f} {'yes' if under else 'NO':>12}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
