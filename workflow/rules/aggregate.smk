# Aggregation: every run's per-step metrics and every evaluation gathered into two tidy CSVs, which are
# all that figures and tables read, and the evaluations' per-item outcomes into items.json (paired comparisons);
# every run directory is checked first (its files agree; a restored run still has its committed digests), and
# the summaries' digests are written beside them (digests.json).


rule aggregate:
    input:
        metrics=expand("{run_dir}/metrics.jsonl", run_dir=RUN_DIRS),
        evals=EVAL_FILES,
    output:
        steps=f"results/{SCALE}/summary/steps.csv",
        evals=f"results/{SCALE}/summary/eval.csv",
        item_outcomes=f"results/{SCALE}/summary/items.json",
        digests=f"results/{SCALE}/summary/digests.json",
    log:
        f"results/{SCALE}/logs/aggregate.log",
    conda:
        "../../envs/analysis.yaml"
    shell:
        "python -m gdpo aggregate --metrics {input.metrics} --evals {input.evals} "
        "--out-steps {output.steps} --out-eval {output.evals} --out-items {output.item_outcomes} > {log} 2>&1"
