# Exact collapse analysis (claims C1, C2): scale "exact", independent of the config's scale.


rule exact_distinct_counts:
    output:
        "results/exact/distinct_counts.csv",
    params:
        max_rollouts=config["exact"]["max_rollouts"],
        max_rewards=config["exact"]["max_rewards"],
        decimals=config["exact"]["decimals"],
    log:
        "results/exact/logs/distinct_counts.log",
    benchmark:
        "results/exact/benchmarks/distinct_counts.tsv"
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo exact-counts --out {output} --max-rollouts {params.max_rollouts} "
        "--max-rewards {params.max_rewards} --decimals {params.decimals} > {log} 2>&1"


rule exact_fig2_table:
    output:
        "results/exact/fig2_table.csv",
    log:
        "results/exact/logs/fig2_table.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo exact-fig2-table --out {output} > {log} 2>&1"


rule exact:
    input:
        "results/exact/distinct_counts.csv",
        "results/exact/fig2_table.csv",
        f"results/{SCALE}/paper_figures/fig2_advantage_groups.png",
        f"results/{SCALE}/paper_figures/fig3_distinct_advantage_groups.png",
