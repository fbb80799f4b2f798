"""Which RL start suits C4? Format warm-ups of several strengths, each judged the way the ledger judges a start.

C4 ("GRPO w/o std never learns the format") can be tested only from a start whose held-out format is below
10 % (``gdpo.reporting.verdicts.validity.START_FORMAT_MAX``), yet RL needs sampled completions that make a
parsable call now and then, or every group's rewards are equal and no method learns anything. For each
warm-up setting (the config's ``warmup`` block with some keys changed; ``none``: the untrained model) this
script trains the warm-up with the workflow's own function, then measures:

- held-out format, calls and BFCL average of the greedy completions (the base evaluation the ledger reads,
  on ``--eval-size`` held-out items);
- on ``--prompts`` training prompts × ``--generations`` sampled completions at the RL temperature, the call
  and format rates and the share of groups and 2-prompt steps with a reward varying
  (``benchmarks/tool_calling_signal.py``).

    python benchmarks/tool_calling_start.py --config config/cpu-evidence-2.yaml --out results/pilot2/starts \
        --variant none --variant steps2:max_steps=2 --variant lr2e-5:learning_rate=2.0e-5 --eval-size 100

Prints one JSON line per variant; its warm-up and evaluation stay under ``--out/<label>`` (not redone).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tool_calling_experiment import apply_overrides
from tool_calling_signal import probe

from gdpo.evaluation.run import evaluate_run
from gdpo.plan import model_dir, resolve_eval_settings, resolve_warmup_settings
from gdpo.training.warmup import warmup_model

TASK = "tool_calling"


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``label:key=value,key=value`` (keys of the task's ``warmup`` block) or ``none`` (no warm-up)."""
    label, _, assignments = text.partition(":")
    return label, [f"tasks.{TASK}.warmup.{a}" for a in assignments.split(",") if a]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--variant", action="append", required=True, metavar="LABEL[:KEY=VALUE,...]")
    parser.add_argument("--eval-size", type=int, default=100)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    base_config = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    spec = base_config["tasks"][TASK]
    for text in args.variant:
        label, assignments = parse_variant(text)
        config = apply_overrides(base_config, [*assignments, f"tasks.{TASK}.evaluation.eval_size={args.eval_size}"])
        out = Path(args.out) / label
        if label == "none":
            start = Path(model_dir(spec["model"]))
            warmup = None
        else:
            start = out / "model"
            settings = resolve_warmup_settings(config, TASK)
            if not (start / "warmup.json").exists():
                warmup_model(settings, model_dir(spec["model"]), start, threads=args.threads)
            warmup = json.loads((start / "warmup.json").read_text(encoding="utf-8"))
        eval_path = out / "eval.json"
        if eval_path.exists():
            record = json.loads(eval_path.read_text(encoding="utf-8"))
        else:
            record = evaluate_run(resolve_eval_settings(config, TASK, "base", 0), start, eval_path, out / "eval",
                                  threads=args.threads)
        metrics = record["benchmarks"]["bfcl_v3"]
        import torch

        from gdpo.generation.generate import load_policy
        from gdpo.tasks.tool_calling import build_dataset

        torch.manual_seed(0)
        model, tokenizer = load_policy(start)
        training = {**base_config.get("training", {}), **spec.get("training", {})}
        options = {k: spec[k] for k in ("data_dir", "train_data", "max_prompt_chars", "decline_share") if k in spec}
        rows = build_dataset("train", args.prompts, 0, **options)
        sampled = probe(model, tokenizer, rows, args.generations, training.get("temperature", 1.0),
                        training.get("top_p", 1.0), training.get("max_completion_length", 96), 2, seed=0)
        print(json.dumps({
            "variant": label, "warmup": {k: warmup[k] for k in ("losses",) if warmup and k in warmup},
            "held_out": {k: round(metrics[k], 1) for k in ("calls", "ast_calls", "avg", "format") if k in metrics},
            "items": args.eval_size, "sampled": sampled}), flush=True)


if __name__ == "__main__":
    main()
