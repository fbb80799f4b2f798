"""The SLURM profile for real: a single-node cluster on localhost runs the smoke workflow.

Marked ``slurm``. Needs root (it starts munged, slurmctld and slurmd, and installs Debian's slurm-wlm and
munge with apt-get if they are missing); elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.local_slurm import LocalSlurmCluster, _alive, install_packages, unavailable_reason
from gdpo.training.run import TIMING_KEYS, read_metrics

pytestmark = pytest.mark.slurm
REPO = Path(__file__).resolve().parents[1]
RUNS = [f"results/smoke/runs/arithmetic/{m}/seed{s}" for m in ("grpo", "grpo_nostd", "gdpo", "gdpo_nobn", "gdpo_nostd")
        for s in (0, 1)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"no local SLURM cluster here: {reason}")
    try:
        install_packages()
    except (subprocess.SubprocessError, OSError) as error:
        pytest.skip(f"no local SLURM cluster here: installing slurm-wlm and munge failed ({error})")
    local = LocalSlurmCluster(tmp_path_factory.mktemp("slurm"))
    local.start()
    pids = dict(local.pids)
    yield local
    local.stop()
    assert not any(_alive(pid) for pid in pids.values()), "a daemon survived stop()"


def snakemake(directory: Path, config: Path, *args: str, cluster: LocalSlurmCluster | None = None):
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(directory),
               "--configfile", str(config), *args]
    if cluster is not None:
        env.update(cluster.environment())
        # Faster polling than the profile's 10 s: the test's jobs take seconds.
        command += ["--profile", str(REPO / "profiles/slurm"), "--slurm-init-seconds-before-status-checks", "2",
                    "--seconds-between-status-checks", "2", "--latency-wait", "10"]
    else:
        command += ["--cores", "2"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)


def behaviour(path: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in read_metrics(path)]


def test_smoke_workflow_on_slurm_equals_local_run_and_resumes_after_a_failure(cluster, tmp_path):
    # The smoke config with its arithmetic task only: the executor is under test here, the task families
    # run in test_workflow's smoke run (and would double this test's time).
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config["tasks"] = {"arithmetic": config["tasks"]["arithmetic"]}
    config["reporting"] = {"figures": {"fig8": "arithmetic"}}
    smoke = tmp_path / "smoke.yaml"
    smoke.write_text(yaml.safe_dump(config))
    local, on_slurm = tmp_path / "local", tmp_path / "slurm"
    result = snakemake(local, smoke)
    assert result.returncode == 0, result.stderr[-3000:]
    result = snakemake(on_slurm, smoke, cluster=cluster)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "has been submitted with SLURM jobid" in result.stdout + result.stderr  # really through sbatch

    for name in ("results/exact/distinct_counts.csv", "results/exact/fig2_table.csv", "paper_figures/smoke/claims.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(on_slurm / name), pd.read_csv(local / name))
    for run in RUNS:
        assert behaviour(on_slurm / run / "metrics.jsonl") == behaviour(local / run / "metrics.jsonl"), run
        assert json.loads((on_slurm / run / "summary.json").read_text())["steps"] == 4

    # A failing job is reported as failed; what finished is kept and never redone.
    config["tasks"]["broken"] = {**config["tasks"]["arithmetic"], "model": "gdpo-test-org/no-such-model"}
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(config))
    result = snakemake(on_slurm, broken, cluster=cluster)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Error in rule prepare_model" in output and "no-such-model" in output
    planned = snakemake(on_slurm, broken, "-n").stdout
    assert "task=broken" in planned and "task=arithmetic" not in planned
    assert "exact_distinct_counts" not in planned


#: Resources the profile must request for paper train jobs (config, task, GPUs, runtime in minutes); the
#: variants (conditioned, weight sweep, 3 objectives) get their family's and model size's runtime.
PAPER_TRAIN_REQUESTS = [
    ("paper-tool_calling", "tool_calling_3b", "gpu=8", "runtime=360"),
    ("paper-math", "math_r1_7b", "gpu=8", "runtime=9000"),
    ("paper-math", "math_conditioned_r1_7b", "gpu=8", "runtime=9000"),
    ("paper-math", "math_w0.25_r1_7b", "gpu=8", "runtime=9000"),
    ("paper-code", "code_r1_7b", "gpu=8", "runtime=630"),
    ("paper-code", "code_3obj_r1_7b", "gpu=8", "runtime=630"),
]


def test_slurm_profile_plans_the_paper_configs_with_their_gpu_requests(tmp_path):
    for name, task, gpus, runtime in PAPER_TRAIN_REQUESTS:
        result = subprocess.run(
            [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
             "--profile", str(REPO / "profiles/slurm"), "--configfile", str(REPO / "config" / f"{name}.yaml"), "-n"],
            capture_output=True, text=True, timeout=300,
            env={**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])},
        )
        assert result.returncode == 0, result.stderr[-2000:]
        jobs = (result.stdout + result.stderr).split("\nrule ")
        train = [job for job in jobs if job.startswith("train:") and f"task={task}," in job]
        evaluate = [job for job in jobs if job.startswith("evaluate:") and f"task={task}," in job]
        assert train and evaluate, name
        assert all(gpus in job and runtime in job and "slurm_partition=gpu" in job for job in train), train[0]
        assert all("gpu=1," in job for job in evaluate), evaluate[0]
