"""Reporting: the papers' numbers, paper-vs-ours comparisons, figures, notebook runner, status page."""

from .compare import compare, format_mean_std, summarize_runs, verdict
from .glance import parameters_table, show_parameters
from .paper import paper_table
from .verdicts import VERDICTS, page_verdict

__all__ = ["compare", "format_mean_std", "summarize_runs", "verdict", "paper_table", "VERDICTS", "page_verdict",
           "parameters_table", "show_parameters"]
