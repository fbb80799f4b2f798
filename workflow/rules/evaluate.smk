# Evaluation: every trained run and the base model on the task's held-out data (eval.json per run).


rule evaluate:
    input:
        model=policy_model,
        data=task_data,
        # The trained run's model/ (LoRA adapter or full model); nothing for the untrained base model.
        adapter=lambda wildcards: [] if wildcards.method == BASE_METHOD else f"{run_dir(wildcards)}/model",
    output:
        eval=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/eval.json",
        # Completions and the evaluator's own outputs, kept for inspection.
        work=directory(f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/eval"),
    params:
        # The evaluation's resolved settings: a change of any of them re-runs the job.
        settings=lambda wildcards: json.dumps(
            resolve_eval_settings(config, wildcards.task, wildcards.method, int(wildcards.seed))
        ),
        adapter=lambda wildcards, input: f"--adapter-dir {input.adapter}" if input.adapter else "",
    threads: JOB_THREADS
    resources:
        mem_mb=4000,
    log:
        f"results/{SCALE}/logs/evaluate/{{task}}/{{method}}/seed{{seed}}.log",
    benchmark:
        f"results/{SCALE}/benchmarks/evaluate/{{task}}/{{method}}/seed{{seed}}.tsv"
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m gdpo evaluate --settings {params.settings:q} --model-dir {input.model} {params.adapter} "
        "--out {output.eval} --work-dir {output.work} --threads {threads} > {log} 2>&1"
