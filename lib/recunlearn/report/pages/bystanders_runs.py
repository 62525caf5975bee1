"""What every page of the book's own chapter (``bystanders/q*``) shares: validating its grid before any
compute, collecting its runs, the command that computes the pending ones, and the notice of a table
or figure drawn from them."""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import pandas as pd

from ...experiments.config import Config
from ...experiments.records import PENDING_CPU, record_key
from ..claims import with_pending_rows
from . import Notice, Page, computing_command, pending_notice, validated

NO_RUN = "pending"
"""What the nbval-checked cell prints when no run is computed."""
WHY = PENDING_CPU


def pending_configs(grid, runs: pd.DataFrame) -> list[Config]:
    """The configs of ``grid`` whose run has no record (``runs.attrs["pending"]``)."""
    wanted = {tuple(sorted(p.items())) for p in runs.attrs.get("pending", [])}
    return [c for c in grid.runs() if tuple(sorted(c.to_dict().items())) in wanted]


def collect_page(page: str, grid_cls: type, params: Mapping[str, Any], collect: Callable,
                 runs: pd.DataFrame | None = None) -> tuple[Any, pd.DataFrame, str | None]:
    """``(grid, runs, command computing the pending runs)`` of ``page`` at notebook ``params``: the grid
    is validated before any compute; ``runs`` (e.g. made up by a test, with ``attrs["pending"]``)
    replaces ``collect(grid)``."""
    grid = validated(grid_cls, params)
    runs = collect(grid) if runs is None else runs
    waiting = pending_configs(grid, runs)
    return grid, runs, computing_command(page, grid.device, {record_key(c) for c in waiting}, waiting)


def pending_configs_notice(what: str, runs: pd.DataFrame, total: int, command: str | None = None,
                           by: str | None = "model") -> Notice | None:
    """:func:`~recunlearn.report.pages.pending_notice` of the book's own chapter: ``runs`` are the computed
    rows and ``attrs["pending"]`` the config dicts of the runs without a record, out of ``total``;
    partial when some rows are shown (none can be although few runs are pending, e.g. only one of the
    two runs of every cell)."""
    pending = pd.DataFrame(runs.attrs.get("pending", []))
    return pending_notice(what, total, [WHY] * len(pending), pending, command, by, partial=len(runs) > 0)


def status_counts(runs: pd.DataFrame, total: int) -> pd.Series:
    """How many of the ``total`` runs have a record and how many are pending."""
    pending = len(runs.attrs.get("pending", []))
    counts = {"computed": total - pending, WHY: pending}
    return pd.Series({k: v for k, v in counts.items() if v}, name="runs", dtype=int).rename_axis("status")


def printed(frame: pd.DataFrame | None) -> str:
    """A frame as the nbval-checked cell prints it (no index), or :data:`NO_RUN` when empty."""
    return frame.to_string(index=False) if frame is not None and len(frame) else NO_RUN


def question_page(page: str, grid_cls: type, collect: Callable, params: Mapping[str, Any],
                  runs: pd.DataFrame | None, *, what: str, claims: Callable, tables: Mapping[str, Callable],
                  figures: Mapping[str, Callable], checked: list[str], digits: int = 3,
                  values: Callable | None = None, pending_keys: list[str] | None = None) -> Page:
    """A page of the book's own chapter at notebook ``params``: its runs (:func:`collect_page`; ``runs``,
    made up by a test, replaces the collected ones), ``claims(runs)``, each table ``tables[name](runs)``
    and figure ``figures[name](runs)`` (drawn when shown) under the runs' notice (``what``: what they
    are; said once a page, see :meth:`Page.show`), ``values(runs)`` glued for the text, and the
    ``checked`` columns to ``digits`` decimals as the regression check. Its claims are our hypotheses,
    not a paper's, and the notice of those pending says so; each counts the runs of its scope still
    without a record as pending (:func:`~recunlearn.report.claims.with_pending_rows`; ``pending_keys``
    where a row joins runs of several experiments)."""
    grid, runs, command = collect_page(page, grid_cls, params, collect, runs)
    notice = pending_configs_notice(what, runs, len(grid.runs()), command)
    shown = Page(
        page, grid, runs, claims=claims(with_pending_rows(runs, pending_keys)), tables={name: table(runs) for name, table in tables.items()},
        figures={name: functools.partial(figure, runs) for name, figure in figures.items()},
        values=values(runs) if values is not None else {},
        notices=dict.fromkeys([*tables, *figures], notice),
        checks=[printed(runs[checked].round(digits) if len(runs) else None)], claims_command=command,
        hypotheses=True)
    return shown
