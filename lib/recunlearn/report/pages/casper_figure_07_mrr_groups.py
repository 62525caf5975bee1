"""CASPER Figure 7: who loses stability under each method. One model on one dataset (the paper: LatentCross
on Foursquare), deletion (LOO):
Jaccard@10 between M's and M''s top-10 lists per MRR group of users (top 20 %, middle 60 %, bottom 20 %
by the original model's per-user MRR; the perturbed user's test interactions excluded; group means over
test interactions), for every perturbation method."""

from __future__ import annotations

from ...experiments.casper import CasperGrid, Collected
from ..casper import (casper_lowest_per_group_claim, least_stable_counts, low_mrr_least_stable_claim,
                      method_group_means, mrr_group_figure)
from ..claims import claims_frame
from ..names import display_name, display_names
from . import Page, count_text, status_notice
from .casper_runs import collect_page, printed, status_counts

PAGE = "casper/figure-07-mrr-groups"
GRID = CasperGrid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("models", "datasets")  # list parameters this page draws one value of (its titles name it)


def build(collected: Collected | None = None, **params) -> Page:
    """The Figure 7 page at notebook parameters ``params``: its runs, Jaccard@10 per MRR group for every
    method, the two claims and the glued values."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="Figure 7")
    scope = f"{display_name(grid.models[0])}, {display_name(grid.datasets[0])}"
    runs = collected.runs
    done = runs[(runs["status"] == "computed") & (runs["selector"] != "none")]
    claims = claims_frame([low_mrr_least_stable_claim(runs), casper_lowest_per_group_claim(runs)])
    counts = least_stable_counts(done)
    rows = f"the first {grid.max_rows:,} rows" if grid.max_rows else "all rows"
    values = {
        "low_least_methods": count_text(counts["low_least"], counts["methods"], "by means the bottom-20 % group "
                                        "has the lowest Jaccard@10 for {count} of the {total} methods computed",
                                        "which group is least stable is pending (no method computed)"),
        "casper_lowest_groups": count_text(counts["casper_lowest"], counts["groups"],
                                           "by means CASPER is the lowest in {count} of the {total} groups",
                                           "whether CASPER is the lowest per group is pending (no CASPER run)"),
        "scale": f"{rows} of {', '.join(display_names(grid.datasets))}, {grid.epochs} epochs, seeds "
                 f"{', '.join(map(str, grid.seeds))}, model {', '.join(display_names(grid.models))}",
    }

    checks = [printed(done[["selector", "seed", "jaccard", "jaccard_high", "jaccard_mid", "jaccard_low"]].round(2)),
              runs["status"].value_counts().to_string()]
    notices = {"groups": status_notice("Jaccard@10 by MRR group", runs, command, by="selector"),
               "figure": status_notice("Figure 7", runs, command, by="selector")}
    return Page(
        PAGE, grid, runs, collected.pending, None, claims,
        tables={"runs": status_counts(runs), "groups": method_group_means(done)},
        figures={"figure": lambda: mrr_group_figure(done, f"{scope}, one deletion: top-10 stability by MRR group")},
        values=values,
        notices=notices,
        checks=checks, claims_command=command)
