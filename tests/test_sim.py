"""gdpo.sim: the policy-gradient bench — learning, determinism, config validation, calibration, per-seed
advantages, gradients, outcomes, summaries and figures. Small sizes: the file runs in well under a minute."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from gdpo.advantages import (available_conventions, compute_advantages, get_convention, get_estimator,
                             registered_estimators)
from gdpo.sim import load_study, parse_study, plot_study, run_study, study_runs, summarise
from gdpo.sim import rng
from gdpo.sim.schema import CORRELATION_RANGE
from gdpo.sim.engine import BenchTrace, PolicyGradientBench, seedwise_advantages
from gdpo.sim.rewards import build_reward_model, expected_correlation
from gdpo.sim.study import _outcomes

SHIPPED_STUDIES = sorted((Path(__file__).resolve().parents[1] / "config" / "sim").glob("*.yaml"))


def study_data(**overrides) -> dict:
    """A small valid study mapping (one easy binary reward)."""
    data = {
        "name": "tiny",
        "seeds": 4,
        "steps": 40,
        "prompts": 16,
        "generations": 4,
        "methods": ["grpo", "gdpo"],
        "learning_rate": 0.05,
        "rewards": [{"name": "easy", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.3}],
    }
    data.update(overrides)
    return data


def config_of(**overrides):
    return parse_study(study_data(**overrides)).variant("default")


# --------------------------------------------------------------------------------------------------
# Learning and determinism
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", registered_estimators())
def test_a_single_easy_reward_is_learned_by_every_method(method):
    config = config_of(methods=[method])
    trace = PolicyGradientBench(config, method).run()
    start = trace.success[0, :, 0]
    final = trace.success[-4:, :, 0].mean(axis=0)
    assert np.all(start < 0.4)
    # Every seed climbs well above its start (0.3) within 40 updates.
    assert np.all(final > start + 0.35), (method, start, final)


def test_the_same_seed_twice_gives_identical_results_and_different_seeds_differ():
    study = parse_study(study_data(steps=15))
    first = run_study(study, method="gdpo")
    second = run_study(study, method="gdpo")
    pd.testing.assert_frame_equal(first, second)
    curves = first.pivot_table(index="step", columns="seed", values="success")
    assert not np.allclose(curves[0], curves[1])
    assert curves.nunique(axis=1).iloc[1:].min() > 1  # seeds differ at every step after the first


def test_gdpo_batch_step_is_per_seed_results_of_a_seed_do_not_change_when_seeds_are_added():
    config = config_of(rewards=[
        {"name": "hard", "behaviours": 3, "rule": "all", "scale": "binary", "difficulty": 0.1},
        {"name": "easy", "behaviours": 2, "rule": "fraction", "scale": "ranged", "range": [-3, 3], "difficulty": 0.5},
    ], steps=20, prompt_spread=0.5)
    alone = PolicyGradientBench(config, "gdpo", seeds=(3,)).run()
    crowd = PolicyGradientBench(config, "gdpo", seeds=(0, 1, 2, 3, 7)).run()
    for field in ("success", "reward_mean", "zero_std_fraction", "distinct_per_group", "distinct_in_batch",
                  "length_mean"):
        np.testing.assert_allclose(getattr(crowd, field)[:, 3], getattr(alone, field)[:, 0], rtol=0, atol=1e-12,
                                   err_msg=field)


def test_one_batch_step_over_all_seeds_would_differ_from_the_per_seed_one():
    # The property above is not automatic: whitening the concatenated seeds gives other advantages.
    generator = torch.Generator().manual_seed(0)
    rewards = torch.randint(0, 2, (3, 32, 2), generator=generator).to(torch.float64)
    rewards[1] *= 3.0  # seeds with different reward statistics
    per_seed = seedwise_advantages(rewards, 4, "gdpo", None, "trl")
    pooled = compute_advantages(rewards.reshape(-1, 2), 4, "gdpo").view(3, 32)
    assert not torch.allclose(per_seed, pooled)


@pytest.mark.parametrize("num_rewards", [3, 1])
@pytest.mark.parametrize("convention", available_conventions())
@pytest.mark.parametrize("method", registered_estimators())
def test_batched_advantages_equal_one_registry_call_per_seed(method, convention, num_rewards):
    # One reward exercises each convention's single-reward rule (nvlabs runs GRPO, nemo refuses).
    generator = torch.Generator().manual_seed(1)
    rewards = torch.randint(0, 3, (4, 24, 3), generator=generator).to(torch.float64)[:, :, :num_rewards]
    rewards[2, :, 0] = 1.0  # a constant reward column
    lengths = torch.randint(1, 9, (4, 24), generator=generator).to(torch.float64)
    weights = [1.0, 0.5, 2.0][:num_rewards]
    refused = get_estimator(method).per_reward and get_convention(convention).single_reward == "error"
    if num_rewards == 1 and refused:
        for path in ("batched", "per_seed"):
            with pytest.raises(ValueError, match="single reward function"):
                seedwise_advantages(rewards, 4, method, weights, convention, lengths, path=path)
        return
    batched = seedwise_advantages(rewards, 4, method, weights, convention, lengths, path="batched")
    reference = seedwise_advantages(rewards, 4, method, weights, convention, lengths, path="per_seed")
    torch.testing.assert_close(batched, reference, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------------------
# Objective, optimizer and random numbers
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("inner_epochs", [1, 3])
def test_analytic_clipped_objective_gradient_matches_autograd(inner_epochs):
    config = config_of(inner_epochs=inner_epochs, clip_epsilon=0.1)
    bench = PolicyGradientBench(config, "grpo")
    S, P, G, D = bench.num_seeds, bench.num_prompts, bench.num_generations, bench.num_behaviours
    generator = torch.Generator().manual_seed(2)
    sampling_logits = torch.randn(S, P, D, generator=generator, dtype=torch.float64)
    actions = (torch.rand(S, P, G, D, generator=generator, dtype=torch.float64) < 0.5).to(torch.float64)
    advantages = torch.randn(S, P, G, generator=generator, dtype=torch.float64)
    # Moved logits so that some ratios leave [1 − ε, 1 + ε] on both sides.
    logits = (sampling_logits + 0.3 * torch.randn(S, P, D, generator=generator, dtype=torch.float64)).requires_grad_()
    sampling_log_prob = bench.log_prob(actions, sampling_logits)
    ratio = torch.exp(bench.log_prob(actions, logits) - sampling_log_prob)
    clipped = torch.clamp(ratio, 1 - 0.1, 1 + 0.1)
    objective = torch.minimum(ratio * advantages, clipped * advantages).mean(dim=(1, 2))  # per seed
    (-objective.sum()).backward()
    assert ((ratio > 1.1) | (ratio < 0.9)).any()
    analytic = bench.surrogate_gradient(actions, advantages, logits.detach(), sampling_log_prob)
    torch.testing.assert_close(analytic, logits.grad, rtol=1e-10, atol=1e-12)
    at_sampling = bench.surrogate_gradient(actions, advantages, sampling_logits, None)
    torch.testing.assert_close(at_sampling, bench.surrogate_gradient(actions, advantages, sampling_logits,
                                                                      sampling_log_prob), rtol=1e-12, atol=1e-14)


def test_adam_matches_torch_adam():
    config = config_of(policy="shared", optimizer="adam", learning_rate=0.03)
    bench = PolicyGradientBench(config, "grpo")
    reference = torch.zeros_like(bench.shared, requires_grad=True)
    optimizer = torch.optim.Adam([reference], lr=0.03)
    generator = torch.Generator().manual_seed(3)
    for _ in range(5):
        gradient = torch.randn(bench.num_seeds, bench.num_prompts, bench.num_behaviours, generator=generator,
                               dtype=torch.float64)
        bench._optimizer_step(gradient)
        reference.grad = gradient.sum(dim=1)
        optimizer.step()
    torch.testing.assert_close(bench.shared, reference.detach(), rtol=1e-12, atol=1e-14)


def _splitmix64(state: int) -> int:
    mask = (1 << 64) - 1
    z = state & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def test_counter_rng_is_splitmix64_with_wrapping_int64_arithmetic():
    keys = torch.tensor([0, 12345, -987654321987], dtype=torch.int64)
    offsets = rng.counter_offsets(5)
    u = rng.uniforms(keys, offsets)
    for row, key in enumerate(keys.tolist()):
        for i in range(5):
            bits = _splitmix64((key & ((1 << 64) - 1)) + (i + 1) * 0x9E3779B97F4A7C15)
            assert u[row, i].item() == (bits >> 11) * 2.0**-53
    big = rng.uniforms(rng.seed_keys([0, 1]), rng.counter_offsets(200_000))
    assert abs(big.mean().item() - 0.5) < 0.005 and 0.0 <= big.min() and big.max() < 1.0
    assert abs(np.corrcoef(big[0].numpy(), big[1].numpy())[0, 1]) < 0.01


# --------------------------------------------------------------------------------------------------
# Calibration: difficulty and correlation at step 0; conditioning
# --------------------------------------------------------------------------------------------------


def _step0(config, num_seeds=48):
    bench = PolicyGradientBench(config, "grpo", seeds=tuple(range(num_seeds)))
    actions = bench.sample(0)
    graded, paid, lengths = bench.score(actions)
    return bench, actions, graded, paid


@pytest.mark.parametrize("spread", [0.0, 1.0])
def test_reward_difficulty_at_step_0_matches_the_requested_success_probability(spread):
    rewards = [
        {"name": "bin3", "behaviours": 3, "rule": "all", "scale": "binary", "difficulty": 0.1},
        {"name": "frac", "behaviours": 4, "rule": "fraction", "scale": "graded", "difficulty": 0.35},
        {"name": "ranged", "behaviours": 2, "rule": "fraction", "scale": "ranged", "range": [-3, 3], "difficulty": 0.7},
        {"name": "coupled", "behaviours": 1, "rule": "all", "scale": "binary", "difficulty": 0.5},
        {"name": "coupled_too", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.4},
    ]
    config = config_of(rewards=rewards, prompts=64, generations=8, prompt_spread=spread,
                       correlations=[{"rewards": ["coupled", "coupled_too"], "value": -0.3}])
    _, _, graded, paid = _step0(config)
    success = graded.mean(dim=(0, 1, 2)).numpy()
    samples = graded[..., 0].numel()
    for index, spec in enumerate(config.rewards):
        tolerance = 5 * np.sqrt(spec.difficulty * (1 - spec.difficulty) / samples) + 1e-3
        assert abs(success[index] - spec.difficulty) < tolerance, (spec.name, success[index], spec.difficulty)
    # The ranged reward is paid on its range: mean −3 + 6·0.7 = 1.2.
    assert abs(paid[..., 2].mean().item() - 1.2) < 0.05
    assert paid[..., 2].min() >= -3 and paid[..., 2].max() <= 3


@pytest.mark.parametrize("rho", [-0.5, -0.25, 0.2, 0.5, 0.9])
def test_step_0_correlation_matches_the_requested_one(rho):
    config = config_of(prompts=64, generations=8, rewards=[
        {"name": "a", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.5},
        {"name": "b", "behaviours": 1, "rule": "all", "scale": "binary", "difficulty": 0.5},
    ], correlations=[{"rewards": ["a", "b"], "value": rho}])
    model = build_reward_model(config)
    assert expected_correlation(model, 0, 1) == pytest.approx(rho, abs=1e-6)
    _, _, graded, _ = _step0(config)
    a, b = graded[..., 0].flatten().numpy(), graded[..., 1].flatten().numpy()
    assert abs(np.corrcoef(a, b)[0, 1] - rho) < 0.03  # 24,576 samples: standard error about 0.006
    assert abs(a.mean() - 0.5) < 0.02 and abs(b.mean() - 0.5) < 0.02


def test_correlation_of_graded_and_ranged_rewards_matches_too():
    config = config_of(prompts=64, generations=8, rewards=[
        {"name": "c", "behaviours": 4, "rule": "fraction", "scale": "ranged", "range": [-3, 3], "difficulty": 0.3},
        {"name": "f", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.4},
    ], correlations=[{"rewards": ["c", "f"], "value": 0.4}])
    _, _, _, paid = _step0(config)
    c, f = paid[..., 0].flatten().numpy(), paid[..., 1].flatten().numpy()
    assert abs(np.corrcoef(c, f)[0, 1] - 0.4) < 0.03


def test_conditioning_pays_the_easy_reward_only_when_the_hard_one_succeeds():
    config = config_of(rewards=[
        {"name": "correct", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.3},
        {"name": "length", "behaviours": 1, "rule": "all", "scale": "binary", "difficulty": 0.8},
    ], conditioning={"easy": "length", "hard": "correct"})
    _, _, graded, paid = _step0(config, num_seeds=8)
    hard_failed = graded[..., 0] < 1
    assert hard_failed.any() and (~hard_failed).any()
    assert torch.all(paid[..., 1][hard_failed] == 0)
    assert torch.equal(paid[..., 1][~hard_failed], graded[..., 1][~hard_failed])
    assert (graded[..., 1][hard_failed] == 1).any()  # the unconditioned length reward would have paid there
    assert torch.equal(paid[..., 0], graded[..., 0])


# --------------------------------------------------------------------------------------------------
# Validation of study files
# --------------------------------------------------------------------------------------------------


def _bad(data_change) -> dict:
    data = copy.deepcopy(study_data())
    data_change(data)
    return data


BAD_STUDIES = [
    ("unknown top-level key", lambda d: d.update(learning_rat=0.1), ["learning_rat", "allowed keys", "learning_rate"]),
    ("unknown method", lambda d: d.update(methods=["grpo", "gdpo2"]),
     ["methods[1]", "gdpo2", "gdpo, gdpo_nobn, gdpo_nostd, grpo, grpo_nostd"]),
    ("negative learning rate", lambda d: d.update(learning_rate=-0.1), ["learning_rate", "-0.1", "(0, ∞]"]),
    ("difficulty 0", lambda d: d["rewards"][0].update(difficulty=0.0), ["rewards[0].difficulty", "(0, 1)"]),
    ("difficulty above 1", lambda d: d["rewards"][0].update(difficulty=1.2), ["rewards[0].difficulty", "(0, 1)"]),
    ("G below 2", lambda d: d.update(generations=1), ["generations", "≥ 2"]),
    ("correlation too high", lambda d: (d["rewards"].append(dict(d["rewards"][0], name="other")),
                                        d.update(correlations=[{"rewards": ["easy", "other"], "value": 0.97}])),
     ["correlations[0].value", "0.97", "[-0.5, 0.95]"]),
    ("correlation too low", lambda d: (d["rewards"].append(dict(d["rewards"][0], name="other")),
                                       d.update(correlations=[{"rewards": ["easy", "other"], "value": -0.6}])),
     ["correlations[0].value", "[-0.5, 0.95]"]),
    ("unknown reward key", lambda d: d["rewards"][0].update(difficult=0.3), ["rewards[0].difficult", "difficulty"]),
    ("ranged without range", lambda d: d["rewards"][0].update(scale="ranged", rule="fraction"), ["rewards[0].range"]),
    ("binary fraction", lambda d: d["rewards"][0].update(rule="fraction"), ["rewards[0].scale", "binary reward needs"]),
    ("unknown convention", lambda d: d.update(convention="tlr"), ["convention", "tlr", "trl"]),
    ("unknown optimizer", lambda d: d.update(optimizer="rmsprop"), ["optimizer", "adam, sgd"]),
    ("conditioning on a missing reward", lambda d: d.update(conditioning={"easy": "easy", "hard": "nope"}),
     ["conditioning.hard", "nope", "easy"]),
    ("unknown variant key", lambda d: d.update(variants={"v": {"stepz": 3}}), ["variant 'v'", "stepz"]),
    ("bad value in a variant", lambda d: d.update(variants={"v": {"learning_rate": 0}}),
     ["variant 'v'", "learning_rate"]),
    ("missing steps", lambda d: d.pop("steps"), ["missing key 'steps'"]),
]


@pytest.mark.parametrize(("case", "change", "fragments"), BAD_STUDIES, ids=[c[0] for c in BAD_STUDIES])
def test_bad_study_files_are_refused_naming_key_allowed_values_and_file(tmp_path, case, change, fragments):
    path = tmp_path / "bad_study.yaml"
    path.write_text(yaml.safe_dump(_bad(change)), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        load_study(path)
    message = str(error.value)
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message, (case, message)


def test_an_unattainable_correlation_is_refused_with_the_attainable_range(tmp_path):
    data = study_data(rewards=[
        {"name": "rare", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.05},
        {"name": "common", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.6},
    ], correlations=[{"rewards": ["rare", "common"], "value": -0.45}])
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"not attainable.*negative range is \[-0\.2"):
        load_study(path)
    assert CORRELATION_RANGE == (-0.5, 0.95)


@pytest.mark.parametrize("path", SHIPPED_STUDIES, ids=[p.stem for p in SHIPPED_STUDIES])
def test_shipped_studies_load_and_list_their_runs(path):
    study = load_study(path)
    runs = study_runs(study)
    assert runs and len(runs) == sum(len(config.methods) for _, config in study.variants)
    assert len(set(runs)) == len(runs)


# --------------------------------------------------------------------------------------------------
# Outcomes, tidy table, summary and figure
# --------------------------------------------------------------------------------------------------


def _trace(success: np.ndarray, length: np.ndarray) -> BenchTrace:
    steps, seeds = length.shape
    zeros = np.zeros((steps, seeds))
    return BenchTrace(reward_mean=success, success=success, zero_std_fraction=success * 0,
                      distinct_per_group=zeros, distinct_in_batch=zeros, distinct_groups_in_batch=zeros,
                      length_mean=length, length_max=length)


def test_collapse_outcome_fires_only_on_a_fall_with_rising_length():
    config = config_of(length_reward="easy", outcome={"kind": "collapse", "reward": "easy"})
    steps = np.arange(300)
    rising = np.clip(steps / 150, 0, 1) * 0.8
    collapsing = np.where(steps < 200, rising, 0.8 - 0.6 * (steps - 200) / 100)
    success = np.stack([rising, collapsing], axis=1)[..., None]  # (T, 2 seeds, 1 reward)
    length = np.stack([np.full(300, 2.0), np.where(steps < 200, 2.0, 2.0 + (steps - 200) / 25)], axis=1)
    events, event_steps = _outcomes(config, _trace(success, length))
    assert events.tolist() == [False, True]
    # The rule dates it at the last step still above peak − 10 %: 0.8 − 0.6·(t − 200)/100 ≥ 0.72 → t ≤ 213.
    assert 200 <= event_steps[1] <= 215 and np.isnan(event_steps[0])


def test_failure_to_converge_uses_the_last_tenth_of_the_run():
    config = config_of(steps=100, outcome={"kind": "failure_to_converge", "threshold": 0.5})
    steps = np.arange(100)
    learned = np.where(steps >= 85, 0.9, 0.1)  # final 10 steps at 0.9
    late = np.where(steps >= 95, 0.9, 0.1)  # only the last 5: final mean 0.5 → not below 0.5
    stuck = np.full(100, 0.2)
    success = np.stack([learned, late, stuck], axis=1)[..., None]
    events, _ = _outcomes(config, _trace(success, np.ones((100, 3))))
    assert events.tolist() == [False, False, True]


def test_run_study_summarise_and_plot(tmp_path):
    study = parse_study(study_data(
        steps=12, seeds=3,
        rewards=[{"name": "correct", "behaviours": 2, "rule": "all", "scale": "binary", "difficulty": 0.3},
                 {"name": "length", "behaviours": 1, "rule": "all", "scale": "binary", "difficulty": 0.7}],
        length_reward="length",
        outcome={"kind": "failure_to_converge", "threshold": 0.9},
        variants={"w1": {}, "w0.5": {"rewards": {"length": {"weight": 0.5}}}},
    ))
    assert study_runs(study) == [("w1", "grpo"), ("w1", "gdpo"), ("w0.5", "grpo"), ("w0.5", "gdpo")]
    df = run_study(study)
    assert len(df) == 4 * 3 * 12 * 2
    for column in ("study", "variant", "method", "seed", "step", "reward", "mean", "success", "distinct_per_group",
                   "distinct_in_batch", "zero_std_fraction", "outcome_event"):
        assert column in df.columns
    assert set(df.loc[df["variant"] == "w0.5"].query("reward == 'length'")["weight"]) == {0.5}
    assert df["distinct_per_group"].between(1, 4).all()
    only = run_study(study, variant="w0.5", method="gdpo")
    pd.testing.assert_frame_equal(only.reset_index(drop=True),
                                  df.query("variant == 'w0.5' and method == 'gdpo'").reset_index(drop=True))
    with pytest.raises(ValueError, match="no run with"):
        run_study(study, variant="w2")

    summary = summarise(df)
    assert len(summary) == 4 * 2
    assert (summary["final_success_ci_low"] <= summary["final_success"] + 1e-12).all()
    assert (summary["final_success"] <= summary["final_success_ci_high"] + 1e-12).all()
    assert summary["outcome_rate"].between(0, 1).all()
    assert (summary["outcome_ci_low"] <= summary["outcome_rate"]).all()
    paths = plot_study(df, tmp_path / "tiny.png")
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size > 1000 for p in paths)
