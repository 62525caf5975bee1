"""MIO: the membership inference oracle of SCIF / CURE4Rec.

For a model with (final, scoring) embeddings ``e`` the feature of a user ``u`` and an item set ``X``
is ``f(u, X) = [e_u ; mean_{i ∈ X} e_i]`` (``2d`` values).

**Samples.** For every user ``u`` with member items ``M_u`` (its training items) and non-member
items ``N_u`` (its held-out validation + test items, see :func:`membership_sets`), both sets are
randomly subsampled (seeded) to the common size ``m_u = min(|M_u|, |N_u|)``; users with
``m_u = 0`` are skipped. Each user gives one member sample ``f(u, M_u')`` (label 1) and one
non-member sample ``f(u, N_u')`` (label 0). Size matching is essential: a mean over many items has
a smaller norm than a mean over few and would leak "membership" even for a model that never saw
the data. On the released splits ``|N_u| <= |M_u|``, so in practice the member set is a random
``|N_u|``-subset of the training items and the non-member set is all held-out items; because the
held-out items are a random split of the user's items, both sets are drawn from the same
distribution and a model that never trained on ``u`` gives chance accuracy. (Padding a small
held-out set with *sampled non-interacted* items is deliberately not done: such items are less
popular than interacted ones, which a classifier detects without any membership signal.)

**Oracle.** An MLP ``2d → 64 → 16 → 4 → 2`` with ReLU, softmax / cross-entropy, on features
standardised with the training samples' mean and std, trained for ``epochs = 100`` epochs in
mini-batches of 32 on the samples of the *retained* users (``train_users``) of the audited model,
then evaluated on the samples of the *unlearned* users (``eval_users``). The paper states SGD with
learning rate 1e-3; with that optimiser the small network barely moves in 100 epochs (the oracle
stays at chance even on the original model), so the default here is ``optimizer="adam"`` with
lr 1e-3; ``optimizer="sgd"`` (optionally with ``momentum``, e.g. 0.9) is available.
(Measured on ML-100K, WMF: SGD lr 1e-3 reaches 0.50 training accuracy, 0.53 with momentum 0.9;
Adam reaches 1.0 and 0.77 on the unlearned users.) An oracle whose output collapsed to a constant
(dead ReLU bottleneck) is retrained from a new initialisation (see :func:`mio_accuracy`). The
oracles of a run's seeds are trained together as one stacked network (:mod:`.oracle_stack`), which
gives the bits of training them one at a time (:func:`train_oracle`, the definition) several times
faster.

**Scores.** ``accuracy`` (fraction of eval samples classified correctly, argmax of the softmax),
``balanced_accuracy`` = (TPR + TNR) / 2 (equal to accuracy when, as here, the eval set has one
sample of each label per user) and ``auc`` (ROC AUC of the member probability, ties counted 1/2).
0.5 means the unlearned users' training items look like their held-out items: complete unlearning.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from .oracle_stack import OracleStack

OPTIMIZERS = ("adam", "sgd")
_RESTART_STRIDE = 1_000_003
METRIC_NAMES = ("accuracy", "balanced_accuracy", "auc")


# --- scores ---------------------------------------------------------------------------------------

def balanced_accuracy(labels, predictions) -> float:
    """Mean of the true-positive rate and the true-negative rate of binary ``predictions``
    (NaN if a class is absent from ``labels``)."""
    labels, predictions = np.asarray(labels).astype(bool), np.asarray(predictions).astype(bool)
    if labels.all() or not labels.any():
        return float("nan")
    return float(0.5 * (predictions[labels].mean() + (~predictions[~labels]).mean()))


def roc_auc(labels, scores) -> float:
    """Area under the ROC curve of ``scores`` for binary ``labels`` (Mann-Whitney statistic with
    average ranks for ties; NaN if a class is absent)."""
    labels, scores = np.asarray(labels).astype(bool), np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, group, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[group]  # 1-based average ranks of tied groups
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


# --- item sets ------------------------------------------------------------------------------------

def as_csr(items: sp.spmatrix | Mapping[int, object], n_users: int, n_items: int) -> sp.csr_matrix:
    """A binary ``n_users x n_items`` CSR matrix from a sparse matrix or a dict user -> item ids."""
    if sp.issparse(items):
        matrix = sp.csr_matrix(items, dtype=np.float32)
        if matrix.shape != (n_users, n_items):
            raise ValueError(f"item-set matrix has shape {matrix.shape}, expected {(n_users, n_items)}")
    else:
        rows = [np.full(len(np.atleast_1d(v)), int(u)) for u, v in items.items()]
        cols = [np.asarray(np.atleast_1d(v), dtype=np.int64) for v in items.values()]
        rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        cols = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        matrix = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n_users, n_items))
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    matrix.eliminate_zeros()
    return matrix


def membership_sets(split) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """``(member, non_member)`` binary user x item matrices of a :class:`~recunlearn.data.Split`:
    training items, and held-out items (validation ∪ test, minus any training item)."""
    member = split.train_matrix.astype(np.float32)
    held_out = ((split.matrix("valid") + split.matrix("test")) > 0).astype(np.float32)
    held_out = held_out - held_out.multiply(member)
    return as_csr(member, split.n_users, split.n_items), as_csr(held_out, split.n_users, split.n_items)


def subsample_rows(matrix: sp.csr_matrix, sizes: np.ndarray, rng: np.random.Generator) -> sp.csr_matrix:
    """Keep ``sizes[r]`` entries of row ``r`` of the binary CSR ``matrix``, chosen uniformly at random
    (all of them when the row has fewer)."""
    matrix = sp.csr_matrix(matrix)
    counts = np.diff(matrix.indptr)
    rows = np.repeat(np.arange(matrix.shape[0]), counts)
    order = np.lexsort((rng.random(len(rows)), rows))  # random order within each row
    rank = np.empty(len(rows), dtype=np.int64)
    rank[order] = np.arange(len(rows)) - np.repeat(matrix.indptr[:-1], counts)
    keep = rank < np.repeat(np.asarray(sizes, dtype=np.int64), counts)
    return sp.csr_matrix((matrix.data[keep], (rows[keep], matrix.indices[keep])), shape=matrix.shape)


def mio_samples(user_emb, item_emb, member: sp.csr_matrix, non_member: sp.csr_matrix, users,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features ``(2·n, 2d)``, labels ``(2·n,)`` (1 member, 0 non-member) and user ids ``(2·n,)`` of
    the size-matched samples of ``users`` (the ``n`` of them with both sets non-empty): member rows
    first, then the non-member rows in the same user order. Vectorised: the item-set means are one
    sparse product per kind."""
    user_emb, item_emb = _numpy(user_emb), _numpy(item_emb)
    users = np.asarray(users, dtype=np.int64)
    member, non_member = member[users], non_member[users]
    sizes = np.minimum(np.diff(member.indptr), np.diff(non_member.indptr))
    keep = sizes > 0
    users, sizes = users[keep], sizes[keep]
    member, non_member = member[keep], non_member[keep]
    means = []
    for sets in (member, non_member):
        chosen = subsample_rows(sets, sizes, rng)
        weights = sp.diags(1.0 / sizes) @ chosen
        means.append(np.asarray(weights @ item_emb, dtype=np.float32))
    user_part = user_emb[users]
    features = np.concatenate([np.hstack([user_part, means[0]]), np.hstack([user_part, means[1]])])
    labels = np.r_[np.ones(len(users), dtype=np.int64), np.zeros(len(users), dtype=np.int64)]
    return features.astype(np.float32), labels, np.r_[users, users]


def _numpy(emb) -> np.ndarray:
    if isinstance(emb, torch.Tensor):
        emb = emb.detach().float().cpu().numpy()
    return np.asarray(emb, dtype=np.float32)


# --- the oracle -----------------------------------------------------------------------------------

def make_oracle(in_dim: int, hidden=(64, 16, 4), seed: int = 0) -> nn.Sequential:
    """The MIO network ``in_dim → hidden... → 2`` with ReLU, initialised from ``seed`` (without
    touching torch's global RNG state)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers, width = [], in_dim
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            width = size
        layers.append(nn.Linear(width, 2))
        return nn.Sequential(*layers)


def train_oracle(features: np.ndarray, labels: np.ndarray, seed: int = 0, hidden=(64, 16, 4),
                 optimizer: str = "adam", lr: float = 1e-3, momentum: float = 0.0, epochs: int = 100,
                 batch_size: int = 32, device="cpu") -> nn.Sequential:
    """Train the MIO network with cross-entropy on (already standardised) ``features``."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    net = make_oracle(features.shape[1], hidden, seed).to(device)
    x = torch.as_tensor(features, device=device)
    y = torch.as_tensor(labels, device=device)
    if optimizer == "adam":
        opt = torch.optim.Adam(net.parameters(), lr=lr)
    else:
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    generator = torch.Generator().manual_seed(seed)
    loss_fn = nn.CrossEntropyLoss()
    net.train()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator).to(device)
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            opt.zero_grad(set_to_none=True)
            loss_fn(net(x[batch]), y[batch]).backward()
            opt.step()
    net.eval()
    return net


def _scores(labels: np.ndarray, probabilities: np.ndarray) -> dict:
    predictions = probabilities > 0.5
    return {"accuracy": float((predictions == labels.astype(bool)).mean()) if len(labels) else float("nan"),
            "balanced_accuracy": balanced_accuracy(labels, predictions),
            "auc": roc_auc(labels, probabilities)}


def mio_accuracy(user_emb, item_emb, member_items, nonmember_items, train_users, eval_users, seed: int = 0, *,
                 hidden=(64, 16, 4), optimizer: str = "adam", lr: float = 1e-3, momentum: float = 0.0,
                 epochs: int = 100, batch_size: int = 32, standardize: bool = True, max_restarts: int = 3,
                 device="cpu", implementation: str = "fast") -> dict:
    """MIO scores on ``eval_users`` of an oracle trained on ``train_users`` (see the module docstring).

    ``user_emb``/``item_emb`` are the audited model's scoring embeddings (tensors or arrays);
    ``member_items``/``nonmember_items`` are user x item sparse matrices or dicts user -> item ids.
    ``seed`` fixes the subsampling, the network's initialisation and the batch order. Returns
    ``accuracy``, ``balanced_accuracy`` and ``auc`` on the eval samples, ``train_accuracy``
    (on the oracle's own training samples: whether it learned anything), ``restarts`` and the sample
    counts.

    The 4-unit ReLU bottleneck sometimes dies during training and the oracle then outputs a
    constant (accuracy exactly 0.5 whatever the model, which would pass for perfect unlearning). Such
    a collapsed oracle -- constant member probability on its own training samples -- is retrained
    from a new initialisation, at most ``max_restarts`` times (decided on training data only).
    ``implementation``: see :func:`oracle_scores_seeds`.
    """
    samples = seed_samples(user_emb, item_emb, member_items, nonmember_items, train_users, eval_users, seed)
    return oracle_scores(*samples, seed, hidden=hidden, optimizer=optimizer, lr=lr, momentum=momentum, epochs=epochs,
                         batch_size=batch_size, standardize=standardize, max_restarts=max_restarts, device=device,
                         implementation=implementation)


def seed_samples(user_emb, item_emb, member_items, nonmember_items, train_users, eval_users, seed: int):
    """``(x_train, y_train, x_eval, y_eval)`` of one oracle seed: the :func:`mio_samples` of
    ``train_users`` and then of ``eval_users``, subsampled by ``numpy.random.default_rng(seed)``."""
    n_users, n_items = len(user_emb), len(item_emb)
    member = as_csr(member_items, n_users, n_items)
    non_member = as_csr(nonmember_items, n_users, n_items)
    rng = np.random.default_rng(seed)
    x_train, y_train, _ = mio_samples(user_emb, item_emb, member, non_member, train_users, rng)
    x_eval, y_eval, _ = mio_samples(user_emb, item_emb, member, non_member, eval_users, rng)
    return x_train, y_train, x_eval, y_eval


def oracle_scores(x_train: np.ndarray, y_train: np.ndarray, x_eval: np.ndarray, y_eval: np.ndarray, seed: int = 0, *,
                  hidden=(64, 16, 4), optimizer: str = "adam", lr: float = 1e-3, momentum: float = 0.0,
                  epochs: int = 100, batch_size: int = 32, standardize: bool = True, max_restarts: int = 3,
                  device="cpu", implementation: str = "fast") -> dict:
    """Train the oracle on the samples ``(x_train, y_train)`` and score it on ``(x_eval, y_eval)``
    (samples as :func:`mio_samples` makes them): ``accuracy``, ``balanced_accuracy``, ``auc``,
    ``train_accuracy``, ``restarts`` and the sample counts. Features are standardised with the
    training samples' mean and std; a collapsed oracle is retrained (see :func:`mio_accuracy`).
    ``implementation``: see :func:`oracle_scores_seeds`."""
    return oracle_scores_seeds([(x_train, y_train, x_eval, y_eval)], [seed], hidden=hidden, optimizer=optimizer,
                               lr=lr, momentum=momentum, epochs=epochs, batch_size=batch_size,
                               standardize=standardize, max_restarts=max_restarts, device=device,
                               implementation=implementation)[0]


IMPLEMENTATIONS = ("reference", "fast")


def oracle_scores_seeds(samples, seeds, *, hidden=(64, 16, 4), optimizer: str = "adam", lr: float = 1e-3,
                        momentum: float = 0.0, epochs: int = 100, batch_size: int = 32, standardize: bool = True,
                        max_restarts: int = 3, device="cpu", implementation: str = "fast") -> list[dict]:
    """:func:`oracle_scores` of every ``(x_train, y_train, x_eval, y_eval)`` of ``samples`` with the
    matching seed of ``seeds``, one result per seed.

    ``implementation="reference"`` trains one network at a time (:func:`train_oracle`, the
    definition); ``"fast"`` (default) trains the networks whose sample counts agree -- in practice all
    of them -- together as one :class:`~recunlearn.metrics.oracle_stack.OracleStack`, and the
    collapsed ones of a round together again from their restart seeds. Both give the same bits on a
    CPU (``tests/unit/test_oracle_stack.py``)."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {implementation!r}")
    if len(samples) != len(seeds):
        raise ValueError(f"{len(samples)} sample sets for {len(seeds)} seeds")
    prepared = [_standardized(*sample, standardize) for sample in samples]
    training = dict(hidden=hidden, optimizer=optimizer, lr=lr, momentum=momentum, epochs=epochs,
                    batch_size=batch_size, device=device)
    if implementation == "reference":
        probabilities = [_reference_probabilities(x_train, y_train, x_eval, seed, max_restarts, training)
                         for (x_train, y_train, x_eval, _), seed in zip(prepared, seeds)]
    else:
        probabilities = [None] * len(seeds)
        groups: dict[tuple, list[int]] = {}
        for index, (x_train, _, x_eval, _) in enumerate(prepared):
            groups.setdefault((x_train.shape, x_eval.shape), []).append(index)
        for members in groups.values():
            results = _stacked_probabilities([prepared[i] for i in members], [seeds[i] for i in members],
                                             max_restarts, training)
            for index, result in zip(members, results):
                probabilities[index] = result
    out = []
    for (_, y_train, _, y_eval), (p_train, p_eval, restart) in zip(prepared, probabilities):
        scores = _scores(y_eval, p_eval)
        scores.update({"train_accuracy": _scores(y_train, p_train)["accuracy"], "restarts": restart,
                       "n_train_samples": int(len(y_train)), "n_eval_samples": int(len(y_eval))})
        out.append(scores)
    return out


def _standardized(x_train, y_train, x_eval, y_eval, standardize: bool):
    if len(y_train) == 0:
        raise ValueError("no training user has both member and non-member items")
    if standardize:
        mean, std = x_train.mean(0), x_train.std(0)
        std = np.where(std > 1e-8, std, 1.0).astype(np.float32)
        x_train, x_eval = (x_train - mean) / std, (x_eval - mean) / std
    return x_train, y_train, x_eval, y_eval


def _collapsed(p_train: np.ndarray) -> bool:
    """Whether an oracle's member probability is constant on its own training samples."""
    return not np.ptp(p_train) > 1e-6


def _reference_probabilities(x_train, y_train, x_eval, seed, max_restarts, training):
    """``(p_train, p_eval, restarts)`` of one oracle trained alone (restarted while collapsed)."""
    device = training["device"]
    prob = lambda net, x: torch.softmax(net(torch.as_tensor(x, device=device)), 1)[:, 1].cpu().numpy()  # noqa: E731
    for restart in range(max_restarts + 1):
        # a restart re-draws only the network's initialisation and batch order
        net = train_oracle(x_train, y_train, seed + _RESTART_STRIDE * restart, **training)
        with torch.no_grad():
            p_train = prob(net, x_train)
        if not _collapsed(p_train):
            break
    with torch.no_grad():
        p_eval = prob(net, x_eval) if len(x_eval) else np.zeros(0, dtype=np.float32)
    return p_train, p_eval, restart


def _stacked_probabilities(prepared, seeds, max_restarts, training):
    """``(p_train, p_eval, restarts)`` of the oracles of ``prepared`` (same sample counts) trained as
    one stack; each round retrains the collapsed ones together from their next restart seed."""
    device = training["device"]
    x_train = torch.as_tensor(np.stack([p[0] for p in prepared]), device=device)
    y_train = torch.as_tensor(np.stack([p[1] for p in prepared]), device=device)
    x_eval = torch.as_tensor(np.stack([p[2] for p in prepared]), device=device)
    results, pending = [None] * len(prepared), list(range(len(prepared)))
    for restart in range(max_restarts + 1):
        round_seeds = [seeds[i] + _RESTART_STRIDE * restart for i in pending]
        networks = [make_oracle(x_train.shape[2], training["hidden"], seed) for seed in round_seeds]
        stack = OracleStack(networks, device).fit(x_train[pending], y_train[pending], round_seeds,
                                                  training["optimizer"], training["lr"], training["momentum"],
                                                  training["epochs"], training["batch_size"])
        p_train = stack.probabilities(x_train[pending]).cpu().numpy()
        p_eval = (stack.probabilities(x_eval[pending]).cpu().numpy() if x_eval.shape[1]
                  else np.zeros((len(pending), 0), dtype=np.float32))
        still = []
        for row, index in enumerate(pending):
            results[index] = (p_train[row], p_eval[row], restart)
            if _collapsed(p_train[row]):
                still.append(index)
        pending = still
        if not pending:
            break
    return results


def mio_accuracy_seeds(user_emb, item_emb, member_items, nonmember_items, train_users, eval_users,
                       n_seeds: int = 5, seed: int = 0, **kwargs) -> dict:
    """:func:`mio_accuracy` for seeds ``seed, ..., seed + n_seeds - 1``: ``<metric>`` (mean over
    seeds), ``<metric>_std`` (population std) for accuracy, balanced accuracy, AUC and train
    accuracy, ``restarts`` (total over seeds) and ``per_seed`` (the list of single-seed results).
    ``kwargs``: those of :func:`mio_accuracy`; the seeds' oracles are trained together (see
    :func:`oracle_scores_seeds`)."""
    n_users, n_items = len(user_emb), len(item_emb)
    member, non_member = as_csr(member_items, n_users, n_items), as_csr(nonmember_items, n_users, n_items)
    seeds = list(range(seed, seed + n_seeds))
    samples = [seed_samples(user_emb, item_emb, member, non_member, train_users, eval_users, s) for s in seeds]
    runs = oracle_scores_seeds(samples, seeds, **kwargs)
    out = {}
    for name in (*METRIC_NAMES, "train_accuracy"):
        values = np.array([run[name] for run in runs], dtype=np.float64)
        out[name], out[f"{name}_std"] = float(values.mean()), float(values.std())
    out["restarts"] = int(sum(run["restarts"] for run in runs))
    out["per_seed"] = runs
    return out
