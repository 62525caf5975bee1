"""Paper vs ours: one tidy frame per item, with a tolerance per cell and a verdict.

A numeric cell is *within* tolerance when ``|ours - paper| <= tol`` with the tolerance of
:func:`cell_tolerance`: the larger of the paper's rounding (half a unit of its last printed digit)
and twice the standard error of our mean over seeds. Nothing else widens it.
"""

from __future__ import annotations

import decimal

import numpy as np
import pandas as pd

from .names import MISSING_TEXT, display_frame, display_name, format_number, paper_rank, sort_paper_order
from .verdicts import NOT_REPRODUCED, PARTLY, PENDING, REPRODUCED, VERDICTS, pending_note  # noqa: F401

SE_MULTIPLIER = 2.0
"""``k`` of :func:`cell_tolerance`: ``k`` standard errors. Not a 95 % interval with few seeds: with
``n`` seeds the mean's t-interval ``± 2 s/sqrt(n)`` covers about 82 % (3 seeds) or 70 % (2 seeds),
and it leaves out the paper's own seed noise, so a cell within it is a match at that looser sense."""


def summarize_runs(runs: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
    """Long frame ``keys + [metric, mean, std, n]`` over seeds (std with ddof=1; 0 for one run); empty,
    with those columns, when there is no run."""
    if runs.empty:
        return pd.DataFrame(columns=keys + ["metric", "mean", "std", "n"])
    long = runs.melt(id_vars=keys, value_vars=metrics, var_name="metric")
    grouped = long.groupby(keys + ["metric"], sort=False)["value"]
    out = grouped.agg(mean="mean", std="std", n="count").reset_index()
    out["std"] = out["std"].fillna(0.0)
    return out


def printed_resolution(value) -> float:
    """Half a unit of the last printed digit of a paper value: ``"0.540"`` -> 0.0005, ``"4296"`` ->
    0.5, ``"0.92195"`` -> 0.000005. A number (not its printed text) gives the resolution of its
    shortest representation, which drops trailing zeros (0.540 -> 0.005; a whole number -> 0.5):
    pass the text where it is known (``paper_table`` keeps it in a ``resolution`` column). NaN for
    a missing value."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return float("nan")
    if isinstance(value, str):
        text = value.strip()
    else:
        text = str(int(value)) if float(value).is_integer() else repr(float(value))
    try:
        exponent = decimal.Decimal(text).as_tuple().exponent
    except decimal.InvalidOperation:
        return float("nan")
    return 0.5 * 10.0 ** min(int(exponent), 0) if isinstance(exponent, int) else float("nan")


def cell_tolerance(resolution, std, n, k: float = SE_MULTIPLIER):
    """Tolerance of one numeric cell: ``tol = max(r, k * s / sqrt(n))``.

    ``r`` is the paper's rounding (half a unit of its last printed digit, :func:`printed_resolution`):
    a value printed as 0.3215 stands for anything in [0.32145, 0.32155]. ``s / sqrt(n)`` is the
    standard error of our mean over ``n`` seeds (``s``: standard deviation with ddof = 1; 0 for one
    seed), and ``k = 2`` makes ``k * s / sqrt(n)`` an interval for our mean that covers about 95 % with
    many seeds, but about 82 % with 3 and 70 % with 2 (:data:`SE_MULTIPLIER`). A cell is
    within tolerance when the paper's value is within rounding of ours or within our seed noise;
    one seed therefore has to match to the paper's printed precision. Vectorised over arrays."""
    resolution, std, n = (np.asarray(a, dtype=float) for a in (resolution, std, n))
    se = np.where(n > 1, np.nan_to_num(std) / np.sqrt(np.maximum(n, 1)), 0.0)
    return np.fmax(np.nan_to_num(resolution, nan=0.0), k * se)


def compare(ours: pd.DataFrame, paper: pd.DataFrame, keys: list[str], tol: float | None = None,
            relative: bool = False, pending_label: str = "pending") -> pd.DataFrame:
    """Join our summary (``keys, metric, mean, std`` and optionally ``n``) with the paper
    (``keys, metric, value`` and optionally ``resolution``, the paper's rounding).

    Returns ``keys, metric, paper, ours, ours_std, n, delta, tol, within_tol, status``:
    ``delta = ours - paper``; ``tol`` is the tolerance used for that cell, by default the rule of
    :func:`cell_tolerance` (paper rounding or two standard errors of our mean, whichever is larger;
    ``n`` defaults to 1 when our summary has no count); a number ``tol`` instead fixes it for every
    cell (``tol * |paper|`` if ``relative``; used for exact counts). ``within_tol`` when
    ``|delta| <= tol``. Paper cells we have not computed keep ``ours = NaN`` and status
    ``pending_label``; cells of ours without a paper value are ``ours only``.
    """
    theirs = paper.rename(columns={"value": "paper"})
    if "resolution" not in theirs:
        theirs = theirs.assign(resolution=[printed_resolution(v) for v in theirs["paper"]])
    ours = ours.rename(columns={"mean": "ours", "std": "ours_std"})
    if "n" not in ours:
        ours = ours.assign(n=1)
    merged = theirs.merge(ours, on=keys + ["metric"], how="outer")
    for column in ("paper", "ours", "ours_std", "resolution"):
        merged[column] = merged[column].astype("float64")
    merged["delta"] = merged["ours"] - merged["paper"]
    if tol is None:
        merged["tol"] = cell_tolerance(merged["resolution"], merged["ours_std"], merged["n"].fillna(1))
    else:
        merged["tol"] = tol * merged["paper"].abs() if relative else float(tol)
    merged["within_tol"] = (merged["delta"].abs() <= merged["tol"] + 1e-12).to_numpy(dtype=bool)
    merged["status"] = np.select(
        [merged["ours"].isna(), merged["paper"].isna(), merged["within_tol"]],
        [pending_label, "ours only", "within tolerance"], default="outside tolerance")
    columns = keys + ["metric", "paper", "ours", "ours_std", "n", "delta", "tol", "within_tol", "status"]
    return merged[[c for c in columns if c in merged.columns]]


def verdict(comparison: pd.DataFrame) -> str:
    """Verdict of the paper's numeric cells (rows with a paper value) of a :func:`compare` frame:

    - ``pending``: none of them computed;
    - ``reproduced``: every one computed and within tolerance;
    - ``not reproduced``: none of the computed ones within tolerance;
    - ``partly reproduced``: otherwise -- including every computed cell within tolerance while
      others are still pending, since a pending cell is not reproduced yet.

    Pending cells are named: ``"partly reproduced (12 of 36 cells pending)"``. A page's verdict,
    which also weighs its claims, is :func:`recunlearn.report.verdicts.page_verdict`."""
    from .verdicts import cell_outcomes, combine

    outcomes = cell_outcomes(comparison)
    return pending_note(combine(outcomes), outcomes.count("pending"), len(outcomes))


def within_text(comparison: pd.DataFrame) -> str:
    """``"5 of 12 computed paper cells within tolerance (3 pending)"`` for a :func:`compare` frame;
    ``"pending (3 paper cells)"`` when none is computed (never a count of nothing)."""
    part = comparison[comparison["paper"].notna()]
    computed = int(part["ours"].notna().sum())
    pending = len(part) - computed
    if not len(part):
        return "no paper cell on this page"
    if computed == 0:
        return f"pending ({pending} paper cells)"
    text = f"{int(part['within_tol'].sum())} of {computed} computed paper cells within tolerance"
    return text + (f" ({pending} pending)" if pending else "")


def format_mean_std(mean: float, std: float, digits: int = 4, pending: str = "pending", n=None,
                    of: int | None = None) -> str:
    """``"0.3215 ± 0.0012"`` over ``n`` runs; ``"0.3215 (1 run)"`` for a single run (``n == 1``, or
    no ``n`` and an undefined ``std``), whose spread is unknown rather than zero; ``"… (2 runs)"`` when
    ``n`` is below ``of``, the runs the other cells of a table have; ``pending`` (default
    ``"pending"``) for a missing value; never ``-0.0000``."""
    if pd.isna(mean):
        return pending
    if (n is not None and pd.notna(n) and int(n) == 1) or (n is None and pd.isna(std)):
        return f"{format_number(mean, digits)} (1 run)"
    text = f"{format_number(mean, digits)} ± {format_number(abs(std) if pd.notna(std) else 0.0, digits)}"
    fewer = n is not None and pd.notna(n) and of is not None and pd.notna(of) and int(n) < int(of)
    return text + (f" ({int(n)} runs)" if fewer else "")


def mean_std_table(runs: pd.DataFrame, keys: list[str], metrics: list[str], digits: int | dict[str, int] = 4
                   ) -> pd.DataFrame:
    """One row per ``keys``: ``mean ± std`` over seeds of each of ``metrics`` (those present; ``—`` where
    the mean is undefined; ``(1 run)`` for a single value) with a ``runs`` count (seeds, times the
    unlearning sets or selectors a row pools), display names, in the papers' order; empty when there
    is no run or no such metric. ``digits``: decimals, for every metric or by metric (4 where a
    mapping names none)."""
    metrics = [m for m in metrics if m in runs]
    if runs.empty or not metrics:
        return pd.DataFrame()
    places = digits if isinstance(digits, dict) else dict.fromkeys(metrics, digits)
    grouped = runs.groupby(keys)[metrics]
    mean, std, count = grouped.mean(), grouped.std(), grouped.count()
    table = pd.DataFrame({m: [format_mean_std(a, b, places.get(m, 4), MISSING_TEXT, n)
                              for a, b, n in zip(mean[m], std[m], count[m])] for m in metrics}, index=mean.index)
    table.insert(0, "runs", grouped.size())
    return display_frame(sort_paper_order(table.reset_index(), keys), index=keys)


def check_text(within: bool, tol: float, ours: float, paper: float, digits: int = 4) -> str:
    """``"within ±0.0021"`` / ``"outside ±0.0021"``; ``"—"`` where a side is missing."""
    if pd.isna(ours) or pd.isna(paper):
        return "—"
    return f"{'within' if within else 'outside'} ±{format_number(tol, digits)}"


DIFFERENCE_HEADER = "ours − paper"


def paper_vs_ours_table(comparison: pd.DataFrame, index: list[str], metrics: list[str],
                        digits: int = 4, *, difference: bool = True, check: bool = True,
                        display: bool = True, pending: str = "pending", metrics_as_rows: bool = False) -> pd.DataFrame:
    """Wide display table: for each metric a "paper" column, an "ours" column (``mean ± std`` over
    seeds, ``pending`` where not computed), an "ours − paper" column (the signed difference of the
    means, ``difference``) and a "check" column (within or outside, with the cell's tolerance, see
    :func:`cell_tolerance`), one row per ``index`` combination.

    Rows come in the papers' order (Retrain, SISA, RecEraser, UltraRE; core, random, edge; ML-100K,
    ML-1M, ADM; :data:`recunlearn.report.names.PAPER_ORDER`), indexed by ``index`` rather than a row
    number; with ``display`` headers and key values are display names (``ndcg_untruncated`` ->
    "NDCG@20", ``lightgcn`` -> "LightGCN"). Missing cells read "—", never ``NaN``; no ``-0.0000``.
    ``metrics_as_rows``: the metric as the last row level instead, four columns in all, so that a
    page comparing several metrics fits its width."""
    part = comparison[comparison["metric"].isin(metrics)].copy()
    part["ours_text"] = [format_mean_std(m, s, digits, pending, n)
                         for m, s, n in zip(part["ours"], part["ours_std"], part["n"])]
    part["paper_text"] = part["paper"].map(lambda v: format_number(v, digits))
    delta = part["ours"] - part["paper"]
    part["delta_text"] = delta.map(lambda v: format_number(v, digits, signed=True))
    part["check_text"] = [check_text(w, t, o, p, digits)
                          for w, t, o, p in zip(part["within_tol"], part["tol"], part["ours"], part["paper"])]
    parts = [("paper_text", "paper"), ("ours_text", "ours")]
    parts += [("delta_text", DIFFERENCE_HEADER)] if difference else []
    parts += [("check_text", "check")] if check else []
    wide = part.pivot_table(index=index, columns="metric", values=[p for p, _ in parts], aggfunc="first")
    wide = wide.rename(columns=dict(parts), level=0)
    wide = wide.reorder_levels([1, 0], axis=1).reindex(
        columns=[(m, w) for m in metrics for _, w in parts])
    wide = sort_paper_order(wide, list(index)).fillna("—")
    if display:
        wide.columns = pd.MultiIndex.from_tuples([(display_name(m), w) for m, w in wide.columns],
                                                 names=[None, None])
        if wide.index.nlevels > 1:
            wide.index = pd.MultiIndex.from_tuples([tuple(display_name(v) for v in row) for row in wide.index],
                                                   names=[display_name(n) for n in wide.index.names])
        else:
            wide.index = pd.Index([display_name(v) for v in wide.index], name=display_name(wide.index.name))
    if metrics_as_rows:
        wide = wide.stack(level=0, future_stack=True)
        wide.index = wide.index.set_names("Metric" if display else "metric", level=-1)
        wide.columns.name = None
    return wide


WITHIN_MARK = "✓"
"""Marks our value in a :func:`paper_layout` cell when it is within the cell's tolerance of the paper's."""


def paper_layout(comparison: pd.DataFrame, rows: list[str], columns: list[str], metrics: list[str],
                 digits: int | dict[str, int] = 4) -> pd.DataFrame:
    """The paper's table with our numbers in it: one row per ``rows`` combination and one column per
    ``columns`` combination (``metric`` may be in either), each in the paper's order (metrics in
    ``metrics``' order), each cell our mean over seeds above the paper's value in brackets
    (``"0.2945 ✓\\n(0.2949)"``; ✓ where the two agree within the cell's tolerance; ``(1 run)`` after a
    mean of fewer runs than the table's other cells have). A cell we have not computed reads its
    status (``pending``) above the paper's value; one the paper lacks reads ours alone. ``comparison``
    needs ``ours`` and ``paper`` (a :func:`compare` frame; without ``within_tol``, ``n`` or ``status``
    nothing is marked and a missing value of ours reads ``pending``). ``digits``: decimals of every
    metric, or by metric (4 where not given). Standard deviations, differences and the tolerances are
    :func:`paper_vs_ours_table`'s."""
    part = comparison[comparison["metric"].isin(metrics)]
    if part.empty:
        return pd.DataFrame()
    places = [digits.get(m, 4) if isinstance(digits, dict) else digits for m in part["metric"]]
    counts = part["n"] if "n" in part else pd.Series(np.nan, index=part.index)
    runs = ["" if pd.isna(n) or n >= counts.max() else f" ({int(n)} run{'s' if n != 1 else ''})" for n in counts]
    within = part["within_tol"] if "within_tol" in part else [False] * len(part)
    status = part["status"] if "status" in part else [PENDING] * len(part)
    cells = [(format_number(o, d) + r + (f" {WITHIN_MARK}" if w and pd.notna(p) else "") if pd.notna(o) else s)
             + ("" if pd.isna(p) else f"\n({format_number(p, d)})")
             for o, p, w, s, d, r in zip(part["ours"], part["paper"], within, status, places, runs)]
    wide = part.assign(cell=cells).pivot_table(index=rows, columns=columns, values="cell", aggfunc="first")
    return wide.reindex(index=_paper_ordered(part, rows, metrics), columns=_paper_ordered(part, columns, metrics))


def _paper_ordered(frame: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.Index:
    """The combinations of ``keys`` met in ``frame``, each key in the paper's order (metrics in ``metrics``')."""
    def rank(key, value):
        return (0, metrics.index(value)) if key == "metric" else paper_rank(key, value)

    combos = sorted(dict.fromkeys(map(tuple, frame[keys].to_numpy())),
                    key=lambda combo: [rank(k, v) for k, v in zip(keys, combo)])
    return (pd.MultiIndex.from_tuples(combos, names=keys) if len(keys) > 1
            else pd.Index([c[0] for c in combos], name=keys[0]))
