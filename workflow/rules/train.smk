# Training: one TRL GRPOTrainer run per (task, method, seed), advantage from the gdpo registry.
# A run longer than the wall limit (config `wall_limit_hours`, the task's `resources.train.hours`) is a chain of
# jobs (gdpo.plan.plan_training_chain): train_segment 1..n-1 each train to their end step and leave a checkpoint
# in <run dir>.work, and train, the last, resumes from it and writes the run directory. A run of one segment
# (every CPU scale) is the train job alone.
#
# Each train job asks SLURM (slurm_extra) to send SIGURG to its processes before its wall limit: the trainer saves a
# checkpoint at the next generation-batch boundary and exits 75, the profile's `retries` resubmits the job, and the
# job resumes from that checkpoint (gdpo.training.checkpoint_plan says why SIGURG, and how long before the limit).
from gdpo.training.checkpoint_plan import warning_signal_option


rule train_segment:
    input:
        model=policy_model,
        data=task_data,
        previous=previous_segment_record,
    output:
        # The segment's record (its end step and checkpoint); removed once the next job has resumed from it.
        record=temp(SEGMENT_RECORD),
    params:
        settings=run_settings,
        run_dir=run_dir,
        launcher=train_launcher(config, base_dir=workflow.basedir),
        stop_at_step=lambda wildcards: training_segment(wildcards).end_step,
        device_check=device_check("train"),
    threads: job_resource("train", "cpus_per_task")
    # A segment needs what the run's train job needs (the task's resources.train), for its own share of the hours.
    resources:
        gpu=job_resource("train", "gpu"),
        cpus_per_task=job_resource("train", "cpus_per_task"),
        mem_mb=job_resource("train", "mem_mb"),
        # Minutes: the segment's expected hours times the chain's safety factor, within the wall limit.
        runtime=lambda wildcards: training_segment(wildcards).request_minutes(),
        # One node (sbatch --nodes=1): the launch's processes and the GPUs they use share it.
        nodes=job_resource("train", "nodes"),
        slurm_extra=lambda wildcards: warning_signal_option(
            config, wildcards.task, training_segment(wildcards).request_minutes()
        ),
    log:
        RunKey.pattern(f"results/{SCALE}/logs/train_segment") + ".segment{segment}.log",
    benchmark:
        RunKey.pattern(f"results/{SCALE}/benchmarks/train_segment") + ".segment{segment}.tsv"
    conda:
        JOB_ENV
    shell:
        "({params.device_check}{params.launcher} -m gdpo train --settings {params.settings:q} "
        "--model-dir {input.model} --run-dir {params.run_dir} --threads {threads} "
        "--stop-at-step {params.stop_at_step} --segment-record {output.record}) > {log} 2>&1"


rule train:
    input:
        model=policy_model,
        data=task_data,
        # The chain's previous segment (nothing for a run of one job).
        previous=last_segment_record,
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
        # `python`, or `trap '' USR1 && accelerate launch --config_file … --num_processes N` (config `launch:`;
        # the launcher outlives a SIGUSR1 sent by hand, which its processes save a checkpoint on).
        launcher=train_launcher(config, base_dir=workflow.basedir),
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
        # One node (sbatch --nodes=1): the launch's processes and the GPUs they use share it.
        nodes=job_resource("train", "nodes"),
        slurm_extra=lambda wildcards: warning_signal_option(
            config, wildcards.task, job_resource("train", "runtime")(wildcards)
        ),
    log:
        run_log("train"),
    benchmark:
        run_benchmark("train")
    conda:
        JOB_ENV
    shell:
        "({params.device_check}{params.launcher} -m gdpo train --settings {params.settings:q} "
        "--model-dir {input.model} --run-dir {params.run_dir} --threads {threads}) > {log} 2>&1"
