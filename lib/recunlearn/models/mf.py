"""Matrix-factorisation recommenders: WMF (whole-data and the CURE4Rec code's sampled BCE) and BPR."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .base import Recommender, TrainingData


class WMF(Recommender):
    """Weighted matrix factorisation, ``y_ui = p_u . q_i``.

    ``loss="whole_data"`` (the paper; ENMF, spec §2.2): every unobserved pair is a negative of weight
    ``c0`` and every positive has weight 1; per batch of users B the loss is
    ``sum_{(u,i) in R_B} [(1 - c0) y_ui^2 - 2 y_ui] + c0 * sum_{d,d'} (P_B^T P_B)_{dd'} (Q^T Q)_{dd'}``,
    computed without enumerating negatives. ``batch_size`` counts users.

    ``loss="bce_sampled"`` (the authors' code): logistic loss with ``n_negatives`` uniformly sampled
    negatives per positive, resampled every epoch; ``batch_size`` counts positive rows.
    """

    LOSSES = ("whole_data", "bce_sampled")

    def __init__(self, n_users, n_items, dim, generator, loss="whole_data", c0=0.2, batch_size=512,
                 n_negatives=1, l2=0.0, init_std=0.1):
        super().__init__(n_users, n_items, dim, generator, init_std)
        if loss not in self.LOSSES:
            raise ValueError(f"WMF loss must be one of {self.LOSSES}, got {loss!r}")
        self.loss, self.c0, self.batch_size, self.n_negatives, self.l2 = loss, c0, batch_size, n_negatives, l2

    def batches(self, data: TrainingData, generator):
        if self.loss == "bce_sampled":
            yield from data.positive_triples(self.batch_size, self.n_negatives, generator)
            return
        order = torch.randperm(data.n_users, generator=generator, device=data.device)
        for start in range(0, data.n_users, self.batch_size):
            users = order[start:start + self.batch_size]
            rows = data.rows_of_users(users)
            yield users, data.users[rows], data.items[rows]

    def batch_loss(self, batch):
        if self.loss == "bce_sampled":
            users, pos, neg = batch
            p = self.user_embedding[users]
            logits = torch.cat([(p * self.item_embedding[pos]).sum(1), (p * self.item_embedding[neg]).sum(1)])
            labels = torch.cat([torch.ones_like(logits[: len(pos)]), torch.zeros_like(logits[len(pos):])])
            return F.binary_cross_entropy_with_logits(logits, labels) + self._l2(p)
        users, pos_users, pos_items = batch
        p_batch = self.user_embedding[users]
        y = (self.user_embedding[pos_users] * self.item_embedding[pos_items]).sum(1)
        positive_part = ((1.0 - self.c0) * y.square() - 2.0 * y).sum()
        all_pairs_part = self.c0 * ((p_batch.T @ p_batch) * (self.item_embedding.T @ self.item_embedding)).sum()
        return positive_part + all_pairs_part + self._l2(p_batch)

    def _l2(self, user_rows):
        return self.l2 * user_rows.square().sum() if self.l2 else 0.0


class BPR(Recommender):
    """Bayesian personalised ranking: mean of ``softplus(y_uj - y_ui)`` over (u, i, j) triples with
    ``n_negatives`` sampled negatives per positive, plus ``l2 * (|p_u|^2 + |q_i|^2 + |q_j|^2) / 2``
    averaged over the batch. ``batch_size`` counts positive rows."""

    def __init__(self, n_users, n_items, dim, generator, batch_size=512, n_negatives=4, l2=0.0, init_std=0.1):
        super().__init__(n_users, n_items, dim, generator, init_std)
        self.batch_size, self.n_negatives, self.l2 = batch_size, n_negatives, l2

    def batches(self, data, generator):
        yield from data.positive_triples(self.batch_size, self.n_negatives, generator)

    def batch_loss(self, batch):
        users, pos, neg = batch
        user_emb, item_emb = self.embeddings()
        return bpr_loss(user_emb[users], item_emb[pos], item_emb[neg], self.l2,
                        (self.user_embedding[users], self.item_embedding[pos], self.item_embedding[neg]))


def bpr_loss(u, i, j, l2, ego=None):
    """Mean BPR loss of final embeddings ``u, i, j`` plus ``l2/2`` times the mean squared norm of the
    ego (layer-0) embeddings ``ego`` (defaults to ``u, i, j``)."""
    loss = F.softplus((u * j).sum(1) - (u * i).sum(1)).mean()
    if l2:
        ego = ego or (u, i, j)
        loss = loss + 0.5 * l2 * sum(e.square().sum() for e in ego) / len(u)
    return loss
