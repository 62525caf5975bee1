"""CURE4Rec exact unlearning: Retrain, SISA, RecEraser and UltraRE through the four stages
(learn, select, unlearn, evaluate), with utility, fairness (A-IGF, shardGF), shard composition
and unlearning time (CURE4Rec §5.2-5.5, B.3-B.4)."""

from __future__ import annotations

import dataclasses
import itertools
import time

import numpy as np
import pandas as pd
import torch

from .. import paths
from ..data import load_split
from ..data.selection import RULES, SCORINGS, select_unlearning_users
from ..metrics import active_user_mask
from ..models import TrainingData, train_until_converged
from ..seeding import seed_everything
from ..unlearning import EXACT_METHODS, unlearn_exactly
from ..unlearning.combiners import build_combiner
from ..unlearning.exact import TIMINGS, ExactUnlearningResult, without_users
from ..unlearning.partition import ORDERS
from .config import option
from .cure4rec import (LearnConfig, TrainingSettings, UnlearningGrid, _require_device,
                       build_model, evaluate_remaining, remaining_after, train_original_model)
from .records import load_record, record_key, register, run_or_load

COMBINERS = ("route", "original")


@dataclasses.dataclass(frozen=True)
class UnlearnConfig(TrainingSettings):
    """One exact unlearning run: a method, an unlearning set and the backbone's training settings."""

    experiment = "cure4rec-exact"
    results_version = "2"  # 2: model selection after unlearning ignores the unlearned users; fresh stage-III generator

    method: str = option("retrain", choices=tuple(EXACT_METHODS))
    selection: str = option("random", choices=RULES)
    ratio: float = option(5.0, min=0.0, max=100.0, percent=True, doc="percentage of users to unlearn")
    scoring: str = option("degree", choices=SCORINGS, doc="core/edge ranking: degree (code) or importance (Eq. 1)")
    selection_seed: int = option(0, min=0, doc="seed of the random unlearning set (same for every run seed)")
    n_shards: int = option(10, min=1, doc="ignored by retrain (one shard)")
    partition_order: str = option("nearest_first", choices=ORDERS, doc="RecEraser's assignment order")
    combiner: str = option("route", choices=COMBINERS)
    timing: str = option("batched", choices=TIMINGS)


def pretrained_user_embeddings(config: TrainingSettings) -> np.ndarray:
    """User embeddings of a WMF trained on all training data (stage I; RecEraser/UltraRE partition
    on them, so the partition also depends on the users unlearned later, as in RecEraser). Cached in
    the per-user cache by the WMF run's record key."""
    wmf = LearnConfig(dataset=config.dataset, model="wmf", seed=config.seed, protocol=config.protocol,
                      validation=config.validation, split_seed=config.split_seed, dim=config.dim,
                      max_epochs=config.max_epochs, patience=config.patience, device=config.device)
    path = paths.cache_dir() / "embeddings" / f"wmf-users-{record_key(wmf)}.npy"
    if path.is_file():
        return np.load(path, allow_pickle=False)
    model, *_ = train_original_model(wmf)
    embeddings = model.user_embedding.detach().cpu().numpy()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, embeddings, allow_pickle=False)
    tmp.replace(path)
    return embeddings


def exact_unlearning(config: TrainingSettings, split, deleted: np.ndarray, method: str, n_shards: int = 1,
                     order: str = "nearest_first", timing: str = "batched") -> tuple[ExactUnlearningResult, float]:
    """Stages I and III of the exact ``method`` (see :mod:`..unlearning.exact`) with ``config``'s
    backbone on ``split``: the one definition every page uses, so ``method="retrain"`` is *the*
    Retrain model (one shard, ``n_shards`` ignored; parameters from ``config.seed`` re-initialised
    from ``config.seed + 1_000_003``, batches from ``config.seed``; early stopping on the
    validation items of the remaining users only). Returns the result and the partition's seconds."""
    exact = EXACT_METHODS[method]
    n_shards = 1 if method == "retrain" else n_shards
    embeddings = pretrained_user_embeddings(config) if exact.needs_embeddings else None
    start = time.perf_counter()
    user_shard = exact.partition(split.n_users, n_shards, config.seed, embeddings, order=order)
    partition_seconds = time.perf_counter() - start
    seed_everything(config.seed)
    train_kwargs = dict(lr=config.lr, max_epochs=config.max_epochs, patience=config.patience, k=config.k,
                        progress=False)
    result = unlearn_exactly(
        split.train["user"].to_numpy(), split.train["item"].to_numpy(), split.n_users, split.n_items, user_shard,
        deleted, lambda blocks, generator: build_model(config, split.n_users, split.n_items, generator, blocks),
        split.train_matrix, split.matrix("valid"), config.seed, train_kwargs, config.device, timing)
    return result, partition_seconds


def shard_statistics(per_user: dict, user_shard: np.ndarray, active: np.ndarray, n_shards: int) -> dict:
    """Per-shard mean NDCG@k (both variants) over the shard's evaluated users, shardGF (population
    variance of those means over shards with evaluated users) and active/inactive counts per shard."""
    shards = user_shard[per_user["user"]]
    counts = np.bincount(shards, minlength=n_shards)
    out = {"shard_users": counts.tolist(),
           "shard_active": np.bincount(shards[active], minlength=n_shards).tolist(),
           "shard_inactive": np.bincount(shards[~active], minlength=n_shards).tolist()}
    for metric, name in (("ndcg_untruncated", "shard_gf"), ("ndcg", "shard_gf_standard")):
        means = np.bincount(shards, weights=per_user[metric], minlength=n_shards)[counts > 0] / counts[counts > 0]
        out[f"shard_{metric}"] = means.tolist()
        out[name] = float(np.var(means)) if n_shards > 1 else float("nan")
    return out


COMBINER_LR = 1e-3
COMBINER_MAX_EPOCHS = 50


def train_combiner(name: str, model, user_shard, split, deleted, config: UnlearnConfig):
    """Train the original combiner ``name`` over the (frozen) shard models on the remaining training
    data: Adam (lr 1e-3), at most 50 epochs, early stopping as for the models (on the remaining
    users' validation items). Returns the combiner, its training seconds (validation excluded) and epochs."""
    keep = ~np.isin(split.train["user"].to_numpy(), deleted)
    data = TrainingData.from_pairs(split.train["user"].to_numpy()[keep], split.train["item"].to_numpy()[keep],
                                   split.n_users, split.n_items, config.device)
    generator = torch.Generator().manual_seed(config.seed + 2_000_003)
    combiner = build_combiner(name, model, user_shard, config.model, generator, c0=config.wmf_c0,
                              batch_size=config.batch_size, n_negatives=config.n_negatives).to(config.device)
    sampling = torch.Generator(device=config.device).manual_seed(config.seed + 2_000_003)
    training = train_until_converged(combiner, data, sampling, without_users(split.train_matrix, deleted),
                                     without_users(split.matrix("valid"), deleted), lr=COMBINER_LR,
                                     max_epochs=min(config.max_epochs, COMBINER_MAX_EPOCHS),
                                     patience=config.patience, k=config.k, progress=False)
    return combiner, training.train_seconds, training.epochs_run


@register(UnlearnConfig)
def run_exact_unlearning(config: UnlearnConfig) -> dict:
    """Learn, select, unlearn (timed) and evaluate on the remaining users (see :mod:`..unlearning.exact`)."""
    _require_device(config.device)
    seed_everything(config.seed)
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    train_users, train_items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    deleted = select_unlearning_users(train_users, train_items, split.n_users, config.selection, config.ratio,
                                      config.scoring, seed=config.selection_seed)
    method = EXACT_METHODS[config.method]
    result, partition_seconds = exact_unlearning(config, split, deleted, config.method, config.n_shards,
                                                 config.partition_order, config.timing)
    user_shard, n_shards = result.user_shard, 1 if config.method == "retrain" else config.n_shards
    served_by, route = result.model, user_shard
    timings = {**result.timings, "partition_seconds": partition_seconds}
    if config.combiner == "original" and method.original_combiner is not None:
        served_by, timings["combiner_seconds"], timings["combiner_epochs"] = train_combiner(
            method.original_combiner, result.model, user_shard, split, deleted, config)
        route = None
        timings["unlearn_seconds"] += timings["combiner_seconds"]

    remaining = remaining_after(split, deleted)
    kept = remaining.kept_rows
    per_user, metrics = evaluate_remaining(served_by, split, config, remaining, user_block=route)
    active = active_user_mask(remaining.train_counts, per_user["user"], config.active_fraction)
    shards = shard_statistics(per_user, user_shard, active, n_shards)
    metrics.update({"shard_gf": shards.pop("shard_gf"), "shard_gf_standard": shards.pop("shard_gf_standard")})
    stage1 = result.stage1
    return {
        "metrics": metrics,
        "shards": shards,
        "timings": {**timings, "unlearn_plus_partition_seconds": timings["unlearn_seconds"] + partition_seconds},
        "training": {
            "stage1_epochs_run": stage1.epochs_run if stage1 else 0,
            "stage3_block_epochs_run": {str(k): v for r in result.stage3 for k, v in r.block_epochs_run.items()},
            "stage3_block_best_epoch": {str(k): v for r in result.stage3 for k, v in r.block_best_epoch.items()},
        },
        "unlearning": {"n_deleted": int(len(deleted)), "deleted_interactions": int((~kept).sum()),
                       "n_shards": n_shards, "affected_shards": result.affected_shards.tolist(),
                       "unaffected_shards_unchanged": result.unaffected_unchanged,
                       "deleted_rows_at_init": result.deleted_rows_at_init},
        "split": split.description, "seed": config.seed, "device": config.device,
    }


@dataclasses.dataclass(frozen=True)
class ExactGrid(UnlearningGrid):
    """Notebook parameters of the exact-unlearning pages: lists expand into one run each."""

    experiment = "cure4rec-exact"

    methods: tuple[str, ...] = option(tuple(EXACT_METHODS), choices=tuple(EXACT_METHODS))
    shard_counts: tuple[int, ...] = option((10,), min=1)
    combiner: str = option("route", choices=COMBINERS)
    timing: str = option("batched", choices=TIMINGS)
    compute_missing: bool = option(True, doc="False: show only stored records, list the rest as pending")

    def runs(self) -> list[UnlearnConfig]:
        runs = []
        for d, m, method, sel, ratio, k, seed in itertools.product(self.datasets, self.models, self.methods,
                                                                  self.selections, self.ratios, self.shard_counts,
                                                                  self.seeds):
            if method == "retrain" and k != self.shard_counts[0]:
                continue  # one shard whatever K: run it once
            runs.append(UnlearnConfig(dataset=d, model=m, method=method, selection=sel, ratio=ratio,
                                      n_shards=k if method != "retrain" else 10, seed=seed, combiner=self.combiner,
                                      timing=self.timing, validation=self.validation,
                                      max_epochs=self.max_epochs, device=self.device))
        return runs


def run_exact_grid(grid: ExactGrid, records_dir=None) -> pd.DataFrame:
    """Run (or load) every run of ``grid``: one row per run with config, metrics and timings. With
    ``compute_missing=False`` runs without a stored record are skipped and listed, as configs, in
    ``frame.attrs["pending"]``."""
    rows, pending = [], []
    for config in grid.runs():
        record = run_or_load(config, records_dir) if grid.compute_missing else load_record(config, records_dir)
        if record is None:
            pending.append(config.to_dict())
            continue
        rows.append({"dataset": config.dataset, "model": config.model, "method": config.method,
                     "selection": config.selection, "ratio": config.ratio,
                     "n_shards": record["unlearning"]["n_shards"], "seed": config.seed, **record["metrics"],
                     **record["timings"], "record": record["key"]})
    base_columns = ["dataset", "model", "method", "selection", "ratio", "n_shards", "seed"]
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=base_columns + EXACT_UTILITY + EXACT_FAIRNESS
                                                         + ["unlearn_seconds", "record"])
    frame.attrs["pending"] = pending
    return frame


EXACT_UTILITY = ["ndcg_untruncated", "hr_cure4rec", "ndcg", "hit_ratio", "recall"]
EXACT_FAIRNESS = ["a_igf", "a_igf_standard", "shard_gf", "shard_gf_standard"]


def with_retrain_gap(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``a_igf_gap`` = A-IGF minus the mean A-IGF of Retrain (same dataset, model, selection,
    ratio) and its absolute value ``a_igf_gap_abs`` (the paper's "approaching Retrain")."""
    keys = ["dataset", "model", "selection", "ratio"]
    retrain = (runs[runs["method"] == "retrain"].groupby(keys)["a_igf"].mean().rename("a_igf_retrain").reset_index())
    out = runs.merge(retrain, on=keys, how="left")
    out["a_igf_gap"] = out["a_igf"] - out["a_igf_retrain"]
    out["a_igf_gap_abs"] = out["a_igf_gap"].abs()
    return out


def compare_exact(runs: pd.DataFrame, paper: pd.DataFrame, metrics: list[str],
                  tol: float | None = None) -> pd.DataFrame:
    """Mean ± std over seeds beside the paper, keyed by dataset, model, method and selection; paper
    cells of datasets/models not run are kept as pending. Tolerance per cell: the paper's rounding
    or two standard errors of our mean (:func:`recunlearn.report.compare.cell_tolerance`) unless
    ``tol`` fixes it."""
    from ..report.compare import compare, summarize_runs

    keys = ["dataset", "model", "method", "selection"]
    ours = summarize_runs(runs, keys, metrics)
    return compare(ours, paper[paper["metric"].isin(metrics)].drop(columns="source"), keys, tol=tol)


def shard_composition(grid: ExactGrid, records_dir=None, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """Active / inactive remaining users per shard for every sharded run of ``grid`` (summed over
    nothing: one row per run and shard), plus the paper's Tables 6-8 when given. Shards are
    numbered arbitrarily by every method, so ``rank`` orders them by active users (1 = most)."""
    rows = []
    for config in grid.runs():
        if config.method == "retrain":
            continue
        record = run_or_load(config, records_dir) if grid.compute_missing else load_record(config, records_dir)
        if record is None:
            continue
        for shard, (act, inact) in enumerate(zip(record["shards"]["shard_active"], record["shards"]["shard_inactive"])):
            rows.append({"dataset": config.dataset, "model": config.model, "method": config.method,
                         "selection": config.selection, "seed": config.seed, "shard": shard, "active": act,
                         "inactive": inact, "source": "ours"})
    frame = pd.DataFrame(rows)
    if paper is not None:  # the paper's groups are numbered from 1; its "source" column is a citation
        theirs = paper[paper["dataset"].isin(frame["dataset"].unique())].copy()
        theirs["shard"] -= 1
        theirs["model"], theirs["seed"], theirs["source"] = "(paper)", -1, "paper"
        frame = pd.concat([frame, theirs], ignore_index=True)
    keys = ["source", "dataset", "model", "method", "selection", "seed"]
    frame["rank"] = frame.groupby(keys)["active"].rank(method="first", ascending=False).astype(int)
    return frame


def active_concentration(composition: pd.DataFrame) -> pd.DataFrame:
    """Per source, method and selection: the share of all active users held by the shard with the
    most of them, and the coefficient of variation of active users across shards (mean over seeds)."""
    keys = ["source", "dataset", "method", "selection", "seed"]
    per_run = composition.groupby(keys)["active"].agg(
        top_shard_share=lambda a: a.max() / max(a.sum(), 1), cv=lambda a: a.std(ddof=0) / max(a.mean(), 1e-12))
    return per_run.groupby(["source", "dataset", "method", "selection"]).mean().reset_index()


# --- the paper's claims (§5.2-5.5, B.3-B.4) ---------------------------------------------------------

EU_METHODS = ["sisa", "receraser", "ultrare"]


def _means(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return runs.groupby(keys, as_index=False).mean(numeric_only=True)


def utility_claims(runs: pd.DataFrame, metric: str = "ndcg_untruncated") -> pd.DataFrame:
    """CURE4Rec §5.2 on seed-level runs, cells = (dataset, model, selection), pairs = seeds (see
    :func:`recunlearn.report.claims.ordering_claim`):

    - ``eu_below_retrain``: every EU method below Retrain;
    - ``receraser_ultrare_beat_sisa``: RecEraser and UltraRE above SISA;
    - ``ultrare_ge_receraser_ge_sisa``: UltraRE ≥ RecEraser ≥ SISA (links UltraRE > RecEraser and
      RecEraser > SISA);
    - ``core_highest_utility``: for EU methods, unlearning core users leaves higher utility than
      random and edge users (cells = dataset, model, method)."""
    from ..report.claims import claims_frame, ordering_claim

    cell = ["dataset", "model", "selection"]
    eu = runs[runs["method"].isin(EU_METHODS)]
    return claims_frame([
        ordering_claim("eu_below_retrain", "every EU method is below Retrain in utility", runs, "method",
                       [("retrain", m) for m in EU_METHODS], metric, cell),
        ordering_claim("receraser_ultrare_beat_sisa", "RecEraser and UltraRE beat SISA in utility", runs, "method",
                       [("receraser", "sisa"), ("ultrare", "sisa")], metric, cell),
        ordering_claim("ultrare_ge_receraser_ge_sisa", "UltraRE ≥ RecEraser ≥ SISA in utility", runs, "method",
                       [("ultrare", "receraser"), ("receraser", "sisa")], metric, cell),
        ordering_claim("core_highest_utility",
                       "EU methods: unlearning core users leaves higher utility than random or edge users", eu,
                       "selection", [("core", "random"), ("core", "edge")], metric, ["dataset", "model", "method"]),
    ])


def fairness_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """CURE4Rec §5.4 on seed-level runs, cells = (dataset, model, selection), pairs = seeds:

    - ``eu_a_igf_above_retrain``: EU methods favour active users more than Retrain (A-IGF above
      Retrain's, seed by seed);
    - ``receraser_ultrare_a_igf_further_than_sisa``: RecEraser and UltraRE move A-IGF further from
      Retrain (|A-IGF − Retrain's mean A-IGF|) than SISA;
    - ``receraser_ultrare_shardgf_above_sisa``: RecEraser and UltraRE have larger shardGF than SISA."""
    from ..report.claims import claims_frame, ordering_claim

    fair = with_retrain_gap(runs)
    cell = ["dataset", "model", "selection"]
    return claims_frame([
        ordering_claim("eu_a_igf_above_retrain", "EU methods worsen A-IGF towards active users (A-IGF above Retrain's)",
                       fair, "method", [(m, "retrain") for m in EU_METHODS], "a_igf", cell),
        ordering_claim("receraser_ultrare_a_igf_further_than_sisa",
                       "RecEraser and UltraRE move A-IGF further from Retrain than SISA", fair, "method",
                       [("receraser", "sisa"), ("ultrare", "sisa")], "a_igf_gap_abs", cell),
        ordering_claim("receraser_ultrare_shardgf_above_sisa", "RecEraser and UltraRE have larger shardGF than SISA",
                       fair, "method", [("receraser", "sisa"), ("ultrare", "sisa")], "shard_gf", cell),
    ])


TIME_METRICS = ("unlearn_seconds", "unlearn_sum_seconds", "unlearn_plus_partition_seconds", "unlearn_wall_seconds")

TIMING_RULE = ("Timing rule: times are compared only between runs timed in one session (records written at most "
               "10 minutes apart), and a sweep's levels must be interleaved in time.")
PAIR_TIMING_RULE = ("Timing rule: a time is compared only with the same seed's time whose record was written at "
                    "most 30 minutes from it.")


def sweep_claims(runs: pd.DataFrame, x: str, expected: dict[str, int], label: str,
                 records_dir=None) -> pd.DataFrame:
    """For each metric of ``expected`` (+1 rises, -1 falls with ``x``), one trend claim with id
    ``<metric>_rises`` / ``<metric>_falls``, tested per (dataset, model, method) over seed-level
    runs (:func:`recunlearn.report.claims.trend_claim`). Time metrics (:data:`TIME_METRICS`) use
    only runs timed together: the session holding most levels, levels interleaved in time
    (:func:`recunlearn.report.claims.timed_together`); runs' record times come from their records."""
    from ..report.claims import claims_frame, timed_together, trend_claim, with_sessions

    rows = []
    for metric, sign in expected.items():
        direction = "rises" if sign > 0 else "falls"
        timing = metric in TIME_METRICS
        frame = with_sessions(runs, [UnlearnConfig.experiment], records_dir) if timing else runs
        rows.append(trend_claim(f"{metric}_{direction}", f"{metric} {direction} with {label}", frame, x, metric, sign,
                                ["dataset", "model", "method"], usable=timed_together(x) if timing else None,
                                note=TIMING_RULE if timing else ""))
    return claims_frame(rows)


def concentration_claims(composition: pd.DataFrame) -> pd.DataFrame:
    """Appendix B.3 on :func:`shard_composition` (our runs), one value per run: the share of all
    active users held by the shard with the most of them.

    - ``receraser_ultrare_concentrate_active_users``: that share is larger for RecEraser and UltraRE
      than for SISA (seed-paired, cells = dataset, model, selection; see
      :func:`recunlearn.report.claims.ordering_claim`)."""
    from ..report.claims import claims_frame, ordering_claim

    keys = ["dataset", "model", "method", "selection", "seed"]
    ours = composition[composition["source"] == "ours"]
    per_run = ours.groupby(keys)["active"].agg(lambda a: a.max() / max(a.sum(), 1)).rename("top_shard_share")
    return claims_frame([
        ordering_claim("receraser_ultrare_concentrate_active_users",
                       "RecEraser and UltraRE group active users together, SISA spreads them (top shard's share)",
                       per_run.reset_index(), "method", [("receraser", "sisa"), ("ultrare", "sisa")],
                       "top_shard_share", ["dataset", "model", "selection"]),
    ])


def time_claims(runs: pd.DataFrame, metric: str = "unlearn_seconds", records_dir=None) -> pd.DataFrame:
    """CURE4Rec §5.3 on seed-level runs, cells = (dataset, model, selection), a time compared only
    with the same seed's time of another method recorded at most 30 minutes from it
    (:data:`recunlearn.report.claims.PAIR_WINDOW`):

    - ``sisa_faster_than_receraser_ultrare``: SISA is faster than RecEraser and UltraRE;
    - ``ultrare_faster_than_receraser``: UltraRE is faster than RecEraser;
    - ``eu_faster_than_retrain``: every EU method is faster than Retrain;
    - ``eu_faster_on_core``: EU methods unlearn core users faster than random or edge users
      (cells = dataset, model, method)."""
    from ..report.claims import PAIR_WINDOW, claims_frame, ordering_claim, record_times

    timed = runs.assign(created=record_times(runs, [UnlearnConfig.experiment], records_dir))
    cell, pair = ["dataset", "model", "selection"], ("seed",)
    note = PAIR_TIMING_RULE
    eu = timed[timed["method"].isin(EU_METHODS)]
    return claims_frame([
        ordering_claim("sisa_faster_than_receraser_ultrare", "SISA is faster than RecEraser and UltraRE", timed,
                       "method", [("sisa", "receraser"), ("sisa", "ultrare")], metric, cell, higher=False,
                       pair_on=pair, note=note, max_apart=PAIR_WINDOW),
        ordering_claim("ultrare_faster_than_receraser", "UltraRE is faster than RecEraser", timed, "method",
                       [("ultrare", "receraser")], metric, cell, higher=False, pair_on=pair, note=note,
                       max_apart=PAIR_WINDOW),
        ordering_claim("eu_faster_than_retrain", "every EU method is faster than Retrain", timed, "method",
                       [(m, "retrain") for m in EU_METHODS], metric, cell, higher=False, pair_on=pair, note=note,
                       max_apart=PAIR_WINDOW),
        ordering_claim("eu_faster_on_core", "EU methods unlearn core users faster than random or edge users", eu,
                       "selection", [("core", "random"), ("core", "edge")], metric, ["dataset", "model", "method"],
                       higher=False, pair_on=pair, note=note, max_apart=PAIR_WINDOW),
    ])


def combiner_variants(grid: ExactGrid, records_dir=None) -> pd.DataFrame:
    """RecEraser and UltraRE served by routing and by their original combiners (random users,
    the grid's first seed, WMF and BPR), one row per run with a ``combiner`` column."""
    base = grid.replace(methods=("receraser", "ultrare"), selections=("random",), seeds=grid.seeds[:1],
                        models=tuple(m for m in grid.models if m != "lightgcn") or ("wmf",))
    frames = [run_exact_grid(base.replace(combiner=c), records_dir).assign(combiner=c) for c in COMBINERS]
    return pd.concat(frames, ignore_index=True)
