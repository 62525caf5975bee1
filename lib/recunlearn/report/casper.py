"""CASPER chapter helpers: Table 2 verdicts, the IDAG drawing, RLS bar charts, claim checks."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from ..data.sequences import DATASET_LABELS, Stream
from ..perturb.idag import IDAG, build_idag, cascade_scores
from .plots import FIGURE_DIR

RLS_LABELS = {"ao": "AO (paper's \"RBO\")", "rbo_min": "RBO(0.9)", "rbo_ext": "RBO_ext(0.9)", "jaccard": "Jaccard@10"}


def statistics_verdicts(ours: pd.DataFrame, paper: pd.DataFrame) -> dict[str, str]:
    """Per dataset: ``reproduced`` when users, items and interactions match our filtered counts exactly;
    ``reproduced with deviation`` when users match, items differ by at most the one padding index and
    the paper's interactions are our filtered count ± 1 or the raw count; ``not reproduced`` otherwise
    (LastFM: only 10 % of the data is available)."""
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
        out[row.dataset] = "reproduced" if close else "reproduced with deviation" if ok else "not reproduced"
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
    fig, ax = plt.subplots(figsize=(8, 3.4))
    for pred, color in ((graph.pred_user, "#1f77b4"), (graph.pred_item, "#d62728")):
        for v in np.flatnonzero(pred >= 0):
            ax.annotate("", xy=(x[v], y[v]), xytext=(x[pred[v]], y[pred[v]]),
                        arrowprops=dict(arrowstyle="->", color=color, lw=1.4, shrinkA=11, shrinkB=11))
    for v, row in table.iterrows():
        ax.scatter(x[v], y[v], s=520, color="#2ca02c" if row["node"] in chosen else "#dddddd", edgecolor="black", zorder=3)
        ax.text(x[v], y[v], row["node"], ha="center", va="center", fontsize=8, zorder=4)
    ax.set_yticks(sorted(set(y)), [f"user {stream.user_ids[int(-u)]}" for u in sorted(set(y))])
    ax.set_xlabel("time")
    ax.set_title(title)
    ax.plot([], [], color="#1f77b4", label="same user")
    ax.plot([], [], color="#d62728", label="same item")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.margins(x=0.06, y=0.18)
    fig.tight_layout()
    if save_as:
        FIGURE_DIR.mkdir(parents=True, exist_ok=True)
        fig.savefig(FIGURE_DIR / save_as, dpi=110)
    return fig


def figure_4b_example():
    """The toy stream, its IDAG (paper variant, unbounded L) and the exact root scores."""
    from ..perturb.toy import figure_4b_stream

    stream = figure_4b_stream()
    graph = build_idag(stream, None, "paper")
    roots, scores = cascade_scores(graph)
    return stream, graph, pd.DataFrame({"node": [f"X{r + 1}" for r in roots], "cascade_score": scores})


def rls_bars(summary: pd.DataFrame, x: str, hue: str | None, metrics: list[str], title: str,
             paper: pd.DataFrame | None = None, save_as: str | None = None):
    """One panel per RLS metric: mean ± std over seeds, bars by ``x`` (grouped by ``hue``); the
    paper's values (``x``, ``metric``, ``paper``; only without ``hue``) as diamonds. The dotted line
    at 0.5 is AO's value for randomly shuffled lists."""
    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.4 * len(metrics), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        part = summary[summary["metric"] == metric]
        if part.empty:
            ax.text(0.5, 0.5, "pending", ha="center", va="center", transform=ax.transAxes)
        else:
            columns = hue if hue else "metric"
            mean = part.pivot_table(index=x, columns=columns, values="mean", sort=False)
            std = part.pivot_table(index=x, columns=columns, values="std", sort=False).reindex_like(mean)
            mean.plot.bar(yerr=std, ax=ax, capsize=3, rot=0, legend=bool(hue), alpha=0.85)
            if paper is not None and not hue:
                ref = paper[paper["metric"] == metric].set_index(x)["paper"]
                positions = [i for i, v in enumerate(mean.index) if v in ref.index]
                ax.scatter(positions, [ref[mean.index[i]] for i in positions], marker="D", color="#DD8452",
                           zorder=3, label="paper")
                if positions:
                    ax.legend(fontsize="small")
        if metric == "ao":
            ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
        ax.set_title(RLS_LABELS.get(metric, metric))
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(x)
    fig.suptitle(title)
    fig.tight_layout()
    if save_as:
        FIGURE_DIR.mkdir(parents=True, exist_ok=True)
        fig.savefig(FIGURE_DIR / save_as, dpi=110)
    return fig


def group_table(runs: pd.DataFrame, keys: list[str], metric: str = "jaccard") -> pd.DataFrame:
    """Mean over seeds of ``metric`` per MRR group (high / mid / low), computed runs only."""
    done = runs[runs["status"] == "computed"]
    cols = [f"{metric}_{g}" for g in ("high", "mid", "low")]
    if done.empty:
        return pd.DataFrame(columns=keys + cols)
    return done.groupby(keys)[cols].mean().reset_index()


def position_claims(runs: pd.DataFrame, tests: pd.DataFrame) -> pd.DataFrame:
    """Figure 4(a)'s claims per (model, perturbation): Earliest-Random has the lowest AO with
    p < 0.05 against both others, and Random < Latest-Random."""
    done = runs[runs["status"] == "computed"]
    rows = []
    for (model, pert), part in done.groupby(["model", "perturbation"]):
        mean = part.groupby("selector")["ao"].mean()
        if not {"earliest", "random", "latest"} <= set(mean.index):
            continue
        t = tests[(tests["model"] == model) & (tests["perturbation"] == pert)].set_index(["a", "b"])["p_value"]
        p1, p2 = t.get(("earliest", "random"), np.nan), t.get(("earliest", "latest"), np.nan)
        rows.append({"model": model, "perturbation": pert,
                     "earliest_lowest": bool(mean["earliest"] < min(mean["random"], mean["latest"])),
                     "p_vs_random": p1, "p_vs_latest": p2,
                     "significant": bool(p1 < 0.05 and p2 < 0.05),
                     "random_below_latest": bool(mean["random"] < mean["latest"])})
    return pd.DataFrame(rows)


def dataset_label(name: str) -> str:
    return DATASET_LABELS.get(name, name)


def format_value(value: float, digits: int = 4, pending: str = "pending GPU") -> str:
    """A number for the notes (``0.9982``), or ``pending`` when it was not computed."""
    return pending if value is None or pd.isna(value) else f"{value:.{digits}f}"


def summary_value(summary: pd.DataFrame, **where) -> float:
    """The ``mean`` of the one summary row matching ``where`` (column = value), NaN if none."""
    part = summary
    for column, value in where.items():
        part = part[part[column] == value]
    return float(part["mean"].iloc[0]) if len(part) else float("nan")


def scaling_figure(rows: pd.DataFrame, fit: dict, title: str, save_as: str | None = None):
    """CASPER's build + score + select seconds against the number of interactions, with the
    least-squares line (Figure 8(b))."""
    sns.set_theme(style="whitegrid", context="notebook")
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for column, label in (("total_seconds", "total"), ("score_seconds", "exact scoring (bitset sweep)"),
                          ("build_seconds", "IDAG construction")):
        ax.plot(rows["interactions"], rows[column], marker="o", label=label)
    xs = np.linspace(rows["interactions"].min(), rows["interactions"].max(), 50)
    ax.plot(xs, fit["intercept"] + fit["slope"] * xs, linestyle=":", color="black",
            label=f"linear fit of total, R² = {fit['r2']:.3f}")
    ax.set(xlabel="interactions", ylabel="seconds", title=title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    if save_as:
        FIGURE_DIR.mkdir(parents=True, exist_ok=True)
        fig.savefig(FIGURE_DIR / save_as, dpi=110)
    return fig


def k_figure(summary: pd.DataFrame, metrics: list[str], title: str):
    """Mean ± std over seeds of each RLS metric against the number of perturbations k (Figure 8(a))."""
    sns.set_theme(style="whitegrid", context="notebook")
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for metric in metrics:
        part = summary[summary["metric"] == metric].sort_values("k")
        if len(part):
            ax.errorbar(part["k"], part["mean"], yerr=part["std"], marker="o", capsize=3,
                        label=RLS_LABELS.get(metric, metric))
    if not len(summary):
        ax.text(0.5, 0.5, "pending", ha="center", va="center", transform=ax.transAxes)
    ax.set(xlabel="number of perturbed interactions k", title=title)
    ax.legend(fontsize="small") if len(summary) else None
    fig.tight_layout()
    return fig


def chapter_claims(runs: pd.DataFrame, next_item_tolerance: float = 0.01) -> pd.DataFrame:
    """The chapter's qualitative claims checked on LOO runs of one dataset (computed runs only), each
    in every cell where it can be tested (see :func:`recunlearn.report.claims.check_claim`):

    - the control run (no perturbation) gives AO = Jaccard@10 = 1 exactly (per model; CPU);
    - "RBO" (AO) lies in 0.75-0.95 (per model and perturbing selector);
    - LatentCross is the most stable model under random perturbation (highest AO; one cell);
    - earliest-interaction perturbations destabilise most (AO of Earliest-Random below Random and
      Latest-Random, per model);
    - CASPER destabilises more than the three random baselines (lowest AO, per model);
    - low-MRR users are less stable than high-MRR users (Jaccard@10 of the bottom 20 % below the
      top 20 %, per model and perturbing selector);
    - next-item metrics barely move (|MRR of M' − MRR of M| < ``next_item_tolerance``, per model
      and perturbing selector)."""
    from .claims import check_claim, value

    done = runs[(runs["status"] == "computed") & (runs["perturbation"] == "loo")]
    means = done.groupby(["model", "selector"], as_index=False).mean(numeric_only=True)
    perturbing = means[means["selector"] != "none"]
    ao = lambda g, s: value(g, "selector", "ao", s)  # noqa: E731

    def control_exact(g):
        row = g[g["selector"] == "none"]
        return None if row.empty else bool((row["ao"] == 1.0).all() and (row["jaccard"] == 1.0).all())

    def below_all(selector, others):
        def test(g):
            values = [ao(g, s) for s in (selector, *others)]
            return None if None in values else values[0] < min(values[1:])
        return test

    def latentcross_most_stable(g):
        part = g[g["selector"] == "random"]
        if "latentcross" not in set(part["model"]) or len(part) < 2:
            return None
        return bool(part.loc[part["model"] == "latentcross", "ao"].iloc[0] >= part["ao"].max())

    def groups_ordered(g):
        low, high = g["jaccard_low"].iloc[0], g["jaccard_high"].iloc[0]
        return None if pd.isna(low) or pd.isna(high) else bool(low < high)

    return pd.DataFrame([
        check_claim("Control run (no perturbation): AO = Jaccard@10 = 1 exactly", means, ["model"], control_exact),
        check_claim("\"RBO\" (AO) between 0.75 and 0.95", perturbing, ["model", "selector"],
                    lambda g: bool(0.75 <= g["ao"].iloc[0] <= 0.95)),
        check_claim("LatentCross is the most stable model under random perturbation", means, [],
                    latentcross_most_stable),
        check_claim("Earliest-interaction perturbations destabilise most", means, ["model"],
                    below_all("earliest", ("random", "latest"))),
        check_claim("CASPER destabilises more than Random, Earliest- and Latest-Random", means, ["model"],
                    below_all("casper", ("random", "earliest", "latest"))),
        check_claim("Low-MRR users are less stable than high-MRR users (Jaccard@10)", perturbing,
                    ["model", "selector"], groups_ordered),
        check_claim(f"Next-item metrics barely move (|ΔMRR| < {next_item_tolerance})", perturbing,
                    ["model", "selector"],
                    lambda g: bool(abs(g["mrr_perturbed"].iloc[0] - g["mrr_original"].iloc[0]) < next_item_tolerance)),
    ])
