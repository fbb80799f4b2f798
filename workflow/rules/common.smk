# Shared setup: config validation and the names every rule file uses.
# Rules call `python -m gdpo ...`; run from the repository root, that finds the package even inside a
# conda env that does not install it.
# Planning imports only light modules (gdpo.config, gdpo.plan, the study-file checks): no torch or matplotlib,
# so a dry run stays fast (tests/test_plan.py). The jobs import the heavy stack.
import json
import os
from pathlib import Path

from gdpo.config import MINIATURE_MANIFEST, apply_grid, apply_miniature, validate_config
from gdpo.evidence import RUN_FILES as RUN_EVIDENCE
from gdpo.generation.vllm_offline import vllm_python
from gdpo.numerics import apply_numeric_environment
from gdpo.preflight import check_inputs, gpu_job_prelude, link_results_to_scratch
from gdpo.plan import (
    BASE_METHOD,
    EVAL_FILE,
    RUN_WILDCARDS,
    RunKey,
    check_data_dirs,
    check_job_resources,
    check_settings,
    describe_runs,
    gpu_only_settings,
    job_env_file,
    job_resources,
    model_dir,
    model_slug,
    plan_evaluations,
    plan_runs,
    plan_training_chain,
    planned_outputs,
    resolve_eval_settings,
    resolve_run_settings,
    resolve_warmup_settings,
    runs_root,
    task_resources,
    train_launcher,
    warmup_model_dir,
)
from gdpo.sim.config import read_study
from gdpo.tasks import required_files
from gdpo.training.memory_plan import check_memory_plan

# Stop before any job if a key or value is wrong; the message names the key, the allowed values and
# the config file. Files are passed lowest precedence first, and read again to refuse a key set twice in one
# (Snakemake's loader keeps its last value without a word).
CONFIG_FILES = [f for f in workflow.configfiles if f not in workflow.overwrite_configfiles] + list(
    workflow.overwrite_configfiles
)
# `--config key=value` overrides the files: a bad value given there is named as coming from the command line.
COMMAND_LINE_CONFIG = dict(workflow.config_settings.config or {})
SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
validate_config(config, SCHEMA, CONFIG_FILES, COMMAND_LINE_CONFIG)
# `--config grid=full`: the scale's full grid (its full_grid: block merged in), checked again as a whole.
config.update(apply_grid(config))
validate_config(config, SCHEMA, CONFIG_FILES, COMMAND_LINE_CONFIG)
# A `miniature:` block (config/overlays/miniature.yaml) runs a paper config on a CPU: checked again as a whole.
# It removes keys (the launch), so the config is replaced, not updated.
MINIATURE_CONFIG = apply_miniature(config)
config.clear()
config.update(MINIATURE_CONFIG)
validate_config(config, SCHEMA, CONFIG_FILES, COMMAND_LINE_CONFIG)
# Settings that pass one by one but not together (a length limit at or above the completion cap, rollouts per
# prompt that do not divide the generation batch), and local data directories that do not exist, stop here.
check_settings(config, CONFIG_FILES, COMMAND_LINE_CONFIG)
# Pre-flight: every input the planned jobs read that no rule makes (data sets; a GPU config's hub models and data,
# which its jobs read with the hub offline; the BFCL interpreter) must exist now, so that even `snakemake -n` on a
# login node stops, naming each missing path and the command that fetches it (`gdpo fetch`), before any GPU job
# queues and fails on its node (gdpo.preflight). Here, while the workflow is parsed, and not in an onstart hook or
# a rule: those never run in a dry run.
check_inputs(config, ".", workflow.basedir, CONFIG_FILES, COMMAND_LINE_CONFIG)
check_data_dirs(config, ".", CONFIG_FILES, COMMAND_LINE_CONFIG)
# A GPU config whose jobs cannot fit the GPU they are planned for stops here, before any job, with each job's
# sum (`python -m gdpo memory-plan --config <file>` prints them all); a CPU-scale config has no GPU jobs to plan.
check_memory_plan(config, Path(workflow.basedir), ", ".join(map(str, CONFIG_FILES)) or "the config")
# Each task's GPUs fit its launch and one node.
check_job_resources(config)

SCALE = config["scale"]
# `scratch_dir:` puts results/<scale> (runs, their checkpoints, logs) on scratch space through a link, before the
# workflow looks at any output.
link_results_to_scratch(config)
# torch threads of each train, evaluate and warm-up job; Snakemake runs cores / JOB_THREADS of them at once.
JOB_THREADS = config.get("job_threads", 2)
# `cpu_numerics: portable`: every job computes in float32 with AVX2 kernels, on machines of either kind
# (gdpo.numerics); its processes inherit this process's environment, and each job checks it before it starts.
CPU_NUMERICS_ENVIRONMENT = apply_numeric_environment(config.get("cpu_numerics", "native"))

# Every (task, method, seed) of the config: a RunKey, whose directory is
# results/<scale>/runs/<task>/<method>/seed<seed>.
RUNS_ROOT = runs_root(SCALE)
RUNS = plan_runs(config)
RUN_DIRS = [str(run.path()) for run in RUNS]
# Every trained run and the base model of each task are evaluated (eval.json).
EVAL_FILES = [str(evaluation.path() / EVAL_FILE) for evaluation in plan_evaluations(config)]
# A per-run job's directory as a pattern: results/<scale>/runs/{task}/{method}/seed{seed}.
RUN_DIR = RunKey.pattern(RUNS_ROOT)

# Interpreter of BFCL's environment (the tool-calling split and scorer).
BFCL_PYTHON = os.environ.get("GDPO_BFCL_PYTHON") or next(
    (str(p) for p in [Path(workflow.basedir) / ".venv-bfcl" / "bin" / "python"] if p.exists()), "python"
)

# Figures 4-8 and Tables 1-5 that the config's `reporting:` block maps to its tasks.
PAPER_OUTPUTS = planned_outputs(config, f"results/{SCALE}/paper_figures")


def in_report(path):
    """``path`` as an item of ``snakemake --report`` (figure PNGs, table and ledger CSVs), captioned from
    workflow/report/; other files (PDFs, Markdown) stay plain outputs beside them."""
    name = os.path.basename(path)
    stem, suffix = os.path.splitext(name)
    key = stem.split("_")[0]
    if path.startswith("results/sim/paper_figures/") and suffix == ".png":
        return report(path, caption="../report/sim.rst", category="Policy-gradient bench (sim)")
    if key.startswith("fig") and suffix == ".png":
        return report(path, caption=f"../report/{key}.rst", category="Figures")
    if key.startswith("table") and suffix == ".csv":
        return report(path, caption="../report/table.rst", category="Tables")
    if stem == "claims" and suffix == ".csv":
        return report(path, caption="../report/claims.rst", category="Claims ledger")
    return path


def policy_model(wildcards):
    """The model a task trains and evaluates from: its prepared model, or its format warm-up of it."""
    spec = config["tasks"][wildcards.task]
    if spec.get("warmup"):
        return warmup_model_dir(SCALE, wildcards.task)
    return model_dir(spec["model"])


# In miniature, the generated copies of the paper data sets (rule miniature_data).
MINIATURE_DATA = [f"{config['miniature']['data_dir']}/{MINIATURE_MANIFEST}"] if config.get("miniature") else []


def task_data(wildcards):
    """Data files the task reads (the BFCL split for tool calling; in miniature the generated paper data),
    made by rules of data.smk."""
    return required_files(config["tasks"][wildcards.task]) + MINIATURE_DATA


def run_key(wildcards):
    """The RunKey of a per-run job (its task, method and seed wildcards)."""
    return RunKey.from_wildcards(wildcards, RUNS_ROOT)


def run_dir(wildcards):
    """The run directory of a (task, method, seed) job."""
    return str(run_key(wildcards).path())


def run_log(rule):
    """A per-run job's log: results/<scale>/logs/<rule>/{task}/{method}/seed{seed}.log."""
    return RunKey.pattern(f"results/{SCALE}/logs/{rule}") + ".log"


def run_benchmark(rule):
    """A per-run job's benchmark file: results/<scale>/benchmarks/<rule>/{task}/{method}/seed{seed}.tsv."""
    return RunKey.pattern(f"results/{SCALE}/benchmarks/{rule}") + ".tsv"


def job_resource(kind, name):
    """One resource (gpu, cpus_per_task, mem_mb, runtime in minutes) of a train or evaluate job, from its
    task's `resources:` in the config (gdpo.plan.job_resources): no GPU where a task states none."""
    return lambda wildcards: job_resources(config, wildcards.task, kind)[name]


def device_check(kind):
    """What a GPU job of `kind` runs first (gdpo.preflight.gpu_job_prelude): the hub offline (HF_HOME from the
    config), then a check that stops the job at once, naming it, on a node without the GPUs, free disk or code
    sandbox it needs; nothing for a job that asks for no GPU (its command stays as it was)."""
    return lambda wildcards, resources: gpu_job_prelude(
        config, kind, wildcards.task, wildcards.method, wildcards.seed, resources.gpu, run_dir(wildcards)
    )


# The conda environment of train and evaluate jobs (`--sdm conda`): CUDA torch, vLLM and DeepSpeed for a
# config that names a GPU, CPU torch otherwise (gdpo.plan.job_env_file).
JOB_ENV = f"../../{job_env_file(config)}"


def run_settings(wildcards):
    """A training job's settings as the JSON its command reads (gdpo.plan.RunSettings): a change of any of
    them re-runs the job."""
    return resolve_run_settings(config, wildcards.task, wildcards.method, int(wildcards.seed)).to_json()


# One job of a training run cut into a chain within the wall limit: results/<scale>/runs/{task}/{method}/
# seed{seed}.work/segment{segment}.json records that segment {segment} (1 .. n-1) has saved its checkpoint.
SEGMENT_RECORD = f"{RUN_DIR}.work/segment{{segment}}.json"


def training_chain(wildcards):
    """The segments of a training job's chain (gdpo.plan.TrainingSegment); one for a run within the wall limit."""
    return plan_training_chain(config, wildcards.task)


def training_segment(wildcards):
    """The segment of a train_segment job (its {segment} wildcard, 1-based)."""
    chain = training_chain(wildcards)
    index = int(wildcards.segment)
    if not 1 <= index < len(chain):
        raise ValueError(f"run {run_dir(wildcards)} is planned as {len(chain)} job(s); segment {index} is none of "
                         f"the first {len(chain) - 1}.")
    return chain[index - 1]


def _segment_record(wildcards, index):
    return SEGMENT_RECORD.format(task=wildcards.task, method=wildcards.method, seed=wildcards.seed, segment=index)


def previous_segment_record(wildcards):
    """A train_segment job's input: the record of the segment before it (none for the first)."""
    index = int(wildcards.segment)
    return [_segment_record(wildcards, index - 1)] if index > 1 else []


def last_segment_record(wildcards):
    """The train job's input: the record of the chain's last segment before it (none for a run of one job)."""
    count = len(training_chain(wildcards))
    return [_segment_record(wildcards, count - 1)] if count > 1 else []


def eval_settings(wildcards):
    """An evaluation job's settings as the JSON its command reads (gdpo.plan.EvalSettings): a change of any of
    them re-runs the job."""
    return resolve_eval_settings(config, wildcards.task, wildcards.method, int(wildcards.seed)).to_json()


# Studies of the policy-gradient bench; each file's keys and values are checked now, so a bad study stops
# even a dry run; its reward models (which need torch) are built in onstart, before any job.
SIM_STUDIES = (config.get("sim") or {}).get("studies", [])
SIM_STUDY_FILES = [Path(workflow.basedir) / "config" / "sim" / f"{study}.yaml" for study in SIM_STUDIES]
for study_file in SIM_STUDY_FILES:
    read_study(study_file)
MODEL_SPECS = {model_slug(spec["model"]): spec["model"] for spec in (config.get("tasks") or {}).values()}


# Checks that need torch run here, before any job and never in a dry run: a study whose reward difficulties
# and correlations cannot be met together stops the run, and so does, when the jobs run on this machine, a
# GPU-only setting on a machine without a GPU (a dry run may still plan it). Under a cluster executor
# (`--executor slurm`, profiles/slurm) the jobs run elsewhere: submitting from a login node without a GPU is
# fine, and each GPU job checks its own node first (device_check). `workflow.local_exec` is the executor
# plugin's own statement (snakemake-interface-executor-plugins CommonSettings.local_exec); jobs spawned on
# the cluster run with --no-hooks, so this never runs inside them.
onstart:
    from gdpo.sim.study import load_study  # loads torch: never when a workflow is only planned

    for study_file in SIM_STUDY_FILES:
        load_study(study_file)
    if workflow.local_exec:
        for task in sorted({run.task for run in RUNS}):
            spec = config["tasks"][task]
            training = {**config.get("training", {}), **spec.get("training", {})}
            if gpu_only_settings(training, spec.get("eval_backend"), vllm_python()):
                from gdpo.training.device import check_device

                check_device(training, task, spec.get("eval_backend"))


wildcard_constraints:
    **RUN_WILDCARDS,
    model="[A-Za-z0-9_.-]+",
    study="[A-Za-z0-9_-]+",
    segment=r"\d+",
