"""Question 1 of the book's own chapter: how far exact unlearning moves the rank lists of the users
who were not unlearned (runs of :mod:`recunlearn.experiments.bystanders`; the claims are this
study's hypotheses, see :mod:`recunlearn.report.bystanders`)."""

from __future__ import annotations

import pandas as pd

from ...experiments.bystanders import BystanderGrid, collect_bystanders
from ..bystanders import bystander_claims, bystander_table, utility_figure
from . import Page
from .bystanders_runs import question_page

PAGE = "bystanders/q1-unlearning-moves-bystanders"
GRID = BystanderGrid  # the parameters of this page (its notebook's), validated before any compute
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
    return question_page(PAGE, GRID, collect_bystanders, params, runs, what="The bystander runs",
                         claims=bystander_claims, tables={"table": bystander_table},
                         figures={"figure": figure, "utility": utility_figure}, checked=CHECKED, digits=2)
