"""CASPER Figure 8: stability against the number of perturbed interactions (a) and CASPER's run time
against the number of interactions (b)."""

from __future__ import annotations

import pandas as pd

from ...experiments.casper import Collected, Figure8Grid, run_scaling_table
from ..casper import (RLS, figure_8_claims, format_value, growth_exponent, k_figure, linear_fit,
                      scaling_figure, summarize_rls)
from ..names import display_name
from . import Page, status_notice
from .casper_runs import collect_page, printed, status_counts

PAGE = "casper/figure-08-perturbation-count-and-runtime"
GRID = Figure8Grid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("models", "datasets")  # list parameters this page draws one value of (its titles name it)


def ao_by_k_text(ao: pd.DataFrame) -> str:
    """``"mean AO 0.91 at k = 1, 0.85 at k = 8"`` from the AO rows of the summary (sorted by k), at the
    smallest and the largest k computed; one k: the others are said to be pending."""
    if ao.empty:
        return "mean AO pending (no run computed yet)"
    first, last = ao.iloc[0], ao.iloc[-1]
    text = f"mean AO {format_value(first['mean'])} at k = {int(first['k'])}"
    if len(ao) == 1:
        return text + " (no other k computed yet)"
    return text + f", {format_value(last['mean'])} at k = {int(last['k'])}"


def build(collected: Collected | None = None, **params) -> Page:
    """The Figure 8 page at notebook parameters ``params``: the k-perturbation runs (a), the timing of
    CASPER on prefixes of a dataset with its least-squares line (b; computed here when its record is
    missing: seconds on any CPU), the claims and the glued values."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="Figure 8(a)")
    runs = collected.runs
    scaling = run_scaling_table(grid.scaling_config())
    summary = summarize_rls(runs, ["model", "k"], RLS)
    fit = linear_fit(scaling["interactions"], scaling["total_seconds"])
    growth = growth_exponent(scaling)
    claims = figure_8_claims(runs, growth)

    ao = summary[summary["metric"] == "ao"].sort_values("k")
    values = {"ao_by_k": ao_by_k_text(ao), "r2": f"{fit['r2']:.3f}",
              "largest": f"{int(scaling['interactions'].max()):,}",
              "largest_seconds": f"{scaling['total_seconds'].iloc[-1]:.2f}",
              "us_per_interaction": f"{1e6 * fit['slope']:.2f}", "exponent": f"{growth['exponent']:.2f}",
              "exponent_interval": f"[{growth['low']:.2f}, {growth['high']:.2f}]",
              "repeats": str(growth["repeats"])}
    checks = [printed(runs[["model", "k", "seed", "status", "ao", "jaccard"]].round(2)),
              printed(scaling[["raw_rows", "interactions", "nodes", "edges", "roots", "max_score"]])]
    notice = status_notice("Figure 8(a)", runs, command)
    return Page(
        PAGE, grid, runs, collected.pending, None, claims,
        tables={"runs": status_counts(runs), "scaling": scaling.drop(columns="repeat_seconds", errors="ignore")},
        figures={"figure_8a": lambda: k_figure(summary, RLS,
                                               f"{display_name(grid.models[0])}, {display_name(grid.datasets[0])}: "
                                               "CASPER LOO with k perturbations"),
                 "figure_8b": lambda: scaling_figure(scaling, fit, f"CASPER run time on prefixes of "
                                                     f"{display_name(grid.scaling_dataset)} (all of it that exists)",
                                                     growth=growth)},
        values=values, notices={"figure_8a": notice} if notice else {}, checks=checks, claims_command=command)
