"""Pre-flight (gdpo.preflight, gdpo.fetch): every input a config's jobs read is checked before any job, a missing one
stops even a dry run with the SLURM profile naming the path and the command that fetches it; GPU jobs run with the
hub offline; check-device's node checks (free disk, the code sandbox); results on scratch. No GPU, no internet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gdpo.cli import main
from gdpo.config import ConfigError
from gdpo.fetch import Fetchers, fetch_inputs
from gdpo.preflight import (
    BFCL_SPLIT_DIR,
    CODE_ALIASES,
    CODE_SOURCES,
    EURUS,
    MATH_ALIASES,
    MATH_HUB,
    check_inputs,
    checkpoint_disk_gib,
    fetch_record,
    gpu_job_prelude,
    hub_environment,
    link_results_to_scratch,
    missing_inputs,
    workflow_config,
)
from gdpo.tasks.hub_formats import check_file, math_rows, toolrl_rows
from tests.stand_ins import stand_in_inputs

REPO = Path(__file__).resolve().parents[1]
PAPER = ["paper-tool_calling", "paper-math", "paper-code"]


def paper(name: str, **overrides) -> dict:
    return workflow_config([REPO / "config" / f"{name}.yaml"], overrides)


def environ(tmp_path: Path) -> dict[str, str]:
    """An environment with a BFCL interpreter and a hub cache of the test's own (nothing of the machine's)."""
    python = tmp_path / "bfcl" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.touch()
    return {"GDPO_BFCL_PYTHON": str(python), "HF_HOME": str(tmp_path / "hf")}


def missing_paths(config: dict, tmp_path: Path, env: dict) -> dict[str, str]:
    """First path of each missing input → its fix (``{fetch}`` filled as `gdpo fetch`)."""
    return {item.paths[0]: item.fix.format(fetch="gdpo fetch") for item in missing_inputs(config, tmp_path, tmp_path, env)}


# --------------------------------------------------------------------------------------------------
# What each family's jobs read, missing and present
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), [
    ("paper-tool_calling", ["resources/data/toolrl/rlla_rl.json",
                            "resources/models/Qwen--Qwen2.5-1.5B-Instruct/config.json"]),
    ("paper-math", ["hf/gdpo-fetched/agentica-org--DeepScaleR-Preview-Dataset--train.json",
                    "hf/gdpo-fetched/HuggingFaceH4--MATH-500--test.json",
                    "resources/models/deepseek-ai--DeepSeek-R1-Distill-Qwen-7B/config.json"]),
    ("paper-code", ["hf/gdpo-fetched/PRIME-RL--Eurus-2-RL-Data--train.json",
                    "hf/gdpo-fetched/PRIME-RL--Eurus-2-RL-Data--validation.json"]),
])
def test_each_paper_familys_missing_inputs_are_named_with_the_fetch_command(tmp_path, name, expected):
    missing = missing_paths(paper(name), tmp_path, environ(tmp_path))
    for path in expected:
        hit = [found for found in missing if found.endswith(path)]
        assert hit and missing[hit[0]] == "gdpo fetch", (path, missing)


def test_the_bfcl_interpreter_and_a_users_split_are_named_with_how_to_make_them(tmp_path):
    config = paper("paper-tool_calling")
    missing = missing_paths(config, tmp_path, {"HF_HOME": str(tmp_path / "hf")})
    assert missing[str(tmp_path / ".venv-bfcl/bin/python")].startswith("make setup")
    # a BFCL split outside the bfcl_split rule's directory is the user's
    for spec in config["tasks"].values():
        spec["eval_data"] = "data/my_split"
    missing = missing_paths(config, tmp_path, {"GDPO_BFCL_PYTHON": str(tmp_path / "gone")})
    assert "bfcl_split --out-dir data/my_split" in missing["data/my_split/eval.jsonl"]
    assert "point GDPO_BFCL_PYTHON at an existing interpreter" in missing[str(tmp_path / "gone")]
    assert not any(path.startswith(BFCL_SPLIT_DIR) for path in missing)  # the rule makes those


def test_a_math_data_dir_must_hold_each_data_set_even_on_a_cpu(tmp_path):
    """The math loaders read only data_dir's copy when it is set: on any config, its files are required."""
    config = paper("paper-math")
    for spec in config["tasks"].values():
        spec["data_dir"] = "resources/data/math"
    for cpu in (False, True):
        if cpu:
            config.pop("gpu")
        missing = missing_paths(config, tmp_path, environ(tmp_path))
        assert "resources/data/math/deepscaler.json" in missing and "resources/data/math/math500.jsonl" in missing
        assert any("models" in path for path in missing) != cpu  # hub models: required for GPU jobs only


@pytest.mark.parametrize("name", PAPER)
def test_with_every_input_present_nothing_is_missing(tmp_path, name):
    arguments = stand_in_inputs([REPO / "config" / f"{name}.yaml"], tmp_path)
    config = paper(name, hf_home=arguments[1].split("=", 1)[1])
    assert missing_inputs(config, tmp_path, REPO) == []
    check_inputs(config, tmp_path, REPO)


@pytest.mark.parametrize("files", [["smoke"], ["mini"], ["cpu-evidence"], *([name, "overlays/miniature"] for name in PAPER)])
def test_cpu_configs_need_nothing_their_rules_do_not_make(tmp_path, files):
    """The BFCL split, the miniature's data and the built-in models are made by rules; CPU jobs may download."""
    config = workflow_config([REPO / "config" / f"{file}.yaml" for file in files])
    assert missing_inputs(config, tmp_path, tmp_path, environ(tmp_path)) == []


def test_the_familys_hub_sources_are_the_loaders_own():
    """Planning cannot import the families' data stack, so the pre-flight states their hub copies; they must agree."""
    from gdpo.tasks.code import data as code_data
    from gdpo.tasks.code import sources
    from gdpo.tasks.math import benchmarks

    loaders = {name: (source.hub_id, source.split) for name, source in benchmarks.BENCHMARK_SOURCES.items()}
    assert MATH_HUB == {"deepscaler": (benchmarks.DEEPSCALER.hub_id, benchmarks.DEEPSCALER.split), **loaders}
    assert MATH_ALIASES == {**benchmarks.BENCHMARK_ALIASES, **benchmarks.TRAIN_ALIASES}
    assert CODE_ALIASES == code_data.ALIASES and CODE_SOURCES == sources.CODE_SOURCES and EURUS == sources.EURUS_HUB_ID
    assert f'--out-dir {BFCL_SPLIT_DIR} ' in (REPO / "workflow/rules/data.smk").read_text()


# --------------------------------------------------------------------------------------------------
# The workflow stops on the login node
# --------------------------------------------------------------------------------------------------


def dry_run(directory: Path, name: str, *arguments: str) -> subprocess.CompletedProcess:
    """`snakemake -n --profile profiles/slurm --configfile config/<name>.yaml` in ``directory``."""
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                           str(directory), "--profile", str(REPO / "profiles/slurm"), "--configfile",
                           str(REPO / "config" / f"{name}.yaml"), *arguments, "-n"],
                          capture_output=True, text=True, timeout=300, env=env, check=False)


#: Per paper config, the input whose absence the dry run must name (its path's end).
FAMILY_INPUT = {"paper-tool_calling": "resources/data/toolrl/rlla_rl.json",
                "paper-math": "gdpo-fetched/HuggingFaceH4--MATH-500--test.json",
                "paper-code": "gdpo-fetched/PRIME-RL--Eurus-2-RL-Data--train.json"}


@pytest.mark.parametrize("name", PAPER)
def test_a_dry_run_with_the_slurm_profile_stops_naming_a_missing_input_and_its_fix(tmp_path, name):
    arguments = stand_in_inputs([REPO / "config" / f"{name}.yaml"], tmp_path)
    (missing,) = [path for path in [*tmp_path.rglob("*")] if path.as_posix().endswith(FAMILY_INPUT[name])]
    missing.unlink()
    result = dry_run(tmp_path, name, *arguments)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "MissingInputs" in output, output[-3000:]
    assert FAMILY_INPUT[name] in output and f"python -m gdpo fetch --configfile {REPO}/config/{name}.yaml" in output
    assert "rule train" not in output  # nothing planned, so nothing submitted

    missing.touch()  # every input present: the dry run plans the GPU jobs, with the hub offline
    result = dry_run(tmp_path, name, *arguments)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert f"export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HOME={tmp_path / 'hf_home'} && python -m gdpo " \
           "check-device --job train" in output
    assert "--disk-path results/" in output and ("--sandbox" in output) == (name == "paper-code")


# --------------------------------------------------------------------------------------------------
# GPU jobs: the hub offline, the node's checks
# --------------------------------------------------------------------------------------------------


def test_gpu_jobs_run_offline_with_their_node_checks_and_cpu_jobs_as_before(tmp_path):
    code = paper("paper-code", hf_home="$HOME/hf")
    train = gpu_job_prelude(code, "train", "code_r1_7b", "gdpo", 0, 8, "results/paper-code/runs/code_r1_7b/gdpo/seed0")
    assert train.startswith(f"export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HOME={Path(os.environ['HOME'], 'hf')} && ")
    assert train.endswith(f" --gpus 8 --sandbox --disk-path results/paper-code/runs/code_r1_7b/gdpo/seed0 --disk-gib "
                          f"{checkpoint_disk_gib(code, 'code_r1_7b'):g} && ")
    evaluate = gpu_job_prelude(code, "evaluate", "code_r1_7b", "base", 0, 1, "run")
    assert "--sandbox &&" in evaluate and "--disk" not in evaluate
    tool = paper("paper-tool_calling")
    assert "--sandbox" not in gpu_job_prelude(tool, "train", "tool_calling_3b", "gdpo", 0, 8, "run")
    assert hub_environment(tool) == {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    assert gpu_job_prelude(tool, "train", "tool_calling_3b", "gdpo", 0, 0, "run") == ""  # a CPU job


def test_a_train_jobs_disk_need_is_two_checkpoints_and_the_final_model():
    math = paper("paper-math")
    # 16 bytes per parameter per checkpoint (docs/cluster.md: ~110 GB at 7B), two at once, and the bf16 model
    assert 220 < checkpoint_disk_gib(math, "math_r1_7b") < 260
    assert 50 < checkpoint_disk_gib(math, "math_r1_1.5b") < 65
    assert checkpoint_disk_gib(workflow_config([REPO / "config/mini.yaml"]), "math") is None  # LoRA, a CPU model


def check_device(*extra: str) -> list[str]:
    return ["check-device", "--job", "train", "--task", "code_r1_7b", "--method", "gdpo", "--seed", "0", "--gpus", "0",
            *extra]


def test_check_device_stops_a_job_without_the_free_disk_its_checkpoints_need(tmp_path, capsys):
    run = tmp_path / "results/paper-code/runs/code_r1_7b/gdpo/seed0"  # not made yet: its filesystem is checked
    assert main(check_device("--disk-path", str(run), "--disk-gib", "1e9")) == 3
    message = capsys.readouterr().err
    for part in ("train job of code_r1_7b/gdpo/seed0 needs 1e+09 GiB free for its checkpoints", str(run),
                 f"the filesystem of {tmp_path}", "scratch_dir"):
        assert part in message, message
    assert main(check_device("--disk-path", str(run), "--disk-gib", "0.001")) == 0
    assert "GiB free for its checkpoints (0.001 GiB needed)" in capsys.readouterr().out
    assert main(check_device("--disk-path", str(run))) == 2  # the two go together


def test_check_device_stops_a_code_job_where_the_sandbox_cannot_isolate_programs(monkeypatch, capsys):
    from gdpo.tasks.code import sandbox

    def refused():
        raise RuntimeError("The code sandbox cannot isolate programs in mode 'user-namespaces': unshare: Operation "
                           "not permitted. Fix: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns"
                           "_clone=1)")

    monkeypatch.setattr(sandbox, "isolation_mode", refused)
    assert main(check_device("--sandbox")) == 3
    message = capsys.readouterr().err
    assert "train job of code_r1_7b/gdpo/seed0 runs model-written programs in the code sandbox" in message
    assert "unprivileged_userns_clone" in message and "Traceback" not in message
    monkeypatch.setattr(sandbox, "isolation_mode", lambda: "user-namespaces")
    assert main(check_device("--sandbox")) == 0
    assert "isolates programs in mode 'user-namespaces'" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------------
# gdpo fetch, gdpo preflight, scratch
# --------------------------------------------------------------------------------------------------


def test_fetch_puts_every_input_where_the_preflight_and_the_loaders_look(tmp_path):
    """Hub data into data_dir in the hub layout, or into the cache with a record; models as prepare_model; ToolRL."""
    config = paper("paper-math", hf_home="cache")
    config["tasks"]["math_r1_1.5b"]["data_dir"] = "resources/data/math"  # one task with local copies
    tool = paper("paper-tool_calling", hf_home="cache")
    config["tasks"].update(tool["tasks"])
    names = {hub: name for name, (hub, _) in MATH_HUB.items()}
    fetched = []

    def rows(hub_id: str, split: str) -> list[dict]:
        fetched.append((hub_id, split))
        return math_rows(names[hub_id], 3, 0)

    def model(spec: str, out: Path) -> None:
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")

    def toolrl(target: Path) -> None:
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(toolrl_rows(6, 0)))

    env = environ(tmp_path)
    assert len(fetch_inputs(config, tmp_path, tmp_path, env, dry_run=True, log=lambda _: None)) > 10
    left = fetch_inputs(config, tmp_path, tmp_path, env, fetchers=Fetchers(model, rows, toolrl), log=lambda _: None)
    # each math data set twice: as a local copy for one task, into the cache for the others
    assert left == [] and sorted(fetched) == sorted([*MATH_HUB.values()] * 2)
    for name in MATH_HUB:
        assert check_file("math", name, tmp_path / "resources/data/math") == 3  # the layout its loader reads
    assert check_file("tool_calling", "toolrl", tmp_path / "resources/data/toolrl") == 6
    record = json.loads(fetch_record(tmp_path / "cache", "HuggingFaceH4/MATH-500", "test").read_text())
    assert record["rows"] == 3 and record["split"] == "test"


def test_preflight_and_fetch_commands(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    files = [str(REPO / "config/paper-code.yaml")]
    assert main(["preflight", "--configfile", *files]) == 1
    message = capsys.readouterr().err
    assert "PRIME-RL--Eurus-2-RL-Data--train.json" in message and f"python -m gdpo fetch --configfile {files[0]}" in message
    assert main(["fetch", "--configfile", *files, "--dry-run"]) == 0
    assert "would fetch model deepseek-ai/DeepSeek-R1-Distill-Qwen-7B" in capsys.readouterr().out
    stand_in_inputs(files, tmp_path)
    assert main(["preflight", "--configfile", *files, "--config", "hf_home=hf_home"]) == 0


def test_scratch_dir_links_the_scales_results_and_never_moves_a_directory(tmp_path):
    config = {"scale": "paper-math", "scratch_dir": str(tmp_path / "scratch")}
    work = tmp_path / "work"
    target = link_results_to_scratch(config, work)
    assert target == tmp_path / "scratch/paper-math" and (work / "results/paper-math").resolve() == target
    (work / "results/paper-math/runs").mkdir()
    assert (target / "runs").is_dir() and link_results_to_scratch(config, work) == target  # again: unchanged
    with pytest.raises(ConfigError, match="is a link to"):
        link_results_to_scratch({**config, "scratch_dir": str(tmp_path / "other")}, work)
    (work / "results/paper-code").mkdir()
    with pytest.raises(ConfigError, match="mv results/paper-code"):
        link_results_to_scratch({**config, "scale": "paper-code"}, work)
    assert link_results_to_scratch({"scale": "mini"}, work) is None


def test_the_new_keys_are_validated(tmp_path):
    config = yaml.safe_load((REPO / "config/paper-math.yaml").read_text())
    config.update(hf_home="", scratch_dir=3)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match="hf_home") as error:
        workflow_config([bad])
    assert "scratch_dir" in str(error.value)
