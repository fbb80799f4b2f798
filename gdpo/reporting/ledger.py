"""The claims ledger files: ``claims.csv`` and ``CLAIMS.md``, one row per claim and scale of evidence.

The rows come from the rules registered in :mod:`gdpo.reporting.verdicts` under the contract of
:mod:`gdpo.reporting.contract`; the power column from :mod:`gdpo.reporting.calibration`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd

from gdpo.reporting.aggregate import check_summary_digests
from gdpo.reporting import calibration
from gdpo.reporting.contract import CLAIMS_BY_ID, NOT_MODELLED, NOT_RUN, NOT_TESTED, Claim, Verdict
from gdpo.reporting.verdicts import ClaimRule, Scale, rules_of
from gdpo.reporting.verdicts.registry import EventPower, SimPower, TablePower, claims
from gdpo.reporting.verdicts.decisions import EVENT_BASE_RATE, EVENT_EFFECTS
from gdpo.reporting.verdicts.model_evidence import Evidence
from gdpo.reporting.verdicts.validity import conditions_text

LEDGER_COLUMNS = ["claim_id", "scale", "statement", "paper_value", "run", "measured_value", "comparison", "verdict",
                  "parts", "validity", "power", "power_basis", "evidence"]

#: What each verdict means, for the ledger's header and README (one definition at every scale).
VERDICT_MEANINGS = {
    "reproduced": "the bounds of the measured effect exclude no effect in the paper's direction and do not rule "
                  "out an effect as large as the paper's (low > 0, high ≥ δ; larger effects included)",
    "smaller than the paper's": "the interval excludes no effect in the paper's direction but rules out the paper's "
                                "effect (low > 0, high < δ)",
    "not reproduced": "the interval rules out the paper's effect and does not rule out no effect, or lies on the "
                      "other side of 0 (high < δ, low ≤ 0)",
    "inconclusive": "the interval holds both no effect and the paper's effect (low ≤ 0, high ≥ δ)",
    "underpowered": "the evidence is below the claim's stated minimum (seeds per compared method in the comparisons "
                    "the verdict rests on, evaluated items, training steps, prompts per batch); the row says what would "
                    "be needed, and its interval decides nothing. A collapsed run is an outcome, not a shortfall: it "
                    "counts with its measured scores and in its method's collapse rate (shown in the row)",
    "not tested": "the design could not have shown the claim either way: a validity condition of the claim's rule "
                  "(checked from the evidence before any interval is read; the `validity` column lists each, passed "
                  "or failed) failed, and the row gives its measured value and threshold; a failed condition of one "
                  "part leaves that part not tested and the claim decided on its other parts; or the config's "
                  "`reporting: untested:` block states, before the data, that the registered design leaves the "
                  "claim out (the evidence column gives its reason; refused where the config maps a task to the claim's "
                  "table or figure, or the claim's evidence exists)",
    "not run": "the evidence does not exist: a run, a file or a setup is missing (the evidence column says which)",
    "not modelled": "scale sim only: the bench has no mechanism through which the claim could show, or it produced "
                    "the event in no arm and no positive control shows that it can",
}

#: How the verdict regions apply to the other kinds of part, and how parts and cells combine (header and README).
VERDICT_NOTES = [
    "δ is the paper's effect in the claim's direction (its unit: points, or a rate difference for events). Where no "
    "magnitude applies (scale sim, whose units are not the paper's; C4's fall from a model-dependent base rate) "
    "δ = 0: `smaller` cannot occur and `not reproduced` means the opposite direction.",
    "Parity and non-inferiority parts use a stated smallest effect of interest m instead: *kept* (C9's pass) is "
    "reproduced when low > −m and not reproduced when high < −m; *same* (C4's accuracy, C7's weights 0.75 and 0.5) "
    "is reproduced when the interval lies within ±m and not reproduced when it lies outside; *changed* (C7's "
    "weight 0.25) the reverse.",
    "A claim's parts each get a verdict (the `parts` column); together: any part `not reproduced` refutes, all "
    "`reproduced` reproduce, all in the paper's direction with some `smaller` give `smaller`, anything else is "
    "`inconclusive`. Setups of a table combine the same way.",
    "Levels (intersection–union): the paper's direction needs every part, so each part's bound on that side is "
    "one-sided 95 % (no correction); any one part can refute, so the bounds that refute share the 5 % over the "
    "claim's routes to a refutation (Bonferroni: 97.5 % each for two, 98.75 % for four; a parity part counts two, "
    "one per side). Each bound is printed with its one-sided level, e.g. `[+0.4 (95 %), +3.8 (98.75 %)]`; "
    "*same* and *changed* parts show their in-direction bounds. Adding a setup whose parts reproduce never "
    "makes a claim `not reproduced`; a refutation may become `inconclusive`.",
    "At scale sim every claim combines its grid's cells by one rule: shown in a cell (its in-direction bounds at "
    "one-sided 1 − 5 %/cells) and refuted in none reproduces; refuted in every cell refutes (for an event, only if "
    "some cell or a positive control shows the bench produces the event); anything else is inconclusive.",
    "Intervals: Student's t over seeds of the paired differences, the seeds' variance floored by the evaluation's "
    "binomial variance over items × samples (pooled as one more observation where the seeds vary less), so ties "
    "and single seeds never give a point; bounds clipped to what the metric can take ([−100, +100] points for a "
    "difference of percentages; the text says `clipped`). Event rates (C5, C10): exact unconditional score tests "
    "on the seeds' 2 × 2 table decide (rate above 0 at one-sided 5 %, below the claim's δ at 5 %); Newcombe's "
    "interval of the rate difference is shown only.",
]


@dataclasses.dataclass(frozen=True)
class LedgerRow:
    """One row of the ledger: a claim, the scale its evidence is from, the rule's verdict (its intervals as
    numbers included) and what the power column assumed."""

    claim: Claim
    scale: str
    verdict: Verdict
    power_basis: str = ""

    def record(self) -> dict:
        """The row as :data:`LEDGER_COLUMNS`."""
        verdict = self.verdict
        return {"claim_id": self.claim.claim_id, "scale": self.scale, "statement": self.claim.statement,
                "paper_value": self.claim.paper_value, "run": verdict.run, "measured_value": verdict.measured_value,
                "comparison": verdict.comparison, "verdict": verdict.verdict, "parts": verdict.parts,
                "validity": conditions_text(verdict.conditions),
                "power": verdict.power, "power_basis": self.power_basis, "evidence": verdict.evidence}


def judge_claims(scale: str, distinct_counts: str | Path | None, sim_per_seed: str | Path | None = None,
                 eval_csv: str | Path | None = None, steps_csv: str | Path | None = None,
                 reporting: dict | None = None, scale_rows: bool = True, runs: dict | None = None,
                 with_power: bool = True) -> list[LedgerRow]:
    """Every registered rule applied to its evidence, in claim order and, within a claim, :class:`Scale`
    order (arguments of :func:`build_ledger`). A scale's rows are left out where its evidence was not asked
    for: sim rows without ``sim_per_seed``, model rows without ``scale_rows``."""
    # Summaries `gdpo aggregate` wrote are checked against the digests it recorded beside them.
    check_summary_digests(eval_csv, steps_csv, Path(eval_csv).with_name("items.json") if eval_csv else None)
    evidence = Evidence(
        _read_optional(eval_csv), _read_optional(steps_csv), reporting or {}, scale,
        eval_path=str(eval_csv or f"results/{scale}/summary/eval.csv"),
        steps_path=str(steps_csv or f"results/{scale}/summary/steps.csv"), runs=runs,
        items=_read_items(eval_csv),
    )
    counts = _read_optional(distinct_counts)
    per_seed = _read_optional(sim_per_seed)
    untested = registered_untested(reporting)
    rows: list[LedgerRow] = []

    def add(claim: Claim, row_scale: str, verdict: Verdict, basis: str = "") -> None:
        rows.append(LedgerRow(claim, row_scale, verdict, basis or _event_basis(claim.claim_id, row_scale, verdict)))

    for claim in claims():
        for rule in rules_of(claim.claim_id):
            if rule.scale == Scale.EXACT:
                if counts is None:
                    add(claim, "exact", Verdict("", "", NOT_RUN, f"missing {distinct_counts or 'distinct_counts.csv'}"))
                else:
                    add(claim, "exact", rule.judge(counts, str(distinct_counts)))
            elif rule.scale == Scale.SIM and sim_per_seed is not None:
                add(claim, "sim", *_judge_sim(rule, per_seed, sim_per_seed, with_power))
            elif rule.scale == Scale.MODEL and scale_rows:
                at_scale = {r.claim.claim_id: r.verdict.verdict for r in rows if r.scale == scale}
                combined = {c: at_scale.get(c, NOT_RUN) for c in rule.combines}
                if claim.claim_id in untested:
                    add(claim, scale, _stated_untested(rule, evidence, combined, untested[claim.claim_id]))
                elif rule.combines:
                    add(claim, scale, rule.judge(evidence, combined))
                else:
                    add(claim, scale, *_judge_model(rule, evidence, with_power))
    return rows


def model_scale_claims() -> list[str]:
    """The claims with a rule at a model's scale, in claim order: those a config can state untested."""
    return [claim.claim_id for claim in claims() if any(r.scale == Scale.MODEL for r in rules_of(claim.claim_id))]


def registered_untested(reporting: dict | None) -> dict[str, str]:
    """Claim id → why the registered design does not test it (the config's ``reporting: untested:`` block,
    e.g. ``{"C5": "the pilot's math design failed its validity conditions"}``): those claims' rows at the
    scale say *not tested* with that reason, where the config maps no task to their tables or figures and the
    scale holds none of their evidence (a claim the design runs, or one with evidence, is judged; the ledger
    refuses the block). Stated before the data, as a pre-registration states
    a claim it cannot test; it can only take a verdict away, never give one.

    Raises:
        ValueError: a claim id without a rule at a model's scale (C1 and C2 are decided exactly), or an empty
            reason.
    """
    untested = dict((reporting or {}).get("untested") or {})
    judged = model_scale_claims()
    unknown = sorted(set(untested) - set(judged))
    if unknown:
        raise ValueError(f"reporting: untested: names {unknown}, which are no claims judged at a model's scale "
                         f"({', '.join(judged)}); fix the claim ids in the config")
    empty = sorted(claim for claim, reason in untested.items() if not str(reason or "").strip())
    if empty:
        raise ValueError(f"reporting: untested: gives no reason for {empty}; say why the design does not test "
                         "each claim")
    return {claim: str(reason).strip() for claim, reason in untested.items()}


def mapped_sources(claim_id: str, reporting: dict | None) -> list[str]:
    """The tables and figures of ``reporting`` that map a task to the claim's setups at a model's scale (its
    power design's ``source`` or ``figure``; for a rule that combines claims, theirs), e.g. ``["table1"]``:
    where any is mapped, the config's design runs the claim."""
    reporting = reporting or {}
    mapped = {**(reporting.get("figures") or {}), **(reporting.get("tables") or {})}
    found = []
    for rule in rules_of(claim_id):
        if rule.scale != Scale.MODEL:
            continue
        if rule.combines:
            found += [s for c in rule.combines for s in mapped_sources(c, reporting) if s not in found]
            continue
        source = getattr(rule.design, "source", None) or getattr(rule.design, "figure", None)
        if source and mapped.get(source) and source not in found:
            found.append(source)
    return found


def _stated_untested(rule: ClaimRule, evidence: Evidence, combined: dict[str, str], reason: str) -> Verdict:
    """The *not tested* row of a claim the config states untested, once the config is seen not to run it and its
    rule confirms that the scale holds none of its evidence: a claim the design runs is judged from its
    evidence (a run that fails is reported failed, never relabelled untested), and a claim whose evidence
    exists is never left out afterwards. A rule that combines other claims' verdicts (``combined``) has
    evidence where its rule gives more than *not run* or *not tested* from them.

    Raises:
        ValueError: the config maps a task to the claim's table or figure, or the rule finds the claim's
            evidence at this scale.
    """
    if sources := mapped_sources(rule.claim_id, evidence.reporting):
        raise ValueError(f"reporting: untested: names {rule.claim_id}, but the config maps a task to "
                         f"{', '.join(sources)}, so its design runs the claim, which is then judged from its "
                         f"evidence (a run that fails is reported failed, not untested): remove {rule.claim_id} "
                         f"from reporting: untested:, or the task from {', '.join(sources)}")
    judged = rule.judge(evidence, combined) if rule.combines else rule.judge(evidence)
    if judged.verdict not in ((NOT_RUN, NOT_TESTED) if rule.combines else (NOT_RUN,)):
        raise ValueError(f"reporting: untested: names {rule.claim_id}, but scale {evidence.scale!r} holds its evidence "
                         f"(its rule gives {judged.verdict!r}); a claim with evidence is judged, not left out: "
                         f"remove {rule.claim_id} from reporting: untested:")
    return Verdict("", "", NOT_TESTED, f"the registered design does not test it: {reason}")


def _judge_sim(rule: ClaimRule, per_seed: pd.DataFrame | None, sim_per_seed: str | Path,
               with_power: bool) -> tuple[Verdict, str]:
    """A sim rule's verdict on its study, with the simulated power of the table-like rows (those registered with a
    :class:`~gdpo.reporting.verdicts.registry.SimPower` design; the event rows state their own, exactly)."""
    if per_seed is None or rule.study not in set(per_seed["study"]):
        return Verdict("", "", NOT_RUN, f"missing study {rule.study!r} in {sim_per_seed}"), ""
    verdict = rule.judge(per_seed, f"{sim_per_seed} (study {rule.study})")
    if with_power and isinstance(rule.design, SimPower) and verdict.verdict not in (NOT_RUN, NOT_MODELLED):
        power, basis = calibration.sim_power(rule.claim_id, per_seed)
        return dataclasses.replace(verdict, power=power), basis
    return verdict, ""


def _judge_model(rule: ClaimRule, evidence: Evidence, with_power: bool) -> tuple[Verdict, str]:
    """A language-model-scale rule's verdict, with the power of the design its evidence represents (a rule
    registered with a table or event power design; NaN otherwise)."""
    verdict = rule.judge(evidence)
    if with_power and isinstance(rule.design, (TablePower, EventPower)) and verdict.verdict != NOT_RUN:
        power, basis = calibration.ledger_power(rule.claim_id, evidence)
        return dataclasses.replace(verdict, power=power), basis
    return verdict, ""


def build_ledger(scale: str, distinct_counts: str | Path | None, sim_per_seed: str | Path | None = None,
                 eval_csv: str | Path | None = None, steps_csv: str | Path | None = None,
                 reporting: dict | None = None, scale_rows: bool = True, runs: dict | None = None,
                 with_power: bool = True) -> pd.DataFrame:
    """The ledger rows for one workflow run (:func:`judge_claims` keeps each row's verdict with its intervals
    as numbers; this table has the ledger's columns).

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
    rows = judge_claims(scale, distinct_counts, sim_per_seed, eval_csv, steps_csv, reporting, scale_rows, runs,
                        with_power)
    return pd.DataFrame([row.record() for row in rows], columns=LEDGER_COLUMNS)


def _event_basis(claim_id: str, scale: str, verdict: Verdict) -> str:
    """What an event row's power assumes (the same alternative at every scale)."""
    if claim_id not in EVENT_EFFECTS or math.isnan(verdict.power):
        return ""
    rate_b = EVENT_BASE_RATE
    where = "in every cell of the grid" if scale == "sim" else "over the runs"
    return (f"event rate {rate_b + EVENT_EFFECTS[claim_id]:.2f} for the compared method and {rate_b:.2f} for "
            f"the reference, {where} (the claim's smallest implied difference, {EVENT_EFFECTS[claim_id]:g})")


def _read_optional(path: str | Path | None) -> pd.DataFrame | None:
    """The CSV at ``path``, or None when no path is given or the file does not exist (its rules say ``not run``)."""
    return pd.read_csv(path) if path is not None and Path(path).is_file() else None


def _read_items(eval_csv: str | Path | None) -> dict | None:
    """items.json beside ``eval_csv`` (each run's per-item outcomes, :func:`gdpo.reporting.aggregate.gather_items`),
    or None where the scale kept none (evidence made before per-item outcomes were kept): the rules then floor
    each difference by two independent binomials and say so."""
    if eval_csv is None:
        return None
    path = Path(eval_csv).with_name("items.json")
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error}); remake it with `gdpo aggregate --out-items {path}` "
                         "from the scale's eval.json files, or remove it to judge without paired items.") from None


def _power_text(power: float) -> str:
    return "—" if power is None or (isinstance(power, float) and math.isnan(power)) else f"{power:.2f}"


def ledger_markdown(ledger: pd.DataFrame, scale: str) -> str:
    """A readable CLAIMS.md: what the verdicts mean, a summary table, then each row in full."""
    lines = [f"# Claims ledger — scale `{scale}`", "",
             "What the verdicts mean (the same at every scale; low is the one-sided 95 % bound of the measured "
             "effect on the paper's side, high its one-sided bound on the other side, Bonferroni-adjusted over the "
             "claim's routes to a refutation; oriented so that the paper's direction is up, and δ the paper's "
             "effect):", ""]
    lines += [f"- **{name}**: {meaning}" for name, meaning in VERDICT_MEANINGS.items()]
    lines += ["", *[f"- {note}" for note in VERDICT_NOTES]]
    lines += [
        "",
        "**power** (one definition on every row): the probability that this design (its seeds, evaluated items × "
        "samples and steps, the seed spread measured here or assumed, the claim's minimum) gives `reproduced` if the "
        "paper's effect is true, by simulating runs (seed spread plus the evaluation's binomial noise, paired between "
        "the compared runs at their measured item correlation where items.json records their per-item outcomes) "
        "through the rule itself; the `power_basis` column says what it assumed. `gdpo power --config <config>` "
        "says what a design needs for 80 %. Rules: `gdpo/reporting/verdicts/`; contract and statistics: "
        "`gdpo/reporting/contract.py`.",
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
            f"- Parts: {row.parts if isinstance(row.parts, str) and row.parts else '—'}",
            f"- Validity: {row.validity if isinstance(row.validity, str) and row.validity else '—'}",
            f"- Power: {_power_text(row.power)}"
            + (f" ({row.power_basis})" if isinstance(row.power_basis, str) and row.power_basis else ""),
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


def compare_ledgers(published: str | Path, rerun: str | Path) -> str:
    """A rerun's ledger beside the published one (both ``claims.csv``), as Markdown: per claim and scale, the two
    verdicts, whether they agree, what each measured and what each ran. Rows only one side has are listed too
    (a rerun at another scale shares only the exact and bench rows).

    Raises:
        FileNotFoundError: a ledger is missing (run the workflow, or name the published scale's claims.csv).
    """
    frames = {}
    for label, path in (("published", published), ("rerun", rerun)):
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path} does not exist: give the published ledger (paper_figures/<scale>/"
                                    "claims.csv) and your workflow's (results/<scale>/paper_figures/claims.csv).")
        frames[label] = pd.read_csv(path, keep_default_na=False).set_index(["claim_id", "scale"])
    keys = list(dict.fromkeys([*frames["published"].index, *frames["rerun"].index]))
    lines = ["# Your ledger beside the published one", "", f"- published: `{published}`", f"- rerun: `{rerun}`", "",
             "| claim | scale | published | rerun | same verdict |", "|---|---|---|---|---|"]
    details, agree = [], 0

    def cell(label: str, key, column: str) -> str:
        frame = frames[label]
        return str(frame.loc[key, column]) if key in frame.index else "—"

    for key in keys:
        claim, scale = key
        a, b = cell("published", key, "verdict"), cell("rerun", key, "verdict")
        same = "—" if "—" in (a, b) else ("yes" if a == b else "**no**")
        agree += same == "yes"
        lines.append(f"| {claim} | {scale} | {a} | {b} | {same} |")
        details += [f"## {claim} ({scale})", "", f"- published ({a}): {cell('published', key, 'measured_value')}",
                    f"  - ran: {cell('published', key, 'run') or '—'}",
                    f"- rerun ({b}): {cell('rerun', key, 'measured_value')}",
                    f"  - ran: {cell('rerun', key, 'run') or '—'}", ""]
    both = sum(1 for key in keys if all(key in frame.index for frame in frames.values()))
    lines += ["", f"{agree} of the {both} rows both ledgers have give the same verdict. A different verdict from a "
              "different design (seeds, items, steps: the `run` lines) is expected; from the same design it is "
              "the spread between two draws.", "", *details]
    return "\n".join(lines).rstrip() + "\n"
