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
    assert "key 'scale' = 'huge'" in message and "allowed values: smoke, mini, cpu-evidence, cpu-evidence-2, cpu-evidence-2-pilot, paper-tool_calling, paper-math, paper-code" in message
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
    first["$defs"]["method"]["then"]["enum"].append("not_a_method")
    assert "not_a_method" not in load_schema(schema_file)["$defs"]["method"]["then"]["enum"]
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
        assert changed <= {"model", "data_dir", "eval_backend", "resources", "length_limit"}, (name, changed)
        if "length_limit" in spec:  # its share of the completion cap is kept (paper: 4000 of 8000 tokens)
            paper_cap = {**paper["training"], **spec.get("training", {})}["max_completion_length"]
            small_cap = {**small["training"], **small["tasks"][name].get("training", {})}["max_completion_length"]
            assert small["tasks"][name]["length_limit"] / small_cap == spec["length_limit"] / paper_cap
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


# --------------------------------------------------------------------------------------------------
# Settings that pass one by one but not together: refused at planning, naming key, value, conflict and fix
# --------------------------------------------------------------------------------------------------


def smoke() -> dict:
    return yaml.safe_load((REPO / "config/smoke.yaml").read_text())


def conflicts_of(config: dict) -> str:
    """The message planning (gdpo.plan.plan_runs) and `gdpo validate-config` (check_settings) stop with."""
    from gdpo.plan import check_settings, plan_runs

    with pytest.raises(ConfigError) as planned:
        plan_runs(config)
    with pytest.raises(ConfigError) as checked:
        check_settings(config)
    assert str(planned.value) == str(checked.value)
    return str(checked.value)


def test_a_length_limit_at_or_above_the_completion_cap_is_refused():
    from gdpo.plan import plan_runs

    config = smoke()  # max_completion_length 16
    config["tasks"]["math"]["length_limit"] = 64
    message = conflicts_of(config)
    assert "key 'tasks.math.length_limit' = 64" in message
    assert "at or above the completion cap max_completion_length 16" in message
    assert "length reward is 1.0 on every step" in message and "'training.max_completion_length'" in message
    assert "Fix: set the task's `length_limit:` below 16" in message and "raise `max_completion_length:`" in message
    config["tasks"]["math"]["length_limit"] = 16  # at the cap: a truncated completion still earns it
    assert "'tasks.math.length_limit' = 16" in conflicts_of(config)
    config["tasks"]["math"]["length_limit"] = 15
    plan_runs(config)
    # the family's default limit (64 tokens for arithmetic) counts where the task sets none
    del config["tasks"]["arithmetic"]["length_limit"]
    assert "key 'tasks.arithmetic.family' = 'arithmetic': the length limit 64" in conflicts_of(config)
    # a task without a length reward has nothing to check
    config["tasks"]["arithmetic"]["reward_weights"] = {"correct": 1.0, "format": 1.0}
    plan_runs(config)


def test_rollouts_per_prompt_that_do_not_divide_the_generation_batch_are_refused():
    config = smoke()  # 8 completions per device and step
    config["training"]["num_generations"] = 3
    message = conflicts_of(config)
    assert message.count("key 'training.num_generations' = 3") == 1  # the scale's keys: once for every task
    assert "per_device_train_batch_size 8 × 1 process(es) × steps_per_generation 1 = 8 completions" in message
    assert "'training.per_device_train_batch_size'" in message
    assert "Fix: set `per_device_train_batch_size:` to a multiple of 3 (e.g. 9)" in message
    # a task's own training block is named as such; processes of the launch count
    config = smoke()
    config["tasks"]["math"]["training"] = {"per_device_train_batch_size": 6}
    assert "key 'tasks.math.training.per_device_train_batch_size'" not in conflicts_of(config)
    assert "generation batch of task 'math'" in conflicts_of(config)
    assert "'tasks.math.training.per_device_train_batch_size'" in conflicts_of(config)
    paper = load_config(REPO / "config/paper-tool_calling.yaml")  # 8 × 8 processes × 32 = 2048, G = 4
    paper["training"]["num_generations"] = 3
    assert "per_device_train_batch_size 8 × 8 process(es) × steps_per_generation 32 = 2048" in conflicts_of(paper)


@pytest.mark.parametrize("where", ["task", "full grid"])
def test_negative_seeds_are_refused_wherever_the_config_sets_them(tmp_path, where):
    from gdpo.plan import plan_runs

    def change(config):
        if where == "task":
            config["tasks"]["math"]["seeds"] = [-1]
        else:
            config["full_grid"] = {"tasks": {"math": {"seeds": [0, -1]}}}

    with pytest.raises(ConfigError, match=r"'(full_grid\.)?tasks\.math\.seeds\[\d\]' = -1 .*minimum of 0"):
        load_config(write(tmp_path, change))
    config = smoke()
    change(config)
    if where == "task":  # the planner refuses what the validator refuses
        with pytest.raises(ValueError, match="seed -1 .* must be an integer ≥ 0"):
            plan_runs(config)
    with pytest.raises(ConfigError, match="uniqueItems|non-unique"):
        load_config(write(tmp_path, lambda c: c["tasks"]["math"].update(seeds=[0, 0])))


def test_a_value_given_with_config_on_the_command_line_is_named_as_such():
    base = smoke()
    merged = {**base, "seeds": [-1]}  # smoke.yaml sets seeds too; `--config seeds=[-1]` overrode them
    with pytest.raises(ConfigError) as error:
        validate_config(merged, config_files=[REPO / "config/smoke.yaml"], command_line={"seeds": [-1]})
    message = str(error.value)
    assert "key 'seeds[0]' = -1 (in --config on the command line)" in message
    assert str(REPO / "config/smoke.yaml") + ")" not in message.splitlines()[1]
    from gdpo.plan import check_settings

    merged = {**base, "training": {**base["training"], "num_generations": 3}}
    with pytest.raises(ConfigError) as error:
        check_settings(merged, [REPO / "config/smoke.yaml"], {"training": {"num_generations": 3}})
    assert ("key 'training.num_generations' = 3 (in --config on the command line)" in str(error.value)
            and f"'training.per_device_train_batch_size' (in {REPO / 'config/smoke.yaml'})" in str(error.value))


def test_the_workflow_refuses_conflicting_settings_and_missing_data_before_any_job(tmp_path):
    import subprocess
    import sys

    def dry_run(*args):
        env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
        result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                                 str(tmp_path), "-n", "--configfile", *args], capture_output=True, text=True,
                                env=env, timeout=600)
        result.stderr += result.stdout  # Snakemake prints a workflow error on either
        return result

    # smoke.yaml sets the key too; the value at fault is the command line's
    result = dry_run(str(REPO / "config/smoke.yaml"), "--config", "advantage_convention=nope")
    assert result.returncode != 0
    assert "key 'advantage_convention' = 'nope' (in --config on the command line)" in result.stderr
    missing = write(tmp_path, lambda c: c["tasks"]["math"].update(data_dir="resources/data/deepscaler"))
    result = dry_run(str(missing))
    assert result.returncode != 0
    assert "key 'tasks.math.data_dir' = 'resources/data/deepscaler' (in " + str(missing) in result.stderr
    assert "no such directory" in result.stderr and "remove `data_dir:` to load the data from the hub" in result.stderr
    (tmp_path / "resources/data/deepscaler").mkdir(parents=True)
    assert dry_run(str(missing)).returncode == 0


def test_planning_knows_each_familys_default_length_limit():
    import inspect

    from gdpo.tasks import FAMILIES, arithmetic
    from gdpo.tasks.math.data import OPTION_DEFAULTS

    assert FAMILIES["arithmetic"].length_limit == inspect.signature(arithmetic.build_dataset).parameters[
        "length_limit"].default
    assert FAMILIES["math"].length_limit == OPTION_DEFAULTS["length_limit"]
    assert FAMILIES["code"].length_limit is None and "length_limit" in FAMILIES["code"].required_options


# --------------------------------------------------------------------------------------------------
# Input YAML that parses but says something else than it seems: refused, naming file, key and fix
# --------------------------------------------------------------------------------------------------


def test_a_key_given_twice_in_a_config_file_is_refused_naming_the_key_path_and_both_lines(tmp_path, capsys):
    from gdpo.cli import main

    config = smoke()
    config["tasks"]["math"]["training"] = {"learning_rate": 0.001}
    lines = yaml.safe_dump(config).splitlines(keepends=True)
    index = lines.index("      learning_rate: 0.001\n")  # tasks.math.training, not the scale's training block
    lines.insert(index + 1, "      learning_rate: 0.1\n")
    lines.append("scale: smoke\n")  # the top level too
    path = tmp_path / "twice.yaml"
    path.write_text("".join(lines))
    scale_line = next(n for n, line in enumerate(lines, start=1) if line.startswith("scale:"))
    # YAML itself reads the last value and the schema finds nothing wrong
    validate_config(yaml.safe_load(path.read_text()))
    # the workflow's check (common.smk passes the config files) and `gdpo validate-config` refuse it
    with pytest.raises(ConfigError) as error:
        validate_config(yaml.safe_load(path.read_text()), config_files=[path])
    message = str(error.value)
    assert str(path) in message
    where = f"on line {index + 1} and on line {index + 2}"
    assert f"key 'tasks.math.training.learning_rate' is set twice: {where}" in message
    assert f"key 'scale' is set twice: on line {scale_line} and on line {len(lines)}" in message
    assert "delete" in message.lower()
    assert main(["validate-config", str(path)]) == 2
    assert "tasks.math.training.learning_rate' is set twice" in capsys.readouterr().err
    # a key overridden through a YAML merge (`<<: *anchor`, as in config/mini.yaml) is no duplicate
    load_config(REPO / "config/mini.yaml")


def test_a_non_finite_number_anywhere_in_the_config_is_refused_naming_its_key(tmp_path, capsys):
    from gdpo.cli import main

    text = (REPO / "config/smoke.yaml").read_text()
    assert "  temperature: 1.0\n" in text and "  learning_rate: 1.0e-3\n" in text
    text = text.replace("  temperature: 1.0\n", "  temperature: .inf\n", 1)
    text = text.replace("  learning_rate: 1.0e-3\n", "  learning_rate: .nan\n", 1)
    path = tmp_path / "inf.yaml"
    path.write_text(text)
    assert main(["validate-config", str(path)]) == 2
    message = capsys.readouterr().err
    assert f"key 'training.temperature' = inf (in {path}): not a finite number" in message
    assert f"key 'training.learning_rate' = nan (in {path}): not a finite number" in message
    # anywhere: in a task's own block too, and negative infinity
    config = smoke()
    config["tasks"]["math"]["evaluation"] = {"temperature": float("-inf")}
    with pytest.raises(ConfigError, match=r"'tasks\.math\.evaluation\.temperature' = -inf .*not a finite"):
        validate_config(config)


def test_reporting_untested_takes_claim_ids_with_reasons():
    config = smoke()
    config["reporting"] = {**(config.get("reporting") or {}), "untested": {"C5": "the pilot's design failed"}}
    validate_config(config)
    for bad in ({"c5": "lower case is no claim id"}, {"C1": "decided exactly, never at a model's scale"},
                {"C5": ""}, {"C5": "   "}):
        config["reporting"]["untested"] = bad
        with pytest.raises(ConfigError, match="untested"):
            validate_config(config)


def test_an_overlay_clears_the_untested_block_with_null():
    """A pilot overlay judges every claim from its evidence: its ``untested: null`` replaces the registered
    config's block when snakemake merges the config files, and the ledger then states no claim untested."""
    from snakemake.utils import update_config

    from gdpo.reporting.ledger import registered_untested

    config = smoke()
    config["reporting"] = {**(config.get("reporting") or {}), "untested": {"C5": "the pilot's design failed"}}
    update_config(config, {"reporting": {"untested": None}})
    validate_config(config)
    assert config["reporting"]["untested"] is None and registered_untested(config["reporting"]) == {}
    assert config["reporting"]["tables"], "the overlay's null clears the untested block only"


def test_the_schema_names_the_claims_a_config_can_state_untested():
    from gdpo.reporting.ledger import model_scale_claims

    untested = load_schema()["properties"]["reporting"]["properties"]["untested"]
    assert untested["propertyNames"]["enum"] == model_scale_claims()


def test_config_files_merge_as_snakemake_merges_them(tmp_path):
    """``load_config(config, overlay)`` gives the config snakemake's ``--configfile config overlay`` gives: the
    pilot overlay adds a task and clears a block; a list replaces, never appends."""
    import copy

    from snakemake.utils import update_config

    from gdpo.config import merge_configs

    files = [REPO / "config" / "cpu-evidence-2.yaml", REPO / "config" / "overlays" / "cpu-evidence-2-pilot.yaml"]
    expected: dict = {}
    for file in files:
        update_config(expected, read_yaml(file.read_text(encoding="utf-8")))
    merged = load_config(*files)
    assert merged == expected
    assert "math" in merged["tasks"] and merged["reporting"]["untested"] is None
    assert merged["seeds"] == [100, 101] and merged["scale"] == "cpu-evidence-2-pilot"
    base = read_yaml(files[0].read_text(encoding="utf-8"))
    kept = copy.deepcopy(base)
    merge_configs([base, {"seeds": [7], "tasks": {"tool_calling": {"training": {"max_steps": 3}}}}])
    assert base == kept, "merging changes none of its inputs"
    assert merge_configs([{"a": {"b": 1, "c": [1, 2]}}, {"a": {"c": [3]}}, {"a": {"b": None}}]) == {"a": {"b": None, "c": [3]}}


def test_load_config_names_a_missing_overlay_and_a_file_that_is_no_mapping(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml does not exist"):
        load_config(REPO / "config" / "smoke.yaml", tmp_path / "nope.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="list.yaml holds no mapping"):
        load_config(REPO / "config" / "smoke.yaml", tmp_path / "list.yaml")
