"""The "at a glance" facts of a page (scale, pending, coverage, difference, claims JSON), the
parameters table, and the page checks that every study notebook must pass."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recunlearn.experiments.casper import CasperGrid
from recunlearn.experiments.cure4rec_exact import ExactGrid
from recunlearn.report.claims import claim_row, claims_frame
from recunlearn.report.verdicts import page_summary, page_verdict
from recunlearn.report.glance import (coverage_text, difference_text, page_facts, paper_datasets, parameters_table,
                                      pending_text, recorded_text, scale_text, with_page_runs)
from recunlearn.report.page_check import glue_references, missing_glue, problems

REPO = Path(__file__).resolve().parents[2]


def test_parameters_table_lists_upper_snake_names_in_order_with_readable_values():
    namespace = {"In": [], "DATASETS": ["ml-100k", "ml-1m"], "MAX_ROWS": 20000, "grid": object(), "DEVICE": "cpu",
                 "EXACT_MIO_MODELS": None, "COMPUTE_MISSING": False, "pd": pd}
    table = parameters_table(namespace)
    assert list(table.columns) == ["parameter", "value used"]
    assert table.values.tolist() == [["DATASETS", "ml-100k, ml-1m"], ["MAX_ROWS", "20,000"], ["DEVICE", "cpu"],
                                     ["EXACT_MIO_MODELS", "None"], ["COMPUTE_MISSING", "False"]]


def test_parameters_table_of_a_page_lists_every_parameter_it_accepts():
    """The notebook's parameters first, then the others of the page's grid at their defaults, each with
    what it accepts; the thousands separator inside a list is a thin space, not a comma."""
    from recunlearn.experiments.cure4rec_exact import ExactGrid

    table = parameters_table({"SHARD_COUNTS": [5, 10], "MAX_EPOCHS": 2, "pd": pd}, "cure4rec/figure-04-shard-number")
    assert table["parameter"].tolist()[:2] == ["SHARD_COUNTS", "MAX_EPOCHS"]
    assert sorted(table["parameter"]) == sorted(name.upper() for name in ExactGrid.parameter_names())
    rows = table.set_index("parameter")
    assert rows.loc["MAX_EPOCHS"].tolist() == ["2", "parameters cell", "a whole number ≥ 1"]
    injected = parameters_table({"In": ["", "# Parameters\nMAX_EPOCHS = 500\n"], "MAX_EPOCHS": 500, "SEEDS": [0]},
                                "cure4rec/figure-04-shard-number").set_index("parameter")
    assert injected.loc["MAX_EPOCHS", "set by"] == "papermill" and injected.loc["SEEDS", "set by"] == "parameters cell"
    assert rows.loc["TIMING", "value used"] == "batched" and rows.loc["TIMING", "set by"] == "default"
    assert rows.loc["TIMING", "allowed"].startswith("one of batched, sequential, alone (batched: ")
    assert rows.loc["MODELS", "allowed"] == "any of wmf, bpr, lightgcn"
    assert rows.loc["RATIOS", "allowed"] == "a list of numbers from 0 to 100 (percentages of users)"
    casper = parameters_table({}, "casper/figure-08-perturbation-count-and-runtime").set_index("parameter")
    assert casper.loc["MAX_ROWS", "allowed"] == "None or a whole number ≥ 1"
    assert casper.loc["SCALING_SIZES", "value used"].startswith("10\u2009000, 20\u2009000")
    assert casper.loc["MODELS", "allowed"] == "a list of one of lstm, tisasrec, jodie, latentcross"  # one drawn
    assert casper.loc["SEEDS", "allowed"] == "a list of whole numbers ≥ 0"
    scif = parameters_table({}, "cure4rec/table-01-05-scif-completeness").set_index("parameter")
    assert scif.loc["EXACT_MIO_MODELS", "allowed"].startswith("None or any of wmf, bpr, lightgcn (")


def test_scale_of_a_grid_and_of_recorded_parameters():
    grid = ExactGrid(models=("wmf", "lightgcn"), selections=("core", "random"), seeds=(0, 1, 2), methods=("sisa",))
    assert scale_text(grid) == "ML-100K; WMF, LightGCN; SISA; core, random users; 3 seeds; up to 500 epochs; CPU"
    assert scale_text({"DATASETS": ["foursquare"], "MAX_ROWS": 20000, "EPOCHS": 10, "SEEDS": [0]}) == \
        "first 20,000 rows of Foursquare; 1 seed; 10 epochs"
    assert scale_text({"DATASETS": ["ml-100k", "adm"]}) == "ML-100K, ADM (whole files)"
    statistics = {"DATASETS": ["games", "beauty"], "REDUCED_DATASETS": ["games"], "MAX_SESSIONS": 5000}
    assert scale_text(statistics) == "Games, Beauty (BERT4Rec version) (whole files); also the first 5,000 sessions of Games"
    assert scale_text({**statistics, "MAX_SESSIONS": None}) == "Games, Beauty (BERT4Rec version) (whole files)"
    assert scale_text({"DATASETS": ["games"], "MAX_SESSIONS": 5000, "MAX_EPOCHS": 30, "SEEDS": [0, 1]}) == \
        "first 5,000 sessions of Games; 2 seeds; up to 30 epochs"


def test_the_scale_of_a_partly_computed_page_says_what_has_a_record_per_dataset():
    grid = ExactGrid(datasets=("ml-100k", "ml-1m"), models=("wmf", "bpr", "lightgcn"), seeds=(0, 1),
                     selections=("random",), methods=("sisa",))
    runs = pd.DataFrame({"dataset": ["ml-1m", "ml-100k", "ml-100k", "ml-1m"],
                         "model": ["wmf", "lightgcn", "wmf", "wmf"], "seed": [0, 0, 1, 1]})
    runs.attrs["pending"] = [{"dataset": "ml-1m", "model": "bpr"}] * 8
    assert recorded_text(grid, runs) == ("so far 4 of 12 runs, with a record for ML-100K: WMF (seed 1), LightGCN "
                                         "(seed 0); ML-1M: WMF (seeds 0, 1)")
    assert page_facts(None, grid=grid, runs=runs)["page_scale"] == f"{scale_text(grid)} ({recorded_text(grid, runs)})"
    runs.attrs["pending"] = []
    assert recorded_text(grid, runs) == "" and page_facts(None, grid=grid, runs=runs)["page_scale"] == scale_text(grid)
    casper = CasperGrid(datasets=("foursquare",), seeds=(0, 1, 2))
    statuses = pd.DataFrame({"dataset": "foursquare", "model": ["lstm", "jodie", "jodie"], "seed": [0, 1, 2],
                             "status": ["computed", "computed", "pending GPU"]})
    assert recorded_text(casper, statuses) == \
        "so far 2 of 3 runs, with a record for Foursquare: LSTM (seed 0), JODIE (seed 1)"
    both = statuses.assign(seed=[0, 0, 1])
    assert recorded_text(casper, both) == "so far 2 of 3 runs, with a record for Foursquare: LSTM, JODIE (seed 0)"
    assert recorded_text(casper, statuses.assign(status="pending GPU")) == "so far no run has a record (0 of 3)"


def test_paper_datasets_and_pending_name_what_is_missing_and_why():
    grid = ExactGrid(seeds=(0,), selections=("random",), compute_missing=False)
    assert paper_datasets(grid) == ("ml-100k", "ml-1m", "adm")
    assert paper_datasets(ExactGrid(shard_counts=(5, 10))) == ("ml-100k",)  # the sweeps are on ML-100K only
    runs = pd.DataFrame({"model": ["wmf"]})
    runs.attrs["pending"] = [c.to_dict() for c in grid.runs()[:2]]
    assert pending_text(grid, runs) == ("ML-1M and ADM: not run yet (need a GPU or many CPU-hours); "
                                        "2 of 4 runs waiting for CPU time: WMF 2")
    assert coverage_text(grid, runs) == "1 of 3 paper datasets; 2 of 4 runs have a record"
    several = with_page_runs(runs, 30, pd.DataFrame({"model": ["wmf", "bpr", "bpr"]}))  # a page of several grids
    assert coverage_text(grid, several).endswith("27 of 30 runs have a record")
    assert pending_text(grid, several).endswith("3 of 30 runs waiting for CPU time: BPR 2, WMF 1")
    assert runs.attrs.get("run_total") is None                                  # the page's frame, not the caller's
    two = ExactGrid(datasets=("ml-100k", "ml-1m"), seeds=(0,), selections=("random",), compute_missing=False)
    only_first = pd.DataFrame({"dataset": ["ml-100k"], "model": ["wmf"]})
    assert coverage_text(two, only_first).startswith("2 of 3 paper datasets (1 with a computed run); ")
    from recunlearn.experiments.bystanders import BystanderGrid
    own = BystanderGrid(datasets=("ml-100k", "ml-1m"), seeds=(0,), selections=("random",))
    assert coverage_text(own, only_first).startswith("2 of 2 datasets of the question (1 with a computed run)")
    casper = CasperGrid(datasets=("foursquare",), device="cuda", only_cached=True)
    statuses = pd.DataFrame({"status": ["computed", "pending GPU", "pending GPU"]})
    assert pending_text(casper, statuses) == "2 of 3 runs pending GPU"
    assert pending_text(casper, statuses.iloc[:1]) == "nothing"


def test_difference_and_coverage_from_a_comparison():
    comparison = pd.DataFrame({"paper": [0.5, 0.2, 1.0, np.nan], "ours": [0.45, 0.2, np.nan, 0.3]})
    assert coverage_text(comparison=comparison) == "2 of 3 paper cells computed"
    assert difference_text(comparison) == "median |ours - paper| 0.025 (5.0 % of the paper value) over 2 computed cells"
    assert difference_text(None) == "no paper numbers compared on this page"


def test_self_checks_decide_a_page_but_are_counted_apart_from_its_claims():
    claims = claims_frame([claim_row("a", "A above B", "reproduced", "3 of 3 cells", 0.004),
                           claim_row("b", "B above C", "pending"),
                           claim_row("bfs", "scorer equals BFS", "reproduced", "1 of 1 cells", kind="self-check")])
    assert page_summary(claims) == "claims: 1 reproduced, 1 pending; self-checks: 1 of 1 pass"
    assert page_verdict(claims) == "partly reproduced (1 of 2 claims pending)"
    failing = claims_frame([claim_row("bfs", "scorer equals BFS", "not reproduced", kind="self-check")])
    assert page_verdict(failing) == "not reproduced (self-checks only: no paper claim or number tested)"
    passing = claims_frame([claim_row("bfs", "scorer equals BFS", "reproduced", kind="self-check")])
    assert page_verdict(passing) == "reproduced (self-checks only: no paper claim or number tested)"
    with pytest.raises(ValueError, match="kind"):
        claim_row("x", "x", "reproduced", kind="check")


def test_page_facts_publish_claims_as_json_and_parts_verdicts():
    claims = claims_frame([claim_row("a_above_b", "A above B", "reproduced", "3 of 3 cells", 0.004, "Wilcoxon", "e"),
                           claim_row("c", "C", "pending")])
    facts = page_facts(claims, grid=ExactGrid(seeds=(0,)))
    assert set(facts) == {"page_verdict", "page_summary", "page_scale", "page_pending", "page_coverage",
                          "page_difference", "page_claims"}
    published = json.loads(facts["page_claims"])
    assert published[0] == {"id": "a_above_b", "claim": "A above B", "verdict": "reproduced (3 of 3 cells; p = 0.004)",
                            "holds": "3 of 3 cells", "p_value": "p = 0.004", "test": "Wilcoxon", "evidence": "e",
                            "kind": "paper", "so_far": ""}
    assert published[1]["verdict"] == "pending" and published[1]["p_value"] == ""
    # pending claims and paper datasets not run are not reproduced yet
    assert facts["page_verdict"] == "partly reproduced (1 of 2 claims pending; 2 paper datasets not run)"
    parts = page_facts(None, parts={"wikipedia": "partly reproduced", "lastfm": "not reproduced"})
    assert parts["page_verdict"] == "partly reproduced"
    assert parts["page_summary"] == "Wikipedia: partly reproduced; LastFM-10%: not reproduced"
    assert parts["page_claims"] == "[]" and parts["page_scale"] == "not stated"


def _glued(name):
    return {"output_type": "display_data", "data": {"application/papermill.record/text/plain": "'x'"},
            "metadata": {"scrapbook": {"name": name}}}


def test_page_check_finds_glue_names_that_are_used_but_not_glued():
    notebook = {"cells": [
        {"cell_type": "markdown", "source": "# Title"},
        {"cell_type": "markdown", "source": ":::{admonition} At a glance\n{glue:text}`page_verdict` "
                                            "{glue}`n:.0f`\n```{glue:figure} fig\n```\n:::"},
        {"cell_type": "code", "metadata": {"tags": ["nbval-check-output", "hide-input"]},
         "outputs": [_glued("page_verdict")], "source": ""},
        {"cell_type": "code", "metadata": {}, "outputs": [_glued("n")], "source": ""}]}
    assert glue_references(notebook) == {"page_verdict", "n", "fig"}
    assert missing_glue(notebook) == ["fig"]
    assert problems(notebook) == ["glue name used in markdown but not glued: fig", "code cells without hide-input: [3]"]


STUDY_NOTEBOOKS = sorted(p for p in (REPO / "notebooks").glob("*/*.ipynb") if not p.name.startswith("."))


@pytest.mark.parametrize("path", STUDY_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_study_notebooks_open_with_the_box_and_fold_their_code(path):
    """The smoke outputs glue every name of the box; other glue names may be paper-profile only
    (e.g. the Learn page's ``test`` validation), which the book's renders are checked for by
    ``python -m recunlearn.report.page_check``."""
    notebook = json.loads(path.read_text())
    assert [p for p in problems(notebook) if not p.startswith("glue name used")] == []
    box = glue_references({"cells": [notebook["cells"][1]]})
    assert {"page_verdict", "page_summary", "page_scale", "page_coverage", "page_pending"} <= box
    assert sorted(box & set(missing_glue(notebook))) == []
    assert any("show_parameters(globals()" in "".join(c["source"]) for c in notebook["cells"])


@pytest.mark.parametrize("path", STUDY_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_study_notebooks_print_the_box_in_plain_text_outside_the_book(path):
    """A notebook read in Jupyter or as papermill's output shows no glued value; the cell after the
    build prints the box's facts instead, and the book removes that cell."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    build = next(i for i, c in enumerate(cells) if "page = build(" in "".join(c["source"]))
    glance = cells[build + 1]
    assert "page.glance()" in "".join(glance["source"]) and "remove-cell" in glance["metadata"]["tags"]


def test_the_plain_text_box_gives_the_verdict_the_scale_and_every_claim_with_its_kind():
    from recunlearn.report.pages import Page

    claims = claims_frame([claim_row("a_beats_b", "A beats B", "reproduced", "3 of 3 cells", 0.01),
                           claim_row("c_rises", "C rises", "inconclusive", kind="own expectation")])
    text = Page("x/y", claims=claims).glance_text()
    assert text.startswith("Verdict: ")
    assert "Computed at: " in text and "Pending, and why: " in text
    assert "- A beats B: reproduced (3 of 3 cells" in text
    assert "- Our expectation: C rises: inconclusive" in text


def test_a_render_below_the_paper_profile_says_its_comparison_tests_nothing():
    from recunlearn.report.glance import below_paper_settings

    page = "cure4rec/learn-baselines"  # its paper profile: up to 500 epochs, whole files
    assert below_paper_settings(page, {"MAX_EPOCHS": 2}) == "up to 2 epochs, not 500"
    assert below_paper_settings(page, {"MAX_EPOCHS": 500}) == ""
    assert below_paper_settings("casper/figure-02-random-loo", {"MAX_ROWS": 2000, "EPOCHS": 50}).startswith(
        "the first 2,000 rows, not all")
    assert below_paper_settings("no/such-page", {"MAX_EPOCHS": 2}) == ""
    facts = page_facts(None, grid=ExactGrid(max_epochs=2), page="cure4rec/table-02-eu-utility")
    assert "below this page's paper profile (up to 2 epochs, not 500)" in facts["page_scale"]
    assert facts["page_scale"].endswith("whose verdicts say nothing about the paper")  # no paper numbers given
    assert below_paper_settings("sru/table-dataset-statistics", {"MAX_SESSIONS": 300}) == ""  # trains nothing
    assert "below" not in page_facts(None, grid=ExactGrid(max_epochs=2))["page_scale"]  # no page, no profile


@pytest.mark.parametrize("path", STUDY_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_parameter_left_out_of_a_hand_run_keeps_the_smoke_setting(path):
    """The README: a parameter papermill is not given keeps the value of the notebook's parameters cell,
    the smoke profile's."""
    import yaml

    cell = next(c for c in json.loads(path.read_text())["cells"]
                if "parameters" in c.get("metadata", {}).get("tags", []))
    defaults: dict = {}
    exec("".join(cell["source"]), {}, defaults)
    smoke = yaml.safe_load((REPO / "notebooks" / "params" / path.parent.name / f"{path.stem}.smoke.yml").read_text())
    assert {k: v for k, v in smoke.items() if k not in defaults or defaults[k] != v} == {}


def test_the_claims_json_carries_each_claims_verdict_on_the_runs_computed_so_far():
    """What the scoreboard reads of a page's claims: a claim whose runs partly wait carries its verdict on
    the computed runs (``so_far``), the others an empty one."""
    from recunlearn.report.claims import with_waiting
    from recunlearn.report.glance import claims_json

    holds = claim_row("a_above_b", "A above B", "reproduced", "3 of 3 cells")
    rows = json.loads(claims_json(claims_frame([with_waiting(holds, 9, 18), {**holds, "id": "done"}])))
    assert [(r["id"], r["verdict"], r["so_far"]) for r in rows] == [
        ("a_above_b", "partly reproduced (3 of 3 cells; 9 of 27 runs pending)", "reproduced"),
        ("done", "reproduced (3 of 3 cells)", "")]
