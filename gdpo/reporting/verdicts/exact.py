"""Claim rules at scale ``exact``: C1 and C2 on ``distinct_counts.csv`` of the exact analysis (counts, no
uncertainty). Each rule: ``(counts, evidence) -> Verdict``, ``evidence`` the file's name."""

from __future__ import annotations

import pandas as pd

from gdpo.methods import Method
from gdpo.reporting.contract import NOT_REPRODUCED, NOT_RUN, REPRODUCED, Verdict
from gdpo.reporting.verdicts.registry import NoPower, Scale, claim_rule

#: The exact rules' power design: none to simulate (exact counts; a count is the paper's or it is not).
EXACT_COUNTS = NoPower("exact counts of every binary reward combination: no sampling, nothing to power")


def _count(counts: pd.DataFrame, method: str, rollouts: int, rewards: int) -> int | None:
    row = counts[(counts["method"] == method) & (counts["rollouts"] == rollouts) & (counts["rewards"] == rewards)]
    return None if row.empty else int(row["distinct_groups"].iloc[0])


@claim_rule("C1", Scale.EXACT, design=EXACT_COUNTS)
def judge_c1(counts: pd.DataFrame, evidence: str) -> Verdict:
    """C1: ``reproduced`` iff at G = 2, n = 2 GRPO has exactly 2 distinct advantage groups and GDPO exactly 3
    (an exact count: no interval); ``not reproduced`` otherwise; ``not run`` if that grid point is absent."""
    grpo, nostd, gdpo = (_count(counts, m, 2, 2) for m in (Method.GRPO, Method.GRPO_NOSTD, Method.GDPO))
    comparison = "exact counts at G = 2, n = 2 must equal the paper's (GRPO 2, GDPO 3)"
    if grpo is None or gdpo is None:
        return Verdict("", comparison, NOT_RUN, f"{evidence} has no G = 2, n = 2 rows")
    measured = f"GRPO {grpo}, GRPO w/o std {nostd}, GDPO {gdpo}"
    return Verdict(measured, comparison, REPRODUCED if (grpo, gdpo) == (2, 3) else NOT_REPRODUCED, evidence,
                   run="exact enumeration of every binary reward combination")


#: "≫" in C2, made concrete: GDPO has at least this many times GRPO w/o std's count at the end of each axis.
MUCH_GREATER_RATIO = 2.0


@claim_rule("C2", Scale.EXACT, design=EXACT_COUNTS)
def judge_c2(counts: pd.DataFrame, evidence: str) -> Verdict:
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
        if len(table) < 3 or not {Method.GRPO, Method.GRPO_NOSTD, Method.GDPO} <= set(table.columns):
            return Verdict("", comparison, NOT_RUN, f"{evidence} lacks the {axis} axis (need ≥ 3 points, 3 methods)")
        table = table.sort_index()
        for method in (Method.GRPO, Method.GRPO_NOSTD, Method.GDPO):
            if not (table[method].diff().dropna() > 0).all():
                failures.append(f"{method} does not grow strictly along {axis}")
        grpo, nostd, gdpo = table[Method.GRPO], table[Method.GRPO_NOSTD], table[Method.GDPO]
        if not ((gdpo >= nostd) & (nostd > grpo)).all():
            failures.append(f"order GDPO ≥ GRPO w/o std > GRPO broken along {axis}")
        last = table.iloc[-1]
        ratio = last[Method.GDPO] / last[Method.GRPO_NOSTD]
        if ratio < MUCH_GREATER_RATIO:
            failures.append(f"GDPO/GRPO w/o std = {ratio:.2f} at {axis} = {table.index[-1]}")
        fixed = "n = 2" if axis == "rollouts" else "G = 4"
        summaries.append(
            f"{axis} {table.index[0]}..{table.index[-1]} ({fixed}): "
            f"GRPO {int(grpo.iloc[0])}→{int(grpo.iloc[-1])}, "
            f"GRPO w/o std {int(nostd.iloc[0])}→{int(nostd.iloc[-1])}, "
            f"GDPO {int(gdpo.iloc[0])}→{int(gdpo.iloc[-1])} (×{ratio:.1f} over w/o std)"
        )
    measured = "; ".join(summaries)
    run = "exact enumeration of every binary reward combination"
    if failures:
        return Verdict(measured + " — fails: " + "; ".join(failures), comparison, NOT_REPRODUCED, evidence, run=run)
    return Verdict(measured, comparison, REPRODUCED, evidence, run=run)
