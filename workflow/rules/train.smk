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
    threads: JOB_THREADS
    resources:
        mem_mb=4000,
    log:
        run_log("train"),
    benchmark:
        run_benchmark("train")
    conda:
        "../../envs/train.yaml"
    shell:
        "{params.launcher} -m gdpo train --settings {params.settings:q} --model-dir {input.model} "
        "--run-dir {params.run_dir} --threads {threads} > {log} 2>&1"
