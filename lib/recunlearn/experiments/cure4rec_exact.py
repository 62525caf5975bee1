"""CURE4Rec exact unlearning: Retrain, SISA, RecEraser and UltraRE through the four stages
(learn, select, unlearn, evaluate), with utility, fairness (A-IGF, shardGF), shard composition
and unlearning time (CURE4Rec §5.2-5.5, B.3-B.4). :func:`collect` returns a grid's runs and the runs
still without a record; the comparison with the paper and its claims are in
:mod:`recunlearn.report.cure4rec`."""

from __future__ import annotations

import dataclasses
import itertools
import time

import numpy as np
import pandas as pd
import torch

from .. import paths
from ..data import load_split
from ..data.selection import RULES, SCORINGS
from ..metrics import active_user_mask
from ..models import TrainingData, train_until_converged
from ..seeding import seed_everything
from ..unlearning import EXACT_METHODS, unlearn_exactly
from ..unlearning.combiners import build_combiner
from ..unlearning.exact import TIMINGS, ExactUnlearningResult, without_users
from ..unlearning.partition import ORDERS
from . import process_cache
from .config import option
from .cure4rec import (Collected, LearnConfig, TrainingSettings, UnlearningGrid, _require_device, build_model,
                       evaluate_remaining, pending_frame, remaining_after, train_original_model, users_to_unlearn)
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
    timing: str = option("batched", choices=TIMINGS,
                         doc="batched: the affected shards trained together; sequential: in turn inside the "
                             "K-shard model; alone: each a model of its own (the slowest is the parallel time)")


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


def unlearning_set(config: UnlearnConfig):
    """``(split, deleted users)`` of a run: its data split and its seeded unlearning set."""
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    return split, users_to_unlearn(config, split)


def exact_unlearning(config: TrainingSettings, split, deleted: np.ndarray, method: str, n_shards: int = 1,
                     order: str = "nearest_first", timing: str = "batched",
                     **control) -> tuple[ExactUnlearningResult, float]:
    """Stages I and III of the exact ``method`` (see :mod:`..unlearning.exact`) with ``config``'s
    backbone on ``split``: the one definition every page uses, so ``method="retrain"`` is *the*
    Retrain model (one shard, ``n_shards`` ignored; parameters from ``config.seed`` re-initialised
    from ``config.seed + 1_000_003``, batches from ``config.seed``; early stopping on the
    validation items of the remaining users only). ``control``: passed to
    :func:`~recunlearn.unlearning.exact.unlearn_exactly` (``learned``, ``dropped_rows``,
    ``affected_shards``). Returns the result and the partition's seconds."""
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
        split.train_matrix, split.matrix("valid"), config.seed, train_kwargs, config.device, timing, **control)
    return result, partition_seconds


_LEARNED: dict[tuple, tuple[ExactUnlearningResult, float]] = {}
"""Learned models of this process (the 8 most recent), by :func:`learned_model_key`."""


def learned_model_key(config: UnlearnConfig) -> tuple:
    """What the learned model of ``config``'s method depends on: the backbone's training settings, the
    method and its partition (not who is unlearned, nor how the run compares models). Runs with equal
    keys share one learned model within a process (the compute plan gives them to one worker)."""
    settings = tuple((name, getattr(config, name)) for name in TrainingSettings.parameter_names())
    n_shards = 1 if config.method == "retrain" else config.n_shards
    return settings + (("method", config.method), ("n_shards", n_shards), ("partition_order", config.partition_order))


def learned_model(config: UnlearnConfig, split) -> tuple[ExactUnlearningResult, float, bool]:
    """``(result, seconds, cached)``: ``config``'s method with nobody unlearned, i.e. every shard trained
    on all training data of ``split`` (stage I of :func:`exact_unlearning`; for Retrain the one full
    model); ``seconds``: the wall seconds it took to make. Made once per process and
    :func:`learned_model_key`; callers must not change it (``exact_unlearning(..., learned=...)``
    copies it)."""
    def make():
        start = time.perf_counter()
        seed_everything(config.seed)
        result, _ = exact_unlearning(config, split, np.array([], dtype=np.int64), config.method, config.n_shards,
                                     config.partition_order, config.timing)
        return result, time.perf_counter() - start

    (result, seconds), cached = process_cache.cached(_LEARNED, learned_model_key(config), 8, make)
    return result, seconds, cached


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
    split, deleted = unlearning_set(config)
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
    timing: str = option("batched", choices=TIMINGS,
                         doc="batched: the affected shards trained together; sequential: in turn inside the "
                             "K-shard model; alone: each a model of its own (the slowest is the parallel time)")
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


EXACT_KEYS = ["dataset", "model", "method", "selection", "ratio", "n_shards", "seed"]
EXACT_UTILITY = ["ndcg_untruncated", "hr_cure4rec", "ndcg", "hit_ratio", "recall"]
EXACT_FAIRNESS = ["a_igf", "a_igf_standard", "shard_gf", "shard_gf_standard"]
SHARD_COLUMNS = ["dataset", "model", "method", "selection", "seed", "shard", "active", "inactive"]


@dataclasses.dataclass
class ExactCollected(Collected):
    """:class:`~recunlearn.experiments.cure4rec.Collected` plus ``shards``: the remaining active and
    inactive users of every shard of every sharded run with a record (one row per run and shard)."""

    shards: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=SHARD_COLUMNS))


def collect(grid: ExactGrid, records_dir=None) -> ExactCollected:
    """Every run of ``grid``: its record, computed first when missing (unless ``grid.compute_missing`` is
    false), else listed as pending. ``runs``: one row per run with a record (config, metrics, timings,
    ``record`` key), with ``attrs["pending"]`` listing the pending runs' configs; ``shards``: active
    and inactive remaining users per shard of the runs other than Retrain."""
    rows, pending, shards = [], [], []
    for config in grid.runs():
        record = run_or_load(config, records_dir) if grid.compute_missing else load_record(config, records_dir)
        if record is None:
            pending.append(config)
            continue
        rows.append({"dataset": config.dataset, "model": config.model, "method": config.method,
                     "selection": config.selection, "ratio": config.ratio,
                     "n_shards": record["unlearning"]["n_shards"], "seed": config.seed, **record["metrics"],
                     **record["timings"], "record": record["key"]})
        if config.method != "retrain":
            for shard, (act, inact) in enumerate(zip(record["shards"]["shard_active"],
                                                     record["shards"]["shard_inactive"])):
                shards.append({"dataset": config.dataset, "model": config.model, "method": config.method,
                               "selection": config.selection, "seed": config.seed, "shard": shard, "active": act,
                               "inactive": inact})
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=EXACT_KEYS + EXACT_UTILITY + EXACT_FAIRNESS
                                                         + ["unlearn_seconds", "record"])
    frame.attrs["pending"] = [config.to_dict() for config in pending]
    return ExactCollected(frame, pending_frame(pending, grid.device, EXACT_KEYS),
                          pd.DataFrame(shards, columns=SHARD_COLUMNS))


def run_exact_grid(grid: ExactGrid, records_dir=None) -> pd.DataFrame:
    """The ``runs`` of :func:`collect` (runs without a record in ``frame.attrs["pending"]``)."""
    return collect(grid, records_dir).runs


def combiner_variant_grids(grid: ExactGrid) -> list[ExactGrid]:
    """The grids of the combiner variants of ``grid``: RecEraser and UltraRE on random users, the grid's
    first seed, WMF and BPR, served by routing and by their original combiners (one grid per combiner)."""
    base = grid.replace(methods=("receraser", "ultrare"), selections=("random",), seeds=grid.seeds[:1],
                        models=tuple(m for m in grid.models if m != "lightgcn") or ("wmf",))
    return [base.replace(combiner=c) for c in COMBINERS]


def collect_combiner_variants(grid: ExactGrid, records_dir=None) -> Collected:
    """The runs of :func:`combiner_variant_grids` (one row per run, with a ``combiner`` column) and
    those still without a record (with a ``combiner`` column too)."""
    parts = [(variant.combiner, collect(variant, records_dir)) for variant in combiner_variant_grids(grid)]
    runs = pd.concat([c.runs.assign(combiner=name) for name, c in parts], ignore_index=True)
    runs.attrs["pending"] = [config for _, c in parts for config in c.runs.attrs["pending"]]
    pending = pd.concat([c.pending.assign(combiner=name) for name, c in parts], ignore_index=True)
    return Collected(runs, pending)


def combiner_variants(grid: ExactGrid, records_dir=None) -> pd.DataFrame:
    """The ``runs`` of :func:`collect_combiner_variants`."""
    return collect_combiner_variants(grid, records_dir).runs
