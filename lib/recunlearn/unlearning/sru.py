"""SRU (Xin et al., WSDM 2024): unlearning in session-based recommendation.

The parts that do not depend on a particular session model:

- **Partition**: sessions into K shards by RecEraser's balanced k-means on a pre-trained model's
  final hidden states (:func:`session_partition`; capacity ``n // K + 6`` as the authors' code,
  anchors moved to the per-dimension mean, the code's scalar mean as ``centroid="scalar"``); the
  SISA baseline cuts a seeded shuffle (:func:`~recunlearn.unlearning.partition.random_partition`).
- **Unlearning requests** (:func:`draw_requests`): in every shard, ``int(0.2 * n_shard)`` sessions
  drawn at random; in each, the unlearning item at a position drawn uniformly from the latter half,
  ``[floor(L / 2), L - 1]``. One draw per (data, partition, seed), shared by every method and
  extra-deletion strategy.
- **What is deleted** (:func:`remaining_part`): ``suffix`` (default) removes the unlearning item and
  everything after it; ``suffix-code`` is the authors' code, which also removes the item just before
  it; ``item`` removes the unlearning item alone.
- **Extra deletion** (:func:`extra_deletion`) of ``n`` more items from what remains: ``ced`` the items
  whose pre-trained embeddings have the largest absolute cosine with the unlearning item's, ``ned``
  the ``n`` items closest to it (the last ones), ``red`` ``n`` random ones.
- **HIT@K** (:func:`hit_at_k`): for every unlearning session, the remaining sequence is the query and
  the unlearning item is ranked among itself and 500 negatives drawn uniformly from the items not in
  the query (seeded); HIT@K is the share ranked in the top K (lower = better forgotten; a random
  ranking gives K / 501). A tie counts against the unlearning item.
- **Aggregators** over K frozen sub-models' final hidden states (:class:`AttentiveAggregator`):
  shard-specific affine maps ``e_k = h_k W_k + b_k``; attention ``s_k = h^T ReLU(W_U^T (e_k ⊙ ĉ_k) + b_U)``
  with ``ĉ_k`` the shard's centroid through the same map (SRU), or without the centroid factor
  (RecEraser-style); softmax over shards, ``z = Σ α_k e_k``, a new output layer. SISA averages the
  sub-models' softmax probabilities (:func:`average_probabilities`). :class:`ShardEnsemble` serves K
  frozen sub-models and one of these aggregates as a session model (``scores(windows)``).
- **Affected shards** (:func:`affected_shards`): those holding an unlearning session, the ones
  SISA-style exact unlearning retrains.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..data.sessions import Sessions
from ..models.output_layer import blocked_target_ranks, linear_cross_entropy
from .partition import balanced_kmeans

TRUNCATIONS = ("suffix", "suffix-code", "item")
EXTRA_DELETIONS = ("none", "ced", "ned", "red")
REQUEST_FRACTION = 0.2
N_NEGATIVES = 500
HIT_KS = (1, 5, 10, 20)


def _check(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name} = {value!r}: allowed {', '.join(map(repr, allowed))}")


# --- partition ----------------------------------------------------------------------------------------

def session_partition(states: np.ndarray, n_shards: int, seed: int, n_iterations: int = 50,
                      centroid: str = "mean") -> np.ndarray:
    """Shard of every session from its final hidden state (balanced k-means, capacity ``n // K + 6``)."""
    n = len(states)
    return balanced_kmeans(states, n_shards, seed, n_iterations=n_iterations, capacity=n // n_shards + 6,
                           centroid=centroid)


# --- unlearning requests ------------------------------------------------------------------------------

@dataclass(frozen=True)
class UnlearningRequests:
    """One unlearning item per chosen session: ``session`` (index into the training sessions),
    ``position`` (0-based) and ``item``."""

    session: np.ndarray
    position: np.ndarray
    item: np.ndarray

    def __len__(self) -> int:
        return len(self.session)


def draw_requests(sessions: Sessions, shard_of_session: np.ndarray, seed: int,
                  fraction: float = REQUEST_FRACTION) -> UnlearningRequests:
    """``int(fraction * n_k)`` sessions of every shard k (seeded), each with one unlearning item
    drawn from the latter half of the session; sorted by session."""
    rng = np.random.default_rng([seed, 11])
    shard_of_session = np.asarray(shard_of_session)
    chosen = []
    for shard in np.unique(shard_of_session):
        members = np.flatnonzero(shard_of_session == shard)
        chosen.append(rng.choice(members, size=int(len(members) * fraction), replace=False))
    session = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, np.int64)
    lengths = sessions.lengths[session]
    low = lengths // 2
    position = low + np.floor(rng.random(len(session)) * (lengths - low)).astype(np.int64)
    item = sessions.items[sessions.offsets[session] + position]
    return UnlearningRequests(session.astype(np.int64), position, item)


def affected_shards(shard_of_session: np.ndarray, requests: UnlearningRequests) -> np.ndarray:
    """Sorted shards that hold at least one unlearning session of ``requests``."""
    return np.unique(np.asarray(shard_of_session, dtype=np.int64)[requests.session])


def remaining_part(sequence: np.ndarray, position: int, truncation: str = "suffix") -> np.ndarray:
    """What is left of ``sequence`` once its item at ``position`` is unlearned (see the module doc)."""
    _check("truncation", truncation, TRUNCATIONS)
    if truncation == "suffix":
        return sequence[:position]
    if truncation == "suffix-code":
        return sequence[:max(position - 1, 0)]
    return np.delete(sequence, position)


def extra_deletion(remaining: np.ndarray, item: int, n: int, way: str, item_embeddings: np.ndarray | None = None,
                   rng: np.random.Generator | None = None) -> np.ndarray:
    """``remaining`` without ``n`` more items chosen by ``way`` (order kept; all of it when ``n`` >= its length)."""
    _check("extra deletion", way, EXTRA_DELETIONS)
    if way == "none" or n <= 0 or len(remaining) == 0:
        return remaining
    if n >= len(remaining):
        return remaining[:0]
    if way == "ned":
        return remaining[:len(remaining) - n]
    if way == "red":
        if rng is None:
            raise ValueError("extra deletion 'red' needs a seeded rng")
        drop = rng.choice(len(remaining), size=n, replace=False)
    else:
        if item_embeddings is None:
            raise ValueError("extra deletion 'ced' needs the pre-trained item embeddings")
        target = item_embeddings[item]
        others = item_embeddings[remaining]
        cosine = np.abs(others @ target) / np.maximum(np.linalg.norm(others, axis=1) * np.linalg.norm(target), 1e-12)
        drop = np.argsort(-cosine, kind="stable")[:n]
    return np.delete(remaining, drop)


def apply_requests(sessions: Sessions, requests: UnlearningRequests, truncation: str = "suffix", way: str = "none",
                   n_extra: int = 0, item_embeddings: np.ndarray | None = None, seed: int = 0) -> Sessions:
    """The training sessions after the requests (and the extra deletion) are carried out."""
    _check("truncation", truncation, TRUNCATIONS)
    _check("extra deletion", way, EXTRA_DELETIONS)
    rng = np.random.default_rng([seed, 13])
    sequences = sessions.tolist()
    for session, position, item in zip(requests.session, requests.position, requests.item):
        kept = remaining_part(np.asarray(sequences[session]), int(position), truncation)
        sequences[session] = extra_deletion(kept, int(item), n_extra, way, item_embeddings, rng).tolist()
    return Sessions.from_lists(sequences, sessions.ids)


# --- HIT@K --------------------------------------------------------------------------------------------

def draw_negatives(queries: list[np.ndarray], targets: np.ndarray, n_items: int, n_negatives: int = N_NEGATIVES,
                   seed: int = 0) -> np.ndarray:
    """``n_negatives`` distinct items per query, drawn uniformly from 1..n_items, none in the query's
    sequence and none equal to its target; shape ``(len(queries), n_negatives)``."""
    rng = np.random.default_rng([seed, 17])
    rows = len(queries)
    out = np.zeros((rows, n_negatives), dtype=np.int64)
    for row, (query, target) in enumerate(zip(queries, targets)):
        banned = np.union1d(np.asarray(query, dtype=np.int64), [target])
        if n_items - len(banned) < n_negatives:
            raise ValueError(f"only {n_items - len(banned)} items can be negatives for query {row}; "
                             f"{n_negatives} were asked for")
        picked = np.zeros(0, dtype=np.int64)
        while len(picked) < n_negatives:
            draw = rng.integers(1, n_items + 1, size=2 * n_negatives)
            draw = draw[~np.isin(draw, banned)]
            _, first = np.unique(np.r_[picked, draw], return_index=True)
            picked = np.r_[picked, draw][np.sort(first)]
        out[row] = picked[:n_negatives]
    return out


def hit_at_k(model, queries: list[np.ndarray], targets: np.ndarray, n_items: int, maxlen: int,
             ks=HIT_KS, n_negatives: int = N_NEGATIVES, seed: int = 0) -> dict[str, float | None]:
    """HIT@K of every K in ``ks`` (see the module doc) for a model with ``scores(windows)`` (a session
    model or an aggregate of sub-models), through
    :func:`~recunlearn.models.session.training.candidate_ranks` (ties count against the unlearning item)."""
    from ..models.session.training import candidate_ranks, last_windows

    targets = np.asarray(targets, dtype=np.int64)
    if len(targets) == 0:
        return {f"hit@{k}": None for k in ks}
    candidates = np.column_stack([targets, draw_negatives(queries, targets, n_items, n_negatives, seed)])
    rank = candidate_ranks(model, last_windows(queries, maxlen), candidates)  # 0-based
    return {f"hit@{k}": float((rank < k).mean()) for k in ks}


# --- aggregation --------------------------------------------------------------------------------------

class AttentiveAggregator(nn.Module):
    """Attention over K frozen sub-models' final hidden states (see the module doc). ``centroids``
    (K, d): SRU's centroid-aware attention; None: RecEraser-style attention without centroids."""

    def __init__(self, n_shards: int, dim: int, n_items: int, centroids: torch.Tensor | None = None,
                 generator: torch.Generator | None = None):
        super().__init__()
        generator = generator or torch.Generator().manual_seed(0)
        std = (2.0 / (dim + dim)) ** 0.5  # Glorot normal of a dim x dim map
        self.weight = nn.Parameter(torch.randn(n_shards, dim, dim, generator=generator) * std)
        self.bias = nn.Parameter(torch.randn(n_shards, dim, generator=generator) * (2.0 / (1 + dim)) ** 0.5)
        half = dim // 2
        attention = torch.empty(dim, half)
        nn.init.trunc_normal_(attention, std=(2.0 / (half + dim)) ** 0.5, generator=generator)
        self.attention = nn.Parameter(attention)
        self.attention_bias = nn.Parameter(torch.zeros(half))
        self.context = nn.Parameter(torch.full((half,), 0.01))
        self.output = nn.Linear(dim, n_items + 1)
        with torch.no_grad():
            bound = 1.0 / dim ** 0.5
            self.output.weight.uniform_(-bound, bound, generator=generator)
            self.output.bias.uniform_(-bound, bound, generator=generator)
        self.register_buffer("centroids", None if centroids is None else torch.as_tensor(centroids, dtype=torch.float32))

    def _mapped(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bkd,kde->bke", hidden, self.weight) + self.bias

    def _weights(self, mapped: torch.Tensor) -> torch.Tensor:
        if self.centroids is not None:
            mapped = mapped * (torch.einsum("kd,kde->ke", self.centroids, self.weight) + self.bias)
        scores = torch.relu(mapped @ self.attention + self.attention_bias) @ self.context
        return torch.softmax(scores, dim=1)

    def weights(self, hidden: torch.Tensor) -> torch.Tensor:
        """Attention weights (B, K) of hidden states (B, K, d)."""
        return self._weights(self._mapped(hidden))

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        """The output layer's input ``z = sum_k alpha_k e_k`` (B, d) of hidden states (B, K, d)."""
        mapped = self._mapped(hidden)
        return (self._weights(mapped)[..., None] * mapped).sum(1)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits (B, n_items + 1) of hidden states (B, K, d)."""
        return self.output(self.pooled(hidden))


def average_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """SISA's aggregate of K sub-models' logits (B, K, n): the mean of their softmax probabilities."""
    return torch.softmax(logits, dim=-1).mean(1)


class ShardEnsemble(nn.Module):
    """K frozen sub-models and their aggregate, with a session model's interface (``scores``,
    ``training_loss``, ``device``, ``maxlen``, ``n_items``), so the session trainer and evaluators
    take it as they take one model.

    ``aggregator`` (an :class:`AttentiveAggregator`) maps the sub-models' final hidden states
    ``(B, K, d)`` to logits; None averages the sub-models' softmax probabilities
    (:func:`average_probabilities`, SISA), computed over row chunks of at most ``chunk_elements``
    values of ``(rows, K, n_items + 1)``. The sub-models never train: their parameters are frozen,
    their states detached, and they stay in eval mode whatever mode the ensemble is put in (no
    dropout in the states the aggregator learns from); only the aggregator's parameters get gradients.
    With fast sub-models (their default) an attentive aggregator's loss is the fused output layer
    (:mod:`recunlearn.models.output_layer`) and rankings take its scores in row blocks; with any
    reference sub-model the ensemble is computed straightforwardly.
    """

    name = "shard-ensemble"

    def __init__(self, shards, aggregator: nn.Module | None = None, chunk_elements: int = 2 ** 25):
        super().__init__()
        shards = list(shards)
        if not shards:
            raise ValueError("a shard ensemble needs at least one sub-model")
        sizes = {(m.n_items, m.maxlen) for m in shards}
        if len(sizes) != 1:
            raise ValueError(f"sub-models differ in (n_items, maxlen): {sorted(sizes)}")
        self.n_items, self.maxlen = sizes.pop()
        self.shards = nn.ModuleList(shards)
        self.shards.requires_grad_(False)
        self.aggregator = aggregator
        self.chunk_elements = int(chunk_elements)
        self.implementation = "reference" if any(getattr(m, "implementation", "fast") == "reference"
                                                 for m in shards) else "fast"
        self.eval()

    @property
    def device(self) -> torch.device:
        return next(self.shards.parameters()).device

    def train(self, mode: bool = True) -> "ShardEnsemble":
        super().train(mode)
        self.shards.eval()
        return self

    def scores(self, windows: torch.Tensor) -> torch.Tensor:
        """Next-item scores ``(B, n_items + 1)``: the aggregator's logits, or SISA's mean probabilities."""
        if self.aggregator is None:
            rows = max(1, self.chunk_elements // (len(self.shards) * (self.n_items + 1)))
            parts = []
            with torch.no_grad():
                for lo in range(0, len(windows), rows):
                    chunk = windows[lo:lo + rows]
                    parts.append(average_probabilities(torch.stack([m.scores(chunk) for m in self.shards], dim=1)))
            return torch.cat(parts) if parts else torch.zeros(0, self.n_items + 1, device=windows.device)
        return self.aggregator(self.shard_states(windows))

    def shard_states(self, windows: torch.Tensor) -> torch.Tensor:
        """The sub-models' final hidden states ``(B, K, d)`` (no gradient)."""
        with torch.no_grad():
            return torch.stack([m.hidden(windows) for m in self.shards], dim=1)

    def _fast_aggregate(self) -> bool:
        return self.implementation == "fast" and self.aggregator is not None and hasattr(self.aggregator, "pooled")

    def target_ranks(self, windows: torch.Tensor, targets: torch.Tensor, rank_fn) -> torch.Tensor:
        """``rank_fn(scores(windows), targets)``; with fast sub-models and an attentive aggregator the
        aggregator's scores are taken in row blocks (as a fast session model's)."""
        with torch.no_grad():
            if not self._fast_aggregate():
                return rank_fn(self.scores(windows), targets)
            return self.features_target_ranks(self.shard_states(windows), targets, rank_fn)

    def candidate_scores(self, windows: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores ``(B, c)`` of the items ``candidates`` of each row (the candidates' dot products only,
        with fast sub-models and an attentive aggregator)."""
        with torch.no_grad():
            if not self._fast_aggregate():
                return self.scores(windows).gather(1, candidates)
            z = self.aggregator.pooled(self.shard_states(windows))
            out = self.aggregator.output
            return torch.baddbmm(out.bias[candidates][..., None], out.weight[candidates], z[:, :, None])[..., 0]

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        return self.scores(windows)

    def training_loss(self, windows: torch.Tensor, targets: torch.Tensor,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        """Full-softmax cross-entropy of the next item through the aggregator (its parameters only)."""
        if self.aggregator is None:
            raise ValueError("an ensemble that averages probabilities has nothing to train")
        if self._fast_aggregate():
            return self.features_loss(self.shard_states(windows), targets)
        return nn.functional.cross_entropy(self.scores(windows), targets)

    # Frozen features: the sub-models never change while the aggregator trains, so their states of a
    # window are the same in every epoch. When ``has_frozen_features`` (a fast ensemble with an
    # aggregator), the session trainer computes them once per window (``frozen_features``) and
    # trains and validates from them (``features_loss``, ``features_target_ranks``).

    @property
    def has_frozen_features(self) -> bool:
        return self._fast_aggregate()

    def frozen_features(self, windows: torch.Tensor, chunk: int) -> torch.Tensor:
        """The sub-models' final hidden states ``(n, K, d)`` of every window, taken in consecutive
        chunks of ``chunk`` windows (the rows of the chunks an evaluation of the same windows scores,
        so its ranks from these states equal those from the windows)."""
        parts = [self.shard_states(windows[lo:lo + chunk]) for lo in range(0, len(windows), chunk)]
        return torch.cat(parts) if parts else torch.zeros(0, len(self.shards), self.shards[0].hidden_size,
                                                          device=windows.device)

    def features_loss(self, states: torch.Tensor, targets: torch.Tensor,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        """:meth:`training_loss` from the sub-models' states ``(B, K, d)``: the aggregator's pooled
        state through the fused output layer of the fast session models."""
        out = self.aggregator.output
        return linear_cross_entropy(self.aggregator.pooled(states), out.weight, out.bias, targets)

    def features_target_ranks(self, states: torch.Tensor, targets: torch.Tensor, rank_fn) -> torch.Tensor:
        """:meth:`target_ranks` from the sub-models' states ``(B, K, d)`` (no gradient)."""
        with torch.no_grad():
            out = self.aggregator.output
            return blocked_target_ranks(self.aggregator.pooled(states), out.weight, out.bias, targets, rank_fn)
