"""LightGCN (He et al., SIGIR 2020) on torch.sparse.

``A`` is the symmetric user-item adjacency of the training graph, ``A_hat = D^-1/2 A D^-1/2``,
``E^(l+1) = A_hat E^(l)`` and the final embedding is the mean of layers ``0..L``. Trained with BPR
on the final embeddings plus L2 on the layer-0 embeddings of the batch (see :func:`mf.bpr_loss`).

**Propagation cost.** Every training step propagates the whole graph (``L`` sparse products forward,
``L`` backward), so the sparse product is the model's cost. ``A_hat`` is built once per graph, as a
CSR tensor (a COO product is ~10x slower on a CPU) with 32-bit indices: torch's CPU kernel (MKL)
takes 32-bit indices and converts 64-bit ones on *every* product. The kernel is the same, so the
bits are those of 64-bit indices (``implementation="reference"``), checked by
``tests/unit/test_models.py`` and ``benchmarks/bench_lightgcn.py``. (Summing the layers as they are
computed instead of stacking them saves ~3 % of a step but changes the second derivative's
rounding when ``L + 1`` is not a power of two, which SCIF's Hessian products see: not done.)
"""

from __future__ import annotations

import copy
import warnings

import torch

from .base import Recommender, TrainingData
from .mf import pairwise_batch_loss


IMPLEMENTATIONS = ("reference", "fast")


def normalized_adjacency(data: TrainingData, index_dtype: torch.dtype = torch.int32) -> torch.Tensor:
    """``D^-1/2 A D^-1/2`` of the bipartite training graph as a sparse CSR tensor of size
    ``(n_users + n_items)^2`` (users first, items offset by ``n_users``). Isolated nodes get 0.
    Indices are ``index_dtype`` (``torch.int64`` when the graph is too large for 32 bits)."""
    n = data.n_users + data.n_items
    rows = torch.cat([data.users, data.items + data.n_users])
    cols = torch.cat([data.items + data.n_users, data.users])
    degree = torch.bincount(rows, minlength=n).double()
    inv_sqrt = torch.where(degree > 0, degree.rsqrt(), torch.zeros_like(degree))
    values = (inv_sqrt[rows] * inv_sqrt[cols]).float()
    coo = torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (n, n), check_invariants=False)
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        csr = coo.coalesce().to_sparse_csr()
    if index_dtype == torch.int64 or max(n, len(rows)) >= 2 ** 31:
        return csr
    return torch.sparse_csr_tensor(csr.crow_indices().to(index_dtype), csr.col_indices().to(index_dtype),
                                   csr.values(), csr.shape, check_invariants=False)


class _SymmetricSparseProduct(torch.autograd.Function):
    """``A @ x`` for a constant symmetric sparse ``A``: the gradient is ``A @ grad`` (much faster than
    autograd through ``torch.sparse.mm``, which also builds a gradient for ``A``). The backward is
    this function again, so propagation can be differentiated twice (SCIF's Hessian-vector products)."""

    @staticmethod
    def forward(ctx, adjacency, x):
        ctx.adjacency = adjacency
        return torch.sparse.mm(adjacency, x)

    @staticmethod
    def backward(ctx, grad):
        return None, _SymmetricSparseProduct.apply(ctx.adjacency, grad)


def propagate(adjacency: torch.Tensor, ego: torch.Tensor, n_layers: int) -> torch.Tensor:
    """Mean of ``A_hat^l ego`` over ``l = 0..n_layers`` (``adjacency`` must be symmetric)."""
    layers, current = [ego], ego
    for _ in range(n_layers):
        current = _SymmetricSparseProduct.apply(adjacency, current)
        layers.append(current)
    return torch.stack(layers).mean(0)


class LightGCN(Recommender):
    """LightGCN with ``n_layers`` propagation layers over the graph given by :meth:`set_graph`
    (for a blocked dataset the graph is block-diagonal: each block propagates over its own shard).
    ``implementation="reference"`` propagates with 64-bit graph indices (same bits, slower; see the
    module docstring)."""

    def __init__(self, n_users, n_items, dim, generator, n_layers=3, batch_size=512, n_negatives=4, l2=1e-4,
                 init_std=0.1, n_blocks=1, implementation: str = "fast"):
        super().__init__(n_users, n_items, dim, generator, init_std, n_blocks)
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
        self.n_layers, self.batch_size, self.n_negatives, self.l2 = n_layers, batch_size, n_negatives, l2
        self.implementation = implementation
        self.adjacency: torch.Tensor | None = None

    def set_graph(self, data: TrainingData) -> None:
        reference = self.implementation == "reference"
        self.adjacency = normalized_adjacency(data, torch.int64 if reference else torch.int32)

    def __deepcopy__(self, memo):
        """A deep copy that shares the training graph: torch cannot deep-copy a sparse CSR tensor, and
        the graph is constant (:meth:`set_graph` replaces it, never changes it in place)."""
        copied = self.__class__.__new__(self.__class__)
        memo[id(self)] = copied
        for key, value in self.__dict__.items():
            copied.__dict__[key] = value if key == "adjacency" else copy.deepcopy(value, memo)
        return copied

    def prepare(self, data: TrainingData) -> None:
        """Propagate over ``data``'s graph from now on (the trainer calls this before training)."""
        self.set_graph(data)

    def embeddings(self):
        if self.adjacency is None:
            raise RuntimeError("LightGCN needs its training graph: call set_graph(training_data) first")
        final = propagate(self.adjacency, torch.cat([self.user_embedding, self.item_embedding]), self.n_layers)
        return final[: self.n_users], final[self.n_users:]

    def batches(self, data, generator, active_blocks=None):
        yield from data.positive_triples(self.batch_size, self.n_negatives, generator, active_blocks)

    def batch_loss(self, batch):
        return pairwise_batch_loss(self, batch)
