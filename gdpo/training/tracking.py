"""Live metrics of a training job: the backends of TRL's ``report_to``, logging into the job's own directory.

A config's ``training.report_to`` (:func:`gdpo.plan.report_backends`) names backends of transformers'
Trainer. The train and warm-up jobs check that each backend's package is installed before any work
(:func:`check_backends_installed`) and point its logs at ``<logs dir>/<backend>/``
(:func:`backend_environment`); for a training run that is ``<run dir>/logs/`` (:func:`run_logs_dir`), beside
the run's declared outputs and kept when the run completes (its checkpoint directory ``<run dir>.work`` is
removed then).

- ``tensorboard``: event files in ``logs/tensorboard/``; ``tensorboard --logdir results/<scale>/runs`` shows
  every run of a scale.
- ``trackio``: its local store (SQLite, project :data:`PROJECT`) in ``logs/trackio/``; view it with
  ``TRACKIO_DIR=<run dir>/logs/trackio trackio show``. Always local: ``TRACKIO_SPACE_ID`` and
  ``TRACKIO_SERVER_URL`` are ignored for the job, so it never contacts the Hugging Face hub.
- ``wandb``: the user's W&B environment is honoured (``WANDB_MODE=offline`` needs no account); its files go
  to ``logs/wandb/`` unless ``WANDB_DIR`` is set, its project is ``WANDB_PROJECT`` or :data:`PROJECT`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

#: A training run's live logs, below its run directory.
LOGS_DIR_NAME = "logs"
#: The trackio (and default W&B) project of every run; the run name tells runs apart.
PROJECT = "gdpo"
#: Modules each backend can run with, as transformers looks for them (its first one is the one to install).
BACKEND_MODULES = {"tensorboard": ("tensorboard", "tensorboardX"), "trackio": ("trackio",), "wandb": ("wandb",)}
#: Where the tested backends are pinned.
REQUIREMENTS_FILE = Path(__file__).resolve().parents[2] / "envs" / "requirements-train.txt"


class MissingBackendError(RuntimeError):
    """``report_to`` names a backend whose package is not installed."""


def run_logs_dir(run_dir: str | Path) -> Path:
    """``<run_dir>/logs``: where a training run's backends log."""
    return Path(run_dir) / LOGS_DIR_NAME


def _pinned_requirement(package: str) -> str:
    """``package==version`` as pinned in :data:`REQUIREMENTS_FILE`, else the bare name."""
    try:
        lines = REQUIREMENTS_FILE.read_text(encoding="utf-8").splitlines()
    except OSError:
        return package
    for line in lines:
        if re.match(rf"{re.escape(package)}\s*==", line.strip(), re.IGNORECASE):
            return line.split("#")[0].strip()
    return package


def check_backends_installed(backends: Sequence[str]) -> None:
    """Raise :class:`MissingBackendError` naming each backend whose package is missing and its pip command."""
    missing = [backend for backend in backends
               if not any(importlib.util.find_spec(module) for module in BACKEND_MODULES[backend])]
    if missing:
        commands = "; ".join(f"{backend}: pip install {_pinned_requirement(BACKEND_MODULES[backend][0])}"
                             for backend in missing)
        raise MissingBackendError(
            f"training.report_to asks for {', '.join(missing)}, whose package is not installed in this "
            f"environment ({sys.executable}). Install it ({commands}), or remove it from report_to.")


def reporting_arguments(backends: Sequence[str], run_name: str) -> dict:
    """The ``TrainingArguments`` that name the job to its backends (trackio and W&B); none without backends."""
    return {"run_name": run_name, "project": PROJECT} if backends else {}


def _check_trackio_store(trackio_dir: Path) -> None:
    # trackio reads TRACKIO_DIR once, when it is first imported (TRL imports it with its GRPO trainer).
    utils = sys.modules.get("trackio.utils")
    if utils is not None and Path(utils.TRACKIO_DIR).resolve() != trackio_dir.resolve():
        raise RuntimeError(
            f"trackio was imported in this process before the job set its store, so it logs to "
            f"{utils.TRACKIO_DIR}, not {trackio_dir}. Run each job in its own process (python -m gdpo train, "
            "as the workflow does).")


@contextlib.contextmanager
def backend_environment(backends: Sequence[str], logs_dir: str | Path) -> Iterator[dict[str, Path]]:
    """Within the block, each backend logs below ``logs_dir`` (environment variables, restored on exit).

    Yields backend → the directory below ``logs_dir`` it logs to (W&B's only if ``WANDB_DIR`` is unset).
    Enter it before TRL is imported: trackio reads its store's location at import.
    """
    logs_dir = Path(logs_dir).resolve()
    changes: dict[str, str | None] = {}
    directories: dict[str, Path] = {}
    if "tensorboard" in backends:
        directories["tensorboard"] = logs_dir / "tensorboard"
        changes["TENSORBOARD_LOGGING_DIR"] = str(directories["tensorboard"])
    if "trackio" in backends:
        directories["trackio"] = logs_dir / "trackio"
        _check_trackio_store(directories["trackio"])
        # Local only: no Space, no self-hosted server, whatever the user's shell sets.
        changes.update(TRACKIO_DIR=str(directories["trackio"]), TRACKIO_SPACE_ID=None, TRACKIO_SERVER_URL=None)
    if "wandb" in backends:
        if not os.environ.get("WANDB_DIR"):
            directories["wandb"] = logs_dir / "wandb"
            changes["WANDB_DIR"] = str(directories["wandb"])
        if not os.environ.get("WANDB_PROJECT"):
            changes["WANDB_PROJECT"] = PROJECT
    saved = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield directories
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
