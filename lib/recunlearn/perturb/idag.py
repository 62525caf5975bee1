"""CASPER's interaction-dependency DAG (IDAG) and exact cascade scores.

Nodes are training interactions in chronological order. An edge joins two consecutive interactions
of the same user, and two consecutive interactions of the same item, pointing forward in time;
every node has at most two predecessors and two successors. The cascade score of a node is the
number of its descendants, itself included. Variants (``L`` = the model's maximum sequence length,
``None`` for unbounded):

- ``paper``: nodes = each user's latest ``L`` training rows; user and item edges between
  consecutive nodes; **no edge between equal timestamps** (the paper's text).
- ``code-rel``: the released code (``main.py``): all training rows are nodes; user edges only among
  each user's latest ``L-1`` rows, item edges only among each item's latest ``L-1`` rows; equal
  timestamps ignored.
- ``code-2021``: the authors' LSTM/TiSASRec experiment code: all training rows are nodes; "valid" =
  each user's latest ``L`` rows plus the first training row (a quirk); edges between consecutive
  rows of the full user / item lists only when both ends are valid.

With ``L = None`` the variants differ only in the equal-timestamp rule.

Scores of all zero in-degree nodes (roots) are computed exactly by one chronological **bitset
sweep** (:func:`cascade_scores`): edges point forward in time, so row order is a topological order;
each root with successors owns one bit, ``bits[v] = bits[pred_user(v)] | bits[pred_item(v)]``, and a
root's score is the number of nodes carrying its bit. Cost O((N + E)·Z/64) word operations instead
of one BFS per root (:func:`cascade_scores_bfs`, the reference).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ..data.sequences import Stream

VARIANTS = ("paper", "code-rel", "code-2021")


@dataclass(frozen=True, eq=False)
class IDAG:
    """``nodes``: stream positions of the nodes (chronological); ``pred_user`` / ``pred_item``: index of
    the node's user / item predecessor in ``nodes`` (-1 for none)."""

    nodes: np.ndarray
    pred_user: np.ndarray
    pred_item: np.ndarray
    variant: str
    max_len: int | None

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def n_edges(self) -> int:
        return int((self.pred_user >= 0).sum() + (self.pred_item >= 0).sum())

    def roots(self) -> np.ndarray:
        """Indices (into ``nodes``) of the zero in-degree nodes."""
        return np.flatnonzero((self.pred_user < 0) & (self.pred_item < 0))

    def successors(self) -> list[list[int]]:
        succ: list[list[int]] = [[] for _ in range(len(self))]
        for pred in (self.pred_user, self.pred_item):
            for v in np.flatnonzero(pred >= 0):
                succ[pred[v]].append(int(v))
        return succ


def _rank_from_end(group: np.ndarray) -> np.ndarray:
    """For elements in chronological order: how many later elements share the element's group."""
    order = np.argsort(group, kind="stable")
    _, starts, counts = np.unique(group[order], return_index=True, return_counts=True)
    pos = np.arange(len(group)) - np.repeat(starts, counts)
    out = np.empty(len(group), dtype=np.int64)
    out[order] = np.repeat(counts, counts) - 1 - pos
    return out


def _previous_in_group(group: np.ndarray, member: np.ndarray) -> np.ndarray:
    """For each element (chronological order): index of the previous element with ``member`` true in
    the same group (-1 if none); computed for every element, members or not."""
    n = len(group)
    idx = np.flatnonzero(member)
    prev = np.full(n, -1, dtype=np.int64)
    order = idx[np.argsort(group[idx], kind="stable")]
    same = np.r_[False, group[order[1:]] == group[order[:-1]]]
    prev[order[1:][same[1:]]] = order[:-1][same[1:]]
    return prev


def build_idag(stream: Stream, max_len: int | None = 50, variant: str = "paper") -> IDAG:
    """The IDAG of ``stream``'s training rows (see the module docstring for the variants)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    train = stream.train_positions
    user, item, ts = stream.user[train], stream.item[train], stream.timestamp[train]
    everything = np.ones(len(train), dtype=bool)
    if variant == "paper":
        keep = everything if max_len is None else _rank_from_end(user) < max_len
        user, item, ts, nodes = user[keep], item[keep], ts[keep], train[keep]
        all_nodes = np.ones(len(nodes), dtype=bool)
        pu, pi = _previous_in_group(user, all_nodes), _previous_in_group(item, all_nodes)
        for pred in (pu, pi):
            has = pred >= 0
            pred[has & (ts[np.maximum(pred, 0)] == ts)] = -1  # no edge between equal timestamps
        return IDAG(nodes, pu, pi, variant, max_len)
    if variant == "code-rel":
        limit = None if max_len is None else max_len - 1
        in_user = everything if limit is None else _rank_from_end(user) < limit
        in_item = everything if limit is None else _rank_from_end(item) < limit
        pu = np.where(in_user, _previous_in_group(user, in_user), -1)
        pi = np.where(in_item, _previous_in_group(item, in_item), -1)
        return IDAG(train, pu, pi, variant, max_len)
    valid = everything.copy() if max_len is None else _rank_from_end(user) < max_len
    if len(valid):
        valid[0] = True  # the code's quirk: row 0 is always valid
    pu, pi = _previous_in_group(user, everything), _previous_in_group(item, everything)
    for pred in (pu, pi):
        pred[(pred >= 0) & ~(valid & valid[np.maximum(pred, 0)])] = -1
    return IDAG(train, pu, pi, variant, max_len)


def cascade_scores(graph: IDAG, chunk: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """Exact cascade scores of every root: ``(roots, scores)`` (indices into ``graph.nodes``), by the
    bitset sweep. Roots without successors score 1."""
    roots = graph.roots()
    n = len(graph)
    has_succ = np.zeros(n, dtype=bool)
    has_succ[graph.pred_user[graph.pred_user >= 0]] = True
    has_succ[graph.pred_item[graph.pred_item >= 0]] = True
    active = roots[has_succ[roots]]
    scores = np.ones(len(roots), dtype=np.int64)
    if len(active) == 0:
        return roots, scores
    bits = [0] * n  # Python ints as bitsets: one bit per active root
    for j, r in enumerate(active.tolist()):
        bits[r] = 1 << j
    pu, pi = graph.pred_user.tolist(), graph.pred_item.tolist()
    for v in range(n):
        a, b = pu[v], pi[v]
        if a >= 0:
            bits[v] = bits[a] | bits[b] if b >= 0 else bits[a]
        elif b >= 0:
            bits[v] = bits[b]
    n_bytes = (len(active) + 7) // 8
    counts = np.zeros(n_bytes * 8, dtype=np.int64)
    for start in range(0, n, chunk):
        block = b"".join(x.to_bytes(n_bytes, "little") for x in bits[start:start + chunk])
        matrix = np.frombuffer(block, dtype=np.uint8).reshape(-1, n_bytes)
        counts += np.unpackbits(matrix, axis=1, bitorder="little").sum(axis=0, dtype=np.int64)
    scores[has_succ[roots]] = counts[:len(active)]
    return roots, scores


def cascade_scores_bfs(graph: IDAG) -> tuple[np.ndarray, np.ndarray]:
    """Reference: one breadth-first search per root (the paper's Algorithm 1, lines 8-11)."""
    succ = graph.successors()
    roots = graph.roots()
    stamp = np.full(len(graph), -1, dtype=np.int64)  # shared visit stamps, no per-root reset
    scores = np.zeros(len(roots), dtype=np.int64)
    for j, r in enumerate(roots.tolist()):
        stamp[r] = j
        queue, seen = deque([r]), 1
        while queue:
            for w in succ[queue.popleft()]:
                if stamp[w] != j:
                    stamp[w] = j
                    seen += 1
                    queue.append(w)
        scores[j] = seen
    return roots, scores


def descendants(graph: IDAG, sources: np.ndarray) -> np.ndarray:
    """Bool mask over the nodes: reachable from a node of ``sources`` (a bool mask), the sources
    included -- the union of their cascades. One chronological sweep (edges point forward in time)."""
    reached = np.asarray(sources, dtype=bool).copy()
    pu, pi = graph.pred_user, graph.pred_item
    for v in np.flatnonzero(~reached).tolist():
        a, b = pu[v], pi[v]
        if (a >= 0 and reached[a]) or (b >= 0 and reached[b]):
            reached[v] = True
    return reached


def top_roots(roots: np.ndarray, scores: np.ndarray, k: int = 1) -> np.ndarray:
    """The ``k`` highest-scoring roots, ties broken by the earliest node."""
    order = np.lexsort((roots, -scores))
    return roots[order[:k]]
