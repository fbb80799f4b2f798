"""Loading and running a study: every (variant, method) through the bench, as one tidy table.

Positive controls (a study's ``positive_controls``, cells named ``control:<name>``) run and are judged like
every cell; their rows carry ``positive_control`` True, every other row False.

Per-run outcomes (one per seed, the same on all of that run's rows):

- ``failure_to_converge`` (C10): a run *fails to converge* if, at the end of training — the mean over the
  last 10 % of steps (at least one step) — the success of at least one of the outcome's rewards is below
  the outcome's ``threshold``. ``outcome_step`` is empty.
- ``fails_to_converge`` (C10, sequence bench): the training scale's definition,
  :func:`gdpo.curve_events.fails_to_converge` on the outcome reward's per-step success curve (the last
  10 % of steps not above the first 3 by two standard errors). ``outcome_step`` is empty.
- ``collapse`` (C5), sequence bench: :func:`gdpo.curve_events.detect_divergence` (default settings)
  on the outcome reward's per-step success curve against the batch's maximum response length (tokens), as at
  the training scale.
- ``collapse`` (C5), Bernoulli bench: a run *collapses* if :func:`gdpo.curve_events.detect_divergence` (default
  settings) fires on the run's per-step success curve of the outcome's ``reward`` (correctness) against
  its per-step mean response-length proxy (:meth:`gdpo.sim.rewards.RewardModel.length_proxy`: 1 + the
  length reward's violations, averaged over the seed's batch; the batch maximum of this small integer
  count saturates, so the mean stands in for the paper's max length). That is: correctness falls for
  good (at least 10 % of its peak, at least 0.02) while the length proxy rises by ≥ 20 %.
  ``outcome_step`` is the detected divergence step.
"""

from __future__ import annotations

import contextlib
import functools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gdpo.curve_events import detect_divergence, fails_to_converge, final_window
from gdpo.methods import get_method
from gdpo.sim.config import Study, read_study
from gdpo.sim.engine import BenchTrace, PolicyGradientBench
from gdpo.sim.rewards import build_reward_model
from gdpo.sim.schema import RunConfig

#: The exact analysis is attached only where its enumeration stays below this many groups.
EXACT_ENUMERATION_LIMIT = 2_000_000


def load_study(path: str | Path) -> Study:
    """Read and validate a study YAML file (:func:`gdpo.sim.config.read_study`), then build each Bernoulli cell's
    reward model.

    Its cells are the grid's (every combination of ``grid``'s values) or the named ``variants``, then the
    ``extra_cells``: blocks ``{around: <a grid cell or a variant name>, vary: {key: [values]}}``, each value one
    more cell, the around cell with that one key changed (one factor at a time;
    :func:`gdpo.sim.config.build_study`). A study fixes its cells before any result of them is seen and reports
    every one. Last come the ``positive_controls``: cells named ``control:<name>`` whose settings are engineered
    so that the outcome's event happens (:attr:`gdpo.sim.config.Study.controls`).

    Raises:
        ValueError: the file is missing, not YAML, or a key is unknown or out of range; the message names
            the key, the allowed values or range, and the file. Reward difficulties and correlations that
            cannot be met together are refused here too (the reward model is built for every variant).
    """
    file = Path(path)
    study = read_study(file)
    if any(config.bench != "bernoulli" for _, config in study.variants):
        return study
    # Calibration can fail (e.g. a correlation the two difficulties do not allow): refuse now, not mid-run.
    for variant_name, config in study.variants:
        try:
            build_reward_model(config)
        except ValueError as error:
            raise ValueError(f"{file} (variant '{variant_name}'): {error}") from None
    return study


def study_runs(study: Study) -> list[tuple[str, str]]:
    """Every (variant, method) the study runs, in file order."""
    return [(variant, method) for variant, config in study.variants for method in config.methods]


@contextlib.contextmanager
def _torch_threads(count: int | None):
    previous = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@functools.lru_cache(maxsize=256)
def _exact_distinct_groups(num_generations: int, num_rewards: int, method: str) -> float:
    from gdpo.analysis import exact

    # The count is of the advantages before any batch step: a method without the batch step of a counted
    # method (gdpo_nobn) has that method's count.
    counted = get_method(method).without_batch_step_of or method
    enumeration = min(exact.enumeration_size(num_generations, num_rewards).values())
    if counted not in exact.COUNTED_METHODS or enumeration > EXACT_ENUMERATION_LIMIT:
        return math.nan
    return float(exact.count_distinct(num_generations, num_rewards, counted))


def _outcomes(config: RunConfig, trace: BenchTrace) -> tuple[np.ndarray, np.ndarray]:
    """(S,) bool events and (S,) float steps (NaN where none) of the study's outcome."""
    num_steps, num_seeds, _ = trace.success.shape
    events = np.zeros(num_seeds, dtype=bool)
    steps = np.full(num_seeds, np.nan)
    outcome = config.outcome
    if outcome.kind == "failure_to_converge":
        final = trace.success[-final_window(num_steps):].mean(axis=0)  # (S, n)
        columns = [config.reward_index(r) for r in outcome.rewards]
        events = (final[:, columns] < outcome.threshold).any(axis=1)
    elif outcome.kind == "fails_to_converge":
        column = config.reward_index(outcome.reward)
        events = np.array([fails_to_converge(trace.success[:, k, column]) for k in range(num_seeds)], dtype=bool)
    elif outcome.kind == "collapse":
        column = config.reward_index(outcome.reward)
        step_axis = np.arange(num_steps)
        # The sequence bench has real lengths: its maximum is the paper's curve; the Bernoulli proxy saturates.
        length_curve = trace.length_max if config.bench == "sequence" else trace.length_mean
        for seed_index in range(num_seeds):  # post-processing of finished curves, not the update
            step = detect_divergence(step_axis, trace.success[:, seed_index, column],
                                     length_curve[:, seed_index])
            if step is not None:
                events[seed_index] = True
                steps[seed_index] = step
    return events, steps


def _trace_frame(study: Study, variant: str, method: str, config: RunConfig, trace: BenchTrace) -> pd.DataFrame:
    num_steps, num_seeds, num_rewards = trace.success.shape
    step_index, seed_index, reward_index = (a.ravel() for a in np.meshgrid(
        np.arange(num_steps), np.arange(num_seeds), np.arange(num_rewards), indexing="ij"))
    per_seed_step = lambda values: np.repeat(values.ravel(), num_rewards)  # noqa: E731
    events, event_steps = _outcomes(config, trace)
    weights_are_one = all(r.weight == 1 for r in config.rewards)
    exact = (_exact_distinct_groups(config.generations, num_rewards, method)
             if config.exact_counts and weights_are_one and config.conditioning is None else math.nan)
    frame = pd.DataFrame({
        "study": study.name,
        "bench": config.bench,
        "variant": variant,
        "positive_control": study.is_control(variant),
        "method": method,
        "seed": np.asarray(config.seeds)[seed_index],
        "step": step_index,
        "reward": np.asarray(config.reward_names, dtype=object)[reward_index],
        "weight": np.asarray([r.weight for r in config.rewards])[reward_index],
        "mean": trace.reward_mean.ravel(),
        "success": trace.success.ravel(),
        "zero_std_fraction": trace.zero_std_fraction.ravel(),
        "distinct_per_group": per_seed_step(trace.distinct_per_group),
        "distinct_in_batch": per_seed_step(trace.distinct_in_batch),
        "distinct_groups_in_batch": per_seed_step(trace.distinct_groups_in_batch),
        "length_mean": per_seed_step(trace.length_mean),
        "length_max": per_seed_step(trace.length_max),
        "num_rewards": num_rewards,
        "generations": config.generations,
        "prompts": config.prompts,
        "exact_distinct_groups": exact,
        "outcome": config.outcome.kind,
        "outcome_event": events[seed_index],
        "outcome_step": event_steps[seed_index],
    })
    return frame


def run_study(study: Study, variant: str | None = None, method: str | None = None, *,
              num_threads: int | None = 1) -> pd.DataFrame:
    """Run every (variant, method) of ``study`` (or the one selected) and return the tidy results.

    Args:
        study: from :func:`gdpo.sim.load_study`.
        variant: run only this variant (``"default"`` for a study without variants).
        method: run only this method.
        num_threads: torch threads during the run (restored afterwards). One by default: the tensors are
            small, thread hand-offs cost more than they save, and a machine with other jobs slows
            multi-threaded runs badly; run studies side by side instead.

    Returns:
        One row per (study, variant, method, seed, step, reward) with columns ``study, bench`` (``bernoulli`` or
        ``sequence``), ``variant, positive_control`` (True on the rows of a positive control, a cell engineered
        so that the outcome's event happens; False on every other cell), ``method,
        seed, step, reward, weight, mean`` (reward as paid, reward units), ``success`` (graded value in
        [0, 1] before conditioning), ``zero_std_fraction`` (of groups, for this reward),
        ``distinct_per_group``, ``distinct_in_batch``, ``distinct_groups_in_batch`` (advantages rounded to
        6 decimals; per seed and step), ``length_mean``, ``length_max`` (response-length proxy),
        ``num_rewards, generations, prompts``, ``exact_distinct_groups`` (the exact analysis' count of
        distinct advantage groups over every binary group of this G and n; NaN unless the study asks
        for it with binary, unit-weight, unconditioned rewards and the enumeration is small), and
        ``outcome, outcome_event, outcome_step`` (see the module docstring).

    Raises:
        ValueError: no run matches ``variant`` / ``method``.
    """
    runs = [(v, m) for v, m in study_runs(study)
            if (variant is None or v == variant) and (method is None or m == method)]
    if not runs:
        raise ValueError(
            f"study {study.name!r} has no run with variant={variant!r}, method={method!r}; its runs are: "
            + ", ".join(f"({v}, {m})" for v, m in study_runs(study))
        )
    frames = []
    with _torch_threads(num_threads):
        for variant_name, method_name in runs:
            config = study.variant(variant_name)
            if config.bench == "sequence":
                from gdpo.sim.sequence import SequenceBench

                trace = SequenceBench(config, method_name).run()
            else:
                trace = PolicyGradientBench(config, method_name).run()
            frames.append(_trace_frame(study, variant_name, method_name, config, trace))
    return pd.concat(frames, ignore_index=True)
