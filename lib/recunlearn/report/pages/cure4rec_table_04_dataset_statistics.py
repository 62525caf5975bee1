"""CURE4Rec Table 4: users, items, interactions and sparsity of ML-100K, ML-1M and ADM from the raw
files and from the authors' released files, beside the paper's table."""

from __future__ import annotations

import pandas as pd

from ...data import load_released_tables
from ...experiments.cure4rec import StatisticsParams, dataset_statistics
from ..compare import verdict
from ..cure4rec import STATISTICS, compare_statistics
from ..names import display_name, format_number
from ..paper import paper_table
from ..plots import degree_ccdf
from . import Notice, Page, validated

PAGE = "cure4rec/table-04-dataset-statistics"
GRID = StatisticsParams  # the parameters of this page (its notebook's), validated before any compute


SOURCE_LABELS = {"raw, 5-core": "ours: raw file, 5-core filtered", "released": "ours: authors' released file"}
"""What each row of ours was computed from; the paper's value beside it is the same on both rows."""


def side_by_side(comparison: pd.DataFrame) -> pd.DataFrame:
    """The paper's value and ours next to each other for every statistic, one row per (dataset,
    source of ours, :data:`SOURCE_LABELS`); sparsity to the paper's 5 decimals (a table's default of 4
    would hide 0.92195)."""
    comparison = comparison.assign(source=comparison["source"].map(lambda s: SOURCE_LABELS.get(s, s)))
    table = comparison.pivot_table(index=["dataset", "source"], columns="metric", values=["paper", "ours"],
                                   dropna=False).swaplevel(axis=1)
    table = table.reindex(columns=[(m, side) for m in STATISTICS for side in ("paper", "ours")])
    for column in [c for c in table.columns if c[0] == "sparsity"]:
        table[column] = table[column].map(lambda v: format_number(v, 5))
    return table


def build(ours: pd.DataFrame | None = None, **params) -> Page:
    """The Table 4 page at notebook parameters ``params``: our statistics (``ours``, by default computed
    from the dataset files), the comparison with the paper, one verdict per dataset (against the
    released files every experiment uses) and the glued released counts."""
    grid = validated(GRID, params)
    ours = dataset_statistics(grid.datasets) if ours is None else ours
    paper = paper_table("cure4rec-table-04")
    comparison = compare_statistics(ours, paper[paper["dataset"].isin(grid.datasets)])
    released = comparison[comparison["source"] == "released"]
    per_dataset = {d: verdict(released[released["dataset"] == d]) for d in grid.datasets}

    values = {f"verdict_{name}": result for name, result in per_dataset.items()}
    for row in ours[ours["source"] == "released"].itertuples():
        for column in ("users", "items", "interactions"):
            values[f"released_{row.dataset}_{column}"] = f"{getattr(row, column):,}"

    notes = ours[ours["note"] != ""]
    unavailable = Notice("Rows not computed here", "; ".join(
        f"{display_name(row.dataset)} ({row.source}): {row.note}" for row in notes.itertuples()),
        partial=True) if len(notes) else None

    def item_degrees():
        tables = {name: load_released_tables(name)["ratings"] for name in grid.datasets}
        degree_ccdf(tables, "item", "Items: interactions per item (released files)")

    return Page(
        PAGE, grid, None, None, released, None,
        tables={"comparison": side_by_side(comparison),
                "verdicts": pd.DataFrame({"dataset": list(per_dataset), "verdict": list(per_dataset.values())})},
        figures={"item_degrees": item_degrees},
        values=values,
        notices=dict(comparison=unavailable),
        checks=[ours[["dataset", "source", "users", "items", "interactions"]].to_string(index=False),
                ours[["dataset", "source", "sparsity"]].round(5).to_string(index=False)])
