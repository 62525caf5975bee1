"""TiSASRec (Li, Wang, McAuley, WSDM 2020) as the CASPER authors ran it (spec §3.2, decision D10).

- Hyper-parameters: d = 128, 2 blocks, 1 head, dropout 0.2, maxlen 50, time span k = 256,
  l2_emb 5e-5, Adam(lr 1e-3, betas (0.9, 0.98)), 50 epochs, **16 users per batch** in sorted user
  order (no shuffling). Every parameter with >= 2 dimensions is xavier-uniform initialised.
- Time: timestamps are made integers relative to the global minimum; per user, scale = the smallest
  positive gap between the user's consecutive interactions (over the user's rows of the given
  stream, train and test) and relative time r = round((t - t_min_user) / scale) + 1; the interval
  between two positions is |r_a - r_b| clipped at k.
- One training instance per user: the last ``maxlen`` training items except the final one (left
  padded), positives = the next item at each position, one negative per target row. Negatives are
  tied to data rows — drawn once per source row from the seed, never equal to the positive — so a
  deletion does not shift every later draw (spec §7).
- Attention: A_ab = Q_a·(K_b + P_K[b] + R_K[ab]) / sqrt(d) with causal and padding masks;
  O_a = Σ_b A_ab (V_b + P_V[b] + R_V[ab]); residual on the normalised query; point-wise FFN with a
  residual; padded positions zeroed; a final LayerNorm.
- Loss: BCE-with-logits of positive and negative scores over non-padded positions, plus
  ``l2_emb * ||table||`` (the plain norm, as the official code) of the five embedding tables.
- Test: for each test row, the user's previous ``maxlen`` items (earlier test items included,
  teacher forcing) with their times; scores of all |I| items = E[i]·F_last (padding excluded).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from ...data.sequences import Stream
from .lstm import user_windows


def relative_times(stream: Stream) -> np.ndarray:
    """Per row: r = round((t - t_min_user) / scale_user) + 1, with integer times relative to the global minimum."""
    ts = np.round(stream.timestamp - stream.timestamp.min()).astype(np.int64)
    order = np.lexsort((np.arange(len(ts)), stream.user))
    users, t = stream.user[order], ts[order]
    same = np.r_[False, users[1:] == users[:-1]]
    gaps = np.where(same, np.r_[0, np.diff(t)], 0)
    positive = np.where(gaps > 0, gaps, np.iinfo(np.int64).max)
    n_users = int(stream.user.max()) + 1 if len(ts) else 0
    scale = np.full(n_users, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(scale, users, positive)
    scale[scale == np.iinfo(np.int64).max] = 1
    t_min = np.full(n_users, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(t_min, users, t)
    out = np.empty(len(ts), dtype=np.int64)
    out[order] = np.round((t - t_min[users]) / scale[users]).astype(np.int64) + 1
    return out


def row_negatives(stream: Stream, seed: int) -> np.ndarray:
    """One negative item per stream row, a function of (seed, source row) only, never the positive:
    draw j of one seeded sequence belongs to source row j (numpy draws are sequential, so the draw of a
    row does not depend on how many rows exist); rows inserted by a perturbation take one draw of a
    second seeded sequence."""
    n = max(stream.n_items - 1, 1)
    draws = np.random.default_rng(seed).integers(0, n, size=int(stream.row.max()) + 1)
    extra = int(np.random.default_rng([seed, 1]).integers(0, n))
    offset = np.where(stream.row >= 0, draws[np.maximum(stream.row, 0)], extra)
    return (stream.item + 1 + offset) % stream.n_items


class TimeAwareBlock(nn.Module):
    def __init__(self, d: int, dropout: float):
        super().__init__()
        self.ln_attn, self.ln_ffn = nn.LayerNorm(d, eps=1e-8), nn.LayerNorm(d, eps=1e-8)
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.conv1, self.conv2 = nn.Conv1d(d, d, 1), nn.Conv1d(d, d, 1)
        self.drop = nn.Dropout(dropout)
        self.scale = d ** 0.5

    def forward(self, s, pos_k, pos_v, int_k, int_v, causal, pad):
        n = self.ln_attn(s)
        q, k, v = self.q(n), self.k(s), self.v(s)
        logits = (q @ k.transpose(1, 2) + q @ pos_k.transpose(1, 2) + torch.einsum("nid,nijd->nij", q, int_k)) / self.scale
        logits = logits.masked_fill(causal | pad[:, None, :], -2.0 ** 32 + 1)
        attn = self.drop(torch.softmax(logits, dim=-1))
        out = attn @ v + attn @ pos_v + torch.einsum("nij,nijd->nid", attn, int_v)
        s = n + out
        s = self.ln_ffn(s)
        h = self.drop(self.conv2(torch.relu(self.drop(self.conv1(s.transpose(1, 2)))))).transpose(1, 2)
        return (s + h) * (~pad)[..., None]


class TiSASRecNet(nn.Module):
    def __init__(self, n_items: int, d: int, n_blocks: int, dropout: float, maxlen: int, span: int):
        super().__init__()
        self.item = nn.Embedding(n_items + 1, d, padding_idx=0)
        self.pos_k, self.pos_v = nn.Embedding(maxlen, d), nn.Embedding(maxlen, d)
        self.int_k, self.int_v = nn.Embedding(span + 1, d), nn.Embedding(span + 1, d)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(TimeAwareBlock(d, dropout) for _ in range(n_blocks))
        self.last = nn.LayerNorm(d, eps=1e-8)
        self.d, self.span = d, span

    def tables(self):
        return [self.item.weight, self.pos_k.weight, self.pos_v.weight, self.int_k.weight, self.int_v.weight]

    def forward(self, seq: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """Hidden states (B, L, d) of item sequences ``seq`` (0 = padding) with relative times ``times``."""
        b, length = seq.shape
        pad = seq == 0
        s = self.drop(self.item(seq) * self.d ** 0.5) * (~pad)[..., None]
        positions = torch.arange(length, device=seq.device).expand(b, length)
        pos_k, pos_v = self.drop(self.pos_k(positions)), self.drop(self.pos_v(positions))
        intervals = (times[:, :, None] - times[:, None, :]).abs().clamp(max=self.span)
        int_k, int_v = self.drop(self.int_k(intervals)), self.drop(self.int_v(intervals))
        causal = torch.ones(length, length, dtype=torch.bool, device=seq.device).triu(1)
        for block in self.blocks:
            s = block(s, pos_k, pos_v, int_k, int_v, causal, pad)
        return self.last(s)


class TiSASRecRecommender:
    """See the module docstring. ``generator`` seeds the initial weights and the row negatives."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, dim: int = 128, n_blocks: int = 2,
                 dropout: float = 0.2, max_len: int = 50, time_span: int = 256, l2_emb: float = 5e-5,
                 epochs: int = 50, batch_users: int = 16, lr: float = 1e-3, device: str = "cpu"):
        self.n_items, self.max_len, self.epochs, self.batch_users = n_items, max_len, epochs, batch_users
        self.lr, self.l2_emb, self.device = lr, l2_emb, device
        seed = int(torch.randint(0, 2**62, (1,), generator=generator)) if generator is not None else 0
        self.negative_seed = seed % (2**32)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = TiSASRecNet(n_items, dim, n_blocks, dropout, max_len, time_span)
            for name, param in self.net.named_parameters():
                if param.dim() >= 2:
                    nn.init.xavier_uniform_(param)
        self.net.to(device)

    def _instances(self, stream: Stream):
        """Per user with >= 2 training rows (sorted user id): seq, times, positives, negatives (maxlen each)."""
        train = stream.train_positions
        rel, neg = relative_times(stream)[train], row_negatives(stream, self.negative_seed)[train]
        users, items = stream.user[train], stream.item[train] + 1
        order = np.lexsort((np.arange(len(train)), users))
        _, starts, counts = np.unique(users[order], return_index=True, return_counts=True)
        rows = [(order[s:s + c][-(self.max_len + 1):]) for s, c in zip(starts, counts) if c >= 2]
        out = np.zeros((4, len(rows), self.max_len), dtype=np.int64)
        for r, idx in enumerate(rows):
            inp, tgt = idx[:-1], idx[1:]
            out[0, r, -len(inp):], out[1, r, -len(inp):] = items[inp], rel[inp]
            out[2, r, -len(tgt):], out[3, r, -len(tgt):] = items[tgt], neg[tgt] + 1
        return [torch.as_tensor(a, device=self.device) for a in out]

    def fit(self, stream: Stream) -> dict:
        seq, times, pos, neg = self._instances(stream)
        optimizer = torch.optim.Adam(self.net.parameters(), lr=self.lr, betas=(0.9, 0.98))
        loss_fn = nn.BCEWithLogitsLoss()
        curve, start = [], time.perf_counter()
        self.net.train()
        for _epoch in range(self.epochs):
            total = 0.0
            for lo in range(0, len(seq), self.batch_users):
                sl = slice(lo, lo + self.batch_users)
                h = self.net(seq[sl], times[sl])
                mask = pos[sl] != 0
                pos_logit = (h * self.net.item(pos[sl])).sum(-1)[mask]
                neg_logit = (h * self.net.item(neg[sl])).sum(-1)[mask]
                loss = loss_fn(pos_logit, torch.ones_like(pos_logit)) + loss_fn(neg_logit, torch.zeros_like(neg_logit))
                loss = loss + self.l2_emb * sum(torch.norm(t) for t in self.net.tables())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item()
            curve.append(total)
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    @torch.no_grad()
    def test_scores(self, stream: Stream, chunk: int = 256):
        """Yield ``(source rows, targets, scores)`` of the test rows in stream order; scores (b, |I|)."""
        self.net.eval()
        windows = user_windows(stream.user, stream.item, self.max_len)
        rel = relative_times(stream)
        time_windows = user_windows(stream.user, rel - 1, self.max_len)  # tokens = rel (0 where padded)
        test = stream.test_positions
        items = self.net.item.weight[1:]
        for lo in range(0, len(test), chunk):
            part = test[lo:lo + chunk]
            h = self.net(torch.as_tensor(windows[part], device=self.device),
                         torch.as_tensor(time_windows[part], device=self.device))
            yield stream.row[part], stream.item[part], h[:, -1] @ items.T
