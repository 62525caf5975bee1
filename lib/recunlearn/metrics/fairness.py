"""User-group fairness (CURE4Rec §3.2): the active/inactive split of the users and A-IGF."""

from __future__ import annotations

import numpy as np


def active_user_mask(train_counts: np.ndarray, users: np.ndarray, fraction: float = 0.05) -> np.ndarray:
    """Boolean mask over ``users``: the top ``int(fraction * len(users))`` by training interactions
    are active. Ties are broken by user id (lower id first), so the split is stable."""
    users = np.asarray(users)
    n_active = int(fraction * len(users))
    order = np.lexsort((users, -np.asarray(train_counts, dtype=np.int64)[users]))
    mask = np.zeros(len(users), dtype=bool)
    mask[order[:n_active]] = True
    return mask


def a_igf(values: np.ndarray, is_active: np.ndarray) -> float:
    """A-IGF: mean of ``values`` (e.g. per-user NDCG@20) over active users minus the mean over
    inactive users. Signed; an unlearning method is fairer the closer it is to Retrain's value.
    NaN when either group is empty (fewer than 1 / fraction evaluated users)."""
    values, is_active = np.asarray(values, dtype=float), np.asarray(is_active, dtype=bool)
    if is_active.all() or not is_active.any():
        return float("nan")
    return float(values[is_active].mean() - values[~is_active].mean())
