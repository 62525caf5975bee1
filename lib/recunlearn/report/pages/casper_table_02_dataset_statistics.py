"""CASPER Table 2: users, items and interactions of the four datasets, before and after the users >= 10
filter, beside the paper's table."""

from __future__ import annotations

import pandas as pd

from ...data.sequences import load_stream
from ...experiments.casper import StatisticsParams, dataset_statistics
from ..casper import compare_statistics, statistics_verdicts
from ..paper import paper_table
from ..plots import degree_ccdf
from . import Page, validated
from .casper_runs import printed

PAGE = "casper/table-02-dataset-statistics"
GRID = StatisticsParams  # the parameters of this page (its notebook's), validated before any compute
CHECKED = ["label", "raw_users", "raw_items", "raw_interactions", "users", "items", "interactions", "train", "test"]


def build(ours: pd.DataFrame | None = None, **params) -> Page:
    """The Table 2 page at notebook parameters ``params``: our counts (``ours``, by default computed from
    the dataset files), the comparison with the paper, one verdict per dataset and the glued counts."""
    grid = validated(GRID, params)
    ours = dataset_statistics(grid.datasets) if ours is None else ours
    paper = paper_table("casper-table-02")
    paper = paper[paper["dataset"].isin(grid.datasets)]
    comparison = compare_statistics(ours, paper)
    verdicts = statistics_verdicts(ours, paper)

    values = {f"verdict_{name}": result for name, result in verdicts.items()}
    for row in ours.itertuples():
        for column in ("users", "items", "interactions", "raw_interactions"):
            values[f"{row.dataset}_{column}"] = f"{getattr(row, column):,}"

    def user_degrees():
        streams = {label: load_stream(name) for name, label in zip(ours["dataset"], ours["label"])}
        tables = {label: pd.DataFrame({"user": s.user, "item": s.item}) for label, s in streams.items()}
        degree_ccdf(tables, "user", "Users: interactions per user (users ≥ 10)")

    return Page(
        PAGE, grid, comparison=comparison, parts=verdicts,
        tables={"comparison": comparison.pivot_table(index="dataset", columns="metric", values=["paper", "ours"],
                                                     dropna=False),
                "verdicts": pd.DataFrame({"dataset": list(verdicts), "verdict": list(verdicts.values())})},
        figures={"user_degrees": user_degrees},
        values=values, checks=[printed(ours[CHECKED])])
