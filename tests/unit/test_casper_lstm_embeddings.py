"""The LSTM embedding comparison of the reduced-scale CASPER page
(recunlearn.report.casper_lstm_embeddings): which runs it adds, that no other table reads them, and its
test on made-up runs with a known answer."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recunlearn.experiments.casper import Collected
from recunlearn.report.casper import ReducedScaleGrid
from recunlearn.report.casper_lstm_embeddings import LSTM_EMBEDDING, lstm_embedding_text
from recunlearn.report.casper_variants import variant_table, variant_tests, with_protocol_columns
from recunlearn.report.pages.casper_claims_reduced_scale_cpu import build

from test_casper_pages import fake_collected, params


def grid(**changes) -> ReducedScaleGrid:
    values = dict(models=("lstm", "latentcross"), selectors=("none", "random", "earliest", "casper"),
                  perturbations=("loo",), seeds=(0, 1, 2), epochs=1, max_rows=2000,
                  test_updates=("online", "frozen"), lstm_embeddings=("fixed", "trained"))
    return ReducedScaleGrid(**{**values, **changes})


def made_up(g: ReducedScaleGrid, trained_change: float) -> Collected:
    """Made-up runs of ``g``: the trained-embedding runs' AO ``trained_change`` above their partners'."""
    collected = with_protocol_columns(fake_collected(g), g.runs())
    runs = collected.runs.copy()
    runs.loc[runs["lstm_embeddings"] == "trained", "ao"] += trained_change
    return Collected(runs, collected.pending)


def test_the_trained_embedding_runs_are_lstm_deletions_each_with_its_fixed_partner():
    runs = grid().runs()
    trained = [c for c in runs if c.lstm_embeddings == "trained"]
    assert len(trained) == 3 * len(LSTM_EMBEDDING.settings) and {c.model for c in trained} == {"lstm"}
    assert {(c.id_map, c.test_updates, c.k) for c in trained} == {("fixed", "online", 1)}
    assert all(c.replace(lstm_embeddings="fixed") in set(runs) for c in trained)
    assert not [c for c in grid(lstm_embeddings=("fixed",)).runs() if c.lstm_embeddings != "fixed"]
    assert not [c for c in grid(models=("latentcross",)).runs() if c.lstm_embeddings != "fixed"]


def test_a_change_with_trained_embeddings_is_found_and_an_equal_ao_is_not():
    runs = made_up(grid(), trained_change=-0.05).runs
    tests = variant_tests(runs, LSTM_EMBEDDING)
    assert list(tests["models"]) == ["all"] and tests.iloc[0]["pairs"] == 3 * len(LSTM_EMBEDDING.settings)
    assert np.isclose(tests.iloc[0]["mean difference (AO)"], 0.05)
    text = lstm_embedding_text(runs)
    assert text.startswith("with trained item embeddings, AO is") and "fixed higher in 9 of 9" in text
    assert "a significant difference" in text
    same = lstm_embedding_text(made_up(grid(), trained_change=0.0).runs)
    assert "fixed higher in 0 of 9 seed-paired runs, lower in 0" in same and "no significant difference" in same
    assert list(variant_table(runs, LSTM_EMBEDDING).index.get_level_values(0).unique()) == ["LSTM"]


def test_no_other_table_or_claim_reads_the_trained_embedding_runs():
    values = params("claims-reduced-scale-cpu", SEEDS=[0, 1, 2])
    g = ReducedScaleGrid(**{k.lower(): v for k, v in values.items()})
    with_trained = build(collected=made_up(g, trained_change=-0.3), **values)
    without = build(collected=made_up(g.replace(lstm_embeddings=("fixed",)), trained_change=0.0),
                    **{**values, "LSTM_EMBEDDINGS": ["fixed"]})
    for name in ("table_3a", "rbo", "jaccard", "groups", "k_sweep", "numbering", "test_protocol"):
        pd.testing.assert_frame_equal(with_trained.tables[name], without.tables[name])
    pd.testing.assert_frame_equal(with_trained.claims, without.claims)
    assert without.texts()["lstm_embeddings_effect"].startswith("pending")
    assert "a significant difference" in with_trained.texts()["lstm_embeddings_effect"]


def test_table_3_has_no_lstm_embedding_comparison_to_ask_for():
    """Only the reduced-scale page shows the comparison, so only its grid takes the parameter."""
    import pytest

    from recunlearn.experiments.config import ConfigError
    from recunlearn.report.pages.casper_table_03_perturbation_methods import build as build_table_3

    with pytest.raises(ConfigError, match="LSTM_EMBEDDINGS"):
        build_table_3(**params("table-03-perturbation-methods", LSTM_EMBEDDINGS=["fixed", "trained"]))
