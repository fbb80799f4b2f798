"""Workflow configuration: validation against ``workflow/schemas/config.schema.yaml``.

A bad key or value stops the workflow before any job runs, with a message that names the key, what is
allowed there, and where it came from: the config file, or ``--config`` on the command line.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import jsonschema
import yaml

from gdpo.methods import available_conventions, available_methods, get_method

DEFAULT_SCHEMA = Path(__file__).resolve().parents[1] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """The workflow configuration does not match the schema."""


def read_yaml(text: str):
    """YAML text as Python objects, safely; with libyaml's C parser when PyYAML has it (several times faster
    than the pure-Python one, which made up much of a workflow's planning time)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_schema(schema_path: str | Path = DEFAULT_SCHEMA) -> dict:
    """The config schema, with the registered methods and conventions as the allowed values."""
    path = Path(schema_path)
    if not path.is_file():
        raise FileNotFoundError(f"config schema not found at {path}; run from a checkout of the repository.")
    methods = tuple(available_methods())
    key = (str(path.resolve()), path.stat().st_mtime_ns, methods, tuple(available_conventions()),
           tuple(get_method(name).options for name in methods))
    return copy.deepcopy(_load_schema(*key))


@functools.lru_cache(maxsize=8)
def _load_schema(path: str, mtime_ns: int, methods: tuple[str, ...], conventions: tuple[str, ...],
                 options: tuple = ()) -> dict:
    """The schema file parsed once per (file version, registries: ``options`` are each method's, so that a
    method declared again with others is seen); a workflow validates its config three times."""
    schema = read_yaml(Path(path).read_text(encoding="utf-8"))
    # A method's name, or one method with its options: an unknown option is named with the method's own.
    schema["$defs"]["method"]["then"]["enum"] = list(methods)
    schema["$defs"]["method"]["else"]["properties"] = {name: get_method(name).options_schema() for name in methods}
    schema["properties"]["advantage_convention"]["enum"] = list(conventions)
    return schema


def key_name(path: Sequence) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "(top level)"


def _defines(config: Mapping, path: Sequence) -> bool:
    node = config
    for part in path:
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                return False
        elif not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


#: How a key set by ``snakemake --config key=value`` is named in messages.
COMMAND_LINE = "--config on the command line"


def config_sources(config_files: Iterable[str | Path] = (), command_line: Mapping | None = None
                   ) -> list[tuple[str, Mapping]]:
    """What each source of a merged config set, lowest precedence first: ``(label, data)`` per config file,
    then ``(COMMAND_LINE, values)`` for ``--config`` (Snakemake's ``workflow.config_settings.config``). Read
    only to say where a key came from; an unreadable file counts as setting nothing."""
    sources = []
    for file in config_files:
        try:
            data = read_yaml(Path(file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            data = {}
        sources.append((str(file), data if isinstance(data, Mapping) else {}))
    if command_line:
        sources.append((COMMAND_LINE, command_line))
    return sources


def origin(path: Sequence, sources: Sequence[tuple[str, Mapping]]) -> str:
    """Where the key at ``path`` came from: the highest-precedence source that sets it (sources lowest
    first, :func:`config_sources`); a key none of them sets came from ``--config`` on the command line."""
    # A list item, and any key inside one ({gdpo: {clip: 3}} of methods:), comes from whichever source set the
    # whole list.
    key_path = list(itertools.takewhile(lambda part: not isinstance(part, int), path))
    for label, data in reversed(sources):
        if _defines(data, key_path):
            return label
    return COMMAND_LINE


def _describe(error: jsonschema.ValidationError, sources: Sequence[tuple[str, Mapping]]) -> str:
    path = list(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extras = [key for key in error.instance if key not in error.schema.get("properties", {})]
        lines = []
        for extra in extras:
            key = key_name([*path, extra])
            lines.append(
                f"- unknown key '{key}' (in {origin([*path, extra], sources)}); allowed keys under "
                f"'{key_name(path)}': {', '.join(allowed) or 'none'}"
            )
        return "\n".join(lines)
    key = key_name(path)
    where = origin(path, sources)
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        return f"- key '{key}' = {error.instance!r} (in {where}) is not allowed; allowed values: {allowed}"
    if error.validator == "required":
        return f"- missing key under '{key}' (in {where}): {error.message}"
    description = error.schema.get("description")
    hint = f" ({description})" if description else ""
    return f"- key '{key}' = {error.instance!r} (in {where}): {error.message}{hint}"


#: The tag of YAML's merge key (``<<: *anchor``): a key it brings in may be set again beside it.
_MERGE_TAG = "tag:yaml.org,2002:merge"


def duplicate_keys(text: str) -> list[tuple[list, list[int]]]:
    """``(key path, lines)`` of every key that a YAML mapping of ``text`` sets more than once, at any depth
    (lines 1-based, in order). YAML loaders keep the last value without a word; keys brought in by a merge
    (``<<: *anchor``) and set again beside it are overrides, not duplicates."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        root = loader.get_single_node()
        found: list[tuple[list, list[int]]] = []
        seen: set[int] = set()  # an anchored node is walked once, where it is defined

        def walk(node, path):
            if node is None or id(node) in seen:
                return
            seen.add(id(node))
            if isinstance(node, yaml.MappingNode):
                lines: dict = {}  # key → the lines that set it
                for key_node, value_node in node.value:
                    if key_node.tag == _MERGE_TAG:
                        continue
                    scalar = isinstance(key_node, yaml.ScalarNode)
                    key = loader.construct_object(key_node, deep=True) if scalar else key_node.value
                    try:
                        lines.setdefault(key, []).append(key_node.start_mark.line + 1)
                    except TypeError:  # an unhashable key: the loader refuses it itself
                        pass
                    walk(value_node, [*path, key])
                found.extend(([*path, key], at) for key, at in lines.items() if len(at) > 1)
            elif isinstance(node, yaml.SequenceNode):
                for index, item in enumerate(node.value):
                    walk(item, [*path, index])

        walk(root, [])
        return sorted(found, key=lambda item: item[1])
    finally:
        loader.dispose()


def check_duplicate_keys(config_files: Iterable[str | Path]) -> None:
    """Raise :class:`ConfigError` naming each key a file of ``config_files`` sets more than once, and where.

    Snakemake (and :func:`read_yaml`) keep the last value of such a key, so the file would be read as valid
    with one of the two values ignored. A file that cannot be read or parsed is left to its reader."""
    problems = []
    for file in config_files:
        try:
            repeats = duplicate_keys(Path(file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        problems += [f"- {file}: key '{key_name(path)}' is set "
                     + (f"twice: on line {lines[0]} and on line {lines[1]}" if len(lines) == 2 else
                        f"{len(lines)} times: on lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}")
                     + f" (YAML keeps only the value of line {lines[-1]})" for path, lines in repeats]
    if problems:
        raise ConfigError("A config file sets a key more than once:\n" + "\n".join(problems) + "\n"
                          "Delete all but one line of each key (keep the value you mean); a task's own "
                          "block overrides the scale's shared one, so no key needs to be given twice.")


def non_finite_numbers(config, path: Sequence = ()) -> list[tuple[list, float]]:
    """``(key path, value)`` of every NaN or infinite number in ``config`` (YAML's ``.nan``, ``.inf`` and
    ``-.inf``), which JSON schema's bounds let through."""
    if isinstance(config, float):
        return [] if math.isfinite(config) else [(list(path), config)]
    if isinstance(config, Mapping):
        return [found for key, value in config.items() for found in non_finite_numbers(value, [*path, key])]
    if isinstance(config, list):
        return [found for index, value in enumerate(config)
                for found in non_finite_numbers(value, [*path, index])]
    return []


def validate_config(
    config: Mapping,
    schema_path: str | Path = DEFAULT_SCHEMA,
    config_files: Iterable[str | Path] = (),
    command_line: Mapping | None = None,
) -> None:
    """Raise :class:`ConfigError` listing every problem of ``config``.

    Args:
        config: the merged configuration (Snakemake's ``config``).
        schema_path: the JSON schema (YAML).
        config_files: the files that made ``config``, lowest precedence first; used to say which file a
            bad key came from, and read again to refuse a key set twice in one (:func:`check_duplicate_keys`).
        command_line: the values given with ``--config`` on the command line (they override the files); a
            key set there, or found in no file, is named as coming from the command line.
    """
    config_files = list(config_files)
    check_duplicate_keys(config_files)
    validator = jsonschema.Draft202012Validator(load_schema(schema_path))
    errors = sorted(validator.iter_errors(dict(config)), key=lambda e: list(map(str, e.absolute_path)))
    # An infinite temperature or a NaN learning rate passes the schema's bounds, then trains on nothing.
    non_finite = non_finite_numbers(dict(config))
    if errors or non_finite:
        sources = config_sources(config_files, command_line)
        files = ", ".join(str(f) for f in config_files) or "no config file"
        problems = "\n".join([*(_describe(error, sources) for error in errors), *(
            f"- key '{key_name(path)}' = {value} (in {origin(path, sources)}): not a finite number; every "
            "number of the config must be finite (YAML's .nan, .inf and -.inf are refused)"
            for path, value in non_finite)])
        raise ConfigError(
            f"Invalid workflow configuration ({files}):\n{problems}\n"
            f"The schema with every key's meaning is {schema_path}; fix each value where its line says it came "
            "from (the config file, or --config on the command line)."
        )


#: Task keys that narrow a task to the default grid's share of it; ``grid: full`` drops them.
DEFAULT_GRID_ONLY_TASK_KEYS = ("seeds",)


def apply_grid(config: Mapping) -> dict:
    """The config of the grid it asks for: itself for ``grid: default`` (or none), merged with its
    ``full_grid`` block for ``grid: full`` — seeds replaced, tasks added or overridden key by key,
    reporting replaced. A task's own ``seeds`` (the default grid's smaller share of it) are dropped
    unless the full grid's entry sets them again. The default grid's runs are a subset
    of the full grid's, so they are reused.
    """
    config = dict(config)
    grid = config.get("grid", "default")
    if grid == "default":
        return config
    if grid != "full":
        raise ConfigError(f"grid must be 'default' or 'full', got {grid!r}.")
    full = config.get("full_grid")
    if not full:
        raise ConfigError("grid: full needs a full_grid: block in the config (seeds, tasks, reporting); "
                          "config/mini.yaml has one.")
    tasks = {name: {key: value for key, value in spec.items() if key not in DEFAULT_GRID_ONLY_TASK_KEYS}
             for name, spec in (config.get("tasks") or {}).items()}
    for name, override in (full.get("tasks") or {}).items():
        tasks[name] = {**tasks.get(name, {}), **override}
    config["tasks"] = tasks
    for key in ("seeds", "reporting"):
        if key in full:
            config[key] = full[key]
    return config


#: Families whose paper data sets the miniature replaces with generated copies (gdpo.tasks.hub_formats).
MINIATURE_DATA_FAMILIES = ("tool_calling", "math", "code")
#: The file the miniature data rule writes last; every miniature train and evaluate job waits for it.
MINIATURE_MANIFEST = "MANIFEST.json"


def apply_miniature(config: Mapping) -> dict:
    """A paper config run in miniature (its ``miniature:`` block, e.g. from config/overlays/miniature.yaml).

    Kept: the tasks and their names, families, methods, rewards and weights, evaluation benchmarks, the
    convention, the ``reporting`` block, and every TRL setting the block does not name. A task's
    ``length_limit`` keeps its share of the completion cap (paper math: 4000 of 8000 tokens; in miniature 12 of
    24), so that the length reward still tells completions apart.
    Replaced: every task's model (``miniature.model``); lm-eval's vLLM backend by its hf one; its ``data_dir`` (``miniature.data_dir/<family>``,
    generated copies of the paper data sets in their hub layouts); the seeds; the TRL settings and the
    evaluation settings the block names; the launch (one plain process: no accelerate, no DeepSpeed); the
    ``gpu`` and every task's ``resources`` are dropped (the jobs ask for no GPU).
    The scale ``paper-<x>`` becomes ``miniature-<x>``, so outputs go to ``results/miniature-<x>/`` and never
    mix with a paper run's. A config without the block is returned unchanged.
    """
    config = dict(config)
    miniature = config.get("miniature")
    if not miniature:
        return config
    scale = config["scale"]
    if not scale.startswith("paper-"):
        raise ConfigError(
            f"miniature: shrinks a paper config (scale paper-<family>), but this config's scale is {scale!r}; "
            "use it with config/paper-tool_calling.yaml, config/paper-math.yaml or config/paper-code.yaml."
        )
    config["scale"] = "miniature-" + scale[len("paper-"):]
    config.pop("launch", None)
    # The tiny jobs need no GPU: no GPU is planned for and no task asks a cluster for one.
    config.pop("gpu", None)
    seeds = list(miniature.get("seeds", config["seeds"]))
    config["seeds"] = seeds
    paper_training = dict(config.get("training") or {})
    config["training"] = {**paper_training, **(miniature.get("training") or {})}
    config["evaluation"] = {**(config.get("evaluation") or {}), **(miniature.get("evaluation") or {})}
    tasks = {}
    for name, spec in (config.get("tasks") or {}).items():
        if spec.get("length_limit") is not None:
            paper_cap = {**paper_training, **(spec.get("training") or {})}.get("max_completion_length")
            small_cap = {**paper_training, **(spec.get("training") or {}),
                         **(miniature.get("training") or {})}.get("max_completion_length")
            if paper_cap and small_cap and small_cap < paper_cap:
                spec = {**spec, "length_limit": max(1, round(spec["length_limit"] * small_cap / paper_cap))}
        spec = {**spec, "model": miniature["model"]}
        spec.pop("resources", None)
        if spec.get("eval_backend") == "vllm":  # vLLM evaluation (any family's) needs a GPU; hf does not
            spec["eval_backend"] = "hf"
        if spec["family"] in MINIATURE_DATA_FAMILIES:
            spec["data_dir"] = f"{miniature['data_dir']}/{spec['family']}"
        if "seeds" in spec:
            spec["seeds"] = [seed for seed in spec["seeds"] if seed in seeds] or seeds[:1]
        if "training" in spec:
            spec["training"] = {**spec["training"], **(miniature.get("training") or {})}
        tasks[name] = spec
    config["tasks"] = tasks
    return config


def merge_configs(configs: Iterable[Mapping]) -> dict:
    """Config mappings merged as Snakemake merges several ``--configfile``s, lowest precedence first: a later
    mapping updates an earlier one key by key, recursively; any other value (a list, a number, ``null``)
    replaces what was there. So an overlay adds a task or changes one key of it, and ``null`` clears a key."""
    merged: dict = {}
    for config in configs:
        _update(merged, config)
    return merged


def _update(into: dict, update: Mapping) -> None:
    for key, value in update.items():
        if isinstance(value, Mapping):
            into[key] = into[key] if isinstance(into.get(key), dict) else {}
            _update(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def load_config(*config_files: str | Path, schema_path: str | Path = DEFAULT_SCHEMA) -> dict:
    """Read config files, merge them as Snakemake merges several ``--configfile``s (:func:`merge_configs`; an
    overlay after its config) and validate the result (what ``gdpo validate-config`` does with one file)."""
    if not config_files:
        raise ConfigError("no config file given; the shipped configs are in config/.")
    configs = []
    for config_file in config_files:
        path = Path(config_file)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist; the shipped configs are in config/.")
        try:
            config = read_yaml(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as error:
            raise ConfigError(f"{path} is not valid YAML: {error}") from None
        if not isinstance(config, Mapping):
            raise ConfigError(f"{path} holds no mapping of keys; a config file is a YAML mapping (key: value).")
        configs.append(config)
    config = merge_configs(configs)
    validate_config(config, schema_path, [Path(f) for f in config_files])
    return config
