"""The pilot's validity table: every condition the claims ledger checks for C3–C6, and the pilot's own criteria.

Reads a scale's ledger (``results/<scale>/paper_figures/claims.csv``, whose ``validity`` column lists each
condition it checked, passed or failed) and its summaries (``summary/steps.csv``, ``summary/eval.csv``), and
prints one markdown table: the ledger's conditions of C3, C4, C5 and C6 as the ledger states them, then the
criteria a pilot must also meet before a design is registered (`paper_figures/cpu-evidence-2/PREREGISTRATION.md`):

- tool calling: a training signal (some advantage not zero) on at least 80 % of the steps of every run, and
  GRPO's and GDPO's sampled format rising by at least 20 points from the first 10 steps to the last 10;
- math: the start's held-out accuracy within 20–70 %, and each trained arm's mean held-out accuracy at most 5 points
  below the start's (the paper's regime: both methods keep the base's accuracy, the worst mean over Table 3's
  benchmarks 1.3 points below it, while Exceed falls; a design where the length limit costs accuracy tests a
  trade-off the paper's runs are not in).

    python benchmarks/pilot_conditions.py results/cpu-evidence-2-pilot

Then a second table: each tool-calling run's time (training: the sum of its logged seconds per step, so
without model loading and checkpoint writes; its evaluation's ``eval_seconds``) and the machine kind its
``env.json`` records, and per kind the batch time the seed rule reads: W = 2 T + E (three training jobs on 2
cores, the third waiting for a core; T and E the kind's mean training and evaluation times) and n, the seeds
whose batches fit in 30 hours.

Last, the registration gate the pre-registration states ("Order"), read from the table: the design is
registered only if every condition of C4 in the ledger passed (a condition *not checked* is not a pass) and every
run of C4's arms (GRPO, GRPO w/o std) had a training signal on at least 80 % of its steps; else it names what
failed.

Exit status 0 when everything passed, 1 otherwise, 2 when the ledger or a summary is not built yet.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd

# The largest fall (points) of mean held-out accuracy below the start's: the ledger's C6 condition asks it of some
# compared method, the pilot of each trained math arm.
from gdpo.numerics import machine_kind
from gdpo.reporting.verdicts.validity import MAX_ACCURACY_FALL

CLAIMS = ("C3", "C4", "C5", "C6")
#: The pilot's own criteria beyond the ledger's.
MIN_SIGNAL_STEPS = 0.8
MIN_FORMAT_RISE = 20.0
START_ACCURACY = (20.0, 70.0)
#: The registration gate (module docstring): the claim whose every condition must pass, and the arms whose runs
#: must each meet the signal criterion.
GATE_CLAIM = "C4"
GATE_METHODS = ("grpo", "grpo_nostd")
#: Where the next condition of a ``validity`` cell starts (its own texts hold "; " too).
CONDITION_START = re.compile(r"; (?=[^;()]*: (?:passed|failed|not checked) \()")


def ledger_conditions(claims: pd.DataFrame) -> list[tuple[str, str, str]]:
    """(claim, condition text, status) for each condition in the ``validity`` column of C3–C6's rows."""
    rows = []
    for _, row in claims[claims["claim_id"].isin(CLAIMS)].iterrows():
        text = row.get("validity")
        if not isinstance(text, str) or not text.strip():
            rows.append((row["claim_id"], "no condition checked (the ledger's row has none)", "not checked"))
            continue
        for condition in CONDITION_START.split(text):
            status = next((s for s in ("passed", "failed", "not checked") if f": {s} (" in condition), "?")
            rows.append((row["claim_id"], condition, status))
    return rows


def signal_share(run: pd.DataFrame) -> float:
    """Share of one run's logged steps with a training signal (some advantage not zero: ``advantages/std`` > 0)."""
    return float((run["advantages/std"].fillna(0) > 0).mean())


def pilot_criteria(steps: pd.DataFrame, evals: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The pilot's own criteria (module docstring), measured."""
    rows = []
    tool = steps[steps["task"] == "tool_calling"]
    for (method, seed), run in tool.groupby(["method", "seed"]):
        share = signal_share(run)
        text = f"{method} seed {seed}: steps with a training signal {100 * share:.0f} % (needs ≥ {100 * MIN_SIGNAL_STEPS:.0f} %)"
        rows.append(("tool calling", text, "passed" if share >= MIN_SIGNAL_STEPS else "failed"))
        if method in ("grpo", "gdpo") and "rewards/format/mean" in run:
            run = run.sort_values("step")
            rise = 100 * (run["rewards/format/mean"].tail(10).mean() - run["rewards/format/mean"].head(10).mean())
            text = f"{method} seed {seed}: sampled format rises {rise:+.1f} points over the run (needs ≥ +{MIN_FORMAT_RISE:g})"
            rows.append(("tool calling", text, "passed" if rise >= MIN_FORMAT_RISE else "failed"))
    base = evals[(evals["task"] == "math") & (evals["method"] == "base") & (evals["metric"] == "acc")]
    for seed, value in base.groupby("seed")["value"].mean().items():
        low, high = START_ACCURACY
        rows.append(("math", f"start (base, seed {seed}) held-out accuracy {value:.1f} % (needs {low:g}–{high:g} %)",
                     "passed" if low <= value <= high else "failed"))
    math_acc = evals[(evals["task"] == "math") & (evals["metric"] == "acc")]
    means = math_acc.groupby(["method", "seed"])["value"].mean().groupby("method").mean()
    if "base" in means:
        for method, value in means.drop("base").items():
            fall = means["base"] - value
            rows.append(("math", f"{method}: mean held-out accuracy {value:.1f} % against the start's {means['base']:.1f} % "
                                 f"(needs at most {MAX_ACCURACY_FALL:g} points below it)",
                         "passed" if fall <= MAX_ACCURACY_FALL else "failed"))
    return rows


def registration_gate(ledger: list[tuple[str, str, str]], steps: pd.DataFrame) -> tuple[bool, list[str]]:
    """The pre-registration's gate: (register?, what failed). ``ledger``: :func:`ledger_conditions`' rows;
    ``steps``: ``summary/steps.csv``. No C4 row, or no run of a gate arm, fails it too."""
    failed = [f"{GATE_CLAIM}: {text}" for claim, text, status in ledger if claim == GATE_CLAIM and status != "passed"]
    if not any(claim == GATE_CLAIM for claim, _, _ in ledger):
        failed.append(f"{GATE_CLAIM}: no row in the ledger")
    tool = steps[steps["task"] == "tool_calling"]
    for method in GATE_METHODS:
        runs = tool[tool["method"] == method].groupby("seed")
        if not len(runs):
            failed.append(f"{method}: no run")
        for seed, run in runs:
            share = signal_share(run)
            if share < MIN_SIGNAL_STEPS:
                failed.append(f"{method} seed {seed}: steps with a training signal {100 * share:.0f} % "
                              f"(needs ≥ {100 * MIN_SIGNAL_STEPS:.0f} %)")
    return not failed, failed


#: The experiment's budget (hours of the driver's timeline), which the seed rule divides by one batch's time.
BUDGET_HOURS = 30.0


def run_times(root: Path, task: str = "tool_calling") -> pd.DataFrame:
    """One row per finished trained run of ``task`` under ``root/runs``: method, seed, kind, steps, median and
    summed seconds per step (hours), and its evaluation's seconds (NaN where not evaluated yet)."""
    rows = []
    for run in sorted((root / "runs" / task).glob("*/seed*")):
        metrics, env = run / "metrics.jsonl", run / "env.json"
        if run.name.endswith(".work") or not metrics.is_file() or not env.is_file():
            continue
        seconds = [r["seconds_per_step"] for r in map(json.loads, metrics.read_text().splitlines()) if r.get("seconds_per_step")]
        evaluation = run / "eval.json"
        eval_seconds = json.loads(evaluation.read_text()).get("eval_seconds") if evaluation.is_file() else None
        rows.append({"method": run.parent.name, "seed": run.name, "kind": machine_kind(((json.loads(env.read_text()).get("cpu") or {}).get("kernel_flags")) or []),
                     "steps": len(seconds), "median s/step": float(pd.Series(seconds).median()) if seconds else float("nan"),
                     "training h": sum(seconds) / 3600,
                     "eval s": float(eval_seconds) if eval_seconds is not None else float("nan")})
    return pd.DataFrame(rows)


def batch_times(times: pd.DataFrame) -> list[str]:
    """Per machine kind: T, E, W = 2 T + E and the seeds n with n × W ≤ the budget (markdown lines)."""
    lines = ["| kind | runs | T (h, mean training) | E (h, mean evaluation) | W = 2 T + E (h) | seeds in "
             f"{BUDGET_HOURS:g} h |", "|---|---|---|---|---|---|"]
    for kind, part in times.groupby("kind"):
        t, e = part["training h"].mean(), part["eval s"].mean() / 3600
        w = 2 * t + e
        seeds = 0 if math.isnan(w) or w <= 0 else int(BUDGET_HOURS // w)
        lines.append(f"| {kind} | {len(part)} | {t:.2f} | {e:.2f} | {w:.2f} | {seeds} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scale_dir", help="results/<scale>")
    args = parser.parse_args()
    root = Path(args.scale_dir)
    needed = [root / "paper_figures" / "claims.csv", root / "summary" / "steps.csv", root / "summary" / "eval.csv"]
    times = run_times(root)  # printed first: the runs finished so far, before the ledger can be built
    if not times.empty:
        print("| method | seed | kind | steps | median s/step | training h | eval s |\n|---|---|---|---|---|---|---|")
        for row in times.itertuples(index=False):
            print(f"| {row[0]} | {row[1]} | {row[2]} | {row[3]} | {row[4]:.0f} | {row[5]:.2f} | {row[6]:.0f} |")
        print("\n" + "\n".join(batch_times(times)) + "\n", flush=True)
    missing = [str(path) for path in needed if not path.is_file()]
    if missing:
        print(f"error: {', '.join(missing)} not found: the pilot's ledger and summaries are built by the workflow "
              "once every planned pilot run is done (snakemake --profile profiles/workstation --configfile "
              "config/cpu-evidence-2.yaml config/overlays/cpu-evidence-2-pilot.yaml).", file=sys.stderr)
        return 2
    ledger, steps = ledger_conditions(pd.read_csv(needed[0])), pd.read_csv(needed[1])
    rows = ledger + pilot_criteria(steps, pd.read_csv(needed[2]))
    print("| claim / task | condition (measured; what it needs) | status |\n|---|---|---|")
    for where, text, status in rows:
        print(f"| {where} | {text} | {status} |")
    register, failed = registration_gate(ledger, steps)
    print("\nRegistration gate (PREREGISTRATION, \"Order\"): " + (
        f"register (every condition of {GATE_CLAIM} passed; every run of {', '.join(GATE_METHODS)} has a training "
        f"signal on ≥ {100 * MIN_SIGNAL_STEPS:.0f} % of its steps)" if register else
        "not registered, failed: " + "; ".join(failed)))
    return 0 if all(status == "passed" for _, _, status in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
