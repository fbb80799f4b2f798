"""Paper-scale coding data: Eurus-2-RL-Data for training, and for evaluation too, whose validation rows by
``data_source`` are the Apps, CodeContests, Codeforces and Taco benchmarks; from local files (``data_dir``) or the
Hugging Face hub.

Formats, and where they were seen:

- **Eurus-2-RL-Data** (``PRIME-RL/Eurus-2-RL-Data``; files ``train.parquet`` and ``validation.parquet``):
  columns ``data_source``, ``prompt`` (chat messages), ``ability`` (``"code"`` or ``"math"``),
  ``reward_model`` (``{"ground_truth", "style"}``) and ``extra_info`` (dataset card). For coding rows
  ``data_source`` is one of ``apps``, ``codecontests``, ``codeforces``, ``taco``, and ``ground_truth`` is a
  JSON string ``{"inputs": [...], "outputs": [...]}``, with ``"fn_name"`` for function-call problems, as the
  APPS test harness reads it (PRIME's code reward in verl parses it that way). Reported by third-party
  preprocessing code and handled here: ``inputs``/``outputs`` may themselves be strings holding a Python
  list, and a stdin test's input or output may be a list of lines. Function-call tests give the positional
  arguments as a list; the expected value is often wrapped in a one-element list (APPS accepts either).
- **Evaluation**: the paper's four coding benchmarks are taken as the coding rows of Eurus-2-RL-Data's
  ``validation`` split grouped by ``data_source`` (an assumption: the paper names the four sources, not the
  files). A benchmark may instead come from its own file ``data_dir/<benchmark>.jsonl`` or ``.parquet`` in
  one of these layouts: Eurus rows as above; APPS/TACO rows (``question``, ``input_output`` JSON string in
  the same inputs/outputs layout, ``starter_code``; ``codeparrot/apps`` card); CodeContests rows
  (``description``, ``public_tests``/``private_tests``/``generated_tests`` as ``{"input": [...],
  "output": [...]}``, ``deepmind/code_contests`` card).

Local files: ``data_dir/eurus2_rl/{train,validation}.parquet`` (the hub repository's file names), or
``data_dir/<benchmark>.{jsonl,parquet}``. Without them the hub is tried (needs network); offline
(``HF_HUB_OFFLINE``, as GPU jobs run), the copy ``gdpo fetch`` left in the Hugging Face cache.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from gdpo.files import read_jsonl
from gdpo.tasks.code.problems import SYSTEM_PROMPT, make_problem

EURUS_HUB_ID = "PRIME-RL/Eurus-2-RL-Data"
CODE_SOURCES = ("apps", "codecontests", "codeforces", "taco")
#: Per-test seconds for competition problems (PRIME's code reward runs each problem with a 5 s timeout).
COMPETITION_TIME_LIMIT = 5.0
STDIO_INSTRUCTION = "Write a Python program that reads from standard input and writes to standard output."
CALL_INSTRUCTION = "Complete the starter code; your function is called with the test arguments."


class DataUnavailable(Exception):
    """A configured data set is neither in ``data_dir`` nor reachable on the hub."""


def _plain(value):
    """Parquet/arrow values (numpy arrays of dicts) as plain lists and dicts."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _as_list(value, what: str) -> list:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = ast.literal_eval(value)
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list (or a string holding one), got {type(value).__name__}.")
    return value


def _text(value) -> str:
    return value if isinstance(value, str) else "\n".join(map(str, value))


def parse_in_outs(in_outs, max_tests: int | None) -> dict:
    """``calls`` or ``stdio`` tests from an APPS-style ``{"inputs", "outputs"[, "fn_name"]}`` (a dict or
    its JSON)."""
    if isinstance(in_outs, str):
        in_outs = json.loads(in_outs)
    if not isinstance(in_outs, dict):
        raise ValueError("test cases must be a JSON object with 'inputs' and 'outputs'.")
    inputs = _as_list(in_outs.get("inputs"), "inputs")
    outputs = _as_list(in_outs.get("outputs"), "outputs")
    if not inputs or len(inputs) != len(outputs):
        raise ValueError(f"need as many outputs as inputs (>0), got {len(inputs)} and {len(outputs)}.")
    pairs = list(zip(inputs, outputs))[: max_tests or None]
    name = in_outs.get("fn_name")
    if not name:
        return {"stdio": [(_text(i), _text(o)) for i, o in pairs]}
    if not str(name).isidentifier():
        raise ValueError(f"fn_name {name!r} is not a Python identifier.")
    # LeetCode-style problems (Taco, some Apps) define the function as a method of class Solution.
    target = f"(Solution().{name} if 'Solution' in globals() and hasattr(Solution, {name!r}) else {name})"
    calls = []
    for args, expected in pairs:
        args = args if isinstance(args, list) else [args]
        accepted = [repr(expected)]
        if isinstance(expected, list) and len(expected) == 1:
            accepted.append(repr(expected[0]))
        calls.append((f"{target}(*{args!r})", accepted))
    return {"calls": calls}


def eurus_problem(row: dict, index: int, max_tests: int | None, time_limit: float) -> dict | None:
    """A coding row of Eurus-2-RL-Data as a problem (its prompt unchanged); None for math rows."""
    row = _plain(row)
    if row.get("ability") != "code":
        return None
    reward_model = row.get("reward_model") or {}
    tests = parse_in_outs(reward_model.get("ground_truth"), max_tests)
    prompt = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
    source = row.get("data_source", "eurus2_rl")
    return make_problem(prompt, source, f"{source}-{index}", time_limit=time_limit, **tests)


def _statement_prompt(statement: str, starter_code: str, function_call: bool) -> list[dict]:
    user = statement.strip()
    if starter_code and starter_code.strip():
        user += f"\n\nStarter code:\n```python\n{starter_code.rstrip()}\n```"
    user += "\n\n" + (CALL_INSTRUCTION if function_call else STDIO_INSTRUCTION)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def benchmark_problem(
    row: dict, benchmark: str, index: int, max_tests: int | None, time_limit: float
) -> dict | None:
    """A row of a benchmark file in any of the supported layouts (see the module docstring)."""
    row = _plain(row)
    if "reward_model" in row:
        return eurus_problem(row, index, max_tests, time_limit)
    if "input_output" in row:
        tests = parse_in_outs(row["input_output"], max_tests)
        prompt = _statement_prompt(row["question"], row.get("starter_code") or "", "calls" in tests)
    elif "public_tests" in row:
        inputs, outputs = [], []
        for group in ("public_tests", "private_tests", "generated_tests"):
            cases = row.get(group) or {}
            inputs += list(cases.get("input") or [])
            outputs += list(cases.get("output") or [])
        tests = parse_in_outs({"inputs": inputs, "outputs": outputs}, max_tests)
        prompt = _statement_prompt(row["description"], "", False)
    else:
        raise ValueError(
            f"Row {index} of {benchmark} has none of reward_model (Eurus), input_output (APPS/TACO) or "
            "public_tests (CodeContests); convert the file to one of these layouts."
        )
    return make_problem(
        prompt, benchmark, f"{benchmark}-{row.get('problem_id', index)}", time_limit=time_limit, **tests
    )


def _read_rows(path: Path, code_only: bool = False) -> list[dict]:
    """Rows of a parquet or jsonl file; ``code_only`` keeps rows with ``ability == "code"`` (read filter)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path, filters=[("ability", "=", "code")] if code_only else None).to_pylist()
    rows = read_jsonl(path)
    return [row for row in rows if row.get("ability") == "code"] if code_only else rows


_hub_failures: dict[str, str] = {}  # one failed hub attempt per split and process (each costs many seconds)


def _hub_offline() -> bool:
    return any(
        os.environ.get(name, "").lower() in ("1", "true", "yes")
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def _eurus_rows(split: str, data_dir: str | None) -> list[dict]:
    """Coding rows of Eurus-2-RL-Data's ``train`` or ``validation`` split: local files first, else the hub."""
    if data_dir is not None:
        for path in (
            Path(data_dir) / "eurus2_rl" / f"{split}.parquet",
            Path(data_dir) / "eurus2_rl" / f"{split}.jsonl",
        ):
            if path.exists():
                return _read_rows(path, code_only=True)
    where = f"{data_dir}/eurus2_rl/{split}.parquet" if data_dir else "data_dir/eurus2_rl/<split>.parquet"
    if split not in _hub_failures:
        try:
            data = _load_eurus(split)
            return list(data.filter(lambda ability: ability == "code", input_columns="ability"))
        except Exception as error:  # noqa: BLE001 (offline and not cached, no credentials, a renamed repository)
            _hub_failures[split] = (
                "offline mode (HF_HUB_OFFLINE) without a copy in the Hugging Face cache (`gdpo fetch` saves one)"
                if _hub_offline() else f"the hub failed ({type(error).__name__})")
    raise DataUnavailable(
        f"Eurus-2-RL-Data ({split}) is not available: no {where} and {_hub_failures[split]}."
    )


def _load_eurus(split: str):
    """Eurus-2-RL-Data's ``split`` from the hub; offline (a GPU job), the copy ``gdpo fetch`` saved in the cache
    and never the network, whatever the libraries read from the environment when they were imported."""
    import datasets
    import datasets.config
    import huggingface_hub.constants

    if not _hub_offline():
        return datasets.load_dataset(EURUS_HUB_ID, split=split)
    saved = (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE,
             datasets.config.HF_DATASETS_OFFLINE)
    huggingface_hub.constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    datasets.config.HF_DATASETS_OFFLINE = True
    try:
        return datasets.load_dataset(EURUS_HUB_ID, split=split)
    finally:
        (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE,
         datasets.config.HF_DATASETS_OFFLINE) = saved


def eurus_train_problems(data_dir: str | None, max_tests: int | None, time_limit: float) -> list[dict]:
    """The coding problems of Eurus-2-RL-Data's train split (about 27k)."""
    rows = _eurus_rows("train", data_dir)
    problems = [eurus_problem(row, i, max_tests, time_limit) for i, row in enumerate(rows)]
    return [p for p in problems if p is not None]


def benchmark_problems(
    benchmark: str, data_dir: str | None, max_tests: int | None, time_limit: float
) -> list[dict]:
    """Problems of one of :data:`CODE_SOURCES`: ``data_dir/<benchmark>.{jsonl,parquet}`` if present, else the
    coding rows of Eurus-2-RL-Data's validation split with that ``data_source``."""
    if benchmark not in CODE_SOURCES:
        raise ValueError(f"Unknown competition benchmark {benchmark!r}; valid: {', '.join(CODE_SOURCES)}.")
    if data_dir is not None:
        for suffix in (".jsonl", ".parquet"):
            path = Path(data_dir) / f"{benchmark}{suffix}"
            if path.exists():
                rows = _read_rows(path)
                problems = [
                    benchmark_problem(row, benchmark, i, max_tests, time_limit) for i, row in enumerate(rows)
                ]
                return [p for p in problems if p is not None]
    rows = _eurus_rows("validation", data_dir)
    problems = []
    for index, row in enumerate(rows):
        if row.get("data_source") == benchmark:
            problems.append(eurus_problem(row, index, max_tests, time_limit))
    if not problems:
        raise DataUnavailable(f"Eurus-2-RL-Data's validation split has no coding rows from {benchmark!r}.")
    return problems
