# Shared setup: config validation and the names every rule file uses.
# Rules call `python -m gdpo ...`; run from the repository root, that finds the package even inside a
# conda env that does not install it.
import json
import os
from pathlib import Path

from gdpo.evidence import RUN_FILES as RUN_EVIDENCE
from gdpo.config import MINIATURE_MANIFEST, apply_grid, apply_miniature, validate_config
from gdpo.evaluation.run import BASE_METHOD, plan_evaluations, resolve_eval_settings
from gdpo.reporting.paper_outputs import planned_outputs
from gdpo.sim import load_study
from gdpo.tasks import required_files
from gdpo.training.models import model_slug
from gdpo.training.run import check_device, describe_runs, launcher_command, plan_runs, resolve_run_settings
from gdpo.training.warmup import resolve_warmup_settings

# Stop before any job if a key or value is wrong; the message names the key, the allowed values and
# the config file. Files are passed lowest precedence first.
CONFIG_FILES = [f for f in workflow.configfiles if f not in workflow.overwrite_configfiles] + list(
    workflow.overwrite_configfiles
)
SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
validate_config(config, SCHEMA, CONFIG_FILES)
# `--config grid=full`: the scale's full grid (its full_grid: block merged in), checked again as a whole.
config.update(apply_grid(config))
validate_config(config, SCHEMA, CONFIG_FILES)
# A `miniature:` block (config/overlays/miniature.yaml) runs a paper config on a CPU: checked again as a whole.
# It removes keys (the launch), so the config is replaced, not updated.
MINIATURE_CONFIG = apply_miniature(config)
config.clear()
config.update(MINIATURE_CONFIG)
validate_config(config, SCHEMA, CONFIG_FILES)

SCALE = config["scale"]
# torch threads of each train, evaluate and warm-up job; Snakemake runs cores / JOB_THREADS of them at once.
JOB_THREADS = config.get("job_threads", 2)

# Every (task, method, seed) of the config.
RUNS = plan_runs(config)
RUN_DIRS = [f"results/{SCALE}/runs/{r['task']}/{r['method']}/seed{r['seed']}" for r in RUNS]
# Every trained run and the base model of each task are evaluated (eval.json).
EVAL_FILES = [f"results/{SCALE}/runs/{e['task']}/{e['method']}/seed{e['seed']}/eval.json" for e in plan_evaluations(config)]

# Interpreter of BFCL's environment (the tool-calling split and scorer).
BFCL_PYTHON = os.environ.get("GDPO_BFCL_PYTHON") or next(
    (str(p) for p in [Path(workflow.basedir) / ".venv-bfcl" / "bin" / "python"] if p.exists()), "python"
)

# Figures 4-8 and Tables 1-5 that the config's `reporting:` block maps to its tasks.
PAPER_OUTPUTS = planned_outputs(config, f"paper_figures/{SCALE}")


def in_report(path):
    """``path`` as an item of ``snakemake --report`` (figure PNGs, table and ledger CSVs), captioned from
    workflow/report/; other files (PDFs, Markdown) stay plain outputs beside them."""
    name = os.path.basename(path)
    stem, suffix = os.path.splitext(name)
    key = stem.split("_")[0]
    if path.startswith("paper_figures/sim/") and suffix == ".png":
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
        return f"results/{SCALE}/warmup/{wildcards.task}/model"
    return f"resources/models/{model_slug(spec['model'])}"


# In miniature, the generated copies of the paper data sets (rule miniature_data).
MINIATURE_DATA = [f"{config['miniature']['data_dir']}/{MINIATURE_MANIFEST}"] if config.get("miniature") else []


def task_data(wildcards):
    """Data files the task reads (the BFCL split for tool calling; in miniature the generated paper data),
    made by rules of data.smk."""
    return required_files(config["tasks"][wildcards.task]) + MINIATURE_DATA


def run_dir(wildcards):
    """The run directory of a (task, method, seed) job."""
    return f"results/{SCALE}/runs/{wildcards.task}/{wildcards.method}/seed{wildcards.seed}"
# Studies of the policy-gradient bench; each file is checked now so a bad study stops the run at start.
SIM_STUDIES = (config.get("sim") or {}).get("studies", [])
for study in SIM_STUDIES:
    load_study(Path(workflow.basedir) / "config" / "sim" / f"{study}.yaml")
MODEL_SPECS = {model_slug(spec["model"]): spec["model"] for spec in (config.get("tasks") or {}).values()}


# A GPU-only setting on a machine without a GPU stops the run before any job; dry runs (which never
# call onstart) may still plan it.
onstart:
    for task in sorted({r["task"] for r in RUNS}):
        spec = config["tasks"][task]
        check_device({**config.get("training", {}), **spec.get("training", {})}, task, spec.get("eval_backend"))


wildcard_constraints:
    task="[A-Za-z0-9_.-]+",
    method="[A-Za-z0-9_]+",
    seed=r"\d+",
    model="[A-Za-z0-9_.-]+",
    study="[A-Za-z0-9_-]+",
