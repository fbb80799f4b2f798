"""Train and evaluate tool-calling runs under changed settings, and report whether RL had a signal.

The search behind the default config's tool-calling settings (benchmarks/README.md): each setting is the
default config with some keys changed (``--set``), trained and evaluated with the workflow's own
functions (``gdpo.training.run.train``, ``gdpo.evaluation.run.evaluate_run``) from a given starting model
(the format warm-up's output), and summarised per run:

- ``steps_with_signal``: share of optimizer steps with a non-zero advantage (some reward varied in a group);
- ``calls_first`` / ``calls_last``: share of the step's *sampled* completions that make a parsable call
  (``diagnostics/call_made``), first and last step;
- held-out ``calls``, ``ast_calls``, ``avg``, ``format`` and whether the run ``collapsed``.

    python benchmarks/tool_calling_experiment.py --out results/tool_calling_experiment --start-model results/mini/warmup/tool_calling/model \
        --set tasks.tool_calling.training.temperature=0.7 --methods grpo gdpo --seeds 0

Prints one JSON line per run; run directories go to ``--out`` (a run already there is not retrained).
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import yaml

from gdpo.evaluation.run import evaluate_run
from gdpo.plan import resolve_eval_settings, resolve_run_settings
from gdpo.training.run import read_metrics, train

TASK = "tool_calling"


def apply_overrides(config: dict, assignments: list[str]) -> dict:
    """``config`` with each ``dotted.key=yaml value`` set (intermediate mappings created)."""
    config = copy.deepcopy(config)
    for assignment in assignments:
        key, _, text = assignment.partition("=")
        if not _:
            raise ValueError(f"--set takes key=value, got {assignment!r}.")
        node = config
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(text)
    return config


def run_summary(run_dir: Path, record: dict) -> dict:
    steps = read_metrics(run_dir / "metrics.jsonl")
    with_signal = [s.get("advantages/std", 0.0) > 0 for s in steps]
    calls = [s.get("diagnostics/call_made") for s in steps]
    metrics = record["benchmarks"]["bfcl_v3"]
    return {
        "steps": len(steps), "steps_with_signal": sum(with_signal) / len(steps),
        "calls_first": calls[0], "calls_last": calls[-1],
        "format_first": steps[0].get("rewards/format/mean"), "format_last": steps[-1].get("rewards/format/mean"),
        **{name: round(metrics[name], 1) for name in ("calls", "ast_calls", "avg", "format") if name in metrics},
        "truncated": round(record["health"]["truncated"], 1), "collapsed": record["health"]["collapsed"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="config/mini.yaml")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--start-model", required=True, help="the starting policy (e.g. the warm-up's output)")
    parser.add_argument("--methods", nargs="+", default=["grpo", "grpo_nostd", "gdpo"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--base", action="store_true", help="also evaluate the starting model")
    args = parser.parse_args()
    config = apply_overrides(yaml.safe_load(Path(args.config).read_text(encoding="utf-8")), args.set)
    out = Path(args.out)
    if args.base:
        settings = resolve_eval_settings(config, TASK, "base", 0)
        record = evaluate_run(settings, args.start_model, out / "base" / "eval.json", out / "base" / "eval",
                              threads=args.threads)
        metrics = record["benchmarks"]["bfcl_v3"]
        print(json.dumps({"method": "base", **{k: round(metrics[k], 1) for k in ("calls", "ast_calls", "avg", "format")
                                                 if k in metrics}, "collapsed": record["health"]["collapsed"]}),
              flush=True)
    for method in args.methods:
        for seed in args.seeds:
            run_dir = out / method / f"seed{seed}"
            if not (run_dir / "summary.json").exists():
                train(resolve_run_settings(config, TASK, method, seed), args.start_model, run_dir, threads=args.threads)
            eval_path = run_dir / "eval.json"
            if eval_path.exists():
                record = json.loads(eval_path.read_text(encoding="utf-8"))
            else:
                record = evaluate_run(resolve_eval_settings(config, TASK, method, seed), args.start_model, eval_path,
                                      run_dir / "eval", adapter_dir=run_dir / "model", threads=args.threads)
            print(json.dumps({"method": method, "seed": seed, "settings": args.set,
                              **run_summary(run_dir, record)}), flush=True)


if __name__ == "__main__":
    main()
