"""Gather per-run files into the tidy tables every figure and table reads.

- ``steps.csv``: one row per (task, method, seed, step) with every logged training metric as a column
  (``rewards/<name>/mean``, ``completions/max_length``, ...), from each run's ``metrics.jsonl``.
- ``eval.csv``: one row per (task, method, seed, benchmark, metric) with ``value`` (percent) and
  ``n_items`` and ``n_samples`` (samples per item, eval.json's ``settings.num_samples``; 1 where absent),
  from each ``eval.json``, base-model evaluations included (method ``base``). Every row of a run
  also carries the collapse gate's verdict on it (:mod:`gdpo.generation.health`, judged again from
  eval.json's ``health`` numbers, so the current rule applies to every file):

  - ``health``: ``healthy``; ``collapsed``; or ``not judged: <why>`` (:data:`NOT_JUDGED`, e.g. an eval.json
    without a ``health`` block, evaluated before the gate existed). Not judged is never healthy: the
    ledger names such runs beside each method's collapse rate (:mod:`gdpo.reporting.verdicts.validity`).
  - ``collapsed``: why the run collapsed (:func:`gdpo.generation.health.collapse_reasons`), empty
    otherwise.

  An eval.csv without the ``health`` column (made before it existed) cannot tell a healthy run from one
  that was not judged: :func:`run_health` reads each of its runs without collapse reasons as not judged,
  to be remade with ``gdpo aggregate``.

  Every row also carries ``start_weights_sha256``: the digest of the model the run started from (eval.json's
  ``model_weights_sha256``, the weights its adapter or fine-tune was evaluated on; the base model's own for
  method ``base``), empty where eval.json did not record it. The ledger compares only runs of one start model.

Every run directory is checked before it is read (:func:`gdpo.evidence.check_run_dir`: its files agree, and a
run restored from committed evidence still has its committed digests), and the summaries' own digests are
written beside them (:data:`SUMMARY_DIGESTS`), which the ledger checks before it reads them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from gdpo.evidence import check_run_dir
from gdpo.files import check_digests, file_sha256
from gdpo.generation.health import collapse_reasons, not_judged_reason
from gdpo.plan import RunKey

#: The SHA-256 of the summaries `gdpo aggregate` wrote (eval.csv, steps.csv, items.json), beside them.
SUMMARY_DIGESTS = "digests.json"

STEP_KEYS = ["task", "method", "seed", "step"]
EVAL_COLUMNS = ["task", "method", "seed", "benchmark", "metric", "value", "n_items", "n_samples"]
#: eval.csv's column with the collapse reasons of a run ("" when it did not collapse); also the ``health``
#: value of a collapsed run.
COLLAPSED = "collapsed"
#: eval.csv's column with the gate's verdict on a run: :data:`HEALTHY`, :data:`COLLAPSED` or
#: ``f"{NOT_JUDGED}: <why>"``.
HEALTH = "health"
HEALTHY = "healthy"
#: eval.csv's column with the SHA-256 of the weights a run started from (:func:`gdpo.files.weights_digest`).
START_WEIGHTS = "start_weights_sha256"
NOT_JUDGED = "not judged"
#: Why the runs of an eval.csv without the ``health`` column are not judged.
NO_HEALTH_COLUMN = ("has no 'health' column (made before the gate told a healthy run from one not judged); "
                    "remake it with `gdpo aggregate`")


def health_value(family: str, health: dict | None) -> tuple[str, str]:
    """``(health, collapsed)`` columns of a run with this eval.json ``family`` and ``health`` block."""
    reasons = collapse_reasons(family, health)
    if reasons:
        return COLLAPSED, "; ".join(reasons)
    why = not_judged_reason(family, health)
    return (f"{NOT_JUDGED}: {why}" if why else HEALTHY), ""


def run_health(health, collapsed, eval_path: str = "eval.csv") -> tuple[str, str]:
    """``(state, why)`` of one run from its eval.csv ``health`` and ``collapsed`` values: state
    :data:`HEALTHY`, :data:`COLLAPSED` (why: the reasons) or :data:`NOT_JUDGED` (why: what is missing).

    ``health`` is None for a file without the ``health`` column; anything but ``healthy`` or ``collapsed``
    (an empty cell included) is not judged, never healthy."""
    collapsed = "" if collapsed is None or collapsed != collapsed else str(collapsed)
    if health is None:
        return (COLLAPSED, collapsed) if collapsed else (NOT_JUDGED, f"{eval_path} {NO_HEALTH_COLUMN}")
    health = "" if health != health else str(health).strip()  # NaN: an empty cell
    if health == HEALTHY and not collapsed:
        return HEALTHY, ""
    if health == COLLAPSED or collapsed:
        return COLLAPSED, collapsed or f"{eval_path} says collapsed without a reason"
    if not health:
        return NOT_JUDGED, f"{eval_path} has no health value for the run; remake it with `gdpo aggregate`"
    if health.startswith(NOT_JUDGED):
        return NOT_JUDGED, health[len(NOT_JUDGED):].lstrip(": ") or "no reason given"
    return NOT_JUDGED, (f"{eval_path} has health {health!r}, not one of the gate's verdicts; "
                        "remake it with `gdpo aggregate`")


def run_identity(path: str | Path) -> dict:
    """``{"task", "method", "seed"}`` of a file inside a run directory (:meth:`gdpo.plan.RunKey.from_file`;
    ``ValueError`` for any other path)."""
    return RunKey.from_file(path).identity()


def check_runs(files: list[str | Path]) -> None:
    """:func:`gdpo.evidence.check_run_dir` on the run directory of each of ``files`` (each directory once)."""
    for run_dir in dict.fromkeys(Path(path).parent for path in files):
        check_run_dir(run_dir)


def write_summary_digests(paths: list[str | Path]) -> Path:
    """Write :data:`SUMMARY_DIGESTS` beside ``paths`` (one folder): ``{file name: SHA-256}``."""
    paths = [Path(path) for path in paths]
    folders = {path.parent for path in paths}
    if len(folders) != 1:
        raise ValueError(f"the summaries must share one folder to be recorded together, got {sorted(folders)}")
    out = folders.pop() / SUMMARY_DIGESTS
    out.write_text(json.dumps({path.name: file_sha256(path) for path in paths}, indent=2) + "\n", encoding="utf-8")
    return out


def check_summary_digests(*paths: str | Path | None) -> None:
    """Check summaries against the :data:`SUMMARY_DIGESTS` `gdpo aggregate` wrote beside them (if it did: a
    published scale's evidence is checked against its ``PROVENANCE.json`` instead).

    Raises:
        gdpo.files.DigestMismatch: a summary changed after aggregation (file, recorded and found digest).
    """
    for path in (Path(p) for p in paths if p):
        record = path.parent / SUMMARY_DIGESTS
        if not record.is_file():
            continue
        recorded = json.loads(record.read_text(encoding="utf-8"))
        if path.name in recorded:
            check_digests({path.name: recorded[path.name]}, path.parent, str(record),
                          "The summaries are rebuilt from the runs by `gdpo aggregate` (snakemake re-runs it when "
                          "they are deleted); never edit them in place.")


def logging_stride(run_dir: str | Path) -> int:
    """Optimizer steps between two lines of a run's ``metrics.jsonl``: TRL's ``logging_steps`` as the run's
    ``config.json`` records it (:func:`gdpo.plan.updates_per_generation`), 1 where it records none."""
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        return 1
    stride = (json.loads(path.read_text(encoding="utf-8")).get("trl") or {}).get("logging_steps", 1)
    return stride if isinstance(stride, int) and not isinstance(stride, bool) and stride >= 1 else 1


def _step_list(steps: list[int]) -> str:
    """``4`` or ``8, 16`` or, for many, the first ten and the count."""
    shown = ", ".join(map(str, steps[:10]))
    return shown + (f", ... ({len(steps)} in all)" if len(steps) > 10 else "")


def check_step_sequence(path: str | Path, steps: list[int]) -> None:
    """``ValueError`` unless the steps of ``path`` (a ``metrics.jsonl``) are every logged step up to its last:
    ``k, 2k, 3k, ...`` for the run's logging stride ``k`` (:func:`logging_stride`; 1 at every scale whose
    generation batch is one optimizer update), each once. A step left out would make a curve and the summary
    silently skip it."""
    stride = logging_stride(Path(path).parent)
    expected = list(range(stride, max(steps) + 1, stride))
    if steps == expected:
        return
    every = "one line per step from step 1" if stride == 1 else \
        f"one line every {stride} steps from step {stride}, logging_steps in its config.json"
    counts = Counter(steps)
    missing = [step for step in expected if step not in counts]
    repeated = sorted(step for step, count in counts.items() if count > 1)
    stray = sorted(set(counts) - set(expected))
    problems = []
    if missing:
        problems.append(f"misses step{'s' if len(missing) > 1 else ''} {_step_list(missing)} ")
    if repeated:
        problems.append(f"repeats step{'s' if len(repeated) > 1 else ''} {_step_list(repeated)} ")
    if stray:
        problems.append(f"logs step{'s' if len(stray) > 1 else ''} {_step_list(stray)} off its stride ")
    raise ValueError(
        f"{path} " + "and ".join(problems) + f"(a run logs {every}: {len(steps)} lines, of "
        f"{len(expected)} up to its last step {max(steps)}); steps.csv and every curve drawn from it would "
        "be wrong without a word. The file is cut or edited: restore it from git or re-run the run's train "
        "job.")


def gather_steps(metrics_files: list[str | Path]) -> pd.DataFrame:
    """Every logged step of every run; columns ``task, method, seed, step`` then the metrics (sorted).
    Each run directory is checked first (:func:`check_runs`), and so is that its steps have no gap
    (:func:`check_step_sequence`)."""
    check_runs(metrics_files)
    frames = []
    for path in metrics_files:
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        if not rows:
            raise ValueError(f"{path} has no logged steps; re-run its train job.")
        check_step_sequence(path, [row.get("step") for row in rows])
        frame = pd.DataFrame(rows)
        for key, value in run_identity(path).items():
            frame[key] = value
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=STEP_KEYS)
    steps = pd.concat(frames, ignore_index=True)
    metrics = sorted(c for c in steps.columns if c not in STEP_KEYS)
    return steps[STEP_KEYS + metrics].sort_values(STEP_KEYS, ignore_index=True)


def gather_items(eval_files: list[str | Path]) -> dict:
    """Every evaluation's per-item outcomes (eval.json's ``items``), for items.json beside eval.csv.

    Returns ``{"runs": [{"task", "method", "seed", "family", "items"}, ...]}``: each entry is eval.json
    cut to what :func:`gdpo.reporting.verdicts.items.paired_items` reads, so two entries pair as two eval.json
    would. Evaluations made before per-item outcomes were kept are listed in ``"without_items"``
    (``"<task>/<method>/seed<k>"``), not left out silently. The run directories are not checked again here:
    ``gdpo aggregate`` passes the same files to :func:`gather_evals`, which checks them.
    """
    runs, without = [], []
    for path in eval_files:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        identity = run_identity(path)
        if record.get("items"):
            runs.append({**identity, "family": record.get("family", ""), "items": record["items"]})
        else:
            without.append(f"{identity['task']}/{identity['method']}/seed{identity['seed']}")
    return {"runs": runs, "without_items": without}


def gather_evals(eval_files: list[str | Path]) -> pd.DataFrame:
    """Every metric of every evaluation, long format (:data:`EVAL_COLUMNS`).

    Columns a family could not produce (``not_run`` in eval.json) become rows with an empty ``value``
    and the reason in ``note``, so a table can say why a cell is empty.
    """
    check_runs(eval_files)
    rows = []
    for path in eval_files:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        # Judged again from the health numbers, so the current rule applies to every file, whatever it stored.
        health, reasons = health_value(record.get("family", ""), record.get("health"))
        identity = {**run_identity(path), HEALTH: health, COLLAPSED: reasons,
                    START_WEIGHTS: record.get("model_weights_sha256") or ""}
        # Samples per item (pass@1 averaged over them): the evaluation's binomial noise is over items × samples.
        n_samples = (record.get("settings") or {}).get("num_samples", 1)
        for benchmark, metrics in record["benchmarks"].items():
            n_items = metrics.get("n_items")
            for metric, value in metrics.items():
                if metric != "n_items" and isinstance(value, (int, float)):
                    rows.append({**identity, "benchmark": benchmark, "metric": metric, "value": float(value),
                                 "n_items": n_items, "n_samples": n_samples, "note": ""})
        for column, reason in (record.get("not_run") or {}).items():
            rows.append({**identity, "benchmark": column, "metric": "", "value": None, "n_items": None,
                         "note": f"not run: {reason}"})
    frame = pd.DataFrame(rows, columns=EVAL_COLUMNS + ["note", HEALTH, COLLAPSED, START_WEIGHTS])
    return frame.sort_values(["task", "method", "seed", "benchmark", "metric"], ignore_index=True)
