# Committed evidence (config `evidence_dir`, scale cpu-evidence): a run whose small files are committed there
# is restored into results/ instead of being trained or evaluated again (gdpo/evidence.py), after a check that
# it was made with the settings the config asks for. Where nothing is committed, train and evaluate run.

if config.get("evidence_dir"):
    # A committed run's directory: <evidence_dir>/{task}/{method}/seed{seed}.
    EVIDENCE_RUN_DIR = RunKey.pattern(config["evidence_dir"])

    rule restore_run:
        input:
            expand(f"{EVIDENCE_RUN_DIR}/{{name}}", name=RUN_EVIDENCE, allow_missing=True),
        output:
            metrics=f"{RUN_DIR}/metrics.jsonl",
            summary=f"{RUN_DIR}/summary.json",
            config=f"{RUN_DIR}/config.json",
            env=f"{RUN_DIR}/env.json",
        params:
            settings=run_settings,
            numerics=config.get("cpu_numerics", "native"),
            src=lambda wildcards, input: os.path.dirname(input[0]),
            dest=lambda wildcards, output: os.path.dirname(output.metrics),
        localrule: True
        log:
            run_log("restore_run"),
        conda:
            "../../envs/analysis.yaml"
        shell:
            "python -m gdpo restore-evidence --from {params.src} --to {params.dest} --run "
            "--settings {params.settings:q} --numerics {params.numerics} > {log} 2>&1"

    rule restore_eval:
        input:
            f"{EVIDENCE_RUN_DIR}/{EVAL_FILE}",
        output:
            eval=f"{RUN_DIR}/{EVAL_FILE}",
        params:
            settings=eval_settings,
            numerics=config.get("cpu_numerics", "native"),
            src=lambda wildcards, input: os.path.dirname(input[0]),
            dest=lambda wildcards, output: os.path.dirname(output.eval),
        localrule: True
        log:
            run_log("restore_eval"),
        conda:
            "../../envs/analysis.yaml"
        shell:
            "python -m gdpo restore-evidence --from {params.src} --to {params.dest} "
            "--settings {params.settings:q} --numerics {params.numerics} > {log} 2>&1"

    ruleorder: restore_run > train
    ruleorder: restore_eval > evaluate
