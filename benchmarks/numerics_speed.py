"""What the portable numeric setting costs: seconds per RL step, native against portable, same run.

Trains the first ``--steps`` steps of one task's run (a config's settings, one thread, as the experiment's
jobs) twice per setting, each in a fresh process (the setting is the process's environment,
:mod:`gdpo.numerics`), alternating native and portable so that a change in the machine's load falls on both,
and prints per setting the median seconds per step over every step but the first of each process, and the
ratio portable / native. Step time includes the rollouts (the rollout engine: bfloat16 natively on a CPU that
has it, float32 under ``portable``) and the update (bfloat16 autocast natively, float32 under ``portable``).

    python benchmarks/numerics_speed.py --config config/cpu-evidence-2.yaml config/overlays/cpu-evidence-2-pilot.yaml \
        --task math --steps 8
    python benchmarks/numerics_speed.py --config config/cpu-evidence-2.yaml --task tool_calling --steps 6 \
        --start-model results/cpu-evidence-2/warmup/tool_calling/model

Prints one JSON line per process, then a summary line. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from gdpo.config import load_config
from gdpo.numerics import PORTABLE_ENVIRONMENT, numeric_environment

REPO = Path(__file__).resolve().parents[1]

TRAIN = """
import json, sys
from pathlib import Path
from gdpo.plan import model_dir, resolve_run_settings
from gdpo.training.run import read_metrics, train
config_json, task, steps, start, out = sys.argv[1:6]
config = json.loads(config_json)
config["tasks"][task].setdefault("training", {})["max_steps"] = int(steps)
settings = resolve_run_settings(config, task, config["tasks"][task].get("methods", config["methods"])[0], 0)
train(settings, start or model_dir(config["tasks"][task]["model"]), out, threads=1)
env = json.loads((Path(out) / "env.json").read_text())
print(json.dumps({"seconds_per_step": [r["seconds_per_step"] for r in read_metrics(Path(out) / "metrics.jsonl")],
                  "numerics": env["numerics"]}))
"""


def one_process(setting: str, args: argparse.Namespace, out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in PORTABLE_ENVIRONMENT}
    env.update(numeric_environment(setting), PYTHONPATH=str(REPO))
    process = subprocess.run([sys.executable, "-c", TRAIN, json.dumps(args.merged_config), args.task, str(args.steps),
                              args.start_model or "", str(out)], cwd=REPO, env=env, capture_output=True,
                             text=True, check=False)
    if process.returncode:
        raise SystemExit(f"{setting} run failed:\n{process.stderr[-3000:]}")
    return json.loads(process.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", nargs="+", required=True, metavar="FILE",
                        help="config files, merged as snakemake merges them")
    parser.add_argument("--task", required=True)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2, help="processes per setting")
    parser.add_argument("--start-model", default=None, help="the run's start (default: the task's model)")
    args = parser.parse_args()
    args.merged_config = load_config(*args.config)
    steps: dict[str, list[float]] = {"native": [], "portable": []}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            for setting in ("native", "portable") if repeat % 2 == 0 else ("portable", "native"):
                record = one_process(setting, args, Path(scratch) / f"{setting}{repeat}")
                steps[setting] += record["seconds_per_step"][1:]
                print(json.dumps({"setting": setting, "repeat": repeat, **record}), flush=True)
    medians = {setting: statistics.median(values) for setting, values in steps.items()}
    print(json.dumps({"task": args.task, "steps_per_process": args.steps, "median_seconds_per_step": medians,
                      "portable_over_native": round(medians["portable"] / medians["native"], 3)}))


if __name__ == "__main__":
    main()
