"""The code family: program extraction, rewards on shared sandbox runs, data sets and loaders, evaluate()."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gdpo.evaluation import EvalRequest
from gdpo.tasks import code
from gdpo.tasks.code import rewards
from gdpo.tasks.code.problems import TEMPLATES, humaneval_problems, procedural_problems
from gdpo.tasks.code.rewards import REWARD_FUNCTIONS, extract_code, make_job
from gdpo.tasks.code.sandbox import run_many
from gdpo.tasks.code.sources import parse_in_outs

EXTRACTION_CASES = [
    # the last python block wins
    ("```python\nx = 1\n```\ntext\n```python\nx = 2\n```", "x = 2\n"),
    # py and python3 tags count as python
    ("```py\na = 1\n```", "a = 1\n"),
    # a python block is preferred to a later untagged one
    ("```python\nkeep = 1\n```\n```\nshell\n```", "keep = 1\n"),
    # an untagged block when there is no python block
    ("Here:\n```\nz = 3\n```", "z = 3\n"),
    # an unclosed final block (cut at the token limit) still counts
    ("```python\ndef f():\n    return", "def f():\n    return"),
    # no fence: the whole text
    ("def f():\n    return 1\n", "def f():\n    return 1\n"),
]


@pytest.mark.parametrize("text, expected", EXTRACTION_CASES)
def test_extract_code(text, expected):
    assert extract_code(text) == expected


# Correct source for every procedural template (the reference lambdas are not source code).
REFERENCE_SOURCE = {
    "add": "def add(a, b):\n    return a + b\n",
    "subtract": "def subtract(a, b):\n    return a - b\n",
    "multiply": "def multiply(a, b):\n    return a * b\n",
    "square": "def square(n):\n    return n * n\n",
    "double": "def double(n):\n    return 2 * n\n",
    "absolute": "def absolute(n):\n    return abs(n)\n",
    "is_even": "def is_even(n):\n    return n % 2 == 0\n",
    "is_positive": "def is_positive(n):\n    return n > 0\n",
    "maximum": "def maximum(numbers):\n    return max(numbers)\n",
    "minimum": "def minimum(numbers):\n    return min(numbers)\n",
    "total": "def total(numbers):\n    return sum(numbers)\n",
    "first_element": "def first_element(items):\n    return items[0]\n",
    "last_element": "def last_element(items):\n    return items[-1]\n",
    "reverse_string": "def reverse_string(s):\n    return s[::-1]\n",
    "string_length": "def string_length(s):\n    return len(s)\n",
    "to_upper": "def to_upper(s):\n    return s.upper()\n",
    "concat": "def concat(a, b):\n    return a + b\n",
    "count_vowels": "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)\n",
    "factorial": "import math\ndef factorial(n):\n    return math.factorial(n)\n",
    "count_occurrences": "def count_occurrences(items, x):\n    return items.count(x)\n",
}


def function_name(problem: dict) -> str:
    return problem["problem_id"].split("-", 3)[3]


def test_procedural_problems_are_solvable_and_seeded():
    problems = procedural_problems("train", 60, seed=3)
    assert problems == procedural_problems("train", 60, seed=3)  # same seed, same data
    assert problems != procedural_problems("eval", 60, seed=3)  # the split is part of the seed
    assert {function_name(p) for p in problems} == set(REFERENCE_SOURCE) == {t.name for t in TEMPLATES}
    jobs = [make_job(REFERENCE_SOURCE[function_name(p)], p["tests"], p["time_limit"]) for p in problems]
    wrong = [
        make_job(f"def {function_name(p)}(*args):\n    return None\n", p["tests"], p["time_limit"])
        for p in problems
    ]
    right, bad = run_many(jobs), run_many(wrong)
    assert all(r.all_passed for r in right), [r for r in right if not r.all_passed][:2]
    assert not any(r.passed for r in bad)


def conversation(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def test_rewards_share_one_sandbox_run_per_completion(monkeypatch):
    rewards.clear_cache()
    problem = procedural_problems("train", 1, seed=0)[0]
    name = function_name(problem)
    completions = [
        conversation(f"```python\n{REFERENCE_SOURCE[name]}```"),  # right and short
        conversation(f"Sure!\n```python\n{REFERENCE_SOURCE[name]}```" + " padding" * 40),  # right but long
        conversation(f"```python\ndef {name}(*args):\n    return None\n```"),  # wrong, runs cleanly
        conversation(f"```python\ndef {name}(*args):\n    return 1 / 0\n```"),  # runtime error
        conversation("```python\ndef broken(:\n```"),  # compile error
    ]
    lengths = [20, 90, 20, 20, 20]
    columns = {
        "tests": [problem["tests"]] * 5,
        "time_limit": [problem["time_limit"]] * 5,
        "code_prefix": [""] * 5,
        "length_limit": [64] * 5,
        "completion_ids": [[7] * n for n in lengths],
    }
    batches = []
    real_run_many = rewards.run_many
    monkeypatch.setattr(
        rewards, "run_many", lambda jobs, workers: batches.append(len(jobs)) or real_run_many(jobs, workers)
    )
    scores = {name: fn(completions, **columns) for name, fn in REWARD_FUNCTIONS.items()}
    assert scores["pass"] == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert scores["length_conditioned"] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert scores["bug"] == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert batches == [4]  # one parallel batch of the 4 distinct programs, then cache hits only


def test_pass_reward_is_a_fraction():
    rewards.clear_cache()
    tests = json.dumps({"calls": [["f(1)", ["1"]], ["f(2)", ["4"]], ["f(3)", ["9"]], ["f(4)", ["16"]]]})
    completion = conversation("```python\ndef f(n):\n    return n * n if n < 3 else 0\n```")
    assert REWARD_FUNCTIONS["pass"]([completion], tests=[tests], time_limit=[1.0]) == [0.5]


def test_length_reward_needs_its_columns():
    with pytest.raises(ValueError, match="length_limit"):
        REWARD_FUNCTIONS["length_conditioned"](
            [conversation("x")], tests=["{}"], time_limit=[1.0], completion_ids=[[1]]
        )


def test_build_dataset_columns_and_options():
    data = code.build_dataset("train", 6, seed=1, length_limit=96)
    assert set(data.column_names) >= {
        "prompt",
        "tests",
        "code_prefix",
        "time_limit",
        "length_limit",
        "benchmark",
    }
    assert data[0]["prompt"][-1]["role"] == "user" and data[0]["length_limit"] == 96
    assert len(code.build_dataset("eval", 5, seed=1, eval_data="procedural", length_limit=64)) == 5
    assert code.resolve_options({"train_data": "PRIME-RL/Eurus-2-RL-Data", "length_limit": 64})["train_data"] == "eurus2_rl"


OPTION_ERRORS = [
    # unknown key
    ({"generators": ["x"]}, "Unknown code task option"),
    # unknown training data
    ({"train_data": "mbpp"}, "train_data"),
    # unknown benchmark
    ({"eval_data": ["apps", "mbpp"]}, "eval_data"),
    # nonsense length limit
    ({"length_limit": 0}, "length_limit"),
    # nonsense time limit
    ({"time_limit": -1, "length_limit": 64}, "time_limit"),
    # no length limit: the paper's l has no default
    ({"train_data": "procedural"}, "length_limit must be set"),
]


@pytest.mark.parametrize("options, message", OPTION_ERRORS)
def test_option_errors(options, message):
    with pytest.raises(ValueError, match=message):
        code.build_dataset("train", 2, seed=0, **options)


# --- paper-scale loaders on small local files in the published layouts ---------------------------------

STDIO_TRUTH = {"inputs": ["1 2\n", "10 5\n"], "outputs": ["3\n", "15\n"]}
# Eurus also stores the lists as strings holding Python lists, and fn_name problems with positional args.
CALL_TRUTH = {"fn_name": "area", "inputs": "[[2, 3], [4, 5]]", "outputs": "[[6], [20]]"}
STDIO_SOLUTION = "a, b = map(int, input().split())\nprint(a + b)\n"
CALL_SOLUTION = "class Solution:\n    def area(self, w, h):\n        return w * h\n"
# Near misses that a numeric tolerance or Python's == would accept: an integer answer printed as a float
# off by 1e-7, and a float returned where the integer is expected.
STDIO_NEAR_MISS = "a, b = map(int, input().split())\nprint(a + b + 1e-7)\n"
CALL_NEAR_MISS = "class Solution:\n    def area(self, w, h):\n        return float(w * h)\n"


def eurus_row(source: str, truth: dict, ability: str = "code") -> dict:
    return {
        "data_source": source,
        "prompt": [{"role": "system", "content": "sys"}, {"role": "user", "content": f"Solve {source}."}],
        "ability": ability,
        "reward_model": {"ground_truth": json.dumps(truth), "style": "rule"},
        "extra_info": {"split": "dummy", "index": 0},
    }


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "eurus2_rl").mkdir()
    train = [
        eurus_row("apps", STDIO_TRUTH),
        eurus_row("taco", CALL_TRUTH),
        eurus_row("numina_math", "42", "math"),
    ]
    pq.write_table(pa.Table.from_pylist(train), tmp_path / "eurus2_rl" / "train.parquet")
    validation = [eurus_row(source, STDIO_TRUTH) for source in ("apps", "codecontests", "codeforces")]
    pq.write_table(pa.Table.from_pylist(validation), tmp_path / "eurus2_rl" / "validation.parquet")
    apps_row = {
        "problem_id": 7,
        "question": "Add.",
        "input_output": json.dumps(STDIO_TRUTH),
        "starter_code": "",
    }
    (tmp_path / "taco.jsonl").write_text(json.dumps(apps_row) + "\n")
    contests_row = {
        "name": "sum",
        "description": "Add two numbers.",
        "public_tests": {"input": ["1 2\n"], "output": ["3\n"]},
        "private_tests": {"input": ["2 2\n"], "output": ["4\n"]},
        "generated_tests": {"input": ["0 0\n"], "output": ["0\n"]},
    }
    (tmp_path / "codecontests.jsonl").write_text(json.dumps(contests_row) + "\n")
    return tmp_path


def solve_all(data, solutions: dict) -> list:
    columns = {k: data[k] for k in ("tests", "time_limit", "code_prefix")}
    completions = [conversation(f"```python\n{solutions[b]}```") for b in data["benchmark"]]
    return REWARD_FUNCTIONS["pass"](completions, **columns)


def test_eurus_training_rows(data_dir):
    data = code.build_dataset("train", None, seed=0, train_data="eurus2_rl", data_dir=str(data_dir), length_limit=64)
    assert sorted(data["benchmark"]) == ["apps", "taco"]  # the math row is skipped
    assert data[0]["prompt"][0] == {"role": "system", "content": "sys"}  # prompts kept as published
    assert solve_all(data, {"apps": STDIO_SOLUTION, "taco": CALL_SOLUTION}) == [1.0, 1.0]
    assert solve_all(data, {"apps": STDIO_NEAR_MISS, "taco": CALL_NEAR_MISS}) == [0.0, 0.0]


def test_benchmark_files_and_eurus_validation(data_dir):
    data = code.build_dataset(
        "eval", None, seed=0, eval_data=["apps", "codecontests", "codeforces", "taco"], data_dir=str(data_dir),
        length_limit=64,
    )
    counts = {b: data["benchmark"].count(b) for b in set(data["benchmark"])}
    assert counts == {"apps": 1, "codecontests": 1, "codeforces": 1, "taco": 1}
    assert json.loads(data["tests"][data["benchmark"].index("codecontests")])["stdio"][2] == ["0 0\n", "0\n"]
    assert solve_all(data, dict.fromkeys(counts, STDIO_SOLUTION)) == [1.0] * 4
    assert solve_all(data, dict.fromkeys(counts, STDIO_NEAR_MISS)) == [0.0] * 4


def test_in_outs_edge_cases():
    lines = parse_in_outs({"inputs": [["1 2", "3"]], "outputs": [["x", "y"]]}, None)
    assert lines == {"stdio": [("1 2\n3", "x\ny")]}  # stdin/stdout given as lists of lines
    capped = parse_in_outs({"inputs": ["a"] * 50, "outputs": ["b"] * 50}, 20)
    assert len(capped["stdio"]) == 20
    with pytest.raises(ValueError, match="as many outputs"):
        parse_in_outs({"inputs": ["a"], "outputs": []}, None)


def test_missing_benchmark_data_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(code.sources.DataUnavailable, match="Eurus-2-RL-Data"):
        code.load_benchmark("apps", None, 0, code.resolve_options({"data_dir": str(tmp_path), "length_limit": 64}))


def test_humaneval_from_the_package():
    problems = humaneval_problems()
    assert len(problems) == 164
    first = problems[0]
    assert first["problem_id"] == "HumanEval/0" and "from typing import List" in first["code_prefix"]
    solution = (
        "def has_close_elements(numbers, threshold):\n"
        "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
    )
    columns = {k: [first[k]] * 2 for k in ("tests", "time_limit", "code_prefix")}
    completions = [
        conversation(f"```python\n{solution}```"),
        conversation("```python\ndef has_close_elements(n, t):\n    return True\n```"),
    ]
    # a constant answer passes the converted cases it happens to match (4 of 7), never the problem
    assert REWARD_FUNCTIONS["pass"](completions, **columns) == [1.0, 4 / 7]
    assert [r.all_passed for r in rewards.score_completions(completions, **columns)] == [True, False]


# --- evaluate() -------------------------------------------------------------------------------------------


def request(tmp_path: Path, **options) -> EvalRequest:
    return EvalRequest(
        task="code_mini",
        method="base",
        seed=0,
        model_dir=tmp_path / "model",
        adapter_dir=None,
        options=options,
        eval_size=4,
        num_samples=2,
        temperature=1.0,
        top_p=1.0,
        max_new_tokens=64,
        batch_size=4,
        work_dir=tmp_path,
    )


def test_evaluate_metrics_with_scripted_completions(tmp_path, monkeypatch):
    from gdpo.generation import generate

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")

    def scripted(model, tokenizer, prompts, num_samples, **kwargs):
        out = []
        for prompt in prompts:
            name = prompt[-1]["content"].split("`")[1].split("(")[0]
            good = SimpleNamespace(
                text=f"```python\n{REFERENCE_SOURCE[name]}```", num_tokens=30, truncated=False
            )
            crash = SimpleNamespace(
                text=f"```python\ndef {name}(*a):\n    return 1/0\n```", num_tokens=100, truncated=True
            )
            out.append([good, crash][:num_samples])
        return out

    # The scripted completions need no model; generation reads only where it is (the CPU).
    on_cpu = SimpleNamespace(device=SimpleNamespace(type="cpu"))
    monkeypatch.setattr(generate, "load_policy", lambda model_dir, adapter_dir=None, **placement: (on_cpu, "tokenizer"))
    monkeypatch.setattr(generate, "generate_completions", scripted)
    result = code.evaluate(
        request(tmp_path, eval_data=["procedural", "apps"], data_dir=str(tmp_path), length_limit=64)
    )
    assert result["benchmarks"]["procedural"] == {"pass": 50.0, "exceed": 50.0, "bug": 50.0, "n_items": 4}
    assert result["summary"] == {"pass": 50.0, "exceed": 50.0, "bug": 50.0}
    assert "apps" in result["not_run"] and "Eurus-2-RL-Data" in result["not_run"]["apps"]
    lines = (tmp_path / "completions.jsonl").read_text().splitlines()
    assert len(lines) == 8 and {json.loads(line)["status"] for line in lines} == {"ok", "runtime_error"}
    assert len((tmp_path / "items.jsonl").read_text().splitlines()) == 4
    # Per-item outcomes: sample 0 passes, sample 1 crashes (a bug) and runs long, on every problem.
    outcomes = result["items"]["procedural"]
    assert len(outcomes["ids"]) == 4 and "apps" not in result["items"]
    assert outcomes["scores"] == {"pass": ["10"] * 4, "exceed": ["01"] * 4, "bug": ["01"] * 4}


def test_evaluate_end_to_end_with_tiny_model(tmp_path):
    from gdpo.training import models

    model_dir = models.prepare_model(models.BUILTIN_TINY, tmp_path / "tiny")
    req = request(tmp_path, eval_data="procedural", length_limit=64)
    result = code.evaluate(EvalRequest(**{**req.__dict__, "model_dir": model_dir, "max_new_tokens": 16}))
    bench = result["benchmarks"]["procedural"]
    assert bench["n_items"] == 4 and bench["pass"] == 0.0  # a random model writes no working code
    assert 0.0 <= bench["bug"] <= 100.0 and result["not_run"] == {}


# --- HumanEval as value tests -----------------------------------------------------------------------------


def humaneval_jobs(program_of, reference_asserts=False):
    """Jobs of every HumanEval problem for the program ``program_of(row)`` (row: the benchmark's record)."""
    from gdpo.tasks.code.problems import humaneval_rows

    rows = {row["task_id"]: row for row in humaneval_rows()}
    problems = humaneval_problems(reference_asserts=reference_asserts)
    return [
        make_job(
            program_of(rows[p["problem_id"]]),
            p["tests"],
            p["time_limit"],
            p["code_prefix"],
            reference_asserts=reference_asserts,
        )
        for p in problems
    ]


def canonical(row):
    return row["prompt"] + row["canonical_solution"]


def always_equal(row):
    """Returns an object equal to everything (a forger of ``assert candidate(x) == y``)."""
    return (
        "class Always:\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        f"def {row['entry_point']}(*args, **kwargs):\n    return Always()\n"
    )


def frame_walker(row):
    """Finds the harness's reporter in the calling frames, reports every test as passed and leaves."""
    return (
        "import os, sys\n"
        f"def {row['entry_point']}(*args, **kwargs):\n"
        "    frame = sys._getframe(1)\n"
        "    while 'send' not in frame.f_locals:\n        frame = frame.f_back\n"
        "    send = frame.f_locals['send']\n"
        "    for index in range(2000):\n"
        "        send(index, b'ok')\n        send(index, b'value', b'0')\n"
        "    send(-1, b'done')\n    os._exit(0)\n"
    )


def test_humaneval_canonical_solutions_pass_every_converted_case():
    problems = humaneval_problems()
    assert len(problems) == 164 and all(json.loads(p["tests"])["calls"] for p in problems)
    assert sum(len(json.loads(p["tests"])["calls"]) for p in problems) >= 1000
    results = run_many(humaneval_jobs(canonical))
    failed = [(p["problem_id"], r.status, r.detail[:200]) for p, r in zip(problems, results)]
    failed = [row for row, result in zip(failed, results) if not result.all_passed]
    assert failed == []


def test_humaneval_conversion_is_the_same_every_time():
    assert humaneval_problems() == humaneval_problems()  # random inputs are drawn from a fixed seed


@pytest.mark.parametrize("forger", [always_equal, frame_walker])
def test_forged_programs_fail_converted_humaneval(forger):
    # the first 24 problems here; every problem in the slow test below
    results = run_many(humaneval_jobs(forger)[:24])
    assert [r.passed for r in results] == [0] * 24


def test_reference_asserts_are_kept_but_refused_as_rewards():
    reference = humaneval_problems(reference_asserts=True)
    assert all(json.loads(p["tests"])["asserts"] for p in reference)
    with pytest.raises(ValueError, match="could forge"):
        make_job("pass", reference[0]["tests"], 5.0)
    # the reason: on the original asserts a forger claims passes from inside its own process
    forged = run_many(humaneval_jobs(frame_walker, reference_asserts=True)[:4])
    assert all(r.all_passed for r in forged)


def test_assert_conversion_reports_bad_benchmark_data():
    from gdpo.tasks.code.problems import asserts_as_value_tests

    check = "def check(candidate):\n    assert candidate(2) == 4\n"
    converted = asserts_as_value_tests("def f(x):\n    return x * 2\n", check, "f", "T/0")
    assert converted == [("f(*(2,))", ("4",))]
    with pytest.raises(ValueError, match="T/1: the canonical solution fails its own asserts"):
        asserts_as_value_tests("def f(x):\n    return x\n", check, "f", "T/1")
    with pytest.raises(ValueError, match="T/2: result .* is not a Python literal"):
        asserts_as_value_tests("def f(x):\n    return object()\n", "def check(c):\n    c(1)\n", "f", "T/2")
    with pytest.raises(ValueError, match="never call"):
        asserts_as_value_tests("def f(x):\n    return x\n", "def check(c):\n    pass\n", "f", "T/3")
