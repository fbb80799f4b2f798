"""Which precision a CPU computes bfloat16 work in.

The CPU scales ask for bfloat16 (the rollout engine's weights, training's autocast) for speed: on a CPU with
native bfloat16 matrix instructions (``avx512_bf16``, AMX) it is the fast path. On a CPU without them (e.g. AVX2
only) torch emulates bfloat16 matrix products, measured at 0.4 GFLOP/s against 23 GFLOP/s in float32 on one
core of such a machine: a 60-fold slow-down. There the work is done in float32 instead, the fallback is logged,
and each run records it (:func:`precision_record`, in ``env.json``). Rounding then differs from a bfloat16
machine's, as it already does between any two CPUs with different kernels (docs/training.md, "Reproducible").

``GDPO_CPU_BF16=always`` keeps bfloat16 even where it is emulated (to repeat a bfloat16 run's rounding exactly);
``GDPO_CPU_BF16=never`` computes in float32 even where bfloat16 is native (the portable numeric setting,
:mod:`gdpo.numerics`, which :func:`check_numerics` enforces).
"""

from __future__ import annotations

import functools
import logging
import os

import torch

from gdpo.numerics import NUMERICS_VARIABLE, PORTABLE_ENVIRONMENT, check_setting, portable_problems

logger = logging.getLogger(__name__)
#: Environment variable: ``always`` computes in bfloat16 on any CPU, ``never`` in float32 on any CPU; unset or
#: ``auto`` falls back to float32 where bfloat16 is emulated.
CPU_BF16_VARIABLE = "GDPO_CPU_BF16"


@functools.cache
def native_cpu_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (oneDNN's check: avx512_bf16 or AMX)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def cpu_bf16_allowed() -> bool:
    """Whether bfloat16 work on the CPU runs in bfloat16: natively supported (unless ``GDPO_CPU_BF16=never``),
    or forced by ``GDPO_CPU_BF16=always``."""
    choice = os.environ.get(CPU_BF16_VARIABLE, "auto").strip().lower()
    if choice not in ("auto", "always", "never"):
        raise ValueError(f"{CPU_BF16_VARIABLE}={choice!r}: use 'auto' (float32 where this CPU emulates bfloat16), "
                         "'always' (bfloat16 on any CPU) or 'never' (float32 on any CPU).")
    return choice == "always" or (choice == "auto" and native_cpu_bf16())


def cpu_dtype(requested: torch.dtype) -> torch.dtype:
    """The dtype CPU work asked for in ``requested`` runs in: float32 instead of an emulated bfloat16."""
    if requested == torch.bfloat16 and not cpu_bf16_allowed():
        # "never" (the portable setting, which also hides the CPU's bfloat16 from oneDNN) is a choice, not a lack
        if os.environ.get(CPU_BF16_VARIABLE, "auto").strip().lower() == "never":
            logger.info("%s=never: computing bfloat16 work in float32", CPU_BF16_VARIABLE)
        else:
            logger.warning("this CPU has no native bfloat16 matrix instructions (torch capability %s): computing in "
                           "float32 instead (set %s=always to keep bfloat16)",
                           torch.backends.cpu.get_cpu_capability(), CPU_BF16_VARIABLE)
        return torch.float32
    return requested


def precision_record() -> dict:
    """For a run's ``env.json``: whether the CPU has native bfloat16, and what CPU bfloat16 work ran in."""
    return {"native_cpu_bf16": native_cpu_bf16(),
            "cpu_bf16_runs_in": "bfloat16" if cpu_bf16_allowed() else "float32"}


def numerics_record() -> dict:
    """For a run's ``env.json``: the numeric setting asked for (:mod:`gdpo.numerics`) and the kernels, threads and
    precision this process really computes with."""
    return {
        "setting": os.environ.get(NUMERICS_VARIABLE, "native"),
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "mkl_cbwr": os.environ.get("MKL_CBWR"),
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA"),
        "torch_threads": torch.get_num_threads(),
        **precision_record(),
    }


def check_numerics() -> dict:
    """:func:`numerics_record`, after checking that a job asked to be portable (``GDPO_CPU_NUMERICS=portable``)
    really is: ``RuntimeError`` naming each difference (:func:`gdpo.numerics.portable_problems`) and the fix.
    Such a process was started outside the workflow, or imported torch before its environment was set."""
    setting = check_setting(os.environ.get(NUMERICS_VARIABLE, "native"))
    record = numerics_record()
    if setting == "portable":
        problems = portable_problems(os.environ, record["torch_capability"], record["cpu_bf16_runs_in"])
        if problems:
            raise RuntimeError("This job should compute with the portable numeric setting (cpu_numerics: portable) "
                               "but " + "; ".join(problems) + ". Start it from the workflow, or with "
                               + " ".join(f"{k}={v}" for k, v in PORTABLE_ENVIRONMENT.items()) + ".")
    return record
