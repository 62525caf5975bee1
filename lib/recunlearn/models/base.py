"""The contract every recommender follows, and the training data it samples from.

A model is a ``torch.nn.Module`` with

- ``embeddings() -> (user_emb, item_emb)``: the final representations used for scoring;
- ``score_users(users) -> (len(users), n_items)`` scores (dot products of final embeddings);
- ``batches(data, generator)``: one epoch of mini-batches drawn from :class:`TrainingData`;
- ``batch_loss(batch) -> scalar``.

The trainer (:mod:`recunlearn.models.trainer`) only uses these four.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class TrainingData:
    """Training interactions on a device, sorted by user, with fast positive lookup."""

    n_users: int
    n_items: int
    users: torch.Tensor  # (n,) long, sorted by user then item
    items: torch.Tensor  # (n,) long
    indptr: torch.Tensor  # (n_users + 1,) long: rows of user u are indptr[u]:indptr[u+1]
    keys: torch.Tensor  # sorted user * n_items + item, for membership tests

    @classmethod
    def from_pairs(cls, users: np.ndarray, items: np.ndarray, n_users: int, n_items: int, device="cpu"):
        users, items = np.asarray(users, dtype=np.int64), np.asarray(items, dtype=np.int64)
        order = np.lexsort((items, users))
        users, items = users[order], items[order]
        indptr = np.r_[0, np.cumsum(np.bincount(users, minlength=n_users))]
        as_tensor = lambda a: torch.as_tensor(a, dtype=torch.long, device=device)  # noqa: E731
        return cls(n_users, n_items, as_tensor(users), as_tensor(items), as_tensor(indptr),
                   as_tensor(users * n_items + items))

    @property
    def device(self) -> torch.device:
        return self.users.device

    def __len__(self) -> int:
        return len(self.users)

    def is_positive(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Whether each (user, item) pair is a training interaction."""
        query = users * self.n_items + items
        pos = torch.searchsorted(self.keys, query).clamp(max=len(self.keys) - 1)
        return self.keys[pos] == query

    def sample_negatives(self, users: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One item per entry of ``users``, uniform over the items that user has not interacted with
        in training (vectorised rejection sampling)."""
        items = torch.randint(self.n_items, users.shape, generator=generator, device=self.device)
        bad = self.is_positive(users, items)
        while bad.any():
            items[bad] = torch.randint(self.n_items, (int(bad.sum()),), generator=generator, device=self.device)
            bad = self.is_positive(users, items)
        return items

    def rows_of_users(self, users: torch.Tensor) -> torch.Tensor:
        """Indices of the training rows of ``users`` (concatenated in the given user order)."""
        starts, counts = self.indptr[users], self.indptr[users + 1] - self.indptr[users]
        offsets = torch.arange(int(counts.sum()), device=self.device) - torch.repeat_interleave(
            torch.cumsum(counts, 0) - counts, counts)
        return torch.repeat_interleave(starts, counts) + offsets

    def positive_triples(self, batch_size: int, n_negatives: int, generator: torch.Generator):
        """One epoch of (user, positive, negative) batches: the training rows shuffled, each row
        repeated with ``n_negatives`` fresh negatives; ``batch_size`` counts positive rows."""
        order = torch.randperm(len(self), generator=generator, device=self.device)
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size].repeat_interleave(n_negatives)
            users = self.users[rows]
            yield users, self.items[rows], self.sample_negatives(users, generator)


class Recommender(nn.Module):
    """Base class: free user and item embeddings initialised N(0, init_std^2) from ``generator``."""

    def __init__(self, n_users: int, n_items: int, dim: int, generator: torch.Generator, init_std: float = 0.1):
        super().__init__()
        self.n_users, self.n_items, self.dim = n_users, n_items, dim
        self.user_embedding = nn.Parameter(torch.randn(n_users, dim, generator=generator) * init_std)
        self.item_embedding = nn.Parameter(torch.randn(n_items, dim, generator=generator) * init_std)

    def embeddings(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.user_embedding, self.item_embedding

    def score_users(self, users: torch.Tensor) -> torch.Tensor:
        user_emb, item_emb = self.embeddings()
        return user_emb[users] @ item_emb.T

    def batches(self, data: TrainingData, generator: torch.Generator):  # pragma: no cover - abstract
        raise NotImplementedError

    def batch_loss(self, batch) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError
