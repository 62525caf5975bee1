"""The exact unlearning methods as partitions of users into shards.

Every method runs the same pipeline (:mod:`.exact`); they differ in how users are sharded and in
the original combiner of the shard models (:mod:`.combiners`):

=============  ====================================================  ======================
method         partition (computed once, on all users, at stage I)   original combiner
=============  ====================================================  ======================
``retrain``    one shard holding every user                          none (one model)
``sisa``       seeded random shards of equal size                    none: routing
``receraser``  balanced k-means on pre-trained WMF user embeddings   attention aggregator
``ultrare``    optimal-transport clustering of the same embeddings   linear combiner
=============  ====================================================  ======================

``combiner="route"`` serves every user with their own shard's model, as the CURE4Rec code does
(and as shardGF assumes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .partition import balanced_kmeans, ot_partition, random_partition


@dataclass(frozen=True)
class ExactMethod:
    """A sharding rule ``partition(n_users, n_shards, seed, embeddings) -> shard of each user``."""

    name: str
    partition: Callable[..., np.ndarray]
    needs_embeddings: bool
    original_combiner: str | None


def _one_shard(n_users, n_shards, seed, embeddings=None, **_):
    return np.zeros(n_users, dtype=np.int64)


def _sisa(n_users, n_shards, seed, embeddings=None, **_):
    return random_partition(n_users, n_shards, seed)


def _receraser(n_users, n_shards, seed, embeddings=None, order="nearest_first", **_):
    return balanced_kmeans(embeddings, n_shards, seed, order=order)


def _ultrare(n_users, n_shards, seed, embeddings=None, **_):
    return ot_partition(embeddings, n_shards, seed)


EXACT_METHODS = {
    "retrain": ExactMethod("retrain", _one_shard, False, None),
    "sisa": ExactMethod("sisa", _sisa, False, None),
    "receraser": ExactMethod("receraser", _receraser, True, "attention"),
    "ultrare": ExactMethod("ultrare", _ultrare, True, "linear"),
}
