"""Beyond the paper: the gradient-noise law of the decoupled estimator, measured on the Bernoulli bench.

The PyPI package ``multireward-grpo`` states that the policy-gradient estimate of the decoupled (per-reward
normalised) estimator has a mean-squared-error floor ``(τ²/m)·wᵀCw``: m rollouts per batch, τ² = E‖∇log π‖²,
w the reward weights, C the rewards' correlation matrix. Here it is measured, not assumed:

- the estimator: ``gdpo_nobn`` (GDPO without its batch step: Σ_k w_k × the group z-score of reward k, sample std),
  from :func:`gdpo.advantages.compute_advantages`;
- the policy: the bench's step-0 policy (:class:`gdpo.sim.engine.PolicyGradientBench`, per-prompt logits), two
  binary rewards of success 0.5 whose step-0 correlation ρ the bench calibrates;
- the gradient: the bench's per-seed surrogate gradient with respect to the per-prompt logits, (P, D) per seed,
  i.e. (1/m)·Σ_rollouts A·∇log π with m = P·G;
- replicates: every seed draws an independent batch from the same policy, so the seeds' gradients are independent
  draws of the estimator; the measured floor is the unbiased estimate of E‖g − E g‖² (the estimator's variance:
  the noise the law describes);
- the prediction: τ² = E‖a − σ(ℓ)‖² = Σ_d σ(1 − σ) averaged over prompts (exact for the policy), C = [[1, ρ], [ρ, 1]]
  as designed (the measured pooled correlation is reported beside it).

:data:`GENERATIONS` × :data:`CORRELATIONS` is the grid, fixed before any result was seen.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gdpo.methods import Method
from gdpo.plotting import save_figure  # sets the Agg backend
from gdpo.sim.config import parse_study
from gdpo.sim.engine import PolicyGradientBench

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is set)

#: Rollouts per prompt G and step-0 reward correlations ρ measured (every combination).
GENERATIONS = (2, 4, 8, 16, 32)
CORRELATIONS = (-0.4, 0.0, 0.4, 0.8)
#: Reward weights w.
WEIGHTS = (1.0, 1.0)
#: Independent batches (seeds) per cell and prompts per batch.
REPLICATES = 512
PROMPTS = 32
#: The law "agrees" in a cell when the 95 % interval of measured / predicted lies within 1 ± this.
AGREEMENT = 0.1
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260107


def cell_config(generations: int, correlation: float, replicates: int = REPLICATES, prompts: int = PROMPTS):
    """The bench configuration of one cell: two binary rewards of step-0 success 0.5, correlation ρ."""
    study = {
        "name": "noise_law", "seeds": replicates, "steps": 1, "prompts": prompts, "generations": generations,
        "methods": [Method.GDPO_NOBN], "learning_rate": 0.01, "policy": "tabular", "prompt_spread": 0.0,
        "rewards": [{"name": "r1", "behaviours": 1, "rule": "all", "scale": "binary", "difficulty": 0.5,
                     "weight": WEIGHTS[0]},
                    {"name": "r2", "behaviours": 1, "rule": "all", "scale": "binary", "difficulty": 0.5,
                     "weight": WEIGHTS[1]}],
        "correlations": [{"rewards": ["r1", "r2"], "value": correlation}] if correlation else [],
    }
    return parse_study(study).variant("default")


def measure_cell(generations: int, correlation: float, replicates: int = REPLICATES,
                 prompts: int = PROMPTS) -> dict:
    """Measured and predicted gradient-noise floor of one (G, ρ) cell.

    Returns:
        ``generations, correlation, measured_correlation, m, tau2, wCw, predicted, measured, ratio,
        ratio_low, ratio_high`` (ratio = measured / predicted with a 95 % percentile-bootstrap interval over
        the replicates), ``zero_std_share`` (groups whose advantage is 0 because a reward is equal across them).
    """
    config = cell_config(generations, correlation, replicates, prompts)
    bench = PolicyGradientBench(config, Method.GDPO_NOBN)
    logits = bench.logits()
    actions = bench.sample(0, logits)
    _, paid, lengths = bench.score(actions)
    advantages = bench.advantages(paid, lengths)
    gradients = bench.surrogate_gradient(actions, advantages, logits, None).reshape(replicates, -1).numpy()
    probability = torch.sigmoid(logits[0]).numpy()  # (P, D): every seed starts from the same policy
    tau2 = float((probability * (1 - probability)).sum(axis=1).mean())
    weights = np.asarray(WEIGHTS)
    design = np.array([[1.0, correlation], [correlation, 1.0]])
    w_c_w = float(weights @ design @ weights)
    m = prompts * generations
    predicted = tau2 / m * w_c_w
    deviations = gradients - gradients.mean(axis=0)
    per_replicate = (deviations**2).sum(axis=1) * replicates / (replicates - 1)  # unbiased E‖g − Eg‖² terms
    measured = float(per_replicate.mean())
    generator = np.random.default_rng(BOOTSTRAP_SEED)
    draws = generator.integers(0, replicates, size=(BOOTSTRAP_RESAMPLES, replicates))
    resampled = np.array([_floor(gradients[d]) for d in draws])
    low, high = np.quantile(resampled / predicted, [0.025, 0.975])
    flat = paid.reshape(-1, 2).numpy()
    zero_std = (paid.amax(dim=2) == paid.amin(dim=2)).any(dim=-1).to(torch.float64).mean().item()
    return {"generations": generations, "correlation": correlation,
            "measured_correlation": float(np.corrcoef(flat.T)[0, 1]), "m": m, "tau2": tau2, "wCw": w_c_w,
            "predicted": predicted, "measured": measured, "ratio": measured / predicted,
            "ratio_low": float(low), "ratio_high": float(high), "zero_std_share": zero_std}


def _floor(gradients: np.ndarray) -> float:
    """Unbiased estimate of E‖g − E g‖² from (R, k) replicate gradients."""
    return float(gradients.var(axis=0, ddof=1).sum())


def measure_law(generations=GENERATIONS, correlations=CORRELATIONS, replicates: int = REPLICATES,
                prompts: int = PROMPTS) -> pd.DataFrame:
    """:func:`measure_cell` over the grid, one row per cell."""
    with torch.no_grad():
        return pd.DataFrame([measure_cell(g, rho, replicates, prompts) for g in generations for rho in correlations])


def law_row(cells: pd.DataFrame) -> dict:
    """A ledger-style row: per cell, measured / predicted with its 95 % interval; the law agrees in a cell when
    the interval lies within 1 ± :data:`AGREEMENT`, disagrees when it lies outside, else undecided."""
    agree = (cells["ratio_low"] > 1 - AGREEMENT) & (cells["ratio_high"] < 1 + AGREEMENT)
    disagree = (cells["ratio_high"] < 1 - AGREEMENT) | (cells["ratio_low"] > 1 + AGREEMENT)
    verdict = ("agrees" if agree.all() else "disagrees" if disagree.all()
               else "agrees in part" if agree.any() else "disagrees in part" if disagree.any() else "undecided")
    parts = [f"G={int(r.generations)} ρ={r.correlation:+.1f}: {r.ratio:.3f} [{r.ratio_low:.3f}, {r.ratio_high:.3f}]"
             for r in cells.itertuples()]
    return {
        "claim": "gradient-noise floor (τ²/m)·wᵀCw of the decoupled estimator (multireward-grpo; beyond the paper)",
        "measured_value": "measured / predicted per cell (95 % bootstrap over replicates): " + "; ".join(parts),
        "comparison": f"agrees in a cell when the interval lies within 1 ± {AGREEMENT:g}; disagrees when outside",
        "verdict": verdict,
        "cells_agree": int(agree.sum()), "cells_disagree": int(disagree.sum()), "cells": len(cells),
        "run": f"Bernoulli bench, step-0 policy, gdpo_nobn, {PROMPTS} prompts, {int(cells['m'].min())}–"
               f"{int(cells['m'].max())} rollouts per batch, {REPLICATES} independent batches per cell",
    }


def plot_law(cells: pd.DataFrame, out_png: str | Path) -> list[Path]:
    """Measured against predicted (log-log, the identity dashed) and measured / predicted against G per ρ."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for index, (rho, group) in enumerate(cells.groupby("correlation")):
        color = f"C{index}"
        left.scatter(group["predicted"], group["measured"], color=color, label=f"ρ = {rho:+.1f}", s=18)
        right.errorbar(group["generations"], group["ratio"],
                       yerr=[group["ratio"] - group["ratio_low"], group["ratio_high"] - group["ratio"]],
                       color=color, marker="o", markersize=4, capsize=2, label=f"ρ = {rho:+.1f}")
    span = [cells[["predicted", "measured"]].min().min() * 0.8, cells[["predicted", "measured"]].max().max() * 1.2]
    left.plot(span, span, "k--", linewidth=0.8, label="measured = predicted")
    left.set(xscale="log", yscale="log", xlabel="predicted floor (τ²/m)·wᵀCw", ylabel="measured E‖g − Eg‖²")
    right.axhspan(1 - AGREEMENT, 1 + AGREEMENT, color="0.9", label=f"1 ± {AGREEMENT:g}")
    right.axhline(1, color="k", linewidth=0.8)
    right.set(xscale="log", xlabel="rollouts per prompt G", ylabel="measured / predicted (95 % CI)")
    right.minorticks_off()  # the log axis' minor labels would overprint the G ticks
    right.set_xticks(sorted(cells["generations"].unique()), labels=[str(g) for g in sorted(cells["generations"].unique())])
    for axis in (left, right):
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle(f"Gradient-noise law of the decoupled estimator (gdpo_nobn) — scale: sim (Bernoulli bench, "
                    f"step-0 policy), {REPLICATES} batches per cell", fontsize=10)
    figure.tight_layout()
    return save_figure(figure, out_png)


__all__ = ["CORRELATIONS", "GENERATIONS", "law_row", "measure_cell", "measure_law", "plot_law"]
