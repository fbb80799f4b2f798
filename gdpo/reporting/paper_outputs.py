"""Which paper figures and tables a config can fill, and drawing them from the tidy CSVs.

The config's ``reporting:`` block says which task stands for which of the paper's setups::

    reporting:
      figures: {fig4: tool_calling, fig5: math, fig7: math_conditioned, fig8: arithmetic,
                fig6: {1.0: {plain: math, conditioned: math_conditioned}, 0.25: {plain: math_w025}}}
      tables: {table1: {Qwen2.5-1.5B: tool_calling}, table3: {R1-1.5B: math},
               table4: {R1-7B: math_conditioned}, table5: {2obj: code}}

Only figures and tables named there are drawn (a setup the config does not run has no figure, never an
empty one). Which files that makes is planning's (:func:`gdpo.plan.planned_outputs`).

The summaries are checked against the digests `gdpo aggregate` recorded beside them before anything is drawn, as
the ledger checks them (:func:`gdpo.reporting.aggregate.check_summary_digests`): no figure, table or aggregate
is drawn from an edited summary, and none drawn before stays beside the refusal.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gdpo.files import DigestMismatch
from gdpo.plan import (
    AGGREGATES_STEM,
    FIGURE_STEMS,
    TABLE_STEMS,
    describe_runs,
    model_display_name,
    planned_outputs,
    reporting_block,
    resolve_warmup_settings,
)
from gdpo.reporting import aggregates, curves, tables
from gdpo.reporting.aggregate import check_summary_digests

#: Figure key → (drawing function, the CSV it reads); file stems in :data:`gdpo.plan.FIGURE_STEMS`.
FIGURES = {
    "fig4": (curves.figure4_tool_calling_curves, "steps"),
    "fig5": (curves.figure5_math_curves, "steps"),
    "fig6": (curves.figure6_weight_sweep, "evals"),
    "fig7": (curves.figure7_conditioned_curves, "steps"),
    "fig8": (curves.figure8_batch_step_ablation, "steps"),
}
#: Table key → table function; file stems in :data:`gdpo.plan.TABLE_STEMS`.
TABLES = {
    "table1": tables.table1_tool_calling,
    "table3": tables.table3_math,
    "table4": tables.table4_math_conditioned,
    "table5": tables.table5_code,
}


def starting_points(config: dict) -> dict[str, str]:
    """Task → what its ``base`` evaluation is, for the tasks whose RL starts from a format warm-up."""
    points = {}
    for task, spec in (config.get("tasks") or {}).items():
        warmup = resolve_warmup_settings(config, task)
        if warmup is not None:
            points[task] = (f"{model_display_name(spec['model'])} after a format warm-up ({warmup.max_steps} supervised steps on "
                            "reference answers)")
    return points


def draw_all(config: dict, steps_csv: str | Path, eval_csv: str | Path, out_dir: str | Path) -> list[Path]:
    """Draw every figure and write every table the config's ``reporting:`` block names; returns the files.

    ``config``: at least ``scale``, ``tasks`` and ``reporting``; the tables name each task's model and steps
    (:func:`gdpo.plan.describe_runs`), so ``training`` too, which holds the steps a task does not set.

    Raises:
        gdpo.files.DigestMismatch: a summary differs from the digest `gdpo aggregate` recorded beside it; the
            files this config draws in ``out_dir`` are removed first (drawn from evidence that no longer checks).
    """
    reporting = reporting_block(config)
    scale, out_dir = config["scale"], Path(out_dir)
    try:
        check_summary_digests(eval_csv, steps_csv)
    except DigestMismatch:
        for path in planned_outputs(config, str(out_dir)):
            Path(path).unlink(missing_ok=True)
        raise
    data = {"steps": pd.read_csv(steps_csv), "evals": pd.read_csv(eval_csv)}
    written = []
    for key, spec in (reporting.get("figures") or {}).items():
        stem, (draw, source) = FIGURE_STEMS[key], FIGURES[key]
        if key == "fig6":
            spec = {float(weight): dict(variants) for weight, variants in spec.items()}
        written += draw(data[source], spec, out_dir / f"{stem}.png", scale)
    points, runs = starting_points(config), describe_runs(config)
    for key, spec in (reporting.get("tables") or {}).items():
        stem, build = TABLE_STEMS[key], TABLES[key]
        frame, markdown = build(data["evals"], {str(k): v for k, v in spec.items()}, scale, points, runs=runs)
        written += list(tables.write_table(frame, markdown, out_dir / stem))
    if reporting.get("figures") or reporting.get("tables"):
        written += [Path(p) for p in write_aggregates(config, data["steps"], data["evals"], out_dir / AGGREGATES_STEM)]
    return written


def write_aggregates(config: dict, steps: pd.DataFrame, evals: pd.DataFrame, stem: Path) -> list[str]:
    """IQM and probability of improvement (:mod:`gdpo.reporting.aggregates`) of the config's runs, each paper
    table's setups pooled (e.g. Table 3's models)."""
    families = {task: spec["family"] for task, spec in (config.get("tasks") or {}).items()}
    groups = {f"{key} setups": list(spec.values()) for key, spec in (reporting_block(config).get("tables") or {}).items()}
    return aggregates.write_aggregates(evals, steps, families, config["scale"], str(stem), groups)
