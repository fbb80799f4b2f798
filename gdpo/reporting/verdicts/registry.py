"""The registry of claim rules: one rule per (claim, scale of evidence), added with :func:`claim_rule`.

The ledger (:mod:`gdpo.reporting.ledger`) asks the registry which rules a claim has, in :class:`Scale` order; a new
rule is added in one place, by decorating it. What a rule is called with depends on its scale:

- ``exact``: ``judge(counts, evidence)``, ``counts`` the exact analysis' ``distinct_counts.csv``;
- ``sim``: ``judge(per_seed, evidence)``, ``per_seed`` the bench's ``per_seed.csv``, holding the rule's ``study``;
- ``model``: ``judge(evidence)``, an :class:`~gdpo.reporting.verdicts.model_evidence.Evidence`; a rule that
  ``combines`` other claims gets ``judge(evidence, verdicts)``, their verdict words at this scale by claim.

``evidence`` is the name of the file read, for the row's evidence column. Every rule returns a
:class:`~gdpo.reporting.contract.Verdict`.

**One registration per claim.** A claim is its contract (:class:`~gdpo.reporting.contract.Claim`: statement,
paper effects computed from :mod:`gdpo.reporting.paper_numbers`, minimum evidence; the paper's are
:data:`~gdpo.reporting.contract.CLAIMS`, a new one is added with :func:`register_claim`) and its rules, each
registered with its *power design*: what the ledger's power column, ``gdpo power``, ``gdpo plan`` and
``gdpo calibrate`` simulate for it (:class:`TablePower`: the table or figure it reads, the compared methods, the
metrics, which cells pair, the decision; :class:`EventPower`: the figure, the methods whose event rates differ and
how a synthetic run has the event; :class:`SimPower`: the bench's cells; :class:`NoPower`: why a row has no
power), and, for a table rule, its validity conditions. The calibration (:mod:`gdpo.reporting.calibration`) and
the bill (:mod:`gdpo.reporting.bill`) iterate these registrations and name no claim; ``docs/add-a-claim.md`` is
the recipe for a new claim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum

from gdpo.reporting.contract import CLAIMS, CLAIMS_BY_ID, Claim, Verdict, paper_effect


class Scale(StrEnum):
    """The scales of evidence a rule can judge, in the ledger's order of rows within a claim."""

    #: Exact counts of the exact analysis (C1, C2); no uncertainty.
    EXACT = "exact"
    #: The policy-gradient bench's per-seed outcomes.
    SIM = "sim"
    #: The language-model scales (smoke, mini, cpu-evidence, paper): the workflow's eval.csv and steps.csv. The
    #: ledger labels these rows with the workflow's own scale.
    MODEL = "model"


#: A cell of a table claim: (setup label, method, metric).
Key = tuple[str, str, str]


def table_setups(reporting: Mapping, source: str) -> dict[str, str]:
    """Setup label → task of ``source``, a table of the config's ``reporting:`` block (empty if not mapped)."""
    return {str(k): v for k, v in (((reporting or {}).get("tables") or {}).get(source) or {}).items()}


@dataclasses.dataclass(frozen=True)
class TablePower:
    """The power design of a table claim: how the calibration (:mod:`gdpo.reporting.calibration`) builds the
    claim's design from a config (``gdpo power``, ``gdpo plan``, ``gdpo calibrate``) or from the ledger's evidence
    (the power column), and simulates it through ``decide``.

    Required:
        source: the table (or figure) of the config's ``reporting:`` block that maps the claim's setups to tasks
            (e.g. ``"table1"``; a setup label is the paper's model, or its setting).
        methods: the compared method first, then the reference; ``"base"`` (the untrained model) is evaluated
            once per setup.
        metrics: the metrics the rule reads, in its order, or a function of the setups giving them.
        decide: ``decide(cells, setups)``, the rule's pure decision
            (:class:`~gdpo.reporting.verdicts.decisions.Decision`), fed simulated cells.

    Optional (the defaults fit a claim "compared − reference per setup and metric, the paper's effect added to the
    compared method"):
        setups: ``setups(reporting, trains)`` → setup → task, where ``trains(task, method)`` says whether a task
            trains a method; default: the ``source`` table as mapped. Empty: the config cannot decide the claim.
        reference: ``reference(setup, method, metric)`` → the cell whose mean a cell has under no difference;
            default ``(setup, methods[1], metric)``.
        shift: ``shift(setup, method, metric, reference_mean)`` → points added under the paper's effect;
            default the claim's paper effect (:func:`~gdpo.reporting.contract.paper_effect`, 0 for a setup the
            paper lacks) on the compared method, 0 elsewhere.
        compared: ``compared(setups, metrics)`` → the pairs of cells the rule differences (item pairing);
            default compared against reference per setup and metric.
        seed_pairs: ``seed_pairs(setups, metrics)`` → the comparisons whose common seeds the rule rests on
            (:func:`~gdpo.reporting.verdicts.samples.seeds_compared`); default each pair of ``compared`` alone,
            or with ``pooled`` each metric's pairs over the setups together.
        pooled: the rule pools its setups as independent samples (each setup on its own pairs).
        across_setups: the rule pairs cells across setups (weights against weight 1), not within a setup: the
            evaluation noise a simulated run shares is per metric, and no setup's seeds are trimmed to its pairs.
        paper_tables, paper_model, paper_settings: where the paper's mean of a cell is read
            (:func:`gdpo.reporting.paper_numbers.paper_numbers`: these tables, this model, or the setup label when
            None; ``paper_settings``: the setup label is the trained columns' setting); 50 % where none is given.
        paper_mean: ``paper_mean(setup, method, metric)`` → percent, instead of the tables (a claim whose numbers
            are not in the paper's numbers module).
        has_paper_numbers: False where the paper gives no numbers (its design's own reference means stand in).
        paper_setups: the paper's setups (a config that maps fewer is judged on those, and the row says so).
    """

    source: str
    methods: tuple[str, ...]
    metrics: tuple[str, ...] | Callable[[Sequence[str]], tuple[str, ...]]
    decide: Callable[..., object]
    setups: Callable[[Mapping, Callable[[str, str], bool]], dict[str, str]] | None = None
    reference: Callable[[str, str, str], Key] | None = None
    shift: Callable[[str, str, str, float], float] | None = None
    compared: Callable[[Sequence[str], tuple[str, ...]], list[tuple[Key, Key]]] | None = None
    seed_pairs: Callable[[Sequence[str], tuple[str, ...]], list[list[tuple[Key, Key]]]] | None = None
    pooled: bool = False
    across_setups: bool = False
    paper_tables: tuple[str, ...] = ()
    paper_model: str | None = None
    paper_settings: bool = False
    paper_mean: Callable[[str, str, str], float] | None = None
    has_paper_numbers: bool = True
    paper_setups: tuple[str, ...] = ()

    def metrics_for(self, setups: Sequence[str]) -> tuple[str, ...]:
        """The metrics the rule reads for these setups."""
        return tuple(self.metrics(setups) if callable(self.metrics) else self.metrics)

    def setups_in(self, reporting: Mapping, trains: Callable[[str, str], bool]) -> dict[str, str]:
        """Setup → task of the claim in a ``reporting:`` block (``trains(task, method)``: whether a task trains a
        method)."""
        return self.setups(reporting, trains) if self.setups else table_setups(reporting, self.source)

    def reference_of(self, setup: str, method: str, metric: str) -> Key:
        """The cell whose mean (setup, method, metric) has under no difference."""
        return self.reference(setup, method, metric) if self.reference else (setup, self.methods[1], metric)

    def shift_of(self, claim_id: str, setup: str, method: str, metric: str, reference: float) -> float:
        """Points the paper's effect adds to the cell (setup, method, metric), whose reference mean is
        ``reference``."""
        if self.shift:
            return self.shift(setup, method, metric, reference)
        if method != self.methods[0]:
            return 0.0
        try:
            return paper_effect(claim_id, setup, metric)
        except KeyError:
            return 0.0

    def compared_cells(self, setups: Sequence[str]) -> list[tuple[Key, Key]]:
        """The (compared cell, reference cell) pairs the rule differences."""
        metrics = self.metrics_for(setups)
        if self.compared:
            return self.compared(setups, metrics)
        a, b = self.methods[:2]
        return [((s, a, r), (s, b, r)) for s in setups for r in metrics]

    def seed_comparisons(self, setups: Sequence[str]) -> list[list[tuple[Key, Key]]]:
        """The comparisons whose common seeds the rule rests on (each the pairs one estimate is made of)."""
        metrics = self.metrics_for(setups)
        if self.seed_pairs:
            return self.seed_pairs(setups, metrics)
        if self.pooled:
            a, b = self.methods[:2]
            return [[((s, a, r), (s, b, r)) for s in setups] for r in metrics]
        return [[pair] for pair in self.compared_cells(setups)]

    def noise_group(self, setup: str, metric: str) -> tuple[str, ...]:
        """The cells whose runs answer the same items (their simulated evaluation noise shares a component)."""
        return (metric,) if self.across_setups else (setup, metric)


@dataclasses.dataclass(frozen=True)
class EventPower:
    """The power design of an event claim (rates of an event over seeds): the figure of the ``reporting:``
    block naming its task, the methods (a, b) whose rates differ (a's above b's; the claim's smallest effect is
    its contract's ``event_effect``), what the event is called, the paper's setup it stands for, and how the
    calibration's synthetic runs (:func:`gdpo.reporting.calibration.synthetic_run`) have it: ``synthetic``
    (``"collapse"`` or ``"stall"``) and ``detect(steps, correctness, max_length)``, the rule's own detector."""

    figure: str
    methods: tuple[str, str]
    event: str
    synthetic: str
    detect: Callable[..., bool]
    paper_setup: str = ""


@dataclasses.dataclass(frozen=True)
class SimPower:
    """The power design of a table-like rule at scale sim: ``design(per_seed, study)`` → (cells read from the
    bench, the decision on cells, each cell's shift under the paper's effect in points (−inf: to 0 %), each cell's
    reference cell), and ``alternative()``, the effect assumed, in words."""

    design: Callable[..., tuple]
    alternative: Callable[[], str]


@dataclasses.dataclass(frozen=True)
class NoPower:
    """A rule whose row has no simulated power, and why (exact counts; a claim combining others' verdicts; a
    rule that states its own exact power)."""

    why: str


#: Every kind of power design a rule registers.
PowerDesign = TablePower | EventPower | SimPower | NoPower


@dataclasses.dataclass(frozen=True)
class ClaimRule:
    """A registered rule: the claim and scale it judges, the function, the bench study it reads (scale ``sim``),
    the claims whose verdicts it combines (C11), its power design and its validity conditions
    (``condition(evidence, claim_id, gathered)`` → conditions, checked by a table rule before any interval)."""

    claim_id: str
    scale: Scale
    judge: Callable[..., Verdict]
    study: str | None = None
    combines: tuple[str, ...] = ()
    design: PowerDesign | None = None
    conditions: tuple[Callable, ...] = ()


_RULES: dict[tuple[str, Scale], ClaimRule] = {}


def register_claim(claim: Claim) -> Claim:
    """Add a claim's contract to those the ledger judges (after the paper's, in registration order); its rules
    are then registered with :func:`claim_rule`.

    Raises:
        ValueError: a claim of that id is already registered.
    """
    if claim.claim_id in CLAIMS_BY_ID:
        raise ValueError(f"claim {claim.claim_id} is already registered")
    CLAIMS_BY_ID[claim.claim_id] = claim
    return claim


def unregister_claim(claim_id: str) -> None:
    """Remove a claim added with :func:`register_claim` and its rules (tests and experiments; the paper's
    claims stay)."""
    if any(claim.claim_id == claim_id for claim in CLAIMS):
        raise ValueError(f"{claim_id} is one of the paper's claims; it cannot be unregistered")
    CLAIMS_BY_ID.pop(claim_id, None)
    for key in [key for key in _RULES if key[0] == claim_id]:
        del _RULES[key]


def claims() -> list[Claim]:
    """Every registered claim's contract, the paper's first, in order."""
    return list(CLAIMS_BY_ID.values())


def claim_rule(claim_id: str, scale: str, *, study: str | None = None, combines: tuple[str, ...] = (),
               design: PowerDesign | None = None, conditions: Sequence[Callable] = ()
               ) -> Callable[[Callable[..., Verdict]], Callable[..., Verdict]]:
    """Decorator registering ``judge`` as the rule of ``claim_id`` at ``scale`` (the module docstring gives its
    arguments per scale), with its power design (``design``; ``tests/test_claim_registry.py`` requires one of
    every rule of a registered claim) and, for a table rule, its validity conditions; the function itself is
    returned unchanged.

    Raises:
        ValueError: an unknown claim or scale, a sim rule without its study, or a second rule for the same claim
            and scale.

    Example::

        @claim_rule("C3", Scale.SIM, study="format_vs_correctness", design=SimPower(...))
        def judge_c3(per_seed, evidence):
            ...
    """
    if claim_id not in CLAIMS_BY_ID:
        raise ValueError(f"unknown claim {claim_id!r}; the claims are {', '.join(CLAIMS_BY_ID)}")
    try:
        scale = Scale(scale)
    except ValueError:
        raise ValueError(f"unknown scale {scale!r}; the scales are {', '.join(Scale)}") from None
    if (scale == Scale.SIM) != (study is not None):
        raise ValueError(f"{claim_id} at scale {scale}: a rule names the bench study it reads if and only if its "
                         "scale is sim")

    def register(judge: Callable[..., Verdict]) -> Callable[..., Verdict]:
        key = (claim_id, scale)
        if key in _RULES:
            known = _RULES[key].judge
            raise ValueError(f"{claim_id} at scale {scale} already has a rule "
                             f"({known.__module__}.{known.__qualname__})")
        _RULES[key] = ClaimRule(claim_id, scale, judge, study, tuple(combines), design, tuple(conditions))
        return judge

    return register


def designed(kind: type | tuple[type, ...], scale: str = Scale.MODEL) -> list[ClaimRule]:
    """The rules at ``scale`` whose power design is of ``kind``, in the order they were registered."""
    scale = Scale(scale)
    return [rule for rule in _RULES.values() if rule.scale == scale and isinstance(rule.design, kind)]


def design_of(claim_id: str, scale: str = Scale.MODEL) -> PowerDesign | None:
    """The power design of ``claim_id``'s rule at ``scale`` (None: no rule, or none registered with it)."""
    rule = _RULES.get((claim_id, Scale(scale)))
    return rule.design if rule else None


def rules_of(claim_id: str) -> list[ClaimRule]:
    """The rules of a claim, in :class:`Scale` order (empty for a claim no rule judges)."""
    return [_RULES[(claim_id, scale)] for scale in Scale if (claim_id, scale) in _RULES]


def rule_for(claim_id: str, scale: str) -> ClaimRule:
    """The rule of ``claim_id`` at ``scale``.

    Raises:
        KeyError: no such rule; the message lists the registered ones.
    """
    try:
        return _RULES[(claim_id, Scale(scale))]
    except (KeyError, ValueError):
        registered = ", ".join(f"{c} ({s})" for c, s in _RULES)
        raise KeyError(f"no rule for {claim_id} at scale {scale!r}; registered: {registered}") from None
