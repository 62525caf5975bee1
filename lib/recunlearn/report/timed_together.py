"""Which run times may be compared: times measured on the same clock (the CPU, or one GPU by name)
and close in time. A pairwise comparison uses pairs of records written at most :data:`PAIR_WINDOW`
apart; a trend over a sweep uses the levels recorded in one session (:func:`sessions`: records of one
clock never more than :data:`SESSION_GAP` apart) and needs them interleaved in time
(:func:`timed_together`), so that drift in machine load cannot pass for a trend."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from .names import display_name

SESSION_GAP = pd.Timedelta(minutes=10)
"""Two records written further apart than this (with none in between) belong to different sessions."""
PAIR_WINDOW = pd.Timedelta(minutes=30)
"""Two times are compared pairwise only when their records were written at most this far apart."""


def record_times(runs: pd.DataFrame, experiments: Iterable[str], records_dir: Path | None = None) -> pd.Series:
    """When each run's record was written (its ``created`` field), found by the ``record`` key as
    ``<records>/<experiment>/<key>.json`` in the record directories (the first of ``experiments``
    that has it); a ``created`` column already in ``runs`` is used as is. NaT where unknown."""
    if "created" in runs:
        return pd.to_datetime(runs["created"], utc=True)
    created = record_values(runs, experiments, lambda record: record.get("created"), records_dir)
    return pd.to_datetime(created.astype(object), utc=True)


def timing_clock(record: dict) -> str:
    """The clock a record's times were measured on: ``cpu``, or ``cuda: <GPU name>``."""
    if record.get("device") != "cuda":
        return "cpu"
    return f"cuda: {(record.get('environment') or {}).get('cuda_device')}"


def record_clocks(runs: pd.DataFrame, experiments: Iterable[str], records_dir: Path | None = None) -> pd.Series:
    """The clock of each run's times (:func:`timing_clock`), read from its record like
    :func:`record_times`; a ``clock`` column already in ``runs`` is used as is. ``cpu`` where no record
    tells (records without a device were all CPU runs). Times on different clocks are never compared."""
    if "clock" in runs:
        return runs["clock"].fillna("cpu")
    return record_values(runs, experiments, timing_clock, records_dir).fillna("cpu")


def with_times(runs: pd.DataFrame, experiments: Iterable[str], records_dir: Path | None = None) -> pd.DataFrame:
    """``runs`` with ``created`` (:func:`record_times`) and ``clock`` (:func:`record_clocks`) columns."""
    return runs.assign(created=record_times(runs, experiments, records_dir),
                       clock=record_clocks(runs, experiments, records_dir))


def record_values(runs: pd.DataFrame, experiments: Iterable[str], read: Callable[[dict], object],
                  records_dir: Path | None = None) -> pd.Series:
    """``read(record)`` for each run's record, found by the ``record`` key as
    ``<records>/<experiment>/<key>.json`` in the record directories (the first of ``experiments``
    that has it); None where the run has no record or ``read`` finds nothing (a missing key)."""
    if "record" not in runs:
        return pd.Series([None] * len(runs), index=runs.index, dtype=object)
    from ..experiments.records import read_dirs

    roots = [Path(r) for r in read_dirs(records_dir)]
    values = []
    for key in runs["record"]:
        value = None
        paths_ = [root / experiment / f"{key}.json" for root in roots for experiment in experiments]
        for path in paths_ if isinstance(key, str) else []:
            if path.is_file():
                # a lenient parse, so that a record's NaN elsewhere cannot hide the value
                try:
                    value = read(json.loads(path.read_text()))
                except (KeyError, TypeError):
                    value = None
                break
        values.append(value)
    return pd.Series(values, index=runs.index, dtype=object)


def sessions(created: pd.Series, gap: pd.Timedelta = SESSION_GAP, clocks: pd.Series | None = None) -> pd.Series:
    """Session number of each time: per clock (``clocks``, default one), sorted, a new session starts
    after a pause longer than ``gap``; sessions of different clocks get different numbers. Unknown
    times (NaT) get -1, a session of their own that never pairs."""
    out = pd.Series(-1, index=created.index, dtype=int)
    clocks = pd.Series("", index=created.index) if clocks is None else clocks.fillna("cpu")
    first = 0
    for clock in sorted(clocks.unique()):
        known = created[(clocks == clock).to_numpy()].dropna().sort_values()
        if len(known):
            numbers = first + (known.diff() > gap).cumsum().astype(int).to_numpy()
            out.loc[known.index] = numbers
            first = int(numbers.max()) + 1
    return out


def with_sessions(runs: pd.DataFrame, experiments: Iterable[str], records_dir: Path | None = None) -> pd.DataFrame:
    """``runs`` with ``created``, ``clock`` (:func:`with_times`) and ``session`` (see :func:`sessions`) columns."""
    timed = with_times(runs, list(experiments), records_dir)
    return timed.assign(session=sessions(timed["created"], clocks=timed["clock"]))


def interleaved(levels: pd.Series, created: pd.Series) -> bool:
    """Whether the runs of every level were interleaved in time with those of every other level:
    each pair of levels has overlapping [first, last] record times. Levels run one after another
    (all of level 1, then all of level 2, ...) are not; neither is one run per level."""
    spans = created.groupby(levels.to_numpy()).agg(["min", "max"])
    return all(spans.loc[a, "min"] <= spans.loc[b, "max"] and spans.loc[b, "min"] <= spans.loc[a, "max"]
               for a, b in itertools.combinations(spans.index, 2))


def timed_together(x: str) -> Callable[[pd.DataFrame], tuple[pd.DataFrame, str]]:
    """The ``usable`` rule of :func:`~recunlearn.report.claims.trend_claim` for times (rows need ``created`` and ``session``):
    keep the session holding the most levels of ``x`` (levels timed in another session are left
    out and named); then require the levels to be interleaved in time. Rows that fail it return
    no points (so the cell is inconclusive), with the reason."""
    def usable(group: pd.DataFrame) -> tuple[pd.DataFrame, str]:
        known = group[group["session"] >= 0]
        if known.empty:
            return group.iloc[:0], "record times unknown: cannot tell which runs were timed together"
        levels = known.groupby("session")[x].nunique()
        best = levels[levels == levels.max()].index.max()
        points = known[known["session"] == best]
        left_out = sorted(set(group[x]) - set(points[x]))
        levels = ", ".join(f"{v:g}" for v in left_out)
        why = f"{display_name(x)} = {levels} timed in another session, left out" if left_out else ""
        if points[x].nunique() >= 3 and not interleaved(points[x], points["created"]):
            why = (why + "; " if why else "") + ("the levels were timed one after another, not interleaved, "
                                                 "so drift in machine load during the session would look like a trend")
            return points.iloc[:0], why
        return points, why
    return usable
