"""Summaries of bench results: per-seed outcomes → means with 95 % confidence intervals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gdpo.curve_events import final_window

#: Bootstrap resamples per confidence interval.
BOOTSTRAP_RESAMPLES = 4000
#: Seed of the bootstrap (summaries are deterministic).
BOOTSTRAP_SEED = 20260105
_Z_95 = 1.959963984540054
_KEYS = ["study", "variant", "method"]


def bootstrap_interval(values: np.ndarray, rng: np.random.Generator, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (one value per seed)."""
    values = np.asarray(values, dtype=float)
    if len(values) == 1:
        return float(values[0]), float(values[0])
    resamples = values[rng.integers(0, len(values), size=(BOOTSTRAP_RESAMPLES, len(values)))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(resamples, [tail, 1 - tail])
    return float(low), float(high)


def wilson_interval(events: int, trials: int, z: float = _Z_95) -> tuple[float, float]:
    """Wilson score interval of a rate ``events / trials`` (95 % by default)."""
    if trials == 0:
        return math.nan, math.nan
    rate = events / trials
    denominator = 1 + z**2 / trials
    centre = (rate + z**2 / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z**2 / (4 * trials**2)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def per_seed_outcomes(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (study, variant, method, reward, seed): ``final_success`` (mean success over the last
    10 % of the run's steps), ``auc`` (mean success over all steps, i.e. the area under the learning curve
    divided by the number of steps), ``final_mean`` (reward as paid, same window), ``n_final_samples``
    (sampled completions behind ``final_success``: window steps × prompts × rollouts; the ledger's item
    count where seeds tie), ``prompts`` (per batch), ``steps`` (of the run), the seed's outcome and
    ``positive_control`` (True for a positive control's cell, False otherwise and for results written before
    the column existed)."""
    keys = [*_KEYS, "reward", "seed"]
    num_steps = df.groupby(_KEYS)["step"].transform("max") + 1
    window = num_steps.map(final_window)
    in_final = df["step"] >= num_steps - window
    grouped = df.groupby(keys, sort=False)
    table = grouped.agg(auc=("success", "mean"), outcome=("outcome", "first"),
                        outcome_event=("outcome_event", "first"), outcome_step=("outcome_step", "first"),
                        distinct_per_group=("distinct_per_group", "mean"),
                        exact_distinct_groups=("exact_distinct_groups", "first"))
    final = df[in_final].groupby(keys, sort=False).agg(final_success=("success", "mean"),
                                                       final_mean=("mean", "mean"), final_steps=("step", "size"))
    if {"prompts", "generations"} <= set(df.columns):
        shape = df.groupby(keys, sort=False)[["prompts", "generations"]].first()
        final["n_final_samples"] = final["final_steps"] * shape["prompts"] * shape["generations"]
        final["prompts"] = shape["prompts"]
    final["steps"] = num_steps.groupby([df[k] for k in keys], sort=False).first()
    table = table.join(final.drop(columns="final_steps")).reset_index()
    table.insert(len(keys), "positive_control", _control_flags(df, table))
    return table


def _control_flags(df: pd.DataFrame, table: pd.DataFrame) -> np.ndarray:
    """``positive_control`` of each (study, variant) row of ``table``, read from ``df`` (False without the column)."""
    if "positive_control" not in df:
        return np.zeros(len(table), dtype=bool)
    marked = df["positive_control"].eq(True)  # missing (a CSV without the column concatenated) → False
    flags = marked.groupby([df["study"], df["variant"]], sort=False).any()
    index = pd.MultiIndex.from_frame(table[["study", "variant"]])
    return flags.reindex(index, fill_value=False).to_numpy(dtype=bool)


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    """Per (study, variant, method, reward): mean over seeds with 95 % CIs.

    Confidence intervals of means are **percentile bootstrap** intervals over seeds
    (:data:`BOOTSTRAP_RESAMPLES` resamples, fixed seed, so the table is deterministic); rates use the
    **Wilson** score interval.

    Columns: ``study, variant, method, reward, positive_control`` (a positive control's cell), ``seeds``; ``final_success`` (+ ``_ci_low``, ``_ci_high``):
    mean over seeds of the success averaged over the last 10 % of steps; ``auc`` (+ CI): mean over seeds
    of the success averaged over all steps (area under the learning curve per step); ``final_mean``:
    reward as paid over the last 10 % of steps; ``distinct_per_group``: mean over steps and seeds of the
    live distinct advantages per group; ``exact_distinct_groups``: the exact analysis' count where
    attached; and the per-study extra outcome, shared by the rewards of one (variant, method):
    ``outcome`` (``failure_to_converge``, ``collapse`` or ``none``), ``outcome_events`` (seeds with the
    event), ``outcome_rate`` (+ Wilson CI), ``outcome_median_step`` (median step of the event, collapse).
    """
    seeds = per_seed_outcomes(df)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    rows = []
    for key, group in seeds.groupby([*_KEYS, "reward"], sort=False):
        row = dict(zip([*_KEYS, "reward"], key))
        row["positive_control"] = bool(group["positive_control"].iloc[0])
        row["seeds"] = int(group["seed"].nunique())
        for column in ("final_success", "auc"):
            values = group[column].to_numpy()
            low, high = bootstrap_interval(values, rng)
            row[column] = float(values.mean())
            row[f"{column}_ci_low"] = low
            row[f"{column}_ci_high"] = high
        row["final_mean"] = float(group["final_mean"].mean())
        row["distinct_per_group"] = float(group["distinct_per_group"].mean())
        row["exact_distinct_groups"] = float(group["exact_distinct_groups"].iloc[0])
        outcome = str(group["outcome"].iloc[0])
        row["outcome"] = outcome
        if outcome != "none":
            events = int(group["outcome_event"].astype(bool).sum())
            low, high = wilson_interval(events, len(group))
            row.update(outcome_events=events, outcome_rate=events / len(group), outcome_ci_low=low,
                       outcome_ci_high=high, outcome_median_step=float(group["outcome_step"].median()))
        else:
            row.update(outcome_events=np.nan, outcome_rate=np.nan, outcome_ci_low=np.nan, outcome_ci_high=np.nan,
                       outcome_median_step=np.nan)
        rows.append(row)
    return pd.DataFrame(rows)
