# Training: one TRL GRPOTrainer run per (task, method, seed), advantage from the gdpo registry.


rule train:
    input:
        model=policy_model,
        data=task_data,
    output:
        metrics=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/metrics.jsonl",
        summary=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/summary.json",
        config=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/config.json",
        env=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/env.json",
        model=directory(f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/model"),
    params:
        # The run's resolved settings: a change of any of them re-runs the job.
        settings=lambda wildcards: json.dumps(
            resolve_run_settings(config, wildcards.task, wildcards.method, int(wildcards.seed))
        ),
        run_dir=lambda wildcards: f"results/{SCALE}/runs/{wildcards.task}/{wildcards.method}/seed{wildcards.seed}",
        # `python`, or `accelerate launch --config_file … --num_processes N` (config `launch:`).
        launcher=launcher_command(config, base_dir=workflow.basedir),
    threads: JOB_THREADS
    resources:
        mem_mb=4000,
    log:
        f"results/{SCALE}/logs/train/{{task}}/{{method}}/seed{{seed}}.log",
    benchmark:
        f"results/{SCALE}/benchmarks/train/{{task}}/{{method}}/seed{{seed}}.tsv"
    conda:
        "../../envs/train.yaml"
    shell:
        "{params.launcher} -m gdpo train --settings {params.settings:q} --model-dir {input.model} "
        "--run-dir {params.run_dir} --threads {threads} > {log} 2>&1"
