"""The paper's data sets in their on-hub formats: declared schemas, a checker, and small generated copies.

The paper configs (``config/paper-*.yaml``) read ToolRL's training set, DeepScaleR, five math benchmarks,
Eurus-2-RL-Data and four coding benchmarks from the Hugging Face hub, or from local copies in ``data_dir``
(each family's loader documents the file names). This module states, per data set, the file a local copy
is read from and the columns of its hub copy (:data:`HUB_FILES`), checks a file against them
(:func:`check_file`: a user's saved copy or a generated one), and writes a small copy of every data set in
exactly that layout (:func:`write_miniature_data`), so the paper configs run end to end on a CPU
(``config/overlays/miniature.yaml``).

The generated rows are made here, not copied from the data sets: arithmetic word problems with their
answers, small coding problems whose tests are computed by a reference solution, and tool-calling
dialogues over three made-up tools. They exercise every loader, reward and evaluator of the paper path;
their numbers say nothing about the paper's models.

Columns are the hub copies' as listed on their dataset cards (the loaders read a subset; the rest are
written so a schema drift in the loader, or in a user's saved copy, shows up here):

- ToolRL ``rlla_rl.json`` (github.com/qiancheng0/ToolRL, ``dataset/rlla_4k_raw``): a JSON list of
  ``{instruction, input, output}`` strings;
- ``agentica-org/DeepScaleR-Preview-Dataset`` (``deepscaler.json``): a JSON list of
  ``{problem, answer, solution}``;
- ``HuggingFaceH4/MATH-500`` (test): ``problem, solution, answer, subject, level (int), unique_id``;
- ``HuggingFaceH4/aime_2024`` (train): ``id (int), problem, solution, answer, url, year``;
- ``AI-MO/aimo-validation-amc`` (train): ``id (int), problem, answer (float), url``;
- ``math-ai/minervamath`` (test): ``question, answer``;
- ``math-ai/olympiadbench`` (test): ``id (int), question, solution (list), final_answer (list), context,
  is_multiple_answer (bool), unit, answer_type, subfield, subject, language, question_type``;
- ``PRIME-RL/Eurus-2-RL-Data`` (``train.parquet``, ``validation.parquet``): ``data_source, prompt (chat
  messages), ability, reward_model {ground_truth: JSON string, style}, extra_info {split, index}``;
- ``codeparrot/apps`` (test): ``problem_id (int), question, solutions (JSON string), input_output (JSON
  string), difficulty, url, starter_code``;
- ``BAAI/TACO`` (test): ``question, solutions (JSON string), starter_code, input_output (JSON string),
  difficulty, raw_tags, name, source, tags, skill_types, url, Expected Auxiliary Space, time_limit, date,
  picture_num, memory_limit, Expected Time Complexity`` (all strings);
- ``deepmind/code_contests`` (test): ``name, description, public_tests / private_tests / generated_tests
  {input: list, output: list}, source (int), difficulty (int), solutions / incorrect_solutions {language:
  list of int, solution: list}, cf_contest_id, cf_index, cf_points, cf_rating, cf_tags,
  is_description_translated, untranslated_description, time_limit {seconds, nanos}, memory_limit_bytes,
  input_file, output_file``.

``open-r1/codeforces`` has a layout of its own that the code loader does not read; its problems come from
Eurus-2-RL-Data's validation rows with ``data_source == "codeforces"`` (:mod:`gdpo.tasks.code.sources`),
and so do the generated ones.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gdpo.files import read_jsonl

#: Types a column may hold, by the names used in :data:`HUB_FILES`.
_TYPES: dict[str, Callable[[object], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, float),
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, (list, tuple)) or hasattr(v, "tolist"),
    "dict": lambda v: isinstance(v, dict),
    "str?": lambda v: v is None or isinstance(v, str),
    "json-str": lambda v: isinstance(v, str) and _is_json(v),
}


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


@dataclass(frozen=True)
class HubFile:
    """One data set's local file: where the loaders look for it and the columns of its hub copy.

    Attributes:
        hub_id: the data set's id (a Hugging Face dataset, or ToolRL's repository).
        path: the file name inside the family's ``data_dir``.
        columns: column name -> type name of :data:`_TYPES`.
        nested: for dict columns, their required keys -> type names.
    """

    hub_id: str
    path: str
    columns: dict[str, str]
    nested: dict[str, dict[str, str]] | None = None


_EURUS_COLUMNS = {"data_source": "str", "prompt": "list", "ability": "str", "reward_model": "dict",
                  "extra_info": "dict"}
_EURUS_NESTED = {"reward_model": {"ground_truth": "str", "style": "str"}, "extra_info": {"split": "str", "index": "int"}}
_TESTS = {"input": "list", "output": "list"}

#: family -> data set name -> its local file and hub columns (the names the paper configs and loaders use).
HUB_FILES: dict[str, dict[str, HubFile]] = {
    "tool_calling": {
        "toolrl": HubFile("qiancheng0/ToolRL (dataset/rlla_4k_raw)", "rlla_rl.json",
                          {"instruction": "str", "input": "str", "output": "str"}),
    },
    "math": {
        "deepscaler": HubFile("agentica-org/DeepScaleR-Preview-Dataset", "deepscaler.json",
                              {"problem": "str", "answer": "str", "solution": "str"}),
        "math500": HubFile("HuggingFaceH4/MATH-500", "math500.jsonl",
                           {"problem": "str", "solution": "str", "answer": "str", "subject": "str", "level": "int",
                            "unique_id": "str"}),
        "aime24": HubFile("HuggingFaceH4/aime_2024", "aime24.jsonl",
                          {"id": "int", "problem": "str", "solution": "str", "answer": "str", "url": "str",
                           "year": "str"}),
        "amc": HubFile("AI-MO/aimo-validation-amc", "amc.jsonl",
                       {"id": "int", "problem": "str", "answer": "float", "url": "str"}),
        "minerva": HubFile("math-ai/minervamath", "minerva.jsonl", {"question": "str", "answer": "str"}),
        "olympiadbench": HubFile("math-ai/olympiadbench", "olympiadbench.jsonl",
                                 {"id": "int", "question": "str", "solution": "list", "final_answer": "list",
                                  "context": "str?", "is_multiple_answer": "bool", "unit": "str?",
                                  "answer_type": "str", "subfield": "str", "subject": "str", "language": "str",
                                  "question_type": "str"}),
    },
    "code": {
        "eurus2_rl_train": HubFile("PRIME-RL/Eurus-2-RL-Data", "eurus2_rl/train.parquet", _EURUS_COLUMNS,
                                   _EURUS_NESTED),
        "eurus2_rl_validation": HubFile("PRIME-RL/Eurus-2-RL-Data", "eurus2_rl/validation.parquet",
                                        _EURUS_COLUMNS, _EURUS_NESTED),
        "apps": HubFile("codeparrot/apps", "apps.jsonl",
                        {"problem_id": "int", "question": "str", "solutions": "json-str",
                         "input_output": "json-str", "difficulty": "str", "url": "str", "starter_code": "str"}),
        "taco": HubFile("BAAI/TACO", "taco.jsonl",
                        {"question": "str", "solutions": "json-str", "starter_code": "str",
                         "input_output": "json-str", "difficulty": "str", "raw_tags": "str", "name": "str",
                         "source": "str", "tags": "str", "skill_types": "str", "url": "str",
                         "Expected Auxiliary Space": "str", "time_limit": "str", "date": "str",
                         "picture_num": "str", "memory_limit": "str", "Expected Time Complexity": "str"}),
        "codecontests": HubFile("deepmind/code_contests", "codecontests.jsonl",
                                {"name": "str", "description": "str", "public_tests": "dict",
                                 "private_tests": "dict", "generated_tests": "dict", "source": "int",
                                 "difficulty": "int", "solutions": "dict", "incorrect_solutions": "dict",
                                 "cf_contest_id": "int", "cf_index": "str", "cf_points": "float",
                                 "cf_rating": "int", "cf_tags": "list", "is_description_translated": "bool",
                                 "untranslated_description": "str", "time_limit": "dict",
                                 "memory_limit_bytes": "int", "input_file": "str", "output_file": "str"},
                                {"public_tests": _TESTS, "private_tests": _TESTS, "generated_tests": _TESTS,
                                 "solutions": {"language": "list", "solution": "list"}}),
    },
}


class SchemaMismatch(ValueError):
    """A local data file does not have its hub copy's layout."""


def read_file_rows(path: str | Path) -> list[dict]:
    """Rows of a ``.json`` (a list), ``.jsonl`` or ``.parquet`` file."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    if path.suffix == ".json":
        rows = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(rows, list):
            raise SchemaMismatch(f"{path}: expected a JSON list of rows, found {type(rows).__name__}.")
        return rows
    return read_jsonl(path, "correct or drop that row, or save the hub copy there again")


def check_rows(rows: list[dict], spec: HubFile, where: str) -> None:
    """Raise :class:`SchemaMismatch` naming the first row and column that differ from ``spec``."""
    if not rows:
        raise SchemaMismatch(f"{where}: no rows.")
    expected = set(spec.columns)
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise SchemaMismatch(f"{where}: row {index} is a {type(row).__name__}, not an object.")
        missing, extra = sorted(expected - set(row)), sorted(set(row) - expected)
        if missing or extra:
            raise SchemaMismatch(
                f"{where}: row {index} has columns {sorted(row)}; {spec.hub_id}'s are {sorted(expected)} "
                f"(missing {missing}, unexpected {extra}). Save the data set in its hub layout."
            )
        for column, kind in spec.columns.items():
            if not _TYPES[kind](row[column]):
                raise SchemaMismatch(
                    f"{where}: row {index}, column {column!r} should be {kind}, got {type(row[column]).__name__}."
                )
        for column, keys in (spec.nested or {}).items():
            for key, kind in keys.items():
                if key not in row[column] or not _TYPES[kind](row[column][key]):
                    raise SchemaMismatch(f"{where}: row {index}, {column}.{key} should be {kind}.")


def check_file(family: str, name: str, data_dir: str | Path) -> int:
    """Check ``data_dir/<file of name>`` against its hub layout; returns its row count."""
    spec = HUB_FILES[family][name]
    path = Path(data_dir) / spec.path
    if not path.is_file():
        raise SchemaMismatch(f"{path} does not exist: save {spec.hub_id} there in its hub layout.")
    rows = read_file_rows(path)
    check_rows(rows, spec, str(path))
    return len(rows)


# --- generated copies ----------------------------------------------------------------------------------


def _arithmetic(rng: random.Random) -> tuple[str, int]:
    a, b, c = rng.randint(2, 30), rng.randint(2, 30), rng.randint(1, 9)
    form = rng.randrange(3)
    if form == 0:
        return f"A box holds {a} red and {b} blue marbles. How many marbles are in {c} such boxes?", (a + b) * c
    if form == 1:
        return f"Compute ${a} \\times {b} - {c}$.", a * b - c
    return f"What is the sum of the integers from $1$ to ${a}$?", a * (a + 1) // 2


def math_rows(name: str, count: int, seed: int) -> list[dict]:
    """``count`` generated rows of math data set ``name`` in its hub layout (answers exact)."""
    rng = random.Random(f"miniature-{name}-{seed}")
    rows = []
    for index in range(count):
        problem, answer = _arithmetic(rng)
        solution = f"Working it out gives $\\boxed{{{answer}}}$."
        if name == "deepscaler":
            rows.append({"problem": problem, "answer": str(answer), "solution": solution})
        elif name == "math500":
            rows.append({"problem": problem, "solution": solution, "answer": str(answer), "subject": "Prealgebra",
                         "level": 1 + index % 5, "unique_id": f"test/prealgebra/{index}.json"})
        elif name == "aime24":
            rows.append({"id": 60 + index, "problem": problem, "solution": solution, "answer": str(answer),
                         "url": "https://example.org/miniature", "year": "2024"})
        elif name == "amc":
            rows.append({"id": index, "problem": problem, "answer": float(answer),
                         "url": "https://example.org/miniature"})
        elif name == "minerva":
            rows.append({"question": problem, "answer": str(answer)})
        elif name == "olympiadbench":
            rows.append({"id": 1600 + index, "question": problem, "solution": [solution],
                         "final_answer": [f"${answer}$"], "context": None, "is_multiple_answer": False,
                         "unit": None, "answer_type": "Numerical", "subfield": "Algebra", "subject": "Math",
                         "language": "English", "question_type": "Open-ended"})
        else:
            raise ValueError(f"No generator for math data set {name!r}.")
    return rows


#: Small coding problems: statement, reference solution, and how to make one test input.
#: Stdin problems read stdin and print; call problems define ``fn_name``.
_STDIO_PROBLEMS = [
    ("Read two integers a and b on one line and print a + b.",
     "a, b = map(int, input().split())\nprint(a + b)\n",
     lambda rng: f"{rng.randint(-50, 50)} {rng.randint(-50, 50)}\n"),
    ("Read a line of text and print it reversed.",
     "print(input()[::-1])\n",
     lambda rng: "".join(rng.choice("abcxyz") for _ in range(rng.randint(1, 8))) + "\n"),
    ("Read n, then n integers on the next line, and print the largest.",
     "input()\nprint(max(map(int, input().split())))\n",
     lambda rng: (lambda xs: f"{len(xs)}\n{' '.join(map(str, xs))}\n")(
         [rng.randint(-9, 99) for _ in range(rng.randint(1, 6))])),
]
_CALL_PROBLEMS = [
    ("Write a function count_vowels(s) returning the number of vowels (a, e, i, o, u) in s.",
     "count_vowels", "def count_vowels(s):\n    return sum(ch in 'aeiou' for ch in s)\n",
     lambda rng: ["".join(rng.choice("abeiouxyz") for _ in range(rng.randint(0, 9)))]),
    ("Write a function area(w, h) returning the area of a w by h rectangle.",
     "area", "def area(w, h):\n    return w * h\n",
     lambda rng: [rng.randint(0, 20), rng.randint(0, 20)]),
]


def _run_reference(solution: str, fn_name: str | None, test_input):
    """The reference solution's output on one input (run here, in this process: our own code)."""
    import contextlib
    import io

    namespace: dict = {}
    if fn_name:
        exec(solution, namespace)  # noqa: S102 — the module's own reference solutions
        return namespace[fn_name](*test_input)
    out = io.StringIO()
    lines = iter(test_input.splitlines())
    with contextlib.redirect_stdout(out):
        exec(solution, {"input": lambda *_: next(lines)})  # noqa: S102
    return out.getvalue()


def code_problems(count: int, seed: int, tests_per_problem: int = 3) -> list[dict]:
    """``count`` generated problems: ``statement``, ``solution``, ``fn_name`` (or None), ``inputs``,
    ``outputs`` (computed by running the reference solution)."""
    rng = random.Random(f"miniature-code-{seed}")
    catalogue = [(s, None, sol, make) for s, sol, make in _STDIO_PROBLEMS] + list(_CALL_PROBLEMS)
    problems = []
    for index in range(count):
        statement, fn_name, solution, make_input = catalogue[index % len(catalogue)]
        inputs = [make_input(rng) for _ in range(tests_per_problem)]
        outputs = [_run_reference(solution, fn_name, test_input) for test_input in inputs]
        problems.append({"statement": statement, "solution": solution, "fn_name": fn_name, "inputs": inputs,
                         "outputs": outputs})
    return problems


def _in_outs(problem: dict) -> dict:
    in_outs = {"inputs": problem["inputs"], "outputs": problem["outputs"]}
    return {**in_outs, "fn_name": problem["fn_name"]} if problem["fn_name"] else in_outs


def eurus_rows(problems: list[dict], sources: list[str], split: str) -> list[dict]:
    """Eurus-2-RL-Data rows (coding ones, then one math row the loader must skip)."""
    from gdpo.tasks.code.problems import SYSTEM_PROMPT

    rows = []
    for index, problem in enumerate(problems):
        rows.append({
            "data_source": sources[index % len(sources)],
            "prompt": [{"role": "system", "content": SYSTEM_PROMPT},
                       {"role": "user", "content": problem["statement"]}],
            "ability": "code",
            "reward_model": {"ground_truth": json.dumps(_in_outs(problem)), "style": "rule"},
            "extra_info": {"split": split, "index": index},
        })
    rows.append({"data_source": "numina_olympiads", "prompt": [{"role": "user", "content": "What is 1+1?"}],
                 "ability": "math", "reward_model": {"ground_truth": "2", "style": "rule"},
                 "extra_info": {"split": split, "index": len(problems)}})
    return rows


def apps_rows(problems: list[dict]) -> list[dict]:
    return [{"problem_id": 4000 + i, "question": p["statement"], "solutions": json.dumps([p["solution"]]),
             "input_output": json.dumps(_in_outs(p)), "difficulty": "introductory",
             "url": "https://example.org/miniature", "starter_code": ""} for i, p in enumerate(problems)]


def taco_rows(problems: list[dict]) -> list[dict]:
    return [{"question": p["statement"], "solutions": json.dumps([p["solution"]]),
             "starter_code": f"def {p['fn_name']}(*args):\n\t" if p["fn_name"] else "",
             "input_output": json.dumps(_in_outs(p)), "difficulty": "EASY", "raw_tags": "[]",
             "name": f"miniature_{i}", "source": "codewars" if p["fn_name"] else "codechef",
             "tags": "[]", "skill_types": "[]", "url": "https://example.org/miniature",
             "Expected Auxiliary Space": "", "time_limit": "1 seconds", "date": "2020-01-01",
             "picture_num": "0", "memory_limit": "256 megabytes", "Expected Time Complexity": ""}
            for i, p in enumerate(problems)]


def codecontests_rows(problems: list[dict]) -> list[dict]:
    rows = []
    for i, p in enumerate(problems):
        if p["fn_name"]:
            continue  # CodeContests problems are stdin/stdout only
        first, rest = p["inputs"][:1], p["inputs"][1:]
        rows.append({
            "name": f"miniature_{i}", "description": p["statement"],
            "public_tests": {"input": first, "output": p["outputs"][:1]},
            "private_tests": {"input": rest, "output": p["outputs"][1:]},
            "generated_tests": {"input": [], "output": []},
            "source": 2, "difficulty": 7,
            "solutions": {"language": [3], "solution": [p["solution"]]},
            "incorrect_solutions": {"language": [], "solution": []},
            "cf_contest_id": 1000 + i, "cf_index": "A", "cf_points": 500.0, "cf_rating": 800, "cf_tags": ["math"],
            "is_description_translated": False, "untranslated_description": "",
            "time_limit": {"seconds": 2, "nanos": 0}, "memory_limit_bytes": 256_000_000,
            "input_file": "", "output_file": "",
        })
    return rows


#: Made-up tools of the generated ToolRL dialogues: name, description, parameters, a value maker.
_TOOLS = [
    ("get_weather", "Current weather of a city.", {"city": "str"}, lambda rng: {"city": rng.choice(
        ["Paris", "Lima", "Oslo", "Cairo"])}),
    ("convert_currency", "Convert an amount between currencies.", {"amount": "int", "to": "str"},
     lambda rng: {"amount": rng.randint(1, 500), "to": rng.choice(["EUR", "JPY", "USD"])}),
    ("find_book", "Find a book by its author.", {"author": "str"}, lambda rng: {"author": rng.choice(
        ["Austen", "Borges", "Tolstoy"])}),
]
_REQUESTS = {
    "get_weather": "What's the weather like in {city} right now?",
    "convert_currency": "Please convert {amount} dollars to {to}.",
    "find_book": "Can you find me a book by {author}?",
}


def _toolrl_system_prompt(tools: list[tuple]) -> str:
    listing = "\n".join(json.dumps({"name": name, "description": description, "parameters": {
        key: {"type": kind, "description": key} for key, kind in parameters.items()}}) for name, description,
        parameters, _ in tools)
    return (
        "You are a helpful multi-turn dialogue assistant capable of leveraging tool calls to solve user tasks "
        "and provide structured chat responses.\n\n**Available Tools**\nIn your response, you can use the "
        f"following tools:\n{listing}\n\n**Steps for Each Turn**\n1. **Think:** Recall relevant context and "
        "analyze the current user goal.\n2. **Decide on Tool Usage:** If a tool is needed, specify the tool and "
        "its parameters.\n3. **Respond Appropriately:** If a response is needed, generate one while maintaining "
        "consistency across user queries.\n\n**Output Format**\n```plaintext\n<think> Your thoughts and "
        "reasoning </think>\n<tool_call>\n{\"name\": \"Tool name\", \"parameters\": {\"Parameter name\": "
        "\"Parameter content\", \"... ...\": \"... ...\"}}\n...\n</tool_call>\n<response> AI's final response "
        "</response>\n```"
    )


def toolrl_rows(count: int, seed: int) -> list[dict]:
    """ToolRL raw items: two in three ask for one call of an offered tool, the rest for no tool."""
    rng = random.Random(f"miniature-toolrl-{seed}")
    rows = []
    for index in range(count):
        offered = rng.sample(_TOOLS, 2)
        if index % 3 == 2:
            request = "Thanks, that is all for today!"
            output = "<think> The user is closing the conversation; no tool is needed. </think>\n" \
                     "<response> You're welcome, have a good day! </response>"
        else:
            name, _, _, make = offered[0]
            arguments = make(rng)
            request = _REQUESTS[name].format(**arguments)
            call = json.dumps({"name": name, "parameters": arguments})
            output = f"<think> The user asks for {name}; I call it. </think>\n<tool_call>\n{call}\n</tool_call>"
        rows.append({"instruction": _toolrl_system_prompt(offered),
                     "input": f"**Dialogue Records History**\n<user> {request} </user>", "output": output})
    return rows


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    elif path.suffix == ".json":
        path.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def write_miniature_data(out_dir: str | Path, rows: int = 8, seed: int = 0) -> dict:
    """Write a generated copy of every paper data set under ``out_dir/<family>/`` in its hub layout, check
    each file against :data:`HUB_FILES`, and write ``out_dir/MANIFEST.json`` (file -> rows, hub id).

    Args:
        out_dir: e.g. ``resources/data/miniature``; the families' ``data_dir`` are its subdirectories.
        rows: rows per data set (training sets get four times as many).

    Returns:
        The manifest.
    """
    out_dir = Path(out_dir)
    tables = {("tool_calling", "toolrl"): toolrl_rows(4 * rows, seed)}
    for name in HUB_FILES["math"]:
        tables[("math", name)] = math_rows(name, 4 * rows if name == "deepscaler" else rows, seed)
    train = code_problems(4 * rows, seed)
    evaluation = code_problems(rows, seed + 1)
    tables[("code", "eurus2_rl_train")] = eurus_rows(train, ["apps", "taco", "codecontests", "codeforces"], "train")
    tables[("code", "eurus2_rl_validation")] = eurus_rows(evaluation, ["codeforces"], "validation")
    tables[("code", "apps")] = apps_rows(evaluation)
    tables[("code", "taco")] = taco_rows(evaluation)
    tables[("code", "codecontests")] = codecontests_rows(evaluation)
    manifest = {}
    for (family, name), table in tables.items():
        spec = HUB_FILES[family][name]
        _write(out_dir / family / spec.path, table)
        count = check_file(family, name, out_dir / family)
        manifest[f"{family}/{spec.path}"] = {"rows": count, "layout_of": spec.hub_id}
    (out_dir / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
