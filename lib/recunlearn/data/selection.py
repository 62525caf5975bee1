"""Choosing the users to unlearn: core, edge or random (CURE4Rec §3.3).

The ratio is a percentage of *users*: ``int(n_users * ratio / 100)`` users are chosen.

Scores (``scoring``):

- ``"degree"`` (default; the authors' code and released sets): a user's number of training
  interactions.
- ``"importance"`` (the paper's Eq. 1 on user nodes of the training graph):
  ``I(u) = deg(u) * mean_{i in N(u)} deg(i)``.

Rules: ``core`` = the highest scores, ``edge`` = the lowest, ties broken by user id (lower id
first) so the sets are stable; ``random`` = a seeded uniform sample of the sorted user ids.
"""

from __future__ import annotations

import numpy as np

RULES = ("core", "edge", "random")
SCORINGS = ("degree", "importance")


def user_scores(users: np.ndarray, items: np.ndarray, n_users: int, scoring: str = "degree") -> np.ndarray:
    """Score of every user (length ``n_users``) from the training pairs ``(users, items)``."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
    users, items = np.asarray(users), np.asarray(items)
    user_degree = np.bincount(users, minlength=n_users).astype(np.float64)
    if scoring == "degree":
        return user_degree
    item_degree = np.bincount(items).astype(np.float64)
    neighbour_degree_sum = np.bincount(users, weights=item_degree[items], minlength=n_users)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_neighbour = np.where(user_degree > 0, neighbour_degree_sum / user_degree, 0.0)
    return user_degree * mean_neighbour


def select_unlearning_users(users: np.ndarray, items: np.ndarray, n_users: int, rule: str, ratio: float,
                            scoring: str = "degree", seed: int = 0, candidates: np.ndarray | None = None) -> np.ndarray:
    """Sorted ids of the ``int(len(candidates) * ratio / 100)`` users to unlearn.

    ``candidates`` defaults to every user with at least one training interaction.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if not 0 <= ratio <= 100:
        raise ValueError(f"ratio is a percentage of users in [0, 100], got {ratio}")
    scores = user_scores(users, items, n_users, scoring)
    if candidates is None:
        candidates = np.flatnonzero(np.bincount(np.asarray(users), minlength=n_users) > 0)
    candidates = np.sort(np.asarray(candidates, dtype=np.int64))
    count = int(len(candidates) * ratio / 100)
    if rule == "random":
        chosen = np.random.default_rng(seed).choice(candidates, size=count, replace=False)
    else:
        sign = -1.0 if rule == "core" else 1.0
        chosen = candidates[np.lexsort((candidates, sign * scores[candidates]))[:count]]
    return np.sort(chosen)
