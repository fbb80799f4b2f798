"""Figure files, for every figure of the suite: a headless matplotlib backend and PNG + PDF output.

Below both the reporting layer's figures and the bench's, so neither imports the other to draw.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers and CI
import matplotlib.pyplot as plt  # noqa: E402


def save_figure(figure: plt.Figure, out_png: str | Path) -> list[Path]:
    """Save ``figure`` as ``out_png`` and as the PDF beside it; return both paths."""
    png = Path(out_png)
    png.parent.mkdir(parents=True, exist_ok=True)
    pdf = png.with_suffix(".pdf")
    figure.savefig(png, dpi=150, bbox_inches="tight")
    figure.savefig(pdf, bbox_inches="tight")
    plt.close(figure)
    return [png, pdf]
