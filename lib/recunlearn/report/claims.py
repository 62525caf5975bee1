"""Checking a paper's qualitative claims against our runs.

A claim is checked in every *cell* (e.g. every dataset x model x selection) where it can be, and
reported as ``holds in n of m cells`` with a verdict: ``reproduced`` (all cells), ``partly
reproduced`` (at least half), ``not reproduced`` (fewer), ``pending`` (no cell computed).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd


def claim_verdict(holds: int, total: int) -> str:
    if total == 0:
        return "pending"
    return "reproduced" if holds == total else "partly reproduced" if 2 * holds >= total else "not reproduced"


def check_claim(claim: str, means: pd.DataFrame, cells: list[str], test: Callable[[pd.DataFrame], bool | None]) -> dict:
    """Apply ``test`` to the rows of every cell (groups of ``cells``); ``None`` means not testable."""
    results = [test(group) for _, group in means.groupby(cells)] if cells else [test(means)]
    tested = [bool(r) for r in results if r is not None]
    holds = sum(tested)
    return {"claim": claim, "holds in": f"{holds} of {len(tested)} cells", "verdict": claim_verdict(holds, len(tested))}


def value(group: pd.DataFrame, column: str, metric: str, key):
    """The ``metric`` of the row of ``group`` whose ``column`` equals ``key`` (None if absent)."""
    row = group[group[column] == key]
    return None if row.empty or pd.isna(row[metric].iloc[0]) else float(row[metric].iloc[0])


def ordered(group: pd.DataFrame, column: str, metric: str, keys: list, decreasing: bool = True) -> bool | None:
    """Whether ``metric`` is ordered along ``keys`` (non-increasing by default); None if any is missing."""
    values = [value(group, column, metric, k) for k in keys]
    if any(v is None for v in values):
        return None
    steps = np.diff(values)
    return bool((steps <= 0).all() if decreasing else (steps >= 0).all())


def trend(group: pd.DataFrame, x: str, metric: str) -> float | None:
    """Spearman correlation of ``metric`` with ``x`` (None with fewer than 3 points)."""
    part = group[[x, metric]].dropna()
    if len(part) < 3:
        return None
    return float(part[x].rank().corr(part[metric].rank()))
