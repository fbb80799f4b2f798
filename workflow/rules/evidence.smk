# Committed evidence (config `evidence_dir`, scale cpu-evidence): a run whose small files are committed there
# is restored into results/ instead of being trained or evaluated again (gdpo/evidence.py), after a check that
# it was made with the settings the config asks for. Where nothing is committed, train and evaluate run.

if config.get("evidence_dir"):

    rule restore_run:
        input:
            expand(f"{config['evidence_dir']}/{{{{task}}}}/{{{{method}}}}/seed{{{{seed}}}}/{{name}}", name=RUN_EVIDENCE),
        output:
            metrics=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/metrics.jsonl",
            summary=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/summary.json",
            config=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/config.json",
            env=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/env.json",
        params:
            settings=lambda wildcards: json.dumps(
                resolve_run_settings(config, wildcards.task, wildcards.method, int(wildcards.seed))
            ),
            src=lambda wildcards, input: os.path.dirname(input[0]),
            dest=lambda wildcards, output: os.path.dirname(output.metrics),
        localrule: True
        log:
            f"results/{SCALE}/logs/restore_run/{{task}}/{{method}}/seed{{seed}}.log",
        conda:
            "../../envs/analysis.yaml"
        shell:
            "python -m gdpo restore-evidence --from {params.src} --to {params.dest} --run "
            "--settings {params.settings:q} > {log} 2>&1"

    rule restore_eval:
        input:
            f"{config['evidence_dir']}/{{task}}/{{method}}/seed{{seed}}/eval.json",
        output:
            eval=f"results/{SCALE}/runs/{{task}}/{{method}}/seed{{seed}}/eval.json",
        params:
            settings=lambda wildcards: json.dumps(
                resolve_eval_settings(config, wildcards.task, wildcards.method, int(wildcards.seed))
            ),
            src=lambda wildcards, input: os.path.dirname(input[0]),
            dest=lambda wildcards, output: os.path.dirname(output.eval),
        localrule: True
        log:
            f"results/{SCALE}/logs/restore_eval/{{task}}/{{method}}/seed{{seed}}.log",
        conda:
            "../../envs/analysis.yaml"
        shell:
            "python -m gdpo restore-evidence --from {params.src} --to {params.dest} "
            "--settings {params.settings:q} > {log} 2>&1"

    ruleorder: restore_run > train
    ruleorder: restore_eval > evaluate
