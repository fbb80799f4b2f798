"""The ledger's power simulates the rule that decides: where items.json records both compared methods' outcomes on the
same items, the rule floors each difference by the paired item noise, so the design's items correlate as the runs'
do (the smallest measured correlation); where nothing is recorded, independent binomial items, as the rule's floor."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from gdpo.config import load_config
from gdpo.files import item_outcomes
from gdpo.reporting import calibration
from gdpo.reporting.verdicts.model_evidence import Evidence

TASK = "math_conditioned"
REPORTING = {"tables": {"table4": {"R1-7B": TASK}}}
SEEDS = 6
ITEMS = 400
METRICS = ("acc", "exceed")


def _runs(seeds: int = SEEDS, items: int = ITEMS) -> dict[tuple[str, int, str], np.ndarray]:
    """(method, seed, metric) → 0/1 outcomes on the same ``items`` items: each metric's items have a fixed
    difficulty that both methods share, and each run flips 3 % of them (GDPO's and GRPO's flips drawn apart),
    so the two methods' outcomes correlate at about 0.9 on every seed."""
    rng = np.random.default_rng(7)
    outcomes = {}
    for metric, rate in (("acc", 0.4), ("exceed", 0.3)):
        shared = (rng.random(items) < rate).astype(int)
        for seed in range(seeds):
            for method in ("gdpo", "grpo"):
                flips = rng.random(items) < 0.03
                outcomes[(method, seed, metric)] = np.where(flips, 1 - shared, shared)
    return outcomes


def _evidence(outcomes: dict, with_items: bool = True, drop: tuple | None = None) -> Evidence:
    """C8's evidence (Table 4, one setup) whose eval.csv values are the items' means; items.json with every run's
    per-item outcomes (``with_items``), less the run ``drop`` ((method, seed))."""
    evals, items = _summaries(outcomes, drop)
    return Evidence(evals, None, REPORTING, "mini", items=items if with_items else None)


def _summaries(outcomes: dict, drop: tuple | None = None) -> tuple[pd.DataFrame, dict]:
    """eval.csv's rows and items.json's content of :func:`_evidence`."""
    rows, records = [], {}
    for (method, seed, metric), values in outcomes.items():
        rows.append({"task": TASK, "method": method, "seed": seed, "benchmark": "reasoning_gym", "metric": metric,
                     "value": 100.0 * values.mean(), "n_items": len(values), "n_samples": 1, "health": "healthy",
                     "collapsed": "", "start_weights": ""})
        records.setdefault((method, seed), {})[metric] = [[int(v)] for v in values]
    items = {"runs": [{"task": TASK, "method": method, "seed": seed,
                       "items": {"reasoning_gym": item_outcomes([f"q{i}" for i in range(ITEMS)], scores)}}
                      for (method, seed), scores in records.items() if (method, seed) != drop]}
    return pd.DataFrame(rows), items


def _smallest_correlation(outcomes: dict) -> float:
    """The smallest Pearson correlation of GDPO's and GRPO's outcomes over seeds and metrics (numpy's)."""
    seeds = {seed for _, seed, _ in outcomes}
    return min(float(np.corrcoef(outcomes[("gdpo", s, m)], outcomes[("grpo", s, m)])[0, 1])
               for s in seeds for m in METRICS)


def test_the_ledgers_power_pairs_the_items_the_rule_pairs():
    outcomes = _runs()
    measured = _smallest_correlation(outcomes)
    assert 0.8 < measured < 0.95  # strongly correlated items, as the construction intends
    paired = calibration.design_from_evidence("C8", _evidence(outcomes))
    independent = calibration.design_from_evidence("C8", _evidence(outcomes, with_items=False))
    assert paired.item_correlation == pytest.approx(measured, abs=1e-12)
    assert independent.item_correlation == 0.0
    # The same runs: the same cells and seed spread; only the item model differs.
    assert paired.cells == independent.cells and paired.seed_sd == independent.seed_sd
    assert paired.seeds == SEEDS and paired.items == ITEMS  # above C8's minimum: the gate does not decide

    power, basis = calibration.ledger_power("C8", _evidence(outcomes))
    power_without, basis_without = calibration.ledger_power("C8", _evidence(outcomes, with_items=False))
    # 400 items of which the runs agree on ~90 %: the paired floor is a fraction of two binomials', and the
    # paper's effect (+2.0 acc, −5.7 exceed) is decided far more often.
    assert power > power_without + 0.2, (power, power_without)
    assert f"paired items at ρ = {measured:.2f} measured over {SEEDS * len(METRICS)} run pairs" in basis
    assert basis_without.endswith("; independent items (no per-item outcomes recorded)")
    assert "paired" not in basis_without


def test_one_run_without_items_leaves_its_comparisons_on_independent_items():
    """GRPO's seed 2 has no per-item outcomes: the rule floors its comparisons by two binomials (pair_floor),
    so the power does too."""
    design = calibration.design_from_evidence("C8", _evidence(_runs(), drop=("grpo", 2)))
    assert design.item_correlation == 0.0
    assert design.item_source.startswith("independent items (2 of the rule's 2 comparisons do not pair")


def test_constant_or_anticorrelated_outcomes_give_independent_items():
    outcomes = _runs()
    # Exceed never happens in any run: no correlation to measure there; accuracy's is measured alone.
    constant = {k: (np.zeros_like(v) if k[2] == "exceed" else v) for k, v in outcomes.items()}
    design = calibration.design_from_evidence("C8", _evidence(constant))
    acc = min(float(np.corrcoef(outcomes[("gdpo", s, "acc")], outcomes[("grpo", s, "acc")])[0, 1])
              for s in range(SEEDS))
    assert design.item_correlation == pytest.approx(acc, abs=1e-12)
    assert f"measured over {SEEDS} run pairs" in design.item_source
    # GDPO answering the opposite of GRPO on one seed: the smallest correlation is negative, taken as 0.
    flipped = {**outcomes, ("gdpo", 0, "acc"): 1 - outcomes[("grpo", 0, "acc")]}
    design = calibration.design_from_evidence("C8", _evidence(flipped))
    assert design.item_correlation == 0.0
    assert "independent items (the smallest correlation of item outcomes over 12 run pairs, -1.00, taken as 0)" \
        == design.item_source


def test_c7s_simulated_weights_share_their_items_noise(monkeypatch):
    """C7 pairs each weight's runs with weight 1's, on the same items: in the simulation their evaluation noise
    correlates at ρ, as the paired floor the rule is handed assumes (not only runs of one weight's task)."""
    design = calibration.designs_from_config(load_config("config/paper-math.yaml"), seed_sd=0.0)["C7"]
    design = dataclasses.replace(design, item_correlation=0.9)
    seen = []
    decide = calibration._decision
    monkeypatch.setattr(calibration, "_decision", lambda d, cells: seen.append(cells) or decide(d, cells))
    calibration.simulate_table(design, effect=False, replicates=300, seed=3)
    # Seed 0's accuracy at weight 0.75 and at weight 1 over the replicates (no seed spread: only the items' noise).
    low = [cells[("0.75", "grpo", "acc")].values[0] for cells in seen]
    reference = [cells[("1", "grpo", "acc")].values[0] for cells in seen]
    assert np.corrcoef(low, reference)[0, 1] > 0.8


def _summary_dir(tmp_path, outcomes: dict):
    """A built scale's summary folder (eval.csv, items.json) holding ``outcomes``' runs."""
    import json

    evals, items = _summaries(outcomes)
    summary = tmp_path / "results/pilot/summary"
    summary.mkdir(parents=True)
    evals.to_csv(summary / "eval.csv", index=False)
    (summary / "items.json").write_text(json.dumps(items))
    return summary


def test_power_from_a_pilots_measurements_keeps_the_configs_seeds_and_items(tmp_path):
    """`gdpo power --measured`: the pilot's rates, seed spread and item correlation, at the planned design."""
    outcomes = _runs(seeds=2)
    config = {"scale": "planned", "seeds": list(range(5)), "methods": ["grpo", "gdpo"], "reporting": REPORTING,
              "tasks": {TASK: {"family": "math", "model": "tiny", "eval_data": ["reasoning_gym"],
                               "evaluation": {"eval_size": 2 * ITEMS}}}}
    designs = calibration.designs_measured(config, _summary_dir(tmp_path, outcomes))
    design, measured = designs["C8"], calibration.design_from_evidence("C8", _evidence(outcomes))
    assert design.seeds == 5 and design.items == pytest.approx(2 * ITEMS)  # the config's design ...
    assert design.item_correlation == pytest.approx(_smallest_correlation(outcomes), abs=1e-12)  # ... measured
    assert design.seed_sd == measured.seed_sd and "measured on" in design.spread_source
    key = ("R1-7B", "gdpo", "acc")
    assert design.cells[key].mean == measured.cells[key].mean and design.cells[key].seeds == 5
    assert design.cells[key].items == pytest.approx(2 * measured.cells[key].items)
    # more seeds and items than the pilot's: more power under the paper's effect
    assert calibration.power_of(design, 200) > calibration.power_of(measured, 200)
    with pytest.raises(FileNotFoundError, match="build the measured scale's summaries first"):
        calibration.designs_measured(config, tmp_path / "nothing")
