"""BFCL v3's summary scores from per-category accuracies (standard library only).

Aggregation, as ``generate_leaderboard_csv`` in ``bfcl_eval.eval_checker.eval_runner_helper`` does for v3:

- ``non_live_simple`` = unweighted mean of simple, java, javascript;
- ``non_live_ast`` = unweighted mean of non_live_simple, multiple, parallel, parallel_multiple
  (BFCL's "Non-Live AST Acc" column of data_overall.csv);
- ``non_live`` = unweighted mean of those four and irrelevance (BFCL's "Non_Live Overall Acc");
- ``live_ast`` = mean of the four live AST categories weighted by their item counts in BFCL;
- ``live`` = the same weighted mean over all six live categories (BFCL's "Live Acc" / "Live Overall Acc");
- ``avg`` = unweighted mean of live, non_live and multi_turn (BFCL's "Overall Acc"), with multi_turn
  counted as 0 because it is not run, which is also how BFCL counts a category it has no result for;
  ``avg_single_turn`` = mean of live and non_live.

Weights are BFCL's full category sizes (``category_size`` of the rows), not the counts of the scored
subset, so a subsample keeps BFCL's weighting. Unlike BFCL (which counts a missing category as 0),
categories absent from the scored items are left out of the means and listed in ``missing_categories``.
"""

from __future__ import annotations

#: Items of each single-turn category of BFCL v3 as ``bfcl-eval==2025.6.8`` ships them (lines of
#: ``BFCL_v3_<category>.json``; ``category_size`` of the split's rows). With the 800 multi-turn items they make the
#: 4,441 of the paper's BFCL-v3.
BFCL_V3_CATEGORY_SIZES = {
    "simple": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "irrelevance": 240, "java": 100,
    "javascript": 50, "live_simple": 258, "live_multiple": 1053, "live_parallel": 16, "live_parallel_multiple": 24,
    "live_irrelevance": 882, "live_relevance": 18,
}
#: BFCL v3's multi-turn items (not run here: they need BFCL's executable environments).
BFCL_V3_MULTI_TURN_ITEMS = 800
#: Share of each category the workflow's split holds out for evaluation (``bfcl_split``'s default).
DEFAULT_EVAL_FRACTION = 0.2


def held_out_size(items: int, eval_fraction: float) -> int:
    """Items of a category of ``items`` that the split holds out: ``round(items · eval_fraction)``, at least 1
    and at most ``items − 1`` when the category has 2 or more (``bfcl_split.split_category``)."""
    held_out = round(items * eval_fraction)
    return min(max(held_out, 1), items - 1) if items >= 2 else held_out


def held_out_items(eval_fraction: float = DEFAULT_EVAL_FRACTION) -> int:
    """Items of the held-out split the workflow evaluates (every single-turn category): 729 at 20 %."""
    return sum(held_out_size(items, eval_fraction) for items in BFCL_V3_CATEGORY_SIZES.values())


LIVE_CATEGORIES = (
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
NON_LIVE_SIMPLE = ("simple", "java", "javascript")
NON_LIVE_AST_PARTS = ("multiple", "parallel", "parallel_multiple")
LIVE_AST = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _weighted(categories: tuple[str, ...], accuracy: dict, sizes: dict) -> float | None:
    present = [c for c in categories if c in accuracy]
    if not present:
        return None
    return sum(accuracy[c] * sizes[c] for c in present) / sum(sizes[c] for c in present)


def aggregate(accuracy: dict[str, float], sizes: dict[str, int]) -> dict[str, float | None]:
    """BFCL v3's summary scores from per-category accuracies (percent); see the module docstring."""
    simple = _mean([accuracy[c] for c in NON_LIVE_SIMPLE if c in accuracy])
    ast_parts = [v for v in [simple] + [accuracy.get(c) for c in NON_LIVE_AST_PARTS] if v is not None]
    non_live_ast = _mean(ast_parts)
    non_live = _mean(ast_parts + ([accuracy["irrelevance"]] if "irrelevance" in accuracy else []))
    live = _weighted(LIVE_CATEGORIES, accuracy, sizes)
    multi_turn_not_run = 0.0
    both = [v for v in (live, non_live) if v is not None]
    return {
        "non_live_simple": simple,
        "non_live_ast": non_live_ast,
        "non_live": non_live,
        "live_ast": _weighted(LIVE_AST, accuracy, sizes),
        "live": live,
        "avg": (live + non_live + multi_turn_not_run) / 3 if len(both) == 2 else None,
        "avg_single_turn": _mean(both) if len(both) == 2 else None,
    }
