"""The code family's data: its options (:func:`resolve_options`), the problems of each data set
(:func:`load_benchmark`) and the training or held-out dataset (:func:`build_dataset`).

Every name of :mod:`gdpo.tasks.code` the family's evaluator needs lives here, below it: the package imports
:mod:`gdpo.tasks.code.evaluation`, which imports this module, not the package.
"""

from __future__ import annotations

import random

from datasets import Dataset

from gdpo.generation.eval_backends import check_eval_backend
from gdpo.tasks.code.problems import humaneval_problems, procedural_problems
from gdpo.tasks.code.sources import (
    CODE_SOURCES,
    COMPETITION_TIME_LIMIT,
    benchmark_problems,
    eurus_train_problems,
)

TRAIN_DATA = ("procedural", "eurus2_rl")
EVAL_DATA = ("procedural", "humaneval", *CODE_SOURCES)
#: Hub ids accepted for the family's names. The four competition benchmarks' own hub sets are never read: each is
#: Eurus-2-RL-Data's validation rows of that ``data_source`` (sources.benchmark_problems), whichever name is used.
ALIASES = {
    "PRIME-RL/Eurus-2-RL-Data": "eurus2_rl",
    "openai/openai_humaneval": "humaneval",
    "codeparrot/apps": "apps",
    "deepmind/code_contests": "codecontests",
    "open-r1/codeforces": "codeforces",
    "BAAI/TACO": "taco",
}
DEFAULTS = {
    "train_data": "procedural",
    "eval_data": ["procedural"],
    "data_dir": None,
    "time_limit": None,
    "max_tests": 20,
    # Evaluation only: where the completions come from (gdpo.generation.eval_backends).
    "eval_backend": "hf",
}
#: Options every code task must set: ``length_limit``, the paper's l of R̃_length (tokens). The paper gives no
#: value, and no default would be neutral (it decides which programs earn the length reward), so each config
#: states its own.
REQUIRED_OPTIONS = ("length_limit",)
#: Items when ``size`` is None for the generated set.
PROCEDURAL_SIZE = {"train": 1000, "eval": 64}
#: Problems of a file benchmark are shuffled with this fixed seed before ``size`` are taken, so that every
#: run and the base model are evaluated on the same items.
SUBSET_SEED = "code-eval-subset"


def resolve_options(options: dict) -> dict:
    """Validated options with defaults; unknown keys or values raise ``ValueError`` naming the valid ones."""
    unknown = sorted(set(options) - set(DEFAULTS) - set(REQUIRED_OPTIONS))
    if unknown:
        raise ValueError(f"Unknown code task option(s) {', '.join(unknown)}; valid: "
                         f"{', '.join([*REQUIRED_OPTIONS, *DEFAULTS])}.")
    resolved = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    train = ALIASES.get(resolved["train_data"], resolved["train_data"])
    if train not in TRAIN_DATA:
        raise ValueError(f"train_data {resolved['train_data']!r} is not one of {', '.join(TRAIN_DATA)}.")
    evals = resolved["eval_data"]
    evals = [evals] if isinstance(evals, str) else list(evals)
    evals = [ALIASES.get(name, name) for name in evals]
    bad = [name for name in evals if name not in EVAL_DATA]
    if bad or not evals:
        raise ValueError(f"eval_data {bad or evals!r} must name one or more of {', '.join(EVAL_DATA)}.")
    missing = [name for name in REQUIRED_OPTIONS if options.get(name) is None]
    if missing:
        raise ValueError(f"code task option(s) {', '.join(missing)} must be set: length_limit is the paper's l of "
                         "the conditioned length reward (tokens; R̃_length = 1 iff the program is at most l tokens "
                         "and passes every test), which the paper does not state; set the task's `length_limit:`.")
    length_limit = resolved["length_limit"]
    if not isinstance(length_limit, int) or length_limit < 1:
        raise ValueError(f"length_limit must be a positive number of tokens, got {length_limit!r}.")
    time_limit = resolved["time_limit"]
    if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}.")
    max_tests = resolved["max_tests"]
    if not isinstance(max_tests, int) or max_tests < 1:
        raise ValueError(f"max_tests must be a positive integer, got {max_tests!r}.")
    check_eval_backend(resolved["eval_backend"], "code")
    return {**resolved, "train_data": train, "eval_data": list(dict.fromkeys(evals))}


def load_benchmark(name: str, size: int | None, seed: int, options: dict, split: str = "eval") -> list[dict]:
    """Problem records of one data set (``options`` already resolved). Raises ``sources.DataUnavailable``
    when its files are missing and the hub cannot be reached."""
    time_limit = options["time_limit"]
    if name == "procedural":
        problems = procedural_problems(split, size or PROCEDURAL_SIZE[split], seed)
        if time_limit:
            problems = [{**p, "time_limit": float(time_limit)} for p in problems]
        return problems
    if name == "humaneval":
        problems = humaneval_problems(time_limit=time_limit or COMPETITION_TIME_LIMIT)
    elif name == "eurus2_rl":
        problems = eurus_train_problems(
            options["data_dir"], options["max_tests"], time_limit or COMPETITION_TIME_LIMIT
        )
    else:
        problems = benchmark_problems(
            name, options["data_dir"], options["max_tests"], time_limit or COMPETITION_TIME_LIMIT
        )
    random.Random(f"{SUBSET_SEED}-{name}" if split == "eval" else f"code-{split}-{seed}").shuffle(problems)
    return problems[:size] if size is not None else problems


def build_dataset(split: str, size: int | None, seed: int, **options) -> Dataset:
    """``size`` problems (per benchmark for ``eval``; None: all, or the generated set's default size).

    Columns: ``prompt`` (chat messages), ``tests`` (JSON), ``code_prefix``, ``time_limit`` (s),
    ``length_limit`` (tokens), ``benchmark``, ``problem_id``.
    """
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}.")
    resolved = resolve_options(options)
    names = [resolved["train_data"]] if split == "train" else resolved["eval_data"]
    rows = []
    for name in names:
        rows += load_benchmark(name, size, seed, resolved, split)
    for row in rows:
        row["length_limit"] = resolved["length_limit"]
    return Dataset.from_list(rows)
