"""SRU overview (not a paper item): the abstract's four claims as we read them (inference after
deletion, accuracy near Retrain, efficiency, extra deletion) and the chapter's expectations beside
them (above the baselines, more extra deletion), each judged on our runs, with the method comparison's
accuracy, HIT@10 and unlearning time, and SRU's extra-deletion curves; the ablation page's tables
and claims at the same scale (its runs when ``ABLATION_PARTITIONS`` / ``ABLATION_SHARD_COUNTS`` ask for them);
and SRU with choices of the authors' code against ours (``CODE_CHOICES``, :mod:`..sru_code_choices`)."""

from __future__ import annotations

import json

import pandas as pd

from ...experiments.records import record_key
from ...experiments.sru import SruConfig
from ..claims import joined_claims, with_pending_rows
from ..plots import sweep_lines
from ..sru import (SruOverviewGrid, ablation_claims, comparison_runs, extra_deletion_points, overview_table,
                   sru_claims)
from ..sru_code_choices import CODE_CHOICES, choice_part, choice_table, code_choice_values, without_code_choices
from . import Notice, Page, pending_command, pending_runs_notice, runs_table
from .sru_ablations import ablation_items
from .sru_runs import collect_page, comparison_notice, computed_text, sweep_notice

PAGE = "sru/claims-abstract"
GRID = SruOverviewGrid  # the parameters of this page (its notebook's), validated before any compute


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The overview page at notebook parameters ``params``: its runs (``runs`` replaces the collected
    ones), the overview table, HIT@10 and NDCG@10 against the number of extra deleted items, the
    ablation's tables and curves, and the claims (the abstract's, then the ablation's)."""
    grid, runs, pending, command = collect_page(PAGE, GRID, params, runs)
    total = len(grid.runs())
    main = without_code_choices(runs, grid)  # the code-choice runs are read by their section alone
    comparison = comparison_runs(main, grid.n_shards)
    points = extra_deletion_points(comparison)
    judged = without_code_choices(with_pending_rows(runs), grid)  # the runs without a record count as pending
    claims = joined_claims(sru_claims(comparison_runs(judged, grid.n_shards)), ablation_claims(judged, grid.n_shards))
    ablation_tables, ablation_figures, ablation_notices = ablation_items(main, grid.n_shards, total, pending, command)
    choice_tables, choice_values, choice_notices = code_choice_items(PAGE, grid, runs, pending)
    tables = {"runs": runs_table(total, pending), "overview": overview_table(comparison), **ablation_tables,
              **choice_tables}
    figures = {"extra_deletion": lambda: sweep_lines(
        points, "n_extra", ["hit@10", "ndcg@10"], "extra_deletion",
        "SRU: HIT@10 and NDCG@10 against the number of extra deleted items", by=("dataset", "model")),
        **ablation_figures}
    shown = dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                 overview=comparison_notice("The method comparison", grid, pending, command),
                 extra_deletion=sweep_notice("The extra-deletion curves", points, "n_extra", total, pending,
                                             command), **ablation_notices, **choice_notices)
    return Page(PAGE, grid, runs, pending, None, claims, tables=tables, figures=figures, notices=shown,
                values=choice_values, checks=[computed_text(runs, total)], claims_command=command)


def code_choice_items(page: str, grid, runs: pd.DataFrame, pending: pd.DataFrame
                      ) -> tuple[dict, dict, dict[str, Notice | None]]:
    """``(tables, values, notices)`` of the comparisons with the authors' code that ``grid`` lists
    (``CODE_CHOICES``; :mod:`~recunlearn.report.sru_code_choices`): a table per choice (``code_<field>``),
    the glued sentences (``code_<field>_effect``, ``code_retrain_effect``) and ``page_variants`` (JSON,
    for the scoreboard), each notice counting the choice's own runs and naming the command for them."""
    fields = grid.code_choices or ()
    values, published = code_choice_values(runs, grid, fields)
    tables, shown = {}, {}
    listed = pd.DataFrame([c.to_dict() for c in grid.runs()])
    for field in fields:
        choice = CODE_CHOICES[field]
        configs = choice_part(listed, choice, grid.n_shards)
        keys = {record_key(SruConfig.from_dict(c)) for c in configs.to_dict("records")}
        waiting = pending[pending["key"].isin(keys)] if pending is not None and len(pending) else pending
        tables[choice.section] = choice_table(runs, choice, grid.n_shards)
        shown[choice.section] = pending_runs_notice(f"The comparison with {choice.labels[choice.code]}", len(configs),
                                                    waiting, pending_command(page, grid.device, waiting, grid.runs()))
    return tables, {**values, "page_variants": json.dumps(published)}, shown
