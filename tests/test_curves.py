"""Training-curve and sweep figures (Figs. 4–8) on synthetic steps/eval tables, and their statistics by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from gdpo.reporting import curves
from gdpo.reporting.curves import (
    CORRECTNESS,
    FORMAT,
    LENGTH,
    LENGTH_CONDITIONED,
    MAX_LENGTH,
    divergence_steps,
    figure4_tool_calling_curves,
    figure5_math_curves,
    figure6_weight_sweep,
    figure7_conditioned_curves,
    figure8_batch_step_ablation,
    median_iqr,
    per_seed_curves,
    seeds_note,
    sweep_table,
)
from gdpo.curve_events import detect_divergence

ALL_METRICS = (CORRECTNESS, FORMAT, LENGTH, LENGTH_CONDITIONED, MAX_LENGTH)


def make_steps(task="t", methods=("grpo", "gdpo"), seeds=(0, 1, 2), n_steps=6, metrics=ALL_METRICS):
    """Every (method, seed, step) with value = method offset + 0.1·seed + 0.01·step (max length ×100)."""
    rows = []
    for m_index, method in enumerate(methods):
        for seed in seeds:
            for step in range(1, n_steps + 1):
                value = m_index + 0.1 * seed + 0.01 * step
                rows.append({"task": task, "method": method, "seed": seed, "step": step,
                             **{metric: value * (100 if metric == MAX_LENGTH else 1) for metric in metrics}})
    return pd.DataFrame(rows)


def assert_figure_files(paths):
    png, pdf = paths
    assert png.suffix == ".png" and pdf.suffix == ".pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000


@pytest.fixture
def captured(monkeypatch):
    """The figures passed to save_figure (still saved), to inspect what was drawn."""
    figures = []
    real_save = curves.save_figure

    def save_and_keep(figure, out_png):
        figures.append({"lines": [[(line.get_xdata(), line.get_ydata()) for line in axis.get_lines()]
                                  for axis in figure.axes],
                        "texts": [t.get_text() for legend in figure.legends for t in legend.get_texts()]
                        + [figure._suptitle.get_text()]})
        return real_save(figure, out_png)

    monkeypatch.setattr(curves, "save_figure", save_and_keep)
    return figures


# --------------------------------------------------------------------------------------------- statistics


def test_median_and_iqr_match_a_hand_computation():
    steps = pd.DataFrame([
        # Step 1, four seeds 1, 2, 4, 10: median 3, q25 = 1 + 0.75·1 = 1.75, q75 = 4 + 0.25·6 = 5.5.
        *({"task": "t", "method": "gdpo", "seed": s, "step": 1, "m": v} for s, v in enumerate([1, 2, 4, 10])),
        # Step 2: seed 0 logged twice (resumed run), averaged to 3; seed 3 NaN, skipped → values 3, 5, 7.
        {"task": "t", "method": "gdpo", "seed": 0, "step": 2, "m": 2.0},
        {"task": "t", "method": "gdpo", "seed": 0, "step": 2, "m": 4.0},
        {"task": "t", "method": "gdpo", "seed": 1, "step": 2, "m": 5.0},
        {"task": "t", "method": "gdpo", "seed": 2, "step": 2, "m": 7.0},
        {"task": "t", "method": "gdpo", "seed": 3, "step": 2, "m": np.nan},
        # A row without a step is skipped.
        {"task": "t", "method": "gdpo", "seed": 3, "step": np.nan, "m": 100.0},
        # One seed only: a zero-width band.
        {"task": "t", "method": "grpo", "seed": 0, "step": 1, "m": 0.5},
        # Another task is ignored.
        {"task": "other", "method": "gdpo", "seed": 0, "step": 1, "m": 99.0},
    ])
    table = median_iqr(steps, "t", "m")
    expected = pd.DataFrame({"method": ["gdpo", "gdpo", "grpo"], "step": [1.0, 2.0, 1.0],
                             "median": [3.0, 5.0, 0.5], "q25": [1.75, 4.0, 0.5], "q75": [5.5, 6.0, 0.5],
                             "n_seeds": [4, 3, 1]})
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)


def test_median_and_iqr_of_each_seeds_trailing_mean():
    # seed 0: 1, 3, 5, 7 → trailing mean over 2 steps 1, 2, 4, 6; seed 1: 3, 3, 3, 3 → 3, 3, 3, 3
    steps = pd.DataFrame([{"task": "t", "method": "gdpo", "seed": seed, "step": step, "m": value}
                          for seed, values in enumerate([[1, 3, 5, 7], [3, 3, 3, 3]])
                          for step, value in enumerate(values, start=1)])
    table = median_iqr(steps, "t", "m", window=2)
    assert list(table["median"]) == pytest.approx([2.0, 2.5, 3.5, 4.5])
    assert list(table["q75"]) == pytest.approx([2.5, 2.75, 3.75, 5.25])
    pd.testing.assert_frame_equal(median_iqr(steps, "t", "m", window=1), median_iqr(steps, "t", "m"))
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="window must be a whole number"):
            median_iqr(steps, "t", "m", window=bad)


@pytest.mark.parametrize(("n_steps", "window"), [(8, 1), (49, 1), (100, 4), (500, 20)])
def test_curve_figures_smooth_long_runs_and_say_so(tmp_path, captured, n_steps, window):
    assert curves.smoothing_window(n_steps) == window
    steps = make_steps(n_steps=n_steps)
    figure4_tool_calling_curves(steps, "t", tmp_path / "fig4.png", "cpu-evidence")
    drawn = captured[0]["lines"][0][0][1]  # the correctness panel's first method (grpo)
    assert list(drawn) == pytest.approx(list(median_iqr(steps, "t", CORRECTNESS, ["grpo"], window)["median"]))
    said = f"trailing mean over {window} steps"
    assert (said in captured[0]["texts"][-1]) == (window > 1)


def test_per_seed_curves_restrict_to_the_methods_asked_for():
    curves_ = per_seed_curves(make_steps(methods=("grpo", "gdpo", "grpo_nostd"), seeds=(0, 1), n_steps=2),
                              "t", CORRECTNESS, methods=["gdpo"])
    assert set(curves_["method"]) == {"gdpo"} and len(curves_) == 4
    assert curves_["value"].tolist() == pytest.approx([1.01, 1.02, 1.11, 1.12])


@pytest.mark.parametrize("counts, note", [
    ({"grpo": 3, "gdpo": 3}, "scale mini · 3 seeds"),          # equal counts: one number
    ({"gdpo": 1}, "scale mini · 1 seed"),                        # singular
    ({"gdpo": 2, "grpo": 3}, "scale mini · seeds: GRPO 3, GDPO 2"),  # differing: per method, paper order
])
def test_seeds_note(counts, note):
    assert seeds_note("mini", counts) == note


def make_evals():
    """Tasks w1 (plain), w1c (conditioned), w05 (plain); two benchmarks; seeds 0, 1 (w05: seed 0 only)."""
    rows = []
    for task, seeds in (("w1", (0, 1)), ("w1c", (0, 1)), ("w05", (0,))):
        for method_offset, method in enumerate(("base", "grpo", "gdpo")):
            for seed in seeds:
                for bench_offset, bench in enumerate(("b1", "b2")):
                    acc = 10.0 * method_offset + seed + 2.0 * bench_offset  # per-seed mean: 10·m + seed + 1
                    rows.append({"task": task, "method": method, "seed": seed, "benchmark": bench,
                                 "metric": "acc", "value": acc, "n_items": 8 + 100 * bench_offset, "note": ""})
                    rows.append({"task": task, "method": method, "seed": seed, "benchmark": bench,
                                 "metric": "exceed", "value": 50.0 - acc, "n_items": 8, "note": ""})
                rows.append({"task": task, "method": method, "seed": seed, "benchmark": "b3", "metric": "",
                             "value": np.nan, "n_items": np.nan, "note": "not run: no executor"})
    return pd.DataFrame(rows)


def test_sweep_points_average_benchmarks_then_seeds():
    table = sweep_table(make_evals(), {1.0: {"plain": "w1", "conditioned": "w1c"},
                                       0.5: {"plain": "w05", "conditioned": None}}, "acc")
    rows = table.set_index(["weight", "variant", "method"])
    # GDPO on w1: seeds give 21 and 22 (benchmarks 20/22 and 21/23, each benchmark counted once).
    gdpo = rows.loc[(1.0, "plain", "gdpo")]
    assert gdpo["mean"] == 21.5 and gdpo["n_seeds"] == 2
    assert gdpo["high"] - gdpo["mean"] == pytest.approx(12.706205 * np.std([21, 22], ddof=1) / math.sqrt(2))
    assert rows.loc[(1.0, "conditioned", "grpo")]["mean"] == 11.5
    single = rows.loc[(0.5, "plain", "grpo")]
    assert single["mean"] == 11.0 and math.isnan(single["low"])  # one seed: no interval
    assert len(table) == 6  # 3 (weight, variant) pairs × 2 methods; base is not drawn


def test_divergence_is_detected_per_seed():
    n = 100
    step = np.arange(1, n + 1)
    falling = np.where(step < 70, 0.3 + 0.3 * step / 70, 0.6 - 0.5 * (step - 70) / 30)
    growing = np.where(step < 70, 30.0, 30.0 + 50.0 * (step - 70) / 30)
    rows = [{"task": "m", "method": "grpo", "seed": 0, "step": s, CORRECTNESS: c, MAX_LENGTH: L}
            for s, c, L in zip(step, falling, growing)]
    rows += [{"task": "m", "method": "grpo", "seed": 1, "step": s, CORRECTNESS: 0.5, MAX_LENGTH: 30.0} for s in step]
    found = divergence_steps(pd.DataFrame(rows), "m").set_index("seed")["divergence_step"]
    assert found[0] == detect_divergence(step, falling, growing) and 60 <= found[0] <= 75
    assert math.isnan(found[1])
    # The shortest run on which the rule can fire is MIN_STEPS_FOR_DIVERGENCE points long.
    shortest = curves.MIN_STEPS_FOR_DIVERGENCE
    assert detect_divergence(range(shortest - 1), [1.0] + [0.0] * (shortest - 2), [1.0] + [9.0] * (shortest - 2)) is None
    assert detect_divergence(range(shortest), [1.0] + [0.0] * (shortest - 1), [1.0] + [9.0] * (shortest - 1)) == 0


# ------------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("call, message", [
    # Unknown task: names it, the CSV and the tasks present.
    (lambda out: figure4_tool_calling_curves(make_steps(), "nope", out, "mini"),
     r"steps\.csv has no rows for task 'nope' \(tasks present: t\)"),
    # A metric the runs never logged (no column).
    (lambda out: figure4_tool_calling_curves(make_steps(metrics=(CORRECTNESS,)), "t", out, "mini"),
     r"steps\.csv has no metric column 'rewards/format/mean'"),
    # A column that exists but is empty for this task.
    (lambda out: figure7_conditioned_curves(make_steps().assign(**{LENGTH_CONDITIONED: np.nan}), "t", out, "m"),
     r"steps\.csv has no values of metric 'rewards/length_conditioned/mean' for task 't'"),
    # Fig. 8 needs GDPO w/o batch norm.
    (lambda out: figure8_batch_step_ablation(make_steps(), "t", out, "mini"),
     r"steps\.csv has no rows for method 'gdpo_nobn' of task 't' \(methods present: grpo, gdpo\)"),
    # A method asked for explicitly.
    (lambda out: figure5_math_curves(make_steps(), "t", out, "mini", methods=["grpo_nostd"]),
     r"no rows for method 'grpo_nostd'"),
    # Fig. 6: a task missing from eval.csv.
    (lambda out: figure6_weight_sweep(make_evals(), {1.0: {"plain": "w9", "conditioned": None}}, out, "mini"),
     r"eval\.csv has no rows for task 'w9'"),
    # Fig. 6: a method missing from a task.
    (lambda out: figure6_weight_sweep(make_evals().query("method != 'gdpo'"), {1.0: {"plain": "w1"}}, out, "m"),
     r"eval\.csv has no rows for method 'gdpo' of task 'w1'"),
    # Fig. 6: a family without the accuracy metric.
    (lambda out: figure6_weight_sweep(make_evals().query("metric != 'acc'"), {1.0: {"plain": "w1"}}, out, "m"),
     r"eval\.csv has no values of metric 'acc' for method 'grpo' of task 'w1'"),
    # Fig. 6: a malformed mapping.
    (lambda out: figure6_weight_sweep(make_evals(), {1.0: {"plan": "w1"}}, out, "mini"),
     r"must be a dict with keys 'plain' and 'conditioned'"),
])
def test_missing_inputs_raise_naming_what_and_where(tmp_path, call, message):
    with pytest.raises(ValueError, match=message):
        call(tmp_path / "fig.png")
    assert not (tmp_path / "fig.png").exists()


# ------------------------------------------------------------------------------------------------ figures


def test_figure4_draws_the_median_of_each_method(tmp_path, captured):
    steps = make_steps(methods=("grpo", "grpo_nostd", "gdpo"))
    assert_figure_files(figure4_tool_calling_curves(steps, "t", tmp_path / "fig4.png", "mini"))
    correctness_panel = captured[0]["lines"][0]
    expected = median_iqr(steps, "t", CORRECTNESS)
    for (x, y), method in zip(correctness_panel, ["grpo", "grpo_nostd", "gdpo"]):  # the paper's order
        line = expected[expected["method"] == method]
        assert list(x) == list(line["step"]) and list(y) == pytest.approx(list(line["median"]))
    # Seeds 0, 1, 2 → the median is seed 1's value: offset + 0.1 + 0.01·step.
    assert list(correctness_panel[2][1]) == pytest.approx([2.1 + 0.01 * s for s in range(1, 7)])
    assert "scale mini · 3 seeds" in captured[0]["texts"][-1]


def test_figure5_marks_divergence_or_says_none(tmp_path, captured):
    n = 60
    rows = []
    for method in ("grpo", "gdpo"):
        for seed in (0, 1):
            for step in range(1, n + 1):
                collapse = method == "grpo" and seed == 0 and step > 40
                rows.append({"task": "m", "method": method, "seed": seed, "step": step,
                             CORRECTNESS: 0.2 + 0.01 * step - (0.03 * (step - 40) if collapse else 0.0),
                             LENGTH: 0.8, MAX_LENGTH: 50.0 + (10.0 * (step - 40) if collapse else 0.0)})
    steps = pd.DataFrame(rows)
    step = divergence_steps(steps, "m").dropna()["divergence_step"].tolist()
    assert len(step) == 1
    assert_figure_files(figure5_math_curves(steps, "m", tmp_path / "fig5.png", "mini"))
    texts = captured[0]["texts"]
    assert f"GRPO diverges in 1/2 seeds (seed 0 @ {int(step[0])})" in texts
    assert "GDPO: no divergence (0/2 seeds)" in texts
    vertical = [x for x, _ in captured[0]["lines"][2] if len(set(x)) == 1 and len(x) == 2]
    assert [x[0] for x in vertical] == step  # one dashed line in the max-length panel, at that step


def test_figure5_says_when_runs_are_too_short_to_judge(tmp_path, captured):
    steps = make_steps(n_steps=4)  # detect_divergence needs at least 5 points
    assert set(divergence_steps(steps, "t")["n_steps"]) == {4}
    figure5_math_curves(steps, "t", tmp_path / "fig5.png", "mini")
    assert ("GDPO: no divergence found; 3/3 seeds have fewer than 5 steps, too short to judge"
            in captured[0]["texts"])


def test_figure7_uses_the_conditioned_length_reward(tmp_path, captured):
    steps = make_steps(n_steps=4)
    steps[LENGTH] = np.nan  # a conditioned run logs no plain length reward
    assert_figure_files(figure7_conditioned_curves(steps, "t", tmp_path / "fig7.png", "mini"))
    expected = median_iqr(steps, "t", LENGTH_CONDITIONED)
    assert list(captured[0]["lines"][1][0][1]) == pytest.approx(list(expected.loc[expected["method"] == "grpo",
                                                                                   "median"]))


def test_figure6_draws_every_variant(tmp_path, captured):
    tasks = {1.0: {"plain": "w1", "conditioned": "w1c"}, 0.5: {"plain": "w05", "conditioned": None}}
    assert_figure_files(figure6_weight_sweep(make_evals(), tasks, tmp_path / "fig6.png", "mini"))
    assert {"GRPO · length", "GDPO · length", "GRPO · conditioned length",
            "GDPO · conditioned length"} <= set(captured[0]["texts"])
    assert "scale mini · 1–2 seeds per point" in captured[0]["texts"][-1]


def _sweep_evals(values_by_point: dict) -> pd.DataFrame:
    """One benchmark; ``{(task, method): [acc per seed]}``, Exceed 100 − acc."""
    return pd.DataFrame([{"task": task, "method": method, "seed": seed, "benchmark": "b1", "metric": metric,
                          "value": value if metric == "acc" else 100.0 - value, "n_items": 200, "note": ""}
                         for (task, method), values in values_by_point.items() for seed, value in enumerate(values)
                         for metric in ("acc", "exceed")])


def test_figure6_draws_the_seeds_of_a_point_with_fewer_than_3_and_clips_bars_to_0_100(tmp_path, monkeypatch):
    """With 2 seeds a 95 % t-interval is 12.7 × their half-difference: 1 % and 60 % would draw −345 % to +406 %.
    Such a point shows its seeds instead; a 3-seed point keeps its bar, clipped to what a percentage can take."""
    from matplotlib.container import ErrorbarContainer

    figures = []
    monkeypatch.setattr(curves, "save_figure", lambda figure, out: figures.append(figure) or [])
    evals = _sweep_evals({("w1", "grpo"): [1.0, 60.0], ("w1", "gdpo"): [97.0, 99.0, 70.0],
                          ("w05", "grpo"): [40.0], ("w05", "gdpo"): [30.0, 50.0, 40.0]})
    figure6_weight_sweep(evals, {1.0: {"plain": "w1"}, 0.5: {"plain": "w05"}}, tmp_path / "fig6.png", "mini")
    [figure] = figures
    accuracy, exceed = figure.axes
    for axis in (accuracy, exceed):
        bars = [segment for container in axis.containers if isinstance(container, ErrorbarContainer)
                for collection in container[2] for segment in collection.get_segments()]
        # Bars only at the two 3-seed points (GDPO at both weights), each inside 0–100.
        assert len(bars) == 2
        assert all(0.0 <= y <= 100.0 for segment in bars for _, y in segment)
        # GDPO at weight 1 (97, 99, 70 %): its accuracy bar is clipped at 100 %, its Exceed bar at 0 %.
        assert (100.0 if axis is accuracy else 0.0) in {y for segment in bars for _, y in segment}
        # The GRPO points (2 seeds and 1) show their seeds as markers, not bars.
        drawn = sorted(round(float(y), 6) for line in axis.get_lines() if line.get_marker() == "x"
                       for y in line.get_ydata())
        expected = [1.0, 60.0, 40.0] if axis is accuracy else [99.0, 40.0, 60.0]
        assert drawn == sorted(expected)
    assert "clipped to the metric's range 0–100 %" in figure._suptitle.get_text()
    assert "fewer than 3 seeds" in figure._suptitle.get_text()


def test_figure8_draws_every_seed_and_the_median(tmp_path, captured):
    steps = make_steps(methods=("gdpo", "gdpo_nobn", "grpo"), seeds=(0, 1, 2))
    assert_figure_files(figure8_batch_step_ablation(steps, "t", tmp_path / "fig8.png", "mini"))
    lines = captured[0]["lines"][0]
    assert len(lines) == 2 * (3 + 1)  # per method: 3 seeds + the median; GRPO is not drawn
    assert list(lines[3][1]) == pytest.approx([0.1 + 0.01 * s for s in range(1, 7)])  # GDPO median = seed 1


@pytest.mark.parametrize("draw", [
    # One seed and NaN steps: no band, still a figure.
    lambda steps, out: figure4_tool_calling_curves(steps, "t", out, "smoke"),
    lambda steps, out: figure5_math_curves(steps, "t", out, "smoke"),
    lambda steps, out: figure8_batch_step_ablation(steps, "t", out, "smoke"),
])
def test_single_seed_with_nan_steps_still_draws(tmp_path, draw):
    steps = make_steps(methods=("gdpo", "gdpo_nobn", "grpo"), seeds=(0,), n_steps=3)
    steps.loc[1, CORRECTNESS] = np.nan
    steps = pd.concat([steps, steps.iloc[[0]].assign(step=np.nan)], ignore_index=True)
    assert_figure_files(draw(steps, tmp_path / "fig.png"))
