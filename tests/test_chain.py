"""Training within a wall limit: a run cut into a chain of jobs, or stopped by a signal and resumed, ends with the
model and metrics of the uninterrupted run, bit for bit (CPU, the tiny Qwen2 model of the smoke config).

- the plan (:func:`gdpo.plan.plan_training_chain`): segments of whole optimizer steps on generation-batch
  boundaries, each job's runtime request within the wall limit; one segment where no hours are stated;
- ``train(..., stop_at_step=...)`` three times equals one ``train``;
- a job sent SIGUSR1 mid-segment saves a checkpoint after the step in progress and stops
  (:class:`gdpo.training.run.TrainingInterrupted`; ``python -m gdpo train`` exits 75), and the same job resumes
  from it;
- the workflow runs a 3-job chain (``train_segment`` × 2, then ``train``) to the uninterrupted run's files;
- a checkpoint resumes only under the settings it was trained with (``run_settings.json`` in ``<run>.work``):
  under changed ones, or none recorded, training stops naming the differences and the fix, and
  ``restart_changed`` trains the run afresh.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from gdpo.plan import (
    CHAIN_SAFETY_FACTOR,
    DEFAULT_WALL_LIMIT_HOURS,
    optimizer_steps_per_generation,
    plan_training_chain,
    resolve_run_settings,
    task_resources,
    train_launcher,
    wall_limit_hours,
)
from gdpo.training.run import (
    INTERRUPTED_EXIT_CODE,
    RUN_IDENTITY_FILE,
    TIMING_KEYS,
    SettingsChanged,
    TrainingInterrupted,
    read_metrics,
    run_identity,
    train,
)

REPO = Path(__file__).resolve().parents[1]
#: A seed whose rollouts give some group a reward spread early (the tiny random model rarely earns a reward), so
#: that the policy moves and a wrong resume would show.
SEED = 4


def smoke_config(max_steps: int, save_steps: int) -> dict:
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config.update(methods=["gdpo"], seeds=[SEED])
    config["tasks"] = {"arithmetic": config["tasks"]["arithmetic"]}
    config["training"].update(max_steps=max_steps, save_steps=save_steps)
    return config


def behaviour(path: Path) -> list[dict]:
    """The run's metrics without the wall-clock fields."""
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in read_metrics(path)]


def assert_same_run(run: Path, reference: Path) -> None:
    """Metrics (but wall-clock fields) equal, and every weight tensor bitwise equal."""
    assert behaviour(run / "metrics.jsonl") == behaviour(reference / "metrics.jsonl")
    weights, expected = (load_file(path / "model" / "model.safetensors") for path in (run, reference))
    assert weights.keys() == expected.keys()
    difference = max((weights[name] - expected[name]).abs().max().item() for name in weights)
    assert difference == 0.0 and all(torch.equal(weights[name], expected[name]) for name in weights)


# --------------------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------------------


def paper_math() -> dict:
    return yaml.safe_load((REPO / "config/paper-math.yaml").read_text())


def test_a_run_without_stated_hours_is_one_job():
    config = smoke_config(4, 2)
    assert task_resources(config, "arithmetic") == {}
    assert wall_limit_hours(config) == DEFAULT_WALL_LIMIT_HOURS == 24.0
    [segment] = plan_training_chain(config, "arithmetic")
    assert (segment.index, segment.start_step, segment.end_step, segment.hours) == (1, 0, 4, None)
    assert segment.request_minutes() is None


@pytest.mark.parametrize(("hours", "limit", "jobs"), [(22.0, 24, 2), (150.0, 24, 10), (150.0, 72, 4), (10.0, 24, 1)])
def test_a_long_run_is_cut_into_jobs_within_the_wall_limit(hours, limit, jobs):
    config = paper_math()
    config["wall_limit_hours"] = limit
    config["tasks"]["math_r1_7b"]["resources"] = {"train": {"gpus": 8, "hours": hours}}
    chain = plan_training_chain(config, "math_r1_7b")
    assert len(chain) == jobs
    assert [s.index for s in chain] == list(range(1, jobs + 1))
    assert chain[0].start_step == 0 and chain[-1].end_step == config["training"]["max_steps"]
    assert all(a.end_step == b.start_step for a, b in zip(chain, chain[1:]))
    assert sum(s.hours for s in chain) == pytest.approx(hours)
    assert all(s.request_minutes() <= limit * 60 for s in chain)  # every job's request fits the limit
    assert all(s.hours <= limit / CHAIN_SAFETY_FACTOR + 1e-9 for s in chain)


def test_segments_end_on_generation_batch_boundaries():
    config = paper_math()
    # 8 optimizer updates per generation batch (steps_per_generation = 8 × gradient accumulation).
    config["training"].update(gradient_accumulation_steps=64, steps_per_generation=512)
    assert optimizer_steps_per_generation(config["training"]) == 8
    assert optimizer_steps_per_generation({"gradient_accumulation_steps": 4}) == 1
    assert optimizer_steps_per_generation({"gradient_accumulation_steps": 4, "num_iterations": 2}) == 2
    assert optimizer_steps_per_generation({"gradient_accumulation_steps": 4, "steps_per_generation": 6}) == 3
    config["tasks"]["math_r1_7b"]["resources"] = {"train": {"hours": 150.0}}
    chain = plan_training_chain(config, "math_r1_7b")
    assert all(s.end_step % 8 == 0 for s in chain[:-1]) and chain[-1].end_step == config["training"]["max_steps"]
    assert all(s.request_minutes() <= 24 * 60 for s in chain)


def test_a_generation_batch_longer_than_a_job_is_refused_with_the_fix():
    config = paper_math()
    # half the run's optimizer steps between two generations: about 75 of its 150 hours in one batch
    config["training"].update(gradient_accumulation_steps=1, steps_per_generation=config["training"]["max_steps"] // 2)
    config["tasks"]["math_r1_7b"]["resources"] = {"train": {"hours": 150.0}}
    with pytest.raises(ValueError, match="one generation batch .* raise `wall_limit_hours:`"):
        plan_training_chain(config, "math_r1_7b")
    config["wall_limit_hours"] = 0
    with pytest.raises(ValueError, match="wall_limit_hours 0 must be a number of hours > 0"):
        wall_limit_hours(config)


def test_a_multi_process_launcher_ignores_the_warning_signal_that_its_processes_handle():
    # torchrun does not handle SIGUSR1: it would die at once and end the job while its processes save.
    assert train_launcher(smoke_config(4, 2)) == "python"  # CPU scales: the command as before
    assert train_launcher(paper_math(), base_dir="/repo") == (
        "trap '' USR1 && accelerate launch --config_file /repo/envs/accelerate/deepspeed_zero3.yaml --num_processes 8")


# --------------------------------------------------------------------------------------------------
# Bit for bit: a chain of three jobs, and a job stopped by a signal
# --------------------------------------------------------------------------------------------------


def test_a_run_cut_into_three_segments_equals_the_uninterrupted_run(tiny_model, tmp_path):
    # Checkpoints every 5 steps in the uninterrupted run; the segments end at 4 and 8, off that grid.
    settings = resolve_run_settings(smoke_config(12, 5), "arithmetic", "gdpo", SEED)
    whole, chained = tmp_path / "whole", tmp_path / "chained"
    train(settings, tiny_model, whole, threads=1)
    for stop in (4, 8):
        record = train(settings, tiny_model, chained, threads=1, stop_at_step=stop,
                       segment_record=tmp_path / f"segment{stop}.json")
        assert record == json.loads((tmp_path / f"segment{stop}.json").read_text())
        assert record["stop_at_step"] == record["global_step"] == stop
        assert record["checkpoint"].endswith(f"chained.work/checkpoint-{stop}")
        assert not chained.exists()  # a segment leaves the run directory alone
    # A segment started again after it has finished trains nothing.
    assert train(settings, tiny_model, chained, threads=1, stop_at_step=8)["global_step"] == 8
    summary = train(settings, tiny_model, chained, threads=1)
    assert summary["steps"] == 12 and summary["resumed_from"].endswith("checkpoint-8")
    assert not Path(f"{chained}.work").exists()
    assert any(r["grad_norm"] > 0 for r in read_metrics(whole / "metrics.jsonl"))  # the policy really moved
    assert_same_run(chained, whole)


def test_a_signal_mid_segment_saves_the_step_in_progress_and_the_run_resumes_bit_for_bit(tiny_model, tmp_path):
    # In process: a thread sends this process SIGUSR1 once step 6 is logged, inside a segment that ends at 30.
    settings = resolve_run_settings(smoke_config(40, 15), "arithmetic", "gdpo", SEED)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    train(settings, tiny_model, whole, threads=1)
    live = Path(f"{killed}.work") / "metrics.jsonl"

    def signal_after_step_6():
        deadline = time.time() + 300
        while len(read_metrics(live, drop_cut_last_line=True)) < 6 and time.time() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGUSR1)

    sender = threading.Thread(target=signal_after_step_6)
    sender.start()
    with pytest.raises(TrainingInterrupted, match="stopped by signal .* run the same command again"):
        train(settings, tiny_model, killed, threads=1, stop_at_step=30)
    sender.join()
    [checkpoint] = Path(f"{killed}.work").glob("checkpoint-*")
    stopped_at = int(checkpoint.name.split("-")[-1])
    assert 6 <= stopped_at < 15  # the signal's checkpoint, before the first scheduled one
    assert [r["step"] for r in read_metrics(live)] == list(range(1, stopped_at + 1))
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL  # the handler is removed again

    record = train(settings, tiny_model, killed, threads=1, stop_at_step=30)
    assert record["resumed_from"].endswith(f"checkpoint-{stopped_at}") and record["global_step"] == 30
    assert train(settings, tiny_model, killed, threads=1)["resumed_from"].endswith("checkpoint-30")
    assert_same_run(killed, whole)


# --------------------------------------------------------------------------------------------------
# Resume only the same run
# --------------------------------------------------------------------------------------------------


def test_the_run_identity_covers_what_defines_the_run_and_not_where_it_logs_or_how_often_it_saves():
    config = smoke_config(8, 4)
    settings = resolve_run_settings(config, "arithmetic", "gdpo", SEED)
    identity = run_identity(settings, 1)
    assert identity["settings"]["trl"]["learning_rate"] == 1e-3 and identity["settings"]["num_processes"] == 1
    saves_more_often = {**config, "training": {**config["training"], "save_steps": 1, "report_to": "tensorboard"}}
    assert run_identity(resolve_run_settings(saves_more_often, "arithmetic", "gdpo", SEED), 1) == identity
    assert run_identity(settings, 2)["digest"] != identity["digest"]  # each process takes its share of a batch
    longer = {**config, "training": {**config["training"], "max_steps": 12}}  # the schedule's length
    assert run_identity(resolve_run_settings(longer, "arithmetic", "gdpo", SEED), 1)["digest"] != identity["digest"]


def test_a_checkpoint_resumes_only_under_the_settings_it_was_trained_with(tiny_model, tmp_path):
    config = smoke_config(8, 4)
    old = resolve_run_settings(config, "arithmetic", "gdpo", SEED)
    changed = {**config, "training": {**config["training"], "learning_rate": 2e-3}}
    new = resolve_run_settings(changed, "arithmetic", "gdpo", SEED)
    run, work = tmp_path / "run", Path(f"{tmp_path / 'run'}.work")
    train(old, tiny_model, run, threads=1, stop_at_step=4)  # the killed run: a checkpoint at step 4
    assert json.loads((work / RUN_IDENTITY_FILE).read_text()) == run_identity(old, 1)

    with pytest.raises(SettingsChanged) as refusal:
        train(new, tiny_model, run, threads=1)
    message = str(refusal.value)
    assert "checkpoint-4 was trained under other settings" in message
    assert [line for line in message.splitlines() if line.startswith("  ")] == ["  trl.learning_rate: 0.001 -> 0.002"]
    assert "GDPO_RESTART_CHANGED=1" in message and "--restart-changed" in message
    assert not run.exists() and (work / "checkpoint-4").is_dir()  # nothing trained, nothing deleted

    # Restarting as asked deletes the checkpoint and trains the new settings from the start.
    fresh = tmp_path / "fresh"
    train(new, tiny_model, fresh, threads=1)
    assert train(new, tiny_model, run, threads=1, restart_changed=True)["resumed_from"] is None
    assert_same_run(run, fresh)


@pytest.mark.slow
def test_the_train_command_refuses_changed_settings_with_exit_2_and_restarts_them_when_asked(tiny_model, tmp_path):
    """The command line and the workflow's environment switch of the refusal above (two `python -m gdpo train`
    processes: about 20 s, so in `make test-all`)."""
    config = smoke_config(8, 4)
    old = resolve_run_settings(config, "arithmetic", "gdpo", SEED)
    new = resolve_run_settings({**config, "training": {**config["training"], "learning_rate": 2e-3}},
                               "arithmetic", "gdpo", SEED)
    run = tmp_path / "run"
    train(old, tiny_model, run, threads=1, stop_at_step=4)
    # The train command says so and exits 2; with GDPO_RESTART_CHANGED=1 the workflow's job starts afresh.
    refused = _start_train(new, tiny_model, run)
    _, stderr = refused.communicate(timeout=600)
    assert refused.returncode == 2 and "trl.learning_rate: 0.001 -> 0.002" in stderr, stderr

    fresh = tmp_path / "fresh"
    train(new, tiny_model, fresh, threads=1)
    restarted = _start_train(new, tiny_model, run, env={"GDPO_RESTART_CHANGED": "1"})
    stdout, stderr = restarted.communicate(timeout=600)
    assert restarted.returncode == 0, stderr
    assert json.loads(stdout.splitlines()[-1])["resumed_from"] is None
    assert_same_run(run, fresh)


def test_a_checkpoint_without_recorded_settings_is_not_resumed(tiny_model, tmp_path):
    settings = resolve_run_settings(smoke_config(8, 4), "arithmetic", "gdpo", SEED)
    run, work = tmp_path / "run", Path(f"{tmp_path / 'run'}.work")
    train(settings, tiny_model, run, threads=1, stop_at_step=4)
    (work / RUN_IDENTITY_FILE).unlink()  # as a checkpoint made before runs recorded their settings
    with pytest.raises(SettingsChanged, match=r"(?s)checkpoint-4 has no record of the settings .*--restart-changed"):
        train(settings, tiny_model, run, threads=1)
    summary = train(settings, tiny_model, run, threads=1, restart_changed=True)
    assert summary["resumed_from"] is None and summary["steps"] == 8


# --------------------------------------------------------------------------------------------------
# A damaged checkpoint
# --------------------------------------------------------------------------------------------------


def _checkpoints_2_and_4(tiny_model, tmp_path):
    """A 6-step run stopped at step 4, checkpoints every 2 steps and one kept: ``checkpoint-4`` in the work dir,
    ``checkpoint-2`` saved aside (``tmp_path``) to play the previous one. Returns (settings, run dir, work dir)."""
    settings = resolve_run_settings(smoke_config(6, 2), "arithmetic", "gdpo", SEED)
    run, work = tmp_path / "run", Path(f"{tmp_path / 'run'}.work")
    train(settings, tiny_model, run, threads=1, stop_at_step=2)
    shutil.copytree(work / "checkpoint-2", tmp_path / "checkpoint-2")
    train(settings, tiny_model, run, threads=1, stop_at_step=4)
    return settings, run, work


def test_a_checkpoint_with_cut_weights_is_named_and_the_previous_complete_one_resumed(tiny_model, tmp_path, capsys):
    settings, run, work = _checkpoints_2_and_4(tiny_model, tmp_path)
    assert sorted(p.name for p in work.glob("checkpoint-*")) == ["checkpoint-4"]
    weights = work / "checkpoint-4" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a disk that filled up, a cut copy

    # No earlier checkpoint: training stops naming the file and the fix, and deletes nothing.
    with pytest.raises(ValueError, match=r"checkpoint-4/model.safetensors is damaged .* no complete "
                                         r"checkpoint before it .* afresh, delete \S*checkpoint-4 ") as refusal:
        train(settings, tiny_model, run, threads=1)
    from gdpo.training.run import DamagedCheckpoint

    assert isinstance(refusal.value, DamagedCheckpoint)
    assert weights.is_file() and not run.exists()

    # With a complete one before it, the run says so and resumes there; the damaged one is removed (a later
    # save at step 4 would otherwise keep it, the newest by number, over the new checkpoint).
    shutil.copytree(tmp_path / "checkpoint-2", work / "checkpoint-2")
    summary = train(settings, tiny_model, run, threads=1)
    assert summary["resumed_from"].endswith("checkpoint-2") and summary["steps"] == 6
    said = capsys.readouterr().out
    assert "checkpoint-4/model.safetensors is damaged" in said and "resuming from the previous complete" in said
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == list(range(1, 7))


def test_a_checkpoint_without_a_processs_random_state_is_not_resumed(tiny_model, tmp_path, capsys):
    # transformers resumes without a missing rng_state file (an info line) and draws other rollouts: a checkpoint
    # whose process stopped before saving it is incomplete; the run resumes from the complete one before it.
    settings, run, work = _checkpoints_2_and_4(tiny_model, tmp_path)
    (work / "checkpoint-4" / "rng_state.pth").unlink()
    with pytest.raises(ValueError, match=r"checkpoint-4/rng_state.pth is missing .* other random draws"):
        train(settings, tiny_model, run, threads=1)
    shutil.copytree(tmp_path / "checkpoint-2", work / "checkpoint-2")
    summary = train(settings, tiny_model, run, threads=1)
    assert summary["resumed_from"].endswith("checkpoint-2") and "rng_state.pth is missing" in capsys.readouterr().out


def test_a_cut_optimizer_state_is_found_without_loading_it(tmp_path):
    from safetensors.torch import save_file

    from gdpo.training.run import damaged_file

    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    save_file({"w": torch.zeros(64)}, checkpoint / "model.safetensors")
    torch.save({"state": torch.zeros(4096)}, checkpoint / "optimizer.pt")
    assert damaged_file(checkpoint) is None
    state = checkpoint / "optimizer.pt"
    state.write_bytes(state.read_bytes()[:-100])
    assert damaged_file(checkpoint).startswith(f"{state} is damaged (cut short or unreadable: ")
    # A checkpoint another process deleted meanwhile (a damaged one it stepped over) reads as damaged, not a crash.
    assert damaged_file(tmp_path / "checkpoint-2").startswith(f"{tmp_path / 'checkpoint-2'} is unreadable")


def _start_train(settings, model: Path, run_dir: Path, *extra: str, env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           **(env or {})}
    return subprocess.Popen(
        [sys.executable, "-m", "gdpo", "train", "--settings", settings.to_json(), "--model-dir", str(model),
         "--run-dir", str(run_dir), "--threads", "1", *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_the_train_command_stopped_by_a_signal_exits_75_and_resumes_to_the_uninterrupted_run(tiny_model, tmp_path):
    # 40 steps, checkpoints every 15; the first segment ends at 30 and is sent SIGUSR1 after step 6.
    settings = resolve_run_settings(smoke_config(40, 15), "arithmetic", "gdpo", SEED)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    train(settings, tiny_model, whole, threads=1)
    record = tmp_path / "segment1.json"
    process = _start_train(settings, tiny_model, killed, "--stop-at-step", "30", "--segment-record", str(record))
    live = Path(f"{killed}.work") / "metrics.jsonl"
    deadline = time.time() + 300
    while len(read_metrics(live, drop_cut_last_line=True)) < 6:
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.time() < deadline, "the run logged no step"
        time.sleep(0.02)
    process.send_signal(signal.SIGUSR1)  # SLURM's warning before the time limit (sbatch --signal=USR1@...)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == INTERRUPTED_EXIT_CODE, stderr[-3000:]
    assert "stopped by signal" in stderr and "run the same command again" in stderr
    [checkpoint] = Path(f"{killed}.work").glob("checkpoint-*")
    stopped_at = int(checkpoint.name.split("-")[-1])
    assert 6 <= stopped_at < 30 and stopped_at != 15  # the signal's checkpoint, not a scheduled one
    assert not record.exists() and not killed.exists()

    # The same segment again resumes from the signal's checkpoint and ends at its step; then the last job.
    again = _start_train(settings, tiny_model, killed, "--stop-at-step", "30", "--segment-record", str(record))
    _, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr[-3000:]
    assert json.loads(record.read_text())["resumed_from"].endswith(f"checkpoint-{stopped_at}")
    summary = train(settings, tiny_model, killed, threads=1)
    assert summary["resumed_from"].endswith("checkpoint-30")
    assert_same_run(killed, whole)


# --------------------------------------------------------------------------------------------------
# The workflow plans and runs the chain
# --------------------------------------------------------------------------------------------------

RUN = f"results/smoke/runs/arithmetic/gdpo/seed{SEED}"


def _snakemake(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), *args],
                          capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.slow
def test_the_workflow_runs_a_three_job_chain_to_the_uninterrupted_runs_files(tiny_model, tmp_path):
    config = smoke_config(12, 5)
    config["reporting"] = {}
    whole_config, chain_config = tmp_path / "whole.yaml", tmp_path / "chain.yaml"
    whole_config.write_text(yaml.safe_dump(config))
    # 3 expected hours, a 1.5-hour limit: segments of at most 1 hour (limit / safety factor 1.5), 3 jobs.
    config["wall_limit_hours"] = 1.5
    config["tasks"]["arithmetic"]["resources"] = {"train": {"hours": 3.0}}
    chain_config.write_text(yaml.safe_dump(config))
    target = f"{RUN}/summary.json"

    plan = _snakemake("-n", "--directory", str(tmp_path / "chain"), "--configfile", str(chain_config), "--", target)
    assert plan.returncode == 0, plan.stdout[-3000:] + plan.stderr[-3000:]
    planned = plan.stdout + plan.stderr
    # Segments of 4 steps, each 1 expected hour: requests of 1 h × 1.5 = 90 minutes, the last (the train job) too.
    assert re.search(r"train_segment\s+2\n", planned) and planned.count("runtime=90") == 3
    one = _snakemake("-n", "--directory", str(tmp_path / "whole"), "--configfile", str(whole_config), "--", target)
    assert one.returncode == 0 and "train_segment" not in one.stdout + one.stderr  # the train job alone, as before

    for name, path in (("whole", whole_config), ("chain", chain_config)):
        result = _snakemake("--cores", "2", "--directory", str(tmp_path / name), "--configfile", str(path), "--", target)
        assert result.returncode == 0, result.stderr[-3000:]
    log = result.stderr
    assert log.count("rule train_segment:") == 2 and "Removing temporary output" in log
    assert not (tmp_path / "chain" / f"{RUN}.work").exists()
    assert json.loads((tmp_path / "chain" / target).read_text())["resumed_from"].endswith("checkpoint-8")
    assert_same_run(tmp_path / "chain" / RUN, tmp_path / "whole" / RUN)
    again = _snakemake("-n", "--directory", str(tmp_path / "chain"), "--configfile", str(chain_config), "--", target)
    assert "Nothing to be done" in again.stdout + again.stderr  # the removed records do not re-run the chain
