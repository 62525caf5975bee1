"""What every CURE4Rec page builder shares: validating its grid before any compute, the command that
computes its pending runs, the run counts every run page shows first, and the notices of tables,
figures and paper-vs-ours comparisons that are not (fully) computed."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

import pandas as pd

from ...experiments.cure4rec_exact import EXACT_KEYS, ExactCollected, ExactGrid, collect
from ...experiments.records import record_key
from ..claims import OTHER_READING, joined_claims, with_kind
from ..cure4rec import sweep_claims
from ..glance import CURE4REC_DATASETS, with_page_runs
from ..names import display_name
from ..plots import sweep_lines
from . import (Notice, Page, compute_command, pending_command, pending_runs_notice, plan_entries, runs_table,
               validated)

NO_RUN = "no run computed yet"
"""What the nbval-checked cell prints for a table with no computed run."""


def missing_datasets(grid) -> tuple[str, ...]:
    """The paper's datasets that ``grid`` does not run (none for a sweep on ML-100K alone)."""
    sweep = len(getattr(grid, "shard_counts", ())) > 1 or len(getattr(grid, "ratios", ())) > 1
    return () if sweep else tuple(d for d in CURE4REC_DATASETS if d not in grid.datasets)


def collect_exact(page: str, grid_cls: type[ExactGrid], params: Mapping[str, Any],
                  collected: ExactCollected | None = None) -> tuple[ExactGrid, ExactCollected, str | None]:
    """``(grid, collected runs, command computing the pending runs)`` of an exact-unlearning page at
    notebook ``params``; the grid (of ``grid_cls``, the page's ``GRID``) is validated before any compute,
    and ``collected`` (e.g. runs made up by a test) replaces
    :func:`~recunlearn.experiments.cure4rec_exact.collect`."""
    grid = validated(grid_cls, params)
    collected = collect(grid) if collected is None else collected
    return grid, collected, pending_command(page, grid.device, collected.pending, grid.runs())


PARALLEL = "unlearn_seconds_parallel"
"""The slowest affected shard's time, each shard trained alone (shards retrained in parallel)."""
TOGETHER = "unlearn_seconds_together"
"""The batched time (the affected shards trained together), as a sweep's table and figure name it beside
:data:`PARALLEL`."""


def parallel_grid(grid: ExactGrid) -> ExactGrid | None:
    """The runs behind the parallel reading of unlearning time: ``grid``'s sharded methods with each
    affected shard trained as a model of its own; None when ``grid`` already times them so or has no
    sharded method."""
    methods = tuple(m for m in grid.methods if m != "retrain")
    return grid.replace(methods=methods, timing="alone") if methods and grid.timing != "alone" else None


@dataclasses.dataclass
class SweepRuns:
    """A sweep page's runs: its grid's, plus the parallel reading's (:func:`parallel_grid`) when there is one."""

    grid: ExactGrid
    collected: ExactCollected
    parallel: ExactCollected | None
    runs: pd.DataFrame
    pending: pd.DataFrame
    total: int
    command: str | None


def collect_sweep(page: str, grid_cls: type[ExactGrid], params: Mapping[str, Any],
                  collected: ExactCollected | None = None, parallel: ExactCollected | None = None) -> SweepRuns:
    """:func:`collect_exact` for a sweep page, with the runs of :func:`parallel_grid` (``parallel``
    replaces their collection) counted among the page's runs and its pending command."""
    grid, collected, command = collect_exact(page, grid_cls, params, collected)
    second = parallel_grid(grid)
    runs, pending, total = collected.runs, collected.pending, len(grid.runs())
    if second is not None:
        parallel = collect(second) if parallel is None else parallel
        runs = pd.concat([runs, parallel.runs], ignore_index=True)
        pending = pd.concat([pending, parallel.pending], ignore_index=True)
        total += len(second.runs())
        command = pending_command(page, grid.device, pending, grid.runs() + second.runs())
    return SweepRuns(grid, collected, parallel if second is not None else None, runs, pending, total, command)


def parallel_reading(sweep: pd.DataFrame, alone: pd.DataFrame, x: str, label: str
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The parallel reading of unlearning time beside a sweep's batched runs: ``sweep`` with the
    :data:`PARALLEL` time of the run of the same key (:data:`EXACT_KEYS`) with each affected shard trained
    alone (``alone``; NaN where none), and the trend claim on those times against ``x``
    (``unlearn_seconds_parallel_falls``)."""
    if len(alone):
        sweep = sweep.merge(alone[EXACT_KEYS + ["unlearn_seconds"]].rename(columns={"unlearn_seconds": PARALLEL}),
                            on=EXACT_KEYS, how="left")
    else:
        sweep = sweep.assign(**{PARALLEL: float("nan")})
    read = sweep_claims(alone, x, {"unlearn_seconds": -1}, label)
    read["id"] = "unlearn_seconds_parallel_falls"
    read["claim"] += " (shards retrained in parallel: the slowest affected shard, each a model of its own)"
    return sweep, read


def with_parallel_time(columns: list[str], together: bool) -> list[str]:
    """A sweep's ``columns`` with the :data:`PARALLEL` time third, and the unlearning time renamed
    :data:`TOGETHER` where ``together`` (two times side by side: each says how it was measured)."""
    out = [TOGETHER if together and c == "unlearn_seconds" else c for c in columns]
    out.insert(2, PARALLEL)
    return out


TIMING_READS = {"batched": " (the affected shards retrained together in one process)",
                "sequential": " (the slowest affected shard, trained in turn inside the K-shard model)",
                "alone": " (the slowest affected shard, each a model of its own)"}
"""How a sweep grid's ``timing`` measured its unlearning time, as its trend claim says it."""


def with_time_readings(page_runs: SweepRuns, sweep: pd.DataFrame, claims: pd.DataFrame, x: str, label: str,
                       *columns: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, list[list[str]]]:
    """A sweep page's unlearning-time readings: the grid's own trend claim (``unlearn_seconds_falls``)
    says how its ``timing`` measured the time (:data:`TIMING_READS`); where the page has the parallel
    reading (:func:`parallel_grid`), that reading is the paper's claim, the grid's own becomes another
    reading, and each list of ``columns`` gets the :data:`PARALLEL` time (a batched time renamed
    :data:`TOGETHER`, :func:`with_parallel_time`). Returns ``sweep``, ``claims`` and the lists."""
    claims = claims.copy()
    claims.loc[claims["id"] == "unlearn_seconds_falls", "claim"] += TIMING_READS[page_runs.grid.timing]
    if page_runs.parallel is None:
        return sweep, claims, [list(c) for c in columns]
    sweep, read = parallel_reading(sweep, page_runs.parallel.runs, x, label)
    claims = joined_claims(with_kind(claims, OTHER_READING, ["unlearn_seconds_falls"]), read)
    together = page_runs.grid.timing == "batched"
    if together:
        sweep = sweep.rename(columns={"unlearn_seconds": TOGETHER})
    return sweep, claims, [with_parallel_time(c, together) for c in columns]


def sweep_page(page: str, page_runs: SweepRuns, claims: pd.DataFrame, sweep: pd.DataFrame, x: str,
               shown: list[str], plotted: list[str], title: str, checked: list[str]) -> Page:
    """A sweep page (Figures 4, 8): its runs, the ``shown`` metrics' mean and std per method and level of
    ``x``, the figure of the ``plotted`` ones against ``x`` per dataset and model, the ``claims``, and
    the means of ``checked`` (two decimals) as the regression check."""
    keys = ["dataset", "model", "method", x]
    total, pending, command = page_runs.total, page_runs.pending, page_runs.command
    return Page(
        page, page_runs.grid, with_page_runs(page_runs.runs, total, pending), pending, None, claims,
        tables={"runs": runs_table(total, pending),
                "sweep": sweep.groupby(keys)[shown].agg(["mean", "std"]).round(4)},
        figures={"figure": lambda: sweep_lines(sweep, x, plotted, "method", title, by=("dataset", "model"))},
        notices=dict(runs=pending_runs_notice("The runs of this page", total, pending, command),
                     sweep=pending_runs_notice("The table", total, pending, command),
                     figure=pending_runs_notice("The figure", total, pending, command)),
        checks=[printed(sweep.groupby(keys)[checked].mean().round(2))], claims_command=command)


def grid_cells_notice(what: str, comparison: pd.DataFrame, grid, keys: list[str], pending_why: str,
                 command: str | None = None, read: dict[str, Iterable] | None = None) -> Notice | None:
    """The notice of a CURE4Rec paper-vs-ours table, read against the render's ``grid`` (the generic
    :func:`~recunlearn.report.pages.cells_notice` reads only the cells' status): None when every paper
    cell holds our value, else how many do not and why: their dataset is not run yet, their other keys
    (``keys``: model, method, selection, validation) are outside this render's parameters, or their runs
    are pending (``pending_why``); ``read``: values of those keys whose runs the page reads besides its
    grid's (Table 3: the method SCIF, from the Tables 1/5 runs), inside the parameters too.
    Partial when some cell is computed."""
    cells = comparison[comparison["paper"].notna()]
    missing = cells[cells["ours"].isna()]
    if missing.empty:
        return None
    datasets = set(grid.datasets)
    outside_data = missing[~missing["dataset"].isin(datasets)]
    inside = missing[missing["dataset"].isin(datasets)]
    in_params = pd.Series(True, index=inside.index)
    for key in keys:
        allowed = getattr(grid, f"{key}s", None)
        if allowed is not None:
            in_params &= inside[key].isin([*allowed, *(read or {}).get(key, ())])
    parts = []
    if len(outside_data):
        names = ", ".join(display_name(d) for d in CURE4REC_DATASETS if d in set(outside_data["dataset"]))
        parts.append(f"{len(outside_data):,} for {names}, not run yet")
    if (~in_params).sum():
        parts.append(f"{int((~in_params).sum()):,} outside this render's parameters")
    if in_params.sum():
        parts.append(f"{int(in_params.sum()):,} {pending_why}")
    why = f"{len(missing):,} of {len(cells):,} paper cells without our value: " + "; ".join(parts)
    return Notice(what, why, command, partial=bool(comparison["ours"].notna().any()))


def printed(frame) -> str:
    """A frame or series as the nbval-checked cell prints it (``to_string()``)."""
    return frame.to_string()


def comparison_command(page: str, grid, command: str | None, pending: pd.DataFrame | None = None) -> str | None:
    """The command behind a paper-vs-ours notice, which counts both the grid's ``pending`` runs and the
    paper's datasets this render does not run: the plan's command for the entries listing either
    (``command``, the grid's own, when the plan lists none of them)."""
    missing = missing_datasets(grid)
    if not missing:
        return command
    keys = {record_key(c) for c in grid.replace(datasets=missing).runs()}
    if pending is not None and len(pending):
        keys |= set(pending["key"])
    entries = plan_entries(page, keys, grid.device)
    return compute_command(entries, grid.device) if entries else command
