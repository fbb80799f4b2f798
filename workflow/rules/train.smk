# Training: one TRL GRPOTrainer run per (task, method, seed), advantage from the gdpo registry.


rule train:
    input:
        model=policy_model,
        data=task_data,
    output:
        metrics=f"{RUN_DIR}/metrics.jsonl",
        summary=f"{RUN_DIR}/summary.json",
        config=f"{RUN_DIR}/config.json",
        env=f"{RUN_DIR}/env.json",
        model=directory(f"{RUN_DIR}/model"),
    params:
        # The run's settings (gdpo.plan.RunSettings): a change of any of them re-runs the job.
        settings=run_settings,
        run_dir=run_dir,
        # `python`, or `accelerate launch --config_file … --num_processes N` (config `launch:`).
        launcher=launcher_command(config, base_dir=workflow.basedir),
        # On a node without the GPUs the job asked for, stop at once, naming the job (nothing at CPU scales).
        device_check=device_check("train"),
    # GPUs, cores, memory and minutes from the task's `resources:` (gdpo.plan.job_resources); the cluster's
    # names (partition, account) from the profile.
    threads: job_resource("train", "cpus_per_task")
    resources:
        gpu=job_resource("train", "gpu"),
        cpus_per_task=job_resource("train", "cpus_per_task"),
        mem_mb=job_resource("train", "mem_mb"),
        runtime=job_resource("train", "runtime"),
    log:
        run_log("train"),
    benchmark:
        run_benchmark("train")
    conda:
        JOB_ENV
    shell:
        "({params.device_check}{params.launcher} -m gdpo train --settings {params.settings:q} "
        "--model-dir {input.model} --run-dir {params.run_dir} --threads {threads}) > {log} 2>&1"
