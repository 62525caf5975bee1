"""The SRU chapter's tables and claims, on seed-level runs (one row per run, from
:func:`~recunlearn.experiments.sru.collect_sru`).

No table or number of the SRU paper was available, so nothing here is compared with a paper value.
The abstract claims "high unlearning efficiency, accurate recommendation performance, and improved
unlearning effectiveness", names no baseline and reports no ablation; the claims of kind ``paper``
are our readings of those words, and the comparisons the abstract does not make are the chapter's
own expectations (kind ``own expectation``: shown, part of their page's verdict, not counted among
the paper's claims). Each is a test on seed-level runs:

- ``sru_deleted_item_inferable``: after the data are deleted and the model retrained on what remains
  (Retrain, which never saw the deleted item in that session), the deleted item still ranks in the top
  10 of 501 candidates, queried with what remains of its session, more often than a random ranking
  would (HIT@10 above 10 / 501): it is inferred from the correlations the abstract names, not
  remembered. The model trained before the request (``hit_before_retraining@K``) is shown beside it
  as the upper reference, not tested: it was trained on the deleted item;
- ``sru_accuracy_near_retrain`` ("accurate recommendation performance", read as close to
  retraining): SRU keeps at least 90 % of Retrain's NDCG@10 (seed-paired);
- ``sru_accuracy_above_baselines`` (expectation): SRU's NDCG@10 is above SISA's (random shards,
  averaged probabilities) and RecEraser-style aggregation's (the same shards, attention without
  centroids), the components the abstract introduces paying for themselves;
- ``sru_unlearns_faster``: SRU's unlearning time (one retrained shard, its centroid and the
  aggregator: the cost of one request) is below a full retrain's, both in CPU seconds
  (:func:`efficiency_claim`); beside it, as another reading that is shown but not counted,
  ``sru_unlearns_faster_whole_set``: the whole unlearning set, every shard it touches retrained
  (:func:`efficiency_reading_claim`);
- ``sru_extra_deletion_lowers_hit`` ("improved unlearning effectiveness"): SRU with extra deletion
  (CED, NED, RED, any number of extra items) has a lower HIT@10 than SRU without it
  (:func:`extra_deletion_claim`); ``sru_more_extra_deletion_lowers_hit`` (expectation): HIT@10 falls
  at each step up in the number of extra deleted items (:func:`more_extra_deletion_claim`);
- ablations, all expectations: ``sru_similarity_partition_helps`` (SRU's aggregator is more accurate
  on similarity shards than on random ones), ``sru_centroid_attention_helps`` (attention with
  centroids beats attention without, on either partition), ``sru_more_shards_faster`` and
  ``sru_more_shards_less_accurate`` (the expected cost of SISA-style sharding: unlearning time and
  NDCG@10 fall as the number of shards K grows; time as each run's share of a full training measured
  in its own process, like ``sru_unlearns_faster``).

The page grids (:class:`SruPageGrid`, :class:`SruAblationGrid`) say which runs a page reads.
"""

from __future__ import annotations

import dataclasses
import numpy as np
import pandas as pd

from ..experiments.config import ConfigError, option
from ..experiments.sru import OWN_PARTITION, PARTITIONS, SruGrid
from ..unlearning.sru import HIT_KS, N_NEGATIVES
from .claims import (COMPUTED, OTHER_READING, OWN_EXPECTATION, STATUS, as_kind, band_claim, claim_row,
                     claims_frame, count_runs, ordering_claim, split_waiting, trend_claim, with_columns, with_kind,
                     with_waiting, with_waiting_rows)
from .compare import format_mean_std, mean_std_table
from .grids import as_base
from .names import MISSING_TEXT, display_frame, display_name, sort_paper_order
from .sru_code_choices import CODE_CHOICES, code_choice_runs
from .verdicts import PENDING

CELLS = ["dataset", "model"]
HIT_RANDOM = {k: k / (N_NEGATIVES + 1) for k in HIT_KS}
"""HIT@K of a random ranking of the unlearning item and its 500 negatives."""
ACCURACY = ["recall@10", "ndcg@10", "recall@20", "ndcg@20"]
HITS = [f"hit@{k}" for k in HIT_KS]
HITS_BEFORE = [f"hit_before_retraining@{k}" for k in HIT_KS]
FORGETTING = ["hit@10", "hit_before_retraining@10"]
TIME = ["unlearn_cpu_seconds", "unlearn_all_retrained_seconds"]
"""The overview's times: the unlearning CPU seconds (as the efficiency page and claim read them) and the
wall seconds of everything the run retrained."""
NEAR_RETRAIN = 0.9
"""Share of Retrain's NDCG@10 that "accurate recommendation performance" is tested against (our reading
of the abstract: close to retraining)."""


# --- which runs --------------------------------------------------------------------------------------

def _column(runs: pd.DataFrame, name: str, default) -> pd.Series:
    return runs[name] if name in runs else pd.Series(default, index=runs.index)


def comparison_runs(runs: pd.DataFrame, n_shards: int | None = None) -> pd.DataFrame:
    """The runs of the method comparison and of SRU's extra-deletion sweep: each method on its own
    partition (and, when given, at ``n_shards`` shards; Retrain always has one), the ablation's other
    partitions and numbers of shards left out."""
    if runs.empty:
        return runs
    keep = _column(runs, "partition", "own") == "own"
    if n_shards is not None and "n_shards" in runs:
        keep &= (runs["n_shards"] == n_shards) | (runs["method"] == "retrain")
    return runs[keep]


def main_runs(runs: pd.DataFrame, n_shards: int | None = None) -> pd.DataFrame:
    """The method comparison: :func:`comparison_runs` without extra deletion."""
    runs = comparison_runs(runs, n_shards)
    return runs[runs["extra_deletion"] == "none"] if len(runs) else runs


def shards_used(runs: pd.DataFrame) -> pd.Series:
    """The partition each run used: ``one shard``, ``random`` or ``similarity``."""
    own = runs["method"].map(OWN_PARTITION)
    partition = _column(runs, "partition", "own")
    return own.where(partition == "own", partition)


# --- tables --------------------------------------------------------------------------------------------

def overview_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds per dataset, model and method (no extra deletion): accuracy, HIT@10
    after and before retraining, unlearning time (seconds to one decimal). One row per dataset, model
    and measure, one column per method, so that the four methods fit the page side by side."""
    table = mean_std_table(main_runs(runs), ["dataset", "model", "method"], ACCURACY + FORGETTING + TIME,
                           digits={m: 1 for m in TIME})
    if table.empty:
        return table
    methods = list(dict.fromkeys(table.index.get_level_values(-1)))
    measures = list(table.columns)
    long = table.astype(str).stack()
    long.index = long.index.set_names("Measure", level=-1)
    wide = long.unstack(table.index.names[-1]).reindex(columns=methods)
    order = {measure: i for i, measure in enumerate(measures)}
    return wide.sort_index(level=-1, key=lambda level: level.map(order), sort_remaining=False)


def accuracy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Recall and NDCG at 10 and 20, mean ± std over seeds per dataset, model and method."""
    return mean_std_table(main_runs(runs), ["dataset", "model", "method"], ACCURACY)


def share_of_retrain(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``dataset, model, method, seed, share``: each sharded run's ``metric`` divided by Retrain's of
    the same dataset, model and seed (NaN rows dropped)."""
    main = main_runs(runs)
    if main.empty or metric not in main or "retrain" not in set(main["method"]):
        return pd.DataFrame(columns=CELLS + ["method", "seed", "share"])
    table = main.pivot_table(index=CELLS + ["seed"], columns="method", values=metric, aggfunc="mean")
    shares = table.drop(columns="retrain").div(table["retrain"], axis=0)
    out = shares.stack().rename("share").reset_index()
    return out.dropna(subset=["share"])


def efficiency_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, model and method, means over seeds: the unlearning CPU seconds (one retrained shard,
    its centroid and the aggregator; Retrain: its full retraining), that time as a share of a full
    training timed in the same run (:func:`unlearning_share_of_full_training`, the efficiency claim's
    measure; about 1 for Retrain, a check of the estimate), the shards retrained and the wall seconds of
    everything the run retrained."""
    main = main_runs(runs)
    if main.empty:
        return pd.DataFrame()
    keys = ["dataset", "model", "method"]
    main = main.assign(share_of_full_training=_share_of_full_training(main))
    columns = [c for c in ["unlearn_cpu_seconds", "share_of_full_training", "n_retrained_shards",
                           "unlearn_all_retrained_seconds"] if c in main]
    table = main.groupby(keys)[columns].mean()
    table.insert(0, "seeds", main.groupby(keys).size())
    table = table.round({"unlearn_cpu_seconds": 1, "share_of_full_training": 3, "n_retrained_shards": 1,
                         "unlearn_all_retrained_seconds": 1})
    return display_frame(sort_paper_order(table.reset_index(), keys), index=keys)


STRATEGY_ORDER = ("before retraining", "retrain", "sisa", "receraser", "sru", "sru + ced", "sru + ned", "sru + red")


def effectiveness_points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, model, strategy, n, seed): HIT@K after unlearning and NDCG@10, where a
    strategy is a method without extra deletion, SRU with an extra deletion (``sru + ced``, ...) or
    ``before retraining`` (the model trained before the request, queried with what remains: its
    HIT@K of the runs without extra deletion). ``n`` is the number of extra deleted items."""
    if runs.empty:
        return pd.DataFrame(columns=CELLS + ["strategy", "n_extra", "seed", *HITS, "ndcg@10"])
    plain = runs[_column(runs, "partition", "own") == "own"]
    rows = []
    main = plain[plain["extra_deletion"] == "none"]
    before = main.drop_duplicates(CELLS + ["seed"])
    if len(before):
        renamed = before.drop(columns=[h for h in HITS if h in before]).rename(columns=dict(zip(HITS_BEFORE, HITS)))
        rows.append(renamed.assign(strategy="before retraining", n_extra=0, **{"ndcg@10": np.nan}))
    rows.append(main.assign(strategy=main["method"]))
    extra = plain[(plain["extra_deletion"] != "none") & (plain["method"] == "sru")]
    rows.append(extra.assign(strategy="sru + " + extra["extra_deletion"]))
    columns = CELLS + ["strategy", "n_extra", "seed", *[h for h in HITS if h in runs], "ndcg@10"]
    return pd.concat([r.reindex(columns=columns) for r in rows if len(r)], ignore_index=True)


def effectiveness_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of HIT@1/5/10/20 and NDCG@10 by strategy and n (:func:`effectiveness_points`),
    with the change in NDCG@10 from SRU without extra deletion (the accuracy the extra deletion
    costs; seed-paired; on the rows with n > 0 extra items) and a last row per cell for a random
    ranking (K / 501)."""
    points = effectiveness_points(runs)
    if points.empty:
        return pd.DataFrame()
    keys = CELLS + ["strategy", "n_extra"]
    hits = [h for h in HITS if h in points]
    table = points.groupby(keys)[hits + ["ndcg@10"]].mean()
    table.insert(0, "seeds", points.groupby(keys).size())
    sru = points[(points["strategy"] == "sru")].set_index(CELLS + ["seed"])["ndcg@10"]
    paired = points.join(sru.rename("sru_ndcg@10"), on=CELLS + ["seed"])
    cost = (paired["ndcg@10"] - paired["sru_ndcg@10"]).groupby([paired[k] for k in keys]).mean()
    extra = pd.Series(table.index.get_level_values("strategy").str.startswith("sru + ")
                      & (table.index.get_level_values("n_extra") > 0), index=table.index)
    table["Δ NDCG@10 vs SRU"] = cost.reindex(table.index).where(extra)
    random_rows = pd.DataFrame([{**dict(zip(CELLS, cell)), "strategy": "random ranking", "n_extra": 0,
                                 **{f"hit@{k}": HIT_RANDOM[k] for k in HIT_KS if f"hit@{k}" in hits}}
                                for cell in table.index.droplevel(["strategy", "n_extra"]).unique()])
    table = pd.concat([table.reset_index(), random_rows], ignore_index=True)
    table["seeds"] = pd.Series([int(n) if pd.notna(n) else None for n in table["seeds"]], index=table.index,
                               dtype=object)  # a count; none for a random ranking
    order = {s: i for i, s in enumerate(STRATEGY_ORDER + ("random ranking",))}
    table = table.assign(_order=table["strategy"].map(order)).sort_values(CELLS + ["_order", "n_extra"])
    table["strategy"] = table["strategy"].map(strategy_name)
    table = table.drop(columns="_order").round(4)
    table = sort_paper_order(table, CELLS).rename(columns={"strategy": "Strategy", "n_extra": "extra items n"})
    return display_frame(table, index=CELLS + ["Strategy", "extra items n"])


def strategy_name(strategy: str) -> str:
    """``sru + ced`` -> ``SRU + CED``; method names as the book writes them."""
    return " + ".join(display_name(part) for part in strategy.split(" + "))


def ablation_points(runs: pd.DataFrame) -> pd.DataFrame:
    """The ablation runs with ``shards`` (the partition used) and ``aggregation`` (how the sub-models
    are combined: SISA's average, attention without centroids, SRU's attention with centroids)."""
    if runs.empty:
        return runs.assign(shards=pd.Series(dtype=str), aggregation=pd.Series(dtype=str))
    plain = runs[(runs["extra_deletion"] == "none") & (runs["method"] != "retrain")]
    names = {"sisa": "average (SISA)", "receraser": "attention (RecEraser)", "sru": "attention + centroids (SRU)"}
    return plain.assign(shards=shards_used(plain), aggregation=plain["method"].map(names))


def partition_table(runs: pd.DataFrame, n_shards: int) -> pd.DataFrame:
    """NDCG@10 (mean ± std over seeds) of every aggregation on random and on similarity shards, at
    ``n_shards`` shards."""
    points = ablation_points(runs)
    points = points[points["n_shards"] == n_shards] if len(points) else points
    if points.empty:
        return pd.DataFrame()
    points = points.drop(columns="partition").rename(columns={"shards": "partition"})
    grouped = points.groupby(CELLS + ["aggregation", "partition"])["ndcg@10"]
    text = [format_mean_std(m, sd, 4, MISSING_TEXT, n)
            for m, sd, n in zip(grouped.mean(), grouped.std(), grouped.count())]
    table = pd.Series(text, index=grouped.mean().index).unstack("partition")
    return display_frame(sort_paper_order(table.reset_index(), CELLS), index=CELLS + ["aggregation"])


def shard_count_table(runs: pd.DataFrame) -> pd.DataFrame:
    """SRU (its own partition) by number of shards K: NDCG@10, HIT@10, unlearning CPU seconds (one
    retrained shard, its centroid, the aggregator: as the efficiency claim reads them) and their share of
    a full training measured in the same run, means over seeds."""
    points = ablation_points(runs)
    sru = points[(points["method"] == "sru") & (points["shards"] == "similarity")] if len(points) else points
    if sru.empty:
        return pd.DataFrame()
    keys = CELLS + ["n_shards"]
    sru = sru.assign(share_of_full_training=_share_of_full_training(sru))
    table = sru.groupby(keys)[["ndcg@10", "hit@10", "unlearn_cpu_seconds", "share_of_full_training"]].mean()
    table.insert(0, "seeds", sru.groupby(keys).size())
    return display_frame(sort_paper_order(table.round(4).reset_index(), CELLS), index=keys)


# --- claims --------------------------------------------------------------------------------------------

NEEDED = CELLS + ["seed", "method", "extra_deletion", "n_extra", "partition", "n_shards", "ndcg@10", "hit@10",
                  "hit_before_retraining@10", "unlearn_seconds", "unlearn_cpu_seconds", "unlearn_all_retrained_seconds",
                  "full_model_cpu_seconds",
                  "full_model_cached", "full_model_stored", "train_pairs_before", "train_pairs_after"]
FASTER_THAN = 1.0
"""``sru_unlearns_faster`` holds when SRU's unlearning CPU time is significantly below this share of a
full retrain's (the full-data model's training, scaled to the pairs left)."""


def inferable_claim(runs: pd.DataFrame) -> dict:
    """``sru_deleted_item_inferable`` on Retrain's runs (one value per dataset, model and seed)."""
    main = main_runs(with_columns(runs, NEEDED))
    retrained = main[main["method"] == "retrain"]
    return band_claim("sru_deleted_item_inferable",
                      f"After deletion and a full retrain on the remaining data (Retrain), the deleted item can "
                      f"still be inferred from the rest of its session: HIT@10 above a random ranking's "
                      f"10/{N_NEGATIVES + 1}", retrained, "hit@10", CELLS, low=HIT_RANDOM[10],
                      note="Retrain never saw the deleted item in its session, so what it infers comes from the "
                           "other sessions and items.")


def accuracy_claims(runs: pd.DataFrame) -> list[dict]:
    """``sru_accuracy_near_retrain`` (a paper claim, as we read it) and ``sru_accuracy_above_baselines``
    (an expectation: the abstract makes no comparison with baselines)."""
    main = main_runs(with_columns(runs, NEEDED))
    done, waiting = split_waiting(main)
    share = share_of_retrain(done, "ndcg@10")
    share = share[share["method"] == "sru"].rename(columns={"share": "sru_share_of_retrain"})
    share = with_waiting_rows(share, waiting[waiting["method"] == "sru"], CELLS + ["method", "seed"])
    return [
        as_kind(ordering_claim("sru_accuracy_above_baselines",
                               "SRU recommends more accurately (NDCG@10) than SISA and than RecEraser-style "
                               "aggregation", main, "method", [("sru", "sisa"), ("sru", "receraser")], "ndcg@10",
                               CELLS), OWN_EXPECTATION),
        band_claim("sru_accuracy_near_retrain", f"SRU recommends accurately: at least {NEAR_RETRAIN:.0%} of "
                   f"Retrain's NDCG@10 (our reading of the abstract's \"accurate recommendation performance\")",
                   share, "sru_share_of_retrain", CELLS, low=NEAR_RETRAIN),
    ]


def _share_of_full_training(runs: pd.DataFrame) -> pd.Series:
    """Per run: unlearning CPU seconds over the full-data model's CPU seconds scaled to the pairs left
    (see :func:`unlearning_share_of_full_training`); NaN without CPU times."""
    full = runs["full_model_cpu_seconds"].astype(float) * (runs["train_pairs_after"].astype(float)
                                                           / runs["train_pairs_before"].astype(float))
    return runs["unlearn_cpu_seconds"].astype(float) / full.where(full > 0)


def unlearning_share_of_full_training(runs: pd.DataFrame) -> pd.DataFrame:
    """SRU's runs (no extra deletion, own partition) with ``share_of_full_training``: the run's
    unlearning CPU seconds (one retrained shard, its centroid, the aggregator) over the CPU seconds of
    a full retrain -- the full-data model's training (on every training pair, before deletion; in this
    run or, where it came from the cache, in the earlier run that trained it, the same process's or,
    read from disk, an earlier process's) times the share of training pairs left after deletion (an
    epoch costs about its pairs; a full retrain trains on the remaining ones). Early stopping can end
    the two trainings at different epochs, so the share is an estimate. Runs without CPU times are
    left out."""
    main = main_runs(with_columns(runs, NEEDED))
    sru = main[main["method"] == "sru"]
    return _known(sru.assign(share_of_full_training=_share_of_full_training(sru)), "share_of_full_training")


def _known(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """``runs`` without the computed runs whose ``column`` is undefined; the runs without a record
    (:data:`~recunlearn.report.claims.STATUS`) stay, for a claim to count them as pending."""
    waiting = runs[STATUS].ne(COMPUTED) if STATUS in runs else pd.Series(False, index=runs.index)
    return runs[runs[column].notna() | waiting]


def efficiency_claim(runs: pd.DataFrame) -> dict:
    """``sru_unlearns_faster``, judged within each SRU run: its unlearning CPU time against a full
    retrain's (:func:`unlearning_share_of_full_training`), in CPU seconds, which other processes on the
    machine inflate far less than wall seconds. Per dataset and model, one-sided t-tests of the mean share over seeds
    against :data:`FASTER_THAN` (1): holds when significantly below, fails when significantly above,
    inconclusive within noise (or with fewer than two runs); pending without a run."""
    shares = unlearning_share_of_full_training(runs)
    done, _ = split_waiting(shares)

    def count(flag):
        return int(done[flag].fillna(False).astype(bool).sum()) if len(done) else 0

    stored = count("full_model_stored")
    cached = count("full_model_cached") - stored
    note = ("Per SRU run: unlearning CPU seconds (one retrained shard, its centroid, the aggregator) over a full "
            "retrain's CPU seconds (the full-data model's training, scaled to the pairs left after deletion)"
            + (f"; in {cached} of {len(done)} runs that training ran in an earlier run of the same process, in "
               f"{stored} in an earlier process (stored between compute sessions)" if len(done) else "") + ".")
    return band_claim("sru_unlearns_faster", "SRU unlearns faster (one shard + the aggregator) than a full retrain",
                      shares, "share_of_full_training", CELLS, low=0.0, high=FASTER_THAN, note=note)


def efficiency_reading_claim(runs: pd.DataFrame) -> dict:
    """``sru_unlearns_faster_whole_set``, the other reading of ``sru_unlearns_faster``
    (:data:`~recunlearn.report.verdicts.OTHER_READING`): the whole unlearning set at once. The chapter's
    set takes sessions from every shard, so SRU retrains every shard (one after another, in one process)
    and then the aggregator. Judged within each SRU run like ``sru_unlearns_faster``: that work's CPU
    seconds over a full retrain's (:func:`_share_of_full_training`'s denominator); the run records the
    whole work in wall seconds only, so its CPU seconds are estimated with the run's own CPU-to-wall
    ratio of one shard and the aggregator (the run's shards train in one process, under one load)."""
    shares = unlearning_share_of_full_training(runs)
    one_request = shares["unlearn_seconds"].astype(float)  # wall seconds of one shard and the aggregator
    shares = _known(shares.assign(whole_set_share=shares["unlearn_all_retrained_seconds"].astype(float)
                                  / one_request.where(one_request > 0) * shares["share_of_full_training"]),
                    "whole_set_share")
    row = band_claim("sru_unlearns_faster_whole_set",
                     "SRU unlearns the whole unlearning set (every affected shard retrained, then the aggregator) "
                     "faster than a full retrain", shares, "whole_set_share", CELLS, low=0.0, high=FASTER_THAN,
                     note="Per SRU run: the CPU seconds of every shard it retrained, their centroids and the "
                          "aggregator (estimated from their wall seconds with the run's CPU-to-wall ratio) over a "
                          "full retrain's CPU seconds.")
    return as_kind(row, OTHER_READING)


def extra_deletion_points(runs: pd.DataFrame) -> pd.DataFrame:
    """SRU's runs by extra-deletion strategy and number of items ``n``; the run without extra deletion
    is each strategy's point at n = 0."""
    sru = runs[(runs["method"] == "sru") & (_column(runs, "partition", "own") == "own")] if len(runs) else runs
    if sru.empty:
        return sru
    base = sru[sru["extra_deletion"] == "none"]
    ways = sorted(set(sru["extra_deletion"]) - {"none"})
    parts = [sru[sru["extra_deletion"] != "none"]] + [base.assign(extra_deletion=w, n_extra=0) for w in ways]
    return pd.concat(parts, ignore_index=True)


WITHOUT_EXTRA = "without extra deletion"
"""The level of :func:`strategy_points` holding SRU's runs without extra deletion."""


def strategy_points(points: pd.DataFrame) -> pd.DataFrame:
    """:func:`extra_deletion_points` for :func:`extra_deletion_claim`: per dataset, model and seed, HIT@10
    of SRU without extra deletion (``extra_deletion`` = :data:`WITHOUT_EXTRA`, once: it is every
    strategy's n = 0) and, per strategy, the mean over its computed runs with n > 0 extra items (one
    value per seed, whatever the number of levels of n swept). Runs without a record (``status``) keep
    their rows, for the claim to count them."""
    if points.empty:
        return points
    status = [STATUS] if STATUS in points else []
    base = points[points["n_extra"] == 0].drop_duplicates(CELLS + ["seed"] + status)
    base = base.assign(extra_deletion=WITHOUT_EXTRA)
    done, waiting = split_waiting(points[points["n_extra"] > 0])
    mean = done.groupby(CELLS + ["extra_deletion", "seed"], as_index=False)["hit@10"].mean()
    if status:
        mean[STATUS] = COMPUTED
    return pd.concat([base, mean, waiting], ignore_index=True)


def extra_deletion_claim(runs: pd.DataFrame) -> dict:
    """``sru_extra_deletion_lowers_hit``, the abstract's "improved unlearning effectiveness": each extra
    deletion strategy (CED, NED, RED) gives SRU a lower HIT@10 than SRU without extra deletion -- one
    link per strategy, its value the mean over the numbers of extra items swept
    (:func:`strategy_points`, of the computed runs), pooled over datasets and models, pairs by seed
    (Holm over the links); the runs without a record are counted as pending, one by one, and a
    strategy with none computed stays in the claim as a link without pairs."""
    points = extra_deletion_points(with_columns(runs, NEEDED))
    done, waiting = split_waiting(points)  # the runs themselves are counted, not the means made of them
    strategies = sorted(set(points["extra_deletion"]) - {"none"}) if len(points) else []
    row = ordering_claim("sru_extra_deletion_lowers_hit",
                         "Extra deletion (CED, NED, RED) improves unlearning effectiveness: HIT@10 below SRU's "
                         "without it", strategy_points(done), "extra_deletion",
                         [(way, WITHOUT_EXTRA) for way in strategies], "hit@10", CELLS, higher=False)
    return with_waiting(row, count_runs(waiting), count_runs(done))


def more_extra_deletion_claim(runs: pd.DataFrame) -> dict:
    """``sru_more_extra_deletion_lowers_hit`` (the chapter's expectation; the abstract does not say how
    effectiveness depends on n): HIT@10 lower at each step up in the number n > 0 of extra deleted
    items (consecutive levels among the runs), an ordering per step pooled over datasets, models and
    strategies, pairs by seed. Not a Spearman trend per strategy: with one seed per cell (the
    paper-scale sweep) and few levels of n its smallest p-value could never reach the level. Pending
    with fewer than two levels of n > 0."""
    points = extra_deletion_points(with_columns(runs, NEEDED))
    points = points[points["n_extra"] > 0] if len(points) else points
    levels = sorted({int(n) for n in points["n_extra"]}) if len(points) else []
    labelled = points.assign(extra_items=[f"{int(n)} extra" for n in points["n_extra"]])
    links = [(f"{more} extra", f"{fewer} extra") for fewer, more in zip(levels, levels[1:])]
    claim = "HIT@10 falls as more items are deleted by extra deletion (CED, NED, RED)"
    if not links:
        return claim_row("sru_more_extra_deletion_lowers_hit", claim, PENDING,
                         "needs runs at two or more numbers of extra items", kind=OWN_EXPECTATION)
    return as_kind(ordering_claim("sru_more_extra_deletion_lowers_hit", claim, labelled, "extra_items", links,
                                  "hit@10", CELLS + ["extra_deletion"], higher=False), OWN_EXPECTATION)


def sru_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The abstract's claims as we read them, with the expectations beside them (the module docstring's
    first five items: seven claims), on seed-level runs."""
    return claims_frame([inferable_claim(runs), *accuracy_claims(runs), efficiency_claim(runs),
                         efficiency_reading_claim(runs), extra_deletion_claim(runs), more_extra_deletion_claim(runs)])


def ablation_claims(runs: pd.DataFrame, n_shards: int) -> pd.DataFrame:
    """The ablation page's claims, all the chapter's expectations (the abstract reports no ablation):
    partition and centroid attention at ``n_shards`` shards; the shard-count trends of SRU on its own
    partition."""
    points = ablation_points(with_columns(runs, NEEDED + ["created", "session"]))
    at_k = points[points["n_shards"] == n_shards]
    sru = at_k[at_k["method"] == "sru"]
    attention = at_k[at_k["method"].isin(["sru", "receraser"])]
    sweep = points[(points["method"] == "sru") & (points["shards"] == "similarity")]
    return claims_frame([
        ordering_claim("sru_similarity_partition_helps",
                       "SRU's aggregator recommends more accurately (NDCG@10) on similarity shards than on random "
                       "shards", sru, "shards", [("similarity", "random")], "ndcg@10", CELLS),
        ordering_claim("sru_centroid_attention_helps",
                       "Attention with shard centroids (SRU) beats attention without them (RecEraser-style) on the "
                       "same shards, random or similarity", attention, "method", [("sru", "receraser")], "ndcg@10",
                       CELLS + ["shards"]),
        trend_claim("sru_more_shards_faster", "Unlearning takes less time with more shards (SRU)",
                    _known(sweep.assign(share_of_full_training=_share_of_full_training(sweep)),
                           "share_of_full_training"), "n_shards", "share_of_full_training", -1, CELLS,
                    note="Time per run: unlearning CPU seconds over the full-data model's training CPU seconds, "
                         "so runs recorded apart compare without comparing their wall clocks."),
        trend_claim("sru_more_shards_less_accurate", "SRU's NDCG@10 falls as the number of shards grows", sweep,
                    "n_shards", "ndcg@10", -1, CELLS),
    ]).pipe(with_kind, OWN_EXPECTATION, ["sru_similarity_partition_helps", "sru_centroid_attention_helps",
                                         "sru_more_shards_faster", "sru_more_shards_less_accurate"])


# --- the pages' grids ----------------------------------------------------------------------------------

SUBSTITUTES = {"beauty": "the paper's Beauty", "ml-1m": "Steam"}
"""The chapter's datasets that stand in for the paper's (dataset -> the paper's): the BERT4Rec copy of
Beauty, and ML-1M for Steam, whose file could not be obtained."""


@dataclasses.dataclass(frozen=True)
class SruPageGrid(SruGrid):
    """A page reading the method comparison (every method, no extra deletion) and SRU's extra-deletion
    sweep (each strategy of ``extra_deletions`` other than none, each ``n_extras`` > 0), the sweep
    with ``extra_seeds`` (None: the same seeds). Its runs are the runs it reads."""

    extra_seeds: tuple[int, ...] | None = option(None, min=0, doc="seeds of the extra-deletion sweep; None: SEEDS")

    def parts(self) -> tuple[SruGrid, SruGrid | None]:
        """(the method comparison, the extra-deletion sweep or None)."""
        main = as_base(self, SruGrid, extra_deletions=("none",), n_extras=(0,))
        ways = tuple(w for w in self.extra_deletions if w != "none")
        counts = tuple(n for n in self.n_extras if n > 0)
        if not (ways and counts):
            return main, None
        return main, as_base(self, SruGrid, methods=("sru",), extra_deletions=ways, n_extras=counts,
                             seeds=self.extra_seeds or self.seeds)

    def runs(self):
        main, extra = self.parts()
        listed = SruGrid.runs(main) + (SruGrid.runs(extra) if extra else [])
        return list(dict.fromkeys(listed))  # a run listed by both parts once


@dataclasses.dataclass(frozen=True)
class SruAblationGrid(SruGrid):
    """The ablation page: every method of ``methods`` on every partition of ``partitions`` at
    ``n_shards`` shards, and SRU on its own partition at each of ``shard_counts``."""

    PAPER_DATASETS = ("games",)  # no ablation of the paper is known: the chapter's own, on Games

    shard_counts: tuple[int, ...] = option((2, 4, 8, 16), min=1, doc="K of the shard-count sweep (SRU)")

    def runs(self):
        listed = SruGrid.runs(as_base(self, SruGrid))
        for k in self.shard_counts:
            listed += SruGrid.runs(as_base(self, SruGrid, methods=("sru",), partitions=("own",), n_shards=k))
        return list(dict.fromkeys(listed))


@dataclasses.dataclass(frozen=True)
class SruOverviewGrid(SruPageGrid):
    """The overview page: :class:`SruPageGrid`'s runs (the method comparison and the extra-deletion
    sweep) and, when ``ablation_partitions`` or ``ablation_shard_counts`` is given, the ablation
    page's runs at the same scale (:class:`SruAblationGrid`: every sharded method of ``methods`` on
    each of ``ablation_partitions`` at ``n_shards`` shards, SRU at each of ``ablation_shard_counts``);
    with ``code_choices``, SRU with each named choice of the authors' code on the comparison's seeds
    (:func:`~recunlearn.report.sru_code_choices.code_choice_runs`), read by that section alone."""

    ablation_partitions: tuple[str, ...] | None = option(None, choices=(*PARTITIONS, None),
                                                         doc="partitions of the ablation; None: no partition ablation")
    ablation_shard_counts: tuple[int, ...] | None = option(
        None, min=1, doc="K of the ablation's shard-count sweep (SRU); None: none")
    code_choices: tuple[str, ...] | None = option(None, choices=(*CODE_CHOICES, None),
                                                  doc="choices of the authors' code run both ways; None: none")

    def validate(self) -> None:
        for field in self.code_choices or ():
            choice = CODE_CHOICES[field]
            listed = getattr(self, choice.grid_option)
            if tuple(listed) != (choice.ours,):
                raise ConfigError(f"CODE_CHOICES = {list(self.code_choices)!r} compares {field} {choice.code!r} "
                                  f"with the runs of {choice.grid_option.upper()} = [{choice.ours!r}], which the page's "
                                  f"other tables read; got {choice.grid_option.upper()} = {list(listed)!r}")
        super().validate()

    def ablation(self) -> SruAblationGrid | None:
        """The ablation part of the grid, or None without one."""
        if not (self.ablation_partitions or self.ablation_shard_counts):
            return None
        return as_base(self, SruAblationGrid, methods=tuple(m for m in self.methods if m != "retrain") or ("sru",),
                       partitions=self.ablation_partitions or ("own",), extra_deletions=("none",), n_extras=(0,),
                       shard_counts=self.ablation_shard_counts or ())

    def runs(self):
        ablation = self.ablation()
        choices = code_choice_runs(self, self.code_choices) if self.code_choices else []
        return list(dict.fromkeys(SruPageGrid.runs(self) + (ablation.runs() if ablation else []) + choices))
