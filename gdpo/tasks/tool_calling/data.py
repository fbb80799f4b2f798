"""Training and held-out data of the tool-calling family.

Two training sources (option ``train_data``):

- ``"bfcl_v3_split"`` (mini scale): ``<data_dir>/train.jsonl`` written by
  :mod:`gdpo.tasks.tool_calling.bfcl_split` from the BFCL-v3 files of the ``bfcl-eval`` package.
- ``"toolrl"`` (paper scale): ToolRL's 4k RL set (2k ToolACE, 1k Hammer, 1k xLAM) in its published form,
  ``data_dir`` being the file or a directory holding it: either the raw ``rlla_rl.json`` (a JSON list of
  ``{"instruction": system prompt with the tools, "input": the dialogue, "output": the reference answer}``)
  or the verl parquet ToolRL's ``rlla.py`` makes from it (``train.parquet``: ``prompt`` = system + user
  messages, ``reward_model.ground_truth`` = the reference answer). The prompt is ToolRL's own; the answer
  type and reference calls are read from the reference answer (its first ``<tool_call>`` block).

The held-out data (option ``eval_data``) is always the BFCL-v3 split's ``eval.jsonl``: ``"bfcl_v3_split"``
means the one in ``data_dir`` (with ``train_data="bfcl_v3_split"``), or give the split directory's path.

Rows without a reference call list although a call is expected (BFCL live_relevance) are left out of
``build_dataset``: the ``correct`` reward cannot score them. Evaluation (:mod:`.evaluation`) keeps them.

This module imports ``datasets`` only inside :func:`build_dataset`, so the BFCL environment can import
the package.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from gdpo.files import read_jsonl
from gdpo.generation.eval_backends import check_eval_backend
from gdpo.tasks.tool_calling.output_format import (
    ANSWER_BOTH,
    ANSWER_RESPONSE,
    ANSWER_TOOL_CALL,
    ToolCallParseError,
    answer_type_of,
    build_prompt,
    parse_tool_calls,
)

TRAIN_SOURCES = ("bfcl_v3_split", "toolrl")
BFCL_SPLIT = "bfcl_v3_split"
TOOLRL_RAW_FILE = "rlla_rl.json"
TOOLRL_PARQUET_FILE = "train.parquet"
OPTIONS = ("train_data", "data_dir", "eval_data", "max_prompt_chars", "decline_share", "eval_backend")
SPLIT_HINT = (
    "make it with `.venv-bfcl/bin/python -m gdpo.tasks.tool_calling.bfcl_split --out-dir DIR` "
    "(create .venv-bfcl with `make setup`)"
)


def validate_options(options: dict) -> dict:
    """The family's data options with defaults filled in; unknown or bad ones raise ``ValueError``."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise ValueError(
            f"Unknown tool_calling option(s) {sorted(unknown)}; valid options are {list(OPTIONS)}."
        )
    resolved = {
        "train_data": BFCL_SPLIT,
        "data_dir": None,
        "eval_data": BFCL_SPLIT,
        "max_prompt_chars": None,
        "decline_share": None,
        # Evaluation only: where the completions come from (gdpo.generation.eval_backends).
        "eval_backend": "hf",
        **options,
    }
    if resolved["train_data"] not in TRAIN_SOURCES:
        raise ValueError(f"train_data must be one of {TRAIN_SOURCES}, got {resolved['train_data']!r}.")
    if resolved["data_dir"] is None:
        raise ValueError(
            "Option data_dir is required: the BFCL-v3 split directory (train_data='bfcl_v3_split'; "
            f"{SPLIT_HINT}) or ToolRL's rlla_rl.json / train.parquet (train_data='toolrl')."
        )
    if resolved["eval_data"] == BFCL_SPLIT and resolved["train_data"] != BFCL_SPLIT:
        raise ValueError(
            "With train_data='toolrl', set eval_data to the BFCL-v3 split directory (eval.jsonl)."
        )
    limit = resolved["max_prompt_chars"]
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"max_prompt_chars must be a positive integer or null, got {limit!r}.")
    share = resolved["decline_share"]
    if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1):
        raise ValueError(f"decline_share must be a number from 0 to 1 (the share of training items that expect "
                         f"no call) or null (BFCL's own mix), got {share!r}.")
    check_eval_backend(resolved["eval_backend"], "tool_calling")
    return resolved


def eval_split_dir(options: dict) -> Path:
    """The directory holding the BFCL split's ``eval.jsonl`` (options already validated)."""
    return Path(options["data_dir"] if options["eval_data"] == BFCL_SPLIT else options["eval_data"])


def read_split_file(path: Path) -> list[dict]:
    """Rows of a bfcl_split jsonl file; a missing file, or a line that is no JSON text, raises ``ValueError``
    saying how to make it (:func:`gdpo.files.read_jsonl`)."""
    if not path.exists():
        raise ValueError(f"BFCL split file {path} does not exist; {SPLIT_HINT}.")
    return read_jsonl(path, "correct or drop that row, or "
                      + SPLIT_HINT.replace("make it", "make the split again", 1))


def bfcl_training_row(row: dict) -> dict:
    """The dataset row of one BFCL split item (prompt and the columns the rewards read)."""
    calls = row["ground_truth_calls"]
    return {
        "prompt": build_prompt(row["question"], row["tools"]),
        "answer_type": row["answer_type"],
        "ground_truth_calls": None if calls is None else json.dumps(calls, ensure_ascii=False),
        "id": row["id"],
        "category": row["category"],
    }


def _toolrl_row(index: int, messages: list[dict], reference: str) -> dict:
    answer_type = answer_type_of(reference)
    calls: list[dict] = []
    if answer_type in (ANSWER_TOOL_CALL, ANSWER_BOTH):
        try:
            calls = parse_tool_calls(reference) or []
        except ToolCallParseError as error:
            raise ValueError(
                f"ToolRL item {index}: its reference answer's tool call does not parse ({error})."
            ) from error
    return {
        "prompt": [{"role": m["role"], "content": m["content"]} for m in messages],
        "answer_type": answer_type,
        "ground_truth_calls": json.dumps(calls, ensure_ascii=False),
        "id": f"toolrl_{index}",
        "category": "toolrl",
    }


def load_toolrl(path: str | Path) -> list[dict]:
    """ToolRL's RL training set as dataset rows (see the module docstring for the accepted files)."""
    path = Path(path)
    if path.is_dir():
        for name in (TOOLRL_RAW_FILE, TOOLRL_PARQUET_FILE):
            if (path / name).exists():
                path = path / name
                break
        else:
            raise ValueError(
                f"{path} holds neither {TOOLRL_RAW_FILE} nor {TOOLRL_PARQUET_FILE} (ToolRL's "
                "dataset/rlla_4k_raw/ or dataset/rlla_4k/ files)."
            )
    if not path.exists():
        raise ValueError(f"ToolRL data file {path} does not exist.")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        records = pq.read_table(path).to_pylist()
        return [_toolrl_row(i, r["prompt"], r["reward_model"]["ground_truth"]) for i, r in enumerate(records)]
    items = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(items, list) or not all(
        {"instruction", "input", "output"} <= set(item) for item in items
    ):
        raise ValueError(
            f"{path} is not ToolRL's raw format: a JSON list of {{instruction, input, output}} objects."
        )
    return [
        _toolrl_row(
            i,
            [{"role": "system", "content": item["instruction"]}, {"role": "user", "content": item["input"]}],
            item["output"],
        )
        for i, item in enumerate(items)
    ]


def prompt_chars(prompt: list[dict]) -> int:
    return sum(len(message["content"]) for message in prompt)


def select_items(rows: list[dict], size: int | None, seed: int) -> list[dict]:
    """``size`` rows stratified by ``category`` (shares as in ``rows``, largest remainders), in input order.

    Deterministic for a seed; ``None`` keeps every row; more than there are raises ``ValueError``.
    """
    if size is None:
        return list(rows)
    if not 0 <= size <= len(rows):
        raise ValueError(f"Asked for {size} items but only {len(rows)} are available; lower the size.")
    by_category: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        by_category.setdefault(row["category"], []).append(index)
    quotas = {c: size * len(ix) / len(rows) for c, ix in by_category.items()}
    counts = {c: int(q) for c, q in quotas.items()}
    by_remainder = sorted(quotas, key=lambda c: (counts[c] - quotas[c], c))
    for category in by_remainder[: size - sum(counts.values())]:
        counts[category] += 1
    chosen = []
    for category, indices in by_category.items():
        order = list(indices)
        random.Random(f"select-{seed}-{category}").shuffle(order)
        chosen += order[: counts[category]]
    return [rows[i] for i in sorted(chosen)]


def select_with_decline_share(rows: list[dict], size: int | None, seed: int, share: float) -> list[dict]:
    """``size`` training rows of which ``round(share * size)`` expect no call (answer type ``response``: the
    irrelevance items), each part drawn by :func:`select_items`; in input order.

    BFCL's own mix has 37 % such items, whose groups can differ only in format; a smaller share spends more
    of the RL steps on items that need a call. ``size`` None keeps every call item and as many decline items
    as the share asks. Too few items of either kind raise ``ValueError`` naming the counts.
    """
    indexed = [dict(row, _index=index) for index, row in enumerate(rows)]
    declines = [row for row in indexed if row["answer_type"] == ANSWER_RESPONSE]
    calls = [row for row in indexed if row["answer_type"] != ANSWER_RESPONSE]
    if size is None:
        wanted_declines = min(len(declines), round(share * len(calls) / (1 - share))) if share < 1 else len(declines)
        wanted_calls = len(calls) if share < 1 else 0
    else:
        wanted_declines = round(share * size)
        wanted_calls = size - wanted_declines
    if wanted_declines > len(declines) or wanted_calls > len(calls):
        raise ValueError(
            f"decline_share {share:g} of {size} items needs {wanted_declines} items that expect no call and "
            f"{wanted_calls} that expect one; the data has {len(declines)} and {len(calls)}. Lower train_size "
            f"or change decline_share.")
    chosen = select_items(declines, wanted_declines, seed) + select_items(calls, wanted_calls, seed)
    return [rows[index] for index in sorted(row["_index"] for row in chosen)]


def build_dataset(split: str, size: int | None, seed: int, **options):
    """The ``train`` or ``eval`` dataset: columns ``prompt`` (chat messages), ``answer_type``,
    ``ground_truth_calls`` (JSON list of ``{"name", "parameters"}``), ``id``, ``category``.

    ``size`` rows are drawn stratified by category with ``seed`` (None: all). Options: ``train_data``,
    ``data_dir``, ``eval_data`` (module docstring), ``max_prompt_chars`` (leave out items whose prompt
    is longer, in characters; None keeps all) and ``decline_share`` (training only: the share of items
    that expect no call, :func:`select_with_decline_share`; None keeps BFCL's mix).
    """
    from datasets import Dataset

    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}.")
    options = validate_options(options)
    if split == "train" and options["train_data"] == "toolrl":
        rows = load_toolrl(options["data_dir"])
    else:
        directory = Path(options["data_dir"]) if split == "train" else eval_split_dir(options)
        rows = [bfcl_training_row(row) for row in read_split_file(directory / f"{split}.jsonl")]
    rows = [
        row
        for row in rows
        if not (row["answer_type"] in (ANSWER_TOOL_CALL, ANSWER_BOTH) and row["ground_truth_calls"] is None)
    ]
    if options["max_prompt_chars"] is not None:
        rows = [row for row in rows if prompt_chars(row["prompt"]) <= options["max_prompt_chars"]]
    if split == "train" and options["decline_share"] is not None:
        rows = select_with_decline_share(rows, size, seed, options["decline_share"])
    else:
        rows = select_items(rows, size, seed)
    columns = ("prompt", "answer_type", "ground_truth_calls", "id", "category")
    return Dataset.from_dict({column: [row[column] for row in rows] for column in columns})


#: Fixed reasoning lines of the reference answers used by the optional format warm-up (``warmup``).
_REFERENCE_THINK = {
    "call": "The request can be done with the listed tools, so I call them with the values it gives.",
    "decline": "None of the listed tools fits this request, so I call no tool.",
}


def reference_completion(row: dict) -> str | None:
    """A reference answer in the required format for one ``build_dataset`` row (warm-up data), or None.

    Tool-call items get ``<think>`` then their reference calls, one JSON line each; items that expect no
    call get ``<think>`` then a ``<response>`` declining. The ``<think>`` text is a fixed sentence: the
    warm-up teaches the answer format, not reasoning.
    """
    if row["answer_type"] == ANSWER_TOOL_CALL and row["ground_truth_calls"]:
        calls = "\n".join(json.dumps(call, ensure_ascii=False) for call in json.loads(row["ground_truth_calls"]))
        return f"<think>{_REFERENCE_THINK['call']}</think>\n<tool_call>\n{calls}\n</tool_call>"
    if row["answer_type"] == ANSWER_RESPONSE:
        return (f"<think>{_REFERENCE_THINK['decline']}</think>\n"
                "<response>I cannot do this with the available tools.</response>")
    return None


def required_files(options: dict) -> list[str]:
    """Files ``build_dataset`` and ``evaluate`` read for these options (the workflow makes the BFCL split)."""
    options = validate_options(options)
    files = [] if options["train_data"] == "toolrl" else [str(Path(options["data_dir"]) / "train.jsonl")]
    return files + [str(eval_split_dir(options) / "eval.jsonl")]
