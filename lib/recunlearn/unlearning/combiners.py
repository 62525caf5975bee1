"""Original combiners of the exact methods' shard models. The CURE4Rec code has none: each user is
served by their own shard's model (``combiner="route"``).

Both are trained after the shard models, on all remaining training data, with the shard models
frozen and with the backbone's loss (whole-data WMF loss for WMF, BPR for BPR and LightGCN); they
then serve every user. Their training time counts as unlearning time.

- :class:`AttentionAggregator` (RecEraser): per shard k a linear map ``h^k = W_k e^k + b_k`` of the
  shard's user (item) embedding, attention ``a^k = softmax_k(w^T ReLU(A h^k + c))`` with separate
  (A, c, w) for users and items, and the aggregate ``sum_k a^k h^k``. Dropout 0.3 on user vectors
  while training. For LightGCN the shards' *propagated* embeddings are aggregated (the original
  aggregates ego embeddings and propagates again on the full graph; not reproduced here).
- :class:`LinearCombiner` (UltraRE; a reconstruction, not checked against UltraRE's paper or
  code): the user's own shard embedding scored against every shard's item table, combined with K
  learned weights: ``y_ui = sum_k w_k <p_u^{own(u)}, q_i^k>``, i.e. item vectors ``sum_k w_k q_i^k``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..models.base import TrainingData
from ..models.mf import bpr_loss, whole_data_loss

COMBINER_LOSSES = ("whole_data", "bpr")


class Combiner(nn.Module):
    """Base: frozen shard embeddings ``(K, n, d)`` for users and items, the model contract of
    :mod:`recunlearn.models.base` (one block) and the backbone loss."""

    n_blocks = 1

    def __init__(self, shard_users: torch.Tensor, shard_items: torch.Tensor, loss: str, c0: float = 0.2,
                 batch_size: int = 512, n_negatives: int = 4, l2: float = 1e-5):
        super().__init__()
        if loss not in COMBINER_LOSSES:
            raise ValueError(f"combiner loss must be one of {COMBINER_LOSSES}, got {loss!r}")
        self.register_buffer("shard_users", shard_users.detach(), persistent=False)
        self.register_buffer("shard_items", shard_items.detach(), persistent=False)
        self.n_shards, self.n_users, self.dim = shard_users.shape
        self.n_items = shard_items.shape[1]
        self.loss, self.c0, self.batch_size, self.n_negatives, self.l2 = loss, c0, batch_size, n_negatives, l2

    def users(self, idx: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def items(self, idx: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def regularization(self) -> torch.Tensor:
        return torch.zeros((), device=self.shard_users.device)

    def embeddings(self):
        device = self.shard_users.device
        return (self.users(torch.arange(self.n_users, device=device)),
                self.items(torch.arange(self.n_items, device=device)))

    def prepare(self, data: TrainingData) -> None:
        pass

    def batches(self, data: TrainingData, generator, active_blocks=None):
        if self.loss == "bpr":
            yield from data.positive_triples(self.batch_size, self.n_negatives, generator)
            return
        for users in data.block_steps(data.member_users(), None, self.batch_size, generator):
            rows = data.rows_of_users(users)
            yield users, data.users[rows], data.items[rows]

    def batch_loss(self, batch):
        if self.loss == "bpr":
            users, pos, neg = batch
            u = self.users(users)
            return bpr_loss(u, self.items(pos), self.items(neg), 0.0) + self.l2 * self.regularization()
        users, pos_users, pos_items = batch
        y = (self.users(pos_users) * self.items(pos_items)).sum(1)
        q_all = self.items(torch.arange(self.n_items, device=y.device))
        return whole_data_loss(self.users(users), y, q_all, self.c0) + self.l2 * self.regularization()


class AttentionAggregator(Combiner):
    """RecEraser's attention-based adaptive aggregation (see module docstring)."""

    def __init__(self, shard_users, shard_items, loss, generator: torch.Generator, dropout: float = 0.3, **kwargs):
        super().__init__(shard_users, shard_items, loss, **kwargs)
        k, d = self.n_shards, self.dim
        half = max(d // 2, 1)
        self.weight = nn.Parameter(torch.eye(d).repeat(k, 1, 1) + 0.01 * torch.randn(k, d, d, generator=generator))
        self.bias = nn.Parameter(torch.zeros(k, d))
        std = math.sqrt(2.0 / (d + half))
        self.user_attention = nn.ParameterList([nn.Parameter(torch.randn(half, d, generator=generator) * std),
                                                nn.Parameter(torch.zeros(half)), nn.Parameter(torch.full((half,), 0.01))])
        self.item_attention = nn.ParameterList([nn.Parameter(torch.randn(half, d, generator=generator) * std),
                                                nn.Parameter(torch.zeros(half)), nn.Parameter(torch.full((half,), 0.01))])
        self.dropout = dropout

    def _aggregate(self, shard_vectors: torch.Tensor, attention) -> torch.Tensor:
        transformed = torch.einsum("kde,knd->kne", self.weight, shard_vectors) + self.bias[:, None, :]
        project, shift, score = attention
        logits = F.relu(transformed @ project.T + shift) @ score
        weights = torch.softmax(logits, dim=0)
        return (weights[..., None] * transformed).sum(0)

    def users(self, idx):
        out = self._aggregate(self.shard_users[:, idx], self.user_attention)
        return F.dropout(out, self.dropout, self.training)

    def items(self, idx):
        return self._aggregate(self.shard_items[:, idx], self.item_attention)

    def regularization(self):
        return self.weight.square().sum() + self.bias.square().sum()


class LinearCombiner(Combiner):
    """UltraRE-style light combiner (see module docstring): K weights, initialised to 1/K."""

    def __init__(self, shard_users, shard_items, loss, user_shard: np.ndarray, **kwargs):
        super().__init__(shard_users, shard_items, loss, **kwargs)
        self.register_buffer("user_shard", torch.as_tensor(user_shard, dtype=torch.long), persistent=False)
        self.shard_weight = nn.Parameter(torch.full((self.n_shards,), 1.0 / self.n_shards))

    def users(self, idx):
        return self.shard_users[self.user_shard[idx], idx]

    def items(self, idx):
        return torch.einsum("k,knd->nd", self.shard_weight, self.shard_items[:, idx])

    def regularization(self):
        return self.shard_weight.square().sum()


def shard_tables(model) -> tuple[torch.Tensor, torch.Tensor]:
    """The blocked model's final user and item embeddings as ``(K, n, d)`` tables."""
    with torch.no_grad():
        users, items = model.embeddings()
    k = model.n_blocks
    return users.reshape(k, model.block_users, -1), items.reshape(k, model.block_items, -1)


COMBINERS = {"attention": AttentionAggregator, "linear": LinearCombiner}


def build_combiner(name: str, model, user_shard: np.ndarray, backbone: str, generator: torch.Generator,
                   c0: float = 0.2, batch_size: int = 512, n_negatives: int = 4):
    """The combiner ``name`` over the shard models of the blocked ``model``."""
    users, items = shard_tables(model)
    loss = "whole_data" if backbone == "wmf" else "bpr"
    common = dict(c0=c0, batch_size=batch_size, n_negatives=n_negatives)
    if name == "attention":
        return AttentionAggregator(users, items, loss, generator, **common)
    if name == "linear":
        return LinearCombiner(users, items, loss, user_shard, **common)
    raise ValueError(f"combiner must be one of {sorted(COMBINERS)}, got {name!r}")


__all__ = ["AttentionAggregator", "LinearCombiner", "build_combiner", "shard_tables"]
