"""One evaluation job: call the family's evaluator with the job's settings (:class:`gdpo.plan.EvalSettings`),
write eval.json."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from gdpo.evaluation import EvalRequest
from gdpo.files import ITEMS_KEY, weights_digest
from gdpo.plan import BASE_METHOD, EvalSettings
from gdpo.tasks import get_family


def evaluate_run(
    settings: EvalSettings,
    model_dir: str | Path,
    out_path: str | Path,
    work_dir: str | Path,
    adapter_dir: str | Path | None = None,
    threads: int = 1,
) -> dict:
    """Evaluate one policy and write ``out_path`` (eval.json) atomically.

    Args:
        settings: from :func:`gdpo.plan.resolve_eval_settings` (the command reads them with
            :meth:`gdpo.plan.EvalSettings.from_json`); written to eval.json's ``settings``, followed
            by the evaluator's own.
        model_dir: the prepared base model.
        out_path: ``results/<scale>/runs/<task>/<method>/seed<seed>/eval.json``.
        work_dir: directory for the evaluator's intermediate files (created).
        adapter_dir: the trained run's ``model/`` directory; None for the base model.
        threads: torch CPU threads.
    """
    import torch

    from gdpo.generation.precision import check_numerics

    if (settings.method == BASE_METHOD) != (adapter_dir is None):
        raise ValueError("Give --adapter-dir for a trained method and only for it (method 'base' is the untrained model).")
    torch.set_num_threads(threads)
    numerics = check_numerics()  # a job of a portable experiment that is not portable stops here
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    request = EvalRequest(
        task=settings.task,
        method=settings.key().method,  # the run's name: gdpo_clip3 for gdpo with options
        seed=settings.seed,
        model_dir=Path(model_dir),
        adapter_dir=Path(adapter_dir) if adapter_dir else None,
        options=dict(settings.options),
        eval_size=settings.eval_size,
        num_samples=settings.num_samples,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_new_tokens=settings.max_new_tokens,
        batch_size=settings.batch_size,
        work_dir=work_dir,
        threads=threads,
        fast_generation=settings.fast_generation,
    )
    started = time.perf_counter()
    result = get_family(settings.family).evaluate(request)
    # Per-item outcomes go last: the long part of eval.json, after what a reader looks at first.
    items = result.pop(ITEMS_KEY, None)
    record = {
        "task": settings.task,
        "method": settings.key().method,
        "seed": settings.seed,
        "model": settings.model,
        "model_weights_sha256": weights_digest(model_dir),
        # The trained adapter read (None for the base model): checked against the run's env.json saved_model.
        "adapter_weights_sha256": weights_digest(adapter_dir) if adapter_dir else None,
        "numerics": numerics,
        **result,
        "settings": {**settings.to_dict(), **(result.get("settings") or {})},
        "eval_seconds": round(time.perf_counter() - started, 2),
        **({ITEMS_KEY: items} if items is not None else {}),
    }
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_suffix(".json.partial")
    partial.write_text(json.dumps(record, indent=2), encoding="utf-8")
    os.replace(partial, out_path)
    return record
