"""Question 1 of the book's own chapter: how far exact unlearning moves the rank lists of the users
who were not unlearned (runs of :mod:`recunlearn.experiments.bystanders`; the claims are this
study's hypotheses, see :mod:`recunlearn.report.bystanders`)."""

from __future__ import annotations

import pandas as pd

from ...experiments.bystanders import BystanderGrid, collect_bystanders
from ..bystanders import bystander_claims, bystander_table, utility_figure
from . import Page
from .bystanders_runs import collect_page, own_page, printed, runs_notice

PAGE = "bystanders/q1-unlearning-moves-bystanders"
CHECKED = ["dataset", "model", "method", "selection", "control", "seed", "n_bystanders", "ao", "jaccard"]


def figure(runs: pd.DataFrame):
    """Jaccard@10 of bystanders by method, the controls beside it, one panel per model; one figure per
    dataset, titled with it (as Questions 2-4)."""
    from ..plots import method_bars

    return method_bars(runs, "jaccard", "bystanders' top 10 before vs after (Jaccard@10; 1 = unchanged)",
                       col="model", x="method", hue="control")


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The Question 1 page at notebook parameters ``params``: the table of before/after similarity of
    bystanders' lists, the figure, the utility kept against the disturbance, and the claims. ``runs``
    (made up by a test) replaces the collected runs."""
    grid, runs, command = collect_page(PAGE, BystanderGrid, params, collect_bystanders, runs)
    total = len(grid.runs())
    notice = runs_notice("The bystander runs", runs, total, command)
    return own_page(
        PAGE, grid, runs, claims=bystander_claims(runs),
        tables={"table": bystander_table(runs)},
        figures={"figure": lambda: figure(runs), "utility": lambda: utility_figure(runs)},
        notices={name: notice for name in ("table", "figure", "utility") if notice is not None},
        checks=[printed(runs[CHECKED].round(2) if len(runs) else None)], claims_command=command)
