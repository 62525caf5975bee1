"""CASPER Figure 3: random leave-one-out across models and datasets (a) and next-item metrics (b)."""

from __future__ import annotations

from ...experiments.casper import CasperGrid, Collected
from ..casper import (AO_BAND, RLS, ao_band_claim, most_stable_claim, next_item_claim, rls_bars, summarize_rls,
                      unchanged_runs_text)
from ..claims import claims_frame
from ..names import display_name
from . import Page, count_text, status_notice
from .casper_runs import collect_page, printed, status_counts

PAGE = "casper/figure-03-random-loo-datasets"
GRID = CasperGrid  # the parameters of this page (its notebook's), validated before any compute


def build(collected: Collected | None = None, **params) -> Page:
    """The Figure 3 page at notebook parameters ``params``: its runs, the AO and next-item tables, the
    claims (AO band, LatentCross most stable, next-item metrics barely move) and the glued values."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected)
    runs = collected.runs
    summary = summarize_rls(runs, ["dataset", "model", "selector"],
                            RLS + ["mrr_original", "mrr_perturbed", "recall10_original", "recall10_perturbed"])
    random_ao = summary[(summary["selector"] == "random") & (summary["metric"] == "ao")]
    next_item = summary[(summary["selector"] == "random") & summary["metric"].str.startswith(("mrr", "recall"))]

    n = len(random_ao)
    in_band = int(random_ao["mean"].between(*AO_BAND).sum())
    best = random_ao.loc[random_ao.groupby("dataset")["mean"].idxmax()] if n else random_ao
    lc_best = int((best["model"] == "latentcross").sum())
    gap = (summary[summary["metric"] == "mrr_perturbed"]["mean"].to_numpy()
           - summary[summary["metric"] == "mrr_original"]["mean"].to_numpy())
    values = {
        "n_cells": n if n else "pending", "n_in_band": in_band if n else "pending",
        "lc_best": count_text(lc_best, len(best), "{count} of {total}", "pending"),
        "in_band": count_text(in_band, n, "{count} of {total} (dataset, model) means computed here fall in that band",
                              "pending: no (dataset, model) mean computed yet"),
        "lc_best_datasets": count_text(lc_best, len(best), "by means it has the highest AO on {count} of {total} "
                                       "datasets", "which model has the highest mean AO is pending (no dataset "
                                       "computed yet)"),
        "max_mrr_gap": f"{abs(gap).max():.4f}" if len(gap) else "pending",
        "unchanged_runs": unchanged_runs_text(runs),
    }
    random_runs = runs[runs["selector"].isin(["none", "random"])]
    claims = claims_frame([ao_band_claim(random_runs, ["dataset", "model"]),
                           most_stable_claim(random_runs, cells=["dataset"]),
                           next_item_claim(random_runs, ["dataset", "model"])])

    def figure_3a():
        for dataset in grid.datasets:
            part = summary[(summary["dataset"] == dataset) & summary["metric"].isin(RLS)]
            if len(part):
                rls_bars(part, x="model", hue="selector", metrics=RLS, title=f"{display_name(dataset)}: random LOO")

    computed = runs[runs["status"] == "computed"]
    checks = [printed(computed[["dataset", "model", "selector", "seed", "ao", "rbo_min", "jaccard", "mrr_original",
                                "mrr_perturbed"]].round(2)),
              runs["status"].value_counts().to_string()]
    random_only = runs[runs["selector"] == "random"]
    return Page(
        PAGE, grid, runs, collected.pending, None, claims,
        tables={"runs": status_counts(runs),
                "figure_3a_ao": random_ao.pivot_table(index="dataset", columns="model", values="mean"),
                "figure_3b": next_item.pivot_table(index=["dataset", "model"], columns="metric", values="mean")},
        figures={"figure_3a": figure_3a},
        values=values,
        notices={
            "figure_3a_ao": status_notice("Figure 3(a), AO of random LOO", random_only, command),
            "figure_3b": status_notice("Figure 3(b), next-item metrics", random_only, command),
            "figure_3a": status_notice("Figure 3(a)", runs, command)},
        checks=checks, claims_command=command)
