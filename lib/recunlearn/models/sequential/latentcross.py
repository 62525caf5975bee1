"""LatentCross as the CASPER authors built it.

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
- Test (the authors' protocol): test rows only, from the end-of-training states, in windows of
  1,024 test rows; scores before each update, then the true interaction updates the states and one
  optimiser step is taken per window (online learning) — on a copy, so the trained model is unchanged.
- Rank list: logits of the |I| real items (the extra class excluded: it is no item a user could be
  shown). Items keep the study's fixed id map (the authors numbered them by first appearance).

``cell="gru"`` is the paper's description instead ("GRU-based", as Beutel et al.'s LatentCross): a
GRUCell whose state h has the 128 values of the code's [h; c], every one read by the prediction
(z = [h, Δ_u, f] ⊙ (1 + W_2 x), W_2 2 -> 130, output Linear(130 -> |I|+1)); everything else as above
(the same latent cross on the cell's input, the learned normalised initial state, L2-normalised
after every update). ``"lstm"`` (the code) is the default.

Two implementations of the same model (``implementation=``; same parameters, names and initial
values): ``"reference"`` runs each t-batch as written above (one-hot LSTM input, prediction per
t-batch, the full state matrix copied per t-batch, autograd throughout); ``"fast"`` (default) computes
the same loss, gradients and scores with less work:

- the prediction never feeds the state updates, so logits and cross-entropy run once per window on the
  states recorded before each t-batch (:class:`~recunlearn.models.output_layer.LinearCrossEntropy`:
  gradient softmax minus one-hot written out, computed with the loss in row blocks that stay in
  cache, with the default BLAS's products); the window loss stays the sum of the
  t-batch means (row weight 1 / t-batch size);
- the one-hot LSTM input is a column gather, W_ih v = W_ih[:, item] (1 + W_1 x)[item] + W_ih[:, -2:] v[-2:],
  computed for the whole window before the recurrence, its W_ih gradient written as one dense tensor
  (``ItemColumnGates``; autograd built two and added them);
- the recurrence (``LSTMRecurrence``; ``GRURecurrence`` for the GRU cell) updates a small matrix of the
  window's users in place, with its backward pass written out: a t-batch costs a few small tensor
  operations and the W_hh gradient is one product per window;
- Adam runs as PyTorch's fused kernel (same update, one pass per tensor);
- the t-batch row order and index tensors are computed once per fit.
"""

from __future__ import annotations

import copy
import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ...data.sequences import Stream
from ..output_layer import LinearCrossEntropy
from ..resume import ResumePoint, resume_epochs, stateful

WINDOW = 1024
CELLS = ("lstm", "gru")
"""The recurrent cell: ``lstm`` = LSTMCell 64 + 64 (the authors' code), ``gru`` = GRUCell 128 (the paper)."""
IMPLEMENTATIONS = ("fast", "reference")
"""Values of the recommenders' ``implementation`` keyword: same model, two ways of computing it."""


def check_implementation(implementation: str) -> str:
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    return implementation


def adam(net: nn.Module, lr: float, weight_decay: float, implementation: str) -> torch.optim.Adam:
    """The models' optimiser: Adam; the fast implementation uses PyTorch's fused kernel (the same update
    in one pass per tensor, rounded differently in the last bits)."""
    fused = {"fused": True} if implementation == "fast" else {}
    return torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay, **fused)


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


class WindowPlan:
    """The t-batch structure of one window of rows ``lo:hi``: ``order`` = its rows grouped by t-batch
    (stream order inside a t-batch), ``sizes`` = rows per t-batch, ``offsets`` = where each t-batch
    starts in ``order``, ``weight`` = 1 / size of the row's t-batch (float32, in ``order``)."""

    def __init__(self, lo: int, level: np.ndarray):
        self.lo, self.hi = lo, lo + len(level)
        self.order = lo + np.argsort(level, kind="stable")
        self.sizes = np.bincount(level)
        self.offsets = np.r_[0, np.cumsum(self.sizes)]
        self.weight = torch.as_tensor(1.0 / np.repeat(self.sizes, self.sizes), dtype=torch.float32)


def window_plans(user: np.ndarray, item: np.ndarray, window: int = WINDOW) -> list[WindowPlan]:
    """One ``WindowPlan`` per window of ``window`` consecutive rows."""
    level = t_batches(user, item, window)
    return [WindowPlan(lo, level[lo:lo + window]) for lo in range(0, len(user), window)]


class NormalLinear(nn.Linear):
    """A linear layer initialised N(0, 1), as JODIE's NormalLinear."""

    def reset_parameters(self):
        nn.init.normal_(self.weight, 0.0, 1.0)
        if self.bias is not None:
            nn.init.normal_(self.bias, 0.0, 1.0)


EPS = 1e-12  # F.normalize's eps


class LSTMRecurrence(torch.autograd.Function):
    """The state recurrence of one window, with its gradient written out. ``small`` (S, 2H): the states
    [h, c] of the window's users; ``gates_in`` (N, 4H): W_ih v + b_ih + b_hh of the window's rows in
    t-batch order; t-batch k holds the next ``sizes[k]`` rows and replaces rows ``slots[k]`` of ``small``
    by normalize([h', c']) of the LSTM cell. Returns the state before each row's update (N, 2H) and the
    final ``small``. Forward and backward update one buffer in place, so a t-batch costs O(its rows)
    and a handful of tensor operations, and the W_hh gradient is one product per window."""

    @staticmethod
    def forward(ctx, small, gates_in, w_hh, slots, sizes):
        h = w_hh.shape[1]
        buf = small.detach().clone()
        w_t = w_hh.t()
        before, act, cand, tanh_c, norm, out = [], [], [], [], [], []
        for sl, z in zip(slots, gates_in.split(sizes)):
            s = buf.index_select(0, sl)
            z = torch.addmm(z, s[:, :h], w_t)
            sig = torch.sigmoid(z)
            i, f, _, o = sig.chunk(4, 1)
            g = torch.tanh(z[:, 2 * h:3 * h])
            c = torch.addcmul(f * s[:, h:], i, g)
            t = torch.tanh(c)
            y = torch.cat([o * t, c], 1)
            nr = torch.linalg.vector_norm(y, dim=1, keepdim=True)
            new = y / nr.clamp_min(EPS)
            buf.index_copy_(0, sl, new)
            before.append(s), act.append(sig), cand.append(g), tanh_c.append(t), norm.append(nr), out.append(new)
        before, act, cand, tanh_c, norm, out = map(torch.cat, (before, act, cand, tanh_c, norm, out))
        # per-row factors of the backward pass, computed once for the window
        i, f, _, o = act.chunk(4, 1)
        deriv = act * (1 - act)
        deriv[:, 2 * h:3 * h] = 1 - cand * cand
        ctx.save_for_backward(torch.cat([cand, before[:, h:], i, tanh_c], 1).mul_(deriv),  # d gates / d (i, f, g, o)
                              o * (1 - tanh_c * tanh_c), f.contiguous(), out * (norm > EPS), 1 / norm.clamp_min(EPS),
                              before, w_hh)
        ctx.slots, ctx.sizes, ctx.rows = slots, sizes, small.shape[0]
        ctx.mark_non_differentiable(buf)
        return before, buf

    @staticmethod
    def backward(ctx, grad_before, _grad_buf):
        factor, through, f, out, inv, before, w_hh = ctx.saved_tensors
        h = w_hh.shape[1]
        grad_buf = before.new_zeros(ctx.rows, 2 * h)
        parts = [t.split(ctx.sizes) for t in (factor, through, f, out, inv, grad_before[:, :h], grad_before[:, h:])]
        grad_gates = []
        for sl, factor, through, f, o, inv, gb_h, gb_c in zip(reversed(ctx.slots), *(map(reversed, parts))):
            g = grad_buf.index_select(0, sl)  # gradient of the t-batch's new states
            gy = torch.addcmul(g, o, (o * g).sum(1, keepdim=True), value=-1).mul_(inv)  # normalize
            gh = gy[:, :h]
            gc = torch.addcmul(gy[:, h:], gh, through)
            gz = torch.cat([gc, gc, gc, gh], 1).mul_(factor)
            grad_buf.index_copy_(0, sl, torch.cat([torch.addmm(gb_h, gz, w_hh), torch.addcmul(gb_c, gc, f)], 1))
            grad_gates.append(gz)
        grad_gates = torch.cat(grad_gates[::-1])
        grad_w = grad_gates.t() @ before[:, :h]
        return grad_buf if ctx.needs_input_grad[0] else None, grad_gates, grad_w, None, None


class GRURecurrence(torch.autograd.Function):
    """:class:`LSTMRecurrence` for a GRU cell. ``small`` (S, H): the states h of the window's users;
    ``gates_in`` (N, 3H): W_ih v + b_ih in t-batch order; ``b_hh`` the hidden bias (the reset gate
    multiplies W_hn h + b_hn, so it cannot join ``gates_in``). Per t-batch, as PyTorch's GRUCell:
    r = σ(i_r + h_r), z = σ(i_z + h_z), n = tanh(i_n + r ⊙ h_n) with (h_r, h_z, h_n) = W_hh h + b_hh,
    h' = (h − n) ⊙ z + n, stored as normalize(h'). Returns the state before each row's update (N, H) and
    the final ``small``; the gradients of W_hh and b_hh are one product and one sum per window."""

    @staticmethod
    def forward(ctx, small, gates_in, w_hh, b_hh, slots, sizes):
        h = w_hh.shape[1]
        buf = small.detach().clone()
        w_t = w_hh.t()
        before, reset, update, new_gate, hidden_n, norm, out = [], [], [], [], [], [], []
        for sl, gi in zip(slots, gates_in.split(sizes)):
            s = buf.index_select(0, sl)
            gh = torch.addmm(b_hh, s, w_t)
            r, z = torch.sigmoid(gi[:, :2 * h] + gh[:, :2 * h]).chunk(2, 1)
            n = torch.tanh(torch.addcmul(gi[:, 2 * h:], r, gh[:, 2 * h:]))
            y = (s - n).mul_(z).add_(n)
            nr = torch.linalg.vector_norm(y, dim=1, keepdim=True)
            new = y / nr.clamp_min(EPS)
            buf.index_copy_(0, sl, new)
            for kept, value in zip((before, reset, update, new_gate, hidden_n, norm, out),
                                   (s, r, z, n, gh[:, 2 * h:], nr, new)):
                kept.append(value)
        before, reset, update, new_gate, hidden_n, norm, out = map(
            torch.cat, (before, reset, update, new_gate, hidden_n, norm, out))
        ctx.save_for_backward(before, reset, update, new_gate, hidden_n, out * (norm > EPS),
                              1 / norm.clamp_min(EPS), w_hh)
        ctx.slots, ctx.sizes, ctx.rows = slots, sizes, small.shape[0]
        ctx.mark_non_differentiable(buf)
        return before, buf

    @staticmethod
    def backward(ctx, grad_before, _grad_buf):
        saved = ctx.saved_tensors
        w_hh = saved[-1]
        grad_buf = w_hh.new_zeros(ctx.rows, w_hh.shape[1])
        parts = [t.split(ctx.sizes) for t in (*saved[:-1], grad_before)]
        grad_inputs, grad_hidden = [], []
        for sl, s, r, z, n, hn, o, inv, gb in zip(reversed(ctx.slots), *(map(reversed, parts))):
            g = grad_buf.index_select(0, sl)  # gradient of the t-batch's new states
            gy = torch.addcmul(g, o, (o * g).sum(1, keepdim=True), value=-1).mul_(inv)  # normalize
            gn = (gy - gy * z) * (1 - n * n)               # through n, then tanh
            gz = gy * (s - n) * z * (1 - z)                # through z, then σ
            gr = gn * hn * r * (1 - r)                     # through r ⊙ h_n, then σ
            grad_inputs.append(torch.cat([gr, gz, gn], 1))
            grad_hidden.append(torch.cat([gr, gz, gn * r], 1))
            grad_buf.index_copy_(0, sl, torch.addmm(torch.addcmul(gb, gy, z), grad_hidden[-1], w_hh))
        grad_inputs, grad_hidden = torch.cat(grad_inputs[::-1]), torch.cat(grad_hidden[::-1])
        before = saved[0]
        return (grad_buf if ctx.needs_input_grad[0] else None, grad_inputs, grad_hidden.t() @ before,
                grad_hidden.sum(0), None, None)


class ItemColumnGates(torch.autograd.Function):
    """``W[:, item]^T ⊙ scale + tail W[:, -2:]^T + bias``: the input gates of ``LatentCrossNet.update``
    without the one-hot (``W`` = W_ih (gates, |I| + 3); ``scale`` (N, 1); ``tail`` (N, 2) the context
    inputs). Autograd through the gather and the slice builds two dense W-sized gradients, one of them
    transposed, and adds them (a fifth of an epoch on Foursquare); the backward here writes the one
    gradient of ``W`` directly, with the same operations in the same order for every value, so every
    gradient is bit-identical to autograd's (a test checks it). ``item`` never names the last two
    columns (items are 0..|I|), so the two parts never overlap."""

    @staticmethod
    def forward(ctx, w, item, scale, tail, bias):
        cols = w.t().index_select(0, item)
        ctx.save_for_backward(w, item, scale, tail, cols)
        return cols * scale + F.linear(tail, w[:, -2:], bias)

    @staticmethod
    def backward(ctx, grad):
        w, item, scale, tail, cols = ctx.saved_tensors
        need_w, _, need_scale, need_tail, need_bias = ctx.needs_input_grad
        grad_w = grad_scale = grad_tail = grad_bias = None
        if need_w:
            grad_w = torch.zeros_like(w)
            grad_w.index_add_(1, item, (grad * scale).t())  # autograd: zeros(W^T).index_add_(0, item, .)
            grad_w[:, -2:] = tail.t().mm(grad).t()         # autograd's addmm: mat1^T @ grad for weight^T
        if need_scale:
            grad_scale = (grad * cols).sum(1, keepdim=True)
        if need_tail:
            grad_tail = grad.mm(w[:, -2:])
        if need_bias:
            grad_bias = grad.sum(0)
        return grad_w, None, grad_scale, grad_tail, grad_bias


ROW_BLOCK = 256
"""Rows of the output layer handled at once (measured: 256 rows fastest of 16 to 1,024 on Wikipedia and
Foursquare); with the default BLAS's products, the arithmetic this model's records were computed with."""


def check_cell(cell: str) -> str:
    """``cell`` if it is one of :data:`CELLS`, else a ValueError naming them."""
    if cell not in CELLS:
        raise ValueError(f"cell must be one of {CELLS}, got {cell!r}")
    return cell


class LatentCrossNet(nn.Module):
    """The network; a user's state has ``2 * hidden`` values: [h; c] of the LSTM cell (``hidden`` each,
    h read by the prediction), or h of the GRU cell (all read)."""

    def __init__(self, n_items: int, hidden: int = 64, cell: str = "lstm"):
        super().__init__()
        self.n_items, self.hidden, self.cell_type = n_items, hidden, check_cell(cell)
        self.readout = hidden if cell == "lstm" else 2 * hidden  # state values the prediction reads
        self.initial_state = nn.Parameter(F.normalize(torch.rand(2 * hidden), dim=0))
        self.pre = NormalLinear(2, n_items + 3)
        self.post = NormalLinear(2, self.readout + 2)
        self.cell = nn.LSTMCell(n_items + 3, hidden) if cell == "lstm" else nn.GRUCell(n_items + 3, 2 * hidden)
        self.out = nn.Linear(self.readout + 2, n_items + 1)

    def predict(self, state, context):
        return self.out(self.fused(state, context))

    def fused(self, state, context):
        """The input of the output layer: [h, Δ_u, f] ⊙ (1 + W_2 x)."""
        z = torch.cat([state[:, :self.readout], context[:, 1:2], context[:, 0:1]], 1)  # [h, Δ_u, f]
        return z * (1 + self.post(context))

    def update(self, state, item, context):
        v = torch.cat([F.one_hot(item, self.n_items + 1).float(), context[:, 0:1], context[:, 1:2]], 1)
        v = v * (1 + self.pre(context))
        if self.cell_type == "gru":
            return F.normalize(self.cell(v, state), dim=1)
        h, c = self.cell(v, (state[:, :self.hidden], state[:, self.hidden:]))
        return F.normalize(torch.cat([h, c], 1), dim=1)

    def recurrence(self, small, gates, slots, sizes):
        """The states of one window's t-batches (:class:`LSTMRecurrence` / :class:`GRURecurrence`) from
        the window's input gates (:meth:`input_gates`)."""
        if self.cell_type == "gru":
            return GRURecurrence.apply(small, gates, self.cell.weight_hh, self.cell.bias_hh, slots, sizes)
        return LSTMRecurrence.apply(small, gates, self.cell.weight_hh, slots, sizes)

    def input_gates(self, item, context):
        """W_ih v + b_ih (+ b_hh for the LSTM cell) of ``update`` without the one-hot: column ``item`` of
        W_ih times (1 + W_1 x)[item], plus the two context columns."""
        w1, b1 = self.pre.weight, self.pre.bias
        scale = 1 + ((w1.index_select(0, item) * context).sum(1) + b1.index_select(0, item))[:, None]
        tail = context * (1 + F.linear(context, w1[-2:], b1[-2:]))  # [f, Δ_u] ⊙ (1 + W_1 x)[-2:]
        bias = self.cell.bias_ih if self.cell_type == "gru" else self.cell.bias_ih + self.cell.bias_hh
        return ItemColumnGates.apply(self.cell.weight_ih, item, scale, tail, bias)


class LatentCrossRecommender:
    """See the module docstring. ``generator`` seeds the initial weights; nothing else is random.
    ``implementation`` is ``"fast"`` or ``"reference"`` (same model and weights, see the module docstring);
    ``cell`` one of :data:`CELLS`."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, hidden: int = 64, epochs: int = 50,
                 lr: float = 1e-3, weight_decay: float = 1e-5, window: int = WINDOW, device: str = "cpu",
                 implementation: str = "fast", cell: str = "lstm"):
        self.implementation = check_implementation(implementation)
        check_cell(cell)
        self.n_items, self.epochs, self.lr, self.weight_decay = n_items, epochs, lr, weight_decay
        self.window, self.device = window, device
        with torch.random.fork_rng(devices=[]):
            if generator is not None:
                torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
            self.net = LatentCrossNet(n_items, hidden, cell)
        self.net.to(device)
        self.final_states = None

    # -- reference: each t-batch as written -------------------------------------------------------------
    def _window_reference(self, net, states, lo, hi, user, item, context, tbatch, collect=None):
        """Rows ``lo:hi``: returns the summed t-batch losses and the updated states (attached)."""
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
        return loss, states

    def _pass(self, net, optimizer, states, user, item, context, tbatch, collect=None):
        """One pass over rows in windows; returns the states and the summed loss. ``collect(rows, scores)``
        receives the scores of each t-batch before its update (test)."""
        total = 0.0
        for lo in range(0, len(user), self.window):
            hi = min(lo + self.window, len(user))
            loss, states = self._window_reference(net, states, lo, hi, user, item, context, tbatch, collect)
            if optimizer is not None:  # None: parameters frozen (a test pass without online steps)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            states = states.detach()
            total += float(loss.detach())
        return states, total

    # -- fast: same function, batched per window ---------------------------------------------------------
    def _plans(self, user: np.ndarray, item: np.ndarray, context: torch.Tensor) -> list[dict]:
        """Per window, the index tensors of the fast path: rows in t-batch order, the window's distinct
        users, each t-batch's slots in the window's small state matrix."""
        plans = []
        t = lambda a: torch.as_tensor(a, device=self.device)  # noqa: E731
        for plan in window_plans(user, item, self.window):
            uniq, slot = np.unique(user[plan.order], return_inverse=True)
            plans.append({"lo": plan.lo, "hi": plan.hi, "order": t(plan.order), "weight": plan.weight.to(self.device),
                          "users": t(uniq), "item": t(item[plan.order]), "context": context[t(plan.order)],
                          "sizes": plan.sizes.tolist(),
                          "slots": [t(slot[a:b]) for a, b in zip(plan.offsets[:-1], plan.offsets[1:])]})
        return plans

    def _window_fast(self, net, states, plan, collect=None):
        """The same loss as ``_window_reference`` for one window, and the updated states (detached)."""
        gates = net.input_gates(plan["item"], plan["context"])
        small = states.index_select(0, plan["users"])
        before, small = net.recurrence(small, gates, plan["slots"], plan["sizes"])
        loss, scores = LinearCrossEntropy.apply(net.fused(before, plan["context"]), net.out.weight, net.out.bias,
                                                plan["item"], plan["weight"], 0 if collect is None else self.n_items,
                                                ROW_BLOCK, "torch")
        if collect is not None:
            collect(plan["order"] - plan["lo"], scores)
        return loss, states.detach().index_copy(0, plan["users"], small)

    def _pass_fast(self, net, optimizer, states, plans, collect=None):
        total = 0.0
        for plan in plans:
            loss, states = self._window_fast(net, states, plan, collect)
            if optimizer is not None:  # None: parameters frozen (a test pass without online steps)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += float(loss.detach())
        return states, total

    # -----------------------------------------------------------------------------------------------------
    def _context(self, stream: Stream) -> torch.Tensor:
        d = torch.as_tensor(user_time_deltas(stream), dtype=torch.float32, device=self.device)
        return torch.stack([torch.zeros_like(d), d], 1)  # x = [f, Δ_u]

    def _optimizer(self, net):
        return adam(net, self.lr, self.weight_decay, self.implementation)

    def _rows(self, stream: Stream, positions: np.ndarray):
        context = self._context(stream)[torch.as_tensor(positions, device=self.device)]
        return stream.user[positions], stream.item[positions], context

    def fit(self, stream: Stream, checkpoint=None, resume: ResumePoint | None = None) -> dict:
        """Train on the stream's training rows; ``checkpoint(epoch, self)``, when given, is called after
        every epoch (1-based; e.g. a TracIn recorder); ``resume`` keeps the training's state between
        processes (:mod:`recunlearn.models.resume`)."""
        user, item, context = self._rows(stream, stream.train_positions)
        if self.implementation == "fast":
            plans = self._plans(user, item, context)
        else:
            tbatch = t_batches(user, item, self.window)
        optimizer = self._optimizer(self.net)
        n_users = stream.n_users
        start = time.perf_counter()
        self.net.train()
        resume, curve, start = resume_epochs(resume, start, net=self.net, optimizer=optimizer,
                                             checkpoint=stateful(checkpoint))
        for epoch in range(len(curve), self.epochs):
            states = self.net.initial_state.expand(n_users, -1)
            if self.implementation == "fast":
                states, total = self._pass_fast(self.net, optimizer, states, plans)
            else:
                states, total = self._pass(self.net, optimizer, states, user, item, context, tbatch)
            curve.append(total)
            if checkpoint is not None:
                checkpoint(epoch + 1, self)
            resume.epoch_done(epoch + 1, self.epochs, curve=curve, train_seconds=time.perf_counter() - start)
        resume.finish()
        self.final_states, self._optimizer_state = states, copy.deepcopy(optimizer.state_dict())
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    @torch.no_grad()
    def last_layer_terms(self, stream: Stream, lr: float) -> dict:
        """TracIn's terms of every training row at the current weights (no gradient, no optimiser step):
        one pass over the training windows from the initial states, as in an epoch; per row the output
        layer's input z (post-fusion, from the state before the row), its logits over the |I| + 1
        classes and the row's item (:mod:`recunlearn.perturb.tracin`). Changes nothing."""
        from ...perturb import tracin

        net = self.net
        user, item, context = self._rows(stream, stream.train_positions)
        states = net.initial_state.expand(stream.n_users, -1)
        out = {key: np.zeros(len(user)) for key in ("influence", "feature_sq", "error_sq")}
        for plan in self._plans(user, item, context):
            gates = net.input_gates(plan["item"], plan["context"])
            small = states.index_select(0, plan["users"])
            before, small = net.recurrence(small, gates, plan["slots"], plan["sizes"])
            z = net.fused(before, plan["context"])
            logits = net.out(z)
            terms = tracin.last_layer_terms(tracin.softmax_self_influence(z, logits, plan["item"], lr),
                                            z.double().pow(2).sum(1), tracin.logit_error_norms_sq(logits, plan["item"]))
            rows = plan["order"].cpu().numpy()
            for key in out:
                out[key][rows] = terms[key]
            states = states.index_copy(0, plan["users"], small)
        return out

    def test_scores(self, stream: Stream, online: bool = True):
        """Yield ``(source rows, targets, scores)`` per window of test rows (stream order within it).
        ``online``: one optimiser step per test window, as the authors' code (the default); False freezes
        the parameters (the states still follow the true interactions) and computes without gradients."""
        test = stream.test_positions
        user, item, context = self._rows(stream, test)
        net = copy.deepcopy(self.net)  # online learning at test time must not change the trained model
        optimizer = self._optimizer(net) if online else None
        if optimizer is not None:
            # nor its optimiser state: load_state_dict keeps the given tensors (Adam's moments, its step
            # count) and the online steps would update them in place, so a second test pass would start
            # from the first one's end
            optimizer.load_state_dict(copy.deepcopy(self._optimizer_state))
        states = self.final_states
        if self.implementation == "fast":
            for plan in self._plans(user, item, context):
                scores = torch.empty(plan["hi"] - plan["lo"], self.n_items, device=self.device)

                def collect(rows, s, scores=scores):  # rows are positions within this window
                    scores[rows] = s

                with torch.set_grad_enabled(online):  # frozen: no graph, no gradient products
                    states, _ = self._pass_fast(net, optimizer, states, [plan], collect)
                yield stream.row[test[plan["lo"]:plan["hi"]]], item[plan["lo"]:plan["hi"]], scores
            return
        tbatch = t_batches(user, item, self.window)
        for lo in range(0, len(test), self.window):
            hi = min(lo + self.window, len(test))
            scores = torch.empty(hi - lo, self.n_items, device=self.device)

            def collect(rows, s, scores=scores):  # rows are positions within this window
                scores[torch.as_tensor(rows, device=self.device)] = s

            with torch.set_grad_enabled(online):
                states, _ = self._pass(net, optimizer, states, user[lo:hi], item[lo:hi], context[lo:hi],
                                       tbatch[lo:hi], collect)
            yield stream.row[test[lo:hi]], item[lo:hi], scores

    def probe(self, stream: Stream, batch: int = 0) -> dict[str, torch.Tensor]:
        """From the current weights (eval mode; the model has no dropout): ``loss`` = summed loss of training
        window ``batch`` of an epoch whose earlier windows only advance the states (no optimiser step),
        ``grad/<name>`` = its gradient for every trainable parameter, ``scores`` = the scores of the first
        test window from the end-of-training states (the initial states before ``fit``). Changes nothing."""
        net = self.net
        was_training = net.training
        net.eval()
        try:
            user, item, context = self._rows(stream, stream.train_positions)
            states = net.initial_state.expand(stream.n_users, -1)
            windows = -(-len(user) // self.window)
            if not 0 <= batch < windows:
                raise IndexError(f"batch {batch} out of range: the training rows form {windows} windows")
            if self.implementation == "fast":
                plans = self._plans(user, item, context)
                window = lambda b, states, collect=None: self._window_fast(net, states, plans[b], collect)  # noqa: E731
            else:
                tbatch = t_batches(user, item, self.window)

                def window(b, states, collect=None):
                    lo, hi = b * self.window, min((b + 1) * self.window, len(user))
                    return self._window_reference(net, states, lo, hi, user, item, context, tbatch, collect)
            with torch.no_grad():
                for b in range(batch):
                    states = window(b, states)[1].detach()
            loss, _ = window(batch, states)
            named = [(n, p) for n, p in net.named_parameters() if p.requires_grad]
            grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
            out = {"loss": loss.detach()}
            out.update({f"grad/{n}": torch.zeros_like(p) if g is None else g for (n, p), g in zip(named, grads)})
            test = stream.test_positions[:self.window]
            user, item, context = self._rows(stream, test)
            states = self.final_states if self.final_states is not None else \
                net.initial_state.detach().expand(stream.n_users, -1)
            scores = torch.empty(len(test), self.n_items, device=self.device)

            def collect(rows, s):
                scores[torch.as_tensor(rows, device=self.device)] = s

            with torch.no_grad():
                if len(test) and self.implementation == "fast":
                    self._window_fast(net, states, self._plans(user, item, context)[0], collect)
                elif len(test):
                    self._window_reference(net, states, 0, len(test), user, item, context,
                                           t_batches(user, item, self.window), collect)
            out["scores"] = scores
            return out
        finally:
            net.train(was_training)
