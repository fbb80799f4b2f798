"""Imports point down the layers: the bench (gdpo.sim) imports nothing of the reporting layer, the claim rules
nothing of the bench or the trainer, and the low modules nothing heavy. Every import counts, function-local ones
included: each module's source is read, not imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gdpo"


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; relative imports resolved against its package)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return names


@pytest.mark.parametrize(("modules", "forbidden"), [
    ("sim", ("gdpo.reporting",)),
    ("reporting/verdicts", ("gdpo.sim", "gdpo.training", "torch")),
    ("curve_events.py", ("gdpo", "torch", "pandas", "matplotlib")),
    ("methods.py", ("gdpo", "torch")),
    # planning runs when a workflow is parsed: nothing of the jobs' stack (tests/test_plan.py runs it too)
    ("plan.py", ("torch", "transformers", "trl", "matplotlib", "pandas", "gdpo.training", "gdpo.evaluation",
                 "gdpo.reporting", "gdpo.sim", "gdpo.advantages")),
    ("plotting.py", ("gdpo",)),
])
def test_no_import_runs_back_up(modules, forbidden):
    paths = [PACKAGE / modules] if modules.endswith(".py") else sorted((PACKAGE / modules).rglob("*.py"))
    found = {f"{path.relative_to(PACKAGE)} imports {name}" for path in paths for name in imports(path)
             if any(name == f or name.startswith(f + ".") for f in forbidden)}
    assert not found
