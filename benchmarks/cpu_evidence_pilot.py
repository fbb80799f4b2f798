"""Summarise the cpu-evidence experiment's tool-calling pilot: collapse, training signal, held-out scores, and the
seed spread it measures with the power it implies for C3 and C4.

The pilot's runs are made by ``benchmarks/tool_calling_experiment.py`` with the experiment's tool-calling
settings (paper_figures/cpu-evidence/PREREGISTRATION.md, "Pilot"); this script reads their directories
(``<pilot>/<method>/seed<k>/`` and ``<pilot>/base/eval.json``), gathers them with the workflow's own
aggregation, and computes the spread and power with the ledger's own functions
(``gdpo.reporting.calibration.design_from_evidence`` on the pilot's evidence, then ``power_of`` and
``seeds_for_power`` at the experiment's seeds).

    python benchmarks/cpu_evidence_pilot.py results/cpu-evidence-pilot/tool_calling --config config/cpu-evidence.yaml
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path

from gdpo.config import load_config
from gdpo.reporting import calibration
from gdpo.reporting.aggregate import gather_evals
from gdpo.reporting.verdicts.model_evidence import Evidence

TASK = "tool_calling"


def run_rows(pilot: Path) -> list[dict]:
    """Per trained run: steps, share of steps with a non-zero advantage, held-out calls and scores, collapse."""
    rows = []
    for metrics in sorted(pilot.glob("*/seed*/metrics.jsonl")):
        steps = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        record = json.loads((metrics.parent / "eval.json").read_text())
        bfcl = record["benchmarks"]["bfcl_v3"]
        rows.append({
            "method": metrics.parent.parent.name, "seed": int(metrics.parent.name[4:]), "steps": len(steps),
            "signal": round(sum(s.get("advantages/std", 0.0) > 0 for s in steps) / len(steps), 3),
            "s/step": round(sum(s["step_time"] for s in steps) / len(steps), 1),
            "sampled calls, last 10 steps": round(sum(s.get("diagnostics/call_made", 0.0) for s in steps[-10:]) / 10, 3),
            **{k: round(bfcl[k], 1) for k in ("calls", "avg", "format")},
            "collapsed": bool(record["health"]["collapsed"]),
            "eval s": record.get("eval_seconds"),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pilot", help="the pilot's output directory (tool_calling_experiment.py --out)")
    parser.add_argument("--config", default="config/cpu-evidence.yaml", help="the experiment's config")
    args = parser.parse_args()
    pilot, config = Path(args.pilot), load_config(args.config)
    rows = run_rows(pilot)
    for row in rows:
        print(json.dumps(row))
    steps = sum(r["steps"] for r in rows)
    signal = sum(r["signal"] * r["steps"] for r in rows) / steps
    print(f"runs {len(rows)}, collapsed {sum(r['collapsed'] for r in rows)}, steps with a signal {100 * signal:.1f} %")

    # The pilot's evaluations as the workflow gathers them, read by the ledger's own design code.
    # (linked into the workflow's runs/<task>/<method>/seed<k>/ layout; the base model as seed 0)
    with tempfile.TemporaryDirectory() as scratch:
        files = []
        for source in [*sorted(pilot.glob("*/seed*/eval.json")), *sorted(pilot.glob("base/eval.json"))]:
            method = source.parent.name if source.parent.name == "base" else source.parent.parent.name
            seed = "seed0" if method == "base" else source.parent.name
            link = Path(scratch) / "runs" / TASK / method / seed / "eval.json"
            link.parent.mkdir(parents=True)
            link.symlink_to(source.resolve())
            files.append(link)
        evals = gather_evals(files)
    evidence = Evidence(evals, None, config["reporting"], "cpu-evidence-pilot")
    for claim in ("C3", "C4"):
        design = calibration.design_from_evidence(claim, evidence)
        seeds = len(config["tasks"][TASK].get("seeds", config["seeds"]))
        planned = dataclasses.replace(design, seeds=seeds)
        needed = calibration.seeds_for_power(planned)
        print(f"{claim}: pilot spread {design.spread_source}; power at {seeds} seeds {calibration.power_of(planned):.2f}; "
              f"seeds for 0.8: {needed if needed is not None else 'more than 64'}")


if __name__ == "__main__":
    main()
