"""Top-K ranking metrics, computed for many users at once on torch tensors (CPU or GPU).

Every metric takes ``hits`` -- a ``(n_users, K)`` tensor, ``hits[u, r] = 1`` when the item at rank
``r + 1`` of user ``u``'s list is relevant -- and, where needed, ``n_relevant`` (number of relevant
items of each user, >= 1). It returns one value per user; averaging is left to the caller, over the
users it evaluates (CURE4Rec: uniformly over users with at least one test item).

Standard definitions and the CURE4Rec code's variants:

=============================  ========================================================
``ndcg_at_k``                  DCG@K / IDCG over ``min(|T_u|, K)`` positions (standard)
``ndcg_at_k_untruncated``      DCG@K / IDCG over all ``|T_u|`` positions (CURE4Rec code)
``hit_ratio_at_k``             1 if at least one hit in the top K (standard HR)
``recall_at_k``                hits / ``min(|T_u|, K)`` (standard, capped)
``hr_at_k_cure4rec``           hits / ``|T_u|`` (the CURE4Rec code's "HR", recall-like)
``mrr_at_k``                   1 / rank of the first hit within the top K, else 0
=============================  ========================================================

Gains are binary and the discount is ``1 / log2(rank + 1)`` with ranks starting at 1.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _discounts(k: int, device, dtype=torch.float64) -> Tensor:
    return 1.0 / torch.log2(torch.arange(2, k + 2, device=device, dtype=dtype))


def _ideal_dcg(n_ideal: Tensor, max_len: int) -> Tensor:
    """IDCG for ``n_ideal`` relevant items at the top: the cumulative sum of discounts."""
    cumulative = torch.cat([torch.zeros(1, device=n_ideal.device, dtype=torch.float64),
                            torch.cumsum(_discounts(max_len, n_ideal.device), 0)])
    return cumulative[n_ideal.long()]


def dcg_at_k(hits: Tensor) -> Tensor:
    """Discounted cumulative gain of the top-K hits of every user."""
    return (hits.double() * _discounts(hits.shape[1], hits.device)).sum(1)


def ndcg_at_k(hits: Tensor, n_relevant: Tensor) -> Tensor:
    """Standard NDCG@K: the ideal list holds ``min(|T_u|, K)`` relevant items."""
    k = hits.shape[1]
    return dcg_at_k(hits) / _ideal_dcg(n_relevant.clamp(max=k), k)


def ndcg_at_k_untruncated(hits: Tensor, n_relevant: Tensor) -> Tensor:
    """CURE4Rec code variant: IDCG summed over all ``|T_u|`` positions, so a user with more
    than K relevant items cannot reach 1."""
    return dcg_at_k(hits) / _ideal_dcg(n_relevant, int(n_relevant.max().item()))


def hit_ratio_at_k(hits: Tensor) -> Tensor:
    """Hit ratio: 1 if any of the top K is relevant, else 0."""
    return hits.any(1).double()


def recall_at_k(hits: Tensor, n_relevant: Tensor) -> Tensor:
    """Recall@K with the denominator capped at K: hits / min(|T_u|, K)."""
    return hits.double().sum(1) / n_relevant.clamp(max=hits.shape[1]).double()


def hr_at_k_cure4rec(hits: Tensor, n_relevant: Tensor) -> Tensor:
    """The CURE4Rec code's "HR@K": hits / |T_u| (recall with an uncapped denominator)."""
    return hits.double().sum(1) / n_relevant.double()


def mrr_at_k(hits: Tensor) -> Tensor:
    """Reciprocal rank of the first relevant item within the top K (0 when there is none)."""
    ranks = torch.arange(1, hits.shape[1] + 1, device=hits.device, dtype=torch.float64)
    reciprocal = torch.where(hits.bool(), 1.0 / ranks, torch.zeros_like(ranks))
    return reciprocal.max(1).values


METRICS = {
    "ndcg": lambda h, n: ndcg_at_k(h, n),
    "ndcg_untruncated": lambda h, n: ndcg_at_k_untruncated(h, n),
    "hit_ratio": lambda h, n: hit_ratio_at_k(h),
    "recall": lambda h, n: recall_at_k(h, n),
    "hr_cure4rec": lambda h, n: hr_at_k_cure4rec(h, n),
    "mrr": lambda h, n: mrr_at_k(h),
}
"""All per-user metrics by name, as ``f(hits, n_relevant)``."""


def top_k_hits(scores: Tensor, exclude_rows: Tensor, exclude_cols: Tensor,
               relevant_rows: Tensor, relevant_cols: Tensor, k: int) -> Tensor:
    """Hits of the top-K items of every row of ``scores`` after masking excluded items.

    ``exclude_*`` and ``relevant_*`` are COO coordinates (row within this batch, item). Excluded
    items get ``-inf`` and are never a hit: when a user has fewer than K candidates, the list is
    padded with excluded items, which count as misses even if they are also relevant. Ties keep
    ``torch.topk``'s order.
    """
    masked = scores.clone()
    masked[exclude_rows, exclude_cols] = float("-inf")
    top = torch.topk(masked, min(k, masked.shape[1]), dim=1).indices
    relevant = torch.zeros_like(masked, dtype=torch.bool)
    relevant[relevant_rows, relevant_cols] = True
    relevant[exclude_rows, exclude_cols] = False
    return relevant.gather(1, top)
