"""Matrix-factorisation recommenders: WMF (whole-data and the CURE4Rec code's sampled BCE) and BPR."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import Recommender, TrainingData


class WMF(Recommender):
    """Weighted matrix factorisation, ``y_ui = p_u . q_i``.

    ``loss="whole_data"`` (the paper; ENMF): every unobserved pair is a negative of weight
    ``c0`` and every positive has weight 1; per batch of users B the loss is
    ``sum_{(u,i) in R_B} [(1 - c0) y_ui^2 - 2 y_ui] + c0 * sum_{d,d'} (P_B^T P_B)_{dd'} (Q^T Q)_{dd'}``,
    computed without enumerating negatives. ``batch_size`` counts users.

    ``loss="bce_sampled"`` (the authors' code): logistic loss with ``n_negatives`` uniformly sampled
    negatives per positive, resampled every epoch; ``batch_size`` counts positive rows.
    """

    LOSSES = ("whole_data", "bce_sampled")

    def __init__(self, n_users, n_items, dim, generator, loss="whole_data", c0=0.2, batch_size=512,
                 n_negatives=1, l2=0.0, init_std=0.1, n_blocks=1):
        super().__init__(n_users, n_items, dim, generator, init_std, n_blocks)
        if loss not in self.LOSSES:
            raise ValueError(f"WMF loss must be one of {self.LOSSES}, got {loss!r}")
        self.loss, self.c0, self.batch_size, self.n_negatives, self.l2 = loss, c0, batch_size, n_negatives, l2

    def batches(self, data: TrainingData, generator, active_blocks=None):
        if self.loss == "bce_sampled":
            yield from data.positive_triples(self.batch_size, self.n_negatives, generator, active_blocks)
            return
        members = data.member_users()
        member_blocks = data.block_of_users(members) if data.n_blocks > 1 else None
        for users in data.block_steps(members, member_blocks, self.batch_size, generator, active_blocks):
            rows = data.rows_of_users(users)
            yield users, data.users[rows], data.items[rows]

    def batch_loss(self, batch):
        if self.loss == "bce_sampled":
            users, pos, neg = batch
            p = self.user_embedding[users]
            logits = torch.cat([(p * self.item_embedding[pos]).sum(1), (p * self.item_embedding[neg]).sum(1)])
            labels = torch.cat([torch.ones_like(logits[: len(pos)]), torch.zeros_like(logits[len(pos):])])
            if self.n_blocks == 1:
                return F.binary_cross_entropy_with_logits(logits, labels) + self._l2(p)
            per_entry = F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
            return self.mean_over_blocks(per_entry, torch.cat([users, users])) + self._l2(p)
        users, pos_users, pos_items = batch
        p_batch = self.user_embedding[users]
        y = (self.user_embedding[pos_users] * self.item_embedding[pos_items]).sum(1)
        if self.n_blocks == 1:
            return whole_data_loss(p_batch, y, self.item_embedding, self.c0) + self._l2(p_batch)
        positive_part = ((1.0 - self.c0) * y.square() - 2.0 * y).sum()
        return positive_part + self.c0 * self._all_pairs_term(users, p_batch) + self._l2(p_batch)

    def _all_pairs_term(self, users, p_batch):
        """``sum_b sum_{d,d'} (P_b^T P_b)_{dd'} (Q_b^T Q_b)_{dd'}`` over the blocks b of the batch users."""
        item_blocks = self.item_embedding.view(self.n_blocks, self.block_items, self.dim)
        item_gram = torch.einsum("bid,bie->bde", item_blocks, item_blocks)
        blocks = torch.div(users, self.block_users, rounding_mode="floor")
        user_gram = torch.zeros_like(item_gram).index_add_(0, blocks, p_batch[:, :, None] * p_batch[:, None, :])
        return (user_gram * item_gram).sum()

    def _l2(self, user_rows):
        return self.l2 * user_rows.square().sum() if self.l2 else 0.0


def whole_data_loss(p_batch: torch.Tensor, y_positive: torch.Tensor, q_all: torch.Tensor, c0: float) -> torch.Tensor:
    """Whole-data WMF loss of a batch of users (rows ``p_batch``) whose positive scores are
    ``y_positive``, against all items ``q_all`` (constant term dropped)."""
    positive_part = ((1.0 - c0) * y_positive.square() - 2.0 * y_positive).sum()
    return positive_part + c0 * ((p_batch.T @ p_batch) * (q_all.T @ q_all)).sum()


class BPR(Recommender):
    """Bayesian personalised ranking: mean of ``softplus(y_uj - y_ui)`` over (u, i, j) triples with
    ``n_negatives`` sampled negatives per positive, plus ``l2 * (|p_u|^2 + |q_i|^2 + |q_j|^2) / 2``
    averaged over the batch. ``batch_size`` counts positive rows."""

    def __init__(self, n_users, n_items, dim, generator, batch_size=512, n_negatives=4, l2=0.0, init_std=0.1,
                 n_blocks=1):
        super().__init__(n_users, n_items, dim, generator, init_std, n_blocks)
        self.batch_size, self.n_negatives, self.l2 = batch_size, n_negatives, l2

    def batches(self, data, generator, active_blocks=None):
        yield from data.positive_triples(self.batch_size, self.n_negatives, generator, active_blocks)

    def batch_loss(self, batch):
        return pairwise_batch_loss(self, batch)


def pairwise_batch_loss(model, batch):
    """BPR loss of a (users, positives, negatives) batch on ``model``'s final embeddings, with L2 on
    its ego embeddings (shared by BPR and LightGCN)."""
    users, pos, neg = batch
    user_emb, item_emb = model.embeddings()
    ego = (model.user_embedding[users], model.item_embedding[pos], model.item_embedding[neg])
    if model.n_blocks == 1:
        return bpr_loss(user_emb[users], item_emb[pos], item_emb[neg], model.l2, ego)
    u, i, j = user_emb[users], item_emb[pos], item_emb[neg]
    per_triple = F.softplus((u * j).sum(1) - (u * i).sum(1))
    if model.l2:
        per_triple = per_triple + 0.5 * model.l2 * sum(e.square().sum(1) for e in ego)
    return model.mean_over_blocks(per_triple, users)


def bpr_loss(u, i, j, l2, ego=None):
    """Mean BPR loss of final embeddings ``u, i, j`` plus ``l2/2`` times the mean squared norm of the
    ego (layer-0) embeddings ``ego`` (defaults to ``u, i, j``)."""
    loss = F.softplus((u * j).sum(1) - (u * i).sum(1)).mean()
    if l2:
        ego = ego or (u, i, j)
        loss = loss + 0.5 * l2 * sum(e.square().sum() for e in ego) / len(u)
    return loss
