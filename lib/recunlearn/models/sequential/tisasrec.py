"""TiSASRec (Li, Wang, McAuley, WSDM 2020) as the CASPER authors ran it.

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
  deletion does not shift every later draw.
- Attention: A_ab = Q_a·(K_b + P_K[b] + R_K[ab]) / sqrt(d) with causal and padding masks;
  O_a = Σ_b A_ab (V_b + P_V[b] + R_V[ab]); residual on the normalised query; point-wise FFN with a
  residual; padded positions zeroed; a final LayerNorm.
- Loss: BCE-with-logits of positive and negative scores over non-padded positions, plus
  ``l2_emb * ||table||`` (the plain norm, as the official code) of the five embedding tables.
- Test: for each test row, the user's previous ``maxlen`` items (earlier test items included,
  teacher forcing) with their times; scores of all |I| items = E[i]·F_last (padding excluded).

Two implementations of the same network (same parameters, same initial draw, same protocol):
``implementation="reference"`` is the original code (bit-identical results); ``"fast"`` (the default)
computes the same function with less work:

- Blocks run on the non-padded positions only (padded ones are zero after every block and never
  reach the loss); Q·K and Q·P_K (A·V and A·P_V) share one product; 1x1 convolutions run as the
  equivalent linear maps; Adam runs fused (one kernel, the same update).
- Training (dropout on): the dropped interval rows R_K[ab] * m, R_V[ab] * m' are built only for the
  pairs that carry weight (key b <= query a, both not padding: masked keys get exactly zero attention,
  padded queries are zeroed), as (pairs, d) buffers drawn once per batch and shared by the blocks,
  each value with its own independent mask as before. Q_a·R_K[ab] and Σ_b A_ab R_V[ab] and their
  gradients are sparse products over those pairs. Dropout masks are not ``torch.bernoulli`` draws
  (same distribution, keep probability 1 - p to 2^-61, other draws): every masked value of a training
  batch belongs to one user (its tokens, its live pairs, its attention rows), and each user's masks come
  from their own SFC64 stream seeded by (run seed, epoch, user id). The number of masks a user draws
  follows the user's sequence, so with one stream per batch (or per run) a change to one user's
  sequence would shift the masks of every other user drawn after it and add that noise to what CASPER
  measures (at a reduced scale AO fell from ~0.985 to ~0.895 with one stream per run). Per-user streams
  keep every other user's masks exactly, in every batch, as the reference's fixed-shape masks do.
- Without dropout (``probe``, dropout 0) the interval terms are factorised:
  Q_a·R_K[ab] = (Q R_K^T)[a, ab] and Σ_b A_ab R_V[ab] = (A summed per interval value) @ R_V.
- Test scores need the last position only: the last block computes its query side there only; the
  first block's LayerNorm, Q, K, V depend on a position's item only (no dropout), so they are computed
  once per item; interval terms are computed once per distinct (query, interval value); windows are
  built for the test rows only, and a chunk is processed 32 rows at a time.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import torch
from torch import nn

from ...data.sequences import Stream
from ..resume import ResumePoint, resume_epochs, stateful
from .lstm import user_windows

IMPLEMENTATIONS = ("fast", "reference")
"""Allowed values of the ``implementation`` keyword."""

_MASKED = -2.0 ** 32 + 1
"""Logit of a masked (future or padding) key."""


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


def windows_at(user: np.ndarray, values: np.ndarray, at: np.ndarray, length: int) -> np.ndarray:
    """``user_windows(user, values, length)[at]`` computed for the rows ``at`` only: the tokens
    (value + 1) of the same user's previous ``length`` rows, left-padded with 0, (len(at), length)."""
    n = len(user)
    order = np.argsort(user, kind="stable")
    _, starts, counts = np.unique(user[order], return_index=True, return_counts=True)
    rank, where = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, counts)  # position within the user's rows
    where[order] = np.arange(n)  # position in the user-grouped order
    tokens = (values[order] + 1).astype(np.int64)
    back = np.arange(length, 0, -1)  # column j holds the token ``length - j`` rows earlier
    ok = rank[at][:, None] >= back
    return np.where(ok, tokens[np.where(ok, where[at][:, None] - back, 0)], 0)


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
        logits = (q @ k.transpose(1, 2) + q @ pos_k.transpose(1, 2)
                  + torch.einsum("nid,nijd->nij", q, int_k)) / self.scale
        logits = logits.masked_fill(causal | pad[:, None, :], -2.0 ** 32 + 1)
        attn = self.drop(torch.softmax(logits, dim=-1))
        out = attn @ v + attn @ pos_v + torch.einsum("nij,nijd->nid", attn, int_v)
        s = n + out
        s = self.ln_ffn(s)
        h = self.drop(self.conv2(torch.relu(self.drop(self.conv1(s.transpose(1, 2)))))).transpose(1, 2)
        return (s + h) * (~pad)[..., None]

    def forward_fast(self, x, pos_kv, inter, layout, noise):
        """The same block on the packed non-padded positions ``x`` (T, d), with the position embeddings
        ``pos_kv`` = [P_K, P_V] (T, 2d) of those positions; ``inter`` adds the interval terms and
        ``noise`` draws the dropout masks (None: no dropout)."""
        d = x.shape[-1]
        n = self.ln_attn(x)
        q = layout.spread(self.q(n))
        k, v = layout.spread(self.k(x) + pos_kv[:, :d]), layout.spread(self.v(x) + pos_kv[:, d:])
        logits = inter.scores(q, q @ k.transpose(1, 2)) / self.scale
        attn = _dropped(torch.softmax(logits.masked_fill(layout.masked, _MASKED), dim=-1), noise)
        out = layout.pack(inter.mix(attn, attn @ v))
        s = self.ln_ffn(n + out)
        h = torch.relu(nn.functional.linear(s, self.conv1.weight.squeeze(-1), self.conv1.bias))
        h = nn.functional.linear(_dropped(h, noise), self.conv2.weight.squeeze(-1), self.conv2.bias)
        return s + _dropped(h, noise)

    def projections(self, s):
        """LayerNorm(S), Q, K, V of the inputs ``s`` (any leading shape)."""
        n = self.ln_attn(s)
        return n, self.q(n), self.k(s), self.v(s)

    def forward_padded(self, projected, pos_k, pos_v, inter, masked, keep):
        """Without dropout, on the padded layout: ``projected`` = :meth:`projections` of the input
        (B, L, d), which is zero at padding."""
        n, q, k, v = projected
        logits = inter.scores(q, q @ (k + pos_k).transpose(1, 2)) / self.scale
        attn = torch.softmax(logits.masked_fill(masked, _MASKED), dim=-1)
        s = self.ln_ffn(n + inter.mix(attn, attn @ (v + pos_v)))
        h = torch.relu(nn.functional.linear(s, self.conv1.weight.squeeze(-1), self.conv1.bias))
        return (s + nn.functional.linear(h, self.conv2.weight.squeeze(-1), self.conv2.bias)) * keep

    def forward_last(self, s, pos_k, pos_v, intervals, r_k, r_v, masked, keep):
        """Without dropout: the block's output (B, d) at the last position only, from the padded
        layout ``s`` (B, L, d); ``intervals``, ``masked`` (B, L) and ``keep`` (B, 1) of that position."""
        n = self.ln_attn(s[:, -1])
        q = self.q(n)
        logits = ((self.k(s) + pos_k) @ q[:, :, None]).squeeze(-1) + torch.gather(q @ r_k.T, 1, intervals)
        attn = torch.softmax((logits / self.scale).masked_fill(masked, _MASKED), dim=-1)
        binned = attn.new_zeros(attn.shape[0], r_v.shape[0]).scatter_add_(1, intervals, attn)
        s = self.ln_ffn(n + (attn[:, None, :] @ (self.v(s) + pos_v)).squeeze(1) + binned @ r_v)
        h = torch.relu(nn.functional.linear(s, self.conv1.weight.squeeze(-1), self.conv1.bias))
        return (s + nn.functional.linear(h, self.conv2.weight.squeeze(-1), self.conv2.bias)) * keep


class _Layout:
    """Where the non-padded positions of a (B, L) batch are: ``tokens`` (flat indices), their column
    (= absolute position index) and the attention mask (future or padded key)."""

    def __init__(self, seq: torch.Tensor):
        self.b, self.length = seq.shape
        pad = seq == 0
        self.tokens = (~pad).reshape(-1).nonzero().squeeze(1)
        self.row_tokens = (~pad).sum(1)  # tokens per batch row
        self.columns = self.tokens % self.length
        causal = torch.ones(self.length, self.length, dtype=torch.bool, device=seq.device).triu(1)
        self.masked = causal | pad[:, None, :]
        self.live = ~(self.masked | pad[:, :, None])  # pairs (a, b) with b <= a, both not padding
        self.pairs = self.live.reshape(-1).nonzero().squeeze(1)  # live pair -> position in (B, L, L)
        self.n_pairs = len(self.pairs)

    def spread(self, x: torch.Tensor) -> torch.Tensor:
        """(T, d) -> (B, L, d), zero at padded positions."""
        d = x.shape[-1]
        return x.new_zeros(self.b * self.length, d).index_copy(0, self.tokens, x).view(self.b, self.length, d)

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, d) -> (T, d)."""
        return x.reshape(-1, x.shape[-1]).index_select(0, self.tokens)


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

    @torch.no_grad()
    def last_states(self, seq: torch.Tensor, times: torch.Tensor, rows: int = 32) -> torch.Tensor:
        """``forward(seq, times)[:, -1]`` in eval mode, (B, d), ``rows`` sequences at a time (small
        tensors: fewer page faults). Without dropout the first block's LayerNorm, Q, K, V of a position
        depend on its item only, so they are computed once per item and gathered; the last block
        computes its query side for the last position only; the interval terms are sparse."""
        inputs = self.item.weight * self.d ** 0.5
        inputs[0] = 0  # padding: zero input
        tables = self.blocks[0].projections(inputs) if len(self.blocks) > 1 else None
        return torch.cat([self._last_states(seq[lo:lo + rows], times[lo:lo + rows], tables)
                          for lo in range(0, len(seq), rows)])

    def _last_states(self, seq, times, tables):
        b, length = seq.shape
        pad = seq == 0
        keep = (~pad)[..., None].to(self.item.weight.dtype)
        pos_k, pos_v = self.pos_k.weight[:length], self.pos_v.weight[:length]
        intervals = (times[:, :, None] - times[:, None, :]).abs().clamp(max=self.span)
        masked = torch.ones(length, length, dtype=torch.bool, device=seq.device).triu(1) | pad[:, None, :]
        if tables is None:
            s = self.item.weight.index_select(0, seq.reshape(-1)).view(b, length, -1) * (self.d ** 0.5) * keep
        else:
            inter = _Coalesced(intervals, ~(masked | pad[:, :, None]), self.int_k.weight, self.int_v.weight)
            projected = [t.index_select(0, seq.reshape(-1)).view(b, length, -1) for t in tables]
            for i, block in enumerate(self.blocks[:-1]):
                s = block.forward_padded(projected, pos_k, pos_v, inter, masked, keep)
                if i + 2 < len(self.blocks):
                    projected = self.blocks[i + 1].projections(s)
        s = self.blocks[-1].forward_last(s, pos_k, pos_v, intervals[:, -1], self.int_k.weight, self.int_v.weight,
                                         masked[:, -1], keep[:, -1])
        return self.last(s)

    def mask_counts(self, layout: "_Layout") -> np.ndarray:
        """(segments, B): how many dropout masks each batch row takes from each segment of one training
        pass, in the order the pass takes them: interval rows R_K and R_V of its live pairs, then the
        item and [P_K, P_V] embeddings of its tokens, then per block the attention weights (L x L per
        row) and the two feed-forward outputs."""
        pairs = layout.live.sum((1, 2)).cpu().numpy().astype(np.int64) * self.d
        tokens = layout.row_tokens.cpu().numpy().astype(np.int64) * self.d
        attention = np.full_like(tokens, layout.length * layout.length)
        per_block = [attention, tokens, tokens]
        return np.stack([pairs, pairs, tokens, 2 * tokens] + per_block * len(self.blocks))

    def forward_fast(self, seq: torch.Tensor, times: torch.Tensor, noise: "_Noise | None" = None,
                     packed: bool = False) -> torch.Tensor:
        """The same hidden states as :meth:`forward`; dropout masks from ``noise`` (None: no dropout).
        Blocks run on the non-padded positions only (padded ones are zero after every block).
        ``packed``: the states of the non-padded positions only, (T, d) in row-major order."""
        layout = _Layout(seq)
        intervals = (times[:, :, None] - times[:, None, :]).abs().clamp(max=self.span)
        if noise is not None:  # every dropout mask of this pass in one draw, per user
            noise.draw(self.mask_counts(layout), self.item.weight)
        x = _dropped(self.item.weight.index_select(0, seq.reshape(-1).index_select(0, layout.tokens)) * self.d ** 0.5,
                     noise)
        pos_kv = torch.cat([self.pos_k.weight, self.pos_v.weight], dim=1).index_select(0, layout.columns)
        pos_kv = _dropped(pos_kv, noise)  # [P_K, P_V] of each position, dropped independently
        if noise is None:
            inter = _Factorised(intervals, self.int_k.weight, self.int_v.weight)
        else:
            inter = _Packed(intervals, layout.pairs, self.int_k.weight, self.int_v.weight, noise)
        for block in self.blocks:
            x = block.forward_fast(x, pos_kv, inter, layout, noise)
        if packed:
            return self.last(x)
        return self.last(layout.spread(x))


class _Noise:
    """Dropout of one training run: masks with each element kept (scaled by 1 / (1 - p)) with
    probability 1 - p, independently, plus reusable buffers for the packed interval tensors.

    Each batch row (user) draws its masks from its own SFC64 stream (numpy's fastest bit generator)
    seeded by (run seed, epoch, user id) (:meth:`start`), so a user's masks never depend on another
    user's sequence. One random byte per element: keep if byte < floor(256 (1 - p)); a byte equal to it
    (probability 1/256) is kept with probability frac(256 (1 - p)) from a 53-bit uniform, so the keep
    probability is 1 - p to 2^-61. Bytes are drawn in 256 KiB chunks and the buffers are reused across
    batches (fresh large arrays cost a page fault per 4 KiB). One forward/backward at a time per
    object: a backward pass after a newer forward pass raises."""

    _CHUNK = 1 << 18  # bytes per draw

    def __init__(self, p: float, seed: int):
        self.p, self.seed = p, seed
        self.rng = np.random.Generator(np.random.SFC64(seed))
        self.streams: list[np.random.Generator] = []
        keep = (1.0 - p) * 256.0
        self.digit, self.tie = math.floor(keep), keep - math.floor(keep)
        self.buffers: dict[str, torch.Tensor] = {}
        self.host = np.empty(0, dtype=np.bool_)
        self.scratch = np.empty(0, dtype=np.bool_)
        self.generation = 0

    def start(self, epoch: int, users) -> None:
        """Start one training batch whose rows are ``users`` (ids, in row order): row i's masks come
        from a stream seeded by (run seed, ``epoch``, ``users[i]``). A perturbed run (one user's
        sequence changed) therefore draws every other user's masks exactly as the original run does."""
        self.streams = [np.random.Generator(np.random.SFC64([self.seed, epoch, int(u)])) for u in users]

    def keep01(self, n: int, rng: np.random.Generator | None = None, out: np.ndarray | None = None) -> torch.Tensor:
        """``n`` independent keep indicators from ``rng`` (default: the run's own stream), uint8 0/1 on
        the CPU (written into ``out`` if given, else a reused buffer)."""
        rng = self.rng if rng is None else rng
        if out is None:
            if len(self.host) < n:
                self.host = np.empty(max(n, int(1.25 * len(self.host))), dtype=np.bool_)
            out = self.host
        keep, ties = out[:n], []
        for lo in range(0, n, self._CHUNK):
            m = min(self._CHUNK, n - lo)
            byte = rng.bit_generator.random_raw((m + 7) // 8).view(np.uint8)[:m]
            np.less(byte, self.digit, out=keep[lo:lo + m])
            if self.tie > 0:
                ties.append(np.flatnonzero(byte == self.digit) + lo)
        if ties:
            at = np.concatenate(ties)
            keep[at] = rng.random(len(at)) < self.tie
        return torch.from_numpy(keep).view(torch.uint8)

    def draw(self, counts: np.ndarray, like: torch.Tensor, pair_segments: int = 2) -> None:
        """Draw the masks of one forward pass. ``counts`` (segments, rows): masks row i takes from each
        segment; each row draws its total from its own stream and the pieces are laid out segment by
        segment, rows in order within a segment. The first ``pair_segments`` segments are the 0/1
        interval-pair masks (taken by :class:`_Packed`); the rest are values 0 or 1 / (1 - p) handed
        out in order by :meth:`take`."""
        counts = np.asarray(counts, dtype=np.int64)
        if counts.shape[1] != len(self.streams):
            raise RuntimeError(f"masks for {counts.shape[1]} rows, but start() named {len(self.streams)} users")
        flat = counts.reshape(-1)
        at = (np.cumsum(flat) - flat).reshape(counts.shape)  # where (segment, row) starts
        total = int(flat.sum())
        if len(self.host) < total:
            self.host = np.empty(max(total, int(1.25 * len(self.host))), dtype=np.bool_)
        per_row = counts.sum(0)
        if len(self.scratch) < per_row.max(initial=0):
            self.scratch = np.empty(int(per_row.max()), dtype=np.bool_)
        for row, rng in enumerate(self.streams):
            self.keep01(int(per_row[row]), rng, self.scratch)
            offset = 0
            for segment in range(counts.shape[0]):
                m, start = int(counts[segment, row]), int(at[segment, row])
                self.host[start:start + m] = self.scratch[offset:offset + m]
                offset += m
        n_pairs = int(counts[:pair_segments].sum())
        keep = self.buffer("keep", total, like).copy_(torch.from_numpy(self.host[:total]).view(torch.uint8))
        self.pair_keep, self.other = keep[:n_pairs], keep[n_pairs:].mul_(1.0 / (1.0 - self.p))
        self.cursor = 0
        self.generation += 1

    def take(self, shape) -> torch.Tensor:
        n = math.prod(shape)
        if self.cursor + n > len(self.other):
            raise RuntimeError("more dropout masks taken than drawn")
        self.cursor += n
        return self.other[self.cursor - n:self.cursor].view(shape)

    def buffer(self, name: str, n: int, like: torch.Tensor) -> torch.Tensor:
        """A reusable flat buffer of ``n`` values (grown as needed; contents undefined)."""
        buf = self.buffers.get(name)
        if buf is None or len(buf) < n or buf.dtype != like.dtype or buf.device != like.device:
            buf = torch.empty(max(n, int(1.25 * (len(buf) if buf is not None else 0))), dtype=like.dtype,
                              device=like.device)
            self.buffers[name] = buf
        return buf[:n]


def _dropped(x: torch.Tensor, noise: _Noise | None) -> torch.Tensor:
    return x if noise is None or noise.p == 0 else x * noise.take(x.shape)


class _Factorised:
    """Interval terms without dropout: Q R_K^T gathered at the intervals; attention binned by interval."""

    def __init__(self, intervals, r_k, r_v):
        self.intervals, self.r_k, self.r_v = intervals, r_k, r_v

    def scores(self, q, logits):
        return logits + torch.gather(q @ self.r_k.T, 2, self.intervals)

    def mix(self, attn, out):
        binned = attn.new_zeros(*attn.shape[:2], self.r_v.shape[0]).scatter_add_(2, self.intervals, attn)
        return out + binned @ self.r_v


class _Coalesced:
    """Interval terms without dropout and without autograd, sparse: per query row the distinct
    intervals of its live keys (b <= a, both not padding) are the entries of a (rows x (k+1)) CSR
    matrix; Q·R_K[interval] is computed once per entry and A is summed per entry before @ R_V."""

    def __init__(self, intervals, live, r_k, r_v):
        b, length, _ = intervals.shape
        span = r_k.shape[0]
        self.shape, self.r_k, self.r_v = intervals.shape, r_k, r_v
        ordered, order = torch.where(live, intervals, span).view(b * length, length).sort(dim=1)
        first = torch.ones_like(ordered, dtype=torch.bool)
        first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        first &= ordered < span
        group = first.view(-1).cumsum(0).view(b * length, length) - 1  # entry of each sorted key
        self.entry = torch.empty_like(group).scatter_(1, order, group)  # entry of each (row, key)
        self.n = int(group[-1, -1]) + 1 if group.numel() else 0
        self.entry = torch.where(live.view(b * length, length), self.entry, self.n).view(-1)  # n: not live
        crow = torch.zeros(b * length + 1, dtype=torch.int64, device=intervals.device)
        crow[1:] = first.sum(1).cumsum(0)
        self.crow, self.columns = crow, ordered[first]

    def scores(self, q, logits):
        if self.n == 0:
            return logits
        pattern = _csr(self.crow, self.columns, q.new_zeros(self.n), (len(self.crow) - 1, self.r_k.shape[0]))
        z = torch.sparse.sampled_addmm(pattern, q.reshape(-1, q.shape[-1]), self.r_k.T, beta=0.0).values()
        return logits + torch.cat([z, z.new_zeros(1)]).index_select(0, self.entry).view(self.shape)

    def mix(self, attn, out):
        if self.n == 0:
            return out
        weights = attn.new_zeros(self.n + 1).index_add_(0, self.entry, attn.reshape(-1))[:-1]
        summed = _csr(self.crow, self.columns, weights, (len(self.crow) - 1, self.r_v.shape[0]))
        mixed = torch.sparse.mm(summed, self.r_v)
        return out + mixed.view(out.shape)


def _csr(crow, col, values, size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        return torch.sparse_csr_tensor(crow, col, values, size, check_invariants=False)


class _Pairs:
    """The live pairs of a batch (pair p: query row r(p) in B * L, interval I_p) as sparse incidence
    matrices, and the dropout state of the interval rows (buffers in ``noise``)."""

    def __init__(self, flat, length, n_rows, values, noise: _Noise, like: torch.Tensor):
        rows = flat // length  # non-decreasing: ``flat`` is row-major
        n, d = len(flat), like.shape[-1]
        self.n, self.d, self.n_rows, self.values, self.rows, self.noise = n, d, n_rows, values, rows, noise
        self.keep = {"k": noise.pair_keep[:n * d].view(n, d), "v": noise.pair_keep[n * d:2 * n * d].view(n, d)}
        self.scale = 1.0 / (1.0 - noise.p)
        self.crow = torch.zeros(n_rows + 1, dtype=torch.int64, device=flat.device)
        self.crow[1:] = torch.bincount(rows, minlength=n_rows).cumsum(0)
        self.columns = torch.arange(n, device=flat.device)
        self.crow_t = torch.arange(n + 1, device=flat.device)
        self.pattern = _csr(self.crow, self.columns, like.new_zeros(n), (n_rows, n))
        self.coo = torch.stack([rows, self.columns])
        self.written = {"k": False, "v": False}
        self.generation = noise.generation

    def by_row(self, values):
        """(rows x pairs) sparse matrix with ``values`` at (r(p), p), COO (its product with a dense
        matrix reads that matrix in one pass; measured twice as fast as the CSR product here)."""
        return torch.sparse_coo_tensor(self.coo, values, (self.n_rows, self.n), is_coalesced=True,
                                       check_invariants=False)

    def by_pair(self, values):
        """(pairs x rows) sparse matrix with ``values`` at (p, r(p))."""
        return _csr(self.crow_t, self.rows, values, (self.n, self.n_rows))

    def buffer(self, name: str, like: torch.Tensor | None = None) -> torch.Tensor:
        """The (pairs, d) buffer ``name`` of this batch (``like``: create it)."""
        if self.noise.generation != self.generation:
            raise RuntimeError("a newer forward pass reused the dropout buffers before this backward pass")
        if name.startswith("keep_"):
            return self.keep[name[-1]]
        if like is not None:
            return self.noise.buffer(name, self.n * self.d, like).view(self.n, self.d)
        return self.noise.buffers[name][:self.n * self.d].view(self.n, self.d)

    def accumulate(self, name: str, weights, dense):
        """Gradient buffer ``g<name>`` (+)= weights[p] * dense[r(p)] (first write of the batch overwrites)."""
        grad = self.buffer("g" + name, dense)
        grad.addmm_(self.by_pair(weights), dense, beta=1.0 if self.written[name] else 0.0)
        self.written[name] = True


class _Packed:
    """Interval terms with dropout for the pairs (n, a, b) in ``live`` only (b <= a, both not padding).

    Per pair p the dropped rows are DK_p = s R_K[I_p] * m_p and DV_p = s R_V[I_p] * m'_p (m, m'
    independent 0/1 masks, s = 1 / (1 - p)), drawn once per batch and shared by all blocks, kept
    unscaled in reusable (pairs, d) buffers. A block adds z_p = Q_r(p)·DK_p to its logits and
    O_r += Σ_p A_p DV_p; these and their gradients are sparse products with the (rows x pairs)
    incidence matrix, one pass over the pairs each. The gradients for DK, DV are accumulated over the
    blocks in buffers and turned into those of R_K, R_V once."""

    def __init__(self, intervals, flat, r_k, r_v, noise: _Noise):
        b, length, _ = intervals.shape
        self.shape, self.flat = intervals.shape, flat  # pair -> position in (B, L, L), row-major
        values = intervals.reshape(-1).index_select(0, self.flat)
        self.pairs = _Pairs(self.flat, length, b * length, values, noise, r_k)
        self.token = _BuildPairs.apply(r_k, r_v, self.pairs)

    def scores(self, q, logits):
        z = _PairScores.apply(q.reshape(-1, q.shape[-1]), self.token, self.pairs)
        return logits.reshape(-1).index_add(0, self.flat, z).view(self.shape)

    def mix(self, attn, out):
        w = attn.reshape(-1).index_select(0, self.flat)
        return out + _PairMix.apply(w, self.token, self.pairs).view(out.shape)


class _BuildPairs(torch.autograd.Function):
    """Draws the masks and gathers DK, DV (unscaled) into the buffers; returns a token that the
    blocks' pair products take as input. Backward: the R_K, R_V gradients from the accumulated ones."""

    @staticmethod
    def forward(ctx, r_k, r_v, pairs: _Pairs):
        for name, table in (("k", r_k), ("v", r_v)):
            torch.index_select(table, 0, pairs.values, out=pairs.buffer("d" + name, table)).mul_(pairs.keep[name])
        ctx.pairs, ctx.shapes = pairs, (r_k.shape, r_v.shape)
        return r_k.new_zeros(())

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, _token):
        pairs, grads = ctx.pairs, []
        for name, shape in zip("kv", ctx.shapes):
            dk = pairs.buffer("d" + name)
            grad = dk.new_zeros(shape)
            if pairs.written[name] and pairs.n:
                g = pairs.buffer("g" + name).mul_(pairs.buffer("keep_" + name))
                grad.index_add_(0, pairs.values, g).mul_(pairs.scale)
            grads.append(grad)
        return grads[0], grads[1], None


class _PairScores(torch.autograd.Function):
    """z_p = Q_r(p)·DK_p, (pairs,)."""

    @staticmethod
    def forward(ctx, q, token, pairs: _Pairs):
        z = torch.sparse.sampled_addmm(pairs.pattern, q, pairs.buffer("dk").T, beta=0.0).values()
        ctx.save_for_backward(q, token)
        ctx.pairs = pairs
        return z * pairs.scale

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_z):
        pairs, (q, token) = ctx.pairs, ctx.saved_tensors
        grad_z = grad_z.contiguous()
        grad_q = torch.sparse.mm(pairs.by_row(grad_z), pairs.buffer("dk")).mul_(pairs.scale)
        pairs.accumulate("k", grad_z, q)
        return grad_q, torch.zeros_like(token), None


class _PairMix(torch.autograd.Function):
    """O_r = Σ_{p in r} w_p DV_p, (rows, d)."""

    @staticmethod
    def forward(ctx, w, token, pairs: _Pairs):
        w = w.contiguous()
        out = torch.sparse.mm(pairs.by_row(w), pairs.buffer("dv")).mul_(pairs.scale)
        ctx.save_for_backward(w, token)
        ctx.pairs = pairs
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        pairs, (w, token) = ctx.pairs, ctx.saved_tensors
        grad_out = grad_out.contiguous()
        grad_w = torch.sparse.sampled_addmm(pairs.pattern, grad_out, pairs.buffer("dv").T, beta=0.0).values()
        pairs.accumulate("v", w, grad_out)
        return grad_w * pairs.scale, torch.zeros_like(token), None


class TiSASRecRecommender:
    """See the module docstring. ``generator`` seeds the initial weights and the row negatives;
    ``implementation``: "fast" (default) or "reference" (the original code), the same model."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, dim: int = 128, n_blocks: int = 2,
                 dropout: float = 0.2, max_len: int = 50, time_span: int = 256, l2_emb: float = 5e-5,
                 epochs: int = 50, batch_users: int = 16, lr: float = 1e-3, device: str = "cpu",
                 implementation: str = "fast"):
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
        self.implementation = implementation
        self.n_items, self.max_len, self.epochs, self.batch_users = n_items, max_len, epochs, batch_users
        self.lr, self.l2_emb, self.device, self.dropout = lr, l2_emb, device, dropout
        seed = int(torch.randint(0, 2**62, (1,), generator=generator)) if generator is not None else 0
        self.negative_seed = seed % (2**32)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = TiSASRecNet(n_items, dim, n_blocks, dropout, max_len, time_span)
            for name, param in self.net.named_parameters():
                if param.dim() >= 2:
                    nn.init.xavier_uniform_(param)
        self.net.to(device)

    def _instances(self, stream: Stream, with_rows: bool = False):
        """Per user with >= 2 training rows (sorted user id): seq, times, positives, negatives (maxlen each);
        ``with_rows``: also each positive's index in ``stream.train_positions`` (-1 where padded). The
        users themselves are :meth:`_instance_users`."""
        train = stream.train_positions
        rel, neg = relative_times(stream)[train], row_negatives(stream, self.negative_seed)[train]
        users, items = stream.user[train], stream.item[train] + 1
        order = np.lexsort((np.arange(len(train)), users))
        _, starts, counts = np.unique(users[order], return_index=True, return_counts=True)
        rows = [(order[s:s + c][-(self.max_len + 1):]) for s, c in zip(starts, counts) if c >= 2]
        out = np.zeros((5, len(rows), self.max_len), dtype=np.int64)
        out[4] = -1
        for r, idx in enumerate(rows):
            inp, tgt = idx[:-1], idx[1:]
            out[0, r, -len(inp):], out[1, r, -len(inp):] = items[inp], rel[inp]
            out[2, r, -len(tgt):], out[3, r, -len(tgt):] = items[tgt], neg[tgt] + 1
            out[4, r, -len(tgt):] = tgt
        return [torch.as_tensor(a, device=self.device) for a in out[:5 if with_rows else 4]]

    @staticmethod
    def _instance_users(stream: Stream) -> np.ndarray:
        """The user id of each row of :meth:`_instances` (users with >= 2 training rows, sorted)."""
        ids, counts = np.unique(stream.user[stream.train_positions], return_counts=True)
        return ids[counts >= 2]

    def _loss(self, seq, times, pos, neg, noise: _Noise | None = None):
        """Training loss of one batch; dropout: reference as the module's train/eval mode says, fast from
        ``noise`` (None: no dropout)."""
        mask = pos != 0
        if self.implementation == "reference":
            h = self.net(seq, times)
            pos_logit = (h * self.net.item(pos)).sum(-1)[mask]
            neg_logit = (h * self.net.item(neg)).sum(-1)[mask]
        else:  # the same logits, from the non-padded positions only, one lookup for both
            if torch.equal(mask, seq != 0):  # targets exactly at the input positions (always, in training)
                h = self.net.forward_fast(seq, times, noise, packed=True)
            else:
                h = self.net.forward_fast(seq, times, noise)[mask]
            targets = self.net.item.weight.index_select(0, torch.cat([pos[mask], neg[mask]])).view(2, *h.shape)
            pos_logit, neg_logit = (targets * h).sum(-1)
        loss_fn = nn.functional.binary_cross_entropy_with_logits
        loss = loss_fn(pos_logit, torch.ones_like(pos_logit)) + loss_fn(neg_logit, torch.zeros_like(neg_logit))
        return loss + self.l2_emb * sum(torch.norm(t) for t in self.net.tables())

    def fit(self, stream: Stream, checkpoint=None, resume: ResumePoint | None = None) -> dict:
        """Train on the stream's training rows; ``checkpoint(epoch, self)``, when given, is called after
        every epoch (1-based; e.g. a TracIn recorder); ``resume`` keeps the training's state between
        processes (:mod:`recunlearn.models.resume`)."""
        seq, times, pos, neg = self._instances(stream)
        fast = self.implementation == "fast"
        optimizer = torch.optim.Adam(self.net.parameters(), lr=self.lr, betas=(0.9, 0.98),
                                     **({"fused": True} if fast else {}))  # fused: one kernel, same update
        noise, users = None, self._instance_users(stream)
        if len(users) != len(seq):  # each batch row's dropout masks are drawn for its user
            raise RuntimeError(f"{len(users)} instance users for {len(seq)} training sequences")
        if fast and self.dropout > 0:
            noise = _Noise(self.dropout, int(torch.randint(0, 2**62, (1,))))
        start = time.perf_counter()
        self.net.train()
        resume, curve, start = resume_epochs(resume, start, net=self.net, optimizer=optimizer,
                                             checkpoint=stateful(checkpoint))
        for epoch in range(len(curve), self.epochs):
            total = 0.0
            for lo in range(0, len(seq), self.batch_users):
                sl = slice(lo, lo + self.batch_users)
                if noise is not None:
                    noise.start(epoch, users[sl])
                loss = self._loss(seq[sl], times[sl], pos[sl], neg[sl], noise)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item()
            curve.append(total)
            if checkpoint is not None:
                checkpoint(epoch + 1, self)
            resume.epoch_done(epoch + 1, self.epochs, curve=curve, train_seconds=time.perf_counter() - start)
        resume.finish()
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    @torch.no_grad()
    def last_layer_terms(self, stream: Stream, lr: float, chunk: int = 64) -> dict:
        """TracIn's terms of every training row at the current weights (dropout off, no gradient). TiSASRec
        has no output layer, so the gradient is taken at the final hidden state h of the position whose
        target is the row, with its positive and negative item embeddings (:mod:`recunlearn.perturb.tracin`);
        the proxy's terms are ‖h‖² and ‖(s⁺ - 1, s⁻)‖². Rows that are no training target (a user's first
        row, rows before the last ``max_len`` + 1) get no gradient: all terms 0. Changes nothing."""
        from ...perturb import tracin

        seq, times, pos, neg, target_rows = self._instances(stream, with_rows=True)
        was_training = self.net.training
        self.net.eval()
        out = {key: np.zeros(len(stream.train_positions)) for key in ("influence", "feature_sq", "error_sq")}
        for lo in range(0, len(seq), chunk):
            sl = slice(lo, lo + chunk)
            h = self.net(seq[sl], times[sl]) if self.implementation == "reference" else \
                self.net.forward_fast(seq[sl], times[sl])
            mask = pos[sl] != 0
            h, e_pos, e_neg = h[mask], self.net.item(pos[sl][mask]), self.net.item(neg[sl][mask])
            s_pos, s_neg = (h * e_pos).sum(1).double(), (h * e_neg).sum(1).double()
            terms = tracin.last_layer_terms(tracin.bce_hidden_self_influence(h, e_pos, e_neg, lr),
                                            h.double().pow(2).sum(1), (s_pos - 1).pow(2) + s_neg.pow(2))
            rows = target_rows[sl][mask].cpu().numpy()
            for key in out:
                out[key][rows] = terms[key]
        self.net.train(was_training)
        return out

    @torch.no_grad()
    def test_scores(self, stream: Stream, chunk: int = 256):
        """Yield ``(source rows, targets, scores)`` of the test rows in stream order; scores (b, |I|)."""
        self.net.eval()
        rel, test = relative_times(stream), stream.test_positions
        if self.implementation == "reference":
            windows = user_windows(stream.user, stream.item, self.max_len)[test]
            time_windows = user_windows(stream.user, rel - 1, self.max_len)[test]  # tokens = rel (0 where padded)
        else:  # the same windows, for the test rows only
            windows = windows_at(stream.user, stream.item, test, self.max_len)
            time_windows = windows_at(stream.user, rel - 1, test, self.max_len)
        items = self.net.item.weight[1:]
        for lo in range(0, len(test), chunk):
            part = test[lo:lo + chunk]
            seq = torch.as_tensor(windows[lo:lo + chunk], device=self.device)
            times = torch.as_tensor(time_windows[lo:lo + chunk], device=self.device)
            if self.implementation == "reference":
                h = self.net(seq, times)[:, -1]
            else:
                h = self.net.last_states(seq, times)
            yield stream.row[part], stream.item[part], h @ items.T

    def probe(self, stream: Stream, batch: int = 0) -> dict[str, torch.Tensor]:
        """From the current weights with dropout off: the loss of training batch ``batch``, its gradient
        for every trainable parameter (``grad/<name>``) and the scores of the first test chunk. Leaves
        the weights, their ``.grad`` and the module's train/eval mode as they were."""
        seq, times, pos, neg = self._instances(stream)
        sl = slice(batch * self.batch_users, (batch + 1) * self.batch_users)
        was_training = self.net.training
        self.net.eval()
        try:
            named = [(n, p) for n, p in self.net.named_parameters() if p.requires_grad]
            loss = self._loss(seq[sl], times[sl], pos[sl], neg[sl])
            grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
            out = {"loss": loss.detach()}
            for (name, param), g in zip(named, grads):
                out[f"grad/{name}"] = torch.zeros_like(param) if g is None else g
            scores = self.test_scores(stream)
            out["scores"] = next(scores, (None, None, torch.zeros(0, self.n_items)))[2].clone()
            scores.close()
        finally:
            self.net.train(was_training)
        return out
