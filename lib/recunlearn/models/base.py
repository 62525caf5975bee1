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


class BlockLayout:
    """``n_users`` x ``n_items`` split into ``n_blocks`` equal blocks (shards): block ``b`` owns users
    ``b * block_users ... (b + 1) * block_users - 1`` and the items likewise."""

    @property
    def block_users(self) -> int:
        return self.n_users // self.n_blocks

    @property
    def block_items(self) -> int:
        return self.n_items // self.n_blocks


@dataclass
class TrainingData(BlockLayout):
    """Training interactions on a device, sorted by user, with fast positive lookup.

    **Blocks (shards).** ``n_blocks`` independent models can be trained as one: block ``b`` owns
    users ``b * block_users + u`` and items ``b * block_items + i`` (``u``, ``i`` the original ids),
    so an interaction of user ``u`` with item ``i`` in shard ``b`` is stored with those offsets.
    Negatives are drawn inside the user's block, batches hold up to ``batch_size`` rows of every
    block (each block sees the schedule it would see alone), and per-block losses are means over
    that block's rows. With ``n_blocks = 1`` (the default) this is an ordinary dataset.
    """

    n_users: int
    n_items: int
    users: torch.Tensor  # (n,) long, sorted by user then item
    items: torch.Tensor  # (n,) long
    indptr: torch.Tensor  # (n_users + 1,) long: rows of user u are indptr[u]:indptr[u+1]
    keys: torch.Tensor  # sorted user * n_items + item, for membership tests
    n_blocks: int = 1

    @classmethod
    def from_pairs(cls, users: np.ndarray, items: np.ndarray, n_users: int, n_items: int, device="cpu"):
        """An ordinary (one-block) dataset of ``n_users`` x ``n_items``."""
        users, items = np.asarray(users, dtype=np.int64), np.asarray(items, dtype=np.int64)
        order = np.lexsort((items, users))
        users, items = users[order], items[order]
        indptr = np.r_[0, np.cumsum(np.bincount(users, minlength=n_users))]
        as_tensor = lambda a: torch.as_tensor(a, dtype=torch.long, device=device)  # noqa: E731
        return cls(n_users, n_items, as_tensor(users), as_tensor(items), as_tensor(indptr),
                   as_tensor(users * n_items + items))

    @classmethod
    def from_blocks(cls, users: np.ndarray, items: np.ndarray, blocks: np.ndarray, n_users: int, n_items: int,
                    n_blocks: int, device="cpu"):
        """Pairs ``(users, items)`` (original ids) assigned to ``blocks``: one independent model per block."""
        blocks = np.asarray(blocks, dtype=np.int64)
        data = cls.from_pairs(blocks * n_users + np.asarray(users), blocks * n_items + np.asarray(items),
                              n_blocks * n_users, n_blocks * n_items, device)
        data.n_blocks = n_blocks
        return data

    @property
    def device(self) -> torch.device:
        return self.users.device

    def __len__(self) -> int:
        return len(self.users)

    def block_of_users(self, users: torch.Tensor) -> torch.Tensor:
        return torch.div(users, self.block_users, rounding_mode="floor")

    def member_users(self) -> torch.Tensor:
        """Users (global ids) with at least one training row."""
        return torch.nonzero(self.indptr[1:] > self.indptr[:-1]).flatten()

    def is_positive(self, users: torch.Tensor, items: torch.Tensor) -> torch.Tensor:
        """Whether each (user, item) pair is a training interaction."""
        query = users * self.n_items + items
        pos = torch.searchsorted(self.keys, query).clamp(max=len(self.keys) - 1)
        return self.keys[pos] == query

    def sample_negatives(self, users: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One item per entry of ``users``, uniform over the items of the user's block that the user
        has not interacted with in training (vectorised rejection sampling)."""
        offset = self.block_of_users(users) * self.block_items if self.n_blocks > 1 else 0
        items = torch.randint(self.block_items, users.shape, generator=generator, device=self.device) + offset
        bad = self.is_positive(users, items)
        while bad.any():
            redraw = torch.randint(self.block_items, (int(bad.sum()),), generator=generator, device=self.device)
            items[bad] = redraw + (offset[bad] if self.n_blocks > 1 else 0)
            bad = self.is_positive(users, items)
        return items

    def rows_of_users(self, users: torch.Tensor) -> torch.Tensor:
        """Indices of the training rows of ``users`` (concatenated in the given user order)."""
        starts, counts = self.indptr[users], self.indptr[users + 1] - self.indptr[users]
        offsets = torch.arange(int(counts.sum()), device=self.device) - torch.repeat_interleave(
            torch.cumsum(counts, 0) - counts, counts)
        return torch.repeat_interleave(starts, counts) + offsets

    def block_steps(self, elements: torch.Tensor, element_blocks: torch.Tensor, batch_size: int,
                    generator: torch.Generator, active_blocks: torch.Tensor | None = None):
        """One epoch over ``elements`` (rows or users), shuffled within each block: step ``t`` holds the
        ``t``-th slice of ``batch_size`` elements of every active block. Yields index tensors."""
        order = torch.randperm(len(elements), generator=generator, device=self.device)
        if self.n_blocks == 1:
            for start in range(0, len(order), batch_size):
                yield elements[order[start:start + batch_size]]
            return
        blocks = element_blocks[order]
        keep = torch.ones_like(blocks, dtype=torch.bool) if active_blocks is None else active_blocks[blocks]
        order, blocks = order[keep], blocks[keep]
        order = order[torch.sort(blocks, stable=True).indices]
        blocks = element_blocks[order]
        counts = torch.bincount(blocks, minlength=self.n_blocks)
        starts = torch.cumsum(counts, 0) - counts
        step = torch.div(torch.arange(len(order), device=self.device) - starts[blocks], batch_size,
                         rounding_mode="floor")
        by_step = torch.sort(step, stable=True)
        steps_count = torch.bincount(step).tolist() if len(step) else []
        for chunk in torch.split(order[by_step.indices], steps_count):
            yield elements[chunk]

    def positive_triples(self, batch_size: int, n_negatives: int, generator: torch.Generator,
                         active_blocks: torch.Tensor | None = None):
        """One epoch of (user, positive, negative) batches: the training rows shuffled, each row
        repeated with ``n_negatives`` fresh negatives; ``batch_size`` counts positive rows (per block)."""
        rows_all = torch.arange(len(self), device=self.device)
        row_blocks = self.block_of_users(self.users) if self.n_blocks > 1 else None
        for rows in self.block_steps(rows_all, row_blocks, batch_size, generator, active_blocks):
            rows = rows.repeat_interleave(n_negatives)
            users = self.users[rows]
            yield users, self.items[rows], self.sample_negatives(users, generator)


def block_mean(values: torch.Tensor, users: torch.Tensor, n_blocks: int, block_users: int) -> torch.Tensor:
    """Sum over blocks of the mean of ``values`` over the entries of that block's ``users``
    (``values.mean()`` for one block): each block's loss is what it would be trained alone."""
    if n_blocks == 1:
        return values.mean()
    blocks = torch.div(users, block_users, rounding_mode="floor")
    sums = torch.zeros(n_blocks, dtype=values.dtype, device=values.device).index_add_(0, blocks, values)
    counts = torch.bincount(blocks, minlength=n_blocks)
    return (sums[counts > 0] / counts[counts > 0]).sum()


class Recommender(nn.Module, BlockLayout):
    """Base class: free user and item embeddings initialised N(0, init_std^2) from ``generator``.

    For a dataset of ``n_blocks`` blocks, build the model with ``n_users * n_blocks`` users and
    ``n_items * n_blocks`` items: every block is then an independent model (see :class:`TrainingData`).
    """

    def __init__(self, n_users: int, n_items: int, dim: int, generator: torch.Generator, init_std: float = 0.1,
                 n_blocks: int = 1):
        super().__init__()
        if n_users % n_blocks or n_items % n_blocks:
            raise ValueError(f"n_users ({n_users}) and n_items ({n_items}) must be multiples of n_blocks ({n_blocks})")
        self.n_users, self.n_items, self.dim, self.n_blocks = n_users, n_items, dim, n_blocks
        self.init_std = init_std
        self.user_embedding = nn.Parameter(torch.randn(n_users, dim, generator=generator) * init_std)
        self.item_embedding = nn.Parameter(torch.randn(n_items, dim, generator=generator) * init_std)

    def block_parameters(self, block: int) -> list[tuple[torch.Tensor, slice]]:
        """(parameter, row slice) pairs holding block ``block``'s model."""
        return [(self.user_embedding, slice(block * self.block_users, (block + 1) * self.block_users)),
                (self.item_embedding, slice(block * self.block_items, (block + 1) * self.block_items))]

    @torch.no_grad()
    def reinitialize_blocks(self, blocks, generator: torch.Generator) -> None:
        """Fresh N(0, init_std^2) parameters for ``blocks`` (drawn on the CPU from ``generator``, in
        block order), as if those blocks' models had never been trained."""
        for block in sorted(int(b) for b in blocks):
            for parameter, rows in self.block_parameters(block):
                fresh = torch.randn(parameter[rows].shape, generator=generator) * self.init_std
                parameter[rows] = fresh.to(parameter.device)

    def embeddings(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.user_embedding, self.item_embedding

    def score_users(self, users: torch.Tensor) -> torch.Tensor:
        user_emb, item_emb = self.embeddings()
        return user_emb[users] @ item_emb.T

    def prepare(self, data: TrainingData) -> None:
        """Hook called by the trainer before training on ``data`` (LightGCN builds its graph)."""

    def mean_over_blocks(self, values: torch.Tensor, users: torch.Tensor) -> torch.Tensor:
        return block_mean(values, users, self.n_blocks, self.block_users)

    def batches(self, data: TrainingData, generator: torch.Generator, active_blocks=None):  # pragma: no cover
        raise NotImplementedError

    def batch_loss(self, batch) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError
