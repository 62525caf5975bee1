"""SRU unlearning effectiveness (no paper table known): HIT@K of the deleted items by strategy (the
model before retraining, each method, SRU with CED, NED or RED) and number of extra deleted items,
the NDCG@10 each costs, and a random ranking's K/501; the abstract's inference and extra-deletion
claims, and the chapter's expectation that more extra deletion lowers HIT@10 further."""

from __future__ import annotations

import pandas as pd

from ..claims import claims_frame, with_pending_rows
from ..names import by_dataset
from ..plots import sweep_lines
from ..sru import (HIT_RANDOM, SruPageGrid, effectiveness_table, extra_deletion_claim, extra_deletion_points,
                   inferable_claim, main_runs, more_extra_deletion_claim)
from . import Page, pending_runs_notice, runs_table
from .sru_runs import collect_page, computed_text, sweep_notice

PAGE = "sru/unlearning-effectiveness"
GRID = SruPageGrid  # the parameters of this page (its notebook's), validated before any compute


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The effectiveness page at notebook parameters ``params`` (``runs`` replaces the collected runs)."""
    grid, runs, pending, command = collect_page(PAGE, GRID, params, runs)
    total = len(grid.runs())
    points = extra_deletion_points(runs)
    before = main_runs(runs)
    before = before.drop_duplicates(["dataset", "model", "seed"]) if len(before) else before
    values = {"hit_random_10": f"{HIT_RANDOM[10]:.4f}",
              "hit_before_10": by_dataset(before.groupby("dataset")["hit_before_retraining@10"].mean(), ".4f")
              if len(before) else "pending"}
    judged = with_pending_rows(runs)  # the runs without a record count as pending
    return Page(
        PAGE, grid, runs, pending, None, claims_frame([inferable_claim(judged), extra_deletion_claim(judged),
                                                       more_extra_deletion_claim(judged)]),
        tables={"runs": runs_table(total, pending), "hits": effectiveness_table(runs)},
        figures={"figure": lambda: sweep_lines(points, "n_extra", ["hit@10", "ndcg@10"], "extra_deletion",
                                               "SRU: HIT@10 and NDCG@10 against the number of extra deleted items",
                                               by=("dataset", "model"))},
        values=values,
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                     hits=pending_runs_notice("HIT@K by strategy", total, pending, command),
                     figure=sweep_notice("The extra-deletion curves", points, "n_extra", total, pending,
                                            command)),
        checks=[computed_text(runs, total)], claims_command=command)
