"""Evaluation of a policy on the code family's benchmarks: Table 5's pass, exceed and bug columns."""

from __future__ import annotations

import json
from statistics import mean

from gdpo.files import ITEMS_KEY, item_outcomes
from gdpo.generation.health import TRUNCATED, health_record
from gdpo.tasks.code.data import load_benchmark, resolve_options
from gdpo.tasks.code.diagnostics import program_parses
from gdpo.tasks.code.rewards import execute, extract_code, make_job
from gdpo.tasks.code.sandbox import isolation_mode, limits_mode, sandbox_python
from gdpo.tasks.code.sources import DataUnavailable

METRICS = ("pass", "exceed", "bug")
#: Problems of the generated set drawn for evaluation when eval_size is None.
EVAL_DATA_SEED = 0


def score_benchmark(
    problems: list[dict], samples: list[list], length_limit: int
) -> tuple[dict, list[dict], list[dict]]:
    """Metrics of one benchmark from its problems and their sampled completions.

    Args:
        problems: P problem records.
        samples: P lists of S completions (objects with ``text``, ``num_tokens``, ``truncated``).
        length_limit: tokens above which a completion counts in ``exceed``.

    Returns:
        (metrics, completion records, item records). Metrics in percent: ``pass`` = problems whose program
        passes every test, averaged over samples; ``exceed`` = completions over ``length_limit`` tokens;
        ``bug`` = completions whose program hit a compile or runtime error; plus ``n_items``. Each item
        record has those metrics for the problem and ``samples``: metric → its S per-sample 0/1 outcomes.
    """
    jobs = [
        make_job(extract_code(c.text), p["tests"], p["time_limit"], p["code_prefix"])
        for p, completions in zip(problems, samples)
        for c in completions
    ]
    results = iter(execute(jobs))
    completion_rows, item_rows = [], []
    for problem, completions in zip(problems, samples):
        outcomes = []
        for index, completion in enumerate(completions):
            result = next(results)
            outcomes.append((result.all_passed, completion.num_tokens > length_limit, result.has_bug))
            completion_rows.append(
                {
                    "benchmark": problem["benchmark"],
                    "problem_id": problem["problem_id"],
                    "sample": index,
                    "text": completion.text,
                    "num_tokens": completion.num_tokens,
                    "truncated": completion.truncated,
                    "status": result.status,
                    "passed": result.passed,
                    "total": result.total,
                    "seconds": round(result.duration, 3),
                    "detail": result.detail[:500],
                }
            )
        item = {name: 100.0 * mean(o[i] for o in outcomes) for i, name in enumerate(METRICS)}
        item_rows.append({"benchmark": problem["benchmark"], "problem_id": problem["problem_id"], **item,
                          "samples": {name: [int(o[i]) for o in outcomes] for i, name in enumerate(METRICS)}})
    metrics = {name: mean(row[name] for row in item_rows) for name in METRICS} if item_rows else {}
    return {**metrics, "n_items": len(item_rows)}, completion_rows, item_rows


def evaluate(request) -> dict:
    """Sample ``request.num_samples`` completions per item of every configured benchmark, score them in the
    sandbox, write ``completions.jsonl`` and ``items.jsonl`` to ``request.work_dir`` and return eval.json's
    content, with each benchmark's per-item ``pass``/``exceed``/``bug`` under ``items``
    (:func:`gdpo.files.item_outcomes`, ids = problem ids). Benchmarks whose data is missing go to ``not_run``
    with the reason."""
    from gdpo.generation.vllm_generate import generate_for_evaluation

    options = resolve_options(request.options)
    length_limit = options["length_limit"]
    benchmarks, not_run, loaded = {}, {}, {}
    for name in options["eval_data"]:
        try:
            loaded[name] = load_benchmark(name, request.eval_size, EVAL_DATA_SEED, options)
        except (DataUnavailable, FileNotFoundError) as error:
            not_run[name] = str(error)
    # Every benchmark's completions (eval_backend hf: one generate call per benchmark; vllm: one vLLM run).
    generated, backend_settings = generate_for_evaluation(
        [[p["prompt"] for p in problems] for problems in loaded.values()], request, options["eval_backend"])
    completion_rows, item_rows, items = [], [], {}
    for (name, problems), samples in zip(loaded.items(), generated):
        benchmarks[name], completions, scored = score_benchmark(problems, samples, length_limit)
        completion_rows += completions
        item_rows += scored
        items[name] = item_outcomes([row["problem_id"] for row in scored],
                                    {metric: [row["samples"][metric] for row in scored] for metric in METRICS})
    for filename, rows in (("completions.jsonl", completion_rows), ("items.jsonl", item_rows)):
        with open(request.work_dir / filename, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows)
    run = [b for b in benchmarks.values() if b["n_items"]]
    summary = {name: mean(b[name] for b in run) for name in METRICS} if run else {}
    # What the policy does, over every sampled completion: a program to run at all, and an end to it.
    health = {"programs": 100.0 * mean(program_parses(extract_code(row["text"])) for row in completion_rows),
              TRUNCATED: 100.0 * mean(row["truncated"] for row in completion_rows)} if completion_rows else {}
    return {
        "family": "code",
        "benchmarks": benchmarks,
        "summary": summary,
        "not_run": not_run,
        "health": health_record("code", health),
        "settings": {
            "eval_data": options["eval_data"],
            "length_limit": length_limit,
            "time_limit": options["time_limit"],
            "max_tests": options["max_tests"],
            "sandbox": isolation_mode(),
            "sandbox_limits": limits_mode(),
            "sandbox_python": sandbox_python()[0],
            **backend_settings,
        },
        ITEMS_KEY: items,
    }
