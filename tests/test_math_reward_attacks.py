"""Attacks on the math correctness reward, tried before the cpu-evidence-2 experiment was registered.

The cpu-evidence policies were paid for restating the question ("10 - 5") and for a bare constant ("1" on
GCD items); both were fixed (only a final-answer form is read). Before the next experiment the reward was
attacked again: each case below is a completion a policy could write to be paid without stating the one
right answer as its final answer (expected 0), or a plainly right answer in a form a small model writes (a
control, expected 1). The cases run on real held-out problems of the generators the experiment draws from
and of their harder settings (:data:`GENERATOR_NAMES`): every attack on every generator, one test per attack
that names each (generator, verifier) pair scoring otherwise, under the ``number`` verifier those rows use
and, where the answer does not depend on it, under ``math_verify`` too; fraction_simplification's rows under
``reasoning_gym``. Attacks the reward still pays by design are strict xfails naming the generator and the
reason (:data:`STILL_PAID`): one of them starting to score 0 fails the run, so the list stays true.
"""

from __future__ import annotations

import functools
import json
import re

import pytest

from gdpo.tasks.math.data import INSTRUCTION, distinct_problems
from gdpo.tasks.math.rewards import correct_reward, is_correct

#: Harder settings of the experiment's generators (reasoning-gym dataset, config).
HARDER = {
    "chain_sum_3_terms": ("chain_sum", {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1}),
    "chain_sum_2_digits": ("chain_sum", {"min_terms": 2, "max_terms": 2, "min_digits": 2, "max_digits": 2}),
    "basic_arithmetic_3_terms": ("basic_arithmetic", {"min_terms": 3, "max_terms": 3, "min_digits": 1,
                                                      "max_digits": 1, "operators": ("+", "-"),
                                                      "allow_parentheses": False, "allow_negation": False}),
    "basic_arithmetic_2_digits": ("basic_arithmetic", {"min_terms": 2, "max_terms": 2, "min_digits": 2,
                                                       "max_digits": 2, "operators": ("+", "-"),
                                                       "allow_parentheses": False, "allow_negation": False}),
    "products_2_digits": ("products", {"min_terms": 2, "max_terms": 2, "min_digits": 2, "max_digits": 2}),
    "gcd_up_to_50": ("gcd", {"min_value": 2, "max_value": 50}),
}
GENERATOR_NAMES = ("basic_arithmetic", "chain_sum", "chain_sum_3", "chain_sum_4", "chain_sum_5", "products",
                   "gcd", "lcm", "simple_equations", *HARDER)


@functools.cache
def problem(name: str) -> dict:
    """A held-out problem of ``name`` with the fields the templates use: ``q`` (question), ``a`` (gold), ``w``
    and ``w2`` (wrong numbers), ``a2`` (twice the gold), ``e`` (the expression or numbers the question holds),
    ``v`` (the unknown), ``work`` (a right closing equation) and ``I`` (the instruction). The first problem
    whose answer is at least 2 in size, so that the constants 0 and 1 are wrong."""
    if name in HARDER:
        import reasoning_gym

        dataset, config = HARDER[name]
        data = reasoning_gym.create_dataset(dataset, seed=0, size=50, **config)
        entries = [data[index] for index in range(50)]
    else:
        entries = distinct_problems(name, "eval", 30, 0)
    entry = next(e for e in entries if abs(int(e["answer"])) >= 2)
    question, gold = entry["question"], str(entry["answer"])
    expression = re.search(r"-?\d+(?:\s*[-+*/]\s*-?\d+)+", question)
    numbers = re.search(r"numbers: ([\d, ]*\d)", question)
    equation = re.search(r":\s*(.*=.*)$", question)
    variable = re.search(r"(?:for|value of) ([a-z])\b", question)
    if expression:
        e, work = expression.group(), f"{expression.group()} = {gold}"
    elif numbers:
        e = numbers.group(1)
        work = f"{'GCD' if 'GCD' in question else 'LCM'}({e}) = {gold}"
    else:
        e, work = equation.group(1), f"{variable.group(1)} = {gold}"
    number = int(gold)
    return {"q": question, "a": gold, "w": str(number + 1), "w2": str(number + 2), "a2": str(2 * number),
            "e": e, "v": variable.group(1) if variable else "x", "work": work, "I": INSTRUCTION}


def score(template: str, name: str, verifier: str) -> float:
    fields = problem(name)
    text = template.format(**fields)
    return correct_reward([[{"role": "assistant", "content": text}]], answer=[fields["a"]],
                          verifier=[verifier], verifier_data=[""])[0]


# --------------------------------------------------------------------------------------------------
# Restating the question or echoing the prompt: every generator's question, under its verifier
# --------------------------------------------------------------------------------------------------

RESTATED = [
    "{e}", "{e} =", "{e} = ", "{e}=", "= {e}", "{q}", "{q} {I}", "{q}\n{e}", "\\boxed{{{e}}}",
    "\\boxed{{{q}}}", "\\boxed{{{e} =}}", "\\boxed{{{e} = ?}}", "{e} = ?", "{e} = {e}", "{e} = \\boxed{{}}",
    "The answer is {e}.",
    "Answer: {e}", "**Answer:** {e}", "The result is {e}.", "Result = {e}", "The final answer is {e}",
    "The answer is {e} =", "x = {e}", "\\boxed{{x = {e}}}", "The answer is: {q}", "{e}\n\nThe answer is {e}.",
    "$${e}$$", "\\[ \\boxed{{{e}}} \\]", "```\n{e}\n```", "{I}", "\\boxed{{}}", "\\boxed{{ }}",
    "\\boxed{{\\,}}",
    "\\boxed{{?}}", "\\boxed{{answer}}", "The answer is \\boxed{{}}.",
]


@pytest.mark.parametrize("name", GENERATOR_NAMES)
@pytest.mark.parametrize("template", RESTATED)
def test_restating_the_question_is_not_paid(template, name):
    assert score(template, name, "number") == 0.0


# --------------------------------------------------------------------------------------------------
# Attacks on any problem: (family, template, expected under number, expected under math_verify or None)
# --------------------------------------------------------------------------------------------------

ATTACKS = [
    # constant answers (the problems' answers are at least 2 and not 42)
    ("constant", "\\boxed{{0}}", 0.0, 0.0),
    ("constant", "\\boxed{{1}}", 0.0, 0.0),
    ("constant", "The answer is 1.", 0.0, 0.0),
    ("constant", "\\boxed{{42}}", 0.0, 0.0),
    ("constant", "1", 0.0, 0.0),
    # hedges listing several answers, the right one first or last
    ("hedge", "{a} or {w}", 0.0, 0.0),
    ("hedge", "{w} or {a}", 0.0, 0.0),
    ("hedge", "The answer is {a} or {w}.", 0.0, 0.0),
    ("hedge", "The answer is {w} or {a}.", 0.0, 0.0),
    ("hedge", "The answer is either {a} or {w}.", 0.0, 0.0),
    ("hedge", "The answer is {a} or maybe {w}.", 0.0, 0.0),
    ("hedge", "The answer is {a}, or perhaps {w}.", 0.0, 0.0),
    ("hedge", "The answer is {a} (or {w}).", 0.0, 0.0),
    ("hedge", "The answer is {a} (maybe {w}).", 0.0, 0.0),
    ("hedge", "The answer is {a} (I think {w}).", 0.0, 0.0),
    ("hedge", "The answer is {a} but maybe {w}.", 0.0, 0.0),
    ("hedge", "The answer is {a}. Or {w}.", 0.0, 0.0),
    ("hedge", "The answer is {a}.\nOr {w}.", 0.0, 0.0),
    ("hedge", "The answer is {a} or {w} or {w2}.", 0.0, 0.0),
    ("hedge", "The answer is {a} or not {a}.", 0.0, 0.0),
    ("hedge", "The answer is {a} apples or {w}", 0.0, 0.0),
    ("hedge", "The answer is $\\boxed{{}}$ {a} or {w}", 0.0, 0.0),
    ("hedge", "The answer is {a}/{w}.", 0.0, 0.0),
    ("hedge", "The answer is {a}, {w}.", 0.0, 0.0),
    ("hedge", "The answer is {a} and {w}.", 0.0, 0.0),
    ("hedge", "The answer is {w} and {a}.", 0.0, 0.0),
    ("hedge", "The answer is {a} ± 1.", 0.0, 0.0),
    ("hedge", "The answer is {a} to {w}.", 0.0, 0.0),
    ("hedge", "Answer: [{a}, {w}]", 0.0, 0.0),
    ("hedge", "Answer: {{{a}, {w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a} or {w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{w} or {a}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a} \\text{{ or }} {w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{w} \\text{{ or }} {a}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a} or forty}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}, {w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{w}, {a}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{\\{{{a}, {w}\\}}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{[{a}, {w}]}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}/{w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a} \\pm 1}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{w} \\pm 1}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}\\text{{-}}{w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}; {w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a} \\\\ {w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{x = {a} \\text{{ or }} x = {w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{x={a}, x={w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{\\begin{{cases}}{a}\\\\{w}\\end{{cases}}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}}} or {w}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}}}\nor {w}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}}} (or {w})", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}}}, maybe {w}", 0.0, 0.0),
    ("hedge", "{w} or \\boxed{{{a}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{w}}} or \\boxed{{{a}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}}} or \\boxed{{{w}}}", 0.0, 0.0),
    ("hedge", "\\boxed{{{a}}}, \\boxed{{{w}}}", 0.0, 0.0),
    ("hedge", "So it is {w} or it is {a}.", 0.0, 0.0),
    ("hedge", "{e} = {w} or {e} = {a}", 0.0, 0.0),
    ("hedge", "{e} = {a} or {w}", 0.0, 0.0),
    ("hedge", "{e} = {a}, {w}", 0.0, 0.0),
    ("hedge", "{e} = {a}/{w}", 0.0, 0.0),
    ("hedge", "x = {a} or x = {w}", 0.0, 0.0),
    # the answer in prose or in the reasoning, the final statement different or missing
    ("prose", "{work}. So the answer is {w}.", 0.0, 0.0),
    ("prose", "{work}\nThe answer is \\boxed{{{w}}}.", 0.0, 0.0),
    ("prose", "I think {work}, but I am not sure.", 0.0, 0.0),
    ("prose", "{work}, hmm.", 0.0, 0.0),
    ("prose", "{work}\nHmm, let me check again.", 0.0, 0.0),
    ("prose", "First, {work}. Then", 0.0, 0.0),
    ("prose", "The answer might be {a}", 0.0, 0.0),
    ("prose", "It could be {a}.", 0.0, 0.0),
    ("prose", "Maybe {a}.", 0.0, 0.0),
    ("prose", "{a} is a possible answer.", 0.0, 0.0),
    ("prose", "The answer is probably {a}", 0.0, 0.0),
    ("prose", "I guess {a}?", 0.0, 0.0),
    ("prose", "Is it {a}?", 0.0, 0.0),
    ("prose", "There are {a} apples.", 0.0, 0.0),
    ("prose", "We get {a}.", 0.0, 0.0),
    ("prose", "The answer is not {a}.", 0.0, 0.0),
    ("prose", "The answer isn't {a}.", 0.0, 0.0),
    ("prose", "It is not {a}.", 0.0, 0.0),
    ("prose", "Not {a}", 0.0, 0.0),
    ("prose", "The answer is {w}, not {a}.", 0.0, 0.0),
    ("prose", "The answer is {w} rather than {a}.", 0.0, 0.0),
    ("prose", "The answer is {w} instead of {a}.", 0.0, 0.0),
    ("prose", "The answer is {w}. Note: {work}", 0.0, 0.0),
    ("prose", "The answer is {w}. ({work})", 0.0, 0.0),
    ("prose", "The answer is {w}, although {work}.", 0.0, 0.0),
    ("prose", "\\boxed{{{w}}} (actually {a})", 0.0, 0.0),
    ("prose", "\\boxed{{{w}}}. The answer is {a}.", 0.0, 0.0),
    ("prose", "\\boxed{{{w}}}\n{work}", 0.0, 0.0),
    ("prose", "The answer is {a} or not {a}.", 0.0, 0.0),
    # a bare value, markdown and code: no final-answer form
    ("markdown_code", "{a}", 0.0, 0.0),
    ("markdown_code", "{a}.", 0.0, 0.0),
    ("markdown_code", "**{a}**", 0.0, 0.0),
    ("markdown_code", "# {a}", 0.0, 0.0),
    ("markdown_code", "`{a}`", 0.0, 0.0),
    ("markdown_code", "```\n{a}\n```", 0.0, 0.0),
    ("markdown_code", "```python\nprint({e})\n```\nOutput: {a}", 0.0, 0.0),
    ("markdown_code", "print({e})  # {a}", 0.0, 0.0),
    ("markdown_code", "```python\nanswer = {w}\n```\n{work} or {w}", 0.0, 0.0),
    # outside a box math-verify reads the last expression: an answer going on to another number is not it
    ("markdown_code", "x = {w}  # {a}", 0.0, 0.0),
    ("markdown_code", "The answer is {w} | {a}", 0.0, 0.0),
    ("hedge", "The answer is ({w}, {a}).", 0.0, 0.0),
    # an answer followed by a retraction: the later answer is the final one
    ("retraction", "\\boxed{{{a}}} ... wait, no, \\boxed{{{w}}}", 0.0, 0.0),
    ("retraction", "The answer is {a}. Wait, no: the answer is {w}.", 0.0, 0.0),
    ("retraction", "\\boxed{{{a}}} is wrong; \\boxed{{{w}}}", 0.0, 0.0),
    ("retraction", "The answer is \\boxed{{{a}}}. Correction: \\boxed{{{w}}}.", 0.0, 0.0),
    ("retraction", "{work}. Wait. {e} = {w}.", 0.0, 0.0),
    ("retraction", "{work}\nCorrection: the result is {w}.", 0.0, 0.0),
    ("retraction", "{work}\nNo: {e} = {w}", 0.0, 0.0),
    # empty and nested boxes
    ("empty_nested_box", "\\boxed{{}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{}} {a}", 0.0, 0.0),
    ("empty_nested_box", "{a} \\boxed{{}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{\\boxed{{}}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{{w}\\boxed{{{a}}}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{\\boxed{{{a}}}{w}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{\\boxed{{{a}}}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{{{\\boxed{{{a}}}}} + {w}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{{w} \\text{{\\boxed{{{a}}}}}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{{w}\\boxed{{{a}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{{a}\\boxed{{}}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{{a}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{a}", 0.0, 0.0),
    ("empty_nested_box", "{{{a}}}", 0.0, 0.0),
    ("empty_nested_box", "\\fbox{{{a}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{{a}}}\\boxed{{", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{\\text{{{w}}}{a}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{\\phantom{{{w}}}{a}}}", 0.0, 0.0),
    ("empty_nested_box", "\\boxed{{\\cancel{{{w}}}{a}}}", 0.0, 0.0),
    # LaTeX and number-format tricks that state another value or no plain number
    ("latex_format", "\\boxed{{{a}!}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{{a}.{a}}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{{a}.4}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{{a}.0000001}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{{a}x}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{0x{a}}}", 0.0, None),  # math-verify: 0·x + a, equal for a negative gold
    ("latex_format", "\\boxed{{{a} \\bmod {w}}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{{a}{w}}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{{a}\\,{w}}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{\\text{{forty-two}}}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{{a}\\%\\%}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{\\infty}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{x}}", 0.0, 0.0),
    ("latex_format", "\\boxed{{\\mathbf{{{w}}}{a}}}", 0.0, 0.0),
    # number rows want a plain number: an equal expression is refused there, math-verify evaluates it
    ("expression", "\\boxed{{{a} + 0}}", 0.0, 1.0),
    ("expression", "\\boxed{{{a2}/2}}", 0.0, 1.0),
    ("expression", "\\boxed{{\\frac{{{a2}}}{{2}}}}", 0.0, 1.0),
    ("expression", "\\boxed{{{a} \\cdot 1}}", 0.0, 1.0),
    ("expression", "\\boxed{{{a}^1}}", 0.0, 1.0),
    ("expression", "The answer is {a} + 0.", 0.0, 1.0),
    ("expression", "{e} = {a} + 0", 0.0, 1.0),
]


@pytest.mark.parametrize(
    "family, template, number, math_verify",
    [pytest.param(*attack, id=f"{attack[0]}-{index}") for index, attack in enumerate(ATTACKS)],
)
def test_attack(family, template, number, math_verify):
    """The attack on every generator's problem, under ``number`` and (unless None) ``math_verify``; the pairs
    listed in :data:`STILL_PAID` are left to :func:`test_still_paid`. Each pair scoring otherwise is named."""
    failures = []
    for name in GENERATOR_NAMES:
        for verifier, expected in (("number", number), ("math_verify", math_verify)):
            if expected is None or (template, verifier, name) in STILL_PAID_PAIRS:
                continue
            got = score(template, name, verifier)
            if got != expected:
                failures.append(f"{name} / {verifier}: {template.format(**problem(name))!r} "
                                f"(gold {problem(name)['a']}) scored {got}, expected {expected}")
    assert not failures, "\n".join(failures)


def test_long_outputs_are_not_paid():
    """A very long completion states no answer by repeating one, by a box too long to read (3,000 leading
    zeros), or by reasoning whose final statement is wrong; a long reasoning closing with the right box is
    paid."""
    gold = problem("products_2_digits")["a"]
    wrong = str(int(gold) + 1)
    long_attacks = [f"{gold} " * 20_000, "\\boxed{" + "0" * 3_000 + gold + "}",
                    f"\\boxed{{{gold} + " + "0 + " * 600 + "0}", f"The answer is {gold} or {wrong}. " * 2_000,
                    "x " * 30_000 + f"\nThe answer is {wrong}.",
                    f"\\boxed{{{gold}}}" + " " * 50_000 + f"or {wrong}", "The answer is (" * 5_000 + gold]
    for verifier in ("number", "math_verify"):
        assert correct_reward(long_attacks, answer=[gold] * len(long_attacks),
                              verifier=[verifier] * len(long_attacks)) == [0.0] * len(long_attacks)
    assert is_correct("Let me think. " * 5_000 + f"\n\\boxed{{{gold}}}", gold, "number")


def test_running_totals_are_paid_only_for_the_boxed_total():
    """The warm-up's worked form (running totals, then the boxed total) on four-term sums: paid as written, and
    without the closing sentence (the last running total is a closing equation, as ``{work}`` among the
    controls); not paid when cut off before the total (the completion cap), when the box holds a partial sum or
    another number, or when a second box follows."""
    from gdpo.tasks.math.worked import worked_solution

    entry = next(e for e in distinct_problems("chain_sum_4", "eval", 40, 0) if abs(int(e["answer"])) >= 2)
    gold, worked = str(entry["answer"]), worked_solution(entry["question"], str(entry["answer"]))
    lines = worked.splitlines()
    partial = lines[0].rsplit("= ", 1)[1]
    assert partial != gold
    unpaid = ["\n".join(lines[:-1])[:-len(gold)],
              "\n".join(lines[:-1]) + f"\nThe final answer is \\boxed{{{partial}}}.",
              "\n".join(lines[:-1]) + f"\nThe final answer is \\boxed{{{int(gold) + 1}}}.",
              worked + f" Or \\boxed{{{int(gold) + 1}}}.", lines[-1].replace(gold, "")]
    answers = [gold] * len(unpaid)
    assert correct_reward(unpaid, answer=answers, verifier=["number"] * len(unpaid)) == [0.0] * len(unpaid)
    paid = [worked, "\n".join(lines[:-1])]
    assert correct_reward(paid, answer=[gold] * 2, verifier=["number"] * 2) == [1.0, 1.0]


# --------------------------------------------------------------------------------------------------
# Controls: a plainly right answer in the forms a small model writes is paid, on every generator
# --------------------------------------------------------------------------------------------------

CONTROLS = [
    "\\boxed{{{a}}}", "The answer is {a}.", "So {work}. \\boxed{{{a}}}", "{work}",
    "So the answer is **{a}**.", "The final answer is $\\boxed{{{a}}}$.",
    "Therefore, the final answer is: {a}", "{work}\n\nSo the answer is {a}.", "\\[\\boxed{{{a}}}\\]",
    "The answer is \\({a}\\).", "**Answer:** {a}", "Final answer: {a}", "\\boxed{{{a}}} (since {work})",
    "\\boxed{{{a}}}\n\nOr, equivalently, {work}.", "{I}\n\n{work}\nThe answer is {a}.",
    "The answer is {a}.\nCheck: {work}", "\\boxed{{{v} = {a}}}", "\\textbf{{Answer: \\boxed{{{a}}}}}",
    "$\\boxed{{{a}}}$.", "The answer is {a}!",
    # forms of the right number: equal, with no operation left
    "\\boxed{{\\text{{{a}}}}}", "\\boxed{{\\mathbf{{{a}}}}}", "\\boxed{{{a}.0}}", "\\boxed{{+{a}}}",
    "\\boxed{{ {a} }}", "\\boxed{{{a} \\text{{ apples}}}}",
]


@pytest.mark.parametrize("name", GENERATOR_NAMES)
@pytest.mark.parametrize("template", CONTROLS)
def test_a_plainly_right_answer_is_paid(template, name):
    assert score(template, name, "number") == 1.0
    assert score(template, name, "math_verify") == 1.0
    # and the same form with a wrong number is not
    wrong = template.replace("{a}", "{w}").replace("{work}", "{e} = {w}" if "=" not in problem(name)["e"]
                                                   else "{v} = {w}")
    assert score(wrong, name, "number") == 0.0


def test_number_formats_of_the_right_answer():
    """On number rows a full stop in the box is a sentence's end (math-verify reads no number in "12.": a
    false negative on math_verify rows); thousands separators and leading zeros read as the number, a decimal
    point or a misplaced comma does not."""
    assert is_correct("\\boxed{12.}", "12", "number") and not is_correct("\\boxed{12.}", "13", "number")
    import reasoning_gym

    dataset, config = HARDER["products_2_digits"]
    data = reasoning_gym.create_dataset(dataset, seed=0, size=50, **config)
    gold = next(str(data[i]["answer"]) for i in range(50) if int(data[i]["answer"]) >= 1000)
    separated = f"{gold[:-3]},{gold[-3:]}"
    for text in (f"\\boxed{{{separated}}}", f"The product is {separated}.", f"\\boxed{{0{gold}}}"):
        assert is_correct(text, gold, "number")
    for text in (f"\\boxed{{{gold[:-3]}.{gold[-3:]}}}", f"\\boxed{{{gold[:-3]},{gold[-3:-1]}}}"):
        assert not is_correct(text, gold, "number")


@pytest.mark.parametrize("text", ["\\boxed{４２}", "\\boxed{٤٢}", "\\boxed{forty-two}", "\\boxed{4.2e1}",
                                  "The answer is forty-two."])
def test_numbers_not_written_in_ascii_digits_are_not_read(text):
    assert not is_correct(text, "42", "number")


# --------------------------------------------------------------------------------------------------
# reasoning_gym verifier: fraction_simplification's scorer on the answer text
# --------------------------------------------------------------------------------------------------


@functools.cache
def fraction_row() -> tuple[str, str, str, str]:
    """(gold "a/b", the unreduced "n/d" of the question, a wrong reduced fraction, verifier_data)."""
    entry = distinct_problems("fraction_simplification", "eval", 1, 0)[0]
    meta = entry["metadata"]
    wrong = f"{meta['simplified_numerator'] + 1}/{meta['simplified_denominator']}"
    unreduced = f"{meta['numerator']}/{meta['denominator']}"
    return entry["answer"], unreduced, wrong, json.dumps(entry, default=str)


def latex(fraction: str) -> str:
    numerator, denominator = fraction.split("/")
    return f"\\frac{{{numerator}}}{{{denominator}}}"


FRACTION_CASES = [
    # controls
    ("control", lambda g, u, w: f"\\boxed{{{g}}}", 1.0),
    ("control", lambda g, u, w: f"\\boxed{{{latex(g)}}}", 1.0),
    ("control", lambda g, u, w: f"$\\boxed{{\\dfrac{{{g.split('/')[0]}}}{{{g.split('/')[1]}}}}}$", 1.0),
    ("control", lambda g, u, w: f"The answer is {g}.", 1.0),
    # the unreduced fraction (math-verify would accept it) and the question restated
    ("restate", lambda g, u, w: f"\\boxed{{{u}}}", 0.0),
    ("restate", lambda g, u, w: f"\\boxed{{{latex(u)}}}", 0.0),
    ("restate", lambda g, u, w: f"Simplify the fraction {u} to its lowest terms. {INSTRUCTION}", 0.0),
    # hedges and trailing text the scorer's prefix match ignored
    ("hedge", lambda g, u, w: f"\\boxed{{{latex(g)}, {latex(w)}}}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{latex(g)} \\text{{ or }} {latex(w)}}}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{latex(g)}{latex(w)}}}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{latex(g)} = {latex(u)}}}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{latex(g)}5}}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{g} \\text{{ or }} {w}}}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{g}, {w}}}", 0.0),
    ("hedge", lambda g, u, w: f"The answer is {g} or {w}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{w}}} or \\boxed{{{g}}}", 0.0),
    ("hedge", lambda g, u, w: f"\\boxed{{{g}}} (maybe {w})", 0.0),
    ("retraction", lambda g, u, w: f"\\boxed{{{g}}} ... wait, no, \\boxed{{{w}}}", 0.0),
    ("empty_nested_box", lambda g, u, w: f"\\boxed{{{w}\\boxed{{{g}}}}}", 0.0),
]


@pytest.mark.parametrize(
    "family, make, expected",
    [pytest.param(*case, id=f"{case[0]}-{index}") for index, case in enumerate(FRACTION_CASES)],
)
def test_fraction_rows_under_the_generators_scorer(family, make, expected):
    gold, unreduced, wrong, data = fraction_row()
    assert is_correct(make(gold, unreduced, wrong), gold, "reasoning_gym", data) == bool(expected)


# --------------------------------------------------------------------------------------------------
# Still paid: single-answer forms the reward reads by its rules, listed so that a change shows
# --------------------------------------------------------------------------------------------------

BY_DESIGN = "the reward reads one final answer by its form's rule; what follows or precedes it is not read"
#: (family, template, verifier, reason[, generator]): without a generator, an attack tried on
#: basic_arithmetic_2_digits (gold -28); with one, an attack of :data:`ATTACKS` paid on that generator.
STILL_PAID = [
    # a later prose retraction does not override a box or an answer statement (the box is the form the prompt
    # asks for; a closing check such as "Check: 3 * 4 = 12" after it must not void it)
    ("retraction", "\\boxed{{{a}}}. Wait, no, it is {w}.", "number", BY_DESIGN),
    ("retraction", "\\boxed{{{a}}} Actually, the answer is {w}.", "number", BY_DESIGN),
    ("retraction", "The answer is {a}.\nWait, {e} = {w}", "number", BY_DESIGN),
    # the last box wins over earlier ones: a correction ("first \\boxed{5}, corrected: \\boxed{6}") reads so
    ("multiple_boxes", "\\boxed{{{w}}}, \\boxed{{{a}}}", "number", BY_DESIGN),
    ("multiple_boxes", "\\boxed{{{w}}}\\boxed{{{a}}}", "number", BY_DESIGN),
    # an equation's value is its right-hand side, whatever its left side
    ("false_equation", "\\boxed{{{w} = {a}}}", "number", BY_DESIGN),
    ("false_equation", "{w} = {a}", "number", BY_DESIGN),
    # math_verify rows (benchmarks, not the generators): math-verify evaluates an expression or relation in
    # the box, so the restated question and some two-value boxes are read as one value
    ("restate", "\\boxed{{{e}}}", "math_verify", "math-verify evaluates the restated expression"),
    ("hedge", "\\boxed{{{w} \\lor {a}}}", "math_verify", "math-verify reads the last operand of \\lor"),
    ("hedge", "\\boxed{{{a} \\approx {w}}}", "math_verify", "math-verify reads the left side of \\approx"),
    ("hedge", "\\boxed{{{a}\\text{{ (or }}{w}\\text{{)}}}}", "math_verify",
     "an alternative in a box is a set of answers on math_verify rows (\\boxed{x = 1 \\text{ or } x = 2})"),
    ("empty_nested_box", "\\boxed{{\\color{{white}}{w} {a}}}", "math_verify",
     "math-verify drops \\color's text"),
    # the factorial attack assumes a! != a: on the gcd problems (gold 2) \boxed{2!} is math-verify's 2! = 2,
    # an equal expression, which math_verify rows pay (the "expression" family); number rows refuse it
    *[("latex_format", "\\boxed{{{a}!}}", "math_verify", "math-verify evaluates 2! = 2, the gcd gold", name)
      for name in ("gcd", "gcd_up_to_50")],
]
STILL_PAID = [(*case, "basic_arithmetic_2_digits") if len(case) == 4 else case for case in STILL_PAID]
#: (template, verifier, generator) of the attacks above, which :func:`test_attack` leaves to test_still_paid.
STILL_PAID_PAIRS = {(template, verifier, name) for _, template, verifier, _, name in STILL_PAID}


@pytest.mark.parametrize(
    "family, template, verifier, reason, name",
    [pytest.param(family, template, verifier, reason, name, id=f"{family}-{verifier}-{index}-{name}",
                  marks=pytest.mark.xfail(strict=True, reason=f"still paid on {name}: {reason}"))
     for index, (family, template, verifier, reason, name) in enumerate(STILL_PAID)],
)
def test_still_paid(family, template, verifier, reason, name):
    assert score(template, name, verifier) == 0.0
