"""Figures shared by the notebooks (seaborn, saved under ``book/_results/figures``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..paths import REPO_ROOT

FIGURE_DIR = REPO_ROOT / "book" / "_results" / "figures"


def paper_vs_ours_bars(comparison: pd.DataFrame, x: str, metrics: list[str], title: str,
                       save_as: str | None = None):
    """One panel per metric: bars of ours (mean, error bar = std over seeds) and the paper's value
    as a marker, grouped by ``x``."""
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        part = comparison[comparison["metric"] == metric].reset_index(drop=True)
        positions = range(len(part))
        ax.bar(positions, part["ours"], yerr=part["ours_std"], color="#4C72B0", alpha=0.85, capsize=3,
               label="ours (mean ± std)")
        ax.scatter(positions, part["paper"], color="#DD8452", marker="D", zorder=3, label="paper")
        ax.set_xticks(list(positions), part[x], rotation=0)
        ax.set_title(metric)
        ax.axhline(0, color="black", linewidth=0.6)
    axes[0][0].legend(loc="best", fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    if save_as:
        FIGURE_DIR.mkdir(parents=True, exist_ok=True)
        fig.savefig(FIGURE_DIR / save_as, dpi=110)
    return fig


def training_curves(curves: pd.DataFrame, y: str, hue: str, title: str, save_as: str | None = None):
    """Validation metric by epoch, one line per ``hue`` value (seeds as separate units)."""
    sns.set_theme(style="whitegrid", context="notebook")
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    sns.lineplot(curves, x="epoch", y=y, hue=hue, units="seed", estimator=None, ax=ax, linewidth=1)
    ax.set_title(title)
    fig.tight_layout()
    if save_as:
        FIGURE_DIR.mkdir(parents=True, exist_ok=True)
        fig.savefig(Path(FIGURE_DIR) / save_as, dpi=110)
    return fig


def degree_ccdf(tables: dict[str, pd.DataFrame], column: str, title: str):
    """Complementary CDF of the number of interactions per ``column`` (``user`` or ``item``), one
    line per table, on log-log axes."""
    import numpy as np

    sns.set_theme(style="whitegrid", context="notebook")
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for label, table in tables.items():
        degrees = np.sort(table[column].value_counts().to_numpy())
        share_at_least = 1.0 - np.arange(len(degrees)) / len(degrees)
        ax.step(degrees, share_at_least, where="post", label=label)
    ax.set(xscale="log", yscale="log", xlabel=f"interactions per {column}", ylabel=f"share of {column}s with ≥ x",
           title=title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
