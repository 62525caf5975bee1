"""CASPER chapter helpers: summaries and paper-vs-ours tables of the runs, Table 2 verdicts, the IDAG
drawing, RLS bar charts, claim checks."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator
import numpy as np
import pandas as pd
import seaborn as sns

from ..data.sequences import Stream
from ..experiments.casper import ID_MAPS, LATENTCROSS_CELLS, LSTM_EMBEDDINGS, MODELS, TEST_UPDATES, CasperGrid
from ..experiments.config import option
from ..experiments.records import PENDING_CPU
from ..models.sequential import SEQUENTIAL_MODELS
from ..perturb.idag import IDAG, build_idag, cascade_scores
from .compare import compare, format_mean_std, summarize_runs
from .grids import as_base
from .names import display_name, paper_sorted, sort_paper_order
from .plots import FIGURE_DIR, PAGE_WIDTH_IN, legend_below, panel_grid, rotate_if_crowded, save, set_theme  # noqa: F401
from .verdicts import INCONCLUSIVE, NOT_REPRODUCED, PARTLY, PENDING, REPRODUCED

RLS_LABELS = {m: display_name(m) for m in ("ao", "rbo_min", "rbo_ext", "jaccard")}
"""AO (the paper's "RBO"), RBO(0.9), RBO_ext(0.9), Jaccard@10: from :data:`recunlearn.report.names.DISPLAY_NAMES`."""


def zoomed_limits(low: float, high: float, pad: float = 0.1, floor: float = 0.0, ceiling: float = 1.0):
    """Axis limits around the data range [``low``, ``high``] (``pad`` of the span each side, at least
    0.001), kept within [``floor``, ``ceiling``] plus the padding: an RLS axis shows where the values
    lie instead of a fixed 0-1."""
    if not np.isfinite(low) or not np.isfinite(high):
        return floor, ceiling
    margin = max((high - low) * pad, 0.001)
    return max(floor, low - margin), min(ceiling + margin / 2, high + margin)


def range_text(low: float, high: float, floor: float = 0.0, ceiling: float = 1.0, sep: str = " ") -> str:
    """``"zoomed to 0.970–1.000"`` (``sep="\\n"``: on two short lines): the range shown (within
    [``floor``, ``ceiling``]), stated on the axis, which does not start at 0."""
    low, high = max(low, floor), min(high, ceiling)
    digits = 3 if high - low >= 0.01 else 4
    return f"zoomed to{sep}{low:.{digits}f}–{high:.{digits}f}"


# --- summaries and paper-vs-ours tables of the runs -------------------------------------------------

def compare_statistics(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Paper's Table 2 beside our filtered counts (long format; exact agreement required)."""
    metrics = ["users", "items", "interactions"]
    ours_long = ours.melt(id_vars=["dataset"], value_vars=metrics, var_name="metric", value_name="mean")
    ours_long["std"] = 0.0
    paper_long = paper.melt(id_vars=["dataset"], value_vars=metrics, var_name="metric")
    return compare(ours_long, paper_long, ["dataset"], tol=0.0, pending_label="not available")


RLS = ["ao", "rbo_min", "jaccard"]
"""The rank-list measures a CASPER page shows: AO (the paper's "RBO"), RBO(0.9) and Jaccard@10."""


def summarize_rls(runs: pd.DataFrame, keys: list[str], metrics=tuple(RLS)) -> pd.DataFrame:
    """Mean / std / n over seeds of the computed runs (long format)."""
    done = runs[runs["status"] == "computed"]
    if done.empty:
        return pd.DataFrame(columns=keys + ["metric", "mean", "std", "n"])
    return summarize_runs(done, keys, list(metrics))


def paired_two_sided_tests(runs: pd.DataFrame, by: str, pairs: list[tuple[str, str]], group: list[str],
                           metric: str = "ao") -> pd.DataFrame:
    """Paired two-sided tests over seeds between values ``a`` and ``b`` of column ``by``, per ``group``
    (:func:`~recunlearn.report.significance.paired_two_sided`: the signed-rank test, a paired t-test where the
    seeds are too few for it to reach the level; ``test used`` names it): the pairs, each value's mean
    over them and the two-sided p."""
    from .significance import difference, paired_two_sided

    done = runs[runs["status"] == "computed"]
    rows = []
    for key, part in done.groupby(group):
        table = part.pivot_table(index="seed", columns=by, values=metric)
        for a, b in pairs:
            if a in table and b in table:
                both = table[[a, b]].dropna()
                p, test = paired_two_sided(difference(both[a], both[b]))
                rows.append({**dict(zip(group, key if isinstance(key, tuple) else (key,))), "a": a, "b": b,
                             "pairs": len(both), "mean of a": both[a].mean(), "mean of b": both[b].mean(),
                             "p (two-sided)": p, "test used": test})
    return pd.DataFrame(rows)


METHOD_LABELS = {"none": "Control (no perturbation)", "random": "Random", "earliest": "Earliest-Random",
                 "latest": "Latest-Random", "tracin": "TracIn", "tracin-proxy": "TracIn (authors' proxy)",
                 "revadv-random": "Rev.Adv. (random)", "revadv-earliest": "Rev.Adv. (earliest)", "casper": "CASPER"}
"""The paper's row names of Table 3, in its order (the authors' TracIn proxy is our extra row)."""

BASELINES = ("random", "earliest", "latest", "tracin", "tracin-proxy", "revadv-random", "revadv-earliest")
"""Every selector CASPER is compared with."""

RANDOM_BASELINES = ("random", "earliest", "latest")
"""The baselines whose row is drawn at random with the seed."""

UNBOUNDED_MODELS = ("jodie", "latentcross")
"""Models whose IDAG has no length cap L (their cascades are not cut)."""


def method_label(selector: str, perturbation: str, replacement: str) -> str:
    """The paper's row name of a run: Random, Earliest-Random, Latest-Random, TracIn, Rev.Adv., CASPER
    (+ its replacement item)."""
    base = METHOD_LABELS[selector]
    if selector == "casper" and perturbation != "loo":
        base += f" ({replacement})"
    return base


def label_pending(comparison: pd.DataFrame, runs: pd.DataFrame | None = None,
                  keys: list[str] | None = None) -> pd.DataFrame:
    """The comparison with the generic ``pending`` of cells without our value replaced by
    ``pending: model not implemented`` where the model has no implementation yet, and, given the
    page's ``runs`` (matched on ``keys``), by the reason its runs of that cell are pending (e.g. ``not
    run: CPU time``)."""
    out = comparison.copy()
    if runs is not None and keys and "status" in runs:
        waiting = runs[runs["status"] != "computed"].drop_duplicates(keys).set_index(keys)["status"]
        index = pd.MultiIndex.from_frame(out[keys])
        reason = pd.Series(waiting.reindex(index).to_numpy(), index=out.index)
        known = out["ours"].isna() & reason.notna()
        out.loc[known, "status"] = reason[known]
    missing = out["ours"].isna() & ~out["model"].isin(list(SEQUENTIAL_MODELS))
    out.loc[missing, "status"] = "pending: model not implemented"
    return out


def with_paper(text: str, paper: float) -> str:
    """``"0.7866 ± 0.0282\\n(paper 0.7799)"``: the paper's number on a line of its own (a book table shows
    the line break, so a table of four models fits the page)."""
    return text if pd.isna(paper) else f"{text}\n(paper {paper:.4f})"


def table3_view(comparison: pd.DataFrame, metric: str = "ao") -> pd.DataFrame:
    """Table 3 laid out as in the paper: one row per (perturbation, method), one column per model, each
    cell ``ours ± std (paper x)`` or why it is pending (``pending`` when it waits for CPU-hours of the
    compute plan); methods in the paper's order."""
    part = comparison[comparison["metric"] == metric].copy()
    part["method"] = [method_label(s, p, r) for s, p, r in zip(part["selector"], part["perturbation"],
                                                                part["replacement"])]
    most = part["n"].max() if len(part) else None  # a cell of fewer runs than the others says how many
    part["cell"] = [with_paper(format_mean_std(o, sd, 4, n=n, of=most) if pd.notna(o) else "pending" if st == PENDING_CPU
                               else st, pv)
                    for o, sd, n, pv, st in zip(part["ours"], part["ours_std"], part["n"], part["paper"],
                                                part["status"])]
    view = part.pivot_table(index=["perturbation", "method"], columns="model", values="cell", aggfunc="first")
    view = view.reindex(columns=[m for m in MODELS if m in view.columns])
    labels = list(METHOD_LABELS.values())
    perturbations = ["loo", "replace", "insert"]

    replacements = [f"CASPER ({r})" for r in ("random", "popular", "unpopular")]

    def order(key):
        method = key[1]
        base = next((i for i, label in enumerate(labels) if method == label or method.startswith(label + " (")),
                    len(labels))
        within = replacements.index(method) if method in replacements else 0
        return (perturbations.index(key[0]) if key[0] in perturbations else 9, base, within, method)

    return view.reindex(sorted(view.index, key=order))


def best_method_claims(comparison: pd.DataFrame, metric: str = "ao") -> pd.DataFrame:
    """Per (perturbation, model) with our values: the method with the lowest mean and whether it is CASPER."""
    done = comparison[(comparison["metric"] == metric) & comparison["ours"].notna()]
    rows = []
    for (pert, model), part in done.groupby(["perturbation", "model"]):
        part = part[part["selector"] != "none"]
        if part.empty:
            continue
        best = part.loc[part["ours"].idxmin()]
        rows.append({"perturbation": pert, "model": model, "lowest": method_label(best["selector"], pert, best["replacement"]),
                     "casper_lowest": best["selector"] == "casper", "n_methods": len(part)})
    return pd.DataFrame(rows)


NEAR_LINEAR = (0.8, 1.2)
"""Growth exponents b (time ∝ n^b) read as near-linear: within 20 % of 1 (our tolerance; the paper
gives none)."""


def growth_exponent(rows: pd.DataFrame, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """The exponent b of time ∝ interactions^b: the least-squares slope of log(seconds) on
    log(interactions) over every repeat of every size (``repeat_seconds``; the medians
    ``total_seconds`` when a row has no repeats), and its ``level`` percentile-bootstrap interval
    (repeats resampled within each size, ``n_boot`` times, generator seeded ``seed``)."""
    per_size = [r if r is not None else np.array([t], dtype=float)
                for r, t in zip(repeat_seconds(rows), rows["total_seconds"])]
    logs_n = np.log(rows["interactions"].to_numpy(dtype=float))
    x = np.concatenate([np.full(len(t), n) for t, n in zip(per_size, logs_n)])

    def slope(times: list[np.ndarray]) -> float:
        y = np.log(np.concatenate(times))
        return float(np.polyfit(x, y, 1)[0])

    b = slope(per_size)
    rng = np.random.default_rng(seed)
    draws = [slope([t[rng.integers(0, len(t), len(t))] for t in per_size]) for _ in range(n_boot)]
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return {"exponent": b, "low": float(low), "high": float(high), "level": level,
            "repeats": int(min(len(t) for t in per_size)), "sizes": len(per_size)}


def repeat_seconds(rows: pd.DataFrame) -> list[np.ndarray | None]:
    """Each row's timed repeats (``repeat_seconds``) as an array; None for a row without them."""
    repeats = rows["repeat_seconds"] if "repeat_seconds" in rows else [None] * len(rows)
    return [np.asarray(r, dtype=float) if isinstance(r, (list, np.ndarray)) and len(r) else None for r in repeats]


def fastest_repeats(rows: pd.DataFrame) -> np.ndarray | None:
    """The fastest of each row's ``repeat_seconds`` (None unless every row has its repeats)."""
    repeats = repeat_seconds(rows)
    if any(r is None for r in repeats):
        return None
    return np.array([r.min() for r in repeats], dtype=float)


def linear_fit(x, y) -> dict:
    """Least-squares line y = a + b x and its R^2 (for "near-linear" run time)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    b, a = np.polyfit(x, y, 1)
    residual = y - (a + b * x)
    r2 = 1 - residual.var() / y.var() if y.var() > 0 else 1.0
    return {"intercept": float(a), "slope": float(b), "r2": float(r2)}


# --- Table 2 ------------------------------------------------------------------------------------------

def statistics_verdicts(ours: pd.DataFrame, paper: pd.DataFrame) -> dict[str, str]:
    """Per dataset: ``reproduced`` when users, items and interactions match our filtered counts exactly;
    ``partly reproduced`` when users match, items differ by at most the one padding index and the
    paper's interactions are our filtered count ± 1 or the raw count (each difference explained on
    the page); ``not reproduced`` otherwise (LastFM: only 10 % of the data is available); ``pending``
    without a paper row."""
    out = {}
    for row in ours.itertuples():
        ref = paper[paper["dataset"] == row.dataset]
        if ref.empty:
            out[row.dataset] = "pending"
            continue
        ref = ref.iloc[0]
        ok = (row.users == ref.users and ref["items"] - row.items in (0, 1)
              and (abs(ref.interactions - row.interactions) <= 1 or ref.interactions == row.raw_interactions))
        close = ok and ref.interactions == row.interactions and ref["items"] == row.items
        out[row.dataset] = REPRODUCED if close else PARTLY if ok else NOT_REPRODUCED
    return out


def toy_scores(stream: Stream, graph: IDAG) -> pd.DataFrame:
    """Descendants (itself included) of every node of a small IDAG, by BFS; roots marked."""
    succ = graph.successors()
    rows = []
    for v in range(len(graph)):
        seen, stack = {v}, [v]
        while stack:
            for w in succ[stack.pop()]:
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        p = graph.nodes[v]
        rows.append({"node": f"X{v + 1}", "user": stream.user_ids[stream.user[p]], "item": stream.item_ids[stream.item[p]],
                     "t": stream.timestamp[p], "root": bool(graph.pred_user[v] < 0 and graph.pred_item[v] < 0),
                     "descendants": len(seen), "set": " ".join(f"X{w + 1}" for w in sorted(seen))})
    return pd.DataFrame(rows)


def idag_figure(stream: Stream, graph: IDAG, highlight: int, title: str, save_as: str | None = None):
    """Nodes by time (x) and user (y); user edges blue, item edges red; descendants of ``highlight`` green."""
    table = toy_scores(stream, graph)
    chosen = set(table.loc[highlight, "set"].split())
    x = stream.timestamp[graph.nodes]
    y = -stream.user[graph.nodes].astype(float)
    set_theme()
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for pred, color in ((graph.pred_user, "#1f77b4"), (graph.pred_item, "#d62728")):
        for v in np.flatnonzero(pred >= 0):
            ax.annotate("", xy=(x[v], y[v]), xytext=(x[pred[v]], y[pred[v]]),
                        arrowprops=dict(arrowstyle="->", color=color, lw=1.4, shrinkA=11, shrinkB=11))
    for v, row in table.iterrows():
        ax.scatter(x[v], y[v], s=520, color="#2ca02c" if row["node"] in chosen else "#dddddd", edgecolor="black", zorder=3)
        ax.text(x[v], y[v], row["node"], ha="center", va="center", fontsize=9, zorder=4)
    ax.set_yticks(sorted(set(y)), [f"user {stream.user_ids[int(-u)]}" for u in sorted(set(y))])
    ax.set_xlabel("time")
    ax.set_title(title)
    ax.plot([], [], color="#1f77b4", label="same user")
    ax.plot([], [], color="#d62728", label="same item")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.margins(x=0.06, y=0.18)
    fig.tight_layout()
    save(fig, save_as)
    return fig


def figure_4b_example():
    """The toy stream, its IDAG (paper variant, unbounded L) and the exact root scores."""
    from ..perturb.toy import figure_4b_stream

    stream = figure_4b_stream()
    graph = build_idag(stream, None, "paper")
    roots, scores = cascade_scores(graph)
    return stream, graph, pd.DataFrame({"node": [f"X{r + 1}" for r in roots], "cascade_score": scores})


def figure_4b_claims(stream: Stream, graph: IDAG, root_scores: pd.DataFrame) -> pd.DataFrame:
    """Figure 4(b) on the reconstructed toy graph (:func:`figure_4b_example`), exact checks:

    - ``x3_cascade_score_8``: X3 has cascade score 8 (itself included), the highest of the roots;
    - ``scorer_matches_bfs``: the library's bitset scorer gives every root the number of nodes a
      breadth-first search reaches from it.

    The toy stream is our reconstruction of the paper's drawing, built to satisfy what its text
    says, so these check the scorer on that graph -- not a result at the paper's scale: both are
    self-checks (the first cannot fail on a graph built to make it true), not tests of the paper."""
    from .claims import SELF_CHECK, check_claim, claims_frame

    scope = ("checks the library's scorer on the reconstructed 12-interaction toy graph (built to satisfy the "
             "paper's text), not a paper-scale result")
    bfs = toy_scores(stream, graph).set_index("node")["descendants"]
    scores = root_scores.set_index("node")["cascade_score"]
    return claims_frame([
        check_claim("x3_cascade_score_8", "On our reconstruction of Figure 4(b)'s toy graph, the scorer gives X3 "
                    "cascade score 8, the highest of the roots", root_scores,
                    [], lambda g: bool("X3" in set(g["node"]) and scores["X3"] == 8 and scores.max() == 8
                                       and (scores == 8).sum() == 1),
                    evidence=f"exact check: {scope}; X3 = {int(scores.get('X3', -1))}, highest {int(scores.max())}",
                    kind=SELF_CHECK),
        check_claim("scorer_matches_bfs", "The bitset scorer equals a breadth-first search from every root",
                    root_scores, [], lambda g: bool((bfs.reindex(scores.index) == scores).all()),
                    evidence=f"exact check over {len(scores)} roots: {scope}", kind=SELF_CHECK),
    ])


def dodged_points(ax, stats: pd.DataFrame, x_values: list, slot: int, slots: int, **style) -> list[float]:
    """Mean (dot) ± std (bar) of ``stats`` (indexed by x value; columns ``mean``, ``std``) at each of
    ``x_values`` it has, in slot ``slot`` of ``slots`` side by side at each x position
    (:func:`slot_position`); ``style`` goes to ``errorbar`` (colour, label). Returns the bars' ends,
    for zooming the value axis."""
    shown = [v for v in x_values if v in stats.index]
    rows = stats.reindex(shown)
    ax.errorbar([slot_position(x_values.index(v), slot, slots) for v in shown], rows["mean"],
                yerr=rows["std"].fillna(0), fmt="o", capsize=3, markersize=6, **style)
    return list(rows["mean"] - rows["std"].fillna(0)) + list(rows["mean"] + rows["std"].fillna(0))


def slot_position(i: int, slot: int, slots: int) -> float:
    """Where slot ``slot`` of ``slots`` sits at x position ``i``: the slots share a width of 0.7."""
    return i - 0.35 + 0.7 / slots * (slot + 0.5)


def zoom_value_axis(ax, values: list[float], chance_line: bool = True) -> tuple[float, float]:
    """Zoom ``ax``'s value axis to ``values`` (:func:`zoomed_limits`) and, with ``chance_line``, draw
    the dotted line at 0.5 -- AO's value for randomly shuffled lists -- where the range includes it.
    Returns the limits."""
    low, high = zoomed_limits(np.nanmin(values), np.nanmax(values))
    ax.set_ylim(low, high)
    if chance_line and low <= 0.5 <= high:
        ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    return low, high


def rls_bars(summary: pd.DataFrame, x: str, hue: str | None, metrics: list[str], title: str,
             paper: pd.DataFrame | None = None, save_as: str | None = None):
    """One panel per RLS metric: mean (dot) ± std over seeds (bar), by ``x`` (grouped by ``hue``),
    display names in the paper's order; the paper's values (``x``, ``metric``, ``paper``; only
    without ``hue``) as diamonds. Each value axis is zoomed to the range the values lie in (stated
    in the axis label) rather than a fixed 0-1; the dotted line at 0.5, AO's value for randomly
    shuffled lists, is drawn where that range includes it. One legend, below the panels."""
    set_theme()
    fig, axes = panel_grid(len(metrics), height=3.2)
    hue_values = paper_sorted(hue, summary[hue]) if hue and hue in summary else [None]
    palette = dict(zip(hue_values, sns.color_palette(n_colors=max(len(hue_values), 1))))
    for ax, metric in zip(axes, metrics):
        part = summary[summary["metric"] == metric]
        ax.set_title(RLS_LABELS.get(metric, display_name(metric)))
        ax.set_xlabel(display_name(x))
        if part.empty:
            ax.text(0.5, 0.5, "pending", ha="center", va="center", transform=ax.transAxes)
            ax.set_yticks([])
            ax.set_xticks([])
            continue
        x_values = paper_sorted(x, part[x])
        values = []
        for j, h in enumerate(hue_values):
            sub = part if h is None else part[part[hue] == h]
            values += dodged_points(ax, sub.groupby(x, sort=False)[["mean", "std"]].first(), x_values, j,
                                    len(hue_values), color=palette[h],
                                    label=display_name(h) if h is not None else "ours (mean ± std)")
        if paper is not None and not hue:
            ref = paper[paper["metric"] == metric].set_index(x)["paper"]
            positions = [i for i, v in enumerate(x_values) if v in ref.index]
            ax.scatter(positions, [ref[x_values[i]] for i in positions], marker="D", color="#DD8452",
                       zorder=3, label="paper")
            values += [ref[x_values[i]] for i in positions]
        low, high = zoom_value_axis(ax, values, chance_line=metric == "ao")
        ax.set_ylabel(range_text(low, high, sep="\n"))  # the panel's title names the metric
        ax.set_xticks(range(len(x_values)), [display_name(v) for v in x_values])
        ax.set_xlim(-0.5, len(x_values) - 0.5)
        rotate_if_crowded(ax, width=PAGE_WIDTH_IN / min(len(metrics), 3))
    with_legend = next((ax for ax in axes if ax.get_legend_handles_labels()[0]), None)
    fig.suptitle(title)
    fig.tight_layout()
    if with_legend is not None:
        legend_below(fig, with_legend, title=display_name(hue) if hue else None)
    save(fig, save_as)
    return fig


def group_table(runs: pd.DataFrame, keys: list[str], metric: str = "jaccard") -> pd.DataFrame:
    """Mean over seeds of ``metric`` per MRR group (high / mid / low), computed runs only, to 4 decimals,
    rows in the papers' order."""
    done = runs[runs["status"] == "computed"]
    cols = [f"{metric}_{g}" for g in ("high", "mid", "low")]
    if done.empty:
        return pd.DataFrame(columns=keys + cols)
    return sort_paper_order(done.groupby(keys)[cols].mean().round(4).reset_index(), keys)


def position_claims(runs: pd.DataFrame, alpha: float | None = None) -> pd.DataFrame:
    """Figure 4(a)'s claims on the computed runs (those without a record count as pending), with one-sided
    paired tests over seeds (:func:`~recunlearn.report.significance.paired_p`):

    - ``earliest_lowest_ao``: Earliest-Random has a lower AO than Random and than Latest-Random, tested in
      every (model, perturbation) setting as the paper does (10 runs each, p < 0.05); a setting's test is
      the signed-rank test where its smallest p, 1/2**seeds, is below the level the setting must reach
      under Holm's correction over the settings (alpha / settings), else a paired t-test
      (:func:`~recunlearn.report.claims.ordering_claim`);
    - ``random_below_latest``: Random has a lower AO than Latest-Random, pooled over the settings (the
      paper states it without a test and without a breakdown by perturbation type)."""
    from .claims import ALPHA, claims_frame, ordering_claim

    alpha = ALPHA if alpha is None else alpha
    cells = ["model", "perturbation"]  # the runs without a record count as pending in each claim
    return claims_frame([
        ordering_claim("earliest_lowest_ao",
                       "Earliest-Random destabilises more than Random and Latest-Random (lower AO)", runs, "selector", [("earliest", "random"), ("earliest", "latest")], "ao", cells, higher=False,
                       per_cell=True, alpha=alpha),
        ordering_claim("random_below_latest", "Random destabilises more than Latest-Random (lower AO)", runs,
                       "selector", [("random", "latest")], "ao", cells, higher=False, alpha=alpha),
    ])


def format_value(value: float, digits: int = 4, pending: str = "pending") -> str:
    """A number for the notes (``0.9982``), or ``pending`` when it was not computed."""
    return pending if value is None or pd.isna(value) else f"{value:.{digits}f}"


def summary_value(summary: pd.DataFrame, **where) -> float:
    """The ``mean`` of the one summary row matching ``where`` (column = value), NaN if none."""
    part = summary
    for column, value in where.items():
        part = part[part[column] == value]
    return float(part["mean"].iloc[0]) if len(part) else float("nan")


def scaling_figure(rows: pd.DataFrame, fit: dict, title: str, save_as: str | None = None,
                   growth: dict | None = None):
    """CASPER's build + score + select seconds (medians over repeats) against the number of
    interactions, the fastest repeat of the total at each size where the rows keep their repeats
    (the lower envelope, least touched by the machine's load), the least-squares line through the
    medians (Figure 8(b)) and, given ``growth`` (:func:`growth_exponent`), the growth exponent the
    claim tests in the legend."""
    set_theme()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    for column, label in (("total_seconds", "total (median)"), ("score_seconds", "exact scoring (bitset sweep)"),
                          ("build_seconds", "IDAG construction")):
        ax.plot(rows["interactions"], rows[column], marker="o", label=label)
    fastest = fastest_repeats(rows)
    if fastest is not None:
        ax.plot(rows["interactions"], fastest, marker="v", linestyle="--", color="grey",
                label="total, fastest repeat")
    xs = np.linspace(rows["interactions"].min(), rows["interactions"].max(), 50)
    label = f"linear fit of total, R² = {fit['r2']:.3f}"
    if growth:
        label += f"\ngrowth exponent b = {growth['exponent']:.2f} [{growth['low']:.2f}, {growth['high']:.2f}]"
    ax.plot(xs, fit["intercept"] + fit["slope"] * xs, linestyle=":", color="black", label=label)
    ax.set(xlabel="interactions", ylabel="seconds", title=title)
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v / 1000:g}k"))  # 20k, not 20000 run together
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    save(fig, save_as)
    return fig


def k_figure(summary: pd.DataFrame, metrics: list[str], title: str, by: str | None = None):
    """Mean ± std over seeds of each RLS metric against the number of perturbations k (Figure 8(a)),
    one line per metric, or per metric and value of the column ``by`` (e.g. ``model``; the papers'
    order); the value axis zoomed to the data (range in its label), the legend right of the plot."""
    set_theme()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    values = []
    groups = paper_sorted(by, summary[by].dropna()) if by else [None]
    for metric in metrics:
        for group in groups:
            part = summary[summary["metric"] == metric]
            part = (part[part[by] == group] if by else part).sort_values("k")
            if not len(part):
                continue
            label = RLS_LABELS.get(metric, display_name(metric))
            if group is not None:
                label = display_name(group) if len(metrics) == 1 else f"{label}, {display_name(group)}"
            ax.errorbar(part["k"], part["mean"], yerr=part["std"], marker="o", capsize=3, label=label)
            values += list(part["mean"] - part["std"].fillna(0)) + list(part["mean"] + part["std"].fillna(0))
    ax.set(xlabel="number of perturbed interactions k", title=title)
    ks = sorted(set(summary["k"].dropna().astype(int))) if "k" in summary else []
    if ks:  # whole numbers only, the computed ones, with room at both ends (a single k is not zoomed into)
        ax.set_xticks(ks)
        ax.set_xlim(ks[0] - 0.5, ks[-1] + 0.5)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if values:
        low, high = zoomed_limits(np.nanmin(values), np.nanmax(values))
        ax.set_ylim(low, high)
        what = RLS_LABELS.get(metrics[0], display_name(metrics[0])) if by and len(metrics) == 1 else \
            "similarity to the unperturbed lists"
        ax.set_ylabel(f"{what}\n({range_text(low, high)})")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    else:
        ax.text(0.5, 0.5, "pending", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    return fig


# --- claims shared by the CASPER pages (seed-level runs; see recunlearn.report.claims) -------------

def _run_ids(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``record`` column naming each run (a CASPER frame has one row per run but no
    record key): the rows a long format derives from one run then count once
    (:func:`~recunlearn.report.claims.count_runs`)."""
    return runs if "record" in runs else runs.assign(record=[f"run-{i}" for i in range(len(runs))])


def _computed(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == "computed"] if "status" in runs else runs


def unchanged_runs_text(runs: pd.DataFrame) -> str:
    """Which perturbed runs left every rank list as it was (AO = Jaccard@10 = 1 and the same MRR): a
    perturbation that did not change the trained model, e.g. a deletion before the window of recent
    interactions a model reads (TiSASRec: each user's last 50). Such a run is a genuine outcome of a
    random draw and stays in every mean; the sentence lets a reader see it, since one such seed of
    three widens a cell's spread."""
    done = _computed(runs)
    perturbed = done[done["selector"] != "none"] if "selector" in done else done
    if perturbed.empty or "ao" not in perturbed:
        return "no perturbed run is computed yet"
    same = perturbed[(perturbed["ao"] == 1.0) & (perturbed["jaccard"] == 1.0)
                     & (perturbed["mrr_original"] == perturbed["mrr_perturbed"])]
    if same.empty:
        return f"none of the {len(perturbed):,} perturbed runs left every rank list unchanged"
    named = "; ".join(f"{display_name(r.model)}, {display_name(r.selector)}, seed {int(r.seed)}"
                      for r in same.sort_values(["model", "selector", "seed"]).itertuples())
    return (f"{len(same)} of {len(perturbed):,} perturbed runs left every user's rank list unchanged ({named}: "
            f"AO = Jaccard@10 = 1, the same MRR): the perturbation did not change the trained model, as when the "
            f"deleted interaction lies before the recent window a model reads; kept in the means as the random "
            f"draw it is")


AO_BAND = (0.75, 0.95)
"""The paper's §5 band for the "RBO" (AO) a random perturbation leaves "in most cases"."""


def ao_band_claim(runs: pd.DataFrame, cells: list[str], low: float = AO_BAND[0], high: float = AO_BAND[1],
                  id: str = "ao_between_075_095") -> dict:
    """The paper's §5 finding on random perturbations: "RBO" (AO) of the Random baseline's runs lies in
    [``low``, ``high``] "in most cases" (band test over seeds per cell; reproduced when most cells are
    significantly inside, :func:`~recunlearn.report.claims.most_cells_verdict`). Other perturbations
    are not part of it: the paper's own Table 3 puts CASPER and the model-based baselines lower."""
    from .claims import band_claim

    return band_claim(id, f"Random perturbation leaves \"RBO\" (AO) between {low} and {high} in most cases",
                      runs[runs["selector"] == "random"], "ao", cells, low=low, high=high, most=True)


def most_stable_claim(runs: pd.DataFrame, model: str = "latentcross", selector: str = "random",
                      cells: list[str] | None = None, id: str = "latentcross_most_stable") -> dict:
    """``model`` has the highest AO of the models under ``selector`` perturbations (pairs: seeds)."""
    from .claims import ordering_claim

    part = runs[runs["selector"] == selector]
    others = sorted(set(part["model"]) - {model})
    claim = f"{display_name(model)} is the most stable model under {display_name(selector)} perturbation (highest AO)"
    return ordering_claim(id, claim, part, "model", [(model, m) for m in others], "ao", cells or [])


def lowest_ao_claim(runs: pd.DataFrame, selector: str, others: list[str], cells: list[str], id: str,
                    claim: str, exceptions: int = 0) -> dict:
    """``selector``'s perturbation gives a lower AO than each of ``others`` (pairs: seeds), pooled over
    cells; ``exceptions`` cells may disagree by mean ("all but one setting")."""
    from .claims import ordering_claim

    return ordering_claim(id, claim, runs, "selector", [(selector, o) for o in others], "ao", cells,
                          higher=False, exceptions=exceptions)


def mrr_group_claim(runs: pd.DataFrame, cells: list[str], groups=("low", "high"), metric: str = "jaccard",
                    id: str = "low_mrr_less_stable") -> dict:
    """Users of the original model's low-MRR group (``groups[0]``) are less stable (lower ``metric``)
    than those of every other group in ``groups`` (``("low", "high")``, or ``("low", "mid", "high")``:
    the paper's "users with high accuracy receive more stable predictions than the low-accuracy group",
    the same links as :func:`low_mrr_least_stable_claim`), paired within each run (same seed)."""
    from .claims import ordering_claim

    perturbed = runs[runs["selector"] != "none"] if "selector" in runs else runs
    long = groups_long(perturbed, cells, metric, waiting=True, groups=groups)
    links = [(groups[0], other) for other in groups[1:]]
    others = " and ".join(f"{g}-MRR" for g in groups[1:])
    return ordering_claim(id, f"Low-MRR users less stable than {others} users (lower {display_name(metric)})",
                          long, "group", links, metric, [c for c in cells if c in perturbed], higher=False)


def next_item_claim(runs: pd.DataFrame, cells: list[str], tolerance: float = 0.01,
                    id: str = "next_item_barely_moves") -> dict:
    """Next-item metrics barely move: MRR of M' minus MRR of M within ±``tolerance``, per cell (band
    test over seeds)."""
    from .claims import band_claim

    done = runs[runs["selector"] != "none"].assign(mrr_change=lambda d: d["mrr_perturbed"] - d["mrr_original"])
    return band_claim(id, f"Next-item metrics barely move (|ΔMRR| < {tolerance})", done, "mrr_change", cells,
                      low=-tolerance, high=tolerance)


def chapter_claims(runs: pd.DataFrame, next_item_tolerance: float = 0.01) -> pd.DataFrame:
    """The chapter's qualitative claims checked on LOO runs of one dataset (computed runs, seed level;
    those without a record count as pending; tests of :mod:`recunlearn.report.claims`):

    - ``control_exact``: the control run (no perturbation) gives AO = Jaccard@10 = 1 exactly (per model;
      CPU; an exact check);
    - ``ao_between_075_095``: random perturbation leaves "RBO" (AO) in 0.75-0.95 in most cases (per model;
      :func:`ao_band_claim`);
    - ``latentcross_most_stable``: LatentCross has the highest AO under random perturbation;
    - ``earliest_destabilises_most``: on LatentCross, where the paper tests it, Earliest-Random's AO below
      Random's and Latest-Random's; ``earliest_destabilises_most_every_model``, another reading (shown, not
      counted): the same on every model;
    - ``casper_destabilises_most``: CASPER's AO below every baseline's that was run (the three random
      baselines, TracIn, Rev.Adv.) in all but one model (the paper: "all but one setting");
    - ``low_mrr_less_stable``: Jaccard@10 of the bottom 20 % of users by MRR below the top 20 %'s
      (per model and perturbing selector);
    - ``next_item_barely_moves``: |MRR of M' − MRR of M| < ``next_item_tolerance`` (per model and
      perturbing selector)."""
    from .claims import OTHER_READING, SELF_CHECK, as_kind, check_claim, claims_frame

    done = runs[runs["perturbation"] == "loo"]  # with the runs without a record: each claim counts its own
    means = _computed(done).groupby(["model", "selector"], as_index=False).mean(numeric_only=True)

    def control_exact(g):
        row = g[g["selector"] == "none"]
        return None if row.empty else bool((row["ao"] == 1.0).all() and (row["jaccard"] == 1.0).all())

    controls = done[done["selector"] == "none"]
    computed_controls = len(_computed(controls))
    return claims_frame([
        check_claim("control_exact", "Control run (no perturbation): AO = Jaccard@10 = 1 exactly", means, ["model"],
                    control_exact, evidence="exact check: on CPU training is bit-for-bit repeatable", kind=SELF_CHECK,
                    waiting=len(controls) - computed_controls, computed=computed_controls),
        ao_band_claim(done, ["model", "selector"]),
        most_stable_claim(done),
        lowest_ao_claim(done[done["model"] == "latentcross"], "earliest", ["random", "latest"], ["model"],
                        "earliest_destabilises_most", "On LatentCross, earliest-interaction perturbations destabilise "
                        "most (AO below Random and Latest-Random)"),
        as_kind(lowest_ao_claim(done, "earliest", ["random", "latest"], ["model"],
                                "earliest_destabilises_most_every_model", "On every model, earliest-interaction "
                                "perturbations destabilise most (the paper tests LatentCross only)"), OTHER_READING),
        lowest_ao_claim(done, "casper", present_baselines(done) or list(RANDOM_BASELINES), ["model"],
                        "casper_destabilises_most", "CASPER destabilises more than every baseline run, in all but one "
                        "model (AO below each)", exceptions=1),
        mrr_group_claim(done, ["model", "selector"]),
        next_item_claim(done, ["model", "selector"], next_item_tolerance),
    ])


def figure_8_claims(runs: pd.DataFrame, growth: dict, near: tuple[float, float] = NEAR_LINEAR) -> pd.DataFrame:
    """Figure 8's claims:

    - ``ao_falls_with_k``: AO falls as the number k of perturbed interactions grows (per model; a
      trend over the seed-level runs, :func:`recunlearn.report.claims.trend_claim`);
    - ``runtime_near_linear``: CASPER's build + score + select time grows near-linearly with the
      number of interactions: the growth exponent (``growth`` of :func:`growth_exponent`) lies in
      ``near``. ``reproduced`` when its bootstrap interval lies inside, ``not reproduced`` when the
      interval lies wholly outside, ``inconclusive`` when it straddles an end (the timing noise
      cannot tell) or when a size has a single timing (resampling it gives no interval: the noise is
      not measured); ``pending`` without sizes to fit."""
    from .claims import claim_row, claims_frame

    low, high = near
    claim = f"CASPER's run time grows near-linearly with the interactions (time ∝ n^b, b in [{low:g}, {high:g}])"
    test = "least-squares growth exponent over every repeat, percentile-bootstrap interval"
    if not growth or not np.isfinite(growth.get("exponent", float("nan"))):
        timing = claim_row("runtime_near_linear", claim, PENDING, test=test, evidence="no timed sizes yet")
    else:
        b, lo, hi = growth["exponent"], growth["low"], growth["high"]
        single = growth["repeats"] < 2  # a size timed once: the bootstrap interval is the point itself
        verdict = (INCONCLUSIVE if single else REPRODUCED if low <= lo and hi <= high
                   else NOT_REPRODUCED if hi < low or lo > high else INCONCLUSIVE)
        interval = ("a size with a single timing: no interval" if single
                    else f"{growth['level']:.0%} interval [{lo:.2f}, {hi:.2f}]")
        timing = claim_row("runtime_near_linear", claim, verdict, f"b = {b:.2f}, {interval}", test=test,
                           evidence=f"b = {b:.3f}, {interval} over {growth['sizes']} sizes x {growth['repeats']} "
                                    f"repeats timed in one run, sizes interleaved; near-linear: b in [{low:g}, {high:g}]")
    return claims_frame([k_trend_claim(runs), timing])  # with the runs without a record: counted as pending


def k_trend_claim(runs: pd.DataFrame) -> dict:
    """``ao_falls_with_k``: AO falls as the number k of perturbed interactions grows, per model (a trend
    over the computed seed-level runs of ``runs``, which hold one selector's sweep over k)."""
    from .claims import trend_claim

    return trend_claim("ao_falls_with_k", "AO falls as more interactions are perturbed (k)", runs, "k",
                       "ao", -1, ["model"])


def present_baselines(runs: pd.DataFrame) -> list[str]:
    """The baselines (:data:`BASELINES`, in that order) with at least one run in ``runs``."""
    return [b for b in BASELINES if b in set(runs["selector"])] if "selector" in runs else []


def casper_vs_baselines(runs: pd.DataFrame, metric: str = "ao") -> pd.DataFrame:
    """The paired tests behind "CASPER beats every baseline": per baseline, CASPER's ``metric`` minus
    the baseline's for the same (perturbation, model, seed), like for like (random replacement item
    for every method), pooled over the (perturbation, model) columns: pairs, mean difference, the
    one-sided p that CASPER is lower (:func:`~recunlearn.report.significance.paired_p`: Wilcoxon
    signed-rank, a paired t-test where the pairs are too few for it to reach 0.05; NaN for a single pair, which no test can
    decide), the test, and in how many columns CASPER's mean is lower."""
    from .claims import paired_differences
    from .significance import paired_p, testable

    done = _computed(runs)
    like = done[done["replacement"] == "random"]
    rows = []
    for baseline in present_baselines(like):
        diff = paired_differences(like, "selector", "casper", baseline, metric, ["perturbation", "model"])
        if diff.empty:
            continue
        columns = diff.groupby(["perturbation", "model"])["diff"].mean()
        _, lower, test = paired_p(diff["diff"].astype(float))
        rows.append({"baseline": METHOD_LABELS[baseline], "pairs": len(diff),
                     f"mean CASPER − baseline ({display_name(metric)})": float(diff["diff"].mean()),
                     "p (CASPER lower, one-sided)": lower if testable(len(diff)) else float("nan"),
                     "test used": test if testable(len(diff)) else "none (1 pair)",
                     "columns CASPER lower": f"{int((columns < 0).sum())} of {len(columns)}"})
    return pd.DataFrame(rows)


def variance_claim(runs: pd.DataFrame, cells: list[str], metric: str = "ao", alpha: float | None = None,
                   id: str = "casper_lower_variance") -> dict:
    """"CASPER has lower run-to-run variance": in every cell with at least 2 seeds of both, the standard
    deviation over seeds of CASPER's ``metric`` against the median of the random baselines' (Random,
    Earliest-, Latest-Random); one comparison per cell, since a cell's baselines are all compared with
    the same CASPER runs. A one-sided sign test (binomial, p = 1/2 under "no difference") over the
    cells: ``reproduced`` when CASPER is lower significantly often and in every cell, ``partly
    reproduced`` when significantly often but not
    everywhere, ``not reproduced`` when significantly often higher, ``inconclusive`` otherwise (with
    4 decided cells or fewer the sign test cannot reach 0.05, and ``holds in`` says so).
    CASPER picks the same row every seed, so only the model's initial weights vary between its runs,
    while the random baselines also change the row: the claim is expected, and says nothing about
    which rows matter."""
    from scipy.stats import binomtest

    from .claims import ALPHA, cannot_reach, claim_row, count_runs, holds_in_text, split_waiting, with_waiting

    alpha = ALPHA if alpha is None else alpha
    compared = runs[runs["selector"].isin(("casper", *RANDOM_BASELINES))] if "selector" in runs else runs
    compared = compared[compared["replacement"] == "random"] if "replacement" in compared else compared
    like, waiting = split_waiting(compared)
    test = ("one-sided sign test over the cells: CASPER's std over seeds against the median of the random "
            "baselines' std in the same cell")
    claim = ("CASPER has lower run-to-run variance over seeds than the baselines (tested against the random "
             "baselines, whose runs also redraw the perturbed row)")
    spread = like.groupby(cells + ["selector"])[metric].agg(["std", "count"])
    spread = spread[spread["count"] >= 2]["std"]
    lower = higher = total = 0
    for key, part in spread.groupby(level=cells):
        by = part.droplevel(cells) if cells else part
        baselines = [by[b] for b in RANDOM_BASELINES if b in by]
        if "casper" not in by or not baselines:
            continue
        typical = float(np.median(baselines))  # one comparison per cell: the cell's baselines share its CASPER runs
        total += 1
        lower += int(by["casper"] < typical)
        higher += int(by["casper"] > typical)
    if total == 0:
        return claim_row(id, claim, PENDING, test=test, evidence="no cell with 2 seeds of CASPER and a random baseline")
    decided = lower + higher  # equal spreads (ties) carry no sign
    p_lower = binomtest(lower, decided, 0.5, alternative="greater").pvalue if decided else 1.0
    p_higher = binomtest(lower, decided, 0.5, alternative="less").pvalue if decided else 1.0
    verdict = (REPRODUCED if p_lower < alpha and lower == total else PARTLY if p_lower < alpha
               else NOT_REPRODUCED if p_higher < alpha else INCONCLUSIVE)
    cannot = ("; no cell decided (equal spreads)" if decided == 0 else
              cannot_reach(f"{decided} cell{'s' if decided != 1 else ''}", alpha, f"1/{2 ** decided}")
              if verdict == INCONCLUSIVE and 0.5 ** decided >= alpha else "")
    evidence = (f"std over seeds of {metric}: CASPER's below the median of the random baselines' in {lower}, above "
                f"in {higher} of {total} cells (ties dropped); sign test p = {p_lower:.3g}; alpha = {alpha}. CASPER's "
                "row is the same in every seed, the random baselines' is not")
    return with_waiting(claim_row(id, claim, verdict, holds_in_text(lower, total, "cells") + cannot, p_lower, test,
                                  evidence),
                        count_runs(waiting), count_runs(like))


UNBOUNDED_GROUP, BOUNDED_GROUP = "JODIE and LatentCross", "LSTM and TiSASRec"
"""The two groups of models :func:`margin_claim` compares."""


def margin_claim(runs: pd.DataFrame, cells: list[str] = ("perturbation",), metric: str = "ao",
                 id: str = "casper_strongest_unbounded") -> dict:
    """"CASPER is more effective on JODIE and LatentCross" (no cascade cap L): CASPER's margin, the
    Random baseline's ``metric`` minus CASPER's for the same seed (like for like: random replacement
    item), averaged over JODIE and LatentCross, is larger than averaged over LSTM and TiSASRec, paired by
    seed within each cell (a pooled one-sided test of :func:`~recunlearn.report.claims.ordering_claim`;
    a seed's group mean needs every model of the group). Not each of JODIE and LatentCross above each
    of LSTM and TiSASRec: the paper's own Table 3(a) margins (:func:`paper_margins`; JODIE's is below
    TiSASRec's) fail that reading."""
    from .claims import count_runs, ordering_claim, split_waiting, with_waiting

    done, waiting = split_waiting(runs)
    like = done[done["replacement"] == "random"]
    keys = list(cells) + ["model", "seed"]
    table = like.pivot_table(index=keys, columns="selector", values=metric, aggfunc="mean")
    if "casper" not in table or "random" not in table:
        margins = pd.DataFrame(columns=keys + ["margin"])
    else:
        margins = (table["random"] - table["casper"]).dropna().rename("margin").reset_index()
    group_of = {**{m: UNBOUNDED_GROUP for m in UNBOUNDED_MODELS}, "lstm": BOUNDED_GROUP, "tisasrec": BOUNDED_GROUP}
    size = pd.Series(group_of).value_counts()
    margins = margins.assign(group=margins["model"].map(group_of)).dropna(subset=["group"])
    by_group = margins.groupby(list(cells) + ["seed", "group"])["margin"].agg(["mean", "count"]).reset_index()
    by_group = by_group[by_group["count"] == by_group["group"].map(size)].rename(columns={"mean": "margin"})

    def compared(frame: pd.DataFrame) -> pd.DataFrame:  # CASPER's and Random's runs of the four models
        return frame[frame["selector"].isin(["casper", "random"]) & (frame["replacement"] == "random")
                     & frame["model"].isin(list(group_of))] if len(frame) else frame

    row = ordering_claim(id, "CASPER is more effective on JODIE and LatentCross (no cascade cap): larger AO drop "
                         "below Random than on LSTM and TiSASRec, averaged over each pair of models",
                         by_group[list(cells) + ["seed", "group", "margin"]], "group",
                         [(UNBOUNDED_GROUP, BOUNDED_GROUP)], "margin", list(cells),
                         note="margin = AO(Random) − AO(CASPER), same seed; each group's mean over its two models.")
    return with_waiting(row, count_runs(compared(waiting)), count_runs(compared(done)))


def paper_margins(paper: pd.DataFrame, perturbation: str = "loo") -> pd.Series:
    """CASPER's margin in the paper's Table 3 (rows of ``paper_table("casper-table-03")``), per model:
    the Random row's AO minus CASPER's (random replacement item), for ``perturbation``."""
    rows = paper[(paper["perturbation"] == perturbation) & (paper["replacement"] == "random")
                 & (paper["metric"] == "ao")].set_index(["selector", "model"])["value"]
    return (rows["random"] - rows["casper"]).rename("margin")


def table3_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """Table 3's claims on the computed runs (seed level; those without a record count as pending):

    - ``casper_lowest_ao``: in all (perturbation, model) columns but one (the paper: "all but one
      setting") CASPER gives a lower AO than every baseline present (Random, Earliest-, Latest-Random,
      TracIn and its proxy, Rev.Adv. random and earliest), like for like (replacement and insertion:
      every method uses a random item), pooled over columns (:func:`casper_vs_baselines` lists the
      tests per baseline);
    - ``unpopular_strongest_replacement``: replacing CASPER's interaction's item with the least
      popular item lowers AO more than a random or the most popular item (per model);
    - ``revadv_earliest_beats_random``: Rev.Adv. (earliest) gives a lower AO than Rev.Adv. (random)
      ("in most cases": pooled over the columns; the columns where the means agree are counted);
    - ``casper_lower_variance``: :func:`variance_claim` over the (perturbation, model) columns;
    - ``casper_strongest_unbounded``: :func:`margin_claim` per perturbation."""
    from .claims import claims_frame, ordering_claim

    done = runs  # with the runs without a record: each claim counts its own
    like = done[done["replacement"] == "random"]
    replace = done[(done["selector"] == "casper") & (done["perturbation"] == "replace")]
    columns = ["perturbation", "model"]
    return claims_frame([
        lowest_ao_claim(like, "casper", present_baselines(like) or list(RANDOM_BASELINES), columns,
                        "casper_lowest_ao", "CASPER gives the lowest AO in all but one column, below every "
                        "baseline (like-for-like replacement)", exceptions=1),
        ordering_claim("unpopular_strongest_replacement", "Replacing with the least popular item is CASPER's strongest "
                       "replacement", replace, "replacement", [("unpopular", "random"), ("unpopular", "popular")], "ao",
                       ["model"], higher=False),
        ordering_claim("revadv_earliest_beats_random", "Rev.Adv. (earliest) destabilises more than Rev.Adv. (random) "
                       "in most cases (lower AO)", like, "selector", [("revadv-earliest", "revadv-random")], "ao",
                       columns, higher=False),
        variance_claim(done, columns),
        margin_claim(done),
    ])


# --- Figure 7: stability by MRR group for every method ----------------------------------------------

MRR_GROUPS = ("high", "mid", "low")


def groups_long(runs: pd.DataFrame, cells: list[str], metric: str = "jaccard", waiting: bool = False,
                groups=MRR_GROUPS) -> pd.DataFrame:
    """Seed-level ``metric`` per MRR group of ``groups`` in long format: ``cells + [seed, group, metric]``
    (and, with ``waiting``, each run's ``record`` and the runs without one, their ``status`` kept, for
    a claim to count them once)."""
    done = _run_ids(runs) if waiting else _computed(runs)
    keys = [c for c in cells if c in done] + ["seed"] + (["record"] if waiting else []) + (
        ["status"] if waiting and "status" in done else [])
    columns = [f"{metric}_{g}" for g in groups]
    if done.empty:
        return pd.DataFrame(columns=keys + ["group", metric])
    long = done[keys + columns].melt(id_vars=keys, var_name="group", value_name=metric)
    long["group"] = long["group"].str.removeprefix(f"{metric}_")
    return long


def _method_groups(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """:func:`groups_long` by selector of the computed runs of every perturbation method (no control)."""
    return groups_long(runs[runs["selector"] != "none"] if len(runs) else runs, ["selector"], metric)


def method_group_means(runs: pd.DataFrame, metric: str = "jaccard") -> pd.DataFrame:
    """Figure 7's table: per method (rows, the paper's order) and MRR group (columns high, mid, low),
    ``metric`` as ``mean ± std`` over the computed seeds, with the number of seeds (the control,
    which perturbs nothing, is no method)."""
    long = _method_groups(runs, metric)
    if long.empty:
        return pd.DataFrame(columns=["method", *MRR_GROUPS, "seeds"])
    stats = long.groupby(["selector", "group"])[metric].agg(["mean", "std", "count"])
    order = [s for s in METHOD_LABELS if s in set(long["selector"])]
    rows = []
    for selector in order:
        cells = {g: (format_mean_std(stats.loc[(selector, g), "mean"], stats.loc[(selector, g), "std"], 4,
                                     n=stats.loc[(selector, g), "count"])
                     if (selector, g) in stats.index else "pending") for g in MRR_GROUPS}
        rows.append({"method": METHOD_LABELS[selector], **cells,
                     "seeds": int(long[long["selector"] == selector]["seed"].nunique())})
    return pd.DataFrame(rows)


def least_stable_counts(runs: pd.DataFrame, metric: str = "jaccard") -> dict[str, int]:
    """Figure 7's counts by mean ``metric`` over the computed runs: ``low_least`` of the ``methods``
    have their lowest mean in the low-MRR group, and CASPER has the lowest mean of every method in
    ``casper_lowest`` of the ``groups`` (0 groups without a CASPER run; the control is no method)."""
    long = _method_groups(runs, metric)
    if long.empty:
        return {"low_least": 0, "methods": 0, "casper_lowest": 0, "groups": 0}
    means = long.groupby(["selector", "group"])[metric].mean().unstack()
    has_casper = "casper" in means.index
    return {"low_least": int((means.idxmin(axis=1) == "low").sum()), "methods": len(means),
            "casper_lowest": int(sum(means[g].idxmin() == "casper" for g in MRR_GROUPS if g in means))
            if has_casper else 0, "groups": len(MRR_GROUPS) if has_casper else 0}


MRR_GROUP_LABELS = {"high": "top 20 % MRR", "mid": "middle 60 %", "low": "bottom 20 % MRR"}


def mrr_group_figure(runs: pd.DataFrame, title: str, metric: str = "jaccard") -> None:
    """Figure 7: ``metric`` (M vs M') per MRR group of users, one bar per method (mean ± std over seeds;
    the control is no method)."""
    set_theme()
    long = _method_groups(runs, metric)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    shown = long.assign(method=long["selector"].map(METHOD_LABELS), group=long["group"].map(MRR_GROUP_LABELS))
    sns.barplot(shown, x="group", y=metric, hue="method", order=[MRR_GROUP_LABELS[g] for g in MRR_GROUPS],
                hue_order=[METHOD_LABELS[s] for s in METHOD_LABELS if s in set(long["selector"])],
                errorbar="sd", ax=ax)
    ax.set(xlabel="users by the original model's MRR", ylabel=f"{display_name(metric)} (M vs M')", title=title)
    ax.set_ylim(max(0.0, long[metric].min() - 0.05), 1.0)
    legend_below(fig, ax, title="Method")


def low_mrr_least_stable_claim(runs: pd.DataFrame, cells: list[str] = ("selector",), metric: str = "jaccard",
                               id: str = "low_mrr_least_stable_every_method") -> dict:
    """"Low-MRR users are the least stable, for every method": ``metric`` of the low-MRR group below
    the mid and the high group's, paired within each run (same seed and method), pooled over the
    methods; ``reproduced`` needs both links significant and the means agreeing for every method."""
    from .claims import ordering_claim

    done = runs[runs["selector"] != "none"]
    return ordering_claim(id, f"Low-MRR users are the least stable for every method (lowest {display_name(metric)})",
                          groups_long(done, list(cells), metric, waiting=True), "group", [("low", "mid"), ("low", "high")],
                          metric, list(cells), higher=False)


def casper_lowest_per_group_claim(runs: pd.DataFrame, metric: str = "jaccard", cells: list[str] = (),
                                  id: str = "casper_lowest_every_group") -> dict:
    """"CASPER is the lowest in every MRR group": CASPER's ``metric`` below every other method's in each
    group (high, mid, low), paired by seed and tested in each group (``per_cell``): the groups of one
    run share its two models, so they are not independent pairs, and one seed decides nothing."""
    from .claims import ordering_claim

    done = runs[runs["selector"] != "none"]
    others = present_baselines(done)
    return ordering_claim(id, f"CASPER gives the lowest {display_name(metric)} in every MRR group", groups_long(
        done, ["selector", *cells], metric, waiting=True), "selector", [("casper", o) for o in others], metric,
        ["group", *cells], higher=False, per_cell=True)


# --- the reduced-scale page: its grid and its claims -------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ProtocolGrid(CasperGrid):
    """A CASPER page's runs (:class:`CasperGrid`) and the runs of each protocol variant it lists
    (:mod:`~recunlearn.report.casper_variants`): JODIE and LatentCross under the authors' item
    numberings of ``id_maps`` and with the test passes of ``test_updates``, and LatentCross with the
    recurrent cells of ``latentcross_cells``."""

    id_maps: tuple[str, ...] = option(("fixed",), choices=ID_MAPS, doc="item numberings compared for JODIE and "
                                      "LatentCross (report.casper_numbering); every other run: fixed")
    test_updates: tuple[str, ...] = option(("online",), choices=TEST_UPDATES, doc="test passes compared for JODIE "
                                           "and LatentCross (report.casper_test_protocol); every other run: online")
    latentcross_cells: tuple[str, ...] = option(("lstm",), choices=LATENTCROSS_CELLS, doc="LatentCross cells "
                                                "compared (report.casper_latentcross_cell); every other run: lstm")

    def variant_runs(self) -> list:
        """The runs of every variant comparison whose option the grid has, after the grid's own."""
        from .casper_variants import grid_variants, variant_runs

        return [run for variant in grid_variants(self) for run in variant_runs(self, variant)]

    def runs(self):
        return list(dict.fromkeys(CasperGrid.runs(as_base(self, CasperGrid)) + self.variant_runs()))


@dataclasses.dataclass(frozen=True)
class ReducedScaleGrid(ProtocolGrid):
    """The reduced-scale claims page: every selector of ``selectors`` on every perturbation of
    ``perturbations`` (one perturbed interaction: ``ks``, normally 1), as the Table 3 page lays them
    out, CASPER's deletion (LOO) at each number of perturbed interactions of ``casper_ks`` (Figure
    8(a)'s sweep, on every model of ``models``), and the variant comparisons' runs (:class:`ProtocolGrid`;
    here also the LSTM with the item embeddings of ``lstm_embeddings``)."""

    casper_ks: tuple[int, ...] = option((1,), min=1, doc="k of CASPER's deletion sweep (Figure 8(a))")
    lstm_embeddings: tuple[str, ...] = option(("fixed",), choices=LSTM_EMBEDDINGS, doc="LSTM item embeddings "
                                              "compared (report.casper_lstm_embeddings); every other run: fixed")

    def runs(self):
        plain = as_base(self, CasperGrid)
        sweep = as_base(self, CasperGrid, selectors=("casper",), perturbations=("loo",), ks=self.casper_ks)
        # k = 1 listed once; the variant comparisons' runs last
        return list(dict.fromkeys(CasperGrid.runs(plain) + CasperGrid.runs(sweep) + self.variant_runs()))


def one_interaction(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that perturb one interaction (k = 1): the rows Table 3 and the chapter's claims read."""
    return runs[runs["k"] == 1] if "k" in runs else runs


def casper_k_sweep(runs: pd.DataFrame) -> pd.DataFrame:
    """CASPER's deletion runs at every k (Figure 8(a)'s sweep)."""
    return runs[(runs["selector"] == "casper") & (runs["perturbation"] == "loo")]


def reduced_scale_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """Every CASPER claim the reduced-scale page can test on its runs: the chapter's deletion claims
    (:func:`chapter_claims`) and Table 3's (:func:`table3_claims`) on the runs perturbing one
    interaction, and ``ao_falls_with_k`` (:func:`k_trend_claim`) on CASPER's deletion sweep over k."""
    from .claims import claims_frame, joined_claims

    single = one_interaction(runs)
    sweep = claims_frame([k_trend_claim(casper_k_sweep(runs))])
    return joined_claims(chapter_claims(single), table3_claims(single), sweep)
