"""Training with early stopping on a validation metric, restoring the best checkpoint."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch

from ..metrics import evaluate_full_ranking
from .base import Recommender, TrainingData


@dataclass
class TrainingResult:
    """What :func:`train_until_converged` did: the best epoch (1-based), epochs run, the per-epoch
    curve (loss, validation metric, seconds) and total training / validation seconds."""

    best_epoch: int
    epochs_run: int
    best_validation: float
    curve: list[dict] = field(default_factory=list)
    train_seconds: float = 0.0
    validation_seconds: float = 0.0


def progress_bar(iterable, enabled: bool, **kwargs):
    """A tqdm bar when ``enabled`` (tqdm is imported only then), else the iterable itself."""
    if not enabled:
        return iterable
    from tqdm.auto import tqdm
    return tqdm(iterable, **kwargs)


def synchronize(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def frozen_scorer(model: Recommender):
    """A scoring function over fixed final embeddings (propagation done once, not per batch)."""
    with torch.no_grad():
        user_emb, item_emb = model.embeddings()
    return lambda users: user_emb[users] @ item_emb.T


def evaluate_model(model: Recommender, exclude: sp.csr_matrix, relevant: sp.csr_matrix, k: int = 20,
                   users=None, device="cpu", metrics=None) -> dict[str, np.ndarray]:
    """Per-user top-k metrics of ``model`` (all metrics unless ``metrics`` names some)."""
    model.eval()
    kwargs = {} if metrics is None else {"metrics": tuple(metrics)}
    return evaluate_full_ranking(frozen_scorer(model), exclude, relevant, k=k, users=users, device=device, **kwargs)


def train_until_converged(model: Recommender, data: TrainingData, generator: torch.Generator,
                          validation_exclude: sp.csr_matrix, validation_relevant: sp.csr_matrix,
                          lr: float = 0.01, max_epochs: int = 500, patience: int = 5,
                          metric: str = "ndcg_untruncated", k: int = 20, progress: bool = True) -> TrainingResult:
    """Adam on ``model.batch_loss`` until the validation ``metric``@``k`` has not improved for
    ``patience`` epochs (or ``max_epochs``); the best epoch's parameters are restored in place.

    Training time excludes validation, which is timed separately.
    """
    device = data.device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    result = TrainingResult(best_epoch=0, epochs_run=0, best_validation=-np.inf)
    best_state, since_best = copy.deepcopy(model.state_dict()), 0
    bar = progress_bar(range(1, max_epochs + 1), progress, desc=type(model).__name__, leave=False)
    for epoch in bar:
        model.train()
        synchronize(device)
        start, total_loss = time.perf_counter(), 0.0
        for batch in model.batches(data, generator):
            optimizer.zero_grad(set_to_none=True)
            loss = model.batch_loss(batch)
            loss.backward()
            optimizer.step()
            total_loss += float(loss.detach())
        synchronize(device)
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        value = float(evaluate_model(model, validation_exclude, validation_relevant, k, device=device,
                                     metrics=[metric])[metric].mean())
        validation_seconds = time.perf_counter() - start
        result.train_seconds += train_seconds
        result.validation_seconds += validation_seconds
        result.epochs_run = epoch
        result.curve.append({"epoch": epoch, "loss": total_loss, f"valid_{metric}": value,
                             "train_seconds": train_seconds, "validation_seconds": validation_seconds})
        if progress:
            bar.set_postfix(loss=f"{total_loss:.4g}", valid=f"{value:.4f}")
        if value > result.best_validation:
            result.best_validation, result.best_epoch, since_best = value, epoch, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            since_best += 1
            if since_best >= patience:
                break
    model.load_state_dict(best_state)
    return result
