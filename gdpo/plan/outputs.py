"""The figures and tables a config's ``reporting:`` block asks for: their file stems (:data:`FIGURE_STEMS`,
:data:`TABLE_STEMS`, :data:`AGGREGATES_STEM`), the block checked against the config's tasks
(:func:`reporting_block`) and the files planned under an output directory (:func:`planned_outputs`)."""

from __future__ import annotations


#: Figure key of a config's ``reporting:`` block → its file stem (PNG and PDF; drawn by
#: :mod:`gdpo.reporting.paper_outputs`).
FIGURE_STEMS = {
    "fig4": "fig4_tool_calling_curves",
    "fig5": "fig5_math_curves",
    "fig6": "fig6_length_weight_sweep",
    "fig7": "fig7_conditioned_length_curves",
    "fig8": "fig8_batch_step_ablation",
}
#: Table key → its file stem (CSV and Markdown).
TABLE_STEMS = {
    "table1": "table1_tool_calling",
    "table3": "table3_math",
    "table4": "table4_math_conditioned",
    "table5": "table5_code",
}


#: File stem (CSV and Markdown) of the IQM / probability-of-improvement summary drawn beside the figures and tables.
AGGREGATES_STEM = "aggregates"


def reporting_block(config: dict) -> dict:
    """The config's ``reporting:`` block, after checking that every task it names is defined."""
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


def planned_outputs(config: dict, out_dir: str) -> list[str]:
    """PNG, PDF, CSV and Markdown files the config's ``reporting:`` block asks for, under ``out_dir``, and the
    IQM / probability-of-improvement summary beside them (:data:`AGGREGATES_STEM`) where it asks for any."""
    reporting = reporting_block(config)
    files = []
    for key in reporting.get("figures") or {}:
        files += [f"{out_dir}/{FIGURE_STEMS[key]}.{suffix}" for suffix in ("png", "pdf")]
    for key in reporting.get("tables") or {}:
        files += [f"{out_dir}/{TABLE_STEMS[key]}.{suffix}" for suffix in ("csv", "md")]
    if files:
        files += [f"{out_dir}/{AGGREGATES_STEM}.{suffix}" for suffix in ("csv", "md")]
    return files
