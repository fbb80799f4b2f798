"""Live reporting (config ``training.report_to``): the config check, unchanged settings for configs that do not
set it, and real tiny training runs whose TensorBoard events and trackio store hold the logged metrics."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gdpo.config import ConfigError, apply_grid, load_config
from gdpo.evidence import RUN_FILES, restore, save_evidence
from gdpo.plan import plan_runs, report_backends, resolve_run_settings, resolve_warmup_settings
from gdpo.training import models
from gdpo.training.run import read_metrics, train
from gdpo.training.tracking import PROJECT, MissingBackendError, check_backends_installed, run_logs_dir

REPO = Path(__file__).resolve().parents[1]


def smoke_config(**training) -> dict:
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config["training"].update(training)
    return config


# --------------------------------------------------------------------------------------------------
# The config key
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "message"), [
    ("all", "key 'training.report_to' = 'all'"),
    (["tensorboard", "mlflow"], "key 'training.report_to[1]' = 'mlflow'"),
])
def test_an_unknown_backend_is_refused_naming_the_allowed_ones(tmp_path, value, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(smoke_config(report_to=value)))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert message in str(error.value)
    assert "allowed values: none, tensorboard, trackio, wandb" in str(error.value)


@pytest.mark.parametrize("value", ["none", "tensorboard", ["tensorboard", "trackio"], ["wandb"]])
def test_a_backend_or_a_list_of_them_is_accepted(tmp_path, value):
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(smoke_config(report_to=value)))
    load_config(path)


def test_run_settings_refuse_what_trl_would_misread():
    assert report_backends("none") == [] and report_backends(["none"]) == []
    assert report_backends("trackio") == ["trackio"] and report_backends(["tensorboard", "wandb"]) == ["tensorboard",
                                                                                                        "wandb"]
    for value, message in ((["none", "tensorboard"], "combines 'none' with backends"),
                           ("all", r"allowed values: none, tensorboard, trackio, wandb \(name each backend"),
                           (["trackio", "trackio"], "repeats a backend"), (3, "must be a backend name")):
        with pytest.raises(ValueError, match=message):
            resolve_run_settings(smoke_config(report_to=value), "arithmetic", "gdpo", 0)


#: sha256 over the settings JSON of every run and warm-up of each config and grid, one per line, as the code
#: before ``training.report_to`` computed them (commit f7b74d0): what Snakemake compares to decide a re-run.
#: A deliberate change of one of these configs changes its digest too: update it in the same commit.
SETTINGS_BEFORE_REPORT_TO = {
    ("mini", "default"): "7d7c81e8081e36e2bd2dd9499f4ec8fd7580379c92450a948dc9438c0e34dae9",
    ("mini", "full"): "8bf4b8301845c446f6275420b040ecc9fec3db48d11ad4612029c737e032b7b5",
    ("cpu-evidence", "default"): "eb0e96ba89bfcca5ab612dd4ac14cf4f7745ac20a7cafd572cae8468ac7e9837",
}


def settings_lines(config: dict) -> list[str]:
    lines = [resolve_run_settings(config, run.task, run.method, run.seed).to_json() for run in plan_runs(config)]
    warmups = [resolve_warmup_settings(config, task) for task in sorted(config["tasks"])]
    return lines + ["null" if warmup is None else warmup.to_json() for warmup in warmups]


@pytest.mark.parametrize(("name", "grid"), sorted(SETTINGS_BEFORE_REPORT_TO))
def test_configs_without_report_to_keep_their_settings(name, grid):
    config = apply_grid({**load_config(REPO / f"config/{name}.yaml"), "grid": grid})
    lines = settings_lines(config)
    assert "report_to" not in "\n".join(lines)
    assert hashlib.sha256("\n".join(lines).encode()).hexdigest() == SETTINGS_BEFORE_REPORT_TO[name, grid]
    # Setting the key adds it to every run's TRL arguments and warm-up, and changes nothing else.
    config["training"] = {**config.get("training", {}), "report_to": ["tensorboard"]}
    reporting = [json.loads(line) for line in settings_lines(config)]
    for before, after in zip(lines, reporting):
        if after is None:
            continue
        target = after["trl"] if "trl" in after else after
        assert target.pop("report_to") == ["tensorboard"]
        assert json.dumps(after) == before


def test_committed_evidence_made_without_reporting_still_counts(tmp_path):
    settings = resolve_run_settings(smoke_config(), "arithmetic", "gdpo", 0).to_dict()
    run_dir = tmp_path / "results/arithmetic/gdpo/seed0"
    run_dir.mkdir(parents=True)
    for name in RUN_FILES:
        (run_dir / name).write_text("{}\n")
    (run_dir / "metrics.jsonl").write_text('{"step": 1}\n')
    (run_dir / "summary.json").write_text('{"steps": 1}')
    # as train() writes it: TRL's arguments completed, report_to "none"
    (run_dir / "config.json").write_text(json.dumps({**settings, "trl": {**settings["trl"], "report_to": "none"}}))
    (run_dir / "eval.json").write_text('{"benchmarks": {}}')
    save_evidence(run_dir, tmp_path / "evidence")
    reporting = resolve_run_settings(smoke_config(report_to="tensorboard"), "arithmetic", "gdpo", 0).to_dict()
    restore(tmp_path / "evidence", tmp_path / "restored", RUN_FILES, reporting)
    assert (tmp_path / "restored" / "config.json").is_file()
    other = resolve_run_settings(smoke_config(report_to="tensorboard", max_steps=5), "arithmetic", "gdpo", 0)
    with pytest.raises(ValueError, match="trl.max_steps: committed 4, config 5"):
        restore(tmp_path / "evidence", tmp_path / "other", RUN_FILES, other.to_dict())


# --------------------------------------------------------------------------------------------------
# Before any work: a backend that is not installed
# --------------------------------------------------------------------------------------------------


def test_a_missing_backend_stops_the_run_before_any_work_naming_its_pip_command(tmp_path):
    if importlib.util.find_spec("wandb"):
        pytest.skip("wandb is installed here; this check needs a backend that is not")
    settings = resolve_run_settings(smoke_config(report_to=["tensorboard", "wandb"]), "arithmetic", "gdpo", 0)
    with pytest.raises(MissingBackendError, match=r"asks for wandb, .*pip install wandb\)"):
        train(settings, tmp_path / "no-model", tmp_path / "run")
    assert not any(tmp_path.iterdir())  # no run directory, no checkpoint directory


def test_the_pip_command_of_a_pinned_backend_names_its_pinned_version():
    pins = dict(line.split("==") for line in (REPO / "envs/requirements-train.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    from gdpo.training.tracking import _pinned_requirement

    assert _pinned_requirement("tensorboard") == f"tensorboard=={pins['tensorboard']}"
    assert _pinned_requirement("trackio") == f"trackio=={pins['trackio']}"
    check_backends_installed(["tensorboard", "trackio"])  # the train requirements install both


# --------------------------------------------------------------------------------------------------
# Real runs: what the backends logged
# --------------------------------------------------------------------------------------------------

#: Keys every step of the smoke arithmetic run logs (its rewards: correct, format, length).
REWARD_KEYS = ("reward", "rewards/correct/mean", "rewards/format/mean", "rewards/length/mean", "rewards/length/std",
               "advantages/std", "loss")


def assert_logged_as_in_metrics(logged: dict[str, dict[int, float]], records: list[dict]) -> None:
    """``logged``: metric → step → value as a backend stored it (transformers prefixes ``train/``)."""
    assert [r["step"] for r in records] == [1, 2]
    for key in REWARD_KEYS:
        assert set(logged[f"train/{key}"]) == {1, 2}, key
        for record in records:
            assert math.isclose(logged[f"train/{key}"][record["step"]], record[key], rel_tol=1e-6, abs_tol=1e-6), key


def test_tensorboard_writes_the_logged_rewards_into_the_run_directory(tiny_model, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    settings = resolve_run_settings(smoke_config(max_steps=2, report_to=["tensorboard"]), "arithmetic", "gdpo", 4)
    run_dir = tmp_path / "arithmetic/gdpo/seed4"
    stale = run_logs_dir(run_dir) / "tensorboard" / "events.out.tfevents.stale"
    stale.parent.mkdir(parents=True)
    stale.write_text("a run that never reached a checkpoint starts over, and so do its logs")
    environment = dict(os.environ)
    train(settings, tiny_model, run_dir, threads=1)
    assert dict(os.environ) == environment  # the backends' variables were the run's only

    events = sorted((run_dir / "logs/tensorboard").glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0] != stale
    accumulator = EventAccumulator(str(events[0].parent))
    accumulator.Reload()
    logged = {tag: {event.step: event.value for event in accumulator.Scalars(tag)}
              for tag in accumulator.Tags()["scalars"]}
    assert_logged_as_in_metrics(logged, read_metrics(run_dir / "metrics.jsonl"))
    # The declared outputs as without reporting, the logs beside them; checkpoints removed as always.
    assert {p.name for p in run_dir.iterdir()} == {"metrics.jsonl", "summary.json", "config.json", "env.json", "model",
                                                   "logs"}
    assert not Path(f"{run_dir}.work").exists()
    trl = json.loads((run_dir / "config.json").read_text())["trl"]
    assert trl["report_to"] == ["tensorboard"] and trl["run_name"] == "arithmetic/gdpo/seed4"


def test_trackio_logs_into_a_local_store_in_the_run_directory(tiny_model, tmp_path):
    settings = resolve_run_settings(smoke_config(max_steps=2, report_to="trackio"), "arithmetic", "gdpo", 4)
    run_dir = tmp_path / "arithmetic/gdpo/seed4"
    # The job as the workflow starts it, in its own process (trackio fixes its store's place at import). A
    # Space in the user's environment is ignored (contacting the hub would fail here: there is no network),
    # and nothing is written to trackio's default store under HF_HOME.
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRACKIO_SPACE_ID": "someone/some-space",
           "HF_HOME": str(tmp_path / "hf-home")}
    env.pop("TRACKIO_DIR", None)
    job = subprocess.run([sys.executable, "-m", "gdpo", "train", "--settings", settings.to_json(), "--model-dir",
                          str(tiny_model), "--run-dir", str(run_dir), "--threads", "1"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert job.returncode == 0, job.stderr[-3000:]
    store = (run_dir / "logs/trackio").resolve()
    assert f"Trackio metrics logged to: {store}" in job.stdout
    assert (store / f"{PROJECT}.db").is_file() and not (tmp_path / "hf-home" / "trackio").exists()

    # Read back through trackio's own storage API, pointed at the run's store.
    reader = ("import json, sys\nfrom trackio.sqlite_storage import SQLiteStorage\n"
              "print(json.dumps({'runs': SQLiteStorage.get_runs(sys.argv[1]), "
              "'logs': SQLiteStorage.get_logs(sys.argv[1], sys.argv[2])}, default=str))")
    read = subprocess.run([sys.executable, "-c", reader, PROJECT, "arithmetic/gdpo/seed4"], capture_output=True,
                          text=True, env={**env, "TRACKIO_DIR": str(store)}, timeout=300)
    assert read.returncode == 0, read.stderr[-3000:]
    stored = json.loads(read.stdout.splitlines()[-1])
    assert stored["runs"] == ["arithmetic/gdpo/seed4"]
    logged: dict[str, dict[int, float]] = {}
    for entry in stored["logs"]:
        for key, value in entry.items():
            if key.startswith("train/") and "train/global_step" in entry:
                logged.setdefault(key, {})[entry["train/global_step"]] = value
    assert_logged_as_in_metrics(logged, read_metrics(run_dir / "metrics.jsonl"))


def test_the_warm_up_reports_its_losses_beside_the_warmed_up_model(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from gdpo.plan import WarmupSettings
    from gdpo.training.warmup import warmup_model

    call = {"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}
    row = {"category": "simple", "category_size": 10, "language": "Python", "function": [], "possible_answer": None,
           "tools": [{"name": "get_weather", "description": "Weather forecast", "parameters": {}}],
           "answer_type": "tool_call", "ground_truth_calls": [call]}
    rows = [{**row, "id": f"simple_{i}", "question": [{"role": "user", "content": f"Weather for {i}?"}]}
            for i in range(8)]
    data_dir = tmp_path / "split"
    data_dir.mkdir()
    for name in ("train", "eval"):
        (data_dir / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = WarmupSettings(task="t", family="tool_calling", options={"data_dir": str(data_dir)}, max_steps=2,
                              train_size=8, learning_rate=1e-3, report_to=["tensorboard"])
    out = tmp_path / "warmup/t/model"
    record = warmup_model(settings, models.build_tiny_model(tmp_path / "base"), out)
    accumulator = EventAccumulator(str(tmp_path / "warmup/t/logs/tensorboard"))
    accumulator.Reload()
    assert [event.value for event in accumulator.Scalars("train/loss")] == pytest.approx(record["losses"])
    assert not (out / "logs").exists()  # the model directory holds the model only


def test_a_trackio_imported_before_the_job_set_its_store_is_refused(tmp_path):
    import trackio.utils

    from gdpo.training.tracking import backend_environment

    if Path(trackio.utils.TRACKIO_DIR).resolve() == (tmp_path / "trackio").resolve():
        pytest.skip("trackio's store is already this directory")
    with pytest.raises(RuntimeError, match="imported in this process before the job set its store"):
        with backend_environment(["trackio"], tmp_path):
            pass
