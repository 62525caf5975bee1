"""JODIE (Kumar, Zhang, Leskovec, KDD 2019) as adapted by the CASPER authors (spec §3.3).

- Dynamic user and item embeddings (128), every user (item) starting each epoch from one learned
  vector ``normalize(rand(128))``; static embeddings are one-hot: users |U|, items |I|+1 (the extra
  "none" item is the previous item of a user's first interaction). One dummy feature f = 0.
- Δ_u / Δ_i = time since the user's / item's previous row in the full stream, each standardised
  as ``scale(Δ + 1)`` over all rows.
- Per interaction (u, j) with j_prev = u's previous item: projection û = u ⊙ (1 + W_p Δ_u)
  (NormalLinear 1 -> 128); prediction j̃ = Linear([û, j_prev dynamic, onehot(j_prev), onehot(u)])
  of size 128 + |I| + 1; updates u' = normalize(RNNCell_tanh([j, Δ_u, f], u)) and
  j' = normalize(RNNCell_tanh([u, Δ_i, f], j)); loss = MSE(j̃, [j; onehot(j)]) + MSE(u', u) +
  MSE(j', j), targets detached.
- Training in windows of 1,024 training rows split into t-batches (as LatentCross), one Adam step
  (lr 1e-3, weight decay 1e-5) per window, states detached after it; 50 epochs.
- Test (the authors' protocol): test rows in windows of 1,024, scores = minus the squared L2
  distance of j̃ to every item's [dynamic; one-hot] (same order as the distance; the "none" item
  excluded, and its coordinate, a constant for every real item, dropped), then the true interaction
  updates the states and one optimiser step is taken per window — on a copy of the model.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ...data.sequences import Stream
from .latentcross import WINDOW, NormalLinear, t_batches


def time_deltas(key: np.ndarray, timestamp: np.ndarray) -> np.ndarray:
    """Per row: time since the previous row with the same ``key`` (0 for the first), then ``scale(Δ + 1)``."""
    order = np.lexsort((np.arange(len(key)), key))
    same = np.r_[False, key[order][1:] == key[order][:-1]]
    delta = np.empty(len(key))
    delta[order] = np.where(same, np.r_[0.0, np.diff(timestamp[order])], 0.0)
    x = delta + 1.0
    std = x.std()
    return (x - x.mean()) / (std if std > 0 else 1.0)


def previous_items(stream: Stream) -> np.ndarray:
    """Per row: the user's previous item in the full stream, ``n_items`` ("none") for a first row."""
    order = np.lexsort((np.arange(len(stream)), stream.user))
    same = np.r_[False, stream.user[order][1:] == stream.user[order][:-1]]
    prev = np.empty(len(stream), dtype=np.int64)
    prev[order] = np.where(same, np.r_[0, stream.item[order][:-1]], stream.n_items)
    return prev


class JODIENet(nn.Module):
    def __init__(self, n_users: int, n_items: int, dim: int = 128):
        super().__init__()
        self.n_users, self.n_items, self.dim = n_users, n_items, dim
        self.initial_user = nn.Parameter(F.normalize(torch.rand(dim), dim=0))
        self.initial_item = nn.Parameter(F.normalize(torch.rand(dim), dim=0))
        self.user_rnn = nn.RNNCell(dim + 2, dim)
        self.item_rnn = nn.RNNCell(dim + 2, dim)
        self.project = NormalLinear(1, dim)
        self.predict = nn.Linear(dim + dim + n_items + 1 + n_users, dim + n_items + 1)

    def predicted(self, u_state, prev_state, prev_item, user, du):
        projected = u_state * (1 + self.project(du[:, None]))
        return self.predict(torch.cat([projected, prev_state, F.one_hot(prev_item, self.n_items + 1).float(),
                                       F.one_hot(user, self.n_users).float()], 1))


class JODIERecommender:
    """See the module docstring. Needs the number of users: ``n_users`` is read from the first stream."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, dim: int = 128, epochs: int = 50,
                 lr: float = 1e-3, weight_decay: float = 1e-5, window: int = WINDOW, device: str = "cpu"):
        self.n_items, self.dim, self.epochs, self.lr, self.weight_decay = n_items, dim, epochs, lr, weight_decay
        self.window, self.device = window, device
        self.seed = int(torch.randint(0, 2**62, (1,), generator=generator)) if generator is not None else 0
        self.net = None  # built on the first stream (needs |U|), from ``seed``: identical for M and M'

    def _ensure_net(self, n_users: int):
        if self.net is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                self.net = JODIENet(n_users, self.n_items, self.dim).to(self.device)

    def _features(self, stream: Stream, positions: np.ndarray) -> dict:
        du = time_deltas(stream.user, stream.timestamp)[positions]
        di = time_deltas(stream.item, stream.timestamp)[positions]
        t = lambda a, dtype=torch.float32: torch.as_tensor(a, dtype=dtype, device=self.device)  # noqa: E731
        return {"user": stream.user[positions], "item": stream.item[positions], "du": t(du), "di": t(di),
                "prev": previous_items(stream)[positions]}

    def _pass(self, net, optimizer, users, items, rows, collect=None):
        """Windows over ``rows`` (dict of arrays); returns the updated (users, items) states."""
        n = len(rows["user"])
        level_all = t_batches(rows["user"], rows["item"], self.window)
        zero = torch.zeros(1, device=self.device)
        self.last_loss = 0.0
        for lo in range(0, n, self.window):
            hi = min(lo + self.window, n)
            loss = 0.0
            level = level_all[lo:hi]
            for t in range(int(level.max()) + 1):
                r = lo + np.flatnonzero(level == t)
                u = torch.as_tensor(rows["user"][r], device=self.device)
                j = torch.as_tensor(rows["item"][r], device=self.device)
                p = torch.as_tensor(rows["prev"][r], device=self.device)
                du, di = rows["du"][r], rows["di"][r]
                u_state, j_state = users[u], items[j]
                items_ext = torch.cat([items, F.normalize(net.initial_item, dim=0)[None]], 0)  # "none": the initial vector
                pred = net.predicted(u_state, items_ext[p], p, u, du)
                if collect is not None:  # minus the squared L2 distance to every item's [dynamic; one-hot]
                    dyn, onehot = pred.detach()[:, :self.dim], pred.detach()[:, self.dim:self.dim + self.n_items]
                    d2 = torch.cdist(dyn, items) ** 2 + (onehot ** 2).sum(1, keepdim=True) - 2 * onehot + 1
                    collect(r - lo, -d2)
                target = torch.cat([j_state, F.one_hot(j, self.n_items + 1).float()], 1).detach()
                ctx_u = torch.stack([du, zero.expand_as(du)], 1)
                ctx_i = torch.stack([di, zero.expand_as(di)], 1)
                new_u = F.normalize(net.user_rnn(torch.cat([j_state, ctx_u], 1), u_state), dim=1)
                new_j = F.normalize(net.item_rnn(torch.cat([u_state, ctx_i], 1), j_state), dim=1)
                loss = loss + F.mse_loss(pred, target) + F.mse_loss(new_u, u_state.detach()) \
                    + F.mse_loss(new_j, j_state.detach())
                users, items = users.index_copy(0, u, new_u), items.index_copy(0, j, new_j)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            users, items = users.detach(), items.detach()
            self.last_loss += float(loss.detach())
        return users, items

    def fit(self, stream: Stream) -> dict:
        self._ensure_net(stream.n_users)
        rows = self._features(stream, stream.train_positions)
        optimizer = torch.optim.Adam(self.net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        start = time.perf_counter()
        self.net.train()
        curve = []
        for _epoch in range(self.epochs):
            users = F.normalize(self.net.initial_user, dim=0).expand(stream.n_users, -1)
            items = F.normalize(self.net.initial_item, dim=0).expand(self.n_items, -1)
            users, items = self._pass(self.net, optimizer, users, items, rows)
            curve.append(self.last_loss)
        self.final = (users, items, copy.deepcopy(optimizer.state_dict()))
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    def test_scores(self, stream: Stream):
        """Yield ``(source rows, targets, scores)`` per window of test rows; scores = -squared L2 distance (b, |I|)."""
        test = stream.test_positions
        rows = self._features(stream, test)
        net = copy.deepcopy(self.net)
        optimizer = torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        users, items, state = self.final
        optimizer.load_state_dict(state)
        for lo in range(0, len(test), self.window):
            hi = min(lo + self.window, len(test))
            scores = torch.empty(hi - lo, self.n_items, device=self.device)

            def collect(r, s, scores=scores):
                scores[torch.as_tensor(r, device=self.device)] = s

            window = {k: v[lo:hi] for k, v in rows.items()}
            users, items = self._pass(net, optimizer, users, items, window, collect)
            yield stream.row[test[lo:hi]], stream.item[test[lo:hi]], scores

