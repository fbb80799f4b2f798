# The claims ledger: every claim of the paper with its measurement and verdict at this scale. A workflow writes it
# under results/<scale>/paper_figures/ (never over the published paper_figures/<scale>/: `gdpo publish-results`).


rule claims_ledger:
    input:
        distinct_counts="results/exact/distinct_counts.csv",
        sim_per_seed=["results/sim/per_seed.csv"] if SIM_STUDIES else [],
        # The task families' summaries, when the config trains anything.
        evals=[f"results/{SCALE}/summary/eval.csv"] if RUN_DIRS else [],
        steps=[f"results/{SCALE}/summary/steps.csv"] if RUN_DIRS else [],
        # Per-item outcomes beside eval.csv: the rules pair the items both methods answered (read from there).
        item_outcomes=[f"results/{SCALE}/summary/items.json"] if RUN_DIRS else [],
        # The summaries' digests (gdpo aggregate): the ledger checks them before it reads the summaries.
        digests=[f"results/{SCALE}/summary/digests.json"] if RUN_DIRS else [],
    output:
        csv=in_report("results/{scale}/paper_figures/claims.csv"),
        md="results/{scale}/paper_figures/CLAIMS.md",
    params:
        sim=lambda wildcards, input: f"--sim-per-seed {input.sim_per_seed}" if input.sim_per_seed else "",
        runs=lambda wildcards, input: f"--eval-csv {input.evals} --steps-csv {input.steps}" if input.evals else "",
        # Which task stands for which paper setup, and what each task ran (model, steps, prompts per
        # batch: the rows' labels and minima): a change re-runs the ledger.
        reporting=json.dumps(config.get("reporting") or {}),
        runs_json=json.dumps(describe_runs(config)),
    log:
        "results/{scale}/logs/claims.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo claims --scale {wildcards.scale} --distinct-counts {input.distinct_counts} "
        "{params.sim} {params.runs} --reporting {params.reporting:q} --runs {params.runs_json:q} --out-csv {output.csv} --out-md {output.md} "
        "> {log} 2>&1"


# The quick target's ledger: the exact analysis and the bench only, before any language model trains.
rule claims_quick:
    input:
        distinct_counts="results/exact/distinct_counts.csv",
        sim_per_seed=["results/sim/per_seed.csv"] if SIM_STUDIES else [],
    output:
        csv="results/quick/paper_figures/claims.csv",
        md="results/quick/paper_figures/CLAIMS.md",
    params:
        sim=lambda wildcards, input: f"--sim-per-seed {input.sim_per_seed}" if input.sim_per_seed else "",
    log:
        "results/quick/logs/claims.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo claims --scale quick --exact-and-sim-only --distinct-counts {input.distinct_counts} "
        "{params.sim} --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"


# Where the scale is published (paper_figures/<scale>/claims.csv): this run's ledger beside the published draw.
rule compare_published:
    input:
        published="paper_figures/{scale}/claims.csv",
        rerun="results/{scale}/paper_figures/claims.csv",
    output:
        "results/{scale}/comparison.md",
    log:
        "results/{scale}/logs/comparison.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo compare-ledgers {input.published} {input.rerun} --out {output} > {log} 2>&1"
