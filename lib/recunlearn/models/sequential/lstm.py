"""The CASPER authors' LSTM next-item model, in PyTorch.

- Every row of the full stream (train and test, chronological) is one example: input = the user's
  previous ``max_len - 1`` item tokens (token = item + 1, 0 = padding, left-padded), target = the
  row's item. Training rows train; test rows are scored with earlier test items in their input
  (teacher forcing). A user's first row has an all-padding input.
- Item embeddings ``Embedding(|I|+1, 128, padding_idx=0)`` are **frozen** N(0, 1) vectors: the
  released code embeds every window once before training and detaches it, so "embedding 128" is a
  fixed random input projection. ``trainable_embeddings=True`` is the variant that trains them.
- ``LSTM(128 -> 64)`` from a zero state, the last output -> ``Linear(64 -> |I|+1)``; softmax
  cross-entropy; Adam(lr 1e-3, weight decay 1e-5); 50 epochs of mini-batches of 1,024
  **consecutive** training examples in chronological order, no shuffling (so a deletion or
  insertion shifts the batch boundaries of every later example; the released code's trailing empty
  batch is skipped).
- Scores are the logits of the |I| real items (padding class excluded). Softmax is monotone,
  so the rank list equals the authors' ranking by probability up to ties.

Two implementations of the same network (same parameters, same initial draw, same training protocol):
``implementation="reference"`` runs ``nn.LSTM`` over every window (the original code, bit-identical
results); ``implementation="fast"`` (the default) computes the same function with less work, equal up
to float32 rounding:

- the input projection of a token, ``W_ih·emb[token] + b_ih + b_hh``, is read from a table
  ``emb @ W_ih^T + b`` of all |I|+1 tokens, built once per batch (the weights change every step);
- windows that agree on their first k tokens (padding included) have the same state after k steps,
  so each distinct prefix of a batch is computed once (a prefix tree, from the windows sorted
  lexicographically). This covers the leading padding, which is not a no-op (the state moves with
  the biases) but is the same for every window; on Wikipedia about 63% of the (window, step) states
  remain;
- the recurrence is a hand-written autograd function with an explicit backward through time over
  reused buffers: per step one ``h @ W_hh^T`` (oneDNN where available: AVX-512 on CPUs where the
  default BLAS uses narrower vectors), stored gate factors, ``dW_hh`` accumulated per step, the
  table gradient by ``index_add``; tanh is evaluated as ``2·sigmoid(2x) - 1`` with exact power-of-two
  scalings (the CPU sigmoid kernel is several times faster than tanh);
- the output layer and the cross-entropy are one function over reused buffers.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import torch
from torch import nn

from ...data.sequences import Stream
from ..resume import ResumePoint, resume_epochs, stateful


def user_windows(user: np.ndarray, item: np.ndarray, length: int) -> np.ndarray:
    """For each row (in the given order): the item tokens (item + 1) of the same user's previous
    ``length`` rows, left-padded with 0, shape (N, length), int64."""
    n = len(user)
    order = np.argsort(user, kind="stable")
    _, starts, counts = np.unique(user[order], return_index=True, return_counts=True)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, counts)  # position within the user's rows
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)  # position in the user-grouped order
    tokens = (item[order] + 1).astype(np.int64)
    out = np.zeros((n, length), dtype=np.int64)
    for back in range(1, length + 1):  # column length - back holds the token `back` rows earlier
        ok = rank >= back
        out[ok, length - back] = tokens[where[ok] - back]
    return out


IMPLEMENTATIONS = ("fast", "reference")
"""Allowed values of the ``implementation`` keyword."""


# ----------------------------------------------------------------------------------------------
# Fast path (module docstring). Gate order and weight layout are PyTorch's (i, f, g, o).
# ----------------------------------------------------------------------------------------------


class _Plan:
    """The prefix tree of a batch of windows: which LSTM states are distinct at each step.

    Two windows that agree on their first t + 1 tokens (padding included) have the same state after
    step t, so each distinct prefix (a *node*) is computed once. With the windows sorted
    lexicographically, the nodes of step t are runs of rows; ``counts[t]`` nodes, whose input tokens
    are ``tokens`` (packed over steps, ``offsets[t]`` where step t starts) and whose previous state
    is that of node ``parents`` (index within step t - 1; step 0 starts from the zero state).
    ``source[j]`` is the last-step node of window j. The all-padding prefix is one node per step: the
    state while reading padding is computed once and shared."""

    def __init__(self, windows: torch.Tensor):
        x = windows.detach().cpu().numpy()
        n, length = x.shape
        order = np.lexsort(x.T[::-1])
        xs = x[order]
        new = np.zeros(n, dtype=bool)
        new[:1] = True
        counts, tokens, parents, ids = [], [], [], np.zeros(n, dtype=np.int64)
        for t in range(length):
            new[1:] |= xs[1:, t] != xs[:-1, t]
            firsts = np.flatnonzero(new)
            counts.append(len(firsts))
            tokens.append(xs[firsts, t])
            parents.append(ids[firsts])  # node ids of step t - 1 (all 0 at step 0: unused)
            ids = np.cumsum(new) - 1
        source = np.empty(n, dtype=np.int64)
        source[order] = ids
        device = windows.device
        self.counts, self.length, self.width = counts, length, max(counts, default=0)
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).tolist()
        self.tokens = torch.as_tensor(np.concatenate(tokens), device=device)
        self.parents = torch.as_tensor(np.concatenate(parents), device=device)
        self.source = torch.as_tensor(source, device=device)


def _onednn_linear():
    """``x @ w^T`` through oneDNN (mkldnn), which uses AVX-512 where the default BLAS may not; None
    where that operator is missing or disagrees with ``torch.mm`` on a small check."""
    try:
        op = torch.ops.mkldnn._linear_pointwise.default
        gen = torch.Generator().manual_seed(0)
        x, w = torch.randn(37, 64, generator=gen), torch.randn(48, 64, generator=gen)
        if torch.allclose(op(x, w, None, "none", [], ""), x @ w.t(), rtol=1e-5, atol=1e-5):
            return lambda x, w: op(x, w, None, "none", [], "")
    except Exception:  # noqa: BLE001 -- any failure: use torch.mm
        pass
    return None


_ONEDNN_LINEAR = _onednn_linear() if torch.backends.mkldnn.is_available() else None

_ROWS = 32
"""oneDNN builds (and caches) a kernel per matrix shape, which costs more than the product at these
sizes; products over the active windows are therefore taken over a row count rounded up to a multiple
of this (reading a few extra buffer rows, whose results are discarded or multiplied by zero)."""


def _use_onednn(x: torch.Tensor) -> bool:
    return _ONEDNN_LINEAR is not None and x.dtype == torch.float32 and x.device.type == "cpu" and x.numel() > 0


class _Workspace:
    """Reusable buffers of the recurrence over prefix-tree nodes (rows: nodes over all steps; width:
    the most nodes of one step), so that a batch allocates (and page-faults) almost nothing.
    Reallocated larger when needed."""

    def __init__(self, rows: int, width: int, hidden: int, tokens: int, dtype: torch.dtype, device: torch.device):
        self.rows, self.width, self.tokens, self.key = rows, width, tokens, (dtype, device, hidden)
        h, slack = hidden, _ROWS
        zeros = lambda *shape: torch.zeros(*shape, dtype=dtype, device=device)  # noqa: E731
        self.table = zeros(tokens, 4 * h)          # per-token input projection (scaled, see _scales)
        # kept from forward to backward, per node: h/2 of its parent, the gate factors and the c carry
        # (see _recurrence); without backward, ``hs`` holds one step's parent states:
        self.hs = zeros(max(rows, width) + slack, h)
        self.factors = zeros(rows, 4 * h)
        self.carry = zeros(rows, 2 * h)
        # per-step scratch (states in two alternating blocks; the gate gradients of one backward step):
        self.h_out, self.c_out = zeros(2, width, h), zeros(2, width, h)
        self.dh, self.dc = zeros(2, width, h), zeros(2, width, h)
        self.c_prev, self.g, self.u = zeros(width, h), zeros(width, h), zeros(width, h)
        self.gates, self.grads = zeros(width, 4 * h), zeros(width + slack, 4 * h)
        self.h_t = zeros(h * (width + slack))      # (h/2)^T of a step, zero-padded (weight-gradient product)
        # column views (sliced once here rather than at every step)
        self.gate_cols = self.gates.split(h, 1)
        self.factor_cols = self.factors.split(h, 1)
        self.carry_cols = self.carry.split(h, 1)
        self.owner = None

    def fits(self, rows: int, width: int, tokens: int, key) -> bool:
        return key == self.key and rows <= self.rows and width <= self.width and tokens <= self.tokens


class _HeadBuffers:
    """Reusable (logits, log-probabilities) buffers of the fused output layer."""

    def __init__(self, rows: int, classes: int, dtype: torch.dtype, device: torch.device):
        self.logits, self.logp = torch.empty(2, rows, classes, dtype=dtype, device=device).unbind(0)
        self.owner = None

    def fits(self, rows: int, classes: int, key) -> bool:
        return self.logits.shape == (rows, classes) and key == (self.logits.dtype, self.logits.device)


_POOL: list = []
"""Free workspaces and head buffers (at most two of each kind are kept). A forward with gradient
holds its buffers until its backward returns them; a forward of another batch then may take them
(``owner`` tells whether they still hold a given forward's values)."""

_POOL_LOCK = threading.Lock()

_REUSED = "fast LSTM: the buffers of this forward were reused; run its backward before the next forward"


def _acquire(rows: int, width: int, hidden: int, tokens: int, dtype, device, exact: bool = False) -> _Workspace:
    key = (dtype, torch.device(device), hidden)
    with _POOL_LOCK:
        spaces = [ws for ws in _POOL if isinstance(ws, _Workspace)]
        for ws in spaces:
            if ws.fits(rows, width, tokens, key):
                _POOL.remove(ws)
                return ws
        if spaces:  # too small: drop one, allocate a larger one (with room to grow unless ``exact``)
            _POOL.remove(spaces[0])
            if spaces[0].key == key:
                rows, width = max(rows, spaces[0].rows), max(width, spaces[0].width)
                tokens = max(tokens, spaces[0].tokens)
    if not exact:
        rows, width = rows * 3 // 2 + 64, width * 5 // 4 + 32
    return _Workspace(rows, width, hidden, tokens, dtype, torch.device(device))


def _acquire_head(rows: int, classes: int, dtype, device) -> _HeadBuffers:
    with _POOL_LOCK:
        for buffers in _POOL:
            if isinstance(buffers, _HeadBuffers) and buffers.fits(rows, classes, (dtype, device)):
                _POOL.remove(buffers)
                return buffers
    return _HeadBuffers(rows, classes, dtype, device)


def _release(buffers) -> None:
    with _POOL_LOCK:
        if all(b is not buffers for b in _POOL):
            same = [b for b in _POOL if type(b) is type(buffers)]
            if len(same) >= 2:
                _POOL.remove(same[0])
            _POOL.append(buffers)


def release_workspaces() -> None:
    """Free the cached buffers of the fast path (they are rebuilt on demand)."""
    with _POOL_LOCK:
        _POOL.clear()


def _scales(hidden: int, gate_factors, dtype, device) -> torch.Tensor:
    """A column of per-gate factors (i, f, g, o), each repeated ``hidden`` times."""
    return torch.tensor(gate_factors, dtype=dtype, device=device).repeat_interleave(hidden)[:, None]


# Powers of two (exact scalings) that let the recurrence use fewer elementwise passes:
#   * the g gate's pre-activation is doubled, so one sigmoid serves all gates: g = 2 sigmoid(2z) - 1;
#   * h is stored halved: h/2 = o * (sigmoid(2c) - 1/2), hence W_hh is doubled in the forward;
#   * the stored gate factors are d z / d (dc or dh) divided by (2, 1, 4, 2) for (i, f, g, o).
_TABLE_SCALE = (1.0, 1.0, 2.0, 1.0)      # table columns
_W_FORWARD_SCALE = (2.0, 2.0, 4.0, 2.0)  # W_hh rows, forward (doubled g, halved h)
_GRAD_SCALE = (2.0, 1.0, 4.0, 2.0)       # true d z = this * stored gradient


def _recurrence(ws: _Workspace, w2: torch.Tensor, plan: _Plan, keep: bool) -> torch.Tensor:
    """Final hidden state of every window (original order), from ``ws.table`` and the scaled W_hh.

    Step t computes the n nodes of step t from their parents' (h/2, c). With ``keep`` the parents' h/2
    are stored (block t of ``ws.hs``) and so are, with s the gate sigmoids and u = sigmoid(2c) - 1/2
    = tanh(c)/2, factors = s (1 - s) (g/2, c_{t-1}, i, u) for (i, f, g, o) and carry = (o (1 -
    tanh(c)^2), f): what the backward needs."""
    counts, offsets, length = plan.counts, plan.offsets, plan.length
    table, hs, c_prev_all, gates_all, g_all, u_all = ws.table, ws.hs, ws.c_prev, ws.gates, ws.g, ws.u
    h_out, c_out = ws.h_out, ws.c_out
    si_all, sf_all, sg_all, so_all = ws.gate_cols
    index_select, mul, add, sub, addcmul = torch.index_select, torch.mul, torch.add, torch.sub, torch.addcmul
    sigmoid_backward = torch.ops.aten.sigmoid_backward.grad_input
    linear = _ONEDNN_LINEAR if _use_onednn(hs) and plan.width > 0 else None
    steps = [plan.tokens.split(counts), plan.parents.split(counts)]  # views made in one call each
    if keep:
        steps += [hs[:offsets[length]].split(counts)] + [x[:offsets[length]].split(counts)
                                                         for x in ws.factor_cols + ws.carry_cols]
    for t, (tok, parent, *stored) in enumerate(zip(*steps)):
        n = counts[t]
        h_prev = stored[0] if keep else hs[:n]
        c_prev, gates, g_half, u = c_prev_all[:n], gates_all[:n], g_all[:n], u_all[:n]
        s_i, s_f, s_g, s_o = si_all[:n], sf_all[:n], sg_all[:n], so_all[:n]
        h_new, c = h_out[t % 2, :n], c_out[t % 2, :n]
        if t == 0:
            h_prev.zero_()
            c_prev.zero_()
        else:
            index_select(h_out[(t - 1) % 2], 0, parent, out=h_prev)
            index_select(c_out[(t - 1) % 2], 0, parent, out=c_prev)
        index_select(table, 0, tok, out=gates)
        if linear is None:
            gates.addmm_(h_prev, w2.t())
        else:  # rounded-up rows: the block's storage continues with the next block (and slack rows)
            r = -(-n // _ROWS) * _ROWS
            gates.add_(linear(h_prev if r == n else h_prev.as_strided((r, h_prev.shape[1]), h_prev.stride()), w2)[:n])
        gates.sigmoid_()
        sub(s_g, 0.5, out=g_half)                # g/2
        mul(s_f, c_prev, out=c)
        c.addcmul_(s_i, g_half, value=2)         # c = f c_{t-1} + i g
        add(c, c, out=u).sigmoid_().sub_(0.5)    # tanh(c)/2
        mul(s_o, u, out=h_new)                   # h/2
        if keep:
            _, f_i, f_f, f_g, f_o, carry_c, carry_f = stored
            sigmoid_backward(g_half, s_i, grad_input=f_i)
            sigmoid_backward(c_prev, s_f, grad_input=f_f)
            sigmoid_backward(s_i, s_g, grad_input=f_g)
            sigmoid_backward(u, s_o, grad_input=f_o)
            addcmul(s_o, h_new, u, value=-4, out=carry_c)  # o - o tanh(c)^2
            carry_f.copy_(s_f)
    return h_out[(length - 1) % 2].index_select(0, plan.source).mul_(2)


def _backward_through_time(grad_out: torch.Tensor, w_hh: torch.Tensor, plan: _Plan, ws: _Workspace):
    """Gradients w.r.t. the (unscaled) per-token table and W_hh from the stored steps."""
    h = w_hh.shape[1]
    counts, offsets, length = plan.counts, plan.offsets, plan.length
    total = offsets[length]
    grad_scale = _scales(h, _GRAD_SCALE, w_hh.dtype, w_hh.device)
    w_back_t = (w_hh * grad_scale).t().contiguous()  # d h_{t-1} = stored gradient @ this^T
    linear = _ONEDNN_LINEAR if _use_onednn(grad_out) else None
    grads_all, h_t_all, dh_all, dc_all, mul = ws.grads, ws.h_t, ws.dh, ws.dc, torch.mul
    split = lambda x: x[:total].split(counts)  # noqa: E731 -- per-step blocks, made in one call
    steps = zip(plan.tokens.split(counts), plan.parents.split(counts), split(ws.hs), split(ws.factors[:, :3 * h]),
                split(ws.factor_cols[3]), *map(split, ws.carry_cols))
    last, k = counts[-1], 0  # dh and dc of the current step's nodes are in block k of ws.dh, ws.dc
    dh = dh_all[0, :last].zero_().index_add_(0, plan.source, grad_out)
    dc = dc_all[0, :last].zero_()
    d_table = grad_out.new_zeros(ws.table.shape[0], 4 * h)
    if linear is None:
        d_w = grad_out.new_zeros(4 * h, h)
    else:  # d_w^T accumulates (h/2)^T grads over rounded-up rows; the extra rows meet zeros
        d_wt = grad_out.new_zeros(h, 4 * h)
    for t, (tok, parent, h_prev, f_ifg, f_o, carry_c, carry_f) in reversed(list(enumerate(steps))):
        n = counts[t]
        grads = grads_all[:n]
        dc.addcmul_(dh, carry_c)  # dL/dc_t
        mul(f_ifg.view(n, 3, h), dc.unsqueeze(1), out=grads[:, :3 * h].view(n, 3, h))
        mul(f_o, dh, out=grads[:, 3 * h:])
        dc.mul_(carry_f)  # dL/d(c of the parent), per node
        d_table.index_add_(0, tok, grads)
        if linear is None:
            d_w.addmm_(grads.t(), h_prev)
        else:
            r = -(-n // _ROWS) * _ROWS
            h_t = h_t_all[:h * r].view(h, r)
            h_t[:, :n].copy_(h_prev.t())
            h_t[:, n:].zero_()
            d_wt.add_(linear(h_t, grads_all[:r].t()))
        if t == 0:
            break
        dh = grads @ w_back_t.t() if linear is None else linear(grads_all[:r], w_back_t)[:n]  # dL/d(h of the parent)
        m = counts[t - 1]
        if m < n:  # several nodes share a parent: add up (otherwise each parent has one child, in order)
            k = 1 - k
            dh = dh_all[k, :m].zero_().index_add_(0, parent, dh)
            dc = dc_all[k, :m].zero_().index_add_(0, parent, dc)
    if linear is not None:
        d_w = d_wt.t()
    return d_table.mul_(grad_scale.t()), d_w * (2 * grad_scale)  # (h was stored halved)


def _fill_table(ws: _Workspace, emb, w_ih, b_ih, b_hh) -> None:
    """``ws.table[:V] = (emb @ W_ih^T + b_ih + b_hh)``, columns scaled by ``_TABLE_SCALE``."""
    scale = _scales(w_ih.shape[0] // 4, _TABLE_SCALE, w_ih.dtype, w_ih.device)
    torch.addmm(((b_ih + b_hh)[:, None] * scale)[:, 0].detach(), emb.detach(), (w_ih * scale).t().detach(),
                out=ws.table[:emb.shape[0]])


def _forward_weight(w_hh: torch.Tensor) -> torch.Tensor:
    return (w_hh * _scales(w_hh.shape[1], _W_FORWARD_SCALE, w_hh.dtype, w_hh.device)).detach()


class _PackedLSTM(torch.autograd.Function):
    """Last hidden state of ``nn.LSTM`` (one layer, zero initial state) over ``emb[windows]``, as a
    function of emb, W_ih, b_ih, b_hh, W_hh."""

    @staticmethod
    def forward(ctx, emb, w_ih, b_ih, b_hh, w_hh, plan: _Plan):
        ws = _acquire(plan.offsets[-1], plan.width, w_hh.shape[1], emb.shape[0], emb.dtype, emb.device)
        ws.owner = ctx
        _fill_table(ws, emb, w_ih, b_ih, b_hh)
        out = _recurrence(ws, _forward_weight(w_hh), plan, keep=True)
        ctx.save_for_backward(emb, w_ih, w_hh)
        ctx.ws, ctx.plan = ws, plan
        return out

    @staticmethod
    def backward(ctx, grad_out):
        ws = ctx.ws
        if ws.owner is not ctx:
            raise RuntimeError(_REUSED)
        emb, w_ih, w_hh = ctx.saved_tensors
        d_table, d_w_hh = _backward_through_time(grad_out.contiguous(), w_hh.detach(), ctx.plan, ws)
        _release(ws)  # still owned by ctx until another forward takes it, so a retained graph stays valid
        d_table = d_table[:emb.shape[0]]
        d_emb = d_table @ w_ih if ctx.needs_input_grad[0] else None
        d_w_ih = d_table.t() @ emb if ctx.needs_input_grad[1] else None
        d_b = d_table.sum(0)
        return d_emb, d_w_ih, d_b, d_b.clone(), d_w_hh, None


def packed_lstm(emb, w_ih, b_ih, b_hh, w_hh, windows: torch.Tensor, plan: _Plan | None = None) -> torch.Tensor:
    """Last hidden state of a one-layer LSTM (zero initial state, PyTorch's gate order and weight
    layout) over ``emb[windows]`` for every window: the same function as ``nn.LSTM``, computed with a
    per-token input table, once per distinct window prefix, with an explicit backward (module
    docstring). ``plan``: ``_Plan(windows)`` if already built."""
    plan = _Plan(windows) if plan is None else plan
    if torch.is_grad_enabled() and any(x.requires_grad for x in (emb, w_ih, b_ih, b_hh, w_hh)):
        return _PackedLSTM.apply(emb, w_ih, b_ih, b_hh, w_hh, plan)
    ws = _acquire(0, plan.width, w_hh.shape[1], emb.shape[0], emb.dtype, emb.device)
    ws.owner = None
    with torch.no_grad():
        _fill_table(ws, emb, w_ih, b_ih, b_hh)
        out = _recurrence(ws, _forward_weight(w_hh), plan, keep=False)
    _release(ws)
    return out


class _LinearCrossEntropy(torch.autograd.Function):
    """Mean over rows of ``-log softmax(h W^T + b)[target]``, i.e. ``F.cross_entropy(F.linear(h, W, b),
    target)``, in reused buffers; the softmax for the gradient comes from the stored log-probabilities."""

    @staticmethod
    def forward(ctx, h, weight, bias, target):
        n = h.shape[0]
        buffers = _acquire_head(n, weight.shape[0], h.dtype, h.device)
        buffers.owner = ctx
        torch.addmm(bias, h, weight.t(), out=buffers.logits)
        torch._log_softmax(buffers.logits, 1, False, out=buffers.logp)
        loss = buffers.logp.gather(1, target[:, None]).sum().neg() / n
        ctx.save_for_backward(h, weight, target)
        ctx.buffers = buffers
        return loss

    @staticmethod
    def backward(ctx, grad):
        h, weight, target = ctx.saved_tensors
        buffers = ctx.buffers
        if buffers.owner is not ctx:
            raise RuntimeError(_REUSED)
        n = h.shape[0]
        d = torch.exp(buffers.logp, out=buffers.logits)  # softmax
        d[torch.arange(n, device=d.device), target] -= 1
        d.mul_(grad / n)
        if _use_onednn(d):
            d_h = _ONEDNN_LINEAR(d, weight.t().contiguous())
            d_w = _ONEDNN_LINEAR(h.t().contiguous(), d.t()).t().contiguous()
        else:
            d_h, d_w = d @ weight, torch.mm(d.t(), h)
        d_b = d.sum(0)
        _release(buffers)
        return d_h, d_w, d_b, None


class LSTMNet(nn.Module):
    def __init__(self, n_items: int, dim: int, hidden: int, implementation: str = "fast"):
        super().__init__()
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
        self.implementation = implementation
        self.embedding = nn.Embedding(n_items + 1, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, n_items + 1)

    def forward(self, windows: torch.Tensor, frozen: bool) -> torch.Tensor:
        return self.fc(self.last_hidden(windows, frozen))

    def last_hidden(self, windows: torch.Tensor, frozen: bool) -> torch.Tensor:
        """The LSTM's last hidden state of every window: the output layer's input."""
        if self.implementation == "fast":
            return self._fast_last_hidden(windows, frozen)
        if frozen:
            with torch.no_grad():
                x = self.embedding(windows)
        else:
            x = self.embedding(windows)
        out, _ = self.lstm(x)
        return out[:, -1]

    def loss(self, windows: torch.Tensor, target: torch.Tensor, frozen: bool,
             plan: _Plan | None = None) -> torch.Tensor:
        """Mean softmax cross-entropy of the next-item logits (the fast path fuses the output layer;
        ``plan``: its precomputed ``_Plan(windows)``)."""
        if self.implementation == "fast":
            h = self._fast_last_hidden(windows, frozen, plan)
            return _LinearCrossEntropy.apply(h, self.fc.weight, self.fc.bias, target)
        return nn.functional.cross_entropy(self(windows, frozen), target)

    def _fast_last_hidden(self, windows: torch.Tensor, frozen: bool, plan: _Plan | None = None) -> torch.Tensor:
        emb = self.embedding.weight
        if frozen:
            emb = emb.detach()
        else:  # the padding row gets no gradient, as with Embedding(padding_idx=0)
            emb = torch.cat([emb[:1].detach(), emb[1:]])
        lstm = self.lstm
        return packed_lstm(emb, lstm.weight_ih_l0, lstm.bias_ih_l0, lstm.bias_hh_l0, lstm.weight_hh_l0, windows, plan)


class LSTMRecommender:
    """See the module docstring. ``generator`` seeds the initial weights; nothing else is random.
    ``implementation``: "fast" (default) or "reference" (``nn.LSTM``), the same model."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, dim: int = 128, hidden: int = 64,
                 max_len: int = 50, epochs: int = 50, batch_size: int = 1024, lr: float = 1e-3,
                 weight_decay: float = 1e-5, trainable_embeddings: bool = False, device: str = "cpu",
                 implementation: str = "fast"):
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
        self.n_items, self.max_len, self.epochs, self.batch_size = n_items, max_len, epochs, batch_size
        self.lr, self.weight_decay, self.frozen, self.device = lr, weight_decay, not trainable_embeddings, device
        self.implementation = implementation
        with torch.random.fork_rng(devices=[]):
            if generator is not None:
                torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
            self.net = LSTMNet(n_items, dim, hidden, implementation)
        self.net.to(device)

    def _windows(self, stream: Stream) -> np.ndarray:
        return user_windows(stream.user, stream.item, self.max_len - 1)

    def _trainable(self) -> list[tuple[str, nn.Parameter]]:
        return [(n, p) for n, p in self.net.named_parameters() if not (self.frozen and n.startswith("embedding"))]

    def fit(self, stream: Stream, checkpoint=None, resume: ResumePoint | None = None) -> dict:
        """Train on the stream's training rows; returns the per-epoch mean loss and the time. (The
        fast path builds each batch's prefix tree once for all epochs.) ``checkpoint(epoch, self)``,
        when given, is called after every epoch (1-based; e.g. a TracIn recorder); ``resume`` keeps
        the training's state between processes (:mod:`recunlearn.models.resume`)."""
        windows = self._windows(stream)
        train = stream.train_positions
        x = torch.as_tensor(windows[train], device=self.device)
        y = torch.as_tensor(stream.item[train] + 1, device=self.device)
        params = [p for _, p in self._trainable()]
        optimizer = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        start = time.perf_counter()
        starts = range(0, len(train), self.batch_size)
        plans = [_Plan(x[lo:lo + self.batch_size]) if self.implementation == "fast" else None for lo in starts]
        if self.implementation == "fast" and plans:  # one workspace large enough for every batch
            emb = self.net.embedding.weight
            _release(_acquire(max(p.offsets[-1] for p in plans), max(p.width for p in plans),
                              self.net.lstm.hidden_size, emb.shape[0], emb.dtype, emb.device, exact=True))
        self.net.train()
        resume, curve, start = resume_epochs(resume, start, net=self.net, optimizer=optimizer,
                                             checkpoint=stateful(checkpoint))
        for epoch in range(len(curve), self.epochs):
            total = 0.0
            for lo, plan in zip(starts, plans):
                optimizer.zero_grad()
                loss = self.net.loss(x[lo:lo + self.batch_size], y[lo:lo + self.batch_size], self.frozen, plan)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y[lo:lo + self.batch_size])
            curve.append(total / max(len(train), 1))
            if checkpoint is not None:
                checkpoint(epoch + 1, self)
            resume.epoch_done(epoch + 1, self.epochs, curve=curve, train_seconds=time.perf_counter() - start)
        resume.finish()
        release_workspaces()
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    @torch.no_grad()
    def last_layer_terms(self, stream: Stream, lr: float, chunk: int = 2048) -> dict:
        """TracIn's terms of every training row at the current weights (eval mode, no gradient): the
        output layer's input a = the last hidden state, its logits over the |I| + 1 classes and the
        target class (:mod:`recunlearn.perturb.tracin`). Changes nothing."""
        from ...perturb import tracin

        was_training = self.net.training
        self.net.eval()
        windows, train, parts = self._windows(stream), stream.train_positions, []
        for lo in range(0, len(train), chunk):
            rows = train[lo:lo + chunk]
            h = self.net.last_hidden(torch.as_tensor(windows[rows], device=self.device), self.frozen)
            logits = self.net.fc(h)
            target = torch.as_tensor(stream.item[rows] + 1, device=self.device)
            parts.append(tracin.last_layer_terms(tracin.softmax_self_influence(h, logits, target, lr),
                                                 h.double().pow(2).sum(1), tracin.logit_error_norms_sq(logits, target)))
        self.net.train(was_training)
        return tracin.concat_terms(parts)

    @torch.no_grad()
    def test_scores(self, stream: Stream, chunk: int = 2048):
        """Yield ``(source rows, targets, scores)`` for the test rows in stream order; scores (b, |I|)."""
        self.net.eval()
        windows = self._windows(stream)
        test = stream.test_positions
        for lo in range(0, len(test), chunk):
            part = test[lo:lo + chunk]
            logits = self.net(torch.as_tensor(windows[part], device=self.device), True)
            yield stream.row[part], stream.item[part], logits[:, 1:]

    def probe(self, stream: Stream, batch: int = 0) -> dict[str, torch.Tensor]:
        """From the current weights (eval mode): the loss of training batch ``batch``, its gradient for
        every trainable parameter (``grad/<name>``) and the scores of the first test chunk. Changes
        nothing (weights, their ``.grad``, the train/eval mode)."""
        was_training = self.net.training
        self.net.eval()
        try:
            windows = self._windows(stream)
            rows = stream.train_positions[batch * self.batch_size:(batch + 1) * self.batch_size]
            x = torch.as_tensor(windows[rows], device=self.device)
            y = torch.as_tensor(stream.item[rows] + 1, device=self.device)
            named = self._trainable()
            with torch.enable_grad():
                loss = self.net.loss(x, y, self.frozen)
                grads = torch.autograd.grad(loss, [p for _, p in named])
            out = {"loss": loss.detach()}
            out.update({f"grad/{n}": g.detach() for (n, _), g in zip(named, grads)})
            out["scores"] = next(iter(self.test_scores(stream)))[2].clone()
            return out
        finally:
            self.net.train(was_training)
            release_workspaces()
