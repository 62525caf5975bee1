"""The authors' item numbering, trained: how much it changes JODIE's and LatentCross's AO.

The authors' JODIE and LatentCross code numbers items by first appearance, separately in the
original and in the perturbed run, so one perturbation that moves an item's first appearance
renumbers other items. A run's ``id_map`` (:data:`recunlearn.experiments.casper.ID_MAPS`) picks one
of three numberings:

- ``fixed``: one numbering for both runs (this study's default);
- ``first_appearance``: each run numbers its items by first appearance, and the rank lists are
  mapped back to one numbering before they are compared: the models differ from ``fixed`` only in
  which initial weights each item gets;
- ``first_appearance_labels``: the same two models, their lists compared label by label, as the
  authors' code did: this adds the relabelling artefact.

Paired by (model, setting, seed): ``fixed`` − ``first_appearance_labels`` is the whole change the
authors' protocol makes to AO, ``first_appearance`` − ``first_appearance_labels`` its relabelling
part and ``fixed`` − ``first_appearance`` the part from the initial weights.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..experiments.casper import ID_MAPS, CasperConfig
from .casper import dodged_points, method_label, range_text, slot_position, zoom_value_axis
from .compare import format_mean_std
from .names import display_name, format_number, paper_sorted
from .plots import PAGE_WIDTH_IN, legend_below, set_theme

NUMBERING_MODELS = ("jodie", "latentcross")
"""The models whose authors' code renumbered items."""

NUMBERING_SETTINGS = (("random", "loo", "random"), ("earliest", "loo", "random"), ("casper", "loo", "random"),
                      ("casper", "replace", "random"), ("casper", "replace", "unpopular"))
"""(selector, perturbation, replacement) of the runs compared: deletion by Random, Earliest-Random and
CASPER, and CASPER's replacement by a random and by the least popular item (the replacement that
renumbers the most items)."""

NUMBERING_LABELS = {"fixed": "one fixed numbering (ours)",
                    "first_appearance": "per-run numbering, lists mapped back",
                    "first_appearance_labels": "per-run numbering, compared label by label (authors')"}
"""How a page names each numbering (:data:`~recunlearn.experiments.casper.ID_MAPS`)."""

SHORT_LABELS = {"fixed": "fixed", "first_appearance": "mapped back", "first_appearance_labels": "label by label"}
"""The numberings' short names, in the tests' contrasts."""

SETTING_KEYS = ["model", "selector", "perturbation", "replacement"]


def numbering_runs(grid) -> list[CasperConfig]:
    """The runs a :class:`~recunlearn.report.casper.NumberingGrid` (Table 3's, the reduced-scale page's)
    adds for each numbering of ``grid.id_maps`` but ``fixed`` (the
    numbering of its other runs, which include the fixed-numbering side of the comparison): every model of
    :data:`NUMBERING_MODELS` in ``grid.models``, every seed, every setting of :data:`NUMBERING_SETTINGS`
    whose selector, perturbation and replacement the grid lists; one perturbed interaction."""
    settings = [(s, p, r) for s, p, r in NUMBERING_SETTINGS
                if s in grid.selectors and p in grid.perturbations and (p == "loo" or r in grid.replacements)]
    return [CasperConfig(dataset=dataset, model=model, selector=s, perturbation=p, replacement=r, k=1, seed=seed,
                         epochs=grid.epochs, max_rows=grid.max_rows, device=grid.device, id_map=id_map)
            for id_map in grid.id_maps if id_map != "fixed" for dataset in grid.datasets for model in grid.models
            if model in NUMBERING_MODELS for seed in grid.seeds for s, p, r in settings]


def numbering_part(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs (computed or pending) of the numbering comparison, every numbering, with a ``setting``
    column (the paper's row name, e.g. ``CASPER (unpopular)``, and the perturbation)."""
    if "id_map" not in runs or runs.empty:
        return runs.iloc[:0].assign(setting=pd.Series(dtype=object))
    chosen = pd.Series(list(zip(runs["selector"], runs["perturbation"], runs["replacement"])),
                       index=runs.index).isin(NUMBERING_SETTINGS)
    part = runs[runs["model"].isin(NUMBERING_MODELS) & chosen & (runs["k"] == 1)]
    return part.assign(setting=[setting_label(s, p, r) for s, p, r in
                                zip(part["selector"], part["perturbation"], part["replacement"])])


def setting_label(selector: str, perturbation: str, replacement: str) -> str:
    """``"CASPER (unpopular), replacement"``: the paper's row name and the perturbation."""
    return f"{method_label(selector, perturbation, replacement)}, {display_name(perturbation)}"


def _settings_in_order(part: pd.DataFrame) -> list[str]:
    return [setting_label(*s) for s in NUMBERING_SETTINGS if setting_label(*s) in set(part["setting"])]


def numbering_table(runs: pd.DataFrame, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """AO (mean ± std over seeds) of each (model, setting) under each numbering that has runs, and the
    paper's Table 3 value (``paper``: rows of ``casper-table-03``; full scale, for orientation)."""
    part = numbering_part(runs)
    if part.empty:
        return pd.DataFrame()
    done = part[part["status"] == "computed"]
    stats = done.groupby(SETTING_KEYS + ["setting", "id_map"])["ao"].agg(["mean", "std", "count"])
    rows = []
    for model in paper_sorted("model", part["model"]):
        for setting in _settings_in_order(part[part["model"] == model]):
            keys = part[(part["model"] == model) & (part["setting"] == setting)].iloc[0]
            row = {"Model": display_name(model), "Setting": setting}
            for id_map in [m for m in ID_MAPS if m in set(part["id_map"])]:
                key = (model, keys["selector"], keys["perturbation"], keys["replacement"], setting, id_map)
                mean, std, n = stats.loc[key] if key in stats.index else (np.nan, np.nan, 0)
                row[NUMBERING_LABELS[id_map]] = format_mean_std(mean, std, n=n)
            if paper is not None:
                match = paper[(paper["model"] == model) & (paper["selector"] == keys["selector"])
                              & (paper["perturbation"] == keys["perturbation"])
                              & (paper["replacement"] == keys["replacement"]) & (paper["metric"] == "ao")]
                row["paper (whole file, 50 epochs)"] = f"{match['value'].iloc[0]:.4f}" if len(match) else "—"
            rows.append(row)
    return pd.DataFrame(rows).set_index(["Model", "Setting"])


CONTRASTS = (("fixed", "first_appearance_labels", "the authors' protocol, in all"),
             ("first_appearance", "first_appearance_labels", "the label-by-label comparison alone"),
             ("fixed", "first_appearance", "the per-run numbering's initial weights alone"))
"""(a, b, what a − b measures) of the numbering tests."""


def numbering_tests(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per contrast of :data:`CONTRASTS` with runs of both numberings, and per model
    (``models``: ``all`` pools the models, then each model alone): seed-paired AO differences a − b
    over every setting, their mean, how many are positive and negative, the one-sided p that a is
    higher (:func:`~recunlearn.report.claims.paired_p`: Wilcoxon signed-rank, a paired t-test for 4
    or fewer pairs) and the two-sided p."""
    from .claims import paired_differences, paired_p, testable

    done = numbering_part(runs)
    done = done[done["status"] == "computed"]
    rows = []
    for a, b, what in CONTRASTS:
        diff = paired_differences(done, "id_map", a, b, "ao", SETTING_KEYS)
        if diff.empty:
            continue
        groups = [("all", diff)] + [(display_name(m), diff[diff["model"] == m])
                                    for m in paper_sorted("model", diff["model"])]
        for models, part in groups if diff["model"].nunique() > 1 else groups[:1]:
            d = part["diff"].astype(float)
            higher, lower, test = paired_p(d)
            rows.append({"contrast (a − b)": f"{SHORT_LABELS[a]} − {SHORT_LABELS[b]}", "models": models,
                         "measures": what, "pairs": len(d), "mean difference (AO)": float(d.mean()),
                         "pairs above 0": int((d > 0).sum()), "pairs below 0": int((d < 0).sum()),
                         "p (one-sided, a higher)": higher if testable(len(d)) else np.nan,
                         "p (two-sided)": min(1.0, 2 * min(higher, lower)) if testable(len(d)) else np.nan,
                         "test used": test if testable(len(d)) else "none (1 pair)", "a": a, "b": b})
    return pd.DataFrame(rows)


def paired_ao(runs: pd.DataFrame, a: str = "fixed", b: str = "first_appearance_labels") -> pd.DataFrame:
    """AO of the computed runs of numberings ``a`` and ``b`` side by side (columns), one row per (model,
    setting, seed) where both exist: the runs every mean of the comparison is taken over, so that the
    two numberings' means cover the same settings and seeds."""
    done = numbering_part(runs)
    done = done[(done["status"] == "computed") & done["id_map"].isin([a, b])]
    if done.empty:
        return pd.DataFrame(columns=[a, b], index=pd.MultiIndex.from_tuples([], names=SETTING_KEYS + ["seed"]))
    table = done.pivot_table(index=SETTING_KEYS + ["seed"], columns="id_map", values="ao", aggfunc="mean")
    return table.reindex(columns=[a, b]).dropna()


def numbering_text(runs: pd.DataFrame, alpha: float = 0.05) -> str:
    """What the numbering comparison found, in one sentence for the page: the whole change the authors'
    protocol makes to AO with its test, and its relabelling part; ``pending`` without paired runs."""
    from .claims import format_p

    tests = numbering_tests(runs)
    if tests.empty:
        return "pending (no seed-paired runs of two numberings yet)"
    by = {(row["a"], row["b"]): row for _, row in tests[tests["models"] == "all"].iterrows()}
    part = []
    whole = by.get(("fixed", "first_appearance_labels"))
    if whole is not None:
        means = paired_ao(runs).mean()
        p = whole["p (one-sided, a higher)"]
        significant = pd.notna(p) and p < alpha
        part.append(f"compared label by label under the authors' numbering, AO is "
                    f"{means['first_appearance_labels']:.3f} on average instead of {means['fixed']:.3f} under one "
                    f"fixed numbering (lower in {whole['pairs above 0']} of {whole['pairs']} seed-paired runs, "
                    f"higher in {whole['pairs below 0']}; one-sided {whole['test used']}, {format_p(p)}: "
                    + ("a significant drop" if significant else "not a significant drop") + f" at α = {alpha:g})")
    relabel = by.get(("first_appearance", "first_appearance_labels"))
    if relabel is not None:
        part.append(f"on the same trained models, comparing label by label instead of mapping the lists back "
                    f"{_moves(-relabel['mean difference (AO)'])} ({relabel['test used']}, two-sided "
                    f"{format_p(relabel['p (two-sided)'])})")
    weights = by.get(("fixed", "first_appearance"))
    if weights is not None:
        part.append(f"the per-run numbering itself (lists mapped back) {_moves(-weights['mean difference (AO)'])} "
                    f"against one fixed numbering ({weights['test used']}, two-sided "
                    f"{format_p(weights['p (two-sided)'])})")
    text = "; ".join(part)
    return text[0].upper() + text[1:]


def numbering_gap_text(runs: pd.DataFrame, paper: pd.DataFrame) -> str:
    """How much of the distance between our AO and the paper's Table 3 value the authors' protocol
    covers, per model: the mean over the settings with seed-paired runs of both numberings (fixed,
    label by label; :func:`paired_ao`) and a paper value of our AO under each, the paper's mean, and
    the share of the gap closed (negative: the protocol moves AO away from the paper's). ``pending``
    without such settings. Orientation only: the paper's values are at full scale."""
    pairs = paired_ao(runs).reset_index()
    reference = paper[paper["metric"] == "ao"].rename(columns={"value": "paper"})
    texts = []
    for model in paper_sorted("model", pairs["model"]):
        settings = (pairs[pairs["model"] == model].groupby(SETTING_KEYS[1:])[["fixed", "first_appearance_labels"]]
                    .mean().reset_index())
        rows = settings.merge(reference[reference["model"] == model][SETTING_KEYS[1:] + ["paper"]],
                              on=SETTING_KEYS[1:])
        if rows.empty:
            continue
        fixed, labels, theirs = rows["fixed"].mean(), rows["first_appearance_labels"].mean(), rows["paper"].mean()
        gap = fixed - theirs
        share = f"{(fixed - labels) / gap:.0%} of the gap" if abs(gap) > 1e-9 else "no gap to close"
        texts.append(f"{display_name(model)} from {fixed:.3f} to {labels:.3f}, the paper's mean being {theirs:.3f} "
                     f"({share}, over {len(rows)} settings)")
    if not texts:
        return "pending (no setting with runs of both numberings yet)"
    return "the authors' protocol moves the mean AO of " + "; of ".join(texts)


def _moves(change: float) -> str:
    """``"lowers AO by 0.012 on average"`` / ``"raises ..."`` / ``"leaves AO unchanged on average"``."""
    amount = format_number(abs(change), 3)
    if amount == format_number(0.0, 3):
        return "leaves AO unchanged on average (to 3 decimals)"
    return f"{'lowers' if change < 0 else 'raises'} AO by {amount} on average"


def _paper_values(paper: pd.DataFrame, model: str) -> dict[str, float]:
    """The paper's AO of ``model`` by setting label (:func:`setting_label`), for the settings compared."""
    rows = paper[(paper["model"] == model) & (paper["metric"] == "ao")]
    found = {(s, p, r): v for s, p, r, v in zip(rows["selector"], rows["perturbation"], rows["replacement"],
                                                 rows["value"])}
    return {setting_label(*key): float(found[key]) for key in NUMBERING_SETTINGS if key in found}


def numbering_figure(runs: pd.DataFrame, title: str, paper: pd.DataFrame | None = None):
    """AO mean ± std over seeds by setting, one panel per model, one colour per numbering, and the
    paper's Table 3 value of each setting (``paper``, rows of ``casper-table-03``) as a diamond, for
    orientation; the value axis zoomed to the data (range in its label), the dotted line at 0.5 (AO of
    shuffled lists) where shown."""
    set_theme()
    part = numbering_part(runs)
    done = part[part["status"] == "computed"]
    models = paper_sorted("model", part["model"]) or list(NUMBERING_MODELS)
    fig, axes = plt.subplots(1, len(models), figsize=(PAGE_WIDTH_IN, 3.8), squeeze=False)
    axes = list(axes.ravel())
    id_maps = [m for m in ID_MAPS if m in set(part["id_map"])]
    colours = dict(zip(ID_MAPS, ("#4C72B0", "#55A868", "#C44E52")))
    slots = len(id_maps) + (paper is not None)  # one slot per numbering, the paper's value in the last
    for ax, model in zip(axes, models):
        ax.set_title(display_name(model))
        mine = done[done["model"] == model]
        settings = _settings_in_order(part[part["model"] == model])
        if mine.empty:
            ax.text(0.5, 0.5, "pending", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        values = []
        for j, id_map in enumerate(id_maps):
            stats = mine[mine["id_map"] == id_map].groupby("setting")["ao"].agg(["mean", "std"])
            values += dodged_points(ax, stats, settings, j, slots, color=colours[id_map],
                                    label=NUMBERING_LABELS[id_map])
        if paper is not None:
            reference = _paper_values(paper, model)
            shown = [(slot_position(settings.index(s), slots - 1, slots), reference[s]) for s in settings
                     if s in reference]
            if shown:
                ax.scatter(*zip(*shown), marker="D", color="#DD8452", zorder=3, label="paper (whole file, 50 epochs)")
                values += [v for _, v in shown]
        low, high = zoom_value_axis(ax, values)
        ax.set_xticks(range(len(settings)))
        ax.set_xticklabels([s.replace(" (", "\n(").replace("-Random", "-\nRandom").replace(", ", "\n")
                            for s in settings], fontsize=8)
        ax.set_xlim(-0.5, len(settings) - 0.5)
        ax.set_ylabel(f"{display_name('ao')}\n({range_text(low, high)})")
    fig.suptitle(title)
    fig.tight_layout()
    with_handles = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if with_handles:  # the numberings in their order, the paper's value last
        pairs = sorted(zip(*with_handles[0].get_legend_handles_labels()), key=lambda hl: hl[1].startswith("paper"))
        legend_below(fig, handles=[h for h, _ in pairs], labels=[label for _, label in pairs], ncol=1)
    return fig


def numbering_tests_view(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`numbering_tests` for display: one row per contrast and models, p-values written out."""
    from .claims import format_p

    tests = numbering_tests(runs)
    if tests.empty:
        return tests
    shown = tests.drop(columns=["a", "b"]).set_index(["contrast (a − b)", "models"])
    for column in ("p (one-sided, a higher)", "p (two-sided)"):
        shown[column] = [format_p(p) if pd.notna(p) else "—" for p in shown[column]]
    return shown.round({"mean difference (AO)": 4})
