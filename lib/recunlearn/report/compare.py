"""Paper vs ours: one tidy frame per item, with a tolerance and a verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd

VERDICTS = ("reproduced", "reproduced with deviation", "not reproduced", "pending")


def summarize_runs(runs: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
    """Long frame ``keys + [metric, mean, std, n]`` over seeds (std with ddof=1; 0 for one run)."""
    long = runs.melt(id_vars=keys, value_vars=metrics, var_name="metric")
    grouped = long.groupby(keys + ["metric"], sort=False)["value"]
    out = grouped.agg(mean="mean", std="std", n="count").reset_index()
    out["std"] = out["std"].fillna(0.0)
    return out


def compare(ours: pd.DataFrame, paper: pd.DataFrame, keys: list[str], tol: float, relative: bool = False,
            pending_label: str = "pending GPU") -> pd.DataFrame:
    """Join our summary (``keys, metric, mean, std``) with the paper (``keys, metric, value``).

    Returns ``keys, metric, paper, ours, ours_std, delta, within_tol, status``: ``delta = ours -
    paper``; ``within_tol`` when ``|delta| <= tol`` (``tol * |paper|`` if ``relative``); paper
    cells we have not computed keep ``ours = NaN`` and status ``pending_label``.
    """
    merged = paper.rename(columns={"value": "paper"}).merge(
        ours.rename(columns={"mean": "ours", "std": "ours_std"}), on=keys + ["metric"], how="outer")
    for column in ("paper", "ours", "ours_std"):
        merged[column] = merged[column].astype("float64")
    merged["delta"] = merged["ours"] - merged["paper"]
    bound = tol * merged["paper"].abs() if relative else tol
    merged["within_tol"] = (merged["delta"].abs() <= bound).to_numpy(dtype=bool)
    merged["status"] = np.select(
        [merged["ours"].isna(), merged["paper"].isna(), merged["within_tol"]],
        [pending_label, "ours only", "within tolerance"], default="outside tolerance")
    columns = keys + ["metric", "paper", "ours", "ours_std", "delta", "within_tol", "status"]
    return merged[[c for c in columns if c in merged.columns]]


def verdict(comparison: pd.DataFrame) -> str:
    """``reproduced`` when every computed cell is within tolerance, ``reproduced with deviation``
    when at least half are, ``not reproduced`` otherwise, ``pending`` when nothing is computed."""
    computed = comparison.dropna(subset=["paper", "ours"])
    if computed.empty:
        return "pending"
    share = computed["within_tol"].mean()
    return VERDICTS[0] if share == 1 else VERDICTS[1] if share >= 0.5 else VERDICTS[2]


def format_mean_std(mean: float, std: float, digits: int = 4) -> str:
    """``"0.3215 ± 0.0012"``, or ``"pending GPU"`` for a missing value."""
    if pd.isna(mean):
        return "pending GPU"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def paper_vs_ours_table(comparison: pd.DataFrame, index: list[str], metrics: list[str], digits: int = 4) -> pd.DataFrame:
    """Wide display table: for each metric a "paper" and an "ours" column, ours as ``mean ± std``
    (``pending GPU`` where not computed), one row per ``index`` combination."""
    part = comparison[comparison["metric"].isin(metrics)].copy()
    part["ours_text"] = [format_mean_std(m, s, digits) for m, s in zip(part["ours"], part["ours_std"])]
    part["paper_text"] = part["paper"].map(lambda v: "—" if pd.isna(v) else f"{v:.{digits}f}")
    wide = part.pivot_table(index=index, columns="metric", values=["paper_text", "ours_text"], aggfunc="first")
    wide = wide.rename(columns={"paper_text": "paper", "ours_text": "ours"}, level=0)
    return wide.reorder_levels([1, 0], axis=1).reindex(columns=[(m, w) for m in metrics for w in ("paper", "ours")])
