"""Coding rewards (PAPER.md §3): pass rate, length conditioned on passing, and bug-free execution.

All three read one sandbox execution per completion: :func:`execute` runs each distinct
(program, tests) pair of a batch once, in parallel, and keeps the results in a small cache that the
other two reward functions of the same batch hit.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict

from gdpo.tasks.code.sandbox import Job, RunResult, default_workers, run_many

#: An opening fence and its language tag. The possessive quantifiers keep the search linear: with plain ones
#: the tag and the rest of the line share characters, so a fence followed by a long line without a newline
#: backtracks quadratically (a 20k-character tag took 3.7 s); nothing after them can give a match back.
_OPENING_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*+)[^\n`]*\n")
_PYTHON_TAGS = {"python", "py", "python3"}
_CACHE_SIZE = 4096
_cache: OrderedDict[tuple, RunResult] = OrderedDict()
_cache_lock = threading.Lock()


def completion_text(completion) -> str:
    """TRL passes conversational completions as ``[{"role": "assistant", "content": …}]``; a message whose
    content is None or missing (a message of tool calls only), or a None completion, reads as empty text."""
    if isinstance(completion, list):
        return "".join(message.get("content") or "" for message in completion)
    return completion or ""


def extract_code(text: str) -> str:
    """The program in a completion: the last ```python fenced block (an unclosed final block counts, for
    completions cut at the token limit); else the last untagged fenced block; else the whole text. Linear in
    the text's length."""
    blocks, position = [], 0
    while True:
        opening = _OPENING_FENCE.search(text, position)
        if opening is None:
            break
        closing = text.find("```", opening.end())
        end = closing if closing >= 0 else len(text)
        blocks.append((opening.group(1).lower(), text[opening.end() : end]))
        position = end + 3 if closing >= 0 else len(text)
    for wanted in (lambda tag: tag in _PYTHON_TAGS, lambda tag: tag == ""):
        chosen = [body for tag, body in blocks if wanted(tag)]
        if chosen:
            return chosen[-1]
    return text


def make_job(
    code: str, tests: str | dict, time_limit: float, code_prefix: str = "", reference_asserts: bool = False
) -> Job:
    """The sandbox job of a program and a problem's ``tests`` column (JSON, see :mod:`problems`).

    Assertion tests are reported by the program's own process, which a hostile program can forge, so
    they are refused unless ``reference_asserts`` (a reference run of a benchmark's original asserts)."""
    spec = json.loads(tests) if isinstance(tests, str) else tests
    if spec.get("asserts") and not reference_asserts:
        raise ValueError(
            "These tests are assertion snippets, whose pass the tested program could forge; convert them to "
            "value tests (gdpo.tasks.code.problems.asserts_as_value_tests; humaneval_problems() does it) or "
            "pass reference_asserts=True for a reference run that is not a reward."
        )
    program = f"{code_prefix}\n{code}" if code_prefix else code
    return Job(
        program,
        calls=tuple((expression, tuple(accepted)) for expression, accepted in spec.get("calls", ())),
        asserts=tuple(spec.get("asserts", ())),
        stdio=tuple((stdin, stdout) for stdin, stdout in spec.get("stdio", ())),
        time_limit=float(time_limit),
    )


def execute(jobs: list[Job], max_workers: int | None = None) -> list[RunResult]:
    """Results of ``jobs``, each distinct job run once (in parallel) and cached for later calls."""
    with _cache_lock:
        missing = list(dict.fromkeys(job for job in jobs if job not in _cache))
    if missing:
        for job, result in zip(missing, run_many(missing, max_workers or default_workers())):
            with _cache_lock:
                _cache[job] = result
                while len(_cache) > _CACHE_SIZE:
                    _cache.popitem(last=False)
    with _cache_lock:
        results = []
        for job in jobs:
            _cache.move_to_end(job)
            results.append(_cache[job])
    return results


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _per_completion(name: str, value, n: int, fix: str) -> list:
    if value is None:
        raise ValueError(f"The code rewards need the dataset column {name!r}; {fix}")
    value = [value] * n if isinstance(value, (str, bytes, int, float, dict)) else list(value)
    if len(value) != n:
        raise ValueError(f"Column {name!r} has {len(value)} values for {n} completions.")
    return list(value)


def score_completions(completions, tests, time_limit=None, code_prefix=None) -> list[RunResult]:
    """Sandbox results of a batch of completions against their problems' tests (columns of the dataset)."""
    n = len(completions)
    fix = "build the dataset with gdpo.tasks.code.build_dataset."
    tests = _per_completion("tests", tests, n, fix)
    time_limit = _per_completion("time_limit", time_limit, n, fix)
    code_prefix = [""] * n if code_prefix is None else _per_completion("code_prefix", code_prefix, n, fix)
    jobs = [
        make_job(extract_code(completion_text(c)), t, limit, prefix)
        for c, t, limit, prefix in zip(completions, tests, time_limit, code_prefix)
    ]
    return execute(jobs)


def pass_reward(completions, tests=None, time_limit=None, code_prefix=None, **kwargs) -> list[float]:
    """R_pass ∈ [0, 1]: the fraction of the problem's tests the program passes."""
    return [r.fraction_passed for r in score_completions(completions, tests, time_limit, code_prefix)]


def length_conditioned_reward(
    completions,
    tests=None,
    time_limit=None,
    code_prefix=None,
    completion_ids=None,
    length_limit=None,
    **kwargs,
) -> list[float]:
    """R̃_length ∈ {0, 1}: 1 iff the completion has at most ``length_limit`` tokens and passes every test."""
    n = len(completions)
    completion_ids = _per_completion(
        "completion_ids", completion_ids, n, "TRL passes it to reward functions."
    )
    limits = _per_completion("length_limit", length_limit, n, "set the task's length_limit.")
    results = score_completions(completions, tests, time_limit, code_prefix)
    return [
        1.0 if len(ids) <= limit and result.all_passed else 0.0
        for ids, limit, result in zip(completion_ids, limits, results)
    ]


def bug_reward(completions, tests=None, time_limit=None, code_prefix=None, **kwargs) -> list[float]:
    """R_bug ∈ {0, 1}: 1 when the program ran without a compile or runtime error (timeouts, memory and
    output overflows count as runtime errors, as in the APPS harness), so 1 is good."""
    return [0.0 if r.has_bug else 1.0 for r in score_completions(completions, tests, time_limit, code_prefix)]


#: Reward name → function; configs choose 2 objectives (pass, length_conditioned) or 3 (+ bug).
REWARD_FUNCTIONS = {"pass": pass_reward, "length_conditioned": length_conditioned_reward, "bug": bug_reward}
