"""The registry of claim rules: one rule per (claim, scale of evidence), added with :func:`claim_rule`.

The ledger (:mod:`gdpo.reporting.ledger`) asks the registry which rules a claim has, in :class:`Scale` order; a new
rule is added in one place, by decorating it. What a rule is called with depends on its scale:

- ``exact``: ``judge(counts, evidence)``, ``counts`` the exact analysis' ``distinct_counts.csv``;
- ``sim``: ``judge(per_seed, evidence)``, ``per_seed`` the bench's ``per_seed.csv``, holding the rule's ``study``;
- ``model``: ``judge(evidence)``, an :class:`~gdpo.reporting.verdicts.model_evidence.Evidence`; a rule that
  ``combines`` other claims gets ``judge(evidence, verdicts)``, their verdict words at this scale by claim.

``evidence`` is the name of the file read, for the row's evidence column. Every rule returns a
:class:`~gdpo.reporting.contract.Verdict`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import StrEnum

from gdpo.reporting.contract import CLAIMS_BY_ID, Verdict


class Scale(StrEnum):
    """The scales of evidence a rule can judge, in the ledger's order of rows within a claim."""

    #: Exact counts of the exact analysis (C1, C2); no uncertainty.
    EXACT = "exact"
    #: The policy-gradient bench's per-seed outcomes.
    SIM = "sim"
    #: The language-model scales (smoke, mini, cpu-evidence, paper): the workflow's eval.csv and steps.csv. The
    #: ledger labels these rows with the workflow's own scale.
    MODEL = "model"


@dataclasses.dataclass(frozen=True)
class ClaimRule:
    """A registered rule: the claim and scale it judges, the function, the bench study it reads (scale ``sim``)
    and the claims whose verdicts it combines (C11)."""

    claim_id: str
    scale: Scale
    judge: Callable[..., Verdict]
    study: str | None = None
    combines: tuple[str, ...] = ()


_RULES: dict[tuple[str, Scale], ClaimRule] = {}


def claim_rule(claim_id: str, scale: str, *, study: str | None = None,
               combines: tuple[str, ...] = ()) -> Callable[[Callable[..., Verdict]], Callable[..., Verdict]]:
    """Decorator registering ``judge`` as the rule of ``claim_id`` at ``scale`` (the module docstring gives its
    arguments per scale); the function itself is returned unchanged.

    Raises:
        ValueError: an unknown claim or scale, a sim rule without its study, or a second rule for the same claim
            and scale.

    Example::

        @claim_rule("C3", Scale.SIM, study="format_vs_correctness")
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
        _RULES[key] = ClaimRule(claim_id, scale, judge, study, tuple(combines))
        return judge

    return register


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
