"""Optional format warm-up: a short supervised fine-tune on reference answers before RL.

The paper's base models already produce the answer format sometimes (Qwen2.5-1.5B-Instruct: 4.74 %
correct format on BFCL-v3, Table 1), so GRPO/GDPO have reward variation to learn from. The CPU-scale
model (SmolLM2-135M-Instruct) never does for tool calling: every rollout of a group gets the same
rewards and no method can learn. A task may therefore set ``warmup`` in its config: a few steps of TRL's
``SFTTrainer`` on the family's reference answers (``reference_completion(row)``), giving a base model
that produces the format part of the time. The warmed-up model is the ``base`` of that task's tables.

It is a full-parameter fine-tune, so memory is weights + gradients + Adam state (four copies of the model)
plus activations. ``freeze_embeddings`` keeps the token-embedding matrix (and the output head tied to it)
fixed, a fifth of SmolLM2-135M's parameters, and the ``warmup-model`` command tells the C allocator to
give freed buffers back (``gdpo.training.memory``): together they keep the mini warm-up under 4 GB
(benchmarks/README.md).

A task's warm-up settings are a :class:`gdpo.plan.WarmupSettings`, planned by
:func:`gdpo.plan.resolve_warmup_settings` (defaults :data:`gdpo.plan.WARMUP_DEFAULTS`). With the task's
``training.report_to``, the warm-up reports its losses live too, into ``logs/<backend>/`` beside the warmed-up
model (:func:`warmup_logs_dir`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from gdpo.generation.precision import check_numerics, cpu_dtype
from gdpo.plan import WarmupSettings, report_backends
from gdpo.tasks import get_family
from gdpo.training.tracking import (
    LOGS_DIR_NAME,
    backend_environment,
    check_backends_installed,
    reporting_arguments,
)


def warmup_dataset(settings: WarmupSettings):
    """Prompt-completion rows (conversational) of the family's training data that have a reference answer.

    Uses the seed ``settings.seed`` for the item draw, which differs from every training seed's draw.
    """
    from datasets import Dataset

    family = get_family(settings.family)
    if not hasattr(family, "reference_completion"):
        raise ValueError(f"Family {settings.family!r} has no reference answers; remove the task's `warmup` block.")
    rows = family.build_dataset("train", settings.train_size, settings.seed, **settings.options)
    examples = {"prompt": [], "completion": []}
    for row in rows:
        answer = family.reference_completion(row)
        if answer is not None:
            examples["prompt"].append(row["prompt"])
            examples["completion"].append([{"role": "assistant", "content": answer}])
    if not examples["prompt"]:
        raise ValueError(f"task {settings.task!r}: no training item has a reference answer to warm up on.")
    return Dataset.from_dict(examples)


def warmup_logs_dir(out_dir: str | Path) -> Path:
    """Where the warm-up's ``report_to`` backends log: ``logs/`` beside ``out_dir``
    (``results/<scale>/warmup/<task>/logs`` for the workflow's ``results/<scale>/warmup/<task>/model``)."""
    return Path(out_dir).with_name(LOGS_DIR_NAME)


def warmup_model(settings: WarmupSettings, model_dir: str | Path, out_dir: str | Path,
                 threads: int | None = None) -> dict:
    """Fine-tune ``model_dir`` on the reference answers and save the result (weights + tokenizer) to ``out_dir``.

    Returns the training losses per step and the trainable parameter count (also written to
    ``out_dir/warmup.json``, with the settings).
    """
    backends = report_backends(_report_to(settings))
    check_backends_installed(backends)
    # Before TRL is imported: trackio, which TRL imports, reads where its store is once.
    with backend_environment(backends, warmup_logs_dir(out_dir)) as log_dirs:
        for directory in log_dirs.values():
            shutil.rmtree(directory, ignore_errors=True)  # a warm-up always starts over, and so do its logs
            directory.mkdir(parents=True)
        return _warmup_model(settings, model_dir, Path(out_dir), threads, backends)


def _report_to(settings: WarmupSettings) -> str | list[str]:
    """TRL's ``report_to`` of the warm-up: the task's ``training.report_to``, else ``"none"``."""
    return "none" if settings.report_to is None else settings.report_to


def _warmup_model(settings: WarmupSettings, model_dir: str | Path, out_dir: Path, threads: int | None,
                  backends: list[str]) -> dict:
    """:func:`warmup_model` once its backends log where they should."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    if threads:
        torch.set_num_threads(threads)
    numerics = check_numerics()  # a job of a portable experiment that is not portable stops before it trains
    dataset = warmup_dataset(settings)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if settings.freeze_embeddings:
        # Tied weights are one tensor, so a tied output head stays fixed with the embedding.
        model.get_input_embeddings().weight.requires_grad_(False)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    scratch = out_dir.with_name(out_dir.name + ".work")  # the trainer's output_dir; nothing kept there
    arguments = SFTConfig(
        output_dir=str(scratch),
        max_steps=settings.max_steps,
        learning_rate=settings.learning_rate,
        per_device_train_batch_size=settings.per_device_train_batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        lr_scheduler_type="constant",
        # No truncation: a cut prompt would drop the reference answer and leave nothing to learn from.
        max_length=None,
        seed=settings.seed,
        logging_steps=1,
        save_strategy="no",
        report_to=_report_to(settings),
        **reporting_arguments(backends, run_name=f"{settings.task}/warmup"),
        # bfloat16 autocast over float32 weights (mixed precision); on a CPU accelerate must be told so.
        # (float32 instead on a CPU that emulates bfloat16: gdpo.generation.precision)
        bf16=settings.bf16 and (torch.cuda.is_available() or cpu_dtype(torch.bfloat16) == torch.bfloat16),
        use_cpu=settings.bf16 and not torch.cuda.is_available(),
    )
    trainer = SFTTrainer(model=model, args=arguments, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    trainer.save_model(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    shutil.rmtree(scratch, ignore_errors=True)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    record = {"settings": settings.to_dict(), "examples": len(dataset), "trainable_parameters": trainable,
              "losses": losses, "numerics": numerics}
    (out_dir / "warmup.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return record
