"""What the code policy actually does, per completion: is there a program to run at all?

- ``code_block``: the completion holds a fenced code block (```` ``` ````), the answer format the prompt asks for;
- ``program_parses``: the program the reward runs (:func:`~gdpo.tasks.code.rewards.extract_code`, which
  falls back to the whole text when there is no fenced block) is a real program: Python that parses *and*
  has at least one statement that does something (:func:`program_parses`) — a definition, an import, an
  assignment, a compound statement (``if``, ``for``, ``while``, ``with``, ``try``, ``match``) or a call. A
  policy that writes prose, or nothing, scores 0 here: "Sorry" parses (a bare name), as do "42" and
  "Answer: yes" (an annotation without a value), but none of them does anything. The same rule applies
  inside a fenced block, so fencing a word does not make it a program.

This indicator is the collapse gate's ``programs`` (:mod:`gdpo.generation.health`); the rewards do not
read it.
"""

from __future__ import annotations

import ast
import warnings

from gdpo.tasks.code.rewards import completion_text, extract_code

INDICATORS = ("code_block", "program_parses")


#: Statements that make a text a program (besides calls and annotated assignments with a value, below).
_DOING = tuple(getattr(ast, name) for name in (
    "FunctionDef", "AsyncFunctionDef", "ClassDef", "Import", "ImportFrom", "Assign", "AugAssign", "For",
    "AsyncFor", "While", "If", "With", "AsyncWith", "Try", "TryStar", "Match") if hasattr(ast, name))


def _does_something(statement: ast.stmt) -> bool:
    """A top-level statement that defines, imports, assigns, branches or loops, or calls something; not a
    bare expression (``Sorry``, ``42``, ``a - b``), ``pass``, ``global x`` or an annotation alone."""
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Call)
    if isinstance(statement, ast.AnnAssign):
        return statement.value is not None
    return isinstance(statement, _DOING)


def program_parses(code: str) -> bool:
    """Whether ``code`` is a program: Python source that parses and has at least one top-level statement that
    does something (:func:`_does_something`), so prose that happens to parse ("Sorry", "42") is none."""
    if not code.strip():
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # invalid escapes in generated strings
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: null bytes; RecursionError,
        # MemoryError: deep nesting (the parser's own stack overflows on thousands of unclosed brackets)
        return False
    return any(_does_something(statement) for statement in tree.body)


def completion_diagnostics(completions, **kwargs) -> dict[str, list[float]]:
    """:data:`INDICATORS` (1.0 / 0.0) for each of the B completions, in TRL's reward-function convention."""
    texts = [completion_text(c) for c in completions]
    return {
        "code_block": [1.0 if "```" in text else 0.0 for text in texts],
        "program_parses": [1.0 if program_parses(extract_code(text)) else 0.0 for text in texts],
    }
