"""The GPU environment's lock, envs/requirements-gpu.lock (written by envs/lock_gpu.py): every line pins one
package at one version, it pins every requirement of envs/requirements-gpu.txt at a version that file allows,
envs/train-gpu.yaml installs exactly it, and (slow tier, PyPI needed) pip resolves it to exactly itself
without a dependency search ("backtracking"), which is what a pip-only user's `pip install -r
envs/requirements-gpu.lock` does before it downloads anything."""

from __future__ import annotations

import importlib.util
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("lock_gpu", REPO / "envs/lock_gpu.py")
lock_gpu = sys.modules["lock_gpu"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lock_gpu)

#: The longest the slow test lets pip resolve the lock: measured, 56 s on 2 busy cores (and about 15 s more to
#: make the throwaway venv with lock_gpu.PIP); resolving envs/requirements-gpu.txt as it stood before the
#: lock (numpy 2.4.6 beside vLLM) was still backtracking after 500 s without fast-deps.
RESOLVE_SECONDS = 300


def lock_lines() -> list[str]:
    lines = lock_gpu.LOCK.read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def spec_requirements() -> list[Requirement]:
    lines = lock_gpu.REQUIREMENTS.read_text().splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith(("#", "-"))]


def test_every_line_of_the_lock_pins_one_package_at_one_version_of_pypi():
    lines = lock_lines()
    assert len(lines) > 100  # the whole tree, not the top level
    names = []
    for line in lines:
        requirement = Requirement(line)
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1 and specifiers[0].operator == "==", line
        version = Version(specifiers[0].version)  # an exact version, no wildcard
        assert str(version) == specifiers[0].version and version.local is None, f"{line}: not a PyPI release"
        assert not requirement.extras and requirement.marker is None and requirement.url is None, line
        assert requirement.name == canonicalize_name(requirement.name), line
        names.append(requirement.name)
    assert names == sorted(set(names)), "the lock names each package once, sorted"


def test_the_lock_pins_every_requirement_at_a_version_the_requirements_allow():
    lock = lock_gpu.read_lock()
    requirements = spec_requirements()
    assert {"torch", "vllm", "transformers", "trl"} <= {canonicalize_name(req.name) for req in requirements}
    for requirement in requirements:
        if requirement.marker is not None and not requirement.marker.evaluate(lock_gpu.TARGET):
            continue
        name = canonicalize_name(requirement.name)
        assert name in lock, f"envs/requirements-gpu.lock lacks {name}: run `python envs/lock_gpu.py`"
        assert requirement.specifier.contains(lock[name], prereleases=True), (
            f"the lock has {name}=={lock[name]}, envs/requirements-gpu.txt asks for {requirement}: "
            "run `python envs/lock_gpu.py`")


def test_the_conda_file_installs_the_lock_on_the_locks_python():
    env = yaml.safe_load(lock_gpu.CONDA_FILE.read_text())
    pip = next(item["pip"] for item in env["dependencies"] if isinstance(item, dict))
    assert pip == lock_lines()
    assert f"python={lock_gpu.TARGET['python_version']}" in env["dependencies"]
    # What the script writes is what is there.
    assert lock_gpu.conda_text(lock_gpu.read_lock()) == lock_gpu.CONDA_FILE.read_text()


def pypi_unreachable() -> str | None:
    try:
        with urllib.request.urlopen(f"{lock_gpu.INDEX}/pip/", timeout=15) as response:
            response.read(1)
    except (urllib.error.URLError, OSError) as error:
        return f"PyPI unreachable ({lock_gpu.INDEX}: {error})"
    return None


@pytest.mark.slow
@pytest.mark.timeout(RESOLVE_SECONDS + 120)
def test_pip_resolves_the_lock_to_exactly_itself_without_a_dependency_search():
    reason = lock_gpu.host_mismatch() or pypi_unreachable()
    if reason:
        pytest.skip(reason)
    resolution = lock_gpu.resolve(lock_gpu.LOCK, timeout=RESOLVE_SECONDS)
    assert resolution.returncode == 0, resolution.output[-6000:]
    assert not resolution.backtracked, [line for line in resolution.output.splitlines()
                                        if lock_gpu.BACKTRACKING in line]
    lock = lock_gpu.read_lock()
    assert sorted(set(resolution.pins) - set(lock)) == [], "pip installs packages the lock does not pin"
    assert resolution.pins == lock
    print(f"pip resolved the lock's {len(lock)} packages in {resolution.seconds:.0f} s")
