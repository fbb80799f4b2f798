"""Per-seed samples of a claim's metrics, and the intervals of their differences.

A :class:`Sample` is one metric of one (setup, method) over training seeds, with the evaluation's item variance of
each value; :func:`paired`, :func:`shifted` and :func:`pooled` turn samples into the estimates of
:mod:`gdpo.reporting.contract` (bounds at any level, inside the range a difference of percentages can take).
The rules of every scale read their evidence into samples; the calibration
(:mod:`gdpo.reporting.calibration`) simulates them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from gdpo.reporting.contract import Estimate, paired_estimate
from gdpo.reporting.verdicts.items import pair_noise

#: The range of a difference of two percentages (points).
PERCENT_DIFFERENCE = (-100.0, 100.0)


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
    #: Per seed, the run's per-item outcomes (:class:`~gdpo.reporting.verdicts.items.ItemScores`, or
    #: :class:`~gdpo.reporting.verdicts.items.SimulatedItems` in the power plan; None where not recorded): two
    #: samples whose seeds both carry them are floored by the paired item noise, not two binomials.
    outcomes: tuple | None = None

    def outcome(self, index: int):
        return self.outcomes[index] if self.outcomes is not None else None

    def __len__(self) -> int:
        return len(self.values)


def _no_estimate(why: str) -> Estimate:
    return Estimate(math.nan, math.nan, 1, why, PERCENT_DIFFERENCE)


def pair_floor(a: Sample, b: Sample, ia: Sequence[int], ib: Sequence[int]) -> tuple[np.ndarray, str, str]:
    """Per common seed, the noise floor of a − b (points²), what it is, and the discordant items.

    Where both runs of every seed pair carry per-item outcomes of the same items, the floor is the paired
    (item-clustered, Agresti–Min) variance (:func:`gdpo.reporting.verdicts.items.pair_noise`): the items both
    answered do not count twice. Otherwise (evaluations recorded before per-item outcomes were kept, or items
    that differ) the sum of the two runs' binomial variances, as independent items would give; the text names
    which floor was used."""
    pairs = [pair_noise(a.outcome(i), b.outcome(j)) for i, j in zip(ia, ib)]
    binomial = a.variances[list(ia)] + b.variances[list(ib)]
    if not pairs or any(pair is None for pair in pairs):
        # The floor every ledger used before per-item outcomes were kept; its text is unchanged, so a ledger
        # built from such evidence reads as it did.
        return binomial, "the evaluation's binomial noise", ""
    variances = np.array([pair.variance for pair in pairs])
    items = sorted({pair.items for pair in pairs})
    count = f"{items[0]:,}" if len(items) == 1 else f"{items[0]:,}–{items[-1]:,}"
    note = ""
    a_only = [pair.a_only for pair in pairs if not math.isnan(pair.a_only)]
    if a_only:
        b_only = [pair.b_only for pair in pairs if not math.isnan(pair.b_only)]
        note = (f"; discordant items per seed (a better / b better): "
                + ", ".join(f"{int(x)}/{int(y)}" for x, y in zip(a_only, b_only)))
    return variances, f"the paired item noise ({count} items answered by both)", note


def paired(a: Sample, b: Sample) -> Estimate:
    """Estimate of a − b over the seeds both have (:func:`gdpo.reporting.contract.paired_estimate`), inside
    [−100, 100], floored by the paired item noise where both sides carry per-item outcomes (:func:`pair_floor`).
    A reference evaluated once (``once``) pairs with every seed of the other side; its item variance is shared
    by every difference and does not average out. Any other sample pairs only on common seeds."""
    common_variance = 0.0
    if b.once:
        common_variance = float(b.variances[0])
        b = Sample(a.seeds, np.repeat(b.values[:1], len(a)), np.repeat(b.variances[:1], len(a)), b.items,
                   outcomes=None if b.outcomes is None else (b.outcomes[0],) * len(a))
    if a.once:
        common_variance = float(a.variances[0])
        a = Sample(b.seeds, np.repeat(a.values[:1], len(b)), np.repeat(a.variances[:1], len(b)), a.items,
                   outcomes=None if a.outcomes is None else (a.outcomes[0],) * len(b))
    common = [s for s in a.seeds if s in b.seeds] if a.seeds != b.seeds else list(a.seeds)
    if not common:
        return _no_estimate("no seed in common")
    ia = [a.seeds.index(s) for s in common]
    ib = [b.seeds.index(s) for s in common]
    floor, floor_name, note = pair_floor(a, b, ia, ib)
    return paired_estimate(a.values[ia] - b.values[ib], floor, common_variance, PERCENT_DIFFERENCE,
                           floor_name, note)


def shifted(a: Sample, by: float) -> Estimate:
    """Estimate of the mean of ``a`` − ``by`` (one sample against a fixed level, points), inside
    [−by, 100 − by]."""
    return paired_estimate(a.values - by, a.variances, limits=(-by, 100.0 - by))


def pooled(samples: Sequence[tuple[Sample, Sample]]) -> Estimate:
    """Estimate of the mean over setups of a − b, the setups independent samples.

    Each setup is its own paired estimate (:func:`paired`: a − b over the seeds both of its sides have, floored by
    its evaluation's paired item noise); the pooled mean is the mean of the setups' means, its variance
    Σ scale_s² / S², on the Welch–Satterthwaite degrees of freedom (Σ scale_s²)² / Σ (scale_s⁴ / dof_s), which lie
    between the fewest of one setup and their sum. Runs of different setups are never paired by their seed label:
    a seed number means nothing across models, so relabelling one setup's seeds changes nothing, and a setup with
    3 seeds leaves another's 10 all counted. One setup: its :func:`paired` estimate itself."""
    estimates = [paired(a, b) for a, b in samples]
    if len(estimates) == 1:
        return estimates[0]
    return mean_of_independent(estimates, [pair_count(a, b) for a, b in samples])


def pair_count(a: Sample, b: Sample) -> int:
    """The seed pairs :func:`paired` forms from ``a`` and ``b``: the seeds both have; every seed of the other side
    where one is a reference evaluated once (``once``; 1 where both are)."""
    if a.once and b.once:
        return 1
    if a.once or b.once:
        return len((b if a.once else a).seeds)
    return len(set(a.seeds) & set(b.seeds))


def mean_of_independent(estimates: Sequence[Estimate], seeds: Sequence[int] | None = None) -> Estimate:
    """The mean of independent estimates (one per setup): mean Σ mean_s / S, standard error √(Σ scale_s²) / S,
    Welch–Satterthwaite degrees of freedom; inside [−100, 100]. Any estimate without an interval (NaN scale)
    leaves the mean without one, and says which. ``seeds``: each estimate's seed count, for the source text."""
    count = len(estimates)
    means = np.array([e.mean for e in estimates], dtype=float)
    variances = np.array([e.scale ** 2 for e in estimates], dtype=float)
    dofs = np.array([e.dof for e in estimates], dtype=float)
    counts = "" if seeds is None else " (" + ", ".join(str(k) for k in seeds) + " seeds)"
    missing = [i for i, e in enumerate(estimates) if not e.scale > 0]
    if missing:
        why = "; ".join(f"setup {i + 1}: {estimates[i].source}" for i in missing)
        return Estimate(float(means.mean()), math.nan, 1, f"no interval for a setup ({why})", PERCENT_DIFFERENCE)
    total = float(variances.sum())
    dof = total ** 2 / float(np.sum(variances ** 2 / dofs))
    source = (f"mean of {count} setups' paired means{counts}, independent; t on {dof:.1f} degrees of freedom "
              "(Welch–Satterthwaite)")
    return Estimate(float(means.mean()), math.sqrt(total) / count, dof, source, PERCENT_DIFFERENCE)


#: Cells of a claim's samples: (setup label, method, metric) → Sample.
Cells = Mapping[tuple[str, str, str], Sample]


def seeds_compared(cells: Cells, comparisons: Sequence[Sequence[tuple[tuple[str, str, str], tuple[str, str, str]]]]
                   ) -> int:
    """Seeds per compared method that a verdict actually rests on: the fewest seed pairs of any (a, b) cell pair
    (:func:`pair_count`: the seeds both sides have; a reference evaluated once pairs with any seed). A comparison
    listing several pairs (setups whose differences :func:`pooled` averages) rests on each pair's own seeds, never
    on the seeds the setups share: each setup is its own sample."""
    counts = [pair_count(cells[a], cells[b]) for pairs in comparisons for a, b in pairs]
    return min(counts) if counts else 0
