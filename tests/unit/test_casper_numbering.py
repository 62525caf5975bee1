"""The numbering comparison of the reduced-scale CASPER page (recunlearn.report.casper_numbering): which
runs it adds, that the page's other tables never read them, and its tests on made-up runs with known
answers, including ones where the authors' numbering changes nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recunlearn.experiments.casper import Collected
from recunlearn.report.casper import ReducedScaleGrid
from recunlearn.report.casper_numbering import NUMBERING, NUMBERING_SETTINGS, numbering_text
from recunlearn.report.casper_variants import (paired_values, variant_figure, variant_part, variant_table,
                                               variant_tests, with_protocol_columns)
from recunlearn.report.pages.casper_claims_reduced_scale_cpu import build

from casper_page_fakes import fake_collected, params

ALL = ("fixed", "first_appearance", "first_appearance_labels")


def grid(**changes) -> ReducedScaleGrid:
    values = dict(models=("lstm", "jodie", "latentcross"), selectors=("none", "random", "earliest", "casper"),
                  perturbations=("loo", "replace"), replacements=("random", "popular", "unpopular"), seeds=(0, 1, 2),
                  epochs=1, max_rows=2000, id_maps=ALL)
    return ReducedScaleGrid(**{**values, **changes})


def test_the_numbering_runs_are_jodie_and_latentcross_on_each_setting_under_each_authors_numbering():
    runs = grid().runs()
    extra = [c for c in runs if c.id_map != "fixed"]
    assert len(extra) == 2 * 3 * len(NUMBERING_SETTINGS) * 2
    assert {(c.selector, c.perturbation, c.replacement) for c in extra} == set(NUMBERING_SETTINGS)
    assert {c.model for c in extra} == {"jodie", "latentcross"} and {c.k for c in extra} == {1}
    fixed = {c for c in runs if c.id_map == "fixed"}  # every numbering run has its fixed-numbering partner
    assert all(c.replace(id_map="fixed") in fixed for c in extra)
    assert not [c for c in grid(id_maps=("fixed",)).runs() if c.id_map != "fixed"]
    assert not [c for c in grid(models=("lstm",)).runs() if c.id_map != "fixed"]
    # a setting whose selector or replacement the grid does not list is left out
    narrow = {(c.selector, c.replacement) for c in grid(replacements=("random",)).runs() if c.id_map != "fixed"}
    assert ("casper", "unpopular") not in narrow and ("casper", "random") in narrow


def made_up(g: ReducedScaleGrid, labels_drop: float, noise: float = 0.0) -> Collected:
    """Made-up runs of ``g`` (:func:`fake_collected`), with the label-by-label runs' AO ``labels_drop`` below
    their fixed-numbering partners', plus seeded noise of size ``noise`` on every numbering run."""
    collected = with_protocol_columns(fake_collected(g), g.runs())
    runs = collected.runs.copy()
    rng = np.random.default_rng(0)
    renumbered = runs["id_map"] != "fixed"
    runs.loc[renumbered, "ao"] += noise * rng.standard_normal(int(renumbered.sum()))
    runs.loc[runs["id_map"] == "first_appearance_labels", "ao"] -= labels_drop
    return Collected(runs, collected.pending)


def test_a_drop_under_the_label_by_label_comparison_is_found_and_attributed_to_the_relabelling():
    runs = made_up(grid(), labels_drop=0.1).runs
    every = variant_tests(runs, NUMBERING)
    assert list(every["models"].unique()) == ["all", "JODIE", "LatentCross"]  # pooled, then each model alone
    assert every.groupby("models")["pairs"].first().to_dict() == {"all": 30, "JODIE": 15, "LatentCross": 15}
    tests = every[every["models"] == "all"].set_index(["a", "b"])
    whole = tests.loc[("fixed", "first_appearance_labels")]
    assert whole["pairs"] == 2 * 3 * len(NUMBERING_SETTINGS) and whole["pairs below 0"] == 0
    assert np.isclose(whole["mean difference (AO)"], 0.1) and whole["p (one-sided, a higher)"] < 0.001
    assert np.isclose(tests.loc[("first_appearance", "first_appearance_labels"), "mean difference (AO)"], 0.1)
    assert np.isclose(tests.loc[("fixed", "first_appearance"), "mean difference (AO)"], 0.0)
    text = numbering_text(runs)
    assert "lower in 30 of 30 seed-paired runs, higher in 0" in text and "a significant drop" in text
    assert "lowers AO by 0.100" in text
    assert "leaves AO unchanged on average" in text  # the mapped-back lists: the same AO as ours


def test_the_numbering_test_can_fail_no_drop_within_noise_is_not_significant():
    runs = made_up(grid(), labels_drop=0.0, noise=0.01).runs
    tests = variant_tests(runs, NUMBERING)
    whole = tests[tests["models"] == "all"].set_index(["a", "b"]).loc[("fixed", "first_appearance_labels")]
    assert whole["p (one-sided, a higher)"] > 0.05
    assert "not a significant drop" in numbering_text(runs)


def test_the_table_shows_each_numbering_and_the_paper_value_and_pending_cells_without_runs():
    from recunlearn.report.paper import paper_table

    collected = made_up(grid(), labels_drop=0.1)
    table = variant_table(collected.runs, NUMBERING, paper_table("casper-table-03"))
    assert list(table.index.get_level_values(0).unique()) == ["JODIE", "LatentCross"]
    assert len(table) == 2 * len(NUMBERING_SETTINGS)
    row = table.loc[("LatentCross", "CASPER (unpopular), replacement")]
    assert row.iloc[0].startswith("0.82") and row.iloc[2].startswith("0.72") and row.iloc[3] == "0.5193"
    waiting = collected.runs.assign(status=np.where(collected.runs["id_map"] == "fixed", "computed", "not run"))
    assert (variant_table(waiting, NUMBERING).iloc[:, 1:] == "pending").all().all()
    assert numbering_text(waiting).startswith("pending")
    from recunlearn.report.casper_numbering import numbering_gap_text
    assert numbering_gap_text(waiting, paper_table("casper-table-03")).startswith("pending")


def test_the_pages_other_tables_and_claims_never_read_the_numbering_runs(monkeypatch):
    values = params("claims-reduced-scale-cpu", SEEDS=[0, 1, 2], MODELS=["lstm", "jodie", "latentcross"])
    g = ReducedScaleGrid(**{k.lower(): v for k, v in values.items()})
    with_numbering = build(collected=made_up(g, labels_drop=0.3), **values)
    without = build(collected=made_up(g.replace(id_maps=("fixed",)), labels_drop=0.0),
                    **{**values, "ID_MAPS": ["fixed"]})
    for name in ("table_3a", "rbo", "jaccard", "groups", "k_sweep"):
        pd.testing.assert_frame_equal(with_numbering.tables[name], without.tables[name])
    pd.testing.assert_frame_equal(with_numbering.claims, without.claims)
    assert with_numbering.texts()["ao_range"] == without.texts()["ao_range"]
    assert len(variant_part(with_numbering.runs, NUMBERING)) == 2 * 3 * len(NUMBERING_SETTINGS) * 3


def test_the_share_of_the_gap_to_the_paper_that_the_protocol_closes():
    from recunlearn.report.casper_numbering import numbering_gap_text

    runs = made_up(grid(), labels_drop=0.1).runs
    part = variant_part(runs, NUMBERING)
    settings = part[["selector", "perturbation", "replacement"]].drop_duplicates()
    # a made-up paper 0.2 below our fixed-numbering AO in every setting: the drop of 0.1 closes half the gap
    fixed = part[(part["id_map"] == "fixed")].groupby(["model", "selector", "perturbation", "replacement"])["ao"].mean()
    paper = pd.DataFrame([{"model": m, "selector": s, "perturbation": p, "replacement": r, "metric": "ao",
                           "value": fixed[(m, s, p, r)] - 0.2}
                          for m in ("jodie", "latentcross") for s, p, r in settings.itertuples(index=False)])
    text = numbering_gap_text(runs, paper)
    assert text.count("(50% of the gap, over 5 settings)") == 2 and text.startswith("the authors' protocol moves")
    # the protocol moving AO away from the paper's reads as a negative share
    assert "(-50% of the gap" in numbering_gap_text(made_up(grid(), labels_drop=-0.1).runs, paper)
    assert numbering_gap_text(runs, paper.iloc[:0]).startswith("pending")
    # the setting the protocol moves the most is named, with the paper's value there
    casper = (runs["id_map"] == "first_appearance_labels") & (runs["selector"] == "casper") & (
        runs["perturbation"] == "loo")
    deeper = runs.assign(ao=runs["ao"] - 0.2 * casper)
    text = numbering_gap_text(deeper, paper)
    row = fixed[("latentcross", "casper", "loo", "random")]
    assert (f"the most on CASPER, LOO (from {row:.3f} to {row - 0.3:.3f}, the paper's {row - 0.2:.3f})"
            in text), text


def test_table_3_reads_its_numbering_runs_only_in_the_numbering_section(monkeypatch):
    """The Table 3 page's table, tests and claims are those of its fixed-numbering runs; its paper-profile
    grid adds JODIE's and LatentCross's runs under the two other numberings (deletion by Random,
    Earliest-Random and CASPER, CASPER's replacement by a random and the least popular item)."""
    import yaml

    from recunlearn import paths
    from recunlearn.report.casper import ProtocolGrid
    from recunlearn.report.pages import validated

    paper = yaml.safe_load((paths.REPO_ROOT / "notebooks/params/casper/table-03-perturbation-methods.paper.yml")
                           .read_text())
    runs = validated(ProtocolGrid, paper).runs()
    extra = [c for c in runs if c.id_map != "fixed"]
    assert len(extra) == 2 * 3 * len(NUMBERING_SETTINGS) * 2 and {c.epochs for c in extra} == {50}
    assert {c.max_rows for c in extra} == {None}


def test_each_run_and_each_pending_run_gets_its_own_numbering():
    """``with_protocol_columns`` labels the runs in the grid's order and the pending runs in theirs, so a pending
    run of the label-by-label numbering is never counted as a fixed-numbering one."""
    g = grid(models=("latentcross",), seeds=(0,))
    configs = g.runs()
    made = fake_collected(g, pending={})
    waiting = [i for i, c in enumerate(configs) if c.id_map == "first_appearance_labels"]
    runs = made.runs.copy()
    runs.loc[waiting, "status"] = "not run"
    pending = pd.DataFrame([{"key": str(i), "reason": "not run"} for i in waiting])
    labelled = with_protocol_columns(Collected(runs, pending), configs)
    assert list(labelled.runs["id_map"]) == [c.id_map for c in configs]
    assert set(labelled.pending["id_map"]) == {"first_appearance_labels"}
    assert with_protocol_columns(labelled, configs) is labelled  # a frame that has the column keeps it
    import pytest
    with pytest.raises(ValueError, match="one row per config"):  # runs that are not the grid's, row by row
        with_protocol_columns(Collected(runs.iloc[1:], pending), configs)


def test_the_means_compared_cover_the_same_runs_under_both_numberings():
    """A fixed-numbering run without a label-by-label partner (or the reverse) is left out of the means the
    sentences compare, so unequal coverage cannot pass for an effect of the numbering."""
    runs = made_up(grid(), labels_drop=0.1).runs
    # the fixed run of one (model, setting, seed) has no label-by-label partner: its AO must not count
    lonely = runs.index[(runs["id_map"] == "first_appearance_labels") & (runs["model"] == "jodie")
                        & (runs["selector"] == "random") & (runs["seed"] == 0)]
    runs.loc[lonely, "status"] = "not run"
    fixed_alone = runs.index[(runs["id_map"] == "fixed") & (runs["model"] == "jodie") & (runs["selector"] == "random")
                             & (runs["perturbation"] == "loo") & (runs["seed"] == 0)]
    runs.loc[fixed_alone, "ao"] = 0.0
    pairs = paired_values(runs, NUMBERING, "fixed", "first_appearance_labels")
    assert len(pairs) == 2 * 3 * len(NUMBERING_SETTINGS) - 1 and (pairs["fixed"] > 0.5).all()
    assert np.isclose((pairs["fixed"] - pairs["first_appearance_labels"]).mean(), 0.1)
    assert "instead of 0.0" not in numbering_text(runs)


def test_the_figure_has_a_panel_per_model_a_series_per_numbering_and_the_papers_values():
    import matplotlib

    matplotlib.use("Agg")
    from recunlearn.report.paper import paper_table

    figure = variant_figure(made_up(grid(), labels_drop=0.1).runs, NUMBERING, "made up",
                            paper_table("casper-table-03"))
    panels = [ax for ax in figure.axes if ax.get_visible() and ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["JODIE", "LatentCross"]
    assert [len(ax.get_xticks()) for ax in panels] == [len(NUMBERING_SETTINGS)] * 2
    labels = [t.get_text() for t in figure.legends[0].get_texts()]
    assert len(labels) == 4 and labels[-1].startswith("paper")


def test_every_protocol_field_has_one_comparison_and_each_grid_shows_the_sections_it_lists():
    """The fields every other table holds at their defaults are exactly the comparisons' fields, and a
    page shows a section for each comparison its grid takes a parameter for (none it cannot show)."""
    from recunlearn.report.casper import ProtocolGrid
    from recunlearn.report.casper_variants import PROTOCOL_DEFAULTS, PROTOCOL_FIELDS, grid_variants, protocol_variants

    variants = protocol_variants()
    assert [v.field for v in variants] == list(PROTOCOL_FIELDS) == list(PROTOCOL_DEFAULTS)
    assert all(PROTOCOL_DEFAULTS[v.field] == v.default for v in variants)
    assert [v.section for v in grid_variants(ProtocolGrid())] == ["numbering", "test_protocol", "latentcross_cell"]
    assert [v.section for v in grid_variants(grid())] == ["numbering", "test_protocol", "lstm_embeddings",
                                                          "latentcross_cell"]
