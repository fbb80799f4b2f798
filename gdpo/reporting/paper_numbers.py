"""Every number the paper reports in its result tables (PAPER.md §4: Tables 1/2, 3, 4 and 5), as data.

Transcribed by hand from PAPER.md; ``tests/test_tables.py`` parses PAPER.md and compares, so a typo in
either place fails a test. :func:`paper_numbers` returns them as tidy records::

    table  model          setting  method      benchmark  metric   value (percent)
    "1"    "Qwen2.5-1.5B" ""       "gdpo"      "BFCL-v3"  "format" 80.66

- ``table``: "1" (GRPO vs GDPO on BFCL-v3), "2" (the GRPO w/o std ablation row), "3", "4", "5".
- ``model``: the paper's model label (:data:`MODELS`).
- ``setting``: "" except Table 5, whose trained columns are "2obj" (pass rate + conditioned length) or
  "3obj" (+ bug); its base column has setting "".
- ``method``: our method names (``base`` = the untrained model, ``grpo``, ``grpo_nostd``, ``gdpo``).
- ``benchmark``: the paper's benchmark name (:data:`PAPER_BENCHMARKS`); ``metric``: our metric names
  (tool calling ``live``, ``multi_turn``, ``non_live``, ``avg``, ``format``; math ``acc``, ``exceed``;
  code ``pass``, ``exceed``, ``bug``).

Numbers the paper does not give (Taco's exceed and bug ratio) have no record.
"""

from __future__ import annotations

import pandas as pd

from gdpo.methods import Method

PAPER_COLUMNS = ["table", "model", "setting", "method", "benchmark", "metric", "value"]

QWEN25_1_5B = "Qwen2.5-1.5B"
QWEN25_3B = "Qwen2.5-3B"
R1_1_5B = "R1-1.5B"
R1_7B = "R1-7B"
QWEN3_4B = "Qwen3-4B"
#: The paper's model labels and the checkpoints they name.
MODELS = {
    QWEN25_1_5B: "Qwen2.5-1.5B-Instruct",
    QWEN25_3B: "Qwen2.5-3B-Instruct",
    R1_1_5B: "DeepSeek-R1-Distill-Qwen-1.5B",
    R1_7B: "DeepSeek-R1-Distill-Qwen-7B",
    QWEN3_4B: "Qwen3-4B-Instruct-2507",
}

#: The paper's benchmarks per family, in the paper's order, keyed by our benchmark name (the ``benchmark``
#: column of eval.csv) of the same data set. A benchmark not listed here (reasoning_gym, procedural,
#: humaneval, ...) has no counterpart in the paper.
PAPER_BENCHMARKS = {
    "tool_calling": {"bfcl_v3": "BFCL-v3"},
    "math": {"math500": "MATH", "aime24": "AIME", "amc": "AMC", "minerva": "Minerva",
             "olympiadbench": "Olympiad"},
    "code": {"apps": "Apps", "codecontests": "CodeContests", "codeforces": "Codeforces", "taco": "Taco"},
}
TOOL_METRICS = ("live", "multi_turn", "non_live", "avg", "format")
MATH_METRICS = ("acc", "exceed")
CODE_METRICS = ("pass", "exceed", "bug")

# Table 1/2: BFCL-v3, averages of 5 runs; values in TOOL_METRICS order (Live, Multi, Non-live, Avg, Format).
_TABLE_1_2 = {
    (QWEN25_1_5B, "base"): ("1", (37.89, 0.12, 15.63, 17.88, 4.74)),
    (QWEN25_1_5B, Method.GRPO): ("1", (50.63, 2.04, 37.87, 30.18, 76.33)),
    (QWEN25_1_5B, Method.GRPO_NOSTD): ("2", (47.19, 1.47, 39.11, 29.26, 0.00)),
    (QWEN25_1_5B, Method.GDPO): ("1", (55.36, 2.50, 40.58, 32.81, 80.66)),
    (QWEN25_3B, "base"): ("1", (63.57, 1.38, 30.75, 31.90, 58.37)),
    (QWEN25_3B, Method.GRPO): ("1", (69.23, 3.14, 45.24, 39.20, 81.64)),
    (QWEN25_3B, Method.GDPO): ("1", (71.22, 4.59, 46.79, 40.87, 82.23)),
}

# Table 3: (acc, exceed) of base, GRPO, GDPO per benchmark and model.
_TABLE_3 = {
    "MATH": {
        R1_1_5B: ((84.3, 35.0), (83.6, 1.5), (86.2, 0.8)),
        R1_7B: ((93.6, 26.0), (94.1, 0.5), (93.9, 0.1)),
        QWEN3_4B: ((94.6, 11.3), (93.9, 0.8), (93.9, 0.1)),
    },
    "AIME": {
        R1_1_5B: ((29.8, 91.5), (23.1, 10.8), (29.4, 6.5)),
        R1_7B: ((55.4, 85.6), (50.2, 2.1), (53.1, 0.2)),
        QWEN3_4B: ((63.7, 71.3), (54.6, 2.5), (56.9, 0.1)),
    },
    "AMC": {
        R1_1_5B: ((62.0, 67.5), (64.5, 3.2), (69.0, 2.3)),
        R1_7B: ((82.9, 57.2), (83.8, 0.6), (84.0, 0.3)),
        QWEN3_4B: ((84.5, 33.9), (85.2, 0.7), (84.3, 0.1)),
    },
    "Minerva": {
        R1_1_5B: ((38.4, 51.4), (43.5, 1.7), (44.0, 0.3)),
        R1_7B: ((49.8, 41.8), (53.2, 0.2), (53.8, 0.1)),
        QWEN3_4B: ((50.7, 9.1), (52.4, 0.3), (51.9, 0.1)),
    },
    "Olympiad": {
        R1_1_5B: ((44.1, 70.1), (44.3, 2.6), (46.6, 1.9)),
        R1_7B: ((58.2, 60.6), (60.2, 1.1), (59.7, 0.4)),
        QWEN3_4B: ((65.7, 41.3), (66.8, 1.6), (67.5, 1.0)),
    },
}

# Table 4: R1-7B, length reward conditioned on correctness; (acc, exceed) of GRPO and GDPO.
_TABLE_4 = {
    "MATH": ((93.2, 2.7), (93.9, 1.4)),
    "AIME": ((53.3, 29.2), (57.7, 12.3)),
    "AMC": ((82.9, 8.6), (85.9, 3.8)),
    "Minerva": ((53.2, 2.5), (53.4, 1.0)),
    "Olympiad": ((59.1, 10.3), (60.8, 6.2)),
}

# Table 5: R1-7B coding; (pass, exceed, bug) of base, GRPO-2obj, GDPO-2obj, GRPO-3obj, GDPO-3obj.
# Taco: pass only (its exceed and bug ratio are not reliably known).
TABLE_5_COLUMNS = (("", "base"), ("2obj", Method.GRPO), ("2obj", Method.GDPO), ("3obj", Method.GRPO),
                   ("3obj", Method.GDPO))
_TABLE_5 = {
    "Apps": ((28.1, 73.9, 32.9), (67.2, 5.2, 25.0), (68.3, 5.0, 23.5), (68.1, 11.2, 20.3), (67.8, 8.5, 18.8)),
    "CodeContests": (
        (47.3, 83.0, 29.7), (63.2, 14.2, 14.1), (65.8, 14.3, 13.2), (65.6, 19.3, 3.9), (65.6, 15.8, 2.5)
    ),
    "Codeforces": (
        (46.5, 82.8, 27.8), (68.1, 18.1, 7.0), (71.2, 18.4, 5.6), (69.5, 16.9, 2.5), (69.4, 13.6, 1.8)
    ),
    "Taco": ((28.1,), (45.1,), (48.4,), (44.4,), (45.1,)),
}


def _records() -> list[dict]:
    rows = []

    def add(table, model, setting, method, benchmark, metrics, values):
        for metric, value in zip(metrics, values, strict=True):
            record = (table, model, setting, method, benchmark, metric, value)
            rows.append(dict(zip(PAPER_COLUMNS, record, strict=True)))

    for (model, method), (table, values) in _TABLE_1_2.items():
        add(table, model, "", method, "BFCL-v3", TOOL_METRICS, values)
    for benchmark, by_model in _TABLE_3.items():
        for model, cells in by_model.items():
            for method, values in zip(("base", Method.GRPO, Method.GDPO), cells, strict=True):
                add("3", model, "", method, benchmark, MATH_METRICS, values)
    for benchmark, cells in _TABLE_4.items():
        for method, values in zip((Method.GRPO, Method.GDPO), cells, strict=True):
            add("4", R1_7B, "", method, benchmark, MATH_METRICS, values)
    for benchmark, cells in _TABLE_5.items():
        metrics = CODE_METRICS[:1] if benchmark == "Taco" else CODE_METRICS
        for (setting, method), values in zip(TABLE_5_COLUMNS, cells, strict=True):
            add("5", R1_7B, setting, method, benchmark, metrics, values)
    return rows


def paper_numbers() -> pd.DataFrame:
    """Every reported number as tidy records (columns :data:`PAPER_COLUMNS`, ``value`` in percent)."""
    return pd.DataFrame(_records(), columns=PAPER_COLUMNS)


_LOOKUP = {tuple(r[c] for c in PAPER_COLUMNS[:-1]): r["value"] for r in _records()}


def paper_value(
    table: str, model: str, method: str, benchmark: str, metric: str, setting: str = ""
) -> float | None:
    """The paper's number for one cell, or None where the paper gives none (e.g. Taco's exceed)."""
    return _LOOKUP.get((table, model, setting, method, benchmark, metric))
