"""Figure of one bench study: success over steps, median and IQR over seeds, per method (and variant)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gdpo.reporting.figures import METHOD_COLORS, METHOD_LABELS, save_figure  # sets the Agg backend
from gdpo.sim.summary import per_seed_outcomes

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is set)

#: Up to this many variants (and reward names) the figure shows learning curves; beyond, final values.
MAX_CURVE_VARIANTS = 8
MAX_CURVE_REWARDS = 4


def _color(method: str, index: int) -> str:
    return METHOD_COLORS.get(method, f"C{index % 10}")


def _label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def _ordered(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def _curves(df: pd.DataFrame, variants: list, rewards: list, methods: list, with_length: bool = False) -> plt.Figure:
    columns = len(rewards) + int(with_length)
    figure, axes = plt.subplots(len(variants), columns, figsize=(3.6 * columns, 2.6 * len(variants) + 0.6),
                                squeeze=False, sharex=True)
    quartiles = (df.groupby(["variant", "method", "reward", "step"], sort=False)["success"]
                 .quantile([0.25, 0.5, 0.75]).unstack())
    for row, variant in enumerate(variants):
        for column, reward in enumerate(rewards):
            axis = axes[row][column]
            for index, method in enumerate(methods):
                key = (variant, method, reward)
                if key not in quartiles.index.droplevel("step"):
                    continue
                curve = quartiles.loc[key]
                axis.plot(curve.index, curve[0.5], color=_color(method, index), label=_label(method), linewidth=1.4)
                axis.fill_between(curve.index, curve[0.25], curve[0.75], color=_color(method, index), alpha=0.2,
                                  linewidth=0)
            axis.set_ylim(-0.02, 1.02)
            axis.grid(True, alpha=0.3)
            if row == 0:
                axis.set_title(f"{reward}", fontsize=10)
            if column == 0:
                axis.set_ylabel(f"{variant}\nsuccess" if len(variants) > 1 else "success", fontsize=9)
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
                          markersize=4, capsize=2, color=_color(method, index), label=_label(method))
        axis.set_xticks(positions)
        axis.set_xticklabels(variants, rotation=60, ha="right", fontsize=7)
        axis.set_ylabel(ylabel, fontsize=9)
        axis.grid(True, alpha=0.3)
    exact = groups.groupby(["variant", "method"], sort=False)["exact"].first()
    if exact.notna().any():
        for index, method in enumerate(methods):
            values = [exact.get((variant, method), np.nan) for variant in variants]
            axes[2].plot(positions, values, marker="x", linestyle=":", color=_color(method, index),
                         label=f"{_label(method)}: exact (all binary groups)")
        axes[2].set_yscale("log")
    axes[0].set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=8)
    axes[2].legend(fontsize=7)
    return figure


def plot_study(df: pd.DataFrame, out_png: str | Path) -> list[Path]:
    """One figure of one study's results (``df`` from :func:`gdpo.sim.run_study`), as PNG and PDF beside it.

    Up to 8 variants and 4 reward names: a grid of panels (rows = variants, columns = rewards) with each
    method's success over steps, median line and IQR band over seeds (a sequence study adds a column: the
    batch's maximum response length in tokens). More: per variant, the final success
    (mean over rewards), the live distinct advantages per group and the distinct advantage groups per batch
    (with the exact analysis' count where attached), medians and IQRs over seeds.

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
    else:
        figure = _finals(df, variants, methods)
        what = "per variant, median and IQR over seeds"
    bench = "sequence bench" if sequence else "policy-gradient bench"
    figure.suptitle(f"{studies[0]} — scale: sim ({bench}), {seeds} seeds per run; {what}",
                    fontsize=10)
    height = figure.get_size_inches()[1]
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.45 / height))  # leave room for the title
    return save_figure(figure, out_png)
