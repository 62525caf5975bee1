"""Full-ranking evaluation of a recommender for all users at once, batched over users."""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp
import torch

from .ranking import METRICS, top_k_hits


def _coo(matrix: sp.csr_matrix, users: np.ndarray, device) -> tuple[torch.Tensor, torch.Tensor]:
    rows = matrix[users].tocoo()
    return (torch.as_tensor(rows.row, dtype=torch.long, device=device),
            torch.as_tensor(rows.col, dtype=torch.long, device=device))


@torch.no_grad()
def evaluate_full_ranking(score_users: Callable[[torch.Tensor], torch.Tensor], exclude: sp.csr_matrix,
                          relevant: sp.csr_matrix, k: int = 20, metrics=tuple(METRICS),
                          users: np.ndarray | None = None, device="cpu",
                          batch_size: int | None = None) -> dict[str, np.ndarray]:
    """Per-user top-``k`` metrics over all items, excluding each user's ``exclude`` items.

    ``score_users(user_ids)`` returns a ``(len(user_ids), n_items)`` score tensor. ``users``
    defaults to every user with at least one ``relevant`` item. Returns ``{"user": ids,
    "n_relevant": ..., <metric>: per-user values}`` as numpy arrays.
    """
    unknown = set(metrics) - set(METRICS)
    if unknown:
        raise ValueError(f"unknown metrics {sorted(unknown)}; available: {sorted(METRICS)}")
    n_relevant_all = np.diff(relevant.indptr)
    if users is None:
        users = np.flatnonzero(n_relevant_all > 0)
    users = np.asarray(users, dtype=np.int64)
    if batch_size is None:  # keep each (batch x items) score block near 64 M entries
        batch_size = max(1, min(len(users), (1 << 26) // max(exclude.shape[1], 1)))
    out = {name: [] for name in metrics}
    for start in range(0, len(users), batch_size):
        batch = users[start:start + batch_size]
        scores = score_users(torch.as_tensor(batch, device=device))
        hits = top_k_hits(scores, *_coo(exclude, batch, device), *_coo(relevant, batch, device), k)
        n_rel = torch.as_tensor(n_relevant_all[batch], device=device)
        for name in metrics:
            out[name].append(METRICS[name](hits, n_rel).cpu().numpy())
    result = {name: np.concatenate(values) if values else np.zeros(0) for name, values in out.items()}
    result["user"], result["n_relevant"] = users, n_relevant_all[users]
    return result
