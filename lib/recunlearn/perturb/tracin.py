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
(:func:`authors_proxy`). The authors built it for LatentCross only; the other models use the same
recipe on their own last layer: LSTM as LatentCross (its output layer's input and logits), JODIE the
prediction layer's input and the raw difference between prediction and target, TiSASRec the hidden state
and the raw scores minus their labels, ``(s⁺ - 1, s⁻)``.

Checkpoints (:func:`checkpoint_epochs`): the paper's epochs 10, 20, ..., 50 of a 50-epoch run, i.e. the
ends of five equal fifths of training; a run of E epochs uses ``ceil(E j / 5)`` for j = 1..5 (duplicates
dropped: E = 10 gives 2, 4, 6, 8, 10; E = 2 gives 1, 2). At each checkpoint the trainer hands its model
to a :class:`TracInRecorder` (only when asked: ``fit(stream, checkpoint=recorder)``), which takes, with
the weights of that epoch fixed, every training row's last-layer input and output in one pass without
gradients (the model's ``last_layer_terms``) and adds its terms; nothing of the training changes.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

LEARNING_RATE = 1e-3
CHECKPOINT_EPOCHS = (10, 20, 30, 40, 50)
TRACIN_VARIANTS = ("exact", "proxy")


def softmax_self_influence(features: torch.Tensor, logits: torch.Tensor, targets: torch.Tensor,
                           lr: float = LEARNING_RATE) -> torch.Tensor:
    """Per row: ``lr ‖softmax(logits) - onehot(target)‖² (‖features‖² + 1)`` (one checkpoint)."""
    error = torch.softmax(logits.double(), dim=1)
    error[torch.arange(len(targets), device=error.device), targets] -= 1.0
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
    error[torch.arange(len(targets), device=error.device), targets] -= 1.0
    return error.pow(2).sum(1)


def top_rows(scores: np.ndarray, positions: np.ndarray, k: int = 1) -> np.ndarray:
    """The ``k`` stream positions with the largest scores (ties: the earliest position), sorted."""
    order = np.lexsort((positions, -np.asarray(scores)))
    return np.sort(np.asarray(positions)[order[:k]])


def checkpoint_epochs(epochs: int) -> tuple[int, ...]:
    """The checkpoint epochs (1-based) of a run of ``epochs`` epochs: ``ceil(epochs j / 5)``, j = 1..5,
    without duplicates (50 epochs: the paper's 10, 20, 30, 40, 50)."""
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    return tuple(sorted({math.ceil(epochs * j / len(CHECKPOINT_EPOCHS)) for j in range(1, len(CHECKPOINT_EPOCHS) + 1)}))


def last_layer_terms(influence: torch.Tensor, features_sq: torch.Tensor, error_sq: torch.Tensor) -> dict:
    """One checkpoint's per-row terms as float64 numpy arrays: ``influence`` (η ‖∇‖², the exact
    score's summand), ``feature_sq`` (‖a‖²) and ``error_sq`` (the raw error's ‖·‖², the proxy's)."""
    return {"influence": influence.double().cpu().numpy(), "feature_sq": features_sq.double().cpu().numpy(),
            "error_sq": error_sq.double().cpu().numpy()}


def concat_terms(parts: list[dict]) -> dict:
    """Chunks of :func:`last_layer_terms` joined in order."""
    return {key: np.concatenate([p[key] for p in parts]) if parts else np.zeros(0)
            for key in ("influence", "feature_sq", "error_sq")}


class TracInRecorder:
    """Sums the last-layer terms of every training row of ``stream`` over the checkpoint epochs of a
    run of ``epochs`` epochs. Pass it as ``fit(stream, checkpoint=recorder)``; the model calls it after
    every epoch and it acts at the checkpoints only. ``scores(variant)`` then gives one score per
    training row (in ``stream.train_positions`` order)."""

    def __init__(self, stream, epochs: int, lr: float = LEARNING_RATE):
        self.stream, self.lr, self.epochs = stream, lr, checkpoint_epochs(epochs)
        n = len(stream.train_positions)
        self.influence, self.feature_sq, self.error_sq = np.zeros(n), np.zeros(n), np.zeros(n)
        self.recorded: list[int] = []
        self.seconds = 0.0

    def __call__(self, epoch: int, model) -> None:
        if epoch not in self.epochs:
            return
        start = time.perf_counter()
        terms = model.last_layer_terms(self.stream, self.lr)
        self.influence += terms["influence"]
        self.feature_sq += terms["feature_sq"]
        self.error_sq += terms["error_sq"]
        self.recorded.append(epoch)
        self.seconds += time.perf_counter() - start

    def state_dict(self) -> dict:
        """The sums and checkpoints recorded so far (kept with a training's state between processes)."""
        return {"influence": self.influence.copy(), "feature_sq": self.feature_sq.copy(),
                "error_sq": self.error_sq.copy(), "recorded": list(self.recorded), "seconds": self.seconds}

    def load_state_dict(self, state: dict) -> None:
        self.influence, self.feature_sq = state["influence"].copy(), state["feature_sq"].copy()
        self.error_sq, self.recorded, self.seconds = state["error_sq"].copy(), list(state["recorded"]), state["seconds"]

    def scores(self, variant: str = "exact") -> np.ndarray:
        """Per training row: ``exact`` = Σ_c η ‖∇ℓ‖²; ``proxy`` = the authors' product of norms."""
        if variant not in TRACIN_VARIANTS:
            raise ValueError(f"TracIn variant must be one of {TRACIN_VARIANTS}, got {variant!r}")
        if self.recorded != list(self.epochs):
            raise RuntimeError(f"TracIn checkpoints {self.epochs} expected, recorded {self.recorded}")
        if variant == "exact":
            return self.influence.copy()
        return authors_proxy(torch.as_tensor(self.feature_sq), torch.as_tensor(self.error_sq)).numpy()

    def select(self, variant: str = "exact", k: int = 1) -> np.ndarray:
        """The ``k`` training rows (stream positions) with the largest score (ties: the earliest)."""
        return top_rows(self.scores(variant), self.stream.train_positions, k)
