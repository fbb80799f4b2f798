"""The test tiers themselves: the quick tier's time budget fails a run, a hang is a named failure, the longest
tests start first, and the commands that run each tier are the ones README, the Makefile and CI name.

Each check runs pytest on a few throwaway tests in a temporary directory with this suite's conftest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SLEEPER = "import time\n\n\ndef test_sleeps():\n    time.sleep({seconds})\n"


def run_pytest(tmp_path: Path, files: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """pytest on ``files`` (name -> source) with the suite's conftest and pytest settings."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "conftest.py").write_text((REPO / "tests/conftest.py").read_text())
    ini = (REPO / "pyproject.toml").read_text()
    ini = ini[ini.index("[tool.pytest.ini_options]"):]
    ini = ini[:ini.index("\n[tool.", 1)].replace('testpaths = ["tests"]', "")
    (tmp_path / "pyproject.toml").write_text(ini)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_quick_tier_test_over_the_budget_fails_the_run_and_is_named(tmp_path):
    result = run_pytest(tmp_path, {"test_a.py": SLEEPER.format(seconds=0.5)}, "-o", "quick_tier_seconds=0.2")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "1 passed" in result.stdout  # the test itself passed: the budget failed the run
    assert re.search(r"quick-tier time budget.*\n\s+0\.\d s  test_a\.py::test_sleeps", result.stdout), result.stdout
    assert "mark them @pytest.mark.slow" in result.stdout
    # Within the budget: the run passes.
    assert run_pytest(tmp_path, {"test_a.py": SLEEPER.format(seconds=0.0)}, "-o", "quick_tier_seconds=0.2").returncode == 0


@pytest.mark.parametrize(("mark", "select"), [("slow", "slow"), ("slurm", "slurm"), ("smoke", "not slow")])
def test_a_slow_test_in_its_own_tier_and_the_smoke_run_are_not_over_budget(tmp_path, mark, select):
    source = f"import pytest\nimport time\n\n\n@pytest.mark.{mark}\ndef test_sleeps():\n    time.sleep(0.5)\n"
    result = run_pytest(tmp_path, {"test_a.py": source}, "-o", "quick_tier_seconds=0.2", "-m", select)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 passed" in result.stdout and "quick-tier time budget" not in result.stdout


def test_a_hang_is_a_named_failure(tmp_path):
    source = "import pytest\nimport time\n\n\n@pytest.mark.timeout(1)\ndef test_hangs():\n    time.sleep(60)\n"
    result = run_pytest(tmp_path, {"test_a.py": source})
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Timeout" in output and "test_hangs" in output, output[-2000:]


def test_tests_start_longest_stated_limit_first_and_the_smoke_runs_readers_last(tmp_path):
    source = ("import pytest\n\n\ndef test_first_written():\n    pass\n\n\n@pytest.mark.timeout(100)\n"
              "def test_long():\n    pass\n\n\n@pytest.mark.smoke\n@pytest.mark.timeout(1800)\n"
              "def test_builds_the_smoke_run():\n    pass\n\n\n@pytest.mark.smoke\n@pytest.mark.timeout(1800)\n"
              "def test_reads_the_smoke_run():\n    pass\n\n\n@pytest.mark.timeout(900)\n"
              "def test_longest_but_one():\n    pass\n\n\ndef test_last_written():\n    pass\n")
    result = run_pytest(tmp_path, {"test_a.py": source}, "--collect-only", "-q")
    order = [line.split("::")[1] for line in result.stdout.splitlines() if "::" in line]
    assert order == ["test_builds_the_smoke_run", "test_longest_but_one", "test_long", "test_first_written",
                     "test_last_written", "test_reads_the_smoke_run"], result.stdout


def test_every_test_has_a_time_limit_and_the_budget_is_stated():
    from tests import conftest

    text = (REPO / "pyproject.toml").read_text()
    assert re.search(r"(?m)^timeout = \d+$", text) and 'timeout_method = "thread"' in text
    assert f'quick_tier_seconds = "{conftest.QUICK_TIER_SECONDS:g}"' in text
    assert "--durations=" in text  # every run prints its slowest tests


def test_readme_makefile_and_ci_name_the_same_tiers():
    """README shows both commands; `make test` deselects exactly the slow tiers; CI runs `make test-all`."""
    readme = (REPO / "README.md").read_text()
    opening = readme.split("```")[1]  # the README opens with the two commands
    assert "make workflow " in opening and "make test " in opening and "make test-all" in readme
    makefile = (REPO / "Makefile").read_text()
    quick = re.search(r"(?m)^test: .*\n\t\$\(PYTEST\) -m \"(.+)\"$", makefile)
    assert quick and quick.group(1) == "not slow and not slurm"
    # One test at a time to a free worker, in the order tests/conftest.py gives (see its ordering test above).
    assert "PYTEST := pytest -n $(CORES) --maxschedchunk 1" in makefile
    assert re.search(r"(?m)^test-all: .*\n\t\$\(PYTEST\) -m \"\$\(ALL_TESTS\)\"$", makefile)
    assert re.search(r"(?m)^make test-all$", (REPO / ".ci/run").read_text())
    # The tiers draw the same property-test examples every run (a landing is not decided by luck).
    assert "export HYPOTHESIS_PROFILE ?= ci" in makefile
    from hypothesis import settings

    import tests.conftest  # noqa: F401  (registers the profile)

    assert settings.get_profile("ci").derandomize and settings.get_profile("ci").database is None
