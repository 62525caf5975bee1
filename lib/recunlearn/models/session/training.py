"""Training and evaluation of the session models, shared by the three architectures.

**Training** (:func:`train_session_model`), with the authors' defaults: Adam (lr 1e-3, weight decay
0; their StepLR has gamma 1, i.e. no decay), mini-batches of 256 of every prefix -> next-item pair of
the training sessions (:func:`~recunlearn.data.sessions.prefix_pairs`), up to 100 epochs, validation
every 5 epochs by NDCG@10 on every validation pair, early stopping once the best validation is
>= 20 epochs old, the best validated weights restored. Decisions: a validation counts as better
only when strictly higher (the code keeps a tie as the new best epoch for its early stop, its
checkpoint logger saves on strict improvement); when ``max_epochs`` is not a multiple of
``validate_every`` the last epoch is validated too, so a short run always has a checkpoint; batch
order (a fresh permutation per epoch), BERT4Rec's cloze draws and the dropout masks come from the
given generator, so the same generator state gives bit-identical weights on CPU.

**Evaluation** (:func:`evaluate_session_model`): every pair is ranked against the full catalogue
1..n_items (the padding column 0 is excluded; items of the input are not, as the authors' code).
The target's rank is the number of *other* items whose score is >= the target's score
(:func:`target_ranks`): ties are counted against the target (a pessimistic rank), so a model with
constant scores gets Recall@K = 0 for any K < n_items, where ``torch.topk``-based code would depend
on the sort order. Recall@K = 1 if rank < K; NDCG@K = 1 / log2(rank + 2) if rank < K, else 0 (one
relevant item); both are means over **all pairs** (the authors average per-batch means). This is the
same as taking ``torch.topk`` of the masked scores and checking the target's position when there
are no ties, and it gives every K from one pass.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ...data.sessions import SessionData, Sessions, prefix_pairs
from ..resume import ResumePoint, resume_point
from .base import SessionModel, positive_int

EVAL_BATCH = 2048
"""Pairs per scoring batch (the authors' test batch)."""


# --- windows -------------------------------------------------------------------------------------

def last_windows(sessions, maxlen: int) -> np.ndarray:
    """The last ``maxlen`` items of every session, left-padded with 0: ``(n_sessions, maxlen)``.

    ``sessions`` is a :class:`~recunlearn.data.sessions.Sessions` or a list of sequences; an empty
    session gives a window of zeros."""
    maxlen = positive_int("maxlen", maxlen)
    if not isinstance(sessions, Sessions):
        sessions = Sessions.from_lists(list(sessions))
    ends = sessions.offsets[1:]
    out = np.zeros((len(sessions), maxlen), dtype=np.int64)
    for column in range(maxlen):
        source = ends - maxlen + column
        ok = source >= sessions.offsets[:-1]
        out[ok, column] = sessions.items[source[ok]]
    return out


def _as_long(array, device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(array), dtype=torch.long, device=device)


# --- ranks and metrics ---------------------------------------------------------------------------

def target_ranks(scores: torch.Tensor, targets: torch.Tensor, exclude_padding: bool = True) -> torch.Tensor:
    """0-based rank of each row's target among the columns of ``scores``: the number of *other*
    columns scoring >= the target (ties counted against the target). With ``exclude_padding``,
    column 0 (padding) never counts and a padding target is a miss. A NaN target score ranks last
    (``n_columns``). ``scores`` is not modified (no copy of it is made)."""
    targets = targets.view(-1, 1)
    target = scores.gather(1, targets)
    ranks = (scores >= target).sum(1) - 1
    miss = torch.isnan(target.view(-1))
    if exclude_padding:
        ranks = ranks - (scores[:, 0] >= target.view(-1)).long()
        miss = miss | (targets.view(-1) == 0)
    return torch.where(miss, torch.full_like(ranks, scores.shape[1]), ranks)


def recall_at_k_from_ranks(ranks: np.ndarray, k: int) -> np.ndarray:
    """Per pair: 1 if the target's 0-based rank is < k, else 0 (one relevant item: Recall = HR)."""
    return (np.asarray(ranks) < k).astype(np.float64)


def ndcg_at_k_from_ranks(ranks: np.ndarray, k: int) -> np.ndarray:
    """Per pair: 1 / log2(rank + 2) if the 0-based rank is < k, else 0 (one relevant item, IDCG = 1)."""
    ranks = np.asarray(ranks, dtype=np.float64)
    return np.where(ranks < k, 1.0 / np.log2(ranks + 2.0), 0.0)


@torch.no_grad()
def _eval_batches(model: SessionModel, windows, batch_size: int, fn):
    was_training = model.training
    model.eval()
    try:
        device = model.device
        windows = np.asarray(windows)
        for lo in range(0, len(windows), batch_size):
            yield lo, fn(_as_long(windows[lo:lo + batch_size], device))
    finally:
        model.train(was_training)


def _eval_chunks(model: SessionModel, windows, batch_size: int, fn):
    """Like :func:`_eval_batches` with ``fn(chunk, lo)``: the function also gets the chunk's offset."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            device = model.device
            windows = np.asarray(windows)
            for lo in range(0, len(windows), batch_size):
                yield lo, fn(_as_long(windows[lo:lo + batch_size], device), lo)
    finally:
        model.train(was_training)


def hidden_states(model: SessionModel, windows, batch_size: int = EVAL_BATCH) -> torch.Tensor:
    """``model.hidden`` of every window, in eval mode, batched: ``(n, d)`` float tensor on the CPU."""
    parts = [h.cpu() for _, h in _eval_batches(model, windows, batch_size, model.hidden)]
    return torch.cat(parts) if parts else torch.zeros(0, model.hidden_size)


def session_hidden_states(model: SessionModel, sessions, batch_size: int = EVAL_BATCH) -> torch.Tensor:
    """The final hidden state of each session's full sequence (its last ``maxlen`` items), in eval
    mode: ``(n_sessions, d)`` on the CPU, rows in the order of ``sessions``. For BERT4Rec this is the
    state of the appended [mask], i.e. of the last ``maxlen - 1`` items (see :mod:`.bert4rec`)."""
    return hidden_states(model, last_windows(sessions, model.maxlen), batch_size)


def prefix_hidden_centroid(model: SessionModel, sessions, batch_size: int = EVAL_BATCH) -> torch.Tensor:
    """Mean of ``model.hidden`` over every prefix -> next-item input window of ``sessions`` (a shard's
    training sessions), in eval mode: ``(d,)`` on the CPU (zeros when there is no pair). The clean
    reading of a shard's centroid; the authors' code instead accumulates the states of every forward
    call, training batches with dropout included."""
    windows, _ = prefix_pairs(sessions, model.maxlen)
    if len(windows) == 0:
        return torch.zeros(model.hidden_size)
    total = torch.zeros(model.hidden_size, dtype=torch.float64)
    for _, h in _eval_batches(model, windows, batch_size, model.hidden):
        total += h.double().sum(0).cpu()
    return (total / len(windows)).float()


def candidate_ranks(model: SessionModel, windows, candidates, batch_size: int = EVAL_BATCH) -> np.ndarray:
    """0-based rank of column 0 of ``candidates`` (``(n, c)`` item ids) among the row's ``c``
    candidates by ``model.scores(windows)``, ties counted against it (:func:`target_ranks`), in eval
    mode. For a candidate-list protocol such as SRU's HIT@K (the unlearned item first, then sampled
    negatives): HIT@K = mean(rank < K)."""
    candidates = np.asarray(candidates)
    if len(candidates) != len(windows):
        raise ValueError(f"{len(windows)} windows but {len(candidates)} candidate rows")
    out = np.empty(len(candidates), dtype=np.int64)
    device = model.device

    def ranks(chunk, lo):
        rows = _as_long(candidates[lo:lo + len(chunk)], device)
        scores = model.candidate_scores(chunk, rows) if hasattr(model, "candidate_scores") else \
            model.scores(chunk).gather(1, rows)
        first = torch.zeros(len(rows), dtype=torch.long, device=device)
        return target_ranks(scores, first, exclude_padding=False)

    for lo, part in _eval_chunks(model, windows, batch_size, ranks):
        out[lo:lo + len(part)] = part.cpu().numpy()
    return out


def pair_ranks(model: SessionModel, windows, targets, batch_size: int = EVAL_BATCH) -> np.ndarray:
    """0-based full-catalogue rank (:func:`target_ranks`) of every pair's target, in eval mode."""
    targets = np.asarray(targets)
    if len(targets) != len(windows):
        raise ValueError(f"{len(windows)} windows but {len(targets)} targets")
    out = np.empty(len(targets), dtype=np.int64)
    device = model.device

    def ranks(chunk, lo):
        part = _as_long(targets[lo:lo + len(chunk)], device)
        if hasattr(model, "target_ranks"):
            return model.target_ranks(chunk, part, target_ranks)
        return target_ranks(model.scores(chunk), part)

    for lo, part in _eval_chunks(model, windows, batch_size, ranks):
        out[lo:lo + len(part)] = part.cpu().numpy()
    return out


def feature_ranks(model, features: torch.Tensor, targets, batch_size: int = EVAL_BATCH) -> np.ndarray:
    """:func:`pair_ranks` of a model with frozen features (see :func:`train_session_model`) from the
    features of the windows, in eval mode and in the same chunks."""
    targets = np.asarray(targets)
    if len(targets) != len(features):
        raise ValueError(f"{len(features)} feature rows but {len(targets)} targets")
    out = np.empty(len(targets), dtype=np.int64)
    was_training = model.training
    model.eval()
    try:
        for lo in range(0, len(features), batch_size):
            part = _as_long(targets[lo:lo + batch_size], features.device)
            out[lo:lo + len(part)] = model.features_target_ranks(features[lo:lo + batch_size], part,
                                                                 target_ranks).cpu().numpy()
    finally:
        model.train(was_training)
    return out


def metrics_from_ranks(ranks: np.ndarray, ks=(5, 10, 20)) -> dict:
    """``recall@k`` and ``ndcg@k`` (means over all pairs) for each k, and ``n_pairs``; the metrics are
    None when there is no pair."""
    out: dict = {"n_pairs": int(len(ranks))}
    for k in ks:
        k = positive_int("k", k)
        empty = len(ranks) == 0
        out[f"recall@{k}"] = None if empty else float(recall_at_k_from_ranks(ranks, k).mean())
        out[f"ndcg@{k}"] = None if empty else float(ndcg_at_k_from_ranks(ranks, k).mean())
    return out


def evaluate_session_model(model: SessionModel, pairs, ks=(5, 10, 20), batch_size: int = EVAL_BATCH) -> dict:
    """Recall@K and NDCG@K over all ``pairs = (windows, targets)`` (see the module docstring)."""
    windows, targets = pairs
    return metrics_from_ranks(pair_ranks(model, windows, targets, batch_size), ks)


# --- training ------------------------------------------------------------------------------------

def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def adam(model: SessionModel, lr: float, weight_decay: float = 0.0) -> torch.optim.Adam:
    """Adam over all parameters; for a fast model (and the aggregator ensemble) with PyTorch's fused
    kernel (the same update rule in one pass over the parameters; on one CPU thread it makes the
    optimiser step ~20x cheaper than the default loop, which matters because the output layer and
    item table hold ~3M parameters on Games; its rounding can differ from the default loop's in the
    last bits; it is deterministic), for a reference model with PyTorch's default."""
    fused = {} if getattr(model, "implementation", "fast") == "reference" else {"fused": True}
    return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay, **fused)


def train_session_model(model: SessionModel, data: SessionData, generator: torch.Generator | None = None, *,
                        sessions: Sessions | None = None, lr: float = 1e-3, weight_decay: float = 0.0,
                        batch_size: int = 256, max_epochs: int = 100, validate_every: int = 5,
                        patience: int = 20, metric: str = "ndcg@10", eval_batch_size: int = EVAL_BATCH,
                        valid_pairs=None, progress: bool = False, resume: ResumePoint | None = None) -> dict:
    """Train ``model`` in place on every prefix -> next-item pair of ``sessions`` (default: the
    training sessions of ``data``; a shard's sessions for a sub-model) and restore the weights of
    the best validation (see the module docstring). ``generator`` (default: seeded with 0) drives the
    batch order, the cloze masks and the dropout masks. ``valid_pairs`` overrides ``data``'s
    validation pairs; with none, no validation runs and the last epoch's weights are kept. ``resume``
    keeps the training's state between processes (:mod:`recunlearn.models.resume`: weights, optimiser,
    ``generator``, the dropout stream, the best weights so far and this summary).

    Returns ``{"curve": [...], "best_epoch", "best_valid", "metric", "epochs_run", "stopped_early",
    "train_seconds", "train_cpu_seconds", "validation_seconds", "n_train_pairs", "n_valid_pairs"}``:
    one curve entry per epoch (``epoch``, mean ``loss`` per batch, ``train_seconds``,
    ``train_cpu_seconds`` and, when validated, ``valid_recall@10``, ``valid_ndcg@10``, ...,
    ``validation_seconds``). Training seconds (wall, ``time.perf_counter``) and training CPU seconds
    (this process's, ``time.process_time``: less sensitive to other processes on the machine) exclude
    validation.

    A model with ``has_frozen_features`` (the shard ensemble of an aggregator, whose sub-models are
    frozen) maps windows to inputs that no training step changes: ``frozen_features(windows, chunk)``
    computes them once for every training and validation window (in eval-sized chunks; the time is
    counted in the first epoch's training and the first validation, and reported as
    ``frozen_features_seconds``), and every step and validation reads them (``features_loss``,
    ``features_target_ranks``). Validation ranks are the same as from the windows; a training step
    can differ in the last bits from one that computes its batch's features itself."""
    if data.maxlen != model.maxlen:
        raise ValueError(f"the model's maxlen ({model.maxlen}) differs from the data's ({data.maxlen})")
    if data.n_items != model.n_items:
        raise ValueError(f"the model's n_items ({model.n_items}) differs from the data's ({data.n_items})")
    batch_size, max_epochs = positive_int("batch_size", batch_size), positive_int("max_epochs", max_epochs)
    validate_every, patience = positive_int("validate_every", validate_every), positive_int("patience", patience)
    if not (isinstance(lr, (int, float)) and lr > 0):
        raise ValueError(f"lr must be a positive number, got {lr!r}")
    if not (isinstance(weight_decay, (int, float)) and weight_decay >= 0):
        raise ValueError(f"weight_decay must be a non-negative number, got {weight_decay!r}")
    name, _, k = metric.partition("@")
    if name not in ("ndcg", "recall") or not k.isdigit() or int(k) < 1:
        raise ValueError(f"metric must be 'ndcg@K' or 'recall@K' (K a positive integer), got {metric!r}")
    ks = sorted({5, 10, 20, int(k)})
    generator = generator if generator is not None else torch.Generator().manual_seed(0)
    device = model.device

    windows, targets = prefix_pairs(data.train if sessions is None else sessions, model.maxlen)
    windows, targets = _as_long(windows, device), _as_long(targets, device)
    if valid_pairs is None:
        valid_pairs = prefix_pairs(data.valid, model.maxlen)
    n_valid = len(valid_pairs[1])
    optimizer = adam(model, lr, weight_decay)
    dropout_seed = int(torch.randint(0, 2**62, (1,), generator=generator))

    frozen = bool(getattr(model, "has_frozen_features", False))
    train_features = valid_features = None
    training_loss = model.features_loss if frozen else model.training_loss

    result = {"curve": [], "best_epoch": 0, "best_valid": None, "metric": metric, "epochs_run": 0,
              "stopped_early": False, "train_seconds": 0.0, "train_cpu_seconds": 0.0, "validation_seconds": 0.0,
              "n_train_pairs": int(len(targets)), "n_valid_pairs": int(n_valid)}
    if frozen:
        result["frozen_features_seconds"] = 0.0
    best_value, best_state = -np.inf, None
    resume = resume_point(resume)
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(dropout_seed)
        saved = resume.restore(model=model, optimizer=optimizer, generator=generator)
        if saved:
            result, best_value, best_state = saved["result"], saved["best_value"], saved["best_state"]
        epochs = range(result["epochs_run"] + 1, max_epochs + 1)
        if progress:
            from tqdm.auto import tqdm
            epochs = tqdm(epochs, desc=model.name, leave=False)
        for epoch in epochs:
            model.train()
            _synchronize(device)
            start, cpu_start, total, n_batches = time.perf_counter(), time.process_time(), 0.0, 0
            order = torch.randperm(len(targets), generator=generator).to(device)
            if frozen and train_features is None:  # once, inside the first epoch's training time
                features_start = time.perf_counter()
                train_features = model.frozen_features(windows, eval_batch_size)
                result["frozen_features_seconds"] += time.perf_counter() - features_start
            inputs = train_features if frozen else windows
            for lo in range(0, len(order), batch_size):
                batch = order[lo:lo + batch_size]
                loss = training_loss(inputs[batch], targets[batch], generator)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                total += float(loss.detach())
                n_batches += 1
            _synchronize(device)
            entry = {"epoch": epoch, "loss": total / max(n_batches, 1), "train_seconds": time.perf_counter() - start,
                     "train_cpu_seconds": time.process_time() - cpu_start}
            result["train_seconds"] += entry["train_seconds"]
            result["train_cpu_seconds"] += entry["train_cpu_seconds"]
            result["epochs_run"] = epoch
            if n_valid and (epoch % validate_every == 0 or epoch == max_epochs):
                start = time.perf_counter()
                if frozen:
                    if valid_features is None:  # once, inside the first validation's time
                        valid_features = model.frozen_features(_as_long(valid_pairs[0], device), eval_batch_size)
                        result["frozen_features_seconds"] += time.perf_counter() - start
                    values = metrics_from_ranks(feature_ranks(model, valid_features, valid_pairs[1], eval_batch_size), ks)
                else:
                    values = evaluate_session_model(model, valid_pairs, ks, eval_batch_size)
                entry["validation_seconds"] = time.perf_counter() - start
                result["validation_seconds"] += entry["validation_seconds"]
                entry.update({f"valid_{key}": value for key, value in values.items() if key != "n_pairs"})
                if values[metric] > best_value:
                    best_value, result["best_epoch"] = values[metric], epoch
                    best_state = {key: value.detach().clone() for key, value in model.state_dict().items()}
                if progress:
                    epochs.set_postfix(loss=f"{entry['loss']:.4g}", valid=f"{values[metric]:.4f}")
                if epoch - result["best_epoch"] >= patience:  # checked at validations, as the code
                    result["stopped_early"] = epoch < max_epochs
                    result["curve"].append(entry)
                    break
            result["curve"].append(entry)
            resume.epoch_done(epoch, max_epochs, result=result, best_value=best_value, best_state=best_state)
    resume.finish()
    if best_state is not None:
        model.load_state_dict(best_state)
        result["best_valid"] = float(best_value)
    else:
        result["best_epoch"] = result["epochs_run"]
    model.eval()
    return result


def probe_session_model(model: SessionModel, windows, targets, eval_windows, seed: int = 0) -> dict:
    """From the current weights, in eval mode (no dropout): ``loss`` = ``training_loss`` of the batch
    ``(windows, targets)`` (BERT4Rec's cloze draws from a generator seeded with ``seed``),
    ``grad/<name>`` = its gradient for every parameter (zeros where unused), ``scores`` = ``scores``
    of ``eval_windows``. Changes nothing. For comparing two implementations of one model."""
    was_training = model.training
    model.eval()
    try:
        device = model.device
        windows, targets = _as_long(windows, device), _as_long(targets, device)
        loss = model.training_loss(windows, targets, torch.Generator().manual_seed(seed))
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
        out = {"loss": loss.detach()}
        out.update({f"grad/{name}": torch.zeros_like(p) if g is None else g for (name, p), g in zip(named, grads)})
        with torch.no_grad():
            out["scores"] = model.scores(_as_long(eval_windows, device))
        return out
    finally:
        model.train(was_training)
