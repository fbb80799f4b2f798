"""The evidence of the language-model scales (smoke, mini, cpu-evidence, paper) as the rules of :mod:`.model`
read it: the workflow's ``eval.csv`` and ``steps.csv`` (:mod:`gdpo.reporting.aggregate`), checked, and the
config's ``reporting:`` block, which says which task stands for which paper setup.

A paper setup run on another model than the paper's is named with the model that ran, ``SmolLM2-135M standing in
for Qwen2.5-1.5B`` (:func:`setup_label`), wherever a ledger row names it: a bare ``Qwen2.5-1.5B`` would say that
Qwen2.5-1.5B ran."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from gdpo.plan import model_display_name
from gdpo.reporting.aggregate import COLLAPSED, HEALTH, START_WEIGHTS, run_health
from gdpo.reporting.contract import binomial_variance
from gdpo.reporting.paper_numbers import MODELS as PAPER_MODELS
from gdpo.reporting.verdicts.items import REGRADED_DIFFERS, item_outcomes_problem, item_scores
from gdpo.reporting.verdicts.samples import Sample


#: Largest difference (points) between a run's eval.csv value and the mean of its items in items.json: rounding
#: only (eval.csv keeps a few decimals).
ITEMS_AGREE_POINTS = 0.01

#: The untrained (or warmed-up) model's method name in eval.csv.
BASE = "base"


def model_size(name: str) -> float | None:
    """Parameters in billions read from a model name (``Qwen2.5-1.5B-Instruct`` → 1.5, ``SmolLM2-135M`` →
    0.135), or None."""
    found = re.findall(r"(?<![\d.])(\d+(?:\.\d+)?)([BM])(?![a-zA-Z])", name)
    if not found:
        return None
    number, unit = found[-1]
    return float(number) / (1000 if unit == "M" else 1)


def model_short_name(spec: str | None) -> str:
    """The model a spec runs, short: its display name (:func:`gdpo.plan.model_display_name`) without a note in
    parentheses or an ``-Instruct`` suffix (``SmolLM2-135M-Instruct`` → ``SmolLM2-135M``, ``Qwen3-4B-Instruct-2507``
    → ``Qwen3-4B``, ``tiny-qwen2 (random weights)`` → ``tiny-qwen2``)."""
    return re.sub(r"-Instruct(-.*)?$", "", model_display_name(spec).split(" (")[0])


def setup_label(setup: str, spec: str | None) -> str:
    """How the ledger names paper setup ``setup`` (a model label of :data:`gdpo.reporting.paper_numbers.MODELS`)
    run on model ``spec``: ``"SmolLM2-135M standing in for Qwen2.5-1.5B"`` where that is not the paper's model;
    the setup alone where it is, where the model is not recorded, or where the setup names no model (Table 5's
    ``2obj``, Fig. 6's weights)."""
    paper = PAPER_MODELS.get(setup)
    if not spec or paper is None or model_display_name(spec) == paper:
        return setup
    return f"{model_short_name(spec)} standing in for {setup}"


def relabel_setups(text: str, labels: Mapping[str, str]) -> str:
    """``text`` with every setup of ``labels`` (setup → :func:`setup_label`) that stands as a word replaced by its
    label (``Qwen2.5-1.5B avg`` but not ``Qwen2.5-1.5B-Instruct``); one already labelled (after ``standing in
    for``) is left alone, so relabelling twice changes nothing."""
    labels = {setup: label for setup, label in labels.items() if label != setup}
    if not labels or not text:
        return text
    setups = "|".join(re.escape(setup) for setup in sorted(labels, key=len, reverse=True))
    return re.sub(rf"(?<![\w.-])(?<!standing in for )({setups})(?![\w-]|\.\d)",
                  lambda match: labels[match.group(1)], text)


class Evidence:
    """The tidy CSVs of one scale, its ``reporting:`` mapping and what each task ran, with the lookups the
    rules share.

    ``runs``: task → ``{"model": spec, "prompts_per_batch": int}`` from the config (optional; without it a
    row says the model was not recorded, and a minimum on prompts per batch counts as unmet).

    Raises:
        ValueError: eval.csv lacks a column, holds a non-numeric value, item count or seed, or repeats a
            (task, method, seed, benchmark, metric) row; items.json lists a run twice or holds corrupt per-item
            outcomes (:func:`~gdpo.reporting.verdicts.items.item_outcomes_problem`); the message names the rows
            or the run and how to remake the file.
    """

    def __init__(self, evals: pd.DataFrame | None, steps: pd.DataFrame | None, reporting: dict, scale: str,
                 eval_path: str = "eval.csv", steps_path: str = "steps.csv", runs: dict | None = None,
                 items: Mapping | None = None):
        if evals is not None:
            evals = _checked_evals(evals, eval_path)
        self.evals = evals
        # items.json (gdpo.reporting.aggregate.gather_items): each run's per-item outcomes, for the paired floor.
        self.item_records = _checked_item_records(items, eval_path)
        self.steps = steps
        self.reporting = reporting or {}
        self.scale = scale
        self.eval_path, self.steps_path = eval_path, steps_path
        self.runs = runs or {}

    def tasks(self, table: str) -> dict[str, str]:
        """Paper setup label → task, for a table of the ``reporting:`` block (empty if not configured)."""
        return {str(k): v for k, v in (((self.reporting.get("tables") or {}).get(table)) or {}).items()}

    def setup_labels(self, setups: Mapping[str, str]) -> dict[str, str]:
        """Setup → how the ledger names it (:func:`setup_label`, the model its task ran), for ``setups`` (setup →
        task, e.g. :meth:`tasks`)."""
        return {setup: setup_label(setup, (self.runs.get(task) or {}).get("model"))
                for setup, task in setups.items()}

    def figure_task(self, figure: str):
        return (self.reporting.get("figures") or {}).get(figure)

    def benchmarks(self, task: str, method: str, metric: str) -> set[str]:
        rows = self.evals[(self.evals["task"] == task) & (self.evals["method"] == method)
                          & (self.evals["metric"] == metric)]
        return set(rows["benchmark"]) if "benchmark" in rows else set()

    def sample(self, task: str, method: str, metric: str, benchmarks: set[str] | None = None) -> Sample:
        """``metric`` of (task, method) per seed, averaged over ``benchmarks`` (default: all that report it;
        a seed lacking one of them is left out), with the items' variance of that average (Σ binomial
        variances / B²; NaN where ``n_items`` is missing). The base model is one reference value (``once``):
        its seeds' mean, with the mean of their item variances (its items are the same on every seed).

        Raises:
            ValueError: a value outside 0–100 (the rules read percentages).
        """
        rows = self.evals[(self.evals["task"] == task) & (self.evals["method"] == method)
                          & (self.evals["metric"] == metric)]
        if benchmarks is not None and "benchmark" in rows:
            rows = rows[rows["benchmark"].isin(benchmarks)]
            complete = rows.groupby("seed")["benchmark"].nunique()
            rows = rows[rows["seed"].isin(complete[complete == len(benchmarks)].index)]
        outside = rows[(rows["value"] < 0) | (rows["value"] > 100)]
        if not outside.empty:
            first = outside.iloc[0]
            raise ValueError(f"{self.eval_path}, line {int(outside.index[0]) + 2}: {metric} of {task}/{method} seed "
                             f"{int(first['seed'])} is {first['value']}, outside 0–100; the rules read percentages "
                             "(42.5 for 42.5 %; a 0–1 fraction such as 0.425 must be multiplied by 100). Remake the "
                             "file with `gdpo aggregate`.")
        values_array = rows["value"].to_numpy(dtype=float)
        items_array = rows["n_items"].to_numpy(dtype=float)
        # The evaluation's binomial noise is over every sampled response: items × samples per item.
        trials = items_array * rows["n_samples"].fillna(1).to_numpy(dtype=float)
        rows = rows.assign(item_variance=binomial_variance(values_array, trials), items=items_array)
        grouped = rows.groupby("seed")
        values = grouped["value"].mean()
        # A benchmark without an item count leaves the seed's item variance unknown (NaN), not smaller.
        variances = grouped["item_variance"].agg(lambda v: v.sum(skipna=False)) / grouped.size() ** 2
        items = grouped["items"].agg(lambda v: v.sum(skipna=False))
        seeds = tuple(int(s) for s in values.index)
        outcomes = None
        if self.item_records:
            used = rows.groupby("seed")["benchmark"].agg(lambda v: sorted(set(v))) if "benchmark" in rows else {}
            outcomes = tuple(self._item_scores(task, method, seed, used[seed] if len(used) else [], metric,
                                               float(values[seed]))
                             for seed in seeds)
            outcomes = outcomes if any(o is not None for o in outcomes) else None
        sample = Sample(seeds, values.to_numpy(dtype=float), variances.to_numpy(dtype=float),
                        items.to_numpy(dtype=float), outcomes=outcomes)
        if method == BASE and len(sample):
            # One reference: its first seed's items pair with every run (its items are the same on every seed).
            return Sample(sample.seeds[:1], np.array([sample.values.mean()]), np.array([sample.variances.mean()]),
                          np.array([np.nanmax(sample.items) if np.isfinite(sample.items).any() else np.nan]), once=True,
                          outcomes=None if outcomes is None else outcomes[:1])
        return sample

    def _item_scores(self, task: str, method: str, seed: int, benchmarks: Sequence[str], metric: str,
                     value: float):
        """One run's :class:`~gdpo.reporting.verdicts.items.ItemScores` of ``metric`` on ``benchmarks``, or None.

        Raises:
            ValueError: the items' mean is not the run's ``value`` in eval.csv (a metric stored per item, e.g.
                acc, format, pass; beyond rounding and the items the evaluation lists as regraded differently):
                items.json was not made from the evaluations eval.csv holds, and its floor would judge other
                runs than the values.
        """
        record = self.item_records.get((task, method, seed))
        scores = item_scores(record, benchmarks, metric) if record and benchmarks else None
        direct = scores is not None and all(metric in record["items"][b]["scores"] for b in benchmarks)
        if direct:
            mean = 100.0 * float(np.mean([np.sum(w * m) / np.sum(w) for _, m, w in scores.benchmarks.values()]))
            # Items whose regraded outcome differs from the evaluator's logged one (math: a verifier timeout): eval.csv
            # holds the logged mean, items.json the regraded one. A listed item's logged outcome lies in [0, 1], so it
            # moves eval.csv's value by at most the room its regraded mean m leaves (up by 1 − m, down by m), over n
            # items: 1/n of the scale at most, and only for distinct listed items (checked when items.json is read).
            up, down = [], []
            for benchmark in benchmarks:
                ids, means, _ = scores.benchmarks[benchmark]
                listed = set(record["items"][benchmark].get(REGRADED_DIFFERS.format(metric=metric)) or [])
                moved = means[np.array([item in listed for item in ids], dtype=bool)]
                up.append(np.sum(1.0 - moved) / len(ids))
                down.append(np.sum(moved) / len(ids))
            up_points, down_points = 100.0 * float(np.mean(up)), 100.0 * float(np.mean(down))
            if not -down_points - ITEMS_AGREE_POINTS <= value - mean <= up_points + ITEMS_AGREE_POINTS:
                regraded = (f" (its items regraded differently allow −{down_points:.2f} to +{up_points:.2f} points)"
                            if up_points or down_points else "")
                raise ValueError(
                    f"items.json beside {self.eval_path}: {task}/{method} seed {seed} {metric} is {mean:.2f} % over its "
                    f"items but {value:.2f} % in eval.csv{regraded}; the two were not made from the same evaluations. "
                    "Remake both with `gdpo aggregate --out-items` from the scale's eval.json files.")
        return scores

    def missing(self, task: str, methods: Sequence[str], metrics: Sequence[str]) -> str | None:
        """Why (task, methods, metrics) cannot be compared, or None."""
        if self.evals is None:
            return f"missing {self.eval_path} (the aggregate rule has not run)"
        for method in methods:
            for metric in metrics:
                rows = self.evals[(self.evals["task"] == task) & (self.evals["method"] == method)
                                  & (self.evals["metric"] == metric)]
                if rows.empty:
                    return f"{self.eval_path} has no {metric!r} for {task}/{method}"
        return None

    def collapsed(self, task: str, methods: Sequence[str], state: str = COLLAPSED) -> list[str]:
        """``"<method> seed <s>[, <method> seed <s>…]: <why>"`` for the runs of (task, one of ``methods``)
        that eval.csv marks as ``state``: ``collapsed`` (why: the reasons) or ``not judged`` (why: what the
        gate lacked; :mod:`gdpo.generation.health`), runs with the same why named together. A file without
        the ``health`` column cannot tell a healthy run from one not judged: its runs without collapse
        reasons are all not judged (:func:`gdpo.reporting.aggregate.run_health`)."""
        named: dict[str, list[str]] = {}  # why -> the runs
        for run in self._runs(task, methods):
            judged, why = run_health(run.get(HEALTH), run[COLLAPSED], self.eval_path)
            if judged == state:
                named.setdefault(why, []).append(f"{run['method']} seed {int(run['seed'])}")
        return [f"{', '.join(names)}: {why}" for why, names in named.items()]

    def start_models(self, task: str, methods: Sequence[str]) -> dict[str, list[str]]:
        """Start-weights digest → ``"<method> seed <s>"`` of the runs of (task, one of ``methods``) that
        eval.csv records it for (its ``start_weights_sha256``; runs without one are left out: not recorded)."""
        named: dict[str, list[str]] = {}
        for run in self._runs(task, methods):
            if run[START_WEIGHTS]:
                named.setdefault(run[START_WEIGHTS], []).append(f"{run['method']} seed {int(run['seed'])}")
        return named

    def _runs(self, task: str, methods: Sequence[str]) -> list[dict]:
        """One eval.csv row per run of (task, one of ``methods``), sorted by method and seed (the columns that
        describe the whole run: health, collapse reasons, start weights)."""
        rows = self.evals[(self.evals["task"] == task) & self.evals["method"].isin(list(methods))]
        return rows.drop_duplicates(subset=["method", "seed"]).sort_values(["method", "seed"]).to_dict("records")

    def samples_per_item(self, task: str, method: str, metric: str) -> int:
        """Samples per evaluated item behind (task, method)'s ``metric`` (eval.csv's ``n_samples``; 1 where not
        recorded: greedy or one sample)."""
        rows = self.evals[(self.evals["task"] == task) & (self.evals["method"] == method)
                          & (self.evals["metric"] == metric)]
        counts = pd.to_numeric(rows["n_samples"], errors="coerce").dropna()
        return int(counts.min()) if not counts.empty else 1

    def items(self, task: str, method: str, metric: str) -> float | None:
        """Evaluated items of one run of (task, method), summed over the benchmarks reporting ``metric``
        (the smallest over seeds); None when eval.csv has no item counts."""
        rows = self.evals[(self.evals["task"] == task) & (self.evals["method"] == method)
                          & (self.evals["metric"] == metric)]
        counts = pd.to_numeric(rows["n_items"]).groupby(rows["seed"]).sum(min_count=1).dropna()
        return None if counts.empty else float(counts.min())

    def num_steps(self, task: str, methods: Sequence[str] | None = None) -> int | None:
        """Training steps of the shortest run of ``task`` (None without steps.csv or runs)."""
        if self.steps is None:
            return None
        rows = self.steps[self.steps["task"] == task]
        if methods is not None:
            rows = rows[rows["method"].isin(methods)]
        if rows.empty:
            return None
        return int(rows.groupby(["method", "seed"])["step"].nunique().min())

    def seeds(self, task: str, method: str) -> int:
        if self.evals is None:
            return 0
        rows = self.evals[(self.evals["task"] == task) & (self.evals["method"] == method)]
        return int(rows["seed"].nunique())

    def run_label(self, task: str, methods: Sequence[str], setup: str | None = None) -> str:
        """What was run: ``SmolLM2-135M-Instruct, math_conditioned, 8 steps, 1 seed (paper: R1-7B)``."""
        seeds = sorted({self.seeds(task, m) for m in methods if m != "base"} or {0})
        seed_text = "/".join(str(s) for s in seeds) + (" seed" if seeds == [1] else " seeds")
        steps = self.num_steps(task, [m for m in methods if m != "base"])
        parts = [model_display_name((self.runs.get(task) or {}).get("model")), task]
        if steps is not None:
            parts.append(f"{steps} steps")
        parts.append(seed_text)
        return ", ".join(parts) + (f" (paper: {setup})" if setup else "")


def _checked_item_records(items: Mapping | None, eval_path: str) -> dict[tuple[str, str, int], Mapping]:
    """items.json's runs by (task, method, seed), each run once and its per-item outcomes sound
    (:func:`~gdpo.reporting.verdicts.items.item_outcomes_problem`): a corrupt entry would judge with a NaN or a
    forged floor, and a run listed twice leaves open which entry is its evaluation.

    Raises:
        ValueError: naming items.json (beside ``eval_path``), the run and what is wrong, and how to remake it.
    """
    runs = (items or {}).get("runs", [])
    keys = [(str(run["task"]), str(run["method"]), int(run["seed"])) for run in runs]
    fix = "Remake it with `gdpo aggregate --out-items` from the scale's eval.json files."
    for key, run in zip(keys, runs):
        where = f"items.json beside {eval_path}: {key[0]}/{key[1]} seed {key[2]}"
        if keys.count(key) > 1:
            raise ValueError(f"{where} is listed {keys.count(key)} times; each evaluation has one entry. {fix}")
        problem = item_outcomes_problem(run)
        if problem:
            raise ValueError(f"{where} {problem}. {fix}")
    return dict(zip(keys, runs))


def _checked_evals(evals: pd.DataFrame, eval_path: str) -> pd.DataFrame:
    """eval.csv with the columns the rules read, numbers as numbers, empty values dropped (a column a family
    could not produce), and no repeated rows."""
    missing = [c for c in ("task", "method", "seed", "metric", "value") if c not in evals.columns]
    if missing and not evals.empty:
        raise ValueError(f"{eval_path} lacks columns {missing}; it must be eval.csv of `gdpo aggregate`.")
    evals = evals.reindex(columns=list(dict.fromkeys([*evals.columns, "task", "method", "seed", "metric", "value",
                                                      "n_items", "n_samples", "benchmark", COLLAPSED,
                                                      START_WEIGHTS])))
    for column in (COLLAPSED, START_WEIGHTS):
        evals[column] = evals[column].astype(object).where(evals[column].notna(), "").astype(str)
    for column in ("value", "n_items", "n_samples", "seed"):
        numbers = pd.to_numeric(evals[column], errors="coerce")
        bad = evals[numbers.isna() & evals[column].notna()]
        if not bad.empty:
            raise ValueError(f"{eval_path}, line {int(bad.index[0]) + 2}: column {column!r} holds "
                             f"{bad[column].iloc[0]!r}, not a number; remake the file with `gdpo aggregate`.")
        evals = evals.assign(**{column: numbers})
    evals = evals.dropna(subset=["value"])
    _check_counts(evals, eval_path)
    keys = ["task", "method", "seed", "benchmark", "metric"]
    repeated = evals[evals.duplicated(subset=keys, keep=False)]
    if not repeated.empty:
        row = repeated.iloc[0]
        raise ValueError(f"{eval_path} repeats the row {dict(row[keys])} ({len(repeated)} repeated rows); each "
                         "(task, method, seed, benchmark, metric) must appear once (remake it with `gdpo aggregate`).")
    return evals


#: More evaluated items than any benchmark of this field has (BFCL-v3: 4,441; the largest math sets: tens of
#: thousands): a count above it is a unit error (responses × samples, or tokens), not items.
MAX_ITEMS = 1_000_000


#: Samples per item above which a count is not one (the paper's math evaluation: 16).
MAX_SAMPLES = 10_000


def _check_counts(evals: pd.DataFrame, eval_path: str) -> None:
    """Refuse item and sample counts no evaluation can have, and a file of 0–1 fractions read as percentages.

    Raises:
        ValueError: naming the file, its line, the value and the fix.
    """
    def fail(rows: pd.DataFrame, what: str, fix: str) -> None:
        first = rows.iloc[0]
        raise ValueError(f"{eval_path}, line {int(rows.index[0]) + 2} ({first['task']}/{first['method']} seed "
                         f"{first['seed']}, {first['metric']}): {what} {fix}")

    items = evals["n_items"]
    if (bad := evals[items.notna() & (items <= 0)]).shape[0]:
        fail(bad, f"n_items is {bad['n_items'].iloc[0]:g}; a value needs at least one evaluated item.",
             "Drop the row, or re-run its evaluation with eval_size ≥ 1 and remake the file with `gdpo aggregate`.")
    if (bad := evals[items.notna() & (items > MAX_ITEMS)]).shape[0]:
        fail(bad, f"n_items is {bad['n_items'].iloc[0]:g}, more than any benchmark has (> {MAX_ITEMS:,}).",
             "n_items counts evaluated items per run (not responses, samples or tokens); remake the file with "
             "`gdpo aggregate`.")
    samples = evals["n_samples"]
    if (bad := evals[samples.notna() & ((samples < 1) | (samples > MAX_SAMPLES))]).shape[0]:
        fail(bad, f"n_samples is {bad['n_samples'].iloc[0]:g}; samples per item must be between 1 and "
                  f"{MAX_SAMPLES:,}.", "Remake the file with `gdpo aggregate`.")
    values = evals["value"]
    if len(values) and values.between(0, 1).all() and ((values > 0) & (values < 1)).any():
        fail(evals[(values > 0) & (values < 1)], "every value of the file lies between 0 and 1: these look like "
             "0–1 fractions, and the rules read percentages (0.425 would be read as 0.425 %, not 42.5 %).",
             "Multiply the values by 100, or remake the file with `gdpo aggregate`.")
