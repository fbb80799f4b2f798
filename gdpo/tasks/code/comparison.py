"""Comparison of a program's results with the expected ones, done by the trusted caller of the sandbox.

The sandbox only brings back data: the ``repr`` of each returned value (of built-in literal types only)
and each run's captured stdout. Expected values never enter the sandbox, so model code can neither read
them nor claim a pass: a test passes only when the data it produced equals the expected answer here.

Model code can forge that data (the reporting pipe shares its process), so its cost here is bounded by
the expected answers, which are trusted:

- a claim is examined only if its length is at most :func:`claim_bound` of the expected text
  (``CLAIM_FACTOR`` × its length + ``CLAIM_EXTRA`` characters: room for honest floats, whose repr can be
  8 times the expected one's, e.g. ``0.9999999999999999`` for ``1.0``); a longer claim fails unread;
- the claims of one run are examined up to :func:`run_budget` characters in all; the tests after that
  fail unread;
- a claimed value is parsed to a syntax tree (``ast.parse``, never evaluated) and compared with the
  expected value without building a set or dict of claimed elements: each claimed set element or dict key
  is looked up in the expected (trusted) table, so elements that all hash alike cost no more than others.

The cost is then linear in the bounded claims (a few µs per character at worst).

Rules for values (:func:`values_match`): types compare exactly at every depth, set elements and dict keys
included — bool, int and float are distinct — with two deliberate exceptions, both accepted by the
benchmarks' own checks: an int where a float is expected (within the float's tolerance, as ``==`` in
HumanEval's asserts accepts ``2`` for ``2.0``) and a list where a tuple is expected or the reverse (the
APPS harness turns tuples into lists). Floats match within 1e-6 relative or 1e-9 absolute; set elements
and dict keys match exactly (as Python's ``==`` on sets compares them); NaN matches nothing.

Rules for stdout (:func:`output_matches`): equal up to trailing whitespace per line and trailing blank
lines; else token by token, where a token must be spelled exactly as expected unless the expected token
is a decimal float (``2.50``, ``1e-3``): then a plain decimal number within 1e-6 (relative, at least 1e-6
absolute) matches. An expected integer matches only itself: ``1000001``, ``1_000`` or ``1e6`` is not
``1000000``.
"""

from __future__ import annotations

import ast
import functools
import math
import re

#: A claim longer than CLAIM_FACTOR × the expected text + CLAIM_EXTRA characters fails unread.
CLAIM_FACTOR, CLAIM_EXTRA = 8, 64
#: Characters of claims one run may have examined in all: CLAIM_FACTOR × its expected texts + RUN_EXTRA.
RUN_EXTRA = 1024
REL_TOL, ABS_TOL = 1e-6, 1e-9  # values
OUTPUT_TOL = 1e-6  # stdout floats: relative, and absolute below 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
# One way to split any number into its parts (the dot separates the digit runs): matching is linear in the
# token's length. ``[0-9]+\.?[0-9]*`` backtracked over every split of a long run of digits, quadratically.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class _Set(list):
    """A claimed set's elements, kept unhashed (see the module docstring)."""


class _Dict(list):
    """A claimed dict's (key, value) pairs, kept unhashed."""


def claim_bound(expected: tuple[str, ...] | list[str] | str) -> int:
    """Characters a claim may have to be examined against ``expected`` (one text or accepted alternatives)."""
    texts = [expected] if isinstance(expected, str) else expected
    return CLAIM_FACTOR * max(map(len, texts), default=0) + CLAIM_EXTRA


def run_budget(expected: list) -> int:
    """Characters of claims one run may have examined, for its tests' expected texts (or alternatives)."""
    texts = [[e] if isinstance(e, str) else e for e in expected]
    return CLAIM_FACTOR * sum(max(map(len, t), default=0) for t in texts) + RUN_EXTRA


def _claim(node):
    """A claimed value from its syntax tree: scalars as Python values, lists and tuples as such, sets as
    :class:`_Set` and dicts as :class:`_Dict` (nothing hashed). Raises ValueError for a non-literal."""
    if isinstance(node, ast.List):
        return [_claim(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_claim(item) for item in node.elts)
    if isinstance(node, ast.Set):
        return _Set(_claim(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        if None in node.keys:  # {**other}
            raise ValueError("not a literal")
        return _Dict((_claim(k), _claim(v)) for k, v in zip(node.keys, node.values))
    if isinstance(node, ast.Call):  # repr of an empty set
        if isinstance(node.func, ast.Name) and node.func.id == "set" and not node.args and not node.keywords:
            return _Set()
        raise ValueError("not a literal")
    if isinstance(node, (ast.Constant, ast.UnaryOp, ast.BinOp)):
        return ast.literal_eval(node)  # numbers (negative, complex), strings, bytes, None, bools
    raise ValueError("not a literal")


def _parse_claim(text: str):
    return _claim(ast.parse(text.strip(), mode="eval").body)


@functools.lru_cache(maxsize=8192)
def _expected(text: str):
    """An expected value (trusted text) as a Python value."""
    return ast.literal_eval(text)


def _is_number(value) -> bool:
    return type(value) in (int, float)


def values_match(claimed, expected) -> bool:
    """Whether a claimed value (from :func:`_claim`, or a plain Python value) matches an expected value
    under the module's rules."""
    kind = type(expected)
    if kind is float:
        if not _is_number(claimed):
            return False
        try:
            return math.isclose(claimed, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL)
        except OverflowError:  # an int too large for a float
            return False
    if kind in (list, tuple):
        return (
            type(claimed) in (list, tuple)
            and len(claimed) == len(expected)
            and all(values_match(c, e) for c, e in zip(claimed, expected))
        )
    if kind in (set, frozenset):
        if not isinstance(claimed, _Set) and type(claimed) not in (set, frozenset):
            return False
        return _same_members([(element, None) for element in claimed], expected, None)
    if kind is dict:
        if type(claimed) is dict:
            claimed = _Dict(claimed.items())
        return isinstance(claimed, _Dict) and _same_members(claimed, expected, expected)
    return type(claimed) is kind and claimed == expected


def _same_members(pairs, expected, values) -> bool:
    """Claimed (element, value) pairs against the expected set or dict: as many, each element found in the
    expected table by its hash (a lookup in a trusted table, never an insertion into a claimed one) and of
    the exact type, no element twice, and (for dicts) each value matching."""
    if len(pairs) != len(expected):
        return False
    table = {element: element for element in expected}
    seen = set()  # positions of expected elements, not claimed values
    for element, value in pairs:
        try:
            found = table.get(element, _MISSING)
        except TypeError:  # an unhashable claim (a list or claimed set inside)
            return False
        if found is _MISSING or id(found) in seen or not _exactly(element, found):
            return False
        seen.add(id(found))
        if values is not None and not values_match(value, values[found]):
            return False
    return True


_MISSING = object()


def _exactly(claimed, expected) -> bool:
    """Equal and of the same types throughout (set elements and dict keys: no tolerance, no bool/int mix);
    an int stands for an equal float, as elsewhere."""
    if type(expected) is tuple:
        return (
            type(claimed) is tuple
            and len(claimed) == len(expected)
            and all(_exactly(c, e) for c, e in zip(claimed, expected))
        )
    if type(expected) is float and type(claimed) is int:
        return claimed == expected
    return type(claimed) is type(expected) and claimed == expected


def _value_passes(claim, accepted) -> bool:
    if claim in accepted:
        return True
    try:
        value = _parse_claim(claim)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    for text in accepted:
        try:
            if values_match(value, _expected(text)):
                return True
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return False


def repr_matches(actual_repr: str, accepted_reprs) -> bool:
    """Whether a returned value's repr matches one of the accepted expected values' reprs (a claim longer
    than :func:`claim_bound` of them fails unread)."""
    accepted = tuple(accepted_reprs)
    return len(actual_repr) <= claim_bound(accepted) and _value_passes(actual_repr, accepted)


def passed_values(claims: list, accepted: list) -> int:
    """Value tests passed: ``claims[i]`` (a repr, or None when the test brought back no value) against the
    alternatives ``accepted[i]``, within the run's budget (:func:`run_budget`)."""
    budget, passed = run_budget(accepted), 0
    for claim, alternatives in zip(claims, accepted):
        if not isinstance(claim, str):
            continue
        alternatives = tuple(alternatives)
        if len(claim) > claim_bound(alternatives):
            continue  # fails unread
        budget -= len(claim)
        if budget < 0:
            break  # this test and the rest fail unread
        passed += _value_passes(claim, alternatives)
    return passed


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def _tokens_match(got: str, want: str) -> bool:
    if got == want:
        return True
    if _INTEGER.fullmatch(want) or not _DECIMAL.fullmatch(want) or not _DECIMAL.fullmatch(got):
        return False  # integers and words compare exactly; a float only with a float-looking number
    try:
        g, w = float(got), float(want)
    except (ValueError, OverflowError):
        return False
    # written so that a non-finite value (which compares false with everything) fails rather than passes
    return abs(g - w) <= OUTPUT_TOL * max(1.0, abs(w))


def output_matches(actual: str, expected: str) -> bool:
    """stdout against the expected text under the module's rules (a claim longer than
    :func:`claim_bound` of the expected text fails unread)."""
    if len(actual) > claim_bound(expected):
        return False
    if _normalise(actual) == _normalise(expected):
        return True
    got, want = actual.split(), expected.split()
    return len(got) == len(want) and all(_tokens_match(g, w) for g, w in zip(got, want))


def passed_outputs(outputs: list, expected: list[str]) -> int:
    """stdin/stdout tests passed: ``outputs[i]`` (None for a run that did not end cleanly) against
    ``expected[i]``, within the run's budget (:func:`run_budget`)."""
    budget, passed = run_budget(expected), 0
    for output, want in zip(outputs, expected):
        if not isinstance(output, str):
            continue
        if len(output) > claim_bound(want):
            continue
        budget -= len(output)
        if budget < 0:
            break
        passed += output_matches(output, want)
    return passed
