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

import pandas as pd

from ..experiments.casper import ID_MAPS
from .casper_variants import SETTING_KEYS, Variant, change_text, paired_values, setting_label, ties_text, variant_tests
from .names import display_name, paper_sorted

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

CONTRASTS = (("fixed", "first_appearance_labels", "the authors' protocol, in all"),
             ("first_appearance", "first_appearance_labels", "the label-by-label comparison alone"),
             ("fixed", "first_appearance", "the per-run numbering's initial weights alone"))
"""(a, b, what a − b measures) of the numbering tests."""

NUMBERING = Variant(field="id_map", grid_option="id_maps", section="numbering", values=ID_MAPS, labels=NUMBERING_LABELS,
                    short_labels=SHORT_LABELS, settings=NUMBERING_SETTINGS, contrasts=CONTRASTS,
                    choice="JODIE's and LatentCross's items numbered by first appearance, separately in M and M'",
                    noun="numbering", title="AO under three item numberings", models=NUMBERING_MODELS)
"""The numbering comparison (:class:`~recunlearn.report.casper_variants.Variant`)."""

def numbering_text(runs: pd.DataFrame, alpha: float = 0.05) -> str:
    """What the numbering comparison found, in one sentence for the page: the whole change the authors'
    protocol makes to AO with its test, and its relabelling part; ``pending`` without paired runs."""
    from .significance import format_p

    tests = variant_tests(runs, NUMBERING)
    if tests.empty:
        return "pending (no seed-paired runs of two numberings yet)"
    by = {(row["a"], row["b"]): row for _, row in tests[tests["models"] == "all"].iterrows()}
    part = []
    whole = by.get(("fixed", "first_appearance_labels"))
    if whole is not None:
        means = paired_values(runs, NUMBERING, "fixed", "first_appearance_labels").mean()
        p = whole["p (one-sided, a higher)"]
        test = ("one pair is too few for a test" if pd.isna(p) else
                f"one-sided {whole['one-sided test']}, {format_p(p)}: "
                + ("a significant drop" if p < alpha else "not a significant drop") + f" at α = {alpha:g}")
        part.append(f"compared label by label under the authors' numbering, AO is "
                    f"{means['first_appearance_labels']:.3f} on average instead of {means['fixed']:.3f} under one "
                    f"fixed numbering (lower in {whole['pairs above 0']} of {whole['pairs']} seed-paired runs, "
                    f"higher in {whole['pairs below 0']}{ties_text(whole)}; {test})")
    relabel = by.get(("first_appearance", "first_appearance_labels"))
    if relabel is not None:
        part.append(f"on the same trained models, comparing label by label instead of mapping the lists back "
                    f"{change_text(-relabel['mean difference (AO)'])} ({_two_sided(relabel)})")
    weights = by.get(("fixed", "first_appearance"))
    if weights is not None:
        part.append("the per-run numbering itself (lists mapped back) "
                    f"{change_text(-weights['mean difference (AO)'])} "
                    f"against one fixed numbering ({_two_sided(weights)})")
    text = "; ".join(part)
    return text[0].upper() + text[1:]


def _two_sided(row: pd.Series) -> str:
    """``"paired t, two-sided p = 0.503"``; ``"one pair, no test"`` where there is no p."""
    from .significance import format_p

    p = row["p (two-sided)"]
    return "one pair, no test" if pd.isna(p) else f"{row['test used']}, two-sided {format_p(p)}"


def numbering_gap_text(runs: pd.DataFrame, paper: pd.DataFrame) -> str:
    """How much of the distance between our AO and the paper's Table 3 value the authors' protocol
    covers, per model: the mean over the settings with seed-paired runs of both numberings (fixed,
    label by label; :func:`~recunlearn.report.casper_variants.paired_values`) and a paper value of our
    AO under each, the paper's mean, the share of the gap closed (negative: the protocol moves AO away
    from the paper's) and the setting the protocol moves the most, with the paper's value there.
    ``pending`` without such settings. Orientation only: the paper's values are at full scale."""
    pairs = paired_values(runs, NUMBERING, "fixed", "first_appearance_labels").reset_index()
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
        most = rows.loc[(rows["fixed"] - rows["first_appearance_labels"]).abs().idxmax()]
        texts.append(f"{display_name(model)} from {fixed:.3f} to {labels:.3f}, the paper's mean being {theirs:.3f} "
                     f"({share}, over {len(rows)} settings), the most on "
                     f"{setting_label(most['selector'], most['perturbation'], most['replacement'])} (from "
                     f"{most['fixed']:.3f} to {most['first_appearance_labels']:.3f}, the paper's {most['paper']:.3f})")
    if not texts:
        return "pending (no setting with runs of both numberings yet)"
    return "the authors' protocol moves the mean AO of " + "; of ".join(texts)
