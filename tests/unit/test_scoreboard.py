"""The scoreboard on synthetic executed notebooks: totals by verdict, pending claims and pages,
links, pages rendered before ``page_claims`` existed, and texts that survive the glue round trip."""

from __future__ import annotations

import json

from recunlearn.report.scoreboard import (book_pages, glued_texts, page_claims, page_entry, paper_totals,
                                          render_scoreboard, render_scoreboard_from, render_summary_from,
                                          totals_text, write_scoreboard)
from recunlearn.report.status import PaperItem


def glue_output(name: str, value: str) -> dict:
    """An output as ``myst_nb.glue(name, value, display=False)`` writes it."""
    return {"output_type": "display_data", "data": {"application/papermill.record/text/plain": repr(value)},
            "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}}}


def notebook(title: str, glued: dict[str, str], parameters: dict | None = None, records: dict | None = None,
             profile: str = "paper") -> dict:
    meta = {"profile": profile, "parameters": parameters or {"DATASETS": ["ml-100k"], "SEEDS": [0, 1, 2]}}
    if records is not None:
        meta["run_records"] = records
    return {"cells": [{"cell_type": "markdown", "source": f"# {title}"},
                      {"cell_type": "code", "outputs": [glue_output(k, v) for k, v in glued.items()]}],
            "metadata": {"recunlearn": meta}}


def claim(id: str, verdict: str, statement: str = "A is above B") -> dict:
    return {"id": id, "claim": statement, "verdict": verdict, "holds": "3 of 3 cells", "p_value": "p = 0.004",
            "test": "one-sided Wilcoxon signed-rank", "evidence": "pooled over cells"}


CLAIMS = [claim("a_above_b", "reproduced (3 of 3 cells; p = 0.004)"),
          claim("b_above_c", "not reproduced (0 of 3 cells; p = 0.9)"),
          claim("c_on_core", "pending")]
NEW = notebook("CURE4Rec Table 2 — utility of exact unlearning",
               {"page_verdict": "partly reproduced (1 of 3 claims pending)", "page_summary": "claims: ...",
                "page_scale": "ML-100K; WMF; 3 seeds", "page_coverage": "8 of 216 paper cells computed",
                "page_difference": "median |ours - paper| 0.01", "page_pending": "ML-1M and ADM: not run yet",
                "page_claims": json.dumps(CLAIMS)},
               records={"records": 324, "computed": 0, "pending": 0, "devices": ["cpu"], "commits": {}})
OLD = notebook("CURE4Rec Figure 4 — the number of shards",  # rendered before page verdicts and page_claims
               {"claims_0": "partly reproduced (1 of 2 cells)", "claim_trend": "inconclusive",
                "claim_trend_evidence": "rho = 0.1", "within_tol": "3 of 4", "verdict_ml-100k": "reproduced"},
               parameters={"SEEDS": [0, 1, 2]})


def pages() -> list[dict]:
    return [{"paper": "CURE4Rec", "item": "Table 2", "title": "Utility", "link": "cure4rec/table-02.ipynb",
             "datasets": ("ml-100k", "ml-1m", "adm"), "notebook": NEW},
            {"paper": "CURE4Rec", "item": "Figure 4", "title": "Shards", "link": "cure4rec/figure-04.ipynb",
             "datasets": ("ml-100k",), "notebook": OLD},
            {"paper": "SRU", "item": "-", "title": "Session-based", "link": "", "datasets": (), "notebook": None}]


def test_totals_count_every_claim_by_verdict_pending_included():
    entries = [page_entry(p) for p in pages()]
    totals = paper_totals(entries)
    cure = totals["CURE4Rec"]
    assert cure["claims"] == 5 and cure["pages"] == 2 and cure["rendered"] == 2
    assert dict(cure["verdicts"]) == {"reproduced": 1, "not reproduced": 1, "pending": 1, "partly reproduced": 1,
                                      "inconclusive": 1}
    assert totals_text(cure) == ("5 claims: 1 reproduced, 1 partly reproduced, 1 not reproduced, 1 inconclusive, "
                                 "1 pending; 2 of 2 pages rendered")
    assert totals_text(totals["SRU"]) == "not started"


def test_self_checks_are_listed_but_not_counted_and_claims_tested_twice_are_named():
    checked = CLAIMS + [{**claim("scorer_matches_bfs", "reproduced (1 of 1 cells)", "The scorer equals a BFS"),
                         "kind": "self-check"}]
    page = notebook("CASPER Figure 4 — position", {"page_verdict": "reproduced", "page_claims": json.dumps(checked)})
    again = notebook("CASPER claims — reduced", {"page_verdict": "reproduced", "page_claims": json.dumps(CLAIMS[:1])},
                     parameters={"MAX_ROWS": 20000, "SEEDS": [0]})
    entries = [page_entry({"paper": "CASPER", "item": item, "title": "t", "link": f"casper/{item}.ipynb",
                           "datasets": ("foursquare",), "notebook": nb}) for item, nb in (("f4", page), ("r", again))]
    total = paper_totals(entries)["CASPER"]
    assert total["claims"] == 4 and total["distinct"] == 3 and total["checks"] == 1 and total["checks_passed"] == 1
    assert totals_text(total) == ("4 tests of 3 claims (1 of them at a reduced scale, not the paper's): 2 reproduced, "
                                  "0 partly reproduced, 1 not reproduced, 0 inconclusive, 1 pending; 2 of 2 pages "
                                  "rendered; also 1 self-check of our implementation, 1 passing")
    text = render_scoreboard_from(entries)
    assert "| Self-check: The scorer equals a BFS (`scorer_matches_bfs`) | **reproduced (1 of 1 cells)** |" in text


def test_scoreboard_has_totals_rows_links_and_verdicts():
    text = render_scoreboard_from([page_entry(p) for p in pages()])
    assert text.startswith("# Scoreboard")
    assert "| CURE4Rec | 5 | 1 | 1 | 1 | 1 | 1 | 2 of 2 |" in text
    assert "| SRU | 0 | 0 | 0 | 0 | 0 | 0 | 0 of 1 |" in text
    claim_row = ("| [Table 2](cure4rec/table-02.ipynb) | A is above B (`a_above_b`) | **reproduced (3 of 3 cells; "
                 "p = 0.004)** | one-sided Wilcoxon signed-rank; p = 0.004 |")
    assert claim_row in text
    assert "| [Table 2](cure4rec/table-02.ipynb) | A is above B (`c_on_core`) | **pending** |" in text
    page_row = next(line for line in text.splitlines() if line.startswith("| [Table 2]") and "page verdict" not in line
                    and "8 of 216" in line)
    assert "**partly reproduced (1 of 3 claims pending)**" in page_row
    assert "ML-100K; WMF; 3 seeds; 324 run records (cpu)" in page_row
    assert "ML-1M and ADM: not run yet" in page_row
    assert "## SRU" in text and "**not started.**" in text


def test_pages_rendered_before_page_claims_fall_back_to_glued_claim_verdicts():
    entry = page_entry(pages()[1])
    assert [c["id"] for c in entry["claims"]] == ["0", "trend"]
    assert entry["verdict"].startswith("not published")
    text = render_scoreboard_from([entry])
    assert ("| [Figure 4](cure4rec/figure-04.ipynb) | `0` (statement not published) "
            "| **partly reproduced (1 of 2 cells)**") in text
    assert "`trend` (statement not published) | **inconclusive** | rho = 0.1 |" in text
    assert "ML-100K; 3 seeds" in text  # the item's dataset when the render's parameters do not name one
    assert "run records not traced" in text


def test_summary_has_one_line_per_paper_with_a_link_to_the_scoreboard():
    summary = render_summary_from([page_entry(p) for p in pages()])
    lines = [line for line in summary.splitlines() if line.startswith("- ")]
    assert lines == ["- **CURE4Rec**: 5 claims: 1 reproduced, 1 partly reproduced, 1 not reproduced, 1 inconclusive, "
                     "1 pending; 2 of 2 pages rendered.", "- **SRU**: not started."]
    assert "(scoreboard.md)" in summary
    named = [line for line in summary.splitlines() if line.startswith("  - ")]   # the claims, by verdict
    assert named == ["  - *reproduced*: A is above B ([Table 2](cure4rec/table-02.ipynb), ML-1M and ADM not run).",
                     "  - *not reproduced*: A is above B ([Table 2](cure4rec/table-02.ipynb), ML-1M and ADM not "
                     "run)."]  # the paper's datasets its page was not rendered with
    own = render_summary_from([page_entry({**pages()[0], "paper": "Beyond the papers"})])
    assert "  - *holds in our runs*: A is above B" in own and "  - *does not hold in our runs*: A" in own


def test_the_summary_names_a_claim_passing_on_the_runs_so_far_apart_from_one_partly_reproduced():
    """Two claims partly reproduced with runs pending: one reproduced on the runs computed so far (named as
    passing so far, with its runs pending), one partly reproduced on them (only counted)."""
    waiting = [{**claim("a_above_b", "partly reproduced (3 of 3 cells; 9 of 27 runs pending; p = 0.004)"),
                "holds": "3 of 3 cells; 9 of 27 runs pending", "so_far": "reproduced"},
               {**claim("b_above_c", "partly reproduced (2 of 3 cells; 9 of 27 runs pending)", "B is above C"),
                "holds": "2 of 3 cells; 9 of 27 runs pending", "so_far": "partly reproduced"}]
    page = notebook("CURE4Rec Table 3", {"page_verdict": "partly reproduced", "page_claims": json.dumps(waiting)},
                    parameters={"DATASETS": ["ml-100k", "ml-1m", "adm"]})
    entry = page_entry({"paper": "CURE4Rec", "item": "Table 3", "title": "t", "link": "cure4rec/t3.ipynb",
                        "datasets": ("ml-100k", "ml-1m", "adm"), "notebook": page})
    named = [line for line in render_summary_from([entry]).splitlines() if line.startswith("  - ")]
    assert named == ["  - *partly reproduced, passing so far*: A is above B ([Table 3](cure4rec/t3.ipynb); 9 of 27 runs "
                     "pending)."]
    reduced = notebook("CURE4Rec claims", {"page_verdict": "reproduced", "page_claims": json.dumps(
        [claim("a_above_b", "reproduced (1 of 1 cells)")])}, parameters={"MAX_ROWS": 20000, "SEEDS": [0]})
    again = page_entry({"paper": "CURE4Rec", "item": "r", "title": "t", "link": "cure4rec/r.ipynb",
                        "datasets": ("ml-100k",), "notebook": reduced})
    assert [line for line in render_summary_from([entry, again]).splitlines() if line.startswith("  - ")] == named
    own = render_summary_from([{**entry, "paper": "Beyond the papers"}])
    assert "  - *holds in our runs so far, runs pending*: A is above B" in own
    assert paper_totals([entry])["CURE4Rec"]["verdicts"]["partly reproduced"] == 2  # counted as what they are


def test_the_summary_names_a_claim_by_its_paper_scale_verdict_where_both_scales_test_it():
    """The reduced-scale page has a_above_b and b_above_c reproduced, c_above_d not reproduced; the
    paper-scale page has a_above_b inconclusive, b_above_c not reproduced and c_above_d pending:
    a_above_b is named with its paper-scale verdict beside it, b_above_c by its paper-scale verdict
    alone, c_above_d at a reduced scale (no paper-scale verdict yet)."""
    paper = notebook("CASPER Table 3", {"page_verdict": "inconclusive", "page_claims": json.dumps(
        [claim("a_above_b", "inconclusive (0 of 1 cells)"), claim("b_above_c", "not reproduced", "B is above C"),
         claim("c_above_d", "pending", "C is above D")])}, parameters={"DATASETS": ["foursquare"]})
    reduced = notebook("CASPER claims", {"page_verdict": "partly reproduced", "page_claims": json.dumps(
        [claim("a_above_b", "reproduced (1 of 1 cells)"), claim("b_above_c", "reproduced", "B is above C"),
         claim("c_above_d", "not reproduced (0 of 1 cells)", "C is above D")])},
        parameters={"MAX_ROWS": 20000, "SEEDS": [0]})
    entries = [page_entry({"paper": "CASPER", "item": item, "title": "t", "link": f"casper/{item}.ipynb",
                           "datasets": ("foursquare",), "notebook": nb}) for item, nb in (("t3", paper), ("r", reduced))]
    named = [line for line in render_summary_from(entries).splitlines() if line.startswith("  - ")]
    assert named == ["  - *reproduced*: A is above B ([r](casper/r.ipynb), at a reduced scale; at the paper's scale "
                     "inconclusive, [t3](casper/t3.ipynb)).",
                     "  - *not reproduced*: B is above C ([t3](casper/t3.ipynb)); C is above D ([r](casper/r.ipynb), "
                     "at a reduced scale)."]


def test_glued_texts_survive_quotes_escapes_and_pipes():
    tricky = [claim("x", "reproduced", statement="CASPER's \"RBO\" | AO\nstays\\high")]
    entry = page_entry({**pages()[0], "notebook": notebook("T", {"page_claims": json.dumps(tricky)})})
    assert entry["claims"][0]["claim"] == "CASPER's \"RBO\" | AO\nstays\\high"
    assert "CASPER's \"RBO\" \\| AO stays\\high" in render_scoreboard_from([entry])
    assert glued_texts(notebook("T", {"n": "it's"})) == {"n": "it's"}
    assert page_claims({"page_claims": "[]", "claim_x": "reproduced"}) == []  # page_claims wins over legacy names


def test_reduced_scale_and_smoke_renders_are_labelled():
    reduced = notebook("CASPER claims", {"claim_a": "reproduced"}, parameters={"DATASETS": ["foursquare"],
                                                                               "MAX_ROWS": 20000, "EPOCHS": 10})
    entry = page_entry({**pages()[0], "paper": "CASPER", "notebook": reduced})
    assert entry["reduced"] and entry["scale"].startswith("reduced scale, not the paper's: first 20,000 rows")
    assert "1 claim (1 of them tested at a reduced scale, not the paper's): 1 reproduced" in totals_text(paper_totals([entry])["CASPER"])
    smoke = page_entry({**pages()[0], "notebook": notebook("T", {}, profile="smoke")})
    assert smoke["scale"].startswith("smoke profile only")


def test_book_pages_merge_items_of_one_notebook_and_write_both_files(tmp_path):
    (tmp_path / "cure4rec").mkdir()
    (tmp_path / "cure4rec" / "table-01.ipynb").write_text(json.dumps(NEW))
    (tmp_path / "cure4rec" / "extra.ipynb").write_text(json.dumps(OLD))
    items = [PaperItem("CURE4Rec", "Table 1", "WMF", "cure4rec/table-01", ("ml-100k",), 0),
             PaperItem("CURE4Rec", "Table 5", "BPR", "cure4rec/table-01", ("ml-100k",), 0),
             PaperItem("SRU", "-", "SRU", None, (), 0)]
    found = book_pages(tmp_path, items)
    assert [p["item"] for p in found] == ["Table 1, Table 5", "-", "extra"]
    assert found[2]["paper"] == "CURE4Rec" and found[2]["link"] == "cure4rec/extra.ipynb"
    write_scoreboard(tmp_path, items)
    assert "[Table 1, Table 5](cure4rec/table-01.ipynb)" in (tmp_path / "scoreboard.md").read_text()
    assert "- **SRU**: not started." in (tmp_path / "scoreboard-summary.md").read_text()
    assert render_scoreboard(tmp_path, items) == (tmp_path / "scoreboard.md").read_text()
    figure = (tmp_path / "scoreboard.svg").read_bytes()          # the introduction's picture, byte-stable
    assert figure.startswith(b"<?xml")
    write_scoreboard(tmp_path, items)
    assert (tmp_path / "scoreboard.svg").read_bytes() == figure
    assert "![Claim tests by verdict, per paper](scoreboard.svg)" in (tmp_path / "scoreboard-summary.md").read_text()


def test_the_scoreboard_figure_has_a_bar_per_paper_split_by_verdict():
    from recunlearn.report.scoreboard import scoreboard_figure

    entries = [page_entry(p) for p in pages()]
    figure = scoreboard_figure(entries)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["CURE4Rec (5)", "SRU (0)"]
    widths = {}
    for patch in ax.patches:
        row = round(patch.get_y() + patch.get_height() / 2)
        widths[row] = widths.get(row, 0) + patch.get_width()
    assert widths == {0: 5, 1: 0}                                  # one test per verdict in the made-up pages
    assert [t.get_text() for t in ax.texts] == ["1"] * 5


def test_status_rows_name_datasets_and_models_as_a_reader_reads_them(tmp_path, monkeypatch):
    import json

    from recunlearn.report import status

    page = tmp_path / "cure4rec" / "learn-baselines.ipynb"
    page.parent.mkdir()
    meta = {"profile": "paper", "parameters": {"DATASETS": ["ml-100k"], "MODELS": ["wmf", "lightgcn"], "SEEDS": [0]},
            "run_records": {"records": 3, "devices": ["cpu"], "commits": {}, "pending": 0}}
    page.write_text(json.dumps({"cells": [], "metadata": {"recunlearn": meta}}))
    monkeypatch.setattr(status, "BOOK_DIR", tmp_path)
    item = status.PaperItem("CURE4Rec", "Tables 1, 5", "the Learn rows", "cure4rec/learn-baselines",
                            ("ml-100k", "ml-1m"), 1)
    row = status.item_status(item)
    assert row["status"].startswith("paper settings: ML-100K (models: WMF, LightGCN; seeds: 0)")
    assert row["pending"] == "ML-1M (not run)"


def test_the_status_page_has_a_narrow_table_per_paper_naming_every_item():
    """Per paper one four-column table (item, verdict, computed, pending) with a row per item, so the
    page reads without scrolling sideways; devices and commits follow in a table of their own."""
    from recunlearn.report import status

    text = status.render_status_page()
    for paper in dict.fromkeys(item.paper for item in status.ITEMS):
        section = text.split(f"\n## {paper}\n", 1)[1].split("\n## ", 1)[0]
        rows = [line for line in section.splitlines() if line.startswith("| ")]
        assert rows[0] == "| item | verdict | computed | pending, and how to compute it |"
        assert all(line.count(" | ") == 3 for line in rows), paper
        assert len(rows) == 1 + sum(item.paper == paper for item in status.ITEMS)
    assert "\n## Records behind each page\n" in text and "| item | device | commits |" in text


def test_measured_choices_of_the_authors_code_are_listed_apart_from_the_claims():
    """A page's ``page_variants`` (its comparisons of the authors' choices with their alternatives) are
    listed under its paper, with the version the page's other numbers use, and are not counted as claims."""
    variants = [{"section": "latentcross_cell", "choice": "LatentCross built on an LSTM cell",
                 "used": "LSTM cell (authors' code, ours)", "finding": "with the GRU cell, AO is 0.998 | 0.998"}]
    glued = {"page_verdict": "partly reproduced", "page_scale": "Foursquare; 3 seeds",
             "page_claims": json.dumps(CLAIMS[:1]), "page_variants": json.dumps(variants)}
    page = {"paper": "CASPER", "item": "Table 3", "title": "Table 3", "link": "casper/table-03.ipynb",
            "datasets": ("foursquare",), "notebook": notebook("CASPER Table 3", glued)}
    entries = [page_entry(page), *(page_entry(p) for p in pages())]
    assert entries[0]["variants"] == variants and entries[1]["variants"] == [] and entries[3]["variants"] == []
    text = render_scoreboard_from(entries)
    casper = text.split("\n## CASPER")[1].split("\n## ")[0]
    assert "### Choices of the authors' code, measured" in casper
    assert ("| LatentCross built on an LSTM cell | LSTM cell (authors' code, ours) | with the GRU cell, AO is 0.998 "
            "\\| 0.998 |") in casper
    assert "Choices of the authors' code" not in text.split("\n## CASPER")[0]  # CURE4Rec has none
    assert paper_totals(entries)["CASPER"]["claims"] == 1  # the comparison is no claim
    assert "a choice the paper does not state" in casper


def test_the_sru_choices_say_the_paper_text_was_not_available():
    """SRU's paper text was not available, so its measured choices are not said to differ from the paper."""
    variants = [{"section": "centroid", "choice": "scalar anchors", "used": "per-dimension mean", "finding": "none"}]
    glued = {"page_verdict": "partly reproduced", "page_scale": "Games; 3 seeds",
             "page_claims": json.dumps(CLAIMS[:1]), "page_variants": json.dumps(variants)}
    page = {"paper": "SRU", "item": "Abstract's claims", "title": "Abstract's claims", "link": "sru/claims.ipynb",
            "datasets": ("games",), "notebook": notebook("SRU claims", glued)}
    sru = render_scoreboard_from([page_entry(page)]).split("\n## SRU")[1]
    assert "### Choices of the authors' code, measured" in sru and "| scalar anchors |" in sru
    assert "full text was not available" in sru and "the paper does not state" not in sru


def test_expectations_and_other_readings_are_listed_apart_and_paper_numbers_are_counted():
    from recunlearn.report.verdicts import cell_counts, page_summary
    import pandas as pd

    comparison = pd.DataFrame({"paper": [0.5, 0.6, 0.7, 0.8], "ours": [0.5, 0.9, float("nan"), 0.8],
                               "within_tol": [True, False, False, True]})
    summary = page_summary(None, comparison)
    assert dict(cell_counts(summary)) == {"pass": 2, "fail": 1, "pending": 1}   # the summary's own numbers, read back
    assert dict(cell_counts("paper cells: 5 pending")) == {"pending": 5} and not cell_counts("claims: 1 reproduced")
    kinds = CLAIMS[:1] + [{**claim("time_falls_batched", "not reproduced (0 of 1 cells)", "Time falls, shards together"),
                           "kind": "other reading"},
                          {**claim("more_shards_faster", "reproduced (1 of 1 cells)", "Faster with more shards"),
                           "kind": "own expectation"},
                          {**claim("q4_power", "partly reproduced (6 of 6 cells; 2 of 54 runs pending)", "Power"),
                           "kind": "self-check"}]
    page = notebook("CURE4Rec Figure 4 — shards", {"page_verdict": "reproduced", "page_claims": json.dumps(kinds),
                                                   "page_summary": f"claims: 1 reproduced; {summary}"})
    reduced = notebook("CURE4Rec claims — reduced", {"page_verdict": "reproduced", "page_claims": json.dumps(CLAIMS[:1])},
                       parameters={"MAX_ROWS": 20000, "SEEDS": [0]})
    entries = [page_entry({"paper": "CURE4Rec", "item": item, "title": "t", "link": f"cure4rec/{item}.ipynb",
                           "datasets": ("ml-100k",), "notebook": nb}) for item, nb in (("f4", page), ("r", reduced))]
    total = paper_totals(entries)["CURE4Rec"]
    assert total["claims"] == 2 and dict(total["verdicts"]) == {"reproduced": 2}
    text = totals_text(total)
    assert "also 1 expectation of our own (not counted: 1 reproduced)" in text
    assert "also 1 other reading of a claim (not counted: 1 not reproduced)" in text
    assert "also 1 self-check of our implementation, 0 passing, 1 still waiting for runs" in text
    summary_md = render_summary_from(entries)
    assert "- **CURE4Rec**: **Paper numbers: 2 of 3 computed comparisons within tolerance; 1 more waiting for runs.** 2 tests of 1 claim" in summary_md
    assert "A is above B ([f4](cure4rec/f4.ipynb))" in summary_md   # answered at the paper's scale: named once
    assert "A is above B ([r](cure4rec/r.ipynb), at a reduced scale)" not in summary_md
    assert "Time falls, shards together" not in summary_md and "Faster with more shards" not in summary_md
    board = render_scoreboard_from(entries)
    assert "| Other reading: Time falls, shards together (`time_falls_batched`) |" in board
    assert "| Our expectation: Faster with more shards (`more_shards_faster`) |" in board
    assert "| CURE4Rec | 2 | 2 | 0 | 0 | 0 | 0 | 2 of 2 | 2 of 3 computed (1 pending) |" in board


def test_a_page_judged_by_parts_still_publishes_its_paper_cells_for_the_tally():
    import pandas as pd

    from recunlearn.report.glance import page_facts
    from recunlearn.report.verdicts import cell_counts

    comparison = pd.DataFrame({"paper": [1.0, 2.0], "ours": [1.0, 3.0], "within_tol": [True, False]})
    facts = page_facts(None, comparison, parts={"wikipedia": "reproduced", "lastfm": "not reproduced"})
    assert facts["page_summary"].endswith("; paper cells: 1 of 2 within tolerance, 1 outside, 0 pending")
    assert dict(cell_counts(facts["page_summary"])) == {"pass": 1, "fail": 1, "pending": 0}


def test_long_commit_subjects_are_cut_at_a_word_with_an_ellipsis():
    from recunlearn.report.status import short_subject

    assert short_subject("Records: 3 runs") == "Records: 3 runs"
    cut = short_subject("Review: " + "the paired t-test is the existing band_p over [0, inf), " * 3)
    assert len(cut) <= 92 and cut.endswith(" …") and not cut[:-2].endswith((",", ";", ":"))
