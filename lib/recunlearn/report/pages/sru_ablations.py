"""SRU ablations (no paper ablation known): random vs similarity partition under each aggregation
(average, attention, attention with centroids), and the number of shards K; the chapter's claims on
them."""

from __future__ import annotations

import pandas as pd

from ..claims import with_pending_rows
from ..plots import sweep_lines
from ..sru import SruAblationGrid, ablation_claims, ablation_points, partition_table, shard_count_table
from . import Notice, Page, pending_runs_notice, runs_table
from .sru_runs import collect_page, computed_text, sweep_notice

PAGE = "sru/ablations"
GRID = SruAblationGrid  # the parameters of this page (its notebook's), validated before any compute


def ablation_items(runs: pd.DataFrame, n_shards: int, total: int, pending: pd.DataFrame,
                   command: str | None) -> tuple[dict, dict, dict[str, Notice | None]]:
    """``(tables, figures, notices)`` of the ablation on a page's ``runs`` (``total`` runs listed, ``pending``
    without a record): NDCG@10 of every aggregation on random and similarity shards at ``n_shards``, SRU
    by number of shards (table and curves). Shared by this page and the overview at its scale."""
    points = ablation_points(runs)
    sweep = points[(points["method"] == "sru") & (points["shards"] == "similarity")] if len(points) else points
    tables = {"partitions": partition_table(runs, n_shards), "shard_counts": shard_count_table(runs)}
    figures = {"shard_count_figure": lambda: sweep_lines(sweep, "n_shards", ["ndcg@10", "unlearn_cpu_seconds", "hit@10"],
                                                         "model", "SRU against the number of shards K")}
    shown = {"partitions": pending_runs_notice("Partition × aggregation", total, pending, command),
             "shard_counts": pending_runs_notice("The shard-count sweep", total, pending, command),
             "shard_count_figure": sweep_notice("The shard-count curves", sweep, "n_shards", total, pending, command)}
    return tables, figures, shown


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The ablation page at notebook parameters ``params`` (``runs`` replaces the collected runs)."""
    grid, runs, pending, command = collect_page(PAGE, GRID, params, runs)
    total = len(grid.runs())
    tables, figures, shown = ablation_items(runs, grid.n_shards, total, pending, command)
    return Page(
        PAGE, grid, runs, pending, None, ablation_claims(with_pending_rows(runs), grid.n_shards),
        tables={"runs": runs_table(total, pending), **tables}, figures=figures,
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command), **shown),
        checks=[computed_text(runs, total)], claims_command=command)
