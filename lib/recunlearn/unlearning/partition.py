"""Partitions of users into K shards for exact unlearning (SISA, RecEraser, UltraRE).

Each function returns ``labels``: the shard (0..K-1) of every row of its input, every user exactly once.

- :func:`random_partition` (SISA): a seeded shuffle cut into K groups whose sizes differ by at most one.
- :func:`balanced_kmeans` (RecEraser, user-based balanced partition): K random users as anchors;
  each iteration assigns (user, shard) pairs in order of increasing distance, skipping full shards
  (capacity ``ceil(n / K)``), then moves each anchor to the per-dimension mean of its users.
  ``order="farthest_first"`` reproduces the CURE4Rec code, which walks the pairs
  by *decreasing* distance (a bug: fewer users land in their nearest shard).
- :func:`ot_partition` (UltraRE): K random users as centroids; each iteration solves the exact
  optimal-transport problem between users (mass 1/n each) and shards (mass 1/K each) with squared
  distances as costs (POT ``ot.emd``), labels users by their largest transport mass, repairs any
  shard above ``ceil(n / K)`` and moves centroids to their users' mean; stops when centroids settle.
"""

from __future__ import annotations

import numpy as np

ORDERS = ("nearest_first", "farthest_first")


def random_partition(n: int, n_shards: int, seed: int) -> np.ndarray:
    """Shard of each of ``n`` items after a seeded shuffle; sizes differ by at most one."""
    labels = np.empty(n, dtype=np.int64)
    labels[np.random.default_rng(seed).permutation(n)] = np.arange(n) % n_shards
    return labels


def _squared_distances(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    return ((points[:, None, :] - centres[None, :, :]) ** 2).sum(-1)


def _capacity(n: int, n_shards: int) -> int:
    return -(-n // n_shards)


def _greedy_assign(distances: np.ndarray, capacity: int, order: str) -> np.ndarray:
    n, k = distances.shape
    flat = np.argsort(distances, axis=None, kind="stable")
    if order == "farthest_first":
        flat = flat[::-1]
    labels = np.full(n, -1, dtype=np.int64)
    sizes = np.zeros(k, dtype=np.int64)
    remaining = n
    for point, shard in zip(*np.unravel_index(flat, distances.shape)):
        if labels[point] < 0 and sizes[shard] < capacity:
            labels[point] = shard
            sizes[shard] += 1
            remaining -= 1
            if remaining == 0:
                break
    return labels


CENTROIDS = ("mean", "scalar")


def balanced_kmeans(points: np.ndarray, n_shards: int, seed: int, n_iterations: int = 30,
                    order: str = "nearest_first", capacity: int | None = None, centroid: str = "mean") -> np.ndarray:
    """RecEraser's user-based balanced partition of ``points`` (one row per user or session).

    ``capacity``: the most members a shard takes (default ``ceil(n / K)``; SRU's code allows
    ``n // K + 6``). ``centroid``: ``"mean"`` moves an anchor to the per-dimension mean of its
    members; ``"scalar"`` is the RecEraser/SRU code, whose mean without an axis turns each anchor
    into one number repeated in every dimension."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if centroid not in CENTROIDS:
        raise ValueError(f"centroid must be one of {CENTROIDS}, got {centroid!r}")
    points = np.asarray(points, dtype=np.float64)
    rng = np.random.default_rng(seed)
    anchors = points[rng.choice(len(points), n_shards, replace=False)]
    capacity = _capacity(len(points), n_shards) if capacity is None else capacity
    if capacity * n_shards < len(points):
        raise ValueError(f"capacity {capacity} x {n_shards} shards cannot hold {len(points)} points")
    labels = np.zeros(len(points), dtype=np.int64)
    for _ in range(n_iterations):
        labels = _greedy_assign(_squared_distances(points, anchors), capacity, order)
        means = [points[labels == s].mean(0) if (labels == s).any() else anchors[s] for s in range(n_shards)]
        anchors = np.stack(means if centroid == "mean" else [np.full(points.shape[1], m.mean()) for m in means])
    return labels


def _repair_capacity(labels: np.ndarray, plan: np.ndarray, capacity: int) -> np.ndarray:
    """Move users out of over-full shards (those with the least mass there first) to the shard with
    the most mass among those with room."""
    labels = labels.copy()
    sizes = np.bincount(labels, minlength=plan.shape[1])
    for shard in np.flatnonzero(sizes > capacity):
        members = np.flatnonzero(labels == shard)
        for user in members[np.argsort(plan[members, shard], kind="stable")][: sizes[shard] - capacity]:
            room = np.flatnonzero(sizes < capacity)
            target = room[np.argmax(plan[user, room])]
            labels[user], sizes[shard], sizes[target] = target, sizes[shard] - 1, sizes[target] + 1
    return labels


def ot_partition(points: np.ndarray, n_shards: int, seed: int, max_iterations: int = 10) -> np.ndarray:
    """UltraRE's optimal-transport balanced clustering of ``points`` (exact EMD, uniform marginals)."""
    import ot

    points = np.asarray(points, dtype=np.float64)
    n = len(points)
    rng = np.random.default_rng(seed)
    centroids = points[rng.choice(n, n_shards, replace=False)]
    user_mass, shard_mass = np.full(n, 1.0 / n), np.full(n_shards, 1.0 / n_shards)
    capacity = _capacity(n, n_shards)
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(max_iterations):
        plan = ot.emd(user_mass, shard_mass, _squared_distances(points, centroids), numItermax=1_000_000)
        labels = _repair_capacity(plan.argmax(1), plan, capacity)
        updated = np.stack([points[labels == s].mean(0) for s in range(n_shards)])
        settled = np.allclose(updated, centroids)
        centroids = updated
        if settled:
            break
    return labels
