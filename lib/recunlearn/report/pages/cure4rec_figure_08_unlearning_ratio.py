"""CURE4Rec Figure 8: utility, unlearning time and A-IGF against the share of users unlearned (WMF,
ML-100K), and the paper's trend claims.

Unlearning time is read two ways, as on the Figure 4 page: the page's grid (batched by default)
retrains the affected shards together in one process (their total work), and the same grid's sharded
methods with each affected shard trained as a model of its own give the slowest shard's time, the
time with one worker per shard, which the paper's parallel training for exact unlearning implies: that
reading is the paper's claim, and the grid's own (however ``TIMING`` measured it) is shown beside it as
another reading."""

from __future__ import annotations

from ...experiments.cure4rec_exact import ExactCollected, ExactGrid
from ..cure4rec import sweep_claims, with_retrain_gap
from . import Page
from .cure4rec_runs import collect_sweep, sweep_page, with_time_readings

PAGE = "cure4rec/figure-08-unlearning-ratio"
GRID = ExactGrid  # the parameters of this page (its notebook's), validated before any compute
SHOWN = ["ndcg_untruncated", "unlearn_seconds", "a_igf", "abs_a_igf", "a_igf_gap_abs"]
PLOTTED = ["ndcg_untruncated", "unlearn_seconds", "abs_a_igf"]
EXPECTED = {"ndcg_untruncated": -1, "unlearn_seconds": -1, "abs_a_igf": -1}
"""The paper's trends as the ratio grows (-1: falls); "fairer" read as |A-IGF| closer to zero."""


def build(collected: ExactCollected | None = None, parallel: ExactCollected | None = None, **params) -> Page:
    """The unlearning-ratio page at notebook parameters ``params``: its runs, the metrics per ratio (with
    the parallel reading of unlearning time, :func:`~.cure4rec_runs.parallel_grid`), the figure and one
    trend claim per metric. ``collected`` and ``parallel`` replace the collected runs of the two grids."""
    page_runs = collect_sweep(PAGE, GRID, params, collected, parallel)
    sweep = with_retrain_gap(page_runs.collected.runs)
    sweep = sweep.assign(abs_a_igf=sweep["a_igf"].abs())  # what the fairness claim is tested on, shown with it
    claims = sweep_claims(sweep, "ratio", EXPECTED, "the unlearning ratio")
    sweep, claims, (shown, plotted) = with_time_readings(page_runs, sweep, claims, "ratio", "the unlearning ratio",
                                                         SHOWN, PLOTTED)
    return sweep_page(PAGE, page_runs, claims, sweep, "ratio", shown, plotted,
                      "utility, time and A-IGF against the share of users unlearned (%)",
                      checked=["ndcg_untruncated", "a_igf"])
