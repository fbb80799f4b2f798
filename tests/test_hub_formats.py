"""The paper data sets' hub layouts: generated copies match them, every loader reads them, every reward
scores their reference answers as right, and a file in another layout is refused by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gdpo.tasks import code as code_family
from gdpo.tasks import hub_formats
from gdpo.tasks.hub_formats import HUB_FILES, SchemaMismatch, check_file, write_miniature_data
from gdpo.tasks.math import benchmarks
from gdpo.tasks.math import data as math_data

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def miniature(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("miniature")
    write_miniature_data(out, rows=6)
    return out


def test_every_declared_file_is_written_checked_and_listed(miniature):
    manifest = json.loads((miniature / "MANIFEST.json").read_text())
    declared = {f"{family}/{spec.path}" for family, files in HUB_FILES.items() for spec in files.values()}
    assert set(manifest) == declared
    for family, files in HUB_FILES.items():
        for name, spec in files.items():
            assert check_file(family, name, miniature / family) == manifest[f"{family}/{spec.path}"]["rows"] > 0


def test_the_same_seed_writes_the_same_files(tmp_path):
    write_miniature_data(tmp_path / "a", rows=3)
    write_miniature_data(tmp_path / "b", rows=3)
    for path in (tmp_path / "a").rglob("*.json*"):
        assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes()


@pytest.mark.parametrize("name", ["math500", "aime24", "amc", "minerva", "olympiadbench"])
def test_math_benchmarks_load_with_exact_answers(miniature, name):
    problems = benchmarks.load_benchmark(name, miniature / "math")
    assert len(problems) == 6
    for problem in problems:
        assert problem["answer"].lstrip("-").isdigit(), problem  # 142.0 -> 142, "$97$" -> 97
        assert problem["source"] == name


def test_math_reference_answers_get_the_correct_reward(miniature):
    dataset = math_data.build_dataset("train", None, seed=0, train_data="agentica-org/DeepScaleR-Preview-Dataset",
                                      data_dir=str(miniature / "math"))
    assert len(dataset) == 24
    from gdpo.tasks.math.rewards import REWARD_FUNCTIONS

    right = [[{"role": "assistant", "content": f"So the answer is \\boxed{{{a}}}."}] for a in dataset["answer"]]
    wrong = [[{"role": "assistant", "content": f"So the answer is \\boxed{{{int(a) + 1}}}."}] for a in dataset["answer"]]
    columns = {key: dataset[key] for key in dataset.column_names if key != "prompt"}
    assert REWARD_FUNCTIONS["correct"](right, **columns) == [1.0] * len(dataset)
    assert REWARD_FUNCTIONS["correct"](wrong, **columns) == [0.0] * len(dataset)


@pytest.mark.parametrize("benchmark", ["apps", "codecontests", "codeforces", "taco"])
def test_code_benchmarks_load_in_each_layout_and_reference_solutions_pass(miniature, benchmark):
    options = code_family.resolve_options({"data_dir": str(miniature / "code"), "length_limit": 64})
    problems = code_family.load_benchmark(benchmark, None, 0, options)
    assert len(problems) >= 4
    rows = [json.loads(line) for line in (miniature / "code" / f"{benchmark}.jsonl").read_text().splitlines()] \
        if benchmark != "codeforces" else None
    from gdpo.tasks.code.rewards import pass_reward

    solutions = _reference_solutions(benchmark, rows)
    # the loader shuffles a benchmark's problems (a fixed subset seed): match them by id
    completions = [[{"role": "assistant", "content": f"```python\n{solutions[p['problem_id']]}```"}] for p in problems]
    scores = pass_reward(completions, tests=[p["tests"] for p in problems],
                         time_limit=[p["time_limit"] for p in problems], code_prefix=[p["code_prefix"] for p in problems])
    assert scores == [1.0] * len(problems)
    # ... and a wrong program fails them: the tests check something
    wrong = [[{"role": "assistant", "content": "```python\nprint(0)\n```"}]] * len(problems)
    assert max(pass_reward(wrong, tests=[p["tests"] for p in problems], time_limit=[p["time_limit"] for p in problems],
                           code_prefix=[p["code_prefix"] for p in problems])) < 1.0


def _reference_solutions(benchmark: str, rows: list[dict] | None) -> dict[str, str]:
    """Problem id -> the generator's reference solution."""
    if benchmark == "codecontests":
        return {f"codecontests-{i}": row["solutions"]["solution"][0] for i, row in enumerate(rows)}
    if benchmark == "apps":
        return {f"apps-{row['problem_id']}": json.loads(row["solutions"])[0] for row in rows}
    if benchmark == "taco":
        return {f"taco-{i}": json.loads(row["solutions"])[0] for i, row in enumerate(rows)}
    # codeforces comes from Eurus-2-RL-Data's validation rows: the generator's problems, in order
    return {f"codeforces-{i}": p["solution"] for i, p in enumerate(hub_formats.code_problems(6, 1))}


def test_eurus_training_rows_skip_math_and_keep_every_coding_row(miniature):
    dataset = code_family.build_dataset("train", None, seed=0, train_data="PRIME-RL/Eurus-2-RL-Data",
                                        data_dir=str(miniature / "code"), length_limit=64)
    assert len(dataset) == 24
    assert set(dataset["benchmark"]) == {"apps", "taco", "codecontests", "codeforces"}


def test_toolrl_items_load_and_their_references_get_full_rewards(miniature):
    from gdpo.tasks.tool_calling.data import load_toolrl
    from gdpo.tasks.tool_calling.rewards import REWARD_FUNCTIONS

    rows = load_toolrl(miniature / "tool_calling")
    assert len(rows) == 24
    assert {row["answer_type"] for row in rows} == {"tool_call", "response"}
    raw = json.loads((miniature / "tool_calling" / "rlla_rl.json").read_text())
    answers = [[{"role": "assistant", "content": item["output"]}] for item in raw]
    types = [row["answer_type"] for row in rows]
    assert REWARD_FUNCTIONS["format"](answers, answer_type=types) == [1.0] * len(rows)
    correct = REWARD_FUNCTIONS["correct"](answers, answer_type=types,
                                          ground_truth_calls=[row["ground_truth_calls"] for row in rows])
    assert correct == [3.0 if t == "tool_call" else 0.0 for t in types]


@pytest.mark.parametrize("change,message", [
    (lambda row: row.pop("answer"), "missing ['answer']"),
    (lambda row: row.update(extra=1), "unexpected ['extra']"),
    (lambda row: row.update(level="1"), "column 'level' should be int"),
])
def test_a_file_in_another_layout_is_refused_naming_row_and_column(tmp_path, miniature, change, message):
    rows = [json.loads(line) for line in (miniature / "math" / "math500.jsonl").read_text().splitlines()]
    change(rows[2])
    (tmp_path / "math500.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(SchemaMismatch, match="row 2") as error:
        check_file("math", "math500", tmp_path)
    assert message in str(error.value)


def test_nested_columns_are_checked(tmp_path, miniature):
    rows = [json.loads(line) for line in (miniature / "code" / "codecontests.jsonl").read_text().splitlines()]
    rows[0]["public_tests"] = {"inputs": ["1\n"], "outputs": ["1\n"]}
    (tmp_path / "codecontests.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(SchemaMismatch, match=r"public_tests\.input should be list"):
        check_file("code", "codecontests", tmp_path)


def test_check_data_command_passes_good_copies_and_names_a_bad_one(tmp_path, miniature):
    command = [sys.executable, "-m", "gdpo", "check-data", "--family", "math"]
    good = subprocess.run([*command, "--data-dir", str(miniature / "math")], capture_output=True, text=True, cwd=REPO)
    assert good.returncode == 0, good.stderr
    assert "olympiadbench: 6 rows, the layout of math-ai/olympiadbench" in good.stdout
    (tmp_path / "amc.jsonl").write_text(json.dumps({"id": 0, "problem": "p", "answer": "142"}) + "\n")
    bad = subprocess.run([*command, "--data-dir", str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert bad.returncode == 1
    assert "amc:" in bad.stderr and "missing ['url']" in bad.stderr
    empty = subprocess.run([*command, "--data-dir", str(tmp_path / "none")], capture_output=True, text=True, cwd=REPO)
    assert empty.returncode == 1 and "holds none of the family's files" in empty.stderr


def test_an_unpaired_surrogate_in_a_local_copy_is_an_error_naming_file_and_line(tmp_path, miniature):
    rows = [json.loads(line) for line in (miniature / "math" / "math500.jsonl").read_text().splitlines()]
    rows[2]["problem"] = "\ud800"
    (tmp_path / "math500.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(ValueError, match=rf"{tmp_path / 'math500.jsonl'} line 3 holds an invalid character"):
        check_file("math", "math500", tmp_path)
