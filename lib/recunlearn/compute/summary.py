"""Where the plan stands: runs done and CPU-hours left, per plan entry and per page of the book."""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path
from typing import Iterable

from .costs import CostModel
from .plan import Plan, Run, batches, done_keys, load_plan, stored_records


@dataclasses.dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` runs; the estimated seconds of the pending ones (batched as the command
    runs them) and how many of those estimates are of each basis."""

    total: int
    done: int
    seconds_left: float
    bases: dict[str, int]


@dataclasses.dataclass(frozen=True)
class PlanStatus:
    """A plan, the runs done in a records directory, and the cost model for the rest."""

    plan: Plan
    done: frozenset[tuple[str, str]]
    costs: CostModel

    def is_done(self, run: Run) -> bool:
        return any((run.experiment, key) in self.done for key in (run.key, *run.other_device_keys))

    def pending(self, runs: Iterable[Run]) -> list[Run]:
        return [run for run in runs if not self.is_done(run)]

    def progress(self, runs: Iterable[Run]) -> Progress:
        runs = list(runs)
        pending = self.pending(runs)
        seconds = sum(self.costs.batch_seconds([run.config for run in batch]) for batch in batches(pending))
        bases = collections.Counter(self.costs.estimate(run.config).basis for run in pending)
        return Progress(len(runs), len(runs) - len(pending), seconds, dict(bases))


def plan_status(plan_file: Path, records_dir: Path, device: str = "cpu",
                timing_dirs: Iterable[Path] = ()) -> PlanStatus:
    """The status of ``plan_file`` on ``device`` against ``records_dir``; costs from the records there
    and in ``timing_dirs`` (each directory read once)."""
    plan = load_plan(plan_file, device)
    records = stored_records(records_dir)
    others = {Path(folder).resolve() for folder in timing_dirs} - {Path(records_dir).resolve()}
    timing_records = [record for folder in sorted(others) for record in stored_records(folder).values()]
    return PlanStatus(plan, done_keys(records), CostModel([*records.values(), *timing_records]))


def hours(seconds: float) -> str:
    """Seconds as CPU-hours for a reader: one decimal below 10, whole hours above."""
    value = seconds / 3600
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def compute_command(entries: Iterable[str]) -> str:
    """The command computing the runs of ``entries``."""
    return "python -m recunlearn compute --only " + " ".join(entries)


def entry_rows(status: PlanStatus) -> list[dict]:
    """Per entry, in plan order: the runs it lists and how many are done; the runs it computes (those
    first listed there), how many of them are pending, their estimated CPU-hours and estimate bases."""
    rows = []
    for entry in status.plan.entries:
        listed = status.plan.runs_of([entry.name])
        own = status.progress(run for run in listed if run.entry == entry.name)
        rows.append({"entry": entry.name, "pages": ", ".join(entry.pages), "listed": len(listed),
                     "done": sum(status.is_done(run) for run in listed), "computes": own.total,
                     "pending": own.total - own.done, "cpu_hours_left": own.seconds_left / 3600,
                     "estimates": ", ".join(f"{n} {basis}" for basis, n in sorted(own.bases.items()))})
    return rows


def computed_elsewhere(status: PlanStatus) -> dict[str, dict[str, int]]:
    """Per entry, in plan order: its runs without a record that an earlier entry lists first (and so
    computes), counted by that entry; entries with none are left out."""
    out = {}
    for entry in status.plan.entries:
        counts = collections.Counter(run.entry for run in status.plan.runs_of([entry.name])
                                     if run.entry != entry.name and not status.is_done(run))
        if counts:
            out[entry.name] = dict(counts)
    return out


def page_progress(status: PlanStatus, page: str) -> tuple[Progress, list[str]] | None:
    """Progress of every run the plan lists for ``page`` and the entries listing them; None if none."""
    entries = status.plan.entries_of_page(page)
    if not entries:
        return None
    return status.progress(status.plan.runs_of_page(page)), entries


def page_text(status: PlanStatus, page: str, markdown: bool = True, counts: bool = True) -> str:
    """``N of M runs done, ~H CPU-hours left: <command>`` for a page of the plan ("" if the plan has none);
    without ``counts``, ``~H CPU-hours left: <command>`` ("" when none is left), for a text that already
    counted the page's own runs (the plan's runs of a page can include runs another table of it reads).
    The command names only the entries holding a pending run of the page, in backticks for Markdown, bare
    for plain text (a glued text is not parsed)."""
    found = page_progress(status, page)
    if found is None:
        return ""
    progress, entries = found
    if progress.done == progress.total:
        return f"all {progress.total} runs done" if counts else ""
    waiting = {name for run in status.plan.runs_of_page(page) if not status.is_done(run) for name in run.entries}
    entries = [name for name in entries if name in waiting]
    command = f"`{compute_command(entries)}`" if markdown else compute_command(entries)
    left = f"~{hours(progress.seconds_left)} CPU-hours left: {command}"
    return f"{progress.done} of {progress.total} runs done, {left}" if counts else left
