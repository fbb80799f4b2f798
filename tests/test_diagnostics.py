"""Per-completion diagnostics of each task family: what the policy does, the signs of a collapse."""

from __future__ import annotations

import json
import math

import pytest

from gdpo.tasks import code, math as math_family, tool_calling
from gdpo.tasks.tool_calling.output_format import ANSWER_RESPONSE, ANSWER_TOOL_CALL

CALL = {"name": "math.factorial", "parameters": {"number": 5}}
CALL_TEXT = '<think>x</think>\n<tool_call>\n{"name": "math.factorial", "parameters": {"number": 5}}\n</tool_call>'


def tool_diagnostics(text, answer_type, calls):
    values = tool_calling.completion_diagnostics([text], [answer_type], [json.dumps(calls) if calls else None])
    return {name: column[0] for name, column in values.items()}


@pytest.mark.parametrize(
    "text, answer_type, calls, expected",
    [
        # the exact reference call
        (CALL_TEXT, ANSWER_TOOL_CALL, [CALL], {"call_made": 1, "call_when_expected": 1, "exact_call": 1}),
        # a call with a wrong value: made, not exact
        (CALL_TEXT.replace("5", "6"), ANSWER_TOOL_CALL, [CALL],
         {"call_made": 1, "call_when_expected": 1, "exact_call": 0}),
        # the collapse the issue found: thinking only, no call
        ("<think>I can call the tools in the response</think>", ANSWER_TOOL_CALL, [CALL],
         {"call_made": 0, "call_when_expected": 0, "exact_call": 0}),
        # a block that does not parse is no call
        ("<think>x</think>\n<tool_call>\nmath.factorial(5)\n</tool_call>", ANSWER_TOOL_CALL, [CALL],
         {"call_made": 0, "call_when_expected": 0, "exact_call": 0}),
        # an empty block is no call either
        ("<think>x</think>\n<tool_call>\n\n</tool_call>", ANSWER_TOOL_CALL, [CALL],
         {"call_made": 0, "call_when_expected": 0, "exact_call": 0}),
        # irrelevance: declining is right, and the call indicators do not apply
        ("<think>x</think>\n<response>no</response>", ANSWER_RESPONSE, None,
         {"call_made": 0, "declined_when_expected": 1}),
        (CALL_TEXT, ANSWER_RESPONSE, None, {"call_made": 1, "declined_when_expected": 0}),
    ],
)
def test_tool_calling_indicators(text, answer_type, calls, expected):
    values = tool_diagnostics(text, answer_type, calls)
    for name, value in values.items():
        if name in expected:
            assert value == expected[name], name
        else:
            assert math.isnan(value), f"{name} should not apply here"


def test_tool_calling_reads_conversational_completions():
    values = tool_calling.completion_diagnostics([[{"role": "assistant", "content": CALL_TEXT}]],
                                                 [ANSWER_TOOL_CALL], [json.dumps([CALL])])
    assert values["exact_call"] == [1.0]


def test_math_answer_present():
    values = math_family.completion_diagnostics(["so it is \\boxed{42}", "I do not know", ""])
    assert values["answer_present"] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("text, answered", [
    ("There are 3 apples.", False),                               # a bare number in prose
    ("I have 3 ideas but I am not sure", False),
    ("So 3 + 4 = 7, and then I got lost", False),                 # an equation inside prose
    ("First 3 + 4 = 7.\nThen we divide the larger number by", False),  # reasoning cut before its conclusion
    ("42", False),                                                # a number without a final-answer form
    ("\\boxed{}", False),                                         # an empty box
    ("The answer is not clear, maybe 3 or 4", False),             # the statement is not followed by the answer
    ("The answers are 3", False),
    ("\\boxed{} is where it goes, but I do not know", False),       # an empty box states nothing
    ("First \\boxed{5}, then I changed my mind: \\boxed{}", True),  # the last box with content is graded
    ("so it is \\boxed{42}", True),
    ("\\boxed{\\frac{1}{2}}", True),
    ("The answer is 12.", True),                                  # the form the reward's docstring names
    ("Final answer: -3", True),
    ("**Answer:** $\\frac{1}{2}$", True),
    ("The answer is **12**", True),
    ("answer = (1, 2)", True),
    ("So the result is 2.", True),
    ("the final answer, which is 8.", True),
    ("To add them:\n7 + 3 = 10", True),                          # a closing equation
    ("So 3 + 4 = 7.", True),
])
def test_math_answer_needs_a_final_answer_form(text, answered):
    assert math_family.completion_diagnostics([text])["answer_present"] == [float(answered)]


@pytest.mark.parametrize("text, answered", [
    ("\\boxed{10 - 5}", False),     # the question restated in a box: a number row can never pay it
    ("The answer is 10 - 5", False),
    ("\\boxed{19, 19}", False),
    ("\\boxed{5}", True),
    ("10 - 5 = 5", True),
])
def test_on_number_rows_an_answer_is_a_plain_number(text, answered):
    values = math_family.completion_diagnostics([text, text], verifier=["number", "math_verify"])
    assert values["answer_present"] == [float(answered), 1.0]


def test_code_block_and_parsing_program():
    texts = ["```python\ndef f(x):\n    return x\n```", "Here is how: just add them.", "```python\ndef f(:\n```",
             "def f(x):\n    return x\n", ""]
    values = code.completion_diagnostics(texts)
    assert values["code_block"] == [1.0, 0.0, 1.0, 0.0, 0.0]
    # prose parses as no program ("Here is how: ..." is a syntax error); bare code without a fence still runs
    assert values["program_parses"] == [1.0, 0.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("text", [
    "Sorry", "Sorry.", "I cannot help with that.", "42", "x", "not possible", "yes or no", "Answer: yes",
    "pass", "global warming", "return home", "raise hell", "```\nSorry\n```", "```python\n42\n```", "  \n",
])
def test_prose_that_parses_is_no_program(text):
    """The reward runs the whole text when there is no fenced block; "Sorry" parses (a bare name) but is no
    program, and neither is any text without a statement that does something."""
    assert code.completion_diagnostics([text])["program_parses"] == [0.0]


@pytest.mark.parametrize("text", [
    "def f(x):\n    return x\n", "```python\ndef f(x):\n    return x\n```", "print(input())",
    "n = int(input())\nprint(n * 2)", "import sys\nsys.stdout.write(sys.stdin.read())", "class A:\n    pass",
    "total: int = 0", "for line in open(0):\n    print(line)", "Here it is:\n```\nf = lambda x: x\n```",
])
def test_real_programs_are_programs(text):
    assert code.completion_diagnostics([text])["program_parses"] == [1.0]


def test_run_summary_says_how_many_steps_had_a_signal_and_what_the_policy_did():
    from gdpo.training.run import summarise

    records = [{"step": 1, "advantages/std": 0.0, "diagnostics/call_made": 0.25},
               {"step": 2, "advantages/std": 0.9, "diagnostics/call_made": 0.5},
               {"step": 3, "advantages/std": 0.7, "diagnostics/call_made": 0.0},
               {"step": 4, "advantages/std": 0.0}]
    summary = summarise(records, ["correct", "format"])
    assert summary["steps_with_signal"] == 0.5
    assert summary["diagnostics"] == {"diagnostics/call_made": {"first": 0.25, "last": 0.0}}


@pytest.mark.parametrize("text", ["12 = 1", "The GCD of 12 and 11 is 1.", "So the GCD is **1**."])
def test_equivalent_answers_are_judged_alike(text):
    """The issue's pair: a GDPO run answering "12 = 1" and a GRPO run answering "The GCD of 12 and 11 is 1." state
    the same answer; both are answers (and graded the same) on every verifier."""
    for verifier in ("math_verify", "number"):
        assert math_family.diagnostics.has_final_answer(text, verifier)
        assert math_family.rewards.is_correct(text, "1", verifier)


@pytest.mark.parametrize("text", ["What is 10 - 5?", "x is 10 - 5.", "12, 11", "There is 1 apple here"])
def test_a_question_or_an_expression_after_is_is_no_answer(text):
    assert not math_family.diagnostics.has_final_answer(text)


def test_the_committed_seed_4_runs_get_one_judgement_from_the_gate():
    """cpu-evidence math seed 4: GDPO answered GCD items "12 = 1" (passed the gate, 33.5 % answers on 200
    items), GRPO "The GCD of 12 and 11 is 1." (0.0 %, collapsed). On their committed samples both now answer
    every GCD item and nothing else, so the gate judges them alike."""
    from pathlib import Path

    from gdpo.generation.health import collapse_reasons

    runs = Path(__file__).resolve().parents[1] / "paper_figures" / "cpu-evidence" / "evidence" / "runs" / "math"
    shares = {}
    for method in ("gdpo", "grpo"):
        samples = [json.loads(line) for line in (runs / method / "seed4" / "completions_sample.jsonl").open()]
        texts = [t for s in samples for t in s["resps"][0]]
        verifiers = [s["doc"]["verifier"] for s in samples for _ in s["resps"][0]]
        answered = math_family.diagnostics.completion_diagnostics(texts, verifier=verifiers)["answer_present"]
        sources = [s["doc"]["source"] for s in samples for _ in s["resps"][0]]
        gcd = [a for a, source in zip(answered, sources) if source == "gcd"]
        assert gcd and all(gcd), method
        shares[method] = 100 * sum(answered) / len(answered)
    assert shares["gdpo"] == shares["grpo"] == pytest.approx(24.0)
    assert collapse_reasons("math", {"answers": shares["grpo"], "truncated": 0.0}) == collapse_reasons(
        "math", {"answers": shares["gdpo"], "truncated": 0.0}) == []
