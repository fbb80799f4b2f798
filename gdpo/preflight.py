"""Pre-flight: every input a config's jobs read, checked on the login node before any job is submitted.

A GPU job that starts without its model, data or BFCL interpreter fails on its node after it has queued (each of
paper-tool_calling's 25 8-GPU jobs, without ToolRL's data). This module lists what each planned job reads that no
workflow rule makes (:func:`planned_inputs`: data sets, the models and hub data of a GPU config, the BFCL
interpreter), which of it is absent (:func:`missing_inputs`) and the command that fetches or builds each; the
workflow calls :func:`check_inputs` while it is parsed, so even ``snakemake -n`` stops. ``gdpo fetch``
(:mod:`gdpo.fetch`) fetches what can be fetched, on a machine with internet access.

A config with ``gpu:`` runs its GPU jobs with the hub offline (:func:`hub_environment`, set by
:func:`gpu_job_prelude`): its hub models and data sets must be fetched first. CPU configs may still download in
their jobs (a workstation has the internet), and inputs made by rules (the BFCL split, the miniature data, the
built-in models) are never required beforehand.

Also here: the node checks' parameters of ``gdpo check-device`` (the free disk a train job's checkpoints need,
:func:`checkpoint_disk_gib`; whether it runs model-written code) and the results root on scratch
(:func:`link_results_to_scratch`).

Light: the standard library and planning modules (the workflow imports it when it is parsed).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath

from gdpo.config import ConfigError, apply_grid, apply_miniature, read_yaml, validate_config
from gdpo.plan import LOCAL_SPECS, device_check_command, model_dir, plan_evaluations, plan_runs
from gdpo.tasks import required_files
from gdpo.tasks.hub_formats import HUB_FILES
from gdpo.training.checkpoint_plan import (
    CHECKPOINT_BYTES_PER_PARAMETER,
    CHECKPOINTS_AT_ONCE,
    FINAL_MODEL_BYTES_PER_PARAMETER,
)

#: How a missing input is fetched: ``gdpo fetch`` with the config's files (filled in where it is shown).
FETCH = "{fetch}"
#: Where the workflow's bfcl_split rule writes the BFCL-v3 split (workflow/rules/data.smk): files there are made
#: by a rule, not fetched.
BFCL_SPLIT_DIR = "resources/data/bfcl_v3_split"
#: The BFCL environment's interpreter inside the repository (or the working directory), as
#: :func:`gdpo.tasks.tool_calling.evaluation.bfcl_python` looks for it.
BFCL_VENV_PYTHON = PurePath(".venv-bfcl", "bin", "python")
BFCL_PYTHON_ENV = "GDPO_BFCL_PYTHON"
BFCL_FIX = ("make setup (it creates .venv-bfcl; or `conda env create -p .venv-bfcl -f envs/bfcl.yaml`), or set "
            f"{BFCL_PYTHON_ENV} to the python of an environment with bfcl-eval==2025.6.8")
#: Where ``gdpo fetch`` records each hub data set it saved into the Hugging Face cache (below ``HF_HOME``):
#: the cache's own layout is the library's business, the record is ours.
FETCH_RECORDS = "gdpo-fetched"

#: The hub copies the math family reads when its task sets no ``data_dir``, by the names its options use
#: (:data:`gdpo.tasks.math.benchmarks.BENCHMARK_SOURCES` and ``DEEPSCALER``; tests/test_preflight.py holds them
#: equal: the family's package imports its data stack, which planning must not).
MATH_HUB = {
    "deepscaler": ("agentica-org/DeepScaleR-Preview-Dataset", "train"),
    "math500": ("HuggingFaceH4/MATH-500", "test"),
    "aime24": ("HuggingFaceH4/aime_2024", "train"),
    "amc": ("AI-MO/aimo-validation-amc", "train"),
    "minerva": ("math-ai/minervamath", "test"),
    "olympiadbench": ("math-ai/olympiadbench", "test"),
}
#: Other names of math data sets in ``train_data`` / ``eval_data`` (:data:`gdpo.tasks.math.benchmarks.BENCHMARK_ALIASES`).
MATH_ALIASES = {**{hub: name for name, (hub, _) in MATH_HUB.items()}, "AI-MO/aimo-validation-aime": "aime24",
                "champ-dataset": "champ"}
#: Suffixes of a math data set's local copy in ``data_dir`` (:func:`gdpo.tasks.math.benchmarks.local_file`).
MATH_LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")
#: Eurus-2-RL-Data: the code family's training set and, grouped by ``data_source``, its four benchmarks
#: (:mod:`gdpo.tasks.code.sources`).
EURUS = "PRIME-RL/Eurus-2-RL-Data"
CODE_SOURCES = ("apps", "codecontests", "codeforces", "taco")
#: Other names of code data sets (:data:`gdpo.tasks.code.data.ALIASES`).
CODE_ALIASES = {EURUS: "eurus2_rl", "openai/openai_humaneval": "humaneval", "codeparrot/apps": "apps",
                "deepmind/code_contests": "codecontests", "open-r1/codeforces": "codeforces", "BAAI/TACO": "taco"}

GIB = 2**30


@dataclasses.dataclass(frozen=True)
class Input:
    """One thing planned jobs read that must exist before they start.

    Attributes:
        kind: ``model``, ``data``, ``hub_data`` (a hub data set in the Hugging Face cache) or ``interpreter``.
        what: what it is, in words.
        paths: where it is looked for; any one present is enough (the first is the one ``gdpo fetch`` writes).
        fix: the command that fetches or builds it (``{fetch}`` stands for ``gdpo fetch`` with the config).
        tasks: the tasks whose jobs read it; jobs: which of their jobs (``train``, ``evaluate``).
        source: how ``gdpo fetch`` gets it: ``("model", hub id)``, ``("dataset", hub id, split)`` or
            ``("toolrl",)``; None when it cannot (an interpreter, a file only a rule or the user makes).
    """

    kind: str
    what: str
    paths: tuple[str, ...]
    fix: str
    tasks: tuple[str, ...] = ()
    jobs: tuple[str, ...] = ()
    source: tuple[str, ...] | None = None

    def present(self, base_dir: str | Path = ".") -> bool:
        """Whether any of its paths exists (relative ones under ``base_dir``, the working directory)."""
        return any((Path(base_dir) / path).exists() for path in self.paths)

    def describe(self, fetch: str) -> str:
        """Its line in the pre-flight's message: the path, what it is, who reads it, and the fix."""
        others = f" (or {', '.join(self.paths[1:])})" if len(self.paths) > 1 else ""
        readers = f"; read by the {'/'.join(self.jobs)} jobs of {', '.join(self.tasks)}" if self.tasks else ""
        return f"- {self.paths[0]}{others}: {self.what}{readers}\n  fix: {self.fix.format(fetch=fetch)}"


def runs_offline(config: Mapping) -> bool:
    """Whether the config's GPU jobs run with the hub offline: a config that names a GPU (``gpu:``)."""
    return bool(config.get("gpu"))


def _expand(path: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(path)))


def hf_home(config: Mapping, base_dir: str | Path = ".", environ: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face cache the jobs read (absolute): the config's ``hf_home`` (``~`` and ``$VARS`` expanded,
    relative to ``base_dir``), else ``$HF_HOME``, else huggingface_hub's default."""
    environ = os.environ if environ is None else environ
    if config.get("hf_home"):
        return (Path(base_dir) / _expand(config["hf_home"])).absolute()
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]).expanduser().absolute()
    cache = Path(environ.get("XDG_CACHE_HOME") or Path(environ.get("HOME", "~")) / ".cache").expanduser()
    return (cache / "huggingface").absolute()


def fetch_record(home: str | Path, hub_id: str, split: str) -> Path:
    """The file ``gdpo fetch`` writes once hub data set ``hub_id`` (``split``) is in the cache at ``home``."""
    return Path(home) / FETCH_RECORDS / f"{hub_id.replace('/', '--')}--{split}.json"


def hub_environment(config: Mapping, base_dir: str | Path = ".") -> dict[str, str]:
    """The environment of a GPU job: the hub offline (everything it reads was fetched before it was submitted;
    a download would wait on a node without internet access), and the config's ``hf_home`` as ``HF_HOME``."""
    environment = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    if config.get("hf_home"):
        environment["HF_HOME"] = str(hf_home(config, base_dir))
    return environment


# --------------------------------------------------------------------------------------------------
# What the planned jobs read
# --------------------------------------------------------------------------------------------------


def _needs(config: Mapping) -> dict[str, set[str]]:
    """Task → the kinds of its planned jobs (``train``, ``evaluate``)."""
    needs: dict[str, set[str]] = {}
    for run in plan_runs(dict(config)):
        needs.setdefault(run.task, set()).add("train")
    for evaluation in plan_evaluations(dict(config)):
        needs.setdefault(evaluation.task, set()).add("evaluate")
    return needs


def _names(value, aliases: Mapping[str, str]) -> list[str]:
    values = [value] if isinstance(value, str) else list(value or [])
    return [aliases.get(name, name) for name in values]


def _hub_data(hub_id: str, split: str, home: Path, jobs: tuple[str, ...], what: str,
              local: Sequence[str] = ()) -> Input:
    """A hub data set: one of its ``local`` copies, or the hub copy ``gdpo fetch`` recorded in the cache."""
    return Input("hub_data" if not local else "data", f"{what} ({hub_id}, split {split})",
                 (*local, str(fetch_record(home, hub_id, split))), FETCH, jobs=jobs,
                 source=("dataset", hub_id, split))


def _tool_calling_inputs(spec: Mapping, jobs: set[str]) -> list[Input]:
    inputs = []
    data_dir = spec.get("data_dir")
    if spec.get("train_data") == "toolrl" and data_dir and "train" in jobs:
        # data_dir is the file itself or a directory holding it (gdpo.tasks.tool_calling.data.load_toolrl)
        paths = (data_dir,) if PurePath(data_dir).suffix in (".json", ".parquet") else (
            f"{data_dir}/rlla_rl.json", f"{data_dir}/train.parquet")
        inputs.append(Input("data", "ToolRL's 4k RL training set (github.com/qiancheng0/ToolRL, "
                            "dataset/rlla_4k_raw/rlla_rl.json or dataset/rlla_4k/train.parquet)", paths, FETCH,
                            jobs=("train",), source=("toolrl",)))
    try:
        split_files = required_files(dict(spec))
    except ValueError:  # an option the family refuses: its jobs say so (planning does not judge options)
        split_files = []
    for path in split_files:
        # The workflow's bfcl_split rule makes the split in its own directory; elsewhere it is the user's.
        if not PurePath(path).is_relative_to(BFCL_SPLIT_DIR):
            directory = PurePath(path).parent
            inputs.append(Input("data", "a BFCL-v3 split file", (path,),
                                f"{BFCL_VENV_PYTHON} -m gdpo.tasks.tool_calling.bfcl_split --out-dir {directory}",
                                jobs=tuple(sorted(jobs))))
    return inputs


def _math_inputs(spec: Mapping, jobs: set[str], offline: bool, home: Path) -> list[Input]:
    data_dir = spec.get("data_dir")
    wanted = []
    if "train" in jobs:
        wanted += [(name, "train") for name in _names(spec.get("train_data", "reasoning_gym"), MATH_ALIASES)]
    if "evaluate" in jobs:
        wanted += [(name, "evaluate") for name in _names(spec.get("eval_data", "reasoning_gym"), MATH_ALIASES)]
    inputs = []
    for name, job in wanted:
        if name not in MATH_HUB:  # generated (reasoning_gym), or a package of the job's environment (champ)
            continue
        hub_id, split = MATH_HUB[name]
        if data_dir is not None:  # the math loaders read only data_dir's copy when it is set
            local = tuple(f"{data_dir}/{name}{suffix}" for suffix in MATH_LOCAL_SUFFIXES)
            target = f"{data_dir}/{HUB_FILES['math'][name].path}"
            paths = (target, *[path for path in local if path != target])
            inputs.append(Input("data", f"math data set {name!r} in its hub layout ({hub_id}, split {split})",
                                paths, FETCH, jobs=(job,), source=("dataset", hub_id, split)))
        elif offline:
            inputs.append(_hub_data(hub_id, split, home, (job,), f"math data set {name!r}"))
    return inputs


def _code_inputs(spec: Mapping, jobs: set[str], offline: bool, home: Path) -> list[Input]:
    if not offline:  # without a local copy the code loaders download it, which a CPU job may
        return []
    data_dir = spec.get("data_dir")

    def eurus(split: str) -> tuple[str, ...]:
        return (f"{data_dir}/eurus2_rl/{split}.parquet", f"{data_dir}/eurus2_rl/{split}.jsonl") if data_dir else ()

    inputs = []
    if "train" in jobs and _names(spec.get("train_data", "procedural"), CODE_ALIASES) == ["eurus2_rl"]:
        inputs.append(_hub_data(EURUS, "train", home, ("train",), "the code training set", eurus("train")))
    benchmarks = [name for name in _names(spec.get("eval_data", "procedural"), CODE_ALIASES) if name in CODE_SOURCES]
    if "evaluate" in jobs and benchmarks:
        # A benchmark's problems: its own file in data_dir, else Eurus-2-RL-Data's validation rows of its source.
        what = "the problems of code benchmark{} {}: the validation rows of that data_source".format(
            "s" if len(benchmarks) > 1 else "", ", ".join(benchmarks))
        if data_dir is None:
            inputs.append(_hub_data(EURUS, "validation", home, ("evaluate",), what))
        for name in benchmarks if data_dir is not None else ():
            own = (f"{data_dir}/{name}.jsonl", f"{data_dir}/{name}.parquet")
            inputs.append(_hub_data(EURUS, "validation", home, ("evaluate",),
                                    f"the problems of code benchmark {name!r}: its own file, or the validation rows "
                                    "of that data_source", (*eurus("validation"), *own)))
    return inputs


def _bfcl_interpreter(repo_dir: Path, environ: Mapping[str, str]) -> Input:
    configured = environ.get(BFCL_PYTHON_ENV)
    if configured:  # the evaluation then uses this one only
        return Input("interpreter", f"the BFCL environment's python ({BFCL_PYTHON_ENV})", (configured,),
                     f"point {BFCL_PYTHON_ENV} at an existing interpreter, or unset it and run {BFCL_FIX}",
                     jobs=("evaluate",))
    paths = dict.fromkeys([str(repo_dir / BFCL_VENV_PYTHON), str(BFCL_VENV_PYTHON)])
    return Input("interpreter", "the BFCL environment's python, which scores tool-calling completions",
                 tuple(paths), BFCL_FIX, jobs=("evaluate",))


def planned_inputs(config: Mapping, base_dir: str | Path = ".", repo_dir: str | Path | None = None,
                   environ: Mapping[str, str] | None = None) -> list[Input]:
    """Everything the config's planned train and evaluate jobs read that no workflow rule makes, each once with
    the tasks that read it.

    Args:
        config: the merged, validated workflow config.
        base_dir: the working directory (relative paths of the config are under it).
        repo_dir: the repository (where ``.venv-bfcl`` is looked for first); default ``base_dir``.
        environ: the environment (``GDPO_BFCL_PYTHON``, ``HF_HOME``); default ``os.environ``.
    """
    environ = os.environ if environ is None else environ
    repo_dir = Path(base_dir if repo_dir is None else repo_dir)
    offline, home = runs_offline(config), hf_home(config, base_dir, environ)
    # A miniature's data are generated by its miniature_data rule.
    generated = (config.get("miniature") or {}).get("data_dir")
    merged: dict[tuple, Input] = {}

    def add(task: str, item: Input) -> None:
        if generated and all(PurePath(path).is_relative_to(generated) for path in item.paths[:1]):
            return
        key = (item.kind, item.paths)
        known = merged.get(key, item)
        merged[key] = dataclasses.replace(known, tasks=tuple(dict.fromkeys([*known.tasks, task])),
                                          jobs=tuple(sorted({*known.jobs, *item.jobs})))

    for task, jobs in _needs(config).items():
        spec = config["tasks"][task]
        # Models from the hub (the prepare_model rule downloads them): a GPU job cannot, and neither may the CPU
        # job before it on a cluster node without internet access.
        if offline and spec["model"] not in LOCAL_SPECS:
            add(task, Input("model", f"model {spec['model']} (a Hugging Face hub model)",
                            (f"{model_dir(spec['model'])}/config.json",), FETCH, jobs=tuple(sorted(jobs)),
                            source=("model", spec["model"])))
        family = spec["family"]
        if family == "tool_calling":
            for item in _tool_calling_inputs(spec, jobs):
                add(task, item)
            if "evaluate" in jobs:
                add(task, _bfcl_interpreter(repo_dir, environ))
        elif family == "math":
            for item in _math_inputs(spec, jobs, offline, home):
                add(task, item)
        elif family == "code":
            for item in _code_inputs(spec, jobs, offline, home):
                add(task, item)
    return list(merged.values())


def missing_inputs(config: Mapping, base_dir: str | Path = ".", repo_dir: str | Path | None = None,
                   environ: Mapping[str, str] | None = None) -> list[Input]:
    """The :func:`planned_inputs` of which no path exists."""
    return [item for item in planned_inputs(config, base_dir, repo_dir, environ) if not item.present(base_dir)]


def fetch_command(config_files: Sequence[str | Path], command_line: Mapping | None = None) -> str:
    """``python -m gdpo fetch`` for these config files and ``--config`` values."""
    parts = ["python", "-m", "gdpo", "fetch", "--configfile", *map(str, config_files)]
    if command_line:
        parts += ["--config", *(f"{key}={value}" for key, value in command_line.items())]
    return " ".join(shlex.quote(part) for part in parts)


class MissingInputs(ConfigError):
    """Inputs the planned jobs read do not exist."""


def describe_missing(missing: Sequence[Input], fetch: str, where: str) -> str:
    """The pre-flight's message: every missing input with its fix, then how to fetch them all."""
    lines = [f"Inputs the planned jobs read are missing ({where}); no job was started or submitted:",
             *(item.describe(fetch) for item in missing)]
    if any(item.source for item in missing):
        lines.append(f"Fetch what can be fetched at once, on a machine with internet access (e.g. the login node): "
                     f"{fetch}")
    lines.append(f"Check again without planning the workflow: {fetch.replace(' fetch ', ' preflight ', 1)}")
    return "\n".join(lines)


def check_inputs(config: Mapping, base_dir: str | Path = ".", repo_dir: str | Path | None = None,
                 config_files: Sequence[str | Path] = (), command_line: Mapping | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
    """:class:`MissingInputs` naming every :func:`missing_inputs` of ``config`` with its fix."""
    missing = missing_inputs(config, base_dir, repo_dir, environ)
    if missing:
        where = ", ".join(map(str, config_files)) or "the config"
        raise MissingInputs(describe_missing(missing, fetch_command(config_files, command_line), where))


def workflow_config(config_files: Sequence[str | Path], command_line: Mapping | None = None) -> dict:
    """The config the workflow runs for these files and ``--config`` values (later ones win, mappings merged
    key by key as Snakemake merges them), validated, with its grid and miniature applied (as common.smk)."""
    def merge(base: dict, update: Mapping) -> dict:
        for key, value in update.items():
            base[key] = merge(dict(base[key]), value) if isinstance(value, Mapping) and isinstance(
                base.get(key), Mapping) else value
        return base

    config: dict = {}
    for file in config_files:
        if not Path(file).is_file():
            raise ConfigError(f"config file {file} does not exist; the shipped configs are in config/.")
        merge(config, read_yaml(Path(file).read_text(encoding="utf-8")) or {})
    merge(config, dict(command_line or {}))
    validate_config(config, config_files=list(config_files), command_line=command_line)
    config = apply_grid(config)
    validate_config(config, config_files=list(config_files), command_line=command_line)
    config = apply_miniature(config)
    validate_config(config, config_files=list(config_files), command_line=command_line)
    return config


# --------------------------------------------------------------------------------------------------
# GPU jobs: the hub offline and the node's checks
# --------------------------------------------------------------------------------------------------


def checkpoint_disk_gib(config: Mapping, task: str) -> float | None:
    """Free disk (GiB) one train job of ``task`` needs where its run directory is: two checkpoints (model and
    optimizer state, :data:`CHECKPOINT_BYTES_PER_PARAMETER`) and the final model; None for a model the memory
    plan has no architecture of, or a LoRA run (adapters and their optimizer state are small)."""
    from gdpo.training.memory_plan import model_dims

    spec = config["tasks"][task]
    training = {**(config.get("training") or {}), **(spec.get("training") or {})}
    if training.get("peft"):
        return None
    try:
        parameters = model_dims(spec["model"]).parameters()
    except ValueError:
        return None
    per_parameter = CHECKPOINTS_AT_ONCE * CHECKPOINT_BYTES_PER_PARAMETER + FINAL_MODEL_BYTES_PER_PARAMETER
    return round(parameters * per_parameter / GIB, 1)


def gpu_job_prelude(config: Mapping, job: str, task: str, method: str, seed: int | str, gpus: int,
                    run_dir: str, base_dir: str | Path = ".") -> str:
    """What a train or evaluate job runs before its command: for a GPU job, the hub set offline
    (:func:`hub_environment`) and ``gdpo check-device`` with the node checks the job needs (its GPUs; for a train
    job the free disk its checkpoints need; for the code family the sandbox's namespaces); nothing for a CPU job,
    so that a CPU job's command, and Snakemake's record of it, stay as they were."""
    if not gpus:
        return ""
    exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in hub_environment(config, base_dir).items())
    disk = checkpoint_disk_gib(config, task) if job == "train" else None
    return f"export {exports} && " + device_check_command(
        job, task, method, seed, gpus, sandbox=config["tasks"][task]["family"] == "code",
        disk_path=run_dir if disk else None, disk_gib=disk)


# --------------------------------------------------------------------------------------------------
# Results and checkpoints on scratch
# --------------------------------------------------------------------------------------------------


def link_results_to_scratch(config: Mapping, base_dir: str | Path = ".") -> Path | None:
    """With ``scratch_dir`` set, make ``results/<scale>`` (run directories, their checkpoints in ``<run>.work``,
    logs, figures) a link to ``<scratch_dir>/<scale>``, creating both; returns the target (None without the key).

    Every rule keeps its ``results/<scale>/...`` paths: the link moves the bytes, not the workflow. A real
    ``results/<scale>`` directory, or a link elsewhere, is never moved or replaced: :class:`ConfigError` says
    what to do.
    """
    if not config.get("scratch_dir"):
        return None
    target = (Path(base_dir) / _expand(config["scratch_dir"]) / config["scale"]).absolute()
    link = Path(base_dir) / "results" / config["scale"]
    if link.is_symlink():
        if link.resolve() != target.resolve():
            raise ConfigError(f"scratch_dir: results/{config['scale']} is a link to {link.resolve()}, not to "
                              f"{target}; remove the link (`rm results/{config['scale']}`) or set scratch_dir to "
                              "where it points.")
    elif link.exists():
        raise ConfigError(f"scratch_dir: results/{config['scale']} is a directory here; move it to scratch "
                          f"(`mkdir -p {target.parent} && mv results/{config['scale']} {target}`) and run again: "
                          "the workflow then links it.")
    else:
        link.parent.mkdir(parents=True, exist_ok=True)
        target.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target, target_is_directory=True)
    target.mkdir(parents=True, exist_ok=True)
    return target
