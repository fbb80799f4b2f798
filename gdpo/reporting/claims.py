"""The claims ledger: for each claim of the paper (PAPER.md §2), what was measured and a verdict.

Each verdict comes from a rule written as code (one function per claim, its docstring states the rule).
A claim whose stage is not in the workflow yet, or whose evidence file is missing, is ``not run`` and
the ledger says what is missing; it never turns into a verdict silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

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

_STAGE_DESCRIPTIONS = {
    "tool_calling": "the tool-calling task family (training and BFCL evaluation)",
    "math": "the math task family (training and evaluation)",
    "code": "the code task family (training and evaluation)",
    "all families": "all three task families",
}


def build_ledger(scale: str, distinct_counts: str | Path | None) -> pd.DataFrame:
    """The ledger rows for one workflow run.

    Args:
        scale: the workflow's scale (``smoke``, ``mini``, ``paper``); claims decided by the exact analysis
            are reported at scale ``exact``.
        distinct_counts: path of ``distinct_counts.csv``, or None if the exact stage did not run.

    Returns:
        DataFrame with :data:`LEDGER_COLUMNS`, one row per claim, in claim order.
    """
    counts = None
    if distinct_counts is not None and Path(distinct_counts).is_file():
        counts = pd.read_csv(distinct_counts)
    rows = []
    for claim in CLAIMS:
        if claim.stage == "exact":
            row_scale = "exact"
            if counts is None:
                verdict = Verdict("", "", NOT_RUN, f"missing {distinct_counts or 'distinct_counts.csv'}")
            else:
                verdict = EXACT_RULES[claim.claim_id](counts, str(distinct_counts))
        else:
            row_scale = scale
            verdict = Verdict(
                "", "", NOT_RUN, f"needs {_STAGE_DESCRIPTIONS[claim.stage]}, not yet part of this workflow"
            )
        rows.append(
            {
                "claim_id": claim.claim_id,
                "scale": row_scale,
                "statement": claim.statement,
                "paper_value": claim.paper_value,
                **dataclasses.asdict(verdict),
            }
        )
    return pd.DataFrame(rows, columns=LEDGER_COLUMNS)


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


def write_ledger(scale: str, distinct_counts: str | Path | None, out_csv: str | Path, out_md: str | Path) -> pd.DataFrame:
    """Build the ledger and write ``claims.csv`` and ``CLAIMS.md``."""
    ledger = build_ledger(scale, distinct_counts)
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    ledger.to_csv(out_csv, index=False)
    Path(out_md).write_text(ledger_markdown(ledger, scale), encoding="utf-8")
    return ledger
