"""CASPER Figure 4: the IDAG example (b) and the position of the perturbed interaction (a). The items the
authors' numbering renames under each position are measured on the dataset's file at render time (no
training), so this page reads the file as well as the run records."""

from __future__ import annotations

from ...experiments.casper import CasperGrid, Collected, renumbering_table
from ..casper import (RLS, figure_4b_claims, figure_4b_example, idag_figure, paired_two_sided_tests, position_claims,
                      rls_bars, summarize_rls, toy_scores)
from ..claims import joined_claims
from ..names import display_name
from . import Page, Notice, status_notice
from .casper_runs import collect_page, printed, status_counts

PAGE = "casper/figure-04-perturbation-position"
GRID = CasperGrid  # the parameters of this page (its notebook's), validated before any compute
ONE_VALUE = ("datasets",)  # list parameters this page draws one value of (its titles name it)
PAIRS = [("earliest", "random"), ("earliest", "latest"), ("random", "latest")]


TOY_COLUMNS = {"node": "Node", "user": "User", "item": "Item", "t": "Time", "root": "Root of the IDAG",
               "descendants": "Descendants (itself included)", "set": "Descendant set"}


def build(collected: Collected | None = None, **params) -> Page:
    """The Figure 4 page at notebook parameters ``params``: the toy IDAG and its exact cascade scores,
    the Earliest / Random / Latest runs with their paired two-sided tests, the claims and the glued values."""
    grid, collected, command = collect_page(PAGE, GRID, params, collected, one=ONE_VALUE,
                                            what="Figure 4")
    runs = collected.runs
    toy, graph, root_scores = figure_4b_example()
    summary = summarize_rls(runs, ["model", "perturbation", "selector"], RLS)
    tests = paired_two_sided_tests(runs, "selector", PAIRS, ["model", "perturbation"])
    claims = joined_claims(figure_4b_claims(toy, graph, root_scores), position_claims(runs))

    values = {"x3_score": int(root_scores.set_index("node").loc["X3", "cascade_score"]),
              "n_seeds": len(grid.seeds), "min_p": f"{1 / 2 ** len(grid.seeds):.3g}"}
    artifact = renumbering_table(grid.datasets[0], list(grid.seeds)).set_index(["selector", "perturbation"])
    for selector in ("earliest", "random", "latest"):
        values[f"renumbered_{selector}"] = f"{artifact.loc[(selector, 'loo'), 'renumbered_items']:,.0f}"

    def figure_4a():
        for pert in grid.perturbations:
            part = summary[summary["perturbation"] == pert]
            if len(part):
                rls_bars(part, x="selector", hue="model", metrics=RLS,
                         title=f"{display_name(grid.datasets[0])}, {display_name(pert)}: perturbation position")

    notices = {"figure_4a": status_notice("Figure 4(a)", runs, command),
               "tests": status_notice("The paired tests of Figure 4(a)", runs, command)}
    if tests.empty:  # no pair to test: one notice instead of an empty table
        notices["tests"] = Notice("The paired tests of Figure 4(a)", notices["tests"].why if notices["tests"]
                                  else "no two selectors computed on the same seed", command)
    checks = [printed(root_scores), printed(summary[summary["metric"] == "ao"].round(2)),
              runs["status"].value_counts().to_string()]
    return Page(
        PAGE, grid, runs, collected.pending, None, claims,
        tables={"toy_scores": toy_scores(toy, graph).rename(columns=TOY_COLUMNS), "runs": status_counts(runs),
                "tests": tests},
        figures={"figure_4b": lambda: idag_figure(toy, graph, highlight=2,
                                                  title="IDAG of the toy stream: descendants of X3 in green"),
                 "figure_4a": figure_4a},
        values=values,
        notices=notices,
        checks=checks, claims_command=command)
