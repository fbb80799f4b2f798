# The claims ledger: every claim of the paper with its measurement and verdict at this scale.


rule claims_ledger:
    input:
        distinct_counts="results/exact/distinct_counts.csv",
    output:
        csv="paper_figures/{scale}/claims.csv",
        md="paper_figures/{scale}/CLAIMS.md",
    log:
        "results/{scale}/logs/claims.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo claims --scale {wildcards.scale} --distinct-counts {input.distinct_counts} "
        "--out-csv {output.csv} --out-md {output.md} > {log} 2>&1"
