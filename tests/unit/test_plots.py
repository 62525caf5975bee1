"""Figures: bars of several datasets are drawn one dataset a figure, never averaged together; a value
has one colour, the same in the legend, the bars and every figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from recunlearn.report.plots import method_bars  # noqa: E402


def runs(datasets) -> pd.DataFrame:
    rows = [{"dataset": d, "model": "wmf", "method": m, "selection": "core", "seed": s,
             "ndcg": (10.0 if d == "ml-1m" else 1.0) + s}
            for d in datasets for m in ("retrain", "sisa") for s in (0, 1)]
    return pd.DataFrame(rows)


def bar_heights(figure) -> list[float]:
    return sorted(round(p.get_height(), 6) for ax in figure.axes for p in ax.patches if p.get_height())


def test_two_datasets_are_two_figures_each_with_its_own_bars_and_paper_values():
    paper = pd.DataFrame({"dataset": ["ml-100k", "ml-1m"], "model": "wmf", "method": "sisa", "selection": "core",
                          "value": [1.5, 10.5]})
    figures = method_bars(runs(["ml-1m", "ml-100k"]), "ndcg", "NDCG", paper=paper)
    assert [f.texts[0].get_text() for f in figures] == ["ML-100K: NDCG", "ML-1M: NDCG"]  # the paper's order
    assert bar_heights(figures[0]) == [1.5, 1.5] and bar_heights(figures[1]) == [10.5, 10.5]  # means of its seeds
    diamonds = [[tuple(c.get_offsets()[0]) for c in f.axes[0].collections if len(c.get_offsets())] for f in figures]
    assert [[y for _, y in d] for d in diamonds] == [[1.5], [10.5]]


def test_one_dataset_is_one_figure_named_after_it_and_no_split_keeps_the_title():
    figure = method_bars(runs(["ml-100k"]), "ndcg", "NDCG")
    assert figure.texts[0].get_text() == "ML-100K: NDCG"
    assert method_bars(runs(["ml-100k"]), "ndcg", "NDCG", by=None).texts[0].get_text() == "NDCG"


def test_sweep_lines_split_by_dataset_and_model_in_the_paper_s_order():
    from recunlearn.report.plots import sweep_lines

    rows = [{"dataset": d, "model": m, "extra_deletion": "ced", "n_extra": n, "hit": n + (5 if m == "sasrec" else 0)}
            for d in ("ml-1m", "games") for m in ("sasrec", "gru4rec") for n in (0, 1)]
    figures = sweep_lines(pd.DataFrame(rows), "n_extra", ["hit"], "extra_deletion", "HIT", by=("dataset", "model"))
    titles = [f.texts[0].get_text() for f in figures]
    assert len(titles) == 4 and titles[0].endswith("GRU4Rec: HIT") and titles[1].endswith("SASRec: HIT")
    tops = [max(line.get_ydata().max() for line in f.axes[0].lines if len(line.get_ydata())) for f in figures]
    assert tops == [1, 6, 1, 6]  # each figure its own model's line, never the two averaged


def legend_colours(figure) -> dict[str, tuple]:
    legend = figure.legends[0]
    return {text.get_text(): tuple(handle.get_facecolor())[:3]
            for text, handle in zip(legend.get_texts(), legend.legend_handles)}


def bar_colours(figure) -> set[tuple]:
    return {tuple(p.get_facecolor())[:3] for ax in figure.axes for p in ax.patches if p.get_height()}


def test_a_value_has_one_colour_in_every_dataset_s_figure_even_where_a_dataset_lacks_others():
    frame = pd.concat([runs(["ml-100k"]), runs(["ml-100k"]).assign(selection="random"),
                       runs(["ml-100k"]).assign(selection="edge"),
                       runs(["adm"]), runs(["adm"]).assign(selection="edge")])   # ADM: no random users yet
    whole, part = method_bars(frame, "ndcg", "NDCG")
    assert list(legend_colours(part)) == ["Core", "Edge"]
    assert legend_colours(part)["Edge"] == legend_colours(whole)["Edge"] != legend_colours(whole)["Random"]
    assert bar_colours(part) == {legend_colours(whole)[name] for name in ("Core", "Edge")}  # the legend's exact colour


def test_scatter_points_keep_their_method_s_colour_in_every_dataset_s_figure():
    from recunlearn.report.plots import method_scatter

    frame = runs(["ml-100k", "adm"]).assign(utility=1.0)
    frame = frame[~((frame["dataset"] == "adm") & (frame["method"] == "retrain"))]   # ADM: SISA only
    whole, part = method_scatter(frame, "utility", "ndcg", "NDCG", marker="selection", by="dataset")
    legend = whole.legends[0]
    colour = {text.get_text(): handle.get_color() for text, handle in zip(legend.get_texts(), legend.legend_handles)}
    assert colour["Retrain"] != colour["SISA"]
    assert {line.get_color() for ax in part.axes for line in ax.lines} == {colour["SISA"]}


def test_shard_composition_bars_have_their_legend_s_colours():
    from recunlearn.report.plots import shard_composition

    frame = pd.DataFrame([{"method": "sisa", "selection": "core", "source": source, "shard": shard,
                           "active": shard + (2 if source == "paper" else 0)}
                          for source in ("ours", "paper") for shard in (1, 2)])
    figure = shard_composition(frame, "shards")
    assert bar_colours(figure) == set(legend_colours(figure).values()) and len(legend_colours(figure)) == 2


def test_the_palette_is_the_theme_s_even_before_any_figure_set_it():
    import matplotlib.pyplot as plt

    from recunlearn.report.plots import hue_palette

    plt.rcdefaults()  # matplotlib's own colour cycle, as in a fresh kernel
    colours = hue_palette(runs(["ml-100k"]), "method")
    assert colours["Retrain"] == sns.color_palette("deep")[0]
