"""Protocol variants of CASPER's runs, each compared seed by seed with the runs
every other table of a page reads.

A *protocol field* is a config field whose values other than its default a page trains only for the
comparison in a section of its own (:class:`Variant`): the item numbering (``id_map``,
:mod:`~recunlearn.report.casper_numbering`), the test pass's optimiser steps (``test_updates``,
:mod:`~recunlearn.report.casper_test_protocol`), the LSTM's item embeddings (``lstm_embeddings``,
:mod:`~recunlearn.report.casper_lstm_embeddings`) and LatentCross's recurrent cell (``latentcross_cell``,
:mod:`~recunlearn.report.casper_latentcross_cell`). Every other table and claim reads the runs with
every protocol field at its default (:func:`at_defaults`); a comparison reads the runs of its own
field's values with the other fields at their defaults (:func:`variant_part`), paired by model,
setting and seed.
"""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..experiments.casper import CasperConfig, Collected
from .casper import dodged_points, method_label, range_text, slot_position, zoom_value_axis
from .compare import format_mean_std
from .names import display_name, format_number, paper_sorted
from .plots import PAGE_WIDTH_IN, legend_below, set_theme

PROTOCOL_FIELDS = ("id_map", "test_updates", "lstm_embeddings", "latentcross_cell")
"""The config fields whose non-default values only a variant comparison reads."""

PROTOCOL_DEFAULTS = {f.name: f.default for f in dataclasses.fields(CasperConfig) if f.name in PROTOCOL_FIELDS}
"""Each protocol field's default: the value of the runs every other table reads."""

SETTING_KEYS = ["model", "selector", "perturbation", "replacement"]


def protocol_variants() -> tuple["Variant", ...]:
    """Every comparison a page grid can list (one per protocol field), in the order pages show them."""
    from .casper_latentcross_cell import LATENTCROSS_CELL
    from .casper_lstm_embeddings import LSTM_EMBEDDING
    from .casper_numbering import NUMBERING
    from .casper_test_protocol import TEST_PROTOCOL

    return NUMBERING, TEST_PROTOCOL, LSTM_EMBEDDING, LATENTCROSS_CELL


def grid_variants(grid) -> list["Variant"]:
    """The comparisons ``grid`` lists: those whose option (``grid_option``) it has."""
    return [variant for variant in protocol_variants() if hasattr(grid, variant.grid_option)]


@dataclasses.dataclass(frozen=True)
class Variant:
    """One comparison, shown in a page section named ``section``: the runs of ``field``'s ``values`` (the
    default first) for ``models`` on ``settings`` ((selector, perturbation, replacement), one perturbed
    interaction), listed by the page grid's option ``grid_option``; ``labels`` / ``short_labels`` name each
    value in tables and legends / in the tests' contrasts; ``contrasts``: (a, b, what a − b measures) of the
    paired tests; ``choice``: the authors' choice the comparison measures, as the scoreboard names it;
    ``noun``: the comparison in the page's notices ("The <noun> comparison"); ``title``: its figure's title
    (after the page's scale); ``phrases``: each value in a sentence ("with ..."; :func:`two_way_text`);
    ``colours``: one per value."""

    field: str
    grid_option: str
    section: str
    values: tuple[str, ...]
    labels: dict
    short_labels: dict
    settings: tuple[tuple[str, str, str], ...]
    contrasts: tuple[tuple[str, str, str], ...]
    choice: str
    noun: str
    title: str
    models: tuple[str, ...] = ("jodie", "latentcross")
    phrases: dict | None = None
    colours: tuple[str, ...] = ("#4C72B0", "#55A868", "#C44E52")

    @property
    def default(self) -> str:
        return self.values[0]


def variant_runs(grid, variant: Variant) -> list[CasperConfig]:
    """The runs ``grid`` adds for ``variant``: for each value of the grid's ``variant.grid_option`` but
    the default (whose runs are the grid's own), every model of ``variant.models`` in ``grid.models``,
    every seed, every setting whose selector, perturbation and replacement the grid lists; one
    perturbed interaction; every other protocol field at its default."""
    settings = [(s, p, r) for s, p, r in variant.settings
                if s in grid.selectors and p in grid.perturbations and (p == "loo" or r in grid.replacements)]
    return [CasperConfig(dataset=dataset, model=model, selector=s, perturbation=p, replacement=r, k=1, seed=seed,
                         epochs=grid.epochs, max_rows=grid.max_rows, device=grid.device, **{variant.field: value})
            for value in getattr(grid, variant.grid_option) if value != variant.default
            for dataset in grid.datasets for model in grid.models if model in variant.models
            for seed in grid.seeds for s, p, r in settings]


def with_protocol_columns(collected: Collected, configs: list[CasperConfig]) -> Collected:
    """``collected`` with a column per protocol field (:data:`PROTOCOL_FIELDS`: the run's value) in its
    runs and pending frames. The runs of a grid are one row per config, in the grid's order
    (``configs``), and the pending ones keep that order; columns a frame has are kept as they are."""
    runs, pending = collected.runs, collected.pending
    missing = [name for name in PROTOCOL_FIELDS if name not in runs]
    if not missing:
        return collected
    waiting = runs["status"] != "computed"
    if len(runs) != len(configs) or int(waiting.sum()) != len(pending):
        raise ValueError(f"{len(runs)} runs ({int(waiting.sum())} pending) for {len(configs)} configs and "
                         f"{len(pending)} pending rows: the runs must be one row per config, in the grid's order")
    for name in missing:
        values = pd.Series([getattr(c, name) for c in configs], index=runs.index)
        runs, pending = runs.assign(**{name: values}), pending.assign(**{name: values[waiting].to_numpy()})
    return Collected(runs, pending)


def at_defaults(runs: pd.DataFrame, but: str | None = None) -> pd.DataFrame:
    """The rows of ``runs`` with every protocol field (that the frame has) at its default, but ``but``."""
    keep = pd.Series(True, index=runs.index)
    for name, default in PROTOCOL_DEFAULTS.items():
        if name != but and name in runs:
            keep &= runs[name] == default
    return runs[keep]


def setting_label(selector: str, perturbation: str, replacement: str) -> str:
    """``"CASPER (unpopular), replacement"``: the paper's row name and the perturbation."""
    return f"{method_label(selector, perturbation, replacement)}, {display_name(perturbation)}"


def variant_part(runs: pd.DataFrame, variant: Variant) -> pd.DataFrame:
    """The runs (computed or pending) of ``variant``'s comparison, every value of its field, with a
    ``setting`` column (:func:`setting_label`)."""
    if variant.field not in runs or runs.empty:
        return runs.iloc[:0].assign(setting=pd.Series(dtype=object))
    runs = at_defaults(runs, but=variant.field)
    chosen = pd.Series(list(zip(runs["selector"], runs["perturbation"], runs["replacement"])),
                       index=runs.index).isin(variant.settings)
    part = runs[runs["model"].isin(variant.models) & chosen & (runs["k"] == 1)]
    return part.assign(setting=[setting_label(s, p, r) for s, p, r in
                                zip(part["selector"], part["perturbation"], part["replacement"])])


def ties_text(row) -> str:
    """``", 7 tied"``: the seed pairs of a test row that moved neither way; "" when there are none."""
    tied = int(row["pairs"]) - int(row["pairs above 0"]) - int(row["pairs below 0"])
    return f", {tied} tied" if tied else ""


def models_scope(runs: pd.DataFrame, variant: Variant) -> str:
    """Which of the comparison's models its findings cover so far, for the start of its sentence:
    ``"LatentCross only so far (JODIE's runs pending)"`` when some model of the comparison in ``runs``
    has no computed run of a value other than the default; "" when every model has (or none)."""
    part = variant_part(runs, variant)
    if part.empty:
        return ""
    listed = paper_sorted("model", part["model"].unique())
    done = part[(part["status"] == "computed") & (part[variant.field] != variant.default)]
    covered = [m for m in listed if m in set(done["model"])]
    if not covered or len(covered) == len(listed):
        return ""
    missing = [display_name(m) for m in listed if m not in covered]
    return (f"{' and '.join(display_name(m) for m in covered)} only so far ({' and '.join(missing)}'s "
            f"runs pending)")


def settings_in_order(part: pd.DataFrame, variant: Variant) -> list[str]:
    """The setting labels ``part`` has, in ``variant.settings``' order."""
    present = set(part["setting"])
    return [setting_label(*s) for s in variant.settings if setting_label(*s) in present]


def variant_table(runs: pd.DataFrame, variant: Variant, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """AO (mean ± std over seeds) of each (model, setting) under each value that has runs, and the
    paper's Table 3 value (``paper``: rows of ``casper-table-03``; full scale, for orientation)."""
    part = variant_part(runs, variant)
    if part.empty:
        return pd.DataFrame()
    done = part[part["status"] == "computed"]
    stats = done.groupby(SETTING_KEYS + ["setting", variant.field])["ao"].agg(["mean", "std", "count"])
    rows = []
    for model in paper_sorted("model", part["model"]):
        for setting in settings_in_order(part[part["model"] == model], variant):
            keys = part[(part["model"] == model) & (part["setting"] == setting)].iloc[0]
            row = {"Model": display_name(model), "Setting": setting}
            for value in [v for v in variant.values if v in set(part[variant.field])]:
                key = (model, keys["selector"], keys["perturbation"], keys["replacement"], setting, value)
                mean, std, n = stats.loc[key] if key in stats.index else (np.nan, np.nan, 0)
                row[variant.labels[value]] = format_mean_std(mean, std, n=n)
            if paper is not None:
                match = paper[(paper["model"] == model) & (paper["selector"] == keys["selector"])
                              & (paper["perturbation"] == keys["perturbation"])
                              & (paper["replacement"] == keys["replacement"]) & (paper["metric"] == "ao")]
                row["paper (whole file, 50 epochs)"] = f"{match['value'].iloc[0]:.4f}" if len(match) else "—"
            rows.append(row)
    return pd.DataFrame(rows).set_index(["Model", "Setting"])


def variant_tests(runs: pd.DataFrame, variant: Variant) -> pd.DataFrame:
    """One row per contrast of ``variant.contrasts`` with runs of both values, and per model
    (``models``: ``all`` pools the models, then each model alone): seed-paired AO differences a − b
    over every setting, their mean, how many are positive and negative, the one-sided p that a is
    higher (:func:`~recunlearn.report.significance.paired_p`, its test in ``one-sided test``) and the two-sided p
    (:func:`~recunlearn.report.significance.paired_two_sided`, its test in ``test used``: Wilcoxon signed-rank,
    a paired t-test where the doubled p could not reach the level, 5 pairs or fewer at 0.05)."""
    from .claims import paired_differences
    from .significance import ONE_PAIR, paired_p, paired_two_sided, testable

    done = variant_part(runs, variant)
    done = done[done["status"] == "computed"]
    rows = []
    for a, b, what in variant.contrasts:
        diff = paired_differences(done, variant.field, a, b, "ao", SETTING_KEYS)
        if diff.empty:
            continue
        groups = [("all", diff)] + [(display_name(m), diff[diff["model"] == m])
                                    for m in paper_sorted("model", diff["model"])]
        for models, part in groups if diff["model"].nunique() > 1 else groups[:1]:
            d = part["diff"].astype(float)
            higher, _, one_sided = paired_p(d)  # judged at alpha (the numbering's drop)
            two_sided, test = paired_two_sided(d)  # its own test: the doubled p must reach alpha
            tested = testable(len(d))
            rows.append({"contrast (a − b)": f"{variant.short_labels[a]} − {variant.short_labels[b]}",
                         "models": models, "measures": what, "pairs": len(d), "mean difference (AO)": float(d.mean()),
                         "pairs above 0": int((d > 0).sum()), "pairs below 0": int((d < 0).sum()),
                         "p (one-sided, a higher)": higher if tested else np.nan,
                         "one-sided test": one_sided if tested else ONE_PAIR,
                         "p (two-sided)": two_sided, "test used": test, "a": a, "b": b})
    return pd.DataFrame(rows)


def variant_tests_view(runs: pd.DataFrame, variant: Variant) -> pd.DataFrame:
    """:func:`variant_tests` for display: one row per contrast and models, p-values written out."""
    from .significance import format_p

    tests = variant_tests(runs, variant)
    if tests.empty:
        return tests
    shown = tests.drop(columns=["a", "b"]).set_index(["contrast (a − b)", "models"])
    for column in ("p (one-sided, a higher)", "p (two-sided)"):
        shown[column] = [format_p(p) if pd.notna(p) else "—" for p in shown[column]]
    shown["mean difference (AO)"] = shown["mean difference (AO)"].round(4) + 0.0  # + 0.0: no "-0.0000"
    return shown


def paired_values(runs: pd.DataFrame, variant: Variant, a: str, b: str, metric: str = "ao") -> pd.DataFrame:
    """``metric`` of the computed runs of values ``a`` and ``b`` side by side (columns), one row per
    (model, setting, seed) where both exist: the runs every mean of the comparison is taken over, so
    that the two values' means cover the same settings and seeds."""
    done = variant_part(runs, variant)
    done = done[(done["status"] == "computed") & done[variant.field].isin([a, b])] if len(done) else done
    if done.empty:
        return pd.DataFrame(columns=[a, b], index=pd.MultiIndex.from_tuples([], names=SETTING_KEYS + ["seed"]))
    table = done.pivot_table(index=SETTING_KEYS + ["seed"], columns=variant.field, values=metric, aggfunc="mean")
    return table.reindex(columns=[a, b]).dropna()


def paper_values(paper: pd.DataFrame, model: str, variant: Variant) -> dict[str, float]:
    """The paper's AO of ``model`` by setting label (:func:`setting_label`), for ``variant``'s settings."""
    rows = paper[(paper["model"] == model) & (paper["metric"] == "ao")]
    found = {(s, p, r): v for s, p, r, v in zip(rows["selector"], rows["perturbation"], rows["replacement"],
                                                 rows["value"])}
    return {setting_label(*key): float(found[key]) for key in variant.settings if key in found}


def variant_figure(runs: pd.DataFrame, variant: Variant, title: str, paper: pd.DataFrame | None = None):
    """AO mean ± std over seeds by setting, one panel per model, one colour per value of the variant's
    field, and the paper's Table 3 value of each setting (``paper``, rows of ``casper-table-03``) as a
    diamond, for orientation; the value axis zoomed to the data (range in its label), the dotted line
    at 0.5 (AO of shuffled lists) where shown."""
    set_theme()
    part = variant_part(runs, variant)
    done = part[part["status"] == "computed"]
    models = paper_sorted("model", part["model"]) or list(variant.models)
    fig, axes = plt.subplots(1, len(models), figsize=(PAGE_WIDTH_IN, 3.8), squeeze=False)
    axes = list(axes.ravel())
    values = [v for v in variant.values if v in set(part[variant.field])] if len(part) else []
    colours = dict(zip(variant.values, variant.colours))
    slots = len(values) + (paper is not None)  # one slot per value, the paper's value in the last
    for ax, model in zip(axes, models):
        ax.set_title(display_name(model))
        mine = done[done["model"] == model]
        settings = settings_in_order(part[part["model"] == model], variant)
        if mine.empty:
            ax.text(0.5, 0.5, "pending", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        shown_values = []
        for j, value in enumerate(values):
            stats = mine[mine[variant.field] == value].groupby("setting")["ao"].agg(["mean", "std"])
            shown_values += dodged_points(ax, stats, settings, j, slots, color=colours[value],
                                          label=variant.labels[value])
        if paper is not None:
            reference = paper_values(paper, model, variant)
            shown = [(slot_position(settings.index(s), slots - 1, slots), reference[s]) for s in settings
                     if s in reference]
            if shown:
                ax.scatter(*zip(*shown), marker="D", color="#DD8452", zorder=3, label="paper (whole file, 50 epochs)")
                shown_values += [v for _, v in shown]
        low, high = zoom_value_axis(ax, shown_values)
        ax.set_xticks(range(len(settings)))
        ax.set_xticklabels([s.replace(" (", "\n(").replace("-Random", "-\nRandom").replace(", ", "\n")
                            for s in settings], fontsize=8)
        ax.set_xlim(-0.5, len(settings) - 0.5)
        ax.set_ylabel(f"{display_name('ao')}\n({range_text(low, high)})")
    fig.suptitle(title)
    fig.tight_layout()
    with_handles = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if with_handles:  # the values in their order, the paper's value last
        pairs = sorted(zip(*with_handles[0].get_legend_handles_labels()), key=lambda hl: hl[1].startswith("paper"))
        legend_below(fig, handles=[h for h, _ in pairs], labels=[label for _, label in pairs], ncol=1)
    return fig


def change_text(change: float) -> str:
    """``"lowers AO by 0.012 on average"`` / ``"raises ..."`` / ``"leaves AO unchanged on average"``."""
    amount = format_number(abs(change), 3)
    if amount == format_number(0.0, 3):
        return "leaves AO unchanged on average (to 3 decimals)"
    return f"{'lowers' if change < 0 else 'raises'} AO by {amount} on average"


def variant_text(runs: pd.DataFrame, variant: Variant, alpha: float = 0.05) -> str:
    """What a comparison of two values found, in one sentence for its page: :func:`two_way_text` of its
    one contrast (a − b)."""
    if len(variant.values) != 2:
        raise ValueError(f"{variant.section}: {len(variant.values)} values; its module writes its own sentence")
    a, b, _ = variant.contrasts[0]
    return two_way_text(runs, variant, a, b, alpha)


def two_way_text(runs: pd.DataFrame, variant: Variant, a: str, b: str, alpha: float = 0.05) -> str:
    """What the comparison of values ``a`` and ``b`` found, in one sentence for a page: the mean AO of
    each over the seed-paired runs, how many pairs moved which way, the two-sided test of a − b
    (:func:`variant_tests`), and the original model's MRR under each; ``pending`` without paired runs."""
    from .significance import difference_text

    tests = variant_tests(runs, variant)
    tests = tests[(tests["a"] == a) & (tests["b"] == b)] if len(tests) else tests
    if tests.empty:
        return f"pending (no seed-paired runs of {variant.short_labels[a]} and {variant.short_labels[b]} yet)"
    row = tests[tests["models"] == "all"].iloc[0]
    means = paired_values(runs, variant, a, b).mean()
    mrr = paired_values(runs, variant, a, b, "mrr_original").mean()
    phrase = variant.phrases or variant.labels
    test = difference_text(row["p (two-sided)"], row["test used"], alpha)
    return (f"with {phrase[b]}, AO is {means[b]:.3f} on average against {means[a]:.3f} with {phrase[a]} "
            f"({variant.short_labels[a]} higher in {row['pairs above 0']} of {row['pairs']} seed-paired runs, lower "
            f"in {row['pairs below 0']}{ties_text(row)}; {test}); the original model's MRR is {mrr[a]:.3f} with "
            f"{phrase[a]} and "
            f"{mrr[b]:.3f} with {phrase[b]}")
