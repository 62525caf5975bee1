"""What every CASPER page builder shares: validating its grid, collecting its runs, the command that
computes the pending ones, and the tables every run page shows (run counts, the nbval check)."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from ...experiments.casper import CasperConfig, CasperGrid, Collected, collect
from ...experiments.records import record_key
from . import compute_command, plan_entries, validated
from . import run_command as generic_run_command


def collect_page(page: str, grid_cls: type[CasperGrid], params: Mapping[str, Any],
                 collected: Collected | None = None) -> tuple[CasperGrid, Collected, str | None]:
    """``(grid, collected runs, command computing the pending runs)`` of ``page`` at ``params``. The grid
    is validated before any compute; ``collected`` (e.g. runs made up by a test) replaces
    :func:`~recunlearn.experiments.casper.collect`."""
    grid = validated(grid_cls, params)
    collected = with_id_maps(collect(grid) if collected is None else collected, grid.runs())
    return grid, collected, pending_command(page, grid, collected.pending)


def with_id_maps(collected: Collected, configs: list[CasperConfig]) -> Collected:
    """``collected`` with an ``id_map`` column (the run's item numbering) in its runs and pending frames:
    the runs of a grid are one row per config, in the grid's order (``configs``), the pending ones in
    the same order; runs made up without the column and not one per config are the fixed numbering."""
    runs, pending = collected.runs, collected.pending
    if "id_map" in runs:
        return collected
    if len(runs) != len(configs):
        return Collected(runs.assign(id_map="fixed"), pending.assign(id_map="fixed"))
    id_maps = pd.Series([c.id_map for c in configs], index=runs.index)
    waiting = id_maps[runs["status"] != "computed"].to_numpy() if "status" in runs else []
    return Collected(runs.assign(id_map=id_maps),
                     pending.assign(id_map=waiting if len(waiting) == len(pending) else "fixed"))


def pending_command(page: str, grid: CasperGrid, pending: pd.DataFrame) -> str | None:
    """The one command that computes the ``pending`` runs of ``page``: the compute plan's entries listing
    them; for runs outside the plan (e.g. a smoke grid read from records only), a ``run`` command for
    them. None when nothing is pending or no command can compute it (a model not implemented)."""
    if pending is None or pending.empty:
        return None
    computable = pending[pending["reason"] != "pending: model not implemented"]
    if computable.empty:
        return None
    keys = set(computable["key"])
    entries = plan_entries(page, keys, grid.device)
    if entries:
        return compute_command(entries, grid.device)
    return run_command([c for c in grid.runs() if record_key(c) in keys])


def run_command(configs: list[CasperConfig]) -> str:
    """``python -m recunlearn run casper-rls key=value ...`` computing every config of ``configs`` (a list
    value is an axis of the command's grid, so other combinations of the values run too)."""
    return generic_run_command(configs)


def status_counts(runs: pd.DataFrame) -> pd.Series:
    """How many runs are computed and how many pending, by reason."""
    return runs.value_counts("status")


def printed(frame: pd.DataFrame) -> str:
    """A frame as the nbval-checked cell prints it (no index)."""
    return frame.to_string(index=False)
