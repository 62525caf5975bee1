"""JODIE (Kumar, Zhang, Leskovec, KDD 2019) as adapted by the CASPER authors.

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

Two implementations of the same model (``implementation=``; same parameters, names and initial
values): ``"reference"`` runs each t-batch as written above (one-hot blocks in the prediction input and
target, the full state matrices copied per t-batch, autograd throughout); ``"fast"`` (default) computes
the same loss, gradients and scores with less work:

- the prediction and the MSE terms never feed the state updates, so they run once per window on the
  states recorded during the recurrence; the window loss stays the sum of the t-batch means (row weight
  1 / t-batch size);
- the product with the two one-hot blocks is a gather of two weight columns per row (``OneHotLinear``);
  its weight gradient is the same dense matrix, built from one product and per-column sums; that
  weight is stored column by column, so gathered and written columns are contiguous, its gradient
  buffer is reused from window to window with only last window's columns zeroed
  (``RecycledGradient``), and fused Adam updates it through its contiguous transpose
  (``fast_adam``); on Foursquare (a 5,725 x 7,959 layer) this cut an epoch by a quarter;
- both RNN cells are one (2d x 2d) product per t-batch on a small matrix of the window's users, items and
  previous items, updated in place, with the backward pass written out (``JODIERecurrence``): a t-batch
  costs a few small tensor operations and the RNN weight gradient is one product per window;
- test scores are still taken per t-batch, against the item states of that moment;
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
from ..resume import ResumePoint, resume_epochs, stateful
from .latentcross import EPS, WINDOW, NormalLinear, adam, check_implementation, t_batches, window_plans


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


class JODIERecurrence(torch.autograd.Function):
    """The state recurrence of one window, with its gradient written out. ``small`` (S, d): the states
    of the window's users, items and previous items; ``bias`` (N, 2d) and ``weight`` (2d, 2d): the two
    RNN cells as one map [j_state, u_state] -> [new_j, new_u] pre-activations (rows in t-batch order);
    t-batch k holds rows ``bounds[k]``, reads slots ``pairs[k]`` ([item, user] per row) and
    ``prevs[k]`` (previous item) of ``small`` and then replaces the pair slots by
    normalize(tanh(bias + [j_state, u_state] weight^T)). Returns [j_state, u_state] (N, 2d) and the
    previous-item state (N, d) before each row's update, the new [j, u] states (N, 2d) and the final
    ``small``. ``hook(k, x, prev, new)``, if given, sees each t-batch before its update is stored.
    Forward and backward update one buffer in place: a t-batch costs O(its rows), and the weight
    gradient is one product per window."""

    @staticmethod
    def forward(ctx, small, bias, weight, pairs, prevs, bounds, hook=None):
        d, n = small.shape[1], bias.shape[0]
        buf = small.detach().clone()
        x, prev = bias.new_empty(n, 2 * d), bias.new_empty(n, d)
        y, norm, out = bias.new_empty(n, 2 * d), bias.new_empty(n, 2, 1), bias.new_empty(n, 2 * d)
        w_t = weight.t()
        for k, (pair, p, (a, b)) in enumerate(zip(pairs, prevs, bounds)):
            xx = x[a:b]
            torch.index_select(buf, 0, pair, out=xx.view(-1, d))
            torch.index_select(buf, 0, p, out=prev[a:b])
            yy = torch.tanh(torch.addmm(bias[a:b], xx, w_t), out=y[a:b]).view(-1, 2, d)
            new = torch.div(yy, torch.linalg.vector_norm(yy, dim=2, keepdim=True, out=norm[a:b]).clamp_min(EPS),
                            out=out[a:b].view(-1, 2, d))
            if hook is not None:
                hook(k, xx, prev[a:b], new)
            buf.index_copy_(0, pair, new.view(-1, d))
        ctx.save_for_backward(x, 1 - y * y, out.view(n, 2, d) * (norm > EPS), 1 / norm.clamp_min(EPS), weight)
        ctx.pairs, ctx.prevs, ctx.bounds, ctx.rows = pairs, prevs, bounds, small.shape[0]
        ctx.mark_non_differentiable(buf)
        return x, prev, out, buf

    @staticmethod
    def backward(ctx, grad_x, grad_prev, grad_out, _grad_buf):
        x, through, out, inv, weight = ctx.saved_tensors
        d = out.shape[2]
        grad_buf = x.new_zeros(ctx.rows, d)
        grad_z = torch.empty_like(x)
        for pair, p, (a, b) in zip(reversed(ctx.pairs), reversed(ctx.prevs), reversed(ctx.bounds)):
            g = grad_buf.index_select(0, pair).view(-1, 2, d).add_(grad_out[a:b].view(-1, 2, d))
            o = out[a:b]
            gy = torch.addcmul(g, o, (o * g).sum(2, keepdim=True), value=-1).mul_(inv[a:b])  # normalize
            gz = torch.mul(gy.view(-1, 2 * d), through[a:b], out=grad_z[a:b])  # tanh
            grad_buf.index_copy_(0, pair, torch.addmm(grad_x[a:b], gz, weight).view(-1, d))
            grad_buf.index_add_(0, p, grad_prev[a:b])
        return grad_buf if ctx.needs_input_grad[0] else None, grad_z, grad_z.t() @ x, None, None, None, None


class RecycledGradient:
    """The prediction layer's weight gradient, one buffer reused from window to window.

    The gradient is zero except in the dense columns and the columns the window's one-hots select,
    yet it is a (|I| + d) x (|U| + |I| + 2d) matrix (45.6 M values on Foursquare): zero-filling a
    new one every window, and writing and reading columns scattered through a row-major matrix, took
    about a quarter of an epoch. The fast path stores that weight column by column (:func:`column_major`), so
    a column is contiguous, and :class:`OneHotLinear`'s backward takes its gradient from here: the
    buffer autograd stored as the weight's ``.grad`` last window, handed back by :meth:`recycle`
    before ``zero_grad``, with only the selected columns it wrote then zeroed again (the dense ones
    are overwritten). A gradient that is not that buffer (autograd copied it or added it to another)
    is not recycled and the window zero-fills a new one, so no value depends on recycling."""

    def __init__(self):
        self._buffer, self._written, self._returned = None, None, None

    def recycle(self, weight: torch.Tensor) -> None:
        """Keep ``weight``'s gradient for the next backward when it is the buffer returned last."""
        grad = weight.grad
        if grad is not None and self._returned is not None and \
                (grad.data_ptr(), grad.shape, grad.stride()) == self._returned:
            self._buffer = grad

    def zeros_like(self, weight: torch.Tensor) -> torch.Tensor:
        """A zero gradient for ``weight`` (same layout) except in the dense columns, to be overwritten."""
        buffer, self._buffer, self._returned = self._buffer, None, None
        if buffer is None or buffer.shape != weight.shape or buffer.stride() != weight.stride():
            return torch.zeros_like(weight)
        return buffer.index_fill_(1, self._written, 0.0)

    def returned(self, grad: torch.Tensor, written: torch.Tensor) -> None:
        self._returned, self._written = (grad.data_ptr(), grad.shape, grad.stride()), written


def column_major(weight: nn.Parameter) -> nn.Parameter:
    """The same parameter (values, shape) stored column by column."""
    return nn.Parameter(weight.detach().t().contiguous().t(), requires_grad=weight.requires_grad)


def fast_adam(net: nn.Module, lr: float, weight_decay: float) -> torch.optim.Adam:
    """The fast path's fused Adam. PyTorch's fused kernel copies a parameter that is not contiguous
    to a contiguous one and back every step; the column-major prediction weight is therefore given
    to it as its transpose (contiguous, the same memory), whose gradient :func:`transposed_grads`
    sets before each step. Adam is element-wise, so the update is the same."""
    weight = net.predict.weight
    flat = weight.detach().t()
    others = [p for p in net.parameters() if p is not weight]
    optimizer = torch.optim.Adam([*others, flat], lr=lr, weight_decay=weight_decay, fused=True)
    optimizer.transposed = [(weight, flat)]
    return optimizer


def zero_grads(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.zero_grad()``, and the gradients of the parameters :func:`fast_adam` stands in for."""
    optimizer.zero_grad()
    for weight, _ in getattr(optimizer, "transposed", ()):
        weight.grad = None


def transposed_grads(optimizer: torch.optim.Optimizer) -> None:
    """Give each transposed stand-in of :func:`fast_adam` its parameter's gradient (a view)."""
    for weight, flat in getattr(optimizer, "transposed", ()):
        flat.grad = None if weight.grad is None else weight.grad.t()


class OneHotLinear(torch.autograd.Function):
    """``F.linear(cat([dense, onehot(c_1), onehot(c_2)], 1), weight, bias)`` without the one-hots: the
    first ``dense.shape[1]`` weight columns times ``dense`` plus, per row, the two weight columns the
    one-hots select. The selected columns are given as ``unique`` (distinct column indices) and
    ``inverse`` (2, N) (row r selects ``unique[inverse[0, r]]`` and ``unique[inverse[1, r]]``).
    The weight gradient is the same dense matrix as for the one-hot product, built from a product for
    the dense columns and one sum per selected column."""

    @staticmethod
    def forward(ctx, dense, weight, bias, unique, inverse, recycled=None):
        ctx.save_for_backward(dense, weight, unique, inverse)
        ctx.recycled = recycled
        return OneHotLinear.value(dense, weight, bias, weight.t().index_select(0, unique), inverse)

    @staticmethod
    def value(dense, weight, bias, selected, inverse):
        """The forward value, ``selected`` = ``weight[:, unique].t()`` (len(unique), out)."""
        out = torch.addmm(bias, dense, weight[:, :dense.shape[1]].t())
        return out.add_(selected.index_select(0, inverse[0])).add_(selected.index_select(0, inverse[1]))

    @staticmethod
    def backward(ctx, grad):
        dense, weight, unique, inverse = ctx.saved_tensors
        k = dense.shape[1]
        recycled = ctx.recycled
        grad_weight = torch.zeros_like(weight) if recycled is None else recycled.zeros_like(weight)
        grad_weight[:, :k] = grad.t() @ dense
        per_column = grad.new_zeros(len(unique), grad.shape[1])
        per_column.index_add_(0, inverse[0], grad).index_add_(0, inverse[1], grad)
        grad_weight.t().index_copy_(0, unique, per_column)  # columns ``unique`` (distinct)
        if recycled is not None:
            recycled.returned(grad_weight, unique)
        return grad @ weight[:, :k], grad_weight, grad.sum(0), None, None, None


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
    """See the module docstring. Needs the number of users: ``n_users`` is read from the first stream.
    ``implementation`` is ``"fast"`` or ``"reference"`` (same model and weights, see the module docstring)."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, dim: int = 128, epochs: int = 50,
                 lr: float = 1e-3, weight_decay: float = 1e-5, window: int = WINDOW, device: str = "cpu",
                 implementation: str = "fast"):
        self.implementation = check_implementation(implementation)
        self.n_items, self.dim, self.epochs, self.lr, self.weight_decay = n_items, dim, epochs, lr, weight_decay
        self.window, self.device = window, device
        self.seed = int(torch.randint(0, 2**62, (1,), generator=generator)) if generator is not None else 0
        self.net = None  # built on the first stream (needs |U|), from ``seed``: identical for M and M'
        self._recycled = RecycledGradient()
        self.final = None

    def _ensure_net(self, n_users: int):
        if self.net is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.seed)
                self.net = JODIENet(n_users, self.n_items, self.dim).to(self.device)
            if self.implementation == "fast":
                self.net.predict.weight = column_major(self.net.predict.weight)

    def _optimizer(self, net):
        if self.implementation == "fast":
            return fast_adam(net, self.lr, self.weight_decay)
        return adam(net, self.lr, self.weight_decay, self.implementation)

    def _features(self, stream: Stream, positions: np.ndarray) -> dict:
        du = time_deltas(stream.user, stream.timestamp)[positions]
        di = time_deltas(stream.item, stream.timestamp)[positions]
        t = lambda a, dtype=torch.float32: torch.as_tensor(a, dtype=dtype, device=self.device)  # noqa: E731
        return {"user": stream.user[positions], "item": stream.item[positions], "du": t(du), "di": t(di),
                "prev": previous_items(stream)[positions]}

    def _initial_states(self, n_users: int):
        net = self.net
        return (F.normalize(net.initial_user, dim=0).expand(n_users, -1),
                F.normalize(net.initial_item, dim=0).expand(self.n_items, -1))

    # -- reference: each t-batch as written -------------------------------------------------------------
    def _window_reference(self, net, users, items, rows, lo, hi, level_all, collect=None):
        """Rows ``lo:hi``: returns the summed t-batch losses and the updated (users, items) (attached)."""
        zero = torch.zeros(1, device=self.device)
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
        return loss, users, items

    def _pass(self, net, optimizer, users, items, rows, collect=None):
        """Windows over ``rows`` (dict of arrays); returns the updated (users, items) states."""
        n = len(rows["user"])
        level_all = t_batches(rows["user"], rows["item"], self.window)
        self.last_loss = 0.0
        for lo in range(0, n, self.window):
            hi = min(lo + self.window, n)
            loss, users, items = self._window_reference(net, users, items, rows, lo, hi, level_all, collect)
            if optimizer is not None:  # None: parameters frozen (a test pass without online steps)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            users, items = users.detach(), items.detach()
            self.last_loss += float(loss.detach())
        return users, items

    # -- fast: same function, batched per window ---------------------------------------------------------
    def _plans(self, rows: dict) -> list[dict]:
        """Per window, the index tensors of the fast path: rows in t-batch order, the window's small state
        matrix (its users, then its items and previous items, "none" included) and each t-batch's slots in
        it, and the prediction layer's columns hit by the two one-hot blocks."""
        d, n_items, plans = self.dim, self.n_items, []
        t = lambda a: torch.as_tensor(a, device=self.device)  # noqa: E731
        for plan in window_plans(rows["user"], rows["item"], self.window):
            o = plan.order
            u, j, p = rows["user"][o], rows["item"][o], rows["prev"][o]
            users, u_slot = np.unique(u, return_inverse=True)
            items, i_slot = np.unique(np.r_[j, p], return_inverse=True)
            i_slot += len(users)
            j_slot, p_slot = i_slot[:len(o)], i_slot[len(o):]
            pair = np.stack([j_slot, u_slot], 1)  # each row's [item, user] slots
            bounds = list(zip(plan.offsets[:-1].tolist(), plan.offsets[1:].tolist()))
            real = items < n_items
            unique, inverse = np.unique(np.r_[2 * d + p, 2 * d + n_items + 1 + u], return_inverse=True)
            plans.append({
                "lo": plan.lo, "hi": plan.hi, "order": t(o), "weight": plan.weight.to(self.device),
                "bounds": bounds, "users": t(users), "items": t(items),
                "real_items": t(items[real]), "real_slots": t(len(users) + np.flatnonzero(real)),
                "pair": [t(pair[a:b].reshape(-1)) for a, b in bounds], "prev": [t(p_slot[a:b]) for a, b in bounds],
                "item_of": [t(j[a:b]) for a, b in bounds],
                "du": rows["du"][t(o)], "di": rows["di"][t(o)],
                "columns": t(unique), "inverse": t(inverse.reshape(2, -1)), "target": t(d + j)})
        return plans

    def _predicted_fast(self, net, u_state, prev_state, du, plan, selected=None, rows=slice(None)):
        """``JODIENet.predicted`` of the plan's rows ``rows`` with the one-hot blocks as selected weight
        columns (``OneHotLinear``); ``selected`` = those columns, precomputed (no gradient then)."""
        dense = torch.cat([u_state * (1 + net.project(du[:, None])), prev_state], 1)
        if selected is None:
            return OneHotLinear.apply(dense, net.predict.weight, net.predict.bias, plan["columns"], plan["inverse"],
                                      self._recycled)
        return OneHotLinear.value(dense, net.predict.weight, net.predict.bias, selected, plan["inverse"][:, rows])

    def _prediction_and_target(self, net, x, prev, plan):
        """The prediction layer's output j̃ for the plan's rows (``x`` = their [item; user] states before
        the row, ``prev`` = the previous item's state) and its MSE target [j state (detached); onehot(j)]."""
        d = self.dim
        pred = self._predicted_fast(net, x[:, d:], prev, plan["du"], plan)
        target = torch.zeros_like(pred)
        target[:, :d] = x[:, :d].detach()
        target[torch.arange(len(x), device=target.device), plan["target"]] = 1.0
        return pred, target

    def _recurrence_inputs(self, net, users, items, plan):
        """The window's small state matrix (users, then items and previous items, "none" included) and
        both RNN cells as one product: [j_state, u_state] -> [new_j, new_u] pre-activations (weight, bias)."""
        d = self.dim
        ur, ir = net.user_rnn, net.item_rnn
        none = F.normalize(net.initial_item, dim=0)[None]
        small = torch.cat([users.index_select(0, plan["users"]),
                           torch.cat([items, none]).index_select(0, plan["items"])])
        weight = torch.cat([torch.cat([ir.weight_hh, ir.weight_ih[:, :d]], 1),
                            torch.cat([ur.weight_ih[:, :d], ur.weight_hh], 1)])
        zero = torch.zeros_like(plan["du"])
        bias = torch.cat([F.linear(torch.stack([plan[delta], zero], 1), rnn.weight_ih[:, d:], rnn.bias_ih + rnn.bias_hh)
                          for delta, rnn in (("di", ir), ("du", ur))], 1)  # [Δ, f] part of the inputs, and biases
        return small, weight, bias

    def _window_fast(self, net, users, items, plan, collect=None):
        """The same loss as ``_window_reference`` for one window, and the updated (users, items) (detached)."""
        d = self.dim
        small, weight, bias = self._recurrence_inputs(net, users, items, plan)
        hook = None
        if collect is not None:
            now = items.detach().clone()  # the item states each t-batch scores against
            with torch.no_grad():
                selected = net.predict.weight.t().index_select(0, plan["columns"])

            def hook(k, x, prev_state, new):
                a, b = plan["bounds"][k]
                pred = self._predicted_fast(net, x[:, d:], prev_state, plan["du"][a:b], plan, selected, slice(a, b))
                dyn, onehot = pred[:, :d], pred[:, d:d + self.n_items]
                d2 = torch.cdist(dyn, now) ** 2 + (onehot ** 2).sum(1, keepdim=True) - 2 * onehot + 1
                collect(plan["order"][a:b] - plan["lo"], -d2)
                now.index_copy_(0, plan["item_of"][k], new[:, 0])

        x, prev, new, small = JODIERecurrence.apply(small, bias, weight, plan["pair"], plan["prev"], plan["bounds"],
                                                    hook)
        pred, target = self._prediction_and_target(net, x, prev, plan)
        row = F.mse_loss(pred, target, reduction="none").sum(1) / pred.shape[1] \
            + F.mse_loss(new, x.detach(), reduction="none").sum(1) / d
        loss = (row * plan["weight"]).sum()
        users = users.detach().index_copy(0, plan["users"], small[:len(plan["users"])])
        items = items.detach().index_copy(0, plan["real_items"], small.index_select(0, plan["real_slots"]))
        return loss, users, items

    def _pass_fast(self, net, optimizer, users, items, plans, collect=None):
        self.last_loss = 0.0
        for plan in plans:
            loss, users, items = self._window_fast(net, users, items, plan, collect)
            if optimizer is not None:  # None: parameters frozen (a test pass without online steps)
                self._recycled.recycle(net.predict.weight)
                zero_grads(optimizer)
                loss.backward()
                transposed_grads(optimizer)
                optimizer.step()
            self.last_loss += float(loss.detach())
        return users, items

    # -----------------------------------------------------------------------------------------------------
    def fit(self, stream: Stream, checkpoint=None, resume: ResumePoint | None = None) -> dict:
        """Train on the stream's training rows; ``checkpoint(epoch, self)``, when given, is called after
        every epoch (1-based; e.g. a TracIn recorder); ``resume`` keeps the training's state between
        processes (:mod:`recunlearn.models.resume`)."""
        self._ensure_net(stream.n_users)
        rows = self._features(stream, stream.train_positions)
        plans = self._plans(rows) if self.implementation == "fast" else None
        optimizer = self._optimizer(self.net)
        start = time.perf_counter()
        self.net.train()
        resume, curve, start = resume_epochs(resume, start, net=self.net, optimizer=optimizer,
                                             checkpoint=stateful(checkpoint))
        for epoch in range(len(curve), self.epochs):
            users, items = self._initial_states(stream.n_users)
            if plans is not None:
                users, items = self._pass_fast(self.net, optimizer, users, items, plans)
            else:
                users, items = self._pass(self.net, optimizer, users, items, rows)
            curve.append(self.last_loss)
            if checkpoint is not None:
                checkpoint(epoch + 1, self)
            resume.epoch_done(epoch + 1, self.epochs, curve=curve, train_seconds=time.perf_counter() - start)
        resume.finish()
        self.final = (users, items, copy.deepcopy(optimizer.state_dict()))
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    @torch.no_grad()
    def last_layer_terms(self, stream: Stream, lr: float) -> dict:
        """TracIn's terms of every training row at the current weights (no gradient, no optimiser step):
        one pass over the training windows from the initial states, as in an epoch; per row the
        prediction layer's input a = [û, previous item's state, onehot(prev), onehot(u)] (‖a‖² = ‖û‖² +
        ‖prev‖² + 2), its output j̃ and the MSE target over its D outputs (:mod:`recunlearn.perturb.tracin`).
        Changes nothing."""
        from ...perturb import tracin

        self._ensure_net(stream.n_users)
        net = self.net
        rows = self._features(stream, stream.train_positions)
        users, items = self._initial_states(stream.n_users)
        out = {key: np.zeros(len(rows["user"])) for key in ("influence", "feature_sq", "error_sq")}
        for plan in self._plans(rows):
            small, weight, bias = self._recurrence_inputs(net, users, items, plan)
            x, prev, _new, small = JODIERecurrence.apply(small, bias, weight, plan["pair"], plan["prev"],
                                                         plan["bounds"], None)
            pred, target = self._prediction_and_target(net, x, prev, plan)
            dense = torch.cat([x[:, self.dim:] * (1 + net.project(plan["du"][:, None])), prev], 1)
            features = torch.cat([dense, torch.ones(len(dense), 2, dtype=dense.dtype, device=dense.device)], 1)
            terms = tracin.last_layer_terms(tracin.mse_self_influence(features, pred, target, lr),
                                            features.double().pow(2).sum(1),
                                            (pred.double() - target.double()).pow(2).sum(1))
            order = plan["order"].cpu().numpy()
            for key in out:
                out[key][order] = terms[key]
            users = users.index_copy(0, plan["users"], small[:len(plan["users"])])
            items = items.index_copy(0, plan["real_items"], small.index_select(0, plan["real_slots"]))
        return out

    def test_scores(self, stream: Stream, online: bool = True):
        """Yield ``(source rows, targets, scores)`` per window of test rows; scores = -squared L2 distance (b, |I|).
        ``online``: one optimiser step per test window, as the authors' code (the default); False freezes
        the parameters (the states still follow the true interactions) and computes without gradients."""
        test = stream.test_positions
        rows = self._features(stream, test)
        net = copy.deepcopy(self.net)  # online learning at test time must not change the trained model
        users, items, state = self.final
        optimizer = self._optimizer(net) if online else None
        if optimizer is not None:
            # a copy: the online steps would update the kept tensors in place (as in LatentCross.test_scores)
            optimizer.load_state_dict(copy.deepcopy(state))
        if self.implementation == "fast":
            for plan in self._plans(rows):
                lo, hi = plan["lo"], plan["hi"]
                scores = torch.empty(hi - lo, self.n_items, device=self.device)

                def collect(r, s, scores=scores):
                    scores[r] = s

                with torch.set_grad_enabled(online):  # frozen: no graph, no gradient products
                    users, items = self._pass_fast(net, optimizer, users, items, [plan], collect)
                yield stream.row[test[lo:hi]], stream.item[test[lo:hi]], scores
            return
        for lo in range(0, len(test), self.window):
            hi = min(lo + self.window, len(test))
            scores = torch.empty(hi - lo, self.n_items, device=self.device)

            def collect(r, s, scores=scores):
                scores[torch.as_tensor(r, device=self.device)] = s

            window = {k: v[lo:hi] for k, v in rows.items()}
            with torch.set_grad_enabled(online):
                users, items = self._pass(net, optimizer, users, items, window, collect)
            yield stream.row[test[lo:hi]], stream.item[test[lo:hi]], scores

    def probe(self, stream: Stream, batch: int = 0) -> dict[str, torch.Tensor]:
        """From the current weights (eval mode; the model has no dropout): ``loss`` = summed loss of training
        window ``batch`` of an epoch whose earlier windows only advance the states (no optimiser step),
        ``grad/<name>`` = its gradient for every trainable parameter, ``scores`` = the scores of the first
        test window from the end-of-training states (the initial states before ``fit``). Changes nothing."""
        self._ensure_net(stream.n_users)
        net = self.net
        was_training = net.training
        net.eval()
        try:
            rows = self._features(stream, stream.train_positions)
            windows = -(-len(rows["user"]) // self.window)
            if not 0 <= batch < windows:
                raise IndexError(f"batch {batch} out of range: the training rows form {windows} windows")
            if self.implementation == "fast":
                plans = self._plans(rows)
                window = lambda b, users, items, collect=None: self._window_fast(  # noqa: E731
                    net, users, items, plans[b], collect)
            else:
                level_all = t_batches(rows["user"], rows["item"], self.window)

                def window(b, users, items, collect=None):
                    lo, hi = b * self.window, min((b + 1) * self.window, len(rows["user"]))
                    return self._window_reference(net, users, items, rows, lo, hi, level_all, collect)
            users, items = self._initial_states(stream.n_users)
            with torch.no_grad():
                for b in range(batch):
                    _, users, items = window(b, users, items)
                    users, items = users.detach(), items.detach()
            loss, _, _ = window(batch, users, items)
            named = [(n, p) for n, p in net.named_parameters() if p.requires_grad]
            grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
            out = {"loss": loss.detach()}
            out.update({f"grad/{n}": torch.zeros_like(p) if g is None else g for (n, p), g in zip(named, grads)})
            test = stream.test_positions[:self.window]
            rows = self._features(stream, test)
            if self.final is not None:
                users, items = self.final[0], self.final[1]
            else:
                users, items = (s.detach() for s in self._initial_states(stream.n_users))
            scores = torch.empty(len(test), self.n_items, device=self.device)

            def collect(r, s):
                scores[torch.as_tensor(r, device=self.device)] = s

            with torch.no_grad():
                if len(test) and self.implementation == "fast":
                    self._window_fast(net, users, items, self._plans(rows)[0], collect)
                elif len(test):
                    self._window_reference(net, users, items, rows, 0, len(test),
                                           t_batches(rows["user"], rows["item"], self.window), collect)
            out["scores"] = scores
            return out
        finally:
            net.train(was_training)
