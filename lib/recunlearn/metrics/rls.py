"""Rank-list sensitivity (RLS) metrics for CASPER, vectorised over many lists.

A *rank list* orders all items by a model's score. Two runs' lists are compared per test
interaction. With ``X_d = |A[:d] ∩ B[:d]|`` (d = 1..n) every similarity below is a weighted sum of
``X_d / d``; ``X`` for B pairs of lists is computed at once, without a Python loop:

    pos_a, pos_b = rank of each item in A and in B
    depth        = max(pos_a, pos_b)     # the (0-based) depth at which the item is in both prefixes
    X            = cumsum(histogram(depth))

Definitions (all averaged over test interactions by the caller):

- :func:`average_overlap` — AO = (1/n) Σ_d X_d/d. **This is what the CASPER paper reports as
  "RBO"**: every version of the authors' code calls ``rbo.RankingSimilarity(A, B).rbo()`` whose
  defaults are p = 1, i.e. AO over the full list. Two random permutations give
  (n+1)/(2n) ≈ 0.5, the paper's "random shuffling" reference.
- :func:`rbo_min` — (1-p) Σ_{d≤n} p^{d-1} X_d/d, the paper's formula (= ``rbo(p=p)``).
- :func:`rbo_ext` — rbo_min + (X_n/n) p^n (= ``rbo(p=p, ext=True)`` for equal-length lists).
- :func:`jaccard_at_k` — |top-k(A) ∩ top-k(B)| / |top-k(A) ∪ top-k(B)| = X_k / (2k - X_k).

Next-item metrics of one run: :func:`target_ranks` (1 + number of items strictly better than the
ground truth), MRR = mean 1/rank, Recall@10 = share with rank ≤ 10.
"""

from __future__ import annotations

import numpy as np
import torch


def _tensor(x) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))


def rank_lists(scores, descending: bool = True) -> torch.Tensor:
    """Item ids by rank, shape (B, n), from a (B, n) score matrix; tied items keep id order (the order
    of a stable sort). ``descending=False`` for distances (JODIE). NaN scores are refused.

    Float32 scores on the CPU are ranked by one unstable sort of a unique 64-bit key per item, (score
    as an order-preserving integer) * 2^32 + item id, which gives the stable order at the speed of
    numpy's vectorised integer sort; other inputs use a stable sort."""
    scores = _tensor(scores)
    if torch.isnan(scores).any():
        raise ValueError("rank_lists: scores contain NaN, which has no rank")
    if scores.dtype == torch.float32 and scores.device.type == "cpu" and scores.dim() == 2:
        return _rank_by_composite_key(scores, descending)
    keys = -scores if descending else scores
    return torch.sort(keys, dim=1, stable=True).indices


def _rank_by_composite_key(scores: torch.Tensor, descending: bool) -> torch.Tensor:
    bits = (scores.detach() + 0.0).numpy().view(np.int32)  # + 0.0 turns -0.0 into +0.0 (they tie)
    order = bits ^ ((bits >> 31) & 0x7FFFFFFF)  # float order as signed-integer order
    if descending:
        order = ~order  # reverses the order without overflow
    keys = (order.astype(np.int64) << 32) | np.arange(scores.shape[1], dtype=np.int64)
    keys.sort(axis=1)
    return torch.from_numpy(keys & 0xFFFFFFFF)


def overlap_counts(lists_a, lists_b) -> torch.Tensor:
    """``X[b, d-1] = |A_b[:d] ∩ B_b[:d]|`` for two (B, n) tensors of item-id permutations (int64)."""
    a, b = _tensor(lists_a).long(), _tensor(lists_b).long()
    if a.shape != b.shape or a.dim() != 2:
        raise ValueError(f"expected two (B, n) lists of the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    n = a.shape[1]
    ar = torch.arange(n, device=a.device).expand_as(a)
    pos_a = torch.empty_like(a).scatter_(1, a, ar)
    pos_b = torch.empty_like(b).scatter_(1, b, ar)
    depth = torch.maximum(pos_a, pos_b)
    hist = torch.zeros_like(a).scatter_add_(1, depth, torch.ones_like(a))
    return torch.cumsum(hist, dim=1)


def _depths(n: int, device) -> torch.Tensor:
    return torch.arange(1, n + 1, dtype=torch.float64, device=device)


def _within(X: torch.Tensor, lengths) -> torch.Tensor:
    """(B, n) float mask of the depths 1..length of each row (all ones without ``lengths``)."""
    d = _depths(X.shape[1], X.device)
    if lengths is None:
        return torch.ones_like(X, dtype=torch.float64)
    return (d[None, :] <= _tensor(lengths).to(X.device).double()[:, None]).double()


def _length_column(X: torch.Tensor, lengths) -> torch.Tensor:
    n = X.shape[1]
    return torch.full((X.shape[0],), n, device=X.device) if lengths is None else _tensor(lengths).to(X.device).long()


def average_overlap(X: torch.Tensor, lengths=None) -> np.ndarray:
    """AO per list pair from :func:`overlap_counts` — the CASPER paper's "RBO" (rbo's default p = 1).
    ``lengths``: per pair, compare only the first ``length`` ranks (lists whose remaining items are
    the same excluded items, in the same order, in both lists: e.g. a user's training items)."""
    d = _depths(X.shape[1], X.device)
    mask = _within(X, lengths)
    return ((X.double() / d) * mask).sum(dim=1).div(mask.sum(dim=1)).cpu().numpy()


def rbo_min(X: torch.Tensor, p: float = 0.9, lengths=None) -> np.ndarray:
    """Truncated RBO, (1-p) Σ_{d=1..n} p^{d-1} X_d/d (the paper's formula; ``rbo(p=p)``); n = each
    pair's ``length`` when given."""
    d = _depths(X.shape[1], X.device)
    weights = (1 - p) * torch.pow(torch.tensor(p, dtype=torch.float64, device=X.device), d - 1)
    return ((X.double() / d) * weights * _within(X, lengths)).sum(dim=1).cpu().numpy()


def rbo_ext(X: torch.Tensor, p: float = 0.9, lengths=None) -> np.ndarray:
    """Extrapolated RBO, rbo_min + (X_n/n)·p^n (``rbo(p=p, ext=True)`` for equal-length lists)."""
    n = _length_column(X, lengths)
    x_n = X.gather(1, (n - 1).view(-1, 1)).squeeze(1).double()
    tail = (x_n / n.double() * torch.pow(torch.tensor(p, dtype=torch.float64, device=X.device), n.double()))
    return rbo_min(X, p, lengths) + tail.cpu().numpy()


def jaccard_at_k(X: torch.Tensor, k: int = 10, lengths=None) -> np.ndarray:
    """Jaccard similarity of the two top-k sets, X_k / (2k - X_k) (k capped at the list length)."""
    k_row = torch.clamp(_length_column(X, lengths), max=k)
    x = X.gather(1, (k_row - 1).view(-1, 1)).squeeze(1).double()
    return (x / (2 * k_row.double() - x)).cpu().numpy()


def rls_metrics(lists_a, lists_b, p: float = 0.9, k: int = 10, lengths=None) -> dict[str, np.ndarray]:
    """Per-pair ``ao`` (the paper's "RBO"), ``rbo_min`` and ``rbo_ext`` at ``p``, ``jaccard`` at ``k``;
    ``lengths``: compare each pair's first ``length`` ranks only (see :func:`average_overlap`)."""
    X = overlap_counts(lists_a, lists_b)
    return {"ao": average_overlap(X, lengths), "rbo_min": rbo_min(X, p, lengths), "rbo_ext": rbo_ext(X, p, lengths),
            "jaccard": jaccard_at_k(X, k, lengths)}


def target_ranks(scores, targets, descending: bool = True) -> np.ndarray:
    """1-based rank of each row's target: 1 + number of items with a strictly better score."""
    scores, targets = _tensor(scores), _tensor(targets).long().to(_tensor(scores).device)
    own = scores.gather(1, targets.view(-1, 1))
    better = (scores > own) if descending else (scores < own)
    return (better.sum(dim=1) + 1).cpu().numpy()


def mrr(ranks: np.ndarray) -> float:
    """Mean reciprocal rank over the given test interactions."""
    return float(np.mean(1.0 / np.asarray(ranks, dtype=np.float64)))


def recall_at_k(ranks: np.ndarray, k: int = 10) -> float:
    """Share of test interactions whose target ranks in the top ``k``."""
    return float(np.mean(np.asarray(ranks) <= k))


def ao_of_random_permutations(n: int) -> float:
    """Expected AO of two independent uniformly random permutations of n items: (n+1)/(2n)."""
    return (n + 1) / (2 * n)
