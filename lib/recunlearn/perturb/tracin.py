"""TracIn (Pruthi et al., NeurIPS 2020) as a CASPER baseline: the training row with the largest
self-influence, from the last layer's gradients at checkpoints.

Self-influence of a training row z: ``Σ_c η ‖∇_W ℓ(θ_c, z)‖²`` over checkpoints c (epochs 10, 20, ...,
50), η = 0.001, with the gradient taken with respect to the last layer only. For a linear last layer
``logits = W a + b`` the per-row gradient factorises, ``∇_W ℓ = e aᵀ`` and ``∇_b ℓ = e``, so

    ‖∇_{W,b} ℓ‖² = ‖e‖² (‖a‖² + 1)

with ``e = ∂ℓ/∂logits``: ``softmax(logits) - onehot(target)`` for softmax cross-entropy (LSTM,
LatentCross), ``(2 / D)(ŷ - y)`` for a mean squared error over D outputs (JODIE's prediction layer).
No per-row backward pass is needed: every row's score comes from its features ``a`` and outputs at
the checkpoint (:func:`softmax_self_influence`, :func:`mse_self_influence`), vectorised over rows.
TiSASRec has no output layer (scores are dot products with item embeddings): its score uses the
gradient of the loss with respect to the final hidden state at the row's position,
``g = (σ(s⁺) - 1) E[i⁺] + σ(s⁻) E[i⁻]`` (:func:`bce_hidden_self_influence`).

``proxy``: the authors' code scored rows by ``sqrt(Σ_c ‖a_c‖²) · sqrt(Σ_c ‖logits_c - onehot‖²)`` (a
product of norms, η dropped, raw logits instead of probabilities); kept as a named variant
(:func:`authors_proxy`).
"""

from __future__ import annotations

import numpy as np
import torch

LEARNING_RATE = 1e-3
CHECKPOINT_EPOCHS = (10, 20, 30, 40, 50)
TRACIN_VARIANTS = ("exact", "proxy")


def softmax_self_influence(features: torch.Tensor, logits: torch.Tensor, targets: torch.Tensor,
                           lr: float = LEARNING_RATE) -> torch.Tensor:
    """Per row: ``lr ‖softmax(logits) - onehot(target)‖² (‖features‖² + 1)`` (one checkpoint)."""
    error = torch.softmax(logits.double(), dim=1)
    error[torch.arange(len(targets)), targets] -= 1.0
    return lr * error.pow(2).sum(1) * (features.double().pow(2).sum(1) + 1.0)


def mse_self_influence(features: torch.Tensor, predictions: torch.Tensor, truth: torch.Tensor,
                       lr: float = LEARNING_RATE) -> torch.Tensor:
    """Per row, for a last layer trained by the mean squared error over its D outputs:
    ``lr ‖(2 / D)(prediction - truth)‖² (‖features‖² + 1)``."""
    error = 2.0 / predictions.shape[1] * (predictions.double() - truth.double())
    return lr * error.pow(2).sum(1) * (features.double().pow(2).sum(1) + 1.0)


def bce_hidden_self_influence(hidden: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor,
                              lr: float = LEARNING_RATE) -> torch.Tensor:
    """Per row, for dot-product scores trained by binary cross-entropy on one positive and one
    negative item embedding: ``lr ‖(σ(h·E⁺) - 1) E⁺ + σ(h·E⁻) E⁻‖²`` (the gradient at the hidden state)."""
    h, pos, neg = hidden.double(), positive.double(), negative.double()
    grad = (torch.sigmoid((h * pos).sum(1, keepdim=True)) - 1.0) * pos + torch.sigmoid((h * neg).sum(1, keepdim=True)) * neg
    return lr * grad.pow(2).sum(1)


def authors_proxy(feature_norms_sq: torch.Tensor, logit_error_norms_sq: torch.Tensor) -> torch.Tensor:
    """The authors' score from per-checkpoint sums: ``sqrt(Σ_c ‖a_c‖²) · sqrt(Σ_c ‖logits_c - onehot‖²)``."""
    return feature_norms_sq.double().sqrt() * logit_error_norms_sq.double().sqrt()


def logit_error_norms_sq(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``‖logits - onehot(target)‖²`` per row (the authors' proxy uses raw logits)."""
    error = logits.double().clone()
    error[torch.arange(len(targets)), targets] -= 1.0
    return error.pow(2).sum(1)


def top_rows(scores: np.ndarray, positions: np.ndarray, k: int = 1) -> np.ndarray:
    """The ``k`` stream positions with the largest scores (ties: the earliest position), sorted."""
    order = np.lexsort((positions, -np.asarray(scores)))
    return np.sort(np.asarray(positions)[order[:k]])
