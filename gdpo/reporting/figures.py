"""Figures of the paper, regenerated from the tidy CSVs under ``results/`` (one function per figure).

Every figure is written as PNG and PDF, labelled like the paper, and says its scale on it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gdpo.analysis.exact import PAPER_MAX_REWARDS_GDPO, PAPER_MAX_ROLLOUTS_GDPO
from gdpo.methods import Method
from gdpo.plotting import save_figure  # sets the Agg backend

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is set)

#: The methods of the exact analysis' figures, in the paper's order.
EXACT_METHODS = (Method.GRPO, Method.GRPO_NOSTD, Method.GDPO)


def figure2_advantage_groups(table_csv: str | Path, out_png: str | Path) -> list[Path]:
    """Fig. 2: G = 2 rollouts, two binary rewards — each reward combination and its advantages.

    Left: the advantage of rollout 2 for every combination (rollout 1 gets its negative), GRPO vs GDPO
    (before the batch step). Right: how many distinct advantage groups each method leaves.
    """
    table = pd.read_csv(table_csv)
    labels = [f"{a} vs {b}" for a, b in zip(table["rollout_1"], table["rollout_2"])]

    def second(column: str) -> list[float]:
        return [float(pair.strip("()").split(",")[1]) for pair in table[column]]

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 1]})
    positions = range(len(table))
    width = 0.27
    for offset, method in zip((-width, 0.0, width), EXACT_METHODS):
        left.barh([p + offset for p in positions], second(f"{method}_advantage"), height=width,
                  color=method.color, label=method.label)
    left.set_yticks(list(positions))
    left.set_yticklabels([f"{label}  (totals {t})" for label, t in zip(labels, table["totals"])], fontsize=8)
    left.invert_yaxis()
    left.axvline(0, color="black", linewidth=0.6)
    left.set_xlabel("advantage of rollout 2 (rollout 1 gets the negative)")
    left.set_title("Reward combinations (r1, r2) of two rollouts")
    left.legend(loc="lower right", fontsize=8)

    distinct = {m: table[f"{m}_advantage"].nunique() for m in EXACT_METHODS}
    bars = right.bar([m.label for m in distinct], list(distinct.values()), color=[m.color for m in distinct])
    right.bar_label(bars)
    right.set_ylabel("# distinct advantage groups")
    right.set_title("Distinct groups (G = 2, n = 2)")
    right.tick_params(axis="x", labelsize=8)
    figure.suptitle("Fig. 2 — GRPO collapses distinct reward combinations; GDPO keeps them apart "
                    "(scale: exact enumeration; GDPO before its batch step)", fontsize=10)
    figure.tight_layout()
    return save_figure(figure, out_png)


def figure3_distinct_groups(counts_csv: str | Path, out_png: str | Path) -> list[Path]:
    """Fig. 3: number of distinct advantage groups vs rollouts (n = 2) and vs rewards (G = 4), log scale.

    The shaded part of each axis lies beyond the paper's range for GDPO (G ≤ 11, n ≤ 6).
    """
    counts = pd.read_csv(counts_csv)
    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    panels = (
        ("rollouts", "rollouts", "Number of rollouts", "(a) two binary rewards", PAPER_MAX_ROLLOUTS_GDPO),
        ("rewards", "rewards", "Number of rewards", "(b) four rollouts", PAPER_MAX_REWARDS_GDPO),
    )
    for axis_, (axis_name, column, xlabel, title, paper_max) in zip(axes, panels):
        subset = counts[counts["axis"] == axis_name]
        for method in EXACT_METHODS:
            line = subset[subset["method"] == method].sort_values(column)
            axis_.plot(line[column], line["distinct_groups"], marker="o", markersize=4,
                       color=method.color, label=method.label)
        axis_.set_yscale("log")
        axis_.set_xlabel(xlabel)
        axis_.set_ylabel("# distinct advantage groups")
        axis_.set_title(title)
        if not subset.empty and subset[column].max() > paper_max:
            axis_.axvspan(paper_max + 0.5, subset[column].max() + 0.5, color="0.92", zorder=0,
                          label="beyond the paper's range")
        axis_.grid(True, which="both", alpha=0.3)
        axis_.legend(fontsize=8)
    figure.suptitle("Fig. 3 — distinct advantage groups over all binary reward combinations "
                    "(scale: exact enumeration)", fontsize=10)
    figure.tight_layout()
    return save_figure(figure, out_png)
