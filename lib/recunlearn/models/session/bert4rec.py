"""BERT4Rec as the SRU authors' code runs it: a bidirectional Transformer trained by cloze on each prefix.

Follows the authors' code (``models/bert4rec.py``, ``dataloaders/bert4rec.py``, ``options.py``):

- vocabulary ``n_items + 2``: 0 = padding, ``n_items + 1`` = [mask]; input = token embedding
  (``padding_idx=0``) + learned positional embedding of the window position, then dropout
  ``dropout`` = 0.2 (the code's ``bert_dropout``); the dropout inside the blocks is 0 (hard-coded in
  the code), ``block_dropout`` here;
- ``n_blocks`` = 2 blocks, ``n_heads`` = 4 heads, FFN ``ffn_size`` = 4d = 256 with GELU;
  bidirectional attention with a key-padding mask (padded positions are never attended to);
- output ``Linear(d -> n_items + 1)`` applied to the states (the [mask] id is not a class);
- **training** (:meth:`BERT4Rec.training_loss`): every training pair's *input window* (the prefix,
  last ``maxlen`` items) is masked by cloze: each real item independently with probability
  ``mask_prob`` = 0.3; a chosen item becomes [mask] with probability 0.8, a uniform random item of
  1..n_items with 0.1, and stays itself with 0.1 (:func:`cloze_mask`); cross-entropy of the original
  items at the chosen positions, averaged over all chosen positions of the batch. The pair's next
  item is **not** a label (as in the code): in training a session's last item is never predicted;
- **prediction** (:meth:`BERT4Rec.hidden`, :meth:`BERT4Rec.scores`): [mask] is appended to the
  window, which is shifted left by one (the oldest item drops out when the window is full), and the
  state at the last position (the [mask]) is the hidden state. So ``hidden(w)`` depends only on the
  last ``maxlen - 1`` items of ``w``, and it is the state the next item is predicted from, the one
  an aggregator or a partition uses, like the final state of the causal models;
- ``item_embeddings()`` is the token table without the [mask] row, ``(n_items + 1, d)`` (as the code).

Decisions (the code imports a ``models/bert_modules`` package that is not in its repository, so the
layout inside a block is not known from the code): pre-LayerNorm residual sub-layers
``x + drop(attn(LN(x)))`` and ``x + drop(ffn(LN(x)))`` (eps 1e-6) and no final LayerNorm, the layout
of the common PyTorch BERT4Rec implementation whose module names the code uses; exact (erf) GELU;
padded keys get a large finite negative logit (a window is never all padding: the [mask] is always
there at prediction and a training prefix holds at least one item). The cloze draws come from the
trainer's generator (the code uses a Python ``random.Random``), so a run is reproducible.

The fast implementation (:mod:`.base`) also groups each batch's windows by length
(:func:`~.base.length_buckets`) and runs the blocks on each group's last ``width``
positions only: padded keys are masked, so the left-out positions change no state that is used, and
the loss and the hidden state are the same function (on Games about half the (window, position)
pairs of a full window are padding). The output layer is applied only at the chosen (masked)
positions in both implementations.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ..output_layer import linear_cross_entropy
from .base import SessionModel, SessionModelError, dropout, length_buckets, positive_int, probability, seeded_from

_MASKED = -1e9


def cloze_mask(windows: torch.Tensor, n_items: int, mask_prob: float,
               generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT4Rec's cloze corruption of left-padded windows: returns ``(tokens, labels)``.

    Each non-padding position is chosen independently with probability ``mask_prob``; a chosen
    position's token becomes [mask] (``n_items + 1``) with probability 0.8, a uniform item of
    1..n_items with 0.1, or stays with 0.1 (one uniform draw u: chosen if u < p; then u / p < 0.8,
    < 0.9, else). ``labels`` holds the original item at chosen positions and 0 elsewhere. The draws
    are made on the CPU from ``generator`` (the same on any device)."""
    shape = windows.shape
    u = torch.rand(shape, generator=generator).to(windows.device)
    random_items = torch.randint(1, n_items + 1, shape, generator=generator).to(windows.device)
    chosen = (u < mask_prob) & (windows != 0)
    v = u / mask_prob
    tokens = torch.where(chosen & (v < 0.8), torch.full_like(windows, n_items + 1), windows)
    tokens = torch.where(chosen & (v >= 0.8) & (v < 0.9), random_items, tokens)
    labels = torch.where(chosen, windows, torch.zeros_like(windows))
    return tokens, labels


class BidirectionalBlock(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float, fast: bool = False):
        super().__init__()
        self.heads, self.dropout, self.fast = heads, dropout, fast
        self.ln_attn, self.ln_ffn = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ffn_in, self.ffn_out = nn.Linear(d, ffn), nn.Linear(ffn, d)

    def attention(self, x: torch.Tensor, blocked: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        h = self.heads
        q, k, v = (layer(x).view(b, length, h, d // h).transpose(1, 2) for layer in (self.q, self.k, self.v))
        logits = (q @ k.transpose(-1, -2)) / math.sqrt(d // h)
        weights = torch.softmax(logits.masked_fill(blocked, _MASKED), dim=-1)
        weights = self.drop(weights)
        return self.o((weights @ v).transpose(1, 2).reshape(b, length, d))

    def drop(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.dropout, self.training, self.fast)

    def forward(self, x: torch.Tensor, blocked: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attention(self.ln_attn(x), blocked))
        h = self.ffn_out(self.drop(F.gelu(self.ffn_in(self.ln_ffn(x)))))
        return self.drop(x + self.drop(h))


class BERT4Rec(SessionModel):
    """See the module docstring. Hyper-parameters: ``hidden_size`` (64), ``n_blocks`` (2),
    ``n_heads`` (4), ``ffn_size`` (256), ``dropout`` (0.2, embedding), ``block_dropout`` (0.0),
    ``mask_prob`` (0.3)."""

    name = "bert4rec"
    DEFAULTS = {"hidden_size": 64, "n_blocks": 2, "n_heads": 4, "ffn_size": 256, "dropout": 0.2,
                "block_dropout": 0.0, "mask_prob": 0.3}

    def __init__(self, n_items: int, maxlen: int, generator: torch.Generator | None = None,
                 implementation: str = "fast", **hyper):
        super().__init__(n_items, maxlen, hyper, implementation)
        d = positive_int("hidden_size", self.hyper["hidden_size"])
        blocks = positive_int("n_blocks", self.hyper["n_blocks"])
        heads = positive_int("n_heads", self.hyper["n_heads"])
        ffn = positive_int("ffn_size", self.hyper["ffn_size"])
        if d % heads:
            raise SessionModelError(f"n_heads must divide hidden_size={d}, got {heads}")
        self.dropout = probability("dropout", self.hyper["dropout"])
        block_dropout = probability("block_dropout", self.hyper["block_dropout"])
        self.mask_prob = probability("mask_prob", self.hyper["mask_prob"], allow_zero=False, allow_one=True)
        self.mask_token = self.n_items + 1
        with seeded_from(generator):
            self.token_emb = nn.Embedding(self.n_items + 2, d, padding_idx=0)
            self.pos_emb = nn.Embedding(self.maxlen, d)
            self.blocks = nn.ModuleList(BidirectionalBlock(d, heads, ffn, block_dropout, self.fast)
                                        for _ in range(blocks))
            self.output = nn.Linear(d, self.n_items + 1)

    def sequence_states(self, tokens: torch.Tensor) -> torch.Tensor:
        """States ``(B, maxlen, d)`` of token windows (items, 0 = padding, ``n_items + 1`` = [mask])."""
        tokens = self.check_windows(tokens)
        return self._states(tokens, self.pos_emb.weight)

    def _states(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        x = dropout(self.token_emb(tokens) + positions, self.dropout, self.training, self.fast)
        blocked = (tokens == 0)[:, None, None, :]
        for block in self.blocks:
            x = block(x, blocked)
        return x

    def bucket_states(self, tokens: torch.Tensor):
        """Fast path: ``(rows, width, states)`` per length bucket (:func:`~.base.length_buckets`):
        the states ``(len(rows), width, d)`` of the last ``width`` positions of those rows, which
        equal the last ``width`` positions of :meth:`sequence_states` (the positions left out are
        padding, never attended to)."""
        tokens = self.check_windows(tokens)
        for rows, width in length_buckets(tokens):
            yield rows, width, self._states(tokens.index_select(0, rows)[:, -width:], self.pos_emb.weight[-width:])

    def prediction_tokens(self, windows: torch.Tensor) -> torch.Tensor:
        """The window shifted left by one with [mask] appended."""
        windows = self.check_windows(windows)
        return torch.cat([windows[:, 1:], torch.full_like(windows[:, :1], self.mask_token)], dim=1)

    def hidden(self, windows: torch.Tensor) -> torch.Tensor:
        tokens = self.prediction_tokens(windows)
        if not self.fast:
            return self.sequence_states(tokens)[:, -1]
        parts = list(self.bucket_states(tokens))
        order = torch.cat([rows for rows, _, _ in parts])
        return torch.cat([states[:, -1] for _, _, states in parts])[torch.argsort(order)]

    def item_embeddings(self) -> torch.Tensor:
        return self.token_emb.weight[:-1]

    def training_loss(self, windows: torch.Tensor, targets: torch.Tensor | None = None,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        """Cloze loss of the batch's input windows (``targets`` are not used, as in the authors' code)."""
        tokens, labels = cloze_mask(self.check_windows(windows), self.n_items, self.mask_prob, generator)
        if self.fast:
            picked, targets = [], []
            for rows, width, states in self.bucket_states(tokens):
                part = labels.index_select(0, rows)[:, -width:]
                chosen = part != 0
                picked.append(states[chosen])
                targets.append(part[chosen])
            states, targets = torch.cat(picked), torch.cat(targets)
            if not len(targets):
                return states.sum() * 0.0
            return linear_cross_entropy(states, self.output.weight, self.output.bias, targets)
        chosen = labels != 0
        states = self.sequence_states(tokens)
        if not bool(chosen.any()):
            return states.sum() * 0.0
        return F.cross_entropy(self.output(states[chosen]), labels[chosen])
