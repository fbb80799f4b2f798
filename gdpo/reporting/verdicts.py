"""Verdict rules of the claims at the language-model scales (smoke, mini, paper), over the tidy CSVs.

The rules read ``results/<scale>/summary/eval.csv`` and ``steps.csv`` (:mod:`gdpo.reporting.aggregate`)
and the config's ``reporting:`` block, which says which task stands for which paper setup (the same
mapping the figures and tables use). Comparisons are paired by seed: for each seed present in both
methods, the difference of a task's metric (its benchmarks averaged); the mean difference gets a 95 %
Student-t interval over seeds (:func:`gdpo.reporting.stats.mean_ci` — with the 2–5 seeds of a training
grid a bootstrap cannot reach its nominal coverage). With one seed there is no interval, and a rule that
needs one says ``inconclusive``.

Each rule returns a :class:`gdpo.reporting.claims.Verdict`; a setup the config does not run, or a file or
run that is missing, gives ``not run`` with the reason — never a verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

# claims.py imports this module inside build_ledger, so importing it here is not circular.
from gdpo.reporting.claims import INCONCLUSIVE, NOT_REPRODUCED, NOT_RUN, REPRODUCED, Verdict
from gdpo.reporting.stats import mean_ci

#: Percentage points within which two methods "match" or a rate "keeps" (C4's accuracy, C9's pass rate),
#: and above which a base-to-trained rise counts as "learned" (C4's format).
MATCH_POINTS = 5.0

Interval = tuple[float, float, float]


class Evidence:
    """The tidy CSVs of one scale and its ``reporting:`` mapping, with the lookups the rules share."""

    def __init__(self, evals: pd.DataFrame | None, steps: pd.DataFrame | None, reporting: dict, scale: str,
                 eval_path: str = "eval.csv", steps_path: str = "steps.csv"):
        if evals is not None:
            missing = [c for c in ("task", "method", "seed", "metric", "value") if c not in evals.columns]
            if missing and not evals.empty:
                raise ValueError(f"{eval_path} lacks columns {missing}; it must be eval.csv of `gdpo aggregate`.")
            evals = evals.reindex(columns=list(evals.columns) + missing).dropna(subset=["value"])
        self.evals = evals
        self.steps = steps
        self.reporting = reporting or {}
        self.scale = scale
        self.eval_path, self.steps_path = eval_path, steps_path

    def tasks(self, table: str) -> dict[str, str]:
        """Paper setup label → task, for a table of the ``reporting:`` block (empty if not configured)."""
        return dict(((self.reporting.get("tables") or {}).get(table)) or {})

    def figure_task(self, figure: str) -> str | None:
        return (self.reporting.get("figures") or {}).get(figure)

    def per_seed(self, task: str, method: str, metric: str) -> pd.Series:
        """``metric`` of (task, method) per seed, averaged over the task's benchmarks that report it."""
        if self.evals is None:
            return pd.Series(dtype=float)
        rows = self.evals[(self.evals["task"] == task) & (self.evals["method"] == method)
                          & (self.evals["metric"] == metric)]
        return rows.groupby("seed")["value"].mean()

    def missing(self, task: str, methods: tuple[str, ...], metrics: tuple[str, ...]) -> str | None:
        """Why (task, methods, metrics) cannot be compared, or None."""
        if self.evals is None:
            return f"missing {self.eval_path} (the aggregate rule has not run)"
        for method in methods:
            for metric in metrics:
                if self.per_seed(task, method, metric).empty:
                    return f"{self.eval_path} has no {metric!r} for {task}/{method}"
        return None

    def paired(self, task: str, method_a: str, method_b: str, metric: str) -> tuple[Interval, int]:
        """Mean of ``metric``(a) − ``metric``(b) over the seeds both have, its 95 % t-interval, and the seed count."""
        a, b = self.per_seed(task, method_a, metric), self.per_seed(task, method_b, metric)
        differences = (a - b).dropna()
        if differences.empty:
            return (math.nan, math.nan, math.nan), 0
        return mean_ci(differences.to_numpy()), len(differences)


def fmt(interval: Interval, unit: str = " pts") -> str:
    mean, low, high = interval
    if math.isnan(low):
        return f"{mean:+.1f}{unit} (1 seed, no interval)"
    return f"{mean:+.1f}{unit} [{low:+.1f}, {high:+.1f}]"


def above(interval: Interval, margin: float = 0.0) -> bool:
    """The interval lies above ``margin`` (False without an interval)."""
    return not math.isnan(interval[1]) and interval[1] > margin


def below(interval: Interval, margin: float = 0.0) -> bool:
    """The interval lies below ``margin`` (False without an interval)."""
    return not math.isnan(interval[2]) and interval[2] < margin


def combine(outcomes: list[str]) -> str:
    """One verdict over several setups: any ``not reproduced`` wins, all ``reproduced`` reproduce, else inconclusive."""
    if NOT_REPRODUCED in outcomes:
        return NOT_REPRODUCED
    if outcomes and all(o == REPRODUCED for o in outcomes):
        return REPRODUCED
    return INCONCLUSIVE


def _not_configured(table_or_figure: str, what: str) -> Verdict:
    return Verdict("", "", NOT_RUN, f"the config's reporting: block maps no task to {table_or_figure} ({what}); "
                                    "a config's full_grid may (snakemake --config grid=full), or add the task "
                                    "and map it")


def _over_setups(evidence: Evidence, table: str, what: str, comparison: str, judge, prefix: str = "") -> Verdict:
    """Apply ``judge(label, task) -> (outcome, description)`` to every setup of ``table`` and combine the
    outcomes (:func:`combine`). ``judge`` returns a ``str`` instead when the setup's results are missing:
    that reason makes the claim ``not run``."""
    tasks = evidence.tasks(table)
    if not tasks:
        return _not_configured(table, what)
    outcomes, parts = [], []
    for label, task in tasks.items():
        judged = judge(label, task)
        if isinstance(judged, str):
            return Verdict("", comparison, NOT_RUN, judged)
        outcomes.append(judged[0])
        parts.append(judged[1])
    return Verdict(prefix + "; ".join(parts), comparison, combine(outcomes), evidence.eval_path)


def gdpo_beats_grpo(evidence: Evidence, table: str, higher: tuple[str, ...], lower: tuple[str, ...],
                    what: str) -> Verdict:
    """Shared rule of C3, C6, C8: for every setup of ``table``, the paired differences GDPO − GRPO of the
    ``higher`` metrics must lie above 0 and those of the ``lower`` metrics below 0 (95 % t-intervals over
    seeds). A setup is ``reproduced`` if all do, ``not reproduced`` if any interval lies on the wrong side
    of 0, else ``inconclusive``; setups are combined by :func:`combine`.

    """
    comparison = ("GDPO − GRPO paired by seed, 95 % t-interval: " + ", ".join(
        [f"{m} above 0" for m in higher] + [f"{m} below 0" for m in lower]) + f" (every {table} setup)")

    def judge(label: str, task: str):
        reason = evidence.missing(task, ("gdpo", "grpo"), higher + lower)
        if reason:
            return reason
        diffs = {m: evidence.paired(task, "gdpo", "grpo", m) for m in higher + lower}
        good = [above(diffs[m][0]) for m in higher] + [below(diffs[m][0]) for m in lower]
        wrong = [below(diffs[m][0]) for m in higher] + [above(diffs[m][0]) for m in lower]
        outcome = NOT_REPRODUCED if any(wrong) else REPRODUCED if all(good) else INCONCLUSIVE
        seeds = max(n for _, n in diffs.values())
        counted = f"{seeds} seed" + ("" if seeds == 1 else "s")
        return outcome, f"{label} ({task}, {counted}): " + ", ".join(f"{m} {fmt(d)}" for m, (d, _) in diffs.items())

    return _over_setups(evidence, table, what, comparison, judge, prefix="GDPO − GRPO: ")


def rule_c3(evidence: Evidence) -> Verdict:
    """C3: tool calling, GDPO − GRPO of BFCL average accuracy (``avg``) and correct format (``format``), both
    above 0 (rule of :func:`gdpo_beats_grpo` over Table 1's setups)."""
    return gdpo_beats_grpo(evidence, "table1", ("avg", "format"), (), "tool calling")


def rule_c4(evidence: Evidence) -> Verdict:
    """C4: GRPO w/o std never learns format. Per Table 1 setup, with the base model's format rate as
    reference: ``reproduced`` if GRPO w/o std's format rise over the base stays below ``MATCH_POINTS``
    (interval's upper end) while GDPO's format beats GRPO w/o std's (paired interval above 0);
    ``not reproduced`` if GRPO w/o std's rise lies above ``MATCH_POINTS``; else ``inconclusive``."""
    comparison = (f"GRPO w/o std format − base format: upper end below {MATCH_POINTS:g} pts; "
                  "GDPO − GRPO w/o std format above 0 (95 % t-intervals over seeds)")

    def judge(label: str, task: str):
        reason = evidence.missing(task, ("grpo_nostd", "gdpo", "base"), ("format",))
        if reason:
            return reason
        base = float(evidence.per_seed(task, "base", "format").mean())
        nostd = evidence.per_seed(task, "grpo_nostd", "format")
        rise = mean_ci((nostd - base).to_numpy())  # one seed: NaN bounds, so inconclusive
        gap, _ = evidence.paired(task, "gdpo", "grpo_nostd", "format")
        if above(rise, MATCH_POINTS):
            outcome = NOT_REPRODUCED
        elif below(rise, MATCH_POINTS) and above(gap):
            outcome = REPRODUCED
        else:
            outcome = INCONCLUSIVE
        return outcome, (f"{label} ({task}): base format {base:.1f} %, GRPO w/o std rise {fmt(rise)}, "
                         f"GDPO − GRPO w/o std {fmt(gap)}")

    return _over_setups(evidence, "table1", "tool calling", comparison, judge)


def _curve_task(evidence: Evidence, figure: str, what: str, comparison: str) -> str | Verdict:
    """The task a curve figure stands on, or the ``not run`` verdict saying why the curves are missing."""
    task = evidence.figure_task(figure)
    if task is None:
        return _not_configured(figure, what)
    if evidence.steps is None:
        return Verdict("", comparison, NOT_RUN, f"missing {evidence.steps_path} (the aggregate rule has not run)")
    return task


def _event_rate_verdict(differences: np.ndarray) -> tuple[Interval, str]:
    """Per-seed differences of a 0/1 event between two methods → (mean with 95 % t-interval, verdict):
    ``reproduced`` above 0, ``not reproduced`` if the upper end is ≤ 0, else ``inconclusive``. The same
    difference on every seed (two or more) has no spread: its interval is that point. One seed gives no
    interval and ``inconclusive``."""
    if differences.size > 1 and np.all(differences == differences[0]):
        interval = (float(differences[0]),) * 3
    else:
        interval = mean_ci(differences)  # one seed: NaN bounds, so inconclusive
    verdict = REPRODUCED if above(interval) else NOT_REPRODUCED if interval[2] <= 0 else INCONCLUSIVE
    return interval, verdict


def rule_c5(evidence: Evidence) -> Verdict:
    """C5: GRPO diverges on math, GDPO does not. On Fig. 5's task, the divergence event per seed
    (:func:`gdpo.reporting.curves.divergence_steps`: a sustained fall of correctness while the max length
    climbs); the paired difference of the event (GRPO − GDPO, 1 = diverged) gets a 95 % t-interval.
    ``reproduced`` if it lies above 0; ``not reproduced`` if its upper end is ≤ 0 (GDPO diverges at least
    as often, e.g. neither ever does — or every seed agrees); else ``inconclusive``."""
    from gdpo.reporting import curves

    comparison = "divergence rate GRPO − GDPO paired by seed, 95 % t-interval above 0"
    task = _curve_task(evidence, "fig5", "math curves", comparison)
    if isinstance(task, Verdict):
        return task
    try:
        events = curves.divergence_steps(evidence.steps, task, methods=("grpo", "gdpo"))
    except ValueError as error:
        return Verdict("", comparison, NOT_RUN, str(error))
    diverged = events.assign(event=events["divergence_step"].notna().astype(float)).pivot_table(
        index="seed", columns="method", values="event")
    if not {"grpo", "gdpo"} <= set(diverged.columns):
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path} lacks grpo or gdpo runs of {task}")
    differences = (diverged["grpo"] - diverged["gdpo"]).dropna().to_numpy()
    if differences.size == 0:
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path}: no seed has both grpo and gdpo runs of {task}")
    interval, verdict = _event_rate_verdict(differences)
    steps_run = int(events["n_steps"].max())
    measured = (f"{task}: diverged GRPO {int(diverged['grpo'].sum())}/{len(diverged)} seeds, GDPO "
                f"{int(diverged['gdpo'].sum())}/{len(diverged)} (over {steps_run} steps; the paper's GRPO "
                f"diverged near step 400); difference {fmt(interval, '')}")
    return Verdict(measured, comparison, verdict, evidence.steps_path)


def rule_c6(evidence: Evidence) -> Verdict:
    """C6: the math table, GDPO − GRPO of accuracy above 0 and of Exceed below 0 (:func:`gdpo_beats_grpo`
    over Table 3's setups)."""
    return gdpo_beats_grpo(evidence, "table3", ("acc",), ("exceed",), "math")


def rule_c8(evidence: Evidence) -> Verdict:
    """C8: with the length reward conditioned on correctness, GDPO − GRPO accuracy above 0 and Exceed
    below 0 (:func:`gdpo_beats_grpo` over Table 4's setups)."""
    return gdpo_beats_grpo(evidence, "table4", ("acc",), ("exceed",), "math, conditioned length")


def rule_c7(evidence: Evidence) -> Verdict:
    """C7: lowering the length weight to 0.75 or 0.5 barely changes accuracy and Exceed; 0.25 does. For
    GRPO and GDPO on Fig. 6's plain tasks: the difference of each weight's mean to weight 1's (Welch
    t-interval over seeds). "Barely": the interval lies within ±``MATCH_POINTS``; "changes": it lies
    outside. ``reproduced`` if 0.75 and 0.5 barely change both metrics and 0.25 changes one, for both
    methods; ``not reproduced`` if 0.75 or 0.5 changes a metric or 0.25 barely changes both; else
    ``inconclusive``."""
    sweep = (evidence.reporting.get("figures") or {}).get("fig6") or {}
    plain = {float(w): v.get("plain") for w, v in sweep.items() if v.get("plain")}
    if not {1.0, 0.75, 0.5, 0.25} <= set(plain):
        return _not_configured("fig6", "plain tasks at length weights 1, 0.75, 0.5 and 0.25")
    comparison = f"weight w vs 1: 0.75 and 0.5 within ±{MATCH_POINTS:g} pts, 0.25 outside (acc or exceed), both methods"
    outcomes, parts = [], []
    for method in ("grpo", "gdpo"):
        reason = next(filter(None, (evidence.missing(plain[w], (method,), ("acc", "exceed")) for w in plain)), None)
        if reason:
            return Verdict("", comparison, NOT_RUN, reason)
        diffs = {}
        for weight in (0.75, 0.5, 0.25):
            for metric in ("acc", "exceed"):
                a = evidence.per_seed(plain[weight], method, metric).to_numpy()
                b = evidence.per_seed(plain[1.0], method, metric).to_numpy()
                diffs[(weight, metric)] = _welch(a, b)
        barely = lambda d: not math.isnan(d[1]) and -MATCH_POINTS < d[1] and d[2] < MATCH_POINTS
        changes = lambda d: below(d, -MATCH_POINTS) or above(d, MATCH_POINTS)
        if any(changes(diffs[(w, m)]) for w in (0.75, 0.5) for m in ("acc", "exceed")) or all(
                barely(diffs[(0.25, m)]) for m in ("acc", "exceed")):
            outcomes.append(NOT_REPRODUCED)
        elif all(barely(diffs[(w, m)]) for w in (0.75, 0.5) for m in ("acc", "exceed")) and any(
                changes(diffs[(0.25, m)]) for m in ("acc", "exceed")):
            outcomes.append(REPRODUCED)
        else:
            outcomes.append(INCONCLUSIVE)
        parts.append(f"{method}: " + ", ".join(f"w{w:g} {m} {fmt(d)}" for (w, m), d in diffs.items()))
    return Verdict("vs weight 1; " + "; ".join(parts), comparison, combine(outcomes), evidence.eval_path)


def _welch(a: np.ndarray, b: np.ndarray) -> Interval:
    """Mean difference a − b of two independent samples with its 95 % Welch t-interval (NaN bounds if either has one value)."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return float(np.mean(a) - np.mean(b)), math.nan, math.nan
    result = stats.ttest_ind(a, b, equal_var=False)
    low, high = result.confidence_interval(0.95)
    return float(np.mean(a) - np.mean(b)), float(low), float(high)


def rule_c9(evidence: Evidence) -> Verdict:
    """C9: code, GDPO keeps the pass rate and lowers Exceed (and the bug ratio where the setup has the bug
    reward, Table 5's ``3obj``). Per setup, paired GDPO − GRPO with 95 % t-intervals: ``reproduced`` if pass
    stays above −``MATCH_POINTS`` (interval's lower end) and Exceed (and bug, 3obj) lie below 0;
    ``not reproduced`` if pass lies below −``MATCH_POINTS`` or Exceed (or bug) lies above 0; else
    ``inconclusive``."""
    comparison = (f"GDPO − GRPO paired by seed, 95 % t-interval: pass above −{MATCH_POINTS:g} pts, exceed below 0, "
                  "bug below 0 (3obj)")

    def judge(label: str, task: str):
        lowered = ("exceed", "bug") if label == "3obj" else ("exceed",)
        reason = evidence.missing(task, ("gdpo", "grpo"), ("pass",) + lowered)
        if reason:
            return reason
        diffs = {m: evidence.paired(task, "gdpo", "grpo", m)[0] for m in ("pass",) + lowered}
        if below(diffs["pass"], -MATCH_POINTS) or any(above(diffs[m]) for m in lowered):
            outcome = NOT_REPRODUCED
        elif above(diffs["pass"], -MATCH_POINTS) and all(below(diffs[m]) for m in lowered):
            outcome = REPRODUCED
        else:
            outcome = INCONCLUSIVE
        return outcome, f"{label} ({task}): " + ", ".join(f"{m} {fmt(d)}" for m, d in diffs.items())

    return _over_setups(evidence, "table5", "code", comparison, judge, prefix="GDPO − GRPO: ")


def rule_c10(evidence: Evidence) -> Verdict:
    """C10: GDPO without the batch step sometimes fails to converge. On Fig. 8's task, per seed, a run
    "fails to converge" when its final correctness-type reward (the mean of the last quarter of its steps)
    is not above its first step's; the paired difference of that event (gdpo_nobn − gdpo) gets a 95 %
    t-interval. ``reproduced`` if it lies above 0; ``not reproduced`` if its upper end is ≤ 0; else
    ``inconclusive``."""
    comparison = "failure-to-converge rate gdpo_nobn − gdpo paired by seed, 95 % t-interval above 0"
    task = _curve_task(evidence, "fig8", "GDPO with and without the batch step", comparison)
    if isinstance(task, Verdict):
        return task
    rows = evidence.steps[evidence.steps["task"] == task]
    metric = next((c for c in ("rewards/correct/mean", "rewards/pass/mean", "reward") if c in rows and rows[c].notna().any()), None)
    if metric is None or not {"gdpo", "gdpo_nobn"} <= set(rows["method"]):
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path} lacks gdpo and gdpo_nobn runs of {task}")
    failed = {}
    for (method, seed), run in rows.groupby(["method", "seed"]):
        values = run.sort_values("step")[metric].to_numpy(dtype=float)
        tail = values[-max(1, len(values) // 4):]
        failed[(method, seed)] = float(not np.nanmean(tail) > values[0])
    frame = pd.Series(failed).unstack(0)
    differences = (frame["gdpo_nobn"] - frame["gdpo"]).dropna().to_numpy()
    if differences.size == 0:
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path}: no seed has both gdpo and gdpo_nobn runs of {task}")
    interval, verdict = _event_rate_verdict(differences)
    measured = (f"{task} ({metric}): failed gdpo_nobn {int(frame['gdpo_nobn'].sum())}/{frame['gdpo_nobn'].count()}, "
                f"gdpo {int(frame['gdpo'].sum())}/{frame['gdpo'].count()} seeds; difference {fmt(interval, '')}")
    return Verdict(measured, comparison, verdict, evidence.steps_path)


#: Rules by claim (C11 combines C3, C6 and C9: see :func:`rule_c11`).
RULES: dict[str, Callable[[Evidence], Verdict]] = {
    "C3": rule_c3, "C4": rule_c4, "C5": rule_c5, "C6": rule_c6, "C7": rule_c7, "C8": rule_c8, "C9": rule_c9,
    "C10": rule_c10,
}


def rule_c11(family_verdicts: dict[str, str]) -> Verdict:
    """C11: the gains hold in all three families. From this scale's verdicts of C3 (tool calling), C6 (math)
    and C9 (code): ``not run`` if any is not run; otherwise combined by :func:`combine`."""
    comparison = "C3, C6 and C9 at this scale, combined (all reproduced → reproduced; any not reproduced → not reproduced)"
    measured = ", ".join(f"{claim} {verdict}" for claim, verdict in family_verdicts.items())
    if NOT_RUN in family_verdicts.values():
        missing = [claim for claim, verdict in family_verdicts.items() if verdict == NOT_RUN]
        return Verdict(measured, comparison, NOT_RUN, f"{', '.join(missing)} not run at this scale")
    return Verdict(measured, comparison, combine(list(family_verdicts.values())), "this ledger's C3, C6 and C9 rows")
