"""CASPER Figure 7: who loses stability under each method. One model on one dataset (the paper: LatentCross
on Foursquare), deletion (LOO):
Jaccard@10 between M's and M''s top-10 lists per MRR group of users (top 20 %, middle 60 %, bottom 20 %
by the original model's per-user MRR; the perturbed user's test interactions excluded; group means over
test interactions), for every perturbation method."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ...experiments.casper import CasperGrid, Collected
from ..casper import (METHOD_LABELS, MRR_GROUPS, casper_lowest_per_group_claim, groups_long,
                      low_mrr_least_stable_claim)
from ..claims import claims_frame
from ..compare import format_mean_std
from ..names import display_name, display_names
from ..plots import legend_below, set_theme
from . import Page, count_text, runs_notice
from .casper_runs import collect_page, printed, status_counts

PAGE = "casper/figure-07-mrr-groups"
GRID = CasperGrid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("models", "datasets")  # list parameters this page draws one value of (its titles name it)
GROUP_LABELS = {"high": "top 20 % MRR", "mid": "middle 60 %", "low": "bottom 20 % MRR"}


def group_means(runs: pd.DataFrame, metric: str = "jaccard") -> pd.DataFrame:
    """Per method (rows, the paper's order) and MRR group (columns high, mid, low): ``metric`` as
    ``mean ± std`` over the computed seeds, with the number of seeds."""
    long = groups_long(runs, ["selector"], metric)
    if long.empty:
        return pd.DataFrame(columns=["method", *MRR_GROUPS, "seeds"])
    stats = long.groupby(["selector", "group"])[metric].agg(["mean", "std", "count"])
    order = [s for s in METHOD_LABELS if s in set(long["selector"])]
    rows = []
    for selector in order:
        cells = {g: (format_mean_std(stats.loc[(selector, g), "mean"], stats.loc[(selector, g), "std"], 4,
                                     n=stats.loc[(selector, g), "count"])
                     if (selector, g) in stats.index else "pending") for g in MRR_GROUPS}
        rows.append({"method": METHOD_LABELS[selector], **cells,
                     "seeds": int(long[long["selector"] == selector]["seed"].nunique())})
    return pd.DataFrame(rows)


def build(collected: Collected | None = None, **params) -> Page:
    """The Figure 7 page at notebook parameters ``params``: its runs, Jaccard@10 per MRR group for every
    method, the two claims and the glued values."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="Figure 7")
    scope = f"{display_name(grid.models[0])}, {display_name(grid.datasets[0])}"
    runs = collected.runs
    done = runs[(runs["status"] == "computed") & (runs["selector"] != "none")]
    table = group_means(done)
    long = groups_long(done, ["selector"])
    claims = claims_frame([low_mrr_least_stable_claim(runs), casper_lowest_per_group_claim(runs)])
    means = long.groupby(["selector", "group"])["jaccard"].mean().unstack() if len(long) else pd.DataFrame()
    low_least = int((means.idxmin(axis=1) == "low").sum()) if len(means) else 0
    casper_lowest = int(sum(means[g].idxmin() == "casper" for g in MRR_GROUPS if g in means)) \
        if len(means) and "casper" in means.index else 0
    rows = f"the first {grid.max_rows:,} rows" if grid.max_rows else "all rows"
    values = {
        "low_least_methods": count_text(low_least, len(means), "by means the bottom-20 % group has the lowest "
                                        "Jaccard@10 for {count} of the {total} methods computed",
                                        "which group is least stable is pending (no method computed)"),
        "casper_lowest_groups": count_text(casper_lowest, 3 if len(means) and "casper" in means.index else 0,
                                           "by means CASPER is the lowest in {count} of the {total} groups",
                                           "whether CASPER is the lowest per group is pending (no CASPER run)"),
        "scale": f"{rows} of {', '.join(display_names(grid.datasets))}, {grid.epochs} epochs, seeds "
                 f"{', '.join(map(str, grid.seeds))}, model {', '.join(display_names(grid.models))}",
    }

    def figure():
        set_theme()
        fig, ax = plt.subplots(figsize=(8, 3.6))
        shown = long.assign(method=long["selector"].map(METHOD_LABELS), group=long["group"].map(GROUP_LABELS))
        sns.barplot(shown, x="group", y="jaccard", hue="method", order=[GROUP_LABELS[g] for g in MRR_GROUPS],
                    hue_order=[METHOD_LABELS[s] for s in METHOD_LABELS if s in set(long["selector"])],
                    errorbar="sd", ax=ax)
        ax.set(xlabel="users by the original model's MRR", ylabel="Jaccard@10 (M vs M')",
               title=f"{scope}, one deletion: top-10 stability by MRR group")
        low = long["jaccard"].min()
        ax.set_ylim(max(0.0, low - 0.05), 1.0)
        legend_below(fig, ax, title="Method")

    checks = [printed(done[["selector", "seed", "jaccard", "jaccard_high", "jaccard_mid", "jaccard_low"]].round(2)),
              runs["status"].value_counts().to_string()]
    notices = {"groups": runs_notice("Jaccard@10 by MRR group", runs, command, by="selector"),
               "figure": runs_notice("Figure 7", runs, command, by="selector")}
    return Page(
        PAGE, grid, runs, collected.pending, None, claims,
        tables={"runs": status_counts(runs), "groups": table},
        figures={"figure": figure},
        values=values,
        notices=notices,
        checks=checks, claims_command=command)
