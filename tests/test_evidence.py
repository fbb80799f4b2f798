"""Committed run evidence (gdpo.evidence) and the experiment driver's order and budget (gdpo.experiment)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gdpo.evidence import (
    EVAL_FILE,
    MANIFEST,
    RUN_FILES,
    SAMPLE_FILE,
    committed,
    restore,
    run_key_dir,
    save_evidence,
)
from gdpo.experiment import TIMELINE, experiment_batches, run_experiment, spent_hours
from gdpo.numerics import MACHINE_KINDS, machine_record

REPO = Path(__file__).resolve().parents[1]


def finished_run(run_dir: Path, settings: dict, completions: int = 80) -> Path:
    run_dir.mkdir(parents=True)
    for name in RUN_FILES:
        (run_dir / name).write_text("{}\n")
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps({"step": step, "loss": 0.1}) + "\n" for step in (1, 2, 3)))
    (run_dir / "summary.json").write_text(json.dumps({"steps": 3}))
    # as train() writes it: the settings, with TRL's arguments completed at run time
    (run_dir / "config.json").write_text(json.dumps({**settings, "trl": {**settings.get("trl", {}), "seed": 0}}))
    (run_dir / EVAL_FILE).write_text(json.dumps({"settings": {"eval_size": 277}, "benchmarks": {},
                                                 "items": {"bfcl_v3": {"ids": ["simple_0"], "scores": {"format": ["1"]}}}}))
    (run_dir / "eval").mkdir()
    (run_dir / "eval" / "completions.jsonl").write_text("".join(f'{{"id": {i}}}\n' for i in range(completions)))
    return run_dir


def test_save_then_restore_round_trips_and_keeps_a_sample(tmp_path):
    run = finished_run(tmp_path / "results/tool_calling/gdpo/seed0", {"task": "tool_calling", "max_steps": 100})
    dest = run_key_dir(tmp_path / "evidence", "tool_calling", "gdpo", 0)
    written = save_evidence(run, dest)
    assert {p.name for p in written} == {*RUN_FILES, EVAL_FILE, SAMPLE_FILE, MANIFEST}
    assert len((dest / SAMPLE_FILE).read_text().splitlines()) == 50
    assert not (dest / "model").exists()
    assert committed(tmp_path / "evidence") == {("tool_calling", "gdpo", 0)}
    restored = tmp_path / "fresh/seed0"
    restore(dest, restored, RUN_FILES, {"task": "tool_calling", "max_steps": 100})
    restore(dest, restored, [EVAL_FILE], {"eval_size": 277})
    assert (restored / "metrics.jsonl").read_text() == (run / "metrics.jsonl").read_text()
    assert json.loads((restored / EVAL_FILE).read_text())["settings"]["eval_size"] == 277
    # the per-item outcomes travel with eval.json into the evidence and back
    assert json.loads((restored / EVAL_FILE).read_text())["items"] == json.loads((run / EVAL_FILE).read_text())["items"]


def test_unfinished_runs_are_not_saved_and_other_settings_are_not_restored(tmp_path):
    run = finished_run(tmp_path / "run", {"max_steps": 100})
    (run / EVAL_FILE).unlink()
    with pytest.raises(ValueError, match="has not finished: eval.json missing"):
        save_evidence(run, tmp_path / "evidence/t/m/seed0")
    assert not (tmp_path / "evidence").exists()
    (run / EVAL_FILE).write_text(json.dumps({"settings": {"eval_size": 24}, "benchmarks": {}}))
    save_evidence(run, tmp_path / "evidence/t/m/seed0")
    with pytest.raises(ValueError, match=r"max_steps: committed 100, config 500.*Restore the config"):
        restore(tmp_path / "evidence/t/m/seed0", tmp_path / "out", RUN_FILES, {"max_steps": 500})
    with pytest.raises(ValueError, match="eval_size: committed 24, config 277"):
        restore(tmp_path / "evidence/t/m/seed0", tmp_path / "out", [EVAL_FILE], {"eval_size": 277})
    assert not (tmp_path / "out").exists()
    # a base model's evaluation counts as an evaluation, not as a trained run
    (tmp_path / "evidence/t/base/seed0").mkdir(parents=True)
    (tmp_path / "evidence/t/base/seed0" / EVAL_FILE).write_text("{}")
    assert committed(tmp_path / "evidence", trained=False) == {("t", "m", 0), ("t", "base", 0)}
    assert committed(tmp_path / "evidence") == {("t", "m", 0)}


def test_bf16_turned_off_by_a_float32_cpu_is_the_same_design_and_nothing_else_is(tmp_path):
    """train() turns trl.bf16 off where the CPU's bfloat16 work runs in float32 (emulated, or the portable setting)
    and config.json records that: such a run restores under a config asking for bf16, on a machine of either
    kind; a run that really trained in bfloat16, a GPU run, or another difference beside it does not."""
    requested = {"task": "tool_calling", "trl": {"bf16": True, "learning_rate": 2e-4}}
    cases = {
        "float32_cpu": ({"device": "cpu", "precision": {"cpu_bf16_runs_in": "float32"}}, None),
        "bf16_cpu": ({"device": "cpu", "precision": {"cpu_bf16_runs_in": "bfloat16"}}, "trl.bf16: committed false"),
        "gpu": ({"device": "cuda", "precision": {"cpu_bf16_runs_in": "float32"}}, "trl.bf16: committed false"),
    }
    for name, (env, error) in cases.items():
        committed_settings = {"task": "tool_calling", "trl": {"bf16": False, "learning_rate": 2e-4}}
        run = finished_run(tmp_path / name / "run", committed_settings)
        (run / "env.json").write_text(json.dumps(env))
        dest = run_key_dir(tmp_path / name / "evidence", "tool_calling", "gdpo", 0)
        save_evidence(run, dest)
        if error is None:
            restore(dest, tmp_path / name / "out", RUN_FILES, requested)
            assert json.loads((tmp_path / name / "out" / "config.json").read_text())["trl"]["bf16"] is False
            with pytest.raises(ValueError, match="learning_rate: committed 0.0002, config 0.001"):
                restore(dest, tmp_path / name / "other", RUN_FILES,
                        {**requested, "trl": {"bf16": True, "learning_rate": 1e-3}})
        else:
            with pytest.raises(ValueError, match=error):
                restore(dest, tmp_path / name / "out", RUN_FILES, requested)


def test_a_run_restores_only_under_the_numeric_setting_it_recorded(tmp_path):
    """A run computed natively (here: bfloat16 only turned off, AVX-512 kernels kept) is not the portable design,
    and the reverse; evidence made before the setting existed counts as native; the evaluation is checked alike."""
    portable = {"setting": "portable", "torch_capability": "AVX2", "cpu_bf16_runs_in": "float32"}
    native = {"setting": "native", "torch_capability": "AVX512", "cpu_bf16_runs_in": "float32"}
    for name, record, accepted in [("portable", portable, "portable"), ("native", native, "native"),
                                   ("older", None, "native")]:
        run = finished_run(tmp_path / name / "run", {"task": "tool_calling"})
        env = {"device": "cpu", "precision": {"cpu_bf16_runs_in": "float32"}}
        (run / "env.json").write_text(json.dumps(env if record is None else {**env, "numerics": record}))
        evaluation = json.loads((run / EVAL_FILE).read_text())
        (run / EVAL_FILE).write_text(json.dumps(evaluation if record is None else {**evaluation, "numerics": record}))
        dest = run_key_dir(tmp_path / name / "evidence", "tool_calling", "gdpo", 0)
        save_evidence(run, dest)
        other = "native" if accepted == "portable" else "portable"
        for names, settings in [(RUN_FILES, {"task": "tool_calling"}), ([EVAL_FILE], {"eval_size": 277})]:
            refusal = f"computed under cpu_numerics: {accepted}, and the config asks for {other}"
            with pytest.raises(ValueError, match=refusal):
                restore(dest, tmp_path / name / "refused", names, settings, numerics=other)
            restore(dest, tmp_path / name / "out", names, settings, numerics=accepted)
        assert not (tmp_path / name / "refused").exists()


def cpu_evidence_config() -> dict:
    return yaml.safe_load((REPO / "config/cpu-evidence.yaml").read_text())


def test_batches_go_seed_by_seed_with_every_method_and_the_base_models_first_seed():
    config = cpu_evidence_config()
    batches = experiment_batches(config)
    assert [b[0].seed for b in batches] == sorted({b[0].seed for b in batches})
    for batch in batches:
        assert len({r.seed for r in batch}) == 1
        methods = {(r.task, r.method) for r in batch if r.method != "base"}
        seed = batch[0].seed
        expected = {(task, m) for task, spec in config["tasks"].items()
                    if seed in spec.get("seeds", config["seeds"]) for m in spec.get("methods", config["methods"])}
        assert methods == expected
        assert [r.method == "base" for r in batch] == sorted(r.method == "base" for r in batch)
    assert ("tool_calling", "base") in {(r.task, r.method) for r in batches[0]}


def test_the_driver_stops_before_a_batch_once_the_budget_is_spent(tmp_path, capsys):
    config = {**cpu_evidence_config(), "evidence_dir": "evidence"}
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / TIMELINE).write_text(json.dumps({"seed": 0, "seconds": 7200.0}) + "\n")
    assert spent_hours(tmp_path / "evidence") == 2.0
    assert run_experiment(config, "config/cpu-evidence.yaml", tmp_path, budget_hours=2.0, commit=False) == 3
    assert "Budget of 2 h spent (2.00 h" in capsys.readouterr().out


def test_the_workflow_restores_committed_runs_and_trains_the_others(tmp_path):
    """Dry run at scale cpu-evidence: a committed (task, method, seed) is restored (rules restore_run and
    restore_eval), every other run is trained; evidence made with other settings stops the restore."""
    from gdpo.plan import resolve_eval_settings, resolve_run_settings

    config = cpu_evidence_config()
    evidence = tmp_path / "evidence"
    config["evidence_dir"] = str(evidence)
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    run = finished_run(tmp_path / "run", resolve_run_settings(config, "math", "gdpo", 0).to_dict())
    evaluation = resolve_eval_settings(config, "math", "gdpo", 0)
    (run / EVAL_FILE).write_text(json.dumps({"settings": evaluation.to_dict(), "benchmarks": {}}))
    save_evidence(run, run_key_dir(evidence, "math", "gdpo", 0))
    target_dir = "results/cpu-evidence/runs/math/gdpo"
    targets = [f"{target_dir}/seed{seed}/{name}" for seed in (0, 1) for name in ("eval.json", "summary.json")]

    def job_counts() -> dict[str, int]:
        process = subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "--configfile", str(configfile), "--cores", "2", *targets],
            cwd=REPO, capture_output=True, text=True, check=False)
        assert process.returncode == 0, process.stderr[-2000:]
        table = process.stdout.split("Job stats:")[1].split("Reasons:")[0]
        return {words[0]: int(words[1]) for words in map(str.split, table.splitlines())
                if len(words) == 2 and words[1].isdigit()}

    counts = job_counts()
    assert counts["restore_run"] == counts["restore_eval"] == 1
    assert counts["train"] == counts["evaluate"] == 1  # seed 1 only
    # evidence made with another design is refused when the workflow runs the restore
    changed = tmp_path / "out"
    with pytest.raises(ValueError, match=r"trl.max_steps: committed 500, config 400"):
        restore(run_key_dir(evidence, "math", "gdpo", 0), changed, RUN_FILES,
                resolve_run_settings({**config, "tasks": {**config["tasks"], "math": {
                    **config["tasks"]["math"], "training": {**config["tasks"]["math"]["training"], "max_steps": 400}}}},
                    "math", "gdpo", 0).to_dict())


def test_a_real_restore_writes_the_committed_files_into_results(tmp_path):
    from gdpo.plan import resolve_eval_settings, resolve_run_settings

    config = cpu_evidence_config()
    config["evidence_dir"] = str(tmp_path / "evidence")
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(config))
    run = finished_run(tmp_path / "run", resolve_run_settings(config, "tool_calling", "grpo", 2).to_dict())
    evaluation = resolve_eval_settings(config, "tool_calling", "grpo", 2)
    (run / EVAL_FILE).write_text(json.dumps({"settings": evaluation.to_dict(), "benchmarks": {}}))
    save_evidence(run, run_key_dir(tmp_path / "evidence", "tool_calling", "grpo", 2))
    work = tmp_path / "work"
    work.mkdir()
    targets = [f"results/cpu-evidence/runs/tool_calling/grpo/seed2/{name}" for name in ("eval.json", "summary.json")]
    process = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
         "--configfile", str(configfile), "--cores", "1", *targets],
        cwd=work, capture_output=True, text=True, check=False)
    assert process.returncode == 0, process.stderr[-3000:]
    restored = work / "results/cpu-evidence/runs/tool_calling/grpo/seed2"
    assert sorted(p.name for p in restored.iterdir()) == sorted([*RUN_FILES, EVAL_FILE, MANIFEST])
    assert (restored / "config.json").read_text() == (run / "config.json").read_text()


def test_the_driver_skips_every_committed_run(tmp_path, monkeypatch):
    config = {**cpu_evidence_config(), "evidence_dir": "evidence"}
    for batch in experiment_batches(config):
        for run in batch:
            dest = run.under(tmp_path / "evidence").path()
            dest.mkdir(parents=True)
            for name in ((EVAL_FILE,) if run.method == "base" else (*RUN_FILES, EVAL_FILE)):
                (dest / name).write_text("{}")

    def no_snakemake(*args, **kwargs):
        raise AssertionError(f"a committed run was started again: {args}")

    monkeypatch.setattr(subprocess, "run", no_snakemake)
    assert run_experiment(config, "config/cpu-evidence.yaml", tmp_path, commit=False) == 0
    assert not (tmp_path / "evidence" / TIMELINE).exists()


def test_the_driver_retries_a_failed_batch_once_records_each_attempt_and_saves_what_finished(tmp_path, monkeypatch):
    config = cpu_evidence_config()
    config = {**config, "evidence_dir": "evidence", "seeds": [0],
              "tasks": {"math": {**config["tasks"]["math"], "seeds": [0]}}}
    calls = []

    def fake_snakemake(command, cwd, check, **kwargs):
        if command[0] == "git" or "--unlock" in command:
            return subprocess.CompletedProcess(command, 0, stdout="abc123\n")
        calls.append(command)
        targets = [c for c in command if c.endswith("eval.json")]
        if len(calls) == 2:  # the retry finishes every run; the first attempt crashed before any
            for target in targets:
                run_dir = Path(cwd) / Path(target).parent
                finished_run(run_dir, {}) if "/base/" not in target else (
                    run_dir.mkdir(parents=True), (run_dir / EVAL_FILE).write_text(json.dumps({"benchmarks": {}})))
        return subprocess.CompletedProcess(command, 0 if len(calls) == 2 else 1)

    monkeypatch.setattr(subprocess, "run", fake_snakemake)
    assert run_experiment(config, "cfg.yaml", tmp_path, commit=False) == 0
    assert len(calls) == 2 and "--configfile" in calls[0] and len([c for c in calls[0] if c.endswith("eval.json")]) == 3
    timeline = [json.loads(line) for line in (tmp_path / "evidence" / TIMELINE).read_text().splitlines()]
    assert [(t["attempt"], t["exit_code"], t["commit"]) for t in timeline] == [(1, 1, "abc123"), (2, 0, "abc123")]
    # each attempt says which kind of machine ran it and under which numeric setting
    assert timeline[0]["machine"] == machine_record() and timeline[0]["machine"]["kind"] in MACHINE_KINDS
    assert timeline[0]["cpu_numerics"] == config.get("cpu_numerics", "native")
    assert committed(tmp_path / "evidence") == {("math", "grpo", 0), ("math", "gdpo", 0)}
    assert ("math", "base", 0) in committed(tmp_path / "evidence", trained=False)

    # a batch that fails twice stops the driver with snakemake's exit code
    calls.clear()
    monkeypatch.setattr(subprocess, "run", lambda command, cwd, check, **kwargs: subprocess.CompletedProcess(
        command, 0 if command[0] == "git" or "--unlock" in command else 7, stdout=""))
    config["tasks"]["math"]["seeds"] = [0, 1]
    assert run_experiment(config, "cfg.yaml", tmp_path, commit=False) == 7


def test_a_stopped_batch_counts_against_the_budget_from_its_heartbeat(tmp_path, monkeypatch, capsys):
    from gdpo.experiment import RUNNING, Heartbeat

    config = {**cpu_evidence_config(), "evidence_dir": "evidence"}
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    entry = {"seed": 0, "runs": ["math/grpo"], "commit": "abc123", "attempt": 1, "start": "2026-11-24T20:00:00Z"}
    (evidence / RUNNING).write_text(json.dumps({**entry, "alive": "2026-11-24T22:30:00Z"}))
    monkeypatch.setattr(subprocess, "run", lambda command, cwd, check, **kwargs: subprocess.CompletedProcess(
        command, 0 if command[0] == "git" else 1, stdout=""))
    # a budget of 2 h is spent by the stopped attempt alone: no batch starts
    assert run_experiment(config, "cfg.yaml", tmp_path, budget_hours=2.0, commit=False) == 3
    timeline = [json.loads(line) for line in (evidence / TIMELINE).read_text().splitlines()]
    assert timeline == [{**entry, "seconds": 9000.0, "exit_code": "stopped"}]
    assert not (evidence / RUNNING).exists() and spent_hours(evidence) == 2.5
    assert "stopped attempt of seed 0: 2.50 h" in capsys.readouterr().out

    # while a batch runs, its heartbeat file exists and is refreshed; it is gone when the batch ends
    with Heartbeat(tmp_path, evidence, entry, commit=False, every=0.01):
        time.sleep(0.05)
        running = json.loads((evidence / RUNNING).read_text())
        assert running["start"] == entry["start"] and running["alive"] >= entry["start"]
    assert not (evidence / RUNNING).exists()


def test_a_heartbeat_stamped_before_its_start_records_no_negative_time(tmp_path):
    """A batch started while the machine's clock ran 5 days ahead, then set right: its heartbeat's last beat is
    stamped before its start. The stopped attempt counts 0 s with a flag that the clocks disagree, never
    -432,000 s, and the hours spent never fall (10 h stays 10 h, not -110 h)."""
    from gdpo.experiment import RUNNING, Heartbeat, record_stopped_attempt

    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (evidence / TIMELINE).write_text(json.dumps({"seed": 0, "seconds": 36000.0, "exit_code": 0}) + "\n")
    entry = {"seed": 1, "runs": ["math/grpo"], "commit": "abc123", "attempt": 1, "start": "2026-11-29T20:00:00Z"}
    (evidence / RUNNING).write_text(json.dumps({**entry, "alive": "2026-11-24T20:00:00Z"}))
    stopped = record_stopped_attempt(evidence)
    assert stopped["seconds"] == 0.0 and stopped["exit_code"] == "stopped"
    assert "last alive 2026-11-24T20:00:00Z is before its start" in stopped["clocks_disagree"]
    assert spent_hours(evidence) == 10.0
    # an entry a driver wrote before this rule, with a negative span, does not lower the count either
    with (evidence / TIMELINE).open("a") as handle:
        handle.write(json.dumps({"seed": 1, "seconds": -432000.0, "exit_code": "stopped"}) + "\n")
    assert spent_hours(evidence) == 10.0
    # a heartbeat carries the time it has been alive on a clock that setting the machine's clock does not move:
    # the stopped attempt counts that
    (evidence / RUNNING).write_text(json.dumps({**entry, "alive": "2026-11-24T20:00:00Z", "alive_seconds": 5400.0}))
    stopped = record_stopped_attempt(evidence)
    assert stopped["seconds"] == 5400.0 and "alive_seconds" not in stopped
    assert "heartbeat's own clock 5400 s" in stopped["clocks_disagree"]
    assert spent_hours(evidence) == 11.5
    with Heartbeat(tmp_path, evidence, entry, commit=False, every=0.01):
        time.sleep(0.05)
        assert 0.0 <= json.loads((evidence / RUNNING).read_text())["alive_seconds"] < 60


def test_a_clock_set_back_during_a_batch_does_not_make_its_time_negative(tmp_path, monkeypatch):
    config = cpu_evidence_config()
    config = {**config, "evidence_dir": "evidence", "seeds": [0],
              "tasks": {"math": {**config["tasks"]["math"], "seeds": [0]}}}
    real_time = time.time

    def fake_snakemake(command, cwd, check, **kwargs):
        if command[0] == "git" or "--unlock" in command:
            return subprocess.CompletedProcess(command, 0, stdout="abc123\n")
        monkeypatch.setattr(time, "time", lambda: real_time() - 432000.0)  # set back 5 days while it runs
        return subprocess.CompletedProcess(command, 1)

    monkeypatch.setattr(subprocess, "run", fake_snakemake)
    assert run_experiment(config, "cfg.yaml", tmp_path, commit=False, attempts=1) == 1
    [entry] = [json.loads(line) for line in (tmp_path / "evidence" / TIMELINE).read_text().splitlines()]
    assert 0.0 <= entry["seconds"] < 60


def test_the_start_models_weights_digest_tells_two_warm_ups_apart(tmp_path):
    from gdpo.files import weights_digest

    first, second, empty = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for directory in (first, second, empty):
        directory.mkdir()
    (first / "model.safetensors").write_bytes(b"\x00\x01" * 1000)
    (second / "model.safetensors").write_bytes(b"\x00\x01" * 1000)
    (second / "training_args.bin").write_bytes(b"not weights")  # the trainer's arguments are not weights
    assert weights_digest(first) == weights_digest(second) and len(weights_digest(first)) == 64
    (second / "model.safetensors").write_bytes(b"\x00\x02" * 1000)
    assert weights_digest(first) != weights_digest(second)
    assert weights_digest(empty) is None


def test_a_batch_that_failed_twice_is_not_tried_again_by_a_restarted_driver(tmp_path, monkeypatch, capsys):
    config = cpu_evidence_config()
    config = {**config, "evidence_dir": "evidence", "seeds": [0, 1],
              "tasks": {"math": {**config["tasks"]["math"], "seeds": [0, 1]}}}
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    failed = {"runs": ["math/grpo"], "commit": "abc", "start": "2026-11-24T20:00:00Z", "seconds": 60.0}
    (evidence / TIMELINE).write_text("".join(json.dumps({**failed, "seed": 0, "attempt": a, "exit_code": 1}) + "\n"
                                             for a in (1, 2)))
    started = []

    def fake_snakemake(command, cwd, check, **kwargs):
        if command[0] == "git" or "--unlock" in command:
            return subprocess.CompletedProcess(command, 0, stdout="abc\n")
        started.append([c for c in command if c.endswith("eval.json")])
        return subprocess.CompletedProcess(command, 1)

    monkeypatch.setattr(subprocess, "run", fake_snakemake)
    assert run_experiment(config, "cfg.yaml", tmp_path, commit=False) == 1
    # seed 0 is left as failed; only seed 1 is tried, twice
    assert len(started) == 2 and all("seed1" in target for batch in started for target in batch)
    assert "Seed 0 failed 2 times" in capsys.readouterr().out
    timeline = [json.loads(line) for line in (evidence / TIMELINE).read_text().splitlines()]
    assert [(t["seed"], t["attempt"]) for t in timeline] == [(0, 1), (0, 2), (1, 1), (1, 2)]


def test_a_run_that_finishes_mid_batch_is_saved_before_the_batch_ends(tmp_path, monkeypatch):
    config = cpu_evidence_config()
    config = {**config, "evidence_dir": "evidence", "seeds": [0],
              "tasks": {"math": {**config["tasks"]["math"], "seeds": [0]}}}
    seen_mid_batch = []

    def fake_snakemake(command, cwd, check, **kwargs):
        if command[0] == "git" or "--unlock" in command:
            return subprocess.CompletedProcess(command, 0, stdout="abc\n")
        targets = [Path(cwd) / Path(c).parent for c in command if c.endswith("eval.json")]
        first, *others = targets
        finished_run(first, {})
        deadline = time.time() + 10
        while not committed(Path(cwd) / "evidence") and time.time() < deadline:
            time.sleep(0.01)  # the batch goes on; the heartbeat should save the finished run meanwhile
        seen_mid_batch.append(set(committed(Path(cwd) / "evidence")))
        for run_dir in others:
            finished_run(run_dir, {}) if "/base/" not in str(run_dir) else (
                run_dir.mkdir(parents=True), (run_dir / EVAL_FILE).write_text(json.dumps({"benchmarks": {}})))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_snakemake)
    assert run_experiment(config, "cfg.yaml", tmp_path, commit=False, heartbeat_seconds=0.01) == 0
    assert seen_mid_batch == [{("math", "grpo", 0)}]
    assert committed(tmp_path / "evidence") == {("math", "grpo", 0), ("math", "gdpo", 0)}


def test_a_stale_lock_costs_no_attempt_and_two_drivers_cannot_run_at_once(tmp_path, monkeypatch):
    from gdpo.experiment import hold_driver_lock

    config = cpu_evidence_config()
    config = {**config, "evidence_dir": "evidence", "seeds": [0, 1],
              "tasks": {"math": {**config["tasks"]["math"], "seeds": [0, 1]}}}
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    # A stopped driver's Snakemake lock failed seed 0 twice within seconds, before any job: those attempts
    # are recorded as "locked" and do not count; a real failure still does.
    entries = [{"seed": 0, "attempt": a, "exit_code": code, "runs": ["math/grpo"], "commit": "abc",
                "start": "2026-11-25T03:00:12Z", "seconds": 6.0} for a, code in ((1, "locked"), (2, "locked"), (1, 1))]
    (evidence / TIMELINE).write_text("".join(json.dumps(e) + "\n" for e in entries))
    commands = []

    def fake_snakemake(command, cwd, check, **kwargs):
        if command[0] == "git":
            return subprocess.CompletedProcess(command, 0, stdout="abc\n")
        commands.append(command)
        return subprocess.CompletedProcess(command, 0 if "--unlock" in command else 1)

    monkeypatch.setattr(subprocess, "run", fake_snakemake)
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / ".snakemake" / "locks" / "0.input.lock").write_text("")  # the stopped driver's, no Snakemake runs
    assert run_experiment(config, "cfg.yaml", tmp_path, commit=False) == 1
    # Snakemake's stale lock is cleared once, before the first batch; seed 0 gets its one remaining attempt
    assert "--unlock" in commands[0] and sum("--unlock" in c for c in commands) == 1
    batches = [[t for t in c if t.endswith("eval.json")] for c in commands[1:]]
    assert [all("seed0" in t for t in b) for b in batches] == [True, False, False]
    timeline = [json.loads(line) for line in (evidence / TIMELINE).read_text().splitlines()]
    assert [(t["seed"], t["attempt"], t["exit_code"]) for t in timeline[3:]] == [(0, 2, 1), (1, 1, 1), (1, 2, 1)]

    # a second driver in the same worktree is refused, naming the first one's pid
    with hold_driver_lock(tmp_path):
        with pytest.raises(RuntimeError, match=rf"Another `gdpo run-experiment` \(pid {os.getpid()}\)"):
            run_experiment(config, "cfg.yaml", tmp_path, commit=False)
    with hold_driver_lock(tmp_path):  # released when the first one ended
        pass


def test_the_driver_never_breaks_the_lock_of_a_live_snakemake_and_clears_a_stale_one(tmp_path, monkeypatch, capsys):
    from gdpo.experiment import SNAKEMAKE_LOCKS, WorkflowLocked, live_snakemake_processes

    config = cpu_evidence_config()
    config = {**config, "evidence_dir": "evidence", "seeds": [0], "tasks": {"math": {**config["tasks"]["math"],
                                                                                    "seeds": [0]}}}
    # A real Snakemake on a workflow in the worktree, started by hand beside the driver: it holds the lock.
    (tmp_path / "Snakefile").write_text('rule all:\n    output: "done"\n    shell: "sleep 120 && touch done"\n')
    live = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not list((tmp_path / SNAKEMAKE_LOCKS).glob("*.lock")) and time.time() < deadline:
            time.sleep(0.2)
        assert list((tmp_path / SNAKEMAKE_LOCKS).glob("*.lock")), "Snakemake took no lock"
        assert live.pid in [pid for pid, _ in live_snakemake_processes(tmp_path)]
        commands = []

        def fake_run(command, cwd, check, **kwargs):
            commands.append(command)
            return subprocess.CompletedProcess(command, 0, stdout="abc\n")

        monkeypatch.setattr(subprocess, "run", fake_run)
        with pytest.raises(WorkflowLocked) as locked:
            run_experiment(config, "cfg.yaml", tmp_path, commit=False)
        message = str(locked.value)
        assert f"pid {live.pid}" in message and f"kill {live.pid}" in message
        assert "--unlock" in message and "stale" in message
        assert not any("--unlock" in c or any(t.endswith("eval.json") for t in c) for c in commands), commands
        assert list((tmp_path / SNAKEMAKE_LOCKS).glob("*.lock"))  # the live lock is still there
    finally:
        os.killpg(live.pid, signal.SIGKILL)  # Snakemake and its job, as a crash would leave the lock
        live.wait()
    # Killed, it left its lock behind: stale now, so the driver clears it and runs the batch.
    assert list((tmp_path / SNAKEMAKE_LOCKS).glob("*.lock")) and not live_snakemake_processes(tmp_path)
    run_experiment(config, "cfg.yaml", tmp_path, commit=False)
    snakemake_calls = [c for c in commands if c[0] != "git"]
    assert "--unlock" in snakemake_calls[0] and any(t.endswith("eval.json") for t in snakemake_calls[1])
    assert "Clearing a stale Snakemake lock" in capsys.readouterr().out
