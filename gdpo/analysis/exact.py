"""Exact collapse analysis (claims C1, C2): distinct advantage groups under binary rewards.

A *group* is the multiset of the G reward vectors of one prompt's rollouts, each in {0,1}^n. Its
*advantage group* is the sorted tuple of the G advantages. We enumerate every group and count the
distinct advantage groups each method produces (PAPER.md Fig. 3, extended to the whole grid).

Advantages come from :func:`gdpo.advantages.compute_advantages` (convention ``exact``: the paper's
equations without ε). GDPO and GDPO w/o std are counted before their batch step (``batch_step=False``):
the batch step is one positive affine map applied to every group of the batch, so it cannot merge or
split groups. Centring is linear, so GDPO w/o std before its batch step is GRPO w/o std's advantage and
its counts equal GRPO w/o std's: the resolution GDPO adds comes from the per-reward std.

Speed: the sorted advantage tuple does not change when rollouts (rows) are permuted, nor — with equal
weights — when rewards (columns) are permuted. So every group is reached either as a multiset of G rows
from {0,1}^n or as a multiset of n columns from {0,1}^G, and we enumerate whichever is smaller
(C(2^n+G−1, G) vs C(2^G+n−1, n)); all groups of one grid point go through the registry in one
vectorised call.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import torch

from gdpo.advantages import compute_advantages
from gdpo.methods import Method

#: Methods counted, in the paper's order (then GDPO w/o std, beyond the paper), and the registry method each
#: is computed with, before any batch step.
COUNTED_METHODS = {Method.GRPO: Method.GRPO, Method.GRPO_NOSTD: Method.GRPO_NOSTD, Method.GDPO: Method.GDPO,
                   Method.GDPO_NOSTD: Method.GDPO_NOSTD}
#: Decimals kept when comparing advantage tuples.
DEFAULT_DECIMALS = 6
#: The paper's Fig. 3 grid: rollouts at n = 2 and rewards at G = 4; the paper stops GDPO at G = 11, n = 6.
PAPER_MAX_ROLLOUTS_GDPO = 11
PAPER_MAX_REWARDS_GDPO = 6


def multisets(num_items: int, size: int) -> np.ndarray:
    """All multisets of ``size`` items from ``range(num_items)`` as sorted index rows.

    Returns: (C(num_items + size − 1, size), size) int64, in lexicographic order.
    """
    count = math.comb(num_items + size - 1, size)
    flat = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations_with_replacement(range(num_items), size)),
        dtype=np.int64,
        count=count * size,
    )
    return flat.reshape(count, size)


def _bits(codes: np.ndarray, width: int) -> np.ndarray:
    """(…,) integer codes → (…, width) {0,1} bits, most significant first."""
    shifts = np.arange(width - 1, -1, -1)
    return ((codes[..., None] >> shifts) & 1).astype(np.float64)


def enumeration_size(num_rollouts: int, num_rewards: int) -> dict[str, int]:
    """How many groups each enumeration visits: by rows (multisets of G vectors) or by columns."""
    return {
        "rows": math.comb(2**num_rewards + num_rollouts - 1, num_rollouts),
        "columns": math.comb(2**num_rollouts + num_rewards - 1, num_rewards),
    }


def enumerate_groups(num_rollouts: int, num_rewards: int, by: str | None = None) -> np.ndarray:
    """Every group of G binary reward vectors, up to row and column permutations.

    Args:
        num_rollouts: G.
        num_rewards: n.
        by: ``"rows"``, ``"columns"``, or None for the smaller enumeration.

    Returns:
        (M, G, n) float64 reward matrices in {0, 1}; M is the size of the chosen enumeration.
    """
    sizes = enumeration_size(num_rollouts, num_rewards)
    by = by or min(sizes, key=sizes.get)
    if by == "rows":
        return _bits(multisets(2**num_rewards, num_rollouts), num_rewards)
    if by == "columns":
        return np.swapaxes(_bits(multisets(2**num_rollouts, num_rewards), num_rollouts), 1, 2)
    raise ValueError(f"by must be 'rows', 'columns' or None, got {by!r}.")


def advantage_groups(groups: np.ndarray, method: str, decimals: int = DEFAULT_DECIMALS) -> np.ndarray:
    """Sorted, rounded advantage tuple of each group.

    Args:
        groups: (M, G, n) reward matrices.
        method: a key of :data:`COUNTED_METHODS`.
        decimals: rounding before comparison.

    Returns:
        (M, G) float64, each row sorted ascending; −0.0 normalised to 0.0.
    """
    num_groups, num_rollouts, num_rewards = groups.shape
    rewards = torch.from_numpy(groups.reshape(num_groups * num_rollouts, num_rewards))
    advantages = compute_advantages(rewards, num_rollouts, COUNTED_METHODS[method], convention="exact",
                                    batch_step=False)
    tuples = np.sort(advantages.numpy().reshape(num_groups, num_rollouts), axis=1)
    return np.round(tuples, decimals) + 0.0


def count_distinct(num_rollouts: int, num_rewards: int, method: str, decimals: int = DEFAULT_DECIMALS) -> int:
    """Number of distinct advantage groups of ``method`` over every binary group (G, n)."""
    groups = enumerate_groups(num_rollouts, num_rewards)
    return int(np.unique(advantage_groups(groups, method, decimals), axis=0).shape[0])


def grid_points(max_rollouts: int = 16, max_rewards: int = 8, rewards_for_rollout_axis: int = 2,
                rollouts_for_reward_axis: int = 4) -> list[tuple[str, int, int]]:
    """The grid of Fig. 3: (axis, G, n) for G = 2..max_rollouts at fixed n and n = 2..max_rewards at fixed G."""
    points = [("rollouts", g, rewards_for_rollout_axis) for g in range(2, max_rollouts + 1)]
    points += [("rewards", rollouts_for_reward_axis, n) for n in range(2, max_rewards + 1)]
    return points


def distinct_counts_table(points: list[tuple[str, int, int]], decimals: int = DEFAULT_DECIMALS) -> pd.DataFrame:
    """Distinct advantage groups for every method at every grid point.

    Returns:
        DataFrame with columns ``method, rollouts, rewards, distinct_groups, reward_combinations, axis``;
        ``reward_combinations`` = C(2^n + G − 1, G), the number of distinct groups of binary rewards.
        A point shared by both axes (G = 4, n = 2) appears once per axis.
    """
    rows = []
    for axis, num_rollouts, num_rewards in points:
        groups = enumerate_groups(num_rollouts, num_rewards)
        for method in COUNTED_METHODS:
            tuples = advantage_groups(groups, method, decimals)
            rows.append(
                {
                    "method": method,
                    "rollouts": num_rollouts,
                    "rewards": num_rewards,
                    "distinct_groups": int(np.unique(tuples, axis=0).shape[0]),
                    "reward_combinations": enumeration_size(num_rollouts, num_rewards)["rows"],
                    "axis": axis,
                }
            )
    return pd.DataFrame(rows)


def figure2_table(decimals: int = 4) -> pd.DataFrame:
    """Figure 2: every reward combination of G = 2 rollouts with n = 2 binary rewards.

    Returns:
        One row per group (10 rows): the two rollouts' reward vectors and totals, and each method's
        advantage pair (GDPO and GDPO w/o std before their batch step), rounded to ``decimals``.
    """
    groups = enumerate_groups(2, 2, by="rows")
    table = pd.DataFrame(
        {
            "rollout_1": [f"({int(g[0, 0])},{int(g[0, 1])})" for g in groups],
            "rollout_2": [f"({int(g[1, 0])},{int(g[1, 1])})" for g in groups],
            "totals": [f"({int(g[0].sum())},{int(g[1].sum())})" for g in groups],
        }
    )
    rewards = torch.from_numpy(groups.reshape(-1, 2))
    for method, registry_method in COUNTED_METHODS.items():
        advantages = compute_advantages(rewards, 2, registry_method, convention="exact", batch_step=False)
        advantages = advantages.numpy().reshape(-1, 2)
        advantages = np.round(advantages, decimals) + 0.0
        table[f"{method}_advantage"] = [f"({a:.{decimals}f},{b:.{decimals}f})" for a, b in advantages]
    return table


def naive_count_distinct(num_rollouts: int, num_rewards: int, method: str, decimals: int = DEFAULT_DECIMALS) -> int:
    """Straightforward reference: itertools over row multisets, numpy formulas per multiset.

    Independent of the registry and of the symmetry argument; used as the test oracle and as the
    baseline of ``benchmarks/exact_counts.py``.
    """
    vectors = list(itertools.product((0.0, 1.0), repeat=num_rewards))
    seen = set()
    for multiset in itertools.combinations_with_replacement(vectors, num_rollouts):
        matrix = np.array(multiset)
        if method in (Method.GDPO, Method.GDPO_NOSTD):
            std = matrix.std(axis=0, ddof=1)
            centred = matrix - matrix.mean(axis=0)
            per_reward = np.divide(centred, std, out=np.zeros_like(centred), where=std > 0)
            advantages = (per_reward if method == Method.GDPO else centred).sum(axis=1)
        else:
            totals = matrix.sum(axis=1)
            advantages = totals - totals.mean()
            if method == Method.GRPO:
                std = totals.std(ddof=1)
                advantages = advantages / std if std > 0 else np.zeros_like(advantages)
        seen.add(tuple(np.round(np.sort(advantages), decimals) + 0.0))
    return len(seen)
