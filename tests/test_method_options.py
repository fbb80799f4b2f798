"""A method's options from the config to its advantages: the config syntax and its errors, the name a variant's
runs go by, the typed run and evaluation settings that carry the options, and the recipe of
docs/add-an-estimator-option.md followed literally for a clipped GDPO registered in this test.

Methods without options keep their names, run directories and settings JSON (every shipped config is checked)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gdpo import advantages as adv
from gdpo import methods
from gdpo.advantages import compute_advantages, group_normalise, register_estimator
from gdpo.cli import main
from gdpo.config import ConfigError, load_config, validate_config
from gdpo.methods import MethodOption, MethodVariant, method_variants
from gdpo.plan import (
    BASE_METHOD,
    RUN_WILDCARDS,
    EvalSettings,
    RunKey,
    RunSettings,
    plan_runs,
    resolve_eval_settings,
    resolve_run_settings,
    task_methods,
)

REPO = Path(__file__).resolve().parents[1]
#: The shipped configs whose methods are all plain names (their runs, paths and settings must not change).
SHIPPED = sorted(path.stem for path in (REPO / "config").glob("*.yaml"))
#: G = 16: one rollout of 16 succeeds on the first reward (its normalised advantage 3.75), the second reward
#: alternates 0/1.
RARE_SUCCESS = [[1.0 if i == 0 else 0.0, float(i % 2)] for i in range(16)]


def smoke(methods_list: list | None = None) -> dict:
    config = load_config(REPO / "config" / "smoke.yaml")
    if methods_list is not None:
        config["methods"] = methods_list
    return config


# --------------------------------------------------------------------------------------------------
# The name a variant's runs go by
# --------------------------------------------------------------------------------------------------


def test_a_variant_is_named_by_its_method_and_options_and_the_same_options_give_the_same_name():
    assert MethodVariant("gdpo").name == "gdpo"
    assert MethodVariant("gdpo", {"clip": 3}).name == MethodVariant("gdpo", {"clip": 3.0}).name == "gdpo_clip3"
    assert MethodVariant("gdpo", {"clip": 3}).options == {"clip": 3.0}  # as the estimator reads it
    assert MethodVariant("gdpo", {"clip": 0.5}).name == "gdpo_clip0p5"
    assert MethodVariant("gdpo", {"clip": 1e-5}).name == "gdpo_clip1em05"
    assert MethodVariant("gdpo", {"clip": 2.25}).name == "gdpo_clip2p25"
    parts = [MethodOption("norm", "d", bool).name_part(True), MethodOption("norm", "d", bool).name_part(False),
             MethodOption("k", "d", int).name_part(-2), MethodOption("base", "d", str, choices=("max",)).name_part("max")]
    assert parts == ["normon", "normoff", "km2", "basemax"]
    # each name is a run directory's method, read back from its path
    for name in ("gdpo_clip3", "gdpo_clip0p5", "gdpo_clip1em05"):
        assert re.fullmatch(RUN_WILDCARDS["method"], name)
        assert RunKey.from_path(RunKey("arithmetic", name, 0, Path("results/smoke/runs")).path()).method == name


def test_an_option_declaration_that_cannot_name_a_run_is_refused():
    for bad in ({"name": "Clip"}, {"name": "clip-c"}, {"name": "mode", "kind": str},
                {"name": "mode", "kind": str, "choices": ("a.b",)}, {"name": "c", "kind": list}):
        with pytest.raises(ValueError):
            MethodOption(description="d", **bad)


# --------------------------------------------------------------------------------------------------
# The config syntax, and what an error says
# --------------------------------------------------------------------------------------------------


def test_the_config_schema_takes_a_method_with_options_and_names_a_wrong_option_with_the_allowed_ones(tmp_path):
    validate_config(smoke(["grpo", "gdpo", {"gdpo": {"clip": 3.0}}]))

    def problems(config: dict) -> str:
        path = tmp_path / "config.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        with pytest.raises(ConfigError) as error:
            validate_config(config, config_files=[path])
        return str(error.value)

    assert (f"unknown key 'methods[1].gdpo.clp' (in {tmp_path / 'config.yaml'}); allowed keys under "
            "'methods[1].gdpo': clip") in problems(smoke(["grpo", {"gdpo": {"clp": 3.0}}]))
    assert "allowed keys under 'methods[0].grpo': none" in problems(smoke([{"grpo": {"clip": 3.0}}]))
    assert "allowed keys under 'methods[0]': gdpo, gdpo_nobn, gdpo_nostd, grpo, grpo_nostd" in problems(
        smoke([{"gdpoo": {"clip": 3.0}}]))
    assert "key 'methods[0].gdpo.clip' = 0" in problems(smoke([{"gdpo": {"clip": 0}}]))
    assert "write the name alone" in problems(smoke([{"gdpo": {}}]))
    task_level = smoke()
    task_level["tasks"]["arithmetic"]["methods"] = ["grpo", {"gdpo": {"clp": 1.0}}]
    assert "allowed keys under 'tasks.arithmetic.methods[1].gdpo': clip" in problems(task_level)


@pytest.mark.parametrize(("entries", "message"), [
    (["grpo", {"gdpo": {"clp": 3.0}}], r"methods\[1\]: method 'gdpo' has no option 'clp'; its options are: clip\."),
    ([{"grpo": {"clip": 3.0}}], r"methods\[0\]: method 'grpo' has no option 'clip'; it takes no options\."),
    ([{"gdpo": {"clip": -1}}], r"methods\[0\]: method 'gdpo': option 'clip' = -1.0 is not allowed: it takes a number > 0"),
    ([{"gdpo": {"clip": 3}}, {"gdpo": {"clip": 3.0}}], r"methods runs \['gdpo_clip3'\] more than once"),
    ([{"gdpo": {}}], r"methods\[0\]: 'gdpo' is given no options; write the method's name alone"),
    ([{"gdpo": {"clip": 3}, "grpo": {"clip": 1}}], r"methods\[0\]: .* is no method"),
    ([{"ppo": {"clip": 3}}], r"methods\[0\]: Unknown advantage method 'ppo'"),
])
def test_planning_names_the_entry_the_option_and_the_allowed_ones_without_the_schema(entries, message):
    with pytest.raises(ValueError, match=message):
        plan_runs(smoke(entries))
    with pytest.raises(ValueError, match=message.replace("methods", "task 'arithmetic': methods", 1)):
        config = smoke()
        config["tasks"]["arithmetic"]["methods"] = entries
        plan_runs(config)


# --------------------------------------------------------------------------------------------------
# Methods without options are as they were
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SHIPPED)
def test_methods_without_options_keep_their_names_paths_and_settings_json(name):
    config = load_config(REPO / "config" / f"{name}.yaml")
    for task, spec in config["tasks"].items():
        entries = spec.get("methods", config["methods"])
        assert all(isinstance(entry, str) for entry in entries)  # the shipped configs give no options
        assert task_methods(config, task) == list(entries)
        for method in entries:
            run = resolve_run_settings(config, task, method, 0)
            assert run.method == method and run.method_options is None and run.key().method == method
            assert "method_options" not in run.to_dict()
            evaluation = resolve_eval_settings(config, task, method, 0)
            assert "method_options" not in evaluation.to_dict() and evaluation.key().method == method
    assert {key.method for key in plan_runs(config)} <= set(methods.available_methods())


# --------------------------------------------------------------------------------------------------
# From the config through the typed settings into the estimator
# --------------------------------------------------------------------------------------------------


def test_a_method_with_options_runs_under_its_own_name_with_its_options_in_its_settings():
    plain = smoke()
    config = smoke([*plain["methods"], {"gdpo": {"clip": 3}}])
    runs = {str(key.path()) for key in plan_runs(config)}
    assert {"results/smoke/runs/arithmetic/gdpo_clip3/seed0", "results/smoke/runs/arithmetic/gdpo/seed0"} <= runs
    assert runs - {str(key.path()) for key in plan_runs(plain)} == {
        "results/smoke/runs/arithmetic/gdpo_clip3/seed0", "results/smoke/runs/arithmetic/gdpo_clip3/seed1"}

    settings = resolve_run_settings(config, "arithmetic", "gdpo_clip3", 0)
    assert (settings.method, settings.method_options, settings.variant.name) == ("gdpo", {"clip": 3.0}, "gdpo_clip3")
    assert str(settings.key("results/smoke/runs").path()) == "results/smoke/runs/arithmetic/gdpo_clip3/seed0"
    data = json.loads(settings.to_json())
    assert (data["method"], data["method_options"]) == ("gdpo", {"clip": 3.0})
    assert RunSettings.from_json(settings.to_json()) == settings
    # the plain method's settings are those of the config without the variant, to the character
    assert resolve_run_settings(config, "arithmetic", "gdpo", 0).to_json() == \
        resolve_run_settings(plain, "arithmetic", "gdpo", 0).to_json()

    evaluation = resolve_eval_settings(config, "arithmetic", "gdpo_clip3", 0)
    assert (evaluation.method, evaluation.method_options, evaluation.key().method) == ("gdpo", {"clip": 3.0},
                                                                                       "gdpo_clip3")
    assert EvalSettings.from_json(evaluation.to_json()) == evaluation
    assert resolve_eval_settings(config, "arithmetic", BASE_METHOD, 0).to_json() == \
        resolve_eval_settings(plain, "arithmetic", BASE_METHOD, 0).to_json()

    # the estimator gets them: the settings' method and options give the clipped advantages
    clipped = compute_advantages(RARE_SUCCESS, 16, settings.method, convention=settings.convention,
                                 options=settings.method_options, batch_step=False)
    assert clipped[0].item() == pytest.approx(3.0 + group_normalise(
        torch.tensor(RARE_SUCCESS, dtype=torch.float64), 16, adv.get_convention("trl"))[0, 1].item())


def test_settings_written_by_hand_are_checked_like_the_config():
    data = json.loads(resolve_run_settings(smoke([{"gdpo": {"clip": 3.0}}]), "arithmetic", "gdpo_clip3", 0).to_json())
    with pytest.raises(ValueError, match=r"run arithmetic/gdpo/seed0: method 'gdpo' has no option 'clp'; its options "
                                         r"are: clip\."):
        RunSettings.from_dict({**data, "method_options": {"clp": 3.0}})
    with pytest.raises(ValueError, match="method 'grpo' has no option 'clip'"):
        RunSettings.from_dict({**data, "method": "grpo"})
    assert RunSettings.from_dict({**data, "method_options": {}}).method_options is None  # as a plain run's
    # one reward under a convention that runs GRPO for it would drop the option: refused when planned
    config = smoke([{"gdpo": {"clip": 3.0}}])
    config["advantage_convention"] = "nvlabs"
    config["tasks"]["arithmetic"]["reward_weights"] = {"correct": 1.0}
    with pytest.raises(ValueError, match="runs as 'grpo' with a single reward function under convention 'nvlabs'"):
        resolve_run_settings(config, "arithmetic", "gdpo_clip3", 0)


def test_the_workflow_plans_a_variant_with_its_options_in_the_jobs_settings(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(re.sub(r"(?m)^methods: .*$", "methods: [grpo, gdpo, {gdpo: {clip: 3.0}}]",
                             (REPO / "config" / "smoke.yaml").read_text()))
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                             str(tmp_path), "-n", "-p", "--configfile", str(config)],
                            capture_output=True, text=True, cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--run-dir results/smoke/runs/arithmetic/gdpo_clip3/seed0" in result.stdout
    assert '"method": "gdpo", "convention": "trl"' in result.stdout and '"method_options": {"clip": 3.0}}' in result.stdout


# --------------------------------------------------------------------------------------------------
# A clipped GDPO added by the recipe (docs/add-an-estimator-option.md), literally
# --------------------------------------------------------------------------------------------------

#: The estimator the test registers (steps 1 and 2 of the recipe, in one module: this one).
RECIPE_METHOD = "gdpo_recipe"


def register_clipped_gdpo() -> None:
    """Steps 1–2 of the recipe through ``register_estimator``: the option declared with the function."""

    # 1. Declare the option (here with the estimator itself).
    @register_estimator(RECIPE_METHOD, description="GDPO whose per-reward advantages a config may clip",
                        batch_step=True, grpo_counterpart="grpo", group_local=True, options=(
                            MethodOption("clip", "clip each reward's group-normalised advantage to [-c, c] before "
                                                 "the weighted sum (c in group stds)",
                                         float, minimum=0.0, exclusive_minimum=True),))
    # 2. Read it in the function.
    def gdpo_recipe(inputs):
        per_reward = group_normalise(inputs.rewards, inputs.num_generations, inputs.convention)
        clip = inputs.options.get("clip")
        if clip is not None:
            per_reward = per_reward.clamp(-clip, clip)
        return (per_reward * inputs.weights).sum(dim=1)


@pytest.fixture
def recipe_method():
    register_clipped_gdpo()
    yield RECIPE_METHOD
    adv._ESTIMATORS.pop(RECIPE_METHOD)
    methods._METHODS.pop(RECIPE_METHOD)


@pytest.mark.parametrize("shipped", [True, False], ids=["gdpo", RECIPE_METHOD])
def test_a_clipped_gdpo_added_by_the_recipe_runs_from_the_config_to_its_advantages(shipped, request, capsys):
    method = "gdpo" if shipped else request.getfixturevalue("recipe_method")
    # 3. Its tests: what the option does, and a refused value named.
    rewards = torch.tensor(RARE_SUCCESS, dtype=torch.float64)
    per_reward = group_normalise(rewards, 16, adv.get_convention("exact"))
    expected = per_reward.clamp(-3.0, 3.0).sum(dim=1)
    assert compute_advantages(rewards, 16, method, convention="exact", batch_step=False,
                              options={"clip": 3.0}).tolist() == pytest.approx(expected.tolist(), abs=1e-12)
    assert compute_advantages(rewards, 16, method, convention="exact", batch_step=False).tolist() == \
        pytest.approx(per_reward.sum(dim=1).tolist(), abs=1e-12)
    with pytest.raises(ValueError, match="option 'clip' = 0.0 is not allowed: it takes a number > 0"):
        compute_advantages(rewards, 16, method, options={"clip": 0})

    # 4. A config line, checked against the schema (the option filled in from the declaration)
    config = smoke(["grpo", {method: {"clip": 3.0}}])
    validate_config(config)
    with pytest.raises(ConfigError, match=rf"allowed keys under 'methods\[1\]\.{method}': clip"):
        validate_config(smoke(["grpo", {method: {"clp": 3.0}}]))

    # 5. Check: its runs, their settings and the estimator they reach; `gdpo methods` lists the option
    name = f"{method}_clip3"
    assert {key.method for key in plan_runs(config) if key.task == "arithmetic"} == {"grpo", name}
    settings = RunSettings.from_json(resolve_run_settings(config, "arithmetic", name, 0).to_json())
    assert (settings.method, settings.method_options, settings.key().method) == (method, {"clip": 3.0}, name)
    trained = compute_advantages(rewards, 16, settings.method, convention="exact", batch_step=False,
                                 options=settings.method_options)
    assert trained.tolist() == pytest.approx(expected.tolist(), abs=1e-12)
    assert main(["methods"]) == 0
    listing = capsys.readouterr().out
    assert re.search(rf"(?m)^  {method} .*\n +option clip: a number > 0; clip each reward", listing)


def test_the_recipe_names_the_files_it_touches():
    """The page lists the files a new option touches, and the code blocks of its recipe are the shipped code."""
    page = (REPO / "docs" / "add-an-estimator-option.md").read_text(encoding="utf-8")
    for file in ("gdpo/methods.py", "gdpo/advantages.py", "tests/test_advantages.py"):
        assert f"`{file}`" in page
    shipped = "".join((REPO / "gdpo" / name).read_text(encoding="utf-8") for name in ("methods.py", "advantages.py"))
    compact = re.sub(r"\s+", "", shipped)
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert len(blocks) == 3
    for block in blocks:
        assert re.sub(r"\s+", "", block) in compact, block
    assert "methods: [grpo, gdpo, {gdpo: {clip: 3.0}}]" in page  # its config line, which runs gdpo_clip3
    assert method_variants(["grpo", "gdpo", {"gdpo": {"clip": 3.0}}])[2].name == "gdpo_clip3"
