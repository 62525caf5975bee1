"""CASPER's cascade scores on a CURE4Rec split: which training interactions a deletion reaches.

The interaction graph (:mod:`recunlearn.perturb.idag`, variant ``paper`` with no length limit: the
CURE4Rec backbones see a user's whole history) is built from the split's training rows ordered by
the released ratings' timestamps (ties by user, then item). An interaction's descendants are the
later interactions joined to it by a chain of consecutive interactions of one user or one item.

- **deletion cascade** of a set of training rows (e.g. every row of the users unlearned): the number
  of training interactions that descend from at least one deleted row, the deleted rows included
  (the union of their cascades, CASPER's cascade score of one interaction extended to a set);
  ``cascade_share``: that number over all training rows;
- **top cascade interaction** of a set of rows: the root (no predecessor) of the set's own graph
  with the highest cascade score (ties: the earliest), CASPER's choice of the interaction to perturb.
"""

from __future__ import annotations

import functools

import numpy as np

from ..data import load_split
from ..data.sequences import Stream
from ..data.splits import released_train_timestamps
from ..perturb.idag import IDAG, build_idag, cascade_scores, descendants, top_roots


TIMED_PROTOCOL = "released"
"""The only split protocol with interaction timestamps, hence the only one cascade scores exist for."""


@functools.lru_cache(maxsize=8)
def _timed_rows(dataset: str, protocol: str, split_seed: int, validation: str) -> tuple[np.ndarray, ...]:
    if protocol != TIMED_PROTOCOL:
        raise ValueError(f"cascade scores need the released split's timestamps; protocol {protocol!r} has none")
    split = load_split(dataset, protocol, split_seed, validation)
    users, items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    stamps = released_train_timestamps(dataset, split)
    order = np.lexsort((items, users, stamps))
    return users, items, stamps, order, split.n_users, split.n_items


def training_graph(config, rows: np.ndarray | None = None) -> tuple[IDAG, np.ndarray]:
    """``(graph, train_row)``: the IDAG of ``config``'s split's training rows (``rows``: a bool mask
    restricting them) and, for each node, its row in ``split.train``."""
    users, items, stamps, order, n_users, n_items = _timed_rows(config.dataset, config.protocol, config.split_seed,
                                                               config.validation)
    if rows is not None:
        order = order[np.asarray(rows, dtype=bool)[order]]
    stream = Stream(users[order], items[order], stamps[order], np.zeros(len(order), dtype=bool), order, n_users,
                    n_items, "training rows in time order")
    graph = build_idag(stream, max_len=None, variant="paper")
    return graph, order[graph.nodes]


def deletion_cascade(config, deleted_rows: np.ndarray) -> dict[str, float]:
    """The deletion cascade of ``deleted_rows`` (bool mask over ``split.train``): ``cascade_reach``
    (interactions reached, deleted ones included) and ``cascade_share`` (over all training rows)."""
    graph, train_row = training_graph(config)
    reached = descendants(graph, np.asarray(deleted_rows, dtype=bool)[train_row])
    return {"cascade_reach": int(reached.sum()), "cascade_share": float(reached.mean())}


def top_cascade_row(config, rows: np.ndarray) -> tuple[int, int]:
    """``(row of split.train, cascade score)`` of the top cascade interaction among ``rows`` (bool
    mask), scored on the graph of those rows alone."""
    graph, train_row = training_graph(config, rows)
    roots, scores = cascade_scores(graph)
    top = int(top_roots(roots, scores, 1)[0])
    return int(train_row[top]), int(scores[np.flatnonzero(roots == top)[0]])
