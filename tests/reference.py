"""Loop reference of every advantage method and convention, written from PAPER.md §1 with plain Python.

Deliberately naive (lists, ``statistics``, one rollout at a time, token-weighted whitening by literally
repeating each rollout once per token) so that it shares no code or trick with ``gdpo.advantages``.
"""

from __future__ import annotations

import math
import statistics

from gdpo.advantages import Convention, get_convention


def _normalise_group(values: list[float | None], convention: Convention, scale: bool) -> list[float]:
    valid = [v for v in values if v is not None]
    if not valid:
        return [0.0] * len(values)
    if len(valid) == 1:
        if convention.singleton_group == "identity":  # mean 0, std 1, plus ε when dividing
            return [0.0 if v is None else v / (1.0 + convention.group_eps) if scale else v for v in values]
        return [0.0] * len(values)
    if len(set(valid)) == 1:
        return [0.0] * len(values)
    out = []
    for index, value in enumerate(values):
        if value is None:
            out.append(0.0)
            continue
        if convention.leave_one_out:
            others = [v for j, v in enumerate(values) if j != index and v is not None]
            baseline = statistics.fmean(others)
            if not scale:
                out.append(value - baseline)
                continue
            spread = statistics.stdev(others) if len(others) >= 2 else 0.0
            divide = spread > 0 and len(set(others)) > 1
            out.append((value - baseline) / (spread + convention.group_eps) if divide else value - baseline)
        else:
            mean = statistics.fmean(valid)
            if scale:
                out.append((value - mean) / (statistics.stdev(valid) + convention.group_eps))
            else:
                out.append(value - mean)
    return out


def _whiten(values: list[float], has_reward: list[bool], lengths: list[float] | None, convention: Convention) -> list[float]:
    if convention.batch_whitening == "token":
        units = [v for v, ok, length in zip(values, has_reward, lengths) if ok for _ in range(int(length))]
    elif convention.batch_whitening == "response":
        units = [v for v, ok, length in zip(values, has_reward, lengths) if ok and length > 0]
    else:
        units = [v for v, ok in zip(values, has_reward) if ok]
    if len(units) < 2 or len(set(units)) == 1:
        return [0.0] * len(values)
    mean = statistics.fmean(units)
    variance = statistics.variance(units)
    if convention.batch_eps_in_sqrt:
        denominator = math.sqrt(variance + convention.batch_eps)
    else:
        denominator = math.sqrt(variance) + convention.batch_eps
    return [(v - mean) / denominator if ok else 0.0 for v, ok in zip(values, has_reward)]


#: Per-reward methods, their GRPO counterpart (one reward under single_reward="grpo"), whether they
#: divide by the per-reward std and whether they end with the batch step.
_PER_REWARD = {"gdpo": ("grpo", True, True), "gdpo_nobn": ("grpo", True, False),
               "gdpo_nostd": ("grpo_nostd", False, True)}


def reference_advantages(rewards, num_generations, method, weights=None, convention="trl",
                         response_lengths=None, batch_step=True):
    """Same contract as ``compute_advantages`` (rewards as nested lists, None or NaN = no reward)."""
    convention = get_convention(convention)
    rows = [[None if (r is None or (isinstance(r, float) and math.isnan(r))) else float(r) for r in row]
            for row in rewards]
    num_rewards = len(rows[0])
    weights = [1.0] * num_rewards if weights is None else [float(w) for w in weights]
    if convention.missing_rewards == "zero":
        rows = [[0.0 if r is None else r for r in row] for row in rows]
    counts = [any(r is not None for r in row) or convention.unscored_rollouts == "zero" for row in rows]
    groups = range(0, len(rows), num_generations)
    if method in _PER_REWARD and num_rewards == 1:
        if convention.single_reward == "error":
            raise ValueError("single reward refused")
        if convention.single_reward == "grpo":
            method = _PER_REWARD[method][0]

    if method in ("grpo", "grpo_nostd"):
        sums = [sum(w * r for w, r in zip(weights, row) if r is not None) if ok else None
                for row, ok in zip(rows, counts)]
        out = []
        for start in groups:
            out += _normalise_group(sums[start:start + num_generations], convention, scale=method == "grpo")
    elif method in _PER_REWARD:
        _, scale, whiten = _PER_REWARD[method]
        out = [0.0] * len(rows)
        for column in range(num_rewards):
            for start in groups:
                values = [row[column] for row in rows[start:start + num_generations]]
                for offset, a in enumerate(_normalise_group(values, convention, scale=scale)):
                    out[start + offset] += weights[column] * a
        if whiten and batch_step:
            out = _whiten(out, counts, response_lengths, convention)
    else:
        raise ValueError(method)
    return [a if ok else 0.0 for a, ok in zip(out, counts)]
