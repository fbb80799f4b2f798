# Policy models: each spec of the config materialised once under resources/models/.


rule prepare_model:
    output:
        directory("resources/models/{model}"),
    params:
        spec=lambda wildcards: MODEL_SPECS[wildcards.model],
    log:
        "resources/logs/prepare_model_{model}.log",
    resources:
        # Building, converting or downloading a model: disk and network bound (minutes, MB).
        runtime=120,
        mem_mb=8000,
    conda:
        "../../envs/train.yaml"
    shell:
        "python -m gdpo prepare-model --spec {params.spec:q} --out {output} > {log} 2>&1"
