"""Exact collapse analysis: counts against a naive enumeration, enumeration symmetry, Fig. 2 table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gdpo.analysis import exact


@pytest.mark.parametrize("method", list(exact.COUNTED_METHODS))
@pytest.mark.parametrize(("G", "n"), [(2, 2), (3, 2), (4, 2), (7, 2), (12, 2), (2, 3), (4, 3), (4, 4), (3, 5)])
def test_counts_match_naive_enumeration(method, G, n):
    assert exact.count_distinct(G, n, method) == exact.naive_count_distinct(G, n, method)


@pytest.mark.parametrize(("G", "n"), [(2, 2), (5, 2), (4, 3), (3, 5)])
def test_gdpo_nostd_counts_equal_grpo_nostd_counts(G, n):
    # Centring is linear: before the batch step GDPO w/o std is GRPO w/o std, group for group.
    groups = exact.enumerate_groups(G, n)
    np.testing.assert_allclose(exact.advantage_groups(groups, "gdpo_nostd"),
                               exact.advantage_groups(groups, "grpo_nostd"), rtol=0, atol=1e-6)
    assert exact.count_distinct(G, n, "gdpo_nostd") == exact.count_distinct(G, n, "grpo_nostd")


def test_paper_figure2_counts():
    # C1: G = 2, n = 2 → GRPO 2 groups, GDPO 3; GRPO w/o std also 3 ((0,0), (±0.5), (±1)).
    assert exact.count_distinct(2, 2, "grpo") == 2
    assert exact.count_distinct(2, 2, "gdpo") == 3
    assert exact.count_distinct(2, 2, "grpo_nostd") == 3


@pytest.mark.parametrize(("G", "n"), [(3, 3), (4, 4), (5, 3), (3, 4)])
def test_row_and_column_enumerations_give_the_same_advantage_groups(G, n):
    by_rows = np.unique(exact.advantage_groups(exact.enumerate_groups(G, n, "rows"), "gdpo"), axis=0)
    by_columns = np.unique(exact.advantage_groups(exact.enumerate_groups(G, n, "columns"), "gdpo"), axis=0)
    np.testing.assert_array_equal(by_rows, by_columns)


def test_enumeration_sizes_and_choice():
    assert exact.enumeration_size(4, 8) == {"rows": math.comb(259, 4), "columns": math.comb(23, 8)}
    assert exact.enumerate_groups(16, 2).shape == (math.comb(19, 16), 16, 2)  # rows are smaller here
    assert exact.enumerate_groups(4, 6).shape == (math.comb(21, 6), 4, 6)  # columns are smaller here
    with pytest.raises(ValueError, match="by must be"):
        exact.enumerate_groups(2, 2, by="diagonals")


def test_multisets_are_sorted_and_complete():
    rows = exact.multisets(3, 2)
    assert rows.tolist() == [[0, 0], [0, 1], [0, 2], [1, 1], [1, 2], [2, 2]]


@pytest.mark.parametrize(("G", "n"), [(6, 2), (4, 5)])
def test_counts_do_not_depend_on_rounding(G, n):
    for method in exact.COUNTED_METHODS:
        assert exact.count_distinct(G, n, method, decimals=6) == exact.count_distinct(G, n, method, decimals=10)


def test_distinct_counts_table_layout():
    table = exact.distinct_counts_table(exact.grid_points(max_rollouts=5, max_rewards=4))
    assert list(table.columns[:4]) == ["method", "rollouts", "rewards", "distinct_groups"]
    assert set(table["method"]) == {"grpo", "grpo_nostd", "gdpo", "gdpo_nostd"}
    assert len(table) == 4 * (4 + 3)
    row = table[(table.method == "gdpo") & (table.rollouts == 4) & (table.rewards == 2) & (table.axis == "rollouts")]
    assert int(row.distinct_groups.iloc[0]) == exact.naive_count_distinct(4, 2, "gdpo")
    assert int(row.reward_combinations.iloc[0]) == math.comb(4 + 4 - 1, 4)


def test_figure2_table():
    table = exact.figure2_table()
    assert len(table) == 10  # multisets of 2 vectors from {0,1}^2
    row = table[(table.rollout_1 == "(0,0)") & (table.rollout_2 == "(1,1)")].iloc[0]
    assert row.totals == "(0,2)"
    assert row.grpo_advantage == "(-0.7071,0.7071)"
    assert row.grpo_nostd_advantage == "(-1.0000,1.0000)"
    assert row.gdpo_advantage == "(-1.4142,1.4142)"
    assert row.gdpo_nostd_advantage == "(-1.0000,1.0000)"
    assert table.grpo_advantage.nunique() == 2 and table.gdpo_advantage.nunique() == 3
