"""GRU4Rec as the SRU authors' code runs it: an item embedding, one GRU layer and a full-softmax output.

Follows the authors' code (``models/gru4rec.py``):

- item embedding ``(n_items + 1, embedding_size)`` with ``padding_idx=0`` (row 0 is zero and gets no
  gradient), one batch-first GRU layer ``embedding_size -> hidden_size``, no dropout;
- the GRU runs over the whole left-padded window, padding included: a padded step feeds a zero
  vector, which still moves the GRU state through its biases, so the state depends on how many
  padding steps precede the first item (windows have a fixed length, so this is a function of the
  prefix);
- the hidden state is the GRU output at the last position; logits = ``Linear(hidden_size ->
  n_items + 1)`` of it; the loss is cross-entropy of the next item at the last position;
- 64 / 64 by default (the code's ``hidden_units`` is both sizes); PyTorch's default initialisation.

The fast implementation (:mod:`.base`: fused output layer, blocked rankings) also runs the GRU
without repeating the padding (:class:`GRURecurrence`): every window's leading padding steps feed
the same zero input from the same zero state, so they give the same states for every window. One
extra "padding row" runs that chain once; a window joins at its first item, from the padding row's
state after as many steps as it has padding, and only then costs work (on Games' training windows
45 % of the (window, step) pairs are padding). The input projection is one product over the real
items; the recurrence's backward pass is written out, with one product for the recurrent weight's
gradient per batch.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .base import SessionModel, positive_int, seeded_from


class GRURecurrence(torch.autograd.Function):
    """The GRU over windows sorted by their padding (fewest first), without repeating the padding.

    ``x`` (T, 3d): ``W_ih x_t + b_ih`` of the real items in step-major order (step 0's active rows,
    then step 1's, ...); ``pad_input`` (3d,): the same of a padding step (``b_ih``); ``counts[t]``:
    rows active at step t (those with at most t padding steps: a prefix of the sorted rows);
    ``n_rows``: all rows (rows never active, all padding, end with the padding row's state). Returns
    the final states (n_rows, d). State row 0 is the padding chain; a row joining at step t starts
    from row 0's state before step t. Gates as ``torch.nn.GRU`` (r, z, n)."""

    @staticmethod
    def forward(ctx, x, pad_input, w_hh, b_hh, counts, n_rows):
        d = w_hh.shape[1]
        sizes = [1 + c for c in counts]
        total = sum(sizes)
        h_prev, gates, cand, gh_n = (x.new_empty(total, d), x.new_empty(total, 2 * d), x.new_empty(total, d),
                                     x.new_empty(total, d))
        state = x.new_zeros(n_rows + 1, d)
        w_t, joined, at, read = w_hh.t(), 0, 0, 0
        for count, m in zip(counts, sizes):
            if count > joined:
                state[1 + joined:1 + count] = state[0]
                joined = count
            h = h_prev[at:at + m]
            h.copy_(state[:m])
            gi = torch.cat([pad_input[None], x[read:read + count]])
            gh = torch.addmm(b_hh, h, w_t)
            rz = torch.sigmoid(gi[:, :2 * d] + gh[:, :2 * d], out=gates[at:at + m])
            gh_n[at:at + m] = gh[:, 2 * d:]
            n = torch.addcmul(gi[:, 2 * d:], rz[:, :d], gh[:, 2 * d:], out=cand[at:at + m]).tanh_()
            state[:m] = torch.addcmul(n, rz[:, d:], h - n)
            at, read = at + m, read + count
        if joined < n_rows:
            state[1 + joined:] = state[0]
        ctx.save_for_backward(h_prev, gates, cand, gh_n, w_hh)
        ctx.counts, ctx.n_rows, ctx.joined = counts, n_rows, joined
        return state[1:].clone()

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        h_prev, gates, cand, gh_n, w_hh = ctx.saved_tensors
        d, counts = w_hh.shape[1], ctx.counts
        grad_state = grad_out.new_zeros(ctx.n_rows + 1, d)
        grad_state[1:] = grad_out
        if ctx.joined < ctx.n_rows:
            grad_state[0] += grad_out[ctx.joined:].sum(0)
        total = h_prev.shape[0]
        grad_gh = grad_out.new_empty(total, 3 * d)   # d loss / d (W_hh h + b_hh), per step and row
        grad_x = grad_out.new_empty(sum(counts), 3 * d)
        grad_pad = grad_out.new_zeros(3 * d)
        at, read = total, grad_x.shape[0]
        for t in range(len(counts) - 1, -1, -1):
            count = counts[t]
            m = 1 + count
            at, read = at - m, read - count
            h, rz, n, ghn = h_prev[at:at + m], gates[at:at + m], cand[at:at + m], gh_n[at:at + m]
            r, z = rz[:, :d], rz[:, d:]
            dh = grad_state[:m]
            dn = (dh - dh * z) * (1 - n * n)                # through h' = n + z (h - n) and n = tanh(.)
            dz = dh * (h - n) * z * (1 - z)
            dr = dn * ghn * r * (1 - r)
            g = grad_gh[at:at + m]
            torch.cat([dr, dz, dn * r], 1, out=g)
            grad_x[read:read + count] = torch.cat([dr[1:], dz[1:], dn[1:]], 1)
            grad_pad += torch.cat([dr[0], dz[0], dn[0]])
            grad_state[:m] = torch.addmm(dh * z, g, w_hh)
            joined = counts[t - 1] if t else 0
            if count > joined:  # rows that joined at step t started from the padding row's state
                grad_state[0] += grad_state[1 + joined:1 + count].sum(0)
        grad_w = grad_gh.t() @ h_prev
        return grad_x, grad_pad, grad_w, grad_gh.sum(0), None, None


class GRU4Rec(SessionModel):
    """See the module docstring. Hyper-parameters: ``hidden_size`` (64), ``embedding_size`` (64)."""

    name = "gru4rec"
    DEFAULTS = {"hidden_size": 64, "embedding_size": 64}

    def __init__(self, n_items: int, maxlen: int, generator: torch.Generator | None = None,
                 implementation: str = "fast", **hyper):
        super().__init__(n_items, maxlen, hyper, implementation)
        d = positive_int("hidden_size", self.hyper["hidden_size"])
        e = positive_int("embedding_size", self.hyper["embedding_size"])
        with seeded_from(generator):
            self.item_emb = nn.Embedding(self.n_items + 1, e, padding_idx=0)
            self.gru = nn.GRU(e, d, batch_first=True)
            self.output = nn.Linear(d, self.n_items + 1)

    def hidden(self, windows: torch.Tensor) -> torch.Tensor:
        windows = self.check_windows(windows)
        if not self.fast:
            states, _ = self.gru(self.item_emb(windows))
            return states[:, -1]
        length = windows.shape[1]
        nonzero = windows != 0
        padding = torch.where(nonzero.any(1), nonzero.int().argmax(1), length)
        order = torch.argsort(padding, stable=True)
        counts = torch.searchsorted(padding[order], torch.arange(length, device=windows.device), right=True)
        sorted_windows = windows.index_select(0, order)
        active = torch.arange(length, device=windows.device)[:, None] >= padding[order][None, :]  # (L, B)
        items = sorted_windows.t()[active]  # step-major: step 0's active rows, then step 1's, ...
        gru = self.gru
        x = F.linear(self.item_emb(items), gru.weight_ih_l0, gru.bias_ih_l0)
        final = GRURecurrence.apply(x, gru.bias_ih_l0, gru.weight_hh_l0, gru.bias_hh_l0, counts.tolist(), len(windows))
        return final[torch.argsort(order)]

    def item_embeddings(self) -> torch.Tensor:
        return self.item_emb.weight
