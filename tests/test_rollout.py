"""The fast rollout engine: same logits as the model, same samples' distribution as ``generate``.

Models are built from configs (no hub): the suite's tiny Qwen2 (query/key/value biases) and a small
Llama with grouped-query attention and tied embeddings, as SmolLM2.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig, LlamaForCausalLM
from transformers.generation.logits_process import (
    LogitsProcessorList,
    MinPLogitsWarper,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from gdpo.training import models
from gdpo.generation.rollout import (
    RolloutEngine,
    SamplingSettings,
    next_token_distribution_logits,
    sample_categorical,
    unsupported_reason,
)

PROMPTS = [[5, 17, 42, 9, 11, 3], [7, 8], [100, 101, 102, 103], [9, 9, 9, 1, 250, 33, 2, 4, 6]]


@pytest.fixture(scope="module")
def qwen2(tmp_path_factory):
    path = models.prepare_model(models.BUILTIN_TINY, tmp_path_factory.mktemp("models") / "tiny-qwen2")
    return AutoModelForCausalLM.from_pretrained(path).eval()


@pytest.fixture(scope="module")
def llama():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                         max_position_embeddings=256, rope_theta=10000.0, pad_token_id=0, eos_token_id=2)
    return LlamaForCausalLM(config).eval()


def left_padded(prompts, pad=0):
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


def reference_next_logits(model, prompts):
    """The model's own next-token logits ``(B, V)`` for left-padded prompts (as ``generate`` prefills)."""
    ids, mask = left_padded(prompts)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1].float()


def engine_next_logits(engine, prompts):
    width = max(map(len, prompts))
    ids, mask = left_padded(prompts)
    key_valid = torch.zeros(len(prompts), width, dtype=torch.bool)
    key_valid[:, :] = mask.bool()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = [(torch.zeros(len(prompts), engine.num_kv_heads, width, engine.head_dim, dtype=engine.dtype),
              torch.zeros(len(prompts), engine.num_kv_heads, width, engine.head_dim, dtype=engine.dtype))
             for _ in engine.layers]
    with torch.no_grad():
        return engine.logits(engine._forward(ids, positions, 0, key_valid, cache))


@pytest.mark.parametrize("attention", ["manual", "sdpa"])
@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_float32_engine_reproduces_the_models_logits_on_left_padded_prompts(name, attention, request):
    model = request.getfixturevalue(name)
    engine = RolloutEngine(model.config, dtype=torch.float32, attention=attention)
    engine.load_from(model)
    torch.testing.assert_close(engine_next_logits(engine, PROMPTS), reference_next_logits(model, PROMPTS),
                               atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_greedy_completions_equal_generate_token_for_token(name, request):
    model = request.getfixturevalue(name)
    engine = RolloutEngine(model.config, dtype=torch.float32)
    engine.load_from(model)
    eos = model.config.eos_token_id
    ours = engine.generate(PROMPTS, 12, [eos], 0, SamplingSettings(temperature=0.0))
    ids, mask = left_padded(PROMPTS)
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=12, do_sample=False,
                             pad_token_id=0, eos_token_id=eos)[:, ids.shape[1]:].tolist()
    reference = [row[:row.index(eos) + 1] if eos in row else row for row in out]
    assert ours == reference


def test_lora_deltas_are_merged_into_the_engine_without_touching_the_policy(qwen2):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(1)
    import copy

    policy = get_peft_model(copy.deepcopy(qwen2), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    for name, param in policy.named_parameters():
        if "lora_B" in name:  # LoRA B starts at zero; give the adapter an effect to merge
            param.data.normal_(0, 0.5)
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    engine = RolloutEngine(qwen2.config, dtype=torch.float32)
    engine.load_from(policy, version=3)
    assert engine.loaded_version == 3
    with torch.no_grad():
        ids, mask = left_padded(PROMPTS)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        expected = policy(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1].float()
    assert not torch.allclose(expected, reference_next_logits(qwen2, PROMPTS), atol=1e-3)  # the adapter matters
    torch.testing.assert_close(engine_next_logits(engine, PROMPTS), expected, atol=1e-4, rtol=1e-4)
    assert all(torch.equal(before[k], v) for k, v in policy.state_dict().items())


def test_bfloat16_engine_log_probabilities_stay_close_to_the_float32_model(llama):
    engine = RolloutEngine(llama.config)  # bfloat16, weights prepacked for oneDNN where available
    engine.load_from(llama)
    ours = torch.log_softmax(engine_next_logits(engine, PROMPTS), -1)
    reference = torch.log_softmax(reference_next_logits(llama, PROMPTS), -1)
    # Weighted by the model's own probabilities: the expected log-prob error of a sampled token.
    expected_error = (reference.exp() * (ours - reference).abs()).sum(-1)
    assert expected_error.max() < 0.05, expected_error


def test_hf_logits_processors_and_ours_remove_the_same_tokens():
    torch.manual_seed(0)
    logits = torch.randn(6, 50) * 3
    for settings in [SamplingSettings(0.7, 10, 0.9, None), SamplingSettings(1.0, None, 0.5, None),
                     SamplingSettings(1.3, None, None, 0.1), SamplingSettings(0.6, 0, 0.95, None)]:
        processors = LogitsProcessorList([TemperatureLogitsWarper(settings.temperature)])
        if settings.top_k:
            processors.append(TopKLogitsWarper(settings.top_k))
        if settings.top_p is not None:
            processors.append(TopPLogitsWarper(settings.top_p))
        if settings.min_p is not None:
            processors.append(MinPLogitsWarper(settings.min_p))
        expected = processors(torch.zeros(6, 1, dtype=torch.long), logits.clone())
        torch.testing.assert_close(next_token_distribution_logits(logits, settings), expected)


def test_inverse_cdf_sampling_draws_the_categorical_distribution():
    torch.manual_seed(0)
    probs = torch.tensor([[0.5, 0.0, 0.3, 0.2, 0.0], [0.0, 0.0, 0.0, 0.0, 1.0]]).repeat(20000, 1)
    draws = sample_categorical(probs).view(20000, 2)
    counts = torch.bincount(draws[:, 0], minlength=5).float() / 20000
    assert counts[1] == 0 and counts[4] == 0  # zero-probability tokens are never drawn
    expected = torch.tensor([0.5, 0.0, 0.3, 0.2, 0.0])
    assert (counts - expected).abs().max() < 0.015  # ~4 standard errors at n = 20000
    assert (draws[:, 1] == 4).all()


def test_sampled_completions_follow_generates_distribution(qwen2):
    """Same prompt, many draws from both paths: first- and second-token frequencies and lengths agree.

    Both paths are compared with the float32 model's exact next-token distribution, so a failure names
    the path that drifted; the bound is 5 standard errors of a total-variation estimate at this sample size.
    """
    prompt = [5, 17, 42, 9]
    draws, new_tokens = 1500, 2
    engine = RolloutEngine(qwen2.config)
    engine.load_from(qwen2)
    settings = SamplingSettings(temperature=1.0)
    torch.manual_seed(0)
    ours = engine.generate([prompt] * draws, new_tokens, [-1], 0, settings)
    ids = torch.tensor([prompt] * draws)
    torch.manual_seed(1)
    with torch.no_grad():
        theirs = qwen2.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                do_sample=True, top_k=0, top_p=1.0, temperature=1.0, pad_token_id=0,
                                eos_token_id=None)[:, len(prompt):].tolist()
    vocab = qwen2.config.vocab_size
    exact = torch.softmax(reference_next_logits(qwen2, [prompt]), -1)[0]
    bound = 5 * math.sqrt(vocab / draws) / 2  # E|TV| of an empirical distribution ~ sqrt(V/n)/2 at most
    for name, samples in [("engine", ours), ("generate", theirs)]:
        frequencies = torch.bincount(torch.tensor([s[0] for s in samples]), minlength=vocab).float() / draws
        assert 0.5 * (frequencies - exact).abs().sum() < bound, name
    first_ours = torch.bincount(torch.tensor([s[0] for s in ours]), minlength=vocab).float() / draws
    first_theirs = torch.bincount(torch.tensor([s[0] for s in theirs]), minlength=vocab).float() / draws
    assert 0.5 * (first_ours - first_theirs).abs().sum() < bound
    assert all(len(s) == new_tokens for s in ours)


def test_completions_stop_at_eos_and_finished_rows_leave_the_batch(llama):
    """A row that samples its EOS stops there; the rows still running continue exactly as they would have."""
    engine = RolloutEngine(llama.config, dtype=torch.float32)
    engine.load_from(llama)
    greedy = SamplingSettings(temperature=0.0)
    full = engine.generate(PROMPTS, 8, [-1], 0, greedy)
    # An end-of-sequence token that some row reaches and some other row never does.
    stop = next(token for row in full for token in row if any(token not in other for other in full))
    stopped = engine.generate(PROMPTS, 8, [stop], 0, greedy)
    assert any(len(cut) < len(row) for row, cut in zip(full, stopped))
    for row, cut in zip(full, stopped):
        assert cut == (row[:row.index(stop) + 1] if stop in row else row)
    torch.manual_seed(0)
    sampled = engine.generate(PROMPTS * 2, 8, [stop], 0, SamplingSettings(temperature=1.0))
    assert all(len(row) == 8 or row[-1] == stop for row in sampled)
    assert all(stop not in row[:-1] for row in sampled)


def test_unsupported_models_and_settings_are_refused_with_the_fix():
    config = LlamaConfig(hidden_act="gelu")
    assert "hidden_act" in unsupported_reason(config)
    with pytest.raises(ValueError, match="fast_generation: false"):
        RolloutEngine(config)
    from transformers import GPT2Config

    assert "model_type 'gpt2'" in unsupported_reason(GPT2Config())
    with pytest.raises(ValueError, match="repetition_penalty=1.2.*fast_generation: false"):
        SamplingSettings.from_generation_config(GenerationConfig(do_sample=True, repetition_penalty=1.2))
    assert SamplingSettings.from_generation_config(GenerationConfig(do_sample=False)).temperature == 0.0
    settings = SamplingSettings.from_generation_config(GenerationConfig(do_sample=True, temperature=0.6, top_p=0.95))
    assert (settings.temperature, settings.top_p) == (0.6, 0.95)


def test_repeated_prompts_are_prefilled_once_with_the_same_completions(llama):
    engine = RolloutEngine(llama.config, dtype=torch.float32)
    engine.load_from(llama)
    greedy = SamplingSettings(temperature=0.0)
    grouped = engine.generate([PROMPTS[0], PROMPTS[2], PROMPTS[0], PROMPTS[2]], 5, [-1], 0, greedy)
    alone = engine.generate([PROMPTS[0], PROMPTS[2]], 5, [-1], 0, greedy)
    assert grouped == [alone[0], alone[1], alone[0], alone[1]]


# ---- fused attention (scaled_dot_product_attention) against the earlier float32-score path ----------------


@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_fused_attention_greedy_completions_equal_the_manual_path_in_float32(name, request):
    model = request.getfixturevalue(name)
    completions = {}
    for kind in RolloutEngine.ATTENTION_KINDS:
        engine = RolloutEngine(model.config, dtype=torch.float32, attention=kind)
        engine.load_from(model)
        completions[kind] = engine.generate(PROMPTS, 12, [model.config.eos_token_id], 0,
                                            SamplingSettings(temperature=0.0))
    assert completions["sdpa"] == completions["manual"]


def _stepwise_distributions(engine, prompts, continuation, settings):
    """Next-token distributions ``(steps, B, V)`` along a fixed continuation (teacher-forced), as sampling sees them."""
    rows = []
    for step in range(len(continuation) + 1):
        extended = [p + continuation[:step] for p in prompts]
        rows.append(next_token_distribution_logits(engine_next_logits(engine, extended), settings).softmax(-1))
    return torch.stack(rows)


def _max_total_variation(a, b):
    return 0.5 * (a - b).abs().sum(-1).max().item()


#: Stated test of "sampled outputs equal in distribution": sampling is exact (``sample_categorical``), so the
#: law of a sampled sequence is the product of the per-step next-token distributions; we bound the largest
#: total-variation distance between the two paths' per-step distributions (4 prompts x 5 teacher-forced
#: steps, temperature 1 and 0.1, top-p 0.95). Float32: fused vs manual within FLOAT32_TV_BOUND (measured
#: under 5e-7; an attention scaled by 0.9 moves it to 9e-5 and more, see the perturbation test).
FLOAT32_TV_BOUND = 1e-5
#: bfloat16: both paths round, differently, so they are compared through the exact (float32) distribution:
#: the fused path's distance to it is at most BF16_ERROR_RATIO times the manual path's (measured ratios
#: 0.95 to 1.32 on these models; both distances are 2e-3 to 1e-2).
BF16_ERROR_RATIO = 2.0
TEMPERATURES = (1.0, 0.1)


def _engine(model, dtype, attention):
    engine = RolloutEngine(model.config, dtype=dtype, attention=attention)
    engine.load_from(model)
    return engine


@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_fused_attention_samples_from_the_same_distribution_in_float32(name, temperature, request):
    model = request.getfixturevalue(name)
    settings = SamplingSettings(temperature=temperature, top_p=0.95)
    continuation = [11, 23, 5, 71]
    fused = _stepwise_distributions(_engine(model, torch.float32, "sdpa"), PROMPTS, continuation, settings)
    manual = _stepwise_distributions(_engine(model, torch.float32, "manual"), PROMPTS, continuation, settings)
    assert _max_total_variation(fused, manual) < FLOAT32_TV_BOUND


@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_fused_attention_in_bfloat16_is_no_further_from_the_exact_distribution(name, temperature, request,
                                                                              monkeypatch):
    # bfloat16 rounding is what is compared: kept even on a CPU that would compute it in float32
    monkeypatch.setenv("GDPO_CPU_BF16", "always")
    model = request.getfixturevalue(name)
    settings = SamplingSettings(temperature=temperature, top_p=0.95)
    continuation = [11, 23, 5, 71]
    exact = _stepwise_distributions(_engine(model, torch.float32, "manual"), PROMPTS, continuation, settings)
    fused = _stepwise_distributions(_engine(model, torch.bfloat16, "sdpa"), PROMPTS, continuation, settings)
    manual = _stepwise_distributions(_engine(model, torch.bfloat16, "manual"), PROMPTS, continuation, settings)
    assert _max_total_variation(fused, exact) <= BF16_ERROR_RATIO * _max_total_variation(manual, exact)


@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_the_distribution_test_fails_on_a_perturbed_attention(name, request, monkeypatch):
    """The float32 test can fail: attention logits scaled by 0.9 are caught."""
    model = request.getfixturevalue(name)
    settings = SamplingSettings(temperature=1.0, top_p=0.95)
    manual = _stepwise_distributions(_engine(model, torch.float32, "manual"), PROMPTS, [11, 23, 5, 71], settings)
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention",
                        lambda q, k, v, **kw: sdpa(q, k, v, scale=0.9 / math.sqrt(q.shape[-1]), **kw))
    perturbed = _stepwise_distributions(_engine(model, torch.float32, "sdpa"), PROMPTS, [11, 23, 5, 71], settings)
    assert _max_total_variation(perturbed, manual) > FLOAT32_TV_BOUND


def test_an_unknown_attention_kind_is_refused_with_the_choices(llama):
    with pytest.raises(ValueError, match="sdpa"):
        RolloutEngine(llama.config, attention="flash")


# ---- continuous batching (generate_continuous) against batch-by-batch generation ----------------------------

#: Prompts of many lengths, two repeated back to back (the samples of one prompt), more than a batch holds.
MANY_PROMPTS = [[(7 * i + 3 * j) % 290 + 3 for j in range(1 + (5 * i) % 23)] for i in range(19)]
MANY_PROMPTS[4:4] = [MANY_PROMPTS[3]]
MANY_PROMPTS[10:10] = [MANY_PROMPTS[9], MANY_PROMPTS[9]]


def _early_stop_token(engine, prompts, new_tokens):
    """A token that ends some greedy completions early and never appears in others (so rows finish apart)."""
    full = engine.generate(prompts, new_tokens, [-1], 0, SamplingSettings(temperature=0.0))
    counts = {}
    for row in full:
        for token in set(row[1:-1]):
            counts[token] = counts.get(token, 0) + 1
    return max(counts, key=lambda token: (0 < counts[token] < len(full), -abs(counts[token] - len(full) / 2)))


@pytest.mark.parametrize("attention", RolloutEngine.ATTENTION_KINDS)
@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_continuous_batching_gives_the_greedy_completions_of_batch_by_batch_generation(name, attention, request):
    model = request.getfixturevalue(name)
    engine = _engine(model, torch.float32, attention)
    greedy = SamplingSettings(temperature=0.0)
    stop = _early_stop_token(engine, MANY_PROMPTS, 10)
    for eos in ([-1], [stop]):
        reference = [engine.generate([prompt], 10, eos, 0, greedy)[0] for prompt in MANY_PROMPTS]
        batched = engine.generate(MANY_PROMPTS, 10, eos, 0, greedy)
        assert batched == reference
        for batch_size in (1, 3, 8, 64):
            assert engine.generate_continuous(MANY_PROMPTS, 10, eos, 0, greedy, batch_size=batch_size) == reference
    assert any(len(row) < 10 for row in reference)  # the early stops happened


@pytest.mark.parametrize("name", ["qwen2", "llama"])
def test_continuous_batching_in_bfloat16_gives_the_batch_by_batch_greedy_completions(name, request, monkeypatch):
    monkeypatch.setenv("GDPO_CPU_BF16", "always")  # bfloat16 rounding is what is compared
    model = request.getfixturevalue(name)
    engine = _engine(model, torch.bfloat16, "manual")
    greedy = SamplingSettings(temperature=0.0)
    batch_by_batch = [row for start in range(0, len(MANY_PROMPTS), 8)
                      for row in engine.generate(MANY_PROMPTS[start:start + 8], 10, [-1], 0, greedy)]
    assert engine.generate_continuous(MANY_PROMPTS, 10, [-1], 0, greedy, batch_size=8) == batch_by_batch


def test_continuous_batching_refills_a_finished_rows_slot_at_once(llama, monkeypatch):
    """While prompts wait, every decode step runs a full batch; the batch shrinks only when none is left."""
    engine = _engine(llama, torch.float32, "manual")
    greedy = SamplingSettings(temperature=0.0)
    stop = _early_stop_token(engine, MANY_PROMPTS, 10)
    decode_rows, prefills = [], []
    forward = engine._forward

    def recording(ids, positions, start, key_valid, cache):
        (decode_rows if isinstance(start, torch.Tensor) else prefills).append(ids.shape[0])
        return forward(ids, positions, start, key_valid, cache)

    monkeypatch.setattr(engine, "_forward", recording)
    completions = engine.generate_continuous(MANY_PROMPTS, 10, [stop], 0, greedy, batch_size=4)
    distinct = sum(1 for i, p in enumerate(MANY_PROMPTS) if i == 0 or p != MANY_PROMPTS[i - 1])
    # one prompt per prefill; a repeat admitted with its twin copies the cache (a twin admitted in a later
    # round, after the first has left its slot, is prefilled again)
    assert distinct <= len(prefills) < len(MANY_PROMPTS) and set(prefills) == {1}
    # Decoding steps: the tokens beyond each completion's first, in full batches but for the final drain.
    assert sum(decode_rows) == sum(len(c) - 1 for c in completions)
    # Empty decode rows: a row admitted in a step samples from its prefill and skips that step's decode (one
    # per admission after the first four), and the last prompts drain (at most 3 empty rows for 10 steps).
    assert 4 * len(decode_rows) - sum(decode_rows) <= (len(MANY_PROMPTS) - 4) + 3 * 10
    # Batch by batch, a batch waits for its longest row: more decode calls for the same tokens.
    static_calls = []
    monkeypatch.setattr(engine, "_forward", lambda ids, positions, start, key_valid, cache: (
        static_calls.append(ids.shape[1] == 1) or forward(ids, positions, start, key_valid, cache)))
    for begin in range(0, len(MANY_PROMPTS), 4):
        engine.generate(MANY_PROMPTS[begin:begin + 4], 10, [stop], 0, greedy)
    assert len(decode_rows) < sum(static_calls)


def test_continuous_batching_samples_from_the_exact_distribution(qwen2):
    """Many draws of one prompt among other prompts: the first two tokens' frequencies match the float32
    model's exact next-token distribution (total-variation bound as in the generate test above)."""
    prompt, draws = [5, 17, 42, 9], 1500
    engine = _engine(qwen2, torch.float32, "manual")
    others = MANY_PROMPTS[:6]
    torch.manual_seed(0)
    out = engine.generate_continuous(others + [prompt] * draws, 2, [-1], 0, SamplingSettings(temperature=1.0),
                                     batch_size=64)[len(others):]
    vocab = qwen2.config.vocab_size
    bound = 5 * math.sqrt(vocab / draws) / 2
    exact = torch.softmax(reference_next_logits(qwen2, [prompt]), -1)[0]
    first = torch.bincount(torch.tensor([s[0] for s in out]), minlength=vocab).float() / draws
    assert 0.5 * (first - exact).abs().sum() < bound
    # the second token, given the most frequent first one, against its exact conditional distribution
    top = int(first.argmax())
    seconds = [s[1] for s in out if s[0] == top]
    exact_second = torch.softmax(reference_next_logits(qwen2, [prompt + [top]]), -1)[0]
    frequencies = torch.bincount(torch.tensor(seconds), minlength=vocab).float() / len(seconds)
    assert 0.5 * (frequencies - exact_second).abs().sum() < 5 * math.sqrt(vocab / len(seconds)) / 2


def test_continuous_batching_refuses_what_it_cannot_run(llama):
    engine = RolloutEngine(llama.config, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="load_from"):
        engine.generate_continuous([[1, 2]], 4, [2], 0)
    engine.load_from(llama)
    assert engine.generate_continuous([], 4, [2], 0) == []
    with pytest.raises(ValueError, match="at least one token"):
        engine.generate_continuous([[1, 2], []], 4, [2], 0)
    with pytest.raises(ValueError, match="batch_size"):
        engine.generate_continuous([[1, 2]], 4, [2], 0, batch_size=0)
