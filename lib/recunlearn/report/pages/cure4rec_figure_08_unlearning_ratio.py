"""CURE4Rec Figure 8: utility, unlearning time and A-IGF against the share of users unlearned (WMF,
ML-100K), and the paper's trend claims."""

from __future__ import annotations

from ...experiments.cure4rec_exact import ExactCollected
from ..cure4rec import sweep_claims, with_retrain_gap
from ..plots import sweep_lines
from . import Page
from .cure4rec_runs import collect_exact, notices, printed, runs_notice, runs_table

PAGE = "cure4rec/figure-08-unlearning-ratio"
SHOWN = ["ndcg_untruncated", "unlearn_seconds", "a_igf", "abs_a_igf", "a_igf_gap_abs"]
EXPECTED = {"ndcg_untruncated": -1, "unlearn_seconds": -1, "abs_a_igf": -1}
"""The paper's trends as the ratio grows (-1: falls); "fairer" read as |A-IGF| closer to zero."""


def build(collected: ExactCollected | None = None, **params) -> Page:
    """The unlearning-ratio page at notebook parameters ``params``: its runs, the metrics per ratio, the
    figure and one trend claim per metric. ``collected`` replaces the collected runs."""
    grid, collected, command = collect_exact(PAGE, params, collected)
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    sweep = with_retrain_gap(runs)
    sweep = sweep.assign(abs_a_igf=sweep["a_igf"].abs())  # what the fairness claim is tested on, shown with it
    claims = sweep_claims(sweep, "ratio", EXPECTED, "the unlearning ratio")
    return Page(
        PAGE, grid, runs, pending, None, claims,
        tables={"runs": runs_table(total, pending),
                "sweep": sweep.groupby(["dataset", "model", "method", "ratio"])[SHOWN].agg(["mean", "std"]).round(4)},
        figures={"figure": lambda: sweep_lines(
            sweep, "ratio", ["ndcg_untruncated", "unlearn_seconds", "abs_a_igf"], "method",
            "utility, time and A-IGF against the share of users unlearned (%)", by=("dataset", "model"))},
        notices=notices(runs=runs_notice("The runs of this page", total, pending, command),
                        sweep=runs_notice("The table", total, pending, command),
                        figure=runs_notice("The figure", total, pending, command)),
        checks=[printed(sweep.groupby(["dataset", "model", "method", "ratio"])[["ndcg_untruncated", "a_igf"]].mean()
                        .round(2))],
        claims_command=command)
