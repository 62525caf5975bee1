"""A full-softmax output layer with its cross-entropy, fused: the loss and all its gradients in one pass.

Next-item models with a catalogue-sized output layer (``Linear(d -> |I| + 1)``, softmax
cross-entropy over every item) spend most of an epoch on three products with the (rows x |I|)
logits (forward, the gradient of the input, the gradient of the weight) and on fresh (rows x |I|)
tensors for the logits, the log-probabilities and their gradient. :class:`LinearCrossEntropy`
computes ``sum_r row_weight[r] * cross_entropy(z_r W^T + b, target[r])`` and every gradient in the
forward pass, in blocks of rows (:func:`row_block`) whose logits stay in cache from the product
that makes them to the products that use their gradient ``row_weight * (softmax - one-hot)``; no
(rows x |I|) matrix is written to memory unless the caller asks for the scores. Used by the SRU chapter's session models and by
CASPER's LatentCross.

:func:`linear` is ``x @ w^T (+ b)`` through oneDNN where it is available and agrees with
``torch.mm`` (it uses AVX-512 on CPUs where the default BLAS uses narrower vectors: measured about
twice as fast for these shapes on the study's CPU), else ``torch.nn.functional.linear``.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

BLOCK_ELEMENTS = 2 ** 21
"""Logits per row block (8 MiB of float32): a block's logits stay in a large cache between the
products (measured on Games, |I| = 23,716: 44-88 rows fastest of 22 to 256)."""
PRODUCTS = ("onednn", "torch")
"""How :class:`LinearCrossEntropy` takes its products: ``onednn`` through :func:`linear`, ``torch``
through ``torch.addmm`` / ``torch.mm`` (the default BLAS)."""


def _onednn_linear():
    """``x @ w^T (+ b)`` through oneDNN's linear operator, or None where it is missing or disagrees
    with ``torch.mm`` on a small check."""
    if not torch.backends.mkldnn.is_available():
        return None
    try:
        op = torch.ops.mkldnn._linear_pointwise.default
        gen = torch.Generator().manual_seed(0)
        x, w, b = torch.randn(37, 64, generator=gen), torch.randn(48, 64, generator=gen), torch.randn(48, generator=gen)
        if torch.allclose(op(x, w, b, "none", [], ""), torch.addmm(b, x, w.t()), rtol=1e-5, atol=1e-5):
            return lambda x, w, b=None: op(x, w, b, "none", [], "")
    except Exception:  # noqa: BLE001 -- any failure: use torch's own product
        pass
    return None


_ONEDNN = _onednn_linear()


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ weight^T + bias`` (no autograd graph through oneDNN: use inside ``no_grad`` or an
    autograd function). oneDNN on contiguous float32 CPU tensors where available, else ``F.linear``."""
    if (_ONEDNN is not None and x.device.type == "cpu" and x.dtype == torch.float32 and x.numel()
            and weight.numel()):
        return _ONEDNN(x.contiguous(), weight.contiguous(), None if bias is None else bias.contiguous())
    return F.linear(x, weight, bias)


def row_block(n_out: int) -> int:
    """Rows per block for ``n_out`` classes: :data:`BLOCK_ELEMENTS` logits, between 16 and 256 rows."""
    return max(16, min(256, BLOCK_ELEMENTS // max(n_out, 1)))


class _Block:
    """A reused buffer for the logits of one row block, grown when needed (a fresh 8 MiB tensor per
    block would cost a page fault per 4 KiB whenever the allocator returns it to the system)."""

    def __init__(self):
        self.data = torch.empty(0)

    def take(self, rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
        if self.data.numel() < rows * cols or self.data.dtype != like.dtype or self.data.device != like.device:
            self.data = torch.empty(rows * cols, dtype=like.dtype, device=like.device)
        return self.data[:rows * cols].view(rows, cols)


_BLOCK = _Block()


class LinearCrossEntropy(torch.autograd.Function):
    """``(loss, scores)``: ``loss = sum_r row_weight[r] * cross_entropy(z_r W^T + b, target[r])``;
    ``scores`` = the first ``n_scores`` logits of each row (no gradient), or an empty tensor when
    ``n_scores`` is 0. Same value and gradients as ``F.cross_entropy(F.linear(z, W, b), target,
    reduction="none") @ row_weight`` up to float rounding.

    The forward pass computes the gradients too, in blocks of ``rows`` rows (default
    :func:`row_block`): a block's logits ``l`` give the row loss ``max(l) + log(sum(exp(l - max(l))))
    - l[target]`` and, while in cache, become ``row_weight * (softmax - one-hot)``, which goes
    straight into the products for z, W and b. ``products`` is one of :data:`PRODUCTS`. The backward
    pass scales the stored gradients by the incoming gradient."""

    @staticmethod
    def forward(ctx, z, weight, bias, target, row_weight, n_scores=0, rows=None, products="onednn"):
        if products not in PRODUCTS:
            raise ValueError(f"products must be one of {PRODUCTS}, got {products!r}")
        grads = any(ctx.needs_input_grad[:3])
        n, n_out = z.shape[0], weight.shape[0]
        rows = rows or row_block(n_out)
        onednn = products == "onednn"
        scores = z.new_empty(n, n_scores) if n_scores else z.new_empty(0)
        if grads:
            grad_z, grad_w, grad_b = torch.empty_like(z), torch.zeros_like(weight), torch.zeros_like(bias)
            weight_t = weight.t().contiguous() if onednn else None  # oneDNN reads (d, n_out) row by row
        losses = []
        for lo in range(0, n, rows):
            hi = min(lo + rows, n)
            zb, tb, wb = z[lo:hi], target[lo:hi, None], row_weight[lo:hi]
            if onednn:
                logits = linear(zb, weight, bias)
            else:
                logits = torch.addmm(bias, zb, weight.t(), out=_BLOCK.take(hi - lo, n_out, z))
            if n_scores:
                scores[lo:hi] = logits[:, :n_scores]
            picked = logits.gather(1, tb)[:, 0]
            top = logits.amax(1)
            e = logits.sub_(top[:, None]).exp_()
            total = e.sum(1)
            losses.append(((top + total.log() - picked) * wb).sum())
            if grads:  # d loss / d logits = row weight * (softmax - one-hot)
                g = e.mul_((wb / total)[:, None]).scatter_add_(1, tb, -wb[:, None])
                if onednn:
                    grad_z[lo:hi] = linear(g, weight_t)
                else:
                    torch.mm(g, weight, out=grad_z[lo:hi])
                grad_w.addmm_(g.t(), zb)
                grad_b.add_(g.sum(0))
        ctx.grads = (grad_z, grad_w, grad_b) if grads else None
        ctx.mark_non_differentiable(scores)
        loss = torch.stack(losses).sum() if losses else z.new_zeros(())
        return loss, scores

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_loss, _grad_scores):
        grad_z, grad_w, grad_b = ctx.grads
        ctx.grads = None
        none = (None,) * 5
        if float(grad_loss) == 1.0:  # the usual case: no copies (x * 1.0 would give the same values)
            return grad_z, grad_w, grad_b, *none
        return grad_z * grad_loss, grad_w * grad_loss, grad_b * grad_loss, *none


def linear_cross_entropy(z: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, target: torch.Tensor,
                         row_weight: torch.Tensor | None = None) -> torch.Tensor:
    """The fused ``F.cross_entropy(F.linear(z, weight, bias), target)`` (a mean over rows), or the
    ``row_weight``-weighted sum of the rows' losses when given."""
    if row_weight is None:
        row_weight = torch.full((z.shape[0],), 1.0 / max(z.shape[0], 1), dtype=z.dtype, device=z.device)
    return LinearCrossEntropy.apply(z, weight, bias, target, row_weight)[0]


@torch.no_grad()
def blocked_target_ranks(z: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, targets: torch.Tensor,
                         rank_fn) -> torch.Tensor:
    """``rank_fn(z W^T + b, targets)`` computed over row blocks (:func:`row_block`), so that no
    (rows x classes) score matrix is written to memory; returns the concatenated ranks."""
    rows = row_block(weight.shape[0])
    parts = [rank_fn(linear(z[lo:lo + rows], weight, bias), targets[lo:lo + rows]) for lo in range(0, len(z), rows)]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long, device=z.device)
