"""CASPER Table 3: which interaction to perturb on Foursquare, deletion (a), replacement (b) and
insertion (ours; the paper reports none), every method of the paper (Random, Earliest-, Latest-Random,
TracIn, Rev.Adv. random and earliest, CASPER; plus the authors' TracIn proxy), the paired tests behind
"CASPER beats every baseline", the authors' item renumbering, measured without training and on
JODIE and LatentCross trained under it, and JODIE's and LatentCross's test pass with online steps
(the authors') against frozen parameters. The renumbering is measured on the dataset's file at render
time (no training), so this page reads the file as well as the run records."""

from __future__ import annotations

from ...data.sequences import load_stream
from ...experiments.casper import MODELS, Collected, renumbering_table
from ..casper import (ProtocolGrid, best_method_claims, casper_vs_baselines, label_pending, method_label, paper_margins,
                      rls_bars, summarize_rls, table3_claims, table3_view, unchanged_runs_text)
from ..casper_variants import at_defaults
from ..compare import compare, verdict
from ..names import display_name, sort_paper_order
from ..paper import paper_range, paper_table
from . import Page, cells_notice, computed_cells, count_text, status_notice
from .casper_runs import collect_page, printed, status_counts, variant_sections

PAGE = "casper/table-03-perturbation-methods"
GRID = ProtocolGrid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("datasets",)  # list parameters this page draws one value of (its titles name it)
KEYS = ["dataset", "model", "selector", "perturbation", "replacement"]


def build(collected: Collected | None = None, **params) -> Page:
    """The Table 3 page at notebook parameters ``params``: its runs, the comparison with the paper's
    Table 3 (AO, every row, pending cells named with the paper's value; RBO(0.9) ours only), the paired
    tests of CASPER against every baseline, the renumbering artefact (untrained, and the numbering
    comparison's trained runs), the test-protocol comparison (the variants' runs are read only by their
    sections), the claims and the glued values."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="Table 3")
    dataset = display_name(grid.datasets[0])
    every_run = collected.runs
    runs = at_defaults(every_run)
    summary = summarize_rls(runs, KEYS, ["ao", "rbo_min", "jaccard"])
    paper = paper_table("casper-table-03")
    comparison = label_pending(compare(summary, paper[KEYS + ["metric", "value", "resolution"]], KEYS), runs, KEYS)
    artifact = renumbering_table(grid.datasets[0], list(grid.seeds))
    lowest = best_method_claims(comparison)
    claims = table3_claims(runs)
    tests = casper_vs_baselines(runs)
    in_grid = comparison[comparison["model"].isin(grid.models) & comparison["selector"].isin(grid.selectors)
                         & comparison["perturbation"].isin(grid.perturbations)]

    floor = artifact.set_index(["selector", "perturbation", "replacement"])
    values = {
        "verdict_table3": verdict(comparison[comparison["paper"].notna()]),
        "unchanged_runs": unchanged_runs_text(runs),
        "n_columns": len(lowest) if len(lowest) else "pending",
        "n_casper_lowest": int(lowest["casper_lowest"].sum()) if len(lowest) else "pending",
        "casper_lowest_columns": count_text(
            int(lowest["casper_lowest"].sum()) if len(lowest) else 0, len(lowest),
            "By means CASPER has the lowest AO in {count} of the {total} (perturbation, model) columns computed.",
            "Which method has the lowest mean AO per (perturbation, model) column is pending: no column computed "
            "yet."),
        "floor_unpop": f"{floor.loc[('casper', 'replace', 'unpopular'), 'ao_floor']:.3f}",
        "ids_unpop": f"{floor.loc[('casper', 'replace', 'unpopular'), 'renumbered_items']:,.0f}",
        "floor_insert": f"{floor.loc[('casper', 'insert', 'unpopular'), 'ao_floor']:.3f}",
        "floor_casper_random": f"{floor.loc[('casper', 'replace', 'random'), 'ao_floor']:.3f}",
        "ids_earliest": f"{floor.loc[('earliest', 'loo', 'random'), 'renumbered_items']:,.0f}",
        "n_items": f"{load_stream(grid.datasets[0]).n_items:,}",
        "n_baselines_tested": count_text(len(tests), len(tests), "{total}", "no"),
        "paper_loo_margins": ", ".join(f"{display_name(model)} {margin:.3f}" for model, margin in
                                       paper_margins(paper).reindex(list(MODELS)).dropna().items()),
        "paper_lstm_range": paper_range(paper, 3, model="lstm"),
        "paper_unbounded_casper_replace_range": paper_range(paper, 2, selector="casper", perturbation="replace",
                                                            model=["jodie", "latentcross"]),
    }
    ordered = sort_paper_order(summary, ["perturbation", "selector", "replacement"])  # the figure follows the table
    several = ordered["perturbation"].nunique() > 1  # name the perturbation only when there are several
    shown = ordered.assign(method=[method_label(s, p, r) + (f", {display_name(p)}" if several else "") for s, p, r in
                                   zip(ordered["selector"], ordered["perturbation"], ordered["replacement"])])
    computed = runs[runs["status"] == "computed"]
    checks = [printed(computed[["model", "selector", "perturbation", "replacement", "seed", "ao", "rbo_min",
                                "jaccard"]].round(2)),
              runs["status"].value_counts().to_string()]
    notices = {"table_3": cells_notice("Table 3 (AO)", comparison[comparison["metric"] == "ao"], command),
               "table_3_rbo": status_notice("Table 3 as RBO(0.9)", runs, command),
               "figure": status_notice("The figure of Table 3", runs, command),
               "lowest": status_notice("The lowest AO per column", runs, command),
               "paired_tests": status_notice("The paired tests of CASPER against each baseline", runs, command)}
    variants = variant_sections(PAGE, grid, collected, paper, dataset)
    return Page(
        PAGE, grid, every_run, collected.pending, comparison[comparison["paper"].notna()], claims,
        tables={"runs": status_counts(every_run), "table_3": table3_view(in_grid if len(computed_cells(comparison))
                                                                    else computed_cells(comparison)),
                "table_3_rbo": table3_view(comparison, "rbo_min"), "renumbering": artifact.round(3),
                "lowest": lowest, "paired_tests": tests, **variants.tables},
        figures={"figure": lambda: rls_bars(shown, x="method", hue="model", metrics=["ao", "jaccard"],
                                            title=f"{dataset}: perturbation methods"),
                 **variants.figures},
        values={**values, **variants.values},
        notices={**notices, **variants.notices},
        checks=checks + variants.checks, claims_command=command)
