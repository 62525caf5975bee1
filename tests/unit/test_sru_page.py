"""The SRU pages: claims and tables on made-up runs, builders that validate their parameters before any
compute, one notice for pending content (never an empty table), and no glued sentence counting nothing."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import yaml

from recunlearn import paths
from recunlearn.experiments.config import ConfigError
from recunlearn.experiments.sru import RUN_KEYS, SruConfig, SruStatisticsParams
from recunlearn.report.names import display_name
from recunlearn.report.pages import EMPTY_COUNT, Notice, page_grid
from recunlearn.report.sru import (HIT_RANDOM, ablation_claims, effectiveness_table, efficiency_claim,
                                   efficiency_table, extra_deletion_claim, extra_deletion_points, more_extra_deletion_claim,
                                   overview_table, partition_table, share_of_retrain, shard_count_table, sru_claims,
                                   unlearning_share_of_full_training)

PARAMS = paths.REPO_ROOT / "notebooks" / "params" / "sru"
RUN_PAGES = ["ablations", "claims-abstract", "recommendation-accuracy", "unlearning-effectiveness",
             "unlearning-efficiency"]
"""The SRU pages with runs (all but the dataset statistics)."""
CREATED = pd.Timestamp("2026-12-01", tz="UTC")
NDCG = {"retrain": 0.10, "sisa": 0.07, "receraser": 0.08, "sru": 0.095}
SECONDS = {"retrain": 100.0, "sisa": 10.0, "receraser": 20.0, "sru": 20.0}
ALL_RETRAINED = {"retrain": 100.0, "sisa": 50.0, "receraser": 60.0, "sru": 60.0}  # every shard + the aggregator


def run_row(method, seed, rng, extra="none", n=0, partition="own", n_shards=8, minute=0, **metrics):
    values = {"ndcg@10": NDCG[method] + 0.001 * rng.random(), "recall@10": 0.2, "ndcg@20": 0.1, "recall@20": 0.3,
              **{f"hit@{k}": 0.2 for k in (1, 5, 10, 20)},
              **{f"hit_before_retraining@{k}": 0.3 + 0.01 * rng.random() for k in (1, 5, 10, 20)},
              "unlearn_seconds": SECONDS[method] + rng.random(), "unlearn_all_retrained_seconds": ALL_RETRAINED[method] + rng.random(),
              "unlearn_cpu_seconds": SECONDS[method] + rng.random(), "full_model_cpu_seconds": 100.0 + rng.random(),
              "full_model_cached": method != "retrain", "train_pairs_before": 1000, "train_pairs_after": 900,
              "n_retrained_shards": 1 if method == "retrain" else n_shards, **metrics}
    return dict(dataset="games", model="gru4rec", method=method, truncation="suffix", extra_deletion=extra,
                n_extra=n, centroid="mean", retrain="affected", partition=partition, seed=seed,
                n_shards=1 if method == "retrain" else n_shards, record=f"{method}-{seed}-{extra}-{n}-{partition}",
                created=CREATED + pd.Timedelta(minutes=minute), **values)


def fake_runs(seeds=range(6)):
    rows, rng = [], np.random.default_rng(0)
    for seed in seeds:
        for method in NDCG:
            rows.append(run_row(method, seed, rng))
        for way in ("ced", "ned"):
            for n in (1, 2, 4):
                rows.append(run_row("sru", seed, rng, way, n, **{"hit@10": 0.2 - 0.04 * n + 0.001 * rng.random(),
                                                                 "ndcg@10": 0.09}))
    return pd.DataFrame(rows)


def ablation_runs(seeds=range(6)):
    rows, rng = [], np.random.default_rng(1)
    minute = 0
    for seed in seeds:
        for method in ("sisa", "receraser", "sru"):
            for partition, bonus in (("random", 0.0), ("similarity", 0.01)):
                minute += 1
                rows.append(run_row(method, seed, rng, partition=partition, minute=minute,
                                    **{"ndcg@10": NDCG[method] + bonus + 0.001 * rng.random()}))
        for k in (2, 4, 8, 16):
            minute += 1
            rows.append(run_row("sru", seed, rng, n_shards=k, minute=minute,
                                **{"ndcg@10": 0.1 - 0.002 * k + 0.0001 * rng.random(),
                                   "unlearn_cpu_seconds": 100.0 / k + rng.random()}))
    frame = pd.DataFrame(rows)
    own = {"sisa": "random", "receraser": "similarity", "sru": "similarity"}
    frame["partition"] = [("own" if p == own[m] else p) for m, p in zip(frame["method"], frame["partition"])]
    return frame.drop_duplicates(["method", "partition", "n_shards", "seed"])


# --- tables and claims ------------------------------------------------------------------------------------

def test_claims_hold_on_runs_built_to_satisfy_them():
    claims = sru_claims(fake_runs()).set_index("id")["verdict"]
    assert all(v.startswith("reproduced") for v in claims), claims.to_dict()


def test_the_whole_set_reading_is_shown_beside_the_claim_but_not_counted():
    runs = fake_runs()
    claims = sru_claims(runs).set_index("id")
    assert claims.loc["sru_unlearns_faster_whole_set", "kind"] == "other reading"
    runs.loc[runs["method"] == "sru", "unlearn_all_retrained_seconds"] = 150.0  # 8 shards: more than a full retrain
    slower = sru_claims(runs).set_index("id")
    assert slower.loc["sru_unlearns_faster_whole_set", "verdict"] == "not reproduced"
    assert slower.loc["sru_unlearns_faster", "verdict"] == "reproduced"   # one shard per request: still faster
    from recunlearn.report.verdicts import page_verdict
    assert page_verdict(slower.reset_index()) == page_verdict(claims.reset_index())  # the reading decides nothing


def test_claims_fail_when_sru_is_the_least_accurate():
    runs = fake_runs()
    runs.loc[runs["method"] == "sru", "ndcg@10"] = 0.05
    claims = sru_claims(runs).set_index("id")["verdict"]
    assert claims["sru_accuracy_above_baselines"] == "not reproduced"
    assert claims["sru_accuracy_near_retrain"] == "not reproduced"


def test_the_inference_claim_reads_retrains_hit_not_the_model_trained_on_the_item():
    runs = fake_runs()
    assert sru_claims(runs).set_index("id").loc["sru_deleted_item_inferable", "verdict"] == "reproduced"
    retrain = runs["method"] == "retrain"
    forgotten = runs.assign(**{"hit@10": np.where(retrain, 0.001 + 1e-4 * (np.arange(len(runs)) % 3),
                                                   runs["hit@10"])})
    row = sru_claims(forgotten).set_index("id").loc["sru_deleted_item_inferable"]
    assert row["verdict"] == "not reproduced"   # before retraining (0.3) is far above 10/501, Retrain is not
    assert "over 6" in row["evidence"]          # one value per seed, Retrain's


def test_the_efficiency_table_gives_cpu_seconds_and_each_runs_share_of_a_full_training():
    runs = fake_runs(seeds=range(3))
    table = efficiency_table(runs)
    main = runs[runs["extra_deletion"] == "none"]
    share = main["unlearn_cpu_seconds"] / (main["full_model_cpu_seconds"] * 0.9)
    expected = share.groupby(main["method"]).mean().round(3)
    got = table["unlearning / full training (CPU)"].droplevel(["Dataset", "Model"])
    assert {m: got[display_name(m)] for m in NDCG} == expected.to_dict()
    assert "unlearning (CPU s)" in table and "all retraining (s, wall)" in table


def _with_sru_cpu_seconds(runs, seconds):
    runs = runs.copy()
    sru = runs.index[runs["method"] == "sru"]
    runs.loc[sru, "unlearn_cpu_seconds"] = [seconds[i % len(seconds)] for i in range(len(sru))]
    return runs


def test_the_efficiency_claim_compares_each_run_with_a_full_training_of_the_same_process():
    runs = fake_runs(seeds=range(4))
    shares = unlearning_share_of_full_training(runs)
    assert len(shares) == 4 and set(shares["method"]) == {"sru"}  # the runs without extra deletion
    expected = shares["unlearn_cpu_seconds"] / (shares["full_model_cpu_seconds"] * 0.9)  # 900 of 1,000 pairs left
    assert np.allclose(shares["share_of_full_training"], expected)
    holds = efficiency_claim(runs)
    assert holds["verdict"] == "reproduced"
    assert "in 4 of 4 runs that training ran in an earlier run of the same process, in 0 in an earlier process" \
        in holds["evidence"]
    stored = runs.assign(full_model_stored=runs.index == runs.index[runs["method"] == "sru"][0])
    assert "in 3 of 4 runs that training ran in an earlier run of the same process, in 1 in an earlier process" \
        in efficiency_claim(stored)["evidence"]  # read from disk: timed by another process
    # no wall clock of another run is read: records written days apart change nothing
    apart = runs.assign(created=[CREATED + pd.Timedelta(days=i) for i in range(len(runs))])
    assert efficiency_claim(apart)["verdict"] == "reproduced"
    slower = efficiency_claim(_with_sru_cpu_seconds(runs, [150.0, 160.0, 170.0, 155.0]))
    assert slower["verdict"] == "not reproduced"
    noisy = efficiency_claim(_with_sru_cpu_seconds(runs, [40.0, 160.0, 70.0, 120.0]))  # shares around 1
    assert noisy["verdict"] == "inconclusive"
    one_run = efficiency_claim(fake_runs(seeds=[0]))
    assert one_run["verdict"] == "inconclusive"  # one seed: no test against noise
    without_cpu = runs.drop(columns=["unlearn_cpu_seconds"])
    assert efficiency_claim(without_cpu)["verdict"] == "pending"


def test_without_runs_every_claim_is_pending_and_every_table_is_empty():
    assert set(sru_claims(pd.DataFrame())["verdict"]) == {"pending"}
    for table in (overview_table, efficiency_table, effectiveness_table, shard_count_table):
        assert table(pd.DataFrame()).empty
    assert partition_table(pd.DataFrame(), 8).empty


def test_extra_deletion_curves_start_at_the_run_without_extra_deletion():
    points = extra_deletion_points(fake_runs(seeds=[0]))
    assert sorted(points[points["extra_deletion"] == "ced"]["n_extra"]) == [0, 1, 2, 4]


def one_seed_sweep(hit_at_n) -> pd.DataFrame:
    """The paper-scale sweep's shape: one seed, three models, CED/NED/RED at n in {1, 3}, HIT@10 of SRU
    without extra deletion 0.32 and ``hit_at_n(n, rng)`` with it."""
    rows, rng = [], np.random.default_rng(2)
    for model in ("gru4rec", "sasrec", "bert4rec"):
        rows.append({**run_row("sru", 0, rng, **{"hit@10": 0.32}), "model": model})
        for way in ("ced", "ned", "red"):
            for n in (1, 3):
                rows.append({**run_row("sru", 0, rng, way, n, **{"hit@10": hit_at_n(n, rng)}), "model": model})
    frame = pd.DataFrame(rows)
    return frame.assign(record=frame["model"] + "-" + frame["record"])  # one record per run


def test_the_extra_deletion_claim_compares_each_strategy_with_none_once_per_seed():
    """The abstract's claim: each strategy lowers HIT@10 below SRU without extra deletion. A strategy's
    value is its mean over n, so the run without extra deletion pairs once per seed with each."""
    falls = one_seed_sweep(lambda n, rng: 0.3 - 0.05 * n + 0.01 * rng.random())
    claim = extra_deletion_claim(falls)
    assert claim["verdict"] == "reproduced" and claim["kind"] == "paper", claim
    for way in ("CED", "NED", "RED"):
        assert f"{way} < without extra deletion: n = 3 pairs" in claim["evidence"]
    rises = one_seed_sweep(lambda n, rng: 0.4 + 0.05 * n + 0.01 * rng.random())
    assert extra_deletion_claim(rises)["verdict"] == "not reproduced"
    waiting = falls.assign(status="computed")  # the strategies' runs are counted one by one, not as means
    waiting.loc[(waiting["extra_deletion"] == "ced") & (waiting["n_extra"] == 3), "status"] = "pending"
    counted = extra_deletion_claim(waiting)
    assert "3 of 21 runs pending" in counted["holds in"] and counted["verdict"] == "partly reproduced", counted


def test_more_extra_deletion_is_an_expectation_that_can_hold_and_fail_with_one_seed_per_cell():
    """The paper-scale sweep has one seed and n in {1, 3}, where a Spearman trend per strategy could
    never reach p < 0.05. Pooled steps of n over three models and three strategies decide it either way."""
    falls = one_seed_sweep(lambda n, rng: 0.3 - 0.05 * n + 0.01 * rng.random())
    claim = more_extra_deletion_claim(falls)
    assert claim["verdict"] == "reproduced" and claim["kind"] == "own expectation", claim
    assert "3 extra < 1 extra: n = 9 pairs" in claim["evidence"]
    assert "0 extra" not in claim["evidence"]  # the run without extra deletion is the paper claim's, not this one's
    rises = one_seed_sweep(lambda n, rng: 0.1 + 0.05 * n + 0.01 * rng.random())
    assert more_extra_deletion_claim(rises)["verdict"] == "not reproduced"
    one_level = falls[falls["n_extra"] != 3]
    assert more_extra_deletion_claim(one_level)["verdict"] == "pending"


def test_comparisons_the_abstract_does_not_make_are_expectations():
    claims = sru_claims(fake_runs()).set_index("id")["kind"]
    assert claims["sru_accuracy_above_baselines"] == "own expectation"
    assert claims["sru_more_extra_deletion_lowers_hit"] == "own expectation"
    assert {claims[i] for i in ("sru_deleted_item_inferable", "sru_accuracy_near_retrain", "sru_unlearns_faster",
                                "sru_extra_deletion_lowers_hit")} == {"paper"}
    assert set(ablation_claims(ablation_runs(), 8)["kind"]) == {"own expectation"}


def test_shares_of_retrain_pair_seeds():
    share = share_of_retrain(fake_runs(seeds=[0, 1]), "unlearn_seconds")
    assert set(share["method"]) == {"sisa", "receraser", "sru"} and len(share) == 6
    assert share["share"].between(0.05, 0.25).all()


def test_effectiveness_table_lists_strategies_the_accuracy_cost_and_the_random_reference():
    table = effectiveness_table(fake_runs(seeds=[0, 1])).reset_index()
    strategies = list(dict.fromkeys(table["Strategy"]))
    assert strategies == ["before retraining", "Retrain", "SISA", "RecEraser", "SRU", "SRU + CED", "SRU + NED",
                          "random ranking"]
    random_row = table[table["Strategy"] == "random ranking"].iloc[0]
    assert random_row["HIT@10"] == pytest.approx(round(HIT_RANDOM[10], 4))
    cost = table[table["Strategy"] == "SRU + CED"]["Δ NDCG@10 vs SRU"]
    assert (cost < 0).all()  # the extra deletion cost accuracy in these runs
    assert (table[table["Strategy"] == "Retrain"]["Δ NDCG@10 vs SRU"] == "—").all()
    assert (table[table["Strategy"] == "SRU"]["Δ NDCG@10 vs SRU"] == "—").all()  # no change from itself
    assert table["seeds"].tolist() == [2] * (len(table) - 1) + ["—"]  # counts, and none for a random ranking


def test_ablation_claims_hold_on_runs_built_to_satisfy_them():
    claims = ablation_claims(ablation_runs(), 8).set_index("id")["verdict"]
    assert claims["sru_similarity_partition_helps"] == "reproduced"
    assert claims["sru_centroid_attention_helps"] == "reproduced"
    assert claims["sru_more_shards_less_accurate"] == "reproduced"
    assert claims["sru_more_shards_faster"] == "reproduced"  # each run's CPU share of a full training falls


def test_more_shards_faster_reads_each_runs_cpu_share_not_its_clock():
    runs = ablation_runs()
    sweep = (runs["method"] == "sru") & (runs["partition"] == "own")
    # wall-clock times that rise with K (a loaded machine) change nothing: the claim reads CPU shares
    runs.loc[sweep, "unlearn_seconds"] = runs.loc[sweep, "n_shards"] * 100.0
    assert ablation_claims(runs, 8).set_index("id").loc["sru_more_shards_faster", "verdict"] == "reproduced"
    # a share of the full training that grows with K fails the claim
    runs.loc[sweep, "unlearn_cpu_seconds"] = runs.loc[sweep, "n_shards"] * 10.0
    assert ablation_claims(runs, 8).set_index("id").loc["sru_more_shards_faster", "verdict"] == "not reproduced"
    table = partition_table(ablation_runs(), 8)
    assert table.shape == (3, 2)


def test_page_grids_list_every_run_they_read_once():
    grid = page_grid("sru/claims-abstract").from_params({"METHODS": ["retrain", "sru"], "EXTRA_DELETIONS": ["none", "ned"],
                                          "N_EXTRAS": [0, 2], "SEEDS": [0, 1], "EXTRA_SEEDS": [0]})
    kinds = sorted((c.method, c.extra_deletion, c.n_extra, c.seed) for c in grid.runs())
    assert kinds == [("retrain", "none", 0, 0), ("retrain", "none", 0, 1), ("sru", "ned", 2, 0),
                     ("sru", "none", 0, 0), ("sru", "none", 0, 1)]
    ablation = page_grid("sru/ablations").from_params({"METHODS": ["sisa", "sru"], "PARTITIONS": ["random",
                                                         "similarity"], "SHARD_COUNTS": [4, 8], "N_SHARDS": 8})
    kinds = [(c.method, c.shard_partition, c.n_shards) for c in ablation.runs()]
    assert kinds == [("sisa", "random", 8), ("sisa", "similarity", 8), ("sru", "random", 8),
                     ("sru", "similarity", 8), ("sru", "similarity", 4)]
    assert page_grid("sru/table-dataset-statistics") is SruStatisticsParams   # no runs: counts only
    with pytest.raises(KeyError, match="sru/no-such-page"):
        page_grid("sru/no-such-page")


# --- builders -------------------------------------------------------------------------------------------------

def builder(stem: str):
    return importlib.import_module(f"recunlearn.report.pages.sru_{stem.replace('-', '_')}").build


def params(stem: str, profile: str = "smoke") -> dict:
    return yaml.safe_load((PARAMS / f"{stem}.{profile}.yml").read_text())


def page_runs(stem: str, computed: bool, profile: str = "smoke") -> pd.DataFrame:
    """Made-up runs of the page's grid: every run computed (metrics from :func:`run_row`), or none."""
    grid = page_grid(f"sru/{stem}").from_params(params(stem, profile))
    rng = np.random.default_rng(0)
    rows = [{**run_row(c.method, c.seed, rng, c.extra_deletion, c.n_extra, c.partition, c.n_shards),
             "dataset": c.dataset, "model": c.model, "centroid": c.centroid, "truncation": c.truncation}
            for c in grid.runs()]
    frame = pd.DataFrame(rows) if computed else pd.DataFrame(columns=RUN_KEYS + ["n_shards", "record", "ndcg@10"])
    frame.attrs["pending"] = [] if computed else [c.to_dict() for c in grid.runs()]
    return frame


@pytest.mark.parametrize("stem", RUN_PAGES)
def test_builders_show_tables_of_computed_runs_and_state_every_claim(stem):
    page = builder(stem)(runs=page_runs(stem, True), **params(stem))
    assert page.name == f"sru/{stem}"
    for name in page.tables:
        assert not page.is_pending(name), name
    assert page.claims is not None and len(page.claims)
    assert not page.notice("runs")
    texts = page.texts()
    assert not any(EMPTY_COUNT.search(t) for t in texts.values())


@pytest.mark.parametrize("stem", RUN_PAGES)
def test_builders_without_records_show_one_notice_per_item_with_the_plan_command(stem):
    page = builder(stem)(runs=page_runs(stem, False, "paper"), **params(stem, "paper"))
    assert set(page.claims["verdict"]) == {"pending"}
    for name in page.items:
        if name == "runs":
            continue
        assert page.is_pending(name), name
        notice = page.notice(name)
        assert isinstance(notice, Notice) and "python -m recunlearn compute --only" in (notice.command or ""), name
    texts = page.texts()
    assert texts["page_verdict"] == "pending"
    assert not any(EMPTY_COUNT.search(t) for t in texts.values())


def test_glued_shares_and_hits_are_given_per_dataset_never_pooled():
    texts = {}
    for stem in ("recommendation-accuracy", "unlearning-efficiency", "unlearning-effectiveness"):
        texts.update(builder(stem)(runs=page_runs(stem, True, "paper"), **params(stem, "paper")).texts())
    datasets = ["ML-1M", "Games", "Beauty (BERT4Rec version)"]  # the book's one dataset order
    for name in ("sru_share_of_retrain", "sru_time_share", "hit_before_10"):
        assert [part.split(" on ")[1] for part in texts[name].split(", ")] == datasets, (name, texts[name])


def test_the_method_comparison_counts_only_its_own_runs_when_extra_deletions_are_pending():
    stem = "claims-abstract"
    grid = page_grid(f"sru/{stem}").from_params(params(stem, "paper"))
    runs = page_runs(stem, True, "paper")
    extra = runs["extra_deletion"] != "none"
    computed = runs[~extra].copy()
    computed.attrs["pending"] = [c.to_dict() for c in grid.runs() if c.extra_deletion != "none"]
    page = builder(stem)(runs=computed, **params(stem, "paper"))
    assert page.notice("overview") is None and not page.is_pending("overview")
    assert page.notice("runs").partial and f"{int(extra.sum())} of {len(runs)} runs" in page.notice("runs").why
    half = computed[computed["seed"] != 0].copy()  # a comparison run pending too: counted among its own runs
    half.attrs["pending"] = [c.to_dict() for c in grid.runs() if c.extra_deletion != "none" or c.seed == 0]
    notice = builder(stem)(runs=half, **params(stem, "paper")).notice("overview")
    comparison = ~extra & (runs["partition"] == "own") & ((runs["n_shards"] == grid.n_shards)
                                                          | (runs["method"] == "retrain"))
    comparison &= (runs["centroid"] == "mean") & (runs["truncation"] == "suffix")  # nor the code choices'
    n_comparison = int(comparison.sum())  # the ablation's runs (other partitions, other K) are not the comparison's
    assert n_comparison == 3 * 4 < int((~extra).sum())
    assert notice.partial and f"{n_comparison // 3} of {n_comparison} runs" in notice.why
    claims = builder(stem)(runs=half, **params(stem, "paper")).claims.set_index("id")["holds in"]
    assert "runs pending" in claims["sru_accuracy_above_baselines"]   # its claims count the seed still to come


def test_the_overview_reads_the_ablation_at_its_scale_and_keeps_it_out_of_the_comparison():
    stem = "claims-abstract"
    grid = page_grid(f"sru/{stem}").from_params(params(stem, "paper"))
    ablation = grid.ablation()
    assert ablation is not None and set(ablation.runs()) <= set(grid.runs())
    assert {c.n_shards for c in grid.runs() if c.method == "sru" and c.extra_deletion == "none"} == {2, 4, 8, 16}
    page = builder(stem)(runs=page_runs(stem, True, "paper"), **params(stem, "paper"))
    assert {"sru_similarity_partition_helps", "sru_centroid_attention_helps", "sru_more_shards_faster",
            "sru_more_shards_less_accurate"} <= set(page.claims["id"])
    overview = page.tables["overview"]  # a column per method, a row per measure
    assert list(overview.columns) == ["Retrain", "SISA", "RecEraser", "SRU"]
    assert (overview.xs("runs", level=-1) == "3").all(axis=None)  # SRU at other K, swapped partitions: not in it
    no_ablation = {**params(stem, "paper"), "ABLATION_PARTITIONS": None, "ABLATION_SHARD_COUNTS": None}
    assert page_grid(f"sru/{stem}").from_params(no_ablation).ablation() is None
    with pytest.raises(ConfigError, match="ABLATION_PARTITIONS"):
        page_grid(f"sru/{stem}").from_params({**no_ablation, "ABLATION_PARTITIONS": ["shuffled"]})


@pytest.mark.parametrize("stem", RUN_PAGES)
def test_builders_refuse_unknown_and_bad_parameters_before_any_compute(stem):
    with pytest.raises(ConfigError, match="MODELZ"):
        builder(stem)(runs=page_runs(stem, False), **params(stem), MODELZ=["gru4rec"])
    with pytest.raises(ConfigError, match="METHODS"):
        builder(stem)(runs=page_runs(stem, False), **{**params(stem), "METHODS": ["ultrare"]})


def statistics_rows(window_beauty: int = 10) -> pd.DataFrame:
    rows = []
    for dataset, maxlen in (("games", 20), ("beauty", window_beauty), ("ml-1m", 20)):
        rows.append({"scale": "all sessions", "dataset": dataset, "label": dataset, "sessions": 10, "items": 50,
                     "items_occurring": 40, "interactions": 60, "mean_length": 6.0, "median_length": 5.0,
                     "sessions_length_1": 0, "maxlen": maxlen, "train_sessions": 8, "valid_sessions": 1,
                     "test_sessions": 1, "train_pairs": 40, "valid_pairs": 5, "test_pairs": 5,
                     "valid_pairs_unseen_target": 0, "test_pairs_unseen_target": 1, "items_not_in_train": 3,
                     "sha256": "x"})
    return pd.DataFrame(rows)


def test_statistics_page_checks_the_windows_and_the_split_accounting():
    build = builder("table-dataset-statistics")
    page = build(ours=statistics_rows(), **params("table-dataset-statistics", "paper"))
    assert set(page.claims["verdict"]) == {"reproduced"}
    assert page.tables["statistics"].shape == (16, 3)
    assert page.values["games_sessions"] == "10"
    wrong = build(ours=statistics_rows(window_beauty=20), **params("table-dataset-statistics", "paper"))
    assert wrong.claims.set_index("id").loc["sru_input_window", "verdict"] == "partly reproduced"
    with pytest.raises(ConfigError, match="REDUCED_DATASETS"):
        build(ours=statistics_rows(), DATASETS=["games"], REDUCED_DATASETS=["steam"])


def test_every_page_with_runs_has_both_profiles_and_a_notebook():
    for stem in RUN_PAGES:
        assert (paths.REPO_ROOT / "notebooks" / "sru" / f"{stem}.ipynb").is_file(), stem
        for profile in ("smoke", "paper"):
            page_grid(f"sru/{stem}").from_params(params(stem, profile))  # valid parameters
    assert SruConfig().partition == "own"


def test_page_grids_list_the_runs_of_their_parts():
    """The method comparison without extra deletion, SRU's sweep over the named strategies and counts
    (its own seeds), and the overview's ablation at the same scale: each run once."""
    from recunlearn.report.sru import SruAblationGrid, SruOverviewGrid, SruPageGrid
    page = SruPageGrid(methods=("retrain", "sru"), extra_deletions=("none", "ced"), n_extras=(0, 1, 3),
                       seeds=(0, 1), extra_seeds=(0,))
    main, extra = page.parts()
    assert {(c.method, c.extra_deletion, c.n_extra, c.seed) for c in main.runs()} == {
        (m, "none", 0, s) for m in ("retrain", "sru") for s in (0, 1)}
    assert {(c.method, c.extra_deletion, c.n_extra, c.seed) for c in extra.runs()} == {
        ("sru", "ced", 1, 0), ("sru", "ced", 3, 0)}
    assert len(page.runs()) == len(set(map(str, page.runs()))) == 6
    assert SruPageGrid(extra_deletions=("none",), n_extras=(0, 1)).parts()[1] is None

    overview = SruOverviewGrid(methods=("retrain", "sisa", "sru"), ablation_partitions=("random", "own"),
                               ablation_shard_counts=(2, 8), max_sessions=100)
    ablation = overview.ablation()
    assert isinstance(ablation, SruAblationGrid) and ablation.methods == ("sisa", "sru")
    assert ablation.max_sessions == 100 and ablation.shard_counts == (2, 8)
    runs = overview.runs()
    assert len(runs) == len(set(map(str, runs)))
    assert {(c.method, c.partition, c.n_shards) for c in runs} == {
        ("retrain", "own", 1), ("sisa", "own", 8), ("sru", "own", 8), ("sru", "random", 8), ("sru", "own", 2)}
    # (Retrain is one model; SISA's own partition is the random one: each listed once)
    assert SruOverviewGrid().ablation() is None and SruOverviewGrid().runs() == SruPageGrid().runs()


# --- choices of the authors' code ---------------------------------------------------------------------------

def test_code_choices_add_sru_runs_paired_with_the_comparisons():
    from recunlearn.report.sru_code_choices import CODE_CHOICES

    stem = "claims-abstract"
    grid = page_grid(f"sru/{stem}").from_params(params(stem, "paper"))
    listed = grid.runs()
    added = [c for c in listed if c.centroid != "mean" or c.truncation != "suffix"]
    assert sorted((c.method, c.centroid, c.truncation, c.seed) for c in added) == sorted(
        [("sru", "scalar", "suffix", s) for s in (0, 1, 2)] + [("sru", "mean", "suffix-code", s) for s in (0, 1, 2)])
    for config in added:  # each has the comparison's SRU run of its seed to pair with
        field = "centroid" if config.centroid != "mean" else "truncation"
        assert config.replace(**{field: CODE_CHOICES[field].ours}) in listed
    with pytest.raises(ConfigError, match="CODE_CHOICES.*CENTROIDS"):
        page_grid(f"sru/{stem}").from_params({**params(stem, "paper"), "CENTROIDS": ["mean", "scalar"]})
    with pytest.raises(ConfigError, match="CODE_CHOICES"):
        page_grid(f"sru/{stem}").from_params({**params(stem, "paper"), "CODE_CHOICES": ["partition"]})
    assert not [c for c in page_grid(f"sru/{stem}").from_params({**params(stem, "paper"), "CODE_CHOICES": None}).runs()
                if c.centroid != "mean" or c.truncation != "suffix"]


def test_code_choice_runs_are_compared_seed_by_seed_and_kept_out_of_every_other_table():
    import json

    stem = "claims-abstract"
    runs = page_runs(stem, True, "paper")
    scalar = runs["centroid"] == "scalar"
    runs.loc[scalar, "ndcg@10"] = runs.loc[scalar, "seed"].map(
        runs[(runs["method"] == "sru") & (runs["centroid"] == "mean") & (runs["truncation"] == "suffix")
             & (runs["extra_deletion"] == "none") & (runs["n_shards"] == 8) & (runs["partition"] == "own")]
        .set_index("seed")["ndcg@10"]) - 0.01 - 0.001 * runs.loc[scalar, "seed"]  # the code's anchors: 0.01-0.012 lower
    runs.loc[runs["truncation"] == "suffix-code", "ndcg@10"] = 0.5   # far off: must not reach any other table
    page = builder(stem)(runs=runs, **params(stem, "paper"))
    assert (page.tables["overview"].xs("runs", level=-1) == "3").all(axis=None)
    assert "0.5000" not in page.tables["overview"].to_string() and "0.5000" not in page.tables["partitions"].to_string()
    table = page.tables["code_centroid"]
    assert table.loc["NDCG@10", "code − ours (mean)"] == "-0.0110"
    assert list(table.columns[:2]) == ["ours: per-dimension means", "code: scalar means"]
    assert table.loc["NDCG@10", "pairs (code higher / lower)"] == "3 (0 / 3)"
    assert table.loc["HIT@10", "code − ours (mean)"] == "0.0000"
    # times pair only runs made by the same code: these made-up runs name none
    assert table.loc["unlearning time (CPU s)", "pairs (code higher / lower)"] == "0 of 3: no pair made by the same code"
    assert table.loc["unlearning time (CPU s)", "code − ours (mean)"] == "—"
    same = builder(stem)(runs=runs.assign(source_fingerprint="abc"), **params(stem, "paper")).tables["code_centroid"]
    assert same.loc["unlearning time (CPU s)", "pairs (code higher / lower)"].startswith("3 (")
    split = runs.assign(source_fingerprint=np.where(runs["seed"] == 0, "old", "new"))
    split.loc[split["centroid"] == "scalar", "source_fingerprint"] = "new"
    mixed = builder(stem)(runs=split, **params(stem, "paper")).tables["code_centroid"]
    assert mixed.loc["unlearning time (CPU s)", "pairs (code higher / lower)"].startswith("2 (")  # seed 0 left out
    one = builder(stem)(runs=runs[runs["seed"] == 0], **params(stem, "paper"))  # a single seed pair: no test
    assert one.tables["code_centroid"].loc["NDCG@10", ["p (two-sided)", "test used"]].tolist() == ["—", "none (1 pair)"]
    assert "1 seed pair, one pair is too few for a test" in one.texts()["code_centroid_effect"]
    texts = page.texts()
    assert texts["code_centroid_effect"].startswith("with scalar anchors (the authors' code), NDCG@10 is ")
    assert "3 seed pairs" in texts["code_centroid_effect"] and "a significant difference" in texts["code_centroid_effect"]
    assert "every shard held an unlearning session" in texts["code_retrain_effect"]
    published = json.loads(page.values["page_variants"])
    assert [v["section"] for v in published] == ["code_centroid", "code_truncation"]
    assert published[0]["finding"] == texts["code_centroid_effect"]


def test_without_code_choice_runs_their_section_is_pending_with_its_plan_entry():
    from recunlearn.report.sru_code_choices import retrain_text

    stem = "claims-abstract"
    grid = page_grid(f"sru/{stem}").from_params(params(stem, "paper"))
    runs = page_runs(stem, True, "paper")
    mine = (runs["centroid"] != "mean") | (runs["truncation"] != "suffix")
    kept = runs[~mine].copy()
    kept.attrs["pending"] = [c.to_dict() for c in grid.runs() if c.centroid != "mean" or c.truncation != "suffix"]
    page = builder(stem)(runs=kept, **params(stem, "paper"))
    for section in ("code_centroid", "code_truncation"):
        notice = page.notice(section)
        assert page.is_pending(section) and "3 of 6 runs" in notice.why
        assert notice.command.endswith("--only sru-reduced-scale-code-choices"), notice.command
        assert page.texts()[f"{section}_effect"].startswith("pending")
    assert page.notice("overview") is None
    assert retrain_text(kept).startswith("every shard held an unlearning session in all ")
    fewer = kept.assign(n_retrained_shards=np.where(kept["seed"] == 0, kept["n_shards"] - 1, kept["n_shards"]))
    sharded = kept["method"] != "retrain"
    assert retrain_text(fewer).startswith(f"{int((sharded & (kept['seed'] != 0)).sum())} of {int(sharded.sum())} ")
