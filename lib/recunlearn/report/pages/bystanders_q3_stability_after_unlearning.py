"""Question 3 of the book's own chapter: is the model deployed after unlearning as stable as the one
before? CASPER's one-interaction leave-one-out on the learned and the unlearned model of every exact
method (runs of :mod:`recunlearn.experiments.stability`)."""

from __future__ import annotations

import pandas as pd

from ...experiments.stability import StabilityGrid, collect_stability
from ..bystanders import stability_claims, stability_figure, stability_table
from . import Page
from .bystanders_runs import question_page

PAGE = "bystanders/q3-stability-after-unlearning"
GRID = StabilityGrid  # the parameters of this page (its notebook's), validated before any compute
CHECKED = ["dataset", "model", "method", "state", "selector", "seed", "n_shard_users", "ao", "ao_shard"]


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The Question 3 page at notebook parameters ``params``: the table and figure of AO under one
    left-out interaction, and the claims. ``runs`` (made up by a test) replaces the collected runs."""
    return question_page(PAGE, GRID, collect_stability, params, runs, what="The runs of this question",
                         claims=stability_claims, tables={"table": stability_table},
                         figures={"figure": stability_figure}, checked=CHECKED)
