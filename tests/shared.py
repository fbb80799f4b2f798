"""Builds a test session shares across its pytest-xdist workers (tests/conftest.py uses them)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest


def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory every worker of this session sees (the parent of the xdist workers' base directories)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], dict]) -> tuple[Path, dict]:
    """Build ``name`` once per test session, whatever the number of xdist workers: the first worker to ask runs
    ``build(directory)`` under a file lock and records what it returned (JSON); the others wait and read it.
    Returns the directory and that record. A build that raises is recorded as failed and re-raised to every
    test that asks (never built twice)."""
    from filelock import FileLock

    directory = session_root(tmp_path_factory) / name
    record = directory.with_suffix(".json")
    with FileLock(str(directory.with_suffix(".lock"))):
        if not record.exists():
            directory.mkdir(parents=True, exist_ok=True)
            try:
                result = {"ok": True, "value": build(directory)}
            except Exception as error:  # noqa: BLE001  (recorded, and raised again to every test that asks)
                result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            record.write_text(json.dumps(result))
    result = json.loads(record.read_text())
    if not result["ok"]:
        raise RuntimeError(f"building the shared {name!r} failed (once, for the session): {result['error']}")
    return directory, result["value"]
