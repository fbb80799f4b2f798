"""Plain-file helpers shared by the layers above: JSON-lines files.

Standard library only, and nothing of ``gdpo``: the BFCL environment (``.venv-bfcl``, standard library and
``bfcl_eval`` only) imports it too, through :mod:`gdpo.tasks.tool_calling.bfcl_split`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


def write_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    """Write ``rows`` to ``path`` as JSON lines (UTF-8, non-ASCII characters kept as they are)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
