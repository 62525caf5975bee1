"""SRU's unlearning experiment: Retrain, SISA, RecEraser and SRU on session data, with accuracy,
unlearning effectiveness (HIT@K) and unlearning time (Xin et al., WSDM 2024).

One :class:`SruConfig` = one (dataset, model, method, deletion strategy, seed). The run
(:func:`run_sru`, :func:`unlearn_sessions`), and the choice behind each step:

1. **Data** (:func:`sru_data`): the chapter's sessions and 8:1:1 session split
   (:func:`~recunlearn.data.sessions.load_sessions`). ``max_sessions = N`` keeps only the first N
   sessions of the dataset (by id) **before** the split, a reduced scale for CPU runs; item ids and
   the catalogue (``n_items``, the output layer) are kept, so metrics rank the full catalogue.
2. **Unlearning set** (:func:`unlearning_requests`): ``int(request_fraction * n)`` of the ``n``
   training sessions drawn uniformly (seeded by ``seed``), one unlearning item each from the latter
   half of the session. Deviation from the authors' code, which draws 20 % *per shard*: the shards
   differ between methods, so per-shard draws would make every method unlearn different sessions;
   drawing with one shard for all sessions gives **one set per (dataset, split_seed, seed,
   max_sessions, request_fraction), shared by every method and deletion strategy**. Every record
   stores the set's hash (:func:`request_hash`).
3. **Full-data model** (:func:`full_data_model`): the base model trained on all training sessions
   (before any deletion), once per data (:func:`full_data_model_key`; cached in the process and,
   like CASPER's originals, kept between processes by :mod:`~recunlearn.experiments.stored_models`:
   the compute plan gives the runs sharing it to one worker). Its final
   hidden states partition the sessions (RecEraser, SRU), its input item embeddings drive CED, and
   queried with the post-deletion sequences it gives ``hit_before_retraining@K``: what plain deletion
   from the data leaves inferable *before* any model is retrained.
4. **Partition** (:func:`partition_sessions`): Retrain one shard; SISA a seeded random partition;
   RecEraser and SRU the balanced k-means of the full-data model's hidden states
   (:func:`~recunlearn.unlearning.sru.session_partition`; ``centroid="mean"`` the per-dimension
   mean, ``"scalar"`` the authors' code). All seeded by ``seed``. ``partition`` swaps a method's
   own partition for the other one (an ablation: SRU's aggregator on random shards, SISA's average
   on similarity shards); ``own`` keeps the method's (:data:`OWN_PARTITION`).
5. **Deletion** (:func:`~recunlearn.unlearning.sru.apply_requests`): ``truncation`` (``suffix``: the
   unlearning item and all after it; ``suffix-code``: also the item before it, as the code;
   ``item``: the item alone), then ``extra_deletion`` of ``n_extra`` more items (CED with the
   full-data model's item embeddings, NED, RED seeded by ``seed``). The same post-deletion training
   sessions serve every method.
6. **Learn and unlearn**: each shard's sub-model is trained (Adam 1e-3, batch 256, up to
   ``max_epochs``, validated every 5 epochs on all validation pairs, patience 20, best NDCG@10
   kept). ``retrain="affected"`` retrains, from a fresh seeded initialisation on its post-deletion
   sessions, only the shards holding an unlearning session; the other shards keep the sub-model
   learned on their (unchanged) sessions. ``retrain="all"`` retrains every shard (the authors'
   code). A learned sub-model that is retrained anyway is not trained (it would affect nothing: each
   shard and stage has its own generator). A sub-model depends only on what it is trained on and
   its generators, not on the method, so runs of one process with the same shard sessions (RecEraser
   and SRU on the similarity partition; in the ablations SISA's average or SRU's aggregator on either
   partition) train it once (:func:`trained_shard`; kept between processes as the full-data model, so
   a run stopped midway keeps the shards it finished; the record says which shards came from the
   cache, with the seconds their training took). SRU recomputes each shard's centroid (mean hidden state
   over the shard's prefixes, eval mode). The aggregator (SRU: attention with centroids; RecEraser:
   without; SISA: mean of softmax probabilities, nothing trained) is trained on **all**
   post-deletion training pairs for ``aggregator_epochs`` (Adam 1e-3, batch 256, validated every
   epoch, best NDCG@10 kept), over the frozen sub-models in eval mode (:class:`ShardEnsemble`),
   whose states of every training and validation window are computed once and reused by every
   epoch (their time counts in the aggregator's). Retrain: one model from a fresh initialisation on all post-deletion sessions.
7. **Evaluation**: Recall/NDCG@5/10/20 over every test pair (full catalogue); HIT@1/5/10/20 of the
   unlearned model on the unlearning sessions' remaining sequences (500 negatives, seeded by
   ``seed``, the same negatives for every method) and the same for the full-data model.
8. **Timings** (training seconds, validation excluded, as the authors' code): per retrained shard,
   centroids, aggregator. ``unlearn_seconds``: Retrain's retraining; for a sharded method the
   paper's efficiency setting, where a request touches one shard: the median-cost retrained shard
   (the lower median) + its centroid + the aggregator. ``unlearn_all_retrained_seconds``: every
   retrained shard + centroids + aggregator (what this run did). The timed shard lost 20 % of its
   sessions' tails, so it trains on slightly fewer pairs than a shard answering one request.
   Every time is also recorded in CPU seconds of the process (``time.process_time``, the
   ``*_cpu_seconds`` fields), which other processes on the machine inflate far less than wall time:
   ``unlearn_cpu_seconds`` (the same parts as ``unlearn_seconds``) and ``full_model_cpu_seconds``,
   the full-data model's training, measured in this run or, where it came from the cache
   (``full_model_cached``), in the earlier run that trained it. The efficiency claim compares these
   two within each run (:func:`recunlearn.report.sru.efficiency_claim`).

Fields a method ignores are set to their defaults (``n_shards`` to 1 for Retrain; ``centroid``
without the similarity partition; ``retrain``, ``aggregator_epochs``, ``partition`` where unused;
``n_extra`` to 0 with no extra deletion; a ``partition`` naming the method's own as ``own``), so
equal computations share one record.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import statistics
import time
from typing import ClassVar

import numpy as np
import pandas as pd
import torch

from ..data.errors import DatasetError
from ..data.sessions import SRU_DATASETS, SessionData, Sessions, load_sessions
from ..models.session import (SESSION_MODELS, evaluate_session_model, make_session_model, prefix_hidden_centroid,
                              session_hidden_states, train_session_model)
from ..seeding import seed_everything
from ..unlearning.partition import CENTROIDS, random_partition
from ..unlearning.sru import (EXTRA_DELETIONS, HIT_KS, TRUNCATIONS, AttentiveAggregator, ShardEnsemble,
                              UnlearningRequests, affected_shards, apply_requests, draw_requests, hit_at_k,
                              session_partition)
from . import process_cache, stored_models
from .config import Config, ConfigError, option, require_device
from .records import collect_records, register

METHODS = ("retrain", "sisa", "receraser", "sru")
RETRAINS = ("affected", "all")
PARTITIONS = ("own", "random", "similarity")
OWN_PARTITION = {"retrain": "one shard", "sisa": "random", "receraser": "similarity", "sru": "similarity"}
"""The partition each method uses when ``partition="own"``."""
DEVICES = ("cpu", "cuda")
AGGREGATOR_LR = 1e-3
AGGREGATOR_BATCH = 256
TEST_KS = (5, 10, 20)

AGGREGATED_METHODS = ("receraser", "sru")
"""Methods that train an attentive aggregator over their shards' sub-models."""
AGGREGATOR_RESULTS_VERSION = "3"
"""Results version of the aggregated methods' records (the class's for the others). 3: the aggregator
trains on its sub-models' states computed once per training window (frozen features), not per batch,
which changes the last bits of some batches' states."""

_IGNORED = {"retrain": ("retrain", "aggregator_epochs", "partition"), "sisa": ("aggregator_epochs",),
            "receraser": (), "sru": ()}
"""Fields each method does not use (set to their defaults); ``centroid`` too unless its partition is
the similarity one."""


@dataclasses.dataclass(frozen=True)
class SruConfig(Config):
    """One SRU-chapter unlearning run (see the module docstring)."""

    experiment = "sru-unlearning"
    results_version = "2"  # 2: fast session models (other float rounding, other dropout draws); CPU seconds recorded

    dataset: str = option("games", choices=SRU_DATASETS)
    model: str = option("gru4rec", choices=tuple(SESSION_MODELS))
    method: str = option("sru", choices=METHODS)
    n_shards: int = option(8, min=1, doc="K; Retrain has one shard")
    seed: int = option(0, min=0, doc="unlearning set, partition, initialisations, batches, negatives")
    split_seed: int = option(0, min=0, doc="the 8:1:1 session split")
    truncation: str = option("suffix", choices=TRUNCATIONS)
    extra_deletion: str = option("none", choices=EXTRA_DELETIONS)
    n_extra: int = option(0, min=0, doc="items deleted by the extra deletion (ignored for none)")
    centroid: str = option("mean", choices=CENTROIDS, doc="k-means anchors: mean, or scalar (the authors' code)")
    retrain: str = option("affected", choices=RETRAINS, doc="affected: shards holding an unlearning session; "
                                                            "all: every shard (the authors' code)")
    partition: str = option("own", choices=PARTITIONS, doc="own: the method's (SISA random; RecEraser, SRU "
                                                           "similarity); random or similarity: that one instead")
    max_epochs: int = option(100, min=1)
    aggregator_epochs: int = option(10, min=1)
    max_sessions: int | None = option(None, min=1, doc="None: all sessions; else the first N, before the split")
    request_fraction: float = option(0.2, min=0.0, max=1.0, doc="share of training sessions unlearned")
    device: str = option("cpu", choices=DEVICES)

    def validate(self) -> None:
        super().validate()
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        if self.partition == OWN_PARTITION[self.method]:
            object.__setattr__(self, "partition", "own")  # the method's own partition, named once
        for name in _IGNORED[self.method]:  # first, so that what they imply below is the default's
            object.__setattr__(self, name, defaults[name])
        if self.shard_partition != "similarity":
            object.__setattr__(self, "centroid", defaults["centroid"])
        if self.method == "retrain":
            object.__setattr__(self, "n_shards", 1)
        if self.extra_deletion == "none":
            object.__setattr__(self, "n_extra", 0)
        if not self.request_fraction > 0:
            raise ConfigError(f"parameter REQUEST_FRACTION = {self.request_fraction!r}: must be > 0 "
                              "(a share of the training sessions, in (0, 1])")
        if self.max_sessions is not None:
            n_train = int(round(0.8 * self.max_sessions))
            if n_train < 2 * self.n_shards or int(n_train * self.request_fraction) < 1:
                raise ConfigError(f"parameter MAX_SESSIONS = {self.max_sessions!r}: its {n_train} training sessions "
                                  f"must give every one of N_SHARDS = {self.n_shards} shards two sessions and "
                                  f"REQUEST_FRACTION = {self.request_fraction!r} at least one unlearning session")

    def value_results_version(self) -> str | None:
        return AGGREGATOR_RESULTS_VERSION if self.method in AGGREGATED_METHODS else None

    @property
    def shard_partition(self) -> str:
        """The partition this run uses: ``one shard`` (Retrain), ``random`` or ``similarity``."""
        return OWN_PARTITION[self.method] if self.partition == "own" else self.partition

    def dataset_files(self):
        return {self.dataset: ("raw",)}


# --- steps ----------------------------------------------------------------------------------------------

_FULL, _LEARN, _UNLEARN, _AGGREGATOR = 0, 1, 2, 3
"""Stages of a run, each with its own generators (:func:`stage_generator`)."""


def stage_generator(seed: int, stage: int, shard: int = 0, use: int = 0) -> torch.Generator:
    """A torch generator for (seed, stage, shard, use): ``use`` 0 initialises a model, 1 trains it."""
    state = np.random.SeedSequence([seed, stage, shard, use]).generate_state(1, np.uint64)[0]
    return torch.Generator().manual_seed(int(state >> np.uint64(1)))


def sru_data(dataset: str, split_seed: int = 0, max_sessions: int | None = None) -> SessionData:
    """The sessions of ``dataset`` split with ``split_seed``; with ``max_sessions``, only the first
    ``max_sessions`` sessions, taken before the split (catalogue and item ids kept)."""
    data = load_sessions(dataset, split_seed)
    if max_sessions is None or max_sessions >= len(data.sessions):
        return data
    kept = data.sessions.take(np.arange(max_sessions))
    return SessionData.from_sessions(
        dataset, kept, data.n_items, data.maxlen, split_seed, data.split, data.label,
        f"{data.description}; reduced scale: the first {max_sessions} of {len(data.sessions)} sessions, taken before "
        f"the split (which is of those), catalogue of {data.n_items} items kept")


def unlearning_requests(data: SessionData, seed: int, fraction: float = 0.2) -> UnlearningRequests:
    """The run's unlearning set: ``int(fraction * n)`` training sessions drawn uniformly (one shard
    for all; see the module docstring), one item each from the latter half. Method-independent."""
    return draw_requests(data.train, np.zeros(len(data.train), dtype=np.int64), seed, fraction)


def request_hash(data: SessionData, requests: UnlearningRequests) -> str:
    """Hash of an unlearning set: its sessions (dataset ids), positions and items."""
    digest = hashlib.sha256()
    for array in (data.train.ids[requests.session], requests.position, requests.item):
        digest.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    return digest.hexdigest()[:16]


def _digest(prefix: str, *parts: Sessions) -> str:
    digest = hashlib.sha256(prefix.encode())
    for part in parts:
        for array in (part.items, part.offsets, part.ids):
            digest.update(np.ascontiguousarray(array, dtype=np.int64).tobytes())
    return digest.hexdigest()[:16]


def data_fingerprint(data: SessionData) -> str:
    """Hash of what a model trained on ``data`` sees: training and validation sessions, catalogue, window."""
    return _digest(f"{data.n_items}/{data.maxlen}", data.train, data.valid)


def sessions_fingerprint(sessions: Sessions) -> str:
    """Hash of a collection of sessions: their items, boundaries and dataset ids."""
    return _digest("", sessions)


_FULL_MODELS: dict[tuple, tuple] = {}
"""Full-data models of this process (the 8 most recent) by (data fingerprint, model, seed, epochs, device)."""

_SHARD_MODELS: dict[tuple, tuple] = {}
"""Sub-models of this process (the 32 most recent) by what their training depends on (:func:`trained_shard`)."""

STORED_MODELS = 24
"""How many full-data models, and how many sub-models, are kept between processes (the most recently
used; :mod:`~recunlearn.experiments.stored_models`): a run's 8 shards twice over, a GRU4Rec on Games
about 12 MB each."""


def full_data_model_key(config: SruConfig) -> tuple:
    """What a run's full-data model depends on: runs with equal keys share it within a process (the
    compute plan gives them to one worker, one after another)."""
    return (config.dataset, config.split_seed, config.max_sessions, config.model, config.seed, config.max_epochs,
            config.device)


def full_data_model(data: SessionData, model: str, seed: int, max_epochs: int, device: str = "cpu"):
    """``(model, info, origin)``: the base model trained on all training sessions of ``data`` (once per
    key, :func:`_origin` says where); ``info`` holds its training summary, wall seconds and test metrics."""
    key = (data_fingerprint(data), model, seed, max_epochs, device)

    def train():
        start = time.perf_counter()
        net = make_session_model(model, data.n_items, data.maxlen, stage_generator(seed, _FULL)).to(device)
        fit = train_session_model(net, data, stage_generator(seed, _FULL, use=1), max_epochs=max_epochs,
                                  resume=stored_models.resume_point("sru-full-data", key, __name__))
        test = evaluate_session_model(net, data.pairs("test"), TEST_KS)
        info = {"train_seconds": fit["train_seconds"], "train_cpu_seconds": fit["train_cpu_seconds"],
                "wall_seconds": time.perf_counter() - start,
                "epochs_run": fit["epochs_run"], "best_epoch": fit["best_epoch"], "best_valid": fit["best_valid"],
                "test": test}
        return net, info

    ((net, info), stored), cached = process_cache.cached(
        _FULL_MODELS, key, 8,
        lambda: stored_models.load_or_train("sru-full-data", key, __name__, STORED_MODELS, train))
    return net, info, _origin(cached, stored)


def partition_sessions(partition: str, n_shards: int, seed: int, full_model, train: Sessions,
                       centroid: str = "mean") -> np.ndarray:
    """Shard of every training session by ``partition`` (:attr:`SruConfig.shard_partition`): ``one
    shard`` (Retrain), ``random`` (seeded; SISA's), ``similarity``: balanced k-means of the full-data
    model's final hidden states (RecEraser's and SRU's)."""
    if partition == "one shard":
        return np.zeros(len(train), dtype=np.int64)
    if partition == "random":
        return random_partition(len(train), n_shards, seed)
    if partition != "similarity":
        raise ValueError(f"partition = {partition!r}: allowed 'one shard', 'random', 'similarity'")
    states = session_hidden_states(full_model, train).numpy()
    return session_partition(states, n_shards, seed, centroid=centroid)


def shards_to_retrain(shard_of_session: np.ndarray, requests: UnlearningRequests, n_shards: int,
                      retrain: str = "affected") -> np.ndarray:
    """Shards retrained on their post-deletion sessions: those holding an unlearning session
    (``affected``) or every shard (``all``)."""
    if retrain not in RETRAINS:
        raise ValueError(f"retrain = {retrain!r}: allowed {', '.join(map(repr, RETRAINS))}")
    return np.arange(n_shards) if retrain == "all" else affected_shards(shard_of_session, requests)


def _train_shard(config: SruConfig, data: SessionData, sessions: Sessions, shard: int, stage: int,
                 key: tuple | None = None):
    """Train the sub-model of ``shard`` at ``stage``; ``key`` (:func:`trained_shard`'s) names its state between
    processes while it trains (:func:`stored_models.resume_point`)."""
    net = make_session_model(config.model, data.n_items, data.maxlen,
                             stage_generator(config.seed, stage, shard)).to(config.device)
    fit = train_session_model(net, data, stage_generator(config.seed, stage, shard, use=1), sessions=sessions,
                              max_epochs=config.max_epochs,
                              resume=stored_models.resume_point("sru-shards", key, __name__))
    return net, fit


def trained_shard(config: SruConfig, data: SessionData, sessions: Sessions, shard: int, stage: int,
                  data_key: str | None = None):
    """``(net, fit, origin)``: the sub-model of ``shard`` at ``stage`` trained on ``sessions``, once
    per key (:func:`_origin` says where): the data the trainer validates on (``data_key``, :func:`data_fingerprint`),
    the shard's sessions, model, seed, stage, shard, epochs and device -- all a sub-model depends on
    (the method only decides which sessions a shard holds). Sub-models are never changed after
    training (an ensemble freezes them), so a cached one serves every run as if trained there."""
    key = (data_key or data_fingerprint(data), sessions_fingerprint(sessions), config.model, config.seed, stage,
           shard, config.max_epochs, config.device)
    ((net, fit), stored), cached = process_cache.cached(
        _SHARD_MODELS, key, 32, lambda: stored_models.load_or_train(
            "sru-shards", key, __name__, STORED_MODELS,
            lambda: _train_shard(config, data, sessions, shard, stage, key)))
    return net, fit, _origin(cached, stored)


def _origin(cached: bool, stored: bool) -> str:
    """Where a model a run uses was trained: ``trained`` (here), ``process`` (by an earlier run of this
    process) or ``stored`` (by an earlier process, read from disk): its recorded seconds were measured there."""
    return "stored" if stored else "process" if cached else "trained"


# --- the run --------------------------------------------------------------------------------------------

@register(SruConfig)
def run_sru(config: SruConfig) -> dict:
    """Load the data and run :func:`unlearn_sessions`."""
    require_device(config.device)
    return unlearn_sessions(config, sru_data(config.dataset, config.split_seed, config.max_sessions))


def unlearn_sessions(config: SruConfig, data: SessionData, requests: UnlearningRequests | None = None) -> dict:
    """Steps 2-8 of the module docstring on ``data``; ``requests`` replaces the drawn unlearning set
    (tests). Returns the record's payload."""
    seed_everything(config.seed)
    requests = unlearning_requests(data, config.seed, config.request_fraction) if requests is None else requests
    full, full_info, full_origin = full_data_model(data, config.model, config.seed, config.max_epochs, config.device)

    start = time.perf_counter()
    shard_of_session = partition_sessions(config.shard_partition, config.n_shards, config.seed, full, data.train,
                                          config.centroid)
    partition_seconds = time.perf_counter() - start
    embeddings = full.item_embeddings().detach().cpu().numpy() if config.extra_deletion == "ced" else None
    post = apply_requests(data.train, requests, config.truncation, config.extra_deletion, config.n_extra,
                          embeddings, config.seed)

    n_shards = config.n_shards
    retrained = shards_to_retrain(shard_of_session, requests, n_shards, config.retrain)
    sub_models, shards, data_key = [], [], data_fingerprint(data)
    for shard in range(n_shards):
        members = np.flatnonzero(shard_of_session == shard)
        redo = shard in retrained
        sessions = (post if redo else data.train).take(members)
        net, fit, origin = trained_shard(config, data, sessions, shard, _UNLEARN if redo else _LEARN, data_key)
        entry = {"shard": shard, "retrained": bool(redo), "cached": origin != "trained", "stored": origin == "stored",
                 "sessions": int(len(members)),
                 "requests": int(np.isin(requests.session, members).sum()), "pairs": sessions.n_pairs(),
                 "train_seconds": fit["train_seconds"], "train_cpu_seconds": fit["train_cpu_seconds"],
                 "epochs_run": fit["epochs_run"], "best_epoch": fit["best_epoch"], "centroid_seconds": 0.0,
                 "centroid_cpu_seconds": 0.0}
        if config.method == "sru":
            start, cpu_start = time.perf_counter(), time.process_time()
            entry["centroid"] = prefix_hidden_centroid(net, sessions)
            entry["centroid_seconds"] = time.perf_counter() - start
            entry["centroid_cpu_seconds"] = time.process_time() - cpu_start
        sub_models.append(net)
        shards.append(entry)

    aggregator_fit = None
    if config.method == "retrain":
        served = sub_models[0]
    elif config.method == "sisa":
        served = ShardEnsemble(sub_models)
    else:
        centroids = torch.stack([s.pop("centroid") for s in shards]) if config.method == "sru" else None
        aggregator = AttentiveAggregator(n_shards, sub_models[0].hidden_size, data.n_items, centroids,
                                         stage_generator(config.seed, _AGGREGATOR))
        served = ShardEnsemble(sub_models, aggregator.to(config.device))
        aggregator_fit = train_session_model(
            served, data, stage_generator(config.seed, _AGGREGATOR, use=1), sessions=post, lr=AGGREGATOR_LR,
            batch_size=AGGREGATOR_BATCH, max_epochs=config.aggregator_epochs, validate_every=1,
            patience=config.aggregator_epochs)

    test = evaluate_session_model(served, data.pairs("test"), TEST_KS)
    queries = [post[s] for s in requests.session]
    hit_after = hit_at_k(served, queries, requests.item, data.n_items, data.maxlen, HIT_KS, seed=config.seed)
    hit_before = hit_at_k(full, queries, requests.item, data.n_items, data.maxlen, HIT_KS, seed=config.seed)

    redone = [s for s in shards if s["retrained"]]
    aggregator_seconds = aggregator_fit["train_seconds"] if aggregator_fit else 0.0
    aggregator_cpu_seconds = aggregator_fit["train_cpu_seconds"] if aggregator_fit else 0.0
    median = statistics.median_low([s["train_seconds"] for s in redone]) if redone else 0.0
    timed = next((s for s in redone if s["train_seconds"] == median), None)
    one_shard = (timed["train_seconds"] + timed["centroid_seconds"]) if timed else 0.0
    one_shard_cpu = (timed["train_cpu_seconds"] + timed["centroid_cpu_seconds"]) if timed else 0.0
    timings = {
        "unlearn_seconds": one_shard + aggregator_seconds,
        "unlearn_cpu_seconds": one_shard_cpu + aggregator_cpu_seconds,
        "unlearn_all_retrained_seconds": sum(s["train_seconds"] + s["centroid_seconds"] for s in redone)
                                         + aggregator_seconds,
        "unlearn_timed_shard": timed["shard"] if timed else None,
        "retrained_shard_seconds": [s["train_seconds"] for s in redone],
        "retrained_centroid_seconds": [s["centroid_seconds"] for s in redone],
        "aggregator_seconds": aggregator_seconds,
        "aggregator_cpu_seconds": aggregator_cpu_seconds,
        "full_retrain_seconds": shards[0]["train_seconds"] if config.method == "retrain" else None,
        "full_retrain_cpu_seconds": shards[0]["train_cpu_seconds"] if config.method == "retrain" else None,
        "learned_shard_seconds": [s["train_seconds"] for s in shards if not s["retrained"]],
        "partition_seconds": partition_seconds,
        "full_model_seconds": full_info["train_seconds"],
        "full_model_cpu_seconds": full_info["train_cpu_seconds"],
        "full_model_wall_seconds": full_info["wall_seconds"],
        "full_model_cached": full_origin != "trained",
        "full_model_stored": full_origin == "stored",
        "shards_cached": sum(s["cached"] for s in shards),
        "shards_stored": sum(s["stored"] for s in shards),
    }
    metrics = {**{k: v for k, v in test.items() if k != "n_pairs"}, **hit_after,
               **{key.replace("hit@", "hit_before_retraining@"): v for key, v in hit_before.items()}}
    return {
        "metrics": metrics,
        "full_model": {key: value for key, value in full_info.items() if key != "wall_seconds"},
        "timings": timings,
        "unlearning": {
            "request_hash": request_hash(data, requests), "n_requests": int(len(requests)),
            "partition": config.shard_partition,
            "n_train_sessions": int(len(data.train)), "n_shards": n_shards,
            "retrained_shards": [int(s) for s in retrained],
            "deleted_interactions": int(len(data.train.items) - len(post.items)),
            "train_pairs_before": data.train.n_pairs(), "train_pairs_after": post.n_pairs(),
            "test_pairs": int(test["n_pairs"]),
        },
        "shards": shards,
        "aggregator": None if aggregator_fit is None else {
            key: aggregator_fit[key] for key in ("epochs_run", "best_epoch", "best_valid", "n_train_pairs",
                                                 "frozen_features_seconds") if key in aggregator_fit},
        "data": data.description, "seed": config.seed, "device": config.device,
    }


# --- grids ----------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SruGrid(Config):
    """Notebook parameters of the SRU pages: lists expand into one :class:`SruConfig` each (runs that
    differ only in a field their method ignores are listed once)."""

    experiment = "sru-unlearning"
    PAPER_DATASETS: ClassVar[tuple[str, ...]] = SRU_DATASETS  # the paper's Beauty, Games, Steam (here: substitutes)

    datasets: tuple[str, ...] = option(("games",), choices=SRU_DATASETS)
    models: tuple[str, ...] = option(("gru4rec",), choices=tuple(SESSION_MODELS))
    methods: tuple[str, ...] = option(METHODS, choices=METHODS)
    truncations: tuple[str, ...] = option(("suffix",), choices=TRUNCATIONS)
    extra_deletions: tuple[str, ...] = option(("none",), choices=EXTRA_DELETIONS)
    n_extras: tuple[int, ...] = option((0,), min=0)
    centroids: tuple[str, ...] = option(("mean",), choices=CENTROIDS)
    retrains: tuple[str, ...] = option(("affected",), choices=RETRAINS)
    partitions: tuple[str, ...] = option(("own",), choices=PARTITIONS)
    seeds: tuple[int, ...] = option((0,), min=0)
    n_shards: int = option(8, min=1)
    split_seed: int = option(0, min=0)
    max_epochs: int = option(100, min=1)
    aggregator_epochs: int = option(10, min=1)
    max_sessions: int | None = option(None, min=1)
    request_fraction: float = option(0.2, min=0.0, max=1.0)
    device: str = option("cpu", choices=DEVICES)
    compute_missing: bool = option(True, doc="False: show only stored records, list the rest as pending")

    def validate(self) -> None:
        super().validate()
        self.runs()  # every combination must be a valid run

    def runs(self) -> list[SruConfig]:
        runs, seen = [], set()
        # dataset, model and seed outermost: the runs sharing a full-data model are consecutive
        for d, m, seed, method, trunc, extra, n, cen, ret, part in itertools.product(
                self.datasets, self.models, self.seeds, self.methods, self.truncations, self.extra_deletions,
                self.n_extras, self.centroids, self.retrains, self.partitions):
            config = SruConfig(dataset=d, model=m, method=method, n_shards=self.n_shards, seed=seed,
                               split_seed=self.split_seed, truncation=trunc, extra_deletion=extra, n_extra=n,
                               centroid=cen, retrain=ret, partition=part, max_epochs=self.max_epochs,
                               aggregator_epochs=self.aggregator_epochs, max_sessions=self.max_sessions,
                               request_fraction=self.request_fraction, device=self.device)
            key = tuple(sorted((k, str(v)) for k, v in config.to_dict().items()))
            if key not in seen:
                seen.add(key)
                runs.append(config)
        return runs


RUN_KEYS = ["dataset", "model", "method", "truncation", "extra_deletion", "n_extra", "centroid", "retrain",
            "partition", "seed"]


def collect_sru(grid: SruGrid, records_dir=None) -> pd.DataFrame:
    """One row per run of ``grid``: its keys, metrics, timings and unlearning set. With
    ``compute_missing=False`` runs without a record are listed, as configs, in
    ``frame.attrs["pending"]``."""
    def row(config, record):
        values = config.to_dict()
        timings = {k: v for k, v in record["timings"].items() if not isinstance(v, list)}
        return {**{k: values[k] for k in RUN_KEYS}, "n_shards": config.n_shards, **record["metrics"], **timings,
                "request_hash": record["unlearning"]["request_hash"],
                "train_pairs_before": record["unlearning"]["train_pairs_before"],
                "train_pairs_after": record["unlearning"]["train_pairs_after"],
                "n_retrained_shards": len(record["unlearning"]["retrained_shards"]), "record": record["key"]}

    return collect_records(grid.runs(), grid.compute_missing, row, records_dir, RUN_KEYS + ["n_shards", "record"])


__all__ = ["SruConfig", "SruGrid", "PARTITIONS", "OWN_PARTITION", "collect_sru", "run_sru", "unlearn_sessions", "sru_data", "unlearning_requests",
           "request_hash", "full_data_model", "full_data_model_key", "trained_shard", "partition_sessions", "shards_to_retrain", "stage_generator",
           "cached_shard_seconds", "cost_size", "METHODS", "RETRAINS", "SruStatisticsParams", "dataset_statistics"]


def cached_shard_seconds(record: dict) -> float:
    """Wall seconds of the sub-models a run took from its process's cache (their training, as
    recorded when they were trained), for the compute plan's cost model."""
    return sum(float(s.get("train_seconds") or 0.0) for s in record.get("shards") or () if s.get("cached"))


def epochs_reached(record: dict) -> float | None:
    """The epochs a record's trainings reached, for the compute plan's cost model: the mean
    ``epochs_run`` of the trainings it lists (``full_model`` and every entry of ``shards``; early
    stopping ends them before ``max_epochs``); None when the record names none."""
    trainings = [record.get("full_model"), *(record.get("shards") or ())]
    runs = [t["epochs_run"] for t in trainings if isinstance(t, dict) and isinstance(t.get("epochs_run"), (int, float))]
    return sum(runs) / len(runs) if runs else None


# --- dataset statistics ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SruStatisticsParams(Config):
    """Parameters of the SRU statistics page: the datasets as built (:func:`sru_data`), and the
    reduced scales the CPU runs use (the first ``max_sessions`` sessions of each of ``reduced_datasets``)."""

    experiment = "sru-statistics"
    PAPER_DATASETS: ClassVar[tuple[str, ...]] = SRU_DATASETS

    datasets: tuple[str, ...] = option(SRU_DATASETS, choices=SRU_DATASETS)
    split_seed: int = option(0, min=0, doc="the 8:1:1 session split")
    reduced_datasets: tuple[str, ...] = option(("games",), choices=SRU_DATASETS,
                                               doc="datasets also shown at the reduced scale")
    max_sessions: int | None = option(5000, min=1, doc="the reduced scale: the first N sessions; None: none shown")


def dataset_statistics(params: SruStatisticsParams) -> pd.DataFrame:
    """One row per dataset as built, and one per reduced scale (``scale`` names it): sessions, items,
    interactions, session lengths, the sessions and prefix -> next-item pairs of each part."""
    from ..data.sessions import data_statistics

    rows = []
    for name in params.datasets:
        rows.append({"scale": "all sessions", **data_statistics(sru_data(name, params.split_seed))})
        if params.max_sessions is not None and name in params.reduced_datasets:
            reduced = sru_data(name, params.split_seed, params.max_sessions)
            rows.append({"scale": f"first {params.max_sessions:,} sessions", **data_statistics(reduced)})
    return pd.DataFrame(rows)


@functools.lru_cache(maxsize=16)
def _work(dataset: str, split_seed: int, max_sessions: int | None) -> int | None:
    try:
        data = sru_data(dataset, split_seed, max_sessions)
    except DatasetError:
        return None
    return int(data.sessions.lengths.sum()) * (data.n_items + 1)


def cost_size(config: SruConfig) -> int | None:
    """A run's size for the compute plan's cost model: the interactions of the sessions it reads
    (all, or the first ``max_sessions``) times the catalogue plus one. Training and evaluating a
    full-softmax output layer cost about that per epoch, whatever the dataset; None when the dataset
    file is not on this machine."""
    return _work(config.dataset, config.split_seed, config.max_sessions)
