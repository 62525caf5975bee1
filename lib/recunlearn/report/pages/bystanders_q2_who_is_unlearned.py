"""Question 2 of the book's own chapter: does who is unlearned matter? Retrain's bystanders after many
unlearning sets of one size (core, edge, random users), against the deletion cascade of each set
(CASPER's cascade score extended to a set, :mod:`recunlearn.experiments.cascades`)."""

from __future__ import annotations

import pandas as pd

from ...experiments.bystanders import CascadeGrid, collect_cascades
from ..bystanders import cascade_claims, cascade_figure, cascade_table
from . import Page
from .bystanders_runs import collect_page, own_page, printed, runs_notice

PAGE = "bystanders/q2-who-is-unlearned"
CHECKED = ["dataset", "model", "selection", "selection_seed", "seed", "removed_rows", "cascade_share", "disturbance"]


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The Question 2 page at notebook parameters ``params``: one row per unlearning set, the scatter of
    disturbance against the deletion cascade, and the claims. ``runs`` (made up by a test) replaces the
    collected runs."""
    grid, runs, command = collect_page(PAGE, CascadeGrid, params, collect_cascades, runs)
    notice = runs_notice("The runs of this question", runs, len(grid.runs()), command)
    claims = cascade_claims(runs)
    values = {"n_sets": int(runs[["selection", "selection_seed"]].drop_duplicates().shape[0]) if len(runs) else 0}
    return own_page(
        PAGE, grid, runs, claims=claims, tables={"table": cascade_table(runs)},
        figures={"figure": lambda: cascade_figure(runs)}, values=values,
        notices={name: notice for name in ("table", "figure") if notice is not None},
        checks=[printed(runs[CHECKED].round(3) if len(runs) else None)], claims_command=command)
