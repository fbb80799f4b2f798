"""Training-curve and sweep figures of the paper (Figs. 4–8), drawn from the tidy ``steps.csv`` and ``eval.csv``.

Each figure function takes the DataFrames (:mod:`gdpo.reporting.aggregate`) and explicit task names, writes PNG
and PDF, and puts the scale and the number of seeds on the figure. The numbers behind the curves come from small
pure helpers (:func:`median_iqr`, :func:`per_seed_curves`, :func:`divergence_steps`, :func:`sweep_table`) that
can be checked by hand.

Conventions:

- A seed counts once per step: duplicate rows of one (task, method, seed, step) (e.g. a resumed run that logged
  a step twice) are averaged before the statistics across seeds.
- Rows whose ``step`` or metric is NaN are skipped, so a metric logged only at some steps still draws.
- Median and quartiles use linear interpolation between seeds (pandas/numpy's default ``quantile``).
- Missing task, method or metric: ``ValueError`` naming it and the CSV it is missing from.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from gdpo.methods import Method, method_color, method_label, paper_order
from gdpo.plotting import save_figure
from gdpo.reporting.stats import mean_ci
from gdpo.curve_events import detect_divergence, divergence_measures

CORRECTNESS = "rewards/correct/mean"
PASS_RATE = "rewards/pass/mean"
FORMAT = "rewards/format/mean"
LENGTH = "rewards/length/mean"
LENGTH_CONDITIONED = "rewards/length_conditioned/mean"
MAX_LENGTH = "completions/max_length"
#: Fewest logged steps on which ``detect_divergence`` can find a divergence with its default settings
#: (it needs ``min_duration + 2`` points, ``min_duration`` ≥ 3); shorter seeds are reported as "too short".
MIN_STEPS_FOR_DIVERGENCE = 5
#: Fig. 6's eval.csv metrics (math family, percent): accuracy and share of responses over the length limit.
SWEEP_METRICS = ("acc", "exceed")
#: Fig. 6 compares these two methods.
SWEEP_METHODS = (Method.GRPO, Method.GDPO)
#: The range Fig. 6's metrics can take (percent): its bars are clipped to it.
PERCENT_RANGE = (0.0, 100.0)
#: Fewest seeds for which Fig. 6 draws a point's t-interval. With 2 the 95 % quantile is 12.71 × the standard
#: error, wider than any percentage (1 % and 60 % give −345 % to +406 %): such a point shows its seeds instead.
MIN_SEEDS_FOR_BAR = 3
#: Fig. 8 compares GDPO with and without its batch-level normalisation step.
ABLATION_METHODS = (Method.GDPO, Method.GDPO_NOBN)

STEPS_CSV = "steps.csv"
EVAL_CSV = "eval.csv"

#: Two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom (standard tables, 3 decimals).


# ----------------------------------------------------------------------------------------------- validation


def _task_rows(frame: pd.DataFrame, task: str, csv_name: str) -> pd.DataFrame:
    for column in ("task", "method", "seed"):
        if column not in frame.columns:
            raise ValueError(f"{csv_name} has no '{column}' column; pass the table written by "
                             f"gdpo.reporting.aggregate.")
    rows = frame[frame["task"] == task]
    if rows.empty:
        present = ", ".join(sorted(map(str, frame["task"].dropna().unique()))) or "none"
        raise ValueError(f"{csv_name} has no rows for task '{task}' (tasks present: {present}); check the task "
                         f"name or train and aggregate that task first.")
    return rows


def _require_metric(rows: pd.DataFrame, metric: str, task: str, csv_name: str) -> None:
    """``metric`` is a column of steps.csv with at least one value for the task."""
    if metric not in rows.columns:
        raise ValueError(f"{csv_name} has no metric column '{metric}' (needed for task '{task}'); the runs did "
                         f"not log it — check the task's reward_weights.")
    if rows[metric].isna().all():
        raise ValueError(f"{csv_name} has no values of metric '{metric}' for task '{task}'; its runs did not "
                         f"log it — check the task's reward_weights.")


def _require_methods(rows: pd.DataFrame, methods: Sequence[str], task: str, csv_name: str) -> None:
    present = set(rows["method"])
    for method in methods:
        if method not in present:
            raise ValueError(f"{csv_name} has no rows for method '{method}' of task '{task}' (methods present: "
                             f"{', '.join(paper_order(present))}); train that method on the task first.")


# ------------------------------------------------------------------------------------------ step statistics


def per_seed_curves(steps: pd.DataFrame, task: str, metric: str,
                    methods: Sequence[str] | None = None) -> pd.DataFrame:
    """One value per (method, seed, step) of ``metric`` for ``task``.

    Rows with a NaN step or value are dropped; duplicates of a (method, seed, step) are averaged.

    Returns:
        Columns ``method, seed, step, value``, sorted; only ``methods`` if given (each must exist).
    """
    rows = _task_rows(steps, task, STEPS_CSV)
    if "step" not in rows.columns:
        raise ValueError(f"{STEPS_CSV} has no 'step' column; pass the table written by gdpo.reporting.aggregate.")
    _require_metric(rows, metric, task, STEPS_CSV)
    if methods is not None:
        _require_methods(rows, methods, task, STEPS_CSV)
        rows = rows[rows["method"].isin(list(methods))]
    rows = rows[["method", "seed", "step", metric]].dropna(subset=["step", metric])
    curves = (rows.groupby(["method", "seed", "step"], as_index=False)[metric].mean()
              .rename(columns={metric: "value"}))
    return curves.sort_values(["method", "seed", "step"], ignore_index=True)


def smoothing_window(n_steps: int) -> int:
    """Steps of the trailing moving mean a curve figure applies to each seed: 1 (none) below 50 logged steps,
    then one 25th of the run (20 at 500 steps), so that a step's few rollouts do not hide the trend."""
    return max(1, n_steps // 25)


def smoothing_note(window: int) -> str:
    """What a figure's note says of its smoothing (nothing when the curves are raw)."""
    return "" if window == 1 else f" · each seed's trailing mean over {window} steps"


def median_iqr(steps: pd.DataFrame, task: str, metric: str,
               methods: Sequence[str] | None = None, window: int = 1) -> pd.DataFrame:
    """Median and interquartile range across seeds of ``metric`` at each step, per method.

    Args:
        steps: steps.csv as a DataFrame (one row per task, method, seed, step).
        task: the task whose runs are summarised.
        metric: a metric column, e.g. ``rewards/correct/mean``.
        methods: restrict to these methods (each must exist); default all methods of the task.
        window: each seed's curve is first replaced by its trailing mean over this many logged steps (1: raw;
            the first steps average what exists so far).

    Returns:
        Columns ``method, step, median, q25, q75, n_seeds`` (``n_seeds``: seeds with a value at that step);
        with one seed q25 = q75 = median.
    """
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise ValueError(f"window must be a whole number of steps ≥ 1, got {window!r}.")
    curves = per_seed_curves(steps, task, metric, methods)
    if window > 1:
        curves["value"] = curves.groupby(["method", "seed"])["value"].transform(
            lambda values: values.rolling(window, min_periods=1).mean())
    grouped = curves.groupby(["method", "step"])["value"]
    table = pd.DataFrame({
        "median": grouped.median(),
        "q25": grouped.quantile(0.25),
        "q75": grouped.quantile(0.75),
        "n_seeds": grouped.size(),
    }).reset_index()
    return table.sort_values(["method", "step"], ignore_index=True)


def divergence_steps(steps: pd.DataFrame, task: str, correctness_metric: str = CORRECTNESS,
                     length_metric: str = MAX_LENGTH, methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Divergence step of every seed (:func:`gdpo.curve_events.detect_divergence`, default settings).

    Detected per seed rather than on the median curve: seeds that collapse at different steps give a median
    whose fall is smeared out (or hidden), and the claims ledger counts divergence per seed too.

    Returns:
        Columns ``method, seed, divergence_step, n_steps`` (``divergence_step`` NaN where the seed does not
        diverge; ``n_steps``: steps with both curves, see :data:`MIN_STEPS_FOR_DIVERGENCE`).
    """
    correctness = per_seed_curves(steps, task, correctness_metric, methods)
    length = per_seed_curves(steps, task, length_metric, methods)
    joined = correctness.merge(length, on=["method", "seed", "step"], suffixes=("_correct", "_length"))
    records = []
    for (method, seed), run in joined.groupby(["method", "seed"]):
        step = detect_divergence(run["step"].to_numpy(), run["value_correct"].to_numpy(),
                                 run["value_length"].to_numpy())
        records.append({"method": method, "seed": seed, "divergence_step": np.nan if step is None else step,
                        "n_steps": len(run)})
    return pd.DataFrame(records, columns=["method", "seed", "divergence_step", "n_steps"])


def divergence_measure_table(steps: pd.DataFrame, task: str, correctness_metric: str = CORRECTNESS,
                             length_metric: str = MAX_LENGTH, methods: Sequence[str] | None = None) -> pd.DataFrame:
    """C5's continuous measures of every seed (:func:`gdpo.curve_events.divergence_measures`).

    Returns:
        Columns ``method, seed, correctness_fall, length_growth, peak_max_length, n_steps``.
    """
    correctness = per_seed_curves(steps, task, correctness_metric, methods)
    length = per_seed_curves(steps, task, length_metric, methods)
    joined = correctness.merge(length, on=["method", "seed", "step"], suffixes=("_correct", "_length"))
    records = []
    for (method, seed), run in joined.groupby(["method", "seed"]):
        measures = divergence_measures(run["value_correct"].to_numpy(), run["value_length"].to_numpy())
        records.append({"method": method, "seed": seed, "correctness_fall": measures["correctness_fall"],
                        "length_growth": measures["length_growth"], "peak_max_length": measures["peak_max_length"],
                        "n_steps": len(run)})
    return pd.DataFrame(records, columns=["method", "seed", "correctness_fall", "length_growth", "peak_max_length",
                                          "n_steps"])


def seeds_note(scale: str, seed_counts: dict[str, int]) -> str:
    """``"scale mini · 3 seeds"``, or the count per method when methods differ."""
    counts = set(seed_counts.values())
    if len(counts) == 1:
        (count,) = counts
        return f"scale {scale} · {count} seed{'s' if count != 1 else ''}"
    per_method = ", ".join(f"{method_label(m)} {seed_counts[m]}" for m in paper_order(seed_counts))
    return f"scale {scale} · seeds: {per_method}"


def _seed_counts(curves: pd.DataFrame) -> dict[str, int]:
    return curves.groupby("method")["seed"].nunique().to_dict()


# -------------------------------------------------------------------------------------------- sweep statistics


def _check_tasks_by_weight(tasks_by_weight: dict) -> None:
    if not tasks_by_weight:
        raise ValueError("tasks_by_weight is empty; map each length weight to {'plain': task, 'conditioned': task}.")
    for weight, variants in tasks_by_weight.items():
        # Bad input is a ValueError throughout the project, type errors included.
        if not isinstance(weight, (int, float)) or isinstance(weight, bool):
            raise ValueError(f"tasks_by_weight key {weight!r} is not a number; use the length weight, "  # noqa: TRY004
                             f"e.g. 0.75.")
        if not isinstance(variants, dict) or not set(variants) <= {"plain", "conditioned"}:
            raise ValueError(f"tasks_by_weight[{weight}] must be a dict with keys 'plain' and 'conditioned', "
                             f"got {variants!r}.")
        if not any(variants.get(v) for v in ("plain", "conditioned")):
            raise ValueError(f"tasks_by_weight[{weight}] names no task; give 'plain' and/or 'conditioned'.")


def sweep_table(evals: pd.DataFrame, tasks_by_weight: dict[float, dict[str, str | None]],
                metric: str, methods: Sequence[str] = SWEEP_METHODS) -> pd.DataFrame:
    """Fig. 6's points: per (weight, variant, method), mean ± 95 % CI over seeds of ``metric``.

    A seed's value is the unweighted mean of ``metric`` over the task's benchmarks (each benchmark counts
    once, whatever its number of items); rows with an empty value (not run) are ignored.

    Args:
        evals: eval.csv as a DataFrame.
        tasks_by_weight: length weight → ``{"plain": task, "conditioned": task or None}``.
        metric: an eval.csv metric, e.g. ``acc`` or ``exceed`` (percent).
        methods: the methods compared; each must exist for every task.

    Returns:
        Columns ``weight, variant, method, task, mean, low, high, n_seeds, seed_values`` (low/high: the t-interval,
        unclipped, NaN for one seed; ``seed_values``: the per-seed values, in seed order).
    """
    _check_tasks_by_weight(tasks_by_weight)
    for column in ("benchmark", "metric", "value"):
        if column not in evals.columns:
            raise ValueError(f"{EVAL_CSV} has no '{column}' column; pass the table written by "
                             f"gdpo.reporting.aggregate.")
    records = []
    for weight, variants in tasks_by_weight.items():
        for variant in ("plain", "conditioned"):
            task = variants.get(variant)
            if not task:
                continue
            rows = _task_rows(evals, task, EVAL_CSV)
            _require_methods(rows, methods, task, EVAL_CSV)
            rows = rows[(rows["metric"] == metric) & rows["value"].notna()]
            for method in methods:
                method_rows = rows[rows["method"] == method]
                if method_rows.empty:
                    raise ValueError(f"{EVAL_CSV} has no values of metric '{metric}' for method '{method}' of "
                                     f"task '{task}'; evaluate it with a family that reports '{metric}'.")
                per_seed = method_rows.groupby("seed")["value"].mean()
                mean, low, high = mean_ci(per_seed.to_numpy())
                records.append({"weight": float(weight), "variant": variant, "method": method, "task": task,
                                "mean": mean, "low": low, "high": high, "n_seeds": len(per_seed),
                                "seed_values": tuple(float(v) for v in per_seed.to_numpy())})
    return pd.DataFrame(records, columns=["weight", "variant", "method", "task", "mean", "low", "high",
                                          "n_seeds", "seed_values"])


# ------------------------------------------------------------------------------------------------- drawing


def _draw_median_iqr(axis: plt.Axes, table: pd.DataFrame, method: str, label: str | None = None,
                     linewidth: float = 1.6) -> None:
    """Median line of ``method``, with its IQR band where at least two seeds have a value."""
    line = table[table["method"] == method]
    marker = "o" if len(line) <= 20 else None  # short runs: show the logged points
    axis.plot(line["step"], line["median"], color=method_color(method), label=label, linewidth=linewidth,
              marker=marker, markersize=3)
    if (line["n_seeds"] >= 2).any():
        axis.fill_between(line["step"], line["q25"], line["q75"], where=(line["n_seeds"] >= 2).to_numpy(),
                          color=method_color(method), alpha=0.2, linewidth=0, interpolate=True)


def _curve_panels(steps: pd.DataFrame, task: str, panels: Sequence[tuple[str, str]],
                  methods: Sequence[str] | None) -> tuple[plt.Figure, list[plt.Axes], list[str], dict[str, int], int]:
    """One panel per (metric, title): median + IQR over seeds of each seed's moving mean
    (:func:`smoothing_window`), one line per method."""
    curves = per_seed_curves(steps, task, panels[0][0], methods)
    window = smoothing_window(int(curves.groupby(["method", "seed"]).size().max()))
    tables = [median_iqr(steps, task, metric, methods, window) for metric, _ in panels]
    order = paper_order(tables[0]["method"])
    figure, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False)
    axes = list(axes[0])
    for axis, table, (metric, title) in zip(axes, tables, panels):
        for method in order:
            _draw_median_iqr(axis, table, method, label=method_label(method))
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("training step")
        axis.set_ylabel(metric, fontsize=8)
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(True, alpha=0.3)
    return figure, axes, order, _seed_counts(curves), window


def _finish(figure: plt.Figure, title: str, note: str, out_png: str | Path, legend_handles=None,
            columns: int = 4) -> list[Path]:
    """Shared legend below the panels, title and note on top; save PNG + PDF."""
    handles = legend_handles or figure.axes[0].get_legend_handles_labels()[0]
    columns = min(len(handles), columns)
    rows = -(-len(handles) // columns)
    figure.legend(handles=handles, loc="lower center", ncol=columns, fontsize=8, bbox_to_anchor=(0.5, 0.0),
                  frameon=False)
    figure.suptitle(f"{title}\n{note}", fontsize=10)
    figure.tight_layout(rect=(0, 0.03 + 0.045 * rows, 1, 1))
    return save_figure(figure, out_png)


# ------------------------------------------------------------------------------------------------- figures


def figure4_tool_calling_curves(steps: pd.DataFrame, task: str, out_png: str | Path, scale: str,
                                methods: Sequence[str] | None = None) -> list[Path]:
    """Fig. 1b/4: tool calling — correctness (in [−3, 3]) and format reward means over training steps.

    Median across seeds with the IQR as a band, one line per method (every method of the task, or
    ``methods``). Returns the PNG and PDF paths.
    """
    figure, _, _, counts, window = _curve_panels(steps, task, [(CORRECTNESS, "Correctness reward (mean, [−3, 3])"),
                                                               (FORMAT, "Format reward (mean, [0, 1])")], methods)
    return _finish(figure, f"Fig. 4 — tool calling ({task}): reward curves, median and IQR over seeds",
                   seeds_note(scale, counts) + smoothing_note(window), out_png)


def _length_curves(steps: pd.DataFrame, task: str, out_png: str | Path, scale: str, length_metric: str,
                   length_title: str, title: str, methods: Sequence[str] | None) -> list[Path]:
    """Correctness, a length reward and max length over steps, with every seed's divergence step marked."""
    figure, axes, order, counts, window = _curve_panels(
        steps, task, [(CORRECTNESS, "Correctness reward (mean)"), (length_metric, length_title),
                      (MAX_LENGTH, "Max response length (tokens)")], methods)
    diverged = divergence_steps(steps, task, CORRECTNESS, MAX_LENGTH, methods)
    # Legend columns fill top to bottom: methods in the first, their divergence status beside them.
    lines, statuses = [], []
    for method in order:
        seeds = diverged[diverged["method"] == method]
        method_steps = seeds.dropna(subset=["divergence_step"])
        total = len(seeds)
        lines.append(Line2D([], [], color=method_color(method), linewidth=1.6, label=method_label(method)))
        if method_steps.empty:
            short = int((seeds["n_steps"] < MIN_STEPS_FOR_DIVERGENCE).sum())
            label = (f"{method_label(method)}: no divergence (0/{total} seeds)" if short == 0 else
                     f"{method_label(method)}: no divergence found; {short}/{total} seeds have fewer than "
                     f"{MIN_STEPS_FOR_DIVERGENCE} steps, too short to judge")
            statuses.append(Line2D([], [], linestyle="none", label=label))
            continue
        for step in method_steps["divergence_step"]:
            for axis in axes:
                axis.axvline(step, color=method_color(method), linestyle="--", linewidth=1.0, alpha=0.8)
        listed = ", ".join(f"seed {int(s)} @ {int(d)}" for s, d in
                           zip(method_steps["seed"], method_steps["divergence_step"]))
        label = f"{method_label(method)} diverges in {len(method_steps)}/{total} seeds ({listed})"
        statuses.append(Line2D([], [], color=method_color(method), linestyle="--", linewidth=1.0, label=label))
    note = (f"{seeds_note(scale, counts)} · median and IQR over seeds{smoothing_note(window)} · dashed: a seed's "
            "divergence step (from the unsmoothed curves)")
    return _finish(figure, title, note, out_png, legend_handles=lines + statuses, columns=2)


def figure5_math_curves(steps: pd.DataFrame, task: str, out_png: str | Path, scale: str,
                        methods: Sequence[str] | None = None) -> list[Path]:
    """Fig. 5: math — correctness reward, length reward and max response length over training steps.

    Median + IQR over seeds per method. Divergence (C5) is detected per seed with ``detect_divergence``
    (correctness vs max length, default settings, see :func:`divergence_steps`); each diverging seed gets a
    dashed vertical line in its method's colour, and the legend says which seeds diverged where, or
    "no divergence" (with a warning when seeds are too short for the rule, :data:`MIN_STEPS_FOR_DIVERGENCE`).
    """
    return _length_curves(steps, task, out_png, scale, LENGTH, "Length reward (mean, 1 iff ≤ limit)",
                          f"Fig. 5 — math ({task}): correctness, length reward and max length", methods)


def figure7_conditioned_curves(steps: pd.DataFrame, task: str, out_png: str | Path, scale: str,
                               methods: Sequence[str] | None = None) -> list[Path]:
    """Fig. 7: like :func:`figure5_math_curves`, with the length reward conditioned on correctness."""
    return _length_curves(steps, task, out_png, scale, LENGTH_CONDITIONED,
                          "Conditioned length reward (mean, 1 iff correct and ≤ limit)",
                          f"Fig. 7 — math ({task}), length reward conditioned on correctness", methods)


def figure6_weight_sweep(evals: pd.DataFrame, tasks_by_weight: dict[float, dict[str, str | None]],
                         out_png: str | Path, scale: str) -> list[Path]:
    """Fig. 6: accuracy and Exceed % against the length-reward weight, GRPO vs GDPO.

    ``tasks_by_weight`` maps each weight (e.g. 1, 0.75, 0.5, 0.25) to ``{"plain": task, "conditioned": task
    or None}``: plain length reward solid, conditioned dashed. Lines join the means over seeds of the eval.csv
    metrics ``acc`` and ``exceed``, each seed's value averaged over the task's benchmarks (:func:`sweep_table`).
    A point with at least :data:`MIN_SEEDS_FOR_BAR` seeds has its 95 % Student-t interval as a bar, clipped to
    0–100 % (:data:`PERCENT_RANGE`); one with fewer shows its seeds as crosses instead (a t-interval over 2 seeds
    spans more than the metric's range). The note says which was drawn. Weights decrease from left to right.
    """
    tables = {metric: sweep_table(evals, tasks_by_weight, metric) for metric in SWEEP_METRICS}
    weights = sorted({float(w) for w in tasks_by_weight})
    spacing = min(np.diff(weights)) if len(weights) > 1 else 1.0
    series = [(v, m) for v in ("plain", "conditioned") for m in SWEEP_METHODS
              if (tables["acc"]["variant"] == v).any()]
    offsets = {s: 0.04 * spacing * (i - (len(series) - 1) / 2) for i, s in enumerate(series)}  # keep bars apart

    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    titles = {"acc": "Accuracy (%)", "exceed": "Exceed (% responses over the length limit)"}
    low_limit, high_limit = PERCENT_RANGE
    clipped = seeds_shown = False
    for axis, metric in zip(axes, SWEEP_METRICS):
        table = tables[metric]
        for variant, method in series:
            points = table[(table["variant"] == variant) & (table["method"] == method)].sort_values("weight")
            x = points["weight"] + offsets[(variant, method)]
            axis.plot(x, points["mean"], color=method_color(method),
                      linestyle="-" if variant == "plain" else "--", marker="o", markersize=4,
                      label=f"{method_label(method)} · "
                            f"{'length' if variant == 'plain' else 'conditioned length'}")
            barred = (points["n_seeds"] >= MIN_SEEDS_FOR_BAR).to_numpy()
            if barred.any():
                low = points["low"][barred].clip(low_limit, high_limit)
                high = points["high"][barred].clip(low_limit, high_limit)
                clipped |= bool((low != points["low"][barred]).any() or (high != points["high"][barred]).any())
                means = points["mean"][barred]
                axis.errorbar(x[barred], means, yerr=np.vstack([means - low, high - means]), fmt="none",
                              ecolor=method_color(method), capsize=3)
            for position, values in zip(x[~barred], points["seed_values"][~barred]):
                axis.plot([position] * len(values), values, linestyle="none", marker="x", markersize=5,
                          color=method_color(method))
                seeds_shown = True
        axis.set_xticks(weights)
        axis.set_xticklabels([f"{w:g}" for w in weights])
        axis.invert_xaxis()
        axis.set_xlabel("length-reward weight")
        axis.set_ylabel(titles[metric], fontsize=9)
        axis.set_title(titles[metric], fontsize=10)
        axis.grid(True, alpha=0.3)
    counts = sorted(set(tables["acc"]["n_seeds"]))
    seeds = f"{counts[0]} seed{'s' if counts[0] != 1 else ''}" if len(counts) == 1 else \
        f"{counts[0]}–{counts[-1]} seeds per point"
    drawn = []
    if counts[-1] >= MIN_SEEDS_FOR_BAR:
        drawn.append("bars: 95 % t-interval over seeds"
                     + (", clipped to the metric's range 0–100 %" if clipped else ""))
    if seeds_shown:
        drawn.append(f"×: each seed, where a point has fewer than {MIN_SEEDS_FOR_BAR} seeds (no interval)")
    note = (f"scale {scale} · {seeds} · mean over seeds, each seed averaged over the task's benchmarks\n"
            + " · ".join(drawn))
    return _finish(figure, "Fig. 6 — math: effect of the length-reward weight (solid: plain length reward, "
                   "dashed: conditioned on correctness)", note, out_png)


def figure8_batch_step_ablation(steps: pd.DataFrame, task: str, out_png: str | Path, scale: str,
                                correctness_metric: str | None = None) -> list[Path]:
    """Fig. 8: GDPO vs GDPO without its batch-level normalisation — correctness reward over steps.

    Every seed is a thin line (failing to converge happens per seed) and the median over seeds a thick one.
    ``correctness_metric`` defaults to ``rewards/correct/mean``, or ``rewards/pass/mean`` for a code task.
    """
    if correctness_metric is None:
        rows = _task_rows(steps, task, STEPS_CSV)
        logged = [m for m in (CORRECTNESS, PASS_RATE) if m in rows.columns and rows[m].notna().any()]
        correctness_metric = logged[0] if logged else CORRECTNESS  # the missing-metric error names the default
    curves = per_seed_curves(steps, task, correctness_metric, ABLATION_METHODS)
    table = median_iqr(steps, task, correctness_metric, ABLATION_METHODS)
    figure, axis = plt.subplots(figsize=(6.5, 4))
    handles = []
    for method in ABLATION_METHODS:
        for _, run in curves[curves["method"] == method].groupby("seed"):
            axis.plot(run["step"], run["value"], color=method_color(method), linewidth=0.7, alpha=0.45)
        line = table[table["method"] == method]
        axis.plot(line["step"], line["median"], color=method_color(method), linewidth=2.2)
        handles.append(Line2D([], [], color=method_color(method), linewidth=2.2,
                              label=f"{method_label(method)} (median)"))
    handles.append(Line2D([], [], color="0.4", linewidth=0.7, alpha=0.6, label="one seed"))
    axis.set_xlabel("training step")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_ylabel(correctness_metric, fontsize=8)
    axis.set_title("Correctness reward (mean)", fontsize=10)
    axis.grid(True, alpha=0.3)
    return _finish(figure, f"Fig. 8 — batch-step ablation ({task}): GDPO with and without batch normalisation",
                   f"{seeds_note(scale, _seed_counts(curves))} · thin: each seed, thick: median over seeds",
                   out_png, legend_handles=handles)
