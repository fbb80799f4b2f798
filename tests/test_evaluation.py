"""Evaluation: settings resolution, the plan, sampling completions, loading trained adapters, eval.json."""

from __future__ import annotations

import json

import pytest
import torch

from gdpo.evaluation.run import evaluate_run
from gdpo.generation.generate import generate_completions, load_policy
from gdpo.plan import EVAL_DEFAULTS, RunKey, plan_evaluations, resolve_eval_settings, runs_root

CONFIG = {
    "scale": "smoke",
    "methods": ["grpo", "gdpo"],
    "advantage_convention": "trl",
    "seeds": [3, 4],
    "evaluation": {"eval_size": 5, "max_new_tokens": 8},
    "tasks": {
        "arithmetic": {"family": "arithmetic", "model": "builtin:tiny-qwen2", "length_limit": 6,
                       "evaluation": {"max_new_tokens": 12}},
    },
}

PROMPTS = [
    [{"role": "user", "content": "What is 1 + 2?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A much longer question about things?"}],
    [{"role": "user", "content": "Hi"}],
]


@pytest.fixture(scope="module")
def policy(tiny_model):
    return load_policy(tiny_model)


def test_settings_take_defaults_then_scale_then_task():
    settings = resolve_eval_settings(CONFIG, "arithmetic", "gdpo", 3)
    assert settings.eval_size == 5  # the scale's block
    assert settings.max_new_tokens == 12  # the task's block wins over the scale's
    assert settings.num_samples == EVAL_DEFAULTS["num_samples"]  # nobody sets it
    assert settings.options == {"length_limit": 6}
    assert resolve_eval_settings(CONFIG, "arithmetic", "base", 3).method == "base"


@pytest.mark.parametrize(
    ("task", "method", "message"),
    [
        ("nope", "gdpo", "Unknown task 'nope'"),  # a task the config does not define
        ("arithmetic", "grpo_nostd", "not among task 'arithmetic'"),  # a method the config does not run
    ],
)
def test_settings_reject_unknown_names(task, method, message):
    with pytest.raises(ValueError, match=message):
        resolve_eval_settings(CONFIG, task, method, 3)


def test_plan_evaluates_base_once_when_greedy_and_per_seed_when_sampling():
    greedy = plan_evaluations(CONFIG)
    assert len(greedy) == 2 * 2 + 1
    base = RunKey("arithmetic", "base", 3, runs_root(CONFIG["scale"]))
    assert [e for e in greedy if e.method == "base"] == [base]
    sampling = plan_evaluations({**CONFIG, "evaluation": {"temperature": 0.7}})
    assert [e.seed for e in sampling if e.method == "base"] == [3, 4]


def test_samples_are_reproducible_per_seed_and_keep_prompt_order(policy):
    model, tokenizer = policy
    first = generate_completions(model, tokenizer, PROMPTS, num_samples=2, max_new_tokens=6, batch_size=2, seed=1)
    again = generate_completions(model, tokenizer, PROMPTS, num_samples=2, max_new_tokens=6, batch_size=2, seed=1)
    other = generate_completions(model, tokenizer, PROMPTS, num_samples=2, max_new_tokens=6, batch_size=2, seed=2)
    assert first == again
    assert first != other
    assert [len(samples) for samples in first] == [2, 2, 2]
    for samples in first:
        for completion in samples:
            assert 1 <= completion.num_tokens <= 6
            if completion.truncated:  # stopped by the limit, not by an end-of-sequence token
                assert completion.num_tokens == 6
    # Each prompt's samples do not depend on which other prompts share its batch when decoding greedily.
    alone = generate_completions(model, tokenizer, PROMPTS[1:2], temperature=0, max_new_tokens=6)
    together = generate_completions(model, tokenizer, PROMPTS, temperature=0, max_new_tokens=6, batch_size=3)
    assert alone[0][0].text == together[1][0].text


def test_fast_path_returns_the_engines_completions_in_prompt_order(policy):
    """The engine's own token-level equivalence is tested in test_rollout; this checks the plumbing:
    prompt order, end-of-sequence handling, the truncation flag and decoding."""
    from gdpo.generation.rollout import RolloutEngine, SamplingSettings

    model, tokenizer = policy
    fast = generate_completions(model, tokenizer, PROMPTS, temperature=0, max_new_tokens=6, batch_size=3, fast=True)
    engine = RolloutEngine(model.config, batch_size_hint=3)
    engine.load_from(model)
    encoded = [tokenizer.apply_chat_template(p, tokenize=True, add_generation_prompt=True)["input_ids"] for p in PROMPTS]
    eos = model.generation_config.eos_token_id
    order = sorted(range(len(PROMPTS)), key=lambda i: len(encoded[i]))  # the batch generate_completions forms
    batch = engine.generate([encoded[i] for i in order], 6, [eos], tokenizer.pad_token_id,
                            SamplingSettings(temperature=0.0))
    for i, ids in zip(order, batch):
        (completion,) = fast[i]
        assert completion.num_tokens == len(ids)
        assert completion.truncated == (ids[-1] != eos)
        assert completion.text == tokenizer.decode([t for t in ids if t != eos], skip_special_tokens=True)
    samples = generate_completions(model, tokenizer, PROMPTS, num_samples=2, max_new_tokens=6, seed=1, fast=True)
    assert samples == generate_completions(model, tokenizer, PROMPTS, num_samples=2, max_new_tokens=6, seed=1,
                                           fast=True)


def test_continuous_batching_gives_the_batch_by_batch_completions_when_greedy(policy):
    """Evaluation's default fast path (continuous batching) against the earlier batch-by-batch one: the same
    greedy completions, in prompt order, at batch sizes that split the prompts and that hold them all."""
    model, tokenizer = policy
    prompts = PROMPTS * 3
    for batch_size in (2, 4, 16):
        kwargs = dict(temperature=0, max_new_tokens=8, batch_size=batch_size, fast=True)
        continuous = generate_completions(model, tokenizer, prompts, **kwargs)
        assert continuous == generate_completions(model, tokenizer, prompts, continuous_batching=False, **kwargs)
    sampled = generate_completions(model, tokenizer, prompts, num_samples=3, max_new_tokens=6, seed=4, fast=True)
    assert [len(samples) for samples in sampled] == [3] * len(prompts)
    assert sampled == generate_completions(model, tokenizer, prompts, num_samples=3, max_new_tokens=6, seed=4,
                                           fast=True)


def test_greedy_samples_of_one_prompt_are_identical(policy):
    model, tokenizer = policy
    (samples,) = generate_completions(model, tokenizer, PROMPTS[:1], num_samples=3, temperature=0, max_new_tokens=5)
    assert len({s.text for s in samples}) == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"num_samples": 0},  # no samples asked for
        {"temperature": -1.0},  # negative temperature
        {"top_p": 0.0},  # empty nucleus
        {"max_new_tokens": 0},  # nothing to generate
    ],
)
def test_bad_sampling_settings_are_named(policy, bad):
    model, tokenizer = policy
    with pytest.raises(ValueError):
        generate_completions(model, tokenizer, PROMPTS, **bad)


def test_a_trained_lora_adapter_is_merged_into_the_policy(tiny_model, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    peft_model = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "adapter")
    inputs = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        expected = peft_model(inputs).logits
    merged, _ = load_policy(tiny_model, tmp_path / "adapter")
    untrained, _ = load_policy(tiny_model)
    with torch.no_grad():
        assert torch.allclose(merged(inputs).logits, expected, atol=1e-4)
        assert not torch.allclose(untrained(inputs).logits, expected, atol=1e-4)


@pytest.mark.parametrize(
    ("model_dir", "adapter", "message"),
    [
        ("missing-model", None, "no config.json"),  # base model not prepared
        (None, "missing-run", "does not exist"),  # trained run not there
    ],
)
def test_missing_models_name_the_rule_to_run(tiny_model, tmp_path, model_dir, adapter, message):
    with pytest.raises(ValueError, match=message):
        load_policy(tmp_path / model_dir if model_dir else tiny_model, tmp_path / adapter if adapter else None)


def test_evaluate_run_writes_eval_json_of_the_base_model(tiny_model, tmp_path):
    settings = resolve_eval_settings(CONFIG, "arithmetic", "base", 3)
    record = evaluate_run(settings, tiny_model, tmp_path / "eval.json", tmp_path / "work")
    written = json.loads((tmp_path / "eval.json").read_text())
    assert written == record
    assert written["method"] == "base" and written["family"] == "arithmetic"
    assert written["adapter_weights_sha256"] is None and written["model_weights_sha256"]
    # The job's settings first, in their order, then the evaluator's own.
    assert list(written["settings"].items())[:len(settings.to_dict())] == list(settings.to_dict().items())
    metrics = written["benchmarks"]["arithmetic"]
    assert metrics["n_items"] == 5
    lines = [json.loads(line) for line in (tmp_path / "work/completions.jsonl").read_text().splitlines()]
    assert len(lines) == 5
    # Every percentage is recomputed from the completions the evaluator kept.
    assert metrics["acc"] == pytest.approx(100 * sum(l["correct"][0] for l in lines) / 5)
    assert metrics["exceed"] == pytest.approx(100 * sum(l["num_tokens"][0] > 6 for l in lines) / 5)
    # Per-item outcomes come last, one 0/1 character per sample; ids name the evaluation seed's problems.
    assert list(written)[-1] == "items"
    outcomes = written["items"]["arithmetic"]
    assert outcomes["ids"] == [f"3/{index}" for index in range(5)]
    assert outcomes["scores"]["acc"] == ["1" if l["correct"][0] else "0" for l in lines]
    assert outcomes["scores"]["format"] == ["1" if l["format"][0] else "0" for l in lines]
    assert outcomes["scores"]["exceed"] == ["1" if l["num_tokens"][0] > 6 else "0" for l in lines]


def test_evaluate_run_needs_an_adapter_exactly_for_trained_methods(tiny_model, tmp_path):
    with pytest.raises(ValueError, match="adapter-dir"):
        evaluate_run(resolve_eval_settings(CONFIG, "arithmetic", "gdpo", 3), tiny_model, tmp_path / "e.json",
                     tmp_path / "work")
    with pytest.raises(ValueError, match="adapter-dir"):
        evaluate_run(resolve_eval_settings(CONFIG, "arithmetic", "base", 3), tiny_model, tmp_path / "e.json",
                     tmp_path / "work", adapter_dir=tiny_model)
    assert not (tmp_path / "e.json").exists()


# --------------------------------------------------------------------------------------------------
# Where an evaluation runs: one choice of device and dtype
# --------------------------------------------------------------------------------------------------


def test_evaluations_run_on_the_cpu_in_float32_without_a_gpu_and_on_cuda_in_bfloat16_with_one(monkeypatch):
    from gdpo.generation.generate import evaluation_device
    from gdpo.tasks.math.evaluation import lm_eval_model_args

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu = evaluation_device()
    assert (cpu.device, cpu.dtype) == ("cpu", torch.float32)  # the CPU scales' engine and dtype, as before
    assert cpu.record() == {"device": "cpu", "dtype": "float32"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    gpu = evaluation_device()
    assert (gpu.device, gpu.dtype) == ("cuda", torch.bfloat16)
    assert gpu.record() == {"device": "cuda", "dtype": "bfloat16"}
    # Math's lm-eval hf model takes the same choice; vLLM keeps its own.
    common = dict(batch_size=4, max_new_tokens=16, seed=0)
    assert lm_eval_model_args("hf", "m", None, **common, device=gpu.device, dtype=gpu.dtype_name)[1] == {
        "pretrained": "m", "tokenizer": "m", "dtype": "bfloat16", "device": "cuda", "batch_size": 4}
    assert lm_eval_model_args("hf", "m", None, **common)[1]["device"] == "cpu"
    assert "device" not in lm_eval_model_args("vllm", "m", None, **common)[1]


def test_load_policy_places_the_model_and_the_cpu_rollout_engine_is_refused_off_the_cpu(tiny_model):
    model, tokenizer = load_policy(tiny_model, dtype=torch.bfloat16, device="meta")  # no GPU here: meta
    assert model.device.type == "meta" and model.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="rollout engine .* runs on the CPU; the model is on meta"):
        generate_completions(model, tokenizer, [[{"role": "user", "content": "1+1"}]], fast=True)
