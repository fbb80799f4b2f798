# Paper figures, drawn from the tidy CSVs only (PNG + PDF beside it).


rule figure2:
    input:
        "results/exact/fig2_table.csv",
    output:
        png=in_report("results/{scale}/paper_figures/fig2_advantage_groups.png"),
        pdf="results/{scale}/paper_figures/fig2_advantage_groups.pdf",
    log:
        "results/{scale}/logs/figure2.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo figure fig2 --input {input} --out {output.png} > {log} 2>&1"


rule figure3:
    input:
        "results/exact/distinct_counts.csv",
    output:
        png=in_report("results/{scale}/paper_figures/fig3_distinct_advantage_groups.png"),
        pdf="results/{scale}/paper_figures/fig3_distinct_advantage_groups.pdf",
    log:
        "results/{scale}/logs/figure3.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo figure fig3 --input {input} --out {output.png} > {log} 2>&1"


rule paper_outputs:
    input:
        steps=rules.aggregate.output.steps,
        evals=rules.aggregate.output.evals,
        # The summaries' digests (gdpo aggregate): checked before anything is drawn, as the ledger checks them.
        digests=rules.aggregate.output.digests,
    output:
        [in_report(path) for path in PAPER_OUTPUTS],
    params:
        # Only what the figures and tables read: a change of the reporting block, the tasks or the training
        # settings (the tables name each task's model and steps) redraws them.
        config=json.dumps({key: config.get(key) for key in ("scale", "tasks", "training", "reporting")}),
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        f"results/{SCALE}/logs/paper_outputs.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo paper-outputs --config {params.config:q} --steps {input.steps} --evals {input.evals} "
        "--out-dir {params.out_dir} > {log} 2>&1"
