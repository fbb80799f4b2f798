"""Evaluation of trained (and base) policies on a task family's held-out data.

Each family's ``evaluate(request)`` receives an :class:`EvalRequest` and returns the content of the run's
``eval.json``::

    {"family": str,
     "benchmarks": {bench: {metric: percent, ..., "n_items": int}},
     "summary": {metric: percent},
     "not_run": {column: reason},
     "settings": {...},
     "items": {bench: {"ids": [id, ...],                       # per-item outcomes (gdpo.files.item_outcomes)
                       "scores": {metric: ["0110", ...]},       # one 0/1 character per sample, in sample order
                       "groups": [...], "weights": {...}}}}     # optional (BFCL: category, weight per metric)

``items`` is absent in evaluations made before it was recorded; readers say so
(:func:`gdpo.reporting.verdicts.items.paired_items`).

:func:`gdpo.evaluation.run.evaluate_run` builds the request from the job's settings (:class:`gdpo.plan.EvalSettings`)
and writes the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EvalRequest:
    """Everything a family needs to evaluate one policy.

    Attributes:
        task: config task name, e.g. ``"tool_calling"``.
        method: advantage estimator of the run, or ``"base"`` for the untrained model.
        seed: sampling seed.
        model_dir: base model directory (Hugging Face format).
        adapter_dir: the trained run's ``model/`` directory (a PEFT adapter or a full model); None for base.
        options: the task's data options (the keyword arguments of the family's ``build_dataset``).
        eval_size: number of held-out items (None: all of them).
        num_samples: samples per item; accuracies are pass@1 averaged over them.
        temperature: sampling temperature (0: greedy).
        top_p: nucleus sampling threshold.
        max_new_tokens: generation limit per sample, in tokens.
        batch_size: sequences generated together.
        work_dir: existing directory for intermediate files (completions, evaluator outputs).
        threads: CPU threads for torch.
        fast_generation: sample with the bfloat16 rollout engine (math: through lm-eval's engine-backed
            model, :mod:`gdpo.tasks.math.engine_lm`) instead of float32 ``generate``.
        continuous_batching: with ``fast_generation``, the rollout engine decodes with continuous batching (a
            finished sequence's slot goes to the next waiting one; greedy completions unchanged), in every
            family, math's lm-eval model included; False decodes batch by batch, the earlier path (the speed
            benchmark's baseline).
    """

    task: str
    method: str
    seed: int
    model_dir: Path
    adapter_dir: Path | None
    options: dict
    eval_size: int | None
    num_samples: int
    temperature: float
    top_p: float
    max_new_tokens: int
    batch_size: int
    work_dir: Path
    threads: int = 1
    fast_generation: bool = False
    continuous_batching: bool = True
