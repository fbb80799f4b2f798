"""Tables of the bench for the workflow: the summary with CIs and the per-seed evidence of the ledger."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from gdpo.sim.summary import per_seed_outcomes, summarise

_KEYS = ["study", "variant", "method", "reward", "seed"]


def per_seed_table(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`gdpo.sim.summary.per_seed_outcomes` plus ``initial_success`` (the success at step 0)."""
    initial = frame[frame["step"] == 0].groupby(_KEYS)["success"].mean().rename("initial_success")
    return per_seed_outcomes(frame).join(initial, on=_KEYS)


def write_summaries(study_csvs: Iterable[str | Path], summary_csv: str | Path, per_seed_csv: str | Path) -> None:
    """Read the studies' tidy CSVs; write the summary (means, 95 % CIs) and the per-seed table."""
    frame = pd.concat([pd.read_csv(path) for path in study_csvs], ignore_index=True)
    Path(summary_csv).parent.mkdir(parents=True, exist_ok=True)
    summarise(frame).to_csv(summary_csv, index=False)
    per_seed_table(frame).to_csv(per_seed_csv, index=False)
