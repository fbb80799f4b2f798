"""The claim rules name methods through :class:`gdpo.methods.Method`, the registry's one spelling of them."""

from __future__ import annotations

import ast
from pathlib import Path

from gdpo.methods import Method

VERDICTS = Path(__file__).resolve().parents[1] / "gdpo" / "reporting" / "verdicts"


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants of the module, its classes and its functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def test_the_claim_rules_spell_no_method_name_as_a_string():
    """A string constant equal to a method's name (``"gdpo"``, ...) outside a docstring, in any module of
    ``gdpo/reporting/verdicts/`` (an f-string's expressions included), fails: write ``Method.GDPO`` instead.
    Prose that merely mentions a method (``"failed gdpo_nobn "``) is not a name and passes."""
    names = {m.value for m in Method}
    literals = []
    for path in sorted(VERDICTS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstrings(tree)
        literals += [f"{path.name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings]
    assert len(list(VERDICTS.glob("*.py"))) >= 4  # the scan sees the rule modules
    assert not literals, "method names spelled as strings (use gdpo.methods.Method):\n" + "\n".join(literals)
