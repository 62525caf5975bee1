"""SRU unlearning efficiency (no paper table known): the time to unlearn (one retrained shard + the
aggregator, against a full retrain, measured together) of every method, and the abstract's
efficiency claim."""

from __future__ import annotations

import pandas as pd

from ...experiments.sru import SruGrid
from ..claims import claims_frame, with_pending_rows
from ..names import by_dataset
from ..plots import method_bars
from ..sru import (efficiency_claim, efficiency_reading_claim, efficiency_table, main_runs,
                   unlearning_share_of_full_training)
from . import Page, pending_runs_notice, runs_table
from .sru_runs import collect_page, computed_text

PAGE = "sru/unlearning-efficiency"
GRID = SruGrid  # the parameters of this page (its notebook's), validated before any compute


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The efficiency page at notebook parameters ``params`` (``runs`` replaces the collected runs)."""
    grid, runs, pending, command = collect_page(PAGE, GRID, params, runs)
    total = len(grid.runs())
    main = main_runs(runs, grid.n_shards)
    shares = unlearning_share_of_full_training(main)
    values = {"sru_time_share": by_dataset(shares.groupby("dataset")["share_of_full_training"].mean(), ".1%")}
    return Page(
        PAGE, grid, runs, pending, None,
        claims_frame([efficiency_claim(main_runs(with_pending_rows(runs), grid.n_shards)),
                      efficiency_reading_claim(main_runs(with_pending_rows(runs), grid.n_shards))]),
        tables={"runs": runs_table(total, pending), "times": efficiency_table(main)},
        figures={"figure": lambda: method_bars(main, "unlearn_cpu_seconds",
                                               "Unlearning time (CPU seconds; sharded methods: one shard + "
                                               "aggregator)", col="model", x="method", hue="dataset")},
        values=values,
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                     times=pending_runs_notice("The unlearning times", total, pending, command),
                     figure=pending_runs_notice("The figure", total, pending, command)),
        checks=[computed_text(runs, total)], claims_command=command)
