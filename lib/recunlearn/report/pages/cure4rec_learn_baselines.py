"""CURE4Rec Tables 1 and 5, rows "Learn": the original WMF, BPR and LightGCN models beside the paper,
under both validation rules, with their training cost."""

from __future__ import annotations

from ...data.splits import VALIDATION_RULES
from ...experiments.cure4rec import Collected, LearnGrid, collect, pending_reason
from ..compare import paper_layout, paper_vs_ours_table, verdict, within_text
from ..cure4rec import compare_learn
from ..names import display_frame, display_name
from ..paper import paper_table, paper_values
from ..plots import paper_vs_ours_bars
from . import Page, computed_cells, pending_command, pending_runs_notice, runs_table, validated
from .cure4rec_runs import NO_RUN, comparison_command, grid_cells_notice

PAGE = "cure4rec/learn-baselines"
GRID = LearnGrid  # the parameters of this page (its notebook's), validated before any compute
KEYS = ["dataset", "model", "validation"]
METRICS = ["ndcg_untruncated", "hr_cure4rec", "a_igf"]
CHECKED = ["dataset", "model", "validation", "seed", "ndcg_untruncated", "hr_cure4rec", "a_igf", "ndcg", "hit_ratio",
           "best_epoch"]
COST = ["epochs_run", "best_epoch", "train_seconds", "validation_seconds"]
CELL_COLUMNS = ["dataset", "model", "validation", "metric", "paper", "ours", "n", "delta", "tol", "status"]


def build(collected: Collected | None = None, **params) -> Page:
    """The Learn page at notebook parameters ``params``: its runs, the paper's Learn rows with our numbers in
    them (``paper_table``) and cell by cell (``comparison``), every metric, the training cost, the figures,
    a verdict per validation rule and the glued values of every computed cell. ``collected`` replaces the
    collected runs."""
    grid = validated(GRID, params)
    collected = collect(grid) if collected is None else collected
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    command = pending_command(PAGE, grid.device, pending, grid.runs())
    paper = paper_table("cure4rec-learn")
    comparison = compare_learn(runs, paper, validations=grid.validations)
    computed = computed_cells(comparison)
    paper_cells = comparison[comparison["paper"].notna()]

    values = paper_values(paper, ["dataset", "model", "metric"])  # the paper's Learn rows, quoted in the notes
    for validation in VALIDATION_RULES:
        part = paper_cells[paper_cells["validation"] == validation]
        values[f"verdict_{validation}"] = verdict(part)
        values[f"within_{validation}"] = (within_text(part) if validation in grid.validations
                                          else "pending (not in this render's parameters)")
    for row in comparison.dropna(subset=["ours"]).itertuples():
        values[f"{row.dataset}_{row.model}_{row.validation}_{row.metric}"] = row.ours
    if len(runs):
        for (dataset, model, validation), value in runs.groupby(KEYS)["best_epoch"].mean().items():
            values[f"{dataset}_{model}_{validation}_best_epoch"] = value

    def figure():
        for (dataset, validation), part in comparison.groupby(["dataset", "validation"]):
            if part["ours"].notna().any():
                paper_vs_ours_bars(part[part["ours"].notna()], x="model", metrics=METRICS,
                                   title=f"{display_name(dataset)}, validation = {display_name(validation)}: "
                                         "Learn models, ours vs paper")

    pending_cells = grid_cells_notice("The Learn rows, paper vs ours", comparison, grid, ["model", "validation"],
                                 pending_reason(grid.device), comparison_command(PAGE, grid, command))
    return Page(
        PAGE, grid, runs, pending, paper_cells, None,
        tables={"runs": runs_table(total, pending),
                "paper_table": paper_layout(comparison, ["model", "validation"], ["dataset", "metric"], METRICS)
                if len(computed) else computed,
                "comparison": paper_vs_ours_table(computed, KEYS, METRICS, metrics_as_rows=True) if len(computed)
                else computed,
                "all_metrics": computed.pivot_table(index=KEYS, columns="metric", values="ours").round(4)
                if len(computed) else computed,
                "training": runs.groupby(KEYS)[COST].agg(["mean", "std"]).round(2) if len(runs) else runs,
                "paper_cells": display_frame(computed_cells(paper_cells)[CELL_COLUMNS],
                                             index=["dataset", "model", "validation", "metric"])},
        figures={"figure": figure},
        values=values,
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                     paper_table=pending_cells, comparison=pending_cells,
                     all_metrics=pending_runs_notice("Every metric", total, pending, command),
                     training=pending_runs_notice("The training cost", total, pending, command),
                     figure=pending_runs_notice("The figures", total, pending, command),
                     paper_cells=pending_cells if pending_cells is not None and not pending_cells.partial
                     else None),
        checks=[runs[CHECKED].round(2).to_string(index=False) if len(runs) else NO_RUN],
        claims_command=command)
