# Task data made by the workflow: the BFCL-v3 train/held-out split of the tool-calling family, the
# optional format warm-up of a task's base model, and the generated paper data of the miniature paper path.


rule bfcl_split:
    output:
        train="resources/data/bfcl_v3_split/train.jsonl",
        eval="resources/data/bfcl_v3_split/eval.jsonl",
        summary="resources/data/bfcl_v3_split/split.json",
    params:
        # Runs in BFCL's own environment (its pins clash with training): GDPO_BFCL_PYTHON, else the
        # repository's .venv-bfcl (make setup), else the rule's conda env (envs/bfcl.yaml).
        python=BFCL_PYTHON,
    log:
        "resources/logs/bfcl_split.log",
    conda:
        "../../envs/bfcl.yaml"
    shell:
        "{params.python} -m gdpo.tasks.tool_calling.bfcl_split --out-dir resources/data/bfcl_v3_split > {log} 2>&1"


rule warmup_model:
    input:
        model=lambda wildcards: model_dir(config["tasks"][wildcards.task]["model"]),
        data=lambda wildcards: required_files(config["tasks"][wildcards.task]),
    output:
        directory(warmup_model_dir(SCALE, "{task}")),
    params:
        # The warm-up's settings as JSON (gdpo.plan.WarmupSettings): a change re-runs the job.
        settings=lambda wildcards: resolve_warmup_settings(config, wildcards.task).to_json(),
    threads: JOB_THREADS
    resources:
        mem_mb=4000,
    log:
        f"results/{SCALE}/logs/warmup_model/{{task}}.log",
    benchmark:
        f"results/{SCALE}/benchmarks/warmup_model/{{task}}.tsv"
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m gdpo warmup-model --settings {params.settings:q} --model-dir {input.model} --out {output} "
        "--threads {threads} > {log} 2>&1"


# The paper configs in miniature (config/overlays/miniature.yaml): generated copies of every paper data set
# in its hub layout, each checked against that layout as it is written.
rule miniature_data:
    output:
        manifest=f"{{data_dir}}/{MINIATURE_MANIFEST}",
    wildcard_constraints:
        data_dir="resources/data/[A-Za-z0-9_./-]+",
    log:
        "{data_dir}/write.log",
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m gdpo write-miniature-data --out {wildcards.data_dir} > {log} 2>&1"
