"""SRU recommendation accuracy (no paper table known): Recall and NDCG at 10 and 20 of Retrain, SISA,
RecEraser-style aggregation and SRU after unlearning, per dataset and model, and the abstract's two
accuracy claims (above the sharded baselines; close to retraining)."""

from __future__ import annotations

import pandas as pd

from ...experiments.sru import SruGrid
from ..claims import claims_frame, with_pending_rows
from ..names import by_dataset, display_frame
from ..plots import method_bars
from ..sru import NEAR_RETRAIN, accuracy_claims, accuracy_table, main_runs, share_of_retrain
from . import Page, pending_runs_notice, runs_table
from .sru_runs import collect_page, computed_text

PAGE = "sru/recommendation-accuracy"
GRID = SruGrid  # the parameters of this page (its notebook's), validated before any compute


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The accuracy page at notebook parameters ``params`` (``runs`` replaces the collected runs)."""
    grid, runs, pending, command = collect_page(PAGE, GRID, params, runs)
    total = len(grid.runs())
    main = main_runs(runs, grid.n_shards)
    share = share_of_retrain(main, "ndcg@10")
    keys = ["dataset", "model", "method"]
    share_table = (display_frame(share.groupby(keys)["share"].agg(["size", "mean", "std"]).round(3).reset_index()
                                 .rename(columns={"size": "seeds", "mean": "NDCG@10 / Retrain's"}), index=keys)
                   if len(share) else pd.DataFrame())
    sru_share = share[share["method"] == "sru"].groupby("dataset")["share"].mean()
    values = {"sru_share_of_retrain": by_dataset(sru_share, ".1%"),
              "near_retrain_bound": f"{NEAR_RETRAIN:.0%}"}
    return Page(
        PAGE, grid, runs, pending, None, claims_frame(accuracy_claims(with_pending_rows(runs))),
        tables={"runs": runs_table(total, pending), "accuracy": accuracy_table(main), "share": share_table},
        figures={"figure": lambda: method_bars(main, "ndcg@10", "NDCG@10 after unlearning (mean ± std over seeds)",
                                               col="model", x="method", hue="dataset")},
        values=values,
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                     accuracy=pending_runs_notice("The accuracy table", total, pending, command),
                     share=pending_runs_notice("NDCG@10 as a share of Retrain's", total, pending, command),
                     figure=pending_runs_notice("The figure", total, pending, command)),
        checks=[computed_text(runs, total)], claims_command=command)
