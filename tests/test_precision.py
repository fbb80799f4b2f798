"""CPU bfloat16 work runs in float32 where the CPU only emulates bfloat16 (gdpo.generation.precision)."""

from __future__ import annotations

import pytest
import torch

from gdpo.generation import precision


@pytest.fixture
def emulating_cpu(monkeypatch):
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: False)
    monkeypatch.delenv(precision.CPU_BF16_VARIABLE, raising=False)


def test_an_emulating_cpu_computes_bfloat16_work_in_float32_and_says_so(emulating_cpu, caplog):
    assert precision.cpu_dtype(torch.bfloat16) == torch.float32
    assert "no native bfloat16" in caplog.text
    assert precision.cpu_dtype(torch.float32) == torch.float32
    assert precision.precision_record() == {"native_cpu_bf16": False, "cpu_bf16_runs_in": "float32"}


def test_the_switch_keeps_bfloat16_and_a_bad_value_is_named(emulating_cpu, monkeypatch):
    monkeypatch.setenv(precision.CPU_BF16_VARIABLE, "always")
    assert precision.cpu_dtype(torch.bfloat16) == torch.bfloat16
    monkeypatch.setenv(precision.CPU_BF16_VARIABLE, "yes")
    with pytest.raises(ValueError, match="GDPO_CPU_BF16='yes'"):
        precision.cpu_dtype(torch.bfloat16)


def test_a_native_cpu_keeps_bfloat16(monkeypatch):
    monkeypatch.setattr(precision, "native_cpu_bf16", lambda: True)
    monkeypatch.delenv(precision.CPU_BF16_VARIABLE, raising=False)
    assert precision.cpu_dtype(torch.bfloat16) == torch.bfloat16


def test_the_rollout_engine_follows_the_cpu(emulating_cpu):
    from transformers import LlamaConfig

    from gdpo.generation.rollout import RolloutEngine

    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)
    assert RolloutEngine(config).dtype == torch.float32
    assert RolloutEngine(config, dtype=torch.float32).dtype == torch.float32

