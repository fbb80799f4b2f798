"""Per-seed samples of a claim's metrics, and the intervals of their differences.

A :class:`Sample` is one metric of one (setup, method) over training seeds, with the evaluation's item variance of
each value; :func:`paired`, :func:`shifted` and :func:`pooled` turn samples into the intervals of
:mod:`gdpo.reporting.contract`. The rules of every scale read their evidence into samples; the calibration
(:mod:`gdpo.reporting.calibration`) simulates them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from gdpo.reporting.contract import LEVEL, Interval, paired_interval


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
        return Interval(math.nan, math.nan, math.nan, "no seed in common", level)
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
        return Interval(math.nan, math.nan, math.nan, "no seed common to every setup", level)
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
