"""Math data: the mini-scale reasoning-gym mix, the paper's data sets, and the family's options.

Every row is a single-turn chat prompt in the DeepScaleR/DLER style (the problem, then
:data:`INSTRUCTION`) with the columns the rewards read: ``answer`` (gold, str), ``verifier`` and
``verifier_data`` (which checker applies, see :mod:`gdpo.tasks.math.rewards`), ``length_limit``
(tokens), and ``source`` (generator or benchmark name).

Mini scale: problems come from reasoning-gym generators (procedural, deterministic by seed) chosen so
that SmolLM2-135M-Instruct solves some but not all of them (rewards vary within a group; solve rates
measured in :data:`GENERATORS`). Train and eval items never coincide: each problem's text is hashed
into a train or an eval bucket (:func:`split_of`), and the generator seeds also differ per split.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from datasets import Dataset

from gdpo.tasks.math import benchmarks
from gdpo.tasks.math.benchmarks import EVAL_BENCHMARKS

#: Appended to every problem (DeepScaleR / DLER prompt).
INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}."

#: One problem in 4 (by the hash of its text) belongs to the eval split; the rest to train.
EVAL_BUCKETS = 4
#: Draws in a row without a new problem after which a generator's split counts as exhausted.
MAX_MISSES = 2000
#: Generator seed of the held-out reasoning-gym problems used by ``evaluate``: one fixed set for every
#: method and training seed, so that their accuracies are comparable.
EVAL_DATA_SEED = 0


@dataclass(frozen=True)
class Generator:
    """A reasoning-gym generator with the settings used here.

    Attributes:
        dataset: reasoning-gym dataset name.
        config: keyword arguments of ``reasoning_gym.create_dataset`` (difficulty).
        verifier: ``"number"`` when the answer is a number (the generators' questions are expressions, which
            math-verify would accept restated as the answer), else ``"reasoning_gym"``
            (:mod:`gdpo.tasks.math.rewards`).
        solve_rate: measured pass@1 of SmolLM2-135M-Instruct (temperature 1, 128 tokens), in [0, 1].
    """

    dataset: str
    config: dict = field(default_factory=dict)
    verifier: str = "number"
    solve_rate: float | None = None


#: Generators by the name options use, with SmolLM2-135M-Instruct's solve rates measured by
#: ``python -m gdpo.tasks.math.calibrate`` (12 problems × 4 samples per generator, temperature 1,
#: 128 tokens; 8 × 4 for the last three). Harder settings tried first solved far less: two-digit sums
#: and products 3–13 %, equations with values up to 20: 6 %, GCD up to 60: 16 %, LCM up to 15: 6 %.
#: These rates were measured with the reward before it required a final-answer form and a plain number;
#: under the current reward the untrained model's held-out samples of the cpu-evidence experiment
#: (temperature 0.6, 128 tokens, 3 seeds; ``python -m gdpo.tasks.math.rescore``) are paid 19 %
#: (basic_arithmetic), 40 % (chain_sum), 47 % (products) and 6 % (gcd), against 29, 42, 64 and 18 % before.
GENERATORS: dict[str, Generator] = {
    "basic_arithmetic": Generator(
        "basic_arithmetic",
        {
            "min_terms": 2,
            "max_terms": 2,
            "min_digits": 1,
            "max_digits": 1,
            "operators": ("+", "-"),
            "allow_parentheses": False,
            "allow_negation": False,
        },
        solve_rate=0.25,
    ),
    "chain_sum": Generator(
        "chain_sum", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}, solve_rate=0.23
    ),
    "products": Generator(
        "products", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}, solve_rate=0.21
    ),
    # Sums of three and four one-digit terms (cpu-evidence-2): no constant answer is right on more than 7 % of
    # their held-out problems, and they hold over 200 each. Four terms are where writing the partial sums out
    # pays: the untrained model's right answers there are long (median 81 tokens at temperature 0.6), its
    # short ones never right (benchmarks/math_headroom.py, benchmarks/README.md).
    "chain_sum_3": Generator(
        "chain_sum", {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 1}, solve_rate=0.06
    ),
    "chain_sum_4": Generator("chain_sum", {"min_terms": 4, "max_terms": 4, "min_digits": 1, "max_digits": 1}),
    # Five terms: an evaluation-only generator harder than the training ones (the working is longer).
    "chain_sum_5": Generator("chain_sum", {"min_terms": 5, "max_terms": 5, "min_digits": 1, "max_digits": 1}),
    "gcd": Generator("gcd", {"min_value": 2, "max_value": 20}, solve_rate=0.31),
    "lcm": Generator("lcm", {"min_value": 2, "max_value": 10}, solve_rate=0.10),
    "simple_equations": Generator(
        "simple_equations",
        {
            "min_terms": 2,
            "max_terms": 2,
            "min_value": 1,
            "max_value": 10,
            "operators": ("+", "-"),
            "operators_weights": [0.5, 0.5],
        },
        solve_rate=0.04,
    ),
    "leg_counting": Generator(
        "leg_counting",
        {"min_animals": 1, "max_animals": 1, "min_instances": 1, "max_instances": 3},
        solve_rate=0.0,
    ),
    "decimal_chain_sum": Generator(
        "decimal_chain_sum",
        {
            "min_terms": 2,
            "max_terms": 2,
            "min_digits": 1,
            "max_digits": 1,
            "min_decimal_places": 1,
            "max_decimal_places": 1,
        },
        solve_rate=0.03,
    ),
    "gsm_symbolic": Generator("gsm_symbolic", {}, solve_rate=0.0),
    # Lowest terms are required: math-verify would accept any equal fraction, the generator's scorer not.
    "fraction_simplification": Generator(
        "fraction_simplification",
        {"min_value": 1, "max_value": 20, "min_factor": 2, "max_factor": 5, "styles": ("plain",)},
        verifier="reasoning_gym",
        solve_rate=0.0,
    ),
}
#: The default mix: the generators solved 20–35 % of the time (mean 25 %; in about half of the groups of
#: 4 samples the correctness reward varies).
DEFAULT_GENERATORS = ("basic_arithmetic", "chain_sum", "products", "gcd")

#: Options of this family (the task's config keys other than the generic ones).
OPTION_DEFAULTS = {
    "length_limit": 64,
    "train_data": "reasoning_gym",
    "eval_data": ("reasoning_gym",),
    "generators": None,
    # RL training only: the generators the RL steps draw from (None: ``generators``). The warm-up keeps
    # ``generators`` (gdpo.plan.RL_ONLY_OPTIONS), so that RL can train on the problems where both rewards have room
    # (where the length limit binds) from a start that learned the working on every length.
    "rl_generators": None,
    # Evaluation only: the held-out reasoning-gym generators (None: the training generators), so that an
    # evaluation can hold problems harder than any trained on, as the paper's AIME is for its math models.
    "eval_generators": None,
    "data_dir": None,
    # Evaluation only: lm-eval's model backend ("hf" here, "vllm" for paper-scale GPU runs).
    "eval_backend": "hf",
}
EVAL_BACKENDS = ("hf", "vllm")


def check_options(options: dict) -> dict:
    """The options with defaults filled in and names normalised; ``ValueError`` on unknown or bad ones."""
    unknown = sorted(set(options) - set(OPTION_DEFAULTS))
    if unknown:
        raise ValueError(
            f"Unknown math task option(s) {', '.join(unknown)}; valid options are: "
            f"{', '.join(OPTION_DEFAULTS)}."
        )
    resolved = {**OPTION_DEFAULTS, **options}
    limit = resolved["length_limit"]
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"length_limit must be a positive number of tokens, got {limit!r}.")
    resolved["train_data"] = benchmarks.canonical_train_data(resolved["train_data"])
    eval_data = resolved["eval_data"]
    if isinstance(eval_data, str):
        eval_data = [eval_data]
    if not eval_data:
        raise ValueError(f"eval_data must name at least one benchmark of: {', '.join(EVAL_BENCHMARKS)}.")
    resolved["eval_data"] = tuple(dict.fromkeys(benchmarks.canonical_benchmark(name) for name in eval_data))
    for key in ("generators", "rl_generators", "eval_generators"):
        generators = resolved[key]
        if generators is None:
            continue
        if isinstance(generators, str) or not generators:
            raise ValueError(f"{key} must be a non-empty list of generator names, e.g. [chain_sum, gcd].")
        bad = [name for name in generators if name not in GENERATORS]
        if bad:
            raise ValueError(
                f"Unknown generator(s) {', '.join(map(str, bad))} in {key}; valid: {', '.join(GENERATORS)}."
            )
        resolved[key] = tuple(generators)
    if resolved["eval_backend"] not in EVAL_BACKENDS:
        raise ValueError(
            f"eval_backend must be one of {', '.join(EVAL_BACKENDS)}, got {resolved['eval_backend']!r}."
        )
    return resolved


def make_prompt(problem: str) -> list[dict]:
    """The chat prompt of one problem: a single user turn ending with :data:`INSTRUCTION`."""
    return [{"role": "user", "content": f"{problem.strip()} {INSTRUCTION}"}]


def split_of(question: str) -> str:
    """``"eval"`` or ``"train"`` by the hash of the problem text: the splits never share a problem."""
    bucket = int.from_bytes(hashlib.sha256(question.encode("utf-8")).digest()[:4], "big") % EVAL_BUCKETS
    return "eval" if bucket == 0 else "train"


def split_seed(split: str, seed: int, generator: str) -> int:
    """Generator seed for (split, seed, generator); different splits get different seeds."""
    digest = hashlib.sha256(f"gdpo-math/{split}/{seed}/{generator}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def distinct_problems(generator: str, split: str, limit: int, seed: int) -> list[dict]:
    """Up to ``limit`` distinct reasoning-gym entries of ``generator`` in ``split``, in generation order.

    Fewer when the split's share of the generator's problem space is smaller (one-digit products: 21
    held-out problems); the space counts as exhausted after :data:`MAX_MISSES` draws without a new one.
    """
    import reasoning_gym

    spec = GENERATORS[generator]
    # Items are generated lazily from (seed, index): a large nominal size costs nothing.
    dataset = reasoning_gym.create_dataset(
        spec.dataset, seed=split_seed(split, seed, generator), size=10**7, **spec.config
    )
    entries, seen, misses, index = [], set(), 0, 0
    while len(entries) < limit and misses < MAX_MISSES:
        entry = dataset[index]
        index += 1
        question = entry["question"]
        if question in seen or split_of(question) != split:
            misses += 1
            continue
        misses = 0
        seen.add(question)
        entries.append(entry)
    return entries


def generate_problems(generator: str, split: str, size: int, seed: int) -> list[dict]:
    """``size`` reasoning-gym entries of ``generator`` that belong to ``split``, distinct while possible.

    Easy generators have small problem spaces (one-digit sums: about 200 problems). Training sets larger
    than the split's share of that space repeat its problems in order (RL revisits problems anyway);
    eval sets must be distinct and raise ``ValueError`` instead.

    Returns:
        Entries ``{"question", "answer", "metadata"}`` in generation order (deterministic).
    """
    entries = distinct_problems(generator, split, size, seed)
    if len(entries) < size:
        if split == "eval" or not entries:
            raise ValueError(
                f"Generator {generator!r} has only {len(entries)} distinct {split} problems at its "
                f"difficulty, {size} requested; ask for fewer items or add generators."
            )
        entries = [entries[i % len(entries)] for i in range(size)]
    return entries


def reasoning_gym_rows(split: str, size: int, seed: int, generators, length_limit: int) -> dict[str, list]:
    """Columns of ``size`` problems cycling through ``generators`` (item i from generator i mod G)."""
    per_generator = -(-size // len(generators))
    pools = {name: generate_problems(name, split, per_generator, seed) for name in generators}
    rows = _empty_rows()
    for index in range(size):
        name = generators[index % len(generators)]
        entry = pools[name][index // len(generators)]
        spec = GENERATORS[name]
        verifier_data = json.dumps(entry, default=str) if spec.verifier == "reasoning_gym" else ""
        _append(
            rows, entry["question"], str(entry["answer"]), spec.verifier, verifier_data, length_limit, name
        )
    return rows


def reasoning_gym_eval_rows(size: int, seed: int, generators, length_limit: int) -> dict[str, list]:
    """Columns of ``size`` distinct held-out problems, taken from ``generators`` in turn.

    Each generator gives an equal share; one whose held-out space is smaller gives all of its problems
    and the others share the rest equally (turns skip an exhausted generator). While no generator runs
    out, item i comes from generator i mod G, as in :func:`reasoning_gym_rows`.

    Raises:
        ValueError: the generators hold fewer than ``size`` distinct held-out problems together.
    """
    pools = {name: distinct_problems(name, "eval", size, seed) for name in generators}
    available = sum(len(pool) for pool in pools.values())
    if available < size:
        counts = ", ".join(f"{name} {len(pool)}" for name, pool in pools.items())
        raise ValueError(
            f"The generators hold only {available} distinct eval problems at their difficulty ({counts}), "
            f"{size} requested; ask for at most {available} items (eval_size) or add generators."
        )
    rows, taken = _empty_rows(), dict.fromkeys(pools, 0)
    while len(rows["prompt"]) < size:
        for name in generators:
            if taken[name] == len(pools[name]) or len(rows["prompt"]) == size:
                continue
            entry = pools[name][taken[name]]
            taken[name] += 1
            spec = GENERATORS[name]
            verifier_data = json.dumps(entry, default=str) if spec.verifier == "reasoning_gym" else ""
            _append(
                rows, entry["question"], str(entry["answer"]), spec.verifier, verifier_data, length_limit, name
            )
    return rows


def _empty_rows() -> dict[str, list]:
    return {
        "prompt": [],
        "problem": [],
        "answer": [],
        "verifier": [],
        "verifier_data": [],
        "length_limit": [],
        "source": [],
    }


def _append(rows, problem, answer, verifier, verifier_data, length_limit, source) -> None:
    rows["prompt"].append(make_prompt(problem))
    rows["problem"].append(problem)
    rows["answer"].append(answer)
    rows["verifier"].append(verifier)
    rows["verifier_data"].append(verifier_data)
    rows["length_limit"].append(length_limit)
    rows["source"].append(source)


def problem_rows(problems: list[dict], length_limit: int) -> dict[str, list]:
    """Columns for normalised benchmark or training problems (``{"problem", "answer", "source"}``)."""
    rows = _empty_rows()
    for item in problems:
        _append(rows, item["problem"], item["answer"], "math_verify", "", length_limit, item["source"])
    return rows


def benchmark_rows(name: str, size: int | None, options: dict) -> dict[str, list]:
    """Columns of one eval benchmark (the first ``size`` items; all when None)."""
    if name == "reasoning_gym":
        generators = options["eval_generators"] or options["generators"] or DEFAULT_GENERATORS
        count = size if size is not None else 16 * len(generators)
        return reasoning_gym_eval_rows(count, EVAL_DATA_SEED, generators, options["length_limit"])
    problems = benchmarks.load_benchmark(name, options["data_dir"])
    return problem_rows(problems[:size] if size is not None else problems, options["length_limit"])


def build_dataset(split: str, size: int | None, seed: int, **options) -> Dataset:
    """Training or held-out problems as a conversational dataset.

    Args:
        split: ``"train"`` (``train_data``: the reasoning-gym mix, or DeepScaleR shuffled by ``seed``) or
            ``"eval"`` (every ``eval_data`` benchmark, ``size`` items each, reasoning-gym items from the
            fixed :data:`EVAL_DATA_SEED`).
        size: number of items (per benchmark for eval); None = all (train: required for reasoning-gym).
        seed: data seed of the training problems.
        options: see :data:`OPTION_DEFAULTS`.

    Returns:
        Columns ``prompt``, ``problem``, ``answer``, ``verifier``, ``verifier_data``, ``length_limit``,
        ``source``.
    """
    options = check_options(options)
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}.")
    if size is not None and size < 1:
        raise ValueError(f"size must be positive or None, got {size}.")
    if split == "eval":
        parts = [benchmark_rows(name, size, options) for name in options["eval_data"]]
        rows = {key: [value for part in parts for value in part[key]] for key in _empty_rows()}
        return Dataset.from_dict(rows)
    if options["train_data"] == "deepscaler":
        problems = benchmarks.load_deepscaler(options["data_dir"], seed=seed, size=size)
        return Dataset.from_dict(problem_rows(problems, options["length_limit"]))
    if size is None:
        raise ValueError(
            "train_size is required with train_data 'reasoning_gym' (the generators are unbounded)."
        )
    generators = options["rl_generators"] or options["generators"] or DEFAULT_GENERATORS
    return Dataset.from_dict(reasoning_gym_rows("train", size, seed, generators, options["length_limit"]))
