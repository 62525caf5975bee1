"""Training with early stopping on a validation metric, restoring the best checkpoint.

For a blocked model (``n_blocks`` independent shard models trained as one, see
:class:`~recunlearn.models.base.TrainingData`), every block has its own early stopping: a block
stops when its own validation metric (over the users it serves) has not improved for ``patience``
epochs, leaves the batches from then on, and gets its own best epoch's parameters back.
"""

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
    curve (loss, validation metric, seconds) and total training / validation seconds. For blocked
    models ``block_best_epoch`` / ``block_epochs_run`` give each trained block's values."""

    best_epoch: int
    epochs_run: int
    best_validation: float
    curve: list[dict] = field(default_factory=list)
    train_seconds: float = 0.0
    validation_seconds: float = 0.0
    block_best_epoch: dict[int, int] = field(default_factory=dict)
    block_epochs_run: dict[int, int] = field(default_factory=dict)
    block_best_validation: dict[int, float] = field(default_factory=dict)


def progress_bar(iterable, enabled: bool, **kwargs):
    """A tqdm bar when ``enabled`` (tqdm is imported only then), else the iterable itself."""
    if not enabled:
        return iterable
    from tqdm.auto import tqdm
    return tqdm(iterable, **kwargs)


def synchronize(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def frozen_scorer(model: Recommender, user_block: np.ndarray | None = None):
    """A scoring function over fixed final embeddings (propagation done once, not per batch).

    For a blocked model, ``user_block[u]`` is the block (shard) serving original user ``u``: the user
    is scored with that block's user row against that block's item table ("routing").
    """
    with torch.no_grad():
        user_emb, item_emb = model.embeddings()
    if model.n_blocks == 1:
        return lambda users: user_emb[users] @ item_emb.T
    if user_block is None:
        raise ValueError("a blocked model needs user_block (the block serving each user) to score")
    blocks_of = torch.as_tensor(user_block, dtype=torch.long, device=user_emb.device)
    item_blocks = item_emb.view(model.n_blocks, model.block_items, -1)

    def score(users):
        blocks = blocks_of[users]
        rows = user_emb[blocks * model.block_users + users]
        out = torch.empty(len(users), model.block_items, dtype=rows.dtype, device=rows.device)
        for block in torch.unique(blocks).tolist():
            mask = blocks == block
            out[mask] = rows[mask] @ item_blocks[block].T
        return out
    return score


def evaluate_model(model: Recommender, exclude: sp.csr_matrix, relevant: sp.csr_matrix, k: int = 20,
                   users=None, device="cpu", metrics=None, user_block=None) -> dict[str, np.ndarray]:
    """Per-user top-k metrics of ``model`` (all metrics unless ``metrics`` names some)."""
    model.eval()
    kwargs = {} if metrics is None else {"metrics": tuple(metrics)}
    return evaluate_full_ranking(frozen_scorer(model, user_block), exclude, relevant, k=k, users=users,
                                 device=device, **kwargs)


def _block_means(per_user: dict, metric: str, user_block: np.ndarray | None, n_blocks: int) -> np.ndarray:
    if user_block is None:
        return np.array([per_user[metric].mean()])
    blocks = user_block[per_user["user"]]
    sums = np.bincount(blocks, weights=per_user[metric], minlength=n_blocks)
    counts = np.bincount(blocks, minlength=n_blocks)
    return np.divide(sums, counts, out=np.full(n_blocks, -np.inf), where=counts > 0)


def train_until_converged(model: Recommender, data: TrainingData, generator: torch.Generator,
                          validation_exclude: sp.csr_matrix, validation_relevant: sp.csr_matrix,
                          lr: float = 0.01, max_epochs: int = 500, patience: int = 5,
                          metric: str = "ndcg_untruncated", k: int = 20, progress: bool = True,
                          user_block: np.ndarray | None = None, blocks=None) -> TrainingResult:
    """Adam on ``model.batch_loss`` until the validation ``metric``@``k`` has not improved for
    ``patience`` epochs (or ``max_epochs``); the best epoch's parameters are restored in place.

    Blocked models: ``user_block`` routes users to blocks for validation and ``blocks`` (default:
    all) lists the blocks to train; other blocks' parameters are left bit-identical.
    Training time excludes validation, which is timed separately.
    """
    device = data.device
    model.prepare(data)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    result = TrainingResult(best_epoch=0, epochs_run=0, best_validation=-np.inf)
    n_blocks = model.n_blocks
    trained = np.arange(n_blocks) if blocks is None else np.unique(np.asarray(blocks, dtype=np.int64))
    active = torch.zeros(n_blocks, dtype=torch.bool, device=device)
    active[torch.as_tensor(trained, device=device)] = True
    best = np.full(n_blocks, -np.inf)
    since_best = np.zeros(n_blocks, dtype=np.int64)
    best_state = copy.deepcopy(model.state_dict())
    eval_users = None
    if user_block is not None:
        has_relevant = np.diff(validation_relevant.indptr) > 0
        eval_users = np.flatnonzero(has_relevant & np.isin(user_block, trained))
    bar = progress_bar(range(1, max_epochs + 1), progress, desc=type(model).__name__, leave=False)
    for epoch in bar:
        model.train()
        synchronize(device)
        start, total_loss = time.perf_counter(), 0.0
        for batch in model.batches(data, generator, active if n_blocks > 1 else None):
            optimizer.zero_grad(set_to_none=True)
            loss = model.batch_loss(batch)
            loss.backward()
            optimizer.step()
            total_loss += float(loss.detach())
        synchronize(device)
        train_seconds = time.perf_counter() - start
        start = time.perf_counter()
        per_user = evaluate_model(model, validation_exclude, validation_relevant, k, users=eval_users,
                                  device=device, metrics=[metric], user_block=user_block)
        values = _block_means(per_user, metric, user_block, n_blocks)
        validation_seconds = time.perf_counter() - start
        result.train_seconds += train_seconds
        result.validation_seconds += validation_seconds
        result.epochs_run = epoch
        mean_value = float(per_user[metric].mean())
        result.curve.append({"epoch": epoch, "loss": total_loss, f"valid_{metric}": mean_value,
                             "train_seconds": train_seconds, "validation_seconds": validation_seconds,
                             **({"active_blocks": int(active.sum())} if n_blocks > 1 else {})})
        if progress:
            bar.set_postfix(loss=f"{total_loss:.4g}", valid=f"{mean_value:.4f}")
        for block in np.flatnonzero(active.cpu().numpy()):
            if values[block] > best[block]:
                best[block], since_best[block] = values[block], 0
                result.block_best_epoch[int(block)] = epoch
                if n_blocks == 1:
                    best_state = copy.deepcopy(model.state_dict())
                else:
                    _copy_block(model, block, best_state)
            else:
                since_best[block] += 1
                if since_best[block] >= patience:
                    active[block] = False
                    result.block_epochs_run[int(block)] = epoch
        if not active.any():
            break
    for block in trained:
        result.block_epochs_run.setdefault(int(block), result.epochs_run)
        result.block_best_validation[int(block)] = float(best[block])
    if n_blocks == 1:
        model.load_state_dict(best_state)
        result.best_validation = float(best[0])
        result.best_epoch = result.block_best_epoch.get(0, 0)
    else:
        _restore_blocks(model, trained, best_state)
        result.best_validation = float(np.mean(best[trained]))
        result.best_epoch = max(result.block_best_epoch.values(), default=0)
    return result


def _copy_block(model: Recommender, block: int, state: dict) -> None:
    names = {id(p): n for n, p in model.named_parameters()}
    for parameter, rows in model.block_parameters(block):
        state[names[id(parameter)]][rows] = parameter.detach()[rows].clone()


@torch.no_grad()
def _restore_blocks(model: Recommender, blocks, state: dict) -> None:
    names = {id(p): n for n, p in model.named_parameters()}
    for block in blocks:
        for parameter, rows in model.block_parameters(int(block)):
            parameter[rows] = state[names[id(parameter)]][rows]
