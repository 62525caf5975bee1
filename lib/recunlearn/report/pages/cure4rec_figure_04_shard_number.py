"""CURE4Rec Figure 4: utility, unlearning time, A-IGF's distance from Retrain and shardGF of the exact
methods against the number of shards K (WMF, ML-100K), and the paper's trend claims.

Unlearning time is read two ways. The page's grid (``TIMING``, batched by default) retrains the
affected shards together in one process: its time is their total work, which hardly changes with K
when random users touch most shards. SISA's premise is shards retrained in parallel, so the page also
reads the runs with each affected shard trained as a model of its own (the same grid at
``timing="alone"``, without Retrain), whose unlearning time is the slowest affected shard's: the time
with one worker per shard. Each reading is a claim of its own."""

from __future__ import annotations

import pandas as pd

from ...experiments.cure4rec_exact import EXACT_KEYS, ExactCollected, ExactGrid, collect
from ..claims import claims_frame
from ..cure4rec import sweep_claims, with_retrain_gap
from ..glance import with_page_runs
from ..plots import sweep_lines
from . import Page
from .cure4rec_runs import collect_exact, notices, pending_command, printed, runs_notice, runs_table

PAGE = "cure4rec/figure-04-shard-number"
METRICS = ["ndcg_untruncated", "unlearn_seconds", "a_igf_gap_abs", "shard_gf"]
EXPECTED = {"ndcg_untruncated": -1, "unlearn_seconds": -1, "a_igf_gap_abs": +1, "shard_gf": -1}
"""The paper's trends: +1 rises, -1 falls as the number of shards grows."""
PARALLEL = "unlearn_seconds_parallel"
"""The slowest affected shard's time, each shard trained alone (shards retrained in parallel)."""
TOGETHER = "unlearn_seconds_together"
"""The batched time (the affected shards trained together), as the table and figure name it beside
:data:`PARALLEL`."""


def parallel_grid(grid: ExactGrid) -> ExactGrid | None:
    """The runs behind the parallel reading of unlearning time: ``grid``'s sharded methods with each
    affected shard trained as a model of its own; None when ``grid`` already times them so or has no
    sharded method."""
    methods = tuple(m for m in grid.methods if m != "retrain")
    return grid.replace(methods=methods, timing="alone") if methods and grid.timing != "alone" else None


def build(collected: ExactCollected | None = None, parallel: ExactCollected | None = None, **params) -> Page:
    """The shard-number page at notebook parameters ``params``: its runs, the exact methods' metrics per
    K (with the parallel reading of unlearning time, :func:`parallel_grid`), the figure and one trend
    claim per metric. ``collected`` and ``parallel`` replace the collected runs of the two grids."""
    grid, collected, command = collect_exact(PAGE, params, collected)
    second = parallel_grid(grid)
    if second is not None and parallel is None:
        parallel = collect(second)
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    if second is not None:
        runs = pd.concat([runs, parallel.runs], ignore_index=True)
        pending = pd.concat([pending, parallel.pending], ignore_index=True)
        total += len(second.runs())
        command = pending_command(PAGE, grid.device, pending, grid.runs() + second.runs())
    batched = collected.runs
    sweep = with_retrain_gap(batched)
    eu = sweep[sweep["method"] != "retrain"]
    claims = sweep_claims(eu, "n_shards", EXPECTED, "the number of shards")
    claims.loc[claims["id"] == "unlearn_seconds_falls", "claim"] += (
        " (the affected shards retrained together in one process)" if grid.timing == "batched"
        else " (the slowest affected shard)")
    metrics = list(METRICS)
    if second is not None:
        keys = EXACT_KEYS  # one run of each reading per key
        alone = parallel.runs
        if len(alone):
            eu = eu.merge(alone[keys + ["unlearn_seconds"]].rename(columns={"unlearn_seconds": PARALLEL}),
                          on=keys, how="left")
        else:
            eu = eu.assign(**{PARALLEL: float("nan")})
        metrics.insert(2, PARALLEL)
        read = sweep_claims(alone, "n_shards", {"unlearn_seconds": -1}, "the number of shards")
        read["id"] = "unlearn_seconds_parallel_falls"
        read["claim"] += " (shards retrained in parallel: the slowest affected shard, each a model of its own)"
        claims = claims_frame(pd.concat([claims, read], ignore_index=True).to_dict("records"))
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
