"""CURE4Rec Table 3: unlearning time of Retrain and the three exact methods beside the paper's seconds
(compared as time relative to Retrain), SCIF's stored times beside the Retrain of their own runs, and
the paper's claims."""

from __future__ import annotations

import pandas as pd

from ...experiments.cure4rec_exact import ExactCollected, ExactGrid
from ...experiments.records import pending_reason
from ...experiments.cure4rec_scif import ScifGrid, collect
from ..cure4rec import time_claims, time_table
from ..claims import claims_frame, joined_claims, with_pending_rows
from ..compare import paper_layout
from ..cure4rec_scif import same_retrain_check, scif_slower_cells, scif_times, scif_times_with_pending
from ..paper import paper_table
from ..plots import method_bars
from . import Notice, Page, pending_runs_notice, runs_table
from .cure4rec_runs import collect_exact, comparison_command, grid_cells_notice, printed

PAGE = "cure4rec/table-03-unlearning-time"
GRID = ExactGrid  # the parameters of this page (its notebook's), validated before any compute
KEYS = ["dataset", "model", "method", "selection"]
SCIF_SHOWN = ["unlearn_seconds", "retrain_seconds", "speedup", "scif_cg_seconds", "cg_iterations"]


def build(collected: ExactCollected | None = None, scif_runs: pd.DataFrame | None = None, **params) -> Page:
    """The Table 3 page at notebook parameters ``params``: its runs, the paper's Table 3 as each method's
    time relative to Retrain's with ours in it (``paper_table``), the paper's seconds beside ours
    (absolute and relative to Retrain, ``times``), SCIF's times with the Retrain its own process trained
    (:func:`~recunlearn.report.cure4rec_scif.scif_times`) from the stored SCIF runs (``scif_runs``:
    rows of :func:`recunlearn.experiments.cure4rec_scif.collect`, by default read from the records,
    never computed), the figures and the paper's claims. ``collected`` replaces the collected runs."""
    grid, collected, command = collect_exact(PAGE, GRID, params, collected)
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    if scif_runs is None:
        scif_runs = collect(ScifGrid(datasets=grid.datasets, models=grid.models, selections=grid.selections,
                                     seeds=grid.seeds, max_epochs=grid.max_epochs, device=grid.device,
                                     compute_missing=False)).runs
    scif = scif_times(scif_runs)
    beside = pd.concat([scif.assign(method="retrain", unlearn_seconds=scif["retrain_seconds"]), scif],
                       ignore_index=True)  # SCIF and the Retrain its own process trained first
    table = time_table(runs, scif, paper_table("cure4rec-table-03"))
    in_grid = table[table["dataset"].isin(grid.datasets) & table["model"].isin(grid.models)]
    shown = in_grid[in_grid["unlearn_seconds"].notna()]
    cells = table.assign(paper=table["paper_seconds"], ours=table["unlearn_seconds"])
    others = in_grid[in_grid["method"] != "retrain"]  # Retrain's own row is 1 on both sides
    relative = paper_layout(others.assign(metric="vs_retrain", ours=others["ours_vs_retrain"],
                                          paper=others["paper_vs_retrain"]),
                            ["method", "selection"], ["dataset", "model"], ["vs_retrain"], digits=3)
    times_notice = grid_cells_notice("Table 3, paper vs ours", cells, grid, ["model", "method", "selection"],
                                pending_reason(grid.device), comparison_command(PAGE, grid, command, collected.pending),
                                read={"method": ["scif"]})
    no_scif = Notice("SCIF's times", "no stored SCIF run at this page's settings (SCIF runs are made by the "
                     "Tables 1/5 page, never here)") if not len(scif) else None
    return Page(
        PAGE, grid, runs, pending, None,
        joined_claims(time_claims(with_pending_rows(runs), scif=scif_times_with_pending(scif_runs)),
                      claims_frame([same_retrain_check(runs, scif_runs)])),
        tables={"runs": runs_table(total, pending),
                "paper_table": relative if len(shown) else shown,
                "times": shown.set_index(KEYS).round(3),
                "scif_times": scif.groupby(["dataset", "model", "selection"])[SCIF_SHOWN].mean().round(2)},
        figures={"scif_figure": lambda: method_bars(beside, "unlearn_seconds",
                                                    "Retrain vs SCIF, timed in the same process: unlearning time "
                                                    "(seconds, CPU)"),
                 "figure": lambda: method_bars(runs, "unlearn_seconds",
                                               "Stage-III time, slowest retrained shard (seconds, CPU)")},
        notices=dict(
            runs=pending_runs_notice("The runs of this page", total, pending, command),
            paper_table=times_notice, times=times_notice,
            scif_times=no_scif, scif_figure=no_scif,
            figure=pending_runs_notice("The figure", total, pending, command)),
        values={"scif_slower_cells": scif_slower_cells(scif)},
        checks=[printed(runs.groupby(["dataset", "model", "method", "selection"])["unlearn_seconds"].size())],
        claims_command=command)
