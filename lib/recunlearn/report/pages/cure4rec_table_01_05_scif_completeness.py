"""CURE4Rec Tables 1 and 5: completeness (MIO), utility and fairness of Learn, Retrain and SCIF beside the
paper, its claims, how SCIF's damping moves them, and the exact methods' MIO (not in the
paper)."""

from __future__ import annotations

import pandas as pd

from ...experiments.cure4rec import Collected, pending_reason
from ...experiments.cure4rec_scif import (ScifGrid, collect, collect_damping_sweep, collect_exact_mio,
                                          damping_sweep_configs, exact_mio_configs)
from ..compare import paper_layout, paper_vs_ours_table, within_text
from ..cure4rec_scif import (compare_scif, damping_sweep_table, exact_mio_table, exact_mio_values, mio_gap_table,
                             mio_gap_values, paper_quote_values, scif_claims, scif_extra_table,
                             with_pending_scif_rows)
from ..glance import with_page_runs
from ..names import display_name
from ..paper import paper_table
from ..plots import damping_sweep, method_bars
from . import (Notice, Page, computed_cells, distinct_pending, distinct_runs, pending_command, pending_runs_notice,
               runs_table, validated)
from .cure4rec_runs import NO_RUN, comparison_command, grid_cells_notice, printed

PAGE = "cure4rec/table-01-05-scif-completeness"
GRID = ScifGrid  # the parameters of this page (its notebook's), validated before any compute
KEYS = ["dataset", "model", "method", "selection"]
METRICS = ["ndcg_untruncated", "hr_cure4rec", "mio_accuracy", "a_igf"]


def build(collected: Collected | None = None, exact_mio: Collected | None = None, sweep: Collected | None = None,
          **params) -> Page:
    """The Tables 1/5 page at notebook parameters ``params``: its runs, the paper's Tables 1 and 5 (and Learn
    row) with our numbers in them (``paper_table``) and cell by cell (``comparison``), SCIF's solver, the
    figure, the paper's claims, the damping sweep and the exact methods' MIO, with the values its text
    glues. ``collected``, ``exact_mio`` and ``sweep`` replace the collected SCIF runs, exact-method MIO runs
    and damping sweep."""
    grid = validated(GRID, params)
    sweep_grid = grid.damping_sweep_grid()
    collected = collect(grid) if collected is None else collected
    if sweep is None and sweep_grid is not None:
        sweep = collect_damping_sweep(sweep_grid)
    exact_mio = collect_exact_mio(grid) if exact_mio is None else exact_mio
    sweep_configs = damping_sweep_configs(sweep_grid) if sweep_grid is not None else []
    configs = distinct_runs(grid.runs() + exact_mio_configs(grid) + sweep_configs)
    pending = distinct_pending(*(c.pending for c in (collected, exact_mio, sweep) if c is not None))
    command = pending_command(PAGE, grid.device, pending, configs)
    runs, total = collected.runs, len(grid.runs())

    paper, learn_paper = paper_table("cure4rec-table-01-05"), paper_table("cure4rec-learn")
    comparison = compare_scif(runs, paper, learn_paper, METRICS, selections=grid.selections)
    in_grid = comparison[comparison["dataset"].isin(grid.datasets) & comparison["model"].isin(grid.models)
                         & comparison["selection"].isin(grid.selections)]
    shown = computed_cells(in_grid)

    def figure():
        for metric, title in [("mio_accuracy", "MIO accuracy (0.5 = complete)"), ("ndcg_untruncated", "NDCG@20")]:
            method_bars(runs, metric, f"{title} after unlearning 5 % of users",
                        paper=paper[(paper["metric"] == metric) & paper["dataset"].isin(grid.datasets)])

    if sweep_grid is None:
        no_sweep = Notice("The damping sweep", "not asked for at these parameters (DAMPING_SWEEP_MODELS = None)")
        sweep_runs = pd.DataFrame()
    else:
        no_sweep = pending_runs_notice("The damping sweep", len(sweep_configs), sweep.pending, command)
        sweep_runs = sweep.runs
    mio_runs = exact_mio.runs
    exact_notice = pending_runs_notice("The exact methods' MIO", len(exact_mio_configs(grid)), exact_mio.pending,
                                       command)

    sweep_dataset = display_name(sweep_grid.datasets[0]) if sweep_grid is not None else "not run"
    values = {"sweep_dataset": sweep_dataset, "within_tol": within_text(comparison),
              **mio_gap_values(runs, paper, learn_paper), **paper_quote_values(paper, learn_paper),
              **exact_mio_values(mio_runs, runs)}
    checks = [NO_RUN] if runs.empty else [
        printed(runs.groupby(KEYS)[["ndcg_untruncated", "hr_cure4rec", "a_igf"]].mean().round(2)),
        printed(runs.groupby(KEYS).size())]
    comparison_notice = grid_cells_notice("Tables 1 and 5, paper vs ours", comparison, grid, ["model", "selection"],
                                     pending_reason(grid.device), comparison_command(PAGE, grid, command, pending))
    return Page(
        PAGE, grid, with_page_runs(runs, len(configs), pending), pending, comparison,
        scif_claims(with_pending_scif_rows(runs)),
        tables={"runs": runs_table(len(configs), pending),
                "paper_table": paper_layout(in_grid, ["model", "method", "selection"], ["dataset", "metric"],
                                            METRICS, digits={"mio_accuracy": 3}) if len(shown) else shown,
                "comparison": paper_vs_ours_table(shown, KEYS, METRICS, metrics_as_rows=True) if len(shown)
                else shown,
                "extra": scif_extra_table(runs) if len(runs) else runs,
                "mio_gap": mio_gap_table(runs),
                "damping_table": damping_sweep_table(sweep_runs) if len(sweep_runs) else sweep_runs,
                "exact_mio": exact_mio_table(mio_runs, runs) if len(mio_runs) or len(runs) else mio_runs},
        figures={"figure": figure,
                 "damping_figure": lambda: damping_sweep(
                     sweep_runs,
                     f"SCIF's MIO accuracy against its damping ({sweep_dataset}, random users, first seed)")},
        values=values,
        notices=dict(
            runs=pending_runs_notice("The runs of this page", len(configs), pending, command),
            paper_table=comparison_notice, comparison=comparison_notice,
            extra=pending_runs_notice("MIO AUC, standard metrics and SCIF's solver", total, collected.pending, command),
            figure=pending_runs_notice("The figure", total, collected.pending, command),
            mio_gap=pending_runs_notice("The MIO gap", total, collected.pending, command),
            damping_figure=no_sweep, damping_table=no_sweep if sweep_runs.empty else None,
            exact_mio=exact_notice),
        checks=checks, claims_command=command)
