"""CASPER claims at a CPU-sized scale (not a paper item): the chapter's qualitative claims on a prefix
of one dataset with a few epochs -- deletion and replacement with every selector, and CASPER's
deletion of k = 1..8 interactions -- the paper's full-scale Table 3 values beside ours for orientation;
how much the authors' item numbering changes JODIE's and LatentCross's AO, how much their test
pass's online steps do, how much the LSTM's fixed random item embeddings do, and how much
LatentCross's LSTM cell (the paper describes a GRU) does."""

from __future__ import annotations

from ...experiments.casper import Collected
from ..casper import (RLS, ReducedScaleGrid, casper_k_sweep, group_table, k_figure, label_pending,
                      one_interaction, reduced_scale_claims, rls_bars, summarize_rls, table3_view)
from ..casper_variants import at_defaults
from ..compare import compare, mean_std_table
from ..names import display_name, display_names, span_text
from ..paper import paper_table
from . import Page, cells_notice, computed_cells, status_notice
from .casper_runs import collect_page, printed, status_counts, variant_sections

PAGE = "casper/claims-reduced-scale-cpu"
GRID = ReducedScaleGrid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("datasets",)  # list parameters this page draws one value of (its titles name it)
KEYS = ["dataset", "model", "selector", "perturbation", "replacement"]


def build(collected: Collected | None = None, **params) -> Page:
    """The reduced-scale claims page at notebook parameters ``params``: its runs, our values beside the
    paper's Table 3 (for orientation, not for a verdict), CASPER's sweep over k, the claims and the
    glued values; the runs of the protocol variants (item numberings, test passes, LSTM embeddings,
    LatentCross cells) are read only by their sections."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="this page")
    every_run = collected.runs
    runs = at_defaults(every_run)
    single, sweep = one_interaction(runs), casper_k_sweep(runs)
    summary = summarize_rls(single, KEYS, RLS + ["mrr_original", "mrr_perturbed"])
    paper = paper_table("casper-table-03")
    comparison = label_pending(compare(summary, paper[KEYS + ["metric", "value", "resolution"]], KEYS))
    comparison = comparison[comparison["model"].isin(grid.models) & comparison["selector"].isin(grid.selectors)
                            & comparison["perturbation"].isin(grid.perturbations)
                            & (comparison["replacement"].isin(grid.replacements)
                               | (comparison["perturbation"] == "loo"))]
    claims = reduced_scale_claims(runs)

    perturbed_ao = summary[(summary["metric"] == "ao") & (summary["selector"] != "none")]["mean"]
    paper_ao = comparison[(comparison["metric"] == "ao") & comparison["paper"].notna()]["paper"]
    rows = f"the first {grid.max_rows:,} rows" if grid.max_rows else "all rows"
    values = {"ao_range": span_text(perturbed_ao, 3, empty="not run"),
              "paper_ao_range": span_text(paper_ao, 4, empty="none"),
              "k_max": str(max(grid.casper_ks)),
              "scale": f"{rows} of {', '.join(display_names(grid.datasets))}, {grid.epochs} epochs, seeds "
                       f"{', '.join(map(str, grid.seeds))}, models {', '.join(display_names(grid.models))}, "
                       f"on {grid.device}"}
    computed = runs[runs["status"] == "computed"]
    checks = [printed(computed[["model", "selector", "perturbation", "replacement", "k", "seed", "ao", "rbo_min",
                                "jaccard", "mrr_original", "mrr_perturbed"]].round(2))]
    rows_title = f"first {grid.max_rows:,} rows" if grid.max_rows else "all rows"
    dataset = display_name(grid.datasets[0])
    done_sweep = sweep[sweep["status"] == "computed"]
    sweep_summary = summarize_rls(sweep, ["model", "k"], ["ao"])
    notices = {"table_3a": cells_notice("Our AO beside Table 3", comparison[comparison["metric"] == "ao"], command),
               "rbo": status_notice("RBO(0.9)", single, command),
               "jaccard": status_notice("Jaccard@10", single, command),
               "figure": status_notice("The figure", single, command),
               "groups": status_notice("Jaccard@10 by MRR group", single, command),
               "k_sweep": status_notice("CASPER's sweep over k", sweep, command),
               "k_figure": status_notice("The sweep's figure", sweep, command)}
    variants = variant_sections(PAGE, grid, collected, paper, f"{dataset}, {rows_title}, {grid.epochs} epochs")
    deletion = summary[(summary["metric"].isin(RLS)) & (summary["perturbation"] == "loo")]
    return Page(
        PAGE, grid, every_run, collected.pending, None, claims,
        tables={"runs": status_counts(every_run), "table_3a": table3_view(computed_cells(comparison)),
                "rbo": table3_view(comparison, "rbo_min"), "jaccard": table3_view(comparison, "jaccard"),
                "groups": group_table(single[single["perturbation"] == "loo"], ["model", "selector"],
                                      "jaccard").round(3),
                "k_sweep": mean_std_table(done_sweep, ["model", "k"], RLS), **variants.tables},
        figures={"figure": lambda: rls_bars(deletion, x="selector", hue="model", metrics=RLS,
                                            title=f"{dataset}, {rows_title}, {grid.epochs} epochs: "
                                                  "M vs M' after one deletion"),
                 "k_figure": lambda: k_figure(sweep_summary, ["ao"], f"{dataset}, {rows_title}, {grid.epochs} "
                                              "epochs: CASPER deletes k interactions", by="model"),
                 **variants.figures},
        values={**values, **variants.values},
        notices={**notices, **variants.notices},
        checks=checks + variants.checks, claims_command=command)
