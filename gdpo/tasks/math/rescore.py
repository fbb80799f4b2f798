"""Score a math evaluation's committed completion sample again with the current reward.

An evaluation keeps a sample of its items with every response (``completions_sample.jsonl``, lm-eval's
logged samples: ``doc``, ``resps``, and ``acc``, the pass@1 the reward of that run's code gave). Reading the
responses again with today's :func:`gdpo.tasks.math.rewards.is_correct` shows what a change of the reward
would have said of the same policy: e.g. the cpu-evidence math runs, whose policies learned to restate the
question ("10 - 5" for "Calculate 10 - 5."), which the reward of their code paid. Each item is graded with
the verifier its generator has today (:data:`gdpo.tasks.math.data.GENERATORS`), else the one it was logged
with. This is a report on the sample, not a verdict: the ledger reads the evaluations as they were made.

    python -m gdpo.tasks.math.rescore paper_figures/cpu-evidence/evidence/runs/math
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from gdpo.files import SAMPLE_FILE, check_committed_file
from gdpo.tasks.math.data import GENERATORS
from gdpo.tasks.math.diagnostics import has_final_answer
from gdpo.tasks.math.rewards import is_correct

COLUMNS = ["method", "seed", "source", "responses", "recorded_acc", "current_acc", "current_answers"]


def rescore_sample(path: str | Path) -> pd.DataFrame:
    """Per generator (``source``) of one run's sample: responses, the pass@1 recorded at evaluation and the
    pass@1 and share with an answer under the current reward (percent). The run is named by the path
    ``…/<method>/seed<N>/completions_sample.jsonl``.

    Raises:
        ValueError: a line is not a logged lm-eval sample of the math family (names the line and the fix).
        gdpo.files.DigestMismatch: the committed sample differs from its run's manifest.
    """
    path = Path(path)
    check_committed_file(path.parent, path.name)  # committed evidence: its recorded digest first
    method, seed = path.parent.parent.name, int(path.parent.name.removeprefix("seed"))
    totals: dict[str, list[float]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        sample = json.loads(line)
        if not {"doc", "resps", "acc"} <= sample.keys() or "answer" not in sample["doc"]:
            raise ValueError(f"{path}, line {number}: not a logged math sample (needs doc.answer, resps and acc); "
                             "pass the completions_sample.jsonl of a math evaluation.")
        doc = sample["doc"]
        source = doc.get("source", "")
        verifier = GENERATORS[source].verifier if source in GENERATORS else doc.get("verifier") or "math_verify"
        responses = [text for request in sample["resps"] for text in request]
        total = totals.setdefault(source, [0, 0.0, 0, 0])
        total[0] += len(responses)
        total[1] += float(sample["acc"]) * len(responses)
        total[2] += sum(is_correct(text, str(doc["answer"]), verifier, doc.get("verifier_data") or "")
                        for text in responses)
        total[3] += sum(has_final_answer(text, verifier) for text in responses)
    return pd.DataFrame([{"method": method, "seed": seed, "source": source, "responses": n,
                          "recorded_acc": 100 * recorded / n, "current_acc": 100 * current / n,
                          "current_answers": 100 * answered / n}
                         for source, (n, recorded, current, answered) in sorted(totals.items())], columns=COLUMNS)


def rescore_runs(root: str | Path) -> pd.DataFrame:
    """:func:`rescore_sample` of every ``<method>/seed<N>/completions_sample.jsonl`` under ``root``."""
    paths = sorted(Path(root).glob(f"*/seed*/{SAMPLE_FILE}"))
    if not paths:
        raise ValueError(f"{root}: no <method>/seed<N>/{SAMPLE_FILE} below it; pass a math task's run directory "
                         "(e.g. paper_figures/cpu-evidence/evidence/runs/math).")
    return pd.concat([rescore_sample(path) for path in paths], ignore_index=True)


def summary_by_method(table: pd.DataFrame) -> pd.DataFrame:
    """Per method and generator: seeds, responses, and the response-weighted percentages."""
    weighted = table.assign(**{c: table[c] * table["responses"] for c in COLUMNS[4:]})
    grouped = weighted.groupby(["method", "source"])
    out = grouped[["responses", *COLUMNS[4:]]].sum()
    for column in COLUMNS[4:]:
        out[column] = (out[column] / out["responses"]).round(1)
    out.insert(0, "seeds", grouped["seed"].nunique())
    return out.reset_index()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="a math task's run directory: <method>/seed<N>/completions_sample.jsonl")
    parser.add_argument("--per-seed", action="store_true", help="one row per run and generator")
    args = parser.parse_args(argv)
    table = rescore_runs(args.root)
    print((table.round(1) if args.per_seed else summary_by_method(table)).to_markdown(index=False))


if __name__ == "__main__":
    main()
