"""Plain-file helpers shared by the layers above: JSON-lines files and the digest of a model's weight files.

Standard library only, and nothing of ``gdpo``: the BFCL environment (``.venv-bfcl``, standard library and
``bfcl_eval`` only) imports it too, through :mod:`gdpo.tasks.tool_calling.bfcl_split`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

#: A committed evaluation's sample of items with every response (lm-eval's logged samples), beside eval.json.
SAMPLE_FILE = "completions_sample.jsonl"


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    """Write ``rows`` to ``path`` as JSON lines (UTF-8, non-ASCII characters kept as they are)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


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
