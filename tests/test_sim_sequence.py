"""The sequence bench (gdpo.sim.sequence*): rewards read from sequences, sampling, the analytic gradient,
seed independence, learning, study files and outcomes. Small shapes: every test runs in about a second."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch

from gdpo.advantages import registered_estimators
from gdpo.sim import parse_study, run_study
from gdpo.sim.sequence import SequenceBench
from gdpo.sim.sequence_rewards import (
    CLOSE, END, OPEN, THINK, base_logits, graded_rewards, make_prompts, paid_rewards, parse_responses,
)

NAME0, NAME1 = 4, 5  # answer_choices = 3: names 4..6, values 7..9
VALUE0, VALUE1 = 7, 8


def sequence_study(**overrides) -> dict:
    study = {
        "name": "tiny", "bench": "sequence", "seeds": 4, "steps": 6, "prompts": 3, "generations": 4,
        "methods": ["grpo", "gdpo"], "learning_rate": 0.05, "max_length": 10, "answer_slots": 1,
        "answer_choices": 3, "reasoning_needed": [0, 2],
        "rewards": [{"name": "correctness", "kind": "correctness"},
                    {"name": "length", "kind": "length", "limit": 6}],
    }
    study.update(overrides)
    return study


def config_of(**overrides):
    return parse_study(sequence_study(**overrides)).variant("default")


def encode(sequences: list[list[int]], cap: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(1, 1, R, cap) tokens and in-response mask of responses given as token lists (END included if any)."""
    tokens = torch.full((1, 1, len(sequences), cap), END, dtype=torch.int64)
    mask = torch.zeros((1, 1, len(sequences), cap), dtype=torch.bool)
    for index, sequence in enumerate(sequences):
        tokens[0, 0, index, :len(sequence)] = torch.tensor(sequence)
        mask[0, 0, index, :len(sequence)] = True
    return tokens, mask


def test_rewards_read_from_sequences_tool_calling_scales():
    config = config_of(prompts=1, answer_slots=2, max_length=8, reasoning_needed=[0, 0], rewards=[
        {"name": "correctness", "kind": "correctness", "scale": "ranged", "range": [-3, 3]},
        {"name": "format", "kind": "format"},
        {"name": "length", "kind": "length", "limit": 6},
        {"name": "no_bug", "kind": "no_bug"}])
    answers = torch.tensor([[NAME1, VALUE0]])
    rows = [
        # exact call in the template: correctness 3, format 1, 6 tokens, no bug
        ([THINK, OPEN, NAME1, VALUE0, CLOSE, END], [3, 1, 1, 1]),
        # right name, wrong value: half credit → 0; format still 1
        ([THINK, OPEN, NAME1, VALUE1, CLOSE, END], [0, 1, 1, 1]),
        # exact call but no reasoning first: format 0, correctness 3
        ([OPEN, NAME1, VALUE0, CLOSE, END], [3, 0, 1, 1]),
        # no call at all: unparsable → −3; not a bug
        ([THINK, THINK, END], [-3, 0, 1, 1]),
        # call left open: −3 and a bug
        ([THINK, OPEN, NAME1, VALUE0, END], [-3, 0, 1, 0]),
        # extra token after the call: format 0; 7 tokens > limit 6
        ([THINK, OPEN, NAME1, VALUE0, CLOSE, THINK, END], [3, 0, 0, 1]),
        # a reasoning token inside the call: 1 of max(2, 3) slots right → 6/3 − 3 = −1; a bug; format 0
        ([THINK, OPEN, NAME1, THINK, VALUE1, CLOSE, END], [-1, 0, 0, 0]),
        # truncated at the cap (no END): length = 8 > 6, a bug, format 0, the closed call still parses
        ([THINK, THINK, THINK, OPEN, NAME1, VALUE0, CLOSE, THINK], [3, 0, 0, 0]),
    ]
    tokens, mask = encode([r[0] for r in rows], 8)
    parsed = parse_responses(tokens, mask, answers, config.answer_choices)
    paid = paid_rewards(graded_rewards(parsed, config, torch.tensor([0])), config)[0, 0]
    expected = torch.tensor([r[1] for r in rows], dtype=torch.float64)
    assert torch.allclose(paid, expected), (paid, expected)


def test_correctness_needs_the_prompts_reasoning():
    config = config_of(prompts=1, reasoning_needed=[2, 2])
    tokens, mask = encode([[THINK, OPEN, NAME0, CLOSE, END], [THINK, THINK, OPEN, NAME0, CLOSE, END],
                           [THINK, THINK, OPEN, NAME1, CLOSE, END], [THINK] * 6 + [OPEN, NAME0, CLOSE, END]], 10)
    parsed = parse_responses(tokens, mask, torch.tensor([[NAME0]]), config.answer_choices)
    graded = graded_rewards(parsed, config, torch.tensor([2]))[0, 0]
    # correctness: too little reasoning, right, wrong answer, right (long); length ≤ 6
    assert graded[:, 0].tolist() == [0, 1, 0, 1]
    assert graded[:, 1].tolist() == [1, 1, 1, 0]
    assert parsed.length[0, 0].tolist() == [5, 6, 6, 10]


def test_step0_policy_follows_the_template_and_sampling_matches_it():
    config = config_of(seeds=64, prompts=2, generations=8, base={"think_continue": 0.5, "off_template": 0.1,
                                                                   "answer_skill": 0.0, "prompt_spread": 0.0})
    bench = SequenceBench(config, "grpo")
    probabilities = torch.softmax(base_logits(config, make_prompts(config)), -1)
    tokens, states, in_response, sampled_probabilities = bench.sample(0)
    # every row of the step-0 policy sums to 1, the start goes to THINK with 0.9 + 0.1 / V
    assert torch.allclose(probabilities.sum(-1), torch.ones(2, 11, dtype=torch.float64))
    first = tokens[..., 0].reshape(-1)
    share = (first == THINK).double().mean().item()
    expected = probabilities[0, -1, THINK].item()
    assert abs(share - expected) < 4 * math.sqrt(expected * (1 - expected) / first.numel())
    # the probabilities kept for the update are those of the states actually visited
    reference = torch.softmax(bench.token_logits(states), -1)
    assert torch.allclose(sampled_probabilities[in_response], reference[in_response])
    # after END the response is over: nothing but END, outside the response
    ended = (tokens == END) & in_response
    after = ended.cumsum(-1) - ended.long() > 0
    assert not (after & in_response).any() and (tokens[after] == END).all()


@pytest.mark.parametrize("loss", ["token_mean", "sequence_mean"])
@pytest.mark.parametrize("ratio_active", [False, True])
def test_analytic_gradient_matches_autograd(loss, ratio_active):
    config = config_of(loss=loss, clip_epsilon=0.1)
    bench = SequenceBench(config, "gdpo")
    torch.manual_seed(0)
    bench.habit.normal_(0, 0.3)
    bench.knowledge.normal_(0, 0.3)
    tokens, states, in_response, sampling = bench.sample(3)
    advantages = torch.randn(tokens.shape[:3], dtype=torch.float64)
    if ratio_active:  # move the policy away from the sampling one so that some tokens are clipped
        bench.habit.add_(torch.randn_like(bench.habit) * 0.5)
        current = torch.softmax(bench.token_logits(states), -1)
        analytic = bench.logit_gradient(tokens, in_response, advantages, current, sampling)
    else:
        analytic = bench.logit_gradient(tokens, in_response, advantages, sampling)
    habit_grad, knowledge_grad = bench.parameter_gradients(analytic, states)

    habit = bench.habit.clone().requires_grad_(True)
    knowledge = bench.knowledge.clone().requires_grad_(True)
    bench.habit, bench.knowledge = habit, knowledge
    log_probs = torch.log_softmax(bench.token_logits(states), -1).gather(-1, tokens[..., None])[..., 0]
    weights = bench.token_weights(in_response)
    advantage = advantages[..., None]
    if ratio_active:
        ratio = torch.exp(log_probs - sampling.gather(-1, tokens[..., None])[..., 0].log())
        clipped = ratio.clamp(1 - config.clip_epsilon, 1 + config.clip_epsilon)
        objective = torch.minimum(ratio * advantage, clipped * advantage)
    else:
        objective = log_probs * advantage  # ρ = 1: the gradient of ρ·A is A·∇log π
    (-(weights * objective).sum()).backward()
    assert torch.allclose(habit_grad, habit.grad, atol=1e-12)
    assert torch.allclose(knowledge_grad, knowledge.grad, atol=1e-12)
    assert habit.grad.abs().sum() > 0


def test_seeds_are_independent_of_their_neighbours():
    config = config_of(steps=5)
    together = SequenceBench(config, "gdpo", seeds=(0, 1, 2)).run()
    alone = SequenceBench(config, "gdpo", seeds=(1,)).run()
    for field in ("success", "length_max", "distinct_per_group"):
        assert np.array_equal(getattr(together, field)[:, 1], getattr(alone, field)[:, 0]), field


@pytest.mark.parametrize("method", registered_estimators())
def test_every_registered_method_trains_batched_as_per_seed(method):
    config = config_of(steps=3, methods=[method])
    batched = SequenceBench(config, method).run()
    reference = SequenceBench(config, method, advantage_path="per_seed").run()
    assert np.allclose(batched.success, reference.success)
    assert np.allclose(batched.length_mean, reference.length_mean)


def test_training_raises_correctness_and_moves_the_policy():
    config = config_of(seeds=8, steps=60, prompts=8, generations=8, learning_rate=0.1,
                       rewards=[{"name": "correctness", "kind": "correctness"}])
    bench = SequenceBench(config, "grpo")
    trace = bench.run()
    start, end = trace.success[:5, :, 0].mean(), trace.success[-5:, :, 0].mean()
    assert end > start + 0.2, (start, end)
    assert bench.knowledge.abs().sum() > 0 and bench.habit.abs().sum() > 0


def test_run_study_outcomes_for_sequence_studies():
    study = parse_study(sequence_study(steps=40, outcome={"kind": "fails_to_converge", "reward": "correctness"},
                                       grid={"learning_rate": [1e-6, 0.2]}))
    frame = run_study(study)
    assert set(frame["variant"]) == {"learning_rate=1e-06", "learning_rate=0.2"}
    per_seed = frame.groupby(["variant", "method", "seed"])["outcome_event"].first()
    # a learning rate of 1e-6 on the logits cannot move a tabular policy in 40 steps: every seed fails
    assert per_seed.loc["learning_rate=1e-06"].all()
    assert not per_seed.loc["learning_rate=0.2"].all()
    collapse = parse_study(sequence_study(steps=40, outcome={"kind": "collapse", "reward": "correctness"}))
    frame = run_study(collapse)
    assert (frame["outcome"] == "collapse").all() and frame["length_max"].max() <= 10


@pytest.mark.parametrize("change, message", [
    ({"max_length": 2}, "max_length"),
    ({"rewards": [{"name": "length", "kind": "length"}]}, "limit"),
    ({"rewards": [{"name": "format", "kind": "format", "scale": "binary"}]}, "only on a correctness reward"),
    ({"reasoning_needed": [0, 9]}, "a right answer must fit"),
    ({"outcome": {"kind": "collapse", "reward": "nope"}}, "outcome.reward"),
    ({"base": {"think_continue": 1.5}}, "base.think_continue"),
    ({"grid": {"prompts_per_batch": [8]}}, "grid.prompts_per_batch"),
    ({"bench": "lstm"}, "bernoulli or sequence"),
])
def test_bad_sequence_study_names_the_key(change, message):
    with pytest.raises(ValueError, match=message):
        parse_study(sequence_study(**change), "study.yaml")


def test_sequence_study_figure_adds_the_maximum_length(tmp_path):
    from gdpo.sim import plot_study

    frame = run_study(parse_study(sequence_study(steps=4, seeds=3)))
    assert (frame["bench"] == "sequence").all()
    png, pdf = plot_study(frame, tmp_path / "tiny.png")
    assert png.stat().st_size > 1000 and pdf.exists()


def test_noise_law_measures_the_estimators_variance():
    """At ρ = 0 with two fair coins, the decoupled advantage is A ≈ 2(s1 + s2) (s = a − 1/2) for large G, so
    m·Var(g) = E‖A·s‖² − ‖E[A·s]‖² = 1 − 1/2 while the law predicts τ²·wᵀCw = 1/2 · 2 = 1: measured / predicted
    is 1/2, and the measurement must find it."""
    from gdpo.sim.noise_law import law_row, measure_cell

    cell = measure_cell(32, 0.0, replicates=128, prompts=8)
    assert cell["predicted"] == pytest.approx(1.0 / (8 * 32))
    assert cell["ratio_low"] < cell["ratio"] < cell["ratio_high"]
    assert abs(cell["ratio"] - 0.5) < 0.06, cell
    correlated = measure_cell(32, 0.8, replicates=128, prompts=8)
    assert correlated["measured_correlation"] == pytest.approx(0.8, abs=0.05)
    row = law_row(pd.DataFrame([cell, correlated]))
    assert row["verdict"] == "disagrees" and row["cells"] == 2


def test_noise_law_row_agrees_only_inside_the_band(tmp_path):
    from gdpo.sim.noise_law import law_row, plot_law

    cells = pd.DataFrame({"generations": [4, 8], "correlation": [0.0, 0.4], "m": [32, 64],
                          "predicted": [1.0, 0.5], "measured": [1.0, 0.52], "ratio": [1.0, 1.04],
                          "ratio_low": [0.95, 0.92], "ratio_high": [1.05, 1.12]})
    assert law_row(cells)["verdict"] == "agrees in part"
    assert law_row(cells.iloc[:1])["verdict"] == "agrees"
    png, pdf = plot_law(cells, tmp_path / "law.png")
    assert png.stat().st_size > 1000 and pdf.exists()


@pytest.mark.parametrize("loss", ["token_mean", "sequence_mean"])
def test_response_only_gradients_are_bit_identical_to_the_full_ones(loss):
    config = config_of(loss=loss)
    bench = SequenceBench(config, "gdpo")
    torch.manual_seed(1)
    bench.knowledge.normal_(0, 0.5)
    tokens, states, in_response, probabilities = bench.sample(2)
    advantages = torch.randn(tokens.shape[:3], dtype=torch.float64)
    full = bench.parameter_gradients(bench.logit_gradient(tokens, in_response, advantages, probabilities), states)
    fast = bench.response_gradients(tokens, states, in_response, advantages, probabilities)
    for a, b in zip(full, fast):
        assert torch.equal(a, b)


# --------------------------------------------------------------------------------------------------
# Extra cells: one factor at a time around a cell of the grid or a variant
# --------------------------------------------------------------------------------------------------


def test_extra_cells_vary_one_factor_around_a_grid_cell():
    study = parse_study(sequence_study(
        grid={"learning_rate": [0.05, 0.1], "base": [{"off_template": 0.1}, {"off_template": 0.3}]},
        extra_cells=[{"around": {"learning_rate": 0.1, "base": {"off_template": 0.3}},
                      "vary": {"prompts": [2, 5], "learning_rate": [0.3], "base": [{"think_continue": 0.8}],
                               "rewards": [{"length": {"limit": 4}}]}}]))
    names = study.variant_names
    assert names[:4] == ("learning_rate=0.05,base.off_template=0.1", "learning_rate=0.05,base.off_template=0.3",
                         "learning_rate=0.1,base.off_template=0.1", "learning_rate=0.1,base.off_template=0.3")
    assert names[4:] == ("learning_rate=0.1,base.off_template=0.3,prompts=2",
                         "learning_rate=0.1,base.off_template=0.3,prompts=5",
                         "learning_rate=0.3,base.off_template=0.3",
                         "learning_rate=0.1,base.off_template=0.3,base.think_continue=0.8",
                         "learning_rate=0.1,base.off_template=0.3,length.limit=4")
    around = study.variant("learning_rate=0.1,base.off_template=0.3")
    for name in names[4:]:  # exactly one setting differs from the around cell
        changed = {f.name for f in dataclasses.fields(around) if getattr(around, f.name) != getattr(study.variant(name), f.name)}
        assert len(changed) == 1, (name, changed)
    assert study.variant(names[5]).prompts == 5 and study.variant(names[6]).learning_rate == 0.3
    assert study.variant(names[7]).base.off_template == 0.3 and study.variant(names[7]).base.think_continue == 0.8
    assert study.variant(names[8]).rewards[1].limit == 4


def test_extra_cells_around_a_variant_and_reward_scale_labels():
    study = parse_study(sequence_study(
        answer_slots=2, rewards=[{"name": "correctness", "kind": "correctness", "scale": "ranged", "range": [-3, 3]},
                                 {"name": "format", "kind": "format"}],
        variants={"slow": {"learning_rate": 0.01}, "fast": {"learning_rate": 0.2}},
        extra_cells=[{"around": "fast", "vary": {"rewards": [{"correctness": {"range": [0, 1]}}], "prompts": [6]}}]))
    assert study.variant_names == ("slow", "fast", "fast,correctness.range=0..1", "fast,prompts=6")
    scaled = study.variant("fast,correctness.range=0..1")
    assert (scaled.rewards[0].low, scaled.rewards[0].high, scaled.learning_rate) == (0.0, 1.0, 0.2)


def test_extra_cells_work_on_the_bernoulli_bench_too():
    study = parse_study({"name": "b", "steps": 2, "methods": ["grpo"], "learning_rate": 0.1,
                         "rewards": [{"name": "a", "behaviours": 1, "rule": "all", "scale": "binary",
                                      "difficulty": 0.5}], "grid": {"generations": [4, 8]},
                         "extra_cells": [{"around": {"generations": 8}, "vary": {"prompts": [4]}}]})
    assert study.variant_names[-1] == "generations=8,prompts=4" and study.variant(study.variant_names[-1]).prompts == 4


GRID = {"learning_rate": [0.05, 0.1]}


@pytest.mark.parametrize("change, message", [
    ({"extra_cells": {"around": {"learning_rate": 0.1}, "vary": {"prompts": [2]}}}, r"extra_cells.*non-empty list"),
    ({"grid": None, "extra_cells": [{"around": {}, "vary": {"prompts": [2]}}]}, r"neither"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}}]}, r"missing key 'extra_cells\[0\]\.vary'"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"prompts": [2]}, "seeds": 3}]},
     r"unknown key 'extra_cells\[0\]\.seeds'"),
    ({"extra_cells": [{"around": {"learning_rate": 0.2}, "vary": {"prompts": [2]}}]},
     r"extra_cells\[0\]\.around\.learning_rate.*one of the grid's values 0\.05, 0\.1"),
    ({"extra_cells": [{"around": {"max_length": 10}, "vary": {"prompts": [2]}}]},
     r"extra_cells\[0\]\.around.*one value of each grid key \(learning_rate\)"),
    ({"extra_cells": [{"around": "fast", "vary": {"prompts": [2]}}]}, r"extra_cells\[0\]\.around.*grid key"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"prompts_per_batch": [2]}}]},
     r"unknown key 'extra_cells\[0\]\.vary\.prompts_per_batch'; allowed keys: .*prompts"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"grid": [{}]}}]}, r"extra_cells\[0\]\.vary\.grid"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"prompts": 2}}]},
     r"extra_cells\[0\]\.vary\.prompts' = 2.*non-empty list"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"prompts": [3]}}]},
     r"'learning_rate=0\.1,prompts=3' has the same settings as the cell 'learning_rate=0\.1'"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"learning_rate": [0.05]}}]},
     r"same name as the cell 'learning_rate=0\.05'"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"prompts": [2, 2]}}]},
     r"'learning_rate=0\.1,prompts=2' has the same name"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"prompts": [0]}}]},
     r"variant 'learning_rate=0\.1,prompts=0'.*key 'prompts' = 0"),
    ({"extra_cells": [{"around": {"learning_rate": 0.1}, "vary": {"rewards": [{"speed": {"limit": 2}}]}}]},
     r"rewards\.speed"),
])
def test_bad_extra_cells_name_the_key_and_what_is_allowed(change, message):
    study = sequence_study(grid=GRID)
    study.update(change)
    if study.get("grid") is None:
        study.pop("grid")
    with pytest.raises(ValueError, match=message) as error:
        parse_study(study, "study.yaml")
    assert str(error.value).startswith("study.yaml")


def test_every_declared_cell_is_run_plotted_and_judged(tmp_path):
    """A study of 6 grid cells and 3 extra ones: every cell is in the results, the figure (one row per cell)
    and the ledger row's text, whose intervals are at the Bonferroni level of 9 cells."""
    from gdpo.reporting.verdicts import decisions, sim
    from gdpo.sim import plot_study
    from gdpo.sim.plots import _sequence_cells
    from gdpo.sim.report import per_seed_table

    study = parse_study(sequence_study(
        name="seq_batch_step", seeds=3, steps=6, methods=["gdpo", "gdpo_nobn"],
        outcome={"kind": "fails_to_converge", "reward": "correctness"},
        grid={"learning_rate": [0.01, 0.05, 0.1], "generations": [2, 4]},
        extra_cells=[{"around": {"learning_rate": 0.05, "generations": 4}, "vary": {"prompts": [1, 6]}},
                     {"around": {"learning_rate": 0.1, "generations": 2}, "vary": {"optimizer": ["sgd"]}}]))
    assert len(study.variants) == 9
    frame = run_study(study)
    assert list(dict.fromkeys(frame["variant"])) == list(study.variant_names)
    figure = _sequence_cells(frame, list(study.variant_names), ["correctness", "length"], ["gdpo", "gdpo_nobn"])
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == list(study.variant_names)
    assert len(figure.axes) == 3  # two rewards and the outcome's rate
    png, _ = plot_study(frame, tmp_path / "cells.png")
    assert png.stat().st_size > 1000
    verdict = sim.judge_c10(per_seed_table(frame), "x")
    level = decisions.bonferroni_level(9)
    assert "9 cells" in verdict.measured_value and f"{100 * level:.2f} %" in verdict.measured_value
    for name in study.variant_names:
        assert f"{name}: " in verdict.measured_value
