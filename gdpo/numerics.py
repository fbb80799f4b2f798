"""One numeric setting for CPU runs that span machines of different kinds (config ``cpu_numerics``).

The project's CPU machines come in two kinds: AVX-512 with native bfloat16, and AVX2 without it. Left to
themselves (``native``, the default) they compute differently: bfloat16 rollouts and autocast on the first,
float32 on the second (:mod:`gdpo.generation.precision`), each with its widest vector kernels. An
experiment whose runs span days and machines of both kinds would then compare methods across precisions.

``portable`` makes every job of every machine compute the same way, through the environment its process
starts with (:data:`PORTABLE_ENVIRONMENT`, set by the workflow before any job starts):

- float32 wherever bfloat16 was asked for (``GDPO_CPU_BF16=never``), native bfloat16 or not;
- torch's AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``) and oneDNN's (``ONEDNN_MAX_CPU_ISA=AVX2``): the widest
  instruction set both kinds have;
- MKL's AVX2 code path in its conditional-numerical-reproducibility mode (``MKL_CBWR=AVX2``; MKL honours it on
  Intel CPUs and already takes an AVX2 path on AMD ones).

With one torch thread per job (``job_threads: 1``) the kernels' reduction orders are then the same on both
kinds; what may still differ is MKL's choice on CPUs of different vendors, a rounding difference that falls on
every method alike. Each run's ``env.json`` records the setting and what the process really ran with
(:func:`gdpo.generation.precision.numerics_record`), and a job that should be portable but is not refuses to
start (:func:`gdpo.generation.precision.check_numerics`), so no run of a portable experiment can silently be
native.

Standard library only (the floor layer): the workflow reads it before anything loads torch.
"""

from __future__ import annotations

import os
import sys

#: The config's ``cpu_numerics`` values.
CPU_NUMERICS = ("native", "portable")
#: Environment variable naming the setting a job must run under (set with the others below).
NUMERICS_VARIABLE = "GDPO_CPU_NUMERICS"
#: What a ``portable`` job's process starts with: read by torch, oneDNN and MKL when they load, so it cannot
#: be changed once torch is imported.
PORTABLE_ENVIRONMENT = {
    NUMERICS_VARIABLE: "portable",
    "GDPO_CPU_BF16": "never",
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "AVX2",
}
#: torch's CPU capabilities at or below AVX2 (``torch.backends.cpu.get_cpu_capability()``).
PORTABLE_CAPABILITIES = ("AVX2", "DEFAULT", "NO AVX")


def check_setting(setting: str) -> str:
    """``setting`` if it is one of :data:`CPU_NUMERICS`, else ``ValueError`` naming the choices."""
    if setting not in CPU_NUMERICS:
        raise ValueError(f"cpu_numerics: {setting!r} is not a setting; use one of {', '.join(CPU_NUMERICS)} "
                         "('portable': float32 and AVX2 kernels on every machine, for runs spanning machines).")
    return setting


def numeric_environment(setting: str) -> dict[str, str]:
    """The environment variables a job of ``setting`` starts with (``native``: none)."""
    return dict(PORTABLE_ENVIRONMENT) if check_setting(setting) == "portable" else {}


def apply_numeric_environment(setting: str, environ=os.environ) -> dict[str, str]:
    """Set ``setting``'s variables in ``environ`` (the workflow's process, whose jobs inherit it); returns them.

    ``RuntimeError`` when ``setting`` is ``portable`` and torch is already imported in this process with
    other values: they would not apply to it (the workflow itself never imports torch)."""
    variables = numeric_environment(setting)
    changed = {k: v for k, v in variables.items() if environ.get(k) != v}
    if changed and "torch" in sys.modules and environ is os.environ:
        raise RuntimeError(f"cpu_numerics: {setting} must be set before torch is imported in this process "
                           f"(would change {', '.join(sorted(changed))}); start a fresh process.")
    environ.update(variables)
    return variables


def portable_problems(environ, torch_capability: str, bf16_runs_in: str) -> list[str]:
    """What keeps a process from the portable setting: each variable of :data:`PORTABLE_ENVIRONMENT` it lacks,
    torch kernels wider than AVX2 (``torch_capability``), bfloat16 work not in float32 (``bf16_runs_in``);
    empty when it computes portably."""
    problems = [f"{k}={environ.get(k)!r} (needs {v!r})" for k, v in PORTABLE_ENVIRONMENT.items()
                if environ.get(k) != v]
    if torch_capability not in PORTABLE_CAPABILITIES:
        problems.append(f"torch dispatches to {torch_capability} kernels (needs AVX2: torch was imported before "
                        "ATEN_CPU_CAPABILITY was set)")
    if bf16_runs_in != "float32":
        problems.append(f"bfloat16 work runs in {bf16_runs_in} (needs float32)")
    return problems


#: The kinds of CPU machine the project's work runs on, by the flags that decide how they compute.
MACHINE_KINDS = ("AVX-512 with native bfloat16", "AVX-512 without native bfloat16", "AVX2", "older than AVX2")


def cpuinfo_fields(cpuinfo: str | None = None) -> dict[str, str]:
    """The first value of each field of ``/proc/cpuinfo`` (``cpuinfo``: its text; read when None, empty off
    Linux), e.g. ``"model name"`` and ``"flags"``."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                cpuinfo = handle.read()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def machine_kind(flags: set[str] | list[str]) -> str:
    """The machine kind (:data:`MACHINE_KINDS`) of a CPU with these flags (``/proc/cpuinfo``'s, or the kernel
    flags a run's ``env.json`` records)."""
    flags = set(flags)
    if "avx512f" in flags:
        return MACHINE_KINDS[0] if "avx512_bf16" in flags or "amx_bf16" in flags else MACHINE_KINDS[1]
    return MACHINE_KINDS[2] if "avx2" in flags else MACHINE_KINDS[3]


def machine_record(cpuinfo: str | None = None) -> dict:
    """This machine's CPU model and kind (:data:`MACHINE_KINDS`), from ``/proc/cpuinfo`` (``cpuinfo``: its text;
    read when None, empty off Linux): what an experiment's timeline records per batch, so that wall time and
    runs can be split by machine kind. Without torch: the driver records it before any job starts."""
    fields = cpuinfo_fields(cpuinfo)
    return {"cpu": fields.get("model name"), "kind": machine_kind(fields.get("flags", "").split()),
            "cores": os.cpu_count()}
