"""CURE4Rec Figure 4: utility, unlearning time, A-IGF's distance from Retrain and shardGF of the exact
methods against the number of shards K (WMF, ML-100K), and the paper's trend claims.

Unlearning time is read two ways. The page's grid (``TIMING``, batched by default) retrains the
affected shards together in one process: its time is their total work, which hardly changes with K
when random users touch most shards. SISA's premise is shards retrained in parallel, so the page also
reads the runs with each affected shard trained as a model of its own (the same grid at
``timing="alone"``, without Retrain), whose unlearning time is the slowest affected shard's: the time
with one worker per shard. The parallel reading is the paper's claim; the grid's own time is shown
beside it as another reading (not counted among the paper's claims, and not deciding the page's
verdict), whatever ``TIMING`` measured it (``sequential``: the slowest affected shard trained in turn
inside the K-shard model; with ``TIMING = "alone"`` the grid's own time is the parallel reading).

shardGF is read two ways too: the paper's sentence says more shards reduce "the discrepancy among all
shards, diminishing the shard-level fairness". shardGF measures that discrepancy, so the claim is
that it falls; its second half, read alone, says it rises, which is tested as another reading."""

from __future__ import annotations

from ...experiments.cure4rec_exact import ExactCollected, ExactGrid
from ..claims import OTHER_READING, joined_claims, with_kind
from ..cure4rec import sweep_claims, with_retrain_gap
from . import Page
from .cure4rec_runs import collect_sweep, sweep_page, with_time_readings

PAGE = "cure4rec/figure-04-shard-number"
GRID = ExactGrid  # the parameters of this page (its notebook's), validated before any compute
METRICS = ["ndcg_untruncated", "unlearn_seconds", "a_igf_gap_abs", "shard_gf"]
EXPECTED = {"ndcg_untruncated": -1, "unlearn_seconds": -1, "a_igf_gap_abs": +1, "shard_gf": -1}
"""The paper's trends: +1 rises, -1 falls as the number of shards grows."""


def build(collected: ExactCollected | None = None, parallel: ExactCollected | None = None, **params) -> Page:
    """The shard-number page at notebook parameters ``params``: its runs, the exact methods' metrics per
    K (with the parallel reading of unlearning time, :func:`~.cure4rec_runs.parallel_grid`), the figure
    and one trend claim per metric. ``collected`` and ``parallel`` replace the collected runs of the two
    grids."""
    page_runs = collect_sweep(PAGE, GRID, params, collected, parallel)
    sweep = with_retrain_gap(page_runs.collected.runs)
    eu = sweep[sweep["method"] != "retrain"]
    claims = joined_claims(sweep_claims(eu, "n_shards", EXPECTED, "the number of shards"), with_kind(
        sweep_claims(eu, "n_shards", {"shard_gf": +1}, "the number of shards"), OTHER_READING, ["shard_gf_rises"]))
    eu, claims, (metrics,) = with_time_readings(page_runs, eu, claims, "n_shards", "the number of shards", METRICS)
    return sweep_page(PAGE, page_runs, claims, eu, "n_shards", metrics, metrics,
                      "utility, time, |A-IGF − Retrain|, shardGF against the number of shards",
                      checked=["ndcg_untruncated", "shard_gf"])
