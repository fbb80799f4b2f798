"""Paper-scale math data: the DeepScaleR-Preview training set and the five evaluation benchmarks of Tab. 3.

Each loader reads either a local copy (``data_dir/<name>.jsonl``, ``.json`` or ``.parquet``, in the hub
copy's own format) or, without one, the Hugging Face hub copy through ``datasets.load_dataset`` (only on a
machine with hub access). Every loader returns normalised problems::

    {"id": str, "problem": str, "answer": str, "source": <benchmark name>}

Answers are bare expressions for math-verify (``$`` delimiters removed; integers stored as floats,
as in AMC's copy, written as integers).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """Where a data set lives and how its rows are laid out.

    Attributes:
        hub_id: Hugging Face dataset id of the usual copy.
        split: split of that copy holding the problems.
        problem_fields: candidate names of the problem text, first present wins.
        answer_fields: candidate names of the final answer (a list value is a multi-part answer).
    """

    hub_id: str
    split: str
    problem_fields: tuple[str, ...] = ("problem",)
    answer_fields: tuple[str, ...] = ("answer",)


#: agentica-org/DeepScaleR-Preview-Dataset: ~40k rows ``{problem, answer, solution}`` (file deepscaler.json).
DEEPSCALER = Source("agentica-org/DeepScaleR-Preview-Dataset", "train")
#: The eval benchmarks of PAPER.md §3 (Tab. 3) by the names ``eval_data`` uses. Formats of the hub copies:
#: - math500: HuggingFaceH4/MATH-500, split test, rows {problem, solution, answer, subject, level, unique_id};
#: - aime24: HuggingFaceH4/aime_2024, split train, rows {id, problem, solution, answer, url, year}
#:   (AI-MO/aimo-validation-aime has the same columns for AIME 2022-24);
#: - amc: AI-MO/aimo-validation-amc, split train, 83 AMC12 2022/23 problems
#:   {id, problem, answer (float), url};
#: - minerva: math-ai/minervamath, split test (test.jsonl), 272 rows {question, answer};
#: - olympiadbench: math-ai/olympiadbench, split test (test.jsonl), 675 rows with the original
#:   OlympiadBench columns {id, question, solution, final_answer (list of str), ...}.
BENCHMARK_SOURCES: dict[str, Source] = {
    "math500": Source("HuggingFaceH4/MATH-500", "test"),
    "aime24": Source("HuggingFaceH4/aime_2024", "train"),
    "amc": Source("AI-MO/aimo-validation-amc", "train"),
    "minerva": Source("math-ai/minervamath", "test", ("problem", "question"), ("answer", "final_answer")),
    "olympiadbench": Source(
        "math-ai/olympiadbench", "test", ("question", "problem"), ("final_answer", "answer")
    ),
}
#: Hub ids accepted in ``eval_data`` / ``train_data`` in place of the short names.
BENCHMARK_ALIASES = {
    **{source.hub_id: name for name, source in BENCHMARK_SOURCES.items()},
    "AI-MO/aimo-validation-aime": "aime24",
    "champ-dataset": "champ",
}
TRAIN_ALIASES = {DEEPSCALER.hub_id: "deepscaler"}
#: Training data ``train_data`` may name: the generated reasoning-gym mix (:mod:`gdpo.tasks.math.data`) or
#: DeepScaleR.
TRAIN_DATA = ("reasoning_gym", "deepscaler")
#: Benchmarks ``eval_data`` may name: the held-out reasoning-gym problems (:mod:`gdpo.tasks.math.data`), the
#: five of Tab. 3 and CHAMP; hub ids of their usual copies are accepted as aliases.
EVAL_BENCHMARKS = ("reasoning_gym", "math500", "aime24", "amc", "minerva", "olympiadbench", "champ")
#: CHAMP (Mao et al. 2024): 270 competition problems shipped in the ``champ-dataset`` PyPI package.
CHAMP_FILE = "dataset_files/v0.json"
LOCAL_SUFFIXES = (".jsonl", ".json", ".parquet")


def canonical_benchmark(name: str) -> str:
    """Short benchmark name for a name or hub id; ``ValueError`` listing the valid ones."""
    canonical = BENCHMARK_ALIASES.get(name, name)
    if canonical not in EVAL_BENCHMARKS:
        raise ValueError(
            f"Unknown eval benchmark {name!r}; use one of {', '.join(EVAL_BENCHMARKS)} "
            f"(or a hub id: {', '.join(BENCHMARK_ALIASES)})."
        )
    return canonical


def canonical_train_data(name: str) -> str:
    """Short training-data name for a name or hub id; ``ValueError`` listing the valid ones."""
    canonical = TRAIN_ALIASES.get(name, name)
    if canonical not in TRAIN_DATA:
        raise ValueError(
            f"Unknown train_data {name!r}; use one of {', '.join(TRAIN_DATA)} "
            f"(or the hub id {DEEPSCALER.hub_id})."
        )
    return canonical


def normalise_answer(value) -> str:
    """A gold answer as a bare expression string: lists joined by commas, ``$`` removed, 142.0 → 142."""
    if isinstance(value, (list, tuple)):
        return ", ".join(normalise_answer(part) for part in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value).strip()
    if len(text) >= 2 and text.startswith("$") and text.endswith("$"):
        text = text.strip("$").strip()
    return text


def local_file(data_dir: str | Path | None, name: str) -> Path | None:
    """``data_dir/<name>{.jsonl,.json,.parquet}`` if present."""
    if data_dir is None:
        return None
    for suffix in LOCAL_SUFFIXES:
        path = Path(data_dir) / f"{name}{suffix}"
        if path.is_file():
            return path
    return None


def read_rows(source: Source, name: str, data_dir: str | Path | None) -> list[dict]:
    """Raw rows of a data set: the local copy in ``data_dir`` when there is one, else the hub copy."""
    import datasets

    path = local_file(data_dir, name)
    if path is not None:
        builder = "parquet" if path.suffix == ".parquet" else "json"
        return list(datasets.load_dataset(builder, data_files=str(path), split="train"))
    if data_dir is not None:
        raise ValueError(
            f"No local copy of {name!r} in {data_dir}: expected {name}.jsonl, {name}.json or "
            f"{name}.parquet in the format of {source.hub_id}."
        )
    try:
        return list(datasets.load_dataset(source.hub_id, split=source.split))
    except Exception as error:  # noqa: BLE001 — any hub failure gets the same advice
        raise RuntimeError(
            f"Could not load {source.hub_id!r} from the Hugging Face hub ({type(error).__name__}: {error}). "
            f"Offline, save a copy as {name}.jsonl in a directory and set the task option data_dir to it."
        ) from None


def _first(row: dict, fields: tuple[str, ...], what: str, name: str):
    for key in fields:
        if key in row and row[key] is not None:
            return row[key]
    raise ValueError(
        f"{name}: a row has no {what} field (looked for {', '.join(fields)}; it has {', '.join(row)})."
    )


def normalise_rows(rows: list[dict], source: Source, name: str) -> list[dict]:
    """Rows of any supported layout as ``{"id", "problem", "answer", "source"}``."""
    problems = []
    for index, row in enumerate(rows):
        identifier = row.get("unique_id", row.get("id", index))
        problems.append(
            {
                "id": str(identifier),
                "problem": str(_first(row, source.problem_fields, "problem", name)).strip(),
                "answer": normalise_answer(_first(row, source.answer_fields, "answer", name)),
                "source": name,
            }
        )
    return problems


def load_champ(data_dir: str | Path | None = None) -> list[dict]:
    """CHAMP's 270 problems: ``data_dir/champ.json`` or the ``champ-dataset`` package's ``v0.json``.

    The file is ``{"problems": {id: {"_text", "_answer", "category", ...}}, "concepts", "hints"}``; it is
    read directly (the package itself is not imported). Answers are free-form (some are "No" or
    "x=2, y=1"), so math-verify scores only the mathematical ones reliably.
    """
    import importlib.util

    path = local_file(data_dir, "champ")
    if path is None:
        spec = importlib.util.find_spec("champ_dataset")
        if spec is None or not spec.submodule_search_locations:
            raise ValueError(
                "The champ benchmark needs the champ-dataset package (`pip install champ-dataset`) "
                "or a champ.json (its v0.json) in data_dir."
            )
        path = Path(spec.submodule_search_locations[0]) / CHAMP_FILE
    problems = json.loads(Path(path).read_text(encoding="utf-8"))["problems"]
    return [
        {
            "id": key,
            "problem": item["_text"].strip(),
            "answer": normalise_answer(item["_answer"]),
            "source": "champ",
        }
        for key, item in problems.items()
    ]


def load_benchmark(name: str, data_dir: str | Path | None = None) -> list[dict]:
    """Normalised problems of an eval benchmark (``math500``, ``aime24``, ``amc``, ``minerva``,
    ``olympiadbench``, ``champ``), in the source's order."""
    name = canonical_benchmark(name)
    if name == "champ":
        return load_champ(data_dir)
    if name not in BENCHMARK_SOURCES:
        raise ValueError(f"{name!r} is generated, not loaded; use gdpo.tasks.math.data for it.")
    source = BENCHMARK_SOURCES[name]
    return normalise_rows(read_rows(source, name, data_dir), source, name)


def load_deepscaler(data_dir: str | Path | None = None, seed: int = 0, size: int | None = None) -> list[dict]:
    """DeepScaleR-Preview training problems, shuffled by ``seed``, the first ``size`` (all when None).

    Local copy: ``data_dir/deepscaler.json`` (the hub file: a JSON list of ``{problem, answer, solution}``)
    or ``deepscaler.jsonl``.
    """
    problems = normalise_rows(read_rows(DEEPSCALER, "deepscaler", data_dir), DEEPSCALER, "deepscaler")
    random.Random(f"deepscaler-{seed}").shuffle(problems)
    return problems[:size] if size is not None else problems
