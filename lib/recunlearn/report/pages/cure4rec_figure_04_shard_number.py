"""CURE4Rec Figure 4: utility, unlearning time, A-IGF's distance from Retrain and shardGF of the exact
methods against the number of shards K (WMF, ML-100K), and the paper's trend claims.

Unlearning time is read two ways. The page's grid (``TIMING``, batched by default) retrains the
affected shards together in one process: its time is their total work, which hardly changes with K
when random users touch most shards. SISA's premise is shards retrained in parallel, so the page also
reads the runs with each affected shard trained as a model of its own (the same grid at
``timing="alone"``, without Retrain), whose unlearning time is the slowest affected shard's: the time
with one worker per shard. Each reading is a claim of its own."""

from __future__ import annotations

from ...experiments.cure4rec_exact import ExactCollected
from ..claims import joined_claims
from ..cure4rec import sweep_claims, with_retrain_gap
from ..glance import with_page_runs
from ..plots import sweep_lines
from . import Page
from .cure4rec_runs import (PARALLEL, TOGETHER, collect_sweep, notices, parallel_grid, parallel_reading,  # noqa: F401
                            printed, runs_notice, runs_table)

PAGE = "cure4rec/figure-04-shard-number"
METRICS = ["ndcg_untruncated", "unlearn_seconds", "a_igf_gap_abs", "shard_gf"]
EXPECTED = {"ndcg_untruncated": -1, "unlearn_seconds": -1, "a_igf_gap_abs": +1, "shard_gf": -1}
"""The paper's trends: +1 rises, -1 falls as the number of shards grows."""


def build(collected: ExactCollected | None = None, parallel: ExactCollected | None = None, **params) -> Page:
    """The shard-number page at notebook parameters ``params``: its runs, the exact methods' metrics per
    K (with the parallel reading of unlearning time, :func:`~.cure4rec_runs.parallel_grid`), the figure
    and one trend claim per metric. ``collected`` and ``parallel`` replace the collected runs of the two
    grids."""
    page_runs = collect_sweep(PAGE, params, collected, parallel)
    grid, runs, pending, total, command = (page_runs.grid, page_runs.runs, page_runs.pending, page_runs.total,
                                           page_runs.command)
    sweep = with_retrain_gap(page_runs.collected.runs)
    eu = sweep[sweep["method"] != "retrain"]
    claims = sweep_claims(eu, "n_shards", EXPECTED, "the number of shards")
    claims.loc[claims["id"] == "unlearn_seconds_falls", "claim"] += (
        " (the affected shards retrained together in one process)" if grid.timing == "batched"
        else " (the slowest affected shard)")
    metrics = list(METRICS)
    if page_runs.parallel is not None:
        eu, read = parallel_reading(eu, page_runs.parallel.runs, "n_shards", "the number of shards")
        metrics.insert(2, PARALLEL)
        claims = joined_claims(claims, read)
        if grid.timing == "batched":  # two times side by side: each says how it was measured
            eu = eu.rename(columns={"unlearn_seconds": TOGETHER})
            metrics = [TOGETHER if m == "unlearn_seconds" else m for m in metrics]
    return Page(
        PAGE, grid, with_page_runs(runs, total, pending), pending, None, claims,
        tables={"runs": runs_table(total, pending),
                "sweep": eu.groupby(["dataset", "model", "method", "n_shards"])[metrics].agg(["mean", "std"]).round(4)},
        figures={"figure": lambda: sweep_lines(
            eu, "n_shards", metrics, "method",
            "utility, time, |A-IGF − Retrain|, shardGF against the number of shards",
            by=("dataset", "model"))},
        notices=notices(runs=runs_notice("The runs of this page", total, pending, command),
                        sweep=runs_notice("The table", total, pending, command),
                        figure=runs_notice("The figure", total, pending, command)),
        checks=[printed(eu.groupby(["dataset", "model", "method", "n_shards"])[["ndcg_untruncated", "shard_gf"]].mean()
                        .round(2))],
        claims_command=command)
