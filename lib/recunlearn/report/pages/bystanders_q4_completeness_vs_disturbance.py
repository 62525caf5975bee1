"""Question 4 of the book's own chapter: completeness vs disturbance. The MIO completeness of every
exact method (``cure4rec-exact-mio`` runs) and the disturbance of its bystanders (question 1's runs) on
one chart."""

from __future__ import annotations

import pandas as pd

from ...experiments.bystanders import TRADEOFF_KEYS, TradeoffGrid, collect_tradeoff
from ..bystanders import tradeoff_claims, tradeoff_figure, tradeoff_table
from . import Page
from .bystanders_runs import question_page

PAGE = "bystanders/q4-completeness-vs-disturbance"
GRID = TradeoffGrid  # the parameters of this page (its notebook's), validated before any compute
CHECKED = ["dataset", "model", "method", "selection", "seed", "disturbance", "mio_auc"]


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The Question 4 page at notebook parameters ``params``: the chart of MIO AUC against disturbance,
    its table and the claims. ``runs`` (made up by a test) replaces the collected runs."""
    return question_page(PAGE, GRID, collect_tradeoff, params, runs, what="The cells with both runs",
                         claims=tradeoff_claims, tables={"table": tradeoff_table},
                         figures={"figure": tradeoff_figure}, checked=CHECKED, pending_keys=TRADEOFF_KEYS)
