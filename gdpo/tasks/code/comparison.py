"""Comparison of a program's results with the expected ones, done by the trusted caller of the sandbox.

The sandbox only brings back data: the ``repr`` of each returned value (of built-in literal types only)
and each run's captured stdout. Expected values never enter the sandbox, so model code can neither read
them nor claim a pass: a test passes only when the data it produced equals the expected answer here.
Both sides are parsed as Python literals (``ast.literal_eval``), never evaluated.
"""

import ast
import math


def _nesting_depth(text):
    depth = best = 0
    for char in text:
        if char in "([{":
            depth += 1
            best = max(best, depth)
        elif char in ")]}":
            depth -= 1
    return best


def _literal(text):
    if _nesting_depth(text) > 50:
        raise ValueError("too deeply nested")
    return ast.literal_eval(text)


def values_match(actual, expected):
    """Equal Python literals: floats within 1e-6 (relative) or 1e-9 (absolute), lists ≡ tuples, and
    no bool/int mix."""
    if isinstance(expected, float) and not isinstance(expected, bool):
        return (
            isinstance(actual, (int, float))
            and not isinstance(actual, bool)
            and math.isclose(actual, expected, rel_tol=1e-6, abs_tol=1e-9)
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(expected)
            and all(values_match(a, e) for a, e in zip(actual, expected))
        )
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and actual.keys() == expected.keys()
            and all(values_match(actual[k], v) for k, v in expected.items())
        )
    if isinstance(expected, bool) != isinstance(actual, bool):
        return False
    if type(actual) is not type(expected) and not (isinstance(actual, int) and isinstance(expected, int)):
        return False
    return actual == expected


def repr_matches(actual_repr, accepted_reprs):
    """Whether a returned value's repr matches one of the accepted expected values' reprs."""
    if actual_repr in accepted_reprs:
        return True
    try:
        actual = _literal(actual_repr)
    except Exception:
        return False
    for accepted in accepted_reprs:
        try:
            if values_match(actual, _literal(accepted)):
                return True
        except Exception:
            continue
    return False


def _float_token(token):
    try:
        return float(token)
    except ValueError:
        return None


def output_matches(actual, expected):
    """stdout equals the expected text up to trailing whitespace per line and trailing blank lines;
    else token by token, numbers within 1e-6 (the usual judge tolerances)."""
    normalise = lambda text: "\n".join(line.rstrip() for line in text.strip().splitlines())
    if normalise(actual) == normalise(expected):
        return True
    got, want = actual.split(), expected.split()
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g == w:
            continue
        gf, wf = _float_token(g), _float_token(w)
        # written so that NaN (which compares false with everything) fails rather than passes
        if gf is None or wf is None or not abs(gf - wf) <= 1e-6 * max(1.0, abs(wf)):
            return False
    return True


