"""MIO: scores on hand examples, size-matched samples against brute force, and the oracle on a memorising
MF (Learn) versus a model retrained without the unlearned users."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
import torch.nn.functional as F

from recunlearn.data import Split
from recunlearn.metrics.membership import (as_csr, balanced_accuracy, make_oracle, membership_sets,
                                           mio_accuracy, mio_accuracy_seeds, mio_samples, roc_auc, subsample_rows)

# --- scores -------------------------------------------------------------------------------------------


def test_balanced_accuracy_hand_example():
    labels = [1, 1, 1, 0]
    predictions = [1, 1, 0, 0]
    # TPR = 2/3, TNR = 1/1 -> (2/3 + 1) / 2; plain accuracy would be 3/4
    assert balanced_accuracy(labels, predictions) == pytest.approx(5 / 6)
    assert balanced_accuracy([1, 0, 1, 0], [1, 1, 1, 1]) == pytest.approx(0.5)  # constant predictor
    assert np.isnan(balanced_accuracy([1, 1], [1, 0]))


def test_roc_auc_hand_example_with_ties_and_pairwise_brute_force():
    # positives 0.8, 0.4; negatives 0.4, 0.1: pairs (0.8>0.4) (0.8>0.1) (0.4=0.4 -> 1/2) (0.4>0.1)
    assert roc_auc([1, 1, 0, 0], [0.8, 0.4, 0.4, 0.1]) == pytest.approx(3.5 / 4)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200).astype(bool)
    scores = np.round(rng.random(200) + 0.3 * labels, 1)  # many ties
    pos, neg = scores[labels][:, None], scores[~labels][None, :]
    assert roc_auc(labels, scores) == pytest.approx(((pos > neg) + 0.5 * (pos == neg)).mean())
    assert np.isnan(roc_auc([1, 1], [0.2, 0.3]))


# --- item sets and samples ----------------------------------------------------------------------------

def test_as_csr_from_dict_and_matrix_agree():
    sets = {0: [1, 3], 2: np.array([0]), 3: []}
    from_dict = as_csr(sets, 4, 5)
    dense = np.zeros((4, 5))
    dense[0, [1, 3]] = 1
    dense[2, 0] = 1
    assert np.array_equal(from_dict.toarray(), dense)
    assert np.array_equal(as_csr(sp.csr_matrix(dense * 3), 4, 5).toarray(), dense)  # binarised
    with pytest.raises(ValueError):
        as_csr(sp.csr_matrix(dense), 5, 5)


def test_subsample_rows_respects_sizes_and_seed():
    rng = np.random.default_rng(0)
    matrix = sp.csr_matrix((rng.random((30, 40)) < 0.3).astype(np.float32))
    sizes = rng.integers(0, 8, 30)
    chosen = subsample_rows(matrix, sizes, np.random.default_rng(1))
    counts = np.diff(chosen.indptr)
    assert np.array_equal(counts, np.minimum(sizes, np.diff(matrix.indptr)))
    assert (chosen.multiply(matrix) != chosen).nnz == 0  # a subset of each row
    again = subsample_rows(matrix, sizes, np.random.default_rng(1))
    assert (again != chosen).nnz == 0


def test_mio_samples_match_brute_force_size_matched_means():
    rng = np.random.default_rng(0)
    user_emb, item_emb = rng.normal(size=(5, 3)), rng.normal(size=(12, 3))
    member = as_csr({0: [0, 1, 2, 3], 1: [4, 5], 2: [6], 4: [7, 8, 9]}, 5, 12)
    non_member = as_csr({0: [10, 11], 1: [0, 1, 2], 2: [], 4: [11]}, 5, 12)
    x, y, users = mio_samples(user_emb, item_emb, member, non_member, [0, 1, 2, 4], np.random.default_rng(3))
    # user 2 has no non-member item: skipped; sizes m = (2, 2, 1) for users 0, 1, 4
    assert users.tolist() == [0, 1, 4, 0, 1, 4] and y.tolist() == [1, 1, 1, 0, 0, 0]
    assert x.shape == (6, 6)
    for row, (u, label) in enumerate(zip(users, y)):
        np.testing.assert_allclose(x[row, :3], user_emb[u], rtol=1e-6)
        pool = (member if label else non_member)[u].indices
        m = {0: 2, 1: 2, 4: 1}[u]
        # the mean must be the mean of some m-subset of the pool: check against all subsets
        means = [item_emb[list(c)].mean(0) for c in combinations(pool, m)]
        assert min(np.abs(x[row, 3:] - mean).max() for mean in means) < 1e-6
    np.testing.assert_allclose(x[3, 3:], item_emb[[10, 11]].mean(0), rtol=1e-6)  # all non-members of user 0


def test_membership_sets_of_a_split():
    frame = lambda pairs: pd.DataFrame(pairs, columns=["user", "item"])  # noqa: E731
    split = Split(3, 6, frame([(0, 0), (0, 1), (1, 2), (2, 3)]), frame([(0, 4), (1, 2)]), frame([(0, 5), (0, 4)]),
                  "toy")
    member, non_member = membership_sets(split)
    assert member.toarray().tolist() == [[1, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0]]
    # held-out = valid ∪ test, binary, minus training items (user 1's validation item 2 is a train item)
    assert non_member.toarray().tolist() == [[0, 0, 0, 0, 1, 1], [0] * 6, [0] * 6]


def test_oracle_architecture_and_seeded_init():
    net = make_oracle(8, seed=0)
    widths = [layer.out_features for layer in net if isinstance(layer, torch.nn.Linear)]
    assert widths == [64, 16, 4, 2] and net[0].in_features == 8
    state = torch.random.get_rng_state()
    again = make_oracle(8, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)  # global RNG untouched
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), again.state_dict().values()))


# --- the oracle on Learn vs Retrain -------------------------------------------------------------------

N_USERS, N_ITEMS, DIM = 300, 100, 8


@pytest.fixture(scope="module")
def memorisation():
    """Random (structure-free) data: each user has 10 training and 4 held-out items. A dense logistic
    MF (all non-training pairs are negatives) memorises the training pairs, so held-out items are
    not predictable and membership is visible. Users 0, 5, 10, ... are unlearned; Retrain trains on
    the others only, leaving the unlearned users' rows at their random initialisation."""
    rng = np.random.default_rng(0)
    train, held_out = {}, {}
    for u in range(N_USERS):
        chosen = rng.choice(N_ITEMS, 14, replace=False)
        train[u], held_out[u] = chosen[:10], chosen[10:]
    deleted = np.arange(0, N_USERS, 5)
    retained = np.setdiff1d(np.arange(N_USERS), deleted)
    labels = torch.as_tensor(as_csr(train, N_USERS, N_ITEMS).toarray())

    def fit(users, seed):
        generator = torch.Generator().manual_seed(seed)
        p = (torch.randn(N_USERS, DIM, generator=generator) * 0.1).requires_grad_()
        q = (torch.randn(N_ITEMS, DIM, generator=generator) * 0.1).requires_grad_()
        weight = torch.zeros(N_USERS, 1)
        weight[torch.as_tensor(users)] = 1.0
        optimizer = torch.optim.Adam([p, q], lr=0.1)
        for _ in range(100):
            optimizer.zero_grad()
            loss = F.binary_cross_entropy_with_logits(p @ q.T, labels, weight=weight, reduction="sum") / weight.sum()
            loss.backward()
            optimizer.step()
        return p.detach(), q.detach()

    learn, retrain = fit(np.arange(N_USERS), 0), fit(retained, 1)
    return dict(train=train, held_out=held_out, deleted=deleted, retained=retained, learn=learn, retrain=retrain)


def test_mio_separates_members_for_learn_and_not_for_retrain(memorisation):
    """Tolerances: Learn > 0.8 on the unlearned users; Retrain |accuracy - 0.5| < 0.1 (120 eval samples:
    one standard error of a chance accuracy is about 0.046)."""
    m = memorisation
    args = (m["train"], m["held_out"], m["retained"], m["deleted"])
    learn = mio_accuracy(*m["learn"], *args, seed=0)
    retrain = mio_accuracy(*m["retrain"], *args, seed=0)
    assert learn["n_eval_samples"] == 2 * len(m["deleted"]) and learn["n_train_samples"] == 2 * len(m["retained"])
    assert learn["train_accuracy"] > 0.95
    assert learn["accuracy"] > 0.8 and learn["auc"] > 0.85
    assert abs(retrain["accuracy"] - 0.5) < 0.1 and abs(retrain["auc"] - 0.5) < 0.15
    # the eval set is balanced (one sample of each label per user): accuracy == balanced accuracy
    assert learn["accuracy"] == pytest.approx(learn["balanced_accuracy"])
    assert retrain["accuracy"] == pytest.approx(retrain["balanced_accuracy"])


def test_mio_is_deterministic_and_seeds_average(memorisation):
    m = memorisation
    args = (*m["learn"], m["train"], m["held_out"], m["retained"], m["deleted"])
    kwargs = dict(epochs=10)
    first, second = mio_accuracy(*args, seed=3, **kwargs), mio_accuracy(*args, seed=3, **kwargs)
    assert first == second
    averaged = mio_accuracy_seeds(*args, n_seeds=2, seed=3, **kwargs)
    assert averaged["per_seed"][0] == first
    values = [run["accuracy"] for run in averaged["per_seed"]]
    assert averaged["accuracy"] == pytest.approx(np.mean(values))
    assert averaged["accuracy_std"] == pytest.approx(np.std(values))


def test_collapsed_oracle_is_restarted(memorisation):
    """Learning rate 10 kills the ReLU bottleneck (constant output): with restarts allowed the result
    records them; with none the dead oracle scores exactly chance."""
    m = memorisation
    args = (*m["learn"], m["train"], m["held_out"], m["retained"], m["deleted"])
    dead = mio_accuracy(*args, seed=0, lr=10.0, epochs=2, max_restarts=0)
    assert dead["restarts"] == 0 and dead["auc"] == pytest.approx(0.5) and dead["accuracy"] == pytest.approx(0.5)
    retried = mio_accuracy(*args, seed=0, lr=10.0, epochs=2, max_restarts=2)
    assert retried["restarts"] == 2


def test_invalid_optimizer(memorisation):
    m = memorisation
    with pytest.raises(ValueError):
        mio_accuracy(*m["learn"], m["train"], m["held_out"], m["retained"], m["deleted"], optimizer="rmsprop")
