"""Rev.Adv (Tang, Wen, Wang, RecSys 2020) as a CASPER baseline: which training row to perturb.

1. A fake user is learned against a surrogate weighted matrix factorisation of the binary
   user x item training matrix X (:func:`learn_fake_user`):

   - surrogate: dimension 128, loss ``Σ w_ui (x_ui - p_u·q_i)²`` with ``w = 20`` on observed entries
     and 1 elsewhere, plus ``l2 (|P_batch|² + |Q|²)``, P and Q drawn N(0, 0.1); Adam (lr 0.01) for 50
     epochs over shuffled batches of 2,048 users (the fake user included);
   - the last ``unroll`` (10) epochs are differentiated through (a functional Adam), so the gradient
     of the outer loss reaches the fake row;
   - outer loss: over the real users, the cross-entropy between the softmax of the user's surrogate
     scores over all items and the uniform distribution on the target items;
   - the fake row moves by SGD (lr 1, momentum 0.95) along its L2-normalised gradient's descent
     direction, then is projected to ``1[x > 0.05]``; 30 outer epochs; the row with the best
     surrogate TargetHR@50 (share of real users with a target in their top 50 unseen items) is kept.
   - It starts as the row of a real user with at most 100 training items (a seeded choice).
2. Targets: 5 items drawn with the seed from the 10 % most popular training items (the paper does
   not say which items Rev.Adv targets; :func:`head_targets`).
3. Adaptation to one perturbation (:func:`select_revadv`): the real user whose binary training row
   has the largest cosine with the fake row; that user's first (``earliest``) or a uniformly random
   (``random``) training row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..data.sequences import Stream

REVADV_MODES = ("random", "earliest")


@dataclass(frozen=True)
class SurrogateSettings:
    """The surrogate WMF and the attack's settings (the official Rev.Adv values by default)."""

    dim: int = 128
    weight_observed: float = 20.0
    l2: float = 1e-5
    lr: float = 1e-2
    epochs: int = 50
    unroll: int = 10
    batch_users: int = 2048
    init_std: float = 0.1
    outer_epochs: int = 30
    outer_lr: float = 1.0
    momentum: float = 0.95
    threshold: float = 0.05
    max_initial_items: int = 100
    top_k: int = 50


def training_matrix(stream: Stream) -> torch.Tensor:
    """The binary users x items matrix of the stream's training rows (float32, dense)."""
    x = torch.zeros(stream.n_users, stream.n_items)
    train = stream.train_positions
    x[torch.as_tensor(stream.user[train]), torch.as_tensor(stream.item[train])] = 1.0
    return x


def head_targets(x: torch.Tensor, n_targets: int, seed: int, head_share: float = 0.1) -> np.ndarray:
    """``n_targets`` items drawn with ``seed`` from the ``head_share`` most popular (by training rows)."""
    counts = x.sum(0).numpy()
    order = np.lexsort((np.arange(len(counts)), -counts))
    head = order[:max(n_targets, int(np.ceil(head_share * len(counts))))]
    return np.sort(np.random.default_rng([seed, 23]).choice(head, size=n_targets, replace=False))


def _adam_step(params, grads, state, step: int, lr: float, betas=(0.9, 0.999), eps: float = 1e-8):
    """One Adam step written with differentiable tensor operations; returns the new parameters."""
    out = []
    for i, (p, g) in enumerate(zip(params, grads)):
        m, v = state.get(i, (torch.zeros_like(p), torch.zeros_like(p)))
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        state[i] = (m, v)
        m_hat, v_hat = m / (1 - betas[0] ** step), v / (1 - betas[1] ** step)
        out.append(p - lr * m_hat / (v_hat.sqrt() + eps))
    return out


def _batch_loss(p, q, users, n_real, observed_user, observed_item, fake_row, s: SurrogateSettings):
    """The surrogate loss of the users in ``users`` without forming their dense rows: for a real user
    Σ_i w (x - s)² = Σ_i s² - Σ_obs s² + w_obs Σ_obs (1 - s)² (the first term through Gram matrices);
    the fake user (index ``n_real``), whose row is continuous while it is learned, densely."""
    real = users[users < n_real]
    p_real = p[real]
    loss = (p_real.T @ p_real * (q.T @ q)).sum()
    in_batch = torch.zeros(p.shape[0], dtype=torch.bool)
    in_batch[real] = True
    mask = in_batch[observed_user]
    scores = (p[observed_user[mask]] * q[observed_item[mask]]).sum(1)
    loss = loss - scores.pow(2).sum() + s.weight_observed * (1 - scores).pow(2).sum()
    loss = loss + s.l2 * (p_real.pow(2).sum() + q.pow(2).sum())
    if (users == n_real).any():
        fake_scores = q @ p[n_real]
        weight = 1.0 + (s.weight_observed - 1.0) * fake_row
        loss = loss + (weight * (fake_row - fake_scores).pow(2)).sum() + s.l2 * p[n_real].pow(2).sum()
    return loss


def train_surrogate(x: torch.Tensor, settings: SurrogateSettings, seed: int, fake_row: torch.Tensor | None = None,
                    differentiable_from: int | None = None):
    """Train the surrogate WMF on the real users' binary rows ``x`` and, when given, a fake user's row
    (index ``len(x)``); returns ``(P, Q)``. Epochs from ``differentiable_from`` on keep their graph,
    so gradients reach ``fake_row``."""
    s = settings
    n_real = x.shape[0]
    n_users = n_real + (fake_row is not None)
    observed_user, observed_item = (t.long() for t in torch.nonzero(x, as_tuple=True))
    generator = torch.Generator().manual_seed(seed)
    p = torch.randn(n_users, s.dim, generator=generator) * s.init_std
    q = torch.randn(x.shape[1], s.dim, generator=generator) * s.init_std
    state: dict = {}
    step = 0
    for epoch in range(s.epochs):
        unrolled = differentiable_from is not None and epoch >= differentiable_from
        if not unrolled:
            p, q = p.detach().requires_grad_(True), q.detach().requires_grad_(True)
            state = {k: (m.detach(), v.detach()) for k, (m, v) in state.items()}
        order = torch.randperm(n_users, generator=generator)
        for lo in range(0, n_users, s.batch_users):
            users = order[lo:lo + s.batch_users]
            with torch.enable_grad():
                loss = _batch_loss(p, q, users, n_real, observed_user, observed_item, fake_row, s)
                grads = torch.autograd.grad(loss, (p, q), create_graph=unrolled)
            step += 1
            p, q = _adam_step([p, q], grads, state, step, s.lr)
            if not unrolled:
                p, q = p.detach().requires_grad_(True), q.detach().requires_grad_(True)
    return p.detach() if differentiable_from is None else p, q.detach() if differentiable_from is None else q


def target_hit_rate(p: torch.Tensor, q: torch.Tensor, x_real: torch.Tensor, targets: np.ndarray, k: int) -> float:
    """Share of real users with a target among their top-k unseen items under the surrogate."""
    scores = (p[:x_real.shape[0]] @ q.T).masked_fill(x_real > 0, -torch.inf)
    top = scores.topk(k, dim=1).indices
    return float(torch.isin(top, torch.as_tensor(targets)).any(1).float().mean())


def learn_fake_user(x: torch.Tensor, targets: np.ndarray, seed: int,
                    settings: SurrogateSettings = SurrogateSettings()) -> tuple[np.ndarray, list[float]]:
    """The fake user's binary row (items) and the surrogate TargetHR of every outer epoch."""
    s = settings
    rng = np.random.default_rng([seed, 29])
    small = np.flatnonzero(x.sum(1).numpy() <= s.max_initial_items)
    fake = x[rng.choice(small if len(small) else np.arange(x.shape[0]))].clone()
    velocity = torch.zeros_like(fake)
    target_index = torch.as_tensor(targets)
    best, best_rate, history = fake.clone(), -1.0, []
    for outer in range(s.outer_epochs):
        row = fake.clone().requires_grad_(True)
        p, q = train_surrogate(x, s, seed, fake_row=row, differentiable_from=s.epochs - s.unroll)
        log_probs = torch.log_softmax(p[:x.shape[0]] @ q.T, dim=1)
        outer_loss = -log_probs[:, target_index].mean(1).sum()
        rate = target_hit_rate(p.detach(), q.detach(), x, targets, s.top_k)
        history.append(rate)
        if rate > best_rate:
            best, best_rate = fake.clone(), rate
        (grad,) = torch.autograd.grad(outer_loss, row)
        grad = grad / grad.norm().clamp_min(1e-12)
        velocity = s.momentum * velocity + grad
        fake = ((fake - s.outer_lr * velocity) > s.threshold).float()
    return best.numpy().astype(bool), history


def nearest_real_user(x: torch.Tensor, fake: np.ndarray) -> int:
    """The real user whose binary training row has the largest cosine with ``fake`` (ties: smallest id)."""
    f = torch.as_tensor(fake, dtype=torch.float32)
    cosine = (x @ f) / (x.norm(dim=1) * f.norm()).clamp_min(1e-12)
    return int(torch.argmax(cosine))


def revadv_attack(stream: Stream, seed: int, settings: SurrogateSettings = SurrogateSettings(),
                  n_targets: int = 5) -> dict:
    """The attack of one seed, independent of the recommender: the head targets, the fake user learned
    against the surrogate, its nearest real user and the attack's TargetHR history."""
    x = training_matrix(stream)
    targets = head_targets(x, n_targets, seed)
    fake, history = learn_fake_user(x, targets, seed, settings)
    return {"targets": targets.tolist(), "fake_items": int(fake.sum()), "user": nearest_real_user(x, fake),
            "target_hit_rate": history}


def revadv_row(stream: Stream, user: int, mode: str, rng: np.random.Generator) -> np.ndarray:
    """The stream position of ``user``'s first (``earliest``) or a uniformly random (``random``,
    drawn from ``rng``) training row."""
    if mode not in REVADV_MODES:
        raise ValueError(f"Rev.Adv mode = {mode!r}: allowed {REVADV_MODES}")
    rows = stream.train_positions[stream.user[stream.train_positions] == user]
    return np.array([rows[0] if mode == "earliest" else rows[rng.integers(len(rows))]])


def select_revadv(stream: Stream, mode: str, rng: np.random.Generator, seed: int,
                  settings: SurrogateSettings = SurrogateSettings(), n_targets: int = 5) -> tuple[np.ndarray, dict]:
    """The stream position of the row Rev.Adv perturbs (``mode``: ``random`` or ``earliest``) and what
    led to it (targets, fake profile size, nearest user, the attack's TargetHR history)."""
    if mode not in REVADV_MODES:
        raise ValueError(f"Rev.Adv mode = {mode!r}: allowed {REVADV_MODES}")
    attack = revadv_attack(stream, seed, settings, n_targets)
    return revadv_row(stream, attack["user"], mode, rng), attack
