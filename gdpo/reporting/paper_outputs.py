"""Which paper figures and tables a config can fill, and drawing them from the tidy CSVs.

The config's ``reporting:`` block says which task stands for which of the paper's setups::

    reporting:
      figures: {fig4: tool_calling, fig5: math, fig7: math_conditioned, fig8: arithmetic,
                fig6: {1.0: {plain: math, conditioned: math_conditioned}, 0.25: {plain: math_w025}}}
      tables: {table1: {Qwen2.5-1.5B: tool_calling}, table3: {R1-1.5B: math},
               table4: {R1-7B: math_conditioned}, table5: {2obj: code}}

Only figures and tables named there are drawn (a setup the config does not run has no figure, never an
empty one).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gdpo.reporting import curves, tables

#: Figure key → (file stem, drawing function, the CSV it reads).
FIGURES = {
    "fig4": ("fig4_tool_calling_curves", curves.figure4_tool_calling_curves, "steps"),
    "fig5": ("fig5_math_curves", curves.figure5_math_curves, "steps"),
    "fig6": ("fig6_length_weight_sweep", curves.figure6_weight_sweep, "evals"),
    "fig7": ("fig7_conditioned_length_curves", curves.figure7_conditioned_curves, "steps"),
    "fig8": ("fig8_batch_step_ablation", curves.figure8_batch_step_ablation, "steps"),
}
#: Table key → (file stem, table function).
TABLES = {
    "table1": ("table1_tool_calling", tables.table1_tool_calling),
    "table3": ("table3_math", tables.table3_math),
    "table4": ("table4_math_conditioned", tables.table4_math_conditioned),
    "table5": ("table5_code", tables.table5_code),
}


def _reporting(config: dict) -> dict:
    reporting = config.get("reporting") or {}
    known_tasks = set(config.get("tasks") or {})
    named = []
    for key, spec in (reporting.get("figures") or {}).items():
        if key == "fig6":
            named += [task for variants in spec.values() for task in variants.values() if task]
        else:
            named.append(spec)
    for spec in (reporting.get("tables") or {}).values():
        named += list(spec.values())
    unknown = sorted(set(named) - known_tasks)
    if unknown:
        raise ValueError(f"reporting: names task(s) {unknown} that the config does not define; tasks are "
                         f"{sorted(known_tasks)}.")
    return reporting


def starting_points(config: dict) -> dict[str, str]:
    """Task → what its ``base`` evaluation is, for the tasks whose RL starts from a format warm-up."""
    from gdpo.training.warmup import WARMUP_DEFAULTS

    points = {}
    for task, spec in (config.get("tasks") or {}).items():
        if spec.get("warmup"):
            steps = {**WARMUP_DEFAULTS, **spec["warmup"]}["max_steps"]
            points[task] = (f"{spec['model']} after a format warm-up ({steps} supervised steps on reference "
                            "answers)")
    return points


def planned_outputs(config: dict, out_dir: str) -> list[str]:
    """PNG, PDF, CSV and Markdown files the config's ``reporting:`` block asks for, under ``out_dir``."""
    reporting = _reporting(config)
    files = []
    for key in reporting.get("figures") or {}:
        files += [f"{out_dir}/{FIGURES[key][0]}.{suffix}" for suffix in ("png", "pdf")]
    for key in reporting.get("tables") or {}:
        files += [f"{out_dir}/{TABLES[key][0]}.{suffix}" for suffix in ("csv", "md")]
    return files


def draw_all(config: dict, steps_csv: str | Path, eval_csv: str | Path, out_dir: str | Path) -> list[Path]:
    """Draw every figure and write every table the config's ``reporting:`` block names; returns the files."""
    reporting = _reporting(config)
    scale, out_dir = config["scale"], Path(out_dir)
    data = {"steps": pd.read_csv(steps_csv), "evals": pd.read_csv(eval_csv)}
    written = []
    for key, spec in (reporting.get("figures") or {}).items():
        stem, draw, source = FIGURES[key]
        if key == "fig6":
            spec = {float(weight): dict(variants) for weight, variants in spec.items()}
        written += draw(data[source], spec, out_dir / f"{stem}.png", scale)
    points = starting_points(config)
    for key, spec in (reporting.get("tables") or {}).items():
        stem, build = TABLES[key]
        frame, markdown = build(data["evals"], {str(k): v for k, v in spec.items()}, scale, points)
        written += list(tables.write_table(frame, markdown, out_dir / stem))
    return written
