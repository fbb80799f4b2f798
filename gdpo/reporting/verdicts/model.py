"""Claim rules at the language-model scales (smoke, mini, cpu-evidence, paper): C3–C11 on the workflow's
``eval.csv`` and ``steps.csv`` (:class:`~gdpo.reporting.verdicts.model_evidence.Evidence`).

Every rule is split in two: the rule reads the evidence into per-seed samples and checks the claim's minimum; a
pure ``decide_cN`` of :mod:`.decisions` turns the samples into the verdict. Each rule: ``(evidence) -> Verdict``;
C11, which combines other claims, also gets their verdicts at this scale. Each rule is registered with its power
design (:mod:`.registry`: what the calibration simulates for it) and, for a table rule read by
:func:`judge_table`, its validity conditions.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from gdpo.curve_events import LENGTH_RISE, detect_divergence, fails_to_converge
from gdpo.methods import Method
from gdpo.plan import model_display_name
from gdpo.reporting import curves
from gdpo.reporting import paper_numbers as pn
from gdpo.reporting.contract import (
    BARELY_MARGIN, CLAIMS_BY_ID, MIN_SEEDS, NO_FORMAT_RATE, NOT_RUN, NOT_TESTED, PARITY_MARGIN, RATE, UNDERPOWERED,
    MeasuredInterval, Verdict, combine, paper_effect,
)
from gdpo.reporting.stats import mean_ci
from gdpo.reporting.tables import METRIC_LABELS, TOOL_BEHAVIOUR_METRICS
from gdpo.reporting.verdicts.decisions import (
    C7_CHANGE, EVENT_EFFECTS, decide_c3, decide_c4, decide_c6, decide_c7, decide_c8, decide_c9, decide_events,
    parts_text, smallest_detectable_rate,
)
from gdpo.reporting.verdicts.model_evidence import BASE, Evidence, model_size, relabel_setups
from gdpo.reporting.verdicts.registry import (
    EventPower, NoPower, Scale, TablePower, claim_rule, design_of, rule_for, table_setups,
)
from gdpo.reporting.verdicts.samples import seeds_compared
from gdpo.reporting.verdicts import validity
from gdpo.reporting.verdicts.validity import Condition


# --------------------------------------------------------------------------------------------------
# Reading a table claim's cells
# --------------------------------------------------------------------------------------------------


def _not_configured(table_or_figure: str, what: str) -> Verdict:
    return Verdict("", "", NOT_RUN, f"the config's reporting: block maps no task to {table_or_figure} ({what}); "
                                    "a config's full_grid may (snakemake --config grid=full), or add the task "
                                    "and map it")


@dataclasses.dataclass
class Gathered:
    """What a table claim's rule read: the cells, the setups with their tasks, what falls short, the validity
    conditions checked so far (:mod:`.validity`; the rule adds its own) and each setup's collapse rates."""

    cells: dict
    setups: dict[str, str]
    shortfall: dict[str, list[str]]
    labels: list[str]
    conditions: list[Condition] = dataclasses.field(default_factory=list)
    collapse: dict[str, str] = dataclasses.field(default_factory=dict)


def gather(evidence: Evidence, claim_id: str, table: str, methods: Sequence[str], metrics: Sequence[str],
           setups: dict[str, str] | None = None) -> Gathered | Verdict:
    """Read every (setup, method, metric) cell of a table claim, or the ``not run`` verdict saying what is
    missing; note per setup what falls short of the claim's minimum."""
    setups = evidence.tasks(table) if setups is None else setups
    if not setups:
        return _not_configured(table, CLAIMS_BY_ID[claim_id].family)
    minimum = CLAIMS_BY_ID[claim_id].minimum
    cells, shortfall, labels, conditions, collapse = {}, {}, [], [], {}
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
        # Collapse is an outcome of the method: a collapsed run counts with its measured scores and in its
        # method's collapse rate (dropping it would select seeds on their outcome); only where every compared
        # method collapsed for the most part is there nothing left to compare (a validity condition).
        counts = validity.collapse_counts(evidence, task, methods)
        conditions.append(validity.collapse_leaves_comparison(claim_id, counts, setup))
        unjudged = validity.unjudged_runs(evidence, task, methods)
        short = validity.runs_ended_early(evidence, task, methods)
        collapse[setup] = f"collapsed runs (gate): {validity.collapse_rates_text(counts)}" + (
            f"; not judged by the gate: {'; '.join(unjudged)}" if unjudged else "") + (
            f"; ended before the last step, counted with their scores: {', '.join(short)}" if short else "")
        # Runs compared (the base model's evaluation among them) must share the start model: a run trained from
        # other weights (a warm-up made on another machine) measures those weights too.
        starts = evidence.start_models(task, methods)
        if len(starts) > 1:
            shortfall[setup].append("one start model behind every compared run (start weights differ: " + "; ".join(
                f"{digest[:12]}… for {', '.join(runs)}" for digest, runs in starts.items()) + ")")
        labels.append(evidence.run_label(task, methods, setup))
    return Gathered(cells, setups, shortfall, labels, conditions, collapse)


def _table_verdict(evidence: Evidence, claim_id: str, gathered: Gathered | Verdict,
                   decide: Callable, comparison: str) -> Verdict:
    """The table claim's verdict from what :func:`gather` read; the minimum's seed count applies to each setup's
    own pairs (:func:`gather`), also where a rule pools setups (C6 pools them as independent samples, so no seed
    need be common to two setups). A setup run on another model than the paper's is named with it
    (:func:`_name_what_ran`)."""
    if isinstance(gathered, Verdict):
        return dataclasses.replace(gathered, comparison=comparison)
    labels = evidence.setup_labels(gathered.setups)
    return _name_what_ran(_decided(evidence, claim_id, gathered, decide, comparison, labels), labels)


def _name_what_ran(verdict: Verdict, labels: Mapping[str, str]) -> Verdict:
    """``verdict`` with each setup (``Qwen2.5-1.5B``) named by its label (``labels``: setup →
    :func:`~gdpo.reporting.verdicts.model_evidence.setup_label`) where the row says what it measured, decided and
    checked. Not in the run column (it names the model first) nor in the intervals (data keyed by setup)."""
    conditions = tuple(dataclasses.replace(c, setup=labels.get(c.setup, c.setup),
                                           text=relabel_setups(c.text, labels)) for c in verdict.conditions)
    return dataclasses.replace(verdict, measured_value=relabel_setups(verdict.measured_value, labels),
                               comparison=relabel_setups(verdict.comparison, labels),
                               parts=relabel_setups(verdict.parts, labels), conditions=conditions)


def _decided(evidence: Evidence, claim_id: str, gathered: Gathered, decide: Callable, comparison: str,
             labels: Mapping[str, str]) -> Verdict:
    """:func:`_table_verdict` on what :func:`gather` read, its setups named as in the paper."""
    # The validity conditions are data checked before any interval: a failed one leaves the claim (or the part
    # it gates) not tested, whatever the intervals say.
    conditions = tuple(gathered.conditions)
    decision = decide(gathered.cells, list(gathered.setups))
    outcome, part_verdicts, note = validity.gated(decision.parts, conditions)
    text = decision.text
    collapse = "; ".join(f"{s}: {c}" if len(gathered.collapse) > 1 else c for s, c in gathered.collapse.items())
    if collapse:
        text += f" [{collapse}]"
    for setup, task in gathered.setups.items():  # name what ran; the paper's setup it stands for beside it
        shown = labels.get(setup, setup)
        text = text.replace(f"{setup}: ", f"{task} ({shown}): " if shown != setup else
                            f"{task} (as the paper's {setup}): ")
    run = "; ".join(gathered.labels)
    design = design_of(claim_id)
    paper_setups = design.paper_setups if isinstance(design, TablePower) else ()
    absent = [s for s in paper_setups if s not in gathered.setups]
    if absent:
        comparison += f" — judged on {', '.join(gathered.setups)} only; the paper's {', '.join(absent)} not mapped"
    short = {s: list(m) for s, m in gathered.shortfall.items() if m}
    parts = parts_text(part_verdicts)
    if outcome == NOT_TESTED:
        return Verdict(f"not tested: {validity.failed_text(conditions)} — measured, not read as a decision: {text}",
                       comparison, NOT_TESTED, evidence.eval_path, run=run, parts=parts,
                       intervals=decision.intervals, conditions=conditions)
    if short:
        needs = "; ".join(f"{s} needs " + ", ".join(m) for s, m in short.items())
        return Verdict(f"{text} — not decided: {needs}", comparison, UNDERPOWERED, evidence.eval_path, run=run,
                       parts=parts, intervals=decision.intervals, conditions=conditions)
    if note:
        text = f"{text} — {note}: {validity.failed_text(conditions)}"
    return Verdict(text, comparison, outcome, evidence.eval_path, run=run, parts=parts,
                   intervals=decision.intervals, conditions=conditions)


def judge_table(evidence: Evidence, claim_id: str, comparison: str, setups: dict[str, str] | None = None
                ) -> Verdict:
    """A table claim's verdict as its registration says: the cells of its power design
    (:class:`~.registry.TablePower`: the table, compared methods and metrics; ``setups`` default: the design's
    setups in the config's ``reporting:`` block) read by :func:`gather`, the rule's validity conditions added
    (``condition(evidence, claim_id, gathered)``), then the design's decision (:func:`_table_verdict`)."""
    rule = rule_for(claim_id, Scale.MODEL)
    design = rule.design
    if setups is None:
        setups = design.setups_in(evidence.reporting, lambda task, method: bool(evidence.seeds(task, method)))
    gathered = gather(evidence, claim_id, design.source, design.methods, design.metrics_for(list(setups)), setups)
    if not isinstance(gathered, Verdict):
        for condition in rule.conditions:
            gathered.conditions += condition(evidence, claim_id, gathered)
    return _table_verdict(evidence, claim_id, gathered, design.decide, comparison)


def _tool_behaviour(evidence: Evidence, setups: dict[str, str], methods: Sequence[str]) -> str:
    """What the compared tool-calling policies do beside BFCL's averages (means over seeds), e.g.
    ``"Calls made: grpo 80.0 %, gdpo 75.0 %; AST acc. (calls): grpo 20.0 %, gdpo 25.0 %; No parsable call
    (no-call items): grpo 40.0 %, gdpo 55.0 %"`` (the last two on the items that expect no call): Table 1's
    behaviour columns with their labels (:data:`~gdpo.reporting.tables.TOOL_BEHAVIOUR_METRICS`); "" when
    eval.csv has none of them (evaluations made before these metrics)."""
    if evidence.evals is None:
        return ""
    parts = []
    for setup, task in setups.items():
        for metric in TOOL_BEHAVIOUR_METRICS:
            label = METRIC_LABELS[metric]
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


# --------------------------------------------------------------------------------------------------
# Table claims (C3, C4, C6, C7, C8, C9)
# --------------------------------------------------------------------------------------------------


def _declining_conditions(evidence: Evidence, claim_id: str, gathered: Gathered) -> list[Condition]:
    """C3's format part: each setup's training data holds items that expect no call."""
    conditions = []
    for setup, task in gathered.setups.items():
        ran = evidence.runs.get(task) or {}
        conditions.append(validity.declining_trainable(
            "C3", ran.get("decline_share"), ran.get("train_data"), setup, recorded="decline_share" in ran))
    return conditions


def _reward_conditions(evidence: Evidence, claim_id: str, gathered: Gathered) -> list[Condition]:
    """Every reward varying within training groups in the compared methods' runs, pooled, per setup
    (:func:`.validity.rewards_vary`)."""
    methods = [m for m in design_of(claim_id).methods if m != BASE]
    return [validity.rewards_vary(claim_id, validity.reward_variation_shares(evidence.steps, task, methods), methods,
                                  setup)
            for setup, task in gathered.setups.items()]


def _estimator_conditions(evidence: Evidence, claim_id: str, gathered: Gathered) -> list[Condition]:
    """GDPO's and GRPO's advantages differing: two or more rewards varying together in the compared methods'
    training groups, pooled, per setup (:func:`.validity.estimators_differ`)."""
    methods = [m for m in design_of(claim_id).methods if m != BASE]
    return [validity.estimators_differ(claim_id, validity.several_varying_share(evidence.steps, task, methods),
                                       methods, setup)
            for setup, task in gathered.setups.items()]


def _gains_conditions(evidence: Evidence, claim_id: str, gathered: Gathered, methods: Sequence[str],
                      part: str) -> list[Condition]:
    """Some compared method's mean BFCL avg above the start's, per setup (:func:`.validity.start_exceeded`): the
    avg part gated is ``part``."""
    conditions = []
    for setup, task in gathered.setups.items():
        start = evidence.sample(task, BASE, "avg")
        conditions.append(validity.start_exceeded(
            claim_id, validity.method_means(evidence, task, methods, "avg"),
            float(np.mean(start.values)) if len(start) else math.nan, setup, part=part))
    return conditions


#: C3's power design: Table 1's setups, GDPO against GRPO on BFCL avg and format.
C3_DESIGN = TablePower("table1", (Method.GDPO, Method.GRPO), ("avg", "format"),
                       functools.partial(decide_c3, claim_id="C3"), paper_tables=("1", "2"),
                       paper_setups=(pn.QWEN25_1_5B, pn.QWEN25_3B))


@claim_rule("C3", Scale.MODEL, design=C3_DESIGN, conditions=(
    _declining_conditions, _reward_conditions, _estimator_conditions,
    functools.partial(_gains_conditions, methods=(Method.GDPO, Method.GRPO), part="avg")))
def judge_c3(evidence: Evidence) -> Verdict:
    """C3 (Table 1): :func:`decide_c3` on every mapped setup (:func:`judge_table`; conditions: declining is
    trained, :func:`.validity.declining_trainable`; both rewards vary, :func:`.validity.rewards_vary`, and vary
    together, :func:`.validity.estimators_differ`; the avg part where training raises avg above the start's,
    :func:`.validity.start_exceeded`).

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
    comparison = "GDPO − GRPO paired by seed: BFCL avg and format above 0 (every Table 1 setup)"
    verdict = judge_table(evidence, "C3", comparison)
    return _with_behaviour(verdict, _tool_behaviour(evidence, evidence.tasks("table1"),
                                                    ("base", Method.GRPO, Method.GDPO)))


def _c4_accuracy_gap(setup: str) -> float:
    """The paper's GRPO w/o std − GRPO avg accuracy for a setup (Table 2), 0 where the paper has none."""
    try:
        return paper_effect("C4", setup, "avg", (Method.GRPO_NOSTD, Method.GRPO))
    except KeyError:
        return 0.0


def _c4_shift(setup: str, method: str, metric: str, reference: float) -> float:
    """Under the claim: w/o std's format at 0 % (its reference is the base model's), its accuracy GRPO's + the
    paper's gap."""
    if method != Method.GRPO_NOSTD:
        return 0.0
    return -reference if metric == "format" else _c4_accuracy_gap(setup)


#: C4's power design: the Table 1 setups that train GRPO w/o std; its format against the base model's (and
#: 0 %), its avg accuracy against GRPO's.
C4_DESIGN = TablePower(
    "table1", (Method.GRPO_NOSTD, Method.GRPO, BASE), ("format", "avg"), decide_c4,
    setups=lambda reporting, trains: {s: t for s, t in table_setups(reporting, "table1").items()
                                      if trains(t, Method.GRPO_NOSTD)},
    reference=lambda setup, method, metric: ((setup, BASE, metric) if metric == "format"
                                             else (setup, Method.GRPO, metric)),
    shift=_c4_shift,
    compared=lambda setups, metrics: [
        pair for s in setups for pair in (((s, Method.GRPO_NOSTD, "format"), (s, BASE, "format")),
                                          ((s, Method.GRPO_NOSTD, "avg"), (s, Method.GRPO, "avg")))],
    seed_pairs=lambda setups, metrics: [[((s, Method.GRPO_NOSTD, r), (s, Method.GRPO, r))]
                                        for s in setups for r in metrics],
    paper_tables=("1", "2"), paper_setups=(pn.QWEN25_1_5B,))


@claim_rule("C4", Scale.MODEL, design=C4_DESIGN)
def judge_c4(evidence: Evidence) -> Verdict:
    """C4 (Table 2): :func:`decide_c4` on the Table 1 setups that train GRPO w/o std (the paper trains it at
    1.5B only); ``not run`` if none does. Conditions: the start's format below 10 %
    (:func:`.validity.start_format`), both rewards varying within training groups (:func:`.validity.rewards_vary`),
    and the parity part only where training raises avg above the start's (:func:`.validity.start_exceeded`).

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
    comparison = (f"GRPO w/o std: format below the base model's and below {NO_FORMAT_RATE:g} %, avg accuracy "
                  f"within ±{PARITY_MARGIN:g} pts of GRPO's")
    setups = evidence.tasks("table1")
    if not setups:
        return dataclasses.replace(_not_configured("table1", "tool calling"), comparison=comparison)
    if evidence.evals is not None:
        setups = {s: t for s, t in setups.items() if evidence.seeds(t, Method.GRPO_NOSTD)}
    if not setups:
        return Verdict("", comparison, NOT_RUN, f"{evidence.eval_path}: no Table 1 task trains grpo_nostd "
                                                "(the paper trains it at 1.5B; add it to the task's methods)")
    gathered = gather(evidence, "C4", "table1", (Method.GRPO_NOSTD, Method.GRPO, "base"), ("format", "avg"),
                      setups)
    if not isinstance(gathered, Verdict):
        for setup in gathered.setups:
            start = gathered.cells[(setup, "base", "format")].values
            gathered.conditions.append(validity.start_format("C4", float(start[0]) if len(start) else math.nan, setup))
        gathered.conditions += _reward_conditions(evidence, "C4", gathered)
        gathered.conditions += _gains_conditions(evidence, "C4", gathered, (Method.GRPO_NOSTD, Method.GRPO),
                                                 part="avg − GRPO's")
    verdict = _table_verdict(evidence, "C4", gathered, decide_c4, comparison)
    return _with_behaviour(verdict,
                           _tool_behaviour(evidence, setups, ("base", Method.GRPO, Method.GRPO_NOSTD)))


def _room_conditions(evidence: Evidence, claim_id: str, gathered: Gathered, pooled: bool,
                     start_kept: bool = False) -> list[Condition]:
    """C6 / C8: accuracy off ceiling and floor, and some run exceeding, over each setup (``pooled``: over all
    setups together, for a rule that pools them into one accuracy and one Exceed part); with ``start_kept`` (C6),
    accuracy kept against the start's where every setup evaluated its base model."""
    methods = (Method.GDPO, Method.GRPO)
    groups = {"": list(gathered.setups)} if pooled else {s: [s] for s in gathered.setups}
    conditions = []
    for label, setups in groups.items():
        means = {m: float(np.mean([np.mean(gathered.cells[(s, m, "acc")].values) for s in setups])) for m in methods}
        top = max(float(np.max(gathered.cells[(s, m, "exceed")].values)) for s in setups for m in methods)
        conditions += [validity.accuracy_band(claim_id, means, label), validity.exceed_room(claim_id, top, label)]
        if start_kept:
            starts = [evidence.sample(gathered.setups[s], BASE, "acc") for s in setups]
            start = float(np.mean([np.mean(v.values) for v in starts])) if all(len(v) for v in starts) else math.nan
            conditions.append(validity.accuracy_kept(claim_id, means, start, label))
    return conditions


#: C6's power design: Table 3's setups, GDPO against GRPO on accuracy and Exceed, the setups pooled as
#: independent samples (each on its own pairs).
C6_DESIGN = TablePower("table3", (Method.GDPO, Method.GRPO), ("acc", "exceed"),
                       functools.partial(decide_c6, claim_id="C6"), pooled=True, paper_tables=("3",),
                       paper_setups=(pn.R1_1_5B, pn.R1_7B, pn.QWEN3_4B))


# C6 pools its setups: one accuracy part and one Exceed part, their room checked over all setups together.
@claim_rule("C6", Scale.MODEL, design=C6_DESIGN, conditions=(
    functools.partial(_room_conditions, pooled=True, start_kept=True), _reward_conditions, _estimator_conditions))
def judge_c6(evidence: Evidence) -> Verdict:
    """C6 (Table 3): :func:`decide_c6` over the mapped setups (:func:`judge_table`; conditions: accuracy off
    ceiling and floor, some run exceeding, over the setups pooled; both rewards varying within training groups,
    and together, per setup, :func:`.validity.rewards_vary` and :func:`.validity.estimators_differ`).

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
    comparison = "GDPO − GRPO paired by seed, averaged over Table 3's setups: accuracy above 0, Exceed below 0"
    # Pairs by seed only within a setup; the setups are independent samples, each needing its own ≥ 3 pairs
    # (gather's minimum per setup), whatever their seeds' labels.
    return judge_table(evidence, "C6", comparison)


#: C8's power design: Table 4's setups, GDPO against GRPO on accuracy and Exceed (conditioned length reward).
C8_DESIGN = TablePower("table4", (Method.GDPO, Method.GRPO), ("acc", "exceed"),
                       functools.partial(decide_c8, claim_id="C8"), paper_tables=("4",), paper_model=pn.R1_7B,
                       paper_setups=(pn.R1_7B,))


@claim_rule("C8", Scale.MODEL, design=C8_DESIGN, conditions=(functools.partial(_room_conditions, pooled=False),))
def judge_c8(evidence: Evidence) -> Verdict:
    """C8 (Table 4): :func:`decide_c8` on every mapped setup (:func:`judge_table`; conditions: accuracy off
    ceiling and floor, some run exceeding, per setup).

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
    comparison = "GDPO − GRPO paired by seed, conditioned length reward: accuracy above 0, Exceed below 0"
    return judge_table(evidence, "C8", comparison)


#: C9's power design: Table 5's setups (only with the 3-objective one, where the claim's lower Exceed and bug
#: ratio are shown), GDPO against GRPO on pass, Exceed and (at 3 objectives) bug ratio.
C9_DESIGN = TablePower(
    "table5", (Method.GDPO, Method.GRPO),
    lambda setups: ("pass", "exceed", "bug") if "3obj" in setups else ("pass", "exceed"),
    functools.partial(decide_c9, claim_id="C9"),
    setups=lambda reporting, trains: (found if "3obj" in (found := table_setups(reporting, "table5")) else {}),
    paper_tables=("5",), paper_model=pn.R1_7B, paper_settings=True, paper_setups=("2obj", "3obj"))


@claim_rule("C9", Scale.MODEL, design=C9_DESIGN)
def judge_c9(evidence: Evidence) -> Verdict:
    """C9 (Table 5): :func:`decide_c9` on every mapped setup (``2obj``, ``3obj``).

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
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
    return judge_table(evidence, "C9", comparison, setups)


#: The length weights of C7's sweep (Fig. 6), weight 1 the reference.
C7_WEIGHTS = ("1", "0.75", "0.5", "0.25")


def _c7_setups(reporting: Mapping, trains: Callable[[str, str], bool]) -> dict[str, str]:
    """Weight → plain-reward task of ``reporting.figures.fig6``; empty unless every weight of the sweep is
    mapped."""
    sweep = ((reporting or {}).get("figures") or {}).get("fig6") or {}
    setups = {f"{float(w):g}": v.get("plain") for w, v in sweep.items() if (v or {}).get("plain")}
    return setups if set(C7_WEIGHTS) <= set(setups) else {}


#: C7's power design: each weight's runs against weight 1's (across tasks), GRPO and GDPO; the alternative is
#: ours (the paper gives no numbers): weight 0.25 moves accuracy by :data:`~.decisions.C7_CHANGE`, the others
#: nothing. Reference rates: R1-7B's Table 3 values, the model the paper's sweep used.
C7_DESIGN = TablePower(
    "fig6", (Method.GRPO, Method.GDPO), ("acc", "exceed"), lambda cells, setups: decide_c7(cells),
    setups=_c7_setups, reference=lambda setup, method, metric: (C7_WEIGHTS[0], method, metric),
    shift=lambda setup, method, metric, reference: C7_CHANGE if setup == "0.25" and metric == "acc" else 0.0,
    compared=lambda setups, metrics: [((w, m, r), (C7_WEIGHTS[0], m, r)) for w in C7_WEIGHTS[1:]
                                      for m in (Method.GRPO, Method.GDPO) for r in metrics],
    across_setups=True, paper_tables=("3",), paper_model=pn.R1_7B, has_paper_numbers=False)


@claim_rule("C7", Scale.MODEL, design=C7_DESIGN)
def judge_c7(evidence: Evidence) -> Verdict:
    """C7 (Fig. 6): :func:`decide_c7` on the plain-reward tasks at weights 1, 0.75, 0.5 and 0.25.

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
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
        gathered = gather(evidence, "C7", "fig6", (Method.GRPO, Method.GDPO), ("acc", "exceed"),
                          {weight: task})
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
                                  for m in (Method.GRPO, Method.GDPO) for r in ("acc", "exceed")])
    if used < MIN_SEEDS:
        shortfall.insert(0, f"≥ {MIN_SEEDS} seeds per method common to each weight and weight 1 (have {used})")
    parts = parts_text(decision.parts)
    if shortfall:
        return Verdict(f"{decision.text} — not decided: needs " + "; ".join(shortfall), comparison, UNDERPOWERED,
                       evidence.eval_path, run=run, parts=parts, intervals=decision.intervals)
    return Verdict(decision.text, comparison, decision.outcome, evidence.eval_path, run=run, parts=parts,
                   intervals=decision.intervals)


# --------------------------------------------------------------------------------------------------
# Curve claims (C5, C10)
# --------------------------------------------------------------------------------------------------


def _curve_task(evidence: Evidence, figure: str, what: str, comparison: str):
    task = evidence.figure_task(figure)
    if task is None:
        return dataclasses.replace(_not_configured(figure, what), comparison=comparison)
    if evidence.steps is None:
        return Verdict("", comparison, NOT_RUN, f"missing {evidence.steps_path} (the aggregate rule has not run)")
    return task


def _judge_events(evidence: Evidence, claim_id: str, task: str, methods: tuple[str, str],
                  events: Mapping[str, pd.Series], comparison: str, measured: str,
                  reported: tuple[MeasuredInterval, ...] = (), conditions: tuple[Condition, ...] = ()) -> Verdict:
    """An event claim's verdict from each seed's event (``events``: method → by seed): :func:`decide_events` on
    a's rate minus b's, behind the claim's validity ``conditions`` (any failed: ``not tested``) and its minimum.
    ``reported``: intervals the measured text shows beside it."""
    a, b = methods
    minimum = CLAIMS_BY_ID[claim_id].minimum
    seeds = min(len(events[a]), len(events[b]))
    prompts = (evidence.runs.get(task) or {}).get("prompts_per_batch")
    shortfall = minimum.shortfall(seeds, steps=evidence.num_steps(task, methods), prompts_per_batch=prompts)
    outcome, interval = decide_events(claim_id, events[a].to_numpy(), events[b].to_numpy())
    detectable = (smallest_detectable_rate(len(events[a]), len(events[b]), claim_id=claim_id) if seeds
                  else math.nan)
    # NaN: no rate up to 1 reaches 80 % power with these seeds (too few to detect anything).
    detects = (f"detects a {a} rate ≥ {detectable:.2f} (none for {b})" if not math.isnan(detectable)
               else f"detects no {a} rate, not even 1 (none for {b}),")
    text = (f"{measured}; rate difference {interval.text('', 2)} ({interval.source}); with these seeds the rule "
            f"{detects} with 80 % power")
    design = design_of(claim_id)
    run = evidence.run_label(task, methods, design.paper_setup)
    intervals = (MeasuredInterval.of(f"{design.event} rate {a} − {b}", interval, RATE), *reported)
    if any(c.passed is False for c in conditions):
        return Verdict(f"not tested: {validity.failed_text(conditions)} — measured, not read as a decision: {text}",
                       comparison, NOT_TESTED, evidence.steps_path, run=run, intervals=intervals,
                       conditions=conditions)
    if shortfall:
        return Verdict(f"{text} — not decided: needs " + ", ".join(shortfall), comparison, UNDERPOWERED,
                       evidence.steps_path, run=run, intervals=intervals, conditions=conditions)
    return Verdict(text, comparison, outcome, evidence.steps_path, run=run, intervals=intervals,
                   conditions=conditions)


#: C5's power design: GRPO's divergence rate against GDPO's over the seeds of Fig. 5's task; the calibration's
#: synthetic runs collapse, and the rule's detector finds it.
C5_DESIGN = EventPower("fig5", (Method.GRPO, Method.GDPO), "divergence", "collapse",
                       lambda steps, correctness, length: (
                           detect_divergence(steps, correctness, length) is not None),
                       paper_setup=f"{pn.R1_1_5B}, 500 steps")


@claim_rule("C5", Scale.MODEL, design=C5_DESIGN)
def judge_c5(evidence: Evidence) -> Verdict:
    """C5 (Fig. 5): per seed, whether the run diverges (:func:`gdpo.reporting.curves.divergence_steps`:
    correctness falls for good while the max length climbs); :func:`decide_events` on GRPO's rate minus
    GDPO's. Needs ≥ 400 steps: the paper's GRPO diverged near step 400. A run whose smoothed max length at its
    correctness peak is above the completion cap / 1.2 cannot show the event, so any such run leaves C5
    ``underpowered`` (:func:`_runs_at_the_cap`). Before that, its validity conditions (:func:`c5_conditions`:
    training signal in the last 40 % of the steps, a cap ≥ 2 × the length limit, lengths reaching the limit);
    any failed gives ``not tested``.

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
    comparison = (f"divergence rate GRPO − GDPO over seeds (exact unconditional tests): above 0; refuted below "
                  f"{EVENT_EFFECTS['C5']:g}")
    task = _curve_task(evidence, "fig5", "math curves", comparison)
    if isinstance(task, Verdict):
        return task
    try:
        events = curves.divergence_steps(evidence.steps, task, methods=(Method.GRPO, Method.GDPO))
    except ValueError as error:
        return Verdict("", comparison, NOT_RUN, str(error))
    diverged = {m: events[events["method"] == m].set_index("seed")["divergence_step"].notna()
                for m in (Method.GRPO, Method.GDPO)}
    if any(s.empty for s in diverged.values()):
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path} lacks grpo or gdpo runs of {task}")
    measures_text, measures = _divergence_measures(evidence, task)
    measured = (f"diverged: GRPO {int(diverged[Method.GRPO].sum())}/{len(diverged[Method.GRPO])} seeds, GDPO "
                f"{int(diverged[Method.GDPO].sum())}/{len(diverged[Method.GDPO])}") + measures_text
    verdict = _judge_events(evidence, "C5", task, (Method.GRPO, Method.GDPO), diverged, comparison, measured,
                            measures, c5_conditions(evidence, task))
    capped = _runs_at_the_cap(evidence, task)
    if capped and verdict.verdict not in (UNDERPOWERED, NOT_TESTED):
        return dataclasses.replace(verdict, verdict=UNDERPOWERED, measured_value=(
            f"{verdict.measured_value} — not decided: {capped} could not show the event (longest responses already "
            f"within ×{1 + LENGTH_RISE:g} of the completion cap at the correctness peak); needs a higher cap"))
    return verdict


def c5_conditions(evidence: Evidence, task: str) -> tuple[Condition, ...]:
    """C5's validity conditions (:mod:`.validity`): training signal in the last 40 % of the steps, a cap well
    above the length limit, lengths reaching the limit at some step, and both rewards varying within groups, and
    together."""
    methods = (Method.GRPO, Method.GDPO)
    shares, window = validity.signal_shares(evidence.steps, task, methods, validity.C5_WINDOW_START)
    ran = evidence.runs.get(task) or {}
    return (validity.training_signal("C5", shares, window),
            validity.length_cap_room("C5", ran.get("max_completion_length"), ran.get("length_limit")),
            validity.length_reached("C5", validity.max_lengths(evidence.steps, task, methods), ran.get("length_limit")),
            validity.rewards_vary("C5", validity.reward_variation_shares(evidence.steps, task, methods), methods),
            validity.estimators_differ("C5", validity.several_varying_share(evidence.steps, task, methods), methods))


def _runs_at_the_cap(evidence: Evidence, task: str) -> str:
    """The GRPO/GDPO runs whose smoothed max length at their correctness peak exceeds cap / (1 + LENGTH_RISE),
    as ``"grpo seed 0, gdpo seed 2"`` (empty when none, or when the cap or the curves are not known): for them
    the divergence's length rise is impossible, so not seeing it says nothing."""
    cap = (evidence.runs.get(task) or {}).get("max_completion_length")
    if not cap:
        return ""
    try:
        table = curves.divergence_measure_table(evidence.steps, task, methods=(Method.GRPO, Method.GDPO))
    except ValueError:
        return ""
    over = table[table["peak_max_length"] > cap / (1 + LENGTH_RISE)]
    return ", ".join(f"{row.method} seed {row.seed}" for row in over.itertuples())


#: C5's continuous measures (:func:`gdpo.curve_events.divergence_measures`): name in the text, and unit.
_DIVERGENCE_MEASURES = {"correctness_fall": ("correctness fall from its peak", "share of the peak"),
                        "length_growth": ("log growth of the max length", "log ratio")}


def _divergence_measures(evidence: Evidence, task: str) -> tuple[str, tuple[MeasuredInterval, ...]]:
    """C5's continuous measures beside the event count (reported, not decided on): GRPO − GDPO of the relative
    fall of correctness from its peak and of the log growth of the max length, paired by seed, mean and 95 %
    t-interval, as text and as numbers; empty where the curves are too short or fewer than 2 seeds pair."""
    try:
        table = curves.divergence_measure_table(evidence.steps, task, methods=(Method.GRPO, Method.GDPO))
    except ValueError:
        return "", ()
    texts, intervals = [], []
    for measure, (label, unit) in _DIVERGENCE_MEASURES.items():
        by_seed = table.pivot(index="seed", columns="method", values=measure).dropna()
        if len(by_seed) < 2:
            return "", ()
        mean, low, high = mean_ci((by_seed[Method.GRPO] - by_seed[Method.GDPO]).to_numpy())
        texts.append(f"{label} GRPO − GDPO {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
        intervals.append(MeasuredInterval(f"{label} GRPO − GDPO", mean, low, high, 0.95, unit))
    text = f"; continuous measures over {len(by_seed)} paired seeds (reported, not decided on): " + ", ".join(texts)
    return text, tuple(intervals)


#: C10's power design: gdpo_nobn's failure-to-converge rate against gdpo's over the seeds of Fig. 8's task; the
#: calibration's synthetic runs stall.
C10_DESIGN = EventPower("fig8", (Method.GDPO_NOBN, Method.GDPO), "failure-to-converge", "stall",
                        lambda steps, correctness, length: fails_to_converge(correctness),
                        paper_setup=f"{pn.R1_1_5B} (Fig. 8)")


@claim_rule("C10", Scale.MODEL, design=C10_DESIGN)
def judge_c10(evidence: Evidence) -> Verdict:
    """C10 (Fig. 8): per seed, whether the run fails to converge (:func:`gdpo.curve_events.fails_to_converge`
    on its correctness-type reward); :func:`decide_events` on gdpo_nobn's rate minus gdpo's. Needs ≥ 100
    steps and ≥ 2 prompts per batch (the batch step acts across prompts). Not tested without training signal on
    most steps of the run's median run of either method (:func:`.validity.training_signal`).

    Calibration: ``gdpo calibrate`` prints this rule's false ``reproduced`` under no difference, false
    refutation under the paper's effect and power at every shipped design (``tests/test_calibration.py``
    checks them); no figure is copied here, since each moves with the designs."""
    comparison = (f"failure-to-converge rate gdpo_nobn − gdpo over seeds (exact unconditional tests): above 0; refuted below "
                  f"{EVENT_EFFECTS['C10']:g}")
    task = _curve_task(evidence, "fig8", "GDPO with and without the batch step", comparison)
    if isinstance(task, Verdict):
        return task
    rows = evidence.steps[evidence.steps["task"] == task]
    metric = next((c for c in ("rewards/correct/mean", "rewards/pass/mean", "reward")
                   if c in rows and rows[c].notna().any()), None)
    if metric is None or not {Method.GDPO, Method.GDPO_NOBN} <= set(rows["method"]):
        return Verdict("", comparison, NOT_RUN, f"{evidence.steps_path} lacks gdpo and gdpo_nobn runs of {task}")
    failed: dict[str, dict[int, bool]] = {Method.GDPO: {}, Method.GDPO_NOBN: {}}
    short = None
    for (method, seed), run in rows[rows["method"].isin(failed)].groupby(["method", "seed"]):
        try:
            failed[method][seed] = fails_to_converge(run.sort_values("step")[metric].to_numpy())
        except ValueError as error:
            short = str(error)
    if short:
        steps = evidence.num_steps(task, (Method.GDPO, Method.GDPO_NOBN))
        return Verdict(f"not judged: {short}", comparison, UNDERPOWERED, evidence.steps_path,
                       run=evidence.run_label(task, (Method.GDPO, Method.GDPO_NOBN), C10_DESIGN.paper_setup),
                       ) if steps is not None else Verdict("", comparison, NOT_RUN, short)
    events = {m: pd.Series(v, dtype=bool) for m, v in failed.items()}
    nobn, gdpo = events[Method.GDPO_NOBN], events[Method.GDPO]
    measured = (f"{metric}: failed gdpo_nobn {int(nobn.sum())}/{len(nobn)}, "
                f"gdpo {int(gdpo.sum())}/{len(gdpo)} seeds")
    shares, window = validity.signal_shares(evidence.steps, task, (Method.GDPO_NOBN, Method.GDPO))
    conditions = (validity.training_signal("C10", shares, window),)
    return _judge_events(evidence, "C10", task, (Method.GDPO_NOBN, Method.GDPO), events, comparison, measured,
                         conditions=conditions)


# --------------------------------------------------------------------------------------------------
# Claims that combine others (C11)
# --------------------------------------------------------------------------------------------------


@claim_rule("C11", Scale.MODEL, combines=("C3", "C6", "C9"),
            design=NoPower("combines C3, C6 and C9's verdicts at this scale; their rows carry the power"))
def judge_c11(evidence: Evidence, family_verdicts: Mapping[str, str]) -> Verdict:
    """C11: the gains hold in all three families (C3, C6 and C9 at this scale, combined) and across model
    sizes. The model-size part needs the families' setups to span at least two models; with fewer it is
    ``not run``. Any family ``not run``, ``not tested`` or ``underpowered`` carries over."""
    comparison = "C3, C6 and C9 at this scale combined, over at least two model sizes"
    measured = ", ".join(f"{claim} {verdict}" for claim, verdict in family_verdicts.items())
    tasks = {t for table in ("table1", "table3", "table5") for t in evidence.tasks(table).values()}
    specs = {t: (evidence.runs.get(t) or {}).get("model") for t in tasks}
    models = sorted({model_display_name(spec) for spec in specs.values() if spec})
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
    if NOT_TESTED in verdicts:  # a family whose design could not show its claim shows nothing of C11 either
        return Verdict(measured, comparison, NOT_TESTED, "this ledger's C3, C6 and C9 rows")
    if UNDERPOWERED in verdicts:
        return Verdict(measured, comparison, UNDERPOWERED, "this ledger's C3, C6 and C9 rows")
    return Verdict(measured, comparison, combine(verdicts), "this ledger's C3, C6 and C9 rows")
