"""CURE4Rec Figures 2 and 5: the four-aspect overview (completeness, utility, efficiency, fairness) of
Retrain, the exact methods and SCIF on random unlearning sets, and the paper's claims."""

from __future__ import annotations

import pandas as pd

from ...experiments import cure4rec_exact
from ...experiments.cure4rec import Collected
from ...experiments.cure4rec_exact import ExactGrid
from ...experiments.cure4rec_scif import ScifGrid, collect, collect_exact_mio, exact_mio_configs
from ..cure4rec_scif import (ASPECTS, complete_cells, exact_mio_sources, overview_aspects, overview_aspects_by_seed,
                             overview_claims, retrain_session_ratios, scif_speedup_text, with_parallel_times,
                             with_pending_aspects)
from ..glance import with_page_runs
from ..names import display_name, display_names, paper_sorted
from ..plots import aspect_radar
from . import Page, distinct_runs, pending_command, pending_runs_notice, runs_table, validated
from .cure4rec_runs import printed

PAGE = "cure4rec/figure-02-05-overview"
GRID = ScifGrid  # the parameters of this page (its notebook's), validated before any compute
RAW = ["mio_accuracy", "ndcg_untruncated", "unlearn_seconds", "a_igf"]


def exact_grid(grid: ScifGrid) -> ExactGrid:
    """The exact-unlearning runs of the overview's utility and fairness: the SCIF grid's cells, users
    routed to their own shard's model, the affected shards trained together (the runs of Table 2 and
    Figures 3, 6, 7)."""
    return ExactGrid(datasets=grid.datasets, models=grid.models, selections=grid.selections, seeds=grid.seeds,
                     max_epochs=grid.max_epochs, device=grid.device, combiner="route", timing="batched",
                     compute_missing=grid.compute_missing)


def timing_grid(grid: ScifGrid) -> ExactGrid:
    """The runs of the overview's efficiency: :func:`exact_grid` with each affected shard retrained as a
    model of its own (the runs of Table 3), whose unlearning time is the slowest affected shard's — the
    time with the parallel training the paper enables for exact unlearning."""
    return exact_grid(grid).replace(timing="alone")


def ratio_text(ratios) -> str:
    """``"0.8 to 4.1 times (median 2.3, over 27 Retrains)"``; ``"an unmeasured multiple (no Retrain timed
    in both sessions yet)"`` without a pair."""
    if not len(ratios):
        return "an unmeasured multiple (no Retrain timed in both sessions yet)"
    return (f"{ratios.min():.2g} to {ratios.max():.2g} times (median {ratios.median():.2g}, over "
            f"{len(ratios)} Retrains)")


def build(collected: Collected | None = None, exact: Collected | None = None, exact_mio: Collected | None = None,
          parallel: Collected | None = None, **params) -> Page:
    """The overview page at notebook parameters ``params``: the raw and normalised aspects per dataset
    and method (means over the models whose every method has a record), Figure 5 per dataset and
    Figure 2 (their mean), and the claims. ``collected``, ``exact``, ``exact_mio`` and ``parallel``
    replace the collected SCIF runs, exact runs (utility, fairness), exact-method MIO runs and exact
    runs with each affected shard alone (efficiency)."""
    grid = validated(GRID, params)
    eu_grid, eu_timing = exact_grid(grid), timing_grid(grid)
    collected = collect(grid) if collected is None else collected
    exact = cure4rec_exact.collect(eu_grid) if exact is None else exact
    parallel = cure4rec_exact.collect(eu_timing) if parallel is None else parallel
    exact_mio = collect_exact_mio(grid) if exact_mio is None else exact_mio
    configs = distinct_runs(grid.runs() + eu_grid.runs() + eu_timing.runs() + exact_mio_configs(grid))
    pending = pd.concat([c.pending for c in (collected, exact, parallel, exact_mio) if len(c.pending)]
                        or [collected.pending], ignore_index=True)
    command = pending_command(PAGE, grid.device, pending, configs)
    scif_runs, mio_runs = collected.runs, exact_mio.runs
    exact_runs = with_parallel_times(exact.runs, parallel.runs)

    aspects = pd.DataFrame()
    if len(scif_runs) and len(exact_runs):
        aspects = complete_cells(overview_aspects(scif_runs, exact_runs, selection="random", exact_mio=mio_runs))
    if len(aspects):
        raw = aspects.groupby(["dataset", "method"])[RAW + ASPECTS].mean()
        overview = aspects.groupby(["dataset", "method"], as_index=False)[[f"{a}_norm" for a in ASPECTS]].mean()
        overview.columns = ["dataset", "method"] + ASPECTS
        models = aspects.groupby("dataset")["model"].unique()
    else:
        raw = overview = pd.DataFrame()

    def figures():
        if overview.empty:
            return
        for dataset in paper_sorted("dataset", overview["dataset"]):
            present = display_names(paper_sorted("model", models[dataset]))
            aspect_radar(overview[overview["dataset"] == dataset], ASPECTS, "method",
                         f"Figure 5 ({display_name(dataset)}): normalised aspects, mean over {', '.join(present)}")
        average = overview.groupby("method", as_index=False)[ASPECTS].mean()
        datasets = display_names(paper_sorted("dataset", overview["dataset"]))
        aspect_radar(average, ASPECTS, "method", f"Figure 2: mean over {', '.join(datasets)}")

    counts = (f"runs: {len(scif_runs)} SCIF-page rows, {len(exact.runs)} exact, {len(parallel.runs)} exact timed "
              f"alone, {len(mio_runs)} exact MIO")
    return Page(
        PAGE, grid, with_page_runs(scif_runs, len(configs), pending), pending, None,
        overview_claims(with_pending_aspects(overview_aspects_by_seed(scif_runs, exact_runs, "random", mio_runs),
                                             scif_runs, exact.runs, parallel.runs, mio_runs)),
        tables={"runs": runs_table(len(configs), pending), "raw": raw.round(4),
                "normalised": overview.set_index(["dataset", "method"]).round(2) if len(overview) else overview},
        figures={"figures": figures},
        values={"models": ", ".join(display_names(paper_sorted("model", grid.models))),
                "retrain_session_ratio": ratio_text(retrain_session_ratios(exact_runs, scif_runs)),
                "scif_speedup": scif_speedup_text(aspects),
                **{f"exact_mio_{kind}": text for kind, text in exact_mio_sources(aspects, mio_runs).items()}},
        notices=dict(runs=pending_runs_notice("The runs of this page", len(configs), pending, command),
                     raw=pending_runs_notice("The raw aspects", len(configs), pending, command),
                     normalised=pending_runs_notice("The normalised aspects", len(configs), pending, command),
                     figures=pending_runs_notice("Figures 2 and 5", len(configs), pending, command)),
        checks=[counts] + ([printed(raw[["ndcg_untruncated", "a_igf"]].round(2))] if len(raw) else []),
        claims_command=command)
