"""The GPU environment's lock: envs/requirements-gpu.lock pins every package that pip installs for
envs/requirements-gpu.txt (its whole dependency tree, each at one version), and envs/train-gpu.yaml's pip list
is the lock's, so that `pip install -r envs/requirements-gpu.lock` and
`conda env create -f envs/train-gpu.yaml` install the same environment without a dependency search.

    python envs/lock_gpu.py          # resolve envs/requirements-gpu.txt, write the lock and the conda list
    python envs/lock_gpu.py --check  # resolve the lock itself and compare (what tests/test_gpu_lock.py does)

Run it with CPython 3.11 on Linux x86_64, the GPU nodes' platform (the lock holds for that platform and Python
alone: environment markers are evaluated there), with access to PyPI. pip PIP (below; installed from PyPI
into a throwaway venv, so the result does not depend on this environment's pip) resolves without installing
(`install --dry-run --ignore-installed --report`), from PyPI alone (`--isolated`: no pip configuration file,
environment variable, extra index or local wheel folder of the machine counts), and with
`--use-feature=fast-deps`: a wheel's metadata is read by HTTP range requests where the index serves no
separate metadata file, instead of downloading the wheel (torch's and the CUDA libraries' are GBs).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO / "envs/requirements-gpu.txt"
LOCK = REPO / "envs/requirements-gpu.lock"
CONDA_FILE = REPO / "envs/train-gpu.yaml"
INDEX = "https://pypi.org/simple"
#: The platform the lock is for: the GPU nodes' (and envs/train-gpu.yaml's python=3.11).
TARGET = {"sys_platform": "linux", "platform_machine": "x86_64", "implementation_name": "cpython",
          "python_version": "3.11"}
#: The pip that resolves, installed from PyPI into a throwaway venv: its dry run reads metadata alone (pip
#: 23.2, which Python 3.11's venv brings, downloads every wheel in a dry run with fast-deps: GBs of CUDA
#: libraries).
PIP = "26.3"
#: What pip prints when it tries more than one version of a package (a dependency search, "backtracking").
BACKTRACKING = "is looking at multiple versions of"
#: The line of the conda file after which its pip list starts (the list runs to the end of the file).
CONDA_PIP = "  - pip:\n"


def canonical(name: str) -> str:
    """The name as PEP 503 normalizes it (pip's comparisons)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def host_mismatch() -> str | None:
    """Why this interpreter cannot resolve for the lock's platform, or None when it can."""
    host = {"sys_platform": sys.platform, "platform_machine": platform.machine(),
            "implementation_name": sys.implementation.name,
            "python_version": f"{sys.version_info.major}.{sys.version_info.minor}"}
    wrong = {key: value for key, value in host.items() if value != TARGET[key]}
    if wrong:
        return (f"the lock is for {TARGET}; this interpreter has "
                + ", ".join(f"{key}={value}" for key, value in wrong.items()))
    return None


@dataclass
class Resolution:
    """One pip dry-run resolve: what it would install ({canonical name: version}), its output and duration."""
    returncode: int
    pins: dict[str, str]
    output: str
    seconds: float

    @property
    def backtracked(self) -> bool:
        return BACKTRACKING in self.output


def pip_options() -> list[str]:
    """pip's general options: PyPI alone, no configuration of this machine (--isolated also ignores PIP_CERT:
    a machine whose TLS needs its own CA bundle passes it on)."""
    cert = os.environ.get("PIP_CERT")
    return ["--isolated", "--disable-pip-version-check", *(["--cert", cert] if cert else [])]


def resolver(directory: Path, timeout: float | None = None) -> Path:
    """The python of a throwaway venv in `directory` with pip PIP from PyPI (whatever pip this environment
    has)."""
    subprocess.run([sys.executable, "-m", "venv", str(directory / "venv")], check=True, capture_output=True,
                   timeout=timeout)
    python = directory / "venv/bin/python"
    subprocess.run([str(python), "-m", "pip", *pip_options(), "install", "--quiet", "--index-url", INDEX,
                    f"pip=={PIP}"], check=True, capture_output=True, timeout=timeout)
    return python


def resolve_command(python: Path, requirements: Path, report: Path) -> list[str]:
    return [str(python), "-m", "pip", *pip_options(), "install", "--dry-run", "--ignore-installed",
            "--index-url", INDEX, "--use-feature=fast-deps", "--report", str(report), "-r", str(requirements)]


def resolve(requirements: Path, timeout: float | None = None) -> Resolution:
    """What pip PIP would install for `requirements` on this interpreter, from PyPI (raises TimeoutExpired;
    CalledProcessError where pip PIP cannot be installed)."""
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        python = resolver(directory, timeout)
        report = directory / "report.json"
        start = time.monotonic()
        result = subprocess.run(resolve_command(python, requirements, report), capture_output=True, text=True,
                                timeout=timeout, check=False, cwd=directory)
        seconds = time.monotonic() - start
        pins = {}
        if result.returncode == 0:
            for item in json.loads(report.read_text())["install"]:
                pins[canonical(item["metadata"]["name"])] = item["metadata"]["version"]
    return Resolution(result.returncode, pins, result.stdout + result.stderr, seconds)


def read_lock(path: Path = LOCK) -> dict[str, str]:
    """The lock's pins, {name: version} (every line that is not a comment is `name==version`)."""
    pins = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name] = version
    return pins


def lock_text(pins: dict[str, str]) -> str:
    produced = (f"with pip {PIP} on CPython {platform.python_version()}, Linux x86_64, "
                f"on {datetime.date.today().isoformat()}")
    header = f"""\
# The GPU environment, every package pinned ({len(pins)} packages): the whole dependency tree of
# envs/requirements-gpu.txt (which says why each version), as pip resolves it from PyPI for Linux x86_64 and
# CPython 3.11. Install this file, not envs/requirements-gpu.txt (pip installs it without a dependency
# search):
#   python3.11 -m venv .venv-gpu && .venv-gpu/bin/pip install -r envs/requirements-gpu.lock
# envs/train-gpu.yaml's pip list is this list.
# Produced by `python envs/lock_gpu.py` (a dry-run resolve of envs/requirements-gpu.txt from PyPI alone)
# {produced}.
# After a change to envs/requirements-gpu.txt, regenerate it (and the conda file's list) the same way;
# `python envs/lock_gpu.py --check` (and tests/test_gpu_lock.py) checks that pip resolves it to exactly
# itself.
"""
    return header + "".join(f"{name}=={pins[name]}\n" for name in sorted(pins))


def conda_text(pins: dict[str, str]) -> str:
    """envs/train-gpu.yaml with its pip list replaced by the lock's pins."""
    text = CONDA_FILE.read_text()
    head, found, _ = text.partition(CONDA_PIP)
    if not found:
        raise SystemExit(f"{CONDA_FILE}: no line {CONDA_PIP.strip()!r}, after which the pip list goes")
    return head + CONDA_PIP + "".join(f"      - {name}=={pins[name]}\n" for name in sorted(pins))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="resolve the lock itself and fail unless it resolves to exactly its own pins "
                             "without a dependency search")
    args = parser.parse_args(argv)
    mismatch = host_mismatch()
    if mismatch:
        print(f"lock_gpu: {mismatch}; run it with CPython 3.11 on Linux x86_64", file=sys.stderr)
        return 2
    source = LOCK if args.check else REQUIREMENTS
    resolution = resolve(source)
    if resolution.returncode != 0:
        print(resolution.output[-6000:], file=sys.stderr)
        print(f"lock_gpu: pip could not resolve {source.relative_to(REPO)}", file=sys.stderr)
        return 1
    print(f"{source.relative_to(REPO)}: {len(resolution.pins)} packages in {resolution.seconds:.0f} s"
          + (" (with a dependency search)" if resolution.backtracked else ""))
    if args.check:
        lock = read_lock()
        extra = sorted(set(resolution.pins) - set(lock))
        differ = sorted(name for name in lock if resolution.pins.get(name) != lock[name])
        if extra or differ or resolution.backtracked:
            print(f"lock_gpu: the lock does not resolve to itself: not pinned {extra}, resolved otherwise "
                  f"{[(name, lock[name], resolution.pins.get(name)) for name in differ]}, "
                  f"dependency search: {resolution.backtracked}", file=sys.stderr)
            return 1
        return 0
    LOCK.write_text(lock_text(resolution.pins))
    CONDA_FILE.write_text(conda_text(resolution.pins))
    print(f"wrote {LOCK.relative_to(REPO)} and the pip list of {CONDA_FILE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
