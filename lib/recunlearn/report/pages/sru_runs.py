"""What every SRU page builder with runs shares: validating its grid before any compute, collecting
its runs (with the time each record was written, for timing claims), the command computing the
pending ones, and the notices of its tables and figures. The run-count and notice helpers are the
generic ones of :mod:`.cure4rec_runs` (runs without a record, by reason, with their record key)."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from ...experiments.cure4rec import pending_frame
from ...experiments.records import record_key
from ...experiments.sru import RUN_KEYS, SruConfig, SruGrid, collect_sru
from ..timed_together import with_sessions
from ..sru import main_runs
from ..sru_code_choices import without_code_choices
from . import Notice, pending_command, pending_runs_notice, reasons_text, validated


def collect_page(page: str, grid_cls: type[SruGrid], params: Mapping[str, Any], runs: pd.DataFrame | None = None):
    """``(grid, runs, pending, command)`` of SRU page ``page`` (``sru/<stem>``) at notebook ``params``.

    The grid (of ``grid_cls``, the page's ``GRID``) is validated before any compute;
    ``runs`` (e.g. made up by a test, with ``attrs["pending"]`` listing configs as dicts) replaces
    :func:`~recunlearn.experiments.sru.collect_sru`. ``runs`` get ``created`` and ``session``
    columns (when each record was written); ``pending`` lists the runs without a record (keys,
    ``reason``, record ``key``); ``command`` computes them (None when nothing is pending)."""
    grid = validated(grid_cls, params)
    runs = collect_sru(grid) if runs is None else runs
    configs = [SruConfig.from_dict(c) for c in runs.attrs.get("pending", [])]
    pending = pending_frame(configs, grid.device, RUN_KEYS)
    kept = runs.attrs.get("pending", [])
    runs = with_sessions(runs, ["sru-unlearning"]) if len(runs) else \
        runs.assign(created=pd.NaT, clock="cpu", session=-1)
    runs.attrs["pending"] = kept
    return grid, runs, pending, pending_command(page, grid.device, pending, grid.runs())


def computed_text(runs: pd.DataFrame, total: int) -> str:
    """The nbval-checked line of a run page: how many of its runs have a record."""
    return f"{len(runs)} of {total} runs have a record"


def comparison_notice(what: str, grid, pending: pd.DataFrame, command: str | None) -> Notice | None:
    """The notice of a table of the method comparison alone (:func:`~recunlearn.report.sru.main_runs`:
    no extra deletion, each method on its own partition at the grid's number of shards, none of the runs
    with a choice of the authors' code): it counts only those runs of ``grid``."""
    configs = grid.runs()
    listed = main_runs(without_code_choices(pd.DataFrame([c.to_dict() for c in configs]), grid), grid.n_shards)
    if pending is not None and len(pending):
        pending = pending[pending["key"].isin({record_key(configs[i]) for i in listed.index})]
    return pending_runs_notice(what, len(listed), pending, command)


def sweep_notice(what: str, points: pd.DataFrame, x: str, total: int, pending: pd.DataFrame,
                 command: str | None) -> Notice | None:
    """The notice of a curve over ``x``: shown instead of it while fewer than two levels of ``x`` are
    computed (what is pending, or that the parameters ask for no sweep), else the runs' notice."""
    if len(points) and x in points and points[x].nunique() > 1:
        return pending_runs_notice(what, total, pending, command)
    if pending is not None and len(pending):
        return Notice(what, f"fewer than two levels computed; {reasons_text(pending['reason'], total)}", command)
    return Notice(what, "this page's parameters ask for fewer than two levels")
