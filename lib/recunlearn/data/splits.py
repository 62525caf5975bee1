"""Train / validation / test splits of an implicit interaction table.

Protocols:

- ``raw``: from the raw source, implicit conversion, 5-core filtering, then a seeded random
  80/10/10 split of the interactions (what the paper's text describes).
- ``released``: the authors' released ``train.csv``/``test.csv`` (what produced the paper's
  numbers), ids remapped to contiguous 0-based, with each user's released test items split 50/50
  (seeded) into validation and test; a user with a single held-out item keeps it in test.
  Variant ``validation="test"`` uses the released test set for validation too (the authors' code).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

from . import parsers, preprocess, registry

PROTOCOLS = ("released", "raw")
VALIDATION_RULES = ("split_test", "test")


@dataclass(frozen=True, eq=False)
class Split:
    """A split with contiguous ids: ``train``/``valid``/``test`` hold columns ``user``, ``item``."""

    n_users: int
    n_items: int
    train: pd.DataFrame
    valid: pd.DataFrame
    test: pd.DataFrame
    description: str

    def matrix(self, part: str) -> sp.csr_matrix:
        """Binary user x item CSR matrix of ``part`` (``train``, ``valid`` or ``test``)."""
        frame = getattr(self, part)
        data = np.ones(len(frame), dtype=np.float32)
        return sp.csr_matrix((data, (frame["user"].to_numpy(), frame["item"].to_numpy())),
                             shape=(self.n_users, self.n_items))

    @cached_property
    def train_matrix(self) -> sp.csr_matrix:
        return self.matrix("train")

    def user_train_counts(self) -> np.ndarray:
        """Number of training interactions of every user (length ``n_users``)."""
        return np.bincount(self.train["user"].to_numpy(), minlength=self.n_users)

    def restrict_train(self, keep_users: np.ndarray) -> "Split":
        """The same split with training rows of users outside ``keep_users`` removed (ids unchanged)."""
        mask = np.isin(self.train["user"].to_numpy(), keep_users)
        return Split(self.n_users, self.n_items, self.train[mask].reset_index(drop=True),
                     self.valid, self.test, self.description + " (restricted)")


def _pairs(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["user", "item"]].astype("int64").reset_index(drop=True)


def random_split(frame: pd.DataFrame, seed: int, fractions=(0.8, 0.1, 0.1)) -> tuple[pd.DataFrame, ...]:
    """Seeded random split of the rows of ``frame`` into parts of the given fractions."""
    if not np.isclose(sum(fractions), 1.0) or min(fractions) < 0:
        raise ValueError(f"fractions must be non-negative and sum to 1, got {fractions}")
    order = np.random.default_rng(seed).permutation(len(frame))
    bounds = np.round(np.cumsum(fractions)[:-1] * len(frame)).astype(int)
    return tuple(frame.iloc[np.sort(part)].reset_index(drop=True) for part in np.split(order, bounds))


def split_each_user_half(frame: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split every user's rows of ``frame`` into (first, second) with ``n // 2`` rows in the first,
    chosen uniformly at random with ``seed``; a user with one row keeps it in the second part."""
    rng = np.random.default_rng(seed)
    keys = rng.random(len(frame))
    users = frame["user"].to_numpy()
    order = np.lexsort((keys, users))
    sorted_users = users[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_users)) + 1]
    sizes = np.diff(np.r_[starts, len(frame)])
    rank = np.arange(len(frame)) - np.repeat(starts, sizes)
    to_first = np.zeros(len(frame), dtype=bool)
    to_first[order] = rank < np.repeat(sizes // 2, sizes)
    return frame[to_first].reset_index(drop=True), frame[~to_first].reset_index(drop=True)


def load_raw_table(dataset: str) -> pd.DataFrame:
    """The dataset's raw interaction table (source ids), parsed from its verified raw file."""
    entry = registry.get_dataset(dataset)
    return parsers.PARSERS[entry.raw_format](registry.locate(dataset, "raw"))


def load_released_tables(dataset: str) -> dict[str, pd.DataFrame]:
    """The authors' released ``ratings``, ``train`` and ``test`` tables (source ids)."""
    return {part: parsers.parse_cure4rec_csv(registry.locate(dataset, f"released_{part}"))
            for part in ("ratings", "train", "test")}


def preprocess_raw(dataset: str, min_user: int = 5, min_item: int = 5) -> pd.DataFrame:
    """Raw table -> implicit (every rating a positive) -> k-core -> contiguous ids."""
    table = preprocess.to_implicit(load_raw_table(dataset))
    return preprocess.contiguous_ids(preprocess.k_core(table, min_user, min_item))


def _released_ids(tables: dict[str, pd.DataFrame]) -> tuple[np.ndarray, np.ndarray]:
    """The source user and item ids of the released tables, sorted: contiguous id = position."""
    user_ids = np.unique(tables["ratings"]["user"].to_numpy())
    item_ids = np.unique(np.r_[tables["ratings"]["item"].to_numpy(), tables["train"]["item"].to_numpy(),
                               tables["test"]["item"].to_numpy()])
    return user_ids, item_ids


def _remapped(frame: pd.DataFrame, user_ids: np.ndarray, item_ids: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"user": np.searchsorted(user_ids, frame["user"].to_numpy()),
                         "item": np.searchsorted(item_ids, frame["item"].to_numpy())})


def released_train_timestamps(dataset: str, split: "Split") -> np.ndarray:
    """The timestamp of every training row of a ``released``-protocol ``split`` (in ``split.train``'s
    order), from the released ratings table (``tag``; the train and test tables carry none). Raises
    ``ValueError`` when a training pair has no rating."""
    tables = load_released_tables(dataset)
    ratings = _remapped(tables["ratings"], *_released_ids(tables)).assign(
        timestamp=tables["ratings"]["timestamp"].to_numpy())
    stamps = ratings.drop_duplicates(["user", "item"]).set_index(["user", "item"])["timestamp"]
    found = stamps.reindex(pd.MultiIndex.from_frame(split.train[["user", "item"]]))
    if found.isna().any():
        raise ValueError(f"{dataset}: {int(found.isna().sum())} training pairs have no rating timestamp")
    return found.to_numpy(dtype=np.int64)


def load_split(dataset: str, protocol: str = "released", seed: int = 0,
               validation: str = "split_test") -> Split:
    """Build the split of ``dataset`` under ``protocol`` (see the module docstring)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if validation not in VALIDATION_RULES:
        raise ValueError(f"validation must be one of {VALIDATION_RULES}, got {validation!r}")
    if protocol == "raw":
        table = preprocess_raw(dataset)
        train, valid, test = random_split(table, seed)
        return Split(int(table["user"].max()) + 1, int(table["item"].max()) + 1, _pairs(train), _pairs(valid),
                     _pairs(test), f"{dataset}: raw, implicit, 5-core, random 80/10/10 (seed {seed})")
    tables = load_released_tables(dataset)
    user_ids, item_ids = _released_ids(tables)
    remap = lambda frame: _remapped(frame, user_ids, item_ids)  # noqa: E731 - local one-liner
    train, held_out = remap(tables["train"]), remap(tables["test"])
    if validation == "test":
        valid, test = held_out, held_out
        how = "validation = released test (authors' code)"
    else:
        valid, test = split_each_user_half(held_out, seed)
        how = f"released test split 50/50 per user into validation/test (seed {seed})"
    return Split(len(user_ids), len(item_ids), _pairs(train), _pairs(valid), _pairs(test),
                 f"{dataset}: released CURE4Rec train/test, {how}")
