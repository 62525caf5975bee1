"""Display names, the papers' order, and tables without NaN / -0.0000 (report/names.py, report/compare.py)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd

from recunlearn.report.compare import (DIFFERENCE_HEADER, compare, format_mean_std, mean_std_table, paper_layout,
                                      paper_vs_ours_table)
from recunlearn.report.names import (BookTable, display_frame, display_name, format_number, paper_sorted,
                                    sort_paper_order)

KEYS = ["dataset", "model", "method", "selection"]


def test_display_names():
    expected = {"ndcg_untruncated": "NDCG@20", "hr_cure4rec": "HR@20", "mio_accuracy": "MIO accuracy",
                "a_igf": "A-IGF", "shard_gf": "shardGF", "receraser": "RecEraser", "ultrare": "UltraRE",
                "sisa": "SISA", "retrain": "Retrain", "wmf": "WMF", "bpr": "BPR", "lightgcn": "LightGCN",
                "ml-100k": "ML-100K", "ml-1m": "ML-1M", "adm": "ADM"}
    assert {k: display_name(k) for k in expected} == expected
    assert display_name("something_else") == "something_else"


def test_glance_uses_the_one_mapping():
    from recunlearn.report import glance, names

    assert glance.DISPLAY_NAMES is names.DISPLAY_NAMES and glance.display_name is names.display_name


def test_paper_order():
    assert paper_sorted("method", ["ultrare", "sisa", "retrain", "receraser"]) == ["retrain", "sisa", "receraser",
                                                                                  "ultrare"]
    assert paper_sorted("selection", ["random", "edge", "core"]) == ["core", "random", "edge"]
    assert paper_sorted("dataset", ["adm", "ml-1m", "ml-100k", "other"]) == ["ml-100k", "ml-1m", "adm", "other"]
    frame = pd.DataFrame({"method": ["ultrare", "retrain", "sisa"], "selection": ["edge", "core", "random"]})
    assert list(sort_paper_order(frame, ["method"])["method"]) == ["retrain", "sisa", "ultrare"]


def test_format_number_has_no_nan_or_negative_zero():
    assert format_number(float("nan")) == "—"
    assert format_number(None, missing="pending") == "pending"
    assert format_number(-0.0) == "0.0000"
    assert format_number(-0.00001) == "0.0000"
    assert format_number(-0.00001, signed=True) == "0.0000"
    assert format_number(0.0123, signed=True) == "+0.0123"
    assert format_number(-0.0123, signed=True) == "-0.0123"
    assert format_mean_std(-0.00001, 0.0) == "0.0000 ± 0.0000"
    assert format_mean_std(0.78741, float("nan")) == "0.7874 (1 run)"         # one run: no spread to show
    assert format_mean_std(0.78741, 0.0, n=1) == "0.7874 (1 run)"
    assert format_mean_std(0.7721, 0.006, n=2, of=3) == "0.7721 ± 0.0060 (2 runs)"  # fewer runs than the others
    assert format_mean_std(0.7721, 0.006, n=3, of=3) == "0.7721 ± 0.0060"


def test_mean_std_table_over_seeds_in_paper_order():
    runs = pd.DataFrame({"method": ["sisa", "sisa", "retrain", "retrain", "ultrare"],
                         "seed": [0, 1, 0, 1, 0], "ao": [0.5, 0.7, 0.9, 0.9, float("nan")],
                         "jaccard": [0.1, 0.3, 0.2, 0.2, 0.4]})
    table = mean_std_table(runs, ["method"], ["ao", "jaccard", "absent"])
    assert list(table.index) == ["Retrain", "SISA", "UltraRE"]  # the papers' order, display names
    assert list(table.columns) == ["runs", display_name("ao"), "Jaccard@10"]
    ao = table[display_name("ao")]
    assert ao["SISA"] == "0.6000 ± 0.1414" and ao["Retrain"] == "0.9000 ± 0.0000"  # sample sd (ddof = 1)
    assert ao["UltraRE"] == "—" and table.loc["UltraRE", "Jaccard@10"] == "0.4000 (1 run)"
    assert list(table["runs"]) == [2, 2, 1]
    assert mean_std_table(runs.iloc[:0], ["method"], ["ao"]).empty
    assert mean_std_table(runs, ["method"], ["absent"]).empty


def _comparison():
    rows = [(d, "wmf", m, s) for d in ("ml-1m", "ml-100k") for m in ("ultrare", "retrain", "sisa")
            for s in ("random", "edge", "core")]
    paper = pd.DataFrame(rows, columns=KEYS).assign(metric="ndcg_untruncated", value=0.3)
    ours = paper.rename(columns={"value": "mean"}).assign(std=0.0, n=1)
    ours.loc[0, "mean"] = 0.3 - 1e-7  # rounds to zero difference: must not print -0.0000
    ours.loc[1, "mean"] = 0.31
    ours = ours.drop(index=[2])  # one pending cell
    return compare(ours, paper, KEYS)


def test_paper_vs_ours_table_display():
    table = paper_vs_ours_table(_comparison(), KEYS, ["ndcg_untruncated"])
    assert list(table.columns) == [("NDCG@20", "paper"), ("NDCG@20", "ours"), ("NDCG@20", DIFFERENCE_HEADER),
                                   ("NDCG@20", "check")]
    assert list(table.index.names) == ["Dataset", "Model", "Method", "Selection"]
    assert list(dict.fromkeys(table.index.get_level_values("Dataset"))) == ["ML-100K", "ML-1M"]
    first = table.xs("ML-1M", level="Dataset")
    assert list(dict.fromkeys(first.index.get_level_values("Method"))) == ["Retrain", "SISA", "UltraRE"]
    assert list(first.index.get_level_values("Selection")[:3]) == ["Core", "Random", "Edge"]
    text = table.to_string()
    assert "NaN" not in text and "-0.0000" not in text and "nan" not in text
    diffs = first[("NDCG@20", DIFFERENCE_HEADER)]
    assert diffs[("WMF", "UltraRE", "Random")] == "0.0000"
    assert diffs[("WMF", "UltraRE", "Edge")] == "+0.0100"
    assert diffs[("WMF", "UltraRE", "Core")] == "—"
    assert first[("NDCG@20", "ours")][("WMF", "UltraRE", "Core")] == "pending"


def test_paper_vs_ours_table_with_the_metrics_as_rows_is_four_columns_wide():
    long = paper_vs_ours_table(_comparison(), KEYS, ["ndcg_untruncated"], metrics_as_rows=True)
    assert list(long.columns) == ["paper", "ours", DIFFERENCE_HEADER, "check"]
    assert long.index.names[-1] == "Metric" and set(long.index.get_level_values(-1)) == {"NDCG@20"}
    wide = paper_vs_ours_table(_comparison(), KEYS, ["ndcg_untruncated"])
    assert long.to_numpy().tolist() == wide.to_numpy().tolist()        # the same cells, laid out in rows


def test_paper_layout_is_the_paper_s_table_with_ours_in_each_cell():
    keys = ["model", "method", "selection"]
    cells = [(m, method, sel, metric) for m in ("wmf", "bpr") for method in ("sisa", "retrain")
             for sel in ("edge", "core") for metric in ("hr_cure4rec", "ndcg_untruncated")]
    paper = pd.DataFrame(cells, columns=keys + ["metric"]).assign(value=0.3187)
    ours = paper.rename(columns={"value": "mean"}).assign(std=0.001, n=3)
    ours.loc[0, "mean"] = 0.3188                       # within 2 standard errors (0.0012): marked
    ours.loc[1, "mean"] = 0.2945                       # outside
    ours = ours.drop(index=[2])                        # pending
    extra = pd.DataFrame([("wmf", "ultrare", "core", "ndcg_untruncated", 0.25, 0.0, 3)],
                         columns=keys + ["metric", "mean", "std", "n"])   # a cell the paper lacks
    table = paper_layout(compare(pd.concat([ours, extra]), paper, keys), ["model", "metric"],
                         ["method", "selection"], ["ndcg_untruncated", "hr_cure4rec"])
    assert list(table.index) == [("wmf", "ndcg_untruncated"), ("wmf", "hr_cure4rec"),
                                 ("bpr", "ndcg_untruncated"), ("bpr", "hr_cure4rec")]   # the paper's order
    assert list(table.columns) == [("retrain", "core"), ("retrain", "edge"), ("sisa", "core"), ("sisa", "edge"),
                                   ("ultrare", "core")]
    assert table.loc[("wmf", "hr_cure4rec"), ("sisa", "edge")] == "0.3188 ✓\n(0.3187)"
    assert table.loc[("wmf", "ndcg_untruncated"), ("sisa", "edge")] == "0.2945\n(0.3187)"
    assert table.loc[("wmf", "hr_cure4rec"), ("sisa", "core")] == "pending\n(0.3187)"
    assert table.loc[("wmf", "ndcg_untruncated"), ("ultrare", "core")] == "0.2500"
    assert pd.isna(table.loc[("bpr", "ndcg_untruncated"), ("ultrare", "core")])    # neither side: "—" when shown
    three = paper_layout(compare(ours, paper, keys), ["model", "method", "selection"], ["metric"],
                         ["ndcg_untruncated", "hr_cure4rec"], digits={"hr_cure4rec": 3})
    assert three.loc[("wmf", "sisa", "edge"), "hr_cure4rec"] == "0.319 ✓\n(0.319)"
    assert paper_layout(compare(ours, paper, keys), ["model"], ["method"], ["a_igf"]).empty
    ours.loc[3, "n"] = 1                               # a mean of fewer seeds than the other cells says so
    one = paper_layout(compare(ours, paper, keys), ["model", "method", "selection"], ["metric"],
                       ["ndcg_untruncated"])
    assert one.loc[("wmf", "sisa", "core"), "ndcg_untruncated"] == "0.3187 (1 run) ✓\n(0.3187)"
    assert one.loc[("wmf", "retrain", "core"), "ndcg_untruncated"] == "0.3187 ✓\n(0.3187)"


def test_paper_vs_ours_table_keeps_old_call_and_options():
    comparison = _comparison()
    raw = paper_vs_ours_table(comparison, KEYS, ["ndcg_untruncated"], 3, difference=False, display=False)
    assert list(raw.columns) == [("ndcg_untruncated", "paper"), ("ndcg_untruncated", "ours"),
                                 ("ndcg_untruncated", "check")]
    assert raw.index.names == KEYS


def test_display_frame():
    frame = pd.DataFrame({"method": ["sisa", "retrain"], "a_igf": [-0.0, np.nan]})
    shown = display_frame(frame, ["method"], digits=4)
    assert list(shown.index) == ["Retrain", "SISA"] and shown.index.name == "Method"
    assert list(shown.columns) == ["A-IGF"] and list(shown["A-IGF"]) == ["—", "0.0000"]


def test_rls_axis_zoomed_to_the_data():
    from recunlearn.report.casper import rls_bars

    summary = pd.DataFrame([{"model": m, "selector": s, "metric": "ao", "mean": v, "std": 0.001}
                            for m, s, v in (("lstm", "random", 0.975), ("lstm", "casper", 0.99),
                                            ("latentcross", "random", 0.999), ("latentcross", "casper", 0.98))])
    fig = rls_bars(summary, x="model", hue="selector", metrics=["ao"], title="t")
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    assert 0.9 < low < 0.975 and 1.0 <= high < 1.01
    assert "zoomed" in ax.get_ylabel()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["LSTM", "LatentCross"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Random", "CASPER"]
    assert min(t.get_fontsize() for t in ax.get_xticklabels()) >= 9
    assert fig.get_figwidth() <= 9.0


def test_labelled_writes_labels_and_text_for_a_reader_in_the_papers_order_and_is_idempotent():
    from recunlearn.report.names import labelled

    frame = pd.DataFrame({"dataset": ["ml-1m", "ml-100k"], "model": ["wmf", "lstm"], "selector": ["none", "control"],
                          "n_shards": [10, 5], "ndcg_untruncated": [0.25, 0.5], "status": ["pending", None]})
    table = labelled(frame.set_index(["dataset", "model"]))
    assert list(table.index) == [("ML-100K", "LSTM"), ("ML-1M", "WMF")]  # the paper's dataset order
    assert list(table.index.names) == ["Dataset", "Model"]
    assert list(table.columns) == ["Selection", "Shards", "NDCG@20", "status"]
    assert list(table["Selection"]) == ["control", "control"]  # "none" written "control"; "control" kept
    assert list(table["Shards"]) == [5, 10] and list(table["NDCG@20"]) == [0.5, 0.25]  # numbers untouched
    assert list(table["status"]) == ["—", "pending"]  # a missing text is a dash, never "NaN"
    pd.testing.assert_frame_equal(labelled(table), table)


def test_a_book_table_shows_every_row_a_dash_for_a_missing_number_and_counts_without_decimals():
    frame = pd.DataFrame({"interactions": [99287.0, np.nan] * 40, "ao": [1.0, 0.5] * 40,
                          "time (s)": [0.25, np.nan] * 40, "seed": [0, 2] * 40, "flag": [True, False] * 40})
    html = BookTable(frame)._repr_html_()
    assert "99,287" in html and "99287.0" not in html          # a count: no decimals, thousands separated
    assert "NaN" not in html and html.count(">—<") == 80        # one dash per missing number
    assert "1.0" in html and "0.25" in html                    # shares and scores keep their decimals
    assert "..." not in html and html.count("<tr>") == 80      # every row, never truncated
    assert ">yes<" in html and ">no<" in html and ">True<" not in html   # booleans in words
    assert isinstance(BookTable(frame).head(2), BookTable)
    assert "<th>0</th>" not in html                              # row numbers alone carry nothing
    assert "<th>x</th>" in BookTable(frame.head(1).set_axis(["x"]))._repr_html_()
    measured = BookTable(pd.DataFrame({"ao": [0.786638, 1.0], "seconds": [0.00085, 166.333], "n": [3880.333, 12.0],
                                       "s": [16.064, 2.5]}))
    html = measured._repr_html_()
    assert "0.7866" in html and "0.786638" not in html and "1.0000" in html   # a score column: four decimals
    assert "8.5e-04" in html and "166.3" in html and "3,880.3" in html        # a small time never reads 0.0
    assert "16.06" in html and "2.50" in html
    rounded = BookTable(pd.DataFrame({"share": [0.09, 1.0, 0.46]}))._repr_html_()
    assert "0.09<" in rounded and "0.0900" not in rounded                    # rounded to 2 decimals: shown so
    reordered = BookTable(frame.head(3).iloc[[2, 0, 1]])                 # rows sorted for the reader
    assert "<th>2</th>" not in reordered._repr_html_()
    assert "<th>5</th>" in BookTable(frame.head(2).set_axis([5, 0]))._repr_html_()   # not positions: shown


def test_a_table_wider_than_the_text_column_is_marked_wide():
    from recunlearn.report.names import WIDE_TABLE_CHARACTERS, text_width

    narrow = BookTable(pd.DataFrame({"ao": [0.7866, 1.0]}, index=pd.Index(["Retrain", "SISA"], name="Method")))
    assert text_width(narrow) < WIDE_TABLE_CHARACTERS and 'class="dataframe"' in narrow._repr_html_()
    wide = BookTable(pd.DataFrame({f"metric number {i}": ["0.7866 ± 0.0123"] for i in range(6)}))
    assert text_width(wide) > WIDE_TABLE_CHARACTERS and 'class="dataframe wide"' in wide._repr_html_()
    # two-level headers count their longest level; formatters count what is shown, not the raw float
    frame = pd.DataFrame([[0.123456789]], columns=pd.MultiIndex.from_tuples([("Jaccard@10", "unlearning")]))
    assert text_width(frame, index=False) == len("0.123456789") + 2
    assert text_width(frame, {frame.columns[0]: "{:.2f}".format}, index=False) == len("Jaccard@10") + 2

    # a value on two lines is as wide as its longer line, and its line break reaches the HTML
    two_lines = BookTable(pd.DataFrame({"LSTM": ["0.7866 ± 0.0282\n(paper 0.7799)"]}))
    assert text_width(two_lines, index=False) == len("0.7866 ± 0.0282") + 2
    assert "<td>0.7866 ± 0.0282<br>(paper 0.7799)</td>" in two_lines._repr_html_()


def test_span_text_is_the_smallest_and_largest_value_or_says_there_is_none():
    from recunlearn.report.names import span_text

    assert span_text(pd.Series([0.5183, 0.4912, np.nan]), 3) == "0.491-0.518"
    assert span_text([], 3) == "pending" and span_text([np.nan], 2, empty="none") == "none"
