"""CURE4Rec Tables 1 and 5: completeness (MIO), utility and fairness of Learn, Retrain and SCIF beside the
paper, its claims, how SCIF's damping moves them, and the exact methods' MIO (not in the
paper)."""

from __future__ import annotations

import pandas as pd

from ...experiments.cure4rec import Collected, pending_reason
from ...experiments.cure4rec_scif import (ScifGrid, collect, collect_damping_sweep, collect_exact_mio,
                                          damping_sweep_configs, exact_mio_configs)
from ..compare import paper_layout, paper_vs_ours_table, within_text
from ..cure4rec_scif import (MIO_GAP_BAND, compare_scif, damping_sweep_table, exact_mio_table, paper_gap_text,
                             paper_mio_gaps, retrain_mio_agreement, scif_claims)
from ..glance import with_page_runs
from ..names import by_dataset, display_name, span_text
from ..paper import paper_range, paper_table
from ..plots import damping_sweep, method_bars
from . import Notice, Page, computed_cells, distinct_pending, distinct_runs, validated
from .cure4rec_runs import (NO_RUN, cells_notice, comparison_command, fixed, pending_command, printed,
                            runs_notice, runs_table)

PAGE = "cure4rec/table-01-05-scif-completeness"
GRID = ScifGrid  # the parameters of this page (its notebook's), validated before any compute
KEYS = ["dataset", "model", "method", "selection"]
CELL = ["dataset", "model", "selection"]
METRICS = ["ndcg_untruncated", "hr_cure4rec", "mio_accuracy", "a_igf"]
EXTRA = ["mio_auc", "mio_train_accuracy", "ndcg", "hit_ratio", "a_igf_standard", "unlearn_seconds", "cg_iterations",
         "damping"]
CLOSE_TO_CHANCE = 0.05
"""An exact method's MIO accuracy within this of 0.5 is consistent with complete unlearning."""


def mio_values(runs: pd.DataFrame, paper: pd.DataFrame, learn_paper: pd.DataFrame) -> dict:
    """The glued gaps of the page, per dataset over the cells (dataset, model, selection) that both the
    paper and our runs have: SCIF − Retrain MIO accuracy (ours ``mio_gap``, the paper's
    ``paper_mio_gap``) and SCIF's NDCG@20 loss from Learn (``ndcg_drop``, ``paper_ndcg_drop``)."""
    theirs = paper.pivot_table(index=CELL, columns=["metric", "method"], values="value")
    learn = learn_paper[learn_paper["metric"] == "ndcg_untruncated"].set_index(["dataset", "model"])["value"]
    learn_per_cell = pd.Series(learn.reindex(theirs.index.droplevel("selection")).to_numpy(), index=theirs.index)
    papers = {"mio_gap": paper_mio_gaps(paper), "ndcg_drop": learn_per_cell - theirs[("ndcg_untruncated", "scif")]}
    values = {}
    for name, ours in [("mio_gap", _difference(runs, "mio_accuracy", "scif", "retrain")),
                       ("ndcg_drop", _difference(runs, "ndcg_untruncated", "learn", "scif"))]:
        both = pd.concat({"ours": ours, "paper": papers[name]}, axis=1).dropna()
        means = both.groupby(level="dataset").mean()
        spec = "+.3f" if name == "mio_gap" else ".4f"  # the NDCG loss can be a few ten-thousandths
        values[name], values[f"paper_{name}"] = by_dataset(means["ours"], spec), by_dataset(means["paper"], spec)
    return values


def paper_quotes(paper: pd.DataFrame, learn_paper: pd.DataFrame) -> dict:
    """The paper's numbers the page's prose quotes: its Learn MIO accuracy range
    (``paper_learn_mio_range``) and its own SCIF − Retrain gaps cell by cell (``paper_mio_gap_cells``)
    against our band for "about 4 %" (``mio_gap_band``)."""
    return {"paper_learn_mio_range": paper_range(learn_paper, 2, metric="mio_accuracy").replace("-", "–"),
            "paper_mio_gap_cells": paper_gap_text(paper), "mio_gap_band": "{:.2f}-{:.2f}".format(*MIO_GAP_BAND)}


def _difference(runs: pd.DataFrame, metric: str, first: str, second: str) -> pd.Series:
    """Per cell (mean over seeds): ``metric`` of method ``first`` minus that of ``second``."""
    table = runs.pivot_table(index=CELL, columns="method", values=metric) if len(runs) else pd.DataFrame()
    if first not in table or second not in table:  # nothing to compare yet
        return pd.Series(dtype=float, index=pd.MultiIndex.from_tuples([], names=CELL))
    return table[first] - table[second]


def gap_table(runs: pd.DataFrame) -> pd.DataFrame:
    """MIO accuracy of Learn, Retrain and SCIF per cell (mean over seeds) and SCIF − Retrain."""
    if runs.empty:
        return pd.DataFrame()
    gap = runs.pivot_table(index=CELL, columns="method", values="mio_accuracy")
    gap["scif_minus_retrain"] = gap["scif"] - gap["retrain"]
    return gap.round(3)


def exact_values(exact_mio: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """The glued MIO ranges of the exact methods and of SCIF, the largest distance of an exact cell from
    0.5 and what it says (``pending`` where nothing is computed)."""
    exact_means = exact_mio.groupby(["dataset", "model", "method", "selection"])["mio_accuracy"].mean()
    scif_means = runs[runs["method"] == "scif"].groupby(CELL)["mio_accuracy"].mean()
    distance = (exact_means.astype(float) - 0.5).abs()
    if not len(exact_means):
        verdict = "pending"
    elif bool((distance <= CLOSE_TO_CHANCE).all()):
        verdict = "every exact cell is within 0.05 of 0.5, consistent with complete unlearning"
    else:
        verdict = "not every exact cell is within 0.05 of 0.5: see the table"
    return {"exact_mio_range": span_text(exact_means, 3), "exact_mio_maxdev": fixed(distance.max(), 3),
            "scif_mio_range": span_text(scif_means, 3), "exact_verdict": verdict,
            "retrain_mio_agreement": retrain_mio_agreement(exact_mio, runs)}


def extra_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting, means over seeds of the run's other measures (:data:`EXTRA`), four decimals except
    the damping δ, which is written with three significant digits (BPR's and LightGCN's are ~1e-6)."""
    table = runs.groupby(KEYS)[EXTRA].mean()
    rounded = table.drop(columns="damping").round(4)
    return rounded.assign(damping=table["damping"].map(lambda v: f"{v:.3g}" if pd.notna(v) else None))


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
        no_sweep = runs_notice("The damping sweep", len(sweep_configs), sweep.pending, command)
        sweep_runs = sweep.runs
    mio_runs = exact_mio.runs
    exact_notice = runs_notice("The exact methods' MIO", len(exact_mio_configs(grid)), exact_mio.pending, command)

    sweep_dataset = display_name(sweep_grid.datasets[0]) if sweep_grid is not None else "not run"
    values = {"sweep_dataset": sweep_dataset, "within_tol": within_text(comparison),
              **mio_values(runs, paper, learn_paper), **paper_quotes(paper, learn_paper),
              **exact_values(mio_runs, runs)}
    checks = [NO_RUN] if runs.empty else [
        printed(runs.groupby(KEYS)[["ndcg_untruncated", "hr_cure4rec", "a_igf"]].mean().round(2)),
        printed(runs.groupby(KEYS).size())]
    comparison_notice = cells_notice("Tables 1 and 5, paper vs ours", comparison, grid, ["model", "selection"],
                                     pending_reason(grid.device), comparison_command(PAGE, grid, command, pending))
    return Page(
        PAGE, grid, with_page_runs(runs, len(configs), pending), pending, comparison, scif_claims(runs),
        tables={"runs": runs_table(len(configs), pending),
                "paper_table": paper_layout(in_grid, ["model", "method", "selection"], ["dataset", "metric"],
                                            METRICS, digits={"mio_accuracy": 3}) if len(shown) else shown,
                "comparison": paper_vs_ours_table(shown, KEYS, METRICS, metrics_as_rows=True) if len(shown)
                else shown,
                "extra": extra_table(runs) if len(runs) else runs,
                "mio_gap": gap_table(runs),
                "damping_table": damping_sweep_table(sweep_runs) if len(sweep_runs) else sweep_runs,
                "exact_mio": exact_mio_table(mio_runs, runs) if len(mio_runs) or len(runs) else mio_runs},
        figures={"figure": figure,
                 "damping_figure": lambda: damping_sweep(
                     sweep_runs,
                     f"SCIF's MIO accuracy against its damping ({sweep_dataset}, random users, first seed)")},
        values=values,
        notices=dict(
            runs=runs_notice("The runs of this page", len(configs), pending, command),
            paper_table=comparison_notice, comparison=comparison_notice,
            extra=runs_notice("MIO AUC, standard metrics and SCIF's solver", total, collected.pending, command),
            figure=runs_notice("The figure", total, collected.pending, command),
            mio_gap=runs_notice("The MIO gap", total, collected.pending, command),
            damping_figure=no_sweep, damping_table=no_sweep if sweep_runs.empty else None,
            exact_mio=exact_notice),
        checks=checks, claims_command=command)
