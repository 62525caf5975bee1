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


def method_bars(frame: pd.DataFrame, y: str, title: str, col: str = "model", x: str = "method",
                hue: str = "selection", paper: pd.DataFrame | None = None):
    """Bars of ``y`` (mean ± std over seeds) by ``x`` and ``hue``, one panel per ``col``; the
    paper's value, where given (same columns, ``value``), as a black diamond on its bar."""
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.catplot(frame, x=x, y=y, hue=hue, col=col, kind="bar", errorbar="sd", height=3.4, aspect=1.3,
                       capsize=0.08, err_kws={"linewidth": 1}, sharey=False)
    if paper is not None and not paper.empty:
        hue_order = list(dict.fromkeys(frame[hue]))
        x_order = list(dict.fromkeys(frame[x]))
        width = 0.8 / len(hue_order)
        for value_of_col, ax in grid.axes_dict.items():
            part = paper[paper[col] == value_of_col]
            for _, row in part.iterrows():
                if row[x] in x_order and row[hue] in hue_order:
                    pos = x_order.index(row[x]) - 0.4 + width * (hue_order.index(row[hue]) + 0.5)
                    ax.scatter(pos, row["value"], marker="D", color="black", s=18, zorder=5)
        grid.figure.text(0.01, 0.01, "◆ paper", fontsize="small")
    grid.figure.suptitle(title, y=1.03)
    return grid.figure


def sweep_lines(frame: pd.DataFrame, x: str, metrics: list[str], hue: str, title: str):
    """One panel per metric: mean ± std over seeds against ``x``, one line per ``hue``."""
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.8 * len(metrics), 3.4), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        sns.lineplot(frame, x=x, y=metric, hue=hue, marker="o", errorbar="sd", ax=ax, legend=ax is axes[0][0])
        ax.set_title(metric)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def damping_sweep(sweep: pd.DataFrame, title: str):
    """SCIF's MIO accuracy against the damping it started from (log scale), one panel per model, with
    Learn's and Retrain's MIO as reference lines (absolute-rule points drawn hollow)."""
    sns.set_theme(style="whitegrid", context="notebook")
    models = list(dict.fromkeys(sweep["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 3.4), squeeze=False)
    for ax, model in zip(axes[0], models):
        part = sweep[sweep["model"] == model]
        relative = part[part["damping_rule"] == "relative"].sort_values("initial_damping")
        ax.plot(relative["initial_damping"], relative["mio_accuracy"], "o-", label="SCIF, relative rule")
        absolute = part[part["damping_rule"] == "absolute"]
        ax.plot(absolute["initial_damping"], absolute["mio_accuracy"], "o", mfc="none", label="SCIF, absolute δ")
        for column, style, name in (("mio_accuracy_learn", ":", "Learn"), ("mio_accuracy_retrain", "--", "Retrain")):
            ax.axhline(part[column].iloc[0], ls=style, color="grey")
            ax.annotate(name, (1.0, part[column].iloc[0]), xycoords=("axes fraction", "data"), ha="right",
                        va="bottom", fontsize=9, color="grey")
        ax.set_xscale("log")
        ax.set(title=model.upper(), xlabel="damping δ (start of the schedule)", ylabel="MIO accuracy")
    axes[0][0].legend(fontsize=9, loc="center left")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def shard_composition(frame: pd.DataFrame, title: str):
    """Active users per shard (bars) for each method (rows) and selection (columns)."""
    sns.set_theme(style="whitegrid", context="notebook")
    grid = sns.catplot(frame, x="shard", y="active", hue="source", row="method", col="selection", kind="bar",
                       height=2.4, aspect=1.6, errorbar=None)
    grid.figure.suptitle(title, y=1.02)
    return grid.figure


def aspect_radar(frame: pd.DataFrame, aspects: list[str], series: str, title: str):
    """A radar chart: one closed polygon per value of ``series`` over the ``aspects`` columns
    (already normalised, larger = better)."""
    import numpy as np

    angles = np.linspace(0, 2 * np.pi, len(aspects), endpoint=False)
    fig, ax = plt.subplots(figsize=(5.5, 5.5), subplot_kw={"projection": "polar"})
    for name, row in frame.set_index(series)[aspects].iterrows():
        values = row.to_numpy(dtype=float)
        ax.plot(np.r_[angles, angles[:1]], np.r_[values, values[:1]], marker="o", label=name)
        ax.fill(np.r_[angles, angles[:1]], np.r_[values, values[:1]], alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels(aspects)
    ax.tick_params(axis="x", pad=10)
    ax.set_rlabel_position(22.5)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0])
    ax.tick_params(axis="y", labelsize="x-small")
    ax.set_ylim(0, 1.05)
    ax.set_title(title, pad=18)
    ax.legend(loc="upper right", bbox_to_anchor=(1.35, 1.1), fontsize="small")
    fig.tight_layout()
    return fig
