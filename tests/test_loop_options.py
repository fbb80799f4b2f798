"""The training loop's options beyond TRL (``gdpo.loop_options``, ``gdpo.training.loop``): the KL estimators,
the KL in the reward and dynamic sampling, against verl's own functions, TRL's own loss, and in the trainer.

``tests/data/verl_loop_vectors.json`` holds verl 0.9.1's functions evaluated on shared inputs
(``tests/data/make_verl_loop_vectors.py`` wrote it in an environment with verl). verl's DAPO filter is a loop
inside its trainer, not a function: :func:`verl_filter_groups` restates it from verl-project/verl-recipe
``dapo/dapo_ray_trainer.py`` (commit 48ea0a797fa29867ea0ad92aff7d284eec7d4be3): a group is kept iff
``np.std`` of its metric values is > 0 or it has one rollout; the kept groups are concatenated in generation
order and cut to the batch.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gdpo.advantages import compute_advantages
from gdpo.loop_options import DynamicSampling, LoopOptions, loop_options_from_training
from gdpo.training.loop import (
    aggregate_like_trl,
    concatenate_rows,
    groups_with_signal,
    kl_per_token,
    refill_prompt_indices,
    sequence_kl,
)

VECTORS = json.loads((Path(__file__).parent / "data" / "verl_loop_vectors.json").read_text())
VERL_NAMES = {"kl": "k1", "mse": "k2", "low_var_kl": "k3"}


def _tensor(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


# --------------------------------------------------------------------------------------------------
# The KL estimators and the KL in the reward, against verl's functions
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", VECTORS["kl_penalty"], ids=lambda case: f"spread{case['spread']}")
@pytest.mark.parametrize("verl_name", sorted(VERL_NAMES))
def test_kl_estimators_equal_verls_kl_penalty(case, verl_name):
    ours = kl_per_token(_tensor(case["log_probs"]), _tensor(case["ref_log_probs"]), VERL_NAMES[verl_name])
    torch.testing.assert_close(ours, _tensor(case["verl"][verl_name]), atol=1e-12, rtol=0)


def test_the_clamped_k3_is_verls_and_trls_loss_term_is_unclamped():
    case = VECTORS["kl_penalty"][-1]  # log-ratios beyond ±20
    log_probs, ref = _tensor(case["log_probs"]), _tensor(case["ref_log_probs"])
    verl = _tensor(case["verl"]["low_var_kl"])
    assert verl.max() == 10.0  # the case reaches verl's clamp
    unclamped = kl_per_token(log_probs, ref, "k3", clamp=False)
    assert unclamped.max() > 10.0
    free = (verl.abs() < 10) & ((ref - log_probs).abs() < 20)
    torch.testing.assert_close(unclamped[free], verl[free], atol=1e-12, rtol=0)


@pytest.mark.parametrize("case", VECTORS["kl_in_reward"], ids=lambda case: f"{case['kl_penalty']}-{case['beta']}")
def test_kl_in_the_reward_gives_verls_grpo_advantage_and_leaves_its_gdpo_advantage(case):
    log_probs, ref, mask = _tensor(case["log_probs"]), _tensor(case["ref_log_probs"]), _tensor(case["mask"])
    estimator, beta, group = VERL_NAMES[case["kl_penalty"]], case["beta"], case["num_generations"]
    per_rollout, token_mean = sequence_kl(log_probs, ref, mask, estimator)
    verl_rewards = _tensor(case["verl"]["token_level_rewards"])
    rewards = torch.stack([_tensor(case["rewards"]["correct"]), _tensor(case["rewards"]["format"])], dim=1)
    # verl's token-level rewards sum to the score minus β Σ_t KL_t
    torch.testing.assert_close(verl_rewards.sum(dim=1), rewards.sum(dim=1) - beta * per_rollout, atol=1e-5, rtol=0)
    assert token_mean.item() == pytest.approx(case["verl"]["reward_kl_penalty"], abs=1e-5)
    penalised = torch.cat([rewards, -beta * per_rollout.unsqueeze(1)], dim=1)
    grpo = compute_advantages(penalised, group, "grpo", weights=[1.0, 1.0, 1.0], convention="verl",
                              response_lengths=mask.sum(dim=1))
    torch.testing.assert_close(grpo, _tensor(case["verl"]["grpo_advantages"]), atol=2e-4, rtol=0)
    # The tied group gets a GRPO advantage from the KL alone.
    assert grpo[:group].abs().max() > 0
    # verl's GDPO normalises the per-reward scores: the penalty does not reach it.
    gdpo = compute_advantages(rewards, group, "gdpo", convention="verl", response_lengths=mask.sum(dim=1))
    torch.testing.assert_close(gdpo, _tensor(case["verl"]["gdpo_advantages"]), atol=2e-4, rtol=0)


@pytest.mark.parametrize("case", VECTORS["kl_loss"])
def test_the_k2_loss_term_reduces_as_verls_agg_loss(case):
    """verl's ``token-mean`` is TRL's ``dapo`` reduction and its ``seq-mean-token-mean`` TRL's ``grpo`` (one
    process, one micro-batch)."""
    mask = _tensor(case["mask"])
    kl = kl_per_token(_tensor(case["log_probs"]), _tensor(case["ref_log_probs"]), "k2")
    common = {"training": True, "gradient_accumulation_steps": 1, "steps_per_generation": 1, "num_processes": 1,
              "num_items_in_batch": mask.sum(), "max_completion_length": mask.shape[1]}
    # (verl's seq-mean-token-mean counts tokens in float32: agreement to its rounding)
    assert aggregate_like_trl(kl, mask, "dapo", **common).item() == pytest.approx(case["verl"]["token-mean"], rel=1e-7)
    assert aggregate_like_trl(kl, mask, "grpo", **common).item() == pytest.approx(
        case["verl"]["seq-mean-token-mean"], rel=1e-7)


# --------------------------------------------------------------------------------------------------
# Dynamic sampling's filter
# --------------------------------------------------------------------------------------------------


def verl_filter_groups(metric_values: np.ndarray, uids: list[str]) -> list[str]:
    """verl's DAPO trainer: the prompt uids kept (std of the metric > 0, or a single rollout), in order."""
    values = defaultdict(list)
    for uid, value in zip(uids, metric_values, strict=True):
        values[uid].append(value)
    return [uid for uid, vals in values.items() if np.std(vals) > 0 or len(vals) == 1]


reward_tables = st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.just(n), st.integers(2, 5), st.integers(1, 5),
    st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n),
    st.data()))


@settings(max_examples=150, deadline=None)
@given(reward_tables)
def test_reward_sum_filter_keeps_the_groups_verls_filter_keeps(table):
    num_rewards, group, groups, weights, data = table
    rewards = _tensor(data.draw(st.lists(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=num_rewards,
                                                  max_size=num_rewards), min_size=group * groups,
                                         max_size=group * groups)))
    weights = _tensor(weights)
    uids = [f"p{i // group}" for i in range(group * groups)]
    kept = verl_filter_groups((rewards * weights).sum(dim=1).numpy(), uids)
    ours = groups_with_signal(rewards, weights, group, "reward_sum", [f"r{k}" for k in range(num_rewards)])
    assert [f"p{g}" for g in range(groups) if ours[g]] == kept


@settings(max_examples=200, deadline=None)
@given(reward_tables)
def test_a_dropped_group_has_no_advantage_under_its_methods_metric(table):
    """The filter never drops a group that trains: under ``auto``, a dropped group's advantage before any batch
    step is 0 for GRPO (summed metric) and for GDPO (each reward)."""
    num_rewards, group, groups, weights, data = table
    table_values = data.draw(st.lists(st.lists(st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.0])),
                                               min_size=num_rewards, max_size=num_rewards),
                                      min_size=group * groups, max_size=group * groups))
    rewards = _tensor([[float("nan") if v is None else v for v in row] for row in table_values])
    weights = _tensor(weights)
    names = [f"r{k}" for k in range(num_rewards)]
    for method, metric in (("grpo", DynamicSampling().resolved_metric(False)),
                           ("gdpo_nobn", DynamicSampling().resolved_metric(True))):
        signal = groups_with_signal(rewards, weights, group, metric, names)
        advantages = compute_advantages(rewards, group, method, weights=weights).view(groups, group)
        assert (advantages[~signal] == 0).all(), (method, rewards, weights)


@pytest.mark.parametrize(("rewards", "weights"), [
    # two rewards whose weighted sum is constant in the group, weighted unequally
    ([[1.0, 0.0], [0.0, 2.0], [1.0, 0.0], [0.0, 2.0]], [2.0, 1.0]),
    # three rewards of equal weight summing to 1 in every rollout
    ([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [1.0, 1.0, 1.0]),
])
def test_a_group_silent_in_the_sum_but_not_in_each_reward_is_kept_for_gdpo(rewards, weights):
    """The summed-reward filter (SkyRL #2104's) would drop a group that GDPO trains on."""
    rewards, weights = _tensor(rewards), _tensor(weights)
    names = [f"r{k}" for k in range(rewards.shape[1])]
    assert not groups_with_signal(rewards, weights, 4, "reward_sum", names).any()
    assert groups_with_signal(rewards, weights, 4, "each_reward", names).all()
    assert compute_advantages(rewards, 4, "gdpo_nobn", weights=weights).abs().max() > 0.1
    assert (compute_advantages(rewards, 4, "grpo", weights=weights) == 0).all()
    assert DynamicSampling().resolved_metric(normalises_each_reward=True) == "each_reward"


def test_each_reward_ignores_a_reward_of_weight_zero_and_a_named_metric_reads_one_reward():
    rewards = _tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    assert not groups_with_signal(rewards, _tensor([1.0, 0.0]), 4, "each_reward", ["correct", "format"]).any()
    assert groups_with_signal(rewards, _tensor([1.0, 0.0]), 4, "format", ["correct", "format"]).all()
    assert not groups_with_signal(rewards, _tensor([1.0, 1.0]), 4, "correct", ["correct", "format"]).any()
    with pytest.raises(ValueError, match="Unknown dynamic-sampling metric 'acc'"):
        groups_with_signal(rewards, _tensor([1.0, 1.0]), 4, "acc", ["correct", "format"])


def test_refill_prompts_are_a_function_of_seed_step_round_and_process():
    first = refill_prompt_indices(50, 8, seed=3, step=4, round_index=1, process_index=0)
    assert first == refill_prompt_indices(50, 8, seed=3, step=4, round_index=1, process_index=0)
    assert len(set(first)) == 8 and all(0 <= i < 50 for i in first)
    others = [refill_prompt_indices(50, 8, 3, 4, 2, 0), refill_prompt_indices(50, 8, 3, 5, 1, 0),
              refill_prompt_indices(50, 8, 3, 4, 1, 1), refill_prompt_indices(50, 8, 4, 4, 1, 0)]
    assert all(other != first for other in others)
    wrapped = refill_prompt_indices(3, 7, 0, 0, 1, 0)
    assert len(wrapped) == 7 and set(wrapped) == {0, 1, 2}


def test_rows_of_several_rounds_are_repadded_on_the_side_trl_pads():
    one = {"prompt_ids": torch.tensor([[5, 6]]), "prompt_mask": torch.tensor([[1, 1]]),
           "completion_ids": torch.tensor([[7, 8, 9]]), "completion_mask": torch.tensor([[1, 1, 0]]),
           "advantages": torch.tensor([0.5]), "old_per_token_logps": None, "num_items_in_batch": torch.tensor(9)}
    two = {"prompt_ids": torch.tensor([[4, 5, 6]]), "prompt_mask": torch.tensor([[1, 1, 1]]),
           "completion_ids": torch.tensor([[3]]), "completion_mask": torch.tensor([[1]]),
           "advantages": torch.tensor([-0.5]), "old_per_token_logps": None, "num_items_in_batch": torch.tensor(1)}
    batch = concatenate_rows([one, two], pad_token_id=0)
    assert batch["prompt_ids"].tolist() == [[0, 5, 6], [4, 5, 6]]
    assert batch["prompt_mask"].tolist() == [[0, 1, 1], [1, 1, 1]]
    assert batch["completion_ids"].tolist() == [[7, 8, 9], [3, 0, 0]]
    assert batch["completion_mask"].tolist() == [[1, 1, 0], [1, 0, 0]]
    assert batch["advantages"].tolist() == [0.5, -0.5] and batch["old_per_token_logps"] is None
    assert "num_items_in_batch" not in batch
    with pytest.raises(ValueError, match="pixel_values.*dynamic_sampling"):
        concatenate_rows([{**one, "pixel_values": torch.zeros(1, 3)}], pad_token_id=0)


# --------------------------------------------------------------------------------------------------
# The options as a config states them
# --------------------------------------------------------------------------------------------------


def test_loop_keys_leave_the_trl_arguments_and_round_trip_through_run_settings():
    from gdpo.plan import RunSettings

    training = {"beta": 0.001, "max_steps": 4, "kl_in_reward": True, "kl_estimator": "k1",
                "dynamic_sampling": {"metric": "correct", "max_rounds": 3}}
    loop = loop_options_from_training(training)
    assert training == {"beta": 0.001, "max_steps": 4}
    settings = RunSettings(task="t", family="arithmetic", model="builtin:tiny-qwen2", method="grpo",
                           convention="trl", seed=0, reward_names=("correct", "format"), reward_weights=(1.0, 1.0),
                           trl=training, loop=loop)
    assert RunSettings.from_json(settings.to_json()) == settings
    options = settings.loop_options
    assert options == LoopOptions(DynamicSampling("correct", 3), "k1", True)
    plain = RunSettings(task="t", family="arithmetic", model="builtin:tiny-qwen2", method="grpo", convention="trl",
                        seed=0, reward_names=("correct",), reward_weights=(1.0,))
    assert "loop" not in plain.to_dict() and plain.loop_options == LoopOptions()
    assert LoopOptions.from_config({"dynamic_sampling": True}).dynamic_sampling == DynamicSampling("auto", 10)


@pytest.mark.parametrize(("loop", "beta", "message"), [
    ({"kl_estimator": "k4"}, 0.1, "kl_estimator 'k4' is not one of k1, k2, k3"),
    ({"kl_estimator": "k1"}, 0.1, "k1 is an estimator for the reward only"),
    ({"kl_estimator": "k2"}, 0.0, "kl_estimator k2 needs a KL coefficient; set `training.beta:`"),
    ({"kl_in_reward": True}, 0.0, "kl_in_reward needs a KL coefficient"),
    ({"kl_in_reward": "yes"}, 0.1, "kl_in_reward must be true or false"),
    ({"dynamic_sampling": {"max_rounds": 0}}, 0.0, "max_rounds 0 must be an integer ≥ 1"),
    ({"dynamic_sampling": {"metric": "acc"}}, 0.0, "metric 'acc' is neither one of auto, reward_sum, each_reward"),
    ({"dynamic_sampling": {"metrics": "auto"}}, 0.0, "unknown keys \\['metrics'\\]"),
    ({"dynamic_sampling": "on"}, 0.0, "must be true, false or a mapping"),
])
def test_bad_loop_options_are_refused_naming_the_key_and_the_fix(loop, beta, message):
    from gdpo.plan import RunSettings

    with pytest.raises(ValueError, match=message):
        RunSettings(task="t", family="arithmetic", model="builtin:tiny-qwen2", method="gdpo", convention="trl",
                    seed=0, reward_names=("correct", "format"), reward_weights=(1.0, 1.0), trl={"beta": beta},
                    loop=loop)


# --------------------------------------------------------------------------------------------------
# In the trainer
# --------------------------------------------------------------------------------------------------


def _digest(text: str) -> int:
    import hashlib

    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def _text(value) -> str:
    """A completion's or a prompt's text (the last message of a conversation: the question, not the system)."""
    return value[-1]["content"] if isinstance(value, list) else value


def reward_on_some_prompts(prompts, completions, **kwargs):
    """Varies with the completion on half of the prompts; 0 on the others (their groups are silent)."""
    return [float(_digest(_text(c)) % 3) if _digest(_text(p)) % 2 == 0 else 0.0 for p, c in zip(prompts, completions)]


def reward_also_on_some_prompts(prompts, completions, **kwargs):
    return [float(len(_text(c)) % 2) if _digest(_text(p)) % 2 == 0 else 1.0 for p, c in zip(prompts, completions)]


def reward_never_varies(completions, **kwargs):
    return [1.0 for _ in completions]


def _trainer(model_dir, out_dir, method="gdpo", rewards=(reward_on_some_prompts, reward_also_on_some_prompts),
             loop=None, peft=False, **args):
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from gdpo.tasks import arithmetic
    from gdpo.training.trainer import RegistryGRPOTrainer

    settings = {"per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 8,
                "report_to": "none", "bf16": False, "loss_type": "grpo", "beta": 0.0, "seed": 0, **args}
    trainer = RegistryGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=list(rewards),
        args=GRPOConfig(output_dir=str(out_dir), **settings),
        train_dataset=arithmetic.build_dataset("train", 32, seed=0),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False) if peft else None,
        advantage_method=method,
        loop_options=LoopOptions.from_config(loop),
    )
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); the loss is computed directly here
    return trainer


def _batch(prompts: int = 2, seed: int = 1) -> list[dict]:
    from gdpo.tasks import arithmetic

    return [row for row in arithmetic.build_dataset("train", prompts, seed=seed) for _ in range(4)]


def _loss_and_gradients(trainer, inputs):
    trainer.model.zero_grad()
    loss = trainer.compute_loss(trainer.model, inputs)
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in trainer.model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize(("loss_type", "correction", "accumulation", "per_generation"), [
    ("grpo", True, 1, 1), ("grpo", False, 2, 1), ("bnpo", True, 3, 1), ("dr_grpo", True, 2, 1),
    ("dapo", False, 1, 1), ("dapo", True, 2, 3), ("cispo", True, 3, 2), ("sapo", True, 1, 1)])
def test_the_kl_term_computed_here_equals_trls_own_for_every_loss_type(loss_type, correction, accumulation,
                                                                       per_generation, tiny_model, tmp_path):
    """With k3, the term this trainer adds (TRL's loss run with β 0, plus β times the reduced estimate) gives
    TRL's own loss and gradient, with and without TRL's importance weight on the KL (use_bias_correction_kl,
    which changes the gradient only), and under gradient accumulation and several micro-batches per generation
    (the factors TRL's reductions divide by): the reduction of every loss type is TRL's, so k2 enters the loss as
    k3 does."""
    trainer = _trainer(tiny_model, tmp_path, peft=True, beta=0.2, loss_type=loss_type,
                       use_bias_correction_kl=correction)
    torch.manual_seed(0)
    inputs = trainer._generate_and_score_completions(_batch())
    # What TRL's reductions read at loss time (Trainer.train sets them; the loss is computed directly here).
    trainer.current_gradient_accumulation_steps = accumulation
    trainer.args.steps_per_generation = per_generation
    assert inputs["ref_per_token_logps"] is not None
    trls = _loss_and_gradients(trainer, inputs)
    trls_kl = trainer._metrics["train"]["kl"][-1]
    assert trls_kl > 1e-4  # the adapter moved the policy away from the reference
    trainer._loss_kl_estimator = "k3"
    ours = _loss_and_gradients(trainer, inputs)
    torch.testing.assert_close(ours[0], trls[0], atol=1e-6, rtol=1e-5)
    assert trainer._metrics["train"]["kl"][-1] == pytest.approx(trls_kl, rel=1e-5)
    for name, gradient in trls[1].items():
        torch.testing.assert_close(ours[1][name], gradient, atol=1e-7, rtol=1e-4, msg=name)
    trainer._loss_kl_estimator = "k2"
    k2 = _loss_and_gradients(trainer, inputs)
    assert not torch.allclose(k2[0], trls[0])  # another estimator, another loss


def _plain_log_probs(model, output) -> torch.Tensor:
    """log π of the completion tokens from one plain forward pass (no TRL code)."""
    ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
    mask = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
    width = output["completion_ids"].shape[1]
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -width - 1:-1].float()
    return torch.log_softmax(logits, dim=-1).gather(-1, output["completion_ids"].unsqueeze(-1)).squeeze(-1)


@pytest.mark.parametrize(("method", "misaligned"), [("grpo", False), ("grpo", True), ("gdpo", False)])
def test_kl_in_the_reward_lowers_the_summed_reward_before_grpos_advantage(method, misaligned, tiny_model, tmp_path):
    # misaligned: two micro-batches per generation, one per optimizer step, so TRL computes the generating
    # policy's log-probabilities itself (old_per_token_logps), which the penalty then reads.
    shape = {"per_device_train_batch_size": 4, "steps_per_generation": 2} if misaligned else {}
    trainer = _trainer(tiny_model, tmp_path, method=method, peft=True, beta=0.5,
                       loop={"kl_in_reward": True, "kl_estimator": "k1"}, **shape)
    torch.manual_seed(0)
    output = trainer._generate_and_score_completions(_batch())
    assert "ref_per_token_logps" not in output  # no KL term in the loss
    assert ("old_per_token_logps" in output and output["old_per_token_logps"] is not None) == misaligned
    rewards = trainer._captured_rewards.double()
    policy = _plain_log_probs(trainer.model, output)
    with trainer.model.disable_adapter():
        reference = _plain_log_probs(trainer.model, output)
    kl = ((policy - reference) * output["completion_mask"]).sum(dim=1).double()
    assert kl.abs().max() > 1e-3
    if method == "grpo":
        expected = compute_advantages(torch.cat([rewards, -0.5 * kl.unsqueeze(1)], dim=1), 4, "grpo",
                                      weights=[1.0, 1.0, 1.0])
    else:  # verl's GDPO normalises the per-reward scores, which carry no KL
        expected = compute_advantages(rewards, 4, "gdpo")
    torch.testing.assert_close(output["advantages"].double(), expected, atol=2e-4, rtol=0)
    assert trainer._metrics["train"]["kl_in_reward/kl"]
    loss = trainer.compute_loss(trainer.model, output)
    assert torch.isfinite(loss) and "kl" not in trainer._metrics["train"]


def _recording_rounds(trainer) -> list:
    """Record every generation round's output and gathered rewards (the trainer's own, unchanged)."""
    rounds = []
    scored = trainer._scored_round

    def record(inputs, mode):
        round_ = scored(inputs, mode)
        rounds.append({key: (value.clone() if isinstance(value, torch.Tensor) else value)
                       for key, value in round_.output.items()} | {"_rewards": round_.rewards.clone()})
        return round_

    trainer._scored_round = record
    return rounds


def _unpadded(ids: torch.Tensor, mask: torch.Tensor) -> tuple:
    return tuple(ids[mask.bool()].tolist())


def _source_of_each_row(output: dict, rounds: list) -> list[tuple[int, int]]:
    """(round, row) whose prompt and completion tokens each output row carries (the first match)."""
    sources = []
    for i in range(output["completion_ids"].shape[0]):
        key = (_unpadded(output["prompt_ids"][i], output["prompt_mask"][i]),
               _unpadded(output["completion_ids"][i], output["completion_mask"][i]))
        found = [(r, j) for r, round_ in enumerate(rounds) for j in range(round_["completion_ids"].shape[0])
                 if (_unpadded(round_["prompt_ids"][j], round_["prompt_mask"][j]),
                     _unpadded(round_["completion_ids"][j], round_["completion_mask"][j])) == key]
        assert found, i
        sources.append(found[0])
    return sources


def test_dynamic_sampling_trains_only_on_groups_with_signal(tiny_model, tmp_path):
    audit = tmp_path / "audit"
    trainer = _trainer(tiny_model, tmp_path, loop={"dynamic_sampling": {"max_rounds": 8}})
    trainer.advantage_audit_dir = audit
    rounds = _recording_rounds(trainer)
    batch = _batch(prompts=2, seed=27)
    assert len({_digest(_text(row["prompt"])) % 2 for row in batch}) == 2  # one silent prompt among the two
    torch.manual_seed(0)
    output = trainer._generate_and_score_completions(batch)
    metrics = trainer._metrics["train"]
    assert metrics["dynamic_sampling/rounds"][-1] >= 2
    assert metrics["dynamic_sampling/groups_dropped"][-1] >= 1
    assert metrics["dynamic_sampling/groups_kept"][-1] == 2 and metrics["dynamic_sampling/groups_filled_silent"] == [0.0]
    assert metrics["training_signal/silent_groups"] == [0.0] and metrics["training_signal/zero_advantage_batch"] == [0.0]
    # One record per step: TRL's logs are the first round's.
    assert len(metrics["rewards/reward_on_some_prompts/mean"]) == 1 and len(trainer._logs["prompt"]) == 8
    assert output["completion_ids"].shape[0] == 8 and output["num_items_in_batch"] == output["completion_mask"].sum()
    [record] = [json.loads(line) for line in (audit / "advantages.process0.jsonl").read_text().splitlines()]
    rewards = _tensor([[float("nan") if v is None else v for v in values] for values in zip(*record["rewards"].values())])
    assert groups_with_signal(rewards, _tensor([1.0, 1.0]), 4, "each_reward", list(record["rewards"])).all()
    torch.testing.assert_close(output["advantages"].double(), compute_advantages(rewards, 4, "gdpo"), atol=1e-6, rtol=0)
    # Each trained row is a generated row (its prompt and completion tokens, re-padded), and its reward in the
    # advantage is that row's reward; rows keep generation order (round, then group) in whole groups.
    assert len(rounds) == metrics["dynamic_sampling/rounds"][-1]
    sources = _source_of_each_row(output, rounds)
    for i, (r, j) in enumerate(sources):
        torch.testing.assert_close(rounds[r]["_rewards"][j].double(), rewards[i], equal_nan=True)
    assert sources == sorted(sources) and all(j % 4 == i % 4 for i, (_, j) in enumerate(sources))
    assert {r for r, _ in sources} != {0}  # a refill round's groups train
    # A second generation batch of the same optimizer step draws other refill prompts.
    first_draw = trainer._refill_inputs(1, 2, 4)
    trainer._generation_in_step += 1
    assert trainer._refill_inputs(1, 2, 4) != first_draw


def test_dynamic_sampling_at_its_cap_fills_the_batch_with_silent_groups(tiny_model, tmp_path):
    trainer = _trainer(tiny_model, tmp_path, method="grpo", rewards=(reward_never_varies,),
                       loop={"dynamic_sampling": {"max_rounds": 3}})
    rounds = _recording_rounds(trainer)
    torch.manual_seed(0)
    output = trainer._generate_and_score_completions(_batch())
    assert _source_of_each_row(output, rounds) == [(0, j) for j in range(8)]  # the first round's groups, in order
    metrics = trainer._metrics["train"]
    assert metrics["dynamic_sampling/rounds"] == [3.0] and metrics["dynamic_sampling/groups_generated"] == [6.0]
    assert metrics["dynamic_sampling/groups_filled_silent"] == [2.0] and metrics["dynamic_sampling/groups_kept"] == [0.0]
    assert metrics["training_signal/zero_advantage_batch"] == [1.0]
    assert output["completion_ids"].shape[0] == 8 and (output["advantages"] == 0).all()


@pytest.mark.parametrize("loop", [
    {"dynamic_sampling": True, "kl_estimator": "k2"},
    {"dynamic_sampling": {"metric": "reward_sum", "max_rounds": 3}, "kl_in_reward": True, "kl_estimator": "k1"},
], ids=["dynamic-k2", "dynamic-kl-in-reward"])
def test_a_run_with_the_loop_options_resumes_bit_for_bit(loop, tiny_model, tmp_path):
    from tests.test_chain import SEED, assert_same_run, smoke_config

    from gdpo.plan import resolve_run_settings
    from gdpo.training.run import read_metrics, train

    config = smoke_config(6, 3)
    config["training"].update(beta=0.05, **loop)
    method = "grpo" if loop.get("kl_in_reward") else "gdpo"
    settings = resolve_run_settings({**config, "methods": [method]}, "arithmetic", method, SEED)
    assert settings.loop == loop and not set(loop) & set(settings.trl)
    whole, chained = tmp_path / "whole", tmp_path / "chained"
    train(settings, tiny_model, whole, threads=1)
    train(settings, tiny_model, chained, threads=1, stop_at_step=2)
    train(settings, tiny_model, chained, threads=1)
    records = read_metrics(whole / "metrics.jsonl")
    assert all("dynamic_sampling/rounds" in record for record in records)
    assert sum(record["dynamic_sampling/rounds"] for record in records) > len(records)  # some step refilled
    assert json.loads((whole / "config.json").read_text())["loop"] == loop
    assert_same_run(chained, whole)


def test_the_bill_says_what_dynamic_sampling_does_to_generation_and_the_paper_configs_set_the_options():
    from gdpo.config import load_config
    from gdpo.plan import plan_runs, resolve_run_settings
    from gdpo.reporting.bill import dynamic_sampling_note, expected_generation_rounds

    assert expected_generation_rounds(0.0, 10) == 1.0 and expected_generation_rounds(0.5, 10) == 2.0
    assert expected_generation_rounds(0.95, 10) == 10.0 and expected_generation_rounds(1.0, 4) == 4.0
    expected = {"paper-math": LoopOptions(DynamicSampling("auto", 10), "k2", False),
                "paper-code": LoopOptions(DynamicSampling("auto", 10), "k2", False),
                "paper-tool_calling": LoopOptions(None, "k1", True)}
    for name, options in expected.items():
        config = load_config(Path(__file__).resolve().parents[1] / "config" / f"{name}.yaml")
        for run in plan_runs(config):
            settings = resolve_run_settings(config, run.task, run.method, run.seed)
            assert settings.loop_options == options and settings.trl["beta"] > 0, (name, run)
            assert options.kl_in_reward or settings.trl["use_bias_correction_kl"] is False  # verl: no KL weight
        note = " ".join(dynamic_sampling_note(config))
        assert ("1 / (1 − s) generation batches" in note) == (options.dynamic_sampling is not None)


def test_kl_in_the_reward_keeps_a_one_reward_gdpo_that_its_convention_runs_as_grpo(tiny_model, tmp_path):
    """The nvlabs convention runs GRPO for a per-reward method with one reward; the penalty column must not turn it
    back into GDPO (two columns) but lower GRPO's summed reward."""
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from gdpo.tasks import arithmetic
    from gdpo.training.trainer import RegistryGRPOTrainer

    trainer = RegistryGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_model), reward_funcs=[reward_on_some_prompts],
        args=GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=8, num_generations=4,
                        max_completion_length=8, report_to="none", bf16=False, loss_type="grpo", beta=0.5),
        train_dataset=arithmetic.build_dataset("train", 8, seed=0),
        processing_class=AutoTokenizer.from_pretrained(tiny_model),
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False),
        advantage_method="gdpo", advantage_convention="nvlabs",
        loop_options=LoopOptions.from_config({"kl_in_reward": True, "kl_estimator": "k1"}))
    trainer.model.train()
    torch.manual_seed(0)
    output = trainer._generate_and_score_completions(_batch(seed=27))
    rewards = trainer._captured_rewards.double()
    policy = _plain_log_probs(trainer.model, output)
    with trainer.model.disable_adapter():
        reference = _plain_log_probs(trainer.model, output)
    kl = ((policy - reference) * output["completion_mask"]).sum(dim=1).double()
    expected = compute_advantages(torch.cat([rewards, -0.5 * kl.unsqueeze(1)], dim=1), 4, "grpo",
                                  weights=[1.0, 1.0], convention="nvlabs")
    torch.testing.assert_close(output["advantages"].double(), expected, atol=2e-4, rtol=0)


def test_a_kl_loss_term_refuses_a_loss_type_whose_reduction_it_does_not_reproduce(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="kl_estimator k2 adds its KL term for loss_type grpo, .* not 'luspo'"):
        _trainer(tiny_model, tmp_path, beta=0.1, loss_type="luspo", loop={"kl_estimator": "k2"})
    with pytest.raises(ValueError, match="dynamic_sampling.metric 'acc' is neither"):
        _trainer(tiny_model, tmp_path, loop={"dynamic_sampling": {"metric": "acc"}})
