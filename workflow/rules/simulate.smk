# The policy-gradient bench (scale sim): one job per study of config/sim/, then the summary and figures.


rule simulate:
    input:
        # Study files ship with the workflow, wherever the working directory is.
        study=lambda wildcards: f"{workflow.basedir}/config/sim/{wildcards.study}.yaml",
    output:
        "results/sim/{study}.csv",
    log:
        "results/sim/logs/{study}.log",
    benchmark:
        "results/sim/benchmarks/{study}.tsv"
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo sim-run --study {input.study} --out {output} > {log} 2>&1"


rule sim_summary:
    input:
        expand("results/sim/{study}.csv", study=SIM_STUDIES),
    output:
        summary="results/sim/summary.csv",
        per_seed="results/sim/per_seed.csv",
    log:
        "results/sim/logs/summary.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo sim-summary --inputs {input} --summary {output.summary} "
        "--per-seed {output.per_seed} > {log} 2>&1"


rule sim_figure:
    input:
        "results/sim/{study}.csv",
    output:
        png=in_report("results/sim/paper_figures/{study}.png"),
        pdf="results/sim/paper_figures/{study}.pdf",
    log:
        "results/sim/logs/figure_{study}.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo sim-figure --input {input} --out {output.png} > {log} 2>&1"


# Beyond the paper: the decoupled estimator's gradient-noise law (multireward-grpo), measured on the bench.
rule sim_noise_law:
    output:
        cells="results/sim/noise_law_cells.csv",
        row="results/sim/paper_figures/noise_law.csv",
        png=in_report("results/sim/paper_figures/noise_law.png"),
        pdf="results/sim/paper_figures/noise_law.pdf",
    log:
        "results/sim/logs/noise_law.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo sim-noise-law --cells {output.cells} --row {output.row} --figure {output.png} > {log} 2>&1"
