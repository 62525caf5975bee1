"""The test-protocol comparison of the CASPER pages (recunlearn.report.casper_test_protocol): which runs it
adds, that no other table or comparison of a page reads them, and its test on made-up runs with known
answers, including one where freezing the parameters changes nothing."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recunlearn.experiments.casper import Collected
from recunlearn.report.casper import ReducedScaleGrid
from recunlearn.report.casper_numbering import NUMBERING
from recunlearn.report.casper_test_protocol import TEST_PROTOCOL, frozen_test_scope
from recunlearn.report.casper_variants import (PROTOCOL_DEFAULTS, at_defaults, variant_part, variant_table,
                                               variant_tests, variant_tests_view, variant_text,
                                               with_protocol_columns)
from recunlearn.report.pages.casper_claims_reduced_scale_cpu import build

from casper_page_fakes import fake_collected, params

SETTINGS = TEST_PROTOCOL.settings


def grid(**changes) -> ReducedScaleGrid:
    values = dict(models=("lstm", "jodie", "latentcross"), selectors=("none", "random", "earliest", "casper"),
                  perturbations=("loo", "replace"), replacements=("random", "unpopular"), seeds=(0, 1, 2),
                  epochs=1, max_rows=2000, id_maps=("fixed", "first_appearance_labels"),
                  test_updates=("online", "frozen"))
    return ReducedScaleGrid(**{**values, **changes})


def made_up(g: ReducedScaleGrid, frozen_change: float, noise: float = 0.0, n_test: int | None = None) -> Collected:
    """Made-up runs of ``g``: the frozen runs' AO ``frozen_change`` above their online partners' plus
    seeded noise of size ``noise``, their original model's MRR 0.1 instead of 0.2; ``n_test`` test rows."""
    collected = with_protocol_columns(fake_collected(g), g.runs())
    runs = collected.runs.copy()
    frozen = runs["test_updates"] == "frozen"
    rng = np.random.default_rng(0)
    runs.loc[frozen, "ao"] += frozen_change + noise * rng.standard_normal(int(frozen.sum()))
    runs.loc[frozen, "mrr_original"] = 0.1
    if n_test is not None:
        runs["n_test"] = n_test
    return Collected(runs, collected.pending)


def test_the_frozen_runs_are_jodie_and_latentcross_deletions_each_with_its_online_partner():
    runs = grid().runs()
    frozen = [c for c in runs if c.test_updates == "frozen"]
    assert len(frozen) == 2 * 3 * len(SETTINGS)
    assert {(c.selector, c.perturbation, c.replacement) for c in frozen} == set(SETTINGS)
    assert {c.model for c in frozen} == {"jodie", "latentcross"} and {c.id_map for c in frozen} == {"fixed"}
    assert all(c.replace(test_updates="online") in set(runs) for c in frozen)
    assert not [c for c in grid(test_updates=("online",)).runs() if c.test_updates != "online"]
    assert not [c for c in grid(models=("lstm",)).runs() if c.test_updates != "online"]
    # a selector the grid does not list is left out
    assert {c.selector for c in grid(selectors=("none", "casper")).runs() if c.test_updates == "frozen"} == {"casper"}


def test_a_change_under_frozen_parameters_is_found_and_its_direction_named():
    runs = made_up(grid(), frozen_change=0.05).runs
    tests = variant_tests(runs, TEST_PROTOCOL)
    assert list(tests["models"]) == ["all", "JODIE", "LatentCross"]
    pooled = tests.iloc[0]
    assert pooled["pairs"] == 2 * 3 * len(SETTINGS) and pooled["pairs below 0"] == pooled["pairs"]
    assert np.isclose(pooled["mean difference (AO)"], -0.05) and pooled["p (two-sided)"] < 0.001
    text = variant_text(runs, TEST_PROTOCOL)
    assert "online higher in 0 of 18 seed-paired runs, lower in 18" in text and "a significant difference" in text
    assert "MRR is 0.200 with the online steps and 0.100 with the parameters frozen at test" in text
    table = variant_table(runs, TEST_PROTOCOL)
    assert list(table.columns) == [TEST_PROTOCOL.labels["online"], TEST_PROTOCOL.labels["frozen"]]
    assert len(table) == 2 * len(SETTINGS)


def test_the_comparison_can_find_nothing_no_change_within_noise_is_not_significant():
    runs = made_up(grid(), frozen_change=0.0, noise=0.01).runs
    assert variant_tests(runs, TEST_PROTOCOL).iloc[0]["p (two-sided)"] > 0.05
    assert "no significant difference" in variant_text(runs, TEST_PROTOCOL)
    tiny = variant_tests_view(made_up(grid(), frozen_change=1e-6).runs, TEST_PROTOCOL)
    assert str(tiny["mean difference (AO)"].iloc[0]) == "0.0"  # a difference below the shown digits has no sign
    waiting = runs.assign(status=np.where(runs["test_updates"] == "frozen", "not run", "computed"))
    assert variant_text(waiting, TEST_PROTOCOL).startswith("pending")
    assert (variant_table(waiting, TEST_PROTOCOL).iloc[:, 1] == "pending").all()


def test_the_scope_names_the_test_rows_after_the_first_window():
    assert frozen_test_scope(made_up(grid(), 0.0, n_test=1694).runs) == (
        "of the 1,694 test rows of each run, the first 1,024 are scored before any step, so the two protocols "
        "can differ on the other 670 (40%)")
    assert "on the other 0 (0%)" in frozen_test_scope(made_up(grid(), 0.0, n_test=170).runs)
    assert frozen_test_scope(made_up(grid(), 0.0).runs).startswith("pending")  # no test-row count


def test_no_other_table_claim_or_comparison_reads_the_frozen_runs():
    values = params("claims-reduced-scale-cpu", SEEDS=[0, 1, 2], MODELS=["lstm", "jodie", "latentcross"])
    g = ReducedScaleGrid(**{k.lower(): v for k, v in values.items()})
    with_frozen = build(collected=made_up(g, frozen_change=0.3), **values)
    without = build(collected=made_up(g.replace(test_updates=("online",)), frozen_change=0.0),
                    **{**values, "TEST_UPDATES": ["online"]})
    for name in ("table_3a", "rbo", "jaccard", "groups", "k_sweep", "numbering", "numbering_tests"):
        pd.testing.assert_frame_equal(with_frozen.tables[name], without.tables[name])
    pd.testing.assert_frame_equal(with_frozen.claims, without.claims)
    assert with_frozen.texts()["numbering_effect"] == without.texts()["numbering_effect"]
    assert without.texts()["test_protocol_effect"].startswith("pending")
    assert "a significant difference" in with_frozen.texts()["test_protocol_effect"]
    # and the test-protocol comparison reads no run of another numbering
    runs = with_frozen.runs
    assert set(variant_part(runs, TEST_PROTOCOL)["id_map"]) == {"fixed"}
    varied = (runs[list(PROTOCOL_DEFAULTS)] != pd.Series(PROTOCOL_DEFAULTS)).any(axis=1)
    assert varied.sum() > 0 and (runs["test_updates"] != "online").sum() < varied.sum()
    assert len(at_defaults(runs)) == len(runs) - int(varied.sum())
    assert not variant_tests(runs, NUMBERING).empty


def test_table_3s_paper_profile_tests_both_models_frozen_at_the_papers_scale():
    import yaml

    from recunlearn import paths
    from recunlearn.report.casper import ProtocolGrid
    from recunlearn.report.pages import validated

    paper = yaml.safe_load((paths.REPO_ROOT / "notebooks/params/casper/table-03-perturbation-methods.paper.yml")
                           .read_text())
    frozen = [c for c in validated(ProtocolGrid, paper).runs() if c.test_updates == "frozen"]
    assert len(frozen) == 2 * 3 * len(SETTINGS)
    assert {(c.epochs, c.max_rows, c.model) for c in frozen} == {(50, None, "jodie"), (50, None, "latentcross")}


def test_each_comparison_names_the_plan_entries_of_its_own_pending_runs():
    """With no record at all, the test-protocol section's notice names the entries that compute its runs
    (the online partners are Table 3(a)'s), not every entry of the Table 3 page."""
    from recunlearn.report.pages.casper_table_03_perturbation_methods import build as build_table_3

    page = build_table_3(**params("table-03-perturbation-methods", "paper"))
    assert page.notices["test_protocol"].command == ("python -m recunlearn compute --only casper-table-3a "
                                                     "casper-table-3-test-updates casper-table-3-test-updates-jodie")
    assert "casper-table-3-test-updates" not in page.notices["numbering"].command
    assert "casper-table-3b-and-insertion" in page.notices["table_3"].command  # the page's own tables: every entry


def test_one_pair_is_reported_without_a_test():
    """A single seed-paired run gives no p: the sentences say so instead of printing a missing p."""
    from recunlearn.report.casper_numbering import numbering_text

    g = grid(seeds=(0,), selectors=("none", "random"), models=("latentcross",),
             id_maps=("fixed", "first_appearance", "first_appearance_labels"))
    runs = made_up(g, frozen_change=0.01).runs
    text = variant_text(runs, TEST_PROTOCOL)
    assert "online higher in 0 of 1 seed-paired runs, lower in 1; one pair is too few for a test)" in text
    assert "nan" not in text
    numbering = numbering_text(runs)
    assert "one pair is too few for a test" in numbering and "one pair, no test" in numbering
    assert "nan" not in numbering
