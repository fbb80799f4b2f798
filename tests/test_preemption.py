"""Wall limits and preemption survived without a person, the quick parts (tests/test_slurm.py runs a signalled and a
requeued train job on the test cluster):

- checkpoints at least every hour of planned time, on generation-batch boundaries (:func:`gdpo.plan.checkpoint_interval_steps`,
  every run's ``save_steps``);
- the warning's lead covers the rest of a generation batch and a checkpoint's save (:mod:`gdpo.training.checkpoint_plan`);
- the trainer records SIGURG, SIGTERM and SIGUSR1 and stops at the first generation-batch boundary after one;
- the SLURM profile retries and lets SLURM requeue; the bill states the interval, the lead and the disk.
"""

from __future__ import annotations

import math
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from gdpo.config import load_config
from gdpo.plan import (
    CHECKPOINT_INTERVAL_SECONDS,
    RUNTIME_SAFETY,
    checkpoint_interval_steps,
    job_resources,
    planned_seconds_per_step,
    resolve_run_settings,
    updates_per_generation,
)
from gdpo.training.checkpoint_plan import (
    DEFAULT_WARNING_LEAD_SECONDS,
    SAVE_BYTES_PER_SECOND,
    checkpoint_bytes,
    warning_lead_seconds,
    warning_signal_option,
)

REPO = Path(__file__).resolve().parents[1]


def paper(name: str) -> dict:
    return load_config(REPO / "config" / f"{name}.yaml")


# --------------------------------------------------------------------------------------------------
# The checkpoint interval
# --------------------------------------------------------------------------------------------------


def test_checkpoints_are_at_most_an_hour_of_planned_time_apart_on_generation_batch_boundaries():
    config = paper("paper-math")
    assert config["training"]["save_steps"] == 400  # about 10 h of an R1-7B run
    # R1-7B: 100 h / 4000 updates = 90 s each, 8 updates per generation batch: 40 updates = 60 min.
    assert planned_seconds_per_step(config, "math_r1_7b") == 90.0
    expected = {"math_r1_7b": 40, "math_r1_1.5b": 112, "math_qwen3_4b": 64}  # 31.5 s and 54 s per update
    for task, steps in expected.items():
        assert checkpoint_interval_steps(config, task) == steps
        assert steps % 8 == 0 and steps * planned_seconds_per_step(config, task) <= CHECKPOINT_INTERVAL_SECONDS
        assert (steps + 8) * planned_seconds_per_step(config, task) > CHECKPOINT_INTERVAL_SECONDS  # the most within
        assert resolve_run_settings(config, task, "gdpo", 0).trl["save_steps"] == steps
    # A config that already saves more often keeps its interval (tool calling: 80 updates, 30 and 48 minutes).
    tools = paper("paper-tool_calling")
    assert [checkpoint_interval_steps(tools, t) for t in ("tool_calling_1.5b", "tool_calling_3b")] == [80, 80]
    # A generation batch longer than an hour: one batch.
    config["tasks"]["math_r1_7b"]["resources"]["train"]["hours"] = 1000.0
    assert checkpoint_interval_steps(config, "math_r1_7b") == 8
    # Without planned hours (the CPU scales) the config's own value, and the settings as before.
    smoke = load_config(REPO / "config" / "smoke.yaml")
    assert planned_seconds_per_step(smoke, "arithmetic") is None
    assert checkpoint_interval_steps(smoke, "arithmetic") == smoke["training"]["save_steps"] == 2
    del smoke["training"]["save_steps"]
    assert checkpoint_interval_steps(smoke, "arithmetic") is None
    assert "save_steps" not in resolve_run_settings(smoke, "arithmetic", "gdpo", 0).trl


# --------------------------------------------------------------------------------------------------
# The warning before the wall limit
# --------------------------------------------------------------------------------------------------


def test_the_warning_comes_a_generation_batch_and_a_save_before_the_limit():
    config = paper("paper-math")
    runtime = job_resources(config, "math_r1_7b", "train")["runtime"]
    lead = warning_lead_seconds(config, "math_r1_7b", runtime)
    batch = 8 * 90.0  # the longest step (the one that generates) is within one generation batch
    save = checkpoint_bytes(config, "math_r1_7b") / SAVE_BYTES_PER_SECOND
    assert checkpoint_bytes(config, "math_r1_7b") == pytest.approx(122e9, rel=0.01)  # 16 bytes × 7.6 B parameters
    assert lead == math.ceil((RUNTIME_SAFETY * batch + save) / 60) * 60 == 1380  # 23 minutes
    assert lead > batch + save and lead % 60 == 0 and lead < runtime * 60 / 2
    assert warning_signal_option(config, "math_r1_7b", runtime) == "--signal=URG@1380"
    # Every paper task's lead exceeds a generation batch and a save, and is a small share of its job.
    for name in ("paper-math", "paper-code", "paper-tool_calling"):
        config = paper(name)
        for task in config["tasks"]:
            runtime = job_resources(config, task, "train")["runtime"]
            batch = planned_seconds_per_step(config, task) * updates_per_generation(
                resolve_run_settings(config, task, "grpo", 0).trl)
            lead = warning_lead_seconds(config, task, runtime)
            assert batch + checkpoint_bytes(config, task) / SAVE_BYTES_PER_SECOND < lead <= runtime * 60 * 0.1, task
    # No planned step time (CPU scales): ten minutes; a short job is warned at half its time at the latest.
    smoke = load_config(REPO / "config" / "smoke.yaml")
    assert warning_lead_seconds(smoke, "arithmetic") == DEFAULT_WARNING_LEAD_SECONDS == 600
    assert warning_lead_seconds(smoke, "arithmetic", runtime_minutes=2) == 60


# --------------------------------------------------------------------------------------------------
# The trainer's side
# --------------------------------------------------------------------------------------------------


def test_the_stop_signals_are_recorded_and_the_previous_handlers_restored():
    from gdpo.training.run import STOP_SIGNALS, stop_requests

    assert signal.SIGURG in STOP_SIGNALS and signal.SIGTERM in STOP_SIGNALS
    before = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    with stop_requests() as received:
        for number in (signal.SIGURG, signal.SIGTERM, signal.SIGUSR1):
            os.kill(os.getpid(), number)
        deadline = time.monotonic() + 5
        while len(received) < 3 and time.monotonic() < deadline:  # handlers run between bytecodes
            time.sleep(0.001)
    assert received == [signal.SIGURG, signal.SIGTERM, signal.SIGUSR1]
    assert {number: signal.getsignal(number) for number in STOP_SIGNALS} == before


def test_a_signal_stops_training_at_the_next_generation_batch_boundary_with_a_checkpoint():
    from transformers import TrainerControl

    from gdpo.training.run import _stop_callback

    received: list[int] = []
    stopper = _stop_callback(None, received, SimpleNamespace(num_processes=1), boundary=8)
    state = SimpleNamespace(global_step=0, max_steps=4000)

    def step(number: int) -> TrainerControl:
        state.global_step = number
        return stopper.on_step_end(None, state, TrainerControl())

    assert not step(5).should_training_stop
    received.append(signal.SIGURG)  # mid-batch: the batch in memory is not in a checkpoint
    for number in (6, 7):
        control = step(number)
        assert not (control.should_training_stop or control.should_save or stopper.stopped_by_signal)
    control = step(8)
    assert control.should_save and control.should_training_stop and stopper.stopped_by_signal
    # A segment's end comes first where it is nearer.
    segment = _stop_callback(12, [signal.SIGTERM], SimpleNamespace(num_processes=1), boundary=8)
    state.global_step = 12
    control = segment.on_step_end(None, state, TrainerControl())
    assert control.should_training_stop and not segment.stopped_by_signal


# --------------------------------------------------------------------------------------------------
# The profile and the bill
# --------------------------------------------------------------------------------------------------


def test_the_slurm_profile_retries_jobs_and_lets_slurm_requeue_them():
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    assert profile["retries"] >= 1 and profile["slurm-requeue"] is True
    # The train jobs' slurm_extra carries the warning: the profile must not replace it.
    assert not any("slurm_extra" in (profile["set-resources"].get(rule) or {}) for rule in ("train", "train_segment"))


def test_the_bill_states_the_checkpoint_interval_the_warning_and_the_disk_beside_the_gpu_hours():
    from gdpo.reporting.bill import checkpoint_disk_table, format_bill

    config = paper("paper-math")
    table = checkpoint_disk_table(config).set_index("task")
    row = table.loc["math_r1_7b"]
    assert (row["runs"], row["save every"], row["= min"], row["warned (min)"]) == (6, "40 steps", 60.0, 23.0)
    assert row["checkpoint GB"] == pytest.approx(121.85, abs=0.01) and row["final model GB"] == pytest.approx(15.23, abs=0.01)
    bill = format_bill(config)
    assert "GPU-h" in bill and "Checkpoints and disk" in bill
    assert "checkpoints up to 244 GB per run (math_r1_7b)" in bill and "if all 63 runs trained at once" in bill
    assert checkpoint_disk_table(load_config(REPO / "config" / "smoke.yaml")).empty  # CPU scales: nothing to state
