"""Train / held-out split of the BFCL-v3 single-turn data shipped in the ``bfcl-eval`` package.

Run in the BFCL environment (standard library + ``bfcl_eval`` only)::

    .venv-bfcl/bin/python -m gdpo.tasks.tool_calling.bfcl_split --out-dir DIR [--eval-fraction 0.2] [--seed 0]

Writes ``DIR/train.jsonl``, ``DIR/eval.jsonl`` (one item per line) and ``DIR/split.json`` (counts per
category, seed, eval fraction, package version, source files).

Each category's items are shuffled with a generator seeded by ``(seed, category)`` and its first
``round(n · eval_fraction)`` items (at least 1 when n ≥ 2) go to the eval part, so the split is stratified
by category and reproducible. Items of the live categories that share a function document can fall on
both sides (BFCL ids ``live_x_N-DOC-PROMPT``); the questions differ.

A row: ``id``, ``category``, ``category_size`` (items of the category in BFCL, the weight BFCL's live
aggregate uses), ``language``, ``question`` (the single turn's chat messages), ``function`` (BFCL's
function docs, the checker's input), ``tools`` (the same docs after BFCL's own language-specific
preprocessing, as BFCL's prompting handlers show them to a model; shown in our prompt), ``possible_answer``
(BFCL's ground truth: per call, per parameter, the list of acceptable values; None for the relevance
categories), ``answer_type`` (``tool_call`` or ``response``) and ``ground_truth_calls``.

``ground_truth_calls`` is the single call list the training reward compares with: each call of
``possible_answer`` with each parameter's *first* acceptable value (BFCL lists its preferred form first),
and the parameter left out when that first value is ``""`` (BFCL's mark for "may be omitted": the
question does not state it). Nested dicts follow the same rule. It is ``[]`` for the irrelevance
categories (no call expected) and None for live_relevance (BFCL has no reference call: any call counts).
"""

from __future__ import annotations

import argparse
import copy
import importlib.metadata
import json
import random
from pathlib import Path

from bfcl_eval.constants.eval_config import POSSIBLE_ANSWER_PATH, PROMPT_PATH
from bfcl_eval.model_handler.utils import func_doc_language_specific_pre_processing

from gdpo.files import write_jsonl
from gdpo.tasks.tool_calling.bfcl_aggregate import DEFAULT_EVAL_FRACTION, LIVE_CATEGORIES, held_out_size
from gdpo.tasks.tool_calling.output_format import ANSWER_RESPONSE, ANSWER_TOOL_CALL

BFCL_PACKAGE = "bfcl-eval"
BFCL_FILE_PREFIX = "BFCL_v3_"
NON_LIVE_CATEGORIES = (
    "simple",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "java",
    "javascript",
)
#: The AST-checkable single-turn categories of BFCL v3 (multi-turn needs BFCL's executable environments).
SINGLE_TURN_CATEGORIES = NON_LIVE_CATEGORIES + LIVE_CATEGORIES
#: Categories whose items expect no call (BFCL scores them by relevance detection, not by the AST checker).
NO_CALL_CATEGORIES = ("irrelevance", "live_irrelevance")
#: Categories without a reference call: any call is correct.
ANY_CALL_CATEGORIES = ("live_relevance",)
LANGUAGE_OF = {"java": "Java", "javascript": "JavaScript"}
OPTIONAL_MARK = ""


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _canonical_value(value):
    """A possible-answer value with every nested choice list reduced to its first choice."""
    if isinstance(value, dict):
        return _canonical_parameters(value, nested=True)
    if isinstance(value, list):
        return [_canonical_value(item) for item in value]
    return value


def _canonical_parameters(choices: dict, required: tuple[str, ...] = (), nested: bool = False) -> dict:
    """``{param: [acceptable values]}`` → ``{param: chosen value}`` (the rule is in the module docstring).

    A parameter whose first value is "" ("may be omitted") is left out unless the function requires it;
    then its first non-empty value is used ("" itself when it is the only one). Inside nested dicts a few
    BFCL answers give a plain value instead of a choice list; it is kept as is.
    """
    parameters = {}
    for name, acceptable in choices.items():
        if nested and not isinstance(acceptable, list):
            parameters[name] = acceptable
            continue
        if not isinstance(acceptable, list):
            raise ValueError(f"Parameter {name!r} has no list of acceptable values: {acceptable!r}.")
        # An empty list (two live_simple items) accepts nothing; the call is then left without the parameter.
        if not acceptable:
            continue
        if acceptable[0] == OPTIONAL_MARK:
            if name not in required:
                continue
            acceptable = [value for value in acceptable if value != OPTIONAL_MARK] or [OPTIONAL_MARK]
        parameters[name] = _canonical_value(acceptable[0])
    return parameters


def _java_literal(value, java_type: str, element_type: str | None = None) -> str:
    """A Java source literal that BFCL's Java type converter reads back as ``value``."""
    if java_type == "boolean":
        return "true" if value else "false"
    if java_type == "long":
        return f"{value}L"
    if java_type == "float":
        return f"{value}f"
    if java_type in ("ArrayList", "Array") and isinstance(value, list):
        elements = ", ".join(_java_element(item, java_type, element_type) for item in value)
        if java_type == "ArrayList":
            return f"new ArrayList<>(Arrays.asList({elements}))" if value else "new ArrayList<>()"
        return f"new {element_type or 'Object'}[] {{{elements}}}"
    if java_type == "HashMap" and isinstance(value, dict):
        puts = " ".join(f"put({json.dumps(key)}, {json.dumps(item)});" for key, item in value.items())
        return f"new HashMap<String, String>() {{{{ {puts} }}}}"
    return value if isinstance(value, str) else json.dumps(value)


def _java_element(item, collection: str, element_type: str | None) -> str:
    """One element of a Java collection literal, quoted the way BFCL's parser of that collection expects."""
    if element_type == "char":
        return f"'{item}'"
    if element_type == "String":
        # ArrayList elements of type String are unquoted by the parser, Array elements are taken verbatim.
        return json.dumps(item) if collection == "ArrayList" else item
    if element_type is None:
        # Untyped elements go through BFCL's generic Java value parser: quoted strings, true/false, numbers.
        if isinstance(item, bool):
            return "true" if item else "false"
        return json.dumps(item)
    return _java_literal(item, element_type)


def _javascript_literal(value, js_type: str) -> str:
    """A JavaScript source literal that BFCL's JavaScript type converter reads back as ``value``."""
    if js_type == "Boolean":
        return "true" if value else "false"
    if js_type == "Bigint":
        return f"{value}n"
    if js_type in ("array", "dict") and not isinstance(value, str):  # a string here names a variable
        return json.dumps(value)
    return value if isinstance(value, str) else json.dumps(value)


def _as_source_literals(parameters: dict, function: dict, language: str) -> dict:
    """Java / JavaScript parameters as the source strings BFCL expects from a model (Python: unchanged)."""
    if language == "Python" or function is None:
        return parameters
    properties = function["parameters"]["properties"]
    literal = {}
    for name, value in parameters.items():
        schema = properties.get(name, {"type": "any"})
        element_type = (schema.get("items") or {}).get("type")
        literal[name] = (
            _java_literal(value, schema["type"], element_type)
            if language == "Java"
            else _javascript_literal(value, schema["type"])
        )
    return literal


def canonical_calls(
    possible_answer: list[dict], functions: list[dict] | None = None, language: str = "Python"
) -> list[dict]:
    """BFCL's ``[{function: {param: [values]}}]`` → ``[{"name": function, "parameters": {param: value}}]``.

    ``functions`` (the item's function docs) supply the required parameters and, for Java and
    JavaScript, the parameter types: those values become the source-code strings BFCL's checker expects.
    """
    by_name = {function["name"]: function for function in functions or []}
    calls = []
    for call in possible_answer:
        ((name, choices),) = call.items()
        function = by_name.get(name)
        required = tuple(function["parameters"].get("required", [])) if function else ()
        parameters = _canonical_parameters(choices, required)
        calls.append({"name": name, "parameters": _as_source_literals(parameters, function, language)})
    return calls


def load_category(category: str) -> list[dict]:
    """The rows of one BFCL category (see the module docstring), in BFCL's file order."""
    if category not in SINGLE_TURN_CATEGORIES:
        raise ValueError(
            f"Unknown or unsupported BFCL category {category!r}; use some of {SINGLE_TURN_CATEGORIES}."
        )
    questions = read_jsonl(PROMPT_PATH / f"{BFCL_FILE_PREFIX}{category}.json")
    answers = {}
    if category not in NO_CALL_CATEGORIES + ANY_CALL_CATEGORIES:
        answers = {
            row["id"]: row["ground_truth"]
            for row in read_jsonl(POSSIBLE_ANSWER_PATH / f"{BFCL_FILE_PREFIX}{category}.json")
        }
    rows = []
    for item in questions:
        if len(item["question"]) != 1:
            raise ValueError(
                f"BFCL item {item['id']} has {len(item['question'])} turns; expected a single turn."
            )
        possible_answer = answers.get(item["id"])
        if category in NO_CALL_CATEGORIES:
            calls, answer_type = [], ANSWER_RESPONSE
        elif category in ANY_CALL_CATEGORIES:
            calls, answer_type = None, ANSWER_TOOL_CALL
        else:
            if possible_answer is None:
                raise ValueError(f"BFCL item {item['id']} has no possible answer.")
            calls = canonical_calls(possible_answer, item["function"], LANGUAGE_OF.get(category, "Python"))
            answer_type = ANSWER_TOOL_CALL
        rows.append(
            {
                "id": item["id"],
                "category": category,
                "category_size": len(questions),
                "language": LANGUAGE_OF.get(category, "Python"),
                "question": item["question"][0],
                "function": item["function"],
                "tools": func_doc_language_specific_pre_processing(copy.deepcopy(item["function"]), category),
                "possible_answer": possible_answer,
                "answer_type": answer_type,
                "ground_truth_calls": calls,
            }
        )
    return rows


def split_category(rows: list[dict], eval_fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """(train, eval) parts of one category's rows; each part keeps BFCL's file order."""
    category = rows[0]["category"] if rows else ""
    order = list(range(len(rows)))
    random.Random(f"bfcl-split-{seed}-{category}").shuffle(order)
    eval_indices = set(order[:held_out_size(len(rows), eval_fraction)])
    return (
        [row for i, row in enumerate(rows) if i not in eval_indices],
        [row for i, row in enumerate(rows) if i in eval_indices],
    )


def make_split(
    out_dir: str | Path,
    eval_fraction: float = DEFAULT_EVAL_FRACTION,
    seed: int = 0,
    categories: tuple[str, ...] = SINGLE_TURN_CATEGORIES,
) -> dict:
    """Write ``train.jsonl``, ``eval.jsonl`` and ``split.json`` to ``out_dir``; returns the summary."""
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    train, held_out, counts = [], [], {}
    for category in categories:
        train_part, eval_part = split_category(load_category(category), eval_fraction, seed)
        train += train_part
        held_out += eval_part
        counts[category] = {"train": len(train_part), "eval": len(eval_part)}
    write_jsonl(out / "train.jsonl", train)
    write_jsonl(out / "eval.jsonl", held_out)
    summary = {
        "benchmark": "BFCL v3 single-turn",
        "package": BFCL_PACKAGE,
        "package_version": importlib.metadata.version(BFCL_PACKAGE),
        "seed": seed,
        "eval_fraction": eval_fraction,
        "counts": counts,
        "totals": {"train": len(train), "eval": len(held_out)},
        "source_files": {
            category: {
                "questions": f"{BFCL_FILE_PREFIX}{category}.json",
                "possible_answer": None
                if category in NO_CALL_CATEGORIES + ANY_CALL_CATEGORIES
                else f"possible_answer/{BFCL_FILE_PREFIX}{category}.json",
            }
            for category in categories
        },
        "canonical_ground_truth": (
            "first acceptable value per parameter; optional parameters whose first value is '' left out"
        ),
    }
    (out / "split.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", required=True, help="directory for train.jsonl, eval.jsonl, split.json")
    parser.add_argument("--eval-fraction", type=float, default=DEFAULT_EVAL_FRACTION,
                        help="held-out share of each category")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--categories",
        nargs="+",
        default=list(SINGLE_TURN_CATEGORIES),
        help="BFCL categories to include (default: every single-turn one)",
    )
    args = parser.parse_args(argv)
    summary = make_split(args.out_dir, args.eval_fraction, args.seed, tuple(args.categories))
    print(json.dumps({"totals": summary["totals"], "counts": summary["counts"]}))


if __name__ == "__main__":
    main()
