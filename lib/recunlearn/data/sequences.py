"""Chronological interaction streams for the CASPER chapter.

Recipe (``load_stream``):

1. read ``(user, item, timestamp)`` = the last three columns of the raw file, in file order
   (optionally only its first ``max_rows`` rows: a chronological prefix, used at smoke scale);
2. keep users with at least ``min_interactions`` (10) rows; ``filter_users=False`` mimics the
   released code, which computes the filter but never applies it;
3. per user, in file order, the last ``floor(test_fraction * n_u)`` rows are test;
4. sort all rows by timestamp with a **stable** sort on (timestamp, file row);
5. one **fixed** item-id map: sorted source ids -> 0..|I|-1 (users likewise), built once from the
   unperturbed data and reused for every perturbed run.

The authors' JODIE/LatentCross numbered items by first appearance in the (perturbed) stream; that
map is available as :func:`first_appearance_map`, so the renumbering artefact can be measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import registry
from .splits import load_raw_table

CASPER_DATASETS = ("wikipedia", "reddit", "foursquare", "lastfm")
DATASET_LABELS = {"wikipedia": "Wikipedia", "reddit": "Reddit", "foursquare": "Foursquare",
                  "lastfm": "LastFM-10%"}
"""Display names; LastFM is only the chronological first 10 % of JODIE lastfm and always labelled so."""


@dataclass(frozen=True, eq=False)
class Stream:
    """All rows (train and test) in chronological order, with contiguous ids.

    ``row`` is the row's index in the source file (``-1`` for a row inserted by a perturbation);
    it identifies test rows across an original and a perturbed stream.
    """

    user: np.ndarray
    item: np.ndarray
    timestamp: np.ndarray
    is_test: np.ndarray
    row: np.ndarray
    n_users: int
    n_items: int
    description: str = ""
    item_ids: np.ndarray = field(default=None, repr=False)  # source id of each item index
    user_ids: np.ndarray = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.user)

    @property
    def train_positions(self) -> np.ndarray:
        """Stream positions of the training rows (the "training stream"), in time order."""
        return np.flatnonzero(~self.is_test)

    @property
    def test_positions(self) -> np.ndarray:
        return np.flatnonzero(self.is_test)

    def take(self, positions: np.ndarray) -> "Stream":
        """The stream restricted to / reordered by ``positions``."""
        return replace(self, user=self.user[positions], item=self.item[positions],
                       timestamp=self.timestamp[positions], is_test=self.is_test[positions],
                       row=self.row[positions])

    def with_items(self, item: np.ndarray) -> "Stream":
        return replace(self, item=np.asarray(item, dtype=np.int64))

    def train_item_counts(self) -> np.ndarray:
        """Training interactions per item (length ``n_items``)."""
        return np.bincount(self.item[~self.is_test], minlength=self.n_items)


def split_last_fraction(user: np.ndarray, test_fraction: float = 0.1) -> np.ndarray:
    """``is_test`` mask: per user, in the given row order, the last ``floor(test_fraction * n_u)`` rows."""
    user = np.asarray(user)
    order = np.argsort(user, kind="stable")  # rows grouped by user, file order kept within a user
    _, starts, counts = np.unique(user[order], return_index=True, return_counts=True)
    rank = np.arange(len(user)) - np.repeat(starts, counts)  # position within the user's rows
    n_test = np.floor(test_fraction * counts + 1e-9).astype(np.int64)
    is_test = np.zeros(len(user), dtype=bool)
    is_test[order] = rank >= np.repeat(counts - n_test, counts)
    return is_test


def load_stream(dataset: str, min_interactions: int = 10, test_fraction: float = 0.1,
                max_rows: int | None = None, filter_users: bool = True) -> Stream:
    """The dataset's chronological stream after the recipe of the module docstring."""
    if dataset not in CASPER_DATASETS:
        raise KeyError(f"not a CASPER dataset: {dataset!r}; known: {CASPER_DATASETS}")
    table = load_raw_table(dataset)
    if max_rows is not None:
        table = table.iloc[:max_rows]
    user, item = table["user"].to_numpy(np.int64), table["item"].to_numpy(np.int64)
    ts, row = table["timestamp"].to_numpy(np.float64), np.arange(len(table), dtype=np.int64)
    if filter_users:
        ids, inverse, counts = np.unique(user, return_inverse=True, return_counts=True)
        keep = counts[inverse] >= min_interactions
        user, item, ts, row = user[keep], item[keep], ts[keep], row[keep]
    is_test = split_last_fraction(user, test_fraction)
    order = np.lexsort((row, ts))  # stable chronological order: timestamp, then file row
    user, item, ts, row, is_test = user[order], item[order], ts[order], row[order], is_test[order]
    user_ids, user_idx = np.unique(user, return_inverse=True)
    item_ids, item_idx = np.unique(item, return_inverse=True)
    what = f"first {max_rows} rows, " if max_rows is not None else ""
    filt = f"users >= {min_interactions}" if filter_users else "no user filter (released code)"
    return Stream(user=user_idx.astype(np.int64), item=item_idx.astype(np.int64), timestamp=ts, is_test=is_test,
                  row=row, n_users=len(user_ids), n_items=len(item_ids), item_ids=item_ids, user_ids=user_ids,
                  description=f"{DATASET_LABELS[dataset]} ({what}{filt}, last {test_fraction:.0%} per user test, "
                              "stable time sort, sorted item ids)")


def first_appearance_map(item: np.ndarray, n_items: int) -> np.ndarray:
    """The authors' JODIE/LatentCross item numbering: ``new_id[fixed_id]`` in order of first
    appearance in ``item`` (a full stream); items that do not occur follow in id order. A perturbation
    that moves an item's first appearance renumbers many items."""
    first = np.full(n_items, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, item, np.arange(len(item), dtype=np.int64))
    order = np.lexsort((np.arange(n_items), first))
    new_id = np.empty(n_items, dtype=np.int64)
    new_id[order] = np.arange(n_items)
    return new_id


def stream_statistics(dataset: str, **kwargs) -> dict:
    """Raw and filtered counts of ``dataset`` (CASPER Table 2): users, items, interactions, train/test rows."""
    raw = load_raw_table(dataset)
    if kwargs.get("max_rows") is not None:
        raw = raw.iloc[:kwargs["max_rows"]]
    stream = load_stream(dataset, **kwargs)
    return {"dataset": dataset, "label": DATASET_LABELS[dataset],
            "raw_interactions": len(raw), "raw_users": raw["user"].nunique(), "raw_items": raw["item"].nunique(),
            "users": stream.n_users, "items": stream.n_items, "interactions": len(stream),
            "train": int((~stream.is_test).sum()), "test": int(stream.is_test.sum()),
            "sha256": registry.get_file(dataset, "raw").sha256}
