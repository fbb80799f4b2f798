"""``gdpo fetch``: fetch what a config's jobs read and no rule makes, on a machine with internet access (the login
node), before the workflow is submitted: hub models into ``resources/models/<slug>`` (as the ``prepare_model``
rule would), hub data sets into the task's ``data_dir`` in their hub layout or, without one, into the Hugging Face
cache (``hf_home``) with a record :mod:`gdpo.preflight` checks, and ToolRL's training set from its repository.

What cannot be fetched (the BFCL environment, a split only the user makes) is left to :func:`missing_inputs`'s
fix. The downloads are injected (:class:`Fetchers`), so that tests fetch from local stand-ins.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from gdpo.preflight import Input, fetch_record, hf_home, missing_inputs
from gdpo.tasks.hub_formats import HUB_FILES, SchemaMismatch, check_file

#: ToolRL's repository, and its training set's files there by the suffix of the local copy asked for.
TOOLRL_REPOSITORY = "https://github.com/qiancheng0/ToolRL"
TOOLRL_FILES = {".json": "dataset/rlla_4k_raw/rlla_rl.json", ".parquet": "dataset/rlla_4k/train.parquet"}


def download_model(spec: str, out_dir: Path) -> None:
    """A hub model into ``out_dir``, as the ``prepare_model`` rule makes it."""
    from gdpo.training.models import prepare_model

    prepare_model(spec, out_dir)


def load_hub_rows(hub_id: str, split: str):
    """A hub data set's split as a ``datasets.Dataset``; the library keeps it in the cache under ``HF_HOME``, where
    a job with the hub offline finds it by the same call."""
    import datasets

    return datasets.load_dataset(hub_id, split=split)


def clone_toolrl(target: Path) -> None:
    """ToolRL's training set (``rlla_rl.json``, or ``train.parquet`` for a ``.parquet`` target) from its
    repository into ``target``."""
    member = TOOLRL_FILES[".parquet" if target.suffix == ".parquet" else ".json"]
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "ToolRL"
        try:
            subprocess.run(["git", "clone", "--quiet", "--depth", "1", TOOLRL_REPOSITORY, str(clone)], check=True)
        except (OSError, subprocess.CalledProcessError) as error:
            raise RuntimeError(f"could not clone {TOOLRL_REPOSITORY} ({error}); copy its {member} to {target} "
                               "by hand.") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(clone / member, target)


@dataclasses.dataclass(frozen=True)
class Fetchers:
    """How each kind of input is fetched (the defaults download; tests pass stand-ins)."""

    model: Callable[[str, Path], None] = download_model
    rows: Callable[[str, str], Iterable[Mapping]] = load_hub_rows
    toolrl: Callable[[Path], None] = clone_toolrl


def write_rows(path: Path, rows: Iterable[Mapping]) -> int:
    """Rows as ``.jsonl`` (one JSON object a line), ``.json`` (one list) or ``.parquet``, the hub copies' own
    file kinds; written beside and renamed, so a half-written file never looks fetched. Returns the row count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    if path.suffix == ".parquet":
        import datasets

        table = rows if isinstance(rows, datasets.Dataset) else datasets.Dataset.from_list(list(rows))
        table.to_parquet(str(partial))
        count = len(table)
    else:
        records = [dict(row) for row in rows]
        with partial.open("w", encoding="utf-8") as out:
            if path.suffix == ".json":
                json.dump(records, out, ensure_ascii=False, default=str)
            else:
                out.writelines(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in records)
        count = len(records)
    os.replace(partial, path)
    return count


def _check_layout(path: Path, log: Callable[[str], None]) -> None:
    """Warn when a written copy of a paper data set does not have the layout its loader expects
    (:data:`gdpo.tasks.hub_formats.HUB_FILES`)."""
    for family, files in HUB_FILES.items():
        for name, spec in files.items():
            if path.as_posix().endswith("/" + spec.path):
                try:
                    check_file(family, name, path.as_posix()[: -len(spec.path) - 1])
                except SchemaMismatch as error:
                    log(f"warning: {error}")
                return


def fetch_inputs(config: Mapping, base_dir: str | Path = ".", repo_dir: str | Path | None = None,
                 environ: Mapping[str, str] | None = None, *, dry_run: bool = False,
                 fetchers: Fetchers = Fetchers(), log: Callable[[str], None] = print) -> list[Input]:
    """Fetch every missing input of ``config`` that can be fetched (:attr:`gdpo.preflight.Input.source`); returns
    what is still missing afterwards (with ``dry_run``, everything, and nothing is fetched)."""
    base = Path(base_dir)
    home = hf_home(config, base_dir, environ)
    if not dry_run:  # the hub libraries read HF_HOME when they are imported: the cache the jobs will read
        os.environ["HF_HOME"] = str(home)
    for item in missing_inputs(config, base_dir, repo_dir, environ):
        if item.source is None or item.present(base):  # not fetchable, or fetched for an input before it
            continue
        target = base / item.paths[0]
        if dry_run:
            log(f"would fetch {item.what} -> {item.paths[0]}")
            continue
        kind = item.source[0]
        if kind == "model":
            fetchers.model(item.source[1], target.parent)
        elif kind == "toolrl":
            fetchers.toolrl(target)
            _check_layout(target, log)
        elif kind == "dataset":
            hub_id, split = item.source[1:]
            rows = fetchers.rows(hub_id, split)
            if item.kind == "hub_data":  # kept in the cache; the record says so
                record = fetch_record(home, hub_id, split)
                record.parent.mkdir(parents=True, exist_ok=True)
                record.write_text(json.dumps({"hub_id": hub_id, "split": split, "rows": len(rows), "hf_home": str(home),
                                              "fetched": datetime.datetime.now(datetime.UTC).isoformat()}) + "\n",
                                  encoding="utf-8")
            else:
                write_rows(target, rows)
                _check_layout(target, log)
        log(f"fetched {item.what} -> {item.paths[0]}")
    return missing_inputs(config, base_dir, repo_dir, environ)
