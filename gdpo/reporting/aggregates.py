"""Aggregate reporting the deep-RL field expects: interquartile mean (IQM) with stratified bootstrap intervals and the
probability of improvement, as rliable defines them (Agarwal et al., "Deep RL at the Edge of the Statistical
Precipice", NeurIPS 2021).

rliable itself does not import beside pandas 3 (our pin), so these are the same definitions on scipy:

- **IQM**: the mean of the middle 50 % of all runs' scores pooled over tasks (:func:`scipy.stats.trim_mean` with
  0.25 cut from each end, rliable's ``metrics.aggregate_iqm``).
- **Stratified bootstrap**: runs are resampled with replacement *within each task*, independently
  (:func:`scipy.stats.bootstrap` with one sample per task and ``paired=False`` does exactly this); the interval is
  the percentile interval (rliable's default) at :data:`LEVEL`.
- **Probability of improvement** P(X > Y): per task, the share of (run of X, run of Y) pairs in which X scores
  better, ties counted one half (the Mann–Whitney U statistic over n·m), averaged over tasks; its interval from the
  same stratified bootstrap over both methods' runs.

These are descriptive reports printed beside the ledger, not verdicts: a verdict needs the claim's contract
(:mod:`gdpo.reporting.contract`). With one run in a task no interval is formed (NaN, said in the ``note``).
Scores are in each metric's own unit (percentages for every evaluation metric here, so pooling over tasks of one
family needs no normalisation); "better" follows the metric's direction (Exceed and bug ratio: lower is better).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from gdpo.curve_events import final_window

#: Confidence level of the bootstrap intervals.
LEVEL = 0.95
#: Bootstrap resamples (rliable's examples use 2,000 for intervals).
RESAMPLES = 2000
#: Trimmed on each end for the IQM.
IQM_CUT = 0.25

#: Family → the evaluation metrics reported, with their direction (+1 higher is better, −1 lower is better).
EVAL_METRICS = {
    "tool_calling": {"avg": +1, "format": +1},
    "math": {"acc": +1, "exceed": -1},
    "code": {"pass": +1, "exceed": -1, "bug": -1},
    "arithmetic": {"acc": +1},
}
#: Training-curve metrics summarised by their final window (mean over the last
#: :data:`gdpo.curve_events.FINAL_FRACTION` of steps): the total reward, higher is better.
CURVE_METRICS = {"reward": +1}
#: Trained methods compared, (X, Y): P(X better than Y) is reported.
COMPARISONS = (("gdpo", "grpo"),)

AGGREGATE_COLUMNS = ["source", "scope", "metric", "direction", "statistic", "method", "runs", "value", "low", "high",
                     "note"]


def iqm(scores: np.ndarray | Sequence[float], axis: int | None = None) -> np.ndarray | float:
    """Interquartile mean of scores: pooled over every element (``axis`` None), or along ``axis``."""
    values = np.asarray(scores, dtype=float)
    if axis is None:
        return float(stats.trim_mean(np.ravel(values), IQM_CUT))
    return stats.trim_mean(values, IQM_CUT, axis=axis)


def probability_of_improvement(x_by_task: Sequence[np.ndarray], y_by_task: Sequence[np.ndarray],
                               direction: int = 1) -> np.ndarray | float:
    """P(X better than Y) averaged over tasks; ``x_by_task[t]`` (..., n_t) and ``y_by_task[t]`` (..., m_t) are one
    task's run scores (leading axes: bootstrap resamples); ties count one half; ``direction`` −1 means lower scores
    are better. A float for 1-d inputs, else an array over the leading axes."""
    shares = []
    for x, y in zip(x_by_task, y_by_task):
        diff = direction * (np.asarray(x, dtype=float)[..., :, None] - np.asarray(y, dtype=float)[..., None, :])
        shares.append(((diff > 0) + 0.5 * (diff == 0)).mean(axis=(-2, -1)))
    mean = np.mean(shares, axis=0)
    return float(mean) if np.ndim(mean) == 0 else mean


def stratified_interval(samples: Sequence[np.ndarray], statistic: Callable[..., float], seed: int = 0
                        ) -> tuple[float, float]:
    """Percentile interval at :data:`LEVEL` of ``statistic(*samples)`` under the stratified bootstrap (each sample,
    one task's runs of one method, resampled on its own). ``statistic`` is vectorised: it takes arrays whose last
    axis holds the runs (and scipy's ``axis=-1`` keyword). NaN, NaN when a sample has fewer than 2 runs."""
    if any(len(s) < 2 for s in samples):
        return math.nan, math.nan
    result = stats.bootstrap([np.asarray(s, dtype=float) for s in samples], statistic, n_resamples=RESAMPLES,
                             confidence_level=LEVEL, method="percentile", paired=False, vectorized=True, axis=-1,
                             rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


#: Runs per task below which the percentile bootstrap is known to under-cover (it cannot reach beyond the
#: observed runs); the rows say so.
FEW_RUNS = 5


def _note(low: float, high: float, why_none: str, fewest_runs: int) -> str:
    if math.isnan(low):
        return f"no interval: {why_none}"
    notes = ["every resample gives the same value (tied runs)"] if low == high else []
    if fewest_runs < FEW_RUNS:
        notes.append(f"{fewest_runs} runs in a task: the bootstrap interval under-covers")
    return "; ".join(notes)


def _rows_for(source: str, scope: str, metric: str, direction: int,
              scores: Mapping[str, Mapping[str, np.ndarray]]) -> list[dict]:
    """IQM per method and P(X better than Y) per comparison, for ``scores[method][task]`` (runs,)."""
    rows = []
    for method, by_task in scores.items():
        samples = [by_task[t] for t in sorted(by_task)]
        runs = sum(len(s) for s in samples)
        low, high = stratified_interval(samples, lambda *s, axis=-1: iqm(np.concatenate(s, axis=axis), axis=axis))
        rows.append({"source": source, "scope": scope, "metric": metric, "direction": direction, "statistic": "IQM",
                     "method": method, "runs": runs, "value": iqm(np.concatenate(samples)), "low": low, "high": high,
                     "note": _note(low, high, "a task has fewer than 2 runs", min(map(len, samples)))})
    for x, y in COMPARISONS:
        if x not in scores or y not in scores:
            continue
        tasks = sorted(set(scores[x]) & set(scores[y]))
        if not tasks:
            continue
        xs, ys = [scores[x][t] for t in tasks], [scores[y][t] for t in tasks]
        k = len(tasks)

        def poi(*samples: np.ndarray, axis: int = -1) -> np.ndarray | float:  # runs on the last axis
            return probability_of_improvement(samples[:k], samples[k:], direction)

        low, high = stratified_interval(xs + ys, poi)
        rows.append({"source": source, "scope": scope, "metric": metric, "direction": direction,
                     "statistic": "P(improvement)", "method": f"{x} > {y}", "runs": sum(map(len, xs + ys)),
                     "value": poi(*xs, *ys), "low": low, "high": high,
                     "note": _note(low, high, "a task has fewer than 2 runs per method", min(map(len, xs + ys)))})
    return rows


def _group_scores(frame: pd.DataFrame, value: str) -> dict[str, dict[str, np.ndarray]]:
    """method → task → (runs,) scores, runs ordered by seed."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for (method, task), group in frame.sort_values("seed").groupby(["method", "task"]):
        out.setdefault(method, {})[task] = group[value].to_numpy(dtype=float)
    return out


def run_eval_scores(evals: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One score per trained run (task, method, seed): ``metric`` averaged over the benchmarks that every trained
    method of the task reports (methods are never compared on different benchmark sets)."""
    rows = evals[(evals["metric"] == metric) & (evals["method"] != "base")].dropna(subset=["value"])
    scored = []
    for task, group in rows.groupby("task"):
        common = set.intersection(*(set(g["benchmark"]) for _, g in group.groupby("method")))
        kept = group[group["benchmark"].isin(common)]
        scored.append(kept.groupby(["task", "method", "seed"], as_index=False)["value"].mean())
    return pd.concat(scored, ignore_index=True) if scored else pd.DataFrame(columns=["task", "method", "seed", "value"])


def run_curve_scores(steps: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One score per trained run: the mean of ``metric`` over the run's final window of steps."""
    scored = []
    for (task, method, seed), group in steps.dropna(subset=[metric]).groupby(["task", "method", "seed"]):
        values = group.sort_values("step")[metric].to_numpy(dtype=float)
        scored.append({"task": task, "method": method, "seed": seed,
                       "value": float(values[-final_window(len(values)):].mean())})
    return pd.DataFrame(scored, columns=["task", "method", "seed", "value"])


def aggregate_table(evals: pd.DataFrame, steps: pd.DataFrame | None, families: Mapping[str, str],
                    groups: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """Every IQM and probability-of-improvement row for a scale's runs, per task and per group of tasks (tasks
    pooled, bootstrap stratified by task), for the family's evaluation metrics (:data:`EVAL_METRICS`) and the final
    window of its training curves (:data:`CURVE_METRICS`). ``families``: task → family; ``groups``: a name → the
    tasks pooled under it (e.g. a paper table's setups: the models of Table 3), used where it holds 2 or more tasks
    of one family (variants of one task, such as a length-weight sweep, are never pooled: they change the
    rewards)."""
    groups = {name: list(tasks) for name, tasks in (groups or {}).items()
              if len(set(tasks)) > 1 and len({families.get(t) for t in tasks}) == 1}
    rows = []
    for family in sorted(set(families.values())):
        tasks = [t for t, f in families.items() if f == family]
        sources = [("evaluation", metric, direction, run_eval_scores(evals, metric))
                   for metric, direction in EVAL_METRICS.get(family, {}).items()]
        if steps is not None:
            sources += [("training curve (final window)", metric, direction, run_curve_scores(steps, metric))
                        for metric, direction in CURVE_METRICS.items() if metric in steps.columns]
        for source, metric, direction, scores in sources:
            in_family = scores[scores["task"].isin(tasks)]
            for task in sorted(in_family["task"].unique()):
                rows += _rows_for(source, task, metric, direction,
                                  _group_scores(in_family[in_family["task"] == task], "value"))
            for name, pooled in groups.items():
                in_group = in_family[in_family["task"].isin(pooled)]
                if families[pooled[0]] == family and in_group["task"].nunique() > 1:
                    rows += _rows_for(source, f"{name} ({', '.join(sorted(set(pooled)))})", metric, direction,
                                      _group_scores(in_group, "value"))
    return pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)


def aggregate_markdown(table: pd.DataFrame, scale: str) -> str:
    """The table as Markdown, with a legend that says what the numbers are and are not."""
    lines = [f"# Aggregate metrics, scale {scale}", "",
             "Interquartile mean (IQM) of each method's runs and the probability that GDPO's run beats GRPO's, with "
             f"{LEVEL:.0%} stratified-bootstrap percentile intervals ({RESAMPLES:,} resamples; runs resampled within "
             "each task), as rliable defines them. Descriptive: the claims ledger's verdicts come from each claim's "
             "contract, not from this table. Exceed and bug: lower is better, and P(improvement) counts lower as "
             "better.", ""]
    if table.empty:
        return "\n".join(lines + ["No task has runs of two trained methods to aggregate.", ""])
    lines += ["| source | scope | metric | statistic | method | runs | value | interval | note |",
              "|---|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples(index=False):
        interval = "—" if math.isnan(row.low) else f"[{row.low:.2f}, {row.high:.2f}]"
        lines.append(f"| {row.source} | {row.scope} | {row.metric} | {row.statistic} | {row.method} | {row.runs} | "
                     f"{row.value:.2f} | {interval} | {row.note} |")
    return "\n".join(lines) + "\n"


def write_aggregates(evals: pd.DataFrame, steps: pd.DataFrame | None, families: Mapping[str, str], scale: str,
                     stem: str, groups: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """Write ``<stem>.csv`` and ``<stem>.md`` (:func:`aggregate_table`); returns their paths."""
    table = aggregate_table(evals, steps, families, groups)
    table.to_csv(f"{stem}.csv", index=False, float_format="%.4f")
    with open(f"{stem}.md", "w", encoding="utf-8") as handle:
        handle.write(aggregate_markdown(table, scale))
    return [f"{stem}.csv", f"{stem}.md"]
