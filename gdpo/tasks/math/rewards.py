"""Math rewards (PAPER.md §3, DLER setup): correctness, length, and length conditioned on correctness.

All three follow TRL's reward contract ``fn(completions, **columns) -> list[float]`` and return 0/1:

- ``correct``: the completion states a final answer in a final-answer form (:func:`final_answer`: the last
  ``\\boxed{…}``, else an answer statement such as "the answer is 12", else a closing equation "7 + 3 = 10")
  and that answer equals the row's ``answer``. A number or expression elsewhere in the text is never
  graded: with a last-expression fallback, a policy that restates the question ("Calculate 10 - 5." →
  "10 - 5") was paid as correct, since math-verify evaluates the restated expression. An answer offered with
  an alternative ("42 or 43", "\\boxed{42} (maybe 43)") or a box inside another box
  (``\\boxed{4\\boxed{2}}``) states no single answer and is wrong, and so is an answer outside a box that
  math-verify reads only in part (its last expression: ``x = 16  # 6``, ``(1, 2)``; :func:`_read_in_part`;
  tests/test_math_reward_attacks.py lists the attacks tried). Which checker applies is the row's
  ``verifier`` column: ``"math_verify"`` (symbolic equivalence: ``1/2``, ``0.5`` and ``\\frac{1}{2}``
  agree), ``"number"`` (the answer must be a plain number, with no operation left to do, then compared as by
  math-verify: the arithmetic generators, whose questions are expressions) or ``"reasoning_gym"`` (the
  generator's own ``score_answer`` on the answer, for answers that are not plain math, with the generator's
  entry in ``verifier_data``);
- ``length``: the completion has at most ``length_limit`` tokens (counted from ``completion_ids``);
- ``length_conditioned``: ``length`` paid only when ``correct`` is 1 (Eq. 8 with threshold 1).

math-verify guards parsing and comparison with ``signal.alarm`` timeouts, which only work in the main
thread. In the main thread (TRL calls rewards there) every parse and comparison is limited to
:data:`TIMEOUT_SECONDS`; in any other thread the checks run without a time limit instead of raising
(math-verify's own behaviour would be an exception), which is safe for the short answers compared here.

Bounded on any text: finding the final answer is linear in the completion's length; math-verify sees only
answers of at most :data:`MAX_ANSWER_CHARS` characters, at most :data:`MAX_STATEMENT_TRIES` answer statements
are parsed per completion, and a stated number too large to compute (:data:`MAX_NUMBER_DIGITS`, e.g.
``9^9^9^9``) is wrong without a comparison, which would otherwise spend the whole timeout. A message whose
content is None or missing reads as an empty completion (no answer: 0).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import threading

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

#: Limit per math-verify parse or comparison, in seconds (main thread only; see the module docstring).
TIMEOUT_SECONDS = 5
#: The longest final answer read, in characters (a box's content, a statement's answer up to its hedge, a
#: closing equation's right-hand side or number): a longer one states no answer. Gold answers and realistic
#: final answers are tens of characters; the cap bounds what math-verify parses (its time grows with length).
MAX_ANSWER_CHARS = 2000
#: Answer statements ("the answer is …") whose text starts like an expression are parsed by math-verify, the
#: last first, until one reads; at most this many per completion (a hostile text holds thousands).
MAX_STATEMENT_TRIES = 8
#: A stated number with more digits than this (a power such as ``9^9^9^9``, a factorial such as ``10^6!``)
#: equals no gold answer: it is judged wrong without a comparison, whose evaluation would not end.
MAX_NUMBER_DIGITS = 10_000
#: Checkers a dataset row can name in its ``verifier`` column.
VERIFIERS = ("math_verify", "number", "reasoning_gym")

# math-verify logs a warning the first time a timeout is disabled; off the main thread that is expected.
logging.getLogger("math_verify").setLevel(logging.ERROR)

#: Gold answers are bare expressions ("1/2", "\\frac{\\sqrt3}{2}", "(1,2)"): boxing them makes the
#: LaTeX extractor take the whole string as one answer.
_GOLD_EXTRACTION = (LatexExtractionConfig(), ExprExtractionConfig())
#: Completions: a \boxed{} answer wins over any other expression (boxed_match_priority 0 is the highest).
_ANSWER_EXTRACTION = (LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig())


def _timeout() -> int | None:
    """math-verify's timeout for the calling thread: signals work only in the main thread."""
    return TIMEOUT_SECONDS if threading.current_thread() is threading.main_thread() else None


def completion_text(completion) -> str:
    """Text of a completion: TRL passes conversational ones as ``[{"role": "assistant", "content": …}]``."""
    if isinstance(completion, list):
        return "".join(message.get("content", "") or "" for message in completion)
    return completion or ""


@functools.lru_cache(maxsize=4096)
def parse_gold(answer: str) -> tuple:
    """The gold answer parsed by math-verify (sympy objects, then the matched string); empty if unparsable."""
    text = answer.strip()
    boxed = text if "\\boxed" in text else f"\\boxed{{{text}}}"
    return tuple(parse(boxed, extraction_config=_GOLD_EXTRACTION, parsing_timeout=_timeout()))


def parse_final_answer(text: str) -> list:
    """The completion's final answer parsed by math-verify: the last boxed one, else the last expression.

    Only the last ``\\boxed{}`` is parsed: math-verify would read several boxes as one set of answers.

    Returns:
        math-verify's list (sympy object, then the matched string), empty when no answer is found.
    """
    boxed = last_boxed(text)
    if boxed is not None:
        text = f"\\boxed{{{boxed}}}"
    return parse(text, extraction_config=_ANSWER_EXTRACTION, parsing_timeout=_timeout())


def last_boxed(text: str, non_empty: bool = False) -> str | None:
    """Content of the last ``\\boxed{…}`` (nested braces allowed; with ``non_empty``, the last one with
    content), or None.

    A box's content starts at the first ``{`` after ``\\boxed``. Linear in the text's length: scanning
    leftwards, each box looks for its brace only up to where the box after it found one (beyond that it is
    the same brace, with the same empty content).
    """
    box = _last_box(text, non_empty)
    return box[0] if box is not None else None


def _last_box(text: str, non_empty: bool = False) -> tuple[str, int, int] | None:
    """:func:`last_boxed` with where the box is: (content, start of ``\\boxed``, end of its closing brace)."""
    end, brace_limit = len(text), len(text)
    while (start := text.rfind("\\boxed", 0, end)) >= 0:
        brace = text.find("{", start, brace_limit)
        if brace < 0 and brace_limit < len(text):
            end = start  # the brace of the box after this one: its content was empty
            continue
        content, close = _box_content(text, brace) if brace >= 0 else (None, -1)
        if content is None:
            return None
        if content or not non_empty:
            return content, start, close + 1
        end, brace_limit = start, brace
    return None


#: A brace: the only characters that decide where a box's content ends.
_BRACE = re.compile(r"[{}]")
#: A box's opening brace (with the box before it).
_BOX_BRACE = re.compile(r"\\boxed\s*\{")


def _box_content(text: str, brace: int) -> tuple[str | None, int]:
    """Content of the box whose ``{`` is at ``brace`` and where its ``}`` is, or (None, -1) when that brace is
    unclosed."""
    depth = 0
    for match in _BRACE.finditer(text, brace):
        depth += 1 if match.group() == "{" else -1
        if depth == 0:
            return text[brace + 1 : match.start()].strip(), match.start()
    return None, -1


#: "answer is", "answer:", "result =", "answer, which is" (any case, markdown emphasis allowed), then the
#: answer.
_ANSWER_STATEMENT = re.compile(r"\b(?:answer|result)\b[*_\s]*(?:,\s*which\s+)?(?:is\b|:|=)[*_\s:]*",
                               re.IGNORECASE)
#: Where a stated answer's hedge or reason begins ("3, not 5", "3 but maybe 5", "4 (I think 5)", "12 because
#: …"): the statement's answer is what comes before it, so a second guess is never graded.
#: A hedge's whitespace starts where a run of whitespace starts (``(?<!\s)``): the leftmost match is the same,
#: and a long run is scanned once instead of once from each of its characters (quadratic).
_HEDGE = re.compile(r",?(?<!\s)\s+(?:or|but|not|since|because|although|though|maybe|perhaps|unless)\b"
                    r"|(?<!\s)\s+\((?=\s*(?:I\b|[A-Za-z]{2,}))", re.IGNORECASE)
#: A last line closing with "is <plain number>": "The GCD of 12 and 11 is 1.", "So the total is **12**." (a
#: question, "What is 10 - 5?", or an expression after "is" is none: only a number is an answer stated so).
#: Possessive runs of whitespace and emphasis (nothing after them could take a character back) keep it
#: linear: ``\s+[*_$\s]*`` and ``[*_$\s]*[.!]?\s*`` backtracked quadratically over a long run of spaces.
_CLOSING_STATEMENT = re.compile(r"\bis\s[*_$\s]*+(?P<number>[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)"
                                r"[*_$\s]*+[.!]?+\s*+$")
#: A word (two letters or more, not a LaTeX command): a right-hand side holding one is prose, not a result.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
#: Where a stated answer goes on: a word or a sentence's end (a number after it is a second one).
_ANSWER_GOES_ON = re.compile(rf"{_WORD.pattern}|[.!?;]\s")
#: What an answer right after the statement starts with: a sign, a digit, ``$``, ``\(``/``\[``, ``(`` or a
#: LaTeX command such as ``\frac``.
_EXPRESSION_START = re.compile(r"[-+−]?\s*(?:\d|\.\d|\$|\\[(\[]|\\[A-Za-z]+|\()")
#: The plain number a ``number`` row accepts, as the whole answer: an optional sign, digits (thousands
#: separated by commas allowed), an optional decimal part.
_NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
#: A plain-number answer: optionally an equation whose left side is arithmetic or one variable ("3 - 2 = 1",
#: "x = 13", "r = 6": simple_equations names its unknown with any letter), then
#: the number, then at most a closing remark without digits ("12.", "12, the GCD"): ``19, 19``, ``4 x 1``,
#: ``9 minus 0``, ``10 - 5`` and ``5.5.5`` state no plain number. No ``!`` after the number: an exclamation
#: mark ending a sentence is gone already (:func:`_answer_text`), and in a box ``5!`` is a factorial.
_PLAIN_ANSWER = re.compile(rf"(?:[\d\s.,+\-*/×÷^()xX]*=\s*|[A-Za-z]\s*=\s*)?(?P<number>{_NUMBER})"
                           r"(?:\s*\.?\s*|\s*[,;:(]\D*|\s+[A-Za-z]\D*)")
#: LaTeX wrappers a number may come in: ``\(5\)``, ``\text{5}``, ``\mathbf{5}``, thin spaces.
_LATEX_WRAPPERS = re.compile(r"\\[()\[\]]|\\(?:text|mathbf|mathrm|textbf)\{([^{}]*)\}|\\[,;!]")
#: A word offering a second answer: "3 or 5", "3, maybe 5", "3 (perhaps 5)", "3 (I think 5)".
_ALTERNATIVE_WORD = r"(?:or|maybe|perhaps|possibly|probably|I\s+think)\b"
_ALTERNATIVE = re.compile(rf"\b{_ALTERNATIVE_WORD}", re.IGNORECASE)
#: An alternative right after a final answer (across punctuation, "but" and at most one line break) with a
#: digit after it on its line: "\\boxed{3} or 5", "the answer is 3 (or 5)", "the answer is 3 but maybe 5",
#: "the answer is 3.\nOr 5.". Matched at the answer's end; possessive runs keep it linear.
_ALTERNATIVE_AFTER = re.compile(rf"[ \t.,;:!*_$()]*+\n?[ \t(]*+(?:but\s++)?{_ALTERNATIVE_WORD}[^\n\d]*+\d",
                                re.IGNORECASE)
#: An alternative right before a box: "3 or \\boxed{5}", "\\boxed{3} or \\boxed{5}" (searched in the few
#: characters before the box).
_ALTERNATIVE_BEFORE = re.compile(rf"\b{_ALTERNATIVE_WORD}[\s$*_(:]*$", re.IGNORECASE)
_DIGIT = re.compile(r"\d")
#: A number as :func:`_read_in_part` counts them: digits, thousands separated by commas or spaces allowed,
#: and a decimal part ("1,234", "10 000" and "3.5" are one number each, as math-verify reads them).
_NUMBER_RUN = re.compile(r"\d+(?:[,\s]\d{3}(?!\d))*(?:\.\d+)?")
#: A LaTeX fraction of two numbers, which reasoning-gym checkers read as ``a/b``.
_LATEX_FRACTION = re.compile(r"\\d?frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}")


@functools.lru_cache(maxsize=8192)
def final_answer(text: str) -> str | None:
    """The completion's final answer as written, in a final-answer form, or None (cached: the correctness
    reward, the conditioned length reward and the diagnostics each read every completion).

    - the last non-empty ``\\boxed{…}`` (returned with its box), the form the prompt asks for (an empty box,
      such as the instruction echoed, states nothing); none if the box lies inside another box
      (``\\boxed{4\\boxed{2}}``) or an alternative comes right before or after it ("\\boxed{42} or 43",
      "\\boxed{43} or \\boxed{42}", :data:`_ALTERNATIVE_AFTER`, :data:`_ALTERNATIVE_BEFORE`);
    - else the last answer statement ("the answer is 12", "Final answer: 12", "**Answer:** $\\frac{1}{2}$",
      "the final answer, which is 8") followed on its line by an expression math-verify reads (returned:
      the rest of that line up to a hedge or a reason, :data:`_HEDGE`); none if that answer goes on after a
      word or a sentence's end to another number ("6 rather than 5", "6. Note: 10 - 5 = 5") or the hedge
      offers an alternative ("3 or 5", "3 (maybe 5)");
    - else a closing equation: the response's last line ends with ``= <expression>`` without words
      ("7 + 3 = 10", "10 - 5 = **5**", not "= 5, but then I got lost"; returned: the right-hand side);
    - else a closing statement: the last line ends with "is <plain number>" ("The GCD of 12 and 11 is 1.";
      returned: the number). It states an answer as plainly as "12 = 1" does, so the two are judged alike.
      Neither closing form is read from a last line offering an alternative ("10 - 5 = 6 or 10 - 5 = 5").

    An answer longer than :data:`MAX_ANSWER_CHARS` is none (a box that long ends the search: the completion
    states no answer), and at most :data:`MAX_STATEMENT_TRIES` answer statements are parsed. Linear in the
    text's length.

    A number in prose ("There are 3 apples"), an expression alone ("10 - 5", "42") or reasoning cut before
    its conclusion is none.
    """
    box = _last_box(text, non_empty=True)
    if box is not None:
        boxed, start, end = box
        if len(boxed) > MAX_ANSWER_CHARS or _inside_a_box(text, start) or _box_hedged(text, start, end):
            return None
        return f"\\boxed{{{boxed}}}"
    tries = 0
    for statement in reversed(list(_ANSWER_STATEMENT.finditer(text))):
        # The rest of the text starts like an expression if the answer (a prefix of it) does: a cheap filter.
        if not _EXPRESSION_START.match(text, statement.end()):
            continue
        tries += 1
        if tries > MAX_STATEMENT_TRIES:
            break
        line_end = text.find("\n", statement.end())
        answer = _HEDGE.split(text[statement.end() : line_end if line_end >= 0 else len(text)], maxsplit=1)[0]
        if len(answer) <= MAX_ANSWER_CHARS and _is_expression(answer):
            # The last statement offering a second answer ("3 or 5", "3 (maybe 5)") states no single one:
            # paying its first answer paid the hedge "The answer is 42 or 43" as 42. Nor does one going on
            # after a word or a sentence's end to another number ("6 rather than 5", "6. (7 + 3 = 5)"):
            # math-verify read the last.
            more = _ANSWER_GOES_ON.search(answer)
            if (more and _DIGIT.search(answer, more.end())) or _ALTERNATIVE_AFTER.match(
                    text, statement.end() + len(answer)):
                return None
            return answer
    lines = text.strip().splitlines()
    if not lines or _offers_alternative(lines[-1]):  # "10 - 5 = 6 or 10 - 5 = 5", "it is 6 or it is 5"
        return None
    right = _closing_equation_side(lines[-1])
    if right is not None:
        right = right.strip("*_ ")
        if len(right) <= MAX_ANSWER_CHARS and not _WORD.search(right) and _is_expression(right):
            return right
    statement = _CLOSING_STATEMENT.search(lines[-1])
    if statement is None or len(statement.group("number")) > MAX_ANSWER_CHARS:
        return None
    return statement.group("number").replace("−", "-")


def _offers_alternative(text: str) -> bool:
    """Whether ``text`` holds a word offering a second answer (:data:`_ALTERNATIVE`) with a digit after it."""
    match = _ALTERNATIVE.search(text)
    return match is not None and _DIGIT.search(text, match.end()) is not None


def _box_hedged(text: str, start: int, end: int) -> bool:
    """Whether the box ``text[start:end]`` comes with an alternative: "\\boxed{42} or 43", "\\boxed{42} (maybe
    43)", "\\boxed{43} or \\boxed{42}" (the last box alone was paid as the answer)."""
    line_start = text.rfind("\n", 0, start) + 1
    return bool(_ALTERNATIVE_AFTER.match(text, end)
                or _ALTERNATIVE_BEFORE.search(text, max(line_start, start - 40), start))


def _inside_a_box(text: str, start: int) -> bool:
    """Whether the box starting at ``start`` lies inside another box, one whose brace is still open there
    (``\\boxed{4\\boxed{2}}``, ``\\boxed{\\boxed{42}}``, ``\\boxed{4 \\text{\\boxed{2}}}``): a part of a
    larger answer, whose inner box alone was paid as the answer (2). Other braces around a box
    (``\\textbf{…}``) are fine. Linear: one pass over the braces before the box."""
    box_braces = {match.end() - 1 for match in _BOX_BRACE.finditer(text, 0, start)}
    if not box_braces:
        return False
    open_braces = []
    for match in _BRACE.finditer(text, 0, start):
        if match.group() == "{":
            open_braces.append(match.start())
        elif open_braces:
            open_braces.pop()
    return any(brace in box_braces for brace in open_braces)


def _closing_equation_side(line: str) -> str | None:
    """The right-hand side ``line`` ends with, or None: what ``=\\s*([^=\\n]+?)[\\s.!]*$`` captures, in
    linear time (that pattern's lazy group retries its trailing class from every character: quadratic).

    The side follows the line's last ``=`` and its whitespace, without the trailing whitespace, ``.`` and
    ``!`` (at least one character: after ``=`` and only whitespace, the last whitespace character).
    """
    equals = line.rfind("=")
    rest = line[equals + 1 :] if equals >= 0 else ""
    if not rest:
        return None
    side = rest.lstrip()
    if not side:
        return rest[-1]
    end = len(side)
    while end > 1 and (side[end - 1].isspace() or side[end - 1] in ".!"):
        end -= 1
    return side[:end]


def _is_expression(answer: str) -> bool:
    """Whether ``answer`` starts with an expression (:data:`_EXPRESSION_START`) that math-verify reads."""
    return bool(_EXPRESSION_START.match(answer)) and bool(parse_final_answer(answer))


def _answer_text(answer: str) -> str:
    """A final answer's text without its box, math delimiters, LaTeX wrappers, emphasis and closing full stop
    (or exclamation mark, outside a box: ``\\boxed{5!}`` is a factorial), with a Unicode minus as ``-`` and no
    leading ``+``: what a string checker reads."""
    boxed = last_boxed(answer, non_empty=True)
    text = boxed if boxed is not None else answer
    text = _LATEX_WRAPPERS.sub(lambda match: match.group(1) or "", text).replace("−", "-")
    return text.replace("**", "").strip().lstrip("$_ +").rstrip("$_. " if boxed is not None else "$_.! ")


def plain_number(answer: str) -> str | None:
    """The plain number a final answer states (:data:`_PLAIN_ANSWER`: the whole answer, or an arithmetic
    equation's value, with at most a remark without digits after it), or None if it leaves an operation,
    states more than one number or offers an alternative ("42 or forty-three", :data:`_ALTERNATIVE`)."""
    text = _answer_text(answer)
    match = _PLAIN_ANSWER.fullmatch(text)
    if match is None or _ALTERNATIVE.search(text, match.end("number")):
        return None
    return match.group("number")


def _reasoning_gym_score(answer: str, verifier_data: str) -> float:
    """The generator's ``score_answer`` on the final answer's text (:func:`_answer_text`, LaTeX fractions of
    numbers written ``a/b``); 0 for a text offering an alternative (:data:`_ALTERNATIVE`).

    fraction_simplification's scorer reads a ``\\frac{a}{b}`` at the start of the text and ignores the rest:
    it paid ``\\frac{1}{4}, \\frac{5}{20}`` and ``\\frac{1}{4} \\text{ or } \\frac{5}{20}`` as 1/4. Written
    ``a/b``, the whole text after the slash must be the denominator."""
    import reasoning_gym

    if not verifier_data:
        raise ValueError("Rows with verifier 'reasoning_gym' need the generator entry in verifier_data.")
    entry = json.loads(verifier_data)
    score_answer = reasoning_gym.get_score_answer_fn(entry["metadata"]["source_dataset"])
    text = _LATEX_FRACTION.sub(r"\1/\2", _answer_text(answer))
    if _ALTERNATIVE.search(text):
        return 0.0
    try:
        return float(score_answer(text, entry) >= 1.0)
    except (ValueError, TypeError, ArithmeticError, RecursionError):  # the answer's text, not the entry, failed
        return 0.0


@functools.lru_cache(maxsize=8192)
def is_correct(text: str, answer: str, verifier: str = "math_verify", verifier_data: str = "") -> bool:
    """Whether the completion ``text`` states the gold ``answer`` (cached: rewards ask twice per completion).

    Args:
        text: completion text.
        answer: gold answer (a bare expression such as ``"-4"`` or ``"\\frac{1}{2}"``).
        verifier: ``"math_verify"``, ``"number"`` or ``"reasoning_gym"`` (see the module docstring).
        verifier_data: JSON of the reasoning-gym entry for ``"reasoning_gym"``; ignored otherwise.
    """
    if verifier not in VERIFIERS:
        raise ValueError(f"Unknown verifier {verifier!r}; use one of {', '.join(VERIFIERS)}.")
    stated = final_answer(text)
    if stated is None:
        return False
    if verifier == "reasoning_gym":
        return _reasoning_gym_score(stated, verifier_data) == 1.0
    if verifier == "number":
        stated = plain_number(stated)
        if stated is None:
            return False
    gold = parse_gold(str(answer))
    prediction = parse_final_answer(stated)
    if not gold or not prediction or any(_too_large(value) for value in prediction) or _read_in_part(
            stated, prediction):
        return False
    return bool(verify(list(gold), prediction, timeout_seconds=_timeout()))


def _read_in_part(stated: str, prediction: list) -> bool:
    """Whether math-verify read only the last part of an unboxed answer: fewer numbers than the answer
    holds (an equation's value is its right-hand side, so both are counted after their last ``=``).

    Outside a box math-verify reads the last expression it finds, so a closing equation or an answer
    statement that goes on to another number was paid as that number: ``x = 16  # 6``, ``print(r + 10 = 16)
    # 6`` and ``(1, 2)`` were read as 6, 6 and 2, ``[11, 10]`` as 10, ``x^2 + 2x + 1`` as 1. A box's
    content is read as a whole: its value is math-verify's reading of it."""
    if stated.startswith("\\boxed") or not isinstance(prediction[-1], str):
        return False
    answer, read = (text.replace("{,}", ",").rsplit("=", 1)[-1] for text in (stated, prediction[-1]))
    return len(_NUMBER_RUN.findall(read)) < len(_NUMBER_RUN.findall(answer))


def _too_large(value) -> bool:
    """Whether a parsed answer holds a number too large to compute (:data:`MAX_NUMBER_DIGITS`), judged from
    the inside out without computing it: a power of numbers whose value has more digits (``9^9^9^9``,
    ``10**10**10``), a power of anything else with an exponent above that (``x^{10^{10}}``), a factorial with
    more digits (``(10^6)!``), or another function of a number above that (``\\binom{10^{10}}{10^5}``).
    Magnitudes are SymPy floats, whose exponents have no limit (a Python float overflows at 1e308)."""
    import sympy

    if not isinstance(value, sympy.Basic):
        return False

    def magnitude(number):
        return abs(number.evalf(15))

    def digits(number):
        size = magnitude(number)
        return sympy.log(size, 10).evalf(15) if size > 1 else 0

    try:
        for node in sympy.postorder_traversal(value):  # inner nodes first: an outer one is reached only
            if isinstance(node, sympy.Pow) and node.exp.is_number:  # if they are small
                exponent = magnitude(node.exp)
                if not node.base.is_number:
                    if exponent > MAX_NUMBER_DIGITS:
                        return True
                elif exponent * digits(node.base) > MAX_NUMBER_DIGITS:
                    return True
            elif isinstance(node, sympy.factorial) and node.args[0].is_number:
                argument = magnitude(node.args[0])
                if argument > 1 and sympy.loggamma(argument + 1).evalf(15) / math.log(10) > MAX_NUMBER_DIGITS:
                    return True
            elif isinstance(node, sympy.Function) and any(
                    argument.is_number and magnitude(argument) > MAX_NUMBER_DIGITS for argument in node.args):
                return True
    except (TypeError, ValueError, ArithmeticError, RecursionError):  # no size to judge: compare as usual
        return False
    return False


def _column(values, count: int, default):
    """A per-completion column, or ``default`` repeated when the dataset has no such column."""
    return list(values) if values is not None else [default] * count


def correct_reward(completions, answer, verifier=None, verifier_data=None, **kwargs) -> list[float]:
    """1.0 if the completion's final answer equals ``answer`` under the row's verifier, else 0.0."""
    count = len(completions)
    verifier = _column(verifier, count, "math_verify")
    verifier_data = _column(verifier_data, count, "")
    return [
        float(is_correct(completion_text(c), str(gold), v, d or ""))
        for c, gold, v, d in zip(completions, answer, verifier, verifier_data)
    ]


def length_reward(completions, completion_ids, length_limit, **kwargs) -> list[float]:
    """1.0 if the completion has at most ``length_limit`` tokens, else 0.0."""
    return [1.0 if len(ids) <= int(limit) else 0.0 for ids, limit in zip(completion_ids, length_limit)]


def length_conditioned_reward(completions, completion_ids, length_limit, answer, **kwargs) -> list[float]:
    """The length reward paid only for correct completions (Eq. 8: r_length if r_correct >= 1 else 0)."""
    correct = correct_reward(completions, answer, **kwargs)
    length = length_reward(completions, completion_ids, length_limit)
    return [lengthy if right >= 1.0 else 0.0 for right, lengthy in zip(correct, length)]


#: Reward name → function, as configs name them in ``reward_weights``.
REWARD_FUNCTIONS = {
    "correct": correct_reward,
    "length": length_reward,
    "length_conditioned": length_conditioned_reward,
}
