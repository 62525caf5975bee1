"""Question 2 of the book's own chapter: does who is unlearned matter? Retrain's bystanders after many
unlearning sets of one size (core, edge, random users), against the deletion cascade of each set
(CASPER's cascade score extended to a set, :mod:`recunlearn.experiments.cascades`)."""

from __future__ import annotations

import pandas as pd

from ...experiments.bystanders import CascadeGrid, collect_cascades
from ..bystanders import cascade_claims, cascade_figure, cascade_table
from . import Page
from .bystanders_runs import question_page

PAGE = "bystanders/q2-who-is-unlearned"
GRID = CascadeGrid  # the parameters of this page (its notebook's), validated before any compute
CHECKED = ["dataset", "model", "selection", "selection_seed", "seed", "removed_rows", "cascade_share", "disturbance"]


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The Question 2 page at notebook parameters ``params``: one row per unlearning set, the scatter of
    disturbance against the deletion cascade, and the claims. ``runs`` (made up by a test) replaces the
    collected runs."""
    return question_page(PAGE, GRID, collect_cascades, params, runs, what="The runs of this question",
                         claims=cascade_claims, tables={"table": cascade_table}, figures={"figure": cascade_figure},
                         checked=CHECKED, values=set_count)


def set_count(runs: pd.DataFrame) -> dict[str, int]:
    """``n_sets``: the unlearning sets (selection and its seed) the runs cover."""
    return {"n_sets": int(runs[["selection", "selection_seed"]].drop_duplicates().shape[0]) if len(runs) else 0}
