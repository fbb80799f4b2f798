"""Validity before verdicts: the conditions under which a claim's design could show the claim either way.

Each language-model rule (:mod:`.model`) declares its conditions; they are checked from the evidence (eval.csv,
steps.csv, what each task ran) before any interval is read. A failed condition makes the claim, or the one part
it gates, ``not tested`` (:data:`gdpo.reporting.contract.NOT_TESTED`), and the row names the condition, its
measured value and its threshold. Each condition is data (:class:`Condition`), shown in the ledger's
``validity`` column whether it passed or failed.

The conditions and their thresholds (each passed by the paper's own setup where its numbers can check it;
``tests/test_validity.py``):

- C4, the start's format below :data:`START_FORMAT_MAX` %: "never learns format" is shown by a method that
  stays near 0 % while the others learn; from a start that already has the format, the runs test whether it is
  kept, not whether it is learned (the paper's base: 4.74 %).
- C5 and C10, training signal on at least :data:`MIN_SIGNAL_SHARE` of the steps of the window the rule reads
  (C5: the last 40 % of the run, where the paper's divergence near step 400 of 500 lies; C10: the whole run),
  in the median run of each compared method: a step whose groups all have equal rewards has no advantage and
  no update (gradient norm 0), so neither a fall nor a failure to learn can come from the method.
- C5, room for the length to spike: the completion cap at least :data:`CAP_OVER_LIMIT` × the length limit (the
  paper's 8,000-token cap over its 4,000-token limit) and the longest responses reaching the limit at some step
  of some run of each method (else the length reward never binds).
- C6's accuracy part, training that keeps accuracy (:func:`accuracy_kept`): some compared method's mean accuracy
  at most :data:`MAX_ACCURACY_FALL` points below the start's. The paper's runs keep it (−1.3 to +3.3 points);
  where every method loses more (a length limit met by dropping the working), the part compares ways of losing.
- C6 and C8, accuracy off the ceiling and the floor: every compared method's mean accuracy within
  :data:`ACCURACY_BAND` (outside it the methods have no room to differ by a few points); the Exceed part only
  where some compared run exceeds the limit on at least :data:`MIN_EXCEED` % of its responses (else both sit
  at the floor and a lower Exceed cannot show). A failed part is ``not tested``; the claim is decided on its
  other parts, and the row says so.
- C3's format part: BFCL's format metric scores every item, those whose correct behaviour is not to call
  included (:mod:`gdpo.tasks.tool_calling.bfcl_score`), so declining must be trained: the training data must
  hold items that expect no call (``decline_share`` > 0, or BFCL's own mix). A policy that always calls tops out
  at the share of call items (175 / 277 = 63.2 % on the suite's held-out split).
- C3, C4, C5 and C6, every reward varying in training (:data:`MIN_REWARD_VARIATION`): GRPO w/o std differs
  from GRPO only in the rewards' scales, and a reward constant in almost every group teaches none of the compared
  methods anything. Checked on the first generation rounds (``rewards/<name>/frac_zero_std_groups``, the groups
  before dynamic sampling refills them) of every step of every run of the compared methods, pooled: a share of
  the design's groups, the same for every method, never a ranking of them (a method that learns a reward stops
  varying it; a condition read per method would count that success against the design).
- C3, C5 and C6 (GDPO against GRPO), the estimators differing (:data:`MIN_SEVERAL_VARYING`): where one reward
  alone varies in a group, normalising it or the sum gives the same advantages (up to GDPO's batch scale), so
  GDPO and GRPO differ only in groups where at least two rewards vary (``rewards/frac_groups_several_vary``),
  pooled as above. Each reward can vary often while never in the same groups (one varying early, the other
  late; or on different items); and a limit both methods learn early leaves the rest of training to one shared
  estimator. The paper reports no per-group spread, so neither condition is checked on its numbers; its starts
  leave room for both rewards (base format 4.74 %; base Exceed 35–91 %) and its 512 prompts × 16 rollouts see
  a spread even at 1 % Exceed.
- C3's avg part and C4's parity part, training that raises BFCL avg (:func:`start_exceeded`): some compared
  method's mean avg above the start's. The paper's runs all gain (1.5B: 17.88 % → 29–33 %); where training
  lowers every method's avg below the start's (a policy that calls on every item and loses the items that
  expect none), the avg compares ways of losing, not the gains the claim is about.
- Every table claim, collapse leaving something to compare: a collapsed run (:mod:`gdpo.generation.health`) is
  an outcome of its method and counts with its measured scores; only where more than
  :data:`MAX_COLLAPSED_SHARE` of the runs of every compared method collapsed is the comparison ``not tested``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import binom

from gdpo.reporting.aggregate import COLLAPSED, HEALTH, NOT_JUDGED, run_health
from gdpo.reporting.contract import NOT_TESTED, combine
from gdpo.reporting.verdicts.model_evidence import BASE, Evidence

#: Largest format rate (percent) of the model the RL runs start from at which C4's "never learns format" can
#: be tested: twice the claim's own "no format" rate (5 %), and about twice the paper's base (4.74 %).
START_FORMAT_MAX = 10.0
#: Least share of a window's steps with training signal (in the median run of each method).
MIN_SIGNAL_SHARE = 0.5
#: C5's window starts after this share of the run's steps (steps 301–500 of 500: the paper's step 400 inside).
C5_WINDOW_START = 0.6
#: Least completion cap over the length limit for a length spike to show (the paper's 8,000 / 4,000).
CAP_OVER_LIMIT = 2.0
#: Band of mean accuracy (percent) in which two methods can differ by a few points either way.
ACCURACY_BAND = (5.0, 95.0)
#: Most points of mean accuracy some compared method may lose against the start for C6's accuracy part to be
#: tested. The paper's runs keep the base's accuracy (mean over Table 3's benchmarks, trained minus base: −1.3 to
#: +3.3 points).
MAX_ACCURACY_FALL = 5.0
#: Least Exceed (percent of responses) of some compared run for an Exceed part to be tested.
MIN_EXCEED = 1.0
#: Least share of the compared runs' first-round groups (pooled over every step of every run) in which each reward
#: varies: one group in ten (2 prompts per step: a varying group every fifth step or more).
MIN_REWARD_VARIATION = 0.10
#: Least share of the compared runs' first-round groups (pooled likewise) in which two or more rewards vary: where
#: GDPO's advantages differ from GRPO's at all.
MIN_SEVERAL_VARYING = 0.10
#: Share of a method's runs above which it collapsed "for the most part"; a comparison whose every arm
#: collapsed for the most part has nothing left to compare.
MAX_COLLAPSED_SHARE = 0.5

#: The run collapse rate the power plan assumes unless told (`gdpo power --collapse-rate`): the paper reports
#: no collapsed run. A collapsed run counts with its scores, so collapse costs power only through
#: :func:`comparable_probability` (most runs of every arm collapsed: not tested).
DEFAULT_COLLAPSE_RATE = 0.0

PASSED, FAILED, NOT_CHECKED = "passed", "failed", "not checked"


@dataclasses.dataclass(frozen=True)
class Condition:
    """One validity condition of a claim's design, checked on the evidence.

    ``name``: what is checked; ``measured``: its measured value (NaN where the evidence does not record it);
    ``threshold``: the value it is held against; ``passed``: True, False, or None (not recorded: not checked,
    never a reason for ``not tested``); ``text``: the measured value and what the claim needs, in words;
    ``part``: the part of the claim it gates (``""``: the whole claim), ``setup``: the paper setup it was
    checked on (``""``: the claim's runs)."""

    claim_id: str
    name: str
    measured: float
    threshold: float
    passed: bool | None
    text: str
    part: str = ""
    setup: str = ""

    @property
    def status(self) -> str:
        return NOT_CHECKED if self.passed is None else PASSED if self.passed else FAILED

    def summary(self) -> str:
        """``"start's format: failed (the RL start's format is 47.3 %; the claim needs a start below 10 %)"``."""
        where = f"{self.setup} " if self.setup else ""
        return f"{where}{self.name}: {self.status} ({self.text})"


def conditions_text(conditions: Sequence[Condition]) -> str:
    """The ledger's ``validity`` column: every condition checked, ``; ``-separated."""
    return "; ".join(c.summary() for c in conditions)


def _percent(value: float) -> str:
    return "not recorded" if value != value else f"{value:.1f} %"


# --------------------------------------------------------------------------------------------------
# The conditions, from measured values (pure)
# --------------------------------------------------------------------------------------------------


def start_format(claim_id: str, start_format_percent: float, setup: str = "") -> Condition:
    """C4: the format rate (percent) of the model the RL runs start from below :data:`START_FORMAT_MAX`."""
    passed = None if start_format_percent != start_format_percent else start_format_percent < START_FORMAT_MAX
    return Condition(claim_id, "start's format", start_format_percent, START_FORMAT_MAX, passed,
                     f"the RL start's format is {_percent(start_format_percent)}; the claim needs a start below "
                     f"{START_FORMAT_MAX:g} % (else it tests whether a format is kept, not learned)", setup=setup)


def training_signal(claim_id: str, shares: Mapping[str, Sequence[float]], window: str) -> Condition:
    """C5 / C10: the median run of every method has training signal on ≥ :data:`MIN_SIGNAL_SHARE` of the
    window's steps. ``shares``: method → per-run share of the window's steps with signal (0–1)."""
    medians = {m: float(np.median(v)) for m, v in shares.items() if len(v)}
    if not medians:
        return Condition(claim_id, "training signal", math.nan, MIN_SIGNAL_SHARE, None,
                         f"steps.csv records no gradient norm, reward spread or advantage spread in {window}")
    least = min(medians.values())
    ranges = ", ".join(f"{m} {100 * min(v):.1f}–{100 * max(v):.1f} %" for m, v in shares.items() if len(v))
    return Condition(claim_id, "training signal", least, MIN_SIGNAL_SHARE, least >= MIN_SIGNAL_SHARE,
                     f"steps with training signal (some group's rewards differ) in {window}: {ranges} of the runs' "
                     f"steps (least method median {100 * least:.1f} %); the claim needs at least "
                     f"{100 * MIN_SIGNAL_SHARE:g} % in every method's median run")


def length_cap_room(claim_id: str, cap: float | None, limit: float | None) -> Condition:
    """C5: the completion cap at least :data:`CAP_OVER_LIMIT` × the length limit (tokens)."""
    if not cap or not limit:
        return Condition(claim_id, "cap over the length limit", math.nan, CAP_OVER_LIMIT, None,
                         "the completion cap or the length limit is not recorded (the ledger's --runs)")
    ratio = cap / limit
    return Condition(claim_id, "cap over the length limit", ratio, CAP_OVER_LIMIT, ratio >= CAP_OVER_LIMIT,
                     f"completion cap {cap:g} tokens, length limit {limit:g} (×{ratio:.2f}); the claim needs a cap "
                     f"≥ ×{CAP_OVER_LIMIT:g} the limit (the paper's 8,000 over 4,000) for the length to spike")


def length_reached(claim_id: str, max_lengths: Mapping[str, float], limit: float | None) -> Condition:
    """C5: the longest responses of some run of every method reach the length limit at some step.
    ``max_lengths``: method → the largest ``completions/max_length`` of its runs (tokens)."""
    if not limit or not max_lengths:
        return Condition(claim_id, "lengths reach the limit", math.nan, limit or math.nan, None,
                         "the length limit or the runs' max lengths are not recorded")
    least = min(max_lengths.values())
    shown = ", ".join(f"{m} {v:g}" for m, v in max_lengths.items())
    return Condition(claim_id, "lengths reach the limit", least, float(limit), least >= limit,
                     f"longest response of each method's runs: {shown} tokens; the claim needs responses reaching the "
                     f"length limit ({limit:g}) at some step, where the length reward binds")


def accuracy_band(claim_id: str, means: Mapping[str, float], setup: str = "", part: str = "acc") -> Condition:
    """C6 / C8: every compared method's mean accuracy (percent) within :data:`ACCURACY_BAND`."""
    low, high = ACCURACY_BAND
    shown = ", ".join(f"{m} {v:.1f} %" for m, v in means.items())
    worst = min(means.values(), key=lambda v: min(v - low, high - v))
    return Condition(claim_id, "accuracy off ceiling and floor", worst, high if worst > (low + high) / 2 else low,
                     all(low < v < high for v in means.values()),
                     f"mean accuracy {shown}; the part needs every method within {low:g}–{high:g} %", part, setup)


def accuracy_kept(claim_id: str, means: Mapping[str, float], start: float, setup: str = "",
                  part: str = "acc") -> Condition:
    """C6's accuracy part: some compared method's mean accuracy (percent) no more than :data:`MAX_ACCURACY_FALL`
    points below the start's (the base model's). NaN ``start``: not checked."""
    if math.isnan(start) or not means:
        return Condition(claim_id, "training keeps accuracy", math.nan, start, None,
                         "no accuracy of the start (base model) to compare with", part, setup)
    best = max(means.values())
    shown = ", ".join(f"{m} {v:.1f} %" for m, v in means.items())
    floor = start - MAX_ACCURACY_FALL
    # compared as a fall, rounded: 36.7 − 5 is 31.700000000000003 in floating point
    return Condition(claim_id, "training keeps accuracy", best, floor, round(start - best, 9) <= MAX_ACCURACY_FALL,
                     f"mean accuracy: start {start:.1f} %, {shown}; the part needs some compared method at most "
                     f"{MAX_ACCURACY_FALL:g} points below the start (else it compares ways of losing what the start "
                     "had)", part, setup)


def exceed_room(claim_id: str, largest: float, setup: str = "", part: str = "exceed") -> Condition:
    """C6 / C8 (and C9's Exceed): some compared run's Exceed at least :data:`MIN_EXCEED` %. ``largest``: the
    largest Exceed (percent) of the compared runs."""
    return Condition(claim_id, "some run exceeds", largest, MIN_EXCEED, largest >= MIN_EXCEED,
                     f"largest Exceed of the compared runs {largest:.1f} %; the part needs some run at "
                     f"≥ {MIN_EXCEED:g} % (else both methods sit at the floor)", part, setup)


def declining_trainable(claim_id: str, decline_share: float | None, train_data: str | None, setup: str = "",
                        recorded: bool = True) -> Condition:
    """C3's format part: the training data holds items that expect no call (BFCL's format metric scores them).
    ``decline_share``: the task's share of such training items (None: BFCL's own mix, about 37 %); ``recorded``
    False where the evidence does not say what the task trained on (not checked)."""
    if not recorded:
        return Condition(claim_id, "declining trained", math.nan, 0.0, None,
                         "what the training data held is not recorded (the ledger's --runs)", "format", setup)
    if decline_share is None:
        if train_data in (None, "bfcl_v3_split"):
            return Condition(claim_id, "declining trained", math.nan, 0.0, True,
                             "training keeps BFCL's mix (about 37 % of items expect no call), which the format "
                             "metric scores", "format", setup)
        return Condition(claim_id, "declining trained", math.nan, 0.0, None,
                         f"the share of {train_data} training items that expect no call is not recorded", "format",
                         setup)
    share = float(decline_share)
    return Condition(claim_id, "declining trained", 100 * share, 0.0, share > 0,
                     f"{100 * share:.1f} % of the training items expect no call; BFCL's format metric also scores the "
                     "items whose correct behaviour is not to call (a policy that always calls tops out at 63.2 % "
                     "on the held-out split), so the part needs training items that expect no call", "format", setup)


def rewards_vary(claim_id: str, shares: Mapping[str, float], methods: Sequence[str], setup: str = "") -> Condition:
    """C3–C6: each reward varies within a group in at least :data:`MIN_REWARD_VARIATION` of the compared runs'
    first-round groups, pooled. ``shares``: reward → pooled share (0–1), :func:`reward_variation_shares`."""
    if not shares:
        return Condition(claim_id, "rewards vary", math.nan, MIN_REWARD_VARIATION, None,
                         "steps.csv records no reward's share of constant groups "
                         "(rewards/<name>/frac_zero_std_groups)", setup=setup)
    least = min(shares.values())
    shown = ", ".join(f"{r} {100 * v:.1f} %" for r, v in shares.items())
    return Condition(claim_id, "rewards vary", least, MIN_REWARD_VARIATION, least >= MIN_REWARD_VARIATION,
                     f"groups in which each reward varies (first generation rounds, every step of every run of "
                     f"{', '.join(methods)}, pooled): {shown}; the claim needs every reward varying in at least "
                     f"{100 * MIN_REWARD_VARIATION:g} % (else it teaches none of the compared methods anything)",
                     setup=setup)


def estimators_differ(claim_id: str, share: float | None, methods: Sequence[str], setup: str = "") -> Condition:
    """C3, C5, C6: two or more rewards vary together in at least :data:`MIN_SEVERAL_VARYING` of the compared runs'
    first-round groups, pooled (the only groups where GDPO's advantages differ from GRPO's beyond a scale).
    ``share``: :func:`several_varying_share` (None: not recorded, not checked)."""
    if share is None:
        return Condition(claim_id, "estimators differ", math.nan, MIN_SEVERAL_VARYING, None,
                         "steps.csv records no share of groups where several rewards vary "
                         "(rewards/frac_groups_several_vary)", setup=setup)
    return Condition(claim_id, "estimators differ", share, MIN_SEVERAL_VARYING, share >= MIN_SEVERAL_VARYING,
                     f"groups in which two or more rewards vary (first generation rounds, every step of every run of "
                     f"{', '.join(methods)}, pooled): {100 * share:.1f} %; the claim needs at least "
                     f"{100 * MIN_SEVERAL_VARYING:g} % (where one reward alone varies, GDPO and GRPO give the same "
                     "advantages up to a scale)", setup=setup)


def start_exceeded(claim_id: str, means: Mapping[str, float], start: float, setup: str = "", part: str = "avg",
                   metric: str = "BFCL avg") -> Condition:
    """C3's avg part, C4's parity part: some compared method's mean ``metric`` (percent) above the start's."""
    if math.isnan(start) or not means:
        return Condition(claim_id, "training gains", math.nan, start, None,
                         f"no {metric} of the start (base model) to compare with", part=part, setup=setup)
    best = max(means.values())
    shown = ", ".join(f"{m} {v:.1f} %" for m, v in means.items())
    return Condition(claim_id, "training gains", best, start, best > start,
                     f"{metric}: start {start:.1f} %, {shown}; the part needs some compared method above the start "
                     "(else it compares ways of losing what the start had)", part=part, setup=setup)


def collapse_leaves_comparison(claim_id: str, counts: Mapping[str, tuple[int, int]], setup: str = "") -> Condition:
    """Every table claim: not every compared method collapsed in more than :data:`MAX_COLLAPSED_SHARE` of its runs.
    ``counts``: method → (collapsed runs, runs); the base model's evaluation is no arm (it is not trained)."""
    shares = {m: c / n for m, (c, n) in counts.items() if n and m != BASE}
    least = min(shares.values()) if shares else math.nan
    passed = None if not shares else least <= MAX_COLLAPSED_SHARE
    return Condition(claim_id, "collapse leaves a comparison", least, MAX_COLLAPSED_SHARE, passed,
                     f"collapsed runs: {collapse_rates_text(counts)}; the comparison needs at most "
                     f"{100 * MAX_COLLAPSED_SHARE:g} % of the runs collapsed in at least one method", setup=setup)


def collapse_rates_text(counts: Mapping[str, tuple[int, int]]) -> str:
    """``"gdpo 4/6, grpo 6/6"``."""
    return ", ".join(f"{m} {c}/{n}" for m, (c, n) in counts.items())


def comparable_probability(seeds: int, collapse_rate: float, arms: int = 2) -> float:
    """Probability that collapse leaves a comparison (:func:`collapse_leaves_comparison`) when each of ``arms``
    methods runs ``seeds`` seeds that collapse independently at ``collapse_rate``: 1 − P(more than half
    collapse)^arms."""
    if not 0 <= collapse_rate <= 1:
        raise ValueError(f"a collapse rate is a probability in [0, 1], got {collapse_rate}")
    mostly = float(binom.sf(math.floor(MAX_COLLAPSED_SHARE * seeds), seeds, collapse_rate))
    return 1.0 - mostly ** arms


# --------------------------------------------------------------------------------------------------
# Applying the conditions to a decision
# --------------------------------------------------------------------------------------------------


def gated(parts: Mapping[str, str], conditions: Sequence[Condition]) -> tuple[str, dict[str, str], str]:
    """The claim's outcome, its parts and a note, after the failed conditions: a failed whole-claim condition
    makes the claim ``not tested``; a failed part condition makes each part named ``"<setup> <part>"`` or
    ``"<part>"`` ``not tested``, and the claim is combined over its tested parts (``not tested`` where none is).

    ``parts``: part name → verdict, as :class:`~.decisions.Decision`'s."""
    failed = [c for c in conditions if c.passed is False]
    parts = dict(parts)
    if any(not c.part for c in failed):  # no part was tested: their intervals are not read
        return NOT_TESTED, {name: NOT_TESTED for name in parts}, ""
    for condition in failed:
        for name in parts:
            if (name == condition.part or name.endswith(" " + condition.part)) and (
                    not condition.setup or name.startswith(condition.setup)):
                parts[name] = NOT_TESTED
    tested = [v for v in parts.values() if v != NOT_TESTED]
    if not tested:
        return NOT_TESTED, parts, ""
    untested = [n for n, v in parts.items() if v == NOT_TESTED]
    kept = ", ".join(n for n, v in parts.items() if v != NOT_TESTED)
    note = f"decided on {kept} only ({', '.join(untested)} not tested)" if untested else ""
    return combine(tested), parts, note


def failed_text(conditions: Sequence[Condition]) -> str:
    """The failed conditions' texts, for the measured column."""
    return "; ".join(f"{c.setup + ' ' if c.setup else ''}{c.part + ': ' if c.part else ''}{c.text}"
                     for c in conditions if c.passed is False)


# --------------------------------------------------------------------------------------------------
# Reading the measured values from the evidence
# --------------------------------------------------------------------------------------------------


def collapse_counts(evidence: Evidence, task: str, methods: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Method → (runs the gate found collapsed, runs) over the ``methods`` of ``task`` in eval.csv (the base
    model's evaluation included where compared: shown, but no arm of :func:`collapse_leaves_comparison`)."""
    counts = {}
    for method in methods:
        runs = evidence._runs(task, [method])
        collapsed = sum(run_health(run.get(HEALTH), run[COLLAPSED], evidence.eval_path)[0] == COLLAPSED
                        for run in runs)
        counts[method] = (collapsed, len(runs))
    return counts


def unjudged_runs(evidence: Evidence, task: str, methods: Sequence[str]) -> list[str]:
    """The runs the gate could not judge (:func:`Evidence.collapsed` with state not judged)."""
    return evidence.collapsed(task, [m for m in methods if m != BASE], NOT_JUDGED)


def runs_ended_early(evidence: Evidence, task: str, methods: Sequence[str]) -> list[str]:
    """The trained runs of (task, one of ``methods``) whose last logged step in steps.csv is before the task's
    last (``"grpo seed 3 (step 12 of 100)"``): stopped by non-finite gradients (``gdpo.training.run``), or
    cut short some other way. They count with their scores like any run; the ledger names them so that a
    reader sees which comparisons hold a run that trained less. Steps are read in the run's logging stride (its
    first logged step: one per generation batch), so a run logging every 2nd optimizer step ends at 2 × the
    task's ``max_steps`` (generation batches). Empty when steps.csv or the task's ``max_steps`` is unknown."""
    planned = (evidence.runs.get(task) or {}).get("max_steps")
    steps = evidence.steps
    if not planned or steps is None or steps.empty or "step" not in steps.columns:
        return []
    rows = steps[(steps["task"] == task) & steps["method"].isin([m for m in methods if m != BASE])]
    named = []
    for (method, seed), run in rows.groupby(["method", "seed"], sort=True):
        logged = pd.to_numeric(run["step"], errors="coerce").dropna()
        if logged.empty:
            continue
        stride, last = int(logged.min()), int(logged.max())
        if last < planned * stride:
            named.append(f"{method} seed {int(seed)} (step {last // stride} of {planned})")
    return named


def method_means(evidence: Evidence, task: str, methods: Sequence[str], metric: str) -> dict[str, float]:
    """Method → mean of ``metric`` over its seeds (benchmark-averaged per seed), trained methods only."""
    means = {}
    for method in methods:
        if method == BASE:
            continue
        sample = evidence.sample(task, method, metric)
        if len(sample):
            means[method] = float(np.mean(sample.values))
    return means


def largest(evidence: Evidence, task: str, methods: Sequence[str], metric: str) -> float:
    """The largest per-seed ``metric`` (benchmark-averaged) over the trained ``methods``' runs (NaN: none)."""
    values = [float(np.max(s.values)) for m in methods if m != BASE and len(s := evidence.sample(task, m, metric))]
    return max(values) if values else math.nan


#: steps.csv columns that say whether a step had training signal, in order of preference, and the test.
_SIGNAL_COLUMNS = (("grad_norm", lambda v: v > 0), ("frac_reward_zero_std", lambda v: v < 1),
                   ("advantages/std", lambda v: v > 0))


def signal_shares(steps: pd.DataFrame, task: str, methods: Sequence[str], from_fraction: float = 0.0
                  ) -> tuple[dict[str, list[float]], str]:
    """Method → per-run share of steps with training signal after ``from_fraction`` of each run's steps, and the
    window in words (``"steps 301–500 (grad_norm > 0)"``). A step has signal when its gradient norm is above 0
    (else: some group's rewards differ, ``frac_reward_zero_std`` < 1; else an advantage spread above 0)."""
    rows = _compared_rows(steps, task, methods)
    column, has_signal = next(((c, f) for c, f in _SIGNAL_COLUMNS if c in rows and rows[c].notna().any()),
                              (None, None))
    if column is None or rows.empty:
        return {}, "the window"
    shares: dict[str, list[float]] = {m: [] for m in methods}
    first = last = None
    for (method, _), run in rows.groupby(["method", "seed"]):
        run = run.sort_values("step")
        start = int(math.floor(from_fraction * len(run)))
        window = run.iloc[start:][column].dropna()
        if window.empty:
            continue
        shares[method].append(float(has_signal(window.to_numpy(dtype=float)).mean()))
        first, last = int(run["step"].iloc[start]), int(run["step"].iloc[-1])
    label = f"steps {first}–{last}" if first is not None else "the window"
    test = {"grad_norm": "gradient norm > 0", "frac_reward_zero_std": "some group's rewards differ",
            "advantages/std": "advantage spread > 0"}[column]
    return {m: v for m, v in shares.items() if v}, f"{label} ({test})"


#: steps.csv's per-reward column of the share of first-round groups where that reward is constant.
_CONSTANT_GROUPS = re.compile(r"^rewards/(?P<reward>[^/]+)/frac_zero_std_groups$")


def reward_variation_shares(steps: pd.DataFrame | None, task: str, methods: Sequence[str]) -> dict[str, float]:
    """Reward → share of the first-round groups in which it varies, pooled over every logged step of every run of
    ``methods`` (the mean of 1 − ``rewards/<reward>/frac_zero_std_groups``; each step holds as many groups);
    empty where steps.csv records none."""
    rows = _compared_rows(steps, task, methods)
    shares = {}
    for column in rows.columns:
        if (match := _CONSTANT_GROUPS.match(str(column))) and not (constant := rows[column].dropna()).empty:
            shares[match["reward"]] = float(1.0 - constant.mean())
    return shares


#: steps.csv's column of the share of first-round groups where two or more rewards vary.
SEVERAL_VARYING = "rewards/frac_groups_several_vary"


def several_varying_share(steps: pd.DataFrame | None, task: str, methods: Sequence[str]) -> float | None:
    """The share of first-round groups in which two or more rewards vary, pooled over every logged step of every
    run of ``methods``; None where steps.csv records none."""
    rows = _compared_rows(steps, task, methods)
    found = rows[SEVERAL_VARYING].dropna() if SEVERAL_VARYING in rows else pd.Series(dtype=float)
    return None if found.empty else float(found.mean())


def _compared_rows(steps: pd.DataFrame | None, task: str, methods: Sequence[str]) -> pd.DataFrame:
    """steps.csv's rows of ``task`` trained by ``methods`` (an empty frame where there are no steps)."""
    if steps is None or steps.empty:
        return pd.DataFrame()
    return steps[(steps["task"] == task) & steps["method"].isin(list(methods))]


def max_lengths(steps: pd.DataFrame, task: str, methods: Sequence[str]) -> dict[str, float]:
    """Method → the largest ``completions/max_length`` over its runs' steps (tokens)."""
    rows = _compared_rows(steps, task, methods)
    if "completions/max_length" not in rows:
        return {}
    found = rows.groupby("method")["completions/max_length"].max().dropna()
    return {m: float(found[m]) for m in methods if m in found}
