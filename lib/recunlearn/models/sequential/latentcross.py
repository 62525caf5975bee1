"""LatentCross as the CASPER authors built it (spec §3.4, decisions D8-D9).

The paper calls it "GRU-based"; the authors' code (the only source of what ran) uses an LSTMCell:

- User state s = [h; c] (64 + 64), every user starting each epoch from one learned vector
  ``normalize(rand(128))``; s is L2-normalised after every update.
- Context x = [Δ_u, f] with Δ_u = time since the user's previous interaction in the full stream,
  standardised as ``scale(Δ + 1)`` over all rows, and one dummy feature f = 0.
- Update (pre-fusion): v = [onehot(item) (|I|+1), f, Δ_u] ⊙ (1 + W_1 x) with W_1 a NormalLinear
  (N(0, 1) init) 2 -> |I|+3; (h', c') = LSTMCell(v, (h, c)).
- Prediction (post-fusion) from the state *before* the interaction: z = [h, Δ_u, f] ⊙ (1 + W_2 x),
  W_2 NormalLinear 2 -> 66; logits = Linear(66 -> |I|+1)(z); softmax cross-entropy.
- Training: the training stream in windows of 1,024 rows; inside a window, t-batches (each user and
  item at most once per t-batch; index = 1 + max(last t-batch of the user, of the item)), computed
  for all windows at once by a vectorised longest-path relaxation; losses summed over the window's
  t-batches, then one Adam step (lr 1e-3, weight decay 1e-5) and the states are detached. 50 epochs.
- Test (the authors' protocol, D9): test rows only, from the end-of-training states, in windows of
  1,024 test rows; scores before each update, then the true interaction updates the states and one
  optimiser step is taken per window (online learning) — on a copy, so the trained model is unchanged.
- Rank list: logits of the |I| real items (the extra class excluded, D13). Items keep the study's
  fixed id map (the authors numbered them by first appearance; spec §0.2).
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ...data.sequences import Stream

WINDOW = 1024


def user_time_deltas(stream: Stream) -> np.ndarray:
    """Per row: time since the user's previous row (0 for the first), then ``scale(Δ + 1)`` over all rows."""
    order = np.lexsort((np.arange(len(stream)), stream.user))
    t = stream.timestamp[order]
    same = np.r_[False, stream.user[order][1:] == stream.user[order][:-1]]
    delta = np.empty(len(t))
    delta[order] = np.where(same, np.r_[0.0, np.diff(t)], 0.0)
    x = delta + 1.0
    std = x.std()
    return (x - x.mean()) / (std if std > 0 else 1.0)


def t_batches(user: np.ndarray, item: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """T-batch index of each row inside its window of ``window`` consecutive rows: 0 for a row with no
    earlier row of its user or item in the window, else 1 + the larger index of those two
    predecessors. Vectorised: a longest-path relaxation over all windows at once."""
    n = len(user)
    win = np.arange(n) // window
    prev = []
    for key in (user, item):
        order = np.lexsort((np.arange(n), key, win))
        same = np.r_[False, (key[order][1:] == key[order][:-1]) & (win[order][1:] == win[order][:-1])]
        p = np.full(n, -1, dtype=np.int64)
        p[order[1:][same[1:]]] = order[:-1][same[1:]]
        prev.append(p)
    level = np.zeros(n, dtype=np.int64)
    while True:
        new = level.copy()
        for p in prev:
            has = p >= 0
            new[has] = np.maximum(new[has], level[p[has]] + 1)
        if np.array_equal(new, level):
            return level
        level = new


class NormalLinear(nn.Linear):
    """A linear layer initialised N(0, 1), as JODIE's NormalLinear."""

    def reset_parameters(self):
        nn.init.normal_(self.weight, 0.0, 1.0)
        if self.bias is not None:
            nn.init.normal_(self.bias, 0.0, 1.0)


class LatentCrossNet(nn.Module):
    def __init__(self, n_items: int, hidden: int = 64):
        super().__init__()
        self.n_items, self.hidden = n_items, hidden
        self.initial_state = nn.Parameter(F.normalize(torch.rand(2 * hidden), dim=0))
        self.pre = NormalLinear(2, n_items + 3)
        self.post = NormalLinear(2, hidden + 2)
        self.cell = nn.LSTMCell(n_items + 3, hidden)
        self.out = nn.Linear(hidden + 2, n_items + 1)

    def predict(self, state, context):
        z = torch.cat([state[:, :self.hidden], context[:, 1:2], context[:, 0:1]], 1)  # [h, Δ_u, f]
        return self.out(z * (1 + self.post(context)))

    def update(self, state, item, context):
        v = torch.cat([F.one_hot(item, self.n_items + 1).float(), context[:, 0:1], context[:, 1:2]], 1)
        h, c = self.cell(v * (1 + self.pre(context)), (state[:, :self.hidden], state[:, self.hidden:]))
        return F.normalize(torch.cat([h, c], 1), dim=1)


class LatentCrossRecommender:
    """See the module docstring. ``generator`` seeds the initial weights; nothing else is random."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, hidden: int = 64, epochs: int = 50,
                 lr: float = 1e-3, weight_decay: float = 1e-5, window: int = WINDOW, device: str = "cpu"):
        self.n_items, self.epochs, self.lr, self.weight_decay = n_items, epochs, lr, weight_decay
        self.window, self.device = window, device
        with torch.random.fork_rng(devices=[]):
            if generator is not None:
                torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
            self.net = LatentCrossNet(n_items, hidden)
        self.net.to(device)
        self.final_states = None

    def _pass(self, net, optimizer, states, user, item, context, tbatch, collect=None):
        """One pass over rows in windows; returns the states and the summed loss. ``collect(rows, scores)``
        receives the scores of each t-batch before its update (test)."""
        total = 0.0
        for lo in range(0, len(user), self.window):
            hi = min(lo + self.window, len(user))
            loss = 0.0
            level = tbatch[lo:hi]
            for t in range(int(level.max()) + 1):
                rows = lo + np.flatnonzero(level == t)
                u = torch.as_tensor(user[rows], device=self.device)
                i = torch.as_tensor(item[rows], device=self.device)
                x = context[rows]
                before = states[u]
                logits = net.predict(before, x)
                if collect is not None:
                    collect(rows, logits.detach()[:, :self.n_items])
                loss = loss + F.cross_entropy(logits, i)
                states = states.index_copy(0, u, net.update(before, i, x))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            states = states.detach()
            total += float(loss.detach())
        return states, total

    def _context(self, stream: Stream) -> torch.Tensor:
        d = torch.as_tensor(user_time_deltas(stream), dtype=torch.float32, device=self.device)
        return torch.stack([torch.zeros_like(d), d], 1)  # x = [f, Δ_u]

    def _optimizer(self, net):
        return torch.optim.Adam(net.parameters(), lr=self.lr, weight_decay=self.weight_decay)

    def fit(self, stream: Stream) -> dict:
        train = stream.train_positions
        context = self._context(stream)[torch.as_tensor(train, device=self.device)]
        user, item = stream.user[train], stream.item[train]
        tbatch = t_batches(user, item, self.window)
        optimizer = self._optimizer(self.net)
        n_users = stream.n_users
        curve, start = [], time.perf_counter()
        self.net.train()
        for _epoch in range(self.epochs):
            states = self.net.initial_state.expand(n_users, -1)
            states, total = self._pass(self.net, optimizer, states, user, item, context, tbatch)
            curve.append(total)
        self.final_states, self._optimizer_state = states, copy.deepcopy(optimizer.state_dict())
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    def test_scores(self, stream: Stream):
        """Yield ``(source rows, targets, scores)`` per window of test rows (stream order within it)."""
        test = stream.test_positions
        context = self._context(stream)[torch.as_tensor(test, device=self.device)]
        user, item = stream.user[test], stream.item[test]
        tbatch = t_batches(user, item, self.window)
        net = copy.deepcopy(self.net)  # online learning at test time must not change the trained model
        optimizer = self._optimizer(net)
        optimizer.load_state_dict(self._optimizer_state)
        states = self.final_states
        for lo in range(0, len(test), self.window):
            hi = min(lo + self.window, len(test))
            scores = torch.empty(hi - lo, self.n_items, device=self.device)

            def collect(rows, s, scores=scores):  # rows are positions within this window
                scores[torch.as_tensor(rows, device=self.device)] = s

            states, _ = self._pass(net, optimizer, states, user[lo:hi], item[lo:hi], context[lo:hi], tbatch[lo:hi],
                                   collect)
            yield stream.row[test[lo:hi]], item[lo:hi], scores
