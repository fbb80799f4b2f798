"""Every reward and diagnostic of every task family is bounded on any text (issue 37, item 5).

A policy in training can write anything: 100k characters, brackets nested 10,000 deep, a tag repeated
thousands of times, lone surrogates, numbers too large to compute, or a message with no content. Each reward
must still return a number (or None where it does not apply) quickly, and never raise: an exception aborts
training. The fuzz test draws such completions (hypothesis, derandomized) and calls every function of
``REWARD_FUNCTIONS`` and ``completion_diagnostics`` of every family in :data:`gdpo.tasks.FAMILIES`; the
regression tests below pin the cases the issue measured.

Bounds, per call on one completion of up to 100k characters: :data:`BOUND_SECONDS` for every reward and
diagnostic in the fuzz test (the slowest calls seen on a shared 2-core machine at load ~9 took 1.4 s: the code
diagnostics' ``ast.parse`` of a 100k-character program, linear but costly; math-verify on ``1e999999``, about
1 s), plus one sandbox run for the code rewards (:data:`SANDBOX_BOUND_SECONDS`); :data:`QUICK_SECONDS` for the
regression cases, which take under 0.1 s now and took from 2.6 s to over a minute before.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import re
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gdpo.tasks import FAMILIES, get_family

#: Seconds a reward or diagnostic may take on one completion in the fuzz test (the slowest seen: 1.4 s).
BOUND_SECONDS = 3.0
#: Seconds each regression case may take (under 0.1 s now; 2.6 s to minutes before the fix).
QUICK_SECONDS = 1.0
#: Seconds a code reward may take on one completion: one sandbox run (start, compile, fail) of its program.
SANDBOX_BOUND_SECONDS = 8.0
#: Length of the long hostile texts, in characters.
LONG = 100_000
#: Depth of the nested hostile texts.
DEEP = 10_000

WEATHER_CALL = {"name": "get_weather", "parameters": {"city": "Paris"}}
#: Pieces a hostile text repeats until it is :data:`LONG` characters long: each once made some reward
#: quadratic (a lazy pattern rescanning the rest of the text from every repetition).
REPEATED_PIECES = [
    " ", "=", "= ", "answer is (", "the answer is 1 x", "answer: $", "result = -", "\\boxed ", "\\boxed{",
    "\\boxed{}", "{", "}", "is ", "is 1", "1", "1,", "<tool_call>\n", "</tool_call>", "<think>",
    "</think>\n<tool_call>\n", "<response>", "<answer>", "</answer>", "```", "```python", "```\n", "\n",
    '"', '\\"', "[", "(", " or", ",", ".", "\ud800", "\x00", "\ufeff",
]
#: Openers nested :data:`DEEP` deep (closed or not).
NESTED = [("[", "]"), ("{", "}"), ("(", ")"), ('{"a": ', "}"), ("\\boxed{", "}"), ("\\frac{", "}{2}"),
          ("f(", ")"), ("<tool_call>", "</tool_call>")]
#: Numbers too large to compute, code points that are not characters, digits past the int conversion limit.
ATOMS = ["1e999999", "10**10**10", "9^9^9^9", "10^{10^{10}}", "(10^6)!", "2^{2^{2^{2^{2^{2}}}}}", "1" * 5000,
         "x^{10^{10}}", "\\binom{10^{10}}{10^5}", "e^{10^{10}}", "\\sqrt{10^{10^{10}}}", "10^{-10^{10}}",
         "-1e-999999", "\ud800", "\udfff", "\x00", "\uffff", "nan", "inf", "", "\\boxed{}", "= 1"]
#: Where a hostile body goes: alone, or inside each family's answer form.
FRAMES = [
    "{}",
    "The answer is {}",
    "\\boxed{{{}}}",
    "7 + 3 = {}",
    "So the total is {}",
    "<answer>{}</answer>",
    "<think>x</think>\n<tool_call>\n{}\n</tool_call>",
    '<think>x</think>\n<tool_call>\n{{"name": "get_weather", "parameters": {{"city": {}}}}}\n</tool_call>',
    "<think>x</think>\n<tool_call>\n{}\n</tool_call>\n<response>{}</response>",
    "```python\n{}\n```",
    "```python\ndef add(a, b):\n    return {}\n```",
]


@st.composite
def hostile_bodies(draw) -> str:
    """A hostile text: a piece repeated to :data:`LONG` characters, a nesting :data:`DEEP` deep, or an atom."""
    kind = draw(st.sampled_from(["repeated", "nested", "atom", "mixed"]))
    if kind == "repeated":
        piece = draw(st.sampled_from(REPEATED_PIECES))
        return piece * (LONG // len(piece))
    if kind == "nested":
        opener, closer = draw(st.sampled_from(NESTED))
        closed = draw(st.booleans())
        return opener * DEEP + "1" + (closer * DEEP if closed else "")
    if kind == "atom":
        return draw(st.sampled_from(ATOMS))
    pieces = draw(st.lists(st.sampled_from(REPEATED_PIECES + ATOMS), min_size=1, max_size=6))
    return "".join(pieces) * (LONG // max(1, sum(map(len, pieces))) // 4 or 1)


@st.composite
def hostile_completions(draw):
    """A completion as TRL passes it: plain text, a conversation, or a message whose content is None or
    missing."""
    shape = draw(st.sampled_from(["text", "conversation"] * 3 + ["content_none", "no_content", "two_messages"]))
    if shape == "content_none":
        return [{"role": "assistant", "content": None}]
    if shape == "no_content":
        return [{"role": "assistant"}]
    frame = draw(st.sampled_from(FRAMES))
    text = frame.format(*[draw(hostile_bodies())] * frame.count("{}"))
    if shape == "text":
        return text
    if shape == "two_messages":
        return [{"role": "assistant", "content": None}, {"role": "assistant", "content": text}]
    return [{"role": "assistant", "content": text}]


def _columns(family: str, variant: int) -> dict:
    """The dataset columns each family's rewards read, for one completion (``variant`` picks a row kind)."""
    if family == "arithmetic":
        return {"answer": ["10"], "completion_ids": [[1, 2]], "length_limit": [64]}
    if family == "math":
        verifier, data = [("math_verify", ""), ("number", ""), ("reasoning_gym", _FRACTION_ENTRY)][variant % 3]
        return {"answer": ["1" if verifier != "reasoning_gym" else "1/2"], "verifier": [verifier],
                "verifier_data": [data], "completion_ids": [[1, 2]], "length_limit": [64]}
    if family == "tool_calling":
        answer_type = ["tool_call", "tool_call+response", "response", "think"][variant % 4]
        calls = json.dumps([WEATHER_CALL]) if answer_type.startswith("tool_call") else None
        return {"answer_type": [answer_type], "ground_truth_calls": [calls]}
    tests = json.dumps({"calls": [["add(1, 2)", ["3"]], ["add(2, 2)", ["4"]]]})
    return {"tests": [tests], "time_limit": [1.0], "code_prefix": [""], "completion_ids": [[1, 2]],
            "length_limit": [64]}


#: A reasoning-gym entry (the ``verifier_data`` of a ``fraction_simplification`` row: answer 1/2).
_FRACTION_ENTRY = json.dumps({"question": "Simplify 2/4", "answer": "1/2",
                              "metadata": {"source_dataset": "fraction_simplification", "source_index": 0,
                                           "numerator": 2, "denominator": 4, "simplified_numerator": 1,
                                           "simplified_denominator": 2, "reduction_factor": 2,
                                           "style": "plain"}})


def _functions(family: str) -> dict:
    """Every reward of the family, and its diagnostics, by name."""
    module = get_family(family)
    functions = {f"reward {name}": function for name, function in module.REWARD_FUNCTIONS.items()}
    if hasattr(module, "completion_diagnostics"):
        functions["diagnostics"] = module.completion_diagnostics
    return functions


def _clear_text_caches(family: str) -> None:
    """Forget the family's cached answers, so each function pays for its own reading of the text (the math
    rewards and diagnostics share :func:`~gdpo.tasks.math.rewards.final_answer`'s cache)."""
    module = get_family(family)
    for value in vars(getattr(module, "rewards", module)).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


def _is_score(value) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _check_bounded(family: str, completion, variant: int) -> None:
    """Call every reward and diagnostic of ``family`` on ``completion``: each returns one score (a number or
    None; diagnostics a number, NaN allowed, per indicator) within its bound, and raises nothing."""
    columns = _columns(family, variant)
    for name, function in _functions(family).items():
        bound = SANDBOX_BOUND_SECONDS if family == "code" and name.startswith("reward") else BOUND_SECONDS
        _clear_text_caches(family)
        start = time.perf_counter()
        result = function(completions=[completion], **columns)
        elapsed = time.perf_counter() - start
        values = [values[0] for values in result.values()] if isinstance(result, dict) else list(result)
        assert (isinstance(result, dict) or len(result) == 1) and all(_is_score(v) for v in values), \
            f"{family} {name} returned {result!r:.200}"
        assert not (name.startswith("reward") and any(isinstance(v, float) and math.isnan(v) for v in values))
        assert elapsed < bound, f"{family} {name} took {elapsed:.2f} s (bound {bound} s) on {completion!r:.120}"


def test_every_family_is_covered():
    """The fuzz test reads the families from the registry; each has columns here."""
    assert set(FAMILIES) == {"arithmetic", "math", "tool_calling", "code"}


_FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


#: The completions the issue measured (each slow, or raising, before the fix), tried first by the fuzz test.
KNOWN_CASES = [
    "= " + " " * LONG + "x =",
    "answer is (" * (LONG // 11),
    "<think>x</think>\n" + "<tool_call>\n" * 8000,
    "<think>" * 8000 + "</think>\n<tool_call>\n" * 3000,
    '<think>x</think>\n<tool_call>\n{"name": "f", "parameters": ' + "[" * DEEP + "]" * DEEP + "}\n</tool_call>",
    "```" + "a" * LONG,
    "<answer>" * (LONG // 8),
    [{"role": "assistant", "content": None}],
]


def _known_cases(test):
    for case in KNOWN_CASES:
        for variant in range(4):  # each row kind of every family (math has 3, tool calling 4)
            test = example(completion=case, variant=variant)(test)
    return test


@pytest.mark.parametrize("family", ["arithmetic", "math", "tool_calling"])
@_FUZZ
@given(completion=hostile_completions(), variant=st.integers(0, 11))
@_known_cases
def test_text_rewards_are_bounded_on_hostile_completions(family, completion, variant):
    _check_bounded(family, completion, variant)


@settings(_FUZZ, max_examples=12)
@given(completion=hostile_completions(), variant=st.just(0))
@_known_cases
def test_code_rewards_are_bounded_on_hostile_completions(completion, variant):
    _check_bounded("code", completion, variant)


# ------------------------------------------------------------------ the cases the issue measured

def _run_and_send(connection, function, args, kwargs):
    try:
        connection.send(("value", function(*args, **kwargs)))
    except BaseException as error:  # noqa: BLE001 — the parent reports it
        connection.send(("error", f"{type(error).__name__}: {error}"))


def within(seconds: float, function, *args, **kwargs):
    """``function(*args, **kwargs)`` run in a forked process and killed after ``seconds``, so that a slow
    call fails the test at its bound instead of hanging it; an exception inside fails the test too."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_run_and_send, args=(sender, function, args, kwargs))
    start = time.perf_counter()
    process.start()
    ready = receiver.poll(seconds)
    elapsed = time.perf_counter() - start
    if not ready:
        process.kill()
        process.join()
        pytest.fail(f"{getattr(function, '__name__', function)} took over {seconds} s")
    kind, value = receiver.recv()
    process.join()
    assert kind == "value", f"{getattr(function, '__name__', function)} raised {value}"
    return value, elapsed


def _math(name):
    return get_family("math").REWARD_FUNCTIONS[name]


#: 100k-character math completions that made ``correct`` and ``length_conditioned`` quadratic: a long last
#: line after ``=`` (the closing-equation pattern), thousands of answer statements (the answer loop), a
#: closing "is" followed by spaces, an answer followed by spaces (the hedge search).
LONG_MATH = {
    "closing equation": "= " + " " * LONG + "x =",
    "answer statements": "answer is (" * (LONG // 11),
    "closing statement": "The total is" + " " * LONG + "x",
    "hedge search": "the answer is 1" + " " * LONG + "x",
}


@pytest.mark.parametrize("case", list(LONG_MATH))
@pytest.mark.parametrize("reward", ["correct", "length_conditioned"])
def test_a_long_math_completion_is_scored_quickly(case, reward):
    text = LONG_MATH[case]
    scores, seconds = within(QUICK_SECONDS, _math(reward), [[{"role": "assistant", "content": text}]],
                             answer=["1"], completion_ids=[[1]], length_limit=[64])
    assert scores == [0.0]


def test_a_huge_power_is_wrong_without_spending_the_timeout():
    """``10**10**10`` has 10^10 digits: math-verify's comparison ran until its 5 s timeout."""
    for text in ("the answer is 10**10**10", "\\boxed{10^{10^{10}}}", "\\boxed{(10^6)!}", "x = 9^9^9^9",
                 "\\boxed{x^{10^{10}}}", "\\boxed{\\binom{10^{10}}{10^5}}"):
        scores, _ = within(BOUND_SECONDS, _math("correct"), [text], answer=["1"])
        assert scores == [0.0]


def test_numbers_that_are_computed_still_count():
    """The size guard leaves ordinary powers and factorials alone."""
    correct = _math("correct")
    assert correct(["\\boxed{2^{10}}", "\\boxed{5!}", "\\boxed{10^{3}}"], answer=["1024", "120", "1000"]) == \
        [1.0, 1.0, 1.0]


def _tool(name):
    return get_family("tool_calling").REWARD_FUNCTIONS[name]


TOOL_CALLS = json.dumps([WEATHER_CALL])
REPEATED_TAGS = {
    "opening tags": "<think>x</think>\n" + "<tool_call>\n" * 8000,
    "think and call tags": "<think>" * 8000 + "</think>\n<tool_call>\n" * 3000,
}


@pytest.mark.parametrize("case", list(REPEATED_TAGS))
@pytest.mark.parametrize("answer_type", ["tool_call", "tool_call+response"])
def test_repeated_tool_tags_are_scored_quickly(case, answer_type):
    text = REPEATED_TAGS[case]
    correct, _ = within(QUICK_SECONDS, _tool("correct"), [text], answer_type=[answer_type],
                        ground_truth_calls=[TOOL_CALLS])
    form, _ = within(QUICK_SECONDS, _tool("format"), [text], answer_type=[answer_type])
    diagnostics, _ = within(QUICK_SECONDS, get_family("tool_calling").completion_diagnostics, [text],
                            answer_type=[answer_type], ground_truth_calls=[TOOL_CALLS])
    assert (correct, form, diagnostics["call_made"]) == ([-3.0], [0.0], [0.0])


DEEP_CALLS = {
    "array": '{"name": "get_weather", "parameters": ' + "[" * DEEP + "]" * DEEP + "}",
    "object": '{"name": "get_weather", "parameters": {"city": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}}",
}


@pytest.mark.parametrize("case", list(DEEP_CALLS))
def test_a_call_nested_10000_deep_is_malformed(case):
    """It raised RecursionError in ``correct`` (aborting training) while ``format`` paid 1.0."""
    from gdpo.tasks.tool_calling.output_format import MAX_CALL_NESTING, ToolCallParseError, parse_tool_calls

    text = f"<think>x</think>\n<tool_call>\n{DEEP_CALLS[case]}\n</tool_call>"
    assert _tool("correct")([text], answer_type=["tool_call"], ground_truth_calls=[TOOL_CALLS]) == [-3.0]
    assert _tool("format")([text], answer_type=["tool_call"]) == [0.0]
    diagnostics = get_family("tool_calling").completion_diagnostics([text], answer_type=["tool_call"],
                                                                    ground_truth_calls=[TOOL_CALLS])
    assert diagnostics["call_made"] == [0.0]
    with pytest.raises(ToolCallParseError, match="nested deeper"):
        parse_tool_calls(text)
    # a call nested to the limit still parses, and has the format
    nested = '{"name": "f", "parameters": ' + '{"a": ' * (MAX_CALL_NESTING - 1) + "1" + "}" * MAX_CALL_NESTING
    shallow = f"<think>x</think>\n<tool_call>\n{nested}\n</tool_call>"
    assert parse_tool_calls(shallow)[0]["name"] == "f"
    assert _tool("format")([shallow], answer_type=["tool_call"]) == [1.0]


def test_a_number_past_the_int_digit_limit_is_a_malformed_call():
    """``json.loads`` raises ValueError (not JSONDecodeError) on 5,000 digits."""
    text = '<think>x</think>\n<tool_call>\n{"name": "get_weather", "parameters": {"n": ' + "1" * 5000 + \
        "}}\n</tool_call>"
    assert _tool("correct")([text], answer_type=["tool_call"], ground_truth_calls=[TOOL_CALLS]) == [-3.0]


NO_CONTENT = [[{"role": "assistant", "content": None}], [{"role": "assistant"}]]


@pytest.mark.parametrize("completion", NO_CONTENT, ids=["content None", "no content key"])
def test_a_message_without_content_is_an_empty_completion(completion):
    """``content: None`` raised TypeError in the tool-calling, code and arithmetic families."""
    tool = get_family("tool_calling")
    assert tool.REWARD_FUNCTIONS["correct"]([completion], answer_type=["tool_call"],
                                            ground_truth_calls=[TOOL_CALLS]) == [-3.0]
    assert tool.REWARD_FUNCTIONS["format"]([completion], answer_type=["tool_call"]) == [0.0]
    assert tool.completion_diagnostics([completion], answer_type=["tool_call"],
                                       ground_truth_calls=[TOOL_CALLS])["call_made"] == [0.0]
    arithmetic = get_family("arithmetic")
    assert arithmetic.REWARD_FUNCTIONS["correct"]([completion], answer=["1"]) == [0.0]
    assert arithmetic.REWARD_FUNCTIONS["format"]([completion]) == [0.0]
    code = get_family("code")
    assert code.rewards.extract_code(code.rewards.completion_text(completion)) == ""
    assert code.completion_diagnostics([completion]) == {"code_block": [0.0], "program_parses": [0.0]}
    assert get_family("math").REWARD_FUNCTIONS["correct"]([completion], answer=["1"]) == [0.0]


def test_a_long_fence_line_is_extracted_quickly():
    """A fence followed by 100k characters without a newline made the fence pattern quadratic (a 20k one
    took 3.7 s)."""
    code = get_family("code")
    extracted, _ = within(QUICK_SECONDS, code.rewards.extract_code, "```" + "a" * LONG)
    assert extracted == "```" + "a" * LONG


def test_repeated_answer_tags_are_read_quickly():
    arithmetic = get_family("arithmetic")
    text = "<answer>" * (LONG // 8)
    assert within(QUICK_SECONDS, arithmetic.REWARD_FUNCTIONS["format"], [text])[0] == [0.0]
    assert within(QUICK_SECONDS, arithmetic.REWARD_FUNCTIONS["correct"], [text], answer=["1"])[0] == [0.0]


# ------------------------------------------------------------------ the linear readers read as before

_SHORT = settings(max_examples=100, deadline=None, derandomize=True, database=None)


def _texts(*pieces: str, size: int = 12):
    return st.lists(st.sampled_from(pieces), max_size=size).map("".join)


@_SHORT
@given(line=_texts("=", " ", "\t", ".", "!", "1", "x", "*", "\u3000", "= ."))
def test_the_closing_equation_reads_as_its_former_pattern(line):
    """:func:`_closing_equation_side` captures what ``=\\s*([^=\\n]+?)[\\s.!]*$`` did (on a line: no line
    breaks)."""
    from gdpo.tasks.math.rewards import _closing_equation_side

    former = re.search(r"=\s*([^=\n]+?)[\s.!]*$", line)
    assert _closing_equation_side(line) == (former.group(1) if former else None)


@_SHORT
@given(text=_texts(" ", ",", "or", "x", "(", "I", "ab", "\t", "1", " (I", " or"))
def test_the_hedge_splits_as_its_former_pattern(text):
    from gdpo.tasks.math.rewards import _HEDGE

    former = re.compile(r",?\s+(?:or|but|not|since|because|although|though|maybe|perhaps|unless)\b"
                        r"|\s+\((?=\s*(?:I\b|[A-Za-z]{2,}))", re.IGNORECASE)
    assert _HEDGE.split(text, maxsplit=1)[0] == former.split(text, maxsplit=1)[0]


@_SHORT
@given(line=_texts("is", " ", "1", ",", "000", ".", "5", "*", "$", "!", "x", "-", "\t"))
def test_the_closing_statement_reads_as_its_former_pattern(line):
    from gdpo.tasks.math.rewards import _CLOSING_STATEMENT

    former = re.search(r"\bis\s+[*_$\s]*(?P<number>[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)[*_$\s]*[.!]?\s*$", line)
    now = _CLOSING_STATEMENT.search(line)
    assert (now and now.group("number")) == (former and former.group("number"))


def _former_last_boxed(text: str, non_empty: bool = False) -> str | None:
    end = len(text)
    while (start := text.rfind("\\boxed", 0, end)) >= 0:
        brace = text.find("{", start)
        content = None
        if brace >= 0:
            depth = 0
            for index in range(brace, len(text)):
                depth += {"{": 1, "}": -1}.get(text[index], 0)
                if depth == 0:
                    content = text[brace + 1 : index].strip()
                    break
        if content is None or content or not non_empty:
            return content
        end = start
    return None


@_SHORT
@given(text=_texts("\\boxed", "{", "}", " ", "x", "\\boxed{", "\\boxed{}", "\\boxed "), non_empty=st.booleans())
def test_the_last_box_reads_as_before(text, non_empty):
    from gdpo.tasks.math.rewards import last_boxed

    assert last_boxed(text, non_empty) == _former_last_boxed(text, non_empty)


@_SHORT
@given(text=_texts("```", "python", "py", " ", "\t", "\n", "a", "`", "x = 1", "+"))
def test_the_fence_reads_as_its_former_pattern(text):
    from gdpo.tasks.code import rewards

    former = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n")
    for position in range(len(text) + 1):
        now, then = rewards._OPENING_FENCE.search(text, position), former.search(text, position)
        assert (now and (now.span(), now.group(1))) == (then and (then.span(), then.group(1)))


@_SHORT
@given(text=_texts("<answer>", "</answer>", "12", " ", "\n", "x"))
def test_the_answer_blocks_read_as_their_former_pattern(text):
    from gdpo.tasks.arithmetic import answer_blocks

    assert answer_blocks(text) == re.findall(r"<answer>(.*?)</answer>", text, re.DOTALL)


@_SHORT
@given(text=_texts("<tool_call>", "</tool_call>", "x", "\n", "<think>"))
def test_the_first_tool_call_block_reads_as_its_former_pattern(text):
    from gdpo.tasks.tool_calling.output_format import _first_block

    former = re.search(r"<tool_call>(.*?)</tool_call>", text, re.DOTALL)
    assert _first_block(text) == (former.group(1) if former else None)
