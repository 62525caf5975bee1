"""The papers' numbers are typed once, into ``notebooks/paper/*.csv``: prose quotes them through glued
values computed from the transcription, never by retyping them."""

import json
import re

import pandas as pd
import pytest

from recunlearn.paths import REPO_ROOT
from recunlearn.report.cure4rec_scif import MIO_GAP_BAND, paper_gap_text
from recunlearn.report.paper import PAPER_DIR, paper_range, paper_table, paper_values
from recunlearn.report.scoreboard import SCOREBOARD, SUMMARY

DECIMAL = re.compile(r"(?<![\w.])[−-]?\d+\.(\d{3,})(?![\d])")


def test_a_range_is_the_smallest_and_largest_selected_value_at_the_decimals_asked():
    table = pd.DataFrame({"model": ["a", "a", "b"], "metric": ["x", "y", "x"], "value": [0.7557, 0.7934, 0.5]})
    assert paper_range(table, 3, model="a") == "0.756-0.793"
    assert paper_range(table, 2, metric="x") == "0.50-0.76"
    assert paper_range(table, 1, model=["a", "b"], metric="x") == "0.5-0.8"


def test_a_range_of_nothing_or_of_an_unknown_column_is_an_error_naming_it():
    table = pd.DataFrame({"model": ["a"], "value": [0.5]})
    with pytest.raises(ValueError, match="no transcribed row"):
        paper_range(table, 2, model="z")
    with pytest.raises(KeyError, match="'selector'"):
        paper_range(table, 2, selector="casper")


def test_values_are_quoted_with_the_papers_own_digits_and_a_minus_sign():
    learn = paper_values(paper_table("cure4rec-learn"), ["dataset", "model", "metric"])
    assert learn["paper_ml-100k_wmf_ndcg_untruncated"] == "0.3215"
    assert learn["paper_ml-100k_bpr_hr_cure4rec"] == "0.3030"  # a trailing zero the paper prints is kept
    assert learn["paper_ml-100k_wmf_a_igf"] == "−0.0450"
    assert learn["paper_ml-1m_wmf_a_igf"] == "−0.042"  # printed with three decimals
    assert learn["paper_adm_bpr_mio_accuracy"] == "0.759"


def test_the_papers_own_scif_gaps_against_our_band():
    # Tables 1 and 5: 18 (dataset, backbone, set) cells, SCIF − Retrain MIO accuracy 0.012 ... 0.083
    assert MIO_GAP_BAND == (0.01, 0.08)
    assert paper_gap_text(paper_table("cure4rec-table-01-05")) == (
        "its own 18 cells lie between 0.012 and 0.083 (mean 0.035), 17 of them inside the band")


def test_the_casper_ranges_quoted_on_table_3():
    table = paper_table("casper-table-03")
    assert paper_range(table, 3, model="lstm") == "0.756-0.793"
    assert paper_range(table, 2, selector="casper", perturbation="replace", model=["jodie", "latentcross"]) == \
        "0.52-0.67"


def _prose() -> dict[str, str]:
    """Every markdown cell of every notebook and every page of the book written by hand (the status page
    and the scoreboard are written by ``python -m recunlearn status`` from our results)."""
    generated = {"status.md", SCOREBOARD, SUMMARY}
    texts = {}
    for notebook in sorted((REPO_ROOT / "notebooks").rglob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        texts[str(notebook.relative_to(REPO_ROOT))] = "\n".join(
            "".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    for page in sorted(p for p in (REPO_ROOT / "book").rglob("*.md") if p.name not in generated):
        texts[str(page.relative_to(REPO_ROOT))] = page.read_text(encoding="utf-8")
    return texts


def test_no_prose_retypes_a_transcribed_number_of_three_or_more_decimals():
    printed = set()
    for path in sorted(PAPER_DIR.glob("*.csv")):
        text = pd.read_csv(path, dtype=str, keep_default_na=False).drop(columns="source", errors="ignore")
        printed |= {value.lstrip("-") for value in text.to_numpy().ravel() if re.fullmatch(r"-?\d+\.\d{3,}", value)}
    assert len(printed) > 300  # the transcriptions were read
    retyped = {f"{name}: {match.group(0)}" for name, text in _prose().items() for match in DECIMAL.finditer(text)
               if match.group(0).lstrip("−-") in printed}
    assert not retyped, f"glue these from notebooks/paper instead of typing them: {sorted(retyped)}"


def test_the_scif_page_quotes_the_papers_learn_range_and_gaps():
    from recunlearn.report.cure4rec_scif import paper_quote_values

    assert paper_quote_values(paper_table("cure4rec-table-01-05"), paper_table("cure4rec-learn")) == {
        "paper_learn_mio_range": "0.72–0.76", "mio_gap_band": "0.01-0.08",
        "paper_mio_gap_cells": "its own 18 cells lie between 0.012 and 0.083 (mean 0.035), 17 of them inside the band"}


@pytest.mark.parametrize("notebook, keys", [
    ("casper/table-03-perturbation-methods", ["paper_lstm_range", "paper_unbounded_casper_replace_range",
                                             "paper_loo_margins"]),
    ("cure4rec/table-01-05-scif-completeness", ["paper_learn_mio_range", "mio_gap_band", "paper_mio_gap_cells"]),
    ("cure4rec/learn-baselines", ["paper_ml-100k_wmf_ndcg_untruncated", "paper_ml-100k_bpr_hr_cure4rec",
                                  "paper_ml-100k_wmf_a_igf", "paper_ml-100k_bpr_a_igf"])])
def test_the_quoted_ranges_and_values_are_glued_where_the_prose_quotes_them(notebook, keys):
    # the guard above sees retyped numbers of three decimals or more; these quotes have fewer, or are ranges
    prose = _prose()[f"notebooks/{notebook}.ipynb"]
    assert [key for key in keys if f"{{glue:text}}`{key}`" not in prose] == []
