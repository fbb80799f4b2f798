"""What the code policy actually does, per completion: is there a program to run at all?

- ``code_block``: the completion holds a fenced code block (```` ``` ````), the answer format the prompt asks for;
- ``program_parses``: the program the reward runs (:func:`~gdpo.tasks.code.rewards.extract_code`) is
  non-empty Python that compiles — a policy that writes prose, or nothing, scores 0 here.
"""

from __future__ import annotations

import ast
import warnings

from gdpo.tasks.code.rewards import completion_text, extract_code

INDICATORS = ("code_block", "program_parses")


def program_parses(code: str) -> bool:
    """Whether ``code`` is non-blank Python source that parses."""
    if not code.strip():
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # invalid escapes in generated strings
            ast.parse(code)
    except (SyntaxError, ValueError):  # ValueError: null bytes in the source
        return False
    return True


def completion_diagnostics(completions, **kwargs) -> dict[str, list[float]]:
    """:data:`INDICATORS` (1.0 / 0.0) for each of the B completions, in TRL's reward-function convention."""
    texts = [completion_text(c) for c in completions]
    return {
        "code_block": [1.0 if "```" in text else 0.0 for text in texts],
        "program_parses": [1.0 if program_parses(extract_code(text)) else 0.0 for text in texts],
    }
