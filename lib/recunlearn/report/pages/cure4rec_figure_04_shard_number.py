"""CURE4Rec Figure 4: utility, unlearning time, A-IGF's distance from Retrain and shardGF of the exact
methods against the number of shards K (WMF, ML-100K), and the paper's trend claims."""

from __future__ import annotations

from ...experiments.cure4rec_exact import ExactCollected
from ..cure4rec import sweep_claims, with_retrain_gap
from ..plots import sweep_lines
from . import Page
from .cure4rec_runs import collect_exact, notices, printed, runs_notice, runs_table

PAGE = "cure4rec/figure-04-shard-number"
METRICS = ["ndcg_untruncated", "unlearn_seconds", "a_igf_gap_abs", "shard_gf"]
EXPECTED = {"ndcg_untruncated": -1, "unlearn_seconds": -1, "a_igf_gap_abs": +1, "shard_gf": -1}
"""The paper's trends: +1 rises, -1 falls as the number of shards grows."""


def build(collected: ExactCollected | None = None, **params) -> Page:
    """The shard-number page at notebook parameters ``params``: its runs, the exact methods' metrics per
    K, the figure and one trend claim per metric. ``collected`` replaces the collected runs."""
    grid, collected, command = collect_exact(PAGE, params, collected)
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    sweep = with_retrain_gap(runs)
    eu = sweep[sweep["method"] != "retrain"]
    return Page(
        PAGE, grid, runs, pending, None, sweep_claims(eu, "n_shards", EXPECTED, "the number of shards"),
        tables={"runs": runs_table(total, pending),
                "sweep": eu.groupby(["dataset", "model", "method", "n_shards"])[METRICS].agg(["mean", "std"]).round(4)},
        figures={"figure": lambda: sweep_lines(
            eu, "n_shards", METRICS, "method",
            "utility, time, |A-IGF − Retrain|, shardGF against the number of shards",
            by=("dataset", "model"))},
        notices=notices(runs=runs_notice("The runs of this page", total, pending, command),
                        sweep=runs_notice("The table", total, pending, command),
                        figure=runs_notice("The figure", total, pending, command)),
        checks=[printed(eu.groupby(["dataset", "model", "method", "n_shards"])[["ndcg_untruncated", "shard_gf"]].mean()
                        .round(2))],
        claims_command=command)
