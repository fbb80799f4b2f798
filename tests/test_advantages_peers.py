"""Each registered convention against a reimplementation of the peer it names, where the peers differ.

Every reference below was written from the peer's source file at the commit named (read, then restated
here step by step; no code copied), and computes in float64: the peers compute in float32 (TRL's
``rewards_per_func``, verl's scores), a property of their dtype rather than of their formulas.

- ``trl_reference(..., version="1.6")``: huggingface/trl, ``trl/trainer/grpo_trainer.py``,
  ``GRPOTrainer._generate_and_score_completions`` (``multi_objective_aggregation`` ``sum_then_normalize``
  with ``scale_rewards`` ``group`` / ``none``, and ``normalize_then_sum``), with ``nanstd`` from
  ``trl/trainer/utils.py``; tag v1.6.0 = 0dac440542c2ef9b575f56534f29f6fca1febe4a (the unscorable-rollout
  change, #5902, is 1c7c7f9889b1087b51cffa1906cff603c7fdd61d); the block is unchanged at
  f2cd57710ae345ea6428ae95363267fcf38a3dc8.
- ``trl_reference(..., version="0.27")``: the same function at v0.27.0 =
  17acd61f28140243a458d10656a2194af788ff38 and v1.5.1 = 32efb4b0dd5a69c9623f831adf4f8d9ed4ff4a23 (GDPO
  arrived in 0e0cb5f1584c92629abd5a5a5a7f2cfa9cc9b73e).
- ``nvlabs_reference``: NVlabs/GDPO, ``trl-GDPO/trl-0.18.0-gdpo/trl/trainer/grpo_trainer.py``,
  ``_generate_and_score_completions`` (``apply_gdpo``), commit b080e63d0126870ad08acc8ebc3f04b728175a9e.
- ``verl_reference``: verl-project/verl (formerly volcengine/verl), ``verl/trainer/ppo/core_algos.py``
  ``compute_gdpo_outcome_advantage`` and ``compute_grpo_outcome_advantage``,
  ``verl/utils/torch_functional.py`` ``masked_mean`` / ``masked_var`` / ``masked_whiten``, commit 1dda039b9c6311889a9c9a26040677e1254814f9 (GDPO added by #5503,
  b560d9f4213307d2d9616e5a6eb5209582f737ec). ``per_response=True``: the open PR #6497, head
  c2ecb1aed5de9ba6025126338042cb69f183155e. ``fork=True``: the NVlabs verl fork, NVlabs/GDPO
  ``verl-GDPO/verl/trainer/ppo/ray_trainer.py`` ``compute_advantage`` (``'gdpo'``: two rewards, no weights),
  ``verl-GDPO/verl/trainer/ppo/core_algos.py``, ``verl-GDPO/verl/utils/torch_functional.py`` at b080e63d.
- ``nemo_reference``: NVIDIA-NeMo/RL, ``nemo_rl/algorithms/advantage_estimator.py``
  ``GDPOAdvantageEstimator.compute_advantage`` and ``GRPOAdvantageEstimator.compute_advantage``,
  ``nemo_rl/algorithms/utils.py`` ``calculate_baseline_and_std_per_prompt``, commit
  7ea279abfbeb698b092856d0dab61e7cf39bc909.

The test fails on any difference over 1e-6, except the cases in ``PEER_IS_WRONG``, each with the reason;
for those it checks that the peer really differs (a stale record fails too).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from gdpo.advantages import compute_advantages

TOLERANCE = 1e-6
NAN = float("nan")


# --------------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """A batch as the peers see it.

    Attributes:
        rewards: B rows of n rewards, None = the reward function returned None.
        groups: (B,) prompt id of each rollout, contiguous; groups may differ in size.
        weights: (n,) reward weights.
        lengths: (B,) response lengths in tokens (≥ 1).
    """

    name: str
    rewards: list[list[float | None]]
    groups: list[int]
    weights: list[float]
    lengths: list[int]

    @property
    def equal_groups(self) -> int | None:
        """G if every group has the same size (what TRL's layout needs), else None."""
        sizes = {self.groups.count(g) for g in set(self.groups)}
        return sizes.pop() if len(sizes) == 1 else None

    @property
    def num_rewards(self) -> int:
        return len(self.rewards[0])

    @property
    def has_none(self) -> bool:
        return any(r is None for row in self.rewards for r in row)


def _lengths(count: int, seed: int) -> list[int]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(1, 40, (count,), generator=generator).tolist()


def _case(name, rewards, group_sizes, weights=None, seed=0):
    groups = [g for g, size in enumerate(group_sizes) for _ in range(size)]
    assert len(groups) == len(rewards), name
    weights = weights or [1.0] * len(rewards[0])
    return Case(name, rewards, groups, weights, _lengths(len(rewards), seed))


def _graded(count: int, num_rewards: int, seed: int, offset: float = 0.0) -> list[list[float]]:
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(count, num_rewards, generator=generator, dtype=torch.float64)
    return (offset + values.mul(1000).round() / 1000).tolist()


CASES = [
    # Binary correctness and format, two prompts: the paper's setting.
    _case("binary", [[1, 1], [0, 1], [1, 0], [0, 0], [1, 1], [1, 1], [0, 1], [1, 1]], [4, 4], [1.0, 0.5], 1),
    # A reward constant within a group, and a group constant in every reward (zero std).
    _case("zero_std", [[1, 0], [1, 1], [1, 0], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]], [3, 3], [1.0, 2.0], 2),
    # Equal values that are not binary fractions: the group mean is off by a rounding residue.
    _case("zero_std_graded", [[0.1, 0.7], [0.1, 0.2], [0.1, 0.3], [0.3, 0.9], [0.6, 0.9], [0.2, 0.9]], [3, 3],
          [1.0, 1.0], 3),
    # One prompt in the batch (NVlabs/GDPO issue #3), three graded rewards.
    _case("single_prompt", _graded(5, 3, 4), [5], [1.0, 0.5, 2.0], 4),
    # Weights, one of them negative (a penalty), ToolRL-like correctness in [−3, 3].
    _case("weights",
          [[3, 1, 0], [-3, 0, 1], [1.5, 1, 1], [-1.5, 0, 0], [3, 1, 1], [0, 1, 0], [0, 0, 1], [3, 1, 0]],
          [4, 4], [1.0, 0.75, -0.5], 5),
    # A large common offset on a graded reward (e.g. a raw log-likelihood), with a zero-std group in it.
    _case("large_offset", [[1e7 + v[0], v[1]] for v in _graded(6, 2, 6)] + [[1e7 + 0.1, 1.0]] * 3, [3, 3, 3],
          [1.0, 1.0], 6),
    # Some rewards do not apply (None) to some rollouts.
    _case("none_partial", [[1, None], [0, 1], [1, 0], [0, None], [None, 1], [1, 1]], [3, 3], [1.0, 1.0], 7),
    # A rollout no reward function applies to.
    _case("none_all", [[1, 0], [None, None], [0, 1], [1, 1], [0, 0], [1, 0]], [3, 3], [1.0, 1.0], 8),
    # With G = 2, a rollout without rewards leaves its group a single scored rollout.
    _case("none_singleton", [[0.7, 0.2], [None, None], [1, 0], [0, 1], [0, 0], [1, 1]], [2, 2, 2],
          [1.0, 1.0], 9),
    # Groups of 3, 1 and 4 rollouts (verl and NeMo-RL group by prompt id; the 1 is a singleton group).
    _case("unequal_groups", _graded(8, 2, 10), [3, 1, 4], [1.0, 0.5], 10),
    # Two complementary rewards (r2 = 1 − r1), G = 3: the per-reward advantages cancel exactly.
    _case("complementary", [[1, 0], [1, 0], [0, 1]], [3], [1.0, 1.0], 11),
    # One reward function.
    _case("single_reward", [[0], [1], [1], [0], [2], [0], [1], [1]], [4, 4], [0.5], 12),
]
CASES_BY_NAME = {case.name: case for case in CASES}


# --------------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------------


def _tensor(case: Case) -> torch.Tensor:
    """(B, n) float64 with NaN for None, as TRL turns None into NaN."""
    rows = [[NAN if r is None else float(r) for r in row] for row in case.rewards]
    return torch.tensor(rows, dtype=torch.float64)


def _trl_nanstd(values: torch.Tensor, dim=None, keepdim=False) -> torch.Tensor:
    """TRL's nanstd: NaN-ignoring mean of squared deviations times count / (count − 1); NaN if count ≤ 1."""
    mean = torch.nanmean(values, dim=dim, keepdim=True)
    variance = torch.nanmean((values - mean) ** 2, dim=dim, keepdim=True)
    count = (~torch.isnan(values)).sum(dim=dim, keepdim=True).to(values.dtype)
    correction = torch.where(count > 1, count / (count - 1), torch.full_like(count, NAN))
    std = (variance * correction).sqrt()
    if not keepdim:
        std = std.squeeze() if dim is None else std.squeeze(dim)
    return std


def trl_reference(case: Case, method: str, version: str) -> torch.Tensor:
    """TRL's advantage step. ``version="1.6"``: rollouts whose rewards are all None are marked NaN after the
    weighted ``nansum`` (NaN-aware statistics), and every NaN advantage becomes 0 at the end; ``"0.27"``:
    ``nansum`` makes such a rollout's sum 0 and the statistics of sums are the plain ones."""
    rewards, G = _tensor(case), case.equal_groups
    weights = torch.tensor(case.weights, dtype=torch.float64)
    unscorable = torch.isnan(rewards).all(dim=1)
    if method in ("grpo", "grpo_nostd"):  # sum_then_normalize, scale_rewards "group" / "none"
        summed = (rewards * weights).nansum(dim=1)
        if version == "1.6":
            summed[unscorable] = NAN
            mean = torch.nanmean(summed.view(-1, G), dim=1)
            std = _trl_nanstd(summed.view(-1, G), dim=1)
        else:
            mean, std = summed.view(-1, G).mean(dim=1), summed.view(-1, G).std(dim=1)
        advantages = summed - mean.repeat_interleave(G)
        if method == "grpo":
            advantages = advantages / (std.repeat_interleave(G) + 1e-4)
    elif method == "gdpo":  # normalize_then_sum (scale_rewards is ignored there)
        grouped = rewards.view(-1, G, case.num_rewards)
        per_reward = (grouped - torch.nanmean(grouped, dim=1, keepdim=True)) / (
            _trl_nanstd(grouped, dim=1, keepdim=True) + 1e-4)
        summed = (per_reward.view(-1, case.num_rewards) * weights).nansum(dim=1)
        if version == "1.6":
            summed[unscorable] = NAN
            advantages = (summed - torch.nanmean(summed)) / (_trl_nanstd(summed) + 1e-4)
        else:
            advantages = (summed - summed.mean()) / (summed.std() + 1e-4)
    else:
        raise NotImplementedError(method)
    return torch.nan_to_num(advantages, nan=0.0) if version == "1.6" else advantages


def nvlabs_reference(case: Case, method: str) -> torch.Tensor:
    """The NVlabs TRL 0.18 fork. With ``apply_gdpo`` and more than one reward: every NaN → 0, per-reward
    group z-scores with ε 1e-4, weighted sum, whitening over the whole gathered batch with ε 1e-4. Otherwise
    (GRPO, or GDPO with one reward): the weighted ``nansum``, group mean and std, ``scale_rewards`` deciding
    the division (``gdpo_nostd`` here is ``apply_gdpo`` with ``scale_rewards=False``, which only the
    one-reward fallback honours)."""
    rewards, G = _tensor(case), case.equal_groups
    weights = torch.tensor(case.weights, dtype=torch.float64)
    if method == "gdpo" and case.num_rewards > 1:
        filled = torch.nan_to_num(rewards)
        grouped = filled.view(-1, G, case.num_rewards)
        per_reward = (grouped - grouped.mean(dim=1, keepdim=True)) / (grouped.std(dim=1, keepdim=True) + 1e-4)
        summed = (per_reward.view(-1, case.num_rewards) * weights).nansum(dim=1)
        return (summed - summed.mean()) / (summed.std() + 1e-4)
    if method == "gdpo_nostd" and case.num_rewards > 1:
        raise NotImplementedError("the fork's GDPO path always divides by the per-reward std")
    summed = (rewards * weights).nansum(dim=1)
    grouped = summed.view(-1, G)
    advantages = summed - grouped.mean(dim=1).repeat_interleave(G)
    if method in ("grpo", "gdpo"):
        advantages = advantages / (grouped.std(dim=1).repeat_interleave(G) + 1e-4)
    return advantages


def _response_mask(case: Case) -> torch.Tensor:
    """(B, L) 1 for the response tokens of each rollout."""
    lengths = torch.tensor(case.lengths)
    return (torch.arange(int(lengths.max())) < lengths.unsqueeze(1)).to(torch.float64)


def _verl_group_normalise(scores: torch.Tensor, index: list[int], divide: bool, epsilon: float = 1e-6):
    """verl's ``compute_grpo_outcome_advantage`` on per-rollout scores: per uid, mean and sample std, except a
    uid with one rollout, which gets mean 0 and std 1; (s − mean)/(std + ε), or s − mean without the std."""
    out = scores.clone()
    for uid in set(index):
        members = [i for i, u in enumerate(index) if u == uid]
        values = scores[members]
        mean, std = (torch.tensor(0.0, dtype=scores.dtype), torch.tensor(1.0, dtype=scores.dtype)) \
            if len(members) == 1 else (values.mean(), values.std())
        out[members] = (values - mean) / (std + epsilon) if divide else values - mean
    return out


def _verl_masked_whiten(values: torch.Tensor, mask: torch.Tensor, mean_eps: float) -> torch.Tensor:
    """``masked_whiten``: masked mean (sum / (Σmask + ``mean_eps``)), masked unbiased variance, then
    × rsqrt(var + 1e-8)."""
    total = mask.sum()
    mean = (values * mask).sum() / (total + mean_eps)
    variance = ((values - mean) ** 2 * mask).sum() / (total + mean_eps) * (total / (total - 1))
    return (values - mean) * torch.rsqrt(variance + 1e-8)


def verl_reference(case: Case, method: str, per_response: bool = False, fork: bool = False) -> torch.Tensor:
    """verl's outcome advantages, per rollout (the value every response token of the rollout carries).

    GRPO: the weighted reward sum through ``compute_grpo_outcome_advantage`` (``norm_adv_by_std_in_grpo``
    False for ``grpo_nostd``), no batch step. GDPO: each reward through it, weighted sum, broadcast to the
    tokens, ``masked_whiten`` over all response tokens (``gdpo_nostd``: ``norm_adv_by_std_in_grpo=False``).
    ``per_response``: PR #6497 averages each response's tokens and whitens over non-empty responses.
    ``fork``: the NVlabs verl fork — unweighted sum, masked mean without the 1e-8.
    A None reward becomes NaN (``np.asarray(..., dtype=float32)``) and nothing handles it.
    """
    rewards, mask = _tensor(case), _response_mask(case)
    weights = torch.tensor(case.weights, dtype=torch.float64)
    if method in ("grpo", "grpo_nostd"):
        return _verl_group_normalise((rewards * weights).sum(dim=1), case.groups, method == "grpo")
    divide = method == "gdpo"
    if fork and (not divide or case.num_rewards != 2 or any(w != 1.0 for w in case.weights)):
        raise NotImplementedError("the fork's GDPO sums two unweighted rewards and divides by the std")
    summed = sum(weights[k] * _verl_group_normalise(rewards[:, k], case.groups, divide)
                 for k in range(case.num_rewards))
    tokens = summed.unsqueeze(1) * mask
    mean_eps = 0.0 if fork else 1e-8
    if per_response:
        per_rollout = (tokens * mask).sum(dim=1) / (mask.sum(dim=1) + 1e-8)
        return _verl_masked_whiten(per_rollout, (mask.sum(dim=1) > 0).to(torch.float64), mean_eps)
    whitened = _verl_masked_whiten(tokens, mask, mean_eps) * mask
    return whitened[:, 0]  # every rollout has ≥ 1 token, all carrying the same value


def _nemo_baseline_and_std(rewards: torch.Tensor, prompts: list[int], leave_one_out: bool):
    """``calculate_baseline_and_std_per_prompt`` with every sample valid: per prompt, (1 − I) or all-ones
    weights over its rollouts divided by (count − 1) or count, the std from E[x²] − E[x]² times
    n/(n − 1) (NaN → 0); a prompt with ≤ 1 rollout gets the reward itself as baseline and std 0."""
    baseline, std = torch.zeros_like(rewards), torch.zeros_like(rewards)
    for prompt in set(prompts):
        members = [i for i, p in enumerate(prompts) if p == prompt]
        values = rewards[members]
        if len(members) <= 1:
            baseline[members] = values
            continue
        matrix = 1 - torch.eye(len(members), dtype=rewards.dtype) if leave_one_out else \
            torch.ones(len(members), len(members), dtype=rewards.dtype)
        count = len(members) - int(leave_one_out)
        mean = matrix @ values / count
        mean_square = matrix @ values.square() / count
        baseline[members] = mean
        # count 1 (leave-one-out in a pair): 0 × (1 / 0) = NaN in the peer, which nan_to_num makes std 0.
        correction = count / (count - 1) if count > 1 else math.inf
        std[members] = ((mean_square - mean.square()) * correction).sqrt().nan_to_num(0)
    return baseline, std


def nemo_reference(case: Case, method: str, leave_one_out: bool) -> torch.Tensor:
    """NeMo-RL. GRPO (``GRPOAdvantageEstimator``) on the weighted reward sum: r − baseline, divided by
    (std + 1e-6) where std > 0 (``normalize_rewards``; not for ``grpo_nostd``). GDPO: needs ≥ 2 reward
    components, each r_k − baseline_k (÷ (std_k + 1e-6) where std_k > 0, unless ``normalize_rewards=False``:
    ``gdpo_nostd``), weighted sum, then (A − mean)/std over the batch if std > 0, else A − mean (no ε)."""
    rewards = _tensor(case)
    weights = torch.tensor(case.weights, dtype=torch.float64)
    if method in ("grpo", "grpo_nostd"):
        summed = (rewards * weights).sum(dim=1)
        baseline, std = _nemo_baseline_and_std(summed, case.groups, leave_one_out)
        advantages = summed - baseline
        if method == "grpo":
            advantages = torch.where(std > 0, advantages / (std + 1e-6), advantages)
        return advantages
    if case.num_rewards < 2:
        raise ValueError("GDPO requires multiple reward components")
    parts = []
    for k in range(case.num_rewards):
        baseline, std = _nemo_baseline_and_std(rewards[:, k], case.groups, leave_one_out)
        part = rewards[:, k] - baseline
        if method == "gdpo":
            part = torch.where(std > 0, part / (std + 1e-6), part)
        parts.append(weights[k] * part)
    combined = sum(parts)
    spread = combined.std()
    return (combined - combined.mean()) / spread if spread > 0 else combined - combined.mean()


# --------------------------------------------------------------------------------------------------
# Ours on the same batch
# --------------------------------------------------------------------------------------------------


def ours(case: Case, method: str, convention: str) -> torch.Tensor:
    """``compute_advantages`` on the case; unequal groups are padded to the largest with rollouts without any
    reward (left out of every statistic under the conventions that allow unequal groups), then dropped."""
    size = max(case.groups.count(g) for g in set(case.groups))
    rows, lengths, keep = [], [], []
    for g in sorted(set(case.groups)):
        members = [i for i, u in enumerate(case.groups) if u == g]
        for slot in range(size):
            keep.append(slot < len(members))
            rows.append(case.rewards[members[slot]] if slot < len(members) else [None] * case.num_rewards)
            lengths.append(case.lengths[members[slot]] if slot < len(members) else 1)
    out = compute_advantages(rows, size, method, case.weights, convention, lengths)
    return out[torch.tensor(keep)]


# --------------------------------------------------------------------------------------------------
# Peers, their methods, and where they are wrong
# --------------------------------------------------------------------------------------------------

def _unit_weights(case: Case) -> Case:
    """The NVlabs verl fork has no reward weights: it is compared on the case with every weight 1."""
    return dataclasses.replace(case, weights=[1.0] * case.num_rewards)


#: peer → (our convention, methods the peer has, reference(case, method), the case as the peer takes it).
PEERS = {
    "trl_1_6": ("trl", ("grpo", "grpo_nostd", "gdpo"), lambda c, m: trl_reference(c, m, "1.6"), None),
    "trl_0_27": ("trl_0_27", ("grpo", "grpo_nostd", "gdpo"), lambda c, m: trl_reference(c, m, "0.27"), None),
    "nvlabs_trl_fork": ("nvlabs", ("grpo", "grpo_nostd", "gdpo", "gdpo_nostd"), nvlabs_reference, None),
    "verl": ("verl", ("grpo", "grpo_nostd", "gdpo", "gdpo_nostd"), verl_reference, None),
    "verl_pr6497": ("verl_pr6497", ("gdpo", "gdpo_nostd"),
                    lambda c, m: verl_reference(c, m, per_response=True), None),
    "nvlabs_verl_fork": ("verl", ("grpo", "grpo_nostd", "gdpo"), lambda c, m: verl_reference(c, m, fork=True),
                         _unit_weights),
    "nemo": ("nemo", ("grpo", "grpo_nostd", "gdpo", "gdpo_nostd"),
             lambda c, m: nemo_reference(c, m, False), None),
    "nemo_loo": ("nemo_loo", ("grpo", "grpo_nostd", "gdpo", "gdpo_nostd"),
                 lambda c, m: nemo_reference(c, m, True), None),
}

#: Peers that group by prompt id (any group sizes) rather than G contiguous rollouts.
BY_PROMPT_ID = {"verl", "verl_pr6497", "nvlabs_verl_fork", "nemo", "nemo_loo"}

_NAN_POISONS = ("no missing rewards: a None becomes NaN and turns every advantage of the batch into NaN; "
                "ours leaves it out of that reward's statistics, as TRL does")
_ONE_PASS = ("the one-pass variance E[x²] − E[x]² at a 1e7 offset loses the digits of the spread (off by "
             "up to ~1 here, and a zero-std group gets a rounding residue for std); ours is two-pass")
_NO_BATCH_EPS = ("no ε in the batch step: the per-reward advantages cancel to rounding noise (~1e-16), which "
                 "the peer rescales to unit std (−0.58, −0.58, 1.15); ours returns 0, the exact value")

#: (peer, case, method) → why the peer's value is not what its convention means to reproduce.
PEER_IS_WRONG = {
    **{(peer, case, method): _NAN_POISONS for peer in BY_PROMPT_ID for method in PEERS[peer][1]
       for case in ("none_partial", "none_all", "none_singleton")},
    **{(peer, "large_offset", method): _ONE_PASS
       for peer in ("nemo", "nemo_loo") for method in ("grpo", "gdpo")},
    **{("nemo", "complementary", method): _NO_BATCH_EPS for method in ("gdpo", "gdpo_nostd")},
}


def _peer_and_ours(peer: str, case: Case, method: str) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(the peer's advantages, ours), or None where the peer has no path for the input."""
    convention, _, reference, adapt = PEERS[peer]
    case = adapt(case) if adapt else case
    try:
        want = reference(case, method)
    except NotImplementedError:
        return None  # e.g. the NVlabs verl fork's GDPO takes exactly two rewards (stated in each reference)
    return want, ours(case, method, convention)


def _runs():
    """Every (peer, case, method) the peer can compute: TRL's layout needs equal groups; NeMo-RL's refusal of
    one reward is a run too (test_nemo_refuses_one_reward_like_its_convention)."""
    for peer, (_, methods, reference, adapt) in PEERS.items():
        for case in CASES:
            if case.equal_groups is None and peer not in BY_PROMPT_ID:
                continue
            for method in methods:
                try:
                    reference(adapt(case) if adapt else case, method)
                except NotImplementedError:
                    continue
                except ValueError:
                    pass
                yield peer, case.name, method


def test_every_recorded_peer_error_is_a_run():
    assert set(PEER_IS_WRONG) <= set(_runs())


@pytest.mark.parametrize(("peer", "case_name", "method"), list(_runs()))
def test_convention_equals_its_peer(peer, case_name, method):
    case = CASES_BY_NAME[case_name]
    if peer.startswith("nemo") and method.startswith("gdpo") and case.num_rewards == 1:
        # NeMo-RL refuses GDPO with one reward, and so does the convention.
        with pytest.raises(ValueError, match="GDPO requires multiple reward components"):
            nemo_reference(case, method, peer == "nemo_loo")
        with pytest.raises(ValueError, match="refuses that with a single reward function"):
            ours(case, method, PEERS[peer][0])
        return
    want, got = _peer_and_ours(peer, case, method)
    difference = (got - want).abs().max().item()
    assert not torch.isnan(got).any()
    if (peer, case_name, method) in PEER_IS_WRONG:
        assert not (difference <= TOLERANCE), (  # NaN counts as a difference
            f"recorded as a peer error, but the peer agrees now: {PEER_IS_WRONG[peer, case_name, method]}")
    else:
        assert difference <= TOLERANCE, (peer, case_name, method, want.tolist(), got.tolist())


# --------------------------------------------------------------------------------------------------
# The recorded peer errors, spelled out
# --------------------------------------------------------------------------------------------------


def test_nemo_rescales_the_rounding_noise_of_complementary_rewards_and_ours_does_not():
    case = CASES_BY_NAME["complementary"]
    peer = nemo_reference(case, "gdpo", leave_one_out=False)
    assert peer.std().item() == pytest.approx(1.0)  # noise of ~1e-16 whitened to unit std
    assert ours(case, "gdpo", "nemo").tolist() == [0.0, 0.0, 0.0]
    # With an ε in the batch step (TRL) the same noise stays noise.
    assert trl_reference(case, "gdpo", "1.6").abs().max().item() < 1e-9


def test_verl_singleton_group_is_divided_by_one_plus_epsilon():
    case = CASES_BY_NAME["unequal_groups"]
    singleton = case.groups.index(1)
    value = case.weights[0] * case.rewards[singleton][0] + case.weights[1] * case.rewards[singleton][1]
    assert verl_reference(case, "grpo")[singleton].item() == pytest.approx(value / (1 + 1e-6), rel=1e-14)
    assert ours(case, "grpo", "verl")[singleton].item() == pytest.approx(value / (1 + 1e-6), rel=1e-14)
    assert abs(ours(case, "grpo", "verl")[singleton].item() - value) > 1e-7  # not the raw value


def test_the_peers_disagree_on_a_rollout_without_rewards_and_each_convention_follows_its_own():
    case = CASES_BY_NAME["none_all"]
    unscored = 1
    # GRPO: TRL >= 1.6 leaves the rollout out (advantage 0); TRL 0.27-1.5 and the NVlabs fork score it 0.
    assert trl_reference(case, "grpo", "1.6")[unscored].item() == 0.0
    assert abs(trl_reference(case, "grpo", "0.27")[unscored].item()) > 0.1
    assert abs(nvlabs_reference(case, "grpo")[unscored].item()) > 0.1
    # GDPO: the per-reward z-scores of a batch sum to 0, so a zero sum sits at the batch mean, but counting
    # it changes the batch std (TRL 0.27 vs 1.6), and zero-filling it changes its group's per-reward
    # statistics (NVlabs vs TRL 0.27).
    trl_1_6, trl_0_27 = trl_reference(case, "gdpo", "1.6"), trl_reference(case, "gdpo", "0.27")
    assert (trl_1_6 - trl_0_27).abs().max().item() > 0.01
    assert (trl_0_27 - nvlabs_reference(case, "gdpo")).abs().max().item() > 0.01
    for peer in ("trl_1_6", "trl_0_27", "nvlabs_trl_fork"):
        for method in ("grpo", "gdpo"):
            want, got = _peer_and_ours(peer, case, method)
            assert got.tolist() == pytest.approx(want.tolist(), abs=TOLERANCE)


def test_nvlabs_fork_runs_grpo_with_one_reward_and_trl_whitens():
    case = CASES_BY_NAME["single_reward"]
    grpo = nvlabs_reference(case, "grpo")
    assert nvlabs_reference(case, "gdpo").tolist() == grpo.tolist()
    assert (trl_reference(case, "gdpo", "1.6") - grpo).abs().max().item() > 0.01
    assert ours(case, "gdpo", "nvlabs").tolist() == pytest.approx(grpo.tolist(), abs=TOLERANCE)


def test_per_token_and_per_response_whitening_differ_on_these_lengths():
    # The case set exercises the field: token weighting and PR #6497's per-response weighting disagree.
    case = CASES_BY_NAME["weights"]
    token, response = verl_reference(case, "gdpo"), verl_reference(case, "gdpo", per_response=True)
    assert (token - response).abs().max().item() > 0.01
