"""Shared-prompt packing gives TRL's padded log-probabilities, entropies and gradients.

Models are built from configs (no hub): the suite's tiny Qwen2 (query/key/value biases) and a small Llama
with grouped-query attention and tied embeddings, as SmolLM2.
"""

from __future__ import annotations

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from gdpo.training import models
from gdpo.training.packing import (
    group_preserving_permutation,
    pack_rows,
    packed_log_probs,
    packing_obstacle,
    packing_unsupported_reason,
)

PAD = 0


def llama(attention: str = "sdpa"):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                         max_position_embeddings=256, rope_theta=10000.0, pad_token_id=PAD, eos_token_id=2)
    config._attn_implementation = attention
    return LlamaForCausalLM(config)


@pytest.fixture(scope="module")
def qwen2(tmp_path_factory):
    path = models.prepare_model(models.BUILTIN_TINY, tmp_path_factory.mktemp("models") / "tiny-qwen2")
    return AutoModelForCausalLM.from_pretrained(path, attn_implementation="sdpa")


def grpo_batch(prompts, completions):
    """TRL's layout: prompts left-padded, completions right-padded, concatenated."""
    width = max(map(len, prompts))
    length = max(map(len, completions))
    prompt_ids = torch.tensor([[PAD] * (width - len(p)) + p for p in prompts])
    prompt_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    completion_ids = torch.tensor([c + [PAD] * (length - len(c)) for c in completions])
    completion_mask = torch.tensor([[1] * len(c) + [0] * (length - len(c)) for c in completions])
    return torch.cat([prompt_ids, completion_ids], 1), torch.cat([prompt_mask, completion_mask], 1), length


# Two groups sharing prompts (as GRPO's generations do) and one lone prompt, completions of uneven length.
PROMPTS = [[5, 17, 42, 9], [5, 17, 42, 9], [5, 17, 42, 9], [7, 8, 30, 31, 32, 33, 34], [7, 8, 30, 31, 32, 33, 34],
           [100, 101]]
COMPLETIONS = [[11, 12, 13, 2], [14, 2], [15, 16, 17, 18, 19, 2], [20, 21, 2], [22], [23, 24, 25]]


def padded_log_probs(model, input_ids, attention_mask, logits_to_keep, temperature=1.0, row_positions=False):
    """Per-token log-probs and entropies of the completion columns from the padded batch, as TRL scores them.

    With ``row_positions`` each row's first real token is at position 0 (TRL's rows start at their padding).
    """
    position_ids = (attention_mask.cumsum(1) - 1).clamp(min=0) if row_positions else None
    logits = model(input_ids=input_ids, attention_mask=attention_mask,
                   position_ids=position_ids).logits[:, -logits_to_keep - 1:-1]
    log_probs = (logits.float() / temperature).log_softmax(-1)
    targets = input_ids[:, -logits_to_keep:]
    mask = attention_mask[:, -logits_to_keep:].bool()
    per_token = log_probs.gather(-1, targets[..., None]).squeeze(-1) * mask
    entropy = -(log_probs.exp() * log_probs).sum(-1) * mask
    return per_token, entropy


def test_layout_shares_each_prompt_once():
    input_ids, attention_mask, keep = grpo_batch(PROMPTS, COMPLETIONS)
    packed = pack_rows(input_ids, attention_mask, keep)
    assert packed.input_ids.shape[1] == 4 + 7 + 2 + sum(map(len, COMPLETIONS))
    assert len(packed.target_ids) == sum(map(len, COMPLETIONS))
    # The first completion token of the three rows of group 0 is predicted by the prompt's last token.
    first_tokens = packed.predictor_index[packed.columns == 0][:3]
    assert first_tokens.tolist() == [3, 3, 3]
    # A completion sees its prompt and itself, never another completion.
    second_row_first = int(packed.predictor_index[(packed.rows == 1) & (packed.columns == 1)])
    visible = packed.allowed[second_row_first].nonzero().flatten().tolist()
    assert visible == [0, 1, 2, 3, second_row_first]
    # Position ids continue from the prompt's length for every completion.
    assert packed.position_ids[0, second_row_first] == 4


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_packed_equals_padded_llama(attention):
    model = llama(attention)
    input_ids, attention_mask, keep = grpo_batch(PROMPTS, COMPLETIONS)
    expected, expected_entropy = padded_log_probs(model, input_ids, attention_mask, keep, temperature=0.7)
    got, entropy = packed_log_probs(model, input_ids, attention_mask, keep, temperature=0.7, compute_entropy=True)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entropy, expected_entropy, atol=1e-5, rtol=1e-5)


def test_packed_equals_padded_qwen2(qwen2):
    input_ids, attention_mask, keep = grpo_batch(PROMPTS, COMPLETIONS)
    with torch.no_grad():
        expected, _ = padded_log_probs(qwen2, input_ids, attention_mask, keep)
        got, _ = packed_log_probs(qwen2, input_ids, attention_mask, keep)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_packed_gradients_equal_padded_under_lora():
    """The LoRA gradient of a GRPO-like loss is the same from the packed and the padded layouts."""
    input_ids, attention_mask, keep = grpo_batch(PROMPTS, COMPLETIONS)
    mask = attention_mask[:, -keep:].float()
    advantages = torch.tensor([1.0, -0.5, -0.5, 0.8, -0.8, 0.0])[:, None]
    gradients = []
    for packed in (False, True):
        model = get_peft_model(llama(), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear",
                                                   init_lora_weights=False))
        causal_lm = model.get_base_model()
        if packed:
            log_probs, _ = packed_log_probs(causal_lm, input_ids, attention_mask, keep)
        else:
            log_probs, _ = padded_log_probs(causal_lm, input_ids, attention_mask, keep)
        loss = (-(advantages * log_probs * mask).sum(-1) / mask.sum(-1)).mean()
        loss.backward()
        gradients.append({name: p.grad.clone() for name, p in model.named_parameters() if p.requires_grad})
    assert gradients[0].keys() == gradients[1].keys() and gradients[0]
    for name, gradient in gradients[0].items():
        torch.testing.assert_close(gradients[1][name], gradient, atol=1e-5, rtol=1e-4, msg=name)


def test_bfloat16_autocast_stays_close():
    """Under bfloat16 autocast (the mini scale's training) the two layouts differ only by rounding."""
    model = llama()
    input_ids, attention_mask, keep = grpo_batch(PROMPTS, COMPLETIONS)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        expected, _ = padded_log_probs(model, input_ids, attention_mask, keep)
        got, _ = packed_log_probs(model, input_ids, attention_mask, keep)
    assert (got - expected).abs().max() < 0.05


def test_empty_completion_and_obstacles():
    input_ids, attention_mask, keep = grpo_batch([[5, 6], [5, 6]], [[7, 2], []])
    got, _ = packed_log_probs(llama(), input_ids, attention_mask, keep)
    assert got[1].abs().sum() == 0 and got[0].ne(0).all()

    right_padded = attention_mask.clone()
    right_padded[0, 1] = 0  # padding after a prompt token
    assert "prompt" in packing_obstacle(input_ids, right_padded, keep)
    holed = attention_mask.clone()
    holed[0, -2] = 0  # padding before the completion's last token
    assert "completion" in packing_obstacle(input_ids, holed, keep)
    with pytest.raises(ValueError, match="cannot pack"):
        pack_rows(input_ids, holed, keep)


def test_unsupported_models_are_named(qwen2):
    assert packing_unsupported_reason(llama()) is None and packing_unsupported_reason(qwen2) is None
    flex = llama()
    flex.config._attn_implementation = "flex_attention"
    assert "flex_attention" in packing_unsupported_reason(flex)


def test_group_preserving_permutation():
    generator = torch.Generator().manual_seed(3)
    order = group_preserving_permutation(12, 4, generator)
    assert sorted(order.tolist()) == list(range(12))
    groups = order.view(3, 4)
    assert all((group - group[0]).tolist() == [0, 1, 2, 3] and group[0] % 4 == 0 for group in groups)
    with pytest.raises(ValueError, match="whole number of groups"):
        group_preserving_permutation(10, 4)


# The shared-prefix forward at the two families' shapes: two groups per micro-batch whose prompts differ in
# length (left padding), completions of uneven length (right padding), one of them truncated (no EOS = 2).
def family_batch(family: str, vocab: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)

    def tokens(n):
        return torch.randint(3, vocab, (n,), generator=generator).tolist()

    # Tool calling: long prompts (tool schemas), short completions; math: short prompts, longer completions.
    prompt_lengths, completion_lengths = {"tool_calling": ((48, 40), (3, 5, 2, 6)),
                                          "math": ((6, 9), (12, 4, 9, 14))}[family]
    prompts, completions = [], []
    for prompt_length in prompt_lengths:
        prompt = tokens(prompt_length)
        for k, length in enumerate(completion_lengths):
            prompts.append(prompt)
            completions.append(tokens(length) if k == 0 else tokens(length - 1) + [2])  # row 0: truncated
    return grpo_batch(prompts, completions)


def grpo_loss_and_gradients(model, causal_lm, layout, input_ids, attention_mask, keep, row_positions=False):
    """A GRPO loss of the micro-batch (per-sequence mean) and every trained gradient.

    TRL's loss at its first iteration weighs ``exp(log_p - log_p.detach())``, whose value is 1 and whose
    gradient is log_p's; the log-probabilities themselves are weighed here, so that the loss's value
    checks them.
    """
    mask = attention_mask[:, -keep:].float()
    advantages = torch.linspace(-1.0, 1.0, input_ids.shape[0])[:, None] + 0.25
    if layout == "shared prefix":
        log_probs, _ = packed_log_probs(causal_lm, input_ids, attention_mask, keep, temperature=0.7)
    else:
        log_probs, _ = padded_log_probs(causal_lm, input_ids, attention_mask, keep, temperature=0.7,
                                        row_positions=row_positions)
    loss = (-(advantages * log_probs * mask).sum(-1) / mask.sum(-1)).mean()
    model.zero_grad(set_to_none=True)
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.requires_grad}


def assert_relative_close(got: torch.Tensor, expected: torch.Tensor, name: str, rtol: float = 1e-5):
    """Relative error ``|got - expected| / |expected|`` (Euclidean norms) at most ``rtol``."""
    error = torch.linalg.vector_norm(got - expected) / torch.linalg.vector_norm(expected).clamp_min(1e-30)
    assert error <= rtol, f"{name}: relative error {error:.2e} (tolerance {rtol:.0e})"


def check_shared_prefix_equals_padded(base_factory, family: str, lora: bool, row_positions: bool = False,
                                      rtol: float = 1e-5):
    results = []
    for layout in ("padded", "shared prefix"):
        model = base_factory()
        if lora:
            torch.manual_seed(1)  # the same LoRA weights for both layouts
            model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear",
                                                     init_lora_weights=False))
        causal_lm = model.get_base_model() if lora else model
        input_ids, attention_mask, keep = family_batch(family, causal_lm.config.vocab_size)
        results.append(grpo_loss_and_gradients(model, causal_lm, layout, input_ids, attention_mask, keep,
                                               row_positions))
    (loss, gradients), (packed_loss, packed_gradients) = results
    assert_relative_close(packed_loss, loss, "loss", rtol)
    assert gradients.keys() == packed_gradients.keys() and len(gradients) > 1
    for name, gradient in gradients.items():
        assert_relative_close(packed_gradients[name], gradient, name, rtol)


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
@pytest.mark.parametrize("family", ["tool_calling", "math"])
def test_shared_prefix_loss_and_every_gradient_equal_padded(family, lora):
    """Small Llama (grouped-query attention, tied embeddings, as SmolLM2): loss and gradients to 1e-5."""
    check_shared_prefix_equals_padded(llama, family, lora)


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
@pytest.mark.parametrize("family", ["tool_calling", "math"])
def test_shared_prefix_equals_padded_on_smollm2(smollm2_dir, family, lora):
    """SmolLM2-135M in float32: the same loss and every parameter's gradient to 1e-4 relative.

    Float32 rounding through 30 layers passes 1e-5 on the norm weights of full fine-tuning (their gradients
    are sums over every token that cancel): 1.0e-5 and 3.3e-5 measured in two runs, tool-calling shape; the
    LoRA gradients stayed below 2e-5.

    The padded reference puts each row's first real token at position 0, as packing does. TRL's padded rows
    start a left-padded prompt at its padding's width instead: the same relative positions, but RoPE's
    float32 cos/sin at other absolute positions round differently, which through 30 layers moves the
    layer-0 LoRA gradients by up to ~2e-5 relative (~8e-6 even in float64).
    """
    def smollm2():
        return AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32,
                                                    attn_implementation="sdpa")

    check_shared_prefix_equals_padded(smollm2, family, lora, row_positions=True, rtol=1e-4)
