"""Positive controls of the bench studies (``positive_controls``): cells whose settings are engineered so that
the study's outcome event happens, named ``control:<name>``, run and judged like every cell and marked
``positive_control`` in the results. The shipped controls of seq_math_length (C5) and seq_batch_step (C10)
are run small: every test takes a few seconds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from gdpo.sim import parse_study, run_study, summarise
from gdpo.sim.report import per_seed_table
from gdpo.sim.summary import per_seed_outcomes

STUDIES = Path(__file__).resolve().parents[1] / "config" / "sim"


def sequence_study(**overrides) -> dict:
    study = {
        "name": "tiny", "bench": "sequence", "seeds": 3, "steps": 12, "prompts": 3, "generations": 4,
        "methods": ["gdpo", "gdpo_nobn"], "learning_rate": 0.05, "max_length": 10, "answer_choices": 3,
        "reasoning_needed": [0, 2],
        "rewards": [{"name": "correctness", "kind": "correctness"}, {"name": "length", "kind": "length", "limit": 6}],
        "outcome": {"kind": "fails_to_converge", "reward": "correctness"},
        "grid": {"learning_rate": [0.05, 0.1]},
    }
    study.update(overrides)
    return study


def shipped(stem: str, **overrides) -> dict:
    data = yaml.safe_load((STUDIES / f"{stem}.yaml").read_text(encoding="utf-8"))
    data.update(overrides)
    return data


# --------------------------------------------------------------------------------------------------
# The loader
# --------------------------------------------------------------------------------------------------


def test_controls_come_last_named_control_and_apply_their_overrides():
    study = parse_study(sequence_study(
        extra_cells=[{"around": {"learning_rate": 0.1}, "vary": {"prompts": [2]}}],
        positive_controls={"tiny_step": {"learning_rate": 1e-6},
                           "verbose": {"rewards": {"length": {"weight": -1, "limit": 9}}, "base": {"answer_skill": 3}}}))
    assert study.variant_names == ("learning_rate=0.05", "learning_rate=0.1", "learning_rate=0.1,prompts=2",
                                   "control:tiny_step", "control:verbose")
    assert study.controls == ("control:tiny_step", "control:verbose")
    assert study.is_control("control:verbose") and not study.is_control("learning_rate=0.1")
    verbose = study.variant("control:verbose")
    # overrides of the study's own top-level settings, as a variant's (not of a grid cell)
    assert verbose.learning_rate == 0.05 and verbose.base.answer_skill == 3.0
    assert (verbose.rewards[1].weight, verbose.rewards[1].limit) == (-1.0, 9)
    assert verbose.seeds == study.variant("learning_rate=0.05").seeds and verbose.outcome.kind == "fails_to_converge"


def test_controls_without_a_grid_and_on_the_bernoulli_bench():
    data = sequence_study(positive_controls={"frozen": {"learning_rate": 1e-6}})
    data.pop("grid")
    assert parse_study(data).variant_names == ("default", "control:frozen")
    bernoulli = parse_study({
        "name": "b", "steps": 2, "methods": ["grpo"], "learning_rate": 0.1,
        "rewards": [{"name": "a", "behaviours": 1, "rule": "all", "scale": "binary", "difficulty": 0.5}],
        "outcome": {"kind": "failure_to_converge", "threshold": 0.5},
        "variants": {"plain": {}}, "positive_controls": {"frozen": {"learning_rate": 1e-6}}})
    assert bernoulli.controls == ("control:frozen",) and bernoulli.variant("control:frozen").learning_rate == 1e-6


@pytest.mark.parametrize("change, message", [
    ({"positive_controls": [{"learning_rate": 1e-6}]}, r"'positive_controls' = .*non-empty mapping of control name"),
    ({"positive_controls": {}}, r"'positive_controls' = \{\}.*non-empty mapping"),
    ({"positive_controls": {"x": None}}, r"'positive_controls\.x' = None.*non-empty mapping"),
    ({"positive_controls": {"x": {}}}, r"'positive_controls\.x' = \{\}.*must change some setting"),
    ({"positive_controls": {"x": 0.1}}, r"'positive_controls\.x' = 0\.1"),
    ({"positive_controls": {"": {"learning_rate": 1e-6}}}, r"control names that are non-empty strings"),
    ({"positive_controls": {3: {"learning_rate": 1e-6}}}, r"control names that are non-empty strings"),
    ({"positive_controls": {"control:x": {"learning_rate": 1e-6}}}, r"without the 'control:' prefix"),
    ({"positive_controls": {"x": {"outcome": {"kind": "collapse", "reward": "correctness"}}}},
     r"'positive_controls\.x\.outcome' cannot be set in a positive control.*study's own outcome"),
    ({"positive_controls": {"x": {"methods": ["grpo"]}}}, r"'positive_controls\.x\.methods' cannot be set"),
    ({"positive_controls": {"x": {"seeds": 2}}}, r"'positive_controls\.x\.seeds' cannot be set"),
    ({"positive_controls": {"x": {"lr": 1e-6}}}, r"unknown key 'positive_controls\.x\.lr'; allowed keys: .*learning_rate"),
    ({"positive_controls": {"x": {"grid": {"learning_rate": [1]}}}}, r"unknown key 'positive_controls\.x\.grid'"),
    ({"positive_controls": {"x": {"learning_rate": -1}}},
     r"\(positive control 'control:x'\): key 'learning_rate' = -1"),
    ({"positive_controls": {"x": {"rewards": {"speed": {"limit": 2}}}}}, r"rewards\.speed"),
    ({"positive_controls": {"x": {"learning_rate": 0.1}}},
     r"positive control 'control:x' has the same settings as the cell 'learning_rate=0\.1'"),
    ({"outcome": None, "positive_controls": {"x": {"learning_rate": 1e-6}}}, r"needs the study to count an outcome"),
    ({"grid": None, "variants": {"control:mine": {"learning_rate": 1e-6}}}, r"prefix 'control:' marks positive controls"),
])
def test_bad_positive_controls_name_the_key_and_what_is_allowed(change, message):
    study = sequence_study()
    study.update(change)
    if study.get("grid") is None:
        study.pop("grid")
    with pytest.raises(ValueError, match=message) as error:
        parse_study(study, "study.yaml")
    assert str(error.value).startswith("study.yaml")


def test_shipped_c5_and_c10_studies_declare_controls_on_their_seeds():
    for stem, seeds, names in (("seq_math_length", 32, ("control:verbose_unpaid_correctness",)),
                               ("seq_batch_step", 64, ("control:sgd_small_weights", "control:sgd_sparse_correctness"))):
        study = parse_study(shipped(stem))
        assert study.controls == names and study.variant_names[-len(names):] == names
        assert all(len(study.variant(name).seeds) == seeds for name in study.variant_names)


# --------------------------------------------------------------------------------------------------
# The results: rows, per-seed table, summary
# --------------------------------------------------------------------------------------------------


def test_control_rows_are_marked_and_ordinary_rows_are_not(tmp_path):
    study = parse_study(sequence_study(positive_controls={"frozen": {"learning_rate": 1e-6}}))
    frame = run_study(study)
    assert frame["positive_control"].dtype == bool
    assert frame.loc[frame["positive_control"], "variant"].unique().tolist() == ["control:frozen"]
    assert not frame.loc[frame["variant"] != "control:frozen", "positive_control"].any()
    path = tmp_path / "tiny.csv"
    frame.to_csv(path, index=False)
    for table in (per_seed_outcomes(frame), per_seed_table(pd.read_csv(path))):
        assert len(table) == 3 * 2 * 2 * 3  # cells × methods × rewards × seeds
        flags = table.groupby("variant")["positive_control"].agg(["all", "any"])
        assert flags.loc["control:frozen"].all() and not flags.drop(index="control:frozen")["any"].any()
        # a learning rate of 1e-6 on the logits moves nothing: every seed of the control fails to converge
        assert table.loc[table["positive_control"], "outcome_event"].all()
    summary = summarise(frame)
    assert summary.loc[summary["positive_control"], "variant"].unique().tolist() == ["control:frozen"]


def test_results_written_before_the_column_read_as_ordinary_cells():
    frame = run_study(parse_study(sequence_study(steps=6, grid={"learning_rate": [0.05]})))
    table = per_seed_outcomes(frame.drop(columns="positive_control"))
    assert "positive_control" in table and not table["positive_control"].any()


# --------------------------------------------------------------------------------------------------
# The shipped controls produce their event (small runs of the same settings)
# --------------------------------------------------------------------------------------------------


def test_c5_control_collapses_through_the_divergence_detector():
    """The C5 control at 4 seeds (the study's 1,000 steps: the collapse takes a few hundred), GRPO only: at
    least one seed collapses (in the full run 29/32 per method)."""
    study = parse_study(shipped("seq_math_length", seeds=4))
    frame = run_study(study, variant="control:verbose_unpaid_correctness", method="grpo")
    per_seed = per_seed_outcomes(frame)
    assert per_seed["positive_control"].all() and (per_seed["outcome"] == "collapse").all()
    events = per_seed.groupby("seed")["outcome_event"].first()
    assert events.sum() >= 1
    assert frame["length_max"].max() == 24


@pytest.mark.parametrize("control", ["control:sgd_small_weights", "control:sgd_sparse_correctness"])
def test_c10_controls_fail_to_converge_without_the_batch_step(control):
    """The C10 controls at 8 seeds (the study's 200 steps), gdpo_nobn only: at least one seed fails to
    converge (in the full run 46/64 and 50/64)."""
    study = parse_study(shipped("seq_batch_step", seeds=8))
    per_seed = per_seed_outcomes(run_study(study, variant=control, method="gdpo_nobn"))
    assert per_seed["positive_control"].all() and (per_seed["outcome"] == "fails_to_converge").all()
    assert per_seed.groupby("seed")["outcome_event"].first().sum() >= 1
