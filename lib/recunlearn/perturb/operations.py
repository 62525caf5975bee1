"""Which training interaction to perturb (selectors) and how (LOO / replacement / insertion).

Every function takes a :class:`~recunlearn.data.sequences.Stream` and
returns *stream positions* of training rows; random choices come from the run's seeded
``numpy.random.Generator``, never from a global stream.

Selectors (``SELECTORS``):

- ``random``: a uniformly random training row;
- ``earliest``: a uniformly random user's **first** training row (the paper's Earliest-Random);
- ``latest``: a uniformly random user's **last** training row (Latest-Random);
- ``casper``: the root of the IDAG with the highest cascade score (ties: the earliest row);
  ``k > 1`` takes the top-k roots.

The model-based baselines pick their rows elsewhere and are perturbed by :func:`perturb_rows` like
these: TracIn needs the original model's checkpoints (:mod:`recunlearn.perturb.tracin`), Rev.Adv a
fake user learned against a surrogate (:mod:`recunlearn.perturb.revadv`).

Perturbations (``PERTURBATIONS``): ``loo`` deletes the row; ``replace`` sets its item to ``i_new``
(timestamp unchanged); ``insert`` adds ``(u, i_new, t - 1)`` as a training row immediately before it
(the authors' convention; the paper does not describe insertion). ``i_new`` (``REPLACEMENTS``):
``random`` (uniform over all items, may equal the original), ``popular`` (most training
interactions) or ``unpopular`` (fewest, among items with at least one training interaction);
ties go to the smallest item id. The authors counted over all rows, test included.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..data.sequences import Stream
from .idag import build_idag, cascade_scores, top_roots

SELECTORS = ("random", "earliest", "latest", "casper")
PERTURBATIONS = ("loo", "replace", "insert")
REPLACEMENTS = ("random", "popular", "unpopular")


def _draw_distinct(candidates: np.ndarray, k: int, rng: np.random.Generator, what: str) -> np.ndarray:
    """``k`` distinct ``candidates``, uniformly, sorted; a clear error when there are fewer than ``k``."""
    if k > len(candidates):
        raise ValueError(f"k = {k} perturbations asked for, but the stream has only {len(candidates)} {what}")
    return np.sort(candidates[rng.choice(len(candidates), size=k, replace=False)])


def select_random(stream: Stream, rng: np.random.Generator, k: int = 1) -> np.ndarray:
    """``k`` distinct uniformly random training rows."""
    return _draw_distinct(stream.train_positions, k, rng, "training rows")


def _user_end_rows(stream: Stream, last: bool) -> np.ndarray:
    """Per user (with training rows, by user id): the stream position of their first / last training row."""
    train = stream.train_positions
    users = stream.user[train]
    order = np.argsort(users, kind="stable")
    _, starts, counts = np.unique(users[order], return_index=True, return_counts=True)
    pick = starts + counts - 1 if last else starts
    return train[order[pick]]


def select_earliest_random(stream: Stream, rng: np.random.Generator, k: int = 1) -> np.ndarray:
    """The first training row of each of ``k`` distinct uniformly random users."""
    return _draw_distinct(_user_end_rows(stream, last=False), k, rng, "users with training rows")


def select_latest_random(stream: Stream, rng: np.random.Generator, k: int = 1) -> np.ndarray:
    """The last training row of each of ``k`` distinct uniformly random users."""
    return _draw_distinct(_user_end_rows(stream, last=True), k, rng, "users with training rows")


def select_casper(stream: Stream, k: int = 1, max_len: int | None = 50, variant: str = "paper") -> np.ndarray:
    """The top-``k`` IDAG roots by exact cascade score (ties: the earliest row)."""
    graph = build_idag(stream, max_len, variant)
    roots, scores = cascade_scores(graph)
    if k > len(roots):
        raise ValueError(f"k = {k} perturbations asked for, but the interaction graph has only {len(roots)} roots")
    return np.sort(graph.nodes[top_roots(roots, scores, k)])


def select_rows(stream: Stream, selector: str, rng: np.random.Generator, k: int = 1,
                max_len: int | None = 50, variant: str = "paper") -> np.ndarray:
    """Dispatch on ``selector`` (one of ``SELECTORS``)."""
    if selector == "random":
        return select_random(stream, rng, k)
    if selector == "earliest":
        return select_earliest_random(stream, rng, k)
    if selector == "latest":
        return select_latest_random(stream, rng, k)
    if selector == "casper":
        return select_casper(stream, k, max_len, variant)
    raise ValueError(f"selector must be one of {SELECTORS}, got {selector!r}")


def replacement_items(stream: Stream, strategy: str, rng: np.random.Generator, k: int = 1) -> np.ndarray:
    """``k`` new items by ``strategy`` (one of ``REPLACEMENTS``); popularity counts training rows."""
    if strategy == "random":
        return rng.integers(stream.n_items, size=k)
    counts = stream.train_item_counts()
    if strategy == "popular":
        return np.full(k, int(np.argmax(counts)))
    if strategy == "unpopular":
        masked = np.where(counts > 0, counts, np.iinfo(np.int64).max)
        return np.full(k, int(np.argmin(masked)))
    raise ValueError(f"replacement must be one of {REPLACEMENTS}, got {strategy!r}")


@dataclass(frozen=True)
class Perturbation:
    """What was changed: the chosen stream positions (in the original stream), their users, source
    rows and items, and the new items (for replace / insert)."""

    kind: str
    positions: tuple[int, ...]
    users: tuple[int, ...]
    rows: tuple[int, ...]
    old_items: tuple[int, ...]
    new_items: tuple[int, ...] = ()

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


def apply_perturbation(stream: Stream, positions: np.ndarray, kind: str,
                       new_items: np.ndarray | None = None) -> tuple[Stream, Perturbation]:
    """The perturbed stream and a description; ``positions`` must be training rows."""
    positions = np.asarray(positions, dtype=np.int64)
    if stream.is_test[positions].any():
        raise ValueError("only training rows can be perturbed")
    info = dict(positions=tuple(map(int, positions)), users=tuple(map(int, stream.user[positions])),
                rows=tuple(map(int, stream.row[positions])), old_items=tuple(map(int, stream.item[positions])))
    if kind == "loo":
        keep = np.ones(len(stream), dtype=bool)
        keep[positions] = False
        return stream.take(np.flatnonzero(keep)), Perturbation(kind, **info)
    if new_items is None or len(new_items) != len(positions):
        raise ValueError(f"{kind!r} needs one new item per position")
    new_items = np.asarray(new_items, dtype=np.int64)
    if kind == "replace":
        item = stream.item.copy()
        item[positions] = new_items
        return stream.with_items(item), Perturbation(kind, **info, new_items=tuple(map(int, new_items)))
    if kind == "insert":
        order = np.argsort(positions, kind="stable")
        chosen = positions[order]
        n = len(stream) + len(positions)
        new_pos = chosen + np.arange(len(chosen))  # each new row lands right before its chosen row
        # every old row moves down by the number of insertions at or before it
        old_pos = np.arange(len(stream)) + np.searchsorted(chosen, np.arange(len(stream)), side="right")
        user, item = np.empty(n, np.int64), np.empty(n, np.int64)
        ts, is_test, row = np.empty(n, np.float64), np.empty(n, bool), np.empty(n, np.int64)
        for dst, src in ((user, stream.user), (item, stream.item), (ts, stream.timestamp),
                         (is_test, stream.is_test), (row, stream.row)):
            dst[old_pos] = src
        user[new_pos], item[new_pos] = stream.user[chosen], new_items[order]
        ts[new_pos], is_test[new_pos], row[new_pos] = stream.timestamp[chosen] - 1, False, -1
        out = replace(stream, user=user, item=item, timestamp=ts, is_test=is_test, row=row)
        return out, Perturbation(kind, **info, new_items=tuple(map(int, new_items)))
    raise ValueError(f"perturbation must be one of {PERTURBATIONS}, got {kind!r}")


def perturb_rows(stream: Stream, positions: np.ndarray, kind: str, rng: np.random.Generator,
                 replacement: str = "random") -> tuple[Stream, Perturbation]:
    """Apply ``kind`` to the chosen ``positions`` (new items by ``replacement``, drawn from ``rng``): how
    every selector's rows are perturbed, including those chosen outside :func:`select_rows` (TracIn and
    Rev.Adv, :mod:`recunlearn.experiments.casper`)."""
    new_items = None if kind == "loo" else replacement_items(stream, replacement, rng, len(positions))
    return apply_perturbation(stream, positions, kind, new_items)


def perturb(stream: Stream, selector: str, kind: str, rng: np.random.Generator, k: int = 1,
            replacement: str = "random", max_len: int | None = 50,
            variant: str = "paper") -> tuple[Stream, Perturbation]:
    """Select ``k`` rows with ``selector`` and apply ``kind`` to them (new items by ``replacement``)."""
    return perturb_rows(stream, select_rows(stream, selector, rng, k, max_len, variant), kind, rng, replacement)
