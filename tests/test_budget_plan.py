"""`gdpo plan --budget-gpu-hours H`: the runs that decide the most claims at 80 % power within H GPU-hours, and the
runs of the paper grid that buy no verdict (gdpo.reporting.bill.budget_plan)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gdpo.cli import main
from gdpo.config import apply_grid, apply_miniature, load_config
from gdpo.reporting.bill import budget_plan, check_budget, claim_needs, format_bill, format_budget
from gdpo.reporting.calibration import decided_power, searched_design

REPO = Path(__file__).resolve().parents[1]
PAPER_MATH = REPO / "config" / "paper-math.yaml"
TARGET = 0.8
REPLICATES = 400  # what `gdpo plan` searches the seeds with


@pytest.fixture(scope="module")
def config() -> dict:
    # As `gdpo plan` reads it (gdpo.cli.cmd_plan).
    return apply_miniature(apply_grid({**load_config(PAPER_MATH), "grid": "default"}))


@pytest.fixture(scope="module")
def needs(config):
    return claim_needs(config, TARGET, REPLICATES)


@pytest.mark.parametrize("budget", [12_000.0, 20_000.0, 1e9])
def test_the_proposal_stays_within_the_budget_and_every_claim_in_it_has_the_power(config, needs, budget):
    plan = budget_plan(config, budget, TARGET, REPLICATES, needs=needs)
    assert plan.chosen, "some claim of paper-math is decidable within this budget"
    assert plan.total <= budget
    by_claim = {need.claim: need for need in needs}
    for row in plan.chosen:
        need = by_claim[row["claim"]]
        # The same power function the seeds were searched with, at the seeds the proposal gives the claim.
        power = decided_power(searched_design(need.design).with_seeds(row["seeds"]), TARGET, REPLICATES,
                              10 * REPLICATES)
        assert power == row["power"] >= TARGET
        assert all(plan.runs[(task, method)] >= row["seeds"] for task in need.tasks for method in need.methods)
    if budget == 1e9:  # no budget binds: every claim that reaches the power by 64 seeds is decided
        assert {row["claim"] for row in plan.chosen} == {need.claim for need in needs if need.seeds is not None}


def test_the_conditioned_weight_sweep_is_marked_as_buying_no_verdict(config, needs):
    plan = budget_plan(config, 20_000, TARGET, REPLICATES, needs=needs)
    reporting = config["reporting"]
    named_elsewhere = {task for name, table in reporting["tables"].items() for task in table.values()}
    named_elsewhere |= {task for name, task in reporting["figures"].items() if isinstance(task, str)}
    sweep = {weights["conditioned"] for weights in reporting["figures"]["fig6"].values()} - named_elsewhere
    assert sweep and {row["task"] for row in plan.no_verdict} == sweep
    assert all(row["feeds"] == "fig6 only" for row in plan.no_verdict)
    assert math.isclose(sum(row["GPU-h"] for row in plan.no_verdict), 14_580)
    text = "\n".join(format_budget(plan, config))
    assert "buy no verdict" in text and "fig6 only" in text


def test_a_budget_too_small_for_any_claim_says_so(config, needs):
    plan = budget_plan(config, 100, TARGET, REPLICATES, needs=needs)
    assert not plan.chosen and not plan.runs and plan.total == 0
    assert plan.cheapest is not None and plan.cheapest > 100
    text = "\n".join(format_budget(plan, config))
    assert f"no claim can be decided at 80% power within 100 GPU-h: the cheapest needs {plan.cheapest:,.0f} GPU-h" in text
    assert all("cannot reach 80% power" in reason or "no verdict" in reason or "not decided" in reason
               for _, reason in plan.left_out)


@pytest.mark.parametrize("budget", [0, -5, math.nan, math.inf])
def test_a_budget_that_is_not_a_positive_number_is_an_error(budget, capsys):
    with pytest.raises(ValueError, match="must be a positive number of GPU-hours"):
        check_budget(budget)
    assert main(["plan", "--config", str(PAPER_MATH), "--budget-gpu-hours", str(budget)]) == 2
    assert "must be a positive number of GPU-hours" in capsys.readouterr().err


def test_without_the_flag_the_bill_is_unchanged_and_the_flag_only_appends(config, capsys):
    bill = format_bill(config, f"{PAPER_MATH} (default grid)")
    assert "--budget-gpu-hours" not in bill and "buy no verdict" not in bill
    assert main(["plan", "--config", str(PAPER_MATH)]) == 0
    assert capsys.readouterr().out == bill + "\n"
    with_budget = format_bill(config, f"{PAPER_MATH} (default grid)", budget_gpu_hours=20_000)
    assert with_budget.startswith(bill + "\n") and "Within a budget of 20,000 GPU-h" in with_budget[len(bill):]
