"""What every CASPER page builder shares: validating its grid, collecting its runs, the command that
computes the pending ones, and the tables every run page shows (run counts, the nbval check)."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import pandas as pd

from ...experiments.casper import CasperConfig, CasperGrid, Collected, collect
from ...experiments.records import record_key
from ..casper_numbering import (numbering_figure, numbering_gap_text, numbering_part, numbering_table,
                               numbering_tests_view, numbering_text)
from . import compute_command, plan_entries, runs_notice, validated
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
    """``collected`` with an ``id_map`` column (the run's item numbering) in its runs and pending frames.
    The runs of a grid are one row per config, in the grid's order (``configs``), and the pending ones
    keep that order; a frame that already has the column is returned as it is."""
    runs, pending = collected.runs, collected.pending
    if "id_map" in runs:
        return collected
    waiting = runs["status"] != "computed"
    if len(runs) != len(configs) or int(waiting.sum()) != len(pending):
        raise ValueError(f"{len(runs)} runs ({int(waiting.sum())} pending) for {len(configs)} configs and "
                         f"{len(pending)} pending rows: the runs must be one row per config, in the grid's order")
    id_maps = pd.Series([c.id_map for c in configs], index=runs.index)
    return Collected(runs.assign(id_map=id_maps), pending.assign(id_map=id_maps[waiting].to_numpy()))


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


@dataclasses.dataclass(frozen=True)
class NumberingSection:
    """What a CASPER page shows of its numbering comparison (:mod:`~recunlearn.report.casper_numbering`):
    its tables, figure, glued texts, notices and nbval-checked lines, for the page's own dicts."""

    tables: dict
    figures: dict
    values: dict
    notices: dict
    checks: list


def numbering_section(runs: pd.DataFrame, paper: pd.DataFrame, command: str | None, title: str) -> NumberingSection:
    """The numbering section of a page whose ``runs`` (every numbering, with ``id_map``) include the
    comparison's: ``numbering`` and ``numbering_tests`` tables, ``numbering_figure`` (titled ``title``),
    the glued ``numbering_effect`` and ``numbering_gap``, their pending notices (``command`` computes
    the pending runs) and the printed computed runs of the authors' numberings (none when none is)."""
    part = numbering_part(runs)
    renumbered = part[(part["status"] == "computed") & (part["id_map"] != "fixed")]
    checks = [printed(renumbered[["model", "selector", "perturbation", "replacement", "seed", "id_map", "ao"]]
                      .round(2))] if len(renumbered) else []
    notices = {"numbering": runs_notice("The numbering comparison", part, command),
               "numbering_tests": runs_notice("The numbering tests", part, command),
               "numbering_figure": runs_notice("The numbering figure", part, command)}
    return NumberingSection(
        tables={"numbering": numbering_table(runs, paper), "numbering_tests": numbering_tests_view(runs)},
        figures={"numbering_figure": lambda: numbering_figure(runs, title, paper)},
        values={"numbering_effect": numbering_text(runs), "numbering_gap": numbering_gap_text(runs, paper)},
        notices={name: notice for name, notice in notices.items() if notice is not None}, checks=checks)
