"""Plain-file helpers shared by the layers above: JSON-lines files and the digest of a model's weight files.

Standard library only, and nothing of ``gdpo``: the BFCL environment (``.venv-bfcl``, standard library and
``bfcl_eval`` only) imports it too, through :mod:`gdpo.tasks.tool_calling.bfcl_split`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

#: A committed evaluation's sample of items with every response (lm-eval's logged samples), beside eval.json.
SAMPLE_FILE = "completions_sample.jsonl"
#: A committed run's record of its files' SHA-256 (:mod:`gdpo.evidence` writes and checks it).
MANIFEST = "MANIFEST.json"


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    """Write ``rows`` to ``path`` as JSON lines (UTF-8, non-ASCII characters kept as they are)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


#: What :func:`read_jsonl` tells to do about a bad line, unless its caller knows better.
FIX_ROW = "correct or drop that row, or make the file again from its source"


def read_jsonl(path: str | Path, fix: str = FIX_ROW) -> list:
    """The rows of a JSON-lines file (gzip-compressed where its name ends in ``.gz``), blank lines skipped.

    Raises:
        ValueError: naming the file and the line, and saying ``fix``, for a line that is not UTF-8 or not
            JSON, or that holds an unpaired surrogate (e.g. the JSON escape ``\\ud800`` alone): Python reads
            one as a string, but it is no character, and the first tokenizer or Arrow column to meet it fails.
    """
    path = Path(path)
    rows = []
    with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{path} line {number} holds an invalid character: byte {error.start + 1} "
                                 f"of the line is not UTF-8 ({error.reason}); {fix}.") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path} line {number} is not JSON ({error.msg}, column {error.colno}); "
                                 f"{fix}.") from None
            # Only a \u escape can make a surrogate: the line itself was UTF-8.
            if "\\u" in line:
                try:
                    json.dumps(row, ensure_ascii=False).encode("utf-8")
                except UnicodeEncodeError as error:
                    raise ValueError(
                        f"{path} line {number} holds an invalid character (an unpaired surrogate, "
                        f"{error.object[error.start]!r}: one half of a UTF-16 pair, no character on its "
                        f"own); {fix}.") from None
            rows.append(row)
    return rows


def weights_digest(model_dir: str | Path) -> str | None:
    """SHA-256 over a model directory's weight files (``*.safetensors``, ``*.bin``, by name), to tell which start
    model a run trained from (the tool-calling warm-up is rebuilt on each machine and is not committed); None
    when the directory has none."""
    files = sorted(p for pattern in ("*.safetensors", "*.bin") for p in Path(model_dir).glob(pattern)
                   if p.name != "training_args.bin")
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


#: eval.json's key for the per-item outcomes (:func:`item_outcomes`); absent in evaluations made before it.
ITEMS_KEY = "items"


def encode_sample_scores(scores: Iterable[float | bool]) -> str | list[float]:
    """One item's per-sample scores, compact: a string of ``"0"``/``"1"`` (character k = sample k) when every
    score is 0 or 1, else the list of floats. eval.json is indented, so a string keeps an item on one line."""
    values = [float(score) for score in scores]
    if all(value in (0.0, 1.0) for value in values):
        return "".join("1" if value else "0" for value in values)
    return values


def decode_sample_scores(encoded: str | list) -> list[float]:
    """Inverse of :func:`encode_sample_scores`; ``ValueError`` on anything else."""
    if isinstance(encoded, str):
        if set(encoded) - {"0", "1"}:
            raise ValueError(f"Per-sample scores {encoded!r} are not a string of 0/1; "
                             "eval.json's items are corrupt.")
        return [float(char) for char in encoded]
    if isinstance(encoded, list):
        return [float(value) for value in encoded]
    raise ValueError(f"Per-sample scores must be a 0/1 string or a list of numbers, got {type(encoded).__name__}.")


def item_outcomes(ids: list, scores: dict[str, list], groups: list[str] | None = None, **extra) -> dict:
    """One benchmark's per-item outcomes as stored in eval.json under ``items[benchmark]``.

    Args:
        ids: the n item ids, stable across runs and methods (the benchmark's own id or the data file's row
            index); ints or strings.
        scores: metric → n lists of per-sample scores (0/1 or a fraction), in sample order.
        groups: optional n group names (e.g. BFCL's category) that a metric's aggregate weights by.
        extra: other JSON data kept beside them (e.g. ``weights``: metric → group → weight).

    Returns:
        ``{"ids": [...], "scores": {metric: [encoded per item, ...]}, "groups"?: [...], **extra}``.
    """
    for metric, per_item in scores.items():
        if len(per_item) != len(ids):
            raise ValueError(f"Metric {metric!r} has scores for {len(per_item)} items, ids name {len(ids)}.")
    if len(set(ids)) != len(ids):
        raise ValueError("Item ids repeat; give each evaluated item its own id.")
    encoded = {metric: [encode_sample_scores(item) for item in per_item] for metric, per_item in scores.items()}
    record = {"ids": list(ids), "scores": encoded}
    if groups is not None:
        if len(groups) != len(ids):
            raise ValueError(f"{len(groups)} groups for {len(ids)} items.")
        record["groups"] = list(groups)
    return {**record, **extra}


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class DigestMismatch(ValueError):
    """A file is not the one its record names: its bytes changed, or it is gone, since its digest was recorded."""


def check_digests(expected: dict[str, str], base: str | Path, record: str, fix: str) -> None:
    """Check every ``name → SHA-256`` of ``expected`` against the file ``base/name``.

    ``record``: where the digests were read (named in the error); ``fix``: what to do about a mismatch.

    Raises:
        DigestMismatch: listing each file that differs or is missing, with the recorded and the found digest.
    """
    base = Path(base)
    problems = []
    for name, digest in sorted(expected.items()):
        path = base / name
        found = file_sha256(path) if path.is_file() else "missing"
        if found != digest:
            problems.append(f"{path}: recorded sha256 {digest}, found {found}")
    if problems:
        raise DigestMismatch(f"{len(problems)} file(s) differ from the digests recorded in {record}: "
                             + "; ".join(problems) + f". {fix}")


def manifest_digests(run_dir: str | Path) -> dict[str, str] | None:
    """The ``name → SHA-256`` a run directory's :data:`MANIFEST` records; None where it has no manifest.

    Raises:
        DigestMismatch: the manifest is not valid JSON or records no digests.
    """
    record = Path(run_dir) / MANIFEST
    if not record.is_file():
        return None
    fix = ("Restore it from git (git checkout -- <file>); evidence that is meant to change is republished as a "
           "stated amendment, never edited in place.")
    try:
        recorded = json.loads(record.read_text(encoding="utf-8"))["sha256"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise DigestMismatch(f"{record} is not a manifest ({error!r}). {fix}") from error
    if not isinstance(recorded, dict) or not recorded:
        raise DigestMismatch(f"{record} records no digests. {fix}")
    return recorded


def check_committed_file(run_dir: str | Path, name: str) -> None:
    """Where ``run_dir`` holds a :data:`MANIFEST` (committed evidence), check that file ``name`` still has the digest it
    records, before a reader uses it; a directory without one (a run in ``results/``) is not checked here.

    Raises:
        DigestMismatch: the file differs from its recorded digest, or the manifest records none for it.
    """
    recorded = manifest_digests(run_dir)
    if recorded is None:
        return
    record = Path(run_dir) / MANIFEST
    if name not in recorded:
        raise DigestMismatch(f"{record} records no digest for {name}: the file was added after the run was saved; "
                             "restore the run from git.")
    check_digests({name: recorded[name]}, run_dir, str(record),
                  "Restore the committed files from git (git checkout -- <file>).")
