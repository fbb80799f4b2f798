"""The ledger files, and the exact scale's rules (C1, C2) on real and synthetic counts."""

from __future__ import annotations

import pandas as pd
import pytest

from gdpo.analysis import exact
from gdpo.reporting import contract, ledger as ledgers, verdicts


@pytest.fixture(scope="module")
def real_counts() -> pd.DataFrame:
    return exact.distinct_counts_table(exact.grid_points(max_rollouts=8, max_rewards=5))


def synthetic_counts(rollouts: dict[str, list[int]], rewards: dict[str, list[int]]) -> pd.DataFrame:
    """Counts for G = 2.. (n = 2) and n = 2.. (G = 4) from per-method lists."""
    rows = []
    for method, values in rollouts.items():
        rows += [dict(method=method, rollouts=2 + i, rewards=2, distinct_groups=v, axis="rollouts")
                 for i, v in enumerate(values)]
    for method, values in rewards.items():
        rows += [dict(method=method, rollouts=4, rewards=2 + i, distinct_groups=v, axis="rewards")
                 for i, v in enumerate(values)]
    return pd.DataFrame(rows)


GOOD = dict(grpo=[2, 4, 7], grpo_nostd=[3, 6, 10], gdpo=[3, 6, 21])


def test_c1_reproduced_on_real_counts(real_counts):
    verdict = verdicts.exact.judge_c1(real_counts, "counts.csv")
    assert verdict.verdict == contract.REPRODUCED
    assert verdict.measured_value == "GRPO 2, GRPO w/o std 3, GDPO 3"


def test_c1_not_reproduced_and_not_run():
    wrong = synthetic_counts(dict(grpo=[3, 4, 7], grpo_nostd=[3, 6, 10], gdpo=[3, 6, 21]), GOOD)
    assert verdicts.exact.judge_c1(wrong, "x").verdict == contract.NOT_REPRODUCED
    missing = synthetic_counts({}, GOOD)
    assert verdicts.exact.judge_c1(missing, "x").verdict == contract.NOT_RUN


def test_c2_reproduced_on_real_counts(real_counts):
    verdict = verdicts.exact.judge_c2(real_counts, "counts.csv")
    assert verdict.verdict == contract.REPRODUCED, verdict.measured_value


@pytest.mark.parametrize(
    ("rollouts", "failure"),
    [
        (dict(grpo=[2, 4, 4], grpo_nostd=[3, 6, 10], gdpo=[3, 6, 21]), "grpo does not grow strictly"),
        (dict(grpo=[2, 4, 7], grpo_nostd=[3, 6, 10], gdpo=[3, 5, 21]), "order GDPO ≥ GRPO w/o std > GRPO broken"),
        (dict(grpo=[2, 4, 7], grpo_nostd=[2, 6, 10], gdpo=[3, 6, 21]), "order"),
        (dict(grpo=[2, 4, 7], grpo_nostd=[3, 6, 10], gdpo=[3, 6, 19]), "GDPO/GRPO w/o std = 1.90"),
    ],
)
def test_c2_not_reproduced_says_which_part_failed(rollouts, failure):
    verdict = verdicts.exact.judge_c2(synthetic_counts(rollouts, GOOD), "x")
    assert verdict.verdict == contract.NOT_REPRODUCED
    assert failure in verdict.measured_value


def test_c2_reproduced_and_not_run_on_synthetic():
    assert verdicts.exact.judge_c2(synthetic_counts(GOOD, GOOD), "x").verdict == contract.REPRODUCED
    short = synthetic_counts(GOOD, dict(grpo=[7, 14], grpo_nostd=[10, 20], gdpo=[14, 45]))
    assert verdicts.exact.judge_c2(short, "x").verdict == contract.NOT_RUN


def test_ledger_lists_every_claim_and_only_valid_verdicts(tmp_path, real_counts):
    path = tmp_path / "counts.csv"
    real_counts.to_csv(path, index=False)
    ledger = ledgers.write_ledger("smoke", path, tmp_path / "claims.csv", tmp_path / "CLAIMS.md")
    registered = [claim.claim_id for claim in verdicts.registry.claims()]  # the paper's, then any added
    assert ledger["claim_id"].tolist() == registered and registered[:11] == [f"C{i}" for i in range(1, 12)]
    assert list(ledger.columns) == ledgers.LEDGER_COLUMNS
    assert set(ledger["verdict"]) <= set(contract.VERDICTS)
    by_id = ledger.set_index("claim_id")
    assert by_id.loc["C1", "verdict"] == by_id.loc["C2", "verdict"] == contract.REPRODUCED
    assert by_id.loc["C1", "scale"] == "exact" and by_id.loc["C3", "scale"] == "smoke"
    assert (by_id.drop(["C1", "C2"])["verdict"] == contract.NOT_RUN).all()
    # No task family ran and no reporting: block: every family claim says what it lacks.
    assert all("reporting: block maps no task" in e or "not run at this scale" in e
               for e in by_id.drop(["C1", "C2"])["evidence"])
    markdown = (tmp_path / "CLAIMS.md").read_text()
    assert "| C1 | exact | **reproduced** |" in markdown
    # The header says what every verdict means.
    for verdict in contract.VERDICTS:
        assert f"**{verdict}**" in markdown
    assert pd.read_csv(tmp_path / "claims.csv").shape == (len(registered), len(ledgers.LEDGER_COLUMNS))


def test_missing_evidence_is_not_run_never_a_verdict(tmp_path):
    ledger = ledgers.build_ledger("mini", tmp_path / "absent.csv").set_index("claim_id")
    assert ledger.loc["C1", "verdict"] == contract.NOT_RUN
    assert "missing" in ledger.loc["C1", "evidence"] and "absent.csv" in ledger.loc["C1", "evidence"]


def test_a_claim_the_registered_design_does_not_test_says_so_with_its_reason(tmp_path):
    reason = "the pilot's math design failed its validity conditions (PREREGISTRATION.md, Pilot)"
    ledger = ledgers.build_ledger("mini", tmp_path / "absent.csv", reporting={"untested": {"C5": reason}},
                                  with_power=False)
    rows = ledger[ledger["scale"] == "mini"].set_index("claim_id")
    assert rows.loc["C5", "verdict"] == contract.NOT_TESTED
    assert rows.loc["C5", "evidence"] == f"the registered design does not test it: {reason}"
    # Only the named claim: the others keep what their evidence gives (here none: not run).
    assert rows.loc["C6", "verdict"] == contract.NOT_RUN
    assert (ledger[ledger["claim_id"] != "C5"]["verdict"] != contract.NOT_TESTED).all()


def test_a_claim_the_design_runs_cannot_be_stated_untested(tmp_path):
    """The cheapest way to hide an unfavourable verdict, naming its claim untested after the data, is refused,
    and so is naming a claim whose setup the config maps to a task, evidence or not (every run of one method
    failing must read as a failure, never as a design that does not test it): C3 and C4 read Table 1, C11
    combines C3; a claim whose table or figure the config does not map (C5) may still be named."""
    eval_csv = tmp_path / "eval.csv"
    pd.DataFrame([{"task": "tc", "method": method, "seed": seed, "benchmark": "bfcl_v3", "metric": metric,
                   "value": 40.0 + seed + (3.0 if method == "gdpo" else 0.0), "n_items": 277, "note": "",
                   "health": "healthy"}
                  for method in ("grpo", "gdpo") for seed in range(3) for metric in ("avg", "format")]
                 ).to_csv(eval_csv, index=False)
    tables = {"tables": {"table1": {"Qwen2.5-1.5B": "tc"}}}
    judged = ledgers.build_ledger("mini", None, eval_csv=eval_csv, reporting=tables, with_power=False)
    assert judged.set_index("claim_id").loc["C3", "verdict"] != contract.NOT_RUN
    for claim in ("C3", "C4", "C11"):
        with pytest.raises(ValueError, match=f"names {claim}, but the config maps a task to table1"):
            ledgers.build_ledger("mini", None, eval_csv=eval_csv, with_power=False,
                                 reporting={**tables, "untested": {claim: "stated after the data"}})
    # without the mapping, no rule finds the evidence: none to hide; the evidence check stays (a combining rule)
    assert ledgers.mapped_sources("C3", {"figures": {"fig5": "math"}}) == []
    assert ledgers.mapped_sources("C11", {**tables, "tables": {**tables["tables"], "table3": {"R1-1.5B": "m"}}}) \
        == ["table1", "table3"]
    stated = ledgers.build_ledger("mini", None, eval_csv=eval_csv, with_power=False,
                                  reporting={**tables, "untested": {"C5": "no math task"}})
    assert stated.set_index("claim_id").loc["C5", "verdict"] == contract.NOT_TESTED


@pytest.mark.parametrize("untested, named", [({"C55": "no such claim"}, "C55"), ({"C1": "decided exactly"}, "C1"),
                                             ({"C5": "  "}, "no reason")])
def test_an_untested_block_naming_no_claim_or_no_reason_is_refused(tmp_path, untested, named):
    with pytest.raises(ValueError, match=named):
        ledgers.build_ledger("mini", tmp_path / "absent.csv", reporting={"untested": untested}, with_power=False)


def test_published_results_rebuild_to_the_same_ledger(tmp_path, real_counts):
    """publish-results copies a run's evidence beside its ledger; rebuilding from that copy gives the ledger."""
    import shutil
    from pathlib import Path

    from gdpo.reporting import publish
    from gdpo.plan import describe_runs
    from gdpo.config import load_config

    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "config").mkdir()
    shutil.copy(repo / "config/mini.yaml", tmp_path / "config/mini.yaml")
    (tmp_path / "results/exact").mkdir(parents=True)
    real_counts.to_csv(tmp_path / "results/exact/distinct_counts.csv", index=False)
    (tmp_path / "results/mini/summary").mkdir(parents=True)
    rows = [{"task": "tool_calling", "method": m, "seed": s, "benchmark": "bfcl_v3", "metric": metric, "value": v + s,
             "n_items": 24, "note": ""} for m, v in (("grpo", 30.0), ("gdpo", 33.0)) for s in (0, 1)
            for metric in ("avg", "format")]
    pd.DataFrame(rows).to_csv(tmp_path / "results/mini/summary/eval.csv", index=False)
    config = load_config(tmp_path / "config/mini.yaml")
    import contextlib

    with contextlib.chdir(tmp_path):
        with pytest.raises(FileNotFoundError, match="run the workflow"):
            publish.publish("config/mini.yaml")
        ledgers.write_ledger("mini", "results/exact/distinct_counts.csv", "results/mini/paper_figures/claims.csv",
                             "results/mini/paper_figures/CLAIMS.md", eval_csv="results/mini/summary/eval.csv",
                             steps_csv="results/mini/summary/steps.csv", reporting=config["reporting"],
                             runs=describe_runs(config))
        out = publish.publish("config/mini.yaml")
    assert sorted(p.name for p in (out / "evidence").iterdir()) == ["distinct_counts.csv", "eval.csv"]
    # the ledger is published with the evidence it was built from
    assert (out / "claims.csv").read_bytes() == (tmp_path / "results/mini/paper_figures/claims.csv").read_bytes()
    committed = pd.read_csv(out / "claims.csv", keep_default_na=False)
    rebuilt = publish.rebuild_ledger(out, tmp_path / "rebuild")
    rebuilt.to_csv(tmp_path / "rebuilt.csv", index=False, float_format="%.3f")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "rebuilt.csv", keep_default_na=False), committed)
    assert committed.set_index("claim_id").loc["C1", "verdict"] == contract.REPRODUCED


# --- the registry of claim rules --------------------------------------------------------------------------------

def test_every_claim_has_its_rules_registered_once_per_scale():
    from gdpo.reporting.verdicts import Scale, rules_of

    scales = {claim.claim_id: [str(rule.scale) for rule in rules_of(claim.claim_id)] for claim in contract.CLAIMS}
    assert scales == {"C1": ["exact"], "C2": ["exact"], "C3": ["sim", "model"], "C4": ["sim", "model"],
                      "C5": ["sim", "model"], "C6": ["model"], "C7": ["sim", "model"], "C8": ["sim", "model"],
                      "C9": ["model"], "C10": ["sim", "model"], "C11": ["model"]}
    assert verdicts.rule_for("C11", Scale.MODEL).combines == ("C3", "C6", "C9")
    assert verdicts.rule_for("C10", "sim").study == verdicts.sim.SEQUENCE_STUDIES["C10"]


def test_the_registry_refuses_a_second_rule_and_unknown_names():
    def judge(counts, evidence):
        return contract.Verdict("", "", contract.NOT_RUN, evidence)

    with pytest.raises(ValueError, match="C1 at scale exact already has a rule"):
        verdicts.claim_rule("C1", "exact")(judge)
    with pytest.raises(ValueError, match="unknown scale 'mini'"):
        verdicts.claim_rule("C6", "mini")
    with pytest.raises(ValueError, match="unknown claim 'C12'"):
        verdicts.claim_rule("C12", "exact")
    with pytest.raises(ValueError, match="bench study"):
        verdicts.claim_rule("C6", "sim")
    with pytest.raises(KeyError, match="no rule for C6 at scale 'sim'; registered: .*C1 \\(exact\\)"):
        verdicts.rule_for("C6", "sim")


def test_a_registered_rule_gets_its_row_in_the_claims_place(monkeypatch, tmp_path):
    """The ledger asks the registry: a new rule adds its row, after the claim's earlier scales and before the next
    claim."""
    from gdpo.reporting.verdicts import registry

    monkeypatch.setattr(registry, "_RULES", dict(registry._RULES))

    @verdicts.claim_rule("C6", "sim", study="extra_study")
    def judge_c6(per_seed, evidence):
        return contract.Verdict(f"{len(per_seed)} rows", "", contract.INCONCLUSIVE, evidence)

    path = tmp_path / "per_seed.csv"
    pd.DataFrame({"study": ["extra_study"] * 3, "seed": [0, 1, 2]}).to_csv(path, index=False)
    built = ledgers.build_ledger("mini", None, path, scale_rows=False, with_power=False)
    assert list(zip(built["claim_id"], built["scale"]))[:8] == [
        ("C1", "exact"), ("C2", "exact"), ("C3", "sim"), ("C4", "sim"), ("C5", "sim"), ("C6", "sim"), ("C7", "sim"),
        ("C8", "sim")]
    row = built.set_index(["claim_id", "scale"]).loc[("C6", "sim")]
    assert row["verdict"] == contract.INCONCLUSIVE and row["measured_value"] == "3 rows"
    assert row["evidence"] == f"{path} (study extra_study)"
