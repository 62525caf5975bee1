"""The exact-unlearning pipeline shared by Retrain, SISA, RecEraser and UltraRE.

It follows the paper's four stages, whereas the CURE4Rec code trains every method directly on the
remaining data.

Users are partitioned into K shards once, at learning time (Retrain: one shard). All K shard
models are one blocked model (see :class:`~recunlearn.models.base.TrainingData`), so they train
together, each with its own batches, negatives and early stopping.

I.   Learn: train the shard models on all training data. Shards holding an unlearned user are
     retrained from scratch in stage III and their stage-I models are never used again, so only the
     *unaffected* shards are trained here (identical outcome, less compute).
II.  The unlearned users are given.
III. Unlearn (the only timed stage): drop the unlearned users' training rows, re-initialise the
     affected shards and retrain them on their remaining data; unaffected shards keep their stage-I
     parameters bit-for-bit. Model selection (early stopping) uses the validation matrices without
     the unlearned users' rows (:func:`without_users`): unlearning a user removes every use of
     their data, model selection included. Time (validation always excluded): ``batched`` = wall
     time of training the affected shards together; ``sequential`` = each affected shard trained in
     turn inside the K-shard model, giving a parallel time (max over shards) and the sum -- but every
     step of one shard still pays for all K shards' optimiser state and (WMF) item Gram matrices, a
     cost that grows with K; ``alone`` = each affected shard trained as a model of its own (one
     shard, its own data, validated on its own users), started from the same re-initialised
     parameters and copied back into its block: the time a worker per shard would take, max and sum.

Seeds (the one definition of every exact method, Retrain included): the blocked model is built
from ``torch.Generator().manual_seed(seed)``, affected shards are re-initialised from
``seed + 1_000_003``, and stages I and III each draw batches and negatives from a fresh generator
seeded ``seed`` (so stage III does not depend on how much stage I drew).
"""

from __future__ import annotations

import copy
import hashlib
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import scipy.sparse as sp
import torch

from ..models import Recommender, TrainingData, train_until_converged
from ..models.trainer import TrainingResult

TIMINGS = ("batched", "sequential", "alone")


@dataclass
class ExactUnlearningResult:
    """The unlearned blocked model, the shard of every user, and what stage III did.

    ``unaffected_unchanged``: the unaffected shards' parameters are bit-identical after stage III
    (None without unaffected shards); ``deleted_rows_at_init``: the unlearned users' rows in their
    own shard still hold their stage-III initialisation (the optimiser never touched them)."""

    model: Recommender
    user_shard: np.ndarray
    affected_shards: np.ndarray
    stage1: TrainingResult | None
    stage3: list[TrainingResult]
    timings: dict[str, float] = field(default_factory=dict)
    unaffected_unchanged: bool | None = None
    deleted_rows_at_init: bool | None = None


def without_users(matrix: sp.csr_matrix, users) -> sp.csr_matrix:
    """``matrix`` (users x items) with the rows of ``users`` emptied; shape, other rows and dtype unchanged."""
    matrix = sp.csr_matrix(matrix)
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    keep = ~np.isin(rows, np.asarray(users, dtype=np.int64))
    return sp.csr_matrix((matrix.data[keep], (rows[keep], matrix.indices[keep])), shape=matrix.shape,
                         dtype=matrix.dtype)


def shard_fingerprint(model: Recommender, shards) -> str:
    """SHA-256 over the parameter rows of ``shards`` (to check that they did not change)."""
    digest = hashlib.sha256()
    for shard in sorted(int(s) for s in shards):
        for parameter, rows in model.block_parameters(shard):
            digest.update(parameter.detach()[rows].cpu().numpy().tobytes())
    return digest.hexdigest()


def _blocked_data(train_users, train_items, user_shard, n_users, n_items, n_shards, device, keep=None):
    users, items = np.asarray(train_users), np.asarray(train_items)
    if keep is not None:
        users, items = users[keep], items[keep]
    return TrainingData.from_blocks(users, items, user_shard[users], n_users, n_items, n_shards, device)


def _train_shard_alone(model: Recommender, shard: int, build_model, seed: int, rows: np.ndarray, train_users,
                       train_items, user_shard: np.ndarray, n_users: int, n_items: int, device,
                       sampling: torch.Generator, selection: tuple, train_kwargs: dict) -> TrainingResult:
    """Stage III of one affected ``shard`` as a model of its own (``timing="alone"``): a one-shard model
    starts from the blocked ``model``'s re-initialised parameters of ``shard``, trains on the training
    ``rows`` (bool per row) of that shard, is validated on the shard's users only, and its result is
    copied back into ``model``'s block."""
    alone = build_model(1, torch.Generator().manual_seed(seed)).to(device)
    with torch.no_grad():
        for (blocked, part), (own, _) in zip(model.block_parameters(shard), alone.block_parameters(0)):
            own.copy_(blocked[part])
    users, items = np.asarray(train_users)[rows], np.asarray(train_items)[rows]
    data = TrainingData.from_blocks(users, items, np.zeros(len(users), dtype=np.int64), n_users, n_items, 1, device)
    others = (user_shard != shard).astype(np.int64)  # block 0: the shard's users, the only ones validated
    result = train_until_converged(alone, data, sampling, *selection, user_block=others, **train_kwargs)
    with torch.no_grad():
        for (blocked, part), (own, _) in zip(model.block_parameters(shard), alone.block_parameters(0)):
            blocked[part] = own
    return result


def unlearn_exactly(train_users: np.ndarray, train_items: np.ndarray, n_users: int, n_items: int,
                    user_shard: np.ndarray, deleted_users: np.ndarray,
                    build_model: Callable[[int, torch.Generator], Recommender],
                    validation_exclude: sp.csr_matrix, validation_relevant: sp.csr_matrix, seed: int,
                    train_kwargs: dict, device="cpu", timing: str = "batched",
                    learned: Recommender | None = None, dropped_rows: np.ndarray | None = None,
                    affected_shards: np.ndarray | None = None) -> ExactUnlearningResult:
    """Run stages I and III for the partition ``user_shard`` (shard of every user; see module doc).

    ``build_model(n_shards, generator)`` returns an untrained blocked model of ``n_shards`` blocks.
    ``learned``: a stage-I model of every shard on all training data (this function's result for no
    unlearned user); stage III then starts from a copy of it instead of training stage I, so the
    unaffected shards are exactly those of ``learned`` (used to compare a model before and after
    unlearning). The affected shards' stage III does not depend on it.
    Controls (bystander experiments): ``dropped_rows`` (bool per training row) drops these rows too,
    and their users' shards are affected; ``affected_shards`` replaces the affected shards: exactly
    these are re-initialised and retrained (e.g. the shards of an unlearning set with no row dropped;
    or one shard of a ``learned`` model that has already unlearned ``deleted_users``, whose other
    shards then hold none of their rows).
    """
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {TIMINGS}, got {timing!r}")
    user_shard = np.asarray(user_shard, dtype=np.int64)
    n_shards = int(user_shard.max()) + 1
    deleted = np.zeros(n_users, dtype=bool)
    deleted[np.asarray(deleted_users, dtype=np.int64)] = True
    train_users = np.asarray(train_users)
    drop = deleted[train_users] if dropped_rows is None else deleted[train_users] | np.asarray(dropped_rows, bool)
    holding = np.union1d(np.unique(user_shard[train_users[drop]]), np.unique(user_shard[deleted]))
    if affected_shards is None:
        affected = holding
    else:
        affected = np.unique(np.asarray(affected_shards, dtype=np.int64))
        kept = np.setdiff1d(holding, affected)
        if learned is None and len(kept):  # stage I would train those shards on the rows to forget
            raise ValueError(f"affected_shards leaves out shard(s) {kept.tolist()} that hold deleted or dropped rows; "
                             "without a learned model that has already unlearned them they must be retrained")
    unaffected = np.setdiff1d(np.arange(n_shards), affected)
    model = build_model(n_shards, torch.Generator().manual_seed(seed)).to(device)
    sampling = torch.Generator(device=device).manual_seed(seed)
    common = dict(user_block=user_shard, **train_kwargs)

    stage1 = None
    if learned is not None:
        model = copy.deepcopy(learned)
    elif len(unaffected):
        data_all = _blocked_data(train_users, train_items, user_shard, n_users, n_items, n_shards, device)
        stage1 = train_until_converged(model, data_all, sampling, validation_exclude, validation_relevant,
                                       blocks=unaffected, **common)
    before = shard_fingerprint(model, unaffected)

    # Stage III: the unlearned users' training and validation rows go; affected shards restart
    # from fresh parameters.
    keep = ~drop
    deleted_ids = np.flatnonzero(deleted)
    selection = (without_users(validation_exclude, deleted_ids), without_users(validation_relevant, deleted_ids))
    sampling = torch.Generator(device=device).manual_seed(seed)  # fresh: independent of stage I's draws
    model.reinitialize_blocks(affected, torch.Generator().manual_seed(seed + 1_000_003))
    own_rows = torch.as_tensor(user_shard[deleted_ids] * n_users + deleted_ids, device=model.user_embedding.device)
    initial_rows = model.user_embedding.detach()[own_rows].clone()
    stage3: list[TrainingResult] = []
    if not len(affected):  # nothing to unlearn: the learned model as it is
        timings = {"unlearn_seconds": 0.0, "unlearn_wall_seconds": 0.0}
    elif timing == "batched":
        data_rest = _blocked_data(train_users, train_items, user_shard, n_users, n_items, n_shards, device, keep)
        start = time.perf_counter()
        stage3.append(train_until_converged(model, data_rest, sampling, *selection, blocks=affected, **common))
        wall = time.perf_counter() - start
        timings = {"unlearn_seconds": stage3[0].train_seconds, "unlearn_wall_seconds": wall}
    else:
        train_shard = user_shard[np.asarray(train_users)]
        for shard in affected:
            mine = keep & (train_shard == shard)
            if timing == "sequential":
                data_shard = _blocked_data(train_users, train_items, user_shard, n_users, n_items, n_shards, device,
                                           mine)
                stage3.append(train_until_converged(model, data_shard, sampling, *selection, blocks=[shard],
                                                    **common))
            else:
                stage3.append(_train_shard_alone(model, shard, build_model, seed, mine, train_users, train_items,
                                                 user_shard, n_users, n_items, device, sampling, selection,
                                                 train_kwargs))
        per_shard = [r.train_seconds for r in stage3]
        timings = {"unlearn_seconds": max(per_shard), "unlearn_sum_seconds": float(sum(per_shard))}
        # The graph-based models must see every shard's remaining graph when serving users.
        model.prepare(_blocked_data(train_users, train_items, user_shard, n_users, n_items, n_shards, device, keep))
    unchanged = shard_fingerprint(model, unaffected) == before if len(unaffected) else None
    at_init = bool(torch.equal(model.user_embedding.detach()[own_rows], initial_rows))
    return ExactUnlearningResult(model, user_shard, affected, stage1, stage3, timings, unchanged, at_init)
