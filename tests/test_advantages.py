"""gdpo.advantages: toy values of the paper, conventions by hand, loop vs vectorised, properties, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gdpo import advantages as adv
from gdpo import methods
from gdpo.advantages import (
    Convention,
    available_conventions,
    batch_whiten,
    compute_advantages,
    condition_rewards,
    get_convention,
    register_estimator,
    registered_estimators,
)
from tests.reference import reference_advantages

SQRT_HALF = math.sqrt(0.5)
METHODS = ["grpo", "grpo_nostd", "gdpo", "gdpo_nobn", "gdpo_nostd"]
CONVENTIONS = ["trl", "trl_0_27", "nvlabs", "verl", "verl_pr6497", "nemo", "nemo_loo", "exact"]


def advantages_of(rewards, G, method, convention="exact", **kwargs):
    return compute_advantages(rewards, G, method, convention=convention, **kwargs).tolist()


# --------------------------------------------------------------------------------------------------
# Toy values stated in the paper (PAPER.md §1), G = 2, two binary rewards
# --------------------------------------------------------------------------------------------------

# (rollout 1, rollout 2) reward vectors whose totals are (0,1), (0,2), (1,2) and (1,1).
TOTALS_01 = [[0, 0], [0, 1]]
TOTALS_02 = [[0, 0], [1, 1]]
TOTALS_12 = [[0, 1], [1, 1]]
TOTALS_11 = [[0, 1], [1, 0]]


@pytest.mark.parametrize("group", [TOTALS_01, TOTALS_02, TOTALS_12])
def test_grpo_collapses_unequal_totals_to_one_advantage_pair(group):
    assert advantages_of(group, 2, "grpo") == pytest.approx([-0.7071, 0.7071], abs=1e-4)


def test_grpo_equal_totals_give_zero():
    assert advantages_of(TOTALS_11, 2, "grpo") == [0.0, 0.0]


def test_grpo_nostd_toy_values():
    assert advantages_of(TOTALS_01, 2, "grpo_nostd") == pytest.approx([-0.5, 0.5])
    assert advantages_of(TOTALS_02, 2, "grpo_nostd") == pytest.approx([-1.0, 1.0])


def test_gdpo_before_batch_step_toy_values():
    assert advantages_of(TOTALS_01, 2, "gdpo_nobn") == pytest.approx([-0.7071, 0.7071], abs=1e-4)
    assert advantages_of(TOTALS_02, 2, "gdpo_nobn") == pytest.approx([-1.4142, 1.4142], abs=1e-4)


def test_toy_values_hold_with_trl_epsilon_to_three_decimals():
    # ε = 1e-4 in the std shifts the fourth decimal: 0.5 / (0.70711 + 1e-4) = 0.70700.
    assert advantages_of(TOTALS_01, 2, "grpo", "trl") == pytest.approx([-0.7071, 0.7071], abs=2e-4)
    assert advantages_of(TOTALS_02, 2, "gdpo_nobn", "trl") == pytest.approx([-1.4142, 1.4142], abs=5e-4)


def test_g3_equal_totals_grpo_zero():
    # PAPER.md's G = 3 example: r1 = (1,1,0), r2 = (0,0,1); every total is 1, so GRPO gives 0.
    rewards = [[1, 0], [1, 0], [0, 1]]
    assert advantages_of(rewards, 3, "grpo") == [0.0, 0.0, 0.0]
    # With two *complementary* binary rewards GDPO gives 0 too: r2 = 1 − r1 normalises to −A1, so
    # A1 + A2 = 0. (PAPER.md's "GDPO gives non-zero advantages" does not hold for this exact example.)
    assert advantages_of(rewards, 3, "gdpo_nobn") == pytest.approx([0, 0, 0], abs=1e-12)


def test_equal_totals_resolved_by_gdpo_with_three_rewards():
    # Equal totals (all 1) but rewards earned on different criteria: GRPO sees nothing, GDPO tells the
    # rollouts that earned the common reward (0.866 − 0.5 − 0.5) from the rare ones (−0.866 + 1.5 − 0.5).
    rewards = [[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert advantages_of(rewards, 4, "grpo") == [0.0] * 4
    expected = math.sqrt(3) / 2 - 1.0
    assert advantages_of(rewards, 4, "gdpo_nobn") == pytest.approx([expected, expected, -expected, -expected])


def test_batch_step_makes_single_group_scale_free():
    # NVlabs/GDPO issue #3: with one prompt in the batch, (0,1) and (0,2) become identical again.
    assert advantages_of(TOTALS_01, 2, "gdpo") == pytest.approx(advantages_of(TOTALS_02, 2, "gdpo"))
    # Across prompts the resolution survives: in one batch the (0,2) group keeps twice the magnitude.
    batch = advantages_of(TOTALS_01 + TOTALS_02, 2, "gdpo")
    assert batch[3] == pytest.approx(2 * batch[1])


# --------------------------------------------------------------------------------------------------
# Conventions against hand-computed cases
# --------------------------------------------------------------------------------------------------


def test_trl_convention_by_hand():
    # One reward column (0, 1): group std 0.70711, ε = 1e-4 → ±0.5 / 0.70721 per reward.
    per_reward = 0.5 / (SQRT_HALF + 1e-4)
    assert advantages_of(TOTALS_01, 2, "gdpo_nobn", "trl") == pytest.approx([-per_reward, per_reward], rel=1e-12)
    # Batch step: values ±a, mean 0, sample std a·√2 → ±1/(√2 + 1e-4/a).
    whitened = per_reward / (per_reward * math.sqrt(2) + 1e-4)
    assert advantages_of(TOTALS_01, 2, "gdpo", "trl") == pytest.approx([-whitened, whitened], rel=1e-12)


def test_trl_excludes_missing_reward_while_nvlabs_reads_it_as_zero():
    rewards = [[1, float("nan")], [0, 1]]
    base = 0.5 / (SQRT_HALF + 1e-4)
    # trl: reward 2 has one valid value in the group → contributes 0; reward 1 gives ±base.
    assert advantages_of(rewards, 2, "gdpo_nobn", "trl") == pytest.approx([base, -base], rel=1e-12)
    # nvlabs: NaN → 0, so reward 2 is (0, 1) → ∓base, cancelling reward 1.
    assert advantages_of(rewards, 2, "gdpo_nobn", "nvlabs") == pytest.approx([0.0, 0.0], abs=1e-12)


def test_verl_token_weighted_whitening_by_hand():
    # Per-reward advantages ±c (c = 0.5 / (0.70711 + 1e-6)); response lengths 3 and 1 → tokens c, c, c, −c:
    # mean c/2, unbiased variance (3·c²/4 + 9c²/4) / 3 = c² → (±c − c/2) / c = 0.5 and −1.5.
    out = advantages_of([[1], [0]], 2, "gdpo", "verl", response_lengths=[3, 1])
    assert out == pytest.approx([0.5, -1.5], abs=1e-7)


def test_verl_singleton_group_is_the_value_over_one_plus_epsilon():
    # verl: a group with one (valid) sample has mean 0 and std 1, and the division still adds ε = 1e-6;
    # without the std division (GRPO w/o std) the value itself.
    assert advantages_of([[0.7], [float("nan")]], 2, "grpo", "verl") == pytest.approx([0.7 / (1 + 1e-6), 0.0],
                                                                                    rel=1e-15)
    assert advantages_of([[0.7], [float("nan")]], 2, "grpo_nostd", "verl") == [0.7, 0.0]
    assert advantages_of([[0.7], [float("nan")]], 2, "grpo", "trl") == [0.0, 0.0]


def test_nemo_leave_one_out_by_hand():
    # Rewards (1, 0, 0, 0). Rollout 1: the others are all 0 → baseline 0, undivided → 1.
    # Rollouts 2-4: baseline 1/3, the others {1, 0, 0} have sample std √(1/3) → (−1/3)/√(1/3) = −0.57735.
    out = advantages_of([[1], [0], [0], [0]], 4, "grpo", "nemo_loo")
    assert out == pytest.approx([1.0, -1 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)], rel=1e-5)
    # Without leave-one-out: (1 − 1/4)/0.5 = 1.5 and (−1/4)/0.5 = −0.5.
    assert advantages_of([[1], [0], [0], [0]], 4, "grpo", "nemo") == pytest.approx([1.5, -0.5, -0.5, -0.5], rel=1e-5)


def test_nemo_batch_step_has_no_epsilon():
    # (1.5, −0.5, −0.5, −0.5)·k has sample std k, so the batch step divides by it exactly (the constant
    # second reward contributes 0; NeMo-RL refuses GDPO with one reward).
    out = advantages_of([[1, 2], [0, 2], [0, 2], [0, 2]], 4, "gdpo", "nemo")
    assert out == pytest.approx([1.5, -0.5, -0.5, -0.5], rel=1e-12)


def test_exact_convention_has_no_epsilon():
    assert advantages_of(TOTALS_01, 2, "grpo", "exact") == pytest.approx([-SQRT_HALF, SQRT_HALF], rel=1e-15)


def test_batch_whiten_sample_vs_token():
    values = torch.tensor([1.0, -1.0], dtype=torch.float64)
    sample = batch_whiten(values, get_convention("exact"))
    assert sample.tolist() == pytest.approx([SQRT_HALF, -SQRT_HALF])
    token = batch_whiten(values, get_convention("verl"), response_lengths=torch.tensor([1.0, 1.0]))
    assert token.tolist() == pytest.approx([SQRT_HALF, -SQRT_HALF], rel=1e-7)


def test_per_response_whitening_counts_each_non_empty_response_once():
    # verl PR #6497: values (3, 1, -1) with lengths (5, 1, 0): the empty response takes no part, the others
    # count once each whatever their length → mean 2, sample variance 2 → (±1)/√(2 + 1e-8).
    values = torch.tensor([3.0, 1.0, -1.0], dtype=torch.float64)
    lengths = torch.tensor([5.0, 1.0, 0.0])
    response = batch_whiten(values, get_convention("verl_pr6497"), response_lengths=lengths)
    unit = 1 / math.sqrt(2 + 1e-8)
    assert response[:2].tolist() == pytest.approx([unit, -unit], rel=1e-12)
    token = batch_whiten(values, get_convention("verl"), response_lengths=lengths)
    assert abs(float(token[0]) - float(response[0])) > 1e-3  # the field matters: tokens weigh 5 : 1
    with pytest.raises(ValueError, match="whitens over responses, so it needs response_lengths"):
        batch_whiten(values, get_convention("verl_pr6497"))


def test_batch_whiten_whitens_each_leading_index_separately():
    values = torch.tensor([[1.0, 2.0, 4.0], [5.0, 5.0, 5.0]], dtype=torch.float64)
    out = batch_whiten(values, get_convention("exact"))
    assert out[0].tolist() == batch_whiten(values[0], get_convention("exact")).tolist()
    assert out[1].tolist() == [0.0, 0.0, 0.0]


# --------------------------------------------------------------------------------------------------
# Loop reference vs vectorised, over shapes and seeds
# --------------------------------------------------------------------------------------------------


def random_rewards(rng: np.random.Generator, rows: int, num_rewards: int, kind: str) -> np.ndarray:
    if kind == "binary":
        rewards = rng.integers(0, 2, size=(rows, num_rewards)).astype(float)
    elif kind == "ranged":  # ToolRL-like correctness in [−3, 3], a few distinct levels
        rewards = rng.choice([-3.0, -1.5, 0.0, 1.0, 3.0], size=(rows, num_rewards))
    else:  # graded in [0, 1] with missing values
        rewards = rng.random((rows, num_rewards))
        rewards[rng.random((rows, num_rewards)) < 0.25] = np.nan
        rewards[rng.random(rows) < 0.1] = np.nan  # some rollouts without any reward
    return rewards


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("method", METHODS)
def test_vectorised_matches_loop_reference(method, convention):
    for seed in range(4):
        rng = np.random.default_rng(seed)
        for G in (2, 3, 4, 8):
            for prompts in (1, 3):
                for num_rewards in (1, 2, 4):
                    for kind in ("binary", "ranged", "graded"):
                        rewards = random_rewards(rng, G * prompts, num_rewards, kind)
                        weights = rng.uniform(0.1, 2.0, num_rewards).tolist()
                        lengths = rng.integers(1, 6, G * prompts).tolist()
                        if num_rewards == 1 and method.startswith("gdpo") and convention.startswith("nemo"):
                            with pytest.raises(ValueError, match="single reward function"):
                                compute_advantages(rewards, G, method, weights, convention, lengths)
                            continue
                        got = compute_advantages(rewards, G, method, weights, convention, lengths)
                        want = reference_advantages(rewards.tolist(), G, method, weights, convention, lengths)
                        assert got.tolist() == pytest.approx(want, abs=1e-9), (seed, G, prompts, num_rewards, kind)


# --------------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------------

# Rewards on a 1e-3 grid: a reward of 1e-152 next to 1.0 would only test float absorption.
reward_batches = st.integers(2, 6).flatmap(
    lambda G: st.tuples(
        st.just(G),
        st.integers(1, 4).flatmap(
            lambda prompts: st.integers(1, 4).flatmap(
                lambda n: st.lists(
                    st.lists(st.one_of(st.sampled_from([0.0, 1.0, -3.0, 3.0, 0.5]), st.floats(-3, 3).map(lambda x: round(x, 3)), st.just(float("nan"))),
                             min_size=n, max_size=n),
                    min_size=G * prompts, max_size=G * prompts,
                )
            )
        ),
    )
)


@settings(max_examples=150, deadline=None)
@given(reward_batches, st.sampled_from(CONVENTIONS), st.sampled_from(METHODS))
def test_never_nan_and_no_reward_rows_get_zero(batch, convention, method):
    G, rewards = batch
    lengths = [3] * len(rewards)
    if len(rewards[0]) == 1 and method.startswith("gdpo") and convention.startswith("nemo"):
        return  # refused (test_nemo_refuses_per_reward_methods_with_one_reward)
    out = compute_advantages(rewards, G, method, convention=convention, response_lengths=lengths)
    assert not torch.isnan(out).any()
    scored_as_zero = get_convention(convention).missing_rewards == "zero" or convention == "trl_0_27"
    for row, value in zip(rewards, out.tolist()):
        if all(math.isnan(r) for r in row) and not scored_as_zero:
            assert value == 0.0


@settings(max_examples=150, deadline=None)
@given(reward_batches, st.sampled_from(["trl", "trl_0_27", "nvlabs", "nemo", "nemo_loo", "exact"]),
       st.sampled_from(["gdpo", "gdpo_nostd"]))
def test_batch_normalised_gdpo_has_mean_zero(batch, convention, method):
    G, rewards = batch
    if len(rewards[0]) == 1 and convention.startswith("nemo"):
        return
    out = compute_advantages(rewards, G, method, convention=convention)
    assert float(out.sum()) == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(reward_batches, st.lists(st.integers(1, 50), min_size=24, max_size=24))
def test_verl_gdpo_has_token_weighted_mean_zero(batch, lengths):
    G, rewards = batch
    lengths = lengths[: len(rewards)]
    out = compute_advantages(rewards, G, "gdpo", convention="verl", response_lengths=lengths)
    assert float((out * torch.tensor(lengths, dtype=out.dtype)).sum()) == pytest.approx(0.0, abs=1e-7)


def test_cancelling_weighted_terms_give_zero_not_amplified_rounding_noise():
    # One prompt, G = 2, weights 1..4: normalised rewards (−a, a), (0, 0), (−a, a), (a, −a) with a = 1/√2
    # sum to 1·(−a) + 3·(−a) + 4·a = 0 for each rollout; in floats that is ~1e-16 noise, which a batch step
    # without ε used to whiten to ±0.71 (found by the weight-scale property below). Only under "exact": a
    # group ε (nemo's 1e-6) leaves a real residual of order ε, which nemo's ε-free batch step does whiten.
    rewards = [[0.0, 0.0, -2.0, 0.0], [1.0, float("nan"), 1.0, -1.0]]
    for scale in (1.0, 13.0):
        out = compute_advantages(rewards, 2, "gdpo", weights=[scale * w for w in (1, 2, 3, 4)], convention="exact")
        assert out.tolist() == [0.0, 0.0]


@settings(max_examples=150, deadline=None)
@given(reward_batches, st.floats(0.01, 100.0), st.sampled_from(["nemo", "nemo_loo", "exact"]))
def test_gdpo_invariant_to_common_positive_weight_scale(batch, scale, convention):
    # Exact invariance needs a batch step without ε (nemo, exact); with ε it holds up to ε's effect.
    G, rewards = batch
    num_rewards = len(rewards[0])
    if num_rewards == 1 and convention.startswith("nemo"):
        return  # refused with one reward
    weights = [1.0 + k for k in range(num_rewards)]
    base = compute_advantages(rewards, G, "gdpo", weights=weights, convention=convention)
    scaled = compute_advantages(rewards, G, "gdpo", weights=[scale * w for w in weights], convention=convention)
    assert scaled.tolist() == pytest.approx(base.tolist(), abs=1e-7)


@settings(max_examples=150, deadline=None)
@given(reward_batches, st.floats(-5, 5), st.floats(0.1, 10))
def test_gdpo_per_reward_normalisation_ignores_each_reward_scale_and_offset(batch, offset, scale):
    # Decoupling: an affine change of one reward leaves GDPO's advantages unchanged.
    G, rewards = batch
    changed = [[scale * row[0] + offset, *row[1:]] for row in rewards]
    base = compute_advantages(rewards, G, "gdpo_nobn", convention="exact")
    assert compute_advantages(changed, G, "gdpo_nobn", convention="exact").tolist() == pytest.approx(
        base.tolist(), abs=1e-7
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-3, 3).map(lambda x: round(x, 3)), min_size=2, max_size=6), st.sampled_from(["trl", "nemo", "exact"]))
def test_missing_reward_is_left_out_of_group_statistics(values, convention):
    # A rollout without reward changes nothing for the others: the group with a NaN member gives the
    # same advantages as the group without it.
    # (A constant second reward contributes 0 and keeps NeMo-RL's two-reward minimum.)
    with_missing = compute_advantages([[v, 1.0] for v in values] + [[NAN, NAN]], len(values) + 1, "gdpo_nobn",
                                      convention=convention)
    without = compute_advantages([[v, 1.0] for v in values], len(values), "gdpo_nobn", convention=convention)
    assert with_missing[:-1].tolist() == pytest.approx(without.tolist(), abs=1e-9)
    assert with_missing[-1] == 0.0


# --------------------------------------------------------------------------------------------------
# Rollouts without any reward, one reward, GDPO without the per-reward std
# --------------------------------------------------------------------------------------------------

NAN = float("nan")


def test_rollout_without_any_reward_per_convention():
    # Group (1, None): TRL >= 1.6 leaves the None rollout out, so the group is a singleton → (0, 0).
    # TRL 0.27-1.5 and NVlabs score it as reward 0 → the group is (1, 0) → ±0.5 / (0.70711 + 1e-4).
    a = 0.5 / (SQRT_HALF + 1e-4)
    assert advantages_of([[1.0], [NAN]], 2, "grpo", "trl") == [0.0, 0.0]
    assert advantages_of([[1.0], [NAN]], 2, "grpo", "trl_0_27") == pytest.approx([a, -a], rel=1e-12)
    assert advantages_of([[1.0], [NAN]], 2, "grpo", "nvlabs") == pytest.approx([a, -a], rel=1e-12)


def test_nvlabs_zero_fills_an_all_none_rollout_before_the_per_reward_statistics():
    # Group 2 is (None, None), (1, 1): zero-filled to (0, 0), (1, 1) → per-reward ∓c, sums ∓2c; group 1
    # cancels to 0. Batch (0, 0, −2c, 2c): mean 0, sample std 2c·√(2/3), ε = 1e-4.
    c = 0.5 / (SQRT_HALF + 1e-4)
    whitened = 2 * c / (2 * c * math.sqrt(2 / 3) + 1e-4)
    rewards = [[1, 0], [0, 1], [NAN, NAN], [1, 1]]
    expected = [0, 0, -whitened, whitened]
    assert advantages_of(rewards, 2, "gdpo", "nvlabs") == pytest.approx(expected, abs=1e-12)
    # TRL >= 1.6: the None rollout is out, (1, 1) is a singleton group → everything 0.
    assert advantages_of(rewards, 2, "gdpo", "trl") == [0.0] * 4


def test_trl_0_27_counts_an_all_none_rollout_in_the_batch_step_but_not_the_per_reward_statistics():
    # Group 1 gives per-reward sums (c, −c); group 2 is (None, None) and (1, 1): a singleton per reward → 0.
    # TRL >= 1.6 whitens over 3 rollouts (c, −c, 0); TRL 0.27-1.5 over 4 (c, −c, 0, 0).
    c = 0.5 / (SQRT_HALF + 1e-4)
    rewards = [[1, 0], [0, 0], [NAN, NAN], [1, 1]]
    assert advantages_of(rewards, 2, "gdpo", "trl") == pytest.approx([c / (c + 1e-4), -c / (c + 1e-4), 0, 0])
    over_four = c / (c * math.sqrt(2 / 3) + 1e-4)
    assert advantages_of(rewards, 2, "gdpo", "trl_0_27") == pytest.approx([over_four, -over_four, 0, 0])


def test_one_reward_under_nvlabs_runs_grpo():
    # The fork applies GDPO only with more than one reward: two prompts, one with twice the spread, give
    # GRPO's per-group z-scores (±0.707 both), where GDPO's batch step would rescale them together.
    rewards = [[0.0], [1.0], [0.0], [2.0]]
    for gdpo_method, grpo_method in (("gdpo", "grpo"), ("gdpo_nobn", "grpo"), ("gdpo_nostd", "grpo_nostd")):
        got = advantages_of(rewards, 2, gdpo_method, "nvlabs", weights=[0.5])
        assert got == advantages_of(rewards, 2, grpo_method, "nvlabs", weights=[0.5])
    assert advantages_of(rewards, 2, "gdpo_nostd", "nvlabs", weights=[0.5]) == [-0.25, 0.25, -0.5, 0.5]
    assert advantages_of(rewards, 2, "gdpo_nostd", "trl", weights=[0.5]) != [-0.25, 0.25, -0.5, 0.5]


@settings(max_examples=100, deadline=None)
@given(reward_batches, st.floats(-3, 3).filter(lambda w: abs(w) > 0.01))
def test_one_reward_gdpo_is_abs_weight_times_grpo_under_exact(batch, weight):
    # The documented equivalence: with one reward the decoupling is vacuous; w·z vs GRPO's z of w·r.
    G, rewards = batch
    column = [[row[0]] for row in rewards]
    nobn = compute_advantages(column, G, "gdpo_nobn", weights=[weight], convention="exact")
    grpo = compute_advantages(column, G, "grpo", weights=[weight], convention="exact")
    assert nobn.tolist() == pytest.approx((abs(weight) * grpo).tolist(), abs=1e-9)
    whitened = compute_advantages(column, G, "gdpo", weights=[weight], convention="exact")
    valid = ~torch.isnan(torch.tensor([r[0] for r in column]))
    expected = batch_whiten(nobn, get_convention("exact"), valid)
    assert whitened.tolist() == pytest.approx(expected.tolist(), abs=1e-9)


@pytest.mark.parametrize("convention", ["nemo", "nemo_loo"])
@pytest.mark.parametrize("method", ["gdpo", "gdpo_nobn", "gdpo_nostd"])
def test_nemo_refuses_per_reward_methods_with_one_reward(method, convention):
    with pytest.raises(ValueError, match=f"use '{adv.get_estimator(method).grpo_counterpart}'"):
        compute_advantages([[0.0], [1.0]], 2, method, convention=convention)
    assert compute_advantages([[0.0, 1.0], [1.0, 1.0]], 2, method, convention=convention).shape == (2,)
    assert compute_advantages([[0.0], [1.0]], 2, "grpo", convention=convention).shape == (2,)


@settings(max_examples=150, deadline=None)
@given(reward_batches, st.sampled_from(["trl", "verl", "nemo_loo", "exact"]))
def test_gdpo_nostd_before_its_batch_step_is_grpo_nostd_when_no_reward_is_missing(batch, convention):
    # Centring is linear: Σ_k w_k (r_k − mean_k) = r_sum − mean(r_sum) (also with leave-one-out baselines).
    G, rewards = batch
    complete = [[0.0 if math.isnan(r) else r for r in row] for row in rewards]
    weights = [1.0 + 0.5 * k for k in range(len(complete[0]))]
    if len(weights) == 1 and convention.startswith("nemo"):
        return
    before = compute_advantages(complete, G, "gdpo_nostd", weights, convention, batch_step=False)
    grpo_nostd = compute_advantages(complete, G, "grpo_nostd", weights, convention)
    assert before.tolist() == pytest.approx(grpo_nostd.tolist(), abs=1e-9)


def test_gdpo_nostd_differs_from_grpo_nostd_where_a_reward_is_missing():
    # Reward 2 is None for rollout 2, so its mean is over rollouts 1 and 3 only: (1 − 0.5), ·, (0 − 0.5).
    rewards = [[1.0, 1.0], [0.0, NAN], [0.0, 0.0]]
    before = advantages_of(rewards, 3, "gdpo_nostd", "exact", batch_step=False)
    assert before == pytest.approx([2 / 3 + 0.5, -1 / 3, -1 / 3 - 0.5])
    assert advantages_of(rewards, 3, "grpo_nostd", "exact") == pytest.approx([4 / 3, -2 / 3, -2 / 3])


def test_batch_step_false_gives_the_values_before_the_batch_step():
    rewards = [[0, 1], [1, 1], [0, 0], [1, 0]]
    before = advantages_of(rewards, 2, "gdpo", "trl", batch_step=False)
    assert before == advantages_of(rewards, 2, "gdpo_nobn", "trl")
    assert before != advantages_of(rewards, 2, "gdpo", "trl")
    grpo = advantages_of(rewards, 2, "grpo", "trl")
    assert advantages_of(rewards, 2, "grpo", "trl", batch_step=False) == grpo  # no batch step to skip
    assert adv.get_estimator("gdpo_nostd").batch_step and not adv.get_estimator("gdpo_nobn").batch_step


# --------------------------------------------------------------------------------------------------
# Input handling and errors
# --------------------------------------------------------------------------------------------------


def test_accepts_tensors_arrays_lists_and_none():
    expected = advantages_of([[0, 1], [1, 1]], 2, "gdpo")
    assert advantages_of(np.array([[0, 1], [1, 1]]), 2, "gdpo") == expected
    assert advantages_of(torch.tensor([[0, 1], [1, 1]]), 2, "gdpo") == expected
    assert advantages_of([[0, None], [1, None]], 2, "grpo") == pytest.approx([-SQRT_HALF, SQRT_HALF])


def test_output_dtype_and_device_follow_float_tensor_input():
    out = compute_advantages(torch.tensor([[0.0], [1.0]], dtype=torch.float32), 2, "grpo")
    assert out.dtype == torch.float32 and out.shape == (2,)
    assert compute_advantages([[0], [1]], 2, "grpo").dtype == torch.float64


def test_one_dimensional_rewards_are_one_reward():
    assert advantages_of([0, 1, 1, 1], 2, "grpo") == advantages_of([[0], [1], [1], [1]], 2, "grpo")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(rewards=[[0], [1]], num_generations=1), "num_generations must be an integer ≥ 2"),
        (dict(rewards=[[0], [1]], num_generations=2.0), "num_generations must be an integer ≥ 2"),
        (dict(rewards=[[0], [1], [1]], num_generations=2), "not a multiple of num_generations=2"),
        (dict(rewards=[[0, 1], [1, 1]], num_generations=2, weights=[1.0]), "weights has 1 entries but rewards has 2"),
        (dict(rewards=[[0, 1], [1, 1]], num_generations=2, weights=[1.0, float("inf")]), "weights must be finite"),
        (dict(rewards=[["a"], ["b"]], num_generations=2), "rewards must be numbers"),
        (dict(rewards=[[0, 1], [1]], num_generations=2), "rectangular"),
        (dict(rewards=[[0], [float("inf")]], num_generations=2), "±inf"),
        (dict(rewards=torch.tensor([[1j], [0j]]), num_generations=2), "real numbers"),
        (dict(rewards=np.zeros((2, 1, 1)), num_generations=2), "shape (B, n)"),
        (dict(rewards=[[0], [1]], num_generations=2, method="gdpo", convention="verl"), "needs response_lengths"),
        (dict(rewards=[[0], [1]], num_generations=2, method="gdpo_nostd", convention="verl_pr6497"),
         "needs response_lengths"),
        (dict(rewards=[[0], [1]], num_generations=2, method="gdpo", convention="nemo"),
         "refuses that with a single reward function: pass two or more reward columns, use 'grpo'"),
        (dict(rewards=[[0], [1]], num_generations=2, response_lengths=[1]), "response_lengths has 1 entries"),
        (dict(rewards=[[0], [1]], num_generations=2, response_lengths=[1, -1]), "≥ 0"),
        (dict(rewards=[[0], [1]], num_generations=2, method="ppo"),
         "valid methods are: gdpo, gdpo_nobn, gdpo_nostd, grpo"),
        (dict(rewards=[[0], [1]], num_generations=2, convention="vllm"), "valid conventions are: exact, nemo"),
    ],
)
def test_bad_input_raises_value_error_saying_how_to_fix(kwargs, message):
    kwargs.setdefault("method", "grpo")
    with pytest.raises(ValueError) as error:
        compute_advantages(**kwargs)
    assert message in str(error.value)


# --------------------------------------------------------------------------------------------------
# Registries
# --------------------------------------------------------------------------------------------------


def test_registries_list_the_paper_methods_and_conventions():
    assert {"grpo", "grpo_nostd", "gdpo", "gdpo_nobn", "gdpo_nostd"} <= set(registered_estimators())
    assert set(CONVENTIONS) <= set(available_conventions())


def test_the_built_in_methods_are_registered_under_plain_names_with_their_figure_style():
    from gdpo.methods import Method, method_color, method_label, paper_order

    assert [type(name) for name in registered_estimators()] == [str] * len(registered_estimators())
    assert {str(m) for m in Method} <= set(registered_estimators())
    assert adv.get_estimator(Method.GDPO).name == "gdpo" and adv.get_estimator("gdpo").grpo_counterpart == "grpo"
    assert (method_label("gdpo_nobn"), method_color("grpo")) == ("GDPO w/o batch norm", "#1f77b4")
    assert (method_label("test_max_baseline"), method_color("test_max_baseline")) == ("test_max_baseline", None)
    assert paper_order(["zeta", "gdpo", "grpo"]) == ["grpo", "gdpo", "zeta"]


def test_registering_a_new_estimator_makes_it_usable_everywhere():
    @register_estimator("test_max_baseline", description="reward sum minus the group max")
    def max_baseline(inputs):
        summed = inputs.weighted_sum().view(-1, inputs.num_generations)
        return (summed - summed.max(dim=1, keepdim=True).values).flatten()

    try:
        assert "test_max_baseline" in registered_estimators()
        assert "test_max_baseline" in methods.available_methods()  # a config in this process may name it
        assert advantages_of([[0, 1], [1, 1]], 2, "test_max_baseline") == [-1.0, 0.0]
        with pytest.raises(ValueError, match="already registered"):
            register_estimator("test_max_baseline")(max_baseline)
    finally:
        adv._ESTIMATORS.pop("test_max_baseline")
        methods._METHODS.pop("test_max_baseline")


def test_the_methods_a_config_may_name_are_the_implemented_ones():
    """gdpo.methods (torch-free, read when planning) and the estimators agree name for name, and each estimator
    holds its method's declaration itself (no copy of its fields to drift)."""
    assert methods.available_methods() == registered_estimators()
    for name in registered_estimators():
        spec, estimator = methods.get_method(name), adv.get_estimator(name)
        assert estimator.method is spec
        assert (spec.name, spec.description, spec.batch_step, spec.grpo_counterpart, spec.group_local) == (
            estimator.name, estimator.description, estimator.batch_step, estimator.grpo_counterpart,
            estimator.group_local)


def test_duplicate_builtin_names_are_refused():
    with pytest.raises(ValueError, match="already registered"):
        register_estimator("gdpo")(lambda inputs: inputs.rewards[:, 0])
    with pytest.raises(ValueError, match="already registered"):
        adv.register_convention(Convention(name="trl"))


def test_convention_objects_are_accepted_and_checked():
    custom = Convention(name="custom", group_eps=1e-3, batch_eps=0.0)
    assert advantages_of(TOTALS_01, 2, "grpo_nostd", custom) == pytest.approx([-0.5, 0.5])
    with pytest.raises(ValueError, match="batch_whitening"):
        Convention(name="bad", batch_whitening="row")
    with pytest.raises(ValueError, match="group_eps"):
        Convention(name="bad", group_eps=-1.0)
    for field in ("unscored_rollouts", "single_reward", "missing_rewards"):
        with pytest.raises(ValueError, match=field):
            Convention(name="bad", **{field: "sometimes"})


# --------------------------------------------------------------------------------------------------
# GDPO's option clip (docs/add-an-estimator-option.md)
# --------------------------------------------------------------------------------------------------

#: G = 16: one rollout of 16 succeeds on the first reward (z = 15/16 / 0.25 = 3.75), the second reward is
#: 0/1 alternating (|z| = 0.5 / 0.5164 < 1).
RARE_SUCCESS = [[1.0 if i == 0 else 0.0, float(i % 2)] for i in range(16)]


def test_gdpo_clip_bounds_each_rewards_normalised_advantage_before_the_sum():
    rewards = torch.tensor(RARE_SUCCESS, dtype=torch.float64)
    per_reward = adv.group_normalise(rewards, 16, get_convention("exact"))
    assert per_reward[0, 0].item() == pytest.approx(3.75)
    clipped = compute_advantages(rewards, 16, "gdpo", weights=[1.0, 0.5], convention="exact", batch_step=False,
                                 options={"clip": 3.0})
    expected = per_reward.clamp(-3.0, 3.0) @ torch.tensor([1.0, 0.5], dtype=torch.float64)
    assert clipped.tolist() == pytest.approx(expected.tolist(), abs=1e-12)
    assert clipped[0].item() == pytest.approx(3.0 + 0.5 * per_reward[0, 1].item())
    # with the batch step: the clipped sum whitened over the batch
    whitened = compute_advantages(rewards, 16, "gdpo", weights=[1.0, 0.5], convention="exact", options={"clip": 3})
    assert whitened.tolist() == pytest.approx(batch_whiten(expected, get_convention("exact")).tolist(), abs=1e-12)


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_gdpo_clip_at_or_above_the_largest_normalised_value_changes_nothing(convention):
    # |z| ≤ (G − 1)/√G within a group of G: 3.75 at G = 16.
    lengths = [float(3 + i) for i in range(16)]
    plain = compute_advantages(RARE_SUCCESS, 16, "gdpo", convention=convention, response_lengths=lengths)
    loose = compute_advantages(RARE_SUCCESS, 16, "gdpo", convention=convention, response_lengths=lengths,
                               options={"clip": 15 / math.sqrt(16)})
    assert torch.equal(plain, loose)
    assert not torch.equal(plain, compute_advantages(RARE_SUCCESS, 16, "gdpo", convention=convention,
                                                     response_lengths=lengths, options={"clip": 1.0}))


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), "3", True])
def test_gdpo_clip_refuses_a_value_that_is_not_a_positive_number(value):
    with pytest.raises(ValueError, match=r"option 'clip' = .* is not allowed: it takes a number > 0"):
        compute_advantages(RARE_SUCCESS, 16, "gdpo", options={"clip": value})


def test_an_option_a_method_does_not_take_is_named_with_the_ones_it_does():
    with pytest.raises(ValueError, match=r"method 'gdpo' has no option 'clp'; its options are: clip\."):
        compute_advantages(RARE_SUCCESS, 16, "gdpo", options={"clp": 3.0})
    with pytest.raises(ValueError, match=r"method 'grpo' has no option 'clip'; it takes no options\."):
        compute_advantages(RARE_SUCCESS, 16, "grpo", options={"clip": 3.0})
    # GDPO with one reward under nvlabs runs GRPO, which would drop the option: refused, not dropped
    with pytest.raises(ValueError, match="runs as 'grpo' .* has no option 'clip'"):
        compute_advantages([[0.0], [1.0]], 2, "gdpo", convention="nvlabs", options={"clip": 3.0})
    assert compute_advantages([[0.0], [1.0]], 2, "gdpo", convention="trl", options={"clip": 3.0}).shape == (2,)


# --------------------------------------------------------------------------------------------------
# Reward conditioning (Eq. 8)
# --------------------------------------------------------------------------------------------------


def test_condition_rewards_pays_easy_reward_only_when_hard_is_met():
    rewards = [[1.0, 1.0], [0.0, 1.0], [float("nan"), 1.0], [1.0, 0.0]]
    conditioned = condition_rewards(rewards, easy=1, hard=0, threshold=1.0)
    assert conditioned[:, 1].tolist() == [1.0, 0.0, 0.0, 0.0]
    assert torch.equal(torch.isnan(conditioned[:, 0]), torch.tensor([False, False, True, False]))


def test_condition_rewards_keeps_input_and_dtype():
    rewards = torch.tensor([[0.0, 1.0], [1.0, 1.0]], dtype=torch.float32)
    conditioned = condition_rewards(rewards, easy=[1], hard=0)
    assert rewards[0, 1] == 1.0 and conditioned[0, 1] == 0.0 and conditioned.dtype == torch.float32


def test_condition_rewards_bad_columns():
    with pytest.raises(ValueError, match="does not exist"):
        condition_rewards([[0.0, 1.0]], easy=2, hard=0)
    with pytest.raises(ValueError, match="cannot also be"):
        condition_rewards([[0.0, 1.0]], easy=0, hard=0)
