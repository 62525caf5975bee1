"""The pages of the book's own chapter (bystanders/q1-q4) built from made-up runs: tables, notices,
claims and checks, with no training."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recunlearn.experiments.config import ConfigError
from recunlearn.report.pages import Page
from recunlearn.report.pages import bystanders_q1_unlearning_moves_bystanders as q1

Q1_PARAMS = dict(DATASETS=["ml-100k"], MODELS=["wmf"], METHODS=["retrain", "sisa"], SELECTIONS=["random"],
                 SEEDS=[0, 1, 2], MAX_EPOCHS=2, COMPUTE_MISSING=False)


def made_up_q1_runs(pending: int = 0) -> pd.DataFrame:
    """Seed-level bystander runs where unlearning moves lists more than its controls (by a gap that varies
    with the seed: a paired test sees a spread) and SISA less than Retrain; the last ``pending`` configs
    are listed as pending instead."""
    from recunlearn.experiments.bystanders import BystanderGrid

    grid = BystanderGrid.from_params(Q1_PARAMS)
    configs = grid.runs()
    rows = []
    for config in configs[:len(configs) - pending]:
        base = {"retrain": 0.75, "sisa": 0.9}[config.method]
        shift = {"unlearn": 0.0, "reinit-only": 0.02, "random-rows": 0.03}[config.control]
        value = base + shift + 0.001 * config.seed + 0.0002 * config.seed ** 2 * (config.control != "unlearn")
        rows.append({"dataset": config.dataset, "model": config.model, "method": config.method,
                     "control": config.control, "selection": config.selection, "seed": config.seed,
                     "ao": value, "rbo_min": value - 0.2, "jaccard": value - 0.4, "share_identical_top_k": 0.1,
                     "ndcg_untruncated_before": 0.3, "ndcg_untruncated_after": 0.29, "n_bystanders": 896,
                     "record": f"k{len(rows)}"})
    frame = pd.DataFrame(rows)
    frame.attrs["pending"] = [c.to_dict() for c in configs[len(configs) - pending:]] if pending else []
    return frame


def test_q1_page_from_made_up_runs_judges_its_hypotheses():
    page = q1.build(runs=made_up_q1_runs(), **Q1_PARAMS)
    assert isinstance(page, Page) and list(page.notices) == ["claims"]
    assert page.notice("claims").what == "Our hypotheses" and "2 of 5" in page.notice("claims").why
    claims = page.claims.set_index("id")["verdict"]
    assert claims["bystanders_unlearning_moves_lists"] == "reproduced"  # 6 pairs, all one way: p = 1/64
    who = page.claims.set_index("id").loc["bystanders_who_matters"]  # Retrain only: 3 pairs, a paired t-test
    assert who["verdict"] == "reproduced" and who["test"].startswith("one-sided paired t-test")
    assert claims["bystanders_core_moves_more"] == "pending"
    table = page.tables["table"]  # a row per method, the after models side by side
    assert list(table.index.get_level_values("Method")) == ["Retrain", "SISA"]
    assert table[("", "runs")].tolist() == [3, 3]
    assert table.loc[(slice(None),) * 3 + ("Retrain",), ("Jaccard@10", "re-init. only")].iloc[0] == "0.371 ± 0.001"
    assert table[("Jaccard@10", "random rows")].tolist()[1] == "—"  # random rows: Retrain only
    assert [c for c, _ in table.columns[1:]] == ["Jaccard@10"] * 3 + ['AO (paper\'s "RBO")', "identical top 10",
                                                                      "NDCG@20 after"]
    assert claims["bystanders_disturbance_follows_utility"] == "pending"  # two methods: nothing to rank
    assert page.checks[0].splitlines()[0].split() == q1.CHECKED


def test_q1_figure_is_one_figure_per_dataset_titled_with_it():
    runs = made_up_q1_runs()
    both = pd.concat([runs, runs.assign(dataset="ml-1m")], ignore_index=True)
    figures = q1.figure(both)
    assert [f._suptitle.get_text().split(":")[0] for f in figures] == ["ML-100K", "ML-1M"]
    assert [[ax.get_title() for ax in f.axes if ax.get_title()] for f in figures] == [["WMF"], ["WMF"]]
    assert q1.figure(runs)._suptitle.get_text().startswith("ML-100K: bystanders' top 10")


def test_q1_page_with_pending_runs_says_so_and_how_to_compute_them(monkeypatch):
    from page_checks import shown

    from recunlearn.report.pages import Notice

    page = q1.build(runs=made_up_q1_runs(pending=3), **Q1_PARAMS)
    notice = page.notice("table")
    assert notice.partial and "3 of 15 runs" in notice.text() and "python -m recunlearn" in notice.command
    assert [type(x) for x in shown(page, "table", monkeypatch)][-1] is Notice
    assert not any(isinstance(x, Notice) for x in shown(page, "figure", monkeypatch))  # said once a page
    assert [type(x) for x in shown(page, "table", monkeypatch)][-1] is Notice   # a re-run cell says it again
    empty = q1.build(runs=made_up_q1_runs(pending=15), **Q1_PARAMS)
    assert empty.is_pending("table") and empty.is_pending("figure") and empty.checks == ["pending"]


def test_q1_page_refuses_a_wrong_parameter_before_any_compute():
    with pytest.raises(ConfigError, match="METHOD"):
        q1.build(runs=made_up_q1_runs(), **{**Q1_PARAMS, "METHOD": ["retrain"]})


# --- questions 2-4 ------------------------------------------------------------------------------------------------

def pending_attrs(frame: pd.DataFrame, configs: list, n_pending: int) -> pd.DataFrame:
    frame.attrs["pending"] = [c.to_dict() for c in configs[len(configs) - n_pending:]] if n_pending else []
    return frame


def test_q2_page_tests_the_cascade_trend_within_each_seed():
    from recunlearn.experiments.bystanders import CascadeGrid
    from recunlearn.report.pages import bystanders_q2_who_is_unlearned as q2

    params = dict(MODELS=["wmf"], SELECTION_SEEDS=list(range(6)), SEEDS=[0, 1], MAX_EPOCHS=2, COMPUTE_MISSING=False)
    configs = CascadeGrid.from_params(params).runs()
    assert len(configs) == 2 * (6 + 2)  # core and edge once, random once per selection seed
    rng = np.random.default_rng(0)
    share = {(c.selection, c.selection_seed): rng.uniform(0.85, 0.99) for c in configs}
    rows = [{"dataset": c.dataset, "model": c.model, "method": c.method, "selection": c.selection,
             "selection_seed": c.selection_seed, "seed": c.seed, "removed_rows": int(share[c.selection, c.selection_seed]
                                                                                        * 1000),
             "cascade_reach": 0, "cascade_share": share[c.selection, c.selection_seed],
             "disturbance": share[c.selection, c.selection_seed] / 4 + 0.01 * c.seed, "ao": 0.0, "jaccard": 0.3}
            for c in configs]
    page = q2.build(runs=pending_attrs(pd.DataFrame(rows), configs, 0), **params)
    claims = page.claims.set_index("id")
    assert claims.loc["bystanders_cascade_predicts", "verdict"] == "reproduced"  # ρ = 1 in both seeds, 8 sets
    assert claims.loc["bystanders_cascade_predicts", "holds in"] == "2 of 2 cells significant"
    flat = q2.build(runs=pending_attrs(pd.DataFrame(rows).assign(disturbance=0.25), configs, 0), **params)
    assert flat.claims.set_index("id").loc["bystanders_cascade_predicts", "verdict"] == "inconclusive"
    assert page.values["n_sets"] == 8 and len(page.tables["table"]) == 8


def made_up_stability_runs(params: dict, shard_ao: float) -> tuple[pd.DataFrame, list]:
    from recunlearn.experiments.stability import StabilityGrid

    configs = StabilityGrid.from_params(params).runs()
    rows = []
    for c in configs:
        retrain = c.method == "retrain"
        noise = 0.001 * c.seed + (0.0005 + 0.0001 * c.seed if c.state == "unlearned" else 0.0)  # a spread over seeds
        ao_shard = (0.95 if retrain else shard_ao) + noise
        rows.append({"dataset": c.dataset, "model": c.model, "method": c.method, "state": c.state,
                     "selector": c.selector, "selection": c.selection, "seed": c.seed, "ao_shard": ao_shard,
                     "ao": ao_shard if retrain else 1 - (1 - ao_shard) / 10, "jaccard": 0.8, "jaccard_shard": 0.7,
                     "share_identical_top_k": 0.5, "n_shard_users": 896 if retrain else 90})
    return pd.DataFrame(rows), configs


def test_q3_page_judges_sharding_and_stability_after_unlearning():
    from recunlearn.report.pages import bystanders_q3_stability_after_unlearning as q3

    params = dict(MODELS=["wmf", "bpr"], METHODS=["retrain", "sisa", "receraser", "ultrare"], SELECTORS=["random"],
                  SEEDS=[0, 1, 2], MAX_EPOCHS=2, COMPUTE_MISSING=False)
    frame, configs = made_up_stability_runs(params, shard_ao=0.85)
    page = q3.build(runs=pending_attrs(frame, configs, 0), **params)
    claims = page.claims.set_index("id")["verdict"]
    assert claims["stability_shards_shelter"] == "reproduced"  # over all users a sharded model moves less
    assert claims["stability_shard_more_sensitive"] == "reproduced"  # its shard's users move more
    assert claims["stability_unchanged_by_unlearning"] == "reproduced"  # unlearned − learned = 0.0005-0.0007
    assert page.checks[0].splitlines()[0].split() == q3.CHECKED
    page.figures["figure"]()  # every page's figures are drawn from computed runs, not only checked by claims
    pending = q3.build(runs=pending_attrs(frame.iloc[:0].copy(), configs, len(configs)), **params)
    assert pending.is_pending("table")  # 2 epochs: not the plan's runs, so a run command computes them
    assert pending.notice("table").command.startswith("python -m recunlearn run cure4rec-stability")


def test_q4_page_needs_both_runs_of_a_cell_and_tests_completeness_against_chance():
    from recunlearn.experiments.bystanders import BystanderConfig, TradeoffGrid
    from recunlearn.experiments.cure4rec_scif import ExactMioConfig, ScifConfig
    from recunlearn.report.pages import bystanders_q4_completeness_vs_disturbance as q4

    params = dict(MODELS=["wmf"], METHODS=["retrain", "sisa"], SELECTIONS=["core", "random", "edge"],
                  SEEDS=[0, 1, 2], MAX_EPOCHS=2, COMPUTE_MISSING=False)
    configs = TradeoffGrid.from_params(params).runs()
    kinds = [type(c) for c in configs]
    assert (kinds.count(BystanderConfig), kinds.count(ExactMioConfig), kinds.count(ScifConfig)) == (18, 18, 9)
    assert {(c.max_epochs, c.mio_seeds) for c in configs if isinstance(c, ScifConfig)} == {(2, 5)}  # the same cells
    rows = [{"dataset": c.dataset, "model": c.model, "method": c.method, "selection": c.selection, "seed": c.seed,
             "ao": 0.8, "rbo_min": 0.5, "jaccard": 0.4, "disturbance": 0.2 if c.method == "retrain" else 0.05,
             "mio_accuracy": 0.5, "mio_auc": 0.5 + 0.004 * (c.seed - 1) + 0.001 * (c.method == "sisa"),
             "learn_mio_auc": 0.7 + 0.01 * c.seed}
            for c in configs if isinstance(c, BystanderConfig)]
    page = q4.build(runs=pending_attrs(pd.DataFrame(rows), configs, 0), **params)
    claims = page.claims.set_index("id")
    assert claims.loc["tradeoff_complete_at_chance", "verdict"] == "reproduced"
    assert claims.loc["tradeoff_no_completeness_cost", "verdict"] == "reproduced"
    assert claims.loc["tradeoff_oracle_has_power", ["verdict", "kind"]].tolist() == ["reproduced", "self-check"]
    assert len(page.tables["table"]) == 2
    # an oracle that cannot tell members apart even before unlearning: chance after it says nothing
    powerless = pd.DataFrame(rows).assign(learn_mio_auc=lambda d: 0.5 + 0.002 * (d["seed"] - 1))
    claims = q4.build(runs=pending_attrs(powerless, configs, 0), **params).claims.set_index("id")
    assert claims.loc["tradeoff_oracle_has_power", "verdict"] == "not reproduced"
    assert claims.loc["tradeoff_complete_at_chance", "verdict"] == "inconclusive"
    assert "oracle's power before unlearning is not established" in claims.loc["tradeoff_complete_at_chance",
                                                                               "evidence"]
    # power established for one backbone of two: completeness holds partly at best
    two = dict(params, MODELS=["wmf", "bpr"])
    configs = TradeoffGrid.from_params(two).runs()
    rows = [{"dataset": c.dataset, "model": c.model, "method": c.method, "selection": c.selection, "seed": c.seed,
             "ao": 0.8, "rbo_min": 0.5, "jaccard": 0.4, "disturbance": 0.1, "mio_accuracy": 0.5,
             "mio_auc": 0.5 + 0.004 * (c.seed - 1), "learn_mio_auc": (0.7 if c.model == "wmf" else 0.5) + 0.01 * c.seed}
            for c in configs if isinstance(c, BystanderConfig)]
    claims = q4.build(runs=pending_attrs(pd.DataFrame(rows), configs, 0), **two).claims.set_index("id")
    assert claims.loc["tradeoff_oracle_has_power", "verdict"].startswith("partly reproduced")
    assert claims.loc["tradeoff_complete_at_chance", "verdict"].startswith("partly reproduced")
    assert "the oracle's power in some backbones only" in claims.loc["tradeoff_complete_at_chance", "holds in"]
    # power established in every backbone computed, some runs still to come: pending, not "some backbones"
    one = [r for r in rows if r["model"] == "wmf" and r["seed"] < 2]
    configs_one = [c for c in configs if getattr(c, "model", None) == "wmf"]
    waiting = [c for c in configs_one if isinstance(c, BystanderConfig) and c.seed == 2]
    frame = pd.DataFrame(one)
    frame.attrs["pending"] = [c.to_dict() for c in waiting]
    claims = q4.build(runs=frame, **dict(params)).claims.set_index("id")
    complete = claims.loc["tradeoff_complete_at_chance"]
    assert complete["verdict"].startswith("partly reproduced") and "runs pending" in complete["holds in"]
    assert "some backbones only" not in complete["holds in"]


def test_pages_without_a_computed_run_show_only_their_notices():
    from recunlearn.experiments.bystanders import CascadeGrid, TradeoffGrid
    from recunlearn.report.pages import bystanders_q2_who_is_unlearned as q2
    from recunlearn.report.pages import bystanders_q4_completeness_vs_disturbance as q4

    params = dict(MODELS=["wmf"], SEEDS=[0], MAX_EPOCHS=2, COMPUTE_MISSING=False)
    from recunlearn.experiments.bystanders import CASCADE_COLUMNS

    configs = CascadeGrid.from_params(params).runs()
    page = q2.build(runs=pending_attrs(pd.DataFrame(columns=CASCADE_COLUMNS), configs, len(configs)), **params)
    assert page.is_pending("table") and page.is_pending("figure") and set(page.claims["verdict"]) == {"pending"}
    configs = TradeoffGrid.from_params(params).runs()  # 12 bystander, 12 MIO and 3 Learn MIO (SCIF) runs
    empty = pd.DataFrame(columns=["dataset", "model", "method", "selection", "seed", "disturbance", "mio_auc"])
    page = q4.build(runs=pending_attrs(empty, configs, len(configs) // 2), **params)
    assert page.is_pending("figure") and "13 of 27 runs" in page.notice("figure").text()


def test_a_count_series_is_shown_as_a_table():
    """A page's run counts are a Series; shown, they are a one-column frame (an HTML table in the
    book), with the same values, never pandas' plain-text printout of a Series."""
    counts = pd.Series({"computed": 15, "waiting for CPU time": 24}, name="runs").rename_axis("status")
    page = Page("bystanders/example", tables={"runs": counts})
    shown = page.show("runs")
    assert isinstance(shown, pd.DataFrame) and list(shown.columns) == ["runs"]
    assert shown["runs"].to_dict() == counts.to_dict() and shown.index.name == "status"


def test_q2_to_q4_figures_draw_one_figure_per_dataset():
    import matplotlib.pyplot as plt
    from recunlearn.report.bystanders import cascade_figure, stability_figure, tradeoff_figure

    params = dict(MODELS=["wmf"], METHODS=["retrain", "sisa"], SELECTORS=["random"], SEEDS=[0, 1],
                  MAX_EPOCHS=2, COMPUTE_MISSING=False)
    frame, _ = made_up_stability_runs(params, shard_ao=0.85)
    two = pd.concat([frame, frame.assign(dataset="ml-1m")], ignore_index=True)
    runs = two.assign(disturbance=1 - two["ao"], mio_auc=0.5, cascade_share=0.1, selection="random")

    def titles(drawn):
        figures = [getattr(d, "figure", d) for d in (drawn if isinstance(drawn, list) else [drawn])]
        out = [f._suptitle.get_text().split(":")[0] for f in figures]
        plt.close("all")
        return out

    for draw in (cascade_figure, stability_figure, tradeoff_figure):
        assert titles(draw(runs)) == ["ML-100K", "ML-1M"], draw.__name__


def test_q2_figure_colours_the_unlearning_sets_as_every_other_figure_does():
    import matplotlib.pyplot as plt
    import seaborn as sns
    from matplotlib.colors import to_rgb

    from recunlearn.report.bystanders import cascade_figure

    runs = pd.DataFrame([{"dataset": "ml-100k", "model": "wmf", "selection": sel, "seed": seed,
                          "cascade_share": 0.1 * i, "disturbance": 0.2}
                         for i, sel in enumerate(["random", "edge", "core"]) for seed in (0, 1)])  # random first
    grid = cascade_figure(runs)
    legend = grid.legend
    colours = {t.get_text(): to_rgb(h.get_facecolor()[0] if hasattr(h, "get_facecolor") else h.get_color())
               for t, h in zip(legend.get_texts(), legend.legend_handles) if t.get_text() in ("Core", "Random", "Edge")}
    deep = sns.color_palette("deep")
    assert colours == {"Core": deep[0], "Random": deep[1], "Edge": deep[2]}   # the paper's order: core, random, edge
    plt.close("all")
