"""Per-item outcomes: eval.json's compact record and the paired statistics of two runs on the same items
(gdpo.reporting.verdicts.items), checked against hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gdpo.files import decode_sample_scores, encode_sample_scores, item_outcomes
from gdpo.reporting.verdicts import items

Z = 1.959963984540054
CPU_EVIDENCE = Path(__file__).resolve().parents[1] / "paper_figures" / "cpu-evidence" / "evidence" / "runs"


def agresti_coull(successes: float, n: float) -> float:
    adjusted = (successes + Z**2 / 2) / (n + Z**2)
    return adjusted * (1 - adjusted) / (n + Z**2)


def test_sample_scores_are_a_0_1_string_or_a_list():
    assert encode_sample_scores([True, False, 1.0, 0]) == "1010"
    assert encode_sample_scores([0.5, 1]) == [0.5, 1.0]
    assert decode_sample_scores("1010") == [1.0, 0.0, 1.0, 0.0]
    assert decode_sample_scores([0.5, 1]) == [0.5, 1.0]
    with pytest.raises(ValueError, match="0/1"):
        decode_sample_scores("10x")


def test_item_outcomes_refuse_mismatched_or_repeated_ids():
    with pytest.raises(ValueError, match="3 items"):
        item_outcomes(["a", "b"], {"acc": [[1], [0], [1]]})
    with pytest.raises(ValueError, match="repeat"):
        item_outcomes(["a", "a"], {"acc": [[1], [0]]})
    assert item_outcomes([0, 1], {"acc": [[1, 0], [1, 1]]}) == {"ids": [0, 1], "scores": {"acc": ["10", "11"]}}


def test_hand_computed_paired_statistics():
    # Items: (a, b) = (1,1) (1,0) (0,0) (0,1) (1,0): d = 0, 1, 0, -1, 1.
    a, b = [[1], [1], [0], [0], [1]], [[1], [0], [0], [1], [0]]
    c = items.compare_items(a, b)
    assert c.mean_difference == pytest.approx(0.2)
    # var(d, ddof=1) = 2.8 / 4 = 0.7; / n = 0.14.
    assert c.var_paired == pytest.approx(0.14)
    assert c.var_independent == pytest.approx(agresti_coull(3, 5) + agresti_coull(2, 5))
    # Agresti-Min: p10 = 2.5/7, p01 = 1.5/7; ((p10 + p01) - (p10 - p01)^2) / 7 = 27/343.
    assert c.var_adjusted == pytest.approx(27 / 343)
    assert (c.a_only, c.b_only, c.both_right, c.both_wrong) == (2, 1, 1, 1)
    assert c.p_value == pytest.approx(1.0)  # 2 of 3 discordant: exact McNemar p = 1
    assert c.binary and not c.decoding_estimable and c.decoding_a == c.decoding_b == 0.0
    assert c.item_population == pytest.approx(0.14)


def test_runs_that_agree_on_every_item_keep_a_nonzero_variance():
    same = [[1], [0], [1], [1]]
    c = items.compare_items(same, same)
    assert c.var_paired == 0.0 and c.mean_difference == 0.0 and c.correlation == pytest.approx(1.0)
    # Half-counts: p10 = p01 = 0.5/6, variance (1/6) / 6 = 1/(n+2)^2.
    assert c.var_adjusted == pytest.approx(1 / 36)
    assert (c.a_only, c.b_only, c.p_value) == (0, 0, 1.0)
    assert c.var_independent > 0


def test_runs_that_disagree_on_every_item():
    # One direction: d = 1 everywhere, no spread, yet McNemar's 3 of 3 discordant gives p = 0.25.
    c = items.compare_items([[1], [1], [1]], [[0], [0], [0]])
    assert c.mean_difference == 1.0 and c.var_paired == 0.0
    assert (c.a_only, c.b_only) == (3, 0) and c.p_value == pytest.approx(0.25)
    # p10 = 3.5/5, p01 = 0.5/5: (0.8 - 0.36) / 5.
    assert c.var_adjusted == pytest.approx(0.088)
    # Both directions: d = 1, 1, -1, -1: var(d, ddof=1) / 4 = (4/3) / 4.
    c = items.compare_items([[1], [1], [0], [0]], [[0], [0], [1], [1]])
    assert c.mean_difference == 0.0 and c.var_paired == pytest.approx(1 / 3)
    assert c.correlation == pytest.approx(-1.0) and c.ratio > 1
    assert c.var_adjusted == pytest.approx((5 / 6) / 6)  # p10 = p01 = 2.5/6
    assert (c.a_only, c.b_only, c.p_value) == (2, 2, 1.0)


def test_decoding_part_is_the_within_item_sample_variance():
    a = [[1, 0], [1, 1]]  # item 1: p = 1/2 over 2 samples, unbiased s^2 = 1/2, / m = 1/4; item 2: 0
    b = [[0, 0], [1, 1]]
    c = items.compare_items(a, b)
    assert c.decoding_a == pytest.approx(0.25 / 4) and c.decoding_b == 0.0 and c.decoding_estimable
    # d = 0.5, 0: var(d, ddof=1) / 2 = 0.125 / 2; the item part is what the decoding part leaves.
    assert c.var_paired == pytest.approx(0.0625)
    assert c.item_population == pytest.approx(0.0625 - 0.0625)
    assert not c.binary and (c.a_only, c.b_only) == (1, 0)


def test_weighted_mean_reduces_to_the_plain_one_with_equal_weights():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, (30, 1)), rng.integers(0, 2, (30, 1))
    plain, weighted = items.compare_items(a, b), items.compare_items(a, b, weights=np.full(30, 7.0))
    assert weighted.var_paired == pytest.approx(plain.var_paired)
    assert weighted.var_adjusted == pytest.approx(plain.var_adjusted)
    d = (a - b).ravel()
    assert plain.var_paired == pytest.approx(np.var(d, ddof=1) / 30)


def record(ids, scores, **extra):
    return {"task": "t", "method": "m", "seed": 0, "items": {"bench": item_outcomes(ids, scores, **extra)}}


def test_runs_pair_on_their_common_item_ids():
    a = record(["x", "y", "z"], {"acc": [[1], [0], [1]]})
    b = record(["z", "y", "w"], {"acc": [[0], [0], [1]]})
    paired = items.paired_items(a, b, "bench", "acc")
    assert list(paired.ids) == ["y", "z"] and paired.only_a == 1 and paired.only_b == 1
    assert paired.a.ravel().tolist() == [0, 1] and paired.b.ravel().tolist() == [0, 0]
    assert items.compare_evaluations(a, b, "bench", "acc").a_only == 1


def test_group_weights_leave_out_items_that_do_not_count():
    weights = {"live": {"live_simple": 1.0}, "avg": {"live_simple": 0.5, "simple": 0.25}}
    a = record(["l1", "l2", "s1"], {"correct": [[1], [0], [1]]}, groups=["live_simple", "live_simple", "simple"],
               weights=weights)
    b = record(["l1", "l2", "s1"], {"correct": [[0], [0], [0]]}, groups=["live_simple", "live_simple", "simple"],
               weights=weights)
    live = items.compare_evaluations(a, b, "bench", "correct", weights_metric="live")
    assert live.n == 2 and live.mean_difference == pytest.approx(0.5)
    avg = items.paired_items(a, b, "bench", "correct", weights_metric="avg")
    # live_simple items weigh 0.5/2 each and the simple item 0.25, rescaled to sum 1.
    assert avg.weights.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3])


def test_old_evaluations_say_no_per_item_outcomes_were_recorded():
    old = json.loads((CPU_EVIDENCE / "math" / "gdpo" / "seed0" / "eval.json").read_text())
    assert "items" not in old
    reason = items.item_outcomes_missing(old, "reasoning_gym", "acc")
    assert reason.startswith(items.NO_ITEM_OUTCOMES) and "math/gdpo seed 0" in reason
    with pytest.raises(items.ItemOutcomesMissing, match=items.NO_ITEM_OUTCOMES):
        items.compare_evaluations(old, old, "reasoning_gym", "acc")
    new = record([0], {"acc": [[1]]})
    assert "has bench" in items.item_outcomes_missing(new, "reasoning_gym", "acc")
    with pytest.raises(items.ItemOutcomesMissing, match="share no item"):
        items.paired_items(new, record([1], {"acc": [[1]]}), "bench", "acc")


def write_sample(root: Path, task: str, method: str, seed: int, lines: list[dict]) -> None:
    run = root / "evidence" / "runs" / task / method / f"seed{seed}"
    run.mkdir(parents=True)
    (run / "completions_sample.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_item_pairing_reads_committed_completion_samples(tmp_path):
    from gdpo.reporting.item_pairing import pairing_table

    doc = {"answer": "5"}
    write_sample(tmp_path, "math", "gdpo", 0, [{"doc_id": i, "doc": doc, "resps": [["x", "y"]], "acc": acc}
                                               for i, acc in enumerate([1.0, 0.5, 0.0, 1.0])])
    write_sample(tmp_path, "math", "grpo", 0, [{"doc_id": i, "doc": doc, "resps": [["x", "y"]], "acc": acc}
                                               for i, acc in enumerate([1.0, 0.0, 0.0, 0.0])])
    call = '<think>t</think>\n<tool_call>\n{"name": "f", "parameters": {}}\n</tool_call>'
    decline = "<think>t</think>\n<response>No tool fits.</response>"
    write_sample(tmp_path, "tool_calling", "gdpo", 1, [{"id": "simple_0", "category": "simple", "samples": [call]},
                                                       {"id": "irrelevance_0", "category": "irrelevance",
                                                        "samples": [decline]}])
    write_sample(tmp_path, "tool_calling", "grpo", 1, [{"id": "simple_0", "category": "simple", "samples": [call]},
                                                       {"id": "irrelevance_0", "category": "irrelevance",
                                                        "samples": [call]}])
    write_sample(tmp_path, "tool_calling", "grpo", 2, [{"id": "simple_0", "category": "simple", "samples": [call]}])
    rows = {(r["task"], r["metric"], r["seed"]): r for r in pairing_table(tmp_path)}
    assert set(rows) == {("math", "acc", 0), ("tool_calling", "format", 1)}  # seed 2 has one method only
    math = rows[("math", "acc", 0)]
    # d = 0, 0.5, 0, 1: mean 0.375, var(d, ddof=1) = 0.229167, / 4.
    assert math["mean_a"] == pytest.approx(0.625) and math["var_paired"] == pytest.approx(0.6875 / 3 / 4)
    assert (math["a_only"], math["b_only"]) == (2, 0)
    tool = rows[("tool_calling", "format", 1)]
    assert (tool["mean_a"], tool["mean_b"], tool["a_only"], tool["b_only"]) == (1.0, 0.5, 1, 0)


def test_item_pairing_command_on_the_committed_cpu_evidence(capsys):
    from gdpo.cli import main

    assert main(["item-pairing", "--published", str(CPU_EVIDENCE.parent.parent)]) == 0
    out = capsys.readouterr().out
    assert "math" in out and "tool_calling" in out and "McNemar p" in out


def test_planned_paired_variance_shrinks_with_the_items_correlation():
    # p = 0.3 both: sigma^2 = 0.21; rho = 0.75 leaves (0.42 - 0.315) / 100.
    assert items.planned_paired_variance(0.3, 0.3, 0.75, 100) == pytest.approx(0.105 / 100)
    assert items.planned_paired_variance(0.3, 0.5, 0.0, 50) == pytest.approx((0.21 + 0.25) / 50)
    assert items.planned_paired_variance(0.4, 0.4, 1.0, 10) == 0.0
    with pytest.raises(ValueError, match="correlation"):
        items.planned_paired_variance(0.3, 0.3, 1.5, 10)


# ---- The rules' floor: paired items where both runs recorded them -------------------------------------------

def _record(task: str, method: str, seed: int, outcomes: list[int], benchmark: str = "arithmetic") -> dict:
    return {"task": task, "method": method, "seed": seed, "family": "arithmetic",
            "items": {benchmark: item_outcomes([f"q{i}" for i in range(len(outcomes))],
                                               {"acc": [[o] for o in outcomes]})}}


def _evals(records: list[dict]) -> "pd.DataFrame":
    import pandas as pd

    rows = [{"task": r["task"], "method": r["method"], "seed": r["seed"], "benchmark": "arithmetic",
             "metric": "acc", "value": 100.0 * np.mean(decode_sample_scores("".join(r["items"]["arithmetic"]["scores"]["acc"]))),
             "n_items": len(r["items"]["arithmetic"]["ids"]), "n_samples": 1, "note": "", "health": "healthy",
             "collapsed": "", "start_weights": ""} for r in records]
    return pd.DataFrame(rows)


def _two_methods(flip: int, seeds: int = 3, n: int = 200) -> list[dict]:
    """GDPO and GRPO answer the same n items; GDPO gets ``flip`` more right, per seed (a shifted set)."""
    rng = np.random.default_rng(0)
    base = (rng.random(n) < 0.4).astype(int)
    records = []
    for seed in range(seeds):
        gdpo = base.copy()
        wrong = np.flatnonzero(gdpo == 0)[seed: seed + flip]
        gdpo[wrong] = 1
        records += [_record("math", "gdpo", seed, gdpo.tolist()), _record("math", "grpo", seed, base.tolist())]
    return records


def test_the_rules_floor_a_difference_by_the_paired_item_noise_where_items_are_recorded():
    from gdpo.reporting.verdicts.model_evidence import Evidence
    from gdpo.reporting.verdicts.samples import paired

    records = _two_methods(flip=6)
    with_items = Evidence(_evals(records), None, {}, "mini", items={"runs": records})
    without = Evidence(_evals(records), None, {}, "mini")
    est_paired = paired(with_items.sample("math", "gdpo", "acc"), with_items.sample("math", "grpo", "acc"))
    est_binomial = paired(without.sample("math", "gdpo", "acc"), without.sample("math", "grpo", "acc"))
    # Three seeds with the same +3-point gain: the seeds tie, so each interval rests on its floor.
    assert est_paired.mean == est_binomial.mean == pytest.approx(3.0)
    assert "paired item noise (200 items answered by both)" in est_paired.source
    assert "discordant items per seed (a better / b better): 6/0, 6/0, 6/0" in est_paired.source
    assert "binomial noise" in est_binomial.source and "paired" not in est_binomial.source
    # 6 discordant items of 200 (Agresti–Min): far below two binomials at 40 % on 200 items each.
    expected = 1e4 * items.adjusted_paired_variance(np.r_[np.ones(6), np.zeros(194)])
    assert est_paired.scale**2 == pytest.approx((2 * 0 + expected) / 3 / 3, rel=1e-9)
    assert est_paired.scale < est_binomial.scale / 3
    assert est_paired.lower(0.95) > 0 > est_binomial.lower(0.95)


def test_runs_that_agree_on_every_item_keep_a_floor_above_zero():
    from gdpo.reporting.verdicts.model_evidence import Evidence
    from gdpo.reporting.verdicts.samples import paired

    records = _two_methods(flip=0, seeds=2)
    evidence = Evidence(_evals(records), None, {}, "mini", items={"runs": records})
    estimate = paired(evidence.sample("math", "gdpo", "acc"), evidence.sample("math", "grpo", "acc"))
    assert estimate.mean == 0 and estimate.scale > 0
    assert estimate.lower(0.95) < 0 < estimate.upper(0.95)
    assert "0/0, 0/0" in estimate.source


def test_items_that_differ_between_the_runs_fall_back_to_independent_binomials():
    from gdpo.reporting.verdicts.model_evidence import Evidence
    from gdpo.reporting.verdicts.samples import paired

    records = _two_methods(flip=6, seeds=2)
    for record in records:  # each method on its own items: nothing pairs
        if record["method"] == "grpo":
            record["items"]["arithmetic"]["ids"] = [f"other{i}" for i in range(200)]
    evidence = Evidence(_evals(records), None, {}, "mini", items={"runs": records})
    estimate = paired(evidence.sample("math", "gdpo", "acc"), evidence.sample("math", "grpo", "acc"))
    assert "binomial noise" in estimate.source and "paired item noise" not in estimate.source


def test_bfcl_summary_metrics_pair_on_the_category_weighted_correct_outcomes():
    record = {"items": {"bfcl_v3": item_outcomes(["a", "b", "c"], {"correct": [[1], [0], [1]], "format": [[1], [1], [0]]},
                                                 groups=["simple", "simple", "live_simple"],
                                                 weights={"avg": {"simple": 0.5, "live_simple": 0.5},
                                                          "non_live": {"simple": 1.0}})}}
    scores = items.item_scores(record, ["bfcl_v3"], "non_live")
    ids, means, weights = scores.benchmarks["bfcl_v3"]
    assert list(ids) == ["a", "b", "c"] and list(means) == [1, 0, 1] and list(weights) == [0.5, 0.5, 0.0]
    assert items.item_scores(record, ["bfcl_v3"], "format").benchmarks["bfcl_v3"][1].tolist() == [1, 1, 0]
    assert items.item_scores(record, ["bfcl_v3"], "calls") is None  # not an item metric: no pairing
    assert items.item_scores(record, ["other"], "format") is None


def test_the_power_plan_pairs_items_when_told_their_correlation():
    """Same design, ρ = 0 vs 0.8: pairing can only tighten a difference, so power does not fall; and under no
    difference the paired rule stays calibrated (false 'reproduced' ≤ 5 %)."""
    from gdpo.reporting.calibration import designs_from_config, simulate_table
    from gdpo.config import load_config
    import dataclasses

    config = load_config(Path(__file__).resolve().parents[1] / "config" / "paper-math.yaml")
    design = designs_from_config(config, seed_sd=0.0)["C8"]
    independent = simulate_table(design, effect=True, replicates=300, seed=1).get("reproduced", 0.0)
    paired_design = dataclasses.replace(design, item_correlation=0.8)
    paired_power = simulate_table(paired_design, effect=True, replicates=300, seed=1).get("reproduced", 0.0)
    assert paired_power >= independent - 0.02
    null = simulate_table(paired_design, effect=False, replicates=400, seed=2)
    assert null.get("reproduced", 0.0) <= 0.05


def test_item_outcomes_that_disagree_with_eval_csv_are_refused():
    """A forged items.json (every item agreeing, for a tiny floor) beside values that differ: refused, named."""
    from gdpo.reporting.verdicts.model_evidence import Evidence

    records = _two_methods(flip=6, seeds=2)
    evals = _evals(records)
    forged = [dict(r) for r in records]
    for record in forged:
        if record["method"] == "gdpo":  # claims GRPO's outcomes: no discordant item at all
            record["items"] = next(r for r in records if r["method"] == "grpo" and r["seed"] == record["seed"])["items"]
    evidence = Evidence(evals, None, {}, "mini", eval_path="results/mini/summary/eval.csv", items={"runs": forged})
    with pytest.raises(ValueError, match=r"items.json beside results/mini/summary/eval.csv: math/gdpo seed 0 acc"):
        evidence.sample("math", "gdpo", "acc")


# ---- items.json is checked where it is read: a corrupt file is refused, naming the run -------------------------

def _evidence(evals, records):
    from gdpo.reporting.verdicts.model_evidence import Evidence

    # through JSON, as items.json is read (json.loads takes NaN)
    return Evidence(evals, None, {}, "mini", eval_path="results/mini/summary/eval.csv",
                    items=json.loads(json.dumps({"runs": records})))


def test_a_nan_item_score_in_items_json_is_refused_naming_the_run():
    """One item's score set to NaN makes the items' mean NaN, which passes the agreement with eval.csv (NaN > x
    is False) and turns the paired floor into NaN: a reproduced part would read inconclusive. Refused."""
    records = _two_methods(flip=6)
    evals = _evals(records)
    records[0]["items"]["arithmetic"]["scores"]["acc"][5] = [float("nan")]
    with pytest.raises(ValueError, match=r"items.json beside results/mini/summary/eval.csv: math/gdpo seed 0 "
                                         r"arithmetic/acc: item q5 .*nan.*gdpo aggregate --out-items"):
        _evidence(evals, records)


def test_repeated_item_ids_are_refused_and_permuted_ones_pair_by_id():
    from gdpo.reporting.verdicts.samples import paired

    records = _two_methods(flip=6, seeds=2)
    evals = _evals(records)
    estimate = paired(*(_evidence(evals, records).sample("math", m, "acc") for m in ("gdpo", "grpo")))
    # GRPO's items listed in another order (ids and scores together): they pair by id, the floor is the same
    permuted = json.loads(json.dumps(records))
    for run in permuted:
        if run["method"] == "grpo":
            bench = run["items"]["arithmetic"]
            bench["ids"], bench["scores"]["acc"] = bench["ids"][::-1], bench["scores"]["acc"][::-1]
    again = paired(*(_evidence(evals, permuted).sample("math", m, "acc") for m in ("gdpo", "grpo")))
    assert (again.mean, again.scale, again.source) == (estimate.mean, estimate.scale, estimate.source)
    # an id listed twice would count its item twice in the pairs (and pair with one of two outcomes)
    repeated = json.loads(json.dumps(records))
    repeated[0]["items"]["arithmetic"]["ids"][1] = "q0"
    with pytest.raises(ValueError, match=r"eval.csv: math/gdpo seed 0 arithmetic: item ids repeat \(q0\)"):
        _evidence(evals, repeated)
    # a run listed twice: which of its entries would be paired?
    with pytest.raises(ValueError, match=r"eval.csv: math/gdpo seed 0 is listed 2 times"):
        _evidence(evals, records + records[:1])
    # two eval.json paired directly: the same refusal
    a = {"task": "t", "method": "m", "seed": 0,
         "items": {"bench": {"ids": ["x", "y", "x"], "scores": {"acc": ["1", "0", "0"]}}}}
    with pytest.raises(ValueError, match=r"t/m seed 0 bench: item ids repeat \(x\)"):
        items.paired_items(a, record(["x", "y"], {"acc": [[1], [0]]}), "bench", "acc")


def test_the_regraded_items_allow_each_listed_item_its_own_room_only():
    """``acc_regraded_differs`` lists the items whose regraded outcome (items.json) differs from the one lm-eval
    logged (eval.csv's value): each moves the mean by at most 1/n, within the room its regraded mean leaves (a
    logged acc lies in [0, 1]). Ids that are no items, or an id repeated, cannot widen the tolerance."""
    records = _two_methods(flip=6, seeds=1)  # 200 items
    evals = _evals(records)
    evals.loc[evals["method"] == "gdpo", "value"] += 8.4  # eval.csv 8.4 points above the items' mean
    bench = records[0]["items"]["arithmetic"]
    right = [item for item, score in zip(bench["ids"], bench["scores"]["acc"]) if score == "1"]
    wrong = [item for item, score in zip(bench["ids"], bench["scores"]["acc"]) if score == "0"]

    def sample(listed):
        bench["acc_regraded_differs"] = listed
        return _evidence(evals, records).sample("math", "gdpo", "acc")

    with pytest.raises(ValueError, match=r"math/gdpo seed 0 arithmetic: acc_regraded_differs lists 17 ids that are "
                                         r"not its items \(x0, x1, x2"):
        sample([f"x{i}" for i in range(17)])
    with pytest.raises(ValueError, match=r"math/gdpo seed 0 arithmetic: acc_regraded_differs repeats .*q"):
        sample([wrong[0]] * 17)
    # 17 items regraded right: lm-eval cannot have logged them above 1, so eval.csv cannot be above the items
    with pytest.raises(ValueError, match=r"math/gdpo seed 0 acc is 38.00 % over its items but 46.40 % in eval.csv "
                                         r"\(its items regraded differently allow −8.50 to \+0.00 points\)"):
        sample(right[:17])
    # 16 items regraded wrong leave room for 8.0 points; 17 for 8.5
    with pytest.raises(ValueError, match="not made from the same evaluations"):
        sample(wrong[:16])
    assert sample(wrong[:17]).values[0] == pytest.approx(46.4)
