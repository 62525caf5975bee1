"""SASRec as the SRU authors' code runs it: the widely used PyTorch port with a full-softmax output.

Follows the authors' code (``models/sasrec.py``):

- input: ``item_emb(w) * sqrt(d) + pos_emb(0..maxlen-1)`` (learned positions, absolute within the
  left-padded window), dropout, then padded positions set to zero;
- ``n_blocks`` (2) blocks, each: ``Q = LayerNorm(x)``; multi-head attention (``n_heads`` = 1) with
  queries ``Q`` and keys / values ``x`` (not normalised), a causal mask and **no key-padding mask**
  (padded positions take part as zero vectors), dropout on the attention weights; residual on the
  normalised query ``x = Q + attn``; ``x = LayerNorm(x)``; point-wise FFN of two 1x1 convolutions
  ``x + drop(conv2(relu(drop(conv1(x)))))``; padded positions set to zero again;
- a final LayerNorm (eps 1e-8 everywhere); the hidden state is its output at the last position;
  logits = ``Linear(d -> n_items + 1)`` of it (the code's full-softmax output layer, not the dot
  product with the item table of the original SASRec); cross-entropy of the next item at the last
  position;
- ``dropout`` = 0.5 for the embedding, attention weights and FFN, as the code's ``dropout_rate``.

Decisions:

- The attention is written out here (same function as ``torch.nn.MultiheadAttention`` with its
  initialisation: xavier-uniform input projection, zero biases), with the causal mask as a large
  finite negative logit; the 1x1 convolutions keep their ``Conv1d`` parameters and run as the
  equivalent linear maps. All other layers use PyTorch's default initialisation, as the code.
- Because padding keys are not masked, the state depends on the number of padded positions (a
  function of the prefix for a fixed window), but not on the padding row of the item table nor on the
  positional embeddings of padded positions: padded inputs are zeroed before the first block.

The fast implementation (:mod:`.base`: fused output layer, blocked rankings, cheaper dropout masks)
also groups each batch's windows by length (:func:`~.base.length_buckets`) and runs the blocks on
each group's last ``width`` positions only. Without a key-padding mask the trimmed padding still
matters, but exactly: a padded position's block input is zero, so its key and value are the biases
``b_k``, ``b_v`` in every block, and all of them precede every kept query. Together they are one
extra key with logit ``q . b_k / sqrt(d_h) + log(count)`` and value ``b_v``; the attention dropout
on the trimmed keys (independent Bernoulli keep masks of equal weights and values) is, summed, a
``Binomial(count, 1 - p) / (count (1 - p))`` factor on that key -- the same distribution.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from .base import SessionModel, SessionModelError, dropout, length_buckets, positive_int, probability, seeded_from

_MASKED = -1e9


class SelfAttention(nn.Module):
    """Multi-head scaled dot-product attention with a boolean ``blocked`` mask (True = not attended)."""

    def __init__(self, d: int, heads: int, dropout: float, fast: bool = False):
        super().__init__()
        self.heads, self.dropout, self.fast = heads, dropout, fast
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        self.out_proj = nn.Linear(d, d)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, query: torch.Tensor, key_value: torch.Tensor, blocked: torch.Tensor,
                left_out: int = 0) -> torch.Tensor:
        """``left_out`` (fast path): that many zero key / value inputs precede the given positions
        (padding trimmed from the window) and are attended to by every query: each has the key
        ``b_k`` and the value ``b_v``, so together they are one key with logit ``q . b_k / sqrt(d_h) +
        log(left_out)`` and value ``b_v``, whose attention-dropout factor is ``Binomial(left_out,
        1 - p) / (left_out (1 - p))`` (the sum of their independent keep masks)."""
        b, length, d = query.shape
        w_q, w_kv = self.in_proj_weight.split([d, 2 * d])
        b_q, b_kv = self.in_proj_bias.split([d, 2 * d])
        q = F.linear(query, w_q, b_q)
        k, v = F.linear(key_value, w_kv, b_kv).chunk(2, dim=-1)
        h = self.heads
        q, k, v = (t.view(b, length, h, d // h).transpose(1, 2) for t in (q, k, v))
        logits = (q @ k.transpose(-1, -2)) / math.sqrt(d // h)
        logits = logits.masked_fill(blocked, _MASKED)
        if left_out:
            pad_k, pad_v = (t.view(h, 1, d // h) for t in b_kv.chunk(2))
            pad_logit = (q * pad_k).sum(-1, keepdim=True) / math.sqrt(d // h) + math.log(left_out)
            weights = torch.softmax(torch.cat([logits, pad_logit], -1), dim=-1)
            pad_weight = weights[..., length:]
            weights = dropout(weights[..., :length], self.dropout, self.training, self.fast)
            if self.training and self.dropout > 0:
                keep = 1.0 - self.dropout
                kept = torch.binomial(torch.full_like(pad_weight, float(left_out)), torch.full_like(pad_weight, keep))
                pad_weight = pad_weight * (kept / (left_out * keep))
            out = torch.addcmul(weights @ v, pad_weight, pad_v.unsqueeze(0))
        else:
            weights = torch.softmax(logits, dim=-1)
            weights = dropout(weights, self.dropout, self.training, self.fast)
            out = weights @ v
        return self.out_proj(out.transpose(1, 2).reshape(b, length, d))


class SASRecBlock(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float, fast: bool = False):
        super().__init__()
        self.ln_attn = nn.LayerNorm(d, eps=1e-8)
        self.attn = SelfAttention(d, heads, dropout, fast)
        self.ln_ffn = nn.LayerNorm(d, eps=1e-8)
        self.conv1, self.conv2 = nn.Conv1d(d, d, 1), nn.Conv1d(d, d, 1)
        self.dropout, self.fast = dropout, fast

    def forward(self, x: torch.Tensor, causal: torch.Tensor, keep: torch.Tensor, left_out: int = 0) -> torch.Tensor:
        q = self.ln_attn(x)
        x = self.ln_ffn(q + self.attn(q, x, causal, left_out))
        h = F.linear(x, self.conv1.weight.squeeze(-1), self.conv1.bias)
        h = torch.relu(dropout(h, self.dropout, self.training, self.fast))
        h = F.linear(h, self.conv2.weight.squeeze(-1), self.conv2.bias)
        return (x + dropout(h, self.dropout, self.training, self.fast)) * keep


class SASRec(SessionModel):
    """See the module docstring. Hyper-parameters: ``hidden_size`` (64), ``n_blocks`` (2),
    ``n_heads`` (1), ``dropout`` (0.5)."""

    name = "sasrec"
    DEFAULTS = {"hidden_size": 64, "n_blocks": 2, "n_heads": 1, "dropout": 0.5}

    def __init__(self, n_items: int, maxlen: int, generator: torch.Generator | None = None,
                 implementation: str = "fast", **hyper):
        super().__init__(n_items, maxlen, hyper, implementation)
        d = positive_int("hidden_size", self.hyper["hidden_size"])
        blocks = positive_int("n_blocks", self.hyper["n_blocks"])
        heads = positive_int("n_heads", self.hyper["n_heads"])
        if d % heads:
            raise SessionModelError(f"n_heads must divide hidden_size={d}, got {heads}")
        self.dropout = probability("dropout", self.hyper["dropout"])
        with seeded_from(generator):
            self.item_emb = nn.Embedding(self.n_items + 1, d, padding_idx=0)
            self.pos_emb = nn.Embedding(self.maxlen, d)
            self.blocks = nn.ModuleList(SASRecBlock(d, heads, self.dropout, self.fast) for _ in range(blocks))
            self.last_ln = nn.LayerNorm(d, eps=1e-8)
            self.output = nn.Linear(d, self.n_items + 1)
        self.register_buffer("causal", torch.ones(self.maxlen, self.maxlen, dtype=torch.bool).triu(1),
                             persistent=False)

    def sequence_states(self, windows: torch.Tensor) -> torch.Tensor:
        """States ``(B, maxlen, d)`` of every position (the last one is :meth:`hidden`)."""
        windows = self.check_windows(windows)
        keep = (windows != 0).unsqueeze(-1).to(self.pos_emb.weight.dtype)
        x = self.item_emb(windows) * math.sqrt(self.hidden_size) + self.pos_emb.weight
        x = dropout(x, self.dropout, self.training, self.fast) * keep
        for block in self.blocks:
            x = block(x, self.causal, keep)
        return self.last_ln(x)

    def hidden(self, windows: torch.Tensor) -> torch.Tensor:
        if not self.fast:
            return self.sequence_states(windows)[:, -1]
        windows = self.check_windows(windows)
        parts, order = [], []
        for rows, width in length_buckets(windows):
            part = windows.index_select(0, rows)[:, -width:]
            keep = (part != 0).unsqueeze(-1).to(self.pos_emb.weight.dtype)
            x = self.item_emb(part) * math.sqrt(self.hidden_size) + self.pos_emb.weight[-width:]
            x = dropout(x, self.dropout, self.training, self.fast) * keep
            causal = self.causal[-width:, -width:]
            for block in self.blocks:
                x = block(x, causal, keep, self.maxlen - width)
            parts.append(self.last_ln(x[:, -1]))
            order.append(rows)
        return torch.cat(parts)[torch.argsort(torch.cat(order))]

    def item_embeddings(self) -> torch.Tensor:
        return self.item_emb.weight
