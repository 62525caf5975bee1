"""Question 4 of the book's own chapter: completeness vs disturbance. The MIO completeness of every
exact method (``cure4rec-exact-mio`` runs) and the disturbance of its bystanders (question 1's runs) on
one chart."""

from __future__ import annotations

import pandas as pd

from ...experiments.bystanders import TradeoffGrid, collect_tradeoff
from ..bystanders import tradeoff_claims, tradeoff_figure, tradeoff_table
from . import Page
from .bystanders_runs import collect_page, own_page, printed, runs_notice

PAGE = "bystanders/q4-completeness-vs-disturbance"
CHECKED = ["dataset", "model", "method", "selection", "seed", "disturbance", "mio_auc"]


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The Question 4 page at notebook parameters ``params``: the chart of MIO AUC against disturbance,
    its table and the claims. ``runs`` (made up by a test) replaces the collected runs."""
    grid, runs, command = collect_page(PAGE, TradeoffGrid, params, collect_tradeoff, runs)
    notice = runs_notice("The cells with both runs", runs, len(grid.runs()), command)
    return own_page(
        PAGE, grid, runs, claims=tradeoff_claims(runs), tables={"table": tradeoff_table(runs)},
        figures={"figure": lambda: tradeoff_figure(runs)},
        notices={name: notice for name in ("table", "figure") if notice is not None},
        checks=[printed(runs[CHECKED].round(3) if len(runs) else None)], claims_command=command)
