"""The claims ledger files: ``claims.csv`` and ``CLAIMS.md``, one row per claim and scale of evidence.

The rows come from the rules of :mod:`gdpo.reporting.rules` under the contract of
:mod:`gdpo.reporting.contract`; the power column from :mod:`gdpo.reporting.calibration`.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd

from gdpo.reporting import rules
from gdpo.reporting.contract import CLAIMS, CLAIMS_BY_ID, LEVEL, NOT_RUN, Claim, Verdict

LEDGER_COLUMNS = ["claim_id", "scale", "statement", "paper_value", "run", "measured_value", "comparison", "verdict",
                  "power", "evidence"]

#: What each verdict means, for the ledger's header and README (one definition at every scale).
VERDICT_MEANINGS = {
    "reproduced": f"the {LEVEL:.0%} interval of the measured effect excludes 0 in the paper's direction (and, for a "
                  "magnitude such as \"0 % format\", is consistent with it)",
    "not reproduced": "the interval excludes the paper's effect: the opposite direction, or an effect ruled smaller "
                      "than the paper's (at scale sim, whose units are not the paper's: the opposite direction only)",
    "inconclusive": "neither: the interval holds both 0 and the paper's effect",
    "underpowered": "the evidence is below the claim's stated minimum (seeds, evaluated items, training steps, "
                    "prompts per batch, no compared run collapsed); the row says what would be needed, and its "
                    "interval decides nothing",
    "not run": "the evidence does not exist: a run, a file or a setup is missing (the evidence column says which)",
    "not modelled": "scale sim only: the bench has no mechanism through which the claim could show",
}


def build_ledger(scale: str, distinct_counts: str | Path | None, sim_per_seed: str | Path | None = None,
                 eval_csv: str | Path | None = None, steps_csv: str | Path | None = None,
                 reporting: dict | None = None, scale_rows: bool = True, runs: dict | None = None,
                 with_power: bool = True) -> pd.DataFrame:
    """The ledger rows for one workflow run.

    Args:
        scale: the workflow's scale (``smoke``, ``mini``, ``paper``); claims decided by the exact analysis
            are reported at scale ``exact``, the bench's at scale ``sim``.
        distinct_counts: path of ``distinct_counts.csv``, or None if the exact stage did not run.
        sim_per_seed: path of the bench's ``per_seed.csv``, or None if the bench did not run.
        eval_csv, steps_csv: the scale's tidy summaries (``results/<scale>/summary/``), or None if no task
            family ran.
        reporting: the config's ``reporting:`` block (which task stands for which paper setup).
        scale_rows: add the rows at ``scale`` (False: only the exact and sim rows, for a first look).
        runs: task → ``{"model": spec, "prompts_per_batch": int}`` (what each task ran; labels and minima).
        with_power: fill the ``power`` column (simulation; a second or two).

    Returns:
        DataFrame with :data:`LEDGER_COLUMNS`, in claim order.
    """
    evidence = rules.Evidence(
        _read_optional(eval_csv), _read_optional(steps_csv), reporting or {}, scale,
        eval_path=str(eval_csv or f"results/{scale}/summary/eval.csv"),
        steps_path=str(steps_csv or f"results/{scale}/summary/steps.csv"), runs=runs,
    )
    counts = _read_optional(distinct_counts)
    per_seed = _read_optional(sim_per_seed)
    rows = []

    def add(claim: Claim, row_scale: str, verdict: Verdict) -> None:
        rows.append({"claim_id": claim.claim_id, "scale": row_scale, "statement": claim.statement,
                     "paper_value": claim.paper_value, **dataclasses.asdict(verdict)})

    for claim in CLAIMS:
        if claim.family == "exact":
            if counts is None:
                add(claim, "exact", Verdict("", "", NOT_RUN, f"missing {distinct_counts or 'distinct_counts.csv'}"))
            else:
                add(claim, "exact", rules.EXACT_RULES[claim.claim_id](counts, str(distinct_counts)))
            continue
        if claim.claim_id in rules.SIM_RULES and sim_per_seed is not None:
            study, rule = rules.SIM_RULES[claim.claim_id]
            if study is None:
                add(claim, "sim", rule(per_seed, str(sim_per_seed)))
            elif per_seed is None or study not in set(per_seed["study"]):
                add(claim, "sim", Verdict("", "", NOT_RUN, f"missing study {study!r} in {sim_per_seed}"))
            else:
                add(claim, "sim", rule(per_seed, f"{sim_per_seed} (study {study})"))
        if not scale_rows:
            continue
        if claim.claim_id == "C11":
            at_scale = {r["claim_id"]: r["verdict"] for r in rows if r["scale"] == scale}
            add(claim, scale, rules.rule_c11(evidence, {c: at_scale.get(c, NOT_RUN) for c in ("C3", "C6", "C9")}))
        else:
            verdict = rules.RULES[claim.claim_id](evidence)
            if with_power and verdict.verdict != NOT_RUN:
                from gdpo.reporting import calibration

                verdict = dataclasses.replace(verdict, power=calibration.ledger_power(claim.claim_id, evidence))
            add(claim, scale, verdict)
    return pd.DataFrame(rows, columns=LEDGER_COLUMNS)


def _read_optional(path: str | Path | None) -> pd.DataFrame | None:
    """The CSV at ``path``, or None when no path is given or the file does not exist (its rules say ``not run``)."""
    return pd.read_csv(path) if path is not None and Path(path).is_file() else None


def _power_text(power: float) -> str:
    return "—" if power is None or (isinstance(power, float) and math.isnan(power)) else f"{power:.2f}"


def ledger_markdown(ledger: pd.DataFrame, scale: str) -> str:
    """A readable CLAIMS.md: what the verdicts mean, a summary table, then each row in full."""
    lines = [f"# Claims ledger — scale `{scale}`", "", "What the verdicts mean (the same at every scale):", ""]
    lines += [f"- **{name}**: {meaning}" for name, meaning in VERDICT_MEANINGS.items()]
    lines += [
        "",
        "**power**: the probability that this design (its seeds, evaluated items and steps, with the seed spread "
        "measured here or assumed) gives `reproduced` if the paper's effect is true, by the rule's own simulation "
        "(`gdpo power --config <config>` says what a design needs for 80 %). Rules: `gdpo/reporting/rules.py`; "
        "contract and statistics: `gdpo/reporting/contract.py`.",
        "",
        "| claim | scale | verdict | power | what was run |",
        "|---|---|---|---|---|",
    ]
    for row in ledger.itertuples():
        lines.append(f"| {row.claim_id} | {row.scale} | **{row.verdict}** | {_power_text(row.power)} | "
                     f"{row.run if isinstance(row.run, str) and row.run else '—'} |")
    lines.append("")
    for row in ledger.itertuples():
        claim = CLAIMS_BY_ID[row.claim_id]
        minimum = f"; minimum evidence: {claim.minimum.text()}" if claim.minimum and row.scale not in (
            "exact", "sim") else ""
        lines += [
            f"## {row.claim_id} ({row.scale}): {row.verdict}",
            "",
            f"- Claim: {row.statement} ({claim.source})",
            f"- Paper: {row.paper_value}",
            f"- Run: {row.run if isinstance(row.run, str) and row.run else '—'}",
            f"- Measured: {row.measured_value if isinstance(row.measured_value, str) and row.measured_value else '—'}",
            f"- Rule: {row.comparison if isinstance(row.comparison, str) and row.comparison else '—'}{minimum}",
            f"- Power: {_power_text(row.power)}",
            f"- Evidence: {row.evidence}",
            "",
        ]
    return "\n".join(lines)


def write_ledger(scale: str, distinct_counts: str | Path | None, out_csv: str | Path, out_md: str | Path,
                 sim_per_seed: str | Path | None = None, eval_csv: str | Path | None = None,
                 steps_csv: str | Path | None = None, reporting: dict | None = None,
                 scale_rows: bool = True, runs: dict | None = None) -> pd.DataFrame:
    """Build the ledger (arguments of :func:`build_ledger`) and write ``claims.csv`` and ``CLAIMS.md``."""
    ledger = build_ledger(scale, distinct_counts, sim_per_seed, eval_csv, steps_csv, reporting, scale_rows, runs)
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    ledger.to_csv(out_csv, index=False, float_format="%.3f")
    Path(out_md).write_text(ledger_markdown(ledger, scale), encoding="utf-8")
    return ledger
