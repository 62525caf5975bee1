"""Figures shared by the notebooks (seaborn, saved under ``book/_results/figures``)."""

from __future__ import annotations

import textwrap

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..paths import REPO_ROOT
from .names import display_name, paper_sorted

FIGURE_DIR = REPO_ROOT / "book" / "_results" / "figures"

PAGE_WIDTH_IN = 9.0
"""Widest figure, in inches: the book shows figures 700-900 px wide, so fonts keep their size."""
FONT_RC = {"font.size": 11, "axes.titlesize": 11, "axes.labelsize": 11, "xtick.labelsize": 10,
           "ytick.labelsize": 10, "legend.fontsize": 10, "legend.title_fontsize": 10, "figure.titlesize": 12,
           "savefig.bbox": "tight"}
"""Font sizes (points) for a figure at most :data:`PAGE_WIDTH_IN` wide: >= 10 pt at the final size."""


def set_theme() -> None:
    """Seaborn's white grid with fonts readable at page width and a tight bounding box when saved."""
    sns.set_theme(style="whitegrid", context="notebook", rc=FONT_RC)


def panel_grid(n: int, height: float = 3.2, max_cols: int = 3):
    """``n`` panels in rows of at most ``max_cols``, the whole figure :data:`PAGE_WIDTH_IN` wide."""
    cols = 2 if n == 4 and max_cols >= 2 else max(1, min(n, max_cols))
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(min(PAGE_WIDTH_IN, 4.5 * cols), height * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def legend_below(fig, ax=None, ncol: int | None = None, title: str | None = None, handles=None, labels=None):
    """One legend for the figure, centred below the panels and their tick labels (off the data);
    ``ax``'s handles by default. Saved and shown with a tight bounding box, so nothing is clipped."""
    if handles is None:
        handles, labels = (ax or fig.axes[0]).get_legend_handles_labels()
    for each in fig.axes:
        if each.get_legend() is not None:
            each.get_legend().remove()
    if not handles:
        return None
    renderer = fig.canvas.get_renderer()
    bottoms = [each.get_tightbbox(renderer).y0 for each in fig.axes if each.get_visible()]
    top = min(bottoms) / fig.bbox.height if bottoms else 0.0
    return fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, top), frameon=False, title=title,
                      ncol=ncol or min(len(handles), 4))


def hue_handles(labels: list[str], palette=None) -> list:
    """Legend patches for bars coloured by hue (seaborn's default palette, in ``labels``' order); the
    bars are drawn at full saturation so that a patch has its bars' exact colour."""
    from matplotlib.patches import Patch

    colors = palette or sns.color_palette(n_colors=max(len(labels), 1))
    return [Patch(facecolor=c, label=label) for c, label in zip(colors, labels)]


def rotate_if_crowded(ax, limit: int = 3, width: float = 3.0) -> None:
    """Tilt the x tick labels when more than ``limit`` long labels share a narrow panel."""
    labels = [t.get_text() for t in ax.get_xticklabels()]
    if len(labels) > limit or sum(len(t) for t in labels) * 0.09 > width:
        ax.tick_params(axis="x", labelrotation=30)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")


def display_values(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """``frame`` with the values of ``columns`` (those present) replaced by display names."""
    out = frame.copy()
    for column in columns:
        if column and column in out:
            out[column] = out[column].map(display_name)
    return out


def display_order(frame: pd.DataFrame, column: str | None) -> list[str] | None:
    """Display names of ``column``'s values in the paper's order (None without the column)."""
    if not column or column not in frame:
        return None
    return [display_name(v) for v in paper_sorted(column, frame[column])]


def hue_palette(frame: pd.DataFrame, column: str | None) -> dict[str, tuple] | None:
    """The colour of each display value of ``column`` in ``frame``, in the paper's order: the figures drawn
    for the parts of one frame (one per dataset) colour a value alike, even where a part lacks some
    values (ADM's first runs: SISA without RecEraser). None without the column. The theme's palette
    (:func:`set_theme`, set here: before it, seaborn would hand out matplotlib's default colours)."""
    set_theme()
    order = display_order(frame, column)
    return None if order is None else dict(zip(order, sns.color_palette(n_colors=max(len(order), 1))))


def save(fig, save_as: str | None) -> None:
    if save_as:
        FIGURE_DIR.mkdir(parents=True, exist_ok=True)
        fig.savefig(Path(FIGURE_DIR) / save_as, dpi=110, bbox_inches="tight")


def paper_vs_ours_bars(comparison: pd.DataFrame, x: str, metrics: list[str], title: str,
                       save_as: str | None = None):
    """One panel per metric: bars of ours (mean, error bar = std over seeds) and the paper's value
    as a marker, grouped by ``x`` (display names, in the paper's order); the legend below the panels."""
    set_theme()
    fig, axes = panel_grid(len(metrics), height=3.2)
    order = paper_sorted(x, comparison[x]) if x in comparison else []
    for ax, metric in zip(axes, metrics):
        part = comparison[comparison["metric"] == metric].set_index(x)
        part = part.reindex([v for v in order if v in part.index]).reset_index()
        positions = range(len(part))
        ax.bar(positions, part["ours"], yerr=part["ours_std"], color="#4C72B0", alpha=0.85, capsize=3,
               label="ours (mean ± std over seeds)")
        ax.scatter(positions, part["paper"], color="#DD8452", marker="D", zorder=3, label="paper")
        ax.set_xticks(list(positions), [display_name(v) for v in part[x]], rotation=0)
        # the panel's title names the metric (wrapped to the panel's width); no y label repeats it
        ax.set(title=textwrap.fill(display_name(metric), 32), xlabel=display_name(x), ylabel="")
        ax.axhline(0, color="black", linewidth=0.6)
        rotate_if_crowded(ax, width=PAGE_WIDTH_IN / min(len(metrics), 3))
    fig.suptitle(title)
    fig.tight_layout()
    legend_below(fig, axes[0], ncol=2)
    save(fig, save_as)
    return fig


def degree_ccdf(tables: dict[str, pd.DataFrame], column: str, title: str):
    """Complementary CDF of the number of interactions per ``column`` (``user`` or ``item``), one
    line per table, on log-log axes."""
    import numpy as np

    set_theme()
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for label, table in tables.items():
        degrees = np.sort(table[column].value_counts().to_numpy())
        share_at_least = 1.0 - np.arange(len(degrees)) / len(degrees)
        ax.step(degrees, share_at_least, where="post", label=display_name(label))
    ax.set(xscale="log", yscale="log", xlabel=f"interactions per {column}", ylabel=f"share of {column}s with ≥ x",
           title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def split_columns(frame: pd.DataFrame, columns) -> list[str]:
    """The ``columns`` of ``frame`` by which a figure is drawn once per part (those ``frame`` has)."""
    return [c for c in columns if c in frame]


def part_of(frame: pd.DataFrame, columns: list[str], values: tuple) -> pd.DataFrame:
    """The rows of ``frame`` with ``values`` in ``columns`` (a column ``frame`` lacks selects nothing out)."""
    keep = pd.Series(True, index=frame.index)
    for column, value in zip(columns, values):
        if column in frame:
            keep &= frame[column] == value
    return frame[keep]


def per_part(frame: pd.DataFrame, columns: list[str], title: str, draw):
    """``draw(part, title, values)`` once per combination of ``columns``' values in ``frame`` (the paper's
    order), the title prefixed with their display names, so that parts are never averaged together.
    Returns the figure, or the list of figures when there are several parts."""
    columns = split_columns(frame, columns)
    combos = frame[columns].drop_duplicates()
    for column in reversed(columns):  # a stable sort per column, last key first: the paper's order
        order = {v: i for i, v in enumerate(paper_sorted(column, combos[column]))}
        combos = combos.sort_values(column, key=lambda s: s.map(order), kind="stable")
    figures = []
    for values in combos.itertuples(index=False, name=None):
        named = " · ".join(display_name(v) for v in values)
        figures.append(draw(part_of(frame, columns, values), f"{named}: {title}", values))
    return figures[0] if len(figures) == 1 else figures


def method_bars(frame: pd.DataFrame, y: str, title: str, col: str = "model", x: str = "method",
                hue: str = "selection", paper: pd.DataFrame | None = None, by: str | None = "dataset",
                palette: dict | None = None):
    """Bars of ``y`` (mean ± std over seeds) by ``x`` and ``hue``, one panel per ``col`` (display names,
    in the paper's order; at most three panels a row, the figure page-wide); the paper's value, where
    given (same columns, ``value``), as a black diamond on its bar; the legend below the panels.

    One figure per value of ``by`` (a column of ``frame`` that is none of ``x``, ``hue``, ``col``;
    None: no split), titled with its display name, the paper's values taken for it alone: bars of
    two datasets are never averaged together, and a value of ``hue`` has one colour in all of them
    (``palette``: display value -> colour, default :func:`hue_palette` of ``frame``). Returns the
    figure, or the list of figures when ``by`` has several values. Bars have the palette's exact
    colours (no shading), as the legend and the other figures show them."""
    palette = palette or hue_palette(frame, hue)
    split = [c for c in ([by] if isinstance(by, str) else by or []) if c not in (x, hue, col)]
    if split_columns(frame, split):
        return per_part(frame, split, title, lambda part, named, values: method_bars(
            part, y, named, col, x, hue, None if paper is None else part_of(paper, split, values), by=None,
            palette=palette))
    set_theme()
    x_order, hue_order, col_order = (display_order(frame, c) for c in (x, hue, col))
    shown = display_values(frame, [x, hue, col])
    n_cols = len(col_order or [None])
    wrap = min(n_cols, 3)
    grid = sns.catplot(shown, x=x, y=y, hue=hue, col=col, kind="bar", errorbar="sd", order=x_order,
                       hue_order=hue_order, palette=palette, col_order=col_order,
                       col_wrap=wrap if n_cols > 1 else None,
                       height=3.0, aspect=min(PAGE_WIDTH_IN / wrap, 4.5) / 3.0, capsize=0.08,
                       err_kws={"linewidth": 1}, sharey=False, legend=False, saturation=1)
    if paper is not None and not paper.empty:
        ref = display_values(paper, [x, hue, col])
        width = 0.8 / len(hue_order)
        for value_of_col, ax in grid.axes_dict.items():
            part = ref[ref[col] == value_of_col]
            for _, row in part.iterrows():
                if row[x] in x_order and row[hue] in hue_order:
                    pos = x_order.index(row[x]) - 0.4 + width * (hue_order.index(row[hue]) + 0.5)
                    ax.scatter(pos, row["value"], marker="D", color="black", s=18, zorder=5)
    grid.set_titles(col_template="{col_name}")
    grid.set_axis_labels(display_name(x), display_name(y))
    for ax in grid.axes.flat:
        rotate_if_crowded(ax, width=PAGE_WIDTH_IN / wrap)
    labels = list(hue_order or [])
    handles = hue_handles(labels, [palette[label] for label in labels] if palette else None)
    if paper is not None and not paper.empty:
        handles.append(plt.Line2D([], [], marker="D", color="black", linestyle="none"))
        labels.append("paper")
    grid.figure.suptitle(title)
    grid.figure.tight_layout()
    legend_below(grid.figure, handles=handles, labels=labels, title=display_name(hue))
    return grid.figure


def method_scatter(frame: pd.DataFrame, x: str, y: str, title: str, col: str = "model", marker: str | None = None,
                   band: tuple[float, float] | None = None, xlabel: str | None = None, ylabel: str | None = None,
                   by: str | None = None, styles: tuple[dict, dict] | None = None):
    """One point per method (and per value of ``marker``, e.g. the unlearning set, drawn with its own
    marker): the mean of ``x`` and ``y`` over the rest (seeds, ...) with ± 1 sd bars; one panel per
    value of ``col``, methods coloured alike in every panel and in the paper's order; ``band`` shades
    a range of ``y`` (e.g. chance); one legend below the panels. One figure per value of ``by`` (None:
    no split), each method and marker drawn alike in all of them (``styles``: colour by method, shape
    by marker value, default from the whole ``frame``)."""
    from matplotlib.lines import Line2D

    set_theme()  # its palette, before the colours are taken from it
    if styles is None:
        methods = paper_sorted("method", frame["method"].unique())
        kinds = paper_sorted(marker, frame[marker].unique()) if marker else []
        # without a marker column every point is a circle
        styles = (dict(zip(methods, sns.color_palette(n_colors=max(len(methods), 1)))), dict(zip(kinds, "osD^vP*X")))
    if split_columns(frame, [by] if by else []):
        return per_part(frame, [by], title, lambda part, named, _: method_scatter(
            part, x, y, named, col, marker, band, xlabel, ylabel, styles=styles))
    panels = paper_sorted(col, frame[col].unique())
    methods = paper_sorted("method", frame["method"].unique())
    colors = styles[0]
    kinds = paper_sorted(marker, frame[marker].unique()) if marker else []
    shapes = {kind: styles[1][kind] for kind in kinds}
    fig, axes = panel_grid(len(panels))
    for ax, panel in zip(axes, panels):
        part = frame[frame[col] == panel]
        for keys, points in part.groupby(["method", *([marker] if marker else [])], sort=False):
            ax.errorbar(points[x].mean(), points[y].mean(), xerr=points[x].std(), yerr=points[y].std(),
                        fmt=shapes.get(keys[-1], "o"), color=colors[keys[0]], capsize=3)
        if band is not None:
            ax.axhspan(*band, color="grey", alpha=0.15, lw=0)
        ax.set_title(display_name(panel))
        ax.set_xlabel(textwrap.fill(xlabel or display_name(x), 26))  # a label wider than its panel is cut
        ax.set_ylabel(textwrap.fill(ylabel or display_name(y), 26))
    fig.suptitle(title)
    handles = [Line2D([], [], marker="o", linestyle="none", color=colors[m]) for m in methods]
    labels = [display_name(m) for m in methods]
    handles += [Line2D([], [], marker=s, linestyle="none", color="grey") for s in shapes.values()]
    labels += [display_name(k) for k in shapes]
    plt.tight_layout()
    legend_below(fig, handles=handles, labels=labels, ncol=min(len(handles), 4))
    return fig


def sweep_lines(frame: pd.DataFrame, x: str, metrics: list[str], hue: str, title: str, by=("dataset",),
                palette: dict | None = None):
    """One panel per metric: mean ± std over seeds against ``x``, one line per ``hue`` (display names,
    paper order); at most three panels a row; one legend below the panels. One figure per combination
    of the ``by`` columns (other than ``x`` and ``hue``; a value of ``hue`` coloured alike in all of
    them, see :func:`method_bars`)."""
    palette = palette or hue_palette(frame, hue)
    split = [c for c in by or [] if c not in (x, hue)]
    if split_columns(frame, split):
        return per_part(frame, split, title,
                        lambda part, named, _: sweep_lines(part, x, metrics, hue, named, by=None, palette=palette))
    set_theme()
    fig, axes = panel_grid(len(metrics), height=3.0)
    shown = display_values(frame, [hue])
    for ax, metric in zip(axes, metrics):
        sns.lineplot(shown, x=x, y=metric, hue=hue, hue_order=display_order(frame, hue), palette=palette,
                     marker="o", errorbar="sd", ax=ax, legend=ax is axes[0])
        # the panel's title names the metric (wrapped to the panel's width); no y label repeats it
        ax.set(title=textwrap.fill(display_name(metric), 32), xlabel=display_name(x), ylabel="")
        levels = sorted(frame[x].dropna().unique())
        if 0 < len(levels) <= 12:
            ax.set_xticks(levels, [f"{v:g}" for v in levels])  # the swept levels, not 7.5 shards
    fig.suptitle(title)
    fig.tight_layout()
    legend_below(fig, axes[0], title=display_name(hue))
    return fig


def damping_sweep(sweep: pd.DataFrame, title: str):
    """SCIF's MIO accuracy against the damping it started from (log scale), one panel per model, with
    Learn's and Retrain's MIO as reference lines (absolute-rule points drawn hollow)."""
    set_theme()
    models = paper_sorted("model", sweep["model"])
    fig, axes = panel_grid(len(models), height=3.2, max_cols=2)
    for ax, model in zip(axes, models):
        part = sweep[sweep["model"] == model]
        relative = part[part["damping_rule"] == "relative"].sort_values("initial_damping")
        ax.plot(relative["initial_damping"], relative["mio_accuracy"], "o-", label="SCIF, relative rule")
        absolute = part[part["damping_rule"] == "absolute"]
        ax.plot(absolute["initial_damping"], absolute["mio_accuracy"], "o", mfc="none", label="SCIF, absolute δ")
        for column, style, name in (("mio_accuracy_learn", ":", "Learn"), ("mio_accuracy_retrain", "--", "Retrain")):
            ax.axhline(part[column].iloc[0], ls=style, color="grey")
            ax.annotate(name, (1.0, part[column].iloc[0]), xycoords=("axes fraction", "data"), ha="right",
                        va="bottom", fontsize=10, color="grey")
        ax.set_xscale("log")
        ax.set(title=display_name(model), xlabel="damping δ (start of the schedule)", ylabel="MIO accuracy")
    fig.suptitle(title)
    fig.tight_layout()
    legend_below(fig, axes[0], ncol=2)
    return fig


def shard_composition(frame: pd.DataFrame, title: str):
    """Active users per shard (bars) for each method (rows) and selection (columns), display names in
    the paper's order, the figure page-wide, the legend below."""
    set_theme()
    row_order, col_order, hue_order = (display_order(frame, c) for c in ("method", "selection", "source"))
    shown = display_values(frame, ["method", "selection"])
    n_cols = len(col_order or [None])
    grid = sns.catplot(shown, x="shard", y="active", hue="source", row="method", col="selection", kind="bar",
                       row_order=row_order, col_order=col_order, hue_order=hue_order, height=2.2,
                       aspect=PAGE_WIDTH_IN / n_cols / 2.2, errorbar=None, legend=False, saturation=1)
    grid.set_titles(row_template="{row_name}", col_template="{col_name}")
    grid.set_axis_labels("shard", "active users")
    grid.figure.suptitle(title)
    grid.figure.tight_layout()
    legend_below(grid.figure, handles=hue_handles(list(hue_order or [])), labels=list(hue_order or []))
    return grid.figure


def aspect_radar(frame: pd.DataFrame, aspects: list[str], series: str, title: str):
    """A radar chart: one closed polygon per value of ``series`` over the ``aspects`` columns
    (already normalised, larger = better)."""
    import numpy as np

    set_theme()
    angles = np.linspace(0, 2 * np.pi, len(aspects), endpoint=False)
    fig, ax = plt.subplots(figsize=(6.5, 6.5), subplot_kw={"projection": "polar"})
    table = frame.set_index(series)[aspects]
    table = table.reindex(paper_sorted(series, table.index))
    for name, row in table.iterrows():
        values = row.to_numpy(dtype=float)
        ax.plot(np.r_[angles, angles[:1]], np.r_[values, values[:1]], marker="o", label=display_name(name))
        ax.fill(np.r_[angles, angles[:1]], np.r_[values, values[:1]], alpha=0.08)
    ax.set_xticks(angles)
    ax.set_xticklabels([display_name(a) for a in aspects])
    ax.tick_params(axis="x", pad=12, labelsize=11)
    for label, angle in zip(ax.get_xticklabels(), angles):  # a side label grows away from the circle
        cos = np.cos(angle)
        label.set_horizontalalignment("left" if cos > 0.1 else "right" if cos < -0.1 else "center")
    ax.set_rlabel_position(22.5)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0])
    ax.tick_params(axis="y", labelsize=9)
    ax.set_ylim(0, 1.05)
    ax.set_title(title, pad=24)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=min(len(table), 4), frameon=False)
    fig.tight_layout()
    return fig


VERDICT_COLOURS = {"reproduced": "#2e7d32", "partly reproduced": "#9ccc65", "not reproduced": "#c62828",
                   "inconclusive": "#9e9e9e", "pending": "#90caf9"}
"""One colour per verdict (:data:`~recunlearn.report.verdicts.VERDICTS`): green to red, grey within
noise, pale blue for what is not computed yet."""


def verdict_bars(counts: dict[str, dict], title: str):
    """One horizontal bar per row of ``counts`` (a label -> ``{verdict: count}``, top to bottom), split
    by verdict in the order of :data:`VERDICT_COLOURS`, each part wide enough labelled with its count;
    the verdicts in a legend below."""
    set_theme()
    labels = list(counts)
    fig, ax = plt.subplots(figsize=(7.0, 0.5 * len(labels) + 1.5))
    left = [0.0] * len(labels)
    for verdict, colour in VERDICT_COLOURS.items():
        widths = [float(counts[label].get(verdict, 0)) for label in labels]
        ax.barh(labels, widths, left=left, color=colour, label=verdict, height=0.6)
        for row, (start, width) in enumerate(zip(left, widths)):
            if width >= 1:
                ax.text(start + width / 2, row, f"{width:g}", ha="center", va="center", fontsize=10,
                        color="white" if verdict in ("reproduced", "not reproduced") else "black")
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()
    ax.set_xlabel("claim tests")
    ax.grid(axis="y", visible=False)
    ax.set_title(title)
    ax.legend(loc="upper center", bbox_to_anchor=(0.4, -0.38 if len(labels) < 4 else -0.28),
              ncol=len(VERDICT_COLOURS), frameon=False, fontsize=9, handlelength=1.2, columnspacing=1.0)
    fig.tight_layout()
    return fig


def svg_bytes(fig) -> bytes:
    """``fig`` as SVG bytes that do not change between runs of the same figure (no date, fixed ids)."""
    import io

    buffer = io.BytesIO()
    with plt.rc_context({"svg.hashsalt": "recunlearn", "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()
