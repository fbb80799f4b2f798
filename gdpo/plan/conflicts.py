"""Settings of a config that pass the schema one by one but not together (:func:`setting_conflicts`, raised by
:func:`check_settings`), and local data directories that do not exist (:func:`missing_data_dirs`, raised by
:func:`check_data_dirs`), each a :class:`SettingConflict` naming the key, where it came from and the fix."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

from gdpo.config import ConfigError, config_sources, key_name, origin
from gdpo.plan.values import whole_number
from gdpo.tasks import family_spec


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
        if length_rewards and whole_number(limit, 1) and whole_number(cap, 1) and limit >= cap:
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
        if all(whole_number(value, 1) for value in (per_device, generations, per_generation)):
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
