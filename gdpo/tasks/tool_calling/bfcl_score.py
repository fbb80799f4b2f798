"""Score generated completions on BFCL-v3 held-out items with BFCL's own checkers.

Run in the BFCL environment (standard library + ``bfcl_eval`` only)::

    .venv-bfcl/bin/python -m gdpo.tasks.tool_calling.bfcl_score \\
        --eval-data eval.jsonl --completions completions.jsonl --out scores.json

``eval.jsonl`` holds rows written by :mod:`gdpo.tasks.tool_calling.bfcl_split`; ``completions.jsonl`` holds
``{"id", "category", "samples": [text, …]}`` per scored item (items of eval.jsonl without a line there are
not scored).

Each completion's ``<tool_call>`` block is decoded into BFCL's decoded-AST form ``[{name: {param: value}}]``
(no block → ``[]``; a block that does not parse → a decoding error, as BFCL treats a syntax error) and
handed to BFCL's category runners from ``bfcl_eval.eval_checker.eval_runner``: ``ast_file_runner`` (the
AST checker) for the call categories and ``relevance_file_runner`` for irrelevance / live_relevance (a call
is present iff decoding succeeds and ``is_empty_output`` is false). Each sample index is one BFCL run;
an item's accuracy is the mean over its samples (pass@1 averaged).

The summary scores (non_live, live, avg, …) are BFCL v3's, see :mod:`gdpo.tasks.tool_calling.bfcl_aggregate`.
``format`` is the share of all scored samples whose format reward is 1. All metrics are percentages.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
from pathlib import Path

from bfcl_eval.constants.category_mapping import VERSION_PREFIX
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
from bfcl_eval.eval_checker.eval_runner import ast_file_runner, relevance_file_runner

from gdpo.tasks.tool_calling.bfcl_aggregate import aggregate
from gdpo.tasks.tool_calling.bfcl_split import BFCL_PACKAGE, LIVE_CATEGORIES, NON_LIVE_CATEGORIES, read_jsonl
from gdpo.tasks.tool_calling.output_format import has_expected_format, parse_tool_calls

#: BFCL's checker reads the model name only to decide whether "." in function names was replaced by "_"
#: (models whose API forbids dots). Any entry without that replacement checks identically; this one is a
#: prompting (non-native function calling) model, like ours.
CHECKER_MODEL_NAME = "Qwen/Qwen3-0.6B"
MULTI_TURN_REASON = (
    "BFCL multi-turn categories need several generations per item with tool results fed back from BFCL's "
    "executable API environments; not run at this scale (Table 1's Multi column)."
)
RELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance", "live_relevance")


def decode_for_bfcl(text: str) -> list[dict]:
    """Our ``<tool_call>`` output in BFCL's decoded form ``[{name: {param: value}}]``.

    No block gives ``[]`` (no call); a block that does not parse raises ``ToolCallParseError``.
    """
    calls = parse_tool_calls(text)
    return [] if calls is None else [{call["name"]: call["parameters"]} for call in calls]


class ToolCallDecoder:
    """The decoding side of a BFCL model handler, as BFCL's runners call it."""

    def decode_ast(self, result: str, language: str = "Python") -> list[dict]:
        return decode_for_bfcl(result)


def _run_category(category: str, items: list[dict], texts: list[str], score_dir: Path) -> list[bool]:
    """BFCL's runner for one category over one sample per item; returns per-item correctness."""
    model_result = [{"id": item["id"], "result": text} for item, text in zip(items, texts)]
    prompt = [
        {"id": item["id"], "question": [item["question"]], "function": item["function"]} for item in items
    ]
    if category in RELEVANCE_CATEGORIES:
        relevance_file_runner(
            ToolCallDecoder(), model_result, prompt, CHECKER_MODEL_NAME, category, score_dir
        )
    else:
        possible_answer = [{"id": item["id"], "ground_truth": item["possible_answer"]} for item in items]
        ast_file_runner(
            ToolCallDecoder(),
            model_result,
            prompt,
            possible_answer,
            items[0]["language"],
            category,
            CHECKER_MODEL_NAME,
            score_dir,
        )
    # The runner writes a header line and then one record per failed item.
    records = read_jsonl(score_dir / CHECKER_MODEL_NAME / f"{VERSION_PREFIX}_{category}_score.json")
    failed = {record["id"] for record in records[1:]}
    return [item["id"] not in failed for item in items]


def score(eval_rows: list[dict], completions: list[dict], work_dir: str | Path) -> dict:
    """Score ``completions`` against the ``eval_rows`` they name; BFCL's score files go under ``work_dir``."""
    by_id = {row["id"]: row for row in eval_rows}
    for completion in completions:
        row = by_id.get(completion.get("id"))
        if row is None:
            raise ValueError(
                f"Completion for unknown item {completion.get('id')!r}; score it against the eval "
                "data it was generated from."
            )
        if completion.get("category", row["category"]) != row["category"]:
            raise ValueError(
                f"Completion {row['id']} says category {completion['category']!r}, the eval data "
                f"says {row['category']!r}."
            )
        if not completion.get("samples"):
            raise ValueError(f"Completion {row['id']} has no samples.")
    work_dir = Path(work_dir)
    groups: dict[str, list[dict]] = {}
    for completion in completions:
        groups.setdefault(by_id[completion["id"]]["category"], []).append(completion)

    items, accuracy, sizes, categories = [], {}, {}, {}
    for category, group in groups.items():
        rows = [by_id[c["id"]] for c in group]
        samples = [c["samples"] for c in group]
        correct = [[False] * len(s) for s in samples]
        # One BFCL run per sample index, over the items that have that many samples.
        for k in range(max(len(s) for s in samples)):
            indices = [i for i, s in enumerate(samples) if k < len(s)]
            verdicts = _run_category(
                category,
                [rows[i] for i in indices],
                [samples[i][k] for i in indices],
                work_dir / f"sample_{k}",
            )
            for i, verdict in zip(indices, verdicts):
                correct[i][k] = verdict
        formats = [
            [has_expected_format(text, row["answer_type"]) for text in s] for row, s in zip(rows, samples)
        ]
        per_item = [sum(c) / len(c) for c in correct]
        accuracy[category] = 100.0 * sum(per_item) / len(per_item)
        sizes[category] = rows[0]["category_size"]
        categories[category] = {
            "accuracy": accuracy[category],
            "format": 100.0 * sum(map(sum, formats)) / sum(map(len, formats)),
            "n_items": len(rows),
            "category_size": sizes[category],
        }
        items += [
            {"id": row["id"], "category": category, "correct": c, "format": f}
            for row, c, f in zip(rows, correct, formats)
        ]

    all_formats = [f for item in items for f in item["format"]]
    metrics = {
        **{c: accuracy[c] for c in NON_LIVE_CATEGORIES + LIVE_CATEGORIES if c in accuracy},
        **aggregate(accuracy, sizes),
        "format": 100.0 * sum(all_formats) / len(all_formats) if all_formats else None,
    }
    return {
        "benchmark": "bfcl_v3",
        "package_version": importlib.metadata.version(BFCL_PACKAGE),
        "checker_model_name": CHECKER_MODEL_NAME,
        "metrics": metrics,
        "categories": categories,
        "missing_categories": [c for c in NON_LIVE_CATEGORIES + LIVE_CATEGORIES if c not in accuracy],
        "not_run": {"multi_turn": MULTI_TURN_REASON},
        "n_items": len(items),
        "n_samples": len(all_formats),
        "items": items,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-data", required=True, help="eval.jsonl written by bfcl_split")
    parser.add_argument("--completions", required=True, help="jsonl of {id, category, samples: [text, ...]}")
    parser.add_argument("--out", required=True, help="scores.json to write")
    args = parser.parse_args(argv)
    checker_config = MODEL_CONFIG_MAPPING[CHECKER_MODEL_NAME]
    if checker_config.underscore_to_dot:
        raise ValueError(f"BFCL's entry {CHECKER_MODEL_NAME!r} now renames dotted functions; pick another.")
    out = Path(args.out)
    result = score(
        read_jsonl(Path(args.eval_data)),
        read_jsonl(Path(args.completions)),
        out.parent / f"{out.stem}_bfcl_score_files",
    )
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"metrics": result["metrics"], "n_items": result["n_items"]}))


if __name__ == "__main__":
    main()
