"""The SLURM profile for real: a single-node cluster on localhost runs the smoke workflow, and takes the
paper configs' GPU jobs with the requests their configs state.

The node claims 8 GPUs that exist only as a count (tests/local_slurm.py), 128 CPUs and 1 TiB, like an
8-GPU node; its ``debug`` partition uses this machine's real CPUs only. Marked ``slurm``. Needs root (it
starts munged, slurmctld and slurmd, and installs Debian's slurm-wlm and munge with apt-get if they are
missing); elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.local_slurm import CPU_PARTITION, GPU_PARTITION, LocalSlurmCluster, _alive, install_packages, unavailable_reason
from gdpo.config import load_config
from gdpo.plan import job_resources, plan_training_chain, wall_limit_hours
from gdpo.tasks import required_files
from gdpo.training.checkpoint_plan import warning_lead_seconds
from gdpo.training.run import TIMING_KEYS, read_metrics
from tests.stand_ins import stand_in_inputs

# The smoke workflow through the scheduler takes minutes on 2 cores. The longest limit of the session: these tests
# start first (tests/conftest.py); xdist may run them on both workers, each with its own cluster, and each test
# holds its cluster active (the machine's one default SLURM config) for its whole run, so they take turns.
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(2400)]
REPO = Path(__file__).resolve().parents[1]
RUNS = [f"results/smoke/runs/arithmetic/{m}/seed{s}" for m in ("grpo", "grpo_nostd", "gdpo", "gdpo_nobn", "gdpo_nostd")
        for s in (0, 1)]


@pytest.fixture(scope="module")
def running_cluster(tmp_path_factory):
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"no local SLURM cluster here: {reason}")
    try:
        install_packages()
    except (subprocess.SubprocessError, OSError) as error:
        pytest.skip(f"no local SLURM cluster here: installing slurm-wlm and munge failed ({error})")
    local = LocalSlurmCluster(tmp_path_factory.mktemp("slurm"), cpus=128, memory_mb=1_048_576, gpus=8)
    local.start()
    pids = dict(local.pids)
    yield local
    local.stop()
    assert not any(_alive(pid) for pid in pids.values()), "a daemon survived stop()"


@pytest.fixture
def cluster(running_cluster):
    """The module's cluster, its config at SLURM's default path for the test (srun inside jobs reads it there)."""
    with running_cluster.active():
        yield running_cluster


def snakemake(directory: Path, config: Path, *args: str, cluster: LocalSlurmCluster | None = None,
              profile: Path = REPO / "profiles/slurm"):
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(directory),
               "--configfile", str(config), *args]
    if cluster is not None:
        env.update(cluster.environment())
        # Faster polling than the profile's 10 s: the test's jobs take seconds.
        command += ["--profile", str(profile), "--slurm-init-seconds-before-status-checks", "2",
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
    # A CPU-scale config: its train and evaluate jobs ask for no GPU, so they go to the CPU partition.
    cpu_partition = ("--set-resources", f"train:slurm_partition={CPU_PARTITION}",
                     f"evaluate:slurm_partition={CPU_PARTITION}")
    result = snakemake(on_slurm, smoke, *cpu_partition, cluster=cluster)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "has been submitted with SLURM jobid" in result.stdout + result.stderr  # really through sbatch

    for name in ("results/exact/distinct_counts.csv", "results/exact/fig2_table.csv", "results/smoke/paper_figures/claims.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(on_slurm / name), pd.read_csv(local / name))
    for run in RUNS:
        assert behaviour(on_slurm / run / "metrics.jsonl") == behaviour(local / run / "metrics.jsonl"), run
        assert json.loads((on_slurm / run / "summary.json").read_text())["steps"] == 4

    # A failing job is reported as failed; what finished is kept and never redone.
    config["tasks"]["broken"] = {**config["tasks"]["arithmetic"], "model": "gdpo-test-org/no-such-model"}
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(config))
    result = snakemake(on_slurm, broken, *cpu_partition, "--retries", "0", cluster=cluster)  # no 3 more tries
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Error in rule prepare_model" in output and "no-such-model" in output
    planned = snakemake(on_slurm, broken, "-n").stdout
    assert "task=broken" in planned and "task=arithmetic" not in planned
    assert "exact_distinct_counts" not in planned


#: The account the test's user writes into the profile: the one edit docs/cluster.md shows.
ACCOUNT = "gdpo-test"
#: Per paper config, the run whose train job and the base model whose evaluation the test submits.
PAPER_JOBS = {"paper-tool_calling": ("tool_calling_3b", "gdpo"), "paper-math": ("math_r1_7b", "gdpo"),
              "paper-code": ("code_r1_7b", "gdpo")}


def edited_profile(directory: Path) -> Path:
    """profiles/slurm with the account set, as docs/cluster.md tells a user to."""
    profile = directory / "profile"
    shutil.copytree(REPO / "profiles/slurm", profile)
    text = (profile / "config.yaml").read_text()
    assert '  # slurm_account: "my-account"' in text
    (profile / "config.yaml").write_text(text.replace('  # slurm_account: "my-account"',
                                                      f'  slurm_account: "{ACCOUNT}"'))
    return profile


def sbatch_calls(output: str) -> dict[str, str]:
    """The sbatch arguments (before the wrapped command) of each submitted job, by rule (`--verbose` log)."""
    calls = {}
    for line in output.splitlines():
        if line.startswith("sbatch call: "):
            arguments = line[len("sbatch call: "):].split(" --wrap=")[0]
            calls[re.search(r"--comment rule_(\w+?)_wildcards", arguments).group(1)] = arguments
    return calls


def scontrol_job(job_id: str, cluster: LocalSlurmCluster) -> dict[str, str]:
    text = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True, check=True,
                          env={**os.environ, **cluster.environment()}).stdout
    return dict(field.split("=", 1) for field in text.split() if "=" in field)


def submit_paper_jobs(name: str, directory: Path, cluster: LocalSlurmCluster) -> subprocess.Popen:
    """Start `snakemake --profile <edited profile> --configfile config/<name>.yaml` for one run's train job and
    the base model's evaluation, in ``directory``. The model and data a paper job reads come from the hub,
    which the test cannot reach: empty stand-ins mark them as present (the jobs stop before reading them), for the
    pre-flight (tests/stand_ins.py) and, for the BFCL split, for the rule that would make it."""
    config = load_config(REPO / "config" / f"{name}.yaml")
    task, method = PAPER_JOBS[name]
    spec = config["tasks"][task]
    work = directory / "work"
    stand_ins = stand_in_inputs([REPO / "config" / f"{name}.yaml"], work)
    for path in required_files(spec):
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).touch()
    runs = f"results/{config['scale']}/runs/{task}"
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(work),
               "--configfile", str(REPO / "config" / f"{name}.yaml"), *stand_ins, "--profile",
               str(edited_profile(directory)), "--slurm-init-seconds-before-status-checks", "2", "--seconds-between-status-checks", "2",
               "--latency-wait", "10", "--verbose",
               # Each job fails on the GPU-less node: the profile's 3 retries would only run it 3 more times (the
               # retries are the interrupted-run test's below).
               "--retries", "0", f"{runs}/{method}/seed0/summary.json",
               f"{runs}/base/seed0/eval.json"]
    env = {**os.environ, **cluster.environment(),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_each_paper_config_submits_its_gpu_jobs_from_a_node_without_a_gpu(cluster, tmp_path):
    """`snakemake --profile profiles/slurm --configfile config/paper-<family>.yaml` from the controller (no
    GPU), the three configs at once: the train and evaluate jobs reach sbatch with the GPUs, cores, memory and
    wall time of the config's `resources:` and the partition and account of the profile; on the node, which
    has no CUDA device, each stops at once with the device message in its log."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the jobs would not stop at the device check")
    submissions = {name: submit_paper_jobs(name, tmp_path / name, cluster) for name in sorted(PAPER_JOBS)}
    outputs = {name: process.communicate(timeout=1200)[0] for name, process in submissions.items()}
    for name, output in outputs.items():
        config = load_config(REPO / "config" / f"{name}.yaml")
        task, method = PAPER_JOBS[name]
        work = tmp_path / name / "work"
        assert submissions[name].returncode != 0, f"{name}: the GPU jobs should have failed on a node without a GPU"
        assert "GPURequiredError" not in output.split("has been submitted with SLURM jobid")[0]  # onstart let it go
        calls = sbatch_calls(output)
        # A run longer than the wall limit starts with the first job of its chain (rule train_segment).
        chain = plan_training_chain(config, task)
        train_rule = "train" if len(chain) == 1 else "train_segment"
        assert set(calls) == {train_rule, "evaluate"}, output[-3000:]
        job_ids = dict(re.findall(r"rule_(train_segment|train|evaluate)/\S+?/(\d+)\.log", output))
        wall_minutes = wall_limit_hours(config) * 60
        for rule, arguments in calls.items():
            kind = "evaluate" if rule == "evaluate" else "train"
            asked = job_resources(config, task, kind)
            if rule == "train_segment":  # the first segment asks for its own share of the run's hours
                asked = {**asked, "runtime": chain[0].request_minutes()}
            print(f"{name} {rule}: {arguments}")  # the sbatch arguments, for the record
            for argument in (f"-p {GPU_PARTITION}", f"-A {ACCOUNT}", f"--gpus={asked['gpu']}",
                             f"--cpus-per-task={asked['cpus_per_task']}", f"--mem {asked['mem_mb']}",
                             f"-t {asked['runtime']}"):
                assert f" {argument} " in f" {arguments} ", (name, argument, arguments)
            assert "--cpus-per-gpu" not in arguments and 0 < asked["runtime"] <= wall_minutes
            assert kind == "evaluate" or " --nodes=1 " in f" {arguments} ", (name, rule, arguments)
            if kind == "train":  # SLURM warns it before its wall limit, and may requeue it (the profile)
                lead = warning_lead_seconds(config, task, asked["runtime"])
                assert f" --signal=URG@{lead} " in f" {arguments} " and " --requeue " in f" {arguments} ", arguments
            job = scontrol_job(job_ids[rule], cluster)
            assert (job["Partition"], job["Account"], job["TresPerJob"]) == (GPU_PARTITION, ACCOUNT,
                                                                              f"gres:gpu:{asked['gpu']}")
            assert int(job["NumCPUs"]) == asked["cpus_per_task"] and job["JobState"] == "FAILED", job
            who = method if kind == "train" else "base"
            suffix = ".segment1.log" if rule == "train_segment" else ".log"
            log = (work / f"results/{config['scale']}/logs/{rule}/{task}/{who}/seed0{suffix}").read_text()
            assert (f"{kind} job of task {task!r}" in log and f"asks for {asked['gpu']} GPU(s)" in log
                    and f"tasks.{task}.resources.{kind}.gpus" in log and "this node has 0" in log), log
            assert "Traceback" not in log  # the reason, not a stack


# --------------------------------------------------------------------------------------------------
# A train job warned before its wall limit, then requeued, resumes without a person
# --------------------------------------------------------------------------------------------------

#: The interrupted run (tests/test_chain.py's seed: its policy moves from the first steps, so a wrong resume shows).
INTERRUPTED_SEED = 4
INTERRUPTED_RUN = f"results/smoke/runs/arithmetic/gdpo/seed{INTERRUPTED_SEED}"


def _train_jobs(cluster: LocalSlurmCluster) -> dict[str, str]:
    """Job id → state of the cluster's train jobs (the plugin names each rule in the job's comment)."""
    listing = subprocess.run(["squeue", "-h", "--states=all", "-o", "%i|%k|%T"], capture_output=True, text=True,
                             check=True, env={**os.environ, **cluster.environment()}).stdout
    return {job: state for job, comment, state in (line.split("|") for line in listing.splitlines())
            if comment.startswith("rule_train_")}


def test_a_train_job_warned_before_its_limit_then_requeued_resumes_to_the_uninterrupted_run(cluster, tmp_path):
    """Through the SLURM profile, a run of 48 updates (2 per generation batch) is interrupted twice, and ends with
    the metrics and weights of the uninterrupted run:

    1. SLURM's warning before the wall limit: SIGURG to every process of the job's steps, as the train rules'
       `--signal=URG@<lead>` has SLURM send it (`scancel --signal=URG`, without waiting for the limit). The trainer
       saves at the next generation-batch boundary and exits 75; the job fails and Snakemake submits it again
       (the profile's `retries`), and the new job resumes from that checkpoint.
    2. A requeue, as a preemption does on a cluster with PreemptMode=REQUEUE (`scontrol requeue`; the profile
       submits with --requeue): SIGTERM, a checkpoint at the boundary, and SLURM runs the job again under the
       same id, which resumes from it. The plugin counts the job as running throughout.
    """
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config.update(methods=["gdpo"], seeds=[INTERRUPTED_SEED], reporting={})
    config["tasks"] = {"arithmetic": config["tasks"]["arithmetic"]}
    # Scheduled checkpoints only at 40: those before it are the interruptions'. Two updates per generation batch:
    # a signal after an odd update waits for the next even one.
    config["training"].update(max_steps=48, save_steps=40, steps_per_generation=2)
    path = tmp_path / "interrupted.yaml"
    path.write_text(yaml.safe_dump(config))
    target = f"{INTERRUPTED_RUN}/summary.json"
    local, on_slurm = tmp_path / "local", tmp_path / "slurm"
    env = {**os.environ, **cluster.environment(),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    workflow = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--configfile", str(path)]
    result = subprocess.run([*workflow, "--directory", str(local), "--cores", "2", target], env=env,
                            capture_output=True, text=True, timeout=1200, check=False)
    assert result.returncode == 0, result.stderr[-3000:]

    process = subprocess.Popen(
        [*workflow, "--directory", str(on_slurm), "--profile", str(REPO / "profiles/slurm"),
         "--set-resources", f"train:slurm_partition={CPU_PARTITION}", "--slurm-init-seconds-before-status-checks",
         "2", "--seconds-between-status-checks", "2", "--latency-wait", "10", "--verbose", target],
        env=env, stdout=(tmp_path / "snakemake.log").open("w"), stderr=subprocess.STDOUT, text=True)
    work = on_slurm / f"{INTERRUPTED_RUN}.work"
    seen: set[str] = set()  # every checkpoint the run had

    def wait_until(condition, what: str, timeout: float = 900):
        deadline = time.monotonic() + timeout
        while True:
            seen.update(p.name for p in work.glob("checkpoint-*"))
            value = condition()
            if value:
                return value
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"waiting for {what}: " + (tmp_path / "snakemake.log").read_text()[-5000:])
            time.sleep(0.2)

    def step() -> int:
        records = read_metrics(work / "metrics.jsonl", drop_cut_last_line=True)
        return records[-1]["step"] if records else 0

    def running() -> str | None:
        return next((job for job, state in _train_jobs(cluster).items() if state == "RUNNING"), None)

    try:
        first = wait_until(lambda: step() >= 3 and running(), "the train job's third update")
        subprocess.run(["scancel", "--signal=URG", first], check=True, env=env)  # the warning
        wait_until(lambda: _train_jobs(cluster)[first] not in ("RUNNING", "COMPLETING"), "the warned job's end")
        [warned] = {p.name for p in work.glob("checkpoint-*")}
        second = wait_until(lambda: (job := running()) != first and job, "the job submitted again")
        stopped = int(warned.split("-")[1])
        wait_until(lambda: step() >= stopped + 3, "the resumed job's third update")
        subprocess.run(["scontrol", "requeue", second], check=True, env=env)  # a preemption that requeues
        wait_until(lambda: process.poll() is not None, "the workflow's end", timeout=1200)
    finally:
        if process.poll() is None:
            process.kill()
    output = (tmp_path / "snakemake.log").read_text()
    assert process.returncode == 0, output[-5000:]

    # The end of training saves at max_steps too (transformers' own save), seen only where a poll falls in the moment
    # before the finished run's work directory goes: not an interruption's, so not counted.
    steps = sorted(step for step in (int(name.split("-")[1]) for name in seen) if step != 48)
    # The warning's checkpoint, then the requeue's, each on a generation-batch boundary; then the scheduled one.
    assert len(steps) == 3 and steps[0] == stopped and steps[2] == 40 and all(s % 2 == 0 for s in steps), steps
    requeued = steps[1]
    assert 3 <= stopped < requeued < 40
    summary = json.loads((on_slurm / target).read_text())
    assert summary["resumed_from"].endswith(f"checkpoint-{requeued}") and summary["steps"] == 48
    assert "Trying to restart job" in output  # Snakemake's retry of the warned job
    call = next(line for line in output.splitlines() if line.startswith("sbatch call: ") and "rule_train_" in line)
    assert " --signal=URG@600 " in call and " --requeue " in call, call  # a CPU config's lead: 10 minutes
    assert scontrol_job(first, cluster)["JobState"] == "FAILED"
    job = scontrol_job(second, cluster)
    assert (job["JobState"], job["Restarts"]) == ("COMPLETED", "1"), job  # the same job, run again by SLURM
    assert not work.exists()
    assert behaviour(on_slurm / INTERRUPTED_RUN / "metrics.jsonl") == behaviour(local / INTERRUPTED_RUN / "metrics.jsonl")
    import torch
    from safetensors.torch import load_file

    weights, expected = (load_file(run / INTERRUPTED_RUN / "model" / "model.safetensors") for run in (on_slurm, local))
    assert weights.keys() == expected.keys() and all(torch.equal(weights[k], expected[k]) for k in weights)
