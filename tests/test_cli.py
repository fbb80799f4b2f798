"""The gdpo command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from gdpo.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for command in ("methods", "advantages", "exact-counts", "exact-fig2-table", "figure", "claims", "validate-config",
                    "prepare-model", "train", "sim-run", "sim-summary", "sim-figure"):
        assert command in out


def test_module_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "gdpo", "methods"], capture_output=True, text=True, check=True)
    assert "gdpo_nobn" in result.stdout and "nemo_loo" in result.stdout


def test_advantages_prints_one_line_per_rollout(capsys):
    assert main(["advantages", "--rewards", "0,0;1,1", "-G", "2", "--method", "gdpo_nobn", "--convention", "exact"]) == 0
    out = capsys.readouterr().out
    assert "-1.414214" in out and "+1.414214" in out


def test_bad_input_is_a_message_not_a_traceback(capsys):
    assert main(["advantages", "--rewards", "0;1;1", "-G", "2"]) == 2
    err = capsys.readouterr().err
    assert "not a multiple of num_generations=2" in err and "Traceback" not in err


def test_exact_pipeline_from_the_command_line(tmp_path, capsys):
    counts, table = tmp_path / "counts.csv", tmp_path / "fig2.csv"
    assert main(["exact-counts", "--out", str(counts), "--max-rollouts", "5", "--max-rewards", "4"]) == 0
    assert main(["exact-fig2-table", "--out", str(table)]) == 0
    assert main(["figure", "fig2", "--input", str(table), "--out", str(tmp_path / "f2.png")]) == 0
    assert main(["figure", "fig3", "--input", str(counts), "--out", str(tmp_path / "f3.png")]) == 0
    assert (tmp_path / "f2.pdf").stat().st_size > 0 and (tmp_path / "f3.png").stat().st_size > 0
    assert main(["claims", "--scale", "smoke", "--distinct-counts", str(counts),
                 "--out-csv", str(tmp_path / "c.csv"), "--out-md", str(tmp_path / "C.md")]) == 0
    assert pd.read_csv(tmp_path / "c.csv").set_index("claim_id").loc["C1", "verdict"] == "reproduced"


def test_validate_config_command(capsys):
    assert main(["validate-config", str(REPO / "config/smoke.yaml"), str(REPO / "config/mini.yaml")]) == 0
    assert "config/mini.yaml: valid" in capsys.readouterr().out


#: What the power command's text is checked with: few simulated workflows (its numbers are checked against an
#: independent simulation at 2,000 in tests/test_calibration.py, a slow test).
QUICK = ("--replicates", "40")


def test_power_command_prints_each_claims_design_and_the_seeds_it_needs(capsys):
    assert main(["power", "--config", str(REPO / "config/paper-code.yaml"), "--seed-sd", "0.5", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "C9: seed spread 0.5 pts, given" in out and "seeds for 0.8" in out
    assert "paired items: outcomes correlated at ρ = 0.5" in out  # the variance model, named
    assert "Power from 40 simulated workflows" in out  # what the stated power rests on
    assert main(["power", "--config", str(REPO / "config/paper-code.yaml"), "--seed-sd", "0.5",
                 "--item-correlation", "0", *QUICK]) == 0
    assert "independent binomial item draws" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="item-correlation"):
        main(["power", "--config", str(REPO / "config/paper-code.yaml"), "--item-correlation", "1"])
    with pytest.raises(SystemExit, match="--replicates 0 must be at least 1"):
        main(["power", "--config", str(REPO / "config/paper-code.yaml"), "--replicates", "0"])
    # a pilot's measurements replace the given spread; a scale not built yet is named with how to build it
    with pytest.raises(SystemExit, match="drop --seed-sd and --item-correlation"):
        main(["power", "--config", str(REPO / "config/paper-code.yaml"), "--seed-sd", "1", "--measured", "x"])
    with pytest.raises(SystemExit, match="no-such-pilot/summary/eval.csv does not exist: build"):
        main(["power", "--config", str(REPO / "config/paper-code.yaml"), "--measured", "no-such-pilot/summary"])
    assert main(["power", "--config", str(REPO / "config/paper-math.yaml"), *QUICK]) == 0
    out = capsys.readouterr().out
    # The default spread and where it came from: the evaluation's own noise (AIME's 30 problems × 16 samples...).
    assert "C6: seed spread 0.5" in out and "the evaluation's own binomial sd" in out and "pass --seed-sd" in out


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_power_command_says_what_a_two_seed_config_lacks(capsys):
    """config/mini.yaml's grid: the search for the seeds of 80 % power over every claim takes about a minute."""
    assert main(["power", "--config", str(REPO / "config/mini.yaml"), *QUICK]) == 0
    out = capsys.readouterr().out
    assert "≥ 3 seeds per method (have 2)" in out and "pass --seed-sd" in out


def test_power_command_states_power_from_the_default_replicates(capsys, monkeypatch):
    """Without --replicates the stated power rests on STATED_REPLICATES workflows (what the calibration checks)."""
    from gdpo.reporting import calibration

    seen = {}
    real = calibration.power_report

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **{**kwargs, "stated_replicates": 40, "replicates": 40})

    monkeypatch.setattr(calibration, "power_report", spy)
    assert main(["power", "--config", str(REPO / "config/paper-code.yaml")]) == 0
    assert f"Power from {calibration.STATED_REPLICATES:,} simulated workflows" in capsys.readouterr().out
    assert seen["stated_replicates"] == calibration.STATED_REPLICATES == 2000 and seen["replicates"] == 400


def test_calibrate_command_reports_null_rates_and_power(capsys):
    assert main(["calibrate", str(REPO / "config/paper-code.yaml"), "--replicates", "200"]) == 0
    out = capsys.readouterr().out
    assert "null_in_direction" in out and "effect_not_reproduced" in out and "smallest gated" in out and "C9" in out


def test_publish_results_before_a_run_says_what_to_do(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config").mkdir()
    (tmp_path / "config/mini.yaml").write_text((REPO / "config/mini.yaml").read_text())
    assert main(["publish-results", "--config", "config/mini.yaml"]) == 2
    assert "run the workflow with config/mini.yaml first" in capsys.readouterr().err
