"""IQM, stratified bootstrap and probability of improvement (gdpo.reporting.aggregates), as rliable defines them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gdpo.reporting.aggregates import (
    aggregate_markdown, aggregate_table, iqm, probability_of_improvement, stratified_interval,
)


def test_iqm_is_the_mean_of_the_middle_half():
    assert iqm([1, 2, 3, 4, 5, 6, 7, 100]) == pytest.approx(4.5)  # 3, 4, 5, 6: the outlier is cut
    assert iqm(np.array([[1.0, 2.0], [3.0, 4.0]])) == pytest.approx(2.5)  # pooled over every element


def test_probability_of_improvement_counts_ties_as_half_and_follows_the_direction():
    # pairs (x, y): (1, 2) loses, (1, 0) wins, (2, 2) ties, (2, 0) wins
    assert probability_of_improvement([np.array([1.0, 2.0])], [np.array([2.0, 0.0])]) == pytest.approx(0.625)
    assert probability_of_improvement([np.array([1.0, 2.0])], [np.array([2.0, 0.0])], -1) == pytest.approx(0.375)
    # averaged over tasks, not pooled: task 1 all wins, task 2 all losses
    assert probability_of_improvement([np.array([9.0]), np.array([0.0])], [np.array([1.0]), np.array([5.0])]) == 0.5


def test_probability_of_improvement_vectorised_over_resamples_equals_the_loop():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, size=(7, 3)), rng.integers(0, 4, size=(7, 5))
    batched = probability_of_improvement([x], [y])
    assert batched == pytest.approx([probability_of_improvement([row_x], [row_y]) for row_x, row_y in zip(x, y)])


def test_the_bootstrap_is_stratified_by_task():
    """Runs agree within each task but tasks differ: resampling within tasks can never change the pooled IQM,
    whereas pooling the runs first would (a point interval proves the strata were kept)."""
    tasks = [np.full(4, 10.0), np.full(4, 50.0), np.full(4, 90.0)]
    low, high = stratified_interval(tasks, lambda *s, axis=-1: iqm(np.concatenate(s, axis=axis), axis=axis))
    assert low == high == pytest.approx(50.0)
    pooled = np.concatenate(tasks)
    low, high = stratified_interval([pooled], lambda s, axis=-1: iqm(s, axis=axis))
    assert low < 50.0 < high


def test_no_interval_from_a_single_run():
    assert all(math.isnan(v) for v in stratified_interval([np.array([1.0]), np.array([2.0, 3.0])], np.mean))


def _evals(rows):
    return pd.DataFrame(rows, columns=["task", "method", "seed", "benchmark", "metric", "value"])


def test_aggregate_table_rows_direction_and_pooling():
    rows = []
    for task, shift in (("m15", 0.0), ("m7", 5.0), ("m_w025", 0.0)):
        for seed in range(5):
            rows += [(task, "gdpo", seed, "b", "acc", 52 + shift + seed), (task, "grpo", seed, "b", "acc", 50 + shift + seed),
                     (task, "gdpo", seed, "b", "exceed", 1.0), (task, "grpo", seed, "b", "exceed", 9.0 + seed),
                     (task, "base", seed, "b", "acc", 10.0)]
    families = {"m15": "math", "m7": "math", "m_w025": "math"}
    table = aggregate_table(_evals(rows), None, families, {"table3 setups": ["m15", "m7"]})
    poi = table[table["statistic"] == "P(improvement)"].set_index(["scope", "metric"])["value"]
    # GDPO 52..56 vs GRPO 50..54: of 25 pairs, 2 + 3 + 4 + 5 + 5 won and 3 tied
    assert poi[("m15", "acc")] == pytest.approx((19 + 0.5 * 3) / 25)
    assert poi[("m15", "exceed")] == 1.0  # lower is better: GDPO's 1 % beats every GRPO run
    assert ("table3 setups (m15, m7)", "acc") in poi.index  # Table 3's models pooled...
    assert not table["scope"].str.contains("m_w025,").any()  # ...a weight variant never is
    assert "base" not in set(table["method"])
    iqm_rows = table[(table["statistic"] == "IQM") & (table["scope"] == "m15") & (table["metric"] == "acc")]
    assert iqm_rows.set_index("method")["value"].to_dict() == pytest.approx({"gdpo": 54.0, "grpo": 52.0})
    assert (iqm_rows["low"] < iqm_rows["value"]).all() and (iqm_rows["value"] < iqm_rows["high"]).all()
    assert "stratified-bootstrap" in aggregate_markdown(table, "test")


def test_few_runs_are_flagged():
    rows = [("t", m, s, "b", "acc", v + s) for m, v in (("gdpo", 60.0), ("grpo", 50.0)) for s in range(3)]
    table = aggregate_table(_evals(rows), None, {"t": "math"})
    assert table["note"].str.contains("3 runs in a task: the bootstrap interval under-covers").all()
