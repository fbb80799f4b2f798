"""BFCL-v3 evaluation of a policy (Table 1's columns): generate here, score in the BFCL environment.

``bfcl-eval`` pins packages that clash with the training environment, so its checker runs in a separate
interpreter (``GDPO_BFCL_PYTHON``, else ``.venv-bfcl/bin/python`` of the repository or the working
directory) as ``python -m gdpo.tasks.tool_calling.bfcl_score``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gdpo.tasks.tool_calling.data import (
    eval_split_dir,
    prompt_chars,
    read_split_file,
    select_items,
    validate_options,
)
from gdpo.files import ITEMS_KEY, item_outcomes, write_jsonl
from gdpo.tasks.tool_calling.bfcl_aggregate import aggregate
from gdpo.generation.health import TRUNCATED, health_record
from gdpo.tasks.tool_calling.diagnostics import calls_offered_tools, parsed_calls
from gdpo.tasks.tool_calling.output_format import ANSWER_BOTH, ANSWER_TOOL_CALL, build_prompt, has_expected_format

BFCL_PYTHON_ENV = "GDPO_BFCL_PYTHON"
BFCL_VENV_PYTHON = Path(".venv-bfcl") / "bin" / "python"
REPO_ROOT = Path(__file__).resolve().parents[3]
#: The held-out subset depends on eval_size only, never on the run's seed, so every method and seed is
#: evaluated on the same items.
EVAL_SUBSET_SEED = 0
SUMMARY_METRICS = ("live", "non_live", "avg", "format", "calls", "ast_calls")


def _or_none(value: float) -> float | None:
    return None if value != value else value  # NaN (nothing to count) is not valid JSON


def call_metrics(rows: list[dict], samples: list[list[str]], verdicts: dict[str, list[bool]]) -> dict:
    """What the policy does beside BFCL's averages, in percent of samples (every sample of every item).

    - ``calls``: a parsable tool call every call of which names one of the item's tools
      (:func:`~gdpo.tasks.tool_calling.diagnostics.calls_offered_tools`: an empty name or a tool the item
      does not offer is no call), on the items whose reference answer calls a tool;
    - ``ast_calls``: BFCL's AST verdict "correct" on those same items (AST accuracy where a call is needed,
      all categories pooled);
    - ``declined``: no parsable tool call at all, on the items that need none (BFCL's irrelevance categories
      pooled; a call to a tool not offered is no decline either). This is what BFCL's irrelevance check passes,
      so it also counts a call cut at the length cap or written as broken JSON: it is "no parsable call", not
      a decision to answer without one;
    - ``declined_in_format``: on those same items, the completion has exactly the structure of an answer without
      a call (``<think>`` then ``<response>``, no ``<tool_call>`` tag: :func:`has_expected_format`, what the
      format reward pays there). A policy that declines writes this; one that only fails to write a call
      does not.

    A policy that stops calling tools keeps (or raises) BFCL's irrelevance scores and ``declined``, and
    drops ``calls`` to 0: the collapse :mod:`gdpo.generation.health` gates on.

    Args:
        rows: the evaluated BFCL split items (``id``, ``answer_type``, ``tools``); samples: their completions'
            texts, per item;
        verdicts: item id → BFCL's per-sample correctness (``scores.json`` items).
    """
    needs_call, declines, declines_in_format, correct = [], [], [], []
    for row, texts in zip(rows, samples):
        expects_call = row["answer_type"] in (ANSWER_TOOL_CALL, ANSWER_BOTH)
        for index, text in enumerate(texts):
            if expects_call:
                needs_call.append(calls_offered_tools(text, row.get("tools")))
                correct.append(bool(verdicts.get(row["id"], [False] * len(texts))[index]))
            else:
                declines.append(parsed_calls(text) is None)
                declines_in_format.append(has_expected_format(text, row["answer_type"]))

    def percent(values: list[bool]) -> float:
        return 100.0 * sum(values) / len(values) if values else float("nan")

    return {"calls": percent(needs_call), "ast_calls": percent(correct), "declined": percent(declines),
            "declined_in_format": percent(declines_in_format),
            "n_need_call": len({row["id"] for row in rows if row["answer_type"] in (ANSWER_TOOL_CALL, ANSWER_BOTH)})}


#: BFCL's summary scores that are linear in the per-category accuracies, whose item weights eval.json keeps.
WEIGHTED_METRICS = ("live", "non_live", "avg")


def category_weights(category_sizes: dict[str, int]) -> dict[str, dict[str, float]]:
    """Metric → category → the category accuracy's weight in that BFCL summary score, for the categories
    evaluated (:func:`gdpo.tasks.tool_calling.bfcl_aggregate.aggregate` is linear in them, so the weight is
    the score of a unit accuracy in that category alone). An item of category c counts ``weight / n_c``
    in the score, n_c the evaluated items of c; a metric's weights sum to 1 (``avg``: 2/3, multi-turn 0)."""
    zero = {category: 0.0 for category in category_sizes}
    weights: dict[str, dict[str, float]] = {metric: {} for metric in WEIGHTED_METRICS}
    for category in category_sizes:
        unit = aggregate({**zero, category: 1.0}, category_sizes)
        for metric in WEIGHTED_METRICS:
            if unit[metric] is not None and unit[metric] != 0:
                weights[metric][category] = unit[metric]
    return weights


def bfcl_item_outcomes(scores: dict) -> dict:
    """eval.json's ``items["bfcl_v3"]`` from the scorer's per-item verdicts (:func:`gdpo.files.item_outcomes`):
    ``correct`` (BFCL's per-sample verdict, the accuracy of the item's category) and ``format`` per sample,
    ``groups`` = each item's category and ``weights`` = :func:`category_weights` (live, non_live and avg are
    weighted means of the categories, not plain means over items)."""
    scored = scores["items"]
    sizes = {category: record["category_size"] for category, record in scores["categories"].items()}
    return item_outcomes([item["id"] for item in scored],
                         {"correct": [item["correct"] for item in scored],
                          "format": [item["format"] for item in scored]},
                         groups=[item["category"] for item in scored],
                         weights=category_weights(sizes))


def bfcl_python() -> Path:
    """The BFCL environment's interpreter; ``FileNotFoundError`` saying how to create it when missing."""
    configured = os.environ.get(BFCL_PYTHON_ENV)
    if configured:
        if not Path(configured).exists():
            raise FileNotFoundError(
                f"{BFCL_PYTHON_ENV}={configured} does not exist; point it at the python of "
                "an environment with bfcl-eval==2025.6.8 (`make setup` creates .venv-bfcl)."
            )
        return Path(configured)
    for root in (REPO_ROOT, Path.cwd()):
        if (root / BFCL_VENV_PYTHON).exists():
            return root / BFCL_VENV_PYTHON
    raise FileNotFoundError(
        f"No BFCL environment: neither {BFCL_PYTHON_ENV} is set nor {REPO_ROOT / BFCL_VENV_PYTHON} exists. "
        "Create it with `make setup` (a venv with bfcl-eval==2025.6.8 and soundfile, plus this package "
        "installed with --no-deps), or set GDPO_BFCL_PYTHON to such an interpreter."
    )


def run_bfcl_score(eval_data: Path, completions: Path, out: Path, work_dir: Path) -> dict:
    """Run :mod:`gdpo.tasks.tool_calling.bfcl_score` in the BFCL environment; returns its scores."""
    env = {
        **os.environ,
        # This checkout's gdpo first, whatever the BFCL environment has installed.
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        # bfcl_eval creates result/ and score/ folders under this root when imported.
        "BFCL_PROJECT_ROOT": str(work_dir / "bfcl_project"),
    }
    command = [
        str(bfcl_python()),
        "-m",
        "gdpo.tasks.tool_calling.bfcl_score",
        "--eval-data",
        str(eval_data),
        "--completions",
        str(completions),
        "--out",
        str(out),
    ]
    process = subprocess.run(command, check=False, env=env, cwd=work_dir, capture_output=True, text=True)
    if process.returncode != 0:
        raise RuntimeError(
            f"BFCL scoring failed (exit {process.returncode}): {' '.join(command)}\n{process.stderr[-3000:]}"
        )
    return json.loads(out.read_text(encoding="utf-8"))


def evaluate(request) -> dict:
    """Generate completions for the held-out BFCL items, score them with BFCL's checker, return eval.json.

    Writes ``eval_items.jsonl`` (the items scored), ``completions.jsonl`` and ``scores.json`` (with
    per-item verdicts) to ``request.work_dir``.
    """
    import torch

    from gdpo.generation.vllm_generate import generate_for_evaluation

    options = validate_options(dict(request.options))
    split_dir = eval_split_dir(options)
    rows = read_split_file(split_dir / "eval.jsonl")
    prompts = {row["id"]: build_prompt(row["question"], row["tools"]) for row in rows}
    if options["max_prompt_chars"] is not None:
        rows = [row for row in rows if prompt_chars(prompts[row["id"]]) <= options["max_prompt_chars"]]
    rows = select_items(rows, request.eval_size, EVAL_SUBSET_SEED)
    if not rows:
        raise ValueError(f"No held-out item to evaluate in {split_dir / 'eval.jsonl'} with these options.")

    # The scorer's interpreter first: without the BFCL environment the job stops now, not after the generation.
    bfcl_python()
    torch.set_num_threads(max(1, request.threads))
    # transformers here (eval_backend hf) or vLLM in its own interpreter (vllm): the same prompts, stop tokens
    # and sampling settings, the completions made alike (gdpo.generation.vllm_generate).
    [generated], backend_settings = generate_for_evaluation([[prompts[row["id"]] for row in rows]], request,
                                                            options["eval_backend"])

    # Absolute: the scorer runs with work_dir as its current directory.
    work_dir = Path(request.work_dir).resolve()
    items_path, completions_path = work_dir / "eval_items.jsonl", work_dir / "completions.jsonl"
    write_jsonl(items_path, rows)
    write_jsonl(
        completions_path,
        [
            {
                "id": row["id"],
                "category": row["category"],
                "samples": [c.text for c in samples],
                "num_tokens": [c.num_tokens for c in samples],
                "truncated": [c.truncated for c in samples],
            }
            for row, samples in zip(rows, generated)
        ],
    )
    scores = run_bfcl_score(items_path, completions_path, work_dir / "scores.json", work_dir)

    metrics = {name: value for name, value in scores["metrics"].items() if value is not None}
    verdicts = {item["id"]: item["correct"] for item in scores["items"]}
    behaviour = call_metrics(rows, [[c.text for c in samples] for samples in generated], verdicts)
    metrics.update({k: v for k, v in behaviour.items() if k != "n_need_call" and v == v})
    all_samples = [c for samples in generated for c in samples]
    truncated_percent = 100.0 * sum(c.truncated for c in all_samples) / len(all_samples)
    not_run = {"multi_turn": scores["not_run"]["multi_turn"]}
    for category in scores["missing_categories"]:
        not_run[category] = f"no held-out item of this category among the {len(rows)} evaluated"
    return {
        "family": "tool_calling",
        "benchmarks": {"bfcl_v3": {**metrics, "n_items": scores["n_items"]}},
        "summary": {name: metrics[name] for name in SUMMARY_METRICS if name in metrics},
        "not_run": not_run,
        ITEMS_KEY: {"bfcl_v3": bfcl_item_outcomes(scores)},
        "health": health_record("tool_calling", {"calls": _or_none(behaviour["calls"]), TRUNCATED: truncated_percent,
                                                 "items_needing_a_call": behaviour["n_need_call"]}),
        "settings": {
            "eval_data": str(split_dir / "eval.jsonl"),
            "eval_size": request.eval_size,
            "max_prompt_chars": options["max_prompt_chars"],
            "num_samples": request.num_samples,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_new_tokens": request.max_new_tokens,
            **backend_settings,
            "bfcl_package_version": scores["package_version"],
            "checker_model_name": scores["checker_model_name"],
            "n_samples": scores["n_samples"],
            "truncated_percent": truncated_percent,
            "mean_completion_tokens": sum(c.num_tokens for c in all_samples) / len(all_samples),
            "avg_definition": "BFCL Overall Acc: mean(live, non_live, multi_turn), multi_turn counted as 0",
            "python": sys.version.split()[0],
        },
    }
