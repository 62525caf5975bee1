"""CASPER Figures 5 and 6: one model (the paper: LatentCross) under every perturbation method across
datasets (5), and stability by MRR group under CASPER deletion (6)."""

from __future__ import annotations

import dataclasses

from ...experiments.casper import CasperGrid, Collected
from ..casper import group_table, lowest_ao_claim, mrr_group_claim, rls_bars, summarize_rls
from ..claims import claims_frame, ordering_claim
from ..names import display_name
from . import Page, count_text, status_notice
from .casper_runs import collect_page, printed, status_counts

PAGE = "casper/figure-05-06-latentcross-datasets"
GRID = CasperGrid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("models",)  # list parameters this page draws one value of (its titles name it)


def build(collected: Collected | None = None, **params) -> Page:
    """The Figures 5-6 page at notebook parameters ``params``: its runs, the AO of every method per
    dataset, Jaccard@10 per MRR group under CASPER deletion, the claims and the glued values."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="Figures 5 and 6")
    model = display_name(grid.models[0])
    runs = collected.runs
    summary = summarize_rls(runs, ["dataset", "perturbation", "selector"], ["ao", "rbo_min", "jaccard"])
    ao = summary[summary["metric"] == "ao"].pivot_table(index=["perturbation", "dataset"], columns="selector",
                                                         values="mean")
    casper_loo = runs[(runs["selector"] == "casper") & (runs["perturbation"] == "loo")]
    groups = group_table(casper_loo, ["dataset"], "jaccard")

    complete = ao.dropna() if len(ao) else ao
    casper_lowest = int((complete.idxmin(axis=1) == "casper").sum()) if len(complete) else 0
    values = {
        "n_settings": len(complete) if len(complete) else "pending",
        "casper_lowest": casper_lowest if len(complete) else "pending",
        "n_groups": len(groups) if len(groups) else "pending",
        "casper_lowest_settings": count_text(
            casper_lowest, len(complete), "by means CASPER has the lowest AO in {count} of {total} (perturbation, "
            "dataset) settings computed", "which method has the lowest mean AO is pending (no (perturbation, "
            "dataset) setting computed yet)"),
        "groups_datasets": count_text(len(groups), len(groups), "over {total} datasets",
                                      "pending: no dataset computed yet"),
    }
    done = runs[runs["status"] == "computed"]
    claims = claims_frame([  # on every run: those without a record count as pending in each claim's scope
        lowest_ao_claim(runs, "casper", [s for s in grid.selectors if s not in ("casper", "none")],
                        ["dataset", "perturbation"],
                        "casper_lowest_ao", "CASPER gives the lowest AO on every dataset (Figure 5)"),
        ordering_claim("baselines_latest_random_earliest",
                       "Baselines ordered Latest-Random > Random > Earliest-Random in AO", runs, "selector",
                       [("latest", "random"), ("random", "earliest")], "ao", ["dataset", "perturbation"]),
        mrr_group_claim(runs[(runs["selector"] == "casper") & (runs["perturbation"] == "loo")], ["dataset"],
                        groups=("low", "mid", "high"), id="low_mrr_least_stable"),
    ])

    def figure_5():
        for pert in grid.perturbations:
            part = summary[summary["perturbation"] == pert]
            if len(part):
                rls_bars(part, x="dataset", hue="selector", metrics=["ao", "jaccard"],
                         title=f"{model}, {display_name(pert)}")

    def figure_6():
        groups.set_index("dataset")[["jaccard_high", "jaccard_mid", "jaccard_low"]].plot.bar(
            rot=0, title=f"{model}, CASPER LOO: Jaccard@10 by MRR group", ylim=(0, 1.05))

    checks = [printed(done[["dataset", "perturbation", "selector", "seed", "ao", "jaccard", "jaccard_high",
                            "jaccard_mid", "jaccard_low"]].round(2)),
              runs["status"].value_counts().to_string()]
    figure_6_notice = status_notice("Figure 6 (CASPER deletion runs)", casper_loo, command)
    if groups.empty:  # nothing to draw: the notice alone
        figure_6_notice = dataclasses.replace(figure_6_notice, partial=False)
    notices = {"figure_5_ao": status_notice("Figure 5, AO per method", runs, command),
               "figure_5": status_notice("Figure 5", runs, command),
               "figure_6_groups": figure_6_notice, "figure_6": figure_6_notice}
    return Page(
        PAGE, grid, runs, collected.pending, None, claims,
        tables={"runs": status_counts(runs), "figure_5_ao": ao, "figure_6_groups": groups},
        figures={"figure_5": figure_5, "figure_6": figure_6},
        values=values,
        notices=notices,
        checks=checks, claims_command=command)
