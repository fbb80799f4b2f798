"""Math family: rewards, mini data, paper-scale loaders, lm-eval task files and the lm-eval evaluation.

The evaluation runs lm-eval end to end on the tiny random Qwen2 model (3 problems × 2 samples) with the
network blocked; the paper-scale loaders read small files written here in each hub copy's format.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from gdpo.evaluation import EvalRequest
from gdpo.tasks import math as math_family
from gdpo.tasks.math import benchmarks, data, diagnostics, evaluation
from gdpo.tasks.math.rewards import (
    REWARD_FUNCTIONS,
    correct_reward,
    is_correct,
    last_boxed,
    length_conditioned_reward,
    length_reward,
)


def chat(text: str) -> list[dict]:
    """A completion as TRL passes conversational ones."""
    return [{"role": "assistant", "content": text}]


# --------------------------------------------------------------------------------------------------
# Rewards
# --------------------------------------------------------------------------------------------------

CORRECTNESS_CASES = [
    # boxed, right
    ("So the total is \\boxed{12}.", "12", 1.0),
    # boxed, wrong
    ("So the total is \\boxed{13}.", "12", 0.0),
    # 1/2, 0.5 and \frac{1}{2} are the same answer, in either role
    ("\\boxed{0.5}", "1/2", 1.0),
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0),
    ("\\boxed{1/2}", "\\frac{1}{2}", 1.0),
    # a different fraction is wrong
    ("\\boxed{\\frac{1}{3}}", "1/2", 0.0),
    # no answer at all
    ("I am not sure how to do this.", "12", 0.0),
    # empty completion
    ("", "12", 0.0),
    # the boxed answer wins over numbers written after it
    ("\\boxed{12} Check: 3 * 4 = 12, not 7", "12", 1.0),
    ("\\boxed{12} Check: 3 * 4 = 12, not 7", "7", 0.0),
    # the last of several boxed answers counts (math-verify reads them as the final one)
    ("first \\boxed{5}, corrected: \\boxed{6}", "6", 1.0),
    # without \boxed the last stated value is read
    ("The answer is 42.", "42", 1.0),
    # an equation for the variable counts as its value
    ("\\boxed{x = 13}", "13", 1.0),
    # negative numbers
    ("\\boxed{-4}", "-4", 1.0),
    ("\\boxed{4}", "-4", 0.0),
    # thousands separators
    ("\\boxed{1,234}", "1234", 1.0),
    # LaTeX expressions compared symbolically
    ("$\\boxed{\\dfrac{\\sqrt{3}}{2}}$", "\\frac{\\sqrt{3}}{2}", 1.0),
    ("\\boxed{x^2 + 1}", "1 + x^2", 1.0),
    # AMC's gold answers are floats in the hub copy
    ("\\boxed{142}", "142.0", 1.0),
    # only a final-answer form is graded: the question restated, a bare value or a number in prose is not
    # (the cpu-evidence math runs learned to answer "Calculate 10 - 5." with "10 - 5", which a
    # last-expression fallback paid as correct)
    ("10 - 5", "5", 0.0),
    ("7 + 3 =", "10", 0.0),
    ("5", "5", 0.0),
    ("First 3 + 4 = 7, then we divide", "7", 0.0),
    ("There are 5 apples.", "5", 0.0),
    # a closing equation and an answer statement are graded
    ("10 - 5 = 5", "5", 1.0),
    ("10 - 5 = 4", "5", 0.0),
    ("The final answer is 4.", "5", 0.0),
    ("So the result is 5, since 10 - 5 = 5.", "5", 1.0),
    # a statement's answer ends where a hedge or a reason begins: a second guess is never graded
    ("The answer is 3, not 5", "5", 0.0),
    ("The answer is 3, not 5", "3", 1.0),
    ("The answer is 3 but maybe 5", "5", 0.0),
    ("The answer is 10 - 5 (I think 4)", "4", 0.0),
    ("The answer is 12 because 3 * 4 = 12", "12", 1.0),
    # the last statement is the final one
    ("The answer is 4. Wait, no: the answer is 5.", "5", 1.0),
]

#: Rows of the arithmetic generators (verifier ``number``): the answer must be a number, no operation left.
NUMBER_CASES = [
    ("\\boxed{5}", "5", 1.0),
    ("\\boxed{10 - 5}", "5", 0.0),
    ("10 - 5 = 10 - 5", "5", 0.0),
    ("10 - 5 = 5", "5", 1.0),
    ("The answer is **-4**.", "-4", 1.0),
    ("The answer is 2^3", "8", 0.0),
    ("\\boxed{6.5}", "6.5", 1.0),
    ("\\boxed{6.50}", "6.5", 1.0),
    ("\\boxed{1,234}", "1234", 1.0),
    # a reason after the answer is not graded; a remark after the number may not state more numbers:
    # "19, 19" and "4 x 1" restate the question
    ("The answer is 12, since 3 * 4 = 12.", "12", 1.0),
    ("The answer is 5. Check: 5 + 5 = 10", "5", 0.0),
    ("The answer is 12, the product.", "12", 1.0),
    ("\\boxed{19, 19}", "19", 0.0),
    ("Answer: 8, 8", "8", 0.0),
    ("\\boxed{4 x 1}", "4", 0.0),
    ("\\boxed{9 minus 0}", "9", 0.0),
    ("\\boxed{5.5.5}", "5.5", 0.0),
    ("\\boxed{0x5}", "0", 0.0),
    ("4 * 1 = 4, 1", "4", 0.0),
    # LaTeX wrappers, emphasis and signs around an honest number
    ("The answer is \\( 5 \\).", "5", 1.0),
    ("\\boxed{\\text{5}}", "5", 1.0),
    ("\\boxed{\\mathbf{5}}", "5", 1.0),
    ("\\boxed{\\,5}", "5", 1.0),
    ("\\boxed{+5}", "5", 1.0),
    ("\\boxed{−5}", "-5", 1.0),
    ("10 - 5 = **5**", "5", 1.0),
    # an empty box (the instruction echoed) states nothing: the statement after it is read
    ("Output the final answer within \\boxed{}.\n\nSo the answer is 49.", "49", 1.0),
    ("$\\boxed{12}$", "12", 1.0),
    ("\\boxed{13}", "12", 0.0),
    # an equation's value is its last right-hand side
    ("So, the final answer is 3 - 2 = 1.", "1", 1.0),
    ("\\boxed{x = 13}", "13", 1.0),
    ("The answer is 3 - 2 = 1 - 0", "1", 0.0),
]


@pytest.mark.parametrize("text,gold,expected", CORRECTNESS_CASES)
def test_correct_reward_table(text, gold, expected):
    assert correct_reward([chat(text)], answer=[gold]) == [expected]


@pytest.mark.parametrize("text,gold,expected", NUMBER_CASES)
def test_number_rows_want_a_plain_number(text, gold, expected):
    assert correct_reward([chat(text)], answer=[gold], verifier=["number"]) == [expected]
    if expected:  # what a number row pays, a math-verify row pays too
        assert correct_reward([chat(text)], answer=[gold]) == [1.0]


def test_the_reward_pays_only_what_the_collapse_gate_counts_as_an_answer():
    texts = [text for text, _, _ in CORRECTNESS_CASES + NUMBER_CASES] + ["42", "The answers are 3", "\\boxed{}"]
    for text in texts:
        for verifier in ("math_verify", "number"):
            if not diagnostics.has_final_answer(text, verifier):
                assert not any(is_correct(text, gold, verifier) for gold in ("42", "5", "3", "19", "4", "49"))


def test_correct_reward_reads_plain_string_completions_and_the_verifier_column():
    rewards = correct_reward(
        ["\\boxed{3}", "\\boxed{4}"], answer=["3", "3"], verifier=["math_verify"] * 2, verifier_data=["", ""]
    )
    assert rewards == [1.0, 0.0]


def test_reasoning_gym_verifier_uses_the_generators_scorer():
    # fraction_simplification wants lowest terms: math-verify would accept the equal 18/40.
    entry = data.generate_problems("fraction_simplification", "train", 1, seed=0)[0]
    numerator, denominator = (int(part) for part in entry["answer"].split("/"))
    payload = json.dumps(entry)
    lowest, unreduced = f"\\boxed{{{entry['answer']}}}", f"\\boxed{{{2 * numerator}/{2 * denominator}}}"
    assert correct_reward(
        [lowest, unreduced],
        answer=[entry["answer"]] * 2,
        verifier=["reasoning_gym"] * 2,
        verifier_data=[payload] * 2,
    ) == [1.0, 0.0]
    assert correct_reward([unreduced], answer=[entry["answer"]]) == [1.0]


def test_unknown_verifier_is_refused():
    with pytest.raises(ValueError, match="Unknown verifier 'sympy'"):
        is_correct("\\boxed{1}", "1", "sympy")


LENGTH_CASES = [
    # below the limit
    (3, 4, 1.0),
    # exactly at the limit
    (4, 4, 1.0),
    # one token over
    (5, 4, 0.0),
    # empty completion
    (0, 4, 1.0),
]


@pytest.mark.parametrize("tokens,limit,expected", LENGTH_CASES)
def test_length_reward_table(tokens, limit, expected):
    assert length_reward([chat("x")], completion_ids=[[7] * tokens], length_limit=[limit]) == [expected]


CONDITIONED_CASES = [
    # correct and short: paid
    ("\\boxed{12}", 3, 1.0),
    # correct but too long: not paid
    ("\\boxed{12}", 9, 0.0),
    # wrong and short: not paid (Eq. 8)
    ("\\boxed{11}", 3, 0.0),
    # wrong and long
    ("\\boxed{11}", 9, 0.0),
]


@pytest.mark.parametrize("text,tokens,expected", CONDITIONED_CASES)
def test_length_conditioned_reward_table(text, tokens, expected):
    rewards = length_conditioned_reward(
        [chat(text)],
        completion_ids=[[1] * tokens],
        length_limit=[4],
        answer=["12"],
        verifier=["math_verify"],
        verifier_data=[""],
    )
    assert rewards == [expected]


def test_reward_names_are_the_config_names():
    assert list(REWARD_FUNCTIONS) == ["correct", "length", "length_conditioned"]
    assert math_family.REWARD_FUNCTIONS is REWARD_FUNCTIONS


def test_rewards_work_outside_the_main_thread():
    # math-verify's signal timeouts only work in the main thread; off it the checks run without one.
    texts = ["\\boxed{7/14}", "\\boxed{0.25}", "nothing"]
    results = []
    worker = threading.Thread(target=lambda: results.append(correct_reward(texts, answer=["0.5"] * 3)))
    worker.start()
    worker.join()
    assert results == [[1.0, 0.0, 0.0]]


LAST_BOXED_CASES = [
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("a \\boxed{1} b \\boxed{{2}+3}", "{2}+3"),
    ("no box", None),
    ("\\boxed{unclosed", None),
]


@pytest.mark.parametrize("text,expected", LAST_BOXED_CASES)
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


# --------------------------------------------------------------------------------------------------
# Mini data
# --------------------------------------------------------------------------------------------------


def test_train_data_is_deterministic_and_seed_dependent():
    first = data.build_dataset("train", 24, seed=3)
    again = data.build_dataset("train", 24, seed=3)
    other = data.build_dataset("train", 24, seed=4)
    assert first.to_list() == again.to_list()
    assert first["problem"] != other["problem"]


def test_train_and_eval_problems_never_coincide():
    train = set(data.build_dataset("train", 400, seed=0)["problem"])
    held_out = set(data.build_dataset("eval", 64, seed=0)["problem"])
    assert len(held_out) == 64 and not held_out & train
    assert all(data.split_of(problem) == "train" for problem in train)


def test_small_problem_spaces_repeat_in_training_but_not_in_eval():
    # One-digit products: 100 problems, about a quarter of them held out.
    train = data.generate_problems("products", "train", 200, seed=0)
    distinct = len({entry["question"] for entry in train})
    assert distinct < 200 and [e["question"] for e in train[distinct:]] == [
        e["question"] for e in train[: 200 - distinct]
    ]
    with pytest.raises(ValueError, match="distinct eval problems"):
        data.generate_problems("products", "eval", 100, seed=0)


def test_eval_rows_share_equally_and_give_all_of_a_small_space():
    generators = ["basic_arithmetic", "chain_sum", "products", "gcd"]
    # While every generator has enough, item i comes from generator i mod G (as before the fill).
    even = data.reasoning_gym_eval_rows(26, data.EVAL_DATA_SEED, generators, 64)
    assert even == data.reasoning_gym_rows("eval", 26, data.EVAL_DATA_SEED, generators, 64)
    # One-digit products hold 21 held-out problems: all of them, the others share the rest.
    rows = data.reasoning_gym_eval_rows(200, data.EVAL_DATA_SEED, generators, 64)
    counts = {name: rows["source"].count(name) for name in generators}
    assert counts["products"] == 21 and sum(counts.values()) == 200
    assert max(counts.values()) - min(c for n, c in counts.items() if n != "products") <= 15
    assert len(set(rows["problem"])) == 200
    assert all(data.split_of(problem) == "eval" for problem in rows["problem"])
    with pytest.raises(ValueError, match=r"only 228 distinct eval problems .*products 21.*eval_size"):
        data.reasoning_gym_eval_rows(229, data.EVAL_DATA_SEED, generators, 64)
    dataset = data.build_dataset("eval", 228, seed=5, length_limit=64)
    assert len(set(dataset["problem"])) == 228


def test_rows_carry_the_prompt_and_reward_columns():
    dataset = data.build_dataset("train", 8, seed=0, length_limit=48, generators=["chain_sum", "gcd"])
    row = dataset[1]
    assert row["prompt"] == [{"role": "user", "content": f"{row['problem']} {data.INSTRUCTION}"}]
    assert "\\boxed{}" in row["prompt"][0]["content"]
    assert dataset["source"] == ["chain_sum", "gcd"] * 4
    assert set(dataset["length_limit"]) == {48} and set(dataset["verifier"]) == {"number"}
    # Every gold answer is accepted by the reward when stated in a box.
    assert (
        correct_reward([f"\\boxed{{{a}}}" for a in dataset["answer"]], answer=dataset["answer"]) == [1.0] * 8
    )


def test_default_mix_generators_exist_with_measured_solve_rates():
    assert set(data.DEFAULT_GENERATORS) <= set(data.GENERATORS)
    for name in data.DEFAULT_GENERATORS:
        rate = data.GENERATORS[name].solve_rate
        assert rate is not None and 0.05 <= rate <= 0.7, name


BAD_OPTIONS = [
    # a typo'd option
    ({"lenght_limit": 10}, "Unknown math task option"),
    # a non-positive length limit
    ({"length_limit": 0}, "length_limit must be a positive"),
    # an unknown generator
    ({"generators": ["chess"]}, "Unknown generator"),
    # an unknown evaluation generator, named as such
    ({"eval_generators": ["chain_sum", "chess"]}, r"Unknown generator\(s\) chess in eval_generators"),
    # an empty list of evaluation generators
    ({"eval_generators": []}, "eval_generators must be a non-empty list"),
    # an unknown RL training generator, named as such
    ({"rl_generators": ["chess"]}, r"Unknown generator\(s\) chess in rl_generators"),
    # an unknown benchmark
    ({"eval_data": ["gsm8k"]}, "Unknown eval benchmark"),
    # unknown training data
    ({"train_data": "numina"}, "Unknown train_data"),
    # an unknown backend
    ({"eval_backend": "sglang"}, "eval_backend must be one of"),
]


@pytest.mark.parametrize("options,message", BAD_OPTIONS)
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        data.build_dataset("train", 4, seed=0, **options)


def test_hub_ids_are_accepted_for_data_options():
    options = data.check_options(
        {
            "train_data": "agentica-org/DeepScaleR-Preview-Dataset",
            "eval_data": [
                "HuggingFaceH4/aime_2024",
                "AI-MO/aimo-validation-amc",
                "HuggingFaceH4/MATH-500",
                "math-ai/minervamath",
                "math-ai/olympiadbench",
            ],
        }
    )
    assert options["train_data"] == "deepscaler"
    assert options["eval_data"] == ("aime24", "amc", "math500", "minerva", "olympiadbench")


# --------------------------------------------------------------------------------------------------
# Paper-scale loaders on local files in the hub copies' formats
# --------------------------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture
def paper_data(tmp_path) -> Path:
    write_jsonl(
        tmp_path / "math500.jsonl",
        [
            {
                "problem": "What is $1+1$?",
                "solution": "It is $\\boxed{2}$.",
                "answer": "2",
                "subject": "Algebra",
                "level": 1,
                "unique_id": "test/algebra/1.json",
            },
            {
                "problem": "Half of one?",
                "solution": "$\\boxed{\\frac12}$",
                "answer": "\\frac{1}{2}",
                "subject": "Prealgebra",
                "level": 2,
                "unique_id": "test/prealgebra/2.json",
            },
        ],
    )
    write_jsonl(
        tmp_path / "aime24.jsonl",
        [{"id": 60, "problem": "Find $x$.", "solution": "...", "answer": "204", "url": "u", "year": "2024"}],
    )
    write_jsonl(tmp_path / "amc.jsonl", [{"id": 0, "problem": "Compute $m+n$.", "answer": 142.0, "url": "u"}])
    write_jsonl(tmp_path / "minerva.jsonl", [{"question": "A star has radius...", "answer": "7.5e5"}])
    write_jsonl(
        tmp_path / "olympiadbench.jsonl",
        [
            {
                "id": 1606,
                "question": "Find all pairs.",
                "solution": ["..."],
                "final_answer": ["$(1,2)$", "$(3,4)$"],
                "is_multiple_answer": True,
                "unit": None,
                "answer_type": "Tuple",
                "subfield": "Algebra",
            }
        ],
    )
    (tmp_path / "deepscaler.json").write_text(
        json.dumps(
            [{"problem": f"Problem {i}?", "answer": str(i), "solution": f"\\boxed{{{i}}}"} for i in range(10)]
        )
    )
    (tmp_path / "champ.json").write_text(
        json.dumps(
            {
                "problems": {
                    "P_Sequence_1": {
                        "identifier": "P_Sequence_1",
                        "_text": "Sum 1..10?",
                        "_answer": "55",
                        "category": "Sequence",
                    }
                },
                "concepts": {},
                "hints": {},
            }
        )
    )
    return tmp_path


LOADER_CASES = [
    # MATH-500: problem/answer, unique_id as id
    ("math500", {"id": "test/prealgebra/2.json", "problem": "Half of one?", "answer": "\\frac{1}{2}"}),
    # AIME 2024
    ("aime24", {"id": "60", "problem": "Find $x$.", "answer": "204"}),
    # AMC: float answers become integers
    ("amc", {"id": "0", "problem": "Compute $m+n$.", "answer": "142"}),
    # Minerva: question/answer
    ("minerva", {"id": "0", "problem": "A star has radius...", "answer": "7.5e5"}),
    # OlympiadBench: question and a list of final answers without $ signs
    ("olympiadbench", {"id": "1606", "problem": "Find all pairs.", "answer": "(1,2), (3,4)"}),
    # CHAMP: the package's json layout
    ("champ", {"id": "P_Sequence_1", "problem": "Sum 1..10?", "answer": "55"}),
]


@pytest.mark.parametrize("name,expected", LOADER_CASES)
def test_benchmark_loaders_normalise_local_copies(paper_data, name, expected):
    problems = benchmarks.load_benchmark(name, paper_data)
    assert problems[-1] == {**expected, "source": name}


def test_hub_ids_load_the_same_local_copies(paper_data):
    assert benchmarks.load_benchmark("HuggingFaceH4/MATH-500", paper_data) == benchmarks.load_benchmark(
        "math500", paper_data
    )


def test_missing_local_copy_names_the_expected_files(tmp_path):
    with pytest.raises(ValueError, match="expected aime24.jsonl, aime24.json or aime24.parquet"):
        benchmarks.load_benchmark("aime24", tmp_path)


def test_deepscaler_is_shuffled_by_seed_and_builds_training_rows(paper_data):
    first = data.build_dataset("train", 4, seed=0, train_data="deepscaler", data_dir=str(paper_data))
    again = data.build_dataset("train", 4, seed=0, train_data="deepscaler", data_dir=str(paper_data))
    other = data.build_dataset("train", None, seed=1, train_data="deepscaler", data_dir=str(paper_data))
    assert first.to_list() == again.to_list() and len(other) == 10
    assert first["problem"] != other["problem"][:4]
    assert all(f"Problem {a}?" == p for a, p in zip(first["answer"], first["problem"]))


def test_eval_split_concatenates_the_benchmarks(paper_data):
    dataset = data.build_dataset(
        "eval", 1, seed=0, eval_data=["math500", "amc", "reasoning_gym"], data_dir=str(paper_data)
    )
    assert dataset["source"][:2] == ["math500", "amc"] and dataset["answer"][:2] == ["2", "142"]
    assert dataset["source"][2] in data.DEFAULT_GENERATORS


# --------------------------------------------------------------------------------------------------
# lm-eval arguments and task files
# --------------------------------------------------------------------------------------------------


def test_model_args_hf_base_adapter_and_full_model(tmp_path):
    adapter, full = tmp_path / "adapter", tmp_path / "full"
    adapter.mkdir()
    full.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    common = {"batch_size": 4, "max_new_tokens": 128, "seed": 0}
    assert evaluation.lm_eval_model_args("hf", "base", None, **common) == (
        "hf",
        {"pretrained": "base", "tokenizer": "base", "dtype": "float32", "device": "cpu", "batch_size": 4},
    )
    assert evaluation.lm_eval_model_args("hf", "base", adapter, **common)[1]["peft"] == str(adapter)
    _name, args = evaluation.lm_eval_model_args("hf", "base", full, **common)
    assert args["pretrained"] == str(full) and "peft" not in args


def test_model_args_vllm_expresses_the_paper_evaluation(tmp_path):
    (tmp_path / "adapter_config.json").write_text("{}")
    name, args = evaluation.lm_eval_model_args(
        "vllm", "/models/r1-7b", tmp_path, batch_size=8, max_new_tokens=32768, seed=5
    )
    assert name == "vllm"
    assert args == {
        "pretrained": "/models/r1-7b",
        "tokenizer": "/models/r1-7b",
        "dtype": "auto",
        "seed": 5,
        "max_model_len": 32768 + evaluation.VLLM_PROMPT_TOKENS,
        "gpu_memory_utilization": 0.9,
        "batch_size": "auto",
        "lora_local_path": str(tmp_path),
        "max_lora_rank": 64,
    }
    assert evaluation.generation_kwargs(0.6, 0.95, 32768) == {
        "until": [],
        "do_sample": True,
        "temperature": 0.6,
        "top_p": 0.95,
        "max_gen_toks": 32768,
    }


GENERATION_CASES = [
    # greedy
    ((0.0, 1.0, 16), {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 16}),
    # sampling
    ((1.0, 0.9, 8), {"until": [], "do_sample": True, "temperature": 1.0, "top_p": 0.9, "max_gen_toks": 8}),
]


@pytest.mark.parametrize("arguments,expected", GENERATION_CASES)
def test_generation_kwargs(arguments, expected):
    assert evaluation.generation_kwargs(*arguments) == expected


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="eval_backend must be one of hf, vllm"):
        evaluation.lm_eval_model_args("sglang", "m", None, batch_size=1, max_new_tokens=1, seed=0)


def test_repository_task_files_are_indexed_by_lm_eval():
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(evaluation.TASKS_DIR), include_defaults=False)
    expected = {evaluation.task_name(name) for name in data.EVAL_BENCHMARKS}
    assert expected <= set(manager.all_subtasks)


def test_eval_generators_hold_the_held_out_problems_and_leave_training_to_the_training_generators():
    """An evaluation-only generator (harder than any trained on) is evaluated, never trained on; without the
    option the held-out problems come from the training generators."""
    options = data.check_options({"generators": ["chain_sum_3"], "eval_generators": ["chain_sum_3", "chain_sum_5"]})
    rows = data.benchmark_rows("reasoning_gym", 6, options)
    assert rows["source"] == ["chain_sum_3", "chain_sum_5"] * 3
    five_terms = [problem for problem, source in zip(rows["problem"], rows["source"]) if source == "chain_sum_5"]
    assert all(problem.count("+") + problem.count("-") >= 4 for problem in five_terms), five_terms
    assert set(data.build_dataset("train", 8, seed=0, **options)["source"]) == {"chain_sum_3"}
    default = data.benchmark_rows("reasoning_gym", 4, data.check_options({"generators": ["chain_sum_3"]}))
    assert set(default["source"]) == {"chain_sum_3"}


def test_rl_generators_choose_the_rl_training_problems_and_leave_the_warm_up_and_evaluation_as_they_were():
    """RL trains on the generators where both rewards have room (rl_generators); the warm-up, built from the
    task's options without the RL-only ones, keeps the training generators, and the held-out problems are unchanged."""
    from gdpo.plan import RL_ONLY_OPTIONS

    task = {"generators": ["chain_sum_3", "chain_sum_5"], "eval_generators": ["chain_sum_3", "chain_sum_5"]}
    options = data.check_options({**task, "rl_generators": ["chain_sum_5"]})
    assert set(data.build_dataset("train", 8, seed=0, **options)["source"]) == {"chain_sum_5"}
    warmup = data.check_options({k: v for k, v in {**task, "rl_generators": ["chain_sum_5"]}.items()
                                 if k not in RL_ONLY_OPTIONS})
    assert set(data.build_dataset("train", 8, seed=0, **warmup)["source"]) == {"chain_sum_3", "chain_sum_5"}
    assert data.benchmark_rows("reasoning_gym", 6, options) == data.benchmark_rows("reasoning_gym", 6,
                                                                                   data.check_options(task))


def test_per_run_task_file_loads_the_data_with_the_requested_settings(tmp_path):
    from lm_eval.tasks import TaskManager

    rows = data.benchmark_rows("reasoning_gym", 3, data.check_options({}))
    evaluation.write_problems(tmp_path / "rg.jsonl", rows)
    gen_kwargs = evaluation.generation_kwargs(0.6, 0.95, 64)
    evaluation.write_run_task(tmp_path / "tasks", "reasoning_gym", tmp_path / "rg.jsonl", 5, gen_kwargs)
    manager = TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False)
    task = manager.load(["gdpo_math_reasoning_gym"])["tasks"]["gdpo_math_reasoning_gym"]
    docs = list(task.test_docs())
    assert [doc["problem"] for doc in docs] == rows["problem"]
    assert task.config.repeats == 5 and task.config.generation_kwargs == gen_kwargs
    assert task.doc_to_text(docs[0]) == rows["prompt"][0][0]["content"]
    # The filter keeps every sample, and process_results averages over them.
    right, wrong = f"\\boxed{{{docs[0]['answer']}}}", "\\boxed{-99999}"
    assert task.process_results(docs[0], [[right, wrong, right, right, wrong]]) == {"acc": 0.6}


# --------------------------------------------------------------------------------------------------
# evaluate(): lm-eval end to end on the tiny model, offline
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_evaluate_end_to_end_offline_matches_its_logged_samples(tiny_model, tmp_path, no_network):
    request = EvalRequest(
        task="math",
        method="base",
        seed=0,
        model_dir=tiny_model,
        adapter_dir=None,
        options={
            "length_limit": 10,
            "eval_data": ["reasoning_gym", "math500"],
            "data_dir": str(tmp_path / "no_copies"),
        },
        eval_size=3,
        num_samples=2,
        temperature=1.0,
        top_p=1.0,
        max_new_tokens=16,
        batch_size=4,
        work_dir=tmp_path,
        threads=1,
    )
    result = math_family.evaluate(request)

    # MATH-500 has no local copy: reported as not run, the rest still evaluated.
    assert set(result["not_run"]) == {"math500"} and set(result["benchmarks"]) == {"reasoning_gym"}
    metrics = result["benchmarks"]["reasoning_gym"]
    assert metrics["n_items"] == 3 and metrics["n_responses"] == 6
    samples = [
        json.loads(line) for line in (tmp_path / "samples_reasoning_gym.jsonl").read_text().splitlines()
    ]
    assert (tmp_path / "lm_eval_results.json").exists() and len(samples) == 3

    # Acc: lm-eval's aggregate, our recomputation from the logged responses, and eval.json agree.
    verdicts = [is_correct(text, s["doc"]["answer"]) for s in samples for text in s["resps"][0]]
    assert metrics["acc"] == pytest.approx(100 * sum(verdicts) / 6) == pytest.approx(metrics["lm_eval_acc"])
    # Exceed: responses over 10 tokens, counted with the model's tokenizer (capped at 16 generated tokens).
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    lengths = [
        min(16, len(tokenizer(t, add_special_tokens=False)["input_ids"]))
        for s in samples
        for t in s["resps"][0]
    ]
    assert metrics["exceed"] == pytest.approx(100 * sum(n > 10 for n in lengths) / 6)
    assert result["summary"] == {"acc": metrics["acc"], "exceed": metrics["exceed"]}
    # Per-item outcomes, by lm-eval's doc_id: the same verdicts and lengths, sample by sample.
    outcomes = result["items"]["reasoning_gym"]
    assert outcomes["ids"] == [s["doc_id"] for s in samples] and outcomes["acc_regraded_differs"] == []
    assert "".join(outcomes["scores"]["acc"]) == "".join("1" if v else "0" for v in verdicts)
    assert "".join(outcomes["scores"]["exceed"]) == "".join("1" if n > 10 else "0" for n in lengths)
    assert result["settings"]["num_samples"] == 2 and result["settings"]["backend"] == "hf"
    # Two samples per problem really are separate samples (not one response copied).
    assert all(len(s["resps"][0]) == 2 for s in samples)
    assert any(s["resps"][0][0] != s["resps"][0][1] for s in samples)

    # The same request samples the same responses again.
    again = math_family.evaluate(replace(request, work_dir=tmp_path / "again"))
    assert again["benchmarks"] == result["benchmarks"]
    assert (tmp_path / "again" / "samples_reasoning_gym.jsonl").read_text() == (
        tmp_path / "samples_reasoning_gym.jsonl"
    ).read_text()


def test_evaluate_applies_a_lora_adapter(tiny_model, tmp_path, no_network):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    policy = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny_model),
        LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    policy.save_pretrained(tmp_path / "adapter")
    request = EvalRequest(
        task="math",
        method="gdpo",
        seed=1,
        model_dir=tiny_model,
        adapter_dir=tmp_path / "adapter",
        options={},
        eval_size=2,
        num_samples=1,
        temperature=0.0,
        top_p=1.0,
        max_new_tokens=8,
        batch_size=2,
        work_dir=tmp_path,
        threads=1,
    )
    result = math_family.evaluate(request)
    assert result["settings"]["model_args"]["peft"] == str(tmp_path / "adapter")
    assert result["benchmarks"]["reasoning_gym"]["n_responses"] == 2


def test_engine_model_generates_what_hf_generates(tiny_model):
    """lm-eval's ``hf`` model and the engine-backed one return the same greedy continuations."""
    import torch
    from lm_eval.models.huggingface import HFLM

    from gdpo.tasks.math.engine_lm import EngineLM

    hf = HFLM(pretrained=str(tiny_model), device="cpu", batch_size=3, dtype="float32")
    engine = EngineLM(pretrained=str(tiny_model), device="cpu", batch_size=3, dtype="float32", engine_dtype="float32")
    context = torch.tensor([[0, 0, 5, 6, 7], [9, 10, 11, 12, 13], [0, 0, 0, 4, 8]])
    mask = (torch.arange(5) >= torch.tensor([2, 0, 3])[:, None]).long()
    expected = hf._model_generate(context, 13, [], attention_mask=mask, do_sample=False, temperature=0.0)
    got = engine._model_generate(context, 13, [], attention_mask=mask, do_sample=False, temperature=0.0)
    assert got.shape[0] == 3 and got.shape[1] <= 13 and torch.equal(got[:, :5], context)
    pad = engine.tokenizer.pad_token_id
    for row_expected, row_got in zip(expected[:, 5:].tolist(), got[:, 5:].tolist()):
        tokens_got = [t for t in row_got if t != pad]
        assert tokens_got and tokens_got == [t for t in row_expected if t != pad]
    with pytest.raises(ValueError, match="repetition_penalty.*fast_generation: false"):
        engine._model_generate(context, 13, [], attention_mask=mask, repetition_penalty=1.2)


def test_engine_model_continuous_batching_gives_lm_evals_greedy_continuations(tiny_model, monkeypatch):
    """With continuous batching, ``generate_until`` hands the engine all requests in one call, which decodes at
    most ``batch_size`` rows at a time; the greedy continuations are ``hf``'s and batch by batch's, in order."""
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    from gdpo.generation.rollout import RolloutEngine
    from gdpo.tasks.math.engine_lm import EngineLM

    contexts = ["What is 2 + 3?", "Count: one two three four five six seven eight nine", "What is 2 + 3?", "Hi",
                "Name a prime number larger than ten, please."]
    kwargs = {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 9}
    requests = [Instance("generate_until", {}, (context, dict(kwargs)), idx) for idx, context in enumerate(contexts)]
    hf = HFLM(pretrained=str(tiny_model), device="cpu", batch_size=2, dtype="float32")
    expected = hf.generate_until(requests, disable_tqdm=True)

    rows_decoded, calls = [], []
    forward = RolloutEngine._forward

    def counting_forward(self, tokens, *args, **kwargs):
        rows_decoded.append(tokens.shape[0])
        return forward(self, tokens, *args, **kwargs)

    monkeypatch.setattr(RolloutEngine, "_forward", counting_forward)
    results = {}
    for continuous in (True, False):
        engine = EngineLM(pretrained=str(tiny_model), device="cpu", batch_size=2, dtype="float32",
                          engine_dtype="float32", continuous_batching=continuous)
        model_generate = engine._model_generate
        monkeypatch.setattr(engine, "_model_generate",
                            lambda context, *a, **k: calls.append(context.shape[0]) or model_generate(context, *a, **k))
        results[continuous] = engine.generate_until(requests, disable_tqdm=True)
        assert engine.batch_size == 2  # lm-eval's batch size is restored
        if continuous:
            assert calls == [len(contexts)] and max(rows_decoded) <= 2
            calls.clear()
    assert calls == [2, 2, 1]
    assert results[True] == results[False] == expected
    assert any(expected)


def test_fast_evaluation_runs_through_the_engine_model(tiny_model, tmp_path, no_network):
    request = EvalRequest(task="math", method="base", seed=0, model_dir=tiny_model, adapter_dir=None, options={},
                          eval_size=2, num_samples=2, temperature=0.6, top_p=0.95, max_new_tokens=8, batch_size=4,
                          work_dir=tmp_path, threads=1, fast_generation=True)
    result = math_family.evaluate(request)
    assert result["settings"]["backend"] == "gdpo-engine"
    assert result["benchmarks"]["reasoning_gym"]["n_responses"] == 4


def test_the_evaluations_answers_count_only_final_answer_forms():
    """eval.json's ``answers`` (the collapse gate's indicator) wants a boxed answer or an answer statement; a
    number in prose is no answer."""

    def tokenizer(text, add_special_tokens=False):
        return {"input_ids": text.split()}

    samples = [{"acc": 0.0, "resps": [["There are 3 apples.", "First 3 + 4 = 7, then we divide"]]},
               {"acc": 1.0, "resps": [["so it is \\boxed{7}", "The answer is 7."]]}]
    metrics = evaluation.benchmark_metrics(samples, tokenizer, length_limit=64, max_new_tokens=128)
    assert metrics["answers"] == 50.0 and metrics["n_responses"] == 4
    assert not is_correct("First 3 + 4 = 7, then we divide", "7")  # nor does the reward grade it


def test_per_item_outcomes_grade_every_response_and_count_its_tokens():
    def tokenizer(text, add_special_tokens=False):
        return {"input_ids": text.split()}

    doc = {"answer": "7", "verifier": "math_verify", "verifier_data": ""}
    samples = [{"doc_id": 4, "doc": doc, "acc": 0.5, "resps": [["so it is \\boxed{7}", "one two three four 8"]]},
               {"doc_id": 9, "doc": doc, "acc": 0.0, "resps": [["The answer is 8.", "no"]]},
               {"doc_id": 2, "doc": doc, "acc": 1.0, "resps": [["a b c d e f \\boxed{7}", "The answer is 7."]]}]
    outcomes = evaluation.benchmark_items(samples, tokenizer, length_limit=4, max_new_tokens=128)
    assert outcomes == {"ids": [4, 9, 2], "scores": {"acc": ["10", "00", "11"], "exceed": ["01", "00", "10"]},
                        "acc_regraded_differs": []}
    # A logged acc the responses do not give back is named, not hidden.
    samples[1]["acc"] = 0.5
    assert evaluation.benchmark_items(samples, tokenizer, 4, 128)["acc_regraded_differs"] == [9]


# --------------------------------------------------------------------------------------------------
# eval_backend vllm in vLLM's own interpreter (the end-to-end run is tests/test_vllm_cpu.py)
# --------------------------------------------------------------------------------------------------


def test_vllm_sampling_is_lm_evals_for_greedy_and_sampled_requests():
    from gdpo.tasks.math.vllm_lm import vllm_sampling

    greedy, until, budget = vllm_sampling(evaluation.generation_kwargs(0.0, 1.0, 16), "<|im_end|>", 256)
    assert (greedy, until, budget) == (
        {"skip_special_tokens": False, "spaces_between_special_tokens": False, "temperature": 0.0},
        ["<|im_end|>"], 16)
    sampled, _until, _budget = vllm_sampling(evaluation.generation_kwargs(0.6, 0.95, 8), "<|im_end|>", 256)
    assert sampled["temperature"] == 0.6 and sampled["top_p"] == 0.95 and "do_sample" not in sampled


def test_subprocess_vllm_model_prompts_as_lm_evals_vllm_model(tiny_model, tmp_path):
    """Chat template and token ids are what lm-eval's ``vllm`` model sends; it refuses to score."""
    from transformers import AutoTokenizer

    from gdpo.tasks.math.vllm_lm import SubprocessVLLM

    lm = SubprocessVLLM(pretrained=str(tiny_model), max_model_len=64, dtype="auto", seed=0,
                        work_dir=str(tmp_path))
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    chat = [{"role": "user", "content": "What is 2 + 3?"}]
    prompt = lm.apply_chat_template(chat)
    assert prompt == tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert lm.tok_encode(prompt) == tokenizer(prompt).input_ids
    assert lm.llm_args == {"model": str(tiny_model), "tokenizer": str(tiny_model), "max_model_len": 64,
                           "dtype": "auto", "seed": 0}
    with pytest.raises(NotImplementedError, match="only generates"):
        lm.loglikelihood([])


def test_a_missing_vllm_interpreter_is_named(monkeypatch, tmp_path):
    from gdpo.generation import vllm_offline

    monkeypatch.delenv("GDPO_VLLM_PYTHON", raising=False)
    with pytest.raises(FileNotFoundError, match="GDPO_VLLM_PYTHON is not set.*make vllm-cpu"):
        vllm_offline.generate_in_vllm({"model": "m"}, [], tmp_path)
    monkeypatch.setenv("GDPO_VLLM_PYTHON", str(tmp_path / "no-such-python"))
    with pytest.raises(FileNotFoundError, match="no-such-python does not exist"):
        vllm_offline.generate_in_vllm({"model": "m"}, [], tmp_path)
