# The claims ledger: every claim of the paper with its measurement and verdict at this scale.


rule claims_ledger:
    input:
        distinct_counts="results/exact/distinct_counts.csv",
        sim_per_seed=["results/sim/per_seed.csv"] if SIM_STUDIES else [],
    output:
        csv="paper_figures/{scale}/claims.csv",
        md="paper_figures/{scale}/CLAIMS.md",
    params:
        sim=lambda wildcards, input: f"--sim-per-seed {input.sim_per_seed}" if input.sim_per_seed else "",
    log:
        "results/{scale}/logs/claims.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo claims --scale {wildcards.scale} --distinct-counts {input.distinct_counts} "
        "{params.sim} --out-csv {output.csv} --out-md {output.md} > {log} 2>&1"
