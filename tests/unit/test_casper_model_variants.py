"""The comparisons of the reduced-scale CASPER page between two versions of one model
(recunlearn.report.casper_lstm_embeddings: the LSTM's item embeddings fixed or trained;
recunlearn.report.casper_latentcross_cell: LatentCross's LSTM or GRU cell): which runs each adds, that
no other table reads them, and its test on made-up runs with a known answer."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from recunlearn.experiments.casper import Collected
from recunlearn.report.casper import ReducedScaleGrid
from recunlearn.report.casper_latentcross_cell import LATENTCROSS_CELL
from recunlearn.report.casper_lstm_embeddings import LSTM_EMBEDDING
from recunlearn.report.casper_variants import variant_table, variant_tests, variant_text, with_protocol_columns
from recunlearn.report.pages.casper_claims_reduced_scale_cpu import build

from casper_page_fakes import fake_collected, params


@dataclasses.dataclass(frozen=True)
class Case:
    variant: object
    model: str
    label: str       # the model's row label in the variant table
    opening: str     # how the page's sentence starts
    parameter: str   # the notebook parameter


CASES = {"lstm_embeddings": Case(LSTM_EMBEDDING, "lstm", "LSTM",
                                 "with trained item embeddings, AO is", "LSTM_EMBEDDINGS"),
         "latentcross_cell": Case(LATENTCROSS_CELL, "latentcross", "LatentCross",
                                  "with the paper's GRU cell, AO is", "LATENTCROSS_CELLS")}


def grid(**changes) -> ReducedScaleGrid:
    values = dict(models=("lstm", "latentcross"), selectors=("none", "random", "earliest", "casper"),
                  perturbations=("loo",), seeds=(0, 1, 2), epochs=1, max_rows=2000,
                  test_updates=("online", "frozen"), lstm_embeddings=("fixed", "trained"),
                  latentcross_cells=("lstm", "gru"))
    return ReducedScaleGrid(**{**values, **changes})


def other(case: Case) -> str:
    """The variant's value that is not the default."""
    return case.variant.values[1]


def made_up(g: ReducedScaleGrid, case: Case, change: float) -> Collected:
    """Made-up runs of ``g``: the runs of ``case``'s other value ``change`` above their partners' AO."""
    collected = with_protocol_columns(fake_collected(g), g.runs())
    runs = collected.runs.copy()
    runs.loc[runs[case.variant.field] == other(case), "ao"] += change
    return Collected(runs, collected.pending)


@pytest.mark.parametrize("name", CASES)
def test_the_variant_runs_are_deletions_of_one_model_each_with_its_default_partner(name):
    case = CASES[name]
    field, default = case.variant.field, case.variant.default
    runs = grid().runs()
    varied = [c for c in runs if getattr(c, field) != default]
    assert len(varied) == 3 * len(case.variant.settings) and {c.model for c in varied} == {case.model}
    assert {(c.id_map, c.test_updates, c.k) for c in varied} == {("fixed", "online", 1)}
    assert all(c.replace(**{field: default}) in set(runs) for c in varied)
    assert not [c for c in grid(**{case.variant.grid_option: (default,)}).runs() if getattr(c, field) != default]
    unrelated = "latentcross" if case.model == "lstm" else "lstm"
    assert not [c for c in grid(models=(unrelated,)).runs() if getattr(c, field) != default]


@pytest.mark.parametrize("name", CASES)
def test_a_change_is_found_and_an_equal_ao_is_not(name):
    case = CASES[name]
    short = case.variant.short_labels[case.variant.default]
    runs = made_up(grid(), case, change=-0.05).runs
    tests = variant_tests(runs, case.variant)
    assert list(tests["models"]) == ["all"] and tests.iloc[0]["pairs"] == 3 * len(case.variant.settings)
    assert np.isclose(tests.iloc[0]["mean difference (AO)"], 0.05)
    text = variant_text(runs, case.variant)
    assert text.startswith(case.opening) and f"{short} higher in 9 of 9" in text
    assert "a significant difference" in text
    same = variant_text(made_up(grid(), case, change=0.0).runs, case.variant)
    assert f"{short} higher in 0 of 9 seed-paired runs, lower in 0" in same and "no significant difference" in same
    assert list(variant_table(runs, case.variant).index.get_level_values(0).unique()) == [case.label]


def test_no_other_table_or_claim_reads_the_variant_runs():
    values = params("claims-reduced-scale-cpu", SEEDS=[0, 1, 2])
    g = ReducedScaleGrid(**{k.lower(): v for k, v in values.items()})
    varied = made_up(g, CASES["lstm_embeddings"], change=-0.3)  # and the GRU runs 0.2 above their partners
    runs = varied.runs.copy()
    runs.loc[runs["latentcross_cell"] == "gru", "ao"] += 0.2
    with_variants = build(collected=Collected(runs, varied.pending), **values)
    plain = g.replace(lstm_embeddings=("fixed",), latentcross_cells=("lstm",))
    without = build(collected=with_protocol_columns(fake_collected(plain), plain.runs()),
                    **{**values, "LSTM_EMBEDDINGS": ["fixed"], "LATENTCROSS_CELLS": ["lstm"]})
    for name in ("table_3a", "rbo", "jaccard", "groups", "k_sweep", "numbering", "test_protocol"):
        pd.testing.assert_frame_equal(with_variants.tables[name], without.tables[name])
    pd.testing.assert_frame_equal(with_variants.claims, without.claims)
    for name in CASES:
        assert without.texts()[f"{name}_effect"].startswith("pending")
        assert "a significant difference" in with_variants.texts()[f"{name}_effect"]
    # the scoreboard's list of the page's comparisons: every section, its finding, the version used elsewhere
    published = json.loads(with_variants.texts()["page_variants"])
    assert [v["section"] for v in published] == ["numbering", "test_protocol", "lstm_embeddings", "latentcross_cell"]
    assert all(v["finding"] == with_variants.texts()[f"{v['section']}_effect"] for v in published)
    assert {v["section"]: v["used"] for v in published}["latentcross_cell"] == "LSTM cell (authors' code, ours)"


def test_table_3_has_no_lstm_embedding_comparison_to_ask_for():
    """Only the reduced-scale page shows the LSTM embedding comparison, so only its grid takes the parameter."""
    from recunlearn.experiments.config import ConfigError
    from recunlearn.report.pages.casper_table_03_perturbation_methods import build as build_table_3

    with pytest.raises(ConfigError, match="LSTM_EMBEDDINGS"):
        build_table_3(**params("table-03-perturbation-methods", LSTM_EMBEDDINGS=["fixed", "trained"]))


def test_table_3s_paper_profile_compares_the_gru_cell_at_the_papers_scale():
    """Table 3's page shows the LatentCross cell comparison at paper scale, every GRU run in the plan entry
    named by its own pending notice, and no other table of the page reads them."""
    from recunlearn.report.casper import ProtocolGrid
    from recunlearn.report.pages import validated
    from recunlearn.report.pages.casper_table_03_perturbation_methods import build as build_table_3

    values = params("table-03-perturbation-methods", "paper")
    gru = [c for c in validated(ProtocolGrid, values).runs() if c.latentcross_cell == "gru"]
    assert len(gru) == 3 * len(LATENTCROSS_CELL.settings)
    assert {(c.epochs, c.max_rows, c.model, c.id_map, c.test_updates) for c in gru} == {
        (50, None, "latentcross", "fixed", "online")}
    page = build_table_3(**values)
    assert "casper-table-3-latentcross-cell" in page.notices["latentcross_cell"].command
    assert "casper-table-3-latentcross-cell" not in page.notices["test_protocol"].command
    # made-up runs: the GRU runs' AO 0.2 above their partners' changes the comparison and nothing else
    smoke = params("table-03-perturbation-methods", SEEDS=[0, 1, 2])
    grid = validated(ProtocolGrid, smoke)
    with_gru = made_up(grid, CASES["latentcross_cell"], change=0.2)
    plain = grid.replace(latentcross_cells=("lstm",))
    with_gru, without = (build_table_3(collected=with_gru, **smoke),
                         build_table_3(collected=with_protocol_columns(fake_collected(plain), plain.runs()),
                                       **{**smoke, "LATENTCROSS_CELLS": ["lstm"]}))
    for name in ("table_3", "table_3_rbo", "paired_tests", "numbering", "test_protocol"):
        pd.testing.assert_frame_equal(with_gru.tables[name], without.tables[name])
    pd.testing.assert_frame_equal(with_gru.claims, without.claims)
    assert without.texts()["latentcross_cell_effect"].startswith("pending")
    assert "LSTM cell higher in 0 of 9" in with_gru.texts()["latentcross_cell_effect"]


def test_a_comparison_of_three_values_has_no_two_way_sentence():
    """The numbering compares three numberings and writes its own sentence (report.casper_numbering)."""
    from recunlearn.report.casper_numbering import NUMBERING

    with pytest.raises(ValueError, match="numbering: 3 values"):
        variant_text(made_up(grid(), CASES["lstm_embeddings"], change=0.0).runs, NUMBERING)
