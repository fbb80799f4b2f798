"""Figure of one bench study: success over steps, median and IQR over seeds, per method (and variant)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gdpo.methods import method_color, method_label
from gdpo.plotting import save_figure  # sets the Agg backend
from gdpo.sim.summary import per_seed_outcomes, wilson_interval

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is set)

#: Up to this many variants (and reward names) the figure shows learning curves; beyond, final values.
MAX_CURVE_VARIANTS = 8
MAX_CURVE_REWARDS = 4


def _color(method: str, index: int) -> str:
    return method_color(method) or f"C{index % 10}"


def _ordered(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def _cell_label(variant: str) -> str:
    """A cell's name on its own lines, one setting a line (grid names join ``key=value`` with commas)."""
    return "\n".join(str(variant).split(","))


def _outcome_counts(df: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, method): the study's outcome (``collapse``, ...), seeds with the event and seeds; empty
    when the study counts none."""
    seeds = df.drop_duplicates(["variant", "method", "seed"])
    seeds = seeds[seeds["outcome"] != "none"]
    return seeds.groupby(["variant", "method"], sort=False).agg(
        outcome=("outcome", "first"), events=("outcome_event", lambda e: int(e.astype(bool).sum())),
        seeds=("seed", "nunique"))


def _outcome_text(counts: pd.DataFrame, variant: str, methods: list) -> str:
    rows = [(m, counts.loc[(variant, m)]) for m in methods if (variant, m) in counts.index]
    if not rows:
        return ""
    outcome = str(rows[0][1]["outcome"]).replace("_", " ")
    return f"{outcome}: " + ", ".join(f"{method_label(m)} {int(r['events'])}/{int(r['seeds'])}"
                                      for m, r in rows)


def _curves(df: pd.DataFrame, variants: list, rewards: list, methods: list, with_length: bool = False) -> plt.Figure:
    columns = len(rewards) + int(with_length)
    figure, axes = plt.subplots(len(variants), columns, figsize=(3.6 * columns, 2.6 * len(variants) + 0.6),
                                squeeze=False, sharex=True)
    quartiles = (df.groupby(["variant", "method", "reward", "step"], sort=False)["success"]
                 .quantile([0.25, 0.5, 0.75]).unstack())
    counts = _outcome_counts(df) if "outcome" in df else pd.DataFrame()
    for row, variant in enumerate(variants):
        text = _outcome_text(counts, variant, methods) if len(counts) else ""
        if text:  # the per-seed event the study counts, in every cell
            axes[row][0].text(0.02, 0.97, text, transform=axes[row][0].transAxes, fontsize=7, va="top",
                              bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0})
        for column, reward in enumerate(rewards):
            axis = axes[row][column]
            for index, method in enumerate(methods):
                key = (variant, method, reward)
                if key not in quartiles.index.droplevel("step"):
                    continue
                curve = quartiles.loc[key]
                axis.plot(curve.index, curve[0.5], color=_color(method, index), label=method_label(method),
                          linewidth=1.4)
                axis.fill_between(curve.index, curve[0.25], curve[0.75], color=_color(method, index), alpha=0.2,
                                  linewidth=0)
            axis.set_ylim(-0.02, 1.02)
            axis.grid(True, alpha=0.3)
            if row == 0:
                axis.set_title(f"{reward}", fontsize=10)
            if column == 0:
                axis.set_ylabel(f"{_cell_label(variant)}\nsuccess" if len(variants) > 1 else "success", fontsize=7)
            if row == len(variants) - 1:
                axis.set_xlabel("policy update (step)")
    if with_length:
        lengths = (df.drop_duplicates(["variant", "method", "seed", "step"])
                   .groupby(["variant", "method", "step"], sort=False)["length_max"]
                   .quantile([0.25, 0.5, 0.75]).unstack())
        for row, variant in enumerate(variants):
            axis = axes[row][-1]
            for index, method in enumerate(methods):
                if (variant, method) not in lengths.index.droplevel("step"):
                    continue
                curve = lengths.loc[(variant, method)]
                axis.plot(curve.index, curve[0.5], color=_color(method, index), linewidth=1.2)
                axis.fill_between(curve.index, curve[0.25], curve[0.75], color=_color(method, index), alpha=0.2,
                                  linewidth=0)
            axis.grid(True, alpha=0.3)
            if row == 0:
                axis.set_title("max response length (tokens)", fontsize=10)
            if row == len(variants) - 1:
                axis.set_xlabel("policy update (step)")
    axes[0][0].legend(fontsize=8, loc="best")
    return figure


def _finals(df: pd.DataFrame, variants: list, methods: list) -> plt.Figure:
    seeds = per_seed_outcomes(df)
    per_seed = seeds.groupby(["variant", "method", "seed"], sort=False).agg(
        final_success=("final_success", "mean"), distinct_per_group=("distinct_per_group", "mean")).reset_index()
    groups = df.groupby(["variant", "method", "seed"], sort=False).agg(
        distinct_groups=("distinct_groups_in_batch", "mean"), exact=("exact_distinct_groups", "first")).reset_index()
    figure, axes = plt.subplots(3, 1, figsize=(max(8.0, 0.45 * len(variants) * max(1, len(methods)) / 1.5), 11),
                                sharex=True)
    positions = np.arange(len(variants))
    width = 0.8 / max(1, len(methods))
    panels = (
        (axes[0], per_seed, "final_success", "final success, mean over rewards"),
        (axes[1], per_seed, "distinct_per_group", "distinct advantages per group (live)"),
        (axes[2], groups, "distinct_groups", "distinct advantage groups per batch (live)"),
    )
    for axis, table, column, ylabel in panels:
        for index, method in enumerate(methods):
            subset = table[table["method"] == method].groupby("variant", sort=False)[column]
            stats = subset.quantile([0.25, 0.5, 0.75]).unstack().reindex(variants)
            x = positions + (index - (len(methods) - 1) / 2) * width
            axis.errorbar(x, stats[0.5], yerr=[stats[0.5] - stats[0.25], stats[0.75] - stats[0.5]], fmt="o",
                          markersize=4, capsize=2, color=_color(method, index), label=method_label(method))
        axis.set_xticks(positions)
        axis.set_xticklabels(variants, rotation=60, ha="right", fontsize=7)
        axis.set_ylabel(ylabel, fontsize=9)
        axis.grid(True, alpha=0.3)
    exact = groups.groupby(["variant", "method"], sort=False)["exact"].first()
    if exact.notna().any():
        for index, method in enumerate(methods):
            values = [exact.get((variant, method), np.nan) for variant in variants]
            axes[2].plot(positions, values, marker="x", linestyle=":", color=_color(method, index),
                         label=f"{method_label(method)}: exact (all binary groups)")
        axes[2].set_yscale("log")
    axes[0].set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=7)
    return figure


def _sequence_cells(df: pd.DataFrame, variants: list, rewards: list, methods: list) -> plt.Figure:
    """A sequence study with many cells, one row per cell: each reward's final success (median and IQR over
    seeds, per method; grey bar: the success at step 0, mean over seeds) and, when the study counts a per-seed
    outcome, its rate per method with the 95 % Wilson interval."""
    seeds = per_seed_outcomes(df)
    initial = df[df["step"] == 0].groupby(["variant", "reward"], sort=False)["success"].mean()
    counts = _outcome_counts(df) if "outcome" in df else pd.DataFrame()
    panels = len(rewards) + int(len(counts) > 0)
    figure, axes = plt.subplots(1, panels, figsize=(3.2 * panels + 4.5, 0.34 * len(variants) * max(1, len(methods)) / 2
                                                    + 1.6), sharey=True, squeeze=False)
    axes = axes[0]
    positions = np.arange(len(variants))
    height = 0.8 / max(1, len(methods))
    offsets = [(index - (len(methods) - 1) / 2) * height for index in range(len(methods))]
    for axis, reward in zip(axes, rewards):
        table = seeds[seeds["reward"] == reward]
        start = [initial.get((variant, reward), np.nan) for variant in variants]
        axis.barh(positions, start, height=0.9, color="0.88", label="step 0 (mean over seeds)", zorder=0)
        for index, method in enumerate(methods):
            stats = (table[table["method"] == method].groupby("variant", sort=False)["final_success"]
                     .quantile([0.25, 0.5, 0.75]).unstack().reindex(variants))
            axis.errorbar(stats[0.5], positions + offsets[index],
                          xerr=[stats[0.5] - stats[0.25], stats[0.75] - stats[0.5]], fmt="o", markersize=3,
                          capsize=2, color=_color(method, index), label=method_label(method))
        axis.set_xlim(-0.02, 1.02)
        axis.set_title(f"{reward}: final success", fontsize=9)
        axis.grid(True, alpha=0.3)
    if len(counts):
        axis = axes[-1]
        for index, method in enumerate(methods):
            rows = [counts.loc[(v, method)] if (v, method) in counts.index else None for v in variants]
            rates = np.array([r["events"] / r["seeds"] if r is not None else np.nan for r in rows])
            bounds = np.array([wilson_interval(int(r["events"]), int(r["seeds"])) if r is not None else (np.nan,) * 2
                               for r in rows])
            axis.errorbar(rates, positions + offsets[index], xerr=[rates - bounds[:, 0], bounds[:, 1] - rates],
                          fmt="s", markersize=3, capsize=2, color=_color(method, index),
                          label=method_label(method))
            for y, r, high in zip(positions + offsets[index], rows, bounds[:, 1]):
                if r is not None:
                    axis.text(high + 0.02, y, f"{int(r['events'])}/{int(r['seeds'])}", fontsize=6, va="center",
                              color=_color(method, index))
        outcome = str(counts["outcome"].iloc[0]).replace("_", " ")
        axis.set_xlim(-0.02, 1.02)
        axis.set_title(f"{outcome} rate (95 % Wilson)", fontsize=9)
        axis.grid(True, alpha=0.3)
    axes[0].set_yticks(positions)
    axes[0].set_yticklabels(variants, fontsize=7)
    axes[0].invert_yaxis()
    for axis in axes:
        axis.set_xlabel("share of seeds" if axis is axes[-1] and len(counts) else "success (median, IQR)", fontsize=8)
    axes[0].legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.06), ncol=len(methods) + 1, frameon=False)
    return figure


def plot_study(df: pd.DataFrame, out_png: str | Path) -> list[Path]:
    """One figure of one study's results (``df`` from :func:`gdpo.sim.run_study`), as PNG and PDF beside it.

    Up to 8 variants (cells) and 4 reward names: a grid of panels (rows = variants, columns = rewards) with
    each method's success over steps, median line and IQR band over seeds (a sequence study adds a column: the
    batch's maximum response length in tokens; a study with a per-seed outcome prints each cell's count of it
    per method). More, on the sequence bench: per cell, each reward's final success per method (median and
    IQR over seeds) beside its success at step 0, and the outcome's rate per method with its 95 % Wilson
    interval. More on the Bernoulli bench: per variant, the final success (mean over rewards), the live
    distinct advantages per group and the distinct advantage groups per batch (with the exact analysis'
    count where attached), medians and IQRs over seeds. Every cell of the study is drawn.

    Returns:
        The PNG and PDF paths.
    """
    studies = _ordered(df["study"])
    if len(studies) != 1:
        names = ", ".join(map(str, studies))
        raise ValueError(f"plot_study draws one study; the table holds {len(studies)}: {names}.")
    variants = _ordered(df["variant"])
    rewards = _ordered(df["reward"])
    methods = _ordered(df["method"])
    seeds = int(df.groupby(["variant", "method"])["seed"].nunique().min())
    sequence = "bench" in df and (df["bench"] == "sequence").any()
    if len(variants) <= MAX_CURVE_VARIANTS and len(rewards) <= MAX_CURVE_REWARDS:
        # The sequence bench's lengths are real token counts: its figures add the batch's maximum length.
        figure = _curves(df, variants, rewards, methods, with_length=sequence)
        what = "success over steps, median and IQR over seeds"
    elif sequence:
        figure = _sequence_cells(df, variants, rewards, methods)
        what = f"{len(variants)} cells: final success, median and IQR over seeds"
    else:
        figure = _finals(df, variants, methods)
        what = "per variant, median and IQR over seeds"
    bench = "sequence bench" if sequence else "policy-gradient bench"
    figure.suptitle(f"{studies[0]} — scale: sim ({bench}), {seeds} seeds per run; {what}",
                    fontsize=10)
    height = figure.get_size_inches()[1]
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))  # leave room for the title
    return save_figure(figure, out_png)
