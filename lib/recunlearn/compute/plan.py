"""The compute plan: every paper-scale run of the book, in priority order, with the pages it serves.

A plan file (``grids/plan.yml``) holds a list ``entries``. An entry has a ``name``, a ``title``, the
``pages`` it serves (``<paper>/<notebook stem>``) and ``grids``: ``{experiment, params}`` items
expanded exactly like a grid file (a list value is an axis of a cartesian product; a list-valued
parameter is written as a one-element axis, ``sizes: [[10000, 20000]]``). A grid may name the
``pages`` its runs serve, some of its entry's (default: all of them): one entry can then hold the
runs of several pages that share work (one batch) while each page counts only its own runs. Params never name the
``device``: the command sets it on every config that has one, so one plan runs unchanged on a CPU, a
GPU or a cluster. The device is part of a record's key, so CPU and GPU records are different files,
but they are records of one run: a run computed on either device is done on both, and a page reads
the record made on the device it asks for, else the other (each record names its device).

Definitions:

- a *run* is one config, identified by its record key. A run listed by several entries (the same
  control model behind several pages) is one run, computed at the first entry listing it;
- a run is *done* when the records directory holds its record, made on any device, as strict JSON,
  made from a clean commit or by this checkout's library source (same fingerprint: recomputing it
  would change nothing); every other run is *pending*;
- a *batch* is the pending runs of one entry that share work inside a process (``SHARED_WORK``:
  the CASPER runs of one dataset, model and seed share one trained original model; the SRU runs of
  one dataset, model and seed share the full-data model, and those with equal shard sessions their
  sub-models; the bystander and stability runs of one backbone, method, partition and seed share the
  method's learned model), run one after another by one worker. Every other run is a batch of its own.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Iterable

import yaml

from ..experiments.casper import original_key
from ..experiments.cure4rec_exact import learned_model_key
from ..experiments.sru import full_data_model_key
from ..experiments.config import Config, ConfigError
from ..io import read_json_strict
from ..provenance import is_clean_commit, source_fingerprint

ENTRY_FIELDS = {"name", "title", "pages", "grids"}

SHARED_WORK: dict[str, Callable[[Config], tuple]] = {"casper-rls": original_key,
                                                     "sru-unlearning": full_data_model_key,
                                                     "cure4rec-bystander": learned_model_key,
                                                     "cure4rec-stability": learned_model_key}
"""Experiment -> the key of the work its runs share within one process (see ``batches``)."""


class ComputeError(ValueError):
    """A plan file, a compute option or an executor that cannot be used as given."""


@dataclasses.dataclass(frozen=True)
class PlanEntry:
    """One step of the plan: the runs behind a page (or part of one)."""

    name: str
    title: str
    pages: tuple[str, ...]
    grids: tuple[dict, ...]

    def grid_pages(self, grid: dict) -> tuple[str, ...]:
        """The pages the runs of ``grid`` (one of this entry's) serve."""
        return tuple(grid.get("pages", self.pages))


@dataclasses.dataclass(frozen=True)
class Run:
    """One config of the plan; ``entries`` lists every entry naming it, in plan order (the first computes
    it), and ``pages`` every page it serves."""

    config: Config
    key: str
    entries: tuple[str, ...]
    pages: frozenset[str] = frozenset()
    other_device_keys: tuple[str, ...] = ()
    """Keys of the same run's records on the other devices (a record on any device makes it done)."""

    @property
    def experiment(self) -> str:
        return self.config.experiment

    @property
    def entry(self) -> str:
        return self.entries[0]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The entries of a plan file and its runs (distinct record keys) in plan order, on one device."""

    path: Path
    device: str
    entries: tuple[PlanEntry, ...]
    runs: tuple[Run, ...]

    def entry_names(self) -> list[str]:
        return [entry.name for entry in self.entries]

    def runs_of(self, names: Iterable[str]) -> list[Run]:
        """The runs listed by any of the entries ``names``, in plan order."""
        wanted = set(names)
        unknown = sorted(wanted - set(self.entry_names()))
        if unknown:
            raise ComputeError(f"unknown plan entr{'y' if len(unknown) == 1 else 'ies'} {unknown}; entries of "
                            f"{self.path}: {self.entry_names()}")
        return [run for run in self.runs if wanted & set(run.entries)]

    def entries_of_page(self, page: str) -> list[str]:
        """Names of the entries serving ``page`` (``<paper>/<notebook stem>``)."""
        return [entry.name for entry in self.entries if page in entry.pages]

    def runs_of_page(self, page: str) -> list[Run]:
        """The runs serving ``page``, in plan order."""
        return [run for run in self.runs if page in run.pages]


def _expand(grid: dict, device: str) -> list[Config]:
    """The validated configs of one ``{experiment, params}`` grid, on ``device`` where they have one."""
    from ..experiments.records import expand  # the grid files' expansion, shared with ``run`` and ``grid``
    from ..experiments.records import RUNNERS

    params = grid["params"]
    registered = RUNNERS.get(grid["experiment"])
    if registered is not None and "device" in registered[0].parameter_names():
        params = {**params, "device": device}
    return expand(grid["experiment"], params)


def entry_configs(entry: PlanEntry, device: str = "cpu", page: str | None = None) -> list[Config]:
    """The validated configs of every grid of ``entry`` (those serving ``page`` when given), on
    ``device`` (without expanding the rest of the plan)."""
    return [config for grid in entry.grids if page is None or page in entry.grid_pages(grid)
            for config in _expand(grid, device)]


def _entry(raw, index: int, path: Path) -> PlanEntry:
    where = f"plan {path}, entry {index}"
    if not isinstance(raw, dict) or set(raw) != ENTRY_FIELDS:
        keys = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise ComputeError(f"{where}: expected the fields {sorted(ENTRY_FIELDS)}, got {keys}")
    name = raw["name"]
    if not (isinstance(name, str) and name and " " not in name):
        raise ComputeError(f"{where}: name must be a word (no spaces), got {name!r}")
    pages, grids = raw["pages"], raw["grids"]
    if not (isinstance(pages, list) and all(isinstance(p, str) for p in pages)):
        raise ComputeError(f"{where} ({name}): pages must be a list of '<paper>/<notebook>' names")
    if not (isinstance(grids, list) and grids):
        raise ComputeError(f"{where} ({name}): grids must be a non-empty list of {{experiment, params}}")
    for grid in grids:
        if not (isinstance(grid, dict) and {"experiment", "params"} <= set(grid) <= {"experiment", "params", "pages"}
                and isinstance(grid["params"], dict)):
            raise ComputeError(f"{where} ({name}): each grid must be {{experiment: name, params: {{...}}}} and "
                               f"optionally pages: [...], got {grid!r}")
        if "pages" in grid and not (isinstance(grid["pages"], list) and grid["pages"]
                                    and set(grid["pages"]) <= set(pages)):
            raise ComputeError(f"{where} ({name}): a grid's pages must be a non-empty list of the entry's pages "
                               f"{pages}, got {grid['pages']!r}")
        if "device" in grid["params"]:
            raise ComputeError(f"{where} ({name}): params must not set the device (the command does: --device)")
    return PlanEntry(name, str(raw["title"]), tuple(pages), tuple(grids))


def read_entries(path: Path) -> list[PlanEntry]:
    """The entries of the plan file ``path``, checked for shape (not yet expanded)."""
    path = Path(path)
    try:
        content = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ComputeError(f"plan file {path} not found") from None
    except OSError as exc:
        raise ComputeError(f"plan file {path} cannot be read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ComputeError(f"plan file {path} is not valid YAML: {exc}") from None
    if not (isinstance(content, dict) and isinstance(content.get("entries"), list)):
        raise ComputeError(f"plan file {path}: expected a mapping with a list 'entries'")
    entries = [_entry(raw, index, path) for index, raw in enumerate(content["entries"])]
    names = [entry.name for entry in entries]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ComputeError(f"plan file {path}: entry names must be unique; repeated: {repeated}")
    return entries


def load_plan(path: Path, device: str = "cpu") -> Plan:
    """The plan in ``path`` with every config validated on ``device``; a config listed more than once
    (in one entry or several) is one run."""
    from ..experiments.records import device_twins, record_key

    entries = read_entries(path)
    found: dict[tuple[str, str], tuple[Config, list[str], set[str]]] = {}
    for entry in entries:
        for grid in entry.grids:
            try:
                configs = _expand(grid, device)
            except ConfigError as exc:
                raise ComputeError(f"plan {path}, entry {entry.name}: {exc}") from None
            for config in configs:
                _, config_entries, pages = found.setdefault((config.experiment, record_key(config)),
                                                            (config, [], set()))
                if entry.name not in config_entries:
                    config_entries.append(entry.name)
                pages.update(entry.grid_pages(grid))
    runs = tuple(Run(config, key, tuple(names), frozenset(pages), tuple(map(record_key, device_twins(config)[1:])))
                 for (_, key), (config, names, pages) in found.items())
    return Plan(Path(path), device, tuple(entries), runs)


# --- done and pending ---------------------------------------------------------------------------------

def read_record(path: Path) -> dict | None:
    """The record in ``path``; None when it is missing, unreadable or not strict JSON."""
    try:
        return read_json_strict(path)
    except (ValueError, OSError):
        return None


def stored_records(records_dir: Path) -> dict[tuple[str, str], dict | None]:
    """Every record file under ``records_dir`` by (experiment, key) (None: not strict JSON)."""
    return {(path.parent.name, path.stem): read_record(path) for path in sorted(Path(records_dir).glob("*/*.json"))}


def is_done(record: dict | None) -> bool:
    """Whether a stored record counts as done (strict JSON, from a clean commit or this code)."""
    return record is not None and (is_clean_commit(record.get("git_commit"))
                                   or record.get("source_fingerprint") == source_fingerprint())


def done_keys(records: dict[tuple[str, str], dict | None]) -> frozenset[tuple[str, str]]:
    """The (experiment, key) of every record that counts as done."""
    return frozenset(name for name, record in records.items() if is_done(record))


def batches(runs: Iterable[Run]) -> list[list[Run]]:
    """``runs`` grouped into batches (same computing entry and shared-work key), ordered by each
    batch's first run; runs keep their order inside a batch."""
    groups: dict[tuple, list[Run]] = {}
    for run in runs:
        shared = SHARED_WORK.get(run.experiment)
        group = (run.entry, run.experiment, shared(run.config)) if shared else (run.entry, run.experiment, run.key)
        groups.setdefault(group, []).append(run)
    return list(groups.values())
