"""CURE4Rec Tables 6-8: active and inactive remaining users in each shard of SISA, RecEraser and UltraRE
beside the paper's tables, how concentrated the active users are, and the paper's claim."""

from __future__ import annotations

import pandas as pd

from ...experiments.cure4rec_exact import ExactCollected, ExactGrid
from ..claims import with_pending_rows
from ..cure4rec import active_concentration, concentration_claims, shard_composition
from ..names import by_dataset, display_name
from ..paper import paper_table
from ..plots import per_part, shard_composition as composition_bars
from . import Page, pending_runs_notice, runs_table
from .cure4rec_runs import collect_exact, printed

PAGE = "cure4rec/table-06-08-shard-composition"
GRID = ExactGrid  # the parameters of this page (its notebook's), validated before any compute


def figures(composition: pd.DataFrame):
    """One figure per dataset: active users per shard, shards ordered by rank (ours: seed 0)."""
    first_seed = composition[composition["seed"] <= 0].assign(shard=lambda c: c["rank"])
    return per_part(first_seed, ["dataset"], "Active users per shard, shards ordered by rank (ours: seed 0)",
                    lambda part, title, _: composition_bars(part, title))


def build(collected: ExactCollected | None = None, **params) -> Page:
    """The shard-composition page at notebook parameters ``params``: its runs, the active users per shard
    (ours and the paper's, shards ordered by rank), their concentration, the figure, the paper's
    claim and the glued top-shard shares. ``collected`` replaces the collected runs."""
    grid, collected, command = collect_exact(PAGE, GRID, params, collected)
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    composition = shard_composition(collected.shards, paper=paper_table("cure4rec-table-06-08"))
    concentration = active_concentration(composition)
    ours = composition[composition["source"] == "ours"]

    top = concentration[concentration["source"] == "ours"]
    is_sisa = top["method"] == "sisa"
    sisa = top[is_sisa].groupby("dataset")["top_shard_share"].mean()
    clustered = top[~is_sisa].groupby("dataset")["top_shard_share"].mean()
    clustered_by = top[~is_sisa].groupby("dataset")["method"].unique()
    alone = {d: f"{display_name(methods[0])} only" for d, methods in clustered_by.items() if len(methods) == 1}
    empty = pd.DataFrame()
    return Page(
        PAGE, grid, runs, pending, None, concentration_claims(composition, with_pending_rows(runs)),
        tables={"runs": runs_table(total, pending),
                "concentration": concentration.pivot_table(
                    index=["dataset", "method", "selection"], columns="source",
                    values=["top_shard_share", "cv"]).round(3) if len(concentration) else empty,
                "composition": composition.pivot_table(
                    index=["dataset", "method", "selection", "source"], columns="rank", values="active",
                    aggfunc="mean").round(1) if len(composition) else empty},
        figures={"figure": lambda: figures(composition)},
        values={"sisa_top_share": by_dataset(sisa), "clustered_top_share": by_dataset(clustered, notes=alone)},
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                     concentration=pending_runs_notice("The concentration of active users", total, pending, command),
                     composition=pending_runs_notice("Active users per shard", total, pending, command),
                     figure=pending_runs_notice("The figure", total, pending, command)),
        checks=[printed(ours.groupby(["dataset", "method", "selection"])["active"].agg(["sum", "max"]))],
        claims_command=command)
