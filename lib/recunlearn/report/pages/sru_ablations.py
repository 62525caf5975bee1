"""SRU ablations (no paper ablation known): random vs similarity partition under each aggregation
(average, attention, attention with centroids), and the number of shards K; the chapter's claims on
them."""

from __future__ import annotations

import pandas as pd

from ..plots import sweep_lines
from ..sru import ablation_claims, ablation_points, partition_table, shard_count_table
from . import Page
from .cure4rec_runs import notices, runs_notice, runs_table
from .sru_runs import collect_page, computed_text, sweep_notice

PAGE = "sru/ablations"


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The ablation page at notebook parameters ``params`` (``runs`` replaces the collected runs)."""
    grid, runs, pending, command = collect_page(PAGE, params, runs)
    total = len(grid.runs())
    points = ablation_points(runs)
    sweep = points[(points["method"] == "sru") & (points["shards"] == "similarity")] if len(points) else points
    return Page(
        PAGE, grid, runs, pending, None, ablation_claims(runs, grid.n_shards),
        tables={"runs": runs_table(total, pending), "partitions": partition_table(runs, grid.n_shards),
                "shard_counts": shard_count_table(runs)},
        figures={"figure": lambda: sweep_lines(sweep, "n_shards", ["ndcg@10", "unlearn_seconds", "hit@10"], "model",
                                               "SRU against the number of shards K")},
        notices=notices(runs=runs_notice("The runs of this page", total, pending, command),
                        partitions=runs_notice("Partition × aggregation", total, pending, command),
                        shard_counts=runs_notice("The shard-count sweep", total, pending, command),
                        figure=sweep_notice("The shard-count curves", sweep, "n_shards", total, pending, command)),
        checks=[computed_text(runs, total)], claims_command=command)
