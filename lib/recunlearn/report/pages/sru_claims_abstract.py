"""SRU overview (not a paper item): the four claims of the abstract (accuracy tested as two claims:
above the baselines and near Retrain), each judged on our runs, with the method comparison's
accuracy, HIT@10 and unlearning time, and SRU's extra-deletion curves."""

from __future__ import annotations

import pandas as pd

from ..plots import sweep_lines
from ..sru import extra_deletion_points, overview_table, sru_claims
from . import Page
from .cure4rec_runs import notices, runs_notice, runs_table
from .sru_runs import collect_page, comparison_notice, computed_text, sweep_notice

PAGE = "sru/claims-abstract"


def build(runs: pd.DataFrame | None = None, **params) -> Page:
    """The overview page at notebook parameters ``params``: its runs (``runs`` replaces the collected
    ones), the overview table, HIT@10 and NDCG@10 against the number of extra deleted items, and the
    claims."""
    grid, runs, pending, command = collect_page(PAGE, params, runs)
    total = len(grid.runs())
    points = extra_deletion_points(runs)
    return Page(
        PAGE, grid, runs, pending, None, sru_claims(runs),
        tables={"runs": runs_table(total, pending), "overview": overview_table(runs)},
        figures={"extra_deletion": lambda: sweep_lines(
            points, "n_extra", ["hit@10", "ndcg@10"], "extra_deletion",
            "SRU: HIT@10 and NDCG@10 against the number of extra deleted items", by=("dataset", "model"))},
        notices=notices(runs=runs_notice("The runs of this page", total, pending, command),
                        overview=comparison_notice("The method comparison", grid, pending, command),
                        extra_deletion=sweep_notice("The extra-deletion curves", points, "n_extra", total, pending,
                                                    command)),
        checks=[computed_text(runs, total)], claims_command=command)
