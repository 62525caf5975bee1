"""CURE4Rec Figures 3, 6 and 7: fairness (A-IGF, shardGF) of Retrain and the three exact methods, and the
paper's claims (the figures print no numbers); SCIF's A-IGF from its stored runs (the Tables 1/5 page
makes them), which the paper compares the exact methods with."""

from __future__ import annotations

import pandas as pd

from ...experiments.cure4rec_exact import ExactCollected, ExactGrid
from ...experiments.cure4rec_scif import ScifGrid, collect
from ..claims import with_pending_rows
from ..cure4rec import fairness_claims, with_retrain_gap
from ..plots import method_bars
from . import Page, pending_runs_notice, runs_table
from .cure4rec_runs import collect_exact, printed

PAGE = "cure4rec/figure-03-06-07-eu-fairness"
GRID = ExactGrid  # the parameters of this page (its notebook's), validated before any compute
KEYS = ["dataset", "model", "method", "selection"]
SHOWN = ["a_igf", "a_igf_gap", "a_igf_gap_abs", "shard_gf", "a_igf_standard", "shard_gf_standard"]


def build(collected: ExactCollected | None = None, scif_runs: pd.DataFrame | None = None, **params) -> Page:
    """The fairness page at notebook parameters ``params``: its runs, A-IGF (and its gap to Retrain) and
    shardGF per cell, the two figures and the paper's claims, SCIF's stored runs (``scif_runs``: rows of
    :func:`recunlearn.experiments.cure4rec_scif.collect`, by default read from the records, never
    computed) for the comparison with SCIF. ``collected`` replaces the collected runs."""
    grid, collected, command = collect_exact(PAGE, GRID, params, collected)
    if scif_runs is None:
        scif_runs = collect(ScifGrid(datasets=grid.datasets, models=grid.models, selections=grid.selections,
                                     ratios=grid.ratios, seeds=grid.seeds, validation=grid.validation,
                                     max_epochs=grid.max_epochs, device=grid.device, compute_missing=False)).runs
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    fair = with_retrain_gap(runs)
    return Page(
        PAGE, grid, runs, pending, None, fairness_claims(with_pending_rows(runs), scif_runs),
        tables={"runs": runs_table(total, pending),
                "fairness": fair.groupby(KEYS)[SHOWN].agg(["mean", "std"]).round(4)},
        figures={"a_igf": lambda: method_bars(
                     fair, "a_igf", "A-IGF (active − inactive NDCG@20, code variant); Retrain is the reference"),
                 "shard_gf": lambda: method_bars(fair[fair["method"] != "retrain"], "shard_gf",
                                                 "shardGF (variance of per-shard NDCG@20)")},
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                     fairness=pending_runs_notice("The fairness table", total, pending, command),
                     a_igf=pending_runs_notice("The A-IGF figure", total, pending, command),
                     shard_gf=pending_runs_notice("The shardGF figure", total, pending, command)),
        checks=[printed(fair.groupby(["dataset", "model", "method", "selection"])[["a_igf", "shard_gf"]].mean()
                        .round(2))],
        claims_command=command)
