"""Reward model of the bench: behaviours → rewards, calibrated to the study's difficulties and correlations.

Behaviours. Every rollout draws D independent Bernoulli behaviours (the policy's "decisions"). Reward k
owns ``m_k`` private behaviours; its base value ``f_k ∈ [0, 1]`` is 1 if ``all`` are set (0 otherwise)
or the ``fraction`` set. Rewards share nothing unless a correlation couples them.

Correlation coupling (design). Two rewards i, j with requested step-0 correlation ρ get a shared
multiplicative 0/1 factor built from extra *coupling behaviours*:

- ρ > 0, a shared gate g ~ Bern(s): ``v_i = g·f_i``, ``v_j = g·f_j`` (both need the same decision);
- ρ < 0, a gate g ~ Bern(s) and an inhibitor h ~ Bern(t): ``v_i = g·f_i``, ``v_j = (1 − g·h)·f_j``
  (the decision i needs blocks j unless the policy learns to switch h off: a resolvable conflict,
  like "reason longer" vs "stay short" with "reason concisely" as the way out);
- ρ = 0: no coupling.

With independent behaviours the step-0 moments are closed-form (``E[f]``, ``E[f²]`` per rule), so s (and t)
are solved numerically for the exact requested correlation, and each reward's private probability for
its exact difficulty ``E[v] = d``. Positive coupling reaches the Fréchet upper bound of two Bernoulli
rewards; a request outside what the two difficulties allow is refused with the attainable range.

Per-prompt difficulty. With ``prompt_spread = σ > 0`` the private behaviours of reward k on prompt p get a
fixed logit offset ``σ·z_{p,k}`` (z: standard-normal quantiles, shuffled per reward, the same for every
seed), plus a per-reward shift solved so that the *mean over prompts* of the step-0 success is still the
requested difficulty. The requested correlation is exact at σ = 0 and approximate otherwise (prompts of
different difficulty add a between-prompt component).
"""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import torch

from gdpo.sim.schema import RewardSpec, RunConfig

#: Private behaviour probabilities are kept at most this far from 1 (finite logits).
MAX_BEHAVIOUR_PROBABILITY = 0.995
#: Coupling behaviour probabilities are kept in [lo, hi].
COUPLING_BOUNDS = (0.02, 0.98)
#: Seed of the fixed per-prompt offsets (part of the "data set", identical across training seeds).
PROMPT_OFFSET_SEED = 20260105


def _moments(rule: str, behaviours: int, q: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """E[f], E[f²] of a reward's base value with ``behaviours`` i.i.d. Bern(q) behaviours."""
    q = np.asarray(q, dtype=float)
    if rule == "all":
        first = q**behaviours
        return first, first
    return q, q**2 + q * (1 - q) / behaviours


def _probability_for_mean(rule: str, behaviours: int, mean: np.ndarray | float) -> np.ndarray:
    """Behaviour probability q with E[f] = mean (inverse of the first moment)."""
    mean = np.asarray(mean, dtype=float)
    return mean ** (1.0 / behaviours) if rule == "all" else mean


def _max_mean(spec: RewardSpec) -> float:
    return float(_moments(spec.rule, spec.behaviours, MAX_BEHAVIOUR_PROBABILITY)[0])


def _correlation(spec_i: RewardSpec, spec_j: RewardSpec, sign: int, s, t=None):
    """Closed-form step-0 correlation of the coupled pair (arrays broadcast); NaN where infeasible.

    sign > 0: v_i = g f_i, v_j = g f_j. sign < 0: v_i = g f_i, v_j = (1 − g h) f_j, P(g) = s, P(h) = t.
    """
    s = np.asarray(s, dtype=float)
    coupling_j = s if sign > 0 else 1 - s * np.asarray(t, dtype=float)  # E[c_j] (= E[c_j²], c_j ∈ {0,1})
    d_i, d_j = spec_i.difficulty, spec_j.difficulty
    mean_i, mean_j = d_i / s, d_j / coupling_j
    feasible = (mean_i <= _max_mean(spec_i)) & (mean_j <= _max_mean(spec_j))
    with np.errstate(invalid="ignore", divide="ignore"):
        second_i = _moments(spec_i.rule, spec_i.behaviours, _probability_for_mean(spec_i.rule, spec_i.behaviours,
                                                                                  np.minimum(mean_i, 1)))[1]
        second_j = _moments(spec_j.rule, spec_j.behaviours, _probability_for_mean(spec_j.rule, spec_j.behaviours,
                                                                                  np.minimum(mean_j, 1)))[1]
        joint = (s if sign > 0 else s * (1 - np.asarray(t, dtype=float))) * mean_i * mean_j  # E[c_i c_j] E f_i E f_j
        covariance = joint - d_i * d_j
        variance_i = s * second_i - d_i**2
        variance_j = coupling_j * second_j - d_j**2
        correlation = covariance / np.sqrt(variance_i * variance_j)
    return np.where(feasible, correlation, np.nan)


def _solve_increasing_or_decreasing(function, low: float, high: float, target: float) -> float | None:
    """A root of ``function(x) = target`` on [low, high]: a dense scan for a bracket, then bisection."""
    grid = np.linspace(low, high, 4001)
    values = function(grid) - target
    finite = np.isfinite(values)
    signs = np.sign(values)
    for index in range(len(grid) - 1):
        if not (finite[index] and finite[index + 1]):
            continue
        if signs[index] == 0:
            return float(grid[index])
        if signs[index] != signs[index + 1]:
            a, b = grid[index], grid[index + 1]
            fa = values[index]
            for _ in range(80):
                middle = 0.5 * (a + b)
                fm = float(function(np.array([middle]))[0]) - target
                if (fm < 0) == (fa < 0):
                    a, fa = middle, fm
                else:
                    b = middle
            return float(0.5 * (a + b))
    if finite[-1] and signs[-1] == 0:
        return float(grid[-1])
    return None


def solve_coupling(spec_i: RewardSpec, spec_j: RewardSpec, rho: float) -> tuple[float, float | None]:
    """Coupling probabilities (s, t) giving correlation ``rho`` between rewards i and j at step 0.

    Returns ``(s, None)`` for ρ > 0 (gate only) and ``(s, t)`` for ρ < 0.

    Raises:
        ValueError: ρ is outside the range these two difficulties and rules allow (the message gives it).
    """
    low, high = COUPLING_BOUNDS
    if rho > 0:
        s_low = max(low, spec_i.difficulty / _max_mean(spec_i), spec_j.difficulty / _max_mean(spec_j))
        solution = _solve_increasing_or_decreasing(lambda s: _correlation(spec_i, spec_j, 1, s), s_low, high, rho)
        if solution is None:
            grid = _correlation(spec_i, spec_j, 1, np.linspace(s_low, high, 4001))
            raise ValueError(
                f"correlation {rho:g} between rewards {spec_i.name!r} (difficulty {spec_i.difficulty:g}) and "
                f"{spec_j.name!r} (difficulty {spec_j.difficulty:g}) is not attainable; with these difficulties "
                f"and rules the positive range is [0, {np.nanmax(grid):.3f}]."
            )
        return solution, None
    # Negative: pick the gate probability with the widest attainable range, then solve for t.
    s_grid = np.linspace(max(low, spec_i.difficulty / _max_mean(spec_i)), high, 197)
    t_grid = np.linspace(low, high, 401)
    table = _correlation(spec_i, spec_j, -1, s_grid[:, None], t_grid[None, :])
    with np.errstate(all="ignore"):
        most_negative = np.where(np.isfinite(table), table, np.inf).min(axis=1)
    best = int(np.argmin(most_negative))
    s = float(s_grid[best])
    if not np.isfinite(most_negative[best]) or most_negative[best] > rho:
        bound = most_negative[best] if np.isfinite(most_negative[best]) else 0.0
        raise ValueError(
            f"correlation {rho:g} between rewards {spec_i.name!r} (difficulty {spec_i.difficulty:g}) and "
            f"{spec_j.name!r} (difficulty {spec_j.difficulty:g}) is not attainable; with these difficulties "
            f"and rules the negative range is [{bound:.3f}, 0]."
        )
    solution = _solve_increasing_or_decreasing(lambda t: _correlation(spec_i, spec_j, -1, s, t), low, high, rho)
    if solution is None:  # pragma: no cover - the scan above found a point at or below rho
        raise ValueError(f"could not solve the coupling for correlation {rho:g} of {spec_i.name!r} and "
                         f"{spec_j.name!r}.")
    return s, solution


@dataclasses.dataclass(frozen=True)
class RewardModel:
    """Behaviour layout and step-0 logits of one run; computes rewards from sampled behaviours.

    Attributes:
        specs: the n rewards, in column order.
        private: (start, stop) of each reward's private behaviours in the behaviour axis.
        coupling: per reward, ``("none",)``, ``("gate", g)`` or ``("gate_inhibitor", g, h)``: v = f,
            g·f, or (1 − g·h)·f with g, h behaviour indices.
        initial_logits: (P, D) float64 logits at step 0 (the policy's fixed context).
        length_reward: column of the length reward, or None.
    """

    specs: tuple[RewardSpec, ...]
    private: tuple[tuple[int, int], ...]
    coupling: tuple[tuple, ...]
    initial_logits: np.ndarray
    length_reward: int | None

    @property
    def num_behaviours(self) -> int:
        return int(self.initial_logits.shape[1])

    def graded(self, actions: torch.Tensor) -> torch.Tensor:
        """Graded values in [0, 1].

        Args:
            actions: (..., D) float64 0/1 behaviours.

        Returns:
            (..., n) float64.
        """
        columns = []
        for spec, (start, stop), coupling in zip(self.specs, self.private, self.coupling):
            block = actions[..., start:stop]
            value = block.prod(dim=-1) if spec.rule == "all" else block.mean(dim=-1)
            columns.append(value * self._coupling_factor(actions, coupling))
        return torch.stack(columns, dim=-1)

    @staticmethod
    def _coupling_factor(actions: torch.Tensor, coupling: tuple):
        if coupling[0] == "gate":
            return actions[..., coupling[1]]
        if coupling[0] == "gate_inhibitor":
            return 1 - actions[..., coupling[1]] * actions[..., coupling[2]]
        return 1.0

    def raw(self, graded: torch.Tensor) -> torch.Tensor:
        """(..., n) graded values → rewards as paid (ranged rewards mapped onto their range)."""
        lows = torch.tensor([s.low for s in self.specs], dtype=graded.dtype)
        highs = torch.tensor([s.high for s in self.specs], dtype=graded.dtype)
        return lows + (highs - lows) * graded

    def length_proxy(self, actions: torch.Tensor) -> torch.Tensor:
        """Response-length proxy of each rollout, ≥ 1 (a token count stand-in).

        1 + the number of the length reward's violations: its private behaviours left unset, plus 1
        where its coupling blocks it (e.g. verbose reasoning). Without a length reward: 1 + the number
        of unset behaviours.

        Args:
            actions: (..., D) float64.

        Returns:
            (...,) float64.
        """
        if self.length_reward is None:
            return 1 + (1 - actions).sum(dim=-1)
        start, stop = self.private[self.length_reward]
        violations = (stop - start) - actions[..., start:stop].sum(dim=-1)
        factor = self._coupling_factor(actions, self.coupling[self.length_reward])
        return 1 + violations + (1 - factor)


def _logit(p):
    return np.log(p) - np.log1p(-p)


def _prompt_quantiles(num_prompts: int, reward_index: int) -> np.ndarray:
    normal = statistics.NormalDist()
    quantiles = np.array([normal.inv_cdf((p + 0.5) / num_prompts) for p in range(num_prompts)])
    return np.random.default_rng(PROMPT_OFFSET_SEED + reward_index).permutation(quantiles)


def _private_logits(spec: RewardSpec, mean: float, offsets: np.ndarray) -> np.ndarray:
    """(P,) step-0 logits of a reward's private behaviours with mean-over-prompts E[f] = ``mean``."""
    base = float(_logit(np.clip(_probability_for_mean(spec.rule, spec.behaviours, mean), 1e-12, 1 - 1e-12)))
    if not np.any(offsets):
        return np.full(offsets.shape, base)

    def mean_over_prompts(shift: float) -> float:
        q = 1 / (1 + np.exp(-(base + offsets + shift)))
        return float(_moments(spec.rule, spec.behaviours, q)[0].mean())

    low, high = -30.0, 30.0
    for _ in range(100):
        middle = 0.5 * (low + high)
        if mean_over_prompts(middle) < mean:
            low = middle
        else:
            high = middle
    return base + offsets + 0.5 * (low + high)


def build_reward_model(config: RunConfig) -> RewardModel:
    """Lay out the behaviours of ``config``'s rewards and calibrate the step-0 logits.

    Raises:
        ValueError: a requested correlation is not attainable with the rewards' difficulties and rules.
    """
    specs = config.rewards
    names = [s.name for s in specs]
    private_mean = {s.name: s.difficulty for s in specs}
    coupling: dict[str, tuple] = {s.name: ("none",) for s in specs}
    coupling_probabilities: list[float] = []
    num_private = sum(s.behaviours for s in specs)
    for correlation in config.correlations:
        if correlation.value == 0:
            continue
        spec_i, spec_j = specs[names.index(correlation.first)], specs[names.index(correlation.second)]
        s, t = solve_coupling(spec_i, spec_j, correlation.value)
        gate = num_private + len(coupling_probabilities)
        coupling_probabilities.append(s)
        coupling[spec_i.name] = ("gate", gate)
        private_mean[spec_i.name] = spec_i.difficulty / s
        if t is None:
            coupling[spec_j.name] = ("gate", gate)
            private_mean[spec_j.name] = spec_j.difficulty / s
        else:
            inhibitor = num_private + len(coupling_probabilities)
            coupling_probabilities.append(t)
            coupling[spec_j.name] = ("gate_inhibitor", gate, inhibitor)
            private_mean[spec_j.name] = spec_j.difficulty / (1 - s * t)

    num_prompts = config.prompts
    columns, private = [], []
    start = 0
    for index, spec in enumerate(specs):
        offsets = config.prompt_spread * _prompt_quantiles(num_prompts, index) if config.prompt_spread > 0 \
            else np.zeros(num_prompts)
        logits = _private_logits(spec, private_mean[spec.name], offsets)
        columns.append(np.repeat(logits[:, None], spec.behaviours, axis=1))
        private.append((start, start + spec.behaviours))
        start += spec.behaviours
    if coupling_probabilities:
        columns.append(np.tile(_logit(np.array(coupling_probabilities)), (num_prompts, 1)))
    initial_logits = np.concatenate(columns, axis=1)
    if not np.all(np.isfinite(initial_logits)):  # pragma: no cover - guarded by the bounds above
        raise ValueError("step-0 logits are not finite; choose difficulties further from 0 and 1.")
    length_reward = names.index(config.length_reward) if config.length_reward is not None else None
    return RewardModel(tuple(specs), tuple(private), tuple(coupling[n] for n in names), initial_logits,
                       length_reward)


def expected_correlation(model: RewardModel, first: int, second: int) -> float:
    """Closed-form step-0 correlation of two rewards of ``model`` at prompt_spread 0 (0 if uncoupled)."""
    ci, cj = model.coupling[first], model.coupling[second]
    if ci[0] == "none" or cj[0] == "none" or ci[1] != cj[1]:
        return 0.0
    probability = 1 / (1 + np.exp(-model.initial_logits[0]))
    s = probability[ci[1]]
    if cj[0] == "gate" and ci[0] == "gate":
        return float(_correlation(model.specs[first], model.specs[second], 1, s))
    i, j = (first, second) if ci[0] == "gate" else (second, first)
    t = probability[model.coupling[j][2]]
    return float(_correlation(model.specs[i], model.specs[j], -1, s, t))


__all__ = ["RewardModel", "build_reward_model", "expected_correlation", "solve_coupling"]
