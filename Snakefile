# GDPO reproducibility suite: one pipeline, four scales of evidence (see README.md).
#   snakemake --cores 2                                  # default: config/mini.yaml
#   snakemake --cores 2 --configfile config/smoke.yaml   # another scale
from snakemake.utils import min_version

min_version("9.0")


# The default config is read only when none is given on the command line, so a chosen config is
# never silently merged with mini's keys.
if not workflow.overwrite_configfiles:

    configfile: "config/mini.yaml"


# `snakemake --report results/<scale>/paper_figures/report.html`: figures, tables and the ledger in one file.
# Everything a workflow builds lands under results/; only `gdpo publish-results` writes paper_figures/.
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/evidence.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/claims.smk"


rule all:
    default_target: True
    input:
        rules.exact.input,
        expand("{run_dir}/summary.json", run_dir=RUN_DIRS),
        EVAL_FILES,
        rules.aggregate.output,
        PAPER_OUTPUTS,
        expand("results/sim/paper_figures/{study}.png", study=SIM_STUDIES),
        ["results/sim/summary.csv", "results/sim/paper_figures/noise_law.csv"] if SIM_STUDIES else [],
        f"results/{SCALE}/paper_figures/claims.csv",
        f"results/{SCALE}/paper_figures/CLAIMS.md",
        # Where this scale is published: your ledger beside the published one.
        [f"results/{SCALE}/comparison.md"] if os.path.isfile(f"paper_figures/{SCALE}/claims.csv") else [],


# A first look in a few minutes: the exact analysis (Figs. 2-3, claims C1-C2) and the policy-gradient
# bench (its figures and sim-scale verdicts), with their ledger; no language model is trained.
#   snakemake --cores 2 quick
rule quick:
    input:
        "results/quick/paper_figures/fig2_advantage_groups.png",
        "results/quick/paper_figures/fig3_distinct_advantage_groups.png",
        expand("results/sim/paper_figures/{study}.png", study=SIM_STUDIES),
        ["results/sim/summary.csv"] if SIM_STUDIES else [],
        "results/quick/paper_figures/claims.csv",
        "results/quick/paper_figures/CLAIMS.md",


ruleorder: claims_quick > claims_ledger
