"""Power of deciding C5 on its continuous per-seed measures instead of the divergence rate, at the cpu-evidence
math design (500 steps, 8 rollouts per step), by simulation.

Each simulated run's correctness per step is the mean of 8 Bernoulli rewards on a rising logistic curve
(0.3 to 0.5); its max completion length wanders 10 % around 60 tokens under the 128-token cap. A GRPO run under
the effect falls from a random step between 60 % and 80 % of the run: correctness × (1 − fall), max length ×
growth; GDPO runs do not. Per run, :func:`gdpo.curve_events.divergence_measures`; per seed, GRPO − GDPO;
both measures' paired t-intervals at the Bonferroni level over the two (97.5 %) must lie above 0 and reach δ
(the divergence detector's own thresholds: a 10 % fall, a 1.2 × length, log 0.18), the contract's
*reproduced*. Prints the share reproduced per (fall, growth) and seed count, and the measures' spread over
runs without an effect.

    python benchmarks/c5_continuous_power.py [--replicates 300]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from gdpo.curve_events import divergence_measures

STEPS, ROLLOUTS, CAP = 500, 8, 128
DELTAS = {"correctness_fall": 0.10, "length_growth": math.log(1.2)}


def simulated_run(rng: np.random.Generator, fall: float = 0.0, growth: float = 1.0) -> dict[str, float]:
    t = np.arange(STEPS) / (STEPS - 1)
    rate = 0.3 + 0.2 / (1 + np.exp(-10 * (t - 0.3)))
    length = np.full(STEPS, 60.0)
    if fall > 0 or growth > 1:
        start = int(rng.integers(int(0.6 * STEPS), int(0.8 * STEPS)))
        rate[start:] *= 1 - fall
        length[start:] *= growth
    correctness = rng.binomial(ROLLOUTS, rate) / ROLLOUTS
    max_length = np.minimum(CAP, length * (1 + 0.1 * rng.standard_normal(STEPS)))
    return divergence_measures(correctness, max_length)


def power(seeds: int, fall: float, growth: float, replicates: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    quantile = stats.t.ppf(1 - 0.025 / 2, seeds - 1)
    reproduced = 0
    for _ in range(replicates):
        grpo = [simulated_run(rng, fall, growth) for _ in range(seeds)]
        gdpo = [simulated_run(rng) for _ in range(seeds)]
        parts = []
        for measure, delta in DELTAS.items():
            d = np.array([a[measure] - b[measure] for a, b in zip(grpo, gdpo)])
            half = quantile * d.std(ddof=1) / math.sqrt(seeds)
            parts.append(d.mean() - half > 0 and d.mean() + half >= delta)
        reproduced += all(parts)
    return reproduced / replicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=300)
    args = parser.parse_args()
    seed_counts = (3, 4, 5, 8, 12)
    print("fall  growth  " + "  ".join(f"{k:>2} seeds" for k in seed_counts))
    for fall, growth in ((0.10, 1.2), (0.25, 1.5), (0.5, 2.0)):
        row = [power(k, fall, growth, args.replicates) for k in seed_counts]
        print(f"{fall:4.2f}  {growth:6.1f}  " + "  ".join(f"{p:8.2f}" for p in row), flush=True)
    rng = np.random.default_rng(1)
    null = [simulated_run(rng) for _ in range(200)]
    print("spread of one run without an effect (sd over 200 runs): "
          + ", ".join(f"{m} {np.std([r[m] for r in null]):.3f}" for m in DELTAS))


if __name__ == "__main__":
    main()
