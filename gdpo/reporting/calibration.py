"""Calibration and power of the verdict rules, by simulating the evidence a design produces.

A *design* is what a config runs for one claim: the setups, per (setup, method, metric) a reference rate,
the evaluated items of one run and the samples per item, the seeds per method, the training steps and prompts
per batch. The simulation draws each run's score from the whole data-generating process: the method's rate,
plus the run-to-run seed spread (normal, ``seed_sd`` points, shared by all items of a run), then the
evaluation's binomial noise (items × samples Bernoulli draws at that run's rate) — and feeds the values, with
the variances the ledger would compute from them, to the rule's own ``decide_*`` function
(:mod:`gdpo.reporting.verdicts.decisions`) behind the claim's minimum-evidence gate. Event claims are computed
exactly, by enumerating every outcome of the seeds' events.

No claim is named here: each claim's rule is registered with its power design
(:mod:`gdpo.reporting.verdicts.registry`: :class:`~gdpo.reporting.verdicts.registry.TablePower` says which table
or figure maps its setups, the compared methods and metrics, which cells pair and how the paper's effect shifts
them; :class:`~gdpo.reporting.verdicts.registry.EventPower` the figure, the methods and the synthetic event;
:class:`~gdpo.reporting.verdicts.registry.SimPower` the bench's cells), and every function below reads the
design of the claim it is given, or iterates the registered ones.

Three uses:

- **null**: every method drawn from one process; the share of verdicts in the paper's direction
  (``reproduced`` or ``smaller``) is the rule's false-positive rate (must stay ≤ 5 %);
- **power**: the paper's effect added; the share of ``reproduced`` (the ledger's ``power`` column and
  `gdpo power`); the share of ``not reproduced`` is the false refutation rate (≤ 5 %);
- **paper numbers**: :func:`paper_number_evals` expands the paper's tables into per-seed eval.csv rows.

The seed spread: measured from the runs where they exist (:func:`estimate_seed_spread`: the seeds' pooled
variance less the evaluation's binomial variance, at the upper end of its one-sided 80 % χ² interval, so that
power is not overstated by runs that happened to agree), otherwise :func:`default_seed_sd`: the evaluation's
own binomial sd of a run's score (a run's training varies it at least as much as re-evaluating it would).

The items: independent binomial draws per run, unless the compared runs answer the same items at correlation ρ
(``item_correlation``; `gdpo power --item-correlation`), when the rule floors each difference by the paired item
noise. The ledger measures ρ where items.json records the compared runs' per-item outcomes (:func:`item_pairing`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from gdpo.methods import Method, method_variants
from gdpo.reporting import paper_numbers as pn
from gdpo.reporting import rate_tests
from gdpo.reporting.contract import (
    CLAIMS_BY_ID, DECISIVE, IN_PAPERS_DIRECTION, NOT_REPRODUCED, REPRODUCED, UNDERPOWERED, binomial_variance,
)
from gdpo.reporting.verdicts import Scale, rule_for
from gdpo.reporting.verdicts.decisions import (
    EVENT_BASE_RATE, EVENT_EFFECTS, Decision, decide_events, event_outcomes,
)
from gdpo.reporting.verdicts.registry import EventPower, SimPower, TablePower, design_of, designed
from gdpo.reporting.verdicts.model_evidence import BASE, Evidence
from gdpo.reporting.verdicts.items import NO_ITEM_OUTCOMES, ItemScores, SimulatedItems, compare_items, pair_noise
from gdpo.reporting.verdicts.samples import Sample, seeds_compared
from gdpo.reporting.verdicts.validity import DEFAULT_COLLAPSE_RATE, comparable_probability
from gdpo.tasks.tool_calling.bfcl_aggregate import held_out_items

#: Seed spread (points, beyond the evaluation's binomial noise) at which the paper's own numbers are expanded
#: into per-seed data (:func:`paper_number_cells`): the paper reports no spread; :func:`break_even_seed_sd`
#: gives the largest at which each claim still reproduces. Not the power default (:func:`default_seed_sd`).
ASSUMED_SEED_SD = 0.25
#: Items of the paper's benchmarks (problems; BFCL-v3: every single-turn and multi-turn entry). Math: the
#: sizes of the configs' data sets. Code: the test splits as commonly evaluated (the paper does not say).
PAPER_ITEMS = {"BFCL-v3": 4441, "MATH": 500, "AIME": 30, "AMC": 83, "Minerva": 272, "Olympiad": 675,
               "Apps": 500, "CodeContests": 165, "Codeforces": 400, "Taco": 1000}
#: Items a config evaluates when it sets no ``eval_size`` (what ``gdpo power`` counts): the paper's, except
#: BFCL-v3, of which the workflow evaluates the held-out 20 % of the single-turn items (729; multi-turn is not
#: run), not the paper's 4,441.
EVALUATED_ITEMS = {**PAPER_ITEMS, "BFCL-v3": held_out_items()}


def _registered_design(claim_id: str, kind: type, what: str):
    """The power design of ``kind`` registered with a claim's language-model rule.

    Raises:
        KeyError: the claim has no such rule, or its design is of another kind.
    """
    design = design_of(claim_id)
    if not isinstance(design, kind):
        raise KeyError(f"{claim_id} has no {what} power design (registered: {design!r})")
    return design


def table_power(claim_id: str) -> TablePower:
    """The power design registered with a table claim's language-model rule (KeyError: none)."""
    return _registered_design(claim_id, TablePower, "table")


def event_power_design(claim_id: str) -> EventPower:
    """The power design registered with an event claim's language-model rule (KeyError: none)."""
    return _registered_design(claim_id, EventPower, "event")


@dataclasses.dataclass(frozen=True)
class Cell:
    """One (setup, method, metric) of a design: the reference rate (percent), the effective items of one
    run's value (for a mean over benchmarks B² / Σ 1/n_b), the number of seeds (1: evaluated once) and the
    samples per item (pass@1 averaged over them)."""

    mean: float
    items: float
    seeds: int
    samples: int = 1
    #: This cell's seed spread (points) where measured apart from the design's (None: the design's).
    seed_sd: float | None = None

    @property
    def trials(self) -> float:
        """Bernoulli draws behind one run's value: items × samples."""
        return self.items * self.samples


@dataclasses.dataclass(frozen=True)
class TableDesign:
    """A table claim's design: its setups and cells, the seed spread (points), and the evidence the
    minimum gate sees (seeds per trained method, items per run)."""

    claim_id: str
    setups: tuple[str, ...]
    cells: Mapping[tuple[str, str, str], Cell]
    seed_sd: float
    seeds: int
    items: float
    spread_source: str = "given"
    #: Correlation of two methods' item outcomes on the same items (ρ; 0: independent binomial items). Above 0
    #: the simulated runs carry their items (SimulatedItems) and the rule floors by the paired item noise.
    item_correlation: float = 0.0
    #: How item_correlation was chosen (the ledger's power_basis states it; "" where given).
    item_source: str = ""

    def with_seeds(self, seeds: int) -> TableDesign:
        cells = {k: dataclasses.replace(c, seeds=seeds if c.seeds > 1 or k[1] != "base" else 1)
                 for k, c in self.cells.items()}
        return dataclasses.replace(self, cells=cells, seeds=seeds)

    def with_items(self, scale: float) -> TableDesign:
        cells = {k: dataclasses.replace(c, items=c.items * scale) for k, c in self.cells.items()}
        return dataclasses.replace(self, cells=cells, items=self.items * scale)


@dataclasses.dataclass(frozen=True)
class EventDesign:
    """An event claim's design: seeds per method, steps per run, prompts per batch."""

    claim_id: str
    seeds: int
    steps: int | None
    prompts_per_batch: int | None

    def with_seeds(self, seeds: int) -> EventDesign:
        return dataclasses.replace(self, seeds=seeds)


# --------------------------------------------------------------------------------------------------
# Means under the null and under the paper's effect
# --------------------------------------------------------------------------------------------------

def cell_means(design: TableDesign, effect: bool) -> dict[tuple[str, str, str], float]:
    """Each cell's true mean: under the null every cell has its reference cell's (the power design's
    :meth:`~gdpo.reporting.verdicts.registry.TablePower.reference_of`: the reference method's, the base model's,
    weight 1's); with ``effect`` the design's shift under the paper's effect is added
    (:meth:`~gdpo.reporting.verdicts.registry.TablePower.shift_of`)."""
    claim = design.claim_id
    power = table_power(claim)
    means = {}
    for (setup, method, metric), cell in design.cells.items():
        reference = design.cells[power.reference_of(setup, method, metric)].mean
        shift = power.shift_of(claim, setup, method, metric, reference) if effect else 0.0
        means[(setup, method, metric)] = reference + shift
    return {k: float(np.clip(v, 0.0, 100.0)) for k, v in means.items()}


# --------------------------------------------------------------------------------------------------
# Simulation of table claims
# --------------------------------------------------------------------------------------------------

def _decision(design: TableDesign, cells: Mapping) -> Decision:
    """The rule's decision on ``cells`` (its power design's ``decide``)."""
    return table_power(design.claim_id).decide(cells, list(design.setups))


def _decide(design: TableDesign, cells: Mapping) -> str:
    return _decision(design, cells).outcome


def simulate_table(design: TableDesign, effect: bool, replicates: int, seed: int = 0,
                   gated: bool = True) -> dict[str, float]:
    """Share of each verdict over ``replicates`` simulated workflows of ``design`` (``gated``: behind the
    claim's minimum, so a design below it gives ``underpowered`` every time). Each run's value: its rate
    (the cell's true mean + ``seed_sd`` × a normal draw, clipped to 0–100) measured by items × samples
    Bernoulli draws (numpy's binomial); its variance as the ledger computes it from the value."""
    minimum = CLAIMS_BY_ID[design.claim_id].minimum
    if gated and minimum.shortfall(design.seeds, design.items):
        return {UNDERPOWERED: 1.0}
    counts: dict[str, int] = {}
    for decision in _simulated_decisions(design, effect, replicates, seed):
        counts[decision.outcome] = counts.get(decision.outcome, 0) + 1
    return {k: v / replicates for k, v in counts.items()}


def _simulated_decisions(design: TableDesign, effect: bool, replicates: int, seed: int):
    """The rule's :class:`gdpo.reporting.verdicts.decisions.Decision` on each of ``replicates`` simulated workflows
    (:func:`simulate_table` describes the simulation)."""
    rng = np.random.default_rng(seed)
    means = cell_means(design, effect)
    rho = design.item_correlation
    # Paired items: every run of a (setup, metric) answers the same items, so their evaluation noise shares a
    # component (one draw per replicate, common to every seed and method) with weight √ρ. A rule pairing across
    # setups (each weight's runs with weight 1's, on the same items) shares it over the setups of a metric.
    group = table_power(design.claim_id).noise_group

    common = ({group(setup, metric): rng.standard_normal(replicates) for setup, _, metric in design.cells}
              if rho else {})
    draws = {}
    for key, cell in design.cells.items():
        sd = design.seed_sd if cell.seed_sd is None else cell.seed_sd
        rates = np.clip(means[key] + sd * rng.standard_normal((replicates, cell.seeds)), 0.0, 100.0)
        trials = max(1, int(round(cell.trials)))
        if rho:
            # Normal approximation of the binomial draws, correlated at ρ with the other methods' on these items.
            noise = (math.sqrt(rho) * common[group(key[0], key[2])][:, None]
                     + math.sqrt(1 - rho) * rng.standard_normal((replicates, cell.seeds)))
            values = np.clip(rates + np.sqrt(rates * (100.0 - rates) / trials) * noise, 0.0, 100.0)
        else:
            values = 100.0 * rng.binomial(trials, rates / 100.0) / trials
        draws[key] = (values, binomial_variance(values, cell.trials))
    for r in range(replicates):
        cells = {}
        for key, (values, variances) in draws.items():
            outcomes = (tuple(SimulatedItems(float(v), design.cells[key].trials, rho) for v in values[r])
                        if rho else None)
            cells[key] = Sample(tuple(range(values.shape[1])), values[r], variances[r],
                                np.full(values.shape[1], design.cells[key].items), once=key[1] == BASE,
                                outcomes=outcomes)
        yield _decision(design, cells)


def part_power(design: TableDesign, replicates: int = 400, seed: int = 0) -> dict[str, float]:
    """Per part of the claim, the probability that it alone is *reproduced* under the paper's effect (the
    simulation of :func:`simulate_table`, ungated): which part limits the claim's power."""
    counts: dict[str, int] = {}
    for decision in _simulated_decisions(design, True, replicates, seed):
        for part, outcome in decision.parts.items():
            counts[part] = counts.get(part, 0) + (outcome == REPRODUCED)
    return {part: count / replicates for part, count in counts.items()}


# --------------------------------------------------------------------------------------------------
# Event claims, exactly
# --------------------------------------------------------------------------------------------------

def event_probabilities(design: EventDesign, rate_a: float, rate_b: float, gated: bool = True) -> dict[str, float]:
    """Exact probability of each verdict when a's runs have the event with ``rate_a`` and b's with ``rate_b``
    (every table of the seeds' events enumerated, its verdict the rule's, :func:`decide_events`)."""
    minimum = CLAIMS_BY_ID[design.claim_id].minimum
    if gated and minimum.shortfall(design.seeds, steps=design.steps, prompts_per_batch=design.prompts_per_batch):
        return {UNDERPOWERED: 1.0}
    k = design.seeds
    outcomes = event_outcomes(design.claim_id, k, k)
    tables = rate_tests.table_probabilities(k, k, rate_a, rate_b)
    return {str(v): float(tables[outcomes == v].sum()) for v in np.unique(outcomes)}


def event_null_worst_case(design: EventDesign, gated: bool = True, grid: int = 1001) -> dict[str, float]:
    """The largest probability of a verdict in the paper's direction (``reproduced`` or ``smaller``, under the key
    ``reproduced``) and of a decisive verdict under the null (both methods with the same event rate), over
    ``grid`` rates 0..1."""
    minimum = CLAIMS_BY_ID[design.claim_id].minimum
    if gated and minimum.shortfall(design.seeds, steps=design.steps, prompts_per_batch=design.prompts_per_batch):
        return {REPRODUCED: 0.0, "decisive": 0.0}
    k = design.seeds
    outcomes = event_outcomes(design.claim_id, k, k)
    in_direction, decisive = np.isin(outcomes, IN_PAPERS_DIRECTION), np.isin(outcomes, DECISIVE)
    rates = np.linspace(0, 1, grid)
    pmf = stats.binom.pmf(np.arange(k + 1)[None, :], k, rates[:, None])
    tables = pmf[:, :, None] * pmf[:, None, :]
    return {REPRODUCED: float((tables * in_direction).sum(axis=(1, 2)).max()),
            "decisive": float((tables * decisive).sum(axis=(1, 2)).max())}


def event_false_refutation_worst_case(design: EventDesign, grid: int = 1001) -> float:
    """The largest probability of ``not reproduced`` (ungated) when a's rate exceeds b's by exactly the claim's
    smallest effect δ, over b's rates 0..1 − δ (``grid`` points): the refutation's size."""
    k, delta = design.seeds, EVENT_EFFECTS[design.claim_id]
    refuted = event_outcomes(design.claim_id, k, k) == NOT_REPRODUCED
    rates_b = np.linspace(0, 1 - delta, grid)
    pmf_a = stats.binom.pmf(np.arange(k + 1)[None, :], k, rates_b[:, None] + delta)
    pmf_b = stats.binom.pmf(np.arange(k + 1)[None, :], k, rates_b[:, None])
    return float(((pmf_a[:, :, None] * pmf_b[:, None, :]) * refuted).sum(axis=(1, 2)).max())


def event_power(design: EventDesign, gated: bool = True) -> float:
    """The event claims' power: P(reproduced) of the gated rule on ``design`` when the reference's event rate is
    :data:`~gdpo.reporting.verdicts.decisions.EVENT_BASE_RATE` and the compared method's that plus the claim's
    implied difference."""
    rate_b = EVENT_BASE_RATE
    rate_a = min(1.0, rate_b + EVENT_EFFECTS[design.claim_id])
    return event_probabilities(design, rate_a, rate_b, gated).get(REPRODUCED, 0.0)


# --------------------------------------------------------------------------------------------------
# Synthetic curves (the curve claims' null calibration)
# --------------------------------------------------------------------------------------------------

def synthetic_run(steps: int, rng: np.random.Generator, collapse: bool = False, stall: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """One run's (correctness, max length) per step: correctness rises on a logistic curve (flat when
    ``stall``) with step-to-step noise; the max length wanders around a level. With ``collapse``,
    correctness falls by half and the max length doubles from a random step in the second half on."""
    t = np.arange(steps) / max(1, steps - 1)
    rise = 0.0 if stall else 0.4
    correctness = 0.2 + rise / (1 + np.exp(-10 * (t - 0.3))) + 0.03 * rng.standard_normal(steps)
    length = 200 * (1 + 0.05 * rng.standard_normal(steps))
    if collapse:
        start = int(rng.integers(steps // 2, max(steps // 2 + 1, steps - steps // 5)))
        correctness[start:] *= 0.5
        length[start:] *= 2
    return correctness, length


def curve_null(claim_id: str, steps: int, seeds: int, replicates: int, rate: float = 0.3, seed: int = 0
               ) -> dict[str, float]:
    """Share of each verdict of an event claim over ``replicates`` pairs of methods whose runs come from one
    process (each run has the claim's synthetic event, a collapse or a stall, with probability ``rate``), through
    the detector the rule uses (the power design's ``detect``: e.g. :func:`gdpo.curve_events.detect_divergence`,
    :func:`gdpo.curve_events.fails_to_converge`)."""
    power = event_power_design(claim_id)
    rng = np.random.default_rng(seed)
    minimum = CLAIMS_BY_ID[claim_id].minimum
    if minimum.shortfall(seeds, steps=steps):
        return {UNDERPOWERED: 1.0}
    counts: dict[str, int] = {}
    for _ in range(replicates):
        events = []
        for _method in range(2):
            method_events = []
            for _seed in range(seeds):
                happens = rng.random() < rate
                correctness, length = synthetic_run(steps, rng, collapse=happens and power.synthetic == "collapse",
                                                    stall=happens and power.synthetic == "stall")
                method_events.append(power.detect(np.arange(steps), correctness, length))
            events.append(method_events)
        outcome = decide_events(claim_id, events[0], events[1])[0]
        counts[outcome] = counts.get(outcome, 0) + 1
    return {k: v / replicates for k, v in counts.items()}


# --------------------------------------------------------------------------------------------------
# Designs from evidence (the ledger's power column) and from configs (gdpo power)
# --------------------------------------------------------------------------------------------------

def _effective_items(mean: float, variance: float) -> float:
    """Items whose binomial variance at ``mean`` is ``variance`` (inverse of the Agresti–Coull form, close enough)."""
    p = min(max(mean / 100, 0.01), 0.99)
    return max(1.0, 1e4 * p * (1 - p) / variance) if variance > 0 else math.inf


def design_from_evidence(claim_id: str, evidence: Evidence) -> TableDesign | EventDesign | None:
    """The design the ledger's evidence represents (None where the claim's runs are missing): reference
    rates, items and samples per item from the runs, the seed spread measured over seeds
    (:func:`estimate_seed_spread`; :func:`default_seed_sd` where no method has two seeds), and the item
    correlation of the runs the rule pairs (:func:`item_pairing`; 0 where items.json records none). What is
    read is the claim's power design's: its table or figure, methods and metrics."""
    power = design_of(claim_id)
    if isinstance(power, EventPower):
        task = evidence.figure_task(power.figure)
        methods = power.methods
        if task is None or evidence.steps is None:
            return None
        runs = evidence.steps[evidence.steps["task"] == task]
        seeds = min(runs.loc[runs["method"] == m, "seed"].nunique() for m in methods)
        if not seeds:
            return None
        return EventDesign(claim_id, seeds, evidence.num_steps(task, methods),
                           (evidence.runs.get(task) or {}).get("prompts_per_batch"))
    if not isinstance(power, TablePower):
        return None
    setups = power.setups_in(evidence.reporting, lambda task, method: bool(evidence.seeds(task, method)))
    if not setups:
        return None
    methods = power.methods
    metrics = power.metrics_for(list(setups))
    cells, read = {}, {}
    for setup, task in setups.items():
        if evidence.missing(task, methods, metrics):
            return None
        for method in methods:
            for metric in metrics:
                sample = read[(setup, method, metric)] = evidence.sample(task, method, metric)
                mean = float(np.mean(sample.values))
                per_item = evidence.samples_per_item(task, method, metric)
                variance = float(np.nanmean(sample.variances)) if np.isfinite(sample.variances).any() else math.nan
                items = (_effective_items(mean, variance) / per_item) if np.isfinite(variance) else 1e6
                cells[(setup, method, metric)] = Cell(mean, items, len(sample), per_item)
    trained = [m for m in methods if m != BASE]
    if not power.across_setups:  # a rule pairing across its tasks (weights) trims no setup to its own pairs
        # A setup's runs are compared on the seeds its trained methods share (a rule pooling its setups then pools
        # them as independent samples, each on its own pairs): a trained cell simulates that many seeds.
        for setup in setups:
            for metric in metrics:
                shared = len(set.intersection(*(set(read[(setup, m, metric)].seeds) for m in trained)))
                for m in trained:
                    cells[(setup, m, metric)] = dataclasses.replace(cells[(setup, m, metric)], seeds=shared)
    samples = [sample for key, sample in read.items() if key[1] != BASE]
    seeds = _seeds_used(claim_id, list(setups), read)
    items = min((evidence.items(t, m, metrics[0]) or math.inf) for t in setups.values() for m in trained)
    # Where items.json pairs the compared runs the rule floors by the paired item noise: simulate that rule.
    pairing = item_pairing(claim_id, list(setups), read)
    design = TableDesign(claim_id, tuple(setups), cells, 0.0, seeds, items,
                         item_correlation=pairing.correlation, item_source=pairing.text())
    spread = estimate_seed_spread(samples)
    if spread is None:
        sd = default_seed_sd(design)
        return dataclasses.replace(design, seed_sd=sd, spread_source=f"{sd:.2f} pts assumed (no method has 2 seeds; "
                                                                       "the evaluation's binomial sd)")
    # Each (setup, metric) has its own spread (accuracy and Exceed need not vary alike): measured over its
    # trained methods' seeds, the pooled estimate where a group has no two seeds.
    per_group, texts = {}, []
    labels = evidence.setup_labels(setups)  # a setup run on another model than the paper's is named with it
    for setup in setups:
        for metric in metrics:
            group = estimate_seed_spread([read[(setup, m, metric)] for m in trained])
            per_group[(setup, metric)] = group.upper if group is not None else spread.upper
            texts.append(f"{labels[setup]} {metric} {per_group[(setup, metric)]:.2f}")
    cells = {k: dataclasses.replace(c, seed_sd=per_group[(k[0], k[2])]) for k, c in cells.items()}
    return dataclasses.replace(design, cells=cells, seed_sd=spread.upper,
                               spread_source=f"{spread.text()}; per setup and metric (80 % upper bounds): "
                                             + ", ".join(texts) + " pts")


#: The largest item correlation the ledger's power simulates: at ρ = 1 a (setup, metric)'s runs would share their
#: whole evaluation noise, which a correlation measured on finitely many items (1.00 where two runs' outcomes
#: move together on every item) does not show.
MAX_ITEM_CORRELATION = 0.99


@dataclasses.dataclass(frozen=True)
class ItemPairing:
    """The item correlation of the runs a claim's rule pairs (:func:`item_pairing`).

    Attributes:
        correlation: ρ the design simulates, in [0, :data:`MAX_ITEM_CORRELATION`] (0: independent items).
        measured: the smallest Pearson correlation of two paired runs' item outcomes (NaN: none measurable).
        pairs: pairs of compared runs (per metric) with a measurable correlation.
        why: why the items are simulated as independent (where ``correlation`` is 0).
    """

    correlation: float
    measured: float = math.nan
    pairs: int = 0
    why: str = NO_ITEM_OUTCOMES

    def text(self) -> str:
        if self.correlation > 0:
            pairs = f"{self.pairs} run pair" + ("s" if self.pairs != 1 else "")
            return (f"paired items at ρ = {self.correlation:.2f} measured over {pairs} (the smallest correlation of "
                    "two compared runs' item outcomes)")
        return f"independent items ({self.why})"


def _compared_cells(claim_id: str, setups: Sequence[str]) -> list[tuple[tuple, tuple]]:
    """The (setup, method, metric) cells the claim's rule pairs (:mod:`gdpo.reporting.verdicts.decisions`), as its
    power design says (:meth:`~gdpo.reporting.verdicts.registry.TablePower.compared_cells`: by default the
    compared method against the reference per setup and metric)."""
    return table_power(claim_id).compared_cells(setups)


def _run_pairs(a: Sample, b: Sample) -> list[tuple]:
    """Each pair of runs' per-item outcomes that the rule's estimate of a − b pairs
    (:func:`gdpo.reporting.verdicts.samples.paired`): a reference evaluated once with every seed of the other
    side, otherwise the seeds both have."""
    if b.once:
        return [(a.outcome(i), b.outcome(0)) for i in range(1 if a.once else len(a))]
    if a.once:
        return [(a.outcome(0), b.outcome(j)) for j in range(len(b))]
    return [(a.outcome(a.seeds.index(s)), b.outcome(b.seeds.index(s))) for s in a.seeds if s in b.seeds]


def _run_pair_correlation(a: ItemScores, b: ItemScores) -> float:
    """Pearson correlation of two runs' item means on the items both scored and the metric counts (those
    :func:`gdpo.reporting.verdicts.items.pair_noise` pairs), by
    :func:`gdpo.reporting.verdicts.items.compare_items`; the smallest over benchmarks, NaN where every
    benchmark's outcomes are constant in a run."""
    found = []
    for benchmark, (ids_a, means_a, weights_a) in a.benchmarks.items():
        ids_b, means_b, _ = b.benchmarks[benchmark]
        rows_b = {item: index for index, item in enumerate(ids_b)}
        keep = [index for index, item in enumerate(ids_a) if item in rows_b and weights_a[index] > 0]
        if len(keep) < 2:
            continue
        y = means_b[[rows_b[ids_a[index]] for index in keep]]
        found.append(compare_items(means_a[keep][:, None], y[:, None], weights_a[keep]).correlation)
    finite = [value for value in found if not math.isnan(value)]
    return min(finite) if finite else math.nan


def item_pairing(claim_id: str, setups: Sequence[str], samples: Mapping) -> ItemPairing:
    """The item correlation to simulate ``claim_id``'s rule with, measured on the runs it pairs.

    Per pair of compared runs (:func:`_compared_cells`, :func:`_run_pairs`) the correlation of their item
    outcomes (:func:`_run_pair_correlation`; constant outcomes give none); the design takes the smallest, since
    a lower correlation gives a lower power, clipped to [0, :data:`MAX_ITEM_CORRELATION`]. 0 (independent
    items) where any comparison does not pair every one of its runs' items: the rule then floors it by two
    independent binomials (:func:`gdpo.reporting.verdicts.samples.pair_floor`), as it does everything where
    items.json records nothing.

    Args:
        samples: (setup, method, metric) → :class:`Sample` with its per-seed outcomes, as the rule reads them.
    """
    comparisons = [(a, b) for a, b in _compared_cells(claim_id, setups) if a in samples and b in samples]
    correlations, unpaired, recorded = [], 0, False
    for key_a, key_b in comparisons:
        runs = _run_pairs(samples[key_a], samples[key_b])
        recorded = recorded or any(x is not None or y is not None for x, y in runs)
        if not runs or any(pair_noise(x, y) is None for x, y in runs):
            unpaired += 1
            continue
        correlations += [_run_pair_correlation(x, y) for x, y in runs]
    if not recorded:
        return ItemPairing(0.0)
    if unpaired:
        return ItemPairing(0.0, why=f"{unpaired} of the rule's {len(comparisons)} comparisons do not pair every "
                                    "run's items and are floored by the evaluation's binomial noise")
    finite = [value for value in correlations if not math.isnan(value)]
    if not finite:
        return ItemPairing(0.0, why="the paired runs' item outcomes are constant: no correlation measurable")
    smallest = min(finite)
    if smallest <= 0:
        return ItemPairing(0.0, smallest, len(finite), why=f"the smallest correlation of item outcomes over "
                                                            f"{len(finite)} run pairs, {smallest:.2f}, taken as 0")
    return ItemPairing(min(smallest, MAX_ITEM_CORRELATION), smallest, len(finite))


def _seeds_used(claim_id: str, setups: Sequence[str], cells: Mapping) -> int:
    """Seeds per compared method the claim's rule rests on (:func:`gdpo.reporting.verdicts.samples.seeds_compared`):
    the fewest pairs within any comparison of its power design
    (:meth:`~gdpo.reporting.verdicts.registry.TablePower.seed_comparisons`: a rule pooling its setups as
    independent samples rests on each setup's own pairs, so no seed need be common to two of them; a rule pairing
    across a sweep's tasks on the pairs across them)."""
    return seeds_compared(cells, table_power(claim_id).seed_comparisons(setups))


@dataclasses.dataclass(frozen=True)
class SpreadEstimate:
    """The seed spread measured over runs (points): the method-of-moments estimate of the seed variance
    (the seeds' pooled sample variance less the evaluation's mean binomial variance; may be negative: runs
    agreeing better than independent item flips would make them) and the upper end of its one-sided 80 %
    interval (χ² on the pooled variance's degrees of freedom), which power uses."""

    estimate_variance: float
    upper: float
    dof: int
    evaluation_sd: float

    def text(self) -> str:
        point = (f"{math.sqrt(self.estimate_variance):.2f} pts" if self.estimate_variance > 0
                 else "below the evaluation's own noise")
        return (f"seed spread measured over {self.dof} degrees of freedom: {point} (evaluation's binomial sd "
                f"{self.evaluation_sd:.2f}); power at its 80 % upper bound, {self.upper:.2f} pts")


def estimate_seed_spread(samples: Sequence[Sample]) -> SpreadEstimate | None:
    """Pool each sample's variance over seeds (those with ≥ 2 seeds), subtract the mean binomial variance of
    its values, and bound it above at 80 % (χ²): None when no sample has two seeds."""
    sums, dof, binomial = 0.0, 0, []
    for sample in samples:
        if len(sample) < 2:
            continue
        sums += float(np.var(sample.values, ddof=1)) * (len(sample) - 1)
        dof += len(sample) - 1
        binomial.append(float(np.nanmean(sample.variances)) if np.isfinite(sample.variances).any() else 0.0)
    if not dof:
        return None
    pooled = sums / dof
    evaluation = float(np.mean(binomial))
    upper_total = dof * pooled / float(stats.chi2.ppf(0.2, dof))
    return SpreadEstimate(pooled - evaluation, math.sqrt(max(upper_total - evaluation, 0.0)), dof,
                          math.sqrt(evaluation))


def default_seed_sd(design: TableDesign) -> float:
    """Seed spread (points) assumed where none is measured: the largest binomial sd of a trained method's
    reference value over its items × samples — a run's training moves its score at least as much as
    re-evaluating it would. Never below what the evaluation alone implies."""
    sds = [math.sqrt(float(binomial_variance(cell.mean, cell.trials))) for key, cell in design.cells.items()
           if key[1] != BASE]
    return float(np.ceil(100 * max(sds)) / 100) if sds else ASSUMED_SEED_SD


def ledger_power(claim_id: str, evidence: Evidence, replicates: int = 400) -> tuple[float, str]:
    """The ledger's ``power`` — P(reproduced) of the claim's rule, gated, on the design the evidence
    represents, with the paper's effect (NaN where no design can be read) — and where its seed spread came
    from and how its items were simulated (paired at the measured correlation, or independent; "" for event
    claims and missing designs)."""
    design = design_from_evidence(claim_id, evidence)
    if design is None:
        return math.nan, ""
    if isinstance(design, EventDesign):
        return round(event_power(design), 3), ""
    power = simulate_table(design, effect=True, replicates=replicates).get(REPRODUCED, 0.0)
    return round(power, 3), f"{design.spread_source}; {design.item_source}"


@functools.lru_cache(maxsize=None)
def _paper_mean(claim_id: str, setup: str, method: str, metric: str) -> float:
    """The paper's value for a cell (mean over the paper's benchmarks), or 50 where the paper has none: read where
    the claim's power design says (its ``paper_mean``, or its tables, model and setting in
    :func:`gdpo.reporting.paper_numbers.paper_numbers`)."""
    power = table_power(claim_id)
    if power.paper_mean is not None:
        return float(power.paper_mean(setup, method, metric))
    numbers = pn.paper_numbers()
    model = power.paper_model or setup
    setting = setup if power.paper_settings and method != BASE else ""
    rows = numbers[numbers["table"].isin(list(power.paper_tables)) & (numbers["model"] == model)
                   & (numbers["method"] == method) & (numbers["metric"] == metric)
                   & (numbers["setting"] == setting)]
    return float(rows["value"].mean()) if not rows.empty else 50.0


def _evaluated_items(family: str, metric: str, benchmarks: Sequence[str]) -> float:
    """Effective items of a run's value over ``benchmarks`` evaluated whole (:data:`EVALUATED_ITEMS`)."""
    sizes = [EVALUATED_ITEMS[b] for b in benchmarks if b in EVALUATED_ITEMS]
    if family == "code" and metric != "pass":
        sizes = [EVALUATED_ITEMS[b] for b in benchmarks if b in EVALUATED_ITEMS and b != "Taco"]
    return len(sizes) ** 2 / sum(1 / n for n in sizes) if sizes else 100.0


def designs_from_config(config: Mapping, seed_sd: float | None = None,
                        item_correlation: float = 0.0) -> dict[str, TableDesign | EventDesign]:
    """Every claim's design in a workflow config (a loaded YAML; ``full_grid`` not applied): seeds and
    methods per task, items per run (``eval_size`` × the task's benchmarks, or what the workflow evaluates
    when a task sets no ``eval_size``: :data:`EVALUATED_ITEMS`), samples per item, training steps, prompts per batch; reference rates
    are the paper's. ``seed_sd``: the seed spread (points; None: :func:`default_seed_sd` per design). The claims are
    those whose language-model rule registered a table or event power design, in the order they were registered;
    a claim is left out where the config does not map its setups or its tasks do not train its methods."""
    tasks = config.get("tasks") or {}
    reporting = config.get("reporting") or {}
    evaluation = config.get("evaluation") or {}

    def seeds_of(task: str) -> int:
        return len((tasks.get(task) or {}).get("seeds") or config.get("seeds") or [0])

    def methods_of(task: str) -> list[str]:
        # By the names the runs go by: a method with options (gdpo_clip3) is not its method (gdpo).
        entries = (tasks.get(task) or {}).get("methods") or config.get("methods") or []
        return [variant.name for variant in method_variants(entries)]

    def samples_of(task: str) -> int:
        spec = tasks.get(task) or {}
        return int((spec.get("evaluation") or {}).get("num_samples", evaluation.get("num_samples", 1)) or 1)

    def items_of(task: str, metric: str) -> float:
        spec = tasks.get(task) or {}
        size = (spec.get("evaluation") or {}).get("eval_size", evaluation.get("eval_size"))
        family = spec.get("family", "")
        if size is None:
            return _evaluated_items(family, metric, list(pn.PAPER_BENCHMARKS.get(family, {}).values()))
        data = spec.get("eval_data") or [None]
        benchmarks = len(data) if isinstance(data, list) else 1
        return float(size * benchmarks)

    from gdpo.plan import describe_runs

    described = describe_runs(config)  # steps and prompts per batch, as the ledger is told them
    designs: dict[str, TableDesign | EventDesign] = {}
    figures = reporting.get("figures") or {}
    for rule in designed((TablePower, EventPower)):
        claim_id, power = rule.claim_id, rule.design
        if isinstance(power, EventPower):
            task = figures.get(power.figure)
            if task and all(m in methods_of(task) for m in power.methods):
                designs[claim_id] = EventDesign(claim_id, seeds_of(task), described[task]["max_steps"],
                                                described[task]["prompts_per_batch"])
            continue
        setups = power.setups_in(reporting, lambda task, method: method in methods_of(task))
        methods = power.methods
        if not setups or any(m not in methods_of(t) for t in setups.values() for m in methods if m != BASE):
            continue
        metrics = power.metrics_for(list(setups))
        cells = {}
        for setup, task in setups.items():
            for method in methods:
                for metric in metrics:
                    seeds = 1 if method == BASE else seeds_of(task)
                    cells[(setup, method, metric)] = Cell(_paper_mean(claim_id, setup, method, metric),
                                                          items_of(task, metric), seeds, samples_of(task))
        design = TableDesign(claim_id, tuple(setups), cells, 0.0, min(seeds_of(t) for t in setups.values()),
                             min(items_of(t, metrics[0]) for t in setups.values()), item_correlation=item_correlation)
        if seed_sd is None:
            sd = default_seed_sd(design)
            design = dataclasses.replace(design, seed_sd=sd, spread_source=(
                f"{sd:.2f} pts, the default: the evaluation's own binomial sd of a run's score "
                f"({design.items:,.0f} items × {max(c.samples for c in cells.values())} samples)"))
        else:
            design = dataclasses.replace(design, seed_sd=seed_sd, spread_source=f"{seed_sd:g} pts, given")
        designs[claim_id] = design
    return designs


def designs_measured(config: Mapping, summary_dir: str | Path) -> dict[str, TableDesign | EventDesign]:
    """:func:`designs_from_config`'s designs, each table claim's re-based on what a built scale measured (a
    pilot's ``results/<scale>/summary/``: eval.csv, steps.csv, items.json, checked against their recorded digests):
    the reference rates, the seed spread per (setup, metric) and the paired item correlation of its runs, as the
    ledger's power column reads them (:func:`design_from_evidence`), at the config's seeds and evaluated items
    per run. A claim whose runs the scale lacks keeps the config's design and says so in its ``spread_source``;
    event claims keep the config's design (their power is exact over seeds, from the paper's event rates).

    Raises:
        FileNotFoundError: ``summary_dir`` has no eval.csv (the scale's summaries are not built).
    """
    from gdpo.plan import describe_runs
    from gdpo.reporting.aggregate import check_summary_digests

    summary_dir = Path(summary_dir)
    eval_csv, steps_csv, items_json = (summary_dir / name for name in ("eval.csv", "steps.csv", "items.json"))
    if not eval_csv.is_file():
        raise FileNotFoundError(
            f"{eval_csv} does not exist: build the measured scale's summaries first, e.g. `snakemake "
            f"{eval_csv} {steps_csv} --configfile <its config>` (gdpo aggregate writes them).")
    check_summary_digests(eval_csv, steps_csv if steps_csv.is_file() else None,
                          items_json if items_json.is_file() else None)
    evidence = Evidence(pd.read_csv(eval_csv), pd.read_csv(steps_csv) if steps_csv.is_file() else None,
                        config.get("reporting") or {}, str(summary_dir.parent.name), eval_path=str(eval_csv),
                        steps_path=str(steps_csv), runs=describe_runs(config),
                        items=json.loads(items_json.read_text(encoding="utf-8")) if items_json.is_file() else None)
    designs = designs_from_config(config)
    for claim_id, planned in designs.items():
        if not isinstance(planned, TableDesign):
            continue
        measured = design_from_evidence(claim_id, evidence)
        if measured is None:
            designs[claim_id] = dataclasses.replace(planned, spread_source=(
                f"{planned.spread_source} (not measured: {summary_dir} lacks the claim's runs)"))
            continue
        scale = planned.items / measured.items if math.isfinite(measured.items) and measured.items > 0 else 1.0
        designs[claim_id] = dataclasses.replace(
            measured.with_seeds(planned.seeds).with_items(scale),
            spread_source=f"measured on {summary_dir}: {measured.spread_source}; {measured.item_source}; "
                          f"rates of its runs")
    return designs


def claim_runs(config: Mapping) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """For each claim :func:`designs_from_config` finds in ``config``: the tasks whose runs decide it and the
    trained methods it compares (``base``, evaluated once per task, left out) — what its seeds cost. Both are its
    power design's: an event claim's figure task, a table claim's tasks of the setups its design uses."""
    reporting = config.get("reporting") or {}
    figures = reporting.get("figures") or {}
    tasks_of = config.get("tasks") or {}

    def trains(task: str, method: str) -> bool:
        entries = (tasks_of.get(task) or {}).get("methods") or config.get("methods") or []
        return method in [variant.name for variant in method_variants(entries)]

    runs = {}
    for claim_id, design in designs_from_config(config).items():
        power = design_of(claim_id)
        if isinstance(power, EventPower):
            tasks, methods = [figures[power.figure]], power.methods
        else:
            setups = power.setups_in(reporting, trains)
            tasks, methods = [setups[setup] for setup in design.setups], power.methods
        runs[claim_id] = (tuple(dict.fromkeys(tasks)), tuple(m for m in methods if m != BASE))
    return runs


#: Simulated workflows behind a stated power (`gdpo power`, the calibration table): its standard error is at most
#: 0.011, so a check against an independent simulation of as many workflows agrees within ±0.03.
STATED_REPLICATES = 2000
#: How the power plan models a run's score (named wherever a power is printed; :func:`variance_model`).
VARIANCE_MODEL = ("score = method's rate + normal seed spread, measured by independent binomial item draws "
                  "(items × samples, GDPO's and GRPO's items not paired); events: binomial over seeds, exact")
#: The item correlation `gdpo power` plans with by default: below every correlation of two methods' item
#: outcomes measured on our runs (`gdpo item-pairing`: 0.68–0.81 tool calling, 0.66–1.00 math, on the
#: cpu-evidence samples), since the paper models' is unmeasured.
DEFAULT_ITEM_CORRELATION = 0.5


def variance_model(item_correlation: float) -> str:
    """The variance model's description at item correlation ρ (ρ = 0: :data:`VARIANCE_MODEL`)."""
    if not item_correlation:
        return VARIANCE_MODEL
    return (f"score = method's rate + normal seed spread, measured on items both methods answer (paired items: "
            f"outcomes correlated at ρ = {item_correlation:g}, normal approximation of items × samples draws; the "
            "rule floors each difference by the paired item noise); events: binomial over seeds, exact")


def power_of(design: TableDesign | EventDesign, replicates: int = 1000, gated: bool = True,
             collapse_rate: float = DEFAULT_COLLAPSE_RATE) -> float:
    """P(``reproduced``) of the design's rule under the paper's effect. A table claim's runs collapse at
    ``collapse_rate`` each, counting with their scores: the power is that of the rule times the probability that
    collapse leaves a comparison (:func:`gdpo.reporting.verdicts.validity.comparable_probability`)."""
    if isinstance(design, EventDesign):
        return event_power(design, gated)
    power = simulate_table(design, effect=True, replicates=replicates, gated=gated).get(REPRODUCED, 0.0)
    return power * comparable_probability(design.seeds, collapse_rate) if collapse_rate else power


def power_is_reached(design: TableDesign | EventDesign, target: float, replicates: int = 400,
                     confirm: int = 4000, collapse_rate: float = DEFAULT_COLLAPSE_RATE) -> bool:
    """Whether the gated power of ``design`` reaches ``target``: exact for event claims; for table claims a
    ``replicates`` simulation, repeated with ``confirm`` replicates where the first lies within three of its
    standard errors of the target (near the threshold the cheap estimate would land a grid step off). Every
    call draws the same random numbers (common random numbers: seed 0), so designs compared differ by their
    design, not by their draws."""
    return decided_power(design, target, replicates, confirm, collapse_rate) >= target


def decided_power(design: TableDesign | EventDesign, target: float, replicates: int = 400,
                  confirm: int = 4000, collapse_rate: float = DEFAULT_COLLAPSE_RATE) -> float:
    """The gated power :func:`power_is_reached` compares with ``target``: exact for event claims; for table claims
    a ``replicates`` simulation, or a ``confirm`` one where the first lies within three of its standard errors of
    the target (the power ``gdpo plan --budget-gpu-hours`` states for the seeds it proposes)."""
    if isinstance(design, EventDesign):
        return power_of(design)
    power = power_of(design, replicates, collapse_rate=collapse_rate)
    if abs(power - target) < 3 * math.sqrt(target * (1 - target) / replicates):
        power = power_of(design, confirm, collapse_rate=collapse_rate)
    return power


def searched_design(design: TableDesign | EventDesign) -> TableDesign | EventDesign:
    """The design :func:`seeds_for_power` searches the seeds of: at least the claim's minimum items (table claims)
    or its minimum steps and prompts per batch (event claims), assumed run."""
    minimum = CLAIMS_BY_ID[design.claim_id].minimum
    if isinstance(design, TableDesign) and design.items < minimum.items:
        return design.with_items(minimum.items / design.items)
    if isinstance(design, EventDesign):  # the steps and batch the claim needs, assumed run
        return dataclasses.replace(design, steps=max(design.steps or 0, minimum.steps),
                                   prompts_per_batch=max(design.prompts_per_batch or 0, minimum.prompts_per_batch))
    return design


def seeds_for_power(design: TableDesign | EventDesign, target: float = 0.8, max_seeds: int = 64,
                    replicates: int = 400, collapse_rate: float = DEFAULT_COLLAPSE_RATE,
                    confirm: int | None = None) -> int | None:
    """Fewest seeds per method (≥ the claim's minimum) at which the gated power reaches ``target`` (None if
    not by ``max_seeds``): every seed count up to 16, then every fourth up to ``max_seeds``, the first that
    reaches it refined by bisection from the one before; each step decided by :func:`power_is_reached`, its
    confirming simulation ``confirm`` replicates (default ten times ``replicates``)."""
    confirm = 10 * replicates if confirm is None else confirm
    low = CLAIMS_BY_ID[design.claim_id].minimum.seeds
    design = searched_design(design)
    # Every seed count up to 16, then every fourth, refined to the seed between the last two (power need not rise
    # with the seeds everywhere: where the paper's effect is partly clipped at 0 % or 100 %, its measured effect
    # is below the claim's δ, and many seeds then show it smaller, so no search may assume it).
    for seeds in range(low, min(16, max_seeds) + 1):
        if power_is_reached(design.with_seeds(seeds), target, replicates, confirm, collapse_rate):
            return seeds
    below = 16
    for reached in range(20, max_seeds + 1, 4):
        if power_is_reached(design.with_seeds(reached), target, replicates, confirm, collapse_rate):
            while reached - below > 1:
                middle = (below + reached) // 2
                if power_is_reached(design.with_seeds(middle), target, replicates, confirm, collapse_rate):
                    reached = middle
                else:
                    below = middle
            return reached
        below = reached
    return None


def items_for_power(design: TableDesign, target: float = 0.8, max_scale: float = 256,
                    replicates: int = 400) -> float | None:
    """Fewest evaluated items per run (the design's benchmarks scaled up together) at which the gated power
    reaches ``target`` with the design's seeds, at least the claim's minimum (None if not by ``max_scale``
    times today's)."""
    design = design.with_seeds(max(design.seeds, CLAIMS_BY_ID[design.claim_id].minimum.seeds))
    scale = 1.0
    while scale <= max_scale:
        if power_of(design.with_items(scale), replicates) >= target:
            return design.items * scale
        scale *= 2
    return None


def break_even_seed_sd(design: TableDesign, high: float = 5.0) -> float:
    """The largest seed spread (points) at which the paper's numbers, expanded by :func:`paper_number_cells`,
    still give ``reproduced`` for the claim (0 if none does). Spreads below half an item's worth are ties,
    decided by the items instead, so the search runs over a grid from 0.01 points up and refines the last
    spread that reproduces by bisection."""
    def reproduced(sd: float) -> bool:
        return _decide(dataclasses.replace(design, seed_sd=sd), paper_number_cells(design, sd)) == REPRODUCED

    grid = np.geomspace(0.01, high, 80)
    passing = [i for i, sd in enumerate(grid) if reproduced(sd)]
    if not passing:
        return 0.0
    last = passing[-1]
    if last == len(grid) - 1:
        return float(high)
    low, upper = float(grid[last]), float(grid[last + 1])
    for _ in range(30):
        middle = (low + upper) / 2
        low, upper = (middle, upper) if reproduced(middle) else (low, middle)
    return low


# --------------------------------------------------------------------------------------------------
# The paper's own numbers as per-seed data
# --------------------------------------------------------------------------------------------------

def standard_offsets(seeds: int) -> np.ndarray:
    """(seeds,) fixed offsets with mean 0 and sample sd 1 (normal scores), so that per-seed values built as
    value + sd × offset have exactly the paper's mean and the stated spread."""
    if seeds < 2:
        return np.zeros(seeds)
    z = stats.norm.ppf((np.arange(1, seeds + 1) - 0.375) / (seeds + 0.25))
    return (z - z.mean()) / z.std(ddof=1)


def paper_number_cells(design: TableDesign, seed_sd: float = ASSUMED_SEED_SD) -> dict:
    """Cells holding the paper's numbers as per-seed data: each method's per-seed values are its paper value
    ± a spread whose paired differences have sd √2 × ``seed_sd`` (what two independent runs with spread
    ``seed_sd`` give); a value the paper reports as 0.00 stays 0 on every seed, and the base model is one
    value (evaluated once). Item variances from the design's items."""
    offsets = {k: standard_offsets(c.seeds) for k, c in design.cells.items()}
    cells = {}
    for key, cell in design.cells.items():
        setup, method, metric = key
        mean = (_paper_mean(design.claim_id, setup, method, metric)
                if table_power(design.claim_id).has_paper_numbers else cell.mean)
        sign = 1.0 if method in (Method.GDPO, Method.GRPO_NOSTD) else -1.0
        spread = 0.0 if mean == 0.0 or method == "base" else math.sqrt(2) / 2 * seed_sd
        values = mean + sign * spread * offsets[key]
        cells[key] = Sample(tuple(range(cell.seeds)), values, binomial_variance(values, cell.items),
                                  np.full(cell.seeds, cell.items), once=method == BASE)
    return cells


def paper_number_evals(design: TableDesign, seed_sd: float = ASSUMED_SEED_SD,
                       tasks: Mapping[str, str] | None = None) -> pd.DataFrame:
    """eval.csv rows holding :func:`paper_number_cells` (task per setup from ``tasks``, else the setup label)."""
    rows = []
    for (setup, method, metric), sample in paper_number_cells(design, seed_sd).items():
        task = (tasks or {}).get(setup, setup)
        items = design.cells[(setup, method, metric)].items
        for seed, value in zip(sample.seeds, sample.values):
            rows.append({"task": task, "method": method, "seed": seed, "benchmark": "paper", "metric": metric,
                         "value": float(value), "n_items": int(round(items)), "note": "", "health": "healthy"})
    return pd.DataFrame(rows)


def power_report(config: Mapping, seed_sd: float | None = None, target: float = 0.8,
                 replicates: int = 400, collapse_rate: float = DEFAULT_COLLAPSE_RATE,
                 item_correlation: float = 0.0, stated_replicates: int = STATED_REPLICATES,
                 designs: Mapping[str, TableDesign | EventDesign] | None = None) -> pd.DataFrame:
    """What `gdpo power` prints: per claim the config can decide, its design, the power of its rule (gated by
    the claim's minimum; ``stated_replicates`` simulated workflows, exact for event claims; table claims at a
    run collapse rate ``collapse_rate``), the fewest seeds per method for ``target`` at the design's items
    (:func:`seeds_for_power`), and the fewest evaluated items per run for ``target`` at its seeds (table claims).
    The variance model (:data:`VARIANCE_MODEL`): each run's score is its method's rate + a normal seed spread,
    measured by independent binomial draws over items × samples, or, at ``item_correlation`` ρ > 0, on items both
    methods answer (:func:`variance_model`); event claims: independent seeds, binomial event counts. ``designs``
    (e.g. :func:`designs_measured`) replaces the config's own."""
    records = []
    if designs is None:
        designs = designs_from_config(config, seed_sd, item_correlation)
    for claim_id, design in designs.items():
        minimum = CLAIMS_BY_ID[claim_id].minimum
        if isinstance(design, EventDesign):
            short = minimum.shortfall(design.seeds, steps=design.steps, prompts_per_batch=design.prompts_per_batch)
            items, items_needed = "—", "—"
        else:
            short = minimum.shortfall(design.seeds, design.items)
            items = f"{design.items:,.0f}"
            needed = items_for_power(design, target, replicates=replicates)
            items_needed = "not by items alone" if needed is None else f"{needed:,.0f}"
        seeds_needed = seeds_for_power(design, target, replicates=replicates, collapse_rate=collapse_rate)
        records.append({"claim": claim_id, "seeds": design.seeds, "items/run": items,
                        "spread": f"{design.seed_sd:.2f}" if isinstance(design, TableDesign) else "—",
                        "steps": getattr(design, "steps", None) or "—",
                        "power": round(power_of(design, stated_replicates, collapse_rate=collapse_rate), 2),
                        f"seeds for {target:g}": seeds_needed if seeds_needed is not None else "more than 64",
                        f"items for {target:g}": items_needed,
                        "below the minimum": "; ".join(short) or "—"})
    return pd.DataFrame(records)


def calibration_table(configs: Mapping[str, Mapping], replicates: int = STATED_REPLICATES) -> pd.DataFrame:
    """Per config and claim, at the config's design and at the smallest design the gate admits (its minimum
    seeds, and for table claims its minimum items): seeds, items per run, the seed spread (the default,
    :func:`default_seed_sd`), whether the minimum is met, and the three checks of :func:`calibration_checks`
    (bare rule, not gated, so that a design below the minimum is calibrated too): under no difference the rate
    of a verdict in the paper's direction, under the paper's effect the rate of ``not reproduced``, the stated
    power and an independent simulation of it; ``holds``: all within bounds. Event claims are exact."""
    records = []
    for name, config in configs.items():
        for claim_id, design in designs_from_config(config).items():
            minimum = CLAIMS_BY_ID[claim_id].minimum
            smallest = (smallest_gated(design) if isinstance(design, TableDesign)
                        else design.with_seeds(minimum.seeds))
            for label, sized in (("config", design), ("smallest gated", smallest)):
                checks = calibration_checks(sized, replicates)
                table = isinstance(sized, TableDesign)
                meets = not (minimum.shortfall(sized.seeds, sized.items) if table else minimum.shortfall(
                    sized.seeds, steps=sized.steps, prompts_per_batch=sized.prompts_per_batch))
                records.append({"config": name, "claim": claim_id, "design": label, "seeds": sized.seeds,
                                "items": round(sized.items) if table else "—",
                                "spread": round(sized.seed_sd, 2) if table else "—", "meets_minimum": meets,
                                **checks, "holds": not calibration_failures_of(checks)})
    return pd.DataFrame(records)


def calibration_checks(design: TableDesign | EventDesign, replicates: int = STATED_REPLICATES) -> dict[str, float]:
    """The calibration of a claim's rule (ungated) at ``design``: ``null_in_direction``, the largest rate of
    ``reproduced`` or ``smaller`` when the methods do not differ (table claims: at the design's spread and at no
    seed spread; event claims: exact, worst over the common rate); ``effect_not_reproduced``, the rate of ``not
    reproduced`` under the paper's effect (event claims: the worst over every pair of rates a effect δ apart,
    and at the paper's rates); ``power``, the stated power (:func:`power_of`, ungated; exact for events);
    ``power_check``, an independent simulation of it (another ``replicates`` workflows, other random numbers;
    events: the exact value again)."""
    if isinstance(design, EventDesign):
        worst = event_null_worst_case(design, gated=False)
        rate_a = min(1.0, EVENT_BASE_RATE + EVENT_EFFECTS[design.claim_id])
        effect = event_probabilities(design, rate_a, EVENT_BASE_RATE, gated=False)
        power = effect.get(REPRODUCED, 0.0)
        return {"null_in_direction": worst[REPRODUCED],
                "effect_not_reproduced": max(event_false_refutation_worst_case(design),
                                             effect.get(NOT_REPRODUCED, 0.0)),
                "power": power, "power_check": power}
    null = max(sum(simulate_table(dataclasses.replace(design, seed_sd=sd), False, replicates, seed=11, gated=False)
                   .get(v, 0.0) for v in IN_PAPERS_DIRECTION) for sd in (0.0, design.seed_sd))
    effect = simulate_table(design, True, replicates, seed=12, gated=False)
    return {"null_in_direction": null, "effect_not_reproduced": effect.get(NOT_REPRODUCED, 0.0),
            "power": power_of(design, replicates, gated=False), "power_check": effect.get(REPRODUCED, 0.0)}


#: Bounds of the calibration: false positives and false refutations at most 5 %; stated power within ±0.03 of
#: an independent simulation.
FALSE_DECISION_BOUND = 0.05
POWER_TOLERANCE = 0.03


def calibration_failures_of(checks: Mapping[str, float]) -> list[str]:
    """Which of :func:`calibration_checks`' bounds fail, as text (empty: all hold)."""
    failures = []
    if checks["null_in_direction"] > FALSE_DECISION_BOUND:
        failures.append(f"no difference gives reproduced/smaller {checks['null_in_direction']:.3f}")
    if checks["effect_not_reproduced"] > FALSE_DECISION_BOUND:
        failures.append(f"the paper's effect gives not reproduced {checks['effect_not_reproduced']:.3f}")
    if abs(checks["power"] - checks["power_check"]) > POWER_TOLERANCE:
        failures.append(f"stated power {checks['power']:.3f} against {checks['power_check']:.3f} simulated")
    return failures


def smallest_gated(design: TableDesign) -> TableDesign:
    """The smallest design the claim's minimum admits with ``design``'s setups and rates: its minimum seeds
    and evaluated items per run, one sample per item, the default spread."""
    minimum = CLAIMS_BY_ID[design.claim_id].minimum
    sized = design.with_seeds(minimum.seeds).with_items(max(minimum.items, 1) / design.items)
    cells = {k: dataclasses.replace(c, samples=1) for k, c in sized.cells.items()}
    sized = dataclasses.replace(sized, cells=cells)
    return dataclasses.replace(sized, seed_sd=default_seed_sd(sized), spread_source="default")


def calibration_failures(design: TableDesign, replicates: int = STATED_REPLICATES) -> list[str]:
    """What the calibration demands of a table claim's rule at ``design``, as a list of failures (empty: it
    holds): :func:`calibration_checks` at the design's spread and at no seed spread, within
    :func:`calibration_failures_of`'s bounds."""
    failures = []
    for sd in (design.seed_sd, 0.0):
        sized = dataclasses.replace(design, seed_sd=sd)
        where = f"{design.claim_id} at {design.seeds} seeds, {design.items:,.0f} items, spread {sd:.2f}"
        failures += [f"{where}: {failure}" for failure in calibration_failures_of(calibration_checks(sized, replicates))]
    return failures


__all__ = ["ASSUMED_SEED_SD", "Cell", "EventDesign", "TableDesign", "break_even_seed_sd", "calibration_checks",
           "calibration_table",
           "curve_null", "designs_from_config", "event_null_worst_case", "event_power", "item_pairing",
           "ItemPairing", "ledger_power",
           "paper_number_cells", "paper_number_evals", "power_of", "seeds_for_power", "items_for_power",
           "simulate_table", "table_power", "event_power_design"]


# --------------------------------------------------------------------------------------------------
# Scale sim: the table-like sim rows, simulated from the bench's own cells
# --------------------------------------------------------------------------------------------------

def _sim_design(claim_id: str, per_seed: pd.DataFrame):
    """(cells read from the bench, the decision on cells, the shift of each cell under the paper's effect, each
    cell's reference cell), as the claim's sim rule's power design builds them from its study
    (:class:`~gdpo.reporting.verdicts.registry.SimPower`)."""
    rule = rule_for(claim_id, Scale.SIM)
    if not isinstance(rule.design, SimPower):
        raise KeyError(f"{claim_id} has no sim table design")
    return rule.design.design(per_seed, rule.study)


def simulate_sim(claim_id: str, per_seed: pd.DataFrame, effect: bool, replicates: int = 400, seed: int = 0,
                 seed_sd: float | None = None) -> dict[str, float]:
    """Share of each verdict of a sim table row's decision (the ledger's own) over ``replicates`` simulated
    benches with the study's cells: every cell at its reference method's measured rate (null), or shifted by
    the paper's effect in points (``effect``); each seed's value its rate + the seed spread (measured over
    the study, :func:`estimate_seed_spread`, unless given), measured by the cell's sampled completions
    (binomial)."""
    cells, decide, shifts, reference = _sim_design(claim_id, per_seed)
    if seed_sd is None:
        spread = estimate_seed_spread(list(cells.values()))
        seed_sd = spread.upper if spread is not None else 0.0
    rng = np.random.default_rng(seed)
    draws = {}
    for key, sample in cells.items():
        base = float(np.mean(cells[reference[key]].values))
        mean = base + shifts[key] if effect else base
        if effect and shifts[key] == -math.inf:
            mean = 0.0
        trials = max(1, int(np.nanmax(sample.items))) if np.isfinite(sample.items).any() else 10_000
        rates = np.clip(mean + seed_sd * rng.standard_normal((replicates, len(sample))), 0.0, 100.0)
        values = 100.0 * rng.binomial(trials, rates / 100.0) / trials
        draws[key] = (values, binomial_variance(values, trials), sample)
    counts: dict[str, int] = {}
    for r in range(replicates):
        simulated = {key: Sample(sample.seeds, values[r], variances[r], sample.items)
                     for key, (values, variances, sample) in draws.items()}
        outcome = decide(simulated)
        counts[outcome] = counts.get(outcome, 0) + 1
    return {k: v / replicates for k, v in counts.items()}


def sim_power(claim_id: str, per_seed: pd.DataFrame, replicates: int = 400) -> tuple[float, str]:
    """A sim table row's power, defined as every row's (P(reproduced) if the paper's effect held, here in every
    cell, in points of the bench's success rates), and what it assumed."""
    cells = _sim_design(claim_id, per_seed)[0]
    spread = estimate_seed_spread(list(cells.values()))
    power = simulate_sim(claim_id, per_seed, True, replicates).get(REPRODUCED, 0.0)
    alternative = rule_for(claim_id, Scale.SIM).design.alternative()
    basis = f"in every cell: {alternative}; " + (spread.text() if spread else "no seed spread measured")
    return round(power, 3), basis
