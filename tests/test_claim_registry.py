"""One registration per claim: every registered claim's rules carry a power design, the calibration and the bill
name no claim, and a claim added by the recipe of ``docs/add-a-claim.md`` gets a verdict and a finite power from
the ledger, ``gdpo power`` and ``gdpo plan`` with nothing but its own module (here: this test)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gdpo.config import apply_grid, load_config
from gdpo.methods import Method
from gdpo.reporting import calibration, contract, ledger
from gdpo.reporting import paper_numbers as pn
from gdpo.reporting.contract import MIN_ITEMS, MIN_SEEDS, NOT_RUN, REPRODUCED, Claim, Minimum
from gdpo.reporting.verdicts import validity
from gdpo.reporting.verdicts.decisions import decide_better
from gdpo.reporting.verdicts.model import judge_table
from gdpo.reporting.verdicts.registry import (
    EventPower,
    NoPower,
    Scale,
    SimPower,
    TablePower,
    claim_rule,
    claims,
    designed,
    register_claim,
    rules_of,
    unregister_claim,
)

ROOT = Path(__file__).resolve().parents[1]
#: The modules of the power plan and the bill: they iterate the registry and name no claim.
POWER_MODULES = ("gdpo/reporting/calibration.py", "gdpo/reporting/bill.py")
#: A claim's id, quoted or in prose ("C3", C3's).
CLAIM_ID = re.compile(r"\bC\d+\b")
#: The shipped configs whose designs hold every language-model claim of the paper.
PAPER_CONFIGS = ("paper-tool_calling", "paper-math", "paper-code")


def config(name: str) -> dict:
    return apply_grid({**load_config(ROOT / "config" / f"{name}.yaml"), "grid": "default"})


# --------------------------------------------------------------------------------------------------
# Every registered claim has a power design
# --------------------------------------------------------------------------------------------------


def missing_power_designs() -> list[str]:
    """Each registered claim without a rule, and each rule without the power design its scale needs: a
    language-model rule a table or event design (a claim combining others' verdicts excepted), a bench rule a
    bench design or the reason it has none, an exact rule at least the reason."""
    missing = []
    for claim in claims():
        rules = rules_of(claim.claim_id)
        if not rules:
            missing.append(f"{claim.claim_id}: no rule")
        for rule in rules:
            where = f"{claim.claim_id} ({rule.scale})"
            if rule.design is None:
                missing.append(f"{where}: no power design")
            elif rule.scale == Scale.MODEL and not rule.combines and not isinstance(rule.design,
                                                                                   (TablePower, EventPower)):
                missing.append(f"{where}: a language-model rule needs a table or event power design")
            elif rule.scale == Scale.SIM and not isinstance(rule.design, (SimPower, NoPower)):
                missing.append(f"{where}: a bench rule needs a bench power design or the reason it has none")
    return missing


def test_every_registered_claim_has_a_power_design():
    assert [claim.claim_id for claim in claims()][:11] == [f"C{i}" for i in range(1, 12)]
    assert missing_power_designs() == []


def test_a_claim_without_a_power_design_fails_the_check():
    """A claim registered with no rule, then with a rule lacking its power design, is named: never a NaN power in
    a ledger unnoticed."""
    register_claim(Claim("C98", "made up", "", "", "math", minimum=Minimum(MIN_SEEDS, MIN_ITEMS)))
    try:
        assert missing_power_designs() == ["C98: no rule"]

        @claim_rule("C98", Scale.MODEL)
        def judge_c98(evidence):
            return contract.Verdict("", "", NOT_RUN, "")

        assert missing_power_designs() == ["C98 (model): no power design"]
    finally:
        unregister_claim("C98")
    assert missing_power_designs() == [] and "C98" not in contract.CLAIMS_BY_ID


def test_every_power_design_gives_a_finite_power_at_a_shipped_config():
    """Each language-model rule's table or event design is built from a paper config and simulated (a few
    replicates: the number is tests/test_calibration.py's); each bench design from the published bench."""
    designs = {}
    for name in PAPER_CONFIGS:
        designs.update(calibration.designs_from_config(config(name)))
    for rule in designed((TablePower, EventPower)):
        assert rule.claim_id in designs, rule.claim_id
        power = calibration.power_of(designs[rule.claim_id], replicates=40)
        assert 0.0 <= power <= 1.0, (rule.claim_id, power)
    per_seed = pd.read_csv(ROOT / "paper_figures/mini/evidence/sim_per_seed.csv")
    for rule in designed(SimPower, Scale.SIM):
        power, basis = calibration.sim_power(rule.claim_id, per_seed, replicates=20)
        assert 0.0 <= power <= 1.0 and basis.startswith("in every cell: "), (rule.claim_id, power, basis)


# --------------------------------------------------------------------------------------------------
# The calibration and the bill name no claim
# --------------------------------------------------------------------------------------------------


def test_the_scan_finds_a_claim_id_quoted_or_in_prose():
    assert CLAIM_ID.search('if claim_id == "C7":') and CLAIM_ID.search("C5's window")
    assert not CLAIM_ID.search("SCALE_C7 = 1; C7_CHANGE") and not CLAIM_ID.search("ABC12")


@pytest.mark.parametrize("path", POWER_MODULES)
def test_the_calibration_and_the_bill_name_no_claim(path):
    """No claim id anywhere in the module, code, comment or docstring: what differs between claims is each
    claim's registration (its power design), which these modules read."""
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    found = [f"{path}:{number}: {line.strip()}" for number, line in enumerate(lines, 1) if CLAIM_ID.search(line)]
    assert not found, "claim ids in a module that must iterate the registry:\n" + "\n".join(found)


# --------------------------------------------------------------------------------------------------
# A claim added by the recipe (docs/add-a-claim.md), literally
# --------------------------------------------------------------------------------------------------

#: C99's paper numbers, supplied here (made up): BFCL live accuracy (percent) per (setup, method, metric).
C99_PAPER = {(pn.QWEN25_1_5B, Method.GDPO, "live"): 56.0, (pn.QWEN25_1_5B, Method.GRPO, "live"): 50.0,
             (pn.QWEN25_3B, Method.GDPO, "live"): 75.0, (pn.QWEN25_3B, Method.GRPO, "live"): 69.0}


def c99_effect(setup: str, metric: str, comparison: tuple[str, str]) -> float:
    """The paper's effect of C99 (points of comparison[0] − comparison[1]); KeyError where it has none."""
    a, b = comparison
    return C99_PAPER[(setup, a, metric)] - C99_PAPER[(setup, b, metric)]


def register_c99() -> None:
    """C99's module, as docs/add-a-claim.md writes it (steps 1–5), with its paper numbers supplied (step 6)."""
    # 1. The contract.
    register_claim(Claim(
        "C99", "made up: GDPO beats GRPO on BFCL live accuracy", "live 56.0 vs 50.0 (1.5B), 75.0 vs 69.0 (3B); made up", "none",
        "tool_calling", "GDPO − GRPO of BFCL live accuracy (%, higher)", "+6.00 pts (1.5B and 3B)",
        Minimum(MIN_SEEDS, MIN_ITEMS), effect=c99_effect))

    # 2. The decision.
    def decide_c99(cells, setups):
        return decide_better("C99", cells, setups, ("live",))

    # 3. The power design.
    design = TablePower("table1", (Method.GDPO, Method.GRPO), ("live",), decide_c99,
                        paper_mean=lambda setup, method, metric: C99_PAPER.get((setup, method, metric), 50.0),
                        paper_setups=(pn.QWEN25_1_5B, pn.QWEN25_3B))

    # 4. The validity conditions.
    def live_off_the_floor(evidence, claim_id, gathered):
        return [validity.accuracy_band(claim_id, {m: float(np.mean(gathered.cells[(setup, m, "live")].values))
                                                  for m in design.methods}, setup, part="live")
                for setup in gathered.setups]

    # 5. The rule.
    @claim_rule("C99", Scale.MODEL, design=design, conditions=(live_off_the_floor,))
    def judge_c99(evidence):
        """C99 (made up): decide_c99 on every mapped setup."""
        return judge_table(evidence, "C99", "GDPO − GRPO paired by seed: BFCL live above 0")


@pytest.fixture
def c99():
    register_c99()
    yield
    unregister_claim("C99")
    contract.paper_effect.cache_clear()
    calibration._paper_mean.cache_clear()


def _live_rows(task: str, seeds: int = 4) -> list[dict]:
    """eval.csv rows: GRPO's BFCL live accuracy near 50 %, GDPO's 6 points above on every seed (729 items)."""
    rows = []
    for seed in range(seeds):
        for method, value in ((Method.GRPO, 50.0 + 0.4 * (seed % 2)), (Method.GDPO, 56.0 + 0.3 * (seed % 3))):
            rows.append({"task": task, "method": str(method), "seed": seed, "benchmark": "bfcl_v3", "metric": "live",
                         "value": value, "n_items": 729, "note": "", "health": "healthy"})
    return rows


def test_a_claim_added_by_the_recipe_gets_a_verdict_and_a_power(c99, tmp_path):
    """C99 registered by its own module only: the ledger judges it after the paper's claims, its validity
    condition is checked, its power is simulated from its design; `gdpo power` and `gdpo plan` find its design
    and runs in a shipped config."""
    assert missing_power_designs() == []
    eval_csv = tmp_path / "eval.csv"
    pd.DataFrame(_live_rows("tc")).to_csv(eval_csv, index=False)
    reporting = {"tables": {"table1": {pn.QWEN25_1_5B: "tc"}}}
    built = ledger.build_ledger("paper", None, eval_csv=eval_csv, reporting=reporting,
                                runs={"tc": {"model": "Qwen/Qwen2.5-1.5B-Instruct"}})
    assert built["claim_id"].tolist()[-1] == "C99"
    row = built.set_index("claim_id").loc["C99"]
    assert row["verdict"] == REPRODUCED, row["measured_value"]
    assert row["parts"] == "Qwen2.5-1.5B live: reproduced"
    assert row["measured_value"].startswith("tc (as the paper's Qwen2.5-1.5B): GDPO − GRPO live +6.0 pts")
    assert "accuracy off ceiling and floor: passed" in row["validity"]
    assert math.isfinite(row["power"]) and 0.0 < row["power"] <= 1.0, row
    assert row["power_basis"].startswith("seed spread measured over")

    # What `gdpo power` and `gdpo plan` read (calibration.power_report; bill.claim_cost_table): its design from a
    # config that maps table1, its reference rates its own paper numbers, its seeds for 80 % and the runs they cost.
    shipped = config("paper-tool_calling")
    design = calibration.designs_from_config(shipped)["C99"]
    assert design.setups == (pn.QWEN25_1_5B, pn.QWEN25_3B) and design.seeds == 5
    assert design.cells[(pn.QWEN25_1_5B, Method.GDPO, "live")].mean == 56.0
    assert calibration.cell_means(design, effect=True)[(pn.QWEN25_1_5B, Method.GDPO, "live")] == 56.0
    assert calibration.cell_means(design, effect=False)[(pn.QWEN25_1_5B, Method.GDPO, "live")] == 50.0
    power = calibration.power_of(design, replicates=200)
    assert math.isfinite(power) and power > 0.5
    assert isinstance(calibration.seeds_for_power(design, replicates=100, confirm=200), int)
    assert calibration.claim_runs(shipped)["C99"] == (("tool_calling_1.5b", "tool_calling_3b"),
                                                     (Method.GDPO, Method.GRPO))
    checks = calibration.calibration_checks(design, replicates=100)
    assert checks["null_in_direction"] <= 0.05 and checks["effect_not_reproduced"] <= 0.05, checks
