"""What each job asks for: resources from the config (gdpo.plan.job_resources), cluster names from the profile,
the GPU environment for GPU configs, the device check of a GPU job, and the bill (`gdpo plan`)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gdpo.cli import main
from gdpo.config import ConfigError, apply_miniature, load_config, validate_config
from gdpo.plan import (
    check_job_resources,
    DEFAULT_WALL_LIMIT_HOURS,
    RUNTIME_SAFETY,
    device_check_command,
    job_env_file,
    job_resources,
    plan_evaluations,
    plan_runs,
    plan_training_chain,
    task_resources,
    train_segments,
    wall_limit_hours,
)
from gdpo.reporting.bill import claim_cost_table, job_table
from tests.stand_ins import stand_in_inputs

REPO = Path(__file__).resolve().parents[1]
PAPER_CONFIGS = ["paper-tool_calling", "paper-math", "paper-code"]


def paper(name: str) -> dict:
    return load_config(REPO / "config" / f"{name}.yaml")


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_every_paper_task_states_its_jobs_needs_and_they_fit_the_wall_limit(name):
    config = paper(name)
    assert config["gpu"]["per_node"] == 8 and wall_limit_hours(config) == 24
    for task in config["tasks"]:
        train, evaluate = job_resources(config, task, "train"), job_resources(config, task, "evaluate")
        needs = task_resources(config, task)
        # one 8-GPU node per train job, as many processes as GPUs; one GPU per evaluation
        assert train["gpu"] == config["launch"]["num_processes"] == config["gpu"]["per_node"]
        assert train["nodes"] == 1  # sbatch --nodes=1: SLURM may not spread the 8 GPUs over nodes
        assert evaluate["gpu"] == 1
        assert train["cpus_per_task"] == 8 * needs["train"]["cpus_per_gpu"]
        assert evaluate["cpus_per_task"] == needs["evaluate"]["cpus_per_gpu"]
        for asked, kind in ((train, "train"), (evaluate, "evaluate")):
            assert asked["mem_mb"] == needs[kind]["mem_mb"]
        assert evaluate["runtime"] == math.ceil(min(24, needs["evaluate"]["hours"] * RUNTIME_SAFETY) * 60) <= 24 * 60
        # the train job asks for its longest segment's hours with the margin; the chain covers the whole run
        chain = plan_training_chain(config, task)
        assert train["runtime"] == max(segment.request_minutes() for segment in chain) <= 24 * 60
        assert len(chain) == train_segments(config, task)
        assert sum(segment.hours for segment in chain) == pytest.approx(needs["train"]["hours"])


def test_a_long_run_is_a_chain_of_jobs_and_a_short_one_is_one():
    math_config = paper("paper-math")
    assert task_resources(math_config, "math_r1_7b")["train"]["hours"] == 100
    assert train_segments(math_config, "math_r1_7b") == 7  # 100 h in segments of at most 24 / 1.5 h
    assert 20 * 60 < job_resources(math_config, "math_r1_7b", "train")["runtime"] <= 24 * 60
    assert train_segments({**math_config, "wall_limit_hours": 72}, "math_r1_7b") == 3
    tool = paper("paper-tool_calling")
    assert train_segments(tool, "tool_calling_3b") == 1
    assert job_resources(tool, "tool_calling_3b", "train")["runtime"] == 360  # 4 h × 1.5


@pytest.mark.parametrize("name", ["smoke", "mini"])
def test_cpu_scale_jobs_ask_for_no_gpu_and_use_the_cpu_environment(name):
    config = load_config(REPO / "config" / f"{name}.yaml")
    task = next(iter(config["tasks"]))
    assert task_resources(config, task) == {} and wall_limit_hours(config) == DEFAULT_WALL_LIMIT_HOURS
    asked = job_resources(config, task, "train")
    assert asked == {"gpu": 0, "cpus_per_task": config.get("job_threads", 2), "mem_mb": 4000, "runtime": 24 * 60,
                     "nodes": 1}
    assert job_env_file(config) == "envs/train.yaml"
    assert device_check_command("train", task, "gdpo", 0, asked["gpu"]) == ""


def test_a_paper_config_in_miniature_asks_for_no_gpu():
    overlay = yaml.safe_load((REPO / "config/overlays/miniature.yaml").read_text())
    config = apply_miniature({**paper("paper-math"), **overlay})
    validate_config(config)
    assert "gpu" not in config and job_env_file(config) == "envs/train.yaml"
    assert all(job_resources(config, task, kind)["gpu"] == 0 for task in config["tasks"]
               for kind in ("train", "evaluate"))


@pytest.mark.parametrize(("change", "complaint"), [
    ({"gpus": -1}, "gpus"), ({"hours": -1}, "hours"), ({"memory": 1}, "memory"),
])
def test_the_schema_refuses_a_bad_resources_block(change, complaint):
    config = paper("paper-code")
    train = {**config["tasks"]["code_r1_7b"]["resources"]["train"], **change}
    config["tasks"]["code_r1_7b"] = {**config["tasks"]["code_r1_7b"],
                                     "resources": {**config["tasks"]["code_r1_7b"]["resources"], "train": train}}
    with pytest.raises(ConfigError, match=complaint):
        validate_config(config)


def test_the_slurm_profile_holds_cluster_names_only():
    text = (REPO / "profiles/slurm/config.yaml").read_text()
    profile = yaml.safe_load(text)
    # no resource parsed out of a task name, no setting the pinned plugin does not read
    assert "wildcards" not in text and "slurm-no-account" not in profile
    # every GPU rule (a chained run starts with train_segment jobs) goes to the GPU partition
    assert set(profile["set-resources"]) == {"train", "train_segment", "evaluate"}
    for rule in profile["set-resources"].values():
        assert set(rule) <= {"slurm_partition", "constraint", "qos", "slurm_account"}
    # a CPU job's requests; cpus_per_task would override every GPU job's cores (the plugin reads it first)
    assert set(profile["default-resources"]) <= {"slurm_partition", "slurm_account", "qos", "runtime", "mem_mb"}
    assert "YOUR CLUSTER: EDIT THIS BLOCK" in text


def test_train_and_evaluate_rules_select_the_gpu_environment_for_a_paper_config(tmp_path):
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings

    for name, expected in (("paper-code", "envs/train-gpu.yaml"), ("smoke", "envs/train.yaml")):
        # the paper config's hub models and data: stand-ins (gdpo fetch gets them), in a cache of the test's own
        hf_home = stand_in_inputs([REPO / "config" / f"{name}.yaml"], tmp_path)[1].split("=", 1)[1]
        with SnakemakeApi(OutputSettings()) as api:
            workflow = api.workflow(
                snakefile=REPO / "Snakefile", workdir=tmp_path,
                config_settings=ConfigSettings(configfiles=[REPO / "config" / f"{name}.yaml"],
                                               config={"hf_home": hf_home}),
                resource_settings=ResourceSettings(cores=1), storage_settings=StorageSettings())
            # the parsed workflow's rules (the API has no public accessor for a rule's conda directive)
            rules = {rule.name: rule for rule in workflow._workflow.rules}
            for rule in ("train", "evaluate"):
                assert rules[rule].conda_env == f"../../{expected}", (name, rule)


def test_the_slurm_profile_plans_paper_jobs_with_the_configs_requests(tmp_path):
    arguments = stand_in_inputs([REPO / "config/paper-math.yaml"], tmp_path)  # the hub models and data, fetched
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
         "--profile", str(REPO / "profiles/slurm"), "--configfile", str(REPO / "config/paper-math.yaml"),
         *arguments, "-n"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = (result.stdout + result.stderr).split("\nrule ")
    train = [job for job in jobs if job.startswith("train:") and "task=math_r1_7b," in job]
    evaluate = [job for job in jobs if job.startswith("evaluate:") and "task=math_r1_7b," in job]
    config = paper("paper-math")
    assert len(train) == sum(r.task == "math_r1_7b" for r in plan_runs(config)) == 6
    assert len(evaluate) == sum(e.task == "math_r1_7b" for e in plan_evaluations(config))
    for job in train:
        runtime = job_resources(config, "math_r1_7b", "train")["runtime"]
        assert all(f in job for f in ("gpu=8", "cpus_per_task=64", "mem_mb=512000", f"runtime={runtime}",
                                      "slurm_partition=gpu", "check-device --job train --task math_r1_7b"))
    for job in evaluate:
        assert all(f in job for f in ("gpu=1", "cpus_per_task=16", "mem_mb=128000", "runtime=900",
                                      "slurm_partition=gpu", "check-device --job evaluate"))


def test_a_gpu_job_on_a_machine_without_its_gpus_stops_naming_itself(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert main(["check-device", "--job", "train", "--task", "math_r1_7b", "--method", "gdpo", "--seed", "2",
                 "--gpus", "8"]) == 3
    message = capsys.readouterr().err
    for part in ("train job of task 'math_r1_7b', method 'gdpo', seed 2 (rule train)", "asks for 8 GPU(s)",
                 "tasks.math_r1_7b.resources.train.gpus", "this node has 0", "GPU partition"):
        assert part in message, message
    assert main(["check-device", "--job", "evaluate", "--task", "t", "--method", "base", "--seed", "0",
                 "--gpus", "0"]) == 0


def test_the_bill_counts_every_run_and_evaluation_at_the_configs_hours():
    config = paper("paper-math")
    table = job_table(config)
    runs, evaluations = plan_runs(config), plan_evaluations(config)
    expected_train = sum(task_resources(config, r.task)["train"]["hours"] * 8 for r in runs)
    expected_eval = sum(task_resources(config, e.task)["evaluate"]["hours"] for e in evaluations)
    train, evaluate = table[table["kind"] == "train"], table[table["kind"] == "evaluate"]
    assert train["GPU-h"].sum() == pytest.approx(expected_train) == 43_800  # Fig. 6's sweep on R1-7B: most of it
    assert evaluate["GPU-h"].sum() == pytest.approx(expected_eval)
    assert train["runs"].sum() == len(runs) and evaluate["jobs"].sum() == len(evaluations)
    assert train["jobs"].sum() == sum(train_segments(config, r.task) for r in runs)


def test_each_claims_seeds_are_priced_from_its_tasks_runs():
    config = paper("paper-code")
    claims = claim_cost_table(config, replicates=50).set_index("claim")
    assert set(claims.index) == {"C9"}
    per_run = 8 * 7.0 + 1 * 5.0  # train + evaluate GPU-hours of one code_r1_7b / code_3obj_r1_7b run
    row = claims.loc["C9"]
    assert row["tasks"] == "code_r1_7b, code_3obj_r1_7b" and row["GPU-h"] == 3 * 2 * 2 * per_run
    assert row["GPU-h at those seeds"] == row["seeds for 80% power"] * 2 * 2 * per_run


@pytest.mark.slow  # simulates each claim's power (about a minute on 2 cores)
def test_gdpo_plan_prints_the_bill(capsys):
    assert main(["plan", "--config", str(REPO / "config/paper-tool_calling.yaml")]) == 0
    out = capsys.readouterr().out
    assert "total: 25 jobs" not in out  # evaluations are jobs too
    assert "train: 25 jobs (25 runs)" in out and "evaluate: 27 jobs (27 evaluations)" in out
    assert "node-days of one 8-GPU node" in out and "seeds for 80% power" in out and "C3" in out


def test_a_tasks_gpus_must_fit_its_launch_and_one_node():
    config = paper("paper-math")
    check_job_resources(config)
    with pytest.raises(ValueError, match="resources.train.gpus is 8 but launch.num_processes is 4"):
        check_job_resources({**config, "launch": {**config["launch"], "num_processes": 4}})
    with pytest.raises(ValueError, match="more than the 4 GPUs of one node"):
        check_job_resources({**config, "gpu": {**config["gpu"], "per_node": 4}, "launch": {"num_processes": 8}})


def test_a_cpu_task_states_hours_alone_and_gets_a_cpu_job():
    """A CPU cluster's task: `hours` alone (a chain when longer than the wall limit), `cpus`/`mem_mb` optional."""
    config = {**paper("paper-code"), "wall_limit_hours": 2.0}
    config.pop("gpu")
    task = "code_r1_7b"
    config["tasks"][task] = {**config["tasks"][task], "resources": {"train": {"hours": 4.0, "cpus": 6}}}
    validate_config(config)
    check_job_resources(config)
    assert job_resources(config, task, "train")["gpu"] == 0
    assert job_resources(config, task, "train")["cpus_per_task"] == 6
    assert job_resources(config, task, "evaluate")["runtime"] == 120  # no evaluate block: the wall limit
    assert train_segments(config, task) >= 3  # 4 h over 2 h / 1.5 per job (segments end on generation batches)


@pytest.mark.parametrize(("train", "complaint"), [
    ({"gpus": 0, "cpus_per_gpu": 8, "hours": 1.0}, "state its cores as `cpus:`"),
    ({"gpus": 8, "cpus_per_gpu": 8, "mem_mb": 1000, "cpus": 4, "hours": 1.0}, "Remove `cpus:`"),
])
def test_a_jobs_cores_are_stated_the_way_its_kind_needs(train, complaint):
    config = paper("paper-code")
    config["tasks"]["code_r1_7b"] = {**config["tasks"]["code_r1_7b"],
                                     "resources": {**config["tasks"]["code_r1_7b"]["resources"], "train": train}}
    with pytest.raises(ValueError, match=complaint):
        check_job_resources(config)


def test_a_gpu_job_must_state_its_cores_and_memory():
    config = paper("paper-code")
    config["tasks"]["code_r1_7b"] = {**config["tasks"]["code_r1_7b"],
                                     "resources": {"train": {"gpus": 8, "hours": 1.0}}}
    with pytest.raises(ConfigError, match="cpus_per_gpu"):
        validate_config(config)


def test_a_cpu_configs_bill_prices_its_runs_from_the_measured_step_times(tmp_path):
    """gdpo plan for a CPU config: each family's measured seconds per step and samples per second (the record
    benchmarks/cpu_evidence_speed.py --record writes) times the config's steps and evaluated samples."""
    import json

    from gdpo.reporting.bill import cpu_hours_table, format_cpu_hours, load_step_times

    config = paper("cpu-evidence")
    record = {"measured": {"date": "2026-11-28", "runs": ["x"]},
              "families": {"math": {"seconds_per_step": 3.6, "eval_samples_per_second": 4.0},
                           "tool_calling": {"seconds_per_step": 36.0}}}
    table = cpu_hours_table(config, record).set_index(["task", "kind"])
    # math: 12 runs × 500 steps × 3.6 s = 6 h; 18 evaluations × 200 items × 2 samples / 4 per s = 0.5 h
    assert table.loc[("math", "train"), "CPU-h"] == pytest.approx(6.0)
    assert table.loc[("math", "evaluate"), "CPU-h"] == pytest.approx(0.5)
    assert table.loc[("tool_calling", "train"), "CPU-h"] == pytest.approx(9 * 100 * 36 / 3600)
    assert math.isnan(table.loc[("tool_calling", "evaluate"), "CPU-h"])  # nothing measured: not guessed
    text = "\n".join(format_cpu_hours(config, record, cores=2))
    assert "total: 15.5 CPU-h = 7.8 h of wall time as 2 one-thread jobs" in text and "not measured" in text
    (tmp_path / "bad.json").write_text(json.dumps({"measured": {}}))
    with pytest.raises(ValueError, match="no 'families'"):
        load_step_times(tmp_path / "bad.json")
    assert load_step_times(tmp_path / "absent.json") is None
