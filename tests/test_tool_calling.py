"""Tool-calling family: ToolRL rewards, prompt format, data loaders, BFCL split / scorer and evaluate().

The BFCL tests run ``bfcl_split`` / ``bfcl_score`` in the BFCL environment (``.venv-bfcl``, made by
``make setup``) as subprocesses and are skipped when it does not exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from gdpo.tasks.tool_calling import REWARD_FUNCTIONS, build_dataset
from gdpo.tasks.tool_calling.bfcl_aggregate import aggregate
from gdpo.tasks.tool_calling.data import load_toolrl, select_items, select_with_decline_share, validate_options
from gdpo.tasks.tool_calling.output_format import (
    ToolCallParseError,
    build_prompt,
    has_expected_format,
    parse_tool_calls,
)
from gdpo.tasks.tool_calling.rewards import correctness, multiset_jaccard

REPO_ROOT = Path(__file__).resolve().parents[1]
BFCL_PYTHON = Path(os.environ.get("GDPO_BFCL_PYTHON", REPO_ROOT / ".venv-bfcl" / "bin" / "python"))
needs_bfcl = pytest.mark.skipif(
    not BFCL_PYTHON.exists(), reason=f"BFCL environment {BFCL_PYTHON} missing; create it with `make setup`")


def call_block(*calls: dict, think: str = "ok") -> str:
    """A well-formed tool-call-only answer with one JSON line per call."""
    return f"<think>{think}</think>\n<tool_call>\n" + "\n".join(json.dumps(c) for c in calls) + "\n</tool_call>"


WEATHER = {"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}
ADD_12 = {"name": "add", "parameters": {"a": 1, "b": 2}}
ADD_34 = {"name": "add", "parameters": {"a": 3, "b": 4}}
GET_TIME = {"name": "get_time", "parameters": {}}


# ---------------------------------------------------------------- correct reward ∈ [−3, 3]

CORRECT_CASES = [
    # exact match of the call list → 3
    ([WEATHER], call_block(WEATHER), 3.0),
    # no <tool_call> block at all → −3
    ([WEATHER], "<think>x</think>\n<response>It is sunny.</response>", -3.0),
    # malformed JSON line → unparsable → −3
    ([WEATHER], "<think>x</think>\n<tool_call>\n{\"name\": \"get_weather\", \"parameters\": {\n</tool_call>", -3.0),
    # empty block: no call → −3
    ([WEATHER], "<think>x</think>\n<tool_call>\n\n</tool_call>", -3.0),
    # a line without "parameters" is not a call → −3
    ([WEATHER], call_block({"name": "get_weather", "arguments": {"city": "Paris"}}), -3.0),
    # opened but never closed → no block → −3
    ([WEATHER], "<think>x</think>\n<tool_call>\n" + json.dumps(WEATHER), -3.0),
    # wrong value: S = name 1 + keys 1 + values 1 = 3, S_max = 1+1+2 = 4 → 6·3/4 − 3 = 1.5
    ([WEATHER], call_block({"name": "get_weather", "parameters": {"city": "Paris", "unit": "fahrenheit"}}), 1.5),
    # strings compare case-sensitively: "paris" ≠ "Paris", same as a wrong value → 1.5
    ([WEATHER], call_block({"name": "get_weather", "parameters": {"city": "paris", "unit": "celsius"}}), 1.5),
    # missing parameter: S = 1 + keys 1/2 + values 1 = 2.5 → 6·2.5/4 − 3 = 0.75
    ([WEATHER], call_block({"name": "get_weather", "parameters": {"city": "Paris"}}), 0.75),
    # extra parameter: S = 1 + keys 2/3 + values 2 = 11/3 → 6·(11/3)/4 − 3 = 2.5
    ([WEATHER], call_block({"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius", "days": 3}}), 2.5),
    # wrong tool name: name Jaccard 0 and no same-name call to match → S = 0 → −3
    ([WEATHER], call_block({"name": "get_forecast", "parameters": WEATHER["parameters"]}), -3.0),
    # extra call: names {w} vs {w, t} → 1/2; the weather call matches fully (1 + 2): S = 3.5 → 6·3.5/4 − 3 = 2.25
    ([WEATHER], call_block(WEATHER, {"name": "get_time", "parameters": {"city": "Paris"}}), 2.25),
    # duplicate call: names {w} vs {w, w} → 1/2; one copy matches (3), the other is unused: S = 3.5 → 2.25
    ([WEATHER], call_block(WEATHER, WEATHER), 2.25),
    # JSON numbers compare by value: 5.0 == 5 → exact match → 3
    ([{"name": "f", "parameters": {"n": 5}}], call_block({"name": "f", "parameters": {"n": 5.0}}), 3.0),
    # blank lines inside the block are skipped → exact match → 3
    ([WEATHER], "<think>x</think>\n<tool_call>\n\n" + json.dumps(WEATHER) + "\n\n</tool_call>", 3.0),
    # keys beyond name/parameters in a call object are dropped → exact match → 3
    ([WEATHER], call_block({**WEATHER, "id": 7}), 3.0),
    # text around the block does not matter to correctness (format judges it) → 3
    ([WEATHER], "Sure! " + call_block(WEATHER) + " done", 3.0),
    # parallel calls in the other order: S = 1 + 3 + 3 = S_max = 7 → 3
    ([ADD_12, ADD_34], call_block(ADD_34, ADD_12), 3.0),
    # one of two parallel calls: names {add} vs {add, add} → 1/2; first matched (3), second none: S = 3.5, S_max = 7 → 0
    ([ADD_12, ADD_34], call_block(ADD_12), 0.0),
    # second parallel call with b wrong: S = 1 + 3 + (1 + 1) = 6 → 6·6/7 − 3 = 15/7
    ([ADD_12, ADD_34], call_block(ADD_12, {"name": "add", "parameters": {"a": 3, "b": 5}}), 15 / 7),
    # greedy best match: gt1 takes the exact (a1,b2) call (3) though listed second; gt2 gets the (a3,b2) one
    # (keys 1 + a matches 1 = 2): S = 1 + 3 + 2 = 6 → 15/7
    ([ADD_12, ADD_34], call_block({"name": "add", "parameters": {"a": 3, "b": 2}}, ADD_12), 15 / 7),
    # call without parameters, exact → 3
    ([GET_TIME], call_block(GET_TIME), 3.0),
    # call without parameters given one: key Jaccard([], [tz]) = 0, no values → 0, not matched: S = 1, S_max = 2 → 0
    ([GET_TIME], call_block({"name": "get_time", "parameters": {"tz": "UTC"}}), 0.0),
]


@pytest.mark.parametrize("expected, text, reward", CORRECT_CASES)
def test_correct_reward_table(expected, text, reward):
    completion = [{"role": "assistant", "content": text}]
    (value,) = REWARD_FUNCTIONS["correct"]([completion], answer_type=["tool_call"],
                                           ground_truth_calls=[json.dumps(expected)])
    assert value == pytest.approx(reward)


NO_CALL_CASES = [
    # no call expected (BFCL irrelevance) and none made → 0 (ToolRL: correctness does not apply)
    ("response", [], "<think>x</think>\n<response>No tool fits.</response>", 0.0),
    # no call expected but one made → still 0; the format reward is what penalises it
    ("response", [], call_block(WEATHER), 0.0),
    # think-only ground truth → 0
    ("think", [], "<think>x</think>", 0.0),
    # a call is expected but there is no reference list (live_relevance) → None, "not applicable"
    ("tool_call", None, call_block(WEATHER), None),
    # tool call and response expected: the calls are scored as usual → exact match → 3
    ("tool_call+response", [WEATHER], call_block(WEATHER) + "\n<response>Done.</response>", 3.0),
]


@pytest.mark.parametrize("answer_type, expected, text, reward", NO_CALL_CASES)
def test_correct_reward_when_no_call_is_scored(answer_type, expected, text, reward):
    assert correctness(text, answer_type, expected) == reward


@pytest.mark.parametrize("first, second, value", [
    ([], [], 1.0),                          # both empty → 1
    (["a"], [], 0.0),                       # one empty → 0
    (["a", "b"], ["b", "a"], 1.0),          # order does not matter
    (["a"], ["a", "a"], 0.5),               # counts matter: ∩ 1, ∪ 2
    (["a", "b"], ["a", "c"], 1 / 3),        # ∩ {a}, ∪ {a, b, c}
])
def test_multiset_jaccard(first, second, value):
    assert multiset_jaccard(first, second) == pytest.approx(value)


# ---------------------------------------------------------------- format reward ∈ {0, 1}

TOOL = json.dumps(WEATHER)
FORMAT_CASES = [
    # think then one tool call block → 1
    ("tool_call", f"<think>a</think>\n<tool_call>\n{TOOL}\n</tool_call>", 1.0),
    # surrounding whitespace is ignored → 1
    ("tool_call", f"\n<think>a</think>\n<tool_call>\n{TOOL}\n</tool_call>\n", 1.0),
    # several calls in one block → 1
    ("tool_call", f"<think>a</think>\n<tool_call>\n{TOOL}\n{TOOL}\n</tool_call>", 1.0),
    # no think → 0
    ("tool_call", f"<tool_call>\n{TOOL}\n</tool_call>", 0.0),
    # an extra response when only a call is expected → 0
    ("tool_call", f"<think>a</think>\n<tool_call>\n{TOOL}\n</tool_call>\n<response>ok</response>", 0.0),
    # two tool_call blocks → 0 (each tag once)
    ("tool_call", f"<think>a</think>\n<tool_call>\n{TOOL}\n</tool_call>\n<tool_call>\n{TOOL}\n</tool_call>", 0.0),
    # no newline after <tool_call> → 0
    ("tool_call", f"<think>a</think>\n<tool_call>{TOOL}</tool_call>", 0.0),
    # text after the block → 0
    ("tool_call", f"<think>a</think>\n<tool_call>\n{TOOL}\n</tool_call> bye", 0.0),
    # a second think hidden in the reasoning → 0
    ("tool_call", f"<think>a<think>b</think>\n<tool_call>\n{TOOL}\n</tool_call>", 0.0),
    # response only → 1
    ("response", "<think>a</think>\n<response>No tool fits.</response>", 1.0),
    # a tool call hidden inside the response → 0
    ("response", f"<think>a</think>\n<response><tool_call>\n{TOOL}\n</tool_call></response>", 0.0),
    # a call where a response is expected → 0
    ("response", f"<think>a</think>\n<tool_call>\n{TOOL}\n</tool_call>", 0.0),
    # both, call first → 1
    ("tool_call+response", f"<think>a</think>\n<tool_call>\n{TOOL}\n</tool_call>\n<response>ok</response>", 1.0),
    # both, response first → 0
    ("tool_call+response", f"<think>a</think>\n<response>ok</response>\n<tool_call>\n{TOOL}\n</tool_call>", 0.0),
    # think only → 1
    ("think", "<think>nothing to do</think>", 1.0),
    # think-only expected, response given → 0
    ("think", "<think>a</think>\n<response>ok</response>", 0.0),
]


@pytest.mark.parametrize("answer_type, text, reward", FORMAT_CASES)
def test_format_reward_table(answer_type, text, reward):
    completion = [{"role": "assistant", "content": text}]
    assert REWARD_FUNCTIONS["format"]([completion], answer_type=[answer_type]) == [reward]


def test_unknown_answer_type_is_refused():
    with pytest.raises(ValueError, match="Unknown answer type"):
        has_expected_format("<think>a</think>", "call")


# ---------------------------------------------------------------- prompt and parser

@pytest.mark.parametrize("text, calls", [
    ("no block", None),                                                         # no block → None
    (call_block(WEATHER, GET_TIME), [WEATHER, GET_TIME]),                       # one call per line, in order
    ("<tool_call>\n" + TOOL + "\n</tool_call><tool_call>\n{}\n</tool_call>", [WEATHER]),  # first block only
])
def test_parse_tool_calls(text, calls):
    assert parse_tool_calls(text) == calls


@pytest.mark.parametrize("line", ["{not json}", "[1, 2]", '{"name": 3, "parameters": {}}', '{"name": "f", "parameters": []}'])
def test_parse_tool_calls_refuses_lines_that_are_not_calls(line):
    with pytest.raises(ToolCallParseError):
        parse_tool_calls(f"<tool_call>\n{line}\n</tool_call>")


def test_prompt_lists_tool_schemas_and_merges_the_item_system_message():
    tool = {"name": "get_weather", "description": "Weather now.",
            "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    messages = build_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Paris?"}], [tool])
    assert [m["role"] for m in messages] == ["system", "user"]
    assert json.dumps(tool) in messages[0]["content"]
    assert messages[0]["content"].endswith("Be brief.")
    assert "<tool_call>" in messages[0]["content"] and "<response>" in messages[0]["content"]


# ---------------------------------------------------------------- BFCL aggregation (hand-computed)

SIZES = {"simple": 400, "java": 100, "javascript": 50, "multiple": 200, "parallel": 200, "parallel_multiple": 200,
         "irrelevance": 240, "live_simple": 258, "live_multiple": 1053, "live_parallel": 16,
         "live_parallel_multiple": 24, "live_irrelevance": 882, "live_relevance": 18}


def test_aggregate_follows_bfcl_weighting():
    accuracy = {"simple": 60.0, "java": 30.0, "javascript": 0.0, "multiple": 50.0, "parallel": 40.0,
                "parallel_multiple": 20.0, "irrelevance": 80.0, "live_simple": 50.0, "live_multiple": 40.0,
                "live_parallel": 25.0, "live_parallel_multiple": 0.0, "live_irrelevance": 90.0, "live_relevance": 100.0}
    result = aggregate(accuracy, SIZES)
    # simple = (60 + 30 + 0)/3 = 30; AST = (30 + 50 + 40 + 20)/4 = 35; overall = (30+50+40+20+80)/5 = 44
    assert result["non_live_simple"] == pytest.approx(30.0)
    assert result["non_live_ast"] == pytest.approx(35.0)
    assert result["non_live"] == pytest.approx(44.0)
    # live AST = (50·258 + 40·1053 + 25·16 + 0·24) / 1351 = 55420 / 1351
    assert result["live_ast"] == pytest.approx(55420 / 1351)
    # live = (55420 + 90·882 + 100·18) / 2251 = 136600 / 2251
    assert result["live"] == pytest.approx(136600 / 2251)
    # avg = (live + non_live + multi-turn 0) / 3
    assert result["avg"] == pytest.approx((136600 / 2251 + 44.0) / 3)
    assert result["avg_single_turn"] == pytest.approx((136600 / 2251 + 44.0) / 2)


def test_aggregate_leaves_missing_categories_out():
    # only simple and live_irrelevance: non_live = simple = 10, live = live_irrelevance = 70
    result = aggregate({"simple": 10.0, "live_irrelevance": 70.0}, SIZES)
    assert (result["non_live"], result["live"], result["live_ast"]) == (10.0, 70.0, None)
    assert result["avg"] == pytest.approx(80 / 3)


# ---------------------------------------------------------------- datasets (small local files)

def bfcl_row(item_id: str, category: str, calls: list | None, answer_type: str = "tool_call") -> dict:
    """A row in bfcl_split's format (only the fields build_dataset reads need to be realistic)."""
    return {"id": item_id, "category": category, "category_size": 10, "language": "Python",
            "question": [{"role": "user", "content": f"question {item_id}"}],
            "function": [], "tools": [{"name": "get_weather", "description": "d", "parameters": {}}],
            "possible_answer": None, "answer_type": answer_type, "ground_truth_calls": calls}


@pytest.fixture
def small_split(tmp_path) -> Path:
    rows = ([bfcl_row(f"simple_{i}", "simple", [WEATHER]) for i in range(6)]
            + [bfcl_row(f"irrelevance_{i}", "irrelevance", [], "response") for i in range(3)]
            + [bfcl_row("live_relevance_0", "live_relevance", None)])
    for name in ("train", "eval"):
        with open(tmp_path / f"{name}.jsonl", "w") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    return tmp_path


def test_build_dataset_from_bfcl_split(small_split):
    dataset = build_dataset("train", None, 0, data_dir=str(small_split))
    # live_relevance has no reference call, so it cannot be trained on
    assert len(dataset) == 9 and "live_relevance" not in dataset["category"]
    assert set(dataset.column_names) == {"prompt", "answer_type", "ground_truth_calls", "id", "category"}
    row = dataset[0]
    assert row["prompt"][0]["role"] == "system" and row["prompt"][-1]["content"] == "question simple_0"
    # the reference answer scores 3 and has the expected format
    answer = [{"role": "assistant", "content": call_block(*json.loads(row["ground_truth_calls"]))}]
    assert REWARD_FUNCTIONS["correct"]([answer], answer_type=[row["answer_type"]],
                                       ground_truth_calls=[row["ground_truth_calls"]]) == [3.0]


def test_build_dataset_subsamples_by_category_and_seed(small_split):
    first = build_dataset("eval", 3, 1, data_dir=str(small_split))
    again = build_dataset("eval", 3, 1, data_dir=str(small_split))
    other = [build_dataset("eval", 3, seed, data_dir=str(small_split))["id"] for seed in range(2, 8)]
    assert first["id"] == again["id"]
    # 9 usable rows, 6 simple / 3 irrelevance → 2 + 1
    assert sorted(first["category"]) == ["irrelevance", "simple", "simple"]
    assert any(ids != first["id"] for ids in other)


def test_build_dataset_prompt_length_filter(small_split):
    longest = max(sum(len(m["content"]) for m in p) for p in build_dataset("train", None, 0, data_dir=str(small_split))["prompt"])
    assert len(build_dataset("train", None, 0, data_dir=str(small_split), max_prompt_chars=longest - 1)) < 9


@pytest.mark.parametrize("options, message", [
    ({"data_dir": "x", "length_limit": 64}, "Unknown tool_calling option"),
    ({}, "data_dir is required"),
    ({"data_dir": "x", "train_data": "xlam"}, "train_data must be one of"),
    ({"data_dir": "x", "train_data": "toolrl"}, "set eval_data to the BFCL-v3 split"),
    ({"data_dir": "/nonexistent"}, "bfcl_split --out-dir"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        build_dataset("train", None, 0, **options)


TOOLRL_ITEMS = [
    {"instruction": "SYSTEM with tools", "input": "**Dialogue Records History**\n<user> weather in Paris? </user>",
     "output": "<think> call it </think>\n<tool_call>\n" + json.dumps(WEATHER) + "\n</tool_call>"},
    {"instruction": "SYSTEM with tools", "input": "**Dialogue Records History**\n<user> hi </user>",
     "output": "<think> chat </think>\n<response> Hello! </response>"},
    {"instruction": "SYSTEM with tools", "input": "**Dialogue Records History**\n<user> add both </user>",
     "output": "<think> two calls </think>\n<tool_call>\n" + json.dumps(ADD_12) + "\n" + json.dumps(ADD_34)
               + "\n</tool_call>\n<response> Adding. </response>"},
]


def write_toolrl_parquet(path: Path) -> None:
    """ToolRL's verl parquet (rlla.py): prompt messages and reward_model.ground_truth."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [{"data_source": "rlla",
                "prompt": [{"role": "system", "content": item["instruction"]}, {"role": "user", "content": item["input"]}],
                "ability": "math", "reward_model": {"style": "rule", "ground_truth": item["output"]},
                "extra_info": {"split": "train", "index": i}} for i, item in enumerate(TOOLRL_ITEMS)]
    pq.write_table(pa.Table.from_pylist(records), path)


@pytest.mark.parametrize("layout", ["raw_json", "verl_parquet"])
def test_toolrl_loader(tmp_path, small_split, layout):
    if layout == "raw_json":
        (tmp_path / "rlla_rl.json").write_text(json.dumps(TOOLRL_ITEMS))
    else:
        write_toolrl_parquet(tmp_path / "train.parquet")
    dataset = build_dataset("train", None, 0, train_data="toolrl", data_dir=str(tmp_path), eval_data=str(small_split))
    assert dataset["answer_type"] == ["tool_call", "response", "tool_call+response"]
    assert [json.loads(c) for c in dataset["ground_truth_calls"]] == [[WEATHER], [], [ADD_12, ADD_34]]
    assert dataset[0]["prompt"] == [{"role": "system", "content": "SYSTEM with tools"},
                                    {"role": "user", "content": TOOLRL_ITEMS[0]["input"]}]
    # each reference answer gets full rewards under its own answer type
    answers = [[{"role": "assistant", "content": item["output"]}] for item in TOOLRL_ITEMS]
    assert REWARD_FUNCTIONS["format"](answers, answer_type=dataset["answer_type"]) == [1.0, 1.0, 1.0]
    assert REWARD_FUNCTIONS["correct"](answers, answer_type=dataset["answer_type"],
                                       ground_truth_calls=dataset["ground_truth_calls"]) == [3.0, 0.0, 3.0]
    # the held-out data stays BFCL's
    assert build_dataset("eval", None, 0, train_data="toolrl", data_dir=str(tmp_path),
                         eval_data=str(small_split))["category"][0] == "simple"


def test_toolrl_loader_refuses_other_files(tmp_path):
    (tmp_path / "rlla_rl.json").write_text(json.dumps([{"prompt": "x"}]))
    with pytest.raises(ValueError, match="not ToolRL's raw format"):
        load_toolrl(tmp_path)


def test_select_items_keeps_category_shares():
    rows = [{"category": "a"}] * 70 + [{"category": "b"}] * 20 + [{"category": "c"}] * 10
    chosen = select_items(rows, 10, seed=3)
    assert [r["category"] for r in chosen].count("a") == 7 and [r["category"] for r in chosen].count("c") == 1
    with pytest.raises(ValueError, match="only 100 are available"):
        select_items(rows, 101, seed=0)



def test_decline_share_sets_the_training_mix_and_refuses_impossible_ones():
    rows = ([{"category": "irrelevance", "answer_type": "response"}] * 40
            + [{"category": "simple", "answer_type": "tool_call"}] * 50
            + [{"category": "live_simple", "answer_type": "tool_call+response"}] * 10)
    chosen = select_with_decline_share(rows, 20, seed=1, share=0.1)
    assert len(chosen) == 20 and sum(r["answer_type"] == "response" for r in chosen) == 2
    # the call items keep their categories' shares (50 : 10)
    assert sum(r["category"] == "live_simple" for r in chosen) == 3
    assert sum(r["answer_type"] == "response" for r in select_with_decline_share(rows, None, 0, 0.2)) == 15
    assert all(r["answer_type"] == "response" for r in select_with_decline_share(rows, 10, seed=0, share=1.0))
    with pytest.raises(ValueError, match="needs 0 items that expect no call and 80 that expect one; the data has 40 and 60"):
        select_with_decline_share(rows, 80, seed=0, share=0.0)
    for bad in (1.5, -0.1, "0.1", True):
        with pytest.raises(ValueError, match="decline_share must be a number from 0 to 1"):
            validate_options({"data_dir": "x", "decline_share": bad})

# ---------------------------------------------------------------- BFCL environment: split and scorer

def run_bfcl(module: str, *args: str) -> subprocess.CompletedProcess:
    # bfcl_eval makes result/ and score/ folders under BFCL_PROJECT_ROOT when imported
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "BFCL_PROJECT_ROOT": tempfile.gettempdir()}
    process = subprocess.run([str(BFCL_PYTHON), "-m", f"gdpo.tasks.tool_calling.{module}", *args],
                             check=False, capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    assert process.returncode == 0, process.stderr[-3000:]
    return process


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def bfcl_split_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bfcl") / "split_seed0"
    run_bfcl("bfcl_split", "--out-dir", str(out), "--seed", "0", "--eval-fraction", "0.2")
    return out


@needs_bfcl
def test_bfcl_split_is_stratified_and_deterministic(bfcl_split_dir, tmp_path):
    summary = json.loads((bfcl_split_dir / "split.json").read_text())
    train, held_out = read_jsonl(bfcl_split_dir / "train.jsonl"), read_jsonl(bfcl_split_dir / "eval.jsonl")
    assert summary["package_version"] == "2025.6.8" and summary["seed"] == 0
    assert not {r["id"] for r in train} & {r["id"] for r in held_out}
    for category, counts in summary["counts"].items():
        n = counts["train"] + counts["eval"]
        assert sum(r["category"] == category for r in held_out) == counts["eval"] == max(1, round(0.2 * n))
        assert all(r["category_size"] == n for r in train + held_out if r["category"] == category)
    # BFCL v3 single-turn sizes: 400 simple, 240 irrelevance, 1053 live_multiple, 18 live_relevance
    assert summary["counts"]["simple"] == {"train": 320, "eval": 80}
    assert summary["counts"]["live_multiple"] == {"train": 842, "eval": 211}
    assert summary["totals"] == {"train": 2912, "eval": 729}
    run_bfcl("bfcl_split", "--out-dir", str(tmp_path / "again"), "--seed", "0")
    run_bfcl("bfcl_split", "--out-dir", str(tmp_path / "other"), "--seed", "1")
    assert (tmp_path / "again" / "eval.jsonl").read_bytes() == (bfcl_split_dir / "eval.jsonl").read_bytes()
    other_ids = {r["id"] for r in read_jsonl(tmp_path / "other" / "eval.jsonl")}
    assert other_ids != {r["id"] for r in held_out}


@needs_bfcl
def test_bfcl_rows_keep_ground_truth_forms(bfcl_split_dir):
    rows = {r["id"]: r for r in read_jsonl(bfcl_split_dir / "train.jsonl") + read_jsonl(bfcl_split_dir / "eval.jsonl")}
    # BFCL lists "units" first and "" (may be omitted) second → kept
    assert rows["simple_0"]["ground_truth_calls"] == [
        {"name": "calculate_triangle_area", "parameters": {"base": 10, "height": 5, "unit": "units"}}]
    # z: ["", 0] → "" first: the question does not state it → left out
    assert rows["simple_2"]["ground_truth_calls"] == [{"name": "math.hypot", "parameters": {"x": 4, "y": 5}}]
    # Java values are the source strings BFCL's Java checker parses
    assert rows["java_1"]["ground_truth_calls"][0]["parameters"]["useShortName"] == "true"
    assert rows["irrelevance_0"]["ground_truth_calls"] == [] and rows["irrelevance_0"]["answer_type"] == "response"
    assert rows["live_relevance_0-0-0"]["ground_truth_calls"] is None
    # the prompt shows BFCL's language-specific docs, the checker gets the raw ones
    assert rows["java_1"]["tools"][0]["description"].endswith("Java 8 SDK syntax.")


@needs_bfcl
def test_canonical_ground_truth_passes_bfcl_checker(bfcl_split_dir, tmp_path):
    rows = read_jsonl(bfcl_split_dir / "train.jsonl") + read_jsonl(bfcl_split_dir / "eval.jsonl")
    completions = []
    for row in rows:
        if row["answer_type"] == "response":
            text = "<think>none fits</think>\n<response>I cannot do that with these tools.</response>"
        else:
            text = call_block(*(row["ground_truth_calls"] or [{"name": row["function"][0]["name"], "parameters": {}}]))
        completions.append({"id": row["id"], "category": row["category"], "samples": [text]})
    (tmp_path / "all.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in completions))
    run_bfcl("bfcl_score", "--eval-data", str(tmp_path / "all.jsonl"), "--completions", str(tmp_path / "c.jsonl"),
             "--out", str(tmp_path / "scores.json"))
    scores = json.loads((tmp_path / "scores.json").read_text())
    failing = [item["id"] for item in scores["items"] if not item["correct"][0]]
    # 10 of 3641 BFCL answers contradict their own function docs (e.g. simple_363 names another function)
    assert len(failing) <= 10, failing
    assert scores["metrics"]["format"] == 100.0


@needs_bfcl
def test_reference_calls_count_as_calls_to_the_items_tools(bfcl_split_dir):
    """The collapse gate's ``calls`` wants each call to name a tool the item offers: BFCL's own reference calls
    do (the names as the prompt lists them), a call with an empty name or to another item's tool does not."""
    from gdpo.tasks.tool_calling.evaluation import call_metrics

    rows = [r for r in read_jsonl(bfcl_split_dir / "train.jsonl") + read_jsonl(bfcl_split_dir / "eval.jsonl")
            if r["ground_truth_calls"]]
    assert len(rows) > 1000
    texts = [[call_block(*row["ground_truth_calls"]), call_block({"name": "", "parameters": {}}),
              call_block({"name": "not_a_tool_" + row["id"], "parameters": {}})] for row in rows]
    per_item = {row["id"]: call_metrics([row], [samples], {})["calls"] for row, samples in zip(rows, texts)}
    # one third of the samples: the reference calls, never the fooling ones; a few BFCL answers name a
    # function their item does not offer (e.g. simple_363 calls find_closest, offered
    # restaurant_search.find_closest; see test_canonical_ground_truth_passes_bfcl_checker)
    assert {round(calls, 6) for calls in per_item.values()} <= {round(100 / 3, 6), 0.0}
    contradicting = sorted(item for item, calls in per_item.items() if calls == 0.0)
    assert len(contradicting) <= 10 and "simple_363" in contradicting, contradicting


@needs_bfcl
def test_bfcl_score_hand_written_completions(bfcl_split_dir, tmp_path):
    rows = {r["id"]: r for r in read_jsonl(bfcl_split_dir / "train.jsonl") + read_jsonl(bfcl_split_dir / "eval.jsonl")}
    chosen = ["simple_0", "irrelevance_0", "parallel_0"]
    area = {"name": "calculate_triangle_area", "parameters": {"base": 10, "height": 5}}
    parallel = rows["parallel_0"]["ground_truth_calls"]
    completions = [
        # simple: the right call; the same with a wrong value; a malformed block
        {"id": "simple_0", "category": "simple", "samples": [
            call_block(area), call_block({**area, "parameters": {"base": 12, "height": 5}}),
            "<think>x</think>\n<tool_call>\n{broken\n</tool_call>"]},
        # irrelevance: declining is right, calling a tool is wrong
        {"id": "irrelevance_0", "category": "irrelevance", "samples": [
            "<think>no</think>\n<response>None of the tools can do that.</response>",
            call_block({"name": rows["irrelevance_0"]["function"][0]["name"], "parameters": {}})]},
        # parallel: the calls in reverse order are right (BFCL ignores order), one call only is wrong
        {"id": "parallel_0", "category": "parallel", "samples": [call_block(*parallel[::-1]), call_block(parallel[0])]},
    ]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(rows[i]) + "\n" for i in chosen))
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in completions))
    run_bfcl("bfcl_score", "--eval-data", str(tmp_path / "eval.jsonl"), "--completions", str(tmp_path / "c.jsonl"),
             "--out", str(tmp_path / "scores.json"))
    scores = json.loads((tmp_path / "scores.json").read_text())
    verdicts = {item["id"]: item["correct"] for item in scores["items"]}
    assert verdicts == {"simple_0": [True, False, False], "irrelevance_0": [True, False], "parallel_0": [True, False]}
    metrics = scores["metrics"]
    # simple 1/3, parallel 1/2, irrelevance 1/2 (per-item sample means)
    assert metrics["simple"] == pytest.approx(100 / 3)
    assert metrics["non_live_ast"] == pytest.approx((100 / 3 + 50) / 2)
    assert metrics["non_live"] == pytest.approx((100 / 3 + 50 + 50) / 3)
    assert metrics["live"] is None  # no live item scored
    # format: 6 of the 7 samples have the expected structure (the malformed block still has it; the
    # call on the irrelevance item does not)
    assert metrics["format"] == pytest.approx(100 * 6 / 7)
    assert "multi_turn" in scores["not_run"]

    # eval.json's per-item outcomes give back the summary scores: non_live weighs its three categories
    # equally here (no live item scored), format pools every sample.
    from gdpo.reporting.verdicts.items import item_means, paired_items
    from gdpo.tasks.tool_calling.evaluation import bfcl_item_outcomes

    outcomes = bfcl_item_outcomes(scores)
    assert outcomes["ids"] == ["simple_0", "irrelevance_0", "parallel_0"]
    assert outcomes["scores"] == {"correct": ["100", "10", "10"], "format": ["111", "10", "11"]}
    assert outcomes["groups"] == ["simple", "irrelevance", "parallel"]
    assert outcomes["weights"]["non_live"] == pytest.approx({"simple": 1 / 3, "irrelevance": 1 / 3, "parallel": 1 / 3})
    assert outcomes["weights"]["live"] == {}
    record = {"items": {"bfcl_v3": outcomes}}
    paired = paired_items(record, record, "bfcl_v3", "correct", weights_metric="non_live")
    assert 100 * float(paired.weights @ item_means(paired.a)) == pytest.approx(metrics["non_live"])
    formats = paired_items(record, record, "bfcl_v3", "format").a
    assert 100 * np.nanmean(formats) == pytest.approx(metrics["format"])


# ---------------------------------------------------------------- evaluate() end to end

@needs_bfcl
def test_evaluate_end_to_end_with_tiny_model(bfcl_split_dir, tmp_path):
    from gdpo.evaluation import EvalRequest
    from gdpo.tasks.tool_calling import evaluate
    from gdpo.training import models

    model_dir = models.prepare_model(models.BUILTIN_TINY, tmp_path / "tiny")
    request = EvalRequest(task="tool_calling", method="base", seed=0, model_dir=model_dir, adapter_dir=None,
                          options={"data_dir": str(bfcl_split_dir), "max_prompt_chars": 2500}, eval_size=4,
                          num_samples=1, temperature=0.0, top_p=1.0, max_new_tokens=8, batch_size=4,
                          work_dir=tmp_path, threads=1)
    result = evaluate(request)
    bench = result["benchmarks"]["bfcl_v3"]
    assert result["family"] == "tool_calling" and bench["n_items"] == 4
    assert {"live", "non_live", "avg", "format"} <= set(bench) and "multi_turn" in result["not_run"]
    assert all(0.0 <= value <= 100.0 for key, value in bench.items() if key != "n_items")
    completions = read_jsonl(tmp_path / "completions.jsonl")
    assert len(completions) == 4 and all(len(c["samples"]) == 1 for c in completions)
    # a random tiny model does not produce the tag format
    assert bench["format"] == 0.0
    outcomes = result["items"]["bfcl_v3"]
    assert outcomes["ids"] == [c["id"] for c in completions] and outcomes["scores"]["format"] == ["0"] * 4


def test_missing_bfcl_environment_says_how_to_make_it(monkeypatch, tmp_path):
    from gdpo.tasks.tool_calling import evaluation

    monkeypatch.setenv("GDPO_BFCL_PYTHON", str(tmp_path / "no-such-python"))
    with pytest.raises(FileNotFoundError, match="make setup"):
        evaluation.bfcl_python()
    monkeypatch.delenv("GDPO_BFCL_PYTHON")
    monkeypatch.setattr(evaluation, "REPO_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="make setup"):
        evaluation.bfcl_python()


def test_evaluate_looks_for_the_bfcl_environment_before_it_loads_the_model(monkeypatch, small_split, tmp_path):
    """A job without BFCL's interpreter stops before its generation, not after it (the GPU time of a paper job)."""
    from gdpo.evaluation import EvalRequest
    from gdpo.generation import generate
    from gdpo.tasks.tool_calling import evaluation

    monkeypatch.setenv("GDPO_BFCL_PYTHON", str(tmp_path / "no-such-python"))
    monkeypatch.setattr(generate, "load_policy_for_request", lambda request: pytest.fail("the model was loaded"))
    request = EvalRequest(task="tool_calling", method="base", seed=0, model_dir=tmp_path, adapter_dir=None,
                          options={"data_dir": str(small_split)}, eval_size=2, num_samples=1, temperature=0.0,
                          top_p=1.0, max_new_tokens=8, batch_size=2, work_dir=tmp_path, threads=1)
    with pytest.raises(FileNotFoundError, match="make setup"):
        evaluation.evaluate(request)


def test_an_unpaired_surrogate_in_a_split_file_is_an_error_naming_file_and_line(small_split):
    path = small_split / "train.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert '"question simple_1"' in lines[1]
    # JSON may escape a character outside the BMP as a surrogate pair; one half alone is no character
    lines[0] = lines[0].replace('"question simple_0"', '"question \\ud83d\\ude00 simple_0"')
    path.write_text("".join(lines))
    assert build_dataset("train", None, 0, data_dir=str(small_split))[0]["prompt"][-1]["content"] == \
        "question \U0001F600 simple_0"
    lines[1] = lines[1].replace('"question simple_1"', '"question \\ud800 simple_1"')
    path.write_text("".join(lines))
    with pytest.raises(ValueError) as error:
        build_dataset("train", None, 0, data_dir=str(small_split))
    message = str(error.value)
    assert f"{path} line 2" in message and "invalid character (an unpaired surrogate" in message
    # the same character stored as raw bytes (CESU-8) is not UTF-8
    path.write_bytes("".join(lines[:1]).encode() + b'{"id": "\xed\xa0\x80"}\n')
    with pytest.raises(ValueError, match=rf"{path} line 2 .*invalid character"):
        build_dataset("train", None, 0, data_dir=str(small_split))
