"""The CASPER page builders: parameters checked before any compute, one notice for pending content
(never an empty table or an all-pending one), no glued sentence counting nothing ("0 of 0"), and
tables that hold the values the notebooks computed before the builders existed (on made-up runs)."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

from casper_page_fakes import fake_collected, params
from page_checks import no_empty_count, shown
from recunlearn.experiments.casper import CasperGrid, Collected
from recunlearn.experiments.config import ConfigError
from recunlearn.experiments.records import record_key
from recunlearn.report.casper import (group_table, label_pending, mrr_group_claim, summarize_rls,
                                     summary_value, table3_view, unchanged_runs_text)
from recunlearn.report.pages.casper_figure_08_perturbation_count_and_runtime import ao_by_k_text
from recunlearn.report.compare import compare, paper_vs_ours_table
from recunlearn.report.names import display_name, labelled
from recunlearn.report.pages import Notice, Page, notebook_parameters, page_grid, published_claims, validated
from recunlearn.report.paper import paper_table

RUN_PAGES = ["figure-02-random-loo", "figure-03-random-loo-datasets", "figure-05-06-latentcross-datasets",
             "figure-07-mrr-groups", "claims-reduced-scale-cpu"]
"""Pages whose builder needs no dataset file when its runs are given."""
DATA_PAGES = ["figure-04-perturbation-position", "table-03-perturbation-methods",
              "figure-08-perturbation-count-and-runtime"]
"""Pages that also measure something on a dataset file (renumbering, item count, CASPER's timing)."""
def builder(stem: str):
    return importlib.import_module(f"recunlearn.report.pages.casper_{stem.replace('-', '_')}").build


def fake_page(stem: str, pending: dict[str, str] | None = None, **changes) -> Page:
    values = params(stem, **changes)
    grid = validated(page_grid(f"casper/{stem}"), values)
    return builder(stem)(collected=fake_collected(grid, pending), **values)


# --- parameters ----------------------------------------------------------------------------------------

def test_notebook_parameters_are_the_upper_snake_and_injected_names():
    namespace = {"In": ["", "# Parameters\nMODELS = [\"lstm\"]\ndatasets = [\"x\"]\n"], "MODELS": ["lstm"],
                 "datasets": ["x"], "pd": pd, "page": None, "_": None}
    assert notebook_parameters(namespace) == {"MODELS": ["lstm"], "datasets": ["x"]}


@pytest.mark.parametrize("stem", RUN_PAGES + DATA_PAGES)
@pytest.mark.parametrize("bad, message", [
    ({"MODELS": ["lstm", "gru4rec"]}, r"parameter MODELS = .*'gru4rec' is not allowed; allowed: \['lstm'"),
    ({"datasets": ["foursquare"]}, r"case-sensitive: \['datasets'\].*DATASETS"),
    ({"EPOCH": 3}, r"unknown parameter\(s\) \['EPOCH'\].*EPOCHS"),
    ({"epochs": 3}, r"case-sensitive: \['epochs'\]"),
    ({"max_epochs": 3}, r"unknown parameter\(s\) \['max_epochs'\].*allowed"),
])
def test_a_wrong_parameter_fails_before_any_compute(stem, bad, message, monkeypatch):
    from recunlearn.report.pages import casper_runs

    build = builder(stem)
    monkeypatch.setattr(casper_runs, "collect", lambda *a, **k: pytest.fail("runs collected before the check"))
    with pytest.raises(ConfigError, match=message):
        build(**params(stem, **bad))


ONE_VALUE = {"figure-02-random-loo": ("DATASETS",), "figure-04-perturbation-position": ("DATASETS",),
             "figure-05-06-latentcross-datasets": ("MODELS",), "figure-07-mrr-groups": ("MODELS", "DATASETS"),
             "figure-08-perturbation-count-and-runtime": ("MODELS", "DATASETS"),
             "table-03-perturbation-methods": ("DATASETS",), "claims-reduced-scale-cpu": ("DATASETS",)}
"""The list parameters a page draws one value of: its titles name that value and its tables do not key by it."""
TWO_VALUES = {"MODELS": ["lstm", "latentcross"], "DATASETS": ["foursquare", "wikipedia"]}


@pytest.mark.parametrize("stem, name", [(stem, name) for stem, names in ONE_VALUE.items() for name in names])
def test_a_page_drawing_one_model_or_dataset_refuses_several_before_any_compute(stem, name, monkeypatch):
    """Several values would be averaged under one title: refused, naming the parameter and its choices."""
    from recunlearn.report.pages import casper_runs

    monkeypatch.setattr(casper_runs, "collect", lambda *a, **k: pytest.fail("runs collected before the check"))
    noun = name.lower().removesuffix("s")
    with pytest.raises(ConfigError, match=rf"parameter {name} = \[.*\]: .* drawn for one {noun} at a time; "
                                          r"give a list of one of \['"):
        builder(stem)(**params(stem, **{name: TWO_VALUES[name]}))


def test_pages_declare_the_list_parameters_they_draw_one_value_of():
    from recunlearn.report.pages import page_one_value

    for stem in RUN_PAGES + DATA_PAGES:
        assert tuple(name.upper() for name in page_one_value(f"casper/{stem}")) == ONE_VALUE.get(stem, ()), stem


@pytest.mark.parametrize("stem, figure, title", [
    ("figure-07-mrr-groups", "figure", "LSTM, Wikipedia, one deletion"),
    ("figure-05-06-latentcross-datasets", "figure_5", "LSTM, LOO"),
    ("figure-05-06-latentcross-datasets", "figure_6", "LSTM, CASPER LOO"),
    ("figure-02-random-loo", "figure_2a", "Wikipedia: M vs M'"),
])
def test_figure_titles_name_the_model_and_dataset_drawn(stem, figure, title, monkeypatch):
    from matplotlib.figure import Figure

    figures = [f for f in shown(fake_page(stem, MODELS=["lstm"], DATASETS=["wikipedia"]), figure, monkeypatch)
               if isinstance(f, Figure)]
    titles = [ax.get_title() for f in figures for ax in f.axes] + [f.get_suptitle() for f in figures]
    assert any(text.startswith(title) for text in titles), titles


def test_table_2_parameters_are_checked():
    with pytest.raises(ConfigError, match=r"DATASETS = .*'movielens' is not allowed; allowed: \['wikipedia'"):
        builder("table-02-dataset-statistics")(DATASETS=["movielens"])


# --- pending content: one notice -------------------------------------------------------------------------

@pytest.mark.parametrize("stem", RUN_PAGES)
def test_uncomputed_runs_show_one_notice_with_the_plan_command_and_no_empty_count(stem, monkeypatch):
    """The paper profile with no record: every run pending GPU; each table and figure drawn from runs is
    one notice naming why and the plan entry that computes it; no glued text counts nothing."""
    page = builder(stem)(**params(stem, "paper", ONLY_CACHED=True, DEVICE="cuda", EPOCHS=50, MAX_ROWS=None))
    assert set(page.runs["status"]) == {"pending GPU"} and len(page.pending) == len(page.runs)
    for name in page.items:
        if name == "runs":
            continue
        out = shown(page, name, monkeypatch)
        assert len(out) == 1 and isinstance(out[0], Notice), (name, out)
        assert "pending" in out[0].why
        if stem != "claims-reduced-scale-cpu":  # not a paper item: no plan entry at these settings
            assert out[0].command.startswith("python -m recunlearn compute --only casper-")
            assert out[0].command.endswith("--device cuda")
    no_empty_count(page)
    texts = page.texts()
    assert texts["page_verdict"] == "pending"
    assert "within tolerance" not in texts["page_summary"]  # "paper cells: 4 pending", not "0 of 4 within ..."
    assert all(texts[f"claim_{c}"] == "pending" for c in page.claims["id"])


def test_a_smoke_grid_read_from_records_only_names_the_run_command(monkeypatch):
    page = builder("figure-02-random-loo")(**params("figure-02-random-loo", ONLY_CACHED=True))
    notice = shown(page, "figure_2a", monkeypatch)[0]
    assert notice.why.startswith("9 of 9 runs waiting for CPU time")
    assert notice.command == ("python -m recunlearn run casper-rls model='[\"lstm\",\"tisasrec\",\"latentcross\"]' "
                              "selector='[\"none\",\"random\",\"casper\"]' epochs=1 max_rows=2000")


def test_a_model_not_computed_leaves_a_partly_computed_table_with_a_notice(monkeypatch):
    page = fake_page("figure-02-random-loo", pending={"tisasrec": "pending GPU"})
    out = shown(page, "comparison", monkeypatch)
    table, notice = out
    assert set(table.index.get_level_values("Model")) == {"LSTM", "LatentCross"}
    assert not table[(display_name("ao"), "ours")].str.contains("pending").any()
    assert notice.partial and notice.why == "2 of 4 paper cells without our value: 2 pending for TiSASRec, JODIE"
    figure = shown(page, "figure_2a", monkeypatch)
    assert isinstance(figure[-1], Notice) and figure[-1].why == "3 of 9 runs pending GPU (TiSASRec)"
    assert page.texts()["tisasrec_random_ao"] == "pending"
    no_empty_count(page)


def test_claims_never_state_an_empty_count():
    claims = pd.DataFrame({"id": ["a", "b"], "claim": ["A", "B"], "verdict": ["pending", "reproduced"],
                           "holds in": ["0 of 0 cells significant", "3 of 3 cells"], "p_value": [np.nan, 0.01],
                           "test": ["", ""], "evidence": ["", ""]})
    assert published_claims(claims)["holds in"].tolist() == ["", "3 of 3 cells"]


def test_an_empty_table_is_a_notice_even_without_one(monkeypatch):
    page = Page("x/y", tables={"t": pd.DataFrame(columns=["a"])})
    assert page.is_pending("t") and isinstance(shown(page, "t", monkeypatch)[0], Notice)


def test_a_none_notice_is_a_fully_computed_item():
    table = pd.DataFrame({"a": [1]})
    page = Page("x/y", tables={"t": table, "u": table}, notices={"t": None, "u": Notice("U", "1 of 2 runs pending")})
    assert list(page.notices) == ["u"] and page.notice("t") is None and not page.is_pending("t")


# --- the tables hold the values the notebooks computed before -----------------------------------------------

def test_figure_2_tables_and_values_on_made_up_runs(monkeypatch):
    page = fake_page("figure-02-random-loo", SEEDS=[0, 1, 2])
    runs = page.runs
    # what the notebook computed inline before the builder
    summary = summarize_rls(runs, ["dataset", "model", "selector"], ["ao", "rbo_min", "jaccard", "mrr_original",
                                                                     "mrr_perturbed", "recall10_original",
                                                                     "recall10_perturbed"])
    paper = paper_table("casper-table-03")
    paper = paper[(paper["perturbation"] == "loo") & (paper["selector"] == "random")]
    ours = summary[(summary["selector"] == "random") & (summary["metric"] == "ao")].drop(columns="selector")
    before = label_pending(compare(ours, paper[["dataset", "model", "metric", "value", "resolution"]],
                                   ["dataset", "model"]))
    pd.testing.assert_frame_equal(page.comparison, before)
    table = shown(page, "comparison", monkeypatch)[0]  # as a reader reads it: paper, ours ± std, difference, check
    pd.testing.assert_frame_equal(table, labelled(paper_vs_ours_table(before[before["ours"].notna()],
                                                                      ["dataset", "model"], ["ao"])))
    assert table.loc[("Foursquare", "LSTM"), (display_name("ao"), "ours")].startswith("0.9010 ± ")  # 0.90 + 0.001
    pd.testing.assert_frame_equal(page.tables["figure_2b"], group_table(runs, ["model", "selector"], "jaccard"))
    casper_ao = summary_value(summary, metric="ao", selector="casper", model="lstm")
    assert page.texts()["lstm_casper_ao"] == f"{casper_ao:.4f}"
    assert page.texts()["lstm_casper_ao"] == "0.8210"
    assert page.texts()["lstm_none_jaccard"] == "1.0000"
    assert page.texts()["claim_low_mrr_less_stable"].startswith("reproduced")  # low = high - 0.04, every seed
    no_empty_count(page)


def test_figure_3_counts_and_glued_sentences(monkeypatch):
    page = fake_page("figure-03-random-loo-datasets", SEEDS=[0, 1])
    texts = page.texts()
    assert texts["n_cells"] == "6" and texts["n_in_band"] == "6"  # 0.9005 is inside 0.75-0.95 for every cell
    assert texts["in_band"] == "6 of 6 (dataset, model) means computed here fall in that band"
    assert texts["lc_best"] == "3 of 3"  # ties: idxmax keeps the first model of each dataset, LatentCross
    pivot = shown(page, "figure_3a_ao", monkeypatch)[0]
    assert pivot.shape == (3, 2) and np.allclose(pivot.to_numpy(), 0.9005)
    assert texts["max_mrr_gap"] == "0.0005"  # mean over seeds 0 and 1 of 0.001 * seed


def test_figure_5_6_counts_and_tables(monkeypatch):
    page = fake_page("figure-05-06-latentcross-datasets", SEEDS=[0, 1, 2])
    texts = page.texts()
    assert texts["casper_lowest"] == "4" and texts["n_settings"] == "4" and texts["n_groups"] == "2"
    assert texts["casper_lowest_settings"] == ("by means CASPER has the lowest AO in 4 of 4 (perturbation, dataset) "
                                               "settings computed")
    groups = shown(page, "figure_6_groups", monkeypatch)[0]
    assert np.allclose(groups[display_name("jaccard_low")], 0.82 + 0.001 - 0.05 - 0.02)
    assert texts["claim_casper_lowest_ao"].startswith("reproduced")


def test_claims_reduced_scale_table_matches_the_notebook_pipeline(monkeypatch):
    page = fake_page("claims-reduced-scale-cpu", SEEDS=[0, 1, 2])
    keys = ["dataset", "model", "selector", "perturbation", "replacement"]
    from recunlearn.report.casper_variants import at_defaults

    single = at_defaults(page.runs[page.runs["k"] == 1])  # the protocol variants' runs: their own sections
    summary = summarize_rls(single, keys, ["ao", "rbo_min", "jaccard", "mrr_original", "mrr_perturbed"])
    paper = paper_table("casper-table-03")
    comparison = label_pending(compare(summary, paper[keys + ["metric", "value", "resolution"]], keys))
    comparison = comparison[comparison["model"].isin(page.grid.models)
                            & comparison["selector"].isin(page.grid.selectors)
                            & comparison["perturbation"].isin(["loo", "replace"])]
    pd.testing.assert_frame_equal(shown(page, "table_3a", monkeypatch)[0], labelled(table3_view(comparison)))
    pd.testing.assert_frame_equal(shown(page, "rbo", monkeypatch)[0], labelled(table3_view(comparison, "rbo_min")))
    texts = page.texts()
    assert texts["ao_range"] == "0.821-0.931"
    assert texts["scale"] == ("the first 2,000 rows of Foursquare, 1 epochs, seeds 0, 1, 2, models LSTM, LatentCross, "
                              "on cpu")
    assert texts["claim_control_exact"].startswith("reproduced")
    # Table 3 (b): replacement rows, CASPER with each replacement item; no insertion (not in the grid)
    view = shown(page, "table_3a", monkeypatch)[0]
    assert {p for p, _ in view.index} == {"LOO", "replacement"}
    assert ("replacement", "CASPER (unpopular)") in view.index
    # Figure 8(a)'s sweep on every model: the made-up AO falls by 0.01 per extra interaction
    sweep = shown(page, "k_sweep", monkeypatch)[0]
    assert len(sweep) == 2 * 3 and sweep.loc[("LatentCross", "3"), display_name("ao")] == "0.8010 ± 0.0010"
    assert texts["claim_ao_falls_with_k"].startswith("reproduced")
    figure = shown(page, "k_figure", monkeypatch)[0]
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["LSTM", "LatentCross"]  # one per model
    # Table 3's claims read the runs of one interaction only: CASPER at k = 3 is not a fourth CASPER
    assert texts["claim_casper_lowest_ao"].startswith("reproduced")
    assert texts["claim_unpopular_strongest_replacement"].startswith("inconclusive")  # the same made-up AO
    assert set(page.claims["id"]) >= {"casper_destabilises_most", "casper_lower_variance", "casper_strongest_unbounded",
                                      "revadv_earliest_beats_random", "ao_falls_with_k"}


def test_the_reduced_scale_grid_adds_casper_deletion_sweep_to_the_one_interaction_runs():
    values = params("claims-reduced-scale-cpu", "paper")
    grid = validated(page_grid("casper/claims-reduced-scale-cpu"), values)
    runs = grid.runs()
    numbering = [c for c in runs if c.id_map != "fixed"]  # JODIE, LatentCross x 3 seeds x 5 settings x 2 numberings
    assert len(numbering) == 2 * 3 * 5 * 2 and {c.model for c in numbering} == {"jodie", "latentcross"}
    frozen = [c for c in runs if c.test_updates != "online"]  # JODIE, LatentCross x 3 seeds x 3 deletion settings
    assert len(frozen) == 2 * 3 * 3 and {(c.id_map, c.k, c.perturbation) for c in frozen} == {("fixed", 1, "loo")}
    trained = [c for c in runs if c.lstm_embeddings != "fixed"]  # LSTM x 3 seeds x 3 deletion settings
    assert len(trained) == 3 * 3 and {c.model for c in trained} == {"lstm"}
    gru = [c for c in runs if c.latentcross_cell != "lstm"]  # LatentCross x 3 seeds x 3 deletion settings
    assert len(gru) == 3 * 3 and {c.model for c in gru} == {"latentcross"}
    assert len(runs) == len(set(runs)) == (4 * 3 * (1 + 7 * 2 + 1 + 3 + 7) + len(numbering) + len(frozen)
                                           + len(trained) + len(gru))
    # control, 7 baselines x 2, CASPER (3 replacement items), k 2..8; then the protocol variants' runs
    assert {c.k for c in runs if c.selector != "casper" or c.perturbation != "loo"} == {1}
    assert sorted({c.k for c in runs if c.selector == "casper" and c.perturbation == "loo"}) == list(range(1, 9))
    with pytest.raises(ConfigError, match="CASPER_KS"):
        validated(page_grid("casper/claims-reduced-scale-cpu"), {**values, "CASPER_KS": [0]})


@pytest.mark.parametrize("stem", DATA_PAGES)
def test_pages_that_measure_the_data_publish_no_empty_count(stem, need_local, monkeypatch):
    need_local("foursquare", "raw")
    need_local("lastfm", "raw")
    page = fake_page(stem, pending={"latentcross": "pending GPU"})  # every run of these smoke grids pending
    for name in page.items:
        out = shown(page, name, monkeypatch)
        assert out, name
        assert not any(isinstance(o, pd.DataFrame) and o.empty for o in out), name
    no_empty_count(page)
    assert page.texts()["page_pending"].endswith("runs pending GPU")


def test_table_3_on_made_up_runs(need_local, monkeypatch):
    need_local("foursquare", "raw")
    page = fake_page("table-03-perturbation-methods", SEEDS=[0, 1, 2])
    view, notice = shown(page, "table_3", monkeypatch)
    assert list(view.columns) == ["LatentCross"]  # the grid's model; the other models' paper cells are pending
    assert view.loc[("LOO", "CASPER"), "LatentCross"] == "0.8210 ± 0.0010\n(paper 0.6662)"
    assert view.loc[("LOO", "TracIn"), "LatentCross"] == "0.8810 ± 0.0010\n(paper 0.9625)"
    assert view.loc[("insertion", "Rev.Adv. (earliest)"), "LatentCross"] == "0.8710 ± 0.0010"  # ours only
    methods = [m for p, m in view.index if p == "replacement"]
    assert methods == ["Random", "Earliest-Random", "Latest-Random", "TracIn", "TracIn (authors' proxy)",
                       "Rev.Adv. (random)", "Rev.Adv. (earliest)", "CASPER (random)", "CASPER (popular)",
                       "CASPER (unpopular)"]
    assert notice.partial and notice.why.startswith("48 of 64 paper cells without our value")
    tests = shown(page, "paired_tests", monkeypatch)[0]
    assert tests["baseline"].tolist() == ["Random", "Earliest-Random", "Latest-Random", "TracIn",
                                          "TracIn (authors' proxy)", "Rev.Adv. (random)", "Rev.Adv. (earliest)"]
    assert (tests["pairs"] == 9).all() and (tests["columns CASPER lower"] == "3 of 3").all()
    texts = page.texts()
    assert texts["casper_lowest_columns"] == ("By means CASPER has the lowest AO in 3 of the 3 (perturbation, model) "
                                              "columns computed.")
    assert texts["n_items"] == "5,596"
    assert texts["claim_casper_lowest_ao"].startswith("reproduced")
    assert texts["claim_revadv_earliest_beats_random"].startswith("reproduced")
    assert texts["claim_casper_strongest_unbounded"] == "pending"  # one model: no margin to compare


def test_table_3_pending_cells_name_the_runs_reason_and_the_paper_value(need_local, monkeypatch):
    need_local("foursquare", "raw")
    page = fake_page("table-03-perturbation-methods", pending={"lstm": "waiting for CPU time"},
                     MODELS=["lstm", "latentcross"])
    view = shown(page, "table_3", monkeypatch)[0]
    assert view.loc[("LOO", "TracIn"), "LSTM"] == "pending\n(paper 0.7733)"
    assert view.loc[("LOO", "Rev.Adv. (earliest)"), "LatentCross"] == "0.8700 (1 run)\n(paper 0.7403)"


def test_figure_7_groups_and_claims_on_made_up_runs(monkeypatch):
    page = fake_page("figure-07-mrr-groups", SEEDS=[0, 1, 2])
    table = shown(page, "groups", monkeypatch)[0]
    assert table["Method"].tolist() == ["Random", "Earliest-Random", "Latest-Random", "TracIn", "Rev.Adv. (random)",
                                        "Rev.Adv. (earliest)", "CASPER"]
    casper = table.set_index("Method").loc["CASPER"]
    assert casper["low"] == "0.7510 ± 0.0010" and casper["high"] == "0.7910 ± 0.0010" and casper["seeds"] == 3
    texts = page.texts()
    assert texts["claim_low_mrr_least_stable_every_method"].startswith("reproduced")
    # the made-up differences are the same in every seed: no spread, so the sign-flip floor 1/2**3 decides
    assert texts["claim_casper_lowest_every_group"].startswith("inconclusive") and "p = 0.125" in \
        texts["claim_casper_lowest_every_group"]
    assert texts["casper_lowest_groups"] == "by means CASPER is the lowest in 3 of the 3 groups"
    no_empty_count(page)


def _group_runs(low, mid, high, seeds=range(6)):
    rows = [{"dataset": "foursquare", "model": "latentcross", "selector": "casper", "seed": s, "status": "computed",
             "jaccard_low": low + 0.001 * s, "jaccard_mid": mid + 0.001 * (s % 2), "jaccard_high": high}
            for s in seeds]
    return pd.DataFrame(rows)


def test_least_stable_counts_by_mean():
    """Random: low lowest; CASPER: mid lowest, and lowest of both methods in the mid and low groups."""
    from recunlearn.report.casper import least_stable_counts

    rows = [{"selector": s, "seed": k, "status": "computed", "jaccard_high": h, "jaccard_mid": m, "jaccard_low": lo}
            for s, h, m, lo in (("random", 0.9, 0.8, 0.7), ("casper", 0.95, 0.5, 0.6)) for k in (0, 1)]
    assert least_stable_counts(pd.DataFrame(rows)) == {"low_least": 1, "methods": 2, "casper_lowest": 2, "groups": 3}
    control = [{**rows[0], "selector": "none", "jaccard_high": 1.0, "jaccard_mid": 1.0, "jaccard_low": 1.0}]
    assert least_stable_counts(pd.DataFrame(rows + control))["methods"] == 2   # the control is no method
    no_casper = pd.DataFrame(rows[:2])
    assert least_stable_counts(no_casper) == {"low_least": 1, "methods": 1, "casper_lowest": 0, "groups": 0}
    assert least_stable_counts(no_casper.iloc[:0]) == {"low_least": 0, "methods": 0, "casper_lowest": 0, "groups": 0}


def test_figure_6_asks_whether_low_mrr_users_are_below_both_other_groups():
    """The paper's claim is about the low-MRR group: a run where mid is the least stable and low sits
    between mid and high must not pass on mid < high (the chain low < mid < high would call it partly)."""
    below_both = mrr_group_claim(_group_runs(0.60, 0.62, 0.63), ["dataset"], groups=("low", "mid", "high"))
    assert below_both["verdict"] == "reproduced"
    assert below_both["claim"] == "Low-MRR users less stable than mid-MRR and high-MRR users (lower Jaccard@10)"
    mid_lowest = mrr_group_claim(_group_runs(0.615, 0.60, 0.63), ["dataset"], groups=("low", "mid", "high"))
    assert mid_lowest["verdict"] == "not reproduced" and "low < mid" in mid_lowest["evidence"]
    assert "mid < high" not in mid_lowest["evidence"]


def test_runs_whose_perturbation_changed_nothing_are_named():
    runs = pd.DataFrame({"model": ["tisasrec", "tisasrec", "lstm", "lstm"],
                         "selector": ["random", "random", "none", "random"], "seed": [0, 1, 0, 0], "status": "computed", "ao": [0.85, 1.0, 1.0, 0.9],
                         "jaccard": [0.8, 1.0, 1.0, 0.88], "mrr_original": [0.1, 0.2, 0.3, 0.3],
                         "mrr_perturbed": [0.1, 0.2, 0.3, 0.29]})
    assert unchanged_runs_text(runs).startswith("1 of 3 perturbed runs left every user's rank list unchanged "
                                                "(TiSASRec, Random, seed 1: AO = Jaccard@10 = 1, the same MRR)")
    assert unchanged_runs_text(runs.iloc[[0, 2, 3]]) == "none of the 2 perturbed runs left every rank list unchanged"


def test_figure_8_states_the_ks_it_has():
    ao = pd.DataFrame({"k": [1, 8], "mean": [0.9056, 0.85]})
    assert ao_by_k_text(ao) == "mean AO 0.9056 at k = 1, 0.8500 at k = 8"
    assert ao_by_k_text(ao.iloc[:1]) == "mean AO 0.9056 at k = 1 (no other k computed yet)"
    assert ao_by_k_text(ao.iloc[:0]) == "mean AO pending (no run computed yet)"


def test_figure_7_claims_can_fail(monkeypatch):
    """Made-up runs where the high-MRR group is the least stable and Random beats CASPER: both fail (9
    seeds: "every group" is tested in each group, six links each (Bonferroni) and three groups (Holm),
    so a unanimous signed-rank test needs 9 pairs: 6 / 2⁹ < 0.05 / 3)."""
    seeds = list(range(9))
    grid = validated(CasperGrid, params("figure-07-mrr-groups", SEEDS=seeds))
    collected = fake_collected(grid)
    runs = collected.runs.copy()
    runs["jaccard_high"], runs["jaccard_low"] = runs["jaccard_low"], runs["jaccard_high"]
    for g in ("high", "mid", "low"):
        runs.loc[runs["selector"] == "random", f"jaccard_{g}"] -= 0.2
    page = builder("figure-07-mrr-groups")(collected=Collected(runs, collected.pending),
                                          **params("figure-07-mrr-groups", SEEDS=seeds))
    texts = page.texts()
    assert texts["claim_low_mrr_least_stable_every_method"].startswith("not reproduced")
    assert texts["claim_casper_lowest_every_group"].startswith("not reproduced")


def test_table_2_with_given_counts(monkeypatch):
    ours = pd.DataFrame({"dataset": ["foursquare"], "label": ["Foursquare"], "raw_users": [2500],
                         "raw_items": [5600], "raw_interactions": [194105], "users": [2106], "items": [5596],
                         "interactions": [192602], "train": [150000], "test": [42602]})
    page = builder("table-02-dataset-statistics")(ours=ours, DATASETS=["foursquare"])
    texts = page.texts()
    assert texts["verdict_foursquare"] == "partly reproduced" and texts["foursquare_items"] == "5,596"
    assert texts["page_verdict"] == "partly reproduced"
    table = shown(page, "comparison", monkeypatch)[0]
    assert table.loc["Foursquare", ("ours", "interactions")] == 192602
    assert table.loc["Foursquare", ("paper", "items")] == 5597


def test_statistics_verdicts_every_branch():
    """Exact counts reproduce; users equal, one item more (the padding index) and the raw interaction
    count is partly reproduced; other users, or one item fewer, is not; no paper row is pending."""
    from recunlearn.report.casper import statistics_verdicts

    ours = pd.DataFrame({"dataset": ["a", "b", "c", "d", "e", "f"], "users": [10, 10, 10, 10, 10, 10],
                         "items": [20, 20, 20, 20, 20, 20], "interactions": [300, 300, 300, 300, 300, 300],
                         "raw_interactions": [310, 310, 310, 310, 310, 310]})
    paper = pd.DataFrame({"dataset": ["a", "b", "c", "d", "f"], "users": [10, 10, 10, 11, 10],
                          "items": [20, 21, 20, 20, 19], "interactions": [300, 310, 301, 300, 300]})
    assert statistics_verdicts(ours, paper) == {"a": "reproduced", "b": "partly reproduced", "c": "partly reproduced",
                                                "d": "not reproduced", "e": "pending", "f": "not reproduced"}


def _position_runs(ao: dict[str, float], seeds: int = 10) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    return pd.DataFrame([{"model": m, "perturbation": p, "selector": s, "seed": k, "status": "computed",
                          "ao": v + 0.001 * k + rng.normal(scale=0.002)}
                         for m in ("lstm", "latentcross") for p in ("loo", "replacement")
                         for s, v in ao.items() for k in range(seeds)])


def test_position_claims_pass_and_fail():
    """Figure 4(a): Earliest-Random lowest in every setting and Random below Latest-Random, then the
    opposite order, then the earliest perturbation lowest in all settings but one."""
    from recunlearn.report.casper import position_claims

    paper = {"earliest": 0.80, "random": 0.85, "latest": 0.88}
    verdicts = position_claims(_position_runs(paper)).set_index("id")["verdict"]
    assert verdicts["earliest_lowest_ao"] == "reproduced" and verdicts["random_below_latest"] == "reproduced"
    opposite = {"earliest": 0.88, "random": 0.85, "latest": 0.80}
    verdicts = position_claims(_position_runs(opposite)).set_index("id")["verdict"]
    assert verdicts["earliest_lowest_ao"] == "not reproduced" and verdicts["random_below_latest"] == "not reproduced"
    runs = _position_runs(paper)
    one = (runs["model"] == "lstm") & (runs["perturbation"] == "loo") & (runs["selector"] == "earliest")
    runs.loc[one, "ao"] += 0.2
    claim = position_claims(runs).set_index("id").loc["earliest_lowest_ao"]
    assert claim["verdict"] == "partly reproduced" and claim["holds in"].startswith("3 of 4"), claim["holds in"]


# --- Figure 8(b): the growth exponent of CASPER's run time -----------------------------------------

def _timings(exponent: float, noise: float, repeats: int = 20, seed: int = 0) -> pd.DataFrame:
    """Made-up scaling rows: time = 1e-7 * n^exponent times log-normal noise, per repeat."""
    rng = np.random.default_rng(seed)
    sizes = np.array([10_000, 20_000, 40_000, 80_000, 129_310])
    rows = []
    for n in sizes:
        times = 1e-7 * n ** exponent * np.exp(rng.normal(0, noise, repeats))
        rows.append({"interactions": n, "total_seconds": float(np.median(times)), "repeat_seconds": times.tolist()})
    return pd.DataFrame(rows)


def test_growth_exponent_known_answers_and_its_interval():
    from recunlearn.report.casper import growth_exponent

    exact = growth_exponent(_timings(1.0, 0.0))
    assert exact["exponent"] == pytest.approx(1.0, abs=1e-9) and exact["low"] == pytest.approx(exact["high"])
    quadratic = growth_exponent(_timings(2.0, 0.05))
    assert quadratic["exponent"] == pytest.approx(2.0, abs=0.05) and quadratic["low"] < 2.0 < quadratic["high"]
    assert growth_exponent(_timings(1.0, 0.05), seed=3) == growth_exponent(_timings(1.0, 0.05), seed=3)  # seeded
    medians_only = _timings(1.5, 0.0).drop(columns="repeat_seconds")
    assert growth_exponent(medians_only)["exponent"] == pytest.approx(1.5)
    assert growth_exponent(medians_only)["repeats"] == 1


@pytest.mark.parametrize("exponent, noise, verdict", [(1.05, 0.05, "reproduced"), (2.0, 0.05, "not reproduced"),
                                                     (1.2, 0.6, "inconclusive")])
def test_near_linear_claim_can_pass_fail_and_be_within_noise(exponent, noise, verdict):
    from recunlearn.report.casper import figure_8_claims, growth_exponent

    runs = pd.DataFrame(columns=["model", "k", "seed", "ao", "status"])
    claims = figure_8_claims(runs, growth_exponent(_timings(exponent, noise))).set_index("id")
    assert claims.loc["runtime_near_linear", "verdict"] == verdict
    assert claims.loc["runtime_near_linear", "holds in"].startswith("b = ")
    assert figure_8_claims(runs, {}).set_index("id").loc["runtime_near_linear", "verdict"] == "pending"


def test_near_linear_claim_with_one_timing_per_size_is_inconclusive():
    from recunlearn.report.casper import figure_8_claims, growth_exponent

    runs = pd.DataFrame(columns=["model", "k", "seed", "ao", "status"])
    once = growth_exponent(_timings(1.0, 0.05, repeats=1))  # the interval collapses to the point
    row = figure_8_claims(runs, once).set_index("id").loc["runtime_near_linear"]
    assert row["verdict"] == "inconclusive" and "a size with a single timing: no interval" in row["holds in"]


def test_fastest_repeats_is_the_lower_envelope_drawn_only_with_every_rows_repeats():
    from recunlearn.report.casper import fastest_repeats, growth_exponent, linear_fit, scaling_figure

    rows = _timings(1.0, 0.2, seed=5)
    fastest = fastest_repeats(rows)
    assert np.array_equal(fastest, [min(r) for r in rows["repeat_seconds"]])
    assert (fastest <= rows["total_seconds"].to_numpy()).all()
    assert fastest_repeats(rows.drop(columns="repeat_seconds")) is None
    parts = rows.assign(score_seconds=rows["total_seconds"] / 2, build_seconds=rows["total_seconds"] / 4)
    fig = scaling_figure(parts, linear_fit(rows["interactions"], rows["total_seconds"]), "t",
                         growth=growth_exponent(rows))
    assert "total, fastest repeat" in [line.get_label() for line in fig.axes[0].get_lines()]


def test_casper_vs_baselines_pairs_by_seed_and_gives_no_p_for_one_pair():
    from recunlearn.report.casper import casper_vs_baselines

    rows = [{"selector": sel, "replacement": "random", "perturbation": "loo", "model": "lstm", "seed": seed,
             "ao": ao + 0.001 * seed * (1 + (sel == "random") * seed)} for seed in range(3)
            for sel, ao in (("casper", 0.80), ("random", 0.85))]
    rows.append({"selector": "tracin", "replacement": "random", "perturbation": "loo", "model": "lstm", "seed": 0,
                 "ao": 0.9})
    table = casper_vs_baselines(pd.DataFrame(rows)).set_index("baseline")
    assert table.loc["Random", "pairs"] == 3 and table.loc["Random", "p (CASPER lower, one-sided)"] < 0.05
    assert table.loc["Random", "columns CASPER lower"] == "1 of 1"
    assert table.loc["TracIn", "pairs"] == 1 and np.isnan(table.loc["TracIn", "p (CASPER lower, one-sided)"])
    assert table.loc["TracIn", "test used"] == "none (1 pair)"


def test_reduced_scale_grid_adds_casper_deletion_sweep():
    """The reduced-scale page reads its CasperGrid's runs and CASPER's deletion at every k of casper_ks
    (k = 1 listed once)."""
    from recunlearn.report.casper import ProtocolGrid, ReducedScaleGrid
    grid = ReducedScaleGrid(models=("lstm",), selectors=("none", "random", "casper"), perturbations=("loo", "replace"),
                            casper_ks=(1, 2, 4), seeds=(0,))
    plain = CasperGrid(models=("lstm",), selectors=("none", "random", "casper"), perturbations=("loo", "replace"),
                       seeds=(0,))
    runs = grid.runs()
    assert len(runs) == len(set(map(record_key, runs)))
    extra = [c for c in runs if record_key(c) not in {record_key(p) for p in plain.runs()}]
    assert sorted((c.selector, c.perturbation, c.k) for c in extra) == [("casper", "loo", 2), ("casper", "loo", 4)]
    assert page_grid("casper/claims-reduced-scale-cpu") is ReducedScaleGrid
    assert page_grid("casper/figure-02-random-loo") is CasperGrid
    assert page_grid("casper/table-03-perturbation-methods") is ProtocolGrid  # Table 3 trains the numberings too


def test_figure_7_one_seed_decides_nothing_about_every_group(monkeypatch):
    """The three MRR groups of one run share its models: they are not three independent pairs."""
    page = fake_page("figure-07-mrr-groups", SEEDS=[0])
    assert page.texts()["claim_casper_lowest_every_group"].startswith("inconclusive")


def _spread_runs(cells: int, casper_std: float, baseline_std: float) -> pd.DataFrame:
    """Three seeds per cell of CASPER and the three random baselines, each selector's AO spread over
    seeds by its ``*_std`` (values -1, 0, +1 times it around 0.8)."""
    rows = []
    for cell in range(cells):
        for selector in ("casper", "random", "earliest", "latest"):
            spread = casper_std if selector == "casper" else baseline_std
            rows += [{"model": f"m{cell}", "selector": selector, "replacement": "random", "seed": seed,
                      "ao": 0.8 + spread * (seed - 1), "status": "computed"} for seed in range(3)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("cells, casper_std, baseline_std, verdict", [
    (6, 0.001, 0.01, "reproduced"), (6, 0.01, 0.001, "not reproduced"), (6, 0.01, 0.01, "inconclusive"),
    (3, 0.001, 0.01, "inconclusive")])
def test_variance_claim_can_pass_fail_be_within_noise_and_says_when_it_cannot_reach_the_level(
        cells, casper_std, baseline_std, verdict):
    from recunlearn.report.casper import variance_claim

    row = variance_claim(_spread_runs(cells, casper_std, baseline_std), ["model"])
    assert row["verdict"] == verdict
    if cells == 3:
        assert "3 cells cannot reach p < 0.05 (smallest p 1/8)" in row["holds in"]
