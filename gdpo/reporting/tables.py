"""The paper's Tables 1-5 regenerated from our evaluations, each cell "ours (paper)".

Input: the tidy evaluation table (``eval.csv`` of :mod:`gdpo.reporting.aggregate`: columns ``task, method,
seed, benchmark, metric, value`` (percent), ``n_items``, ``note``). Every table function takes

- ``evals``: that DataFrame;
- ``tasks``: which of our tasks fills which of the paper's models, ``{paper model label: our task name}``
  (labels of :mod:`gdpo.reporting.paper_numbers`; Table 5 maps its objective settings "2obj"/"3obj"
  instead, see :data:`TABLE_KEYS`). A model left out shows "no run". At a CPU scale one small model
  stands in for a paper model; the caption says so;
- ``scale``: the scale's name (``mini``, ``paper``, ...), printed in the caption;
- ``runs`` (keyword, optional): what each task ran, ``{task: {"model": spec, "max_steps": int, ...}}``
  (:func:`gdpo.plan.describe_runs`). Row and column labels name what ran first (our model, from the
  config, and its steps) and the paper's setup it is compared with apart: Table 1's ``ours (model, steps)``
  and ``paper row`` columns, the benchmark tables' "<our model> <method> (paper: <paper model>)" columns.
  Without ``runs`` a label names our task instead of its model,

and returns ``(DataFrame, markdown)``: the paper's rows and columns, the DataFrame cells holding full
text (for ``<stem>.csv``), the markdown moving long "not run" reasons to numbered notes.

Cells:
- ours = mean over seeds ± the half-width of a 95 % Student-t interval, ``t(0.975, n-1) · s / √n`` with
  ``s`` the sample standard deviation (ddof = 1) of the n per-seed values; a single seed shows its value
  alone (no interval). A t-interval rather than a bootstrap because there are 2-5 seeds: a bootstrap over
  so few values cannot reach 95 % coverage, the t-interval is exact for normal per-seed values.
- the paper's number follows in parentheses, "(—)" where the paper gives none;
- a cell we could not fill says why: "not run: <reason>" (the note of eval.csv), "no run" (no such
  task or method was evaluated), "not evaluated" (the run's evaluation has no such benchmark or metric).

Benchmarks: a benchmark of ours that is the paper's data set (:data:`PAPER_BENCHMARKS`, e.g. ``math500``
= MATH) is compared cell by cell. Our benchmarks with no paper counterpart (``reasoning_gym``,
``procedural``, ``humaneval``) form their own block of rows without paper numbers, and the paper's
benchmarks we did not evaluate form a reference block holding only the paper's numbers: a CPU benchmark
is never shown as the paper's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gdpo.methods import Method
from gdpo.plan import model_display_name
from gdpo.reporting.aggregate import COLLAPSED
from gdpo.reporting.stats import mean_and_half_width
from gdpo.reporting.paper_numbers import (
    CODE_METRICS,
    MATH_METRICS,
    MODELS,
    PAPER_BENCHMARKS,
    QWEN3_4B,
    QWEN25_1_5B,
    QWEN25_3B,
    R1_1_5B,
    R1_7B,
    TOOL_METRICS,
    paper_numbers,
    paper_value,
)

REQUIRED_COLUMNS = ["task", "method", "seed", "benchmark", "metric", "value"]
CI_LEVEL = 0.95
NO_RUN = "no run"
NOT_EVALUATED = "not evaluated"
NOT_RUN_PREFIX = "not run: "
NO_PAPER_NUMBER = "—"
#: Marks a cell resting on a collapsed run (eval.csv ``collapsed``): not a result of the method.
COLLAPSE_MARK = "†"

#: Row blocks of the benchmark tables (3, 4, 5).
SAME_BENCHMARK = "ours (paper): same benchmark"
PAPER_ONLY = "paper only: not evaluated here"
OURS_ONLY = "ours only: no paper counterpart"
BLOCK_HEADINGS = {
    SAME_BENCHMARK: "The paper's benchmarks: ours (paper)",
    PAPER_ONLY: "The paper's benchmarks not evaluated at this scale: the paper's numbers for reference",
    OURS_ONLY: "Our benchmarks without a paper counterpart: ours only, not comparable to the paper's numbers",
}

METHOD_LABELS = {"base": "base", Method.GRPO: "GRPO", Method.GRPO_NOSTD: "GRPO w/o std", Method.GDPO: "GDPO",
                 Method.GDPO_NOBN: "GDPO w/o batch step", Method.GDPO_NOSTD: "GDPO w/o std"}
METRIC_LABELS = {"live": "Live", "multi_turn": "Multi", "non_live": "Non-live", "avg": "Avg",
                 "format": "Format", "acc": "Acc", "exceed": "Exceed", "pass": "Pass", "bug": "Bug",
                 "calls": "Calls made", "ast_calls": "AST acc. (calls)",
                 "declined": "No parsable call (no-call items)",
                 "declined_in_format": "Declined in format (no-call items)"}
#: Table 1's columns beside BFCL's averages, which the paper does not report: what the policy does on the
#: items that need a tool call and on those that need none (tool_calling.evaluation.call_metrics), so that a
#: rise in the averages that comes only from not calling shows, and so does a fall that comes from calling
#: on every item.
TOOL_BEHAVIOUR_METRICS = ("calls", "ast_calls", "declined", "declined_in_format")
#: The base row/column of a task whose RL starts from a format warm-up.
WARMED_UP_BASE = "base (warm-up)"
#: Table 1's columns naming a row: what we ran, and the paper's row its numbers are compared with.
OURS_COLUMN = "ours (model, steps)"
PAPER_ROW_COLUMN = "paper row"
#: The keys each table function accepts in ``tasks``.
TABLE_KEYS = {
    "table1_tool_calling": (QWEN25_1_5B, QWEN25_3B),
    "table3_math": (R1_1_5B, R1_7B, QWEN3_4B),
    "table4_math_conditioned": (R1_7B,),
    "table5_code": ("2obj", "3obj"),
}

@dataclass(frozen=True)
class Measurement:
    """Our side of one cell: mean ± half-width over ``seeds``, or ``reason`` when there is no value.

    ``collapsed``: ``"<task>/<method> seed <s>: <why>"`` for each seed behind the value whose run collapsed
    (:mod:`gdpo.generation.health`); such a cell carries :data:`COLLAPSE_MARK`.
    """

    mean: float | None = None
    half_width: float | None = None
    seeds: tuple[int, ...] = ()
    reason: str = ""
    collapsed: tuple[str, ...] = ()

    def value_text(self, decimals: int) -> str:
        if self.mean is None:
            return self.reason
        if self.half_width is None:
            return f"{self.mean:.{decimals}f}"
        return f"{self.mean:.{decimals}f} ± {self.half_width:.{decimals}f}"

    def text(self, decimals: int) -> str:
        text = self.value_text(decimals)
        if self.collapsed and self.mean is not None:
            text += f" {COLLAPSE_MARK} collapsed: {'; '.join(self.collapsed)}"
        return text


@dataclass(frozen=True)
class _Cell:
    """One table cell: ours (None in the paper-only block), the paper's number (None: not given), and
    whether the row has paper numbers at all."""

    ours: Measurement | None
    paper: float | None
    with_paper: bool

    def text(self, decimals: int, ours_text: str | None = None) -> str:
        parts = []
        if self.ours is not None:
            parts.append(self.ours.text(decimals) if ours_text is None else ours_text)
        if self.with_paper:
            parts.append(f"({NO_PAPER_NUMBER if self.paper is None else f'{self.paper:.{decimals}f}'})")
        return " ".join(parts)


def _prepare(evals: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in REQUIRED_COLUMNS if c not in evals.columns]
    if missing:
        raise ValueError(f"The evaluations lack columns {missing}; pass eval.csv of gdpo.reporting.aggregate "
                         f"(columns {REQUIRED_COLUMNS + ['n_items', 'note']}).")
    evals = evals.copy()
    for column in ("note", "metric", "benchmark", COLLAPSED):
        # object first: an all-empty column is read as float64, which pandas will not fill with a string
        evals[column] = evals[column].astype(object).fillna("").astype(str) if column in evals else ""
    evals["value"] = pd.to_numeric(evals["value"], errors="coerce")
    if "n_items" not in evals:
        evals["n_items"] = np.nan
    return evals


def _check_tasks(tasks: dict[str, str], table: str) -> None:
    allowed = TABLE_KEYS[table]
    unknown = [key for key in tasks if key not in allowed]
    if unknown:
        raise ValueError(f"{table}: tasks keys {unknown} are not among the paper's {', '.join(allowed)}; "
                         f"map those labels to our task names.")
    empty = [key for key, task in tasks.items() if not isinstance(task, str) or not task]
    if empty:
        raise ValueError(f"{table}: tasks {empty} map to no task name; give our task name or leave the key "
                         "out.")


def _measure(evals: pd.DataFrame, task: str | None, method: str, benchmark: str, metric: str) -> Measurement:
    """Our value of (task, method, benchmark, metric) over seeds, or the reason there is none.

    ``evals`` as prepared by :func:`_prepare`. A "not run" note counts when its ``benchmark`` column names
    the benchmark (math, code: a whole data set not run) or the metric (tool calling: ``multi_turn``).
    """
    if task is None:
        return Measurement(reason=NO_RUN)
    run = evals[(evals["task"] == task) & (evals["method"] == method)]
    if run.empty:
        return Measurement(reason=NO_RUN)
    rows = run[(run["benchmark"] == benchmark) & (run["metric"] == metric)].dropna(subset=["value"])
    if not rows.empty:
        repeated = sorted(set(rows["seed"][rows["seed"].duplicated()]))
        if repeated:
            raise ValueError(f"The evaluations hold several rows of {task}/{method} seed(s) {repeated} "
                             f"for {benchmark}/{metric}; eval.csv has one row per seed: gather the "
                             "evaluations once.")
        rows = rows.sort_values("seed")
        mean, half_width = mean_and_half_width(rows["value"].to_numpy())
        collapsed = tuple(f"{task}/{method} seed {int(seed)}: {why}"
                          for seed, why in zip(rows["seed"], rows["collapsed"]) if why)
        return Measurement(mean, half_width, tuple(int(s) for s in rows["seed"]), collapsed=collapsed)
    notes = run[run["benchmark"].isin([benchmark, metric]) & (run["note"] != "")]["note"]
    if not notes.empty:
        return Measurement(reason="; ".join(dict.fromkeys(notes)))
    return Measurement(reason=NOT_EVALUATED)


def _markdown_grid(header: list[str], rows: list[list[str]]) -> str:
    def clean(text: str) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(clean(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class _Notes:
    """Numbered notes for the markdown: a long "not run: <reason>" cell becomes "not run [k]"."""

    def __init__(self) -> None:
        self.reasons: dict[str, int] = {}

    def short(self, cell: _Cell, decimals: int) -> str:
        ours = cell.ours
        if ours is not None and ours.mean is not None and ours.collapsed:
            reason = f"{COLLAPSE_MARK} collapsed, not a result of the method: {'; '.join(ours.collapsed)}"
            number = self.reasons.setdefault(reason, len(self.reasons) + 1)
            return cell.text(decimals, ours_text=f"{ours.value_text(decimals)} {COLLAPSE_MARK}[{number}]")
        if ours is None or ours.mean is not None or not ours.reason.startswith(NOT_RUN_PREFIX):
            return cell.text(decimals)
        number = self.reasons.setdefault(ours.reason, len(self.reasons) + 1)
        return cell.text(decimals, ours_text=f"not run [{number}]")

    def markdown(self) -> str:
        return "\n".join(f"[{n}] {reason}" for reason, n in self.reasons.items())


def _legend(decimals: int) -> list[str]:
    plural = "" if decimals == 1 else "s"
    cells = ("Cells: ours (paper). Ours = mean over seeds ± half-width of the 95 % Student-t interval "
             "(t(0.975, n-1)·s/√n, s = sample std of the n per-seed values); a single seed shows its value "
             f"alone. Percent, {decimals} decimal{plural}; (—) = the paper gives no number.")
    reasons = (f"'{NO_RUN}': no evaluation of that task/method at this scale; '{NOT_EVALUATED}': the run's "
               "evaluation has no such benchmark or metric; 'not run': the evaluation says why (see notes).")
    collapse = (f"{COLLAPSE_MARK}: at least one seed behind the cell collapsed (its policy stopped doing the task: "
                "no tool calls, no answers or no program on almost every held-out item, or almost every response "
                "cut at the token limit; see notes); its number is not a result of the method, and the claims "
                "ledger counts no comparison resting on it.")
    return [cells, reasons, collapse]


def _our_model(task: str, runs: dict[str, dict] | None) -> str:
    """The model ``task`` trained, by its display name from the config (``runs``); the task's name when
    ``runs`` does not describe it."""
    run = (runs or {}).get(task)
    return task if run is None else model_display_name(run.get("model"))


def _steps_text(steps: int) -> str:
    return f"{steps} step{'' if steps == 1 else 's'}"


def _what_ran(task: str, runs: dict[str, dict] | None) -> str:
    """``SmolLM2-135M-Instruct, 8 steps``: our model and its optimizer steps (the task's name without
    ``runs``)."""
    steps = ((runs or {}).get(task) or {}).get("max_steps")
    model = _our_model(task, runs)
    return model if steps is None else f"{model}, {_steps_text(steps)}"


def _was_run(evals: pd.DataFrame, task: str | None, method: str) -> bool:
    """Whether eval.csv holds any row of (task, method): the run exists at this scale."""
    return task is not None and bool(((evals["task"] == task) & (evals["method"] == method)).any())


def _mapping_lines(tasks: dict[str, str], keys: Iterable[str], scale: str, what: str,
                   runs: dict[str, dict] | None = None) -> list[str]:
    lines = []
    for key in keys:
        label = f"{key} ({MODELS[key]})" if key in MODELS else key
        if key in tasks:
            ran = f" ({_what_ran(tasks[key], runs)})" if tasks[key] in (runs or {}) else ""
            lines.append(f"{what} of the paper's {label}: our task `{tasks[key]}`{ran}.")
        else:
            lines.append(f"{what} of the paper's {label}: no task at this scale ({NO_RUN}).")
    if not scale.startswith("paper-") and tasks:
        lines.append(f"At scale `{scale}` our model stands in for the paper model it is compared with; its "
                     "numbers are not the paper model's.")
    return lines


def _run_lines(evals: pd.DataFrame, tasks: dict[str, str], methods: Sequence[str]) -> list[str]:
    """Seeds per task and method, evaluated items per benchmark, methods this table does not show."""
    lines = []
    for task in dict.fromkeys(tasks.values()):
        rows = evals[evals["task"] == task]
        valued = rows.dropna(subset=["value"])
        if rows.empty:
            lines.append(f"`{task}`: no evaluations found.")
            continue
        seeds = "; ".join(
            f"{method} {', '.join(str(s) for s in sorted(set(valued[valued['method'] == method]['seed'])))}"
            for method in methods if method in set(valued["method"])
        )
        items = valued.dropna(subset=["n_items"]).groupby("benchmark")["n_items"].agg(
            lambda n: "/".join(str(int(v)) for v in sorted(set(n))))
        item_text = ", ".join(f"{bench} {n}" for bench, n in items.items())
        line = (f"`{task}`: seeds {seeds or 'none with values'}; "
                f"held-out items per evaluation: {item_text or '?'}.")
        others = sorted(set(rows["method"]) - set(methods))
        if others:
            line += f" Methods evaluated but not in the paper's table: {', '.join(others)}."
        lines.append(line)
    return lines


def _assemble(caption: list[str], grids: list[tuple[str, str]], notes: _Notes) -> str:
    parts = [caption[0], "", *(f"- {line}" for line in caption[1:]), ""]
    for heading, grid in grids:
        if heading:
            parts += [f"**{heading}**", ""]
        parts += [grid, ""]
    if notes.reasons:
        parts += ["Notes:", "", *(f"- {line}" for line in notes.markdown().splitlines()), ""]
    return "\n".join(parts)


def _method_label(method: str, task: str | None, starting_points: dict[str, str]) -> str:
    return WARMED_UP_BASE if method == "base" and task in starting_points else METHOD_LABELS[method]


def _starting_point_lines(tasks: dict[str, str], starting_points: dict[str, str]) -> list[str]:
    return [f"'{WARMED_UP_BASE}' of `{task}`: the RL starting point, {starting_points[task]}; not the untrained "
            "model, and not the paper's base model." for task in dict.fromkeys(tasks.values()) if task in starting_points]


def _row_label(evals: pd.DataFrame, task: str | None, method: str, runs: dict[str, dict] | None,
               starting_points: dict[str, str]) -> str:
    """Table 1's ``ours (model, steps)`` cell: what ran in the row, or :data:`NO_RUN`."""
    if not _was_run(evals, task, method):
        return NO_RUN
    if method == "base":
        return starting_points.get(task) or f"{_our_model(task, runs)}, untrained"
    return _what_ran(task, runs)


def table1_tool_calling(evals: pd.DataFrame, tasks: dict[str, str], scale: str,
                        starting_points: dict[str, str] | None = None, *,
                        runs: dict[str, dict] | None = None) -> tuple[pd.DataFrame, str]:
    """Tables 1 and 2: BFCL-v3 Live, Multi(-turn), Non-live, Avg accuracy and correct Format (%), then what
    the policy does on the items that need a call and on those that need none (:data:`TOOL_BEHAVIOUR_METRICS`,
    ours only).

    Rows: the paper's (model, method) rows in its order (Qwen2.5-1.5B base, GRPO, GRPO w/o std (Table 2),
    GDPO; Qwen2.5-3B base, GRPO, GDPO). Columns: ``ours (model, steps)`` (what ran: our model and its steps,
    e.g. "SmolLM2-135M-Instruct, 8 steps", the base row's starting point, or "no run"), ``paper row`` (the
    paper's model whose numbers are in parentheses), ``method, task`` (our task, "" if none), then Live,
    Multi, Non-live, Avg, Format, Calls made, AST acc. (calls), No parsable call (no-call items), Declined in
    format (no-call items). Our benchmark ``bfcl_v3`` is (a held-out part of) BFCL-v3 itself, so every BFCL
    cell is "ours (paper)". ``tasks`` keys: "Qwen2.5-1.5B", "Qwen2.5-3B".
    ``starting_points``: task → what its ``base`` is when it is not the untrained model (a format warm-up);
    those base rows read :data:`WARMED_UP_BASE` and name it in the ours column. ``runs``: see the module
    docstring.
    """
    _check_tasks(tasks, "table1_tool_calling")
    starting_points = starting_points or {}
    evals = _prepare(evals)
    decimals = 2
    paper = paper_numbers()
    paper_rows = paper[paper["table"].isin(["1", "2"])][["model", "method", "table"]].drop_duplicates()
    notes = _Notes()
    records, grid = [], []
    for model, method, table in paper_rows.itertuples(index=False):
        task = tasks.get(model)
        cells = [_Cell(_measure(evals, task, method, "bfcl_v3", metric),
                       paper_value(table, model, method, "BFCL-v3", metric), True) for metric in TOOL_METRICS]
        cells += [_Cell(_measure(evals, task, method, "bfcl_v3", metric), None, False)
                  for metric in TOOL_BEHAVIOUR_METRICS]
        head = [_row_label(evals, task, method, runs, starting_points), model,
                _method_label(method, task, starting_points), task or ""]
        records.append(head + [cell.text(decimals) for cell in cells])
        grid.append(head + [notes.short(cell, decimals) for cell in cells])
    header = ([OURS_COLUMN, PAPER_ROW_COLUMN, "method", "task"]
              + [METRIC_LABELS[m] for m in TOOL_METRICS + TOOL_BEHAVIOUR_METRICS])
    frame = pd.DataFrame(records, columns=header)
    caption = [
        (f"**Tables 1/2. BFCL-v3 accuracy and correct-format rate (%), GRPO vs GDPO (and GRPO w/o std, "
         f"Table 2); scale `{scale}`.**"),
        *_legend(decimals),
        ("The paper's numbers are averages of 5 runs over the full BFCL-v3; ours are on the held-out BFCL-v3 "
         "items our evaluation scores. Avg is BFCL's overall accuracy as our evaluation computes it "
         "(mean of Live, Non-live and Multi-turn; see the run's eval.json settings when Multi-turn is not "
         "run)."),
        ("Calls made and AST acc. (calls), ours only: on the held-out items whose answer is a tool call, the share "
         "of responses that make a parsable call and the share BFCL's AST checker scores correct. Declined "
         "(no call), ours only: on the held-out items that expect no call, the share of responses that make "
         "none. BFCL's irrelevance categories reward calling nothing, so a policy that stops calling can raise "
         "Live, Non-live and Avg, and one that calls on every item loses them; these columns show which."),
        (f"'{OURS_COLUMN}': what the row ran (our model and its training steps; the base row: the RL "
         f"starting point); '{PAPER_ROW_COLUMN}': the paper's model whose numbers are in parentheses."),
        *_mapping_lines(tasks, TABLE_KEYS["table1_tool_calling"], scale, "Rows", runs),
        *_starting_point_lines(tasks, starting_points),
        *_run_lines(evals, tasks, list(dict.fromkeys(paper_rows["method"]))),
    ]
    return frame, _assemble(caption, [("", _markdown_grid(header, grid))], notes)


def _column_label(evals: pd.DataFrame, task: str | None, method: str, label: str, paper_setup: str,
                  runs: dict[str, dict] | None) -> str:
    """A benchmark table's column label: ``SmolLM2-135M-Instruct GRPO (paper: R1-1.5B)``, what ran first; a
    (task, method) that did not run keeps the paper's name: ``R1-7B GRPO (paper only: no run)``."""
    if not _was_run(evals, task, method):
        return f"{paper_setup} {label} (paper only: {NO_RUN})"
    return f"{_our_model(task, runs)} {label} (paper: {paper_setup})"


def _column_legend() -> str:
    return ("Column labels: what ran (our model and method), then '(paper: <model>)', the paper's model whose "
            f"numbers the cells give in parentheses; '(paper only: {NO_RUN})': a column of the paper with no run "
            "here.")


@dataclass(frozen=True)
class _Column:
    """A column of a benchmark table: its label, the ``tasks`` keys that fill it (first mapped wins),
    our method, and where its paper numbers are (table, model, setting)."""

    label: str
    task_keys: tuple[str, ...]
    method: str
    paper: tuple[str, str, str]


def _benchmark_table(
    evals: pd.DataFrame,
    tasks: dict[str, str],
    family: str,
    metrics: Sequence[str],
    columns: Sequence[_Column],
    decimals: int,
) -> tuple[pd.DataFrame, list[tuple[str, str]], _Notes]:
    """Rows (block, benchmark, metric) × ``columns``; see the module docstring for the three blocks."""
    mapped = set(tasks.values())
    ours = evals[evals["task"].isin(mapped)]
    benchmarks_run = set(ours[ours["metric"].isin(metrics) | (ours["note"] != "")]["benchmark"])
    paper_benchmarks = PAPER_BENCHMARKS[family]
    row_specs = []  # (block, label, our benchmark, paper benchmark)
    for our_name, paper_name in paper_benchmarks.items():
        if our_name in benchmarks_run:
            row_specs.append((SAME_BENCHMARK, f"{paper_name} ({our_name})", our_name, paper_name))
        else:
            row_specs.append((PAPER_ONLY, paper_name, None, paper_name))
    for our_name in sorted(benchmarks_run - set(paper_benchmarks)):
        row_specs.append((OURS_ONLY, our_name, our_name, None))
    # Paper-only rows after the compared ones, as the markdown shows them.
    block_order = [SAME_BENCHMARK, OURS_ONLY, PAPER_ONLY]
    row_specs.sort(key=lambda spec: block_order.index(spec[0]))

    def task_of(column: _Column) -> str | None:
        return next((tasks[key] for key in column.task_keys if key in tasks), None)

    notes = _Notes()
    header = ["block", "benchmark", "metric"] + [c.label for c in columns]
    records, grids = [], {block: [] for block in block_order}
    for block, label, our_name, paper_name in row_specs:
        for metric in metrics:
            cells = []
            for column in columns:
                table, model, setting = column.paper
                value = (paper_value(table, model, column.method, paper_name, metric, setting)
                         if paper_name else None)
                measured = (_measure(evals, task_of(column), column.method, our_name, metric)
                            if our_name else None)
                cells.append(_Cell(measured, value, paper_name is not None))
            head = [block, label, METRIC_LABELS[metric]]
            records.append(head + [cell.text(decimals) for cell in cells])
            grids[block].append(head[1:] + [notes.short(cell, decimals) for cell in cells])
    frame = pd.DataFrame(records, columns=header)
    markdown = [(BLOCK_HEADINGS[block], _markdown_grid(header[1:], rows))
                for block, rows in grids.items() if rows]
    return frame, markdown, notes


def table3_math(evals: pd.DataFrame, tasks: dict[str, str], scale: str,
                starting_points: dict[str, str] | None = None, *,
                runs: dict[str, dict] | None = None) -> tuple[pd.DataFrame, str]:
    """Table 3: math accuracy and Exceed (% of responses over the length limit), base / GRPO / GDPO.

    Columns: ``block, benchmark, metric`` then "<our model> <method> (paper: <model>)" for the paper's
    R1-1.5B, R1-7B, Qwen3-4B × base, GRPO, GDPO ("<model> <method> (paper only: no run)" where nothing ran).
    Rows: each benchmark × (Acc, Exceed), in blocks (module docstring). ``tasks`` keys: "R1-1.5B", "R1-7B",
    "Qwen3-4B". ``runs``: see the module docstring.
    """
    _check_tasks(tasks, "table3_math")
    starting_points = starting_points or {}
    evals = _prepare(evals)
    models = TABLE_KEYS["table3_math"]
    columns = [_Column(_column_label(evals, tasks.get(model), method,
                                     _method_label(method, tasks.get(model), starting_points), model, runs),
                       (model,), method, ("3", model, ""))
               for model in models for method in ("base", Method.GRPO, Method.GDPO)]
    frame, grids, notes = _benchmark_table(evals, tasks, "math", MATH_METRICS, columns, decimals=1)
    caption = [
        (f"**Table 3. Math accuracy and Exceed (% of responses over the length limit), base / GRPO / GDPO; "
         f"scale `{scale}`.**"),
        *_legend(1),
        ("The paper: average pass@1 over 16 samples per question, length limit 4000 tokens; ours: the task's "
         "own sampling settings and length limit (see its config)."),
        _column_legend(),
        *_mapping_lines(tasks, models, scale, "Columns", runs),
        *_starting_point_lines(tasks, starting_points),
        *_run_lines(evals, tasks, ["base", Method.GRPO, Method.GDPO]),
    ]
    return frame, _assemble(caption, grids, notes)


def table4_math_conditioned(
    evals: pd.DataFrame, tasks: dict[str, str], scale: str, starting_points: dict[str, str] | None = None, *,
    runs: dict[str, dict] | None = None,
) -> tuple[pd.DataFrame, str]:
    """Table 4: the paper's R1-7B with the length reward conditioned on correctness, GRPO vs GDPO (Acc,
    Exceed %).

    Columns: ``block, benchmark, metric``, then GRPO and GDPO labelled as in :func:`table3_math`
    ("<our model> GRPO (paper: R1-7B)"); rows as in :func:`table3_math`. ``tasks`` key: "R1-7B" → our task
    trained with the conditioned length reward. ``runs``: see the module docstring.
    """
    _check_tasks(tasks, "table4_math_conditioned")
    evals = _prepare(evals)
    task = tasks.get(R1_7B)
    columns = [_Column(_column_label(evals, task, method, METHOD_LABELS[method], R1_7B, runs), (R1_7B,), method,
                       ("4", R1_7B, "")) for method in (Method.GRPO, Method.GDPO)]
    frame, grids, notes = _benchmark_table(evals, tasks, "math", MATH_METRICS, columns, decimals=1)
    caption = [
        (f"**Table 4. Length reward conditioned on correctness (paper: R1-7B): Acc / Exceed (%), GRPO vs GDPO; "
         f"scale `{scale}`.**"),
        *_legend(1),
        _column_legend(),
        *_mapping_lines(tasks, (R1_7B,), scale, "Columns", runs),
        *_run_lines(evals, tasks, [Method.GRPO, Method.GDPO]),
    ]
    return frame, _assemble(caption, grids, notes)


def table5_code(evals: pd.DataFrame, tasks: dict[str, str], scale: str,
                starting_points: dict[str, str] | None = None, *,
                runs: dict[str, dict] | None = None) -> tuple[pd.DataFrame, str]:
    """Table 5: coding (the paper's R1-7B) Pass, Exceed and Bug ratio (%) with 2 and 3 objectives.

    Columns: ``block, benchmark, metric``, then base, GRPO 2obj, GDPO 2obj, GRPO 3obj, GDPO 3obj, each
    labelled "<our model> <method> (paper: R1-7B)" as in :func:`table3_math`. Rows: each benchmark × (Pass,
    Exceed, Bug). ``tasks`` keys: "2obj" (pass + conditioned length) and "3obj" (+ bug), each → our task
    trained with those rewards; the base column comes from the 2obj task's base evaluation (the 3obj task's
    if only that one is mapped). ``runs``: see the module docstring.
    """
    _check_tasks(tasks, "table5_code")
    starting_points = starting_points or {}
    evals = _prepare(evals)
    base_task = next((tasks[key] for key in ("2obj", "3obj") if key in tasks), None)
    columns = [_Column(_column_label(evals, base_task, "base", _method_label("base", base_task, starting_points),
                                     R1_7B, runs), ("2obj", "3obj"), "base", ("5", R1_7B, ""))]
    columns += [_Column(_column_label(evals, tasks.get(setting), method, f"{METHOD_LABELS[method]} {setting}",
                                      R1_7B, runs), (setting,), method, ("5", R1_7B, setting))
                for setting in ("2obj", "3obj") for method in (Method.GRPO, Method.GDPO)]
    frame, grids, notes = _benchmark_table(evals, tasks, "code", CODE_METRICS, columns, decimals=1)
    base_source = next((key for key in ("2obj", "3obj") if key in tasks), None)
    caption = [
        (f"**Table 5. Coding (paper: R1-7B): Pass, Exceed and Bug ratio (%), 2 objectives (pass, conditioned "
         f"length) and 3 (+ bug); scale `{scale}`.**"),
        *_legend(1),
        "The paper's Taco exceed and bug ratio are not reliably known: (—).",
        _column_legend(),
        *_mapping_lines(tasks, ("2obj", "3obj"), scale, "Columns", runs),
        f"Base column: the base-model evaluation of `{tasks[base_source]}`." if base_source
        else f"Base column: {NO_RUN}.",
        *_starting_point_lines({k: v for k, v in tasks.items() if k == base_source}, starting_points),
        *_run_lines(evals, tasks, ["base", Method.GRPO, Method.GDPO]),
    ]
    return frame, _assemble(caption, grids, notes)


def write_table(df: pd.DataFrame, md: str, out_stem: str | Path) -> tuple[Path, Path]:
    """Write ``<out_stem>.csv`` (the DataFrame, no index) and ``<out_stem>.md``; returns both paths."""
    csv_path, md_path = Path(f"{out_stem}.csv"), Path(f"{out_stem}.md")
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(csv_path, index=False)
    md_path.write_text(md if md.endswith("\n") else md + "\n", encoding="utf-8")
    return csv_path, md_path
