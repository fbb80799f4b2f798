"""Imports point down the package's layers and go round in no circle.

The rules are import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``): the layers of ``gdpo``
(a module imports only its own layer's unit and the layers below it), no circles between the modules or
subpackages of any package, task families independent of each other, and the modules that must stay light
free of heavy libraries. ``lint-imports`` reads every import, function-local ones included, without importing
anything. This file runs it, shows on a copy of the package that it fails on an upward import, a circle and a
heavy import, and checks the two things the contracts cannot say (see :func:`module_circles` and
:func:`test_the_generation_package_file_stays_light`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"
#: ``lint-imports``, installed beside this interpreter (envs/requirements-test.txt).
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(package_parent: Path, *contracts: str) -> subprocess.CompletedProcess:
    """``lint-imports`` with the repository's contracts (all, or those of the ids ``contracts``) on the
    ``gdpo`` package found in ``package_parent`` (it puts its working directory first on the import path)."""
    only = [option for contract in contracts for option in ("--contract", contract)]
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(CONFIG), "--no-cache", "--no-logo", *only],
        cwd=package_parent, env={"PATH": str(LINT_IMPORTS.parent), "PYTHONPATH": str(package_parent)},
        capture_output=True, text=True, timeout=600,
    )


def test_the_import_contracts_are_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "statement", "contract", "reported"), [
    # the collapse gate sampling through training: an upward import
    ("generation/health.py", "from gdpo.training import run", "layers",
     "gdpo.generation.health -> gdpo.training.run"),
    # the study schema importing the study module, which imports the schema (reported inside gdpo.sim)
    ("sim/schema.py", "from gdpo.sim import study", "acyclic", ".schema -> .study"),
    ("methods.py", "import pandas", "light-floor", "gdpo.methods -> pandas"),
    # a module of the planning package (gdpo.plan is a package: the contract covers its modules)
    ("plan/jobs.py", "import torch", "planning", "gdpo.plan.jobs -> torch"),
    # allowed by the layers (the reporting layer is above the bench), not by the claim rules' own contract
    ("reporting/verdicts/registry.py", "from gdpo.sim import study", "claim-rules",
     "gdpo.reporting.verdicts.registry -> gdpo.sim.study"),
    ("tasks/arithmetic.py", "from gdpo.tasks.math import rewards", "families",
     "gdpo.tasks.arithmetic -> gdpo.tasks.math.rewards"),
    # training loads torch: the gate would too
    ("generation/health.py", "from gdpo.training import run", "collapse-gate",
     "gdpo.generation.health -> gdpo.training.run"),
])
def test_the_contracts_catch_a_violation(tmp_path, module, statement, contract, reported):
    """A copy of the package with one function-local import added breaks the contract that forbids it, and
    lint-imports names that import."""
    shutil.copytree(ROOT / "gdpo", tmp_path / "gdpo", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "gdpo" / module, "a", encoding="utf-8") as handle:
        handle.write(f"\n\ndef _probe():\n    {statement}\n")
    result = lint_imports(tmp_path, contract)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 broken" in result.stdout
    assert reported in result.stdout, result.stdout


def module_circles(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    """The direct imports ``(importer, imported)`` from which an import chain leads back to the importer.

    Kept beside the contracts because import-linter's ``acyclic_siblings`` compares the children of each
    package: a circle through a package's own ``__init__`` (the package imports its submodule, which imports
    the package) is between a parent and its child, and no contract type sees it. ``gdpo.tasks.code`` had one
    (its evaluator imported the package for the family's data options).
    """
    return sorted(
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if graph.chain_exists(importer=imported, imported=importer)
    )


@pytest.fixture(scope="module")
def import_graph() -> grimp.ImportGraph:
    return grimp.build_graph("gdpo", cache_dir=None)


def test_no_module_imports_itself_back(import_graph):
    circles = module_circles(import_graph)
    assert not circles, "imports that lead back to their importer: " + "; ".join(
        f"{importer} -> {imported}" for importer, imported in circles)


def test_the_circle_check_sees_a_package_and_its_submodule(import_graph):
    import_graph.add_import(importer="gdpo.tasks.code.data", imported="gdpo.tasks.code")
    try:
        circles = module_circles(import_graph)
    finally:
        import_graph.remove_import(importer="gdpo.tasks.code.data", imported="gdpo.tasks.code")
    assert ("gdpo.tasks.code.data", "gdpo.tasks.code") in circles
    assert ("gdpo.tasks.code", "gdpo.tasks.code.data") in circles


def test_the_generation_package_file_stays_light():
    """Importing ``gdpo.generation.health`` runs ``gdpo/generation/__init__.py`` first. import-linter does not
    count that as an import of the package file, so the collapse gate's contract cannot see what the package
    file imports: a fresh interpreter imports the gate and reports what it loaded."""
    heavy = ("torch", "transformers", "numpy", "pandas")
    probe = (f"import json, sys, gdpo.generation.health\n"
             f"print(json.dumps([name for name in {heavy!r} if name in sys.modules]))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, check=True)
    assert json.loads(result.stdout.splitlines()[-1]) == []
