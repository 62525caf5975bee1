"""Sessions for the SRU chapter: one time-ordered item sequence per user, split by session.

The SRU authors' code (GitHub ``shirryliu/SRU-code``) reads ``<dataset>_{train,valid,test}.txt``
but ships neither those files nor the script that made them, so this module builds the data from
the public files and states every choice it makes.

Choices, in the order they are applied (:func:`load_sessions`):

1. **One session = one user's time-ordered sequence.** None of the three files marks session
   boundaries (Games and Beauty have no timestamps at all, only each user's time order), so the
   chapter treats a user's whole history as one session, as SASRec-format data is read by SRU's
   loader (one ``session_id item_id`` line per interaction).
2. **Implicit feedback, 5-core as published.**

   * ``games``: SASRec's ``Video.txt`` is used as published. Its publisher kept reviews whose user
     and item each had >= 5 reviews, counted **once** on the raw 2014 Video Games reviews (not
     iterated), so within the file counts can fall below 5 (30 users have a single interaction,
     1,672 users and 11,604 items fewer than 5). It is **not refiltered**: SRU's Beauty file is
     SASRec's Beauty.txt byte for byte, i.e. SRU used SASRec's files unchanged, and refiltering
     would move the data away from what SRU trained on.
   * ``beauty``: BERT4Rec's ``beauty.txt`` (the substitute for SASRec's Beauty.txt, which could not
     be obtained), used as published: in the file every user has >= 5 interactions and 37,501 items
     have fewer than 5 (BERT4Rec's exact filter is not documented in its repository). Not refiltered,
     for the same reason.
   * ``ml-1m`` (the labelled substitute for Steam, whose file could not be obtained): built from
     GroupLens ``ratings.dat`` with the SASRec recipe. Every rating is a positive; counts of users
     and items are taken **once** on all ratings and rows whose user or item has fewer than 5 are
     dropped (SASRec's single pass, :func:`sasrec_filter`); users and items are numbered from 1 by
     first appearance in file order; each user's rows are sorted by timestamp, ties kept in file
     order (a stable sort). On ML-1M the single pass is already the iterated 5-core (every user
     keeps >= 18 ratings, so no item count changes), which the tests check.
3. **Item ids** are those of the file (``games``, ``beauty``: 1..N, all used) or the first-appearance
   numbering (``ml-1m``); 0 is padding; ``n_items`` is the largest id.
4. **Session-level random split**, seeded: a permutation of the sessions is cut at the rounded
   cumulative fractions (8:1:1 by default: an inference from the random 8:1:1 session splits of the
   first author's earlier session-based work; SRU's own ratio is not known). Train, validation and test sessions are disjoint; each part lists its
   sessions in id order.
5. **Evaluation cases** are *every* prefix -> next-item pair of the held-out sessions, as SRU's
   ``prepare()`` does (:func:`prefix_pairs`); a session of length L gives L - 1 pairs, so sessions
   of length 1 (30 in Games) are kept but give none.
6. **Items absent from the training sessions are kept.** An evaluation pair whose target (or input
   item) never occurs in a training session stays in the evaluation and is ranked like every other
   item: SRU's code sizes the output layer by the largest id over all three files, so such items
   are in the catalogue but never trained as a positive, and in practice count as misses. Their
   number is reported (:func:`session_statistics`, ``*_pairs_unseen_target``).

Input windows are the last ``maxlen`` items (20 for Games and ML-1M, 10 for Beauty, as the SRU
evaluation card states for Games/Steam and Beauty),
left-padded with 0 (:data:`MAXLEN`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from . import parsers, preprocess, registry

SRU_DATASETS = ("games", "beauty", "ml-1m")
"""The chapter's datasets in the paper's order (Beauty, Games, Steam -> here Games, Beauty, ML-1M)."""

DATASET_LABELS = {
    "games": "Games (SASRec's Video.txt)",
    "beauty": "Beauty (BERT4Rec version)",
    "ml-1m": "ML-1M (SASRec recipe; substitute for Steam)",
}
"""Display names; the two substitutes always say so."""

MAXLEN = {"games": 20, "beauty": 10, "ml-1m": 20}
"""Input window per dataset (the SRU card: last 10 items for Beauty, last 20 for Games and Steam)."""

DEFAULT_SPLIT = (0.8, 0.1, 0.1)
PARTS = ("train", "valid", "test")


# --- sessions -----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Sessions:
    """Item-id sequences stored flat: session ``k`` is ``items[offsets[k]:offsets[k+1]]``.

    ``ids`` are the sessions' indices in the full dataset (0-based; for every dataset here,
    session ``k`` is the user numbered ``k + 1``), so a part of a split still names its sessions.
    """

    items: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray

    @classmethod
    def from_lists(cls, sequences, ids=None) -> "Sessions":
        """From a list of item-id sequences (ids from 1)."""
        lengths = np.array([len(s) for s in sequences], dtype=np.int64)
        items = (np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences]) if len(sequences)
                 else np.zeros(0, np.int64))
        offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        ids = np.arange(len(sequences), dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
        return cls(items, offsets, ids)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, k: int) -> np.ndarray:
        return self.items[self.offsets[k]:self.offsets[k + 1]]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def tolist(self) -> list[list[int]]:
        return [self[k].tolist() for k in range(len(self))]

    def take(self, positions) -> "Sessions":
        """The sessions at ``positions`` (indices into this collection), in that order."""
        positions = np.asarray(positions, dtype=np.int64)
        lengths = self.lengths[positions]
        offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        starts = np.repeat(self.offsets[positions], lengths)
        within = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        return Sessions(self.items[starts + within], offsets, self.ids[positions])

    def n_pairs(self) -> int:
        """Number of prefix -> next-item pairs: sum of ``max(L - 1, 0)``."""
        return int(np.maximum(self.lengths - 1, 0).sum())


def _flat(sessions) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(sessions, Sessions):
        return sessions.items, sessions.offsets
    flat = Sessions.from_lists(list(sessions))
    return flat.items, flat.offsets


def prefix_pairs(sessions, maxlen: int) -> tuple[np.ndarray, np.ndarray]:
    """Every prefix -> next-item pair of ``sessions`` (a :class:`Sessions` or a list of sequences).

    Returns ``(inputs, targets)``: ``inputs[p]`` holds the last ``maxlen`` items before target
    ``p``, left-padded with 0, shape ``(n_pairs, maxlen)``; pairs are listed session by session, in
    position order. A session ``[a, b, c, d]`` with ``maxlen=2`` gives ``[0, a] -> b``,
    ``[a, b] -> c``, ``[b, c] -> d``. Vectorised: one numpy step per window column.
    """
    if maxlen < 1:
        raise ValueError(f"maxlen must be >= 1, got {maxlen}")
    items, offsets = _flat(sessions)
    lengths = np.diff(offsets)
    start = np.repeat(offsets[:-1], lengths)  # session start of every flat position
    target_at = np.flatnonzero(np.arange(len(items)) > start)  # every position but a session's first
    first = start[target_at]
    inputs = np.zeros((len(target_at), maxlen), dtype=np.int64)
    for column in range(maxlen):
        source = target_at - maxlen + column
        ok = source >= first
        inputs[ok, column] = items[source[ok]]
    return inputs, items[target_at].copy()


# --- filtering and the ML-1M recipe -------------------------------------------------------------

def sasrec_filter(table: pd.DataFrame, min_user: int = 5, min_item: int = 5, iterate: bool = False) -> pd.DataFrame:
    """Rows whose user has >= ``min_user`` and whose item has >= ``min_item`` rows.

    ``iterate=False`` (SASRec's preprocessing): the counts are taken once, on ``table``, and the rows
    failing either are dropped; the result may again hold users or items under the threshold.
    ``iterate=True``: repeated until it holds (the k-core, :func:`recunlearn.data.preprocess.k_core`).
    Row order is kept.
    """
    if iterate:
        return preprocess.k_core(table, min_user, min_item)
    user_counts = table["user"].map(table["user"].value_counts())
    item_counts = table["item"].map(table["item"].value_counts())
    return table[(user_counts >= min_user) & (item_counts >= min_item)].reset_index(drop=True)


def sequences_from_table(table: pd.DataFrame) -> tuple[Sessions, int]:
    """SASRec's recipe on an interaction table in file order: users and items numbered from 1 by first
    appearance; each user's rows sorted by timestamp, ties (and a missing timestamp column) kept in
    file order. Returns the sessions (session ``k`` = user ``k + 1``) and the number of items."""
    user = pd.factorize(table["user"], sort=False)[0].astype(np.int64)
    item = pd.factorize(table["item"], sort=False)[0].astype(np.int64) + 1
    row = np.arange(len(table), dtype=np.int64)
    time = table["timestamp"]
    if time.isna().any():
        if not time.isna().all():
            raise ValueError("timestamps are missing for some rows only")
        order = np.lexsort((row, user))
    else:
        order = np.lexsort((row, time.to_numpy(np.int64), user))
    counts = np.bincount(user)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    return Sessions(item[order], offsets, np.arange(len(counts), dtype=np.int64)), int(item.max(initial=0))


def _file_sessions(dataset: str, path: Path) -> tuple[Sessions, int]:
    """A published SASRec-format file as is: session = the user's lines in file order."""
    table = parsers.parse_sasrec_lines(path)
    user, item = table["user"].to_numpy(), table["item"].to_numpy()
    if np.any(np.diff(user) < 0) or user.min(initial=1) < 1 or item.min(initial=1) < 1:
        raise ValueError(f"{path}: expected {dataset} lines grouped by ascending user, with ids from 1")
    ids, counts = np.unique(user, return_counts=True)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    return Sessions(item.copy(), offsets, ids - 1), int(item.max(initial=0))


def _all_sessions(dataset: str) -> tuple[Sessions, int]:
    """All sessions of ``dataset`` and its number of items. The file is located and verified on every
    call (its digest is cached per path and modification time), so a changed ``RECUNLEARN_DATA`` or a
    damaged copy is never hidden by the cache of built sessions."""
    if dataset not in SRU_DATASETS:
        raise KeyError(f"not an SRU dataset: {dataset!r}; known: {SRU_DATASETS}")
    path = registry.locate(dataset, "raw")
    stat = path.stat()
    return _built_sessions(dataset, str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4)
def _built_sessions(dataset: str, path: str, *file_identity) -> tuple[Sessions, int]:
    """Built once per verified file; the arrays are read-only because every caller shares them."""
    if dataset == "ml-1m":
        raw = parsers.PARSERS[registry.get_dataset(dataset).raw_format](Path(path))
        table = preprocess.to_implicit(raw)  # every rating a positive (ML-1M has no repeated user-item pair)
        sessions, n_items = sequences_from_table(sasrec_filter(table, 5, 5))
    else:
        sessions, n_items = _file_sessions(dataset, Path(path))
    for array in (sessions.items, sessions.offsets, sessions.ids):
        array.setflags(write=False)
    return sessions, n_items


# --- split --------------------------------------------------------------------------------------

def split_sessions(n_sessions: int, seed: int = 0, fractions=DEFAULT_SPLIT) -> tuple[np.ndarray, ...]:
    """Seeded random session-level split: indices of the train, validation and test sessions
    (disjoint, together all ``n_sessions``; each part sorted). Part sizes are the differences of
    ``round(cumulative fraction * n_sessions)``."""
    fractions = tuple(float(f) for f in fractions)
    if len(fractions) != 3 or min(fractions) < 0 or not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"split must be three non-negative fractions summing to 1, got {fractions}")
    order = np.random.default_rng(seed).permutation(n_sessions)
    bounds = np.round(np.cumsum(fractions)[:-1] * n_sessions).astype(int)
    return tuple(np.sort(part) for part in np.split(order, bounds))


@dataclass(frozen=True, eq=False)
class SessionData:
    """Sessions of a dataset and their session-level split.

    ``sessions`` holds all sessions (item ids from 1, 0 = padding); ``train``/``valid``/``test`` are
    disjoint subsets of it; ``n_items`` is the largest item id (the output layer has ``n_items + 1``
    rows, row 0 the padding).
    """

    dataset: str
    sessions: Sessions
    train: Sessions
    valid: Sessions
    test: Sessions
    n_items: int
    maxlen: int
    seed: int
    split: tuple[float, float, float]
    label: str = ""
    description: str = field(default="", repr=False)

    @classmethod
    def from_sessions(cls, dataset: str, sessions: Sessions, n_items: int, maxlen: int, seed: int = 0,
                      split=DEFAULT_SPLIT, label: str = "", description: str = "") -> "SessionData":
        parts = split_sessions(len(sessions), seed, split)
        return cls(dataset, sessions, *(sessions.take(p) for p in parts), n_items=int(n_items), maxlen=int(maxlen),
                   seed=int(seed), split=tuple(float(f) for f in split), label=label, description=description)

    def part(self, name: str) -> Sessions:
        if name not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {name!r}")
        return getattr(self, name)

    def pairs(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """All prefix -> next-item pairs of part ``name`` with this dataset's ``maxlen``."""
        return prefix_pairs(self.part(name), self.maxlen)

    def train_items(self) -> np.ndarray:
        """Boolean mask over item ids 0..n_items: the item occurs somewhere in a training session."""
        seen = np.zeros(self.n_items + 1, dtype=bool)
        seen[self.train.items] = True
        return seen

    def unseen_target_pairs(self, name: str) -> int:
        """Pairs of part ``name`` whose target never occurs in a training session (kept; see module doc)."""
        part = self.part(name)
        targets = part.items[np.flatnonzero(np.arange(len(part.items))
                                            > np.repeat(part.offsets[:-1], part.lengths))]
        return int((~self.train_items()[targets]).sum())


def load_sessions(dataset: str, seed: int = 0, split=DEFAULT_SPLIT) -> SessionData:
    """The chapter's sessions of ``dataset`` (``games``, ``beauty`` or ``ml-1m``) after the recipe
    of the module docstring, split at the session level with ``seed``."""
    if dataset not in SRU_DATASETS:
        raise KeyError(f"not an SRU dataset: {dataset!r}; known: {SRU_DATASETS}")
    sessions, n_items = _all_sessions(dataset)
    recipe = {"games": "SASRec's file as published (its single-pass >= 5 user / item filter on the raw reviews)",
              "beauty": "BERT4Rec's file as published (every user >= 5)",
              "ml-1m": "all ratings implicit, single-pass >= 5 user / item filter, ids by first appearance, "
                       "stable time sort per user"}[dataset]
    ratio = ":".join(f"{f:g}" for f in split)
    return SessionData.from_sessions(
        dataset, sessions, n_items, MAXLEN[dataset], seed, split, DATASET_LABELS[dataset],
        f"{DATASET_LABELS[dataset]}: one session per user; {recipe}; random session-level split {ratio} "
        f"(seed {seed}); every prefix -> next-item pair of held-out sessions evaluated; maxlen {MAXLEN[dataset]}")


def session_statistics(dataset: str, seed: int = 0, split=DEFAULT_SPLIT) -> dict:
    """One row of the chapter's statistics table for ``dataset`` as built by :func:`load_sessions`."""
    return data_statistics(load_sessions(dataset, seed, split))


def data_statistics(data: SessionData) -> dict:
    """The statistics of built session data: sessions, items (``items``: the catalogue, the largest
    id; ``items_occurring``: ids in some session), interactions, session lengths, and per part its
    sessions and prefix -> next-item pairs (the evaluated pairs of the validation and test parts),
    the held-out pairs whose target no training session holds, and the file's checksum."""
    dataset = data.dataset
    lengths = data.sessions.lengths
    row = {"dataset": dataset, "label": data.label, "sessions": len(data.sessions), "items": data.n_items,
           "items_occurring": int(len(np.unique(data.sessions.items))),
           "interactions": int(lengths.sum()), "mean_length": float(lengths.mean()),
           "median_length": float(np.median(lengths)), "sessions_length_1": int((lengths < 2).sum()),
           "maxlen": data.maxlen}
    for name in PARTS:
        part = data.part(name)
        row[f"{name}_sessions"] = len(part)
        row[f"{name}_pairs"] = part.n_pairs()
    for name in ("valid", "test"):
        row[f"{name}_pairs_unseen_target"] = data.unseen_target_pairs(name)
    row["items_not_in_train"] = int((~data.train_items()[1:]).sum())
    row["sha256"] = registry.get_file(dataset, "raw").sha256
    return row


def statistics_table(datasets=SRU_DATASETS, seed: int = 0, split=DEFAULT_SPLIT) -> pd.DataFrame:
    """:func:`session_statistics` of each dataset, one row each."""
    return pd.DataFrame([session_statistics(name, seed, split) for name in datasets])


__all__ = ["SRU_DATASETS", "DATASET_LABELS", "MAXLEN", "Sessions", "SessionData", "load_sessions", "prefix_pairs",
           "sasrec_filter", "sequences_from_table", "split_sessions", "session_statistics", "data_statistics",
           "statistics_table"]
