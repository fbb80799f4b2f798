"""The README's two commands, in order, on a clean clone: the workflow (at smoke scale, to keep it short: the same
Makefile path and rules as `make workflow`) writes nothing tracked, and the tests of the published results still
pass after it (they failed when the workflow rewrote paper_figures/)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENVS = (".venv", ".venv-bfcl")


def git_status(root: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.slow
@pytest.mark.skipif(not all((REPO / venv / ".installed").exists() for venv in VENVS),
                    reason="needs the venvs `make setup` builds")
def test_the_readme_commands_in_order_leave_a_clean_clone_whose_tests_pass(tmp_path):
    readme = (REPO / "README.md").read_text()
    assert "make workflow" in readme.split("```")[1] and "make test" in readme.split("```")[1]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    assert git_status(clone) == ""
    for venv in VENVS:  # the venvs are the README's setup step: reused, not rebuilt (-o: never remade)
        (clone / venv).symlink_to(REPO / venv)
    make = ["make", *[arg for venv in VENVS for arg in ("-o", f"{venv}/.installed")], "CORES=2"]
    env = {**os.environ, "PYTHONPATH": str(clone)}
    workflow = subprocess.run([*make, "smoke"], cwd=clone, env=env, capture_output=True, text=True, check=False)
    assert workflow.returncode == 0, workflow.stdout[-2000:] + workflow.stderr[-3000:]
    assert (clone / "results/smoke/paper_figures/claims.csv").is_file()
    assert (clone / "results/smoke/paper_figures/report.html").is_file()
    assert git_status(clone) == ""  # nothing tracked rewritten, nothing untracked left outside the ignored folders
    tests = subprocess.run(
        [str(clone / ".venv/bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_published.py",
         "tests/test_published_cpu_evidence.py", "tests/test_evidence_integrity.py"],
        cwd=clone, env=env, capture_output=True, text=True, check=False)
    assert tests.returncode == 0, tests.stdout[-4000:]
    assert git_status(clone) == ""
