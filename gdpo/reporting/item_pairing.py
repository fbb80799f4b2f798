"""How much two methods' per-item outcomes correlate, measured on committed completion samples.

Committed evidence made before eval.json kept per-item outcomes has, per evaluation, the first
:data:`gdpo.evidence.SAMPLE_ITEMS` items of the evaluator's completion file (``completions_sample.jsonl``):

- math (lm-eval's logged samples): ``doc_id``, ``doc``, ``resps`` (the k responses) and ``acc`` (their mean,
  as graded when the run was evaluated): ``acc`` pairs the logged item means; ``acc_regraded`` (``regrade``)
  grades every response again with today's grader, which can differ from the one the evidence was made with;
- tool calling: ``id``, ``category`` and ``samples`` (texts); ``format`` is graded from the text
  (:func:`gdpo.tasks.tool_calling.output_format.has_expected_format`, the answer type following from the
  category: a decline on the irrelevance categories, a call elsewhere); ``correct`` (BFCL's per-sample
  verdict) needs BFCL's checker and the split's rows, so only where ``bfcl_split`` is given.

For every seed evaluated with both methods, :func:`gdpo.reporting.verdicts.items.compare_items` on the
items both samples hold gives the items' correlation, the paired and the independent variance of the
difference and McNemar's discordant items (:func:`pairing_table`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gdpo.files import SAMPLE_FILE, check_committed_file
from gdpo.reporting.verdicts.items import compare_items

#: The BFCL categories whose items ask for no call (the answer type ``response``).
NO_CALL_CATEGORIES = ("irrelevance", "live_irrelevance")
COLUMNS = ("task", "metric", "a", "b", "seed", "n", "samples", "mean_a", "mean_b", "correlation", "var_paired",
           "var_independent", "ratio", "var_adjusted", "a_only", "b_only", "p_value")


def runs_root(published: str | Path) -> Path:
    """The ``<task>/<method>/seed<k>`` tree of a published folder (``<dir>/evidence/runs``) or the tree itself."""
    published = Path(published)
    for root in (published / "evidence" / "runs", published):
        if any(root.glob(f"*/*/seed*/{SAMPLE_FILE}")):
            return root
    raise FileNotFoundError(f"No {SAMPLE_FILE} under {published} (looked in evidence/runs/<task>/<method>/seed<k> "
                            "and <task>/<method>/seed<k>); give a published folder with committed evidence.")


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def math_sample_outcomes(lines: list[dict], regrade: bool = False) -> dict[str, tuple[list, list[list[float]]]]:
    """``{"acc": (doc ids, [[item acc]])}`` of lm-eval's logged samples: each item's ``acc`` as logged (the
    mean over its k responses, graded when the run was evaluated; one value per item, so no decoding part).
    ``regrade``: also ``acc_regraded``, every response graded by today's grader
    (:func:`gdpo.tasks.math.evaluation.response_verdicts`), per sample."""
    ids = [line["doc_id"] for line in lines]
    outcomes = {"acc": (ids, [[float(line["acc"])] for line in lines])}
    if regrade:
        from gdpo.tasks.math.evaluation import response_verdicts

        outcomes["acc_regraded"] = (ids, [[float(v) for v in response_verdicts(line)] for line in lines])
    return outcomes


def tool_calling_sample_outcomes(lines: list[dict], bfcl_rows: dict[str, dict] | None = None,
                                 work_dir: Path | None = None) -> dict[str, tuple[list, list[list[float]]]]:
    """``{"format": …, "correct"?: …}`` (ids, per-sample 0/1) of tool-calling completion lines; ``correct``
    with BFCL's checker when ``bfcl_rows`` (the split's rows by id) and a ``work_dir`` are given."""
    from gdpo.tasks.tool_calling.output_format import ANSWER_RESPONSE, ANSWER_TOOL_CALL, has_expected_format

    ids = [line["id"] for line in lines]
    formats = [[float(has_expected_format(text, ANSWER_RESPONSE if line["category"] in NO_CALL_CATEGORIES
                                          else ANSWER_TOOL_CALL)) for text in line["samples"]] for line in lines]
    outcomes = {"format": (ids, formats)}
    if bfcl_rows is not None and work_dir is not None:
        from gdpo.files import write_jsonl
        from gdpo.tasks.tool_calling.evaluation import run_bfcl_score

        missing = [item for item in ids if item not in bfcl_rows]
        if missing:
            raise ValueError(f"The BFCL split has no rows for {missing[:5]}; give the split the runs were "
                             "evaluated on.")
        work_dir = work_dir.resolve()
        work_dir.mkdir(parents=True, exist_ok=True)
        scores_path = work_dir / "scores.json"
        if scores_path.exists():
            scores = json.loads(scores_path.read_text(encoding="utf-8"))
        else:
            write_jsonl(work_dir / "eval_items.jsonl", [bfcl_rows[item] for item in ids])
            write_jsonl(work_dir / "completions.jsonl", lines)
            scores = run_bfcl_score(work_dir / "eval_items.jsonl", work_dir / "completions.jsonl", scores_path,
                                    work_dir)
        verdicts = {item["id"]: item["correct"] for item in scores["items"]}
        outcomes["correct"] = (ids, [[float(v) for v in verdicts[item]] for item in ids])
    return outcomes


def run_outcomes(seed_dir: Path, bfcl_rows: dict | None = None, work_dir: Path | None = None,
                 regrade: bool = False) -> dict:
    """Metric → (ids, per-sample scores) of one evaluation's committed completion sample (checked against the
    run's manifest first, :func:`gdpo.files.check_committed_file`)."""
    check_committed_file(seed_dir, SAMPLE_FILE)
    lines = _read_jsonl(seed_dir / SAMPLE_FILE)
    if not lines:
        return {}
    if "doc_id" in lines[0]:
        return math_sample_outcomes(lines, regrade)
    if "category" in lines[0] and "samples" in lines[0]:
        return tool_calling_sample_outcomes(lines, bfcl_rows, work_dir)
    raise ValueError(f"{seed_dir / SAMPLE_FILE}: neither lm-eval samples (doc_id) nor tool-calling completions "
                     "(id, category, samples); this family's samples carry no scores to pair.")


def pairing_table(published: str | Path, a: str = "gdpo", b: str = "grpo", bfcl_split: str | Path | None = None,
                  work_dir: str | Path | None = None, regrade: bool = False) -> list[dict]:
    """One row per task, metric and seed evaluated with both methods ``a`` and ``b`` (columns
    :data:`COLUMNS`; means and variances as fractions), on the items both samples hold.

    Args:
        published: a published folder (``paper_figures/<scale>``) or its ``evidence/runs`` tree.
        a, b: the two methods compared (a − b).
        bfcl_split: directory of the BFCL split the tool-calling runs were evaluated on (``eval.jsonl``), to
            score ``correct`` with BFCL's checker (its environment, ``GDPO_BFCL_PYTHON``); None: format only.
        work_dir: where the BFCL scorer writes (needed with ``bfcl_split``).
        regrade: also pair math responses graded again by today's grader (``acc_regraded``).
    """
    root = runs_root(published)
    bfcl_rows = None
    if bfcl_split is not None:
        if work_dir is None:
            raise ValueError("Scoring tool-calling samples with BFCL needs a --work-dir for the scorer's files.")
        bfcl_rows = {row["id"]: row for row in _read_jsonl(Path(bfcl_split) / "eval.jsonl")}
    rows = []
    for task_dir in sorted(path for path in root.iterdir() if path.is_dir()):
        seeds = sorted({p.parent.name for p in task_dir.glob(f"{a}/seed*/{SAMPLE_FILE}")}
                       & {p.parent.name for p in task_dir.glob(f"{b}/seed*/{SAMPLE_FILE}")},
                       key=lambda name: int(name.removeprefix("seed")))
        for seed in seeds:
            found = {method: run_outcomes(task_dir / method / seed, bfcl_rows,
                                          Path(work_dir) / task_dir.name / method / seed if work_dir else None,
                                          regrade)
                     for method in (a, b)}
            for metric in found[a]:
                if metric not in found[b]:
                    continue
                ids_a, scores_a = found[a][metric]
                ids_b, scores_b = found[b][metric]
                index_b = {item: i for i, item in enumerate(ids_b)}
                common = [i for i, item in enumerate(ids_a) if item in index_b]
                if len(common) < 2:
                    continue
                matrix_a = np.array([scores_a[i] for i in common], dtype=float)
                matrix_b = np.array([scores_b[index_b[ids_a[i]]] for i in common], dtype=float)
                c = compare_items(matrix_a, matrix_b)
                rows.append({"task": task_dir.name, "metric": metric, "a": a, "b": b,
                             "seed": int(seed.removeprefix("seed")), "n": c.n, "samples": c.samples_a,
                             "mean_a": c.mean_a, "mean_b": c.mean_b, "correlation": c.correlation,
                             "var_paired": c.var_paired, "var_independent": c.var_independent, "ratio": c.ratio,
                             "var_adjusted": c.var_adjusted, "a_only": c.a_only, "b_only": c.b_only,
                             "p_value": c.p_value})
    return rows


def format_table(rows: list[dict]) -> str:
    """A plain-text table of :func:`pairing_table`'s rows (percent, points² for variances)."""
    header = (f"{'task':<13}{'metric':<13}{'seed':>5}{'n':>4}{'m':>3}{'a %':>7}{'b %':>7}{'rho':>7}"
              f"{'var paired':>12}{'var indep':>11}{'ratio':>7}{'var adj':>9}{'a>b':>5}{'b>a':>5}"
              f"{'McNemar p':>11}")
    lines = [header]
    for r in rows:
        lines.append(f"{r['task']:<13}{r['metric']:<13}{r['seed']:>5}{r['n']:>4}{r['samples']:>3}"
                     f"{100 * r['mean_a']:>7.1f}{100 * r['mean_b']:>7.1f}{r['correlation']:>7.2f}"
                     f"{1e4 * r['var_paired']:>12.2f}{1e4 * r['var_independent']:>11.2f}{r['ratio']:>7.2f}"
                     f"{1e4 * r['var_adjusted']:>9.2f}{r['a_only']:>5}{r['b_only']:>5}{r['p_value']:>11.3f}")
    return "\n".join(lines)
