"""CURE4Rec Table 2: utility (NDCG@20, HR@20) of Retrain and the three exact methods after unlearning
5 % of users, in the paper's layout and cell by cell; the original combiners beside routing; the
paper's claims."""

from __future__ import annotations

from ...experiments.cure4rec import Collected, pending_reason
from ...experiments.cure4rec_exact import (EXACT_UTILITY, ExactCollected, ExactGrid, collect_combiner_variants,
                                           combiner_variant_grids)
from ..claims import with_pending_rows
from ..compare import paper_layout, paper_vs_ours_table, within_text
from ..cure4rec import compare_exact, paper_agreement_text, retrain_in_two_tables, utility_claims
from ..glance import with_page_runs
from ..names import display_name
from ..paper import paper_table
from ..plots import method_bars
from . import Page, computed_cells, distinct_pending, distinct_runs, pending_command, pending_runs_notice, runs_table
from .cure4rec_runs import collect_exact, comparison_command, grid_cells_notice, printed

PAGE = "cure4rec/table-02-eu-utility"
GRID = ExactGrid  # the parameters of this page (its notebook's), validated before any compute
METRICS = ["ndcg_untruncated", "hr_cure4rec"]
KEYS = ["dataset", "model", "method", "selection"]
VARIANT_VALUES = ["ndcg_untruncated", "hr_cure4rec", "a_igf", "unlearn_seconds"]


def build(collected: ExactCollected | None = None, variants: Collected | None = None, **params) -> Page:
    """The Table 2 page at notebook parameters ``params``: its runs, the paper's Table 2 with our numbers
    in it (``paper_table``) and cell by cell (``comparison``), the Retrain cells where its Table 2 and
    Tables 1/5 disagree (``paper_against_itself``, glued as ``paper_agreement``), the standard
    metrics, the combiner variants (``variants``, by default collected), the figure, the paper's
    claims and ``within_tol``. ``collected`` replaces the collected runs."""
    grid, collected, command = collect_exact(PAGE, GRID, params, collected)
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    variant_configs = [c for g in combiner_variant_grids(grid) for c in g.runs()]
    variants = collect_combiner_variants(grid) if variants is None else variants
    variants_command = pending_command(PAGE, grid.device, variants.pending, variant_configs)
    every_config = distinct_runs(grid.runs() + variant_configs)  # what the page reads, the variants' runs too
    every_pending = distinct_pending(pending, variants.pending)
    every_command = pending_command(PAGE, grid.device, every_pending, every_config)

    paper = paper_table("cure4rec-table-02")
    both = retrain_in_two_tables(paper, paper_table("cure4rec-table-01-05"), runs)
    disagree = both[~both["agree"]].drop(columns="agree").set_index(["dataset", "model", "selection", "metric"])
    against_itself = disagree.rename(columns={"table_2": "Table 2", "tables_1_5": "Tables 1/5",
                                              "ratio": "Table 2 / Tables 1/5", "ours": "ours"}).round(4)
    comparison = compare_exact(runs, paper, METRICS)
    in_grid = comparison[comparison["dataset"].isin(grid.datasets) & comparison["model"].isin(grid.models)]
    shown = computed_cells(in_grid)

    def figure():
        for metric in METRICS:
            method_bars(runs, metric, f"{display_name(metric)} after unlearning 5 % of users",
                        paper=paper[(paper["metric"] == metric) & paper["dataset"].isin(grid.datasets)])

    by_combiner = variants.runs
    combiners = (by_combiner.pivot_table(index=["dataset", "model", "method"], columns="combiner",
                                         values=VARIANT_VALUES).round(4) if len(by_combiner) else by_combiner)
    comparison_notice = grid_cells_notice("Table 2, paper vs ours", comparison, grid, ["model", "method", "selection"],
                                     pending_reason(grid.device),
                                     comparison_command(PAGE, grid, command, collected.pending))
    return Page(
        PAGE, grid, with_page_runs(runs, len(every_config), every_pending), pending, comparison, utility_claims(with_pending_rows(runs)),
        tables={"runs": runs_table(len(every_config), every_pending),
                "paper_table": paper_layout(in_grid, ["dataset", "model", "metric"], ["method", "selection"],
                                            METRICS) if len(shown) else shown,
                "comparison": paper_vs_ours_table(shown, KEYS, METRICS, metrics_as_rows=True) if len(shown)
                else shown,
                "paper_against_itself": against_itself,
                "standard_metrics": runs.groupby(KEYS)[EXACT_UTILITY].mean().round(4),
                "combiners": combiners},
        figures={"figure": figure},
        values={"within_tol": within_text(comparison), "paper_agreement": paper_agreement_text(both)},
        notices=dict(
            runs=pending_runs_notice("The runs of this page", len(every_config), every_pending, every_command),
            paper_table=comparison_notice, comparison=comparison_notice,
            paper_against_itself=None if len(runs) else pending_runs_notice("Our Retrain beside the paper's two tables",
                                                                    total, pending, command),
            standard_metrics=pending_runs_notice("The standard metrics", total, pending, command),
            combiners=pending_runs_notice("The combiner variants", len(variant_configs), variants.pending,
                                          variants_command),
            figure=pending_runs_notice("The figure", total, pending, command)),
        checks=[printed(runs.groupby(["dataset", "model", "method", "selection"])[METRICS].mean().round(2))],
        claims_command=command)
