"""The multi-process trainer on CPU: the real ``python -m gdpo train`` under ``accelerate launch`` with 2 processes.

The launch is the one a config's ``launch:`` section produces (:func:`gdpo.plan.launcher_command`), with
the paper's accelerate config (DeepSpeed ZeRO-3 on 8 GPUs) replaced by ``envs/accelerate/cpu_multiprocess.yaml``
(2 processes on CPU, gloo). The run is the smoke arithmetic task on the tiny model, with the rollout engine and
prompt packing off (the paper configs use neither; the engine is single-process only) and bf16 off (CPU).

Every process records what it trains on in the advantage audit (``GDPO_ADVANTAGE_AUDIT``), so the test checks:

- each step's advantages, concatenated over the processes, are the single-process computation on the gathered
  batch (for GDPO the batch step spans every process's groups: per-process batch steps would differ);
- only the main process writes the run's files (one metrics record per step, ``num_processes`` 2);
- a run killed after a checkpoint resumes under 2 processes, with the metrics and model of an uninterrupted run;
- the metrics file has the shape of a single-process run's.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from gdpo.advantages import compute_advantages
from gdpo.plan import RunSettings, launcher_command, resolve_run_settings
from gdpo.training.run import ADVANTAGE_AUDIT_ENV, TIMING_KEYS, read_metrics, train

REPO = Path(__file__).resolve().parents[1]
PROCESSES = 2
STEPS = 6
#: The launch: the paper configs' `launch:` section with the device and the process count changed.
LAUNCH = {"launch": {"accelerate_config": "envs/accelerate/cpu_multiprocess.yaml", "num_processes": PROCESSES}}
RUN_FILES = {"config.json", "env.json", "metrics.jsonl", "model", "summary.json"}
TIMEOUT = 600


def run_settings(method: str) -> RunSettings:
    """The smoke arithmetic run (seed 0) for `STEPS` steps with a checkpoint every 2, as the paper runs it:
    TRL's generation, padded micro-batches."""
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config.update(fast_generation=False, pack_prompts=False)
    config["training"].update(max_steps=STEPS, save_steps=2, bf16=False)
    return resolve_run_settings(config, "arithmetic", method, 0)


def start(settings: RunSettings, model_dir: Path, run_dir: Path, audit_dir: Path, log: Path) -> subprocess.Popen:
    """`{launcher} -m gdpo train …` as the train rule runs it, from the repository, in a session of its own."""
    command = [*shlex.split(launcher_command(LAUNCH)), "-m", "gdpo", "train", "--settings", settings.to_json(),
               "--model-dir", str(model_dir), "--run-dir", str(run_dir), "--threads", "1"]
    env = {**os.environ,
           # `accelerate` and the processes' `python` are this interpreter's; `gdpo` is this checkout's.
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
           ADVANTAGE_AUDIT_ENV: str(audit_dir)}
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "ACCELERATE_USE_CPU"):
        env.pop(name, None)
    with log.open("w") as handle:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def launch(settings: RunSettings, model_dir: Path, run_dir: Path, audit_dir: Path, log: Path) -> dict:
    """Run to the end; the summary the main process wrote."""
    process = start(settings, model_dir, run_dir, audit_dir, log)
    try:
        returncode = process.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        kill_tree(process)
        pytest.fail(f"the {PROCESSES}-process run took over {TIMEOUT} s; log tail:\n{_tail(log)}")
    assert returncode == 0, f"the {PROCESSES}-process run failed ({returncode}); log tail:\n{_tail(log)}"
    return json.loads((run_dir / "summary.json").read_text())


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the launcher and every process under it (torchrun starts each worker in a session of its own)."""
    import psutil

    try:
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for member in tree:
        try:
            member.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(tree, timeout=30)
    process.wait()


def audit(audit_dir: Path, method: str) -> dict[int, list[dict]]:
    """step → the records of its last generation (one per process, in process order)."""
    records: dict[tuple[int, int], dict] = {}
    for path in sorted((audit_dir / "arithmetic" / method / "seed0").glob("advantages.process*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:  # the line being written when the run was killed
                continue
            records[record["step"], record["process_index"]] = record  # a resumed step's last record trained
    steps = sorted({step for step, _ in records})
    return {step: [records[step, k] for k in range(PROCESSES)] for step in steps}


def behaviour(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


def check_advantages(per_step: dict[int, list[dict]], method: str) -> int:
    """Each step's advantages are the single-process computation on the gathered batch; returns the number of
    steps where each process's own batch step gives other advantages."""
    assert sorted(per_step) == list(range(1, STEPS + 1))
    steps_where_processes_differ = 0
    for step, records in per_step.items():
        first = records[0]
        assert [r["process_index"] for r in records] == list(range(PROCESSES))
        assert all(r["num_processes"] == PROCESSES and r["method"] == method and r["mode"] == "train"
                   for r in records)
        for key in ("rewards", "completion_lengths", "reward_weights", "num_generations", "convention"):
            assert all(r[key] == first[key] for r in records), (step, key)  # every process saw the gathered batch
        names = list(first["rewards"])
        rewards = torch.tensor([[float("nan") if v is None else v for v in first["rewards"][name]] for name in names],
                               dtype=torch.float32).T
        lengths = torch.tensor(first["completion_lengths"])
        rows = rewards.shape[0]
        assert rows == PROCESSES * len(first["advantages"]) and rows % first["num_generations"] == 0
        assert [r["rows"] for r in records] == [[k * rows // PROCESSES, (k + 1) * rows // PROCESSES]
                                               for k in range(PROCESSES)]
        arguments = dict(num_generations=first["num_generations"], method=method, weights=first["reward_weights"],
                         convention=first["convention"])
        expected = compute_advantages(rewards, response_lengths=lengths, **arguments)
        trained = torch.tensor([a for r in records for a in r["advantages"]], dtype=torch.float32)
        torch.testing.assert_close(trained, expected, atol=1e-6, rtol=1e-5, msg=f"step {step}")

        # Each process with its own rows only (whole groups: per-device batch is a multiple of G).
        local_size = rows // PROCESSES
        assert local_size % first["num_generations"] == 0
        per_process = torch.cat([
            compute_advantages(rewards[k * local_size:(k + 1) * local_size],
                               response_lengths=lengths[k * local_size:(k + 1) * local_size], **arguments)
            for k in range(PROCESSES)])
        if not torch.allclose(per_process, expected, atol=1e-4, rtol=0):
            steps_where_processes_differ += 1
    return steps_where_processes_differ


@pytest.mark.slow  # three 2-process runs (about 40 s on 2 cores); the per-group advantages stay in the quick tier
def test_two_process_gdpo_trains_on_the_gathered_batch_writes_once_and_resumes(tiny_model, tmp_path):
    settings = run_settings("gdpo")
    audit_dir = tmp_path / "audit"

    # An uninterrupted 2-process run.
    whole = tmp_path / "whole" / "seed0"
    summary = launch(settings, tiny_model, whole, audit_dir / "whole", tmp_path / "whole.log")

    # (a) the advantages each process trained on are GDPO on the gathered batch, whose batch step spans both
    # processes' groups: computed per process, they differ (at least one step of this seed has reward spread).
    assert check_advantages(audit(audit_dir / "whole", "gdpo"), "gdpo") >= 1

    # (b) only the main process wrote the run's files.
    assert {p.name for p in whole.parent.iterdir()} == {"seed0"}  # the work dir is gone
    assert {p.name for p in whole.iterdir()} == RUN_FILES
    metrics = read_metrics(whole / "metrics.jsonl")
    assert [r["step"] for r in metrics] == list(range(1, STEPS + 1))
    config = json.loads((whole / "config.json").read_text())
    assert config["num_processes"] == PROCESSES and config["method"] == "gdpo"
    assert summary["steps"] == STEPS and summary["resumed_from"] is None
    assert (whole / "model" / "model.safetensors").is_file()

    # (c) killed (SIGKILL, every process) after its first checkpoint, then the same command again: it resumes.
    killed = tmp_path / "killed" / "seed0"
    log = tmp_path / "killed.log"
    process = start(settings, tiny_model, killed, audit_dir / "killed", log)
    work = Path(f"{killed}.work")
    deadline = time.time() + TIMEOUT
    # a checkpoint every process has finished: the main one's state and each process's random state
    while not any((c / "trainer_state.json").exists() and all((c / f"rng_state_{rank}.pth").exists()
                                                             for rank in range(PROCESSES))
                  for c in work.glob("checkpoint-*")):
        assert process.poll() is None, f"the run ended before it could be killed; log tail:\n{_tail(log)}"
        assert time.time() < deadline, f"no checkpoint appeared; log tail:\n{_tail(log)}"
        time.sleep(0.02)
    kill_tree(process)
    assert not (killed / "summary.json").exists(), "the run finished before the kill; make it longer"
    resumed = launch(settings, tiny_model, killed, audit_dir / "killed", tmp_path / "resumed.log")
    assert resumed["resumed_from"] and "checkpoint-" in resumed["resumed_from"]
    resumed_metrics = read_metrics(killed / "metrics.jsonl")
    assert [r["step"] for r in resumed_metrics] == list(range(1, STEPS + 1))
    assert {p.name for p in killed.iterdir()} == RUN_FILES
    check_advantages(audit(audit_dir / "killed", "gdpo"), "gdpo")
    # On CPU the resumed run is the uninterrupted one: same metrics, same weights.
    assert behaviour(resumed_metrics) == behaviour(metrics)
    from safetensors.torch import load_file

    final, final_resumed = (load_file(run / "model" / "model.safetensors") for run in (whole, killed))
    assert final.keys() == final_resumed.keys()
    assert all(torch.equal(final[name], final_resumed[name]) for name in final)

    # (d) a single-process run of the same settings writes metrics of the same shape.
    single = tmp_path / "single" / "seed0"
    train(settings, tiny_model, single, threads=1)
    single_metrics = read_metrics(single / "metrics.jsonl")
    assert len(single_metrics) == len(metrics) == STEPS
    assert [set(r) for r in metrics] == [set(r) for r in single_metrics]
    assert json.loads((single / "config.json").read_text())["num_processes"] == 1


def test_two_process_grpo_advantages_are_per_group(tiny_model, tmp_path):
    """GRPO has no batch step: the gathered computation equals each process's own (the contrast to GDPO)."""
    settings = run_settings("grpo")
    run = tmp_path / "run" / "seed0"
    launch(settings, tiny_model, run, tmp_path / "audit", tmp_path / "run.log")
    assert check_advantages(audit(tmp_path / "audit", "grpo"), "grpo") == 0
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == list(range(1, STEPS + 1))
    assert json.loads((run / "config.json").read_text())["num_processes"] == PROCESSES


# --------------------------------------------------------------------------------------------------
# Fast checks of the pieces the 2-process runs rely on
# --------------------------------------------------------------------------------------------------


def test_cpu_launch_differs_from_the_papers_only_in_device_and_process_count():
    assert launcher_command(LAUNCH) == (
        "accelerate launch --config_file envs/accelerate/cpu_multiprocess.yaml --num_processes 2")
    paper = yaml.safe_load((REPO / "envs/accelerate/deepspeed_zero3.yaml").read_text())
    cpu = yaml.safe_load((REPO / LAUNCH["launch"]["accelerate_config"]).read_text())
    changed = {key for key in paper.keys() | cpu.keys() if paper.get(key) != cpu.get(key)}
    # Device: no DeepSpeed (CUDA only), torchrun's processes on CPU, no bf16; a free port per launch.
    assert changed == {"deepspeed_config", "distributed_type", "gpu_ids", "main_process_port", "mixed_precision",
                       "num_processes", "use_cpu"}
    assert cpu["distributed_type"] == "MULTI_GPU" and cpu["use_cpu"] is True and cpu["mixed_precision"] == "no"
    assert cpu["num_processes"] == PROCESSES


def test_a_multi_process_launch_without_cuda_runs_on_cpu(monkeypatch):
    from gdpo.training import run

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in ("ACCELERATE_USE_CPU", "WORLD_SIZE"):  # set, then removed: monkeypatch restores the original state
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    run.use_cpu_when_launched_without_cuda()
    assert run.launched_processes() == 1 and "ACCELERATE_USE_CPU" not in os.environ  # one process: unchanged
    monkeypatch.setenv("WORLD_SIZE", "2")
    run.use_cpu_when_launched_without_cuda()
    assert run.launched_processes() == 2 and os.environ["ACCELERATE_USE_CPU"] == "true"


def _reward_sometimes_none(completions, **kwargs):
    return [None if i % 3 == 0 else float(len(str(c)) % 2) for i, c in enumerate(completions)]


def _reward_length(completions, **kwargs):
    return [float(len(str(c))) for c in completions]


def _audited_trainer(model_dir: Path, out_dir: Path, **extra):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from gdpo.tasks import arithmetic
    from gdpo.training.trainer import RegistryGRPOTrainer

    arguments = GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=8, num_generations=4,
                           max_completion_length=8, reward_weights=[1.0, 0.5], report_to="none", bf16=False,
                           loss_type="grpo", beta=0.0)
    trainer = RegistryGRPOTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir),
                                  reward_funcs=[_reward_sometimes_none, _reward_length], args=arguments,
                                  train_dataset=arithmetic.build_dataset("train", 8, seed=0),
                                  processing_class=AutoTokenizer.from_pretrained(model_dir),
                                  advantage_method="gdpo", **extra)
    trainer.model.train()
    batch = [row for row in arithmetic.build_dataset("train", 2, seed=1) for _ in range(4)]
    return trainer, trainer._generate_and_score_completions(batch)


def test_advantage_audit_records_the_batch_and_the_advantages_that_train(tiny_model, tmp_path):
    trainer, output = _audited_trainer(tiny_model, tmp_path / "out", advantage_audit_dir=tmp_path / "audit")
    lines = (tmp_path / "audit" / "advantages.process0.jsonl").read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert {k: record[k] for k in ("step", "mode", "process_index", "num_processes", "rows", "method", "convention",
                                   "num_generations", "reward_weights")} == {
        "step": 1, "mode": "train", "process_index": 0, "num_processes": 1, "rows": [0, 8], "method": "gdpo",
        "convention": "trl", "num_generations": 4, "reward_weights": [1.0, 0.5]}
    assert list(record["rewards"]) == trainer.reward_func_names
    assert record["rewards"]["_reward_sometimes_none"][0] is None  # no reward: null, not NaN
    assert record["completion_lengths"] == output["completion_mask"].sum(dim=1).tolist()
    assert record["advantages"] == output["advantages"].double().tolist()  # what trains, exactly
    rewards = torch.tensor([[float("nan") if v is None else v for v in column]
                            for column in record["rewards"].values()], dtype=torch.float32).T
    torch.testing.assert_close(
        compute_advantages(rewards, 4, "gdpo", record["reward_weights"], record["convention"],
                           torch.tensor(record["completion_lengths"])),
        torch.tensor(record["advantages"], dtype=torch.float32))

    # Off by default: nothing written.
    trainer, _ = _audited_trainer(tiny_model, tmp_path / "default")
    assert trainer.advantage_audit_dir is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit", "default", "out"]
