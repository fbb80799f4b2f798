"""The command line's one table: every subcommand has a handler, a help line, a working ``--help`` and the options
it is known by (the workflow's rules and the documentation call them by these names)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gdpo.cli import COMMANDS, Command, build_parser, main

REPO = Path(__file__).resolve().parents[1]

#: The option strings (and positionals' names) of each subcommand, in the order of its ``--help``; ``-h`` left out.
#: Changed the command line on purpose? Update this list with it.
OPTIONS = {
    "methods": (),
    "advantages": ("--rewards", "-G", "--num-generations", "--method", "--weights", "--convention", "--lengths"),
    "exact-counts": ("--out", "--max-rollouts", "--max-rewards", "--decimals"),
    "exact-fig2-table": ("--out",),
    "figure": ("name", "--input", "--out"),
    "claims": ("--scale", "--distinct-counts", "--sim-per-seed", "--eval-csv", "--steps-csv", "--reporting", "--runs",
               "--exact-and-sim-only", "--out-csv", "--out-md"),
    "power": ("--config", "--grid", "--seed-sd", "--item-correlation", "--parts", "--measured", "--target", "--replicates",
              "--collapse-rate"),
    "plan": ("--config", "--grid", "--target", "--budget-gpu-hours"),
    "calibrate": ("configs", "--replicates", "--markdown"),
    "publish-results": ("--config", "--grid", "--replace", "--amend-by", "--amend-why"),
    "republish-ledger": ("published", "--amend-by", "--amend-why"),
    "record-digests": ("evidence_dir",),
    "compare-ledgers": ("published", "rerun", "--out"),
    "restore-evidence": ("--from", "--to", "--run", "--settings", "--numerics"),
    "run-experiment": ("--configfile", "--repo", "--cores", "--budget-hours", "--no-commit"),
    "prepare-model": ("--spec", "--out", "--seed"),
    "train": ("--settings", "--model-dir", "--run-dir", "--threads", "--stop-at-step", "--segment-record",
              "--restart-changed"),
    "warmup-model": ("--settings", "--model-dir", "--out", "--threads"),
    "check-device": ("--job", "--task", "--method", "--seed", "--gpus", "--disk-path", "--disk-gib", "--sandbox"),
    "preflight": ("--configfile", "--config"),
    "fetch": ("--configfile", "--config", "--dry-run"),
    "evaluate": ("--settings", "--model-dir", "--adapter-dir", "--out", "--work-dir", "--threads"),
    "aggregate": ("--metrics", "--evals", "--out-steps", "--out-eval", "--out-items"),
    "item-pairing": ("--published", "--methods", "--bfcl-split", "--work-dir", "--regrade", "--out"),
    "paper-outputs": ("--config", "--steps", "--evals", "--out-dir"),
    "sim-run": ("--study", "--out", "--threads"),
    "sim-summary": ("--inputs", "--summary", "--per-seed"),
    "sim-figure": ("--input", "--out"),
    "sim-noise-law": ("--cells", "--row", "--figure"),
    "write-miniature-data": ("--out", "--rows", "--seed"),
    "check-data": ("--family", "--data-dir", "--name"),
    "validate-config": ("files",),
    "memory-plan": ("--config", "--details"),
}


def subparsers() -> dict:
    (action,) = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    return action.choices


@pytest.mark.parametrize("entry", COMMANDS, ids=lambda entry: entry.name)
def test_every_subcommand_has_a_handler_and_help(entry: Command):
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", entry.name)
    assert callable(entry.handler) and entry.handler.__name__ == f"cmd_{entry.name.replace('-', '_')}"
    assert entry.help.strip() and (entry.description is None or entry.description.strip())
    for argument in entry.arguments:
        assert argument.flags and all(isinstance(flag, str) and flag for flag in argument.flags)
        assert argument.options.get("help", "x").strip(), f"{entry.name} {argument.flags}: empty help"


def test_the_table_is_the_parser_and_names_each_subcommand_once():
    names = [entry.name for entry in COMMANDS]
    assert len(names) == len(set(names))
    assert list(subparsers()) == names  # in the table's order, nothing added or lost on the way
    assert set(names) == set(OPTIONS), "update OPTIONS in this file with the command line"


@pytest.mark.parametrize("name", list(OPTIONS))
def test_each_subcommand_keeps_its_options(name):
    sub = subparsers()[name]
    options = tuple(string for action in sub._actions if action.dest != "help"
                    for string in (action.option_strings or [action.dest]))
    assert options == OPTIONS[name], "changed the command line on purpose? update OPTIONS in this file"
    entry = next(entry for entry in COMMANDS if entry.name == name)
    assert sub.get_default("handler") is entry.handler


@pytest.mark.parametrize("name", list(OPTIONS))
def test_help_of_each_subcommand_runs(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: gdpo {name} ")
    entry = next(entry for entry in COMMANDS if entry.name == name)
    for option in OPTIONS[name]:
        assert option in out or not option.startswith("-")  # a positional with choices shows them, not its name
    if entry.description:  # argparse refills it; compare the words
        assert " ".join(entry.description.split()[:6]) in " ".join(out.split())


def test_the_top_level_help_lists_every_subcommand_with_its_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for entry in COMMANDS:
        assert f"{entry.name} {' '.join(entry.help.replace('%%', '%').split())}" in out


def test_the_workflow_calls_only_registered_subcommands():
    called = set()
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*.smk"))]:
        called |= set(re.findall(r"python -m gdpo ([a-z][a-z0-9-]*)", path.read_text(encoding="utf-8")))
    assert called, "no `python -m gdpo <subcommand>` found in the workflow"
    assert called <= set(OPTIONS), f"the workflow calls unknown subcommands: {sorted(called - set(OPTIONS))}"


def test_the_command_line_imports_no_heavy_module():
    """``gdpo --help`` and the parser itself stay quick: torch and friends load inside the handlers that need them."""
    code = ("import sys\nfrom gdpo.cli import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('torch', 'transformers', 'trl', 'matplotlib') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.strip() == "[]"
    result = subprocess.run([sys.executable, "-m", "gdpo", "--help"], capture_output=True, text=True, check=True, cwd=REPO)
    assert all(entry.name in result.stdout for entry in COMMANDS)
