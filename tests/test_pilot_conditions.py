"""`benchmarks/pilot_conditions.py`'s registration gate: register only when every condition of C4 in the ledger
passed and every run of C4's arms had a training signal on at least 80 % of its steps."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
#: The first experiment's published ledger: its C4 row failed "start's format" and "training gains".
PUBLISHED = REPO / "paper_figures" / "cpu-evidence" / "claims.csv"
_SPEC = importlib.util.spec_from_file_location("pilot_conditions", REPO / "benchmarks" / "pilot_conditions.py")
pilot_conditions = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(pilot_conditions)


def _gate(validity: str, grpo_signal_steps: int) -> tuple[bool, str]:
    """The gate on a ledger whose C4 row reads ``validity`` and steps where GRPO seed 0 has a signal on
    ``grpo_signal_steps`` of its 10 steps (every other run on all of them): (register?, what failed)."""
    claims = pd.read_csv(PUBLISHED)
    claims.loc[claims["claim_id"] == "C4", "validity"] = validity
    steps = pd.DataFrame([{"task": "tool_calling", "method": method, "seed": seed, "step": step,
                           "advantages/std": 0.0 if (method, seed) == ("grpo", 0) and step > grpo_signal_steps else 0.5}
                          for method in ("grpo", "grpo_nostd", "gdpo") for seed in (0, 1) for step in range(1, 11)])
    register, failed = pilot_conditions.registration_gate(pilot_conditions.ledger_conditions(claims), steps)
    return register, "; ".join(failed)


PASSING = ("setup start's format: passed (the RL start's format is 9.0 %; the claim needs a start below 10 %); "
           "setup rewards vary: passed (correct 40.0 %, format 20.0 %; the claim needs 10 %); "
           "setup training gains: passed (BFCL avg: start 20.5 %, grpo 22.0 %; the part needs some compared "
           "method above the start)")


def test_the_gate_registers_when_every_c4_condition_and_every_signal_passes():
    assert _gate(PASSING, grpo_signal_steps=8) == (True, "")


@pytest.mark.parametrize(("validity", "signal_steps", "named"), [
    (PASSING.replace("training gains: passed", "training gains: failed"), 10, "training gains: failed"),
    (PASSING.replace("rewards vary: passed", "rewards vary: not checked"), 10, "rewards vary: not checked"),
    (PASSING, 7, "grpo seed 0: steps with a training signal 70 %"),
])
def test_the_gate_blocks_and_names_what_failed(validity, signal_steps, named):
    """One failed C4 condition (the parity part's alone included), one condition not checked, or one GRPO run
    with a signal on 70 % of its steps each block registration, and the line names it."""
    register, failed = _gate(validity, grpo_signal_steps=signal_steps)
    assert not register and named in failed, failed


def test_the_published_first_experiment_would_not_have_been_registered():
    """The first experiment's real C4 row (start's format 47.3 %, training gains failed) blocks the gate."""
    c4 = pd.read_csv(PUBLISHED).set_index("claim_id").loc["C4", "validity"]
    register, failed = _gate(c4, grpo_signal_steps=10)
    assert not register and "start's format: failed" in failed and "training gains: failed" in failed, failed


def test_a_missing_arm_blocks_the_gate():
    claims = pd.read_csv(PUBLISHED)
    claims.loc[claims["claim_id"] == "C4", "validity"] = PASSING
    steps = pd.DataFrame([{"task": "tool_calling", "method": "grpo", "seed": 0, "step": 1, "advantages/std": 0.5}])
    register, failed = pilot_conditions.registration_gate(pilot_conditions.ledger_conditions(claims), steps)
    assert not register and failed == ["grpo_nostd: no run"]
