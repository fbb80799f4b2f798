# Evaluation: every trained run and the base model on the task's held-out data (eval.json per run).


rule evaluate:
    input:
        model=policy_model,
        data=task_data,
        # The trained run's model/ (LoRA adapter or full model); nothing for the untrained base model.
        adapter=lambda wildcards: [] if wildcards.method == BASE_METHOD else f"{run_dir(wildcards)}/model",
    output:
        eval=f"{RUN_DIR}/{EVAL_FILE}",
        # Completions and the evaluator's own outputs, kept for inspection.
        work=directory(f"{RUN_DIR}/eval"),
    params:
        # The evaluation's resolved settings: a change of any of them re-runs the job.
        settings=eval_settings,
        adapter=lambda wildcards, input: f"--adapter-dir {input.adapter}" if input.adapter else "",
        # On a node without the GPU the job asked for, stop at once, naming the job (nothing at CPU scales).
        device_check=device_check("evaluate"),
    # GPUs, cores, memory and minutes from the task's `resources:` (gdpo.plan.job_resources); the cluster's
    # names (partition, account) from the profile.
    threads: job_resource("evaluate", "cpus_per_task")
    resources:
        gpu=job_resource("evaluate", "gpu"),
        cpus_per_task=job_resource("evaluate", "cpus_per_task"),
        mem_mb=job_resource("evaluate", "mem_mb"),
        runtime=job_resource("evaluate", "runtime"),
    log:
        run_log("evaluate"),
    benchmark:
        run_benchmark("evaluate")
    conda:
        JOB_ENV
    shell:
        "({params.device_check}python -m gdpo evaluate --settings {params.settings:q} --model-dir {input.model} "
        "{params.adapter} --out {output.eval} --work-dir {output.work} --threads {threads}) > {log} 2>&1"
