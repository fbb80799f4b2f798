"""Planning: which runs and evaluations a config makes, where their files go, each job's typed settings and what
each job asks of the machine.

This package imports no torch, transformers, trl or matplotlib, directly or through another module
(``tests/test_plan.py`` checks it in a fresh interpreter; the ``planning`` contract of ``pyproject.toml`` too): the
Snakefile plans the workflow with it, so that a dry run stays fast. The jobs (``python -m gdpo
train|evaluate|warmup-model``) import the heavy stack.

Every public name of its modules is imported here, so ``from gdpo.plan import X`` is the one way in. Its modules,
each importing only those listed before it (no circle: import-linter's ``acyclic`` contract):

- :mod:`.values`: the checks of plain config values (a whole number, a finite number) the others share.
- :mod:`.models`: model specs: :func:`check_model_spec`, :func:`model_display_name`, :func:`model_slug`.
- :mod:`.layout`: where files go: :class:`RunKey` (task, method, seed under a root) and the one definition of a
  run's directory, :data:`RUN_LAYOUT`; :data:`RUN_WILDCARDS`, :func:`runs_root`, :func:`model_dir`,
  :func:`warmup_model_dir`.
- :mod:`.task_config`: a task's entry in the config: :func:`task_seeds`, :func:`task_methods`,
  :func:`task_method_variants`.
- :mod:`.conflicts`: settings that conflict with each other and missing data directories:
  :func:`check_settings`, :func:`check_data_dirs` (:class:`SettingConflict`).
- :mod:`.outputs`: the figures and tables a config asks for: :func:`planned_outputs`, :func:`reporting_block`.
- :mod:`.chain`: training steps, the wall limit and a long training run as a chain of jobs:
  :func:`updates_per_generation`, :func:`task_resources`, :func:`wall_limit_hours`, :func:`plan_training_chain`
  (:class:`TrainingSegment`), :func:`checkpoint_interval_steps`.
- :mod:`.settings`: what the typed settings share (their JSON form, :class:`~.settings.JobSettings`) and
  :func:`report_backends`.
- :mod:`.run_settings`, :mod:`.eval_settings`, :mod:`.warmup_settings`: how each job runs: :class:`RunSettings`
  (a training run, from :func:`resolve_run_settings`), :class:`EvalSettings` (an evaluation, from
  :func:`resolve_eval_settings`), :class:`WarmupSettings` (a task's format warm-up, from
  :func:`resolve_warmup_settings`).
- :mod:`.runs`: what a config runs: :func:`plan_runs`, :func:`plan_evaluations`, :func:`describe_runs`.
- :mod:`.jobs`: what each job asks of the machine or cluster and how it starts: :func:`job_resources`,
  :func:`check_job_resources`, :func:`job_env_file`, :func:`gpu_only_settings`, :func:`launcher_command`,
  :func:`train_launcher`, :func:`device_check_command`.
"""

from __future__ import annotations

from gdpo.plan.models import (
    BUILTIN_TINY, GGUF_SMOLLM2, LOCAL_SPECS, check_model_spec, MODEL_DISPLAY_NAMES, model_display_name,
    model_slug,
)
from gdpo.plan.layout import (
    RUN_LAYOUT, RUN_WILDCARDS, BASE_METHOD, EVAL_FILE, MODELS_DIR, runs_root, RunKey, model_dir,
    warmup_model_dir,
)
from gdpo.plan.task_config import (
    task_seeds, task_methods, task_method_variants,
)
from gdpo.plan.conflicts import (
    TRL_DEFAULTS, LENGTH_REWARDS, SettingConflict, setting_conflicts, check_settings, missing_data_dirs,
    check_data_dirs,
)
from gdpo.plan.outputs import (
    FIGURE_STEMS, TABLE_STEMS, AGGREGATES_STEM, reporting_block, planned_outputs,
)
from gdpo.plan.chain import (
    updates_per_generation, DEFAULT_WALL_LIMIT_HOURS, CHAIN_SAFETY_FACTOR, wall_limit_hours, task_resources,
    optimizer_steps_per_generation, TrainingSegment, plan_training_chain, CHECKPOINT_INTERVAL_SECONDS,
    planned_seconds_per_step, checkpoint_interval_steps,
)
from gdpo.plan.settings import (
    REPORT_BACKENDS, report_backends,
)
from gdpo.plan.run_settings import (
    POLICY_DTYPES, RUN_OWNED_TRL_ARGUMENTS, RunSettings, resolve_run_settings,
)
from gdpo.plan.eval_settings import (
    EVAL_DEFAULTS, EvalSettings, resolve_eval_settings,
)
from gdpo.plan.warmup_settings import (
    WARMUP_DEFAULTS, RL_ONLY_OPTIONS, WarmupSettings, resolve_warmup_settings,
)
from gdpo.plan.runs import (
    plan_runs, plan_evaluations, describe_runs,
)
from gdpo.plan.jobs import (
    launcher_command, train_launcher, gpu_only_settings, RUNTIME_SAFETY, JOB_KINDS, CPU_JOB_MEM_MB, JOB_ENVS,
    check_job_resources, job_env_file, train_segments, job_hours, job_resources, device_check_command,
)

__all__ = [
    "AGGREGATES_STEM", "BASE_METHOD", "BUILTIN_TINY", "CHAIN_SAFETY_FACTOR", "CHECKPOINT_INTERVAL_SECONDS",
    "CPU_JOB_MEM_MB", "DEFAULT_WALL_LIMIT_HOURS", "EVAL_DEFAULTS", "EVAL_FILE", "EvalSettings",
    "FIGURE_STEMS", "GGUF_SMOLLM2", "JOB_ENVS", "JOB_KINDS", "LENGTH_REWARDS", "LOCAL_SPECS", "MODELS_DIR",
    "MODEL_DISPLAY_NAMES", "POLICY_DTYPES", "REPORT_BACKENDS", "RL_ONLY_OPTIONS", "RUNTIME_SAFETY",
    "RUN_LAYOUT", "RUN_OWNED_TRL_ARGUMENTS", "RUN_WILDCARDS", "RunKey", "RunSettings", "SettingConflict",
    "TABLE_STEMS", "TRL_DEFAULTS", "TrainingSegment", "WARMUP_DEFAULTS", "WarmupSettings", "check_data_dirs",
    "check_job_resources", "check_model_spec", "check_settings", "checkpoint_interval_steps", "describe_runs",
    "device_check_command", "gpu_only_settings", "job_env_file", "job_hours", "job_resources",
    "launcher_command", "missing_data_dirs", "model_dir", "model_display_name", "model_slug",
    "optimizer_steps_per_generation", "plan_evaluations", "plan_runs", "plan_training_chain",
    "planned_outputs", "planned_seconds_per_step", "report_backends", "reporting_block",
    "resolve_eval_settings", "resolve_run_settings", "resolve_warmup_settings", "runs_root",
    "setting_conflicts", "task_method_variants", "task_methods", "task_resources", "task_seeds",
    "train_launcher", "train_segments", "updates_per_generation", "wall_limit_hours", "warmup_model_dir",
]
