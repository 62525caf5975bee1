"""SRU overview (not a paper item): the four claims of the abstract (accuracy tested as two claims:
above the baselines and near Retrain), each judged on our runs, with the method comparison's
accuracy, HIT@10 and unlearning time, and SRU's extra-deletion curves; and the ablation page's tables
and claims at the same scale (its runs when ``ABLATION_PARTITIONS`` / ``ABLATION_SHARD_COUNTS`` ask for them)."""

from __future__ import annotations

import pandas as pd

from ..claims import joined_claims
from ..plots import sweep_lines
from ..sru import ablation_claims, comparison_runs, extra_deletion_points, overview_table, sru_claims
from . import Page
from .cure4rec_runs import notices, runs_notice, runs_table
from .sru_ablations import ablation_items
from .sru_runs import collect_page, comparison_notice, computed_text, sweep_notice

PAGE = "sru/claims-abstract"


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The overview page at notebook parameters ``params``: its runs (``runs`` replaces the collected
    ones), the overview table, HIT@10 and NDCG@10 against the number of extra deleted items, the
    ablation's tables and curves, and the claims (the abstract's, then the ablation's)."""
    grid, runs, pending, command = collect_page(PAGE, params, runs)
    total = len(grid.runs())
    comparison = comparison_runs(runs, grid.n_shards)
    points = extra_deletion_points(comparison)
    claims = joined_claims(sru_claims(comparison), ablation_claims(runs, grid.n_shards))
    ablation_tables, ablation_figures, ablation_notices = ablation_items(runs, grid.n_shards, total, pending, command)
    tables = {"runs": runs_table(total, pending), "overview": overview_table(comparison), **ablation_tables}
    figures = {"extra_deletion": lambda: sweep_lines(
        points, "n_extra", ["hit@10", "ndcg@10"], "extra_deletion",
        "SRU: HIT@10 and NDCG@10 against the number of extra deleted items", by=("dataset", "model")),
        **ablation_figures}
    shown = notices(runs=runs_notice("The runs of this page", total, pending, command),
                    overview=comparison_notice("The method comparison", grid, pending, command),
                    extra_deletion=sweep_notice("The extra-deletion curves", points, "n_extra", total, pending,
                                                command), **ablation_notices)
    return Page(PAGE, grid, runs, pending, None, claims, tables=tables, figures=figures, notices=shown,
                checks=[computed_text(runs, total)], claims_command=command)
