"""CASPER Figure 2: random leave-one-out per model (a) and stability by MRR group under CASPER (b)."""

from __future__ import annotations

from ...experiments.casper import CasperGrid, Collected
from ..casper import (RLS, format_value, group_table, label_pending, mrr_group_claim, rls_bars, summarize_rls,
                      summary_value, unchanged_runs_text)
from ..claims import claims_frame
from ..compare import compare, paper_vs_ours_table, verdict
from ..names import display_name
from ..paper import paper_table
from . import Page, cells_notice, computed_cells, status_notice
from .casper_runs import collect_page, printed, status_counts

PAGE = "casper/figure-02-random-loo"
GRID = CasperGrid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("datasets",)  # list parameters this page draws one value of (its titles name it)
GLUED_MODELS = ("lstm", "tisasrec", "latentcross")
GLUED_SELECTORS = ("none", "random", "casper")
GLUED_METRICS = ("ao", "rbo_min", "jaccard", "mrr_original", "mrr_perturbed")


def build(collected: Collected | None = None, **params) -> Page:
    """The Figure 2 page at notebook parameters ``params``: its runs, the comparison of random LOO with
    Table 3(a)'s Random row, the low-MRR claim of Figure 2(b) and the values its text glues."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="Figure 2")
    runs = collected.runs
    summary = summarize_rls(runs, ["dataset", "model", "selector"], RLS + ["mrr_original", "mrr_perturbed",
                                                                         "recall10_original", "recall10_perturbed"])
    paper = paper_table("casper-table-03")
    paper = paper[(paper["perturbation"] == "loo") & (paper["selector"] == "random")]
    ours_random = summary[(summary["selector"] == "random") & (summary["metric"] == "ao")]
    paper = paper[["dataset", "model", "metric", "value", "resolution"]]
    comparison = label_pending(compare(ours_random.drop(columns="selector"), paper, ["dataset", "model"]))
    claims = claims_frame([mrr_group_claim(runs[runs["selector"] == "casper"], ["dataset", "model"])])

    values = {"verdict_fig2a": verdict(comparison[comparison["paper"].notna()]),
              "unchanged_runs": unchanged_runs_text(runs)}
    for model in GLUED_MODELS:
        for selector in GLUED_SELECTORS:
            for metric in GLUED_METRICS:
                values[f"{model}_{selector}_{metric}"] = format_value(
                    summary_value(summary, metric=metric, selector=selector, model=model))

    shown = summary[summary["metric"].isin(RLS)]
    cells = computed_cells(comparison)
    computed = runs[runs["status"] == "computed"]
    checks = [printed(computed[["model", "selector", "seed", "ao", "rbo_min", "jaccard", "mrr_original",
                                "mrr_perturbed"]].round(2)),
              printed(runs[["model", "selector", "seed", "status"]])]
    return Page(
        PAGE, grid, runs, collected.pending, comparison, claims,
        tables={"runs": status_counts(runs),
                "comparison": paper_vs_ours_table(cells, ["dataset", "model"], ["ao"]) if len(cells) else cells,
                "figure_2b": group_table(runs, ["model", "selector"], "jaccard")},
        figures={"figure_2a": lambda: rls_bars(shown, x="model", hue="selector", metrics=RLS,
                                               title=f"{display_name(grid.datasets[0])}: M vs M' after one "
                                                     "perturbed interaction")},
        values=values,
        notices={
            "comparison": cells_notice("Figure 2(a) against Table 3(a)'s Random row", comparison, command),
            "figure_2a": status_notice("Figure 2(a)", runs, command),
            "figure_2b": status_notice("Figure 2(b)", runs, command)},
        checks=checks, claims_command=command)
