"""Config schema validation: every shipped config is valid; bad keys and values are named with their file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from gdpo.config import ConfigError, load_config, load_schema, read_yaml, validate_config

REPO = Path(__file__).resolve().parents[1]
CONFIGS = sorted((REPO / "config").glob("*.yaml"))


def test_every_shipped_config_is_valid():
    assert {p.name for p in CONFIGS} >= {"smoke.yaml", "mini.yaml", "paper-tool_calling.yaml", "paper-math.yaml",
                                         "paper-code.yaml"}
    for path in CONFIGS:
        load_config(path)


def test_every_section_and_task_has_a_comment():
    # The convention of the field's best workflows: each top-level key and each task is introduced by a
    # comment line directly above it (nested keys by the same or an inline comment).
    for path in CONFIGS:
        lines = path.read_text().splitlines()
        tasks_block = False
        for index, line in enumerate(lines):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            indent = len(line) - len(line.lstrip())
            if indent == 0:
                tasks_block = line.startswith("tasks:")
            if indent == 0 or (tasks_block and indent == 2):
                assert lines[index - 1].strip().startswith("#"), f"{path}:{index + 1} has no comment above it"


def write(tmp_path: Path, change) -> Path:
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    change(config)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_unknown_key_names_key_allowed_keys_and_file(tmp_path):
    path = write(tmp_path, lambda c: c["exact"].update(max_rolouts=3))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    message = str(error.value)
    assert "unknown key 'exact.max_rolouts'" in message
    assert "decimals, max_rewards, max_rollouts" in message
    assert str(path) in message


def test_bad_method_names_allowed_values(tmp_path):
    path = write(tmp_path, lambda c: c.update(methods=["grpo", "gdpo2"]))
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert "key 'methods[1]' = 'gdpo2'" in str(error.value)
    assert "allowed values: gdpo, gdpo_nobn, gdpo_nostd, grpo, grpo_nostd" in str(error.value)


def test_bad_values_and_missing_keys_are_all_reported(tmp_path):
    def change(config):
        config["seeds"] = [-1]
        config["scale"] = "huge"
        del config["exact"]

    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, change))
    message = str(error.value)
    assert "key 'seeds[0]' = -1" in message and "minimum of 0" in message
    assert "key 'scale' = 'huge'" in message and "allowed values: smoke, mini, cpu-evidence, paper-tool_calling, paper-math, paper-code" in message
    assert "'exact' is a required property" in message


def test_blame_goes_to_the_file_with_highest_precedence_or_the_command_line(tmp_path):
    base = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    override = tmp_path / "override.yaml"
    override.write_text("methods: [ppo]\n")
    merged = {**base, "methods": ["ppo"], "extra_key": 1}
    with pytest.raises(ConfigError) as error:
        validate_config(merged, config_files=[REPO / "config/smoke.yaml", override])
    message = str(error.value)
    assert f"'ppo' (in {override})" in message
    assert "unknown key 'extra_key' (in --config on the command line)" in message


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("scale: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(broken)


def test_the_schema_is_parsed_once_per_file_version_and_each_caller_gets_its_own_copy(tmp_path):
    schema_file = tmp_path / "schema.yaml"
    shipped = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"
    schema_file.write_text(shipped.read_text())
    first = load_schema(schema_file)
    first["properties"]["methods"]["items"]["enum"].append("not_a_method")
    assert "not_a_method" not in load_schema(schema_file)["properties"]["methods"]["items"]["enum"]
    # an edited schema file is read again
    schema_file.write_text(shipped.read_text() + "\ntitle: edited\n")
    os.utime(schema_file, ns=(1, 1))
    assert load_schema(schema_file)["title"] == "edited"
    # the C parser and the pure-Python one read the shipped files alike
    for path in [shipped, *sorted((shipped.parents[2] / "config").rglob("*.yaml"))]:
        assert read_yaml(path.read_text()) == yaml.safe_load(path.read_text()), path


def test_default_grid_fills_every_figure_and_table_and_the_full_grid_widens_its_seeds():
    from gdpo.config import apply_grid
    from gdpo.plan import plan_evaluations, plan_runs

    config = load_config(REPO / "config" / "mini.yaml")
    assert apply_grid(config) == config  # the default grid is the config itself
    assert set(config["reporting"]["figures"]) == {"fig4", "fig5", "fig6", "fig7", "fig8"}
    assert set(config["reporting"]["tables"]) == {"table1", "table3", "table4", "table5"}
    runs = plan_runs(config)
    # The three families with three methods over two seeds; each variant with one seed.
    for task in ("tool_calling", "math", "code"):
        assert {(r.method, r.seed) for r in runs if r.task == task} >= {
            (m, s) for m in ("grpo", "grpo_nostd", "gdpo") for s in (0, 1)}
    assert {(r.method, r.seed) for r in runs if r.task == "math_w0.25"} == {("grpo", 0), ("gdpo", 0)}
    base_tasks = {e.task for e in plan_evaluations(config) if e.method == "base"}
    assert base_tasks == {"tool_calling", "math", "code"}  # variants share their task's base evaluation

    full = apply_grid({**config, "grid": "full"})
    validate_config(full)
    assert full["seeds"] == [0, 1, 2] and all("seeds" not in spec for spec in full["tasks"].values())
    assert full["tasks"] == {name: {k: v for k, v in spec.items() if k != "seeds"}
                             for name, spec in config["tasks"].items()}
    full_runs = plan_runs(full)
    assert set(runs) < set(full_runs)
    assert {r.seed for r in full_runs if r.task == "math_w0.25"} == {0, 1, 2}


def test_full_grid_adds_tasks_and_overrides_keys():
    from gdpo.config import apply_grid

    config = {"seeds": [0], "tasks": {"a": {"family": "math", "seeds": [0], "length_limit": 4}},
              "full_grid": {"seeds": [0, 1], "tasks": {"a": {"length_limit": 8}, "b": {"family": "code"}},
                            "reporting": {"figures": {"fig5": "a"}}}, "grid": "full"}
    full = apply_grid(config)
    assert full["seeds"] == [0, 1] and full["reporting"] == {"figures": {"fig5": "a"}}
    assert full["tasks"] == {"a": {"family": "math", "length_limit": 8}, "b": {"family": "code"}}


def test_unknown_grid_or_missing_block_is_refused():
    from gdpo.config import ConfigError, apply_grid

    with pytest.raises(ConfigError, match="grid must be 'default' or 'full'"):
        apply_grid({"grid": "huge"})
    with pytest.raises(ConfigError, match="needs a full_grid: block"):
        apply_grid({"grid": "full", "tasks": {}})


# --------------------------------------------------------------------------------------------------
# The paper configs in miniature (config/overlays/miniature.yaml)
# --------------------------------------------------------------------------------------------------

MINIATURE = yaml.safe_load((REPO / "config/overlays/miniature.yaml").read_text())


@pytest.mark.parametrize("family", ["tool_calling", "math", "code"])
def test_miniature_keeps_the_paper_design_and_replaces_only_gpu_and_hub_parts(family):
    from gdpo.config import apply_miniature
    from gdpo.plan import plan_runs, resolve_run_settings

    paper = load_config(REPO / f"config/paper-{family}.yaml")
    assert apply_miniature(paper) == paper  # no block: unchanged
    small = apply_miniature({**paper, **MINIATURE})
    validate_config(small)
    assert small["scale"] == f"miniature-{family}" and "launch" not in small
    # kept: tasks, methods, rewards, weights, benchmarks, reporting, every TRL setting the overlay leaves
    assert small["reporting"] == paper["reporting"] and small["methods"] == paper["methods"]
    assert set(small["tasks"]) == set(paper["tasks"])
    for name, spec in paper["tasks"].items():
        changed = {k for k in set(spec) | set(small["tasks"][name]) if spec.get(k) != small["tasks"][name].get(k)}
        assert changed <= {"model", "data_dir", "eval_backend", "resources"}, (name, changed)
        assert "resources" not in small["tasks"][name]  # in miniature no job asks for a GPU
        assert small["tasks"][name].get("eval_backend", "hf") == "hf"
        assert small["tasks"][name]["model"] == "builtin:tiny-qwen2"
        assert small["tasks"][name]["data_dir"] == f"resources/data/miniature/{family}"
    for key, value in paper["training"].items():
        expected = MINIATURE["miniature"]["training"].get(key, value)
        assert small["training"][key] == expected, key
    # replaced: nothing GPU-only is left, and each job is one process
    assert not small["training"]["use_vllm"] and not small["training"]["bf16"]
    runs = plan_runs(small)
    assert {r.seed for r in runs} == {0}
    assert {(r.task, r.method) for r in runs} == {(t, m) for t, spec in paper["tasks"].items()
                                                  for m in spec.get("methods", paper["methods"])}
    settings = resolve_run_settings(small, runs[0].task, runs[0].method, 0)
    assert settings.trl["loss_type"] == paper["training"]["loss_type"]
    paper_settings = resolve_run_settings(paper, runs[0].task, runs[0].method, 0)
    assert settings.reward_weights == paper_settings.reward_weights


def test_miniature_refuses_a_config_that_is_not_a_paper_config():
    from gdpo.config import apply_miniature

    with pytest.raises(ConfigError, match="shrinks a paper config"):
        apply_miniature({**load_config(REPO / "config/mini.yaml"), **MINIATURE})


def test_paper_variants_share_their_base_evaluation():
    from gdpo.plan import plan_evaluations

    math = load_config(REPO / "config/paper-math.yaml")
    base = {e.task for e in plan_evaluations(math) if e.method == "base"}
    assert base == {"math_r1_1.5b", "math_r1_7b", "math_qwen3_4b"}  # one per base model
    code = load_config(REPO / "config/paper-code.yaml")
    assert {e.task for e in plan_evaluations(code) if e.method == "base"} == {"code_r1_7b"}
