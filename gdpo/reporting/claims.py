"""The claims ledger: for each claim of the paper (PAPER.md §2), what was measured and a verdict.

Each verdict comes from a rule written as code (one function per claim, its docstring states the rule).
A claim whose stage is not in the workflow, or whose evidence file is missing, is ``not run`` and the
ledger says what is missing; it never turns into a verdict silently. The rules at the exact and sim
scales are here; those over the task families' results (smoke, mini, paper) are in
:mod:`gdpo.reporting.verdicts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN)

LEDGER_COLUMNS = ["claim_id", "scale", "statement", "paper_value", "measured_value", "comparison", "verdict", "evidence"]


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of the paper. ``stage`` names the pipeline stage whose results decide it."""

    claim_id: str
    statement: str
    paper_value: str
    source: str
    stage: str


CLAIMS: tuple[Claim, ...] = (
    Claim("C1", "G = 2, two binary rewards: GRPO has 2 distinct advantage groups, GDPO 3",
          "GRPO 2, GDPO 3", "Fig. 2", "exact"),
    Claim("C2", "distinct advantage groups grow with rollouts G (n = 2) and rewards n (G = 4); "
                "GDPO ≫ GRPO w/o std > GRPO",
          "monotone growth; GDPO ≫ GRPO w/o std > GRPO (G ≤ 11, n ≤ 6 for GDPO)", "Fig. 3", "exact"),
    Claim("C3", "tool calling: GDPO beats GRPO on BFCL-v3 avg accuracy and format correctness at 1.5B and 3B",
          "avg acc 32.81 vs 30.18 (1.5B), 40.87 vs 39.20 (3B); format 80.66 vs 76.33, 82.23 vs 81.64",
          "Tab. 1, Fig. 4", "tool_calling"),
    Claim("C4", "GRPO w/o std matches correctness but never learns format",
          "0.00 % correct format; avg acc 29.26 vs GRPO 30.18 (1.5B)", "Tab. 2, Fig. 4", "tool_calling"),
    Claim("C5", "math: GRPO's correctness falls and max response length spikes after about step 400; "
                "GDPO keeps improving",
          "divergence of GRPO near step 400 (R1-1.5B); none for GDPO", "Fig. 5", "math"),
    Claim("C6", "math accuracy and length-exceed table", "e.g. R1-1.5B AIME acc/exceed 23.1/10.8 (GRPO) vs "
                "29.4/6.5 (GDPO)", "Tab. 3", "math"),
    Claim("C7", "lowering the length weight (1, 0.75, 0.5) barely changes behaviour; only 0.25 does",
          "qualitative (Fig. 6; its Table 8 numbers are not given)", "Fig. 6", "math"),
    Claim("C8", "conditioning length on correctness: GDPO +4.4 AIME accuracy and 16.9 points lower exceed than GRPO",
          "AIME 57.7/12.3 (GDPO) vs 53.3/29.2 (GRPO), R1-7B", "Tab. 4, Fig. 7", "math"),
    Claim("C9", "coding, 2 and 3 objectives: GDPO keeps pass rate and lowers exceed and bug ratio",
          "e.g. Codeforces 3-obj pass 69.4 vs 69.5, exceed 13.6 vs 16.9, bug 1.8 vs 2.5", "Tab. 5", "code"),
    Claim("C10", "GDPO without the batch step occasionally fails to converge",
          "qualitative (App. A, Fig. 8)", "App. A, Fig. 8", "math"),
    Claim("C11", "gains hold across model sizes (1.5B, 3B, 4B, 7B) and all three task families",
              "Tabs. 1, 3, 5", "Tabs. 1, 3, 5", "all families"),
)
CLAIMS_BY_ID = {claim.claim_id: claim for claim in CLAIMS}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Outcome of one verdict rule."""

    measured_value: str
    comparison: str
    verdict: str
    evidence: str

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def _count(counts: pd.DataFrame, method: str, rollouts: int, rewards: int) -> int | None:
    row = counts[(counts["method"] == method) & (counts["rollouts"] == rollouts) & (counts["rewards"] == rewards)]
    return None if row.empty else int(row["distinct_groups"].iloc[0])


def verdict_c1(counts: pd.DataFrame, evidence: str) -> Verdict:
    """C1 rule: ``reproduced`` iff at G = 2, n = 2 GRPO has exactly 2 distinct advantage groups and GDPO
    exactly 3; ``not reproduced`` otherwise; ``not run`` if that grid point is absent."""
    grpo, nostd, gdpo = (_count(counts, m, 2, 2) for m in ("grpo", "grpo_nostd", "gdpo"))
    comparison = "exact counts at G = 2, n = 2 must equal the paper's (GRPO 2, GDPO 3)"
    if grpo is None or gdpo is None:
        return Verdict("", comparison, NOT_RUN, f"{evidence} has no G = 2, n = 2 rows")
    measured = f"GRPO {grpo}, GRPO w/o std {nostd}, GDPO {gdpo}"
    return Verdict(measured, comparison, REPRODUCED if (grpo, gdpo) == (2, 3) else NOT_REPRODUCED, evidence)


#: "≫" in C2, made concrete: GDPO has at least this many times GRPO w/o std's count at the end of each axis.
MUCH_GREATER_RATIO = 2.0


def verdict_c2(counts: pd.DataFrame, evidence: str) -> Verdict:
    """C2 rule, over both axes of Fig. 3 (``axis == "rollouts"``: G varies at n = 2; ``"rewards"``: n
    varies at G = 4), each needing at least 3 points:

    1. growth: every method's count strictly increases at every step along each axis;
    2. order: at every point GDPO ≥ GRPO w/o std > GRPO;
    3. "≫": at the last point of each axis GDPO ≥ ``MUCH_GREATER_RATIO`` × GRPO w/o std.

    ``reproduced`` iff all three hold; ``not reproduced`` otherwise (the measured value says which part
    failed); ``not run`` if an axis or a method is missing.
    """
    comparison = (
        "per axis: strict growth of every method; GDPO ≥ GRPO w/o std > GRPO at every point; "
        f"GDPO ≥ {MUCH_GREATER_RATIO:g}× GRPO w/o std at the largest point"
    )
    failures, summaries = [], []
    for axis, varying in (("rollouts", "rollouts"), ("rewards", "rewards")):
        table = counts[counts["axis"] == axis].pivot_table(index=varying, columns="method", values="distinct_groups")
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
            failures.append(f"GDPO/GRPO w/o std = {ratio:.2f} at {varying} = {table.index[-1]}")
        fixed = "n = 2" if axis == "rollouts" else "G = 4"
        summaries.append(
            f"{varying} {table.index[0]}..{table.index[-1]} ({fixed}): GRPO {int(table['grpo'].iloc[0])}→"
            f"{int(last['grpo'])}, GRPO w/o std {int(table['grpo_nostd'].iloc[0])}→{int(last['grpo_nostd'])}, "
            f"GDPO {int(table['gdpo'].iloc[0])}→{int(last['gdpo'])} (×{ratio:.1f} over w/o std)"
        )
    measured = "; ".join(summaries)
    if failures:
        return Verdict(measured + " — fails: " + "; ".join(failures), comparison, NOT_REPRODUCED, evidence)
    return Verdict(measured, comparison, REPRODUCED, evidence)


#: Verdict rules that exist, by claim, with the evidence each reads.
EXACT_RULES: dict[str, Callable[[pd.DataFrame, str], Verdict]] = {"C1": verdict_c1, "C2": verdict_c2}


# --------------------------------------------------------------------------------------------------
# Scale "sim": the claims' mechanisms in the policy-gradient bench, from per-seed outcomes
# --------------------------------------------------------------------------------------------------

#: Seed of the bootstrap intervals (resamples: gdpo.sim.summary.BOOTSTRAP_RESAMPLES).
PAIRED_SEED = 7
#: "Barely changes" in C7: a difference of final success smaller than this (absolute, in [0, 1]).
NEGLIGIBLE = 0.05
#: A reward is "learned" when its success rises by more than this from step 0 (C4).
LEARNED = 0.1


def mean_with_ci(values) -> tuple[float, float, float]:
    """Mean of per-seed ``values`` with its 95 % percentile-bootstrap CI (fixed seed: deterministic ledger)."""
    from gdpo.sim.summary import bootstrap_interval  # here: gdpo.sim imports torch, the exact ledger does not need it

    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        raise ValueError("no seeds to summarise")
    return (float(values.mean()), *bootstrap_interval(values, np.random.default_rng(PAIRED_SEED)))


def paired_difference(per_seed: pd.DataFrame, study: str, variant: str, reward: str, method_a: str,
                      method_b: str, column: str = "final_success") -> tuple[float, float, float]:
    """Mean over seeds of ``column``(a) − ``column``(b), paired by seed, with a 95 % percentile-bootstrap CI."""
    rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant) & (per_seed["reward"] == reward)]
    a = rows[rows["method"] == method_a].set_index("seed")[column]
    b = rows[rows["method"] == method_b].set_index("seed")[column]
    return mean_with_ci((a - b).dropna())


def _sign(interval: tuple[float, float, float], margin: float = 0.0) -> int:
    """+1 if the CI lies above ``margin``, −1 if below −``margin``, 0 if it spans the band."""
    _, low, high = interval
    return 1 if low > margin else -1 if high < -margin else 0


def _fmt(interval: tuple[float, float, float]) -> str:
    mean, low, high = interval
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def _combine(outcomes: dict[str, str]) -> str:
    """One verdict over a study's variants: unanimous verdicts stand; a mix is inconclusive."""
    values = set(outcomes.values())
    return values.pop() if len(values) == 1 else INCONCLUSIVE


def _variants(per_seed: pd.DataFrame, study: str) -> list[str]:
    return list(dict.fromkeys(per_seed.loc[per_seed["study"] == study, "variant"]))


def sim_verdict_c3(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C3 at scale sim (study ``format_vs_correctness``): per variant, the paired differences GDPO − GRPO of
    the final success of correctness and of format (bootstrap 95 % CI over seeds). ``reproduced`` if both
    CIs lie above 0, ``not reproduced`` if either lies below 0, else ``inconclusive``; variants combined
    by :func:`_combine`."""
    outcomes, parts = {}, []
    for variant in _variants(per_seed, "format_vs_correctness"):
        diffs = {r: paired_difference(per_seed, "format_vs_correctness", variant, r, "gdpo", "grpo")
                 for r in ("correctness", "format")}
        signs = [_sign(d) for d in diffs.values()]
        outcomes[variant] = NOT_REPRODUCED if -1 in signs else REPRODUCED if all(x == 1 for x in signs) else INCONCLUSIVE
        parts.append(f"{variant}: correctness {_fmt(diffs['correctness'])}, format {_fmt(diffs['format'])}")
    return Verdict("GDPO − GRPO final success; " + "; ".join(parts),
                   "both paired differences' 95 % CIs above 0 in every variant", _combine(outcomes), evidence)


def sim_verdict_c4(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C4 at scale sim (study ``format_vs_correctness``): per variant, the rise of format success from step
    0 to the end (bootstrap 95 % CI over seeds). ``reproduced`` if GRPO w/o std's rise stays below
    ``LEARNED`` (CI high < LEARNED) while GDPO's exceeds it (CI low > LEARNED); ``not reproduced`` if GRPO
    w/o std learns format (CI low > LEARNED); else ``inconclusive``."""
    outcomes, parts = {}, []
    for variant in _variants(per_seed, "format_vs_correctness"):
        rises = {}
        for method in ("grpo_nostd", "gdpo"):
            rows = per_seed[(per_seed["study"] == "format_vs_correctness") & (per_seed["variant"] == variant)
                            & (per_seed["reward"] == "format") & (per_seed["method"] == method)]
            rises[method] = mean_with_ci(rows["final_success"] - rows["initial_success"])
        nostd_learns, gdpo_learns = _sign(rises["grpo_nostd"], LEARNED), _sign(rises["gdpo"], LEARNED)
        if nostd_learns == 1:
            outcomes[variant] = NOT_REPRODUCED
        elif rises["grpo_nostd"][2] < LEARNED and gdpo_learns == 1:
            outcomes[variant] = REPRODUCED
        else:
            outcomes[variant] = INCONCLUSIVE
        parts.append(f"{variant}: format rise GRPO w/o std {_fmt(rises['grpo_nostd'])}, GDPO {_fmt(rises['gdpo'])}")
    return Verdict("; ".join(parts), f"GRPO w/o std's format rise CI below {LEARNED}, GDPO's above it",
                   _combine(outcomes), evidence)


def _rate_difference(per_seed: pd.DataFrame, study: str, method_a: str, method_b: str) -> tuple[dict, dict]:
    """Per variant: paired difference of the study's outcome event (a − b) and each method's event rate."""
    outcomes, parts = {}, {}
    for variant in _variants(per_seed, study):
        rows = per_seed[(per_seed["study"] == study) & (per_seed["variant"] == variant)]
        reward = rows["reward"].iloc[0]  # the outcome is per seed, repeated on every reward's row
        events = rows.assign(event=rows["outcome_event"].astype(float))
        diff = paired_difference(events, study, variant, reward, method_a, method_b, column="event")
        rates = {m: events[(events["method"] == m) & (events["reward"] == reward)]["event"].mean()
                 for m in (method_a, method_b)}
        outcomes[variant] = REPRODUCED if _sign(diff) == 1 else NOT_REPRODUCED if diff[2] <= 0 else INCONCLUSIVE
        parts[variant] = f"{variant}: rate {method_a} {rates[method_a]:.2f}, {method_b} {rates[method_b]:.2f}, " \
                         f"difference {_fmt(diff)}"
    return outcomes, parts


def sim_verdict_c5(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C5 at scale sim (study ``stability``): per variant, the paired difference GRPO − GDPO of the
    collapse event (``detect_divergence`` on each seed's curves; bootstrap 95 % CI). ``reproduced`` if the
    CI lies above 0 (GRPO collapses more often), ``not reproduced`` if its upper end is ≤ 0 (e.g. no run
    of either collapses), else ``inconclusive``."""
    outcomes, parts = _rate_difference(per_seed, "stability", "grpo", "gdpo")
    return Verdict("; ".join(parts.values()), "collapse rate GRPO − GDPO, CI above 0 in every variant",
                   _combine(outcomes), evidence)


def sim_verdict_c10(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C10 at scale sim (study ``batch_step_ablation``): per variant, the paired difference gdpo_nobn −
    gdpo of the failure-to-converge event (bootstrap 95 % CI). ``reproduced`` if the CI lies above 0,
    ``not reproduced`` if its upper end is ≤ 0, else ``inconclusive``; variants combined by
    :func:`_combine`."""
    outcomes, parts = _rate_difference(per_seed, "batch_step_ablation", "gdpo_nobn", "gdpo")
    return Verdict("; ".join(parts.values()), "failure rate without − with the batch step, CI above 0 in every variant",
                   _combine(outcomes), evidence)


def sim_verdict_c7(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C7 at scale sim (study ``easy_vs_hard_weights``): for GRPO and GDPO, the paired differences of the
    final success of both rewards between length weight w and weight 1 (variants ``w<w>`` vs ``w1``),
    paired by seed (bootstrap 95 % CI). "Barely changes": the CI lies within ±``NEGLIGIBLE``; "changes":
    it lies outside. ``reproduced`` if w = 0.75 and 0.5 barely change both rewards and w = 0.25 changes
    one of them, for both methods; ``not reproduced`` if w = 0.5 or 0.75 changes a reward or w = 0.25
    barely changes both; else ``inconclusive``."""
    def seeds(method: str, variant: str, reward: str) -> pd.Series:
        rows = per_seed[(per_seed["study"] == "easy_vs_hard_weights") & (per_seed["variant"] == variant)
                        & (per_seed["method"] == method) & (per_seed["reward"] == reward)]
        return rows.set_index("seed")["final_success"]

    def across(method: str, variant: str, reward: str) -> tuple[float, float, float]:
        return mean_with_ci((seeds(method, variant, reward) - seeds(method, "w1", reward)).dropna())

    def barely(d):
        return -NEGLIGIBLE < d[1] and d[2] < NEGLIGIBLE

    def changes(d):
        return d[1] > NEGLIGIBLE or d[2] < -NEGLIGIBLE

    outcomes, parts = {}, []
    for method in ("grpo", "gdpo"):
        diffs = {(w, r): across(method, f"w{w}", r) for w in ("0.75", "0.5", "0.25") for r in ("correctness", "length")}
        small = all(barely(diffs[(w, r)]) for w in ("0.75", "0.5") for r in ("correctness", "length"))
        large = any(changes(diffs[("0.25", r)]) for r in ("correctness", "length"))
        if small and large:
            outcomes[method] = REPRODUCED
        elif any(changes(diffs[(w, r)]) for w in ("0.75", "0.5") for r in ("correctness", "length")) or all(
            barely(diffs[("0.25", r)]) for r in ("correctness", "length")
        ):
            outcomes[method] = NOT_REPRODUCED
        else:
            outcomes[method] = INCONCLUSIVE
        parts.append(f"{method}: " + ", ".join(f"w{w} {r} {_fmt(d)}" for (w, r), d in diffs.items()))
    return Verdict("final success vs weight 1; " + "; ".join(parts),
                   f"w 0.75, 0.5 within ±{NEGLIGIBLE}; w 0.25 outside it (both methods)", _combine(outcomes), evidence)


def sim_verdict_c8(per_seed: pd.DataFrame, evidence: str) -> Verdict:
    """C8 at scale sim (study ``easy_vs_hard_weights``, variant ``conditioned``): the paired differences
    GDPO − GRPO of the final success of correctness and of the (conditioned) length reward (bootstrap 95 %
    CI). ``reproduced`` if both lie above 0, ``not reproduced`` if either lies below 0, else
    ``inconclusive``."""
    diffs = {r: paired_difference(per_seed, "easy_vs_hard_weights", "conditioned", r, "gdpo", "grpo")
             for r in ("correctness", "length")}
    signs = [_sign(d) for d in diffs.values()]
    verdict = NOT_REPRODUCED if -1 in signs else REPRODUCED if all(x == 1 for x in signs) else INCONCLUSIVE
    return Verdict(f"GDPO − GRPO final success, conditioned length: correctness {_fmt(diffs['correctness'])}, "
                   f"length {_fmt(diffs['length'])}", "both paired differences' 95 % CIs above 0", verdict, evidence)


#: Sim-scale rules by claim, with the study each needs.
SIM_RULES: dict[str, tuple[str, Callable[[pd.DataFrame, str], Verdict]]] = {
    "C3": ("format_vs_correctness", sim_verdict_c3),
    "C4": ("format_vs_correctness", sim_verdict_c4),
    "C5": ("stability", sim_verdict_c5),
    "C7": ("easy_vs_hard_weights", sim_verdict_c7),
    "C8": ("easy_vs_hard_weights", sim_verdict_c8),
    "C10": ("batch_step_ablation", sim_verdict_c10),
}

def build_ledger(scale: str, distinct_counts: str | Path | None, sim_per_seed: str | Path | None = None,
                 eval_csv: str | Path | None = None, steps_csv: str | Path | None = None,
                 reporting: dict | None = None, scale_rows: bool = True) -> pd.DataFrame:
    """The ledger rows for one workflow run.

    Args:
        scale: the workflow's scale (``smoke``, ``mini``, ``paper``); claims decided by the exact analysis
            are reported at scale ``exact``, the bench's at scale ``sim``.
        distinct_counts: path of ``distinct_counts.csv``, or None if the exact stage did not run.
        sim_per_seed: path of the bench's ``per_seed.csv``, or None if the bench did not run.
        eval_csv, steps_csv: the scale's tidy summaries (``results/<scale>/summary/``), or None if no task
            family ran; the rules of :mod:`gdpo.reporting.verdicts` read them.
        reporting: the config's ``reporting:`` block (which task stands for which paper setup).
        scale_rows: add the rows at ``scale`` (False: only the exact and sim rows, for a first look
            before any language model is trained).

    Returns:
        DataFrame with :data:`LEDGER_COLUMNS`: per claim, a row for each scale with evidence (exact, sim)
        and a row at ``scale`` for the LM-scale claim, in claim order.
    """
    from gdpo.reporting import verdicts

    evidence = verdicts.Evidence(
        _read_optional(eval_csv), _read_optional(steps_csv), reporting or {}, scale,
        eval_path=str(eval_csv or f"results/{scale}/summary/eval.csv"),
        steps_path=str(steps_csv or f"results/{scale}/summary/steps.csv"),
    )
    counts = None
    if distinct_counts is not None and Path(distinct_counts).is_file():
        counts = pd.read_csv(distinct_counts)
    per_seed = None
    if sim_per_seed is not None and Path(sim_per_seed).is_file():
        per_seed = pd.read_csv(sim_per_seed)
    rows = []

    def add(claim: Claim, row_scale: str, verdict: Verdict) -> None:
        rows.append({"claim_id": claim.claim_id, "scale": row_scale, "statement": claim.statement,
                     "paper_value": claim.paper_value, **dataclasses.asdict(verdict)})

    for claim in CLAIMS:
        if claim.stage == "exact":
            if counts is None:
                add(claim, "exact", Verdict("", "", NOT_RUN, f"missing {distinct_counts or 'distinct_counts.csv'}"))
            else:
                add(claim, "exact", EXACT_RULES[claim.claim_id](counts, str(distinct_counts)))
            continue
        if claim.claim_id in SIM_RULES and sim_per_seed is not None:
            study, rule = SIM_RULES[claim.claim_id]
            if per_seed is None or study not in set(per_seed["study"]):
                add(claim, "sim", Verdict("", "", NOT_RUN, f"missing study {study!r} in {sim_per_seed}"))
            else:
                add(claim, "sim", rule(per_seed, f"{sim_per_seed} (study {study})"))
        if not scale_rows:
            continue
        if claim.claim_id == "C11":
            at_scale = {r["claim_id"]: r["verdict"] for r in rows if r["scale"] == scale}
            add(claim, scale, verdicts.rule_c11({c: at_scale.get(c, NOT_RUN) for c in ("C3", "C6", "C9")}))
        else:
            add(claim, scale, verdicts.RULES[claim.claim_id](evidence))
    return pd.DataFrame(rows, columns=LEDGER_COLUMNS)


def _read_optional(path: str | Path | None) -> pd.DataFrame | None:
    """The CSV at ``path``, or None when no path is given or the file does not exist (its rules say ``not run``)."""
    return pd.read_csv(path) if path is not None and Path(path).is_file() else None


def ledger_markdown(ledger: pd.DataFrame, scale: str) -> str:
    """A readable CLAIMS.md: a summary table, then each claim's measurement, comparison and evidence."""
    lines = [
        f"# Claims ledger — scale `{scale}`",
        "",
        "Verdicts: `reproduced`, `not reproduced`, `inconclusive` (the uncertainty spans the paper's effect), "
        "`not run` (the evidence does not exist yet; the row says what is missing). Each verdict comes from "
        "a rule in `gdpo/reporting/claims.py`.",
        "",
        "| claim | scale | verdict | statement |",
        "|---|---|---|---|",
    ]
    for row in ledger.itertuples():
        lines.append(f"| {row.claim_id} | {row.scale} | **{row.verdict}** | {row.statement} |")
    lines.append("")
    for row in ledger.itertuples():
        lines += [
            f"## {row.claim_id} ({row.scale}): {row.verdict}",
            "",
            f"- Claim: {row.statement} ({CLAIMS_BY_ID[row.claim_id].source})",
            f"- Paper: {row.paper_value}",
            f"- Measured: {row.measured_value or '—'}",
            f"- Rule: {row.comparison or '—'}",
            f"- Evidence: {row.evidence}",
            "",
        ]
    return "\n".join(lines)


def write_ledger(scale: str, distinct_counts: str | Path | None, out_csv: str | Path, out_md: str | Path,
                 sim_per_seed: str | Path | None = None, eval_csv: str | Path | None = None,
                 steps_csv: str | Path | None = None, reporting: dict | None = None,
                 scale_rows: bool = True) -> pd.DataFrame:
    """Build the ledger (arguments of :func:`build_ledger`) and write ``claims.csv`` and ``CLAIMS.md``."""
    ledger = build_ledger(scale, distinct_counts, sim_per_seed, eval_csv, steps_csv, reporting, scale_rows)
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    ledger.to_csv(out_csv, index=False)
    Path(out_md).write_text(ledger_markdown(ledger, scale), encoding="utf-8")
    return ledger
