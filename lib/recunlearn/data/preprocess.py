"""Preprocessing of interaction tables: implicit feedback, k-core filtering, contiguous ids, statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd


def to_implicit(frame: pd.DataFrame, min_rating: float | None = None) -> pd.DataFrame:
    """Implicit feedback: keep rows with ``rating >= min_rating`` (all rows when ``None``, as CURE4Rec
    does), drop repeated (user, item) pairs keeping the first, and set every rating to 1."""
    kept = frame if min_rating is None else frame[frame["rating"] >= min_rating]
    kept = kept.drop_duplicates(["user", "item"], keep="first").copy()
    kept["rating"] = np.float32(1.0)
    return kept.reset_index(drop=True)


def k_core(frame: pd.DataFrame, min_user: int = 5, min_item: int = 5) -> pd.DataFrame:
    """Iteratively drop users with fewer than ``min_user`` and items with fewer than ``min_item``
    interactions until both hold (the k-core of the bipartite graph). Row order is kept."""
    kept = frame
    while True:
        item_counts = kept["item"].map(kept["item"].value_counts())
        user_counts = kept["user"].map(kept["user"].value_counts())
        mask = (item_counts >= min_item) & (user_counts >= min_user)
        if mask.all():
            return kept.reset_index(drop=True)
        kept = kept[mask]


def contiguous_ids(frame: pd.DataFrame, item_order: str = "first_appearance") -> pd.DataFrame:
    """Renumber users and items to 0..n-1.

    Users are numbered in sorted order of their source ids (for MovieLens: ``uid = raw - 1``).
    Items are numbered by ``item_order``: ``"first_appearance"`` (order of first occurrence in the
    table's row order, the CURE4Rec authors' scheme) or ``"sorted"``.
    """
    if item_order not in ("first_appearance", "sorted"):
        raise ValueError(f"item_order must be 'first_appearance' or 'sorted', got {item_order!r}")
    out = frame.copy()
    out["user"] = np.unique(frame["user"].to_numpy(), return_inverse=True)[1].astype(np.int64)
    if item_order == "sorted":
        out["item"] = np.unique(frame["item"].to_numpy(), return_inverse=True)[1].astype(np.int64)
    else:
        out["item"] = pd.factorize(frame["item"], sort=False)[0].astype(np.int64)
    return out


def interaction_statistics(frame: pd.DataFrame) -> dict[str, float]:
    """Users, items, interactions and sparsity ``1 - |R| / (|U| |I|)`` of an interaction table."""
    n_users, n_items, n = frame["user"].nunique(), frame["item"].nunique(), len(frame)
    return {"users": n_users, "items": n_items, "interactions": n,
            "sparsity": 1.0 - n / (n_users * n_items)}
