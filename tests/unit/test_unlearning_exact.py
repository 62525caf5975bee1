"""Exact unlearning: selection, partitions, blocked (sharded) training and the four-stage pipeline."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from recunlearn.data.selection import select_unlearning_users, user_scores
from recunlearn.experiments.cure4rec_exact import shard_statistics
from recunlearn.models import BPR, WMF, LightGCN, TrainingData
from recunlearn.models.mf import whole_data_loss
from recunlearn.unlearning import exact
from recunlearn.unlearning.combiners import build_combiner
from recunlearn.unlearning.partition import balanced_kmeans, ot_partition, random_partition

# --- selection on a hand-made graph ---------------------------------------------------------------
#   user 0: items 0 1 2 3    user 1: item 0    user 2: items 0 1    user 3: items 2 3    user 4: item 4 5 6
GRAPH_USERS = np.array([0, 0, 0, 0, 1, 2, 2, 3, 3, 4, 4, 4])
GRAPH_ITEMS = np.array([0, 1, 2, 3, 0, 0, 1, 2, 3, 4, 5, 6])


def test_degree_and_importance_scores_by_hand():
    assert user_scores(GRAPH_USERS, GRAPH_ITEMS, 5, "degree").tolist() == [4, 1, 2, 2, 3]
    # item degrees: 0->3, 1->2, 2->2, 3->2, 4,5,6->1;  I(u) = deg(u) * mean neighbour degree
    expected = [4 * (3 + 2 + 2 + 2) / 4, 1 * 3, 2 * (3 + 2) / 2, 2 * (2 + 2) / 2, 3 * 1]
    assert np.allclose(user_scores(GRAPH_USERS, GRAPH_ITEMS, 5, "importance"), expected)


def test_core_edge_random_rules():
    pick = lambda rule, ratio, scoring="degree", seed=0: select_unlearning_users(  # noqa: E731
        GRAPH_USERS, GRAPH_ITEMS, 5, rule, ratio, scoring, seed).tolist()
    assert pick("core", 40) == [0, 4]            # int(5 * 0.4) = 2 users: degrees 4 and 3
    assert pick("edge", 40) == [1, 2]            # degrees 1, then a tie 2/2 broken by user id
    assert pick("core", 40, "importance") == [0, 2]  # importance 9, 5, 4, 3, 3
    assert pick("edge", 20, "importance") == [1]     # tie at 3 between users 1 and 4: lower id first
    assert pick("random", 60, seed=3) == pick("random", 60, seed=3)
    assert len(pick("random", 60)) == 3 and pick("core", 0) == []
    with pytest.raises(ValueError, match="rule"):
        pick("centre", 5)


# --- partitions -----------------------------------------------------------------------------------

def blobs(n_per=30, k=3, dim=4, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=10, size=(k, dim))
    return np.concatenate([c + rng.normal(size=(n_per, dim)) for c in centres]), np.repeat(np.arange(k), n_per)


def same_partition(a, b) -> bool:
    """Labels equal up to renaming the shards."""
    return len({(x, y) for x, y in zip(a, b)}) == len(set(a)) == len(set(b))


def test_random_partition_is_balanced_and_seeded():
    labels = random_partition(103, 10, seed=1)
    sizes = np.bincount(labels)
    assert len(labels) == 103 and sizes.max() - sizes.min() <= 1
    assert (labels == random_partition(103, 10, seed=1)).all() and not (labels == random_partition(103, 10, 2)).all()


@pytest.mark.parametrize("partition", [balanced_kmeans, ot_partition])
def test_balanced_partitions_assign_everyone_once_within_capacity(partition):
    points, truth = blobs()
    labels = partition(points, 3, seed=0)
    assert labels.shape == (90,) and set(labels) == {0, 1, 2}
    assert np.bincount(labels).max() <= 30  # capacity ceil(90 / 3)
    assert same_partition(labels, truth)     # well separated blobs are recovered
    uneven = partition(np.random.default_rng(1).normal(size=(23, 2)), 4, seed=0)
    assert np.bincount(uneven, minlength=4).max() <= 6  # ceil(23 / 4)


def share_in_nearest_shard(points, labels):
    anchors = np.stack([points[labels == s].mean(0) for s in range(labels.max() + 1)])
    nearest = ((points[:, None] - anchors[None]) ** 2).sum(-1).argmin(1)
    return (nearest == labels).mean()


def test_farthest_first_variant_places_fewer_users_in_their_nearest_shard():
    points = np.random.default_rng(0).normal(size=(200, 8))
    nearest = share_in_nearest_shard(points, balanced_kmeans(points, 5, 0))
    farthest = share_in_nearest_shard(points, balanced_kmeans(points, 5, 0, order="farthest_first"))
    assert nearest > farthest + 0.1, (nearest, farthest)


# --- blocked data and models --------------------------------------------------------------------

def tiny_problem(seed=0, n_users=24, n_items=12, per_user=4):
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), per_user)
    items = np.concatenate([rng.choice(n_items, per_user, replace=False) for _ in range(n_users)])
    return users, items, n_users, n_items


def test_blocked_negatives_stay_in_the_users_block_and_are_negative():
    users, items, n_users, n_items = tiny_problem()
    shard = np.arange(n_users) % 3
    data = TrainingData.from_blocks(users, items, shard[users], n_users, n_items, 3)
    generator = torch.Generator().manual_seed(0)
    query = data.users.repeat(20)
    negatives = data.sample_negatives(query, generator)
    assert (negatives // n_items == query // n_users).all()
    assert not data.is_positive(query, negatives).any()


def test_block_steps_give_each_block_its_own_batches():
    users, items, n_users, n_items = tiny_problem()
    shard = (np.arange(n_users) >= 8).astype(int)  # block 0: 8 users (32 rows), block 1: 16 users (64 rows)
    data = TrainingData.from_blocks(users, items, shard[users], n_users, n_items, 2)
    rows = torch.arange(len(data))
    steps = list(data.block_steps(rows, data.block_of_users(data.users), 10, torch.Generator().manual_seed(0)))
    per_step = [np.bincount(data.block_of_users(data.users[s]).numpy(), minlength=2).tolist() for s in steps]
    assert per_step == [[10, 10], [10, 10], [10, 10], [2, 10], [0, 10], [0, 10], [0, 4]]
    assert sorted(torch.cat(steps).tolist()) == list(range(len(data)))
    only_one = list(data.block_steps(rows, data.block_of_users(data.users), 10, torch.Generator().manual_seed(0),
                                     active_blocks=torch.tensor([False, True])))
    assert (data.block_of_users(data.users[torch.cat(only_one)]) == 1).all()


def test_blocked_wmf_loss_is_the_sum_of_independent_models():
    users, items, n_users, n_items = tiny_problem()
    shard = np.arange(n_users) % 2
    blocked = WMF(2 * n_users, 2 * n_items, 3, torch.Generator().manual_seed(0), c0=0.3, n_blocks=2).double()
    data = TrainingData.from_blocks(users, items, shard[users], n_users, n_items, 2)
    batch = next(blocked.batches(data, torch.Generator().manual_seed(0)))
    total = blocked.batch_loss(batch)
    expected = 0.0
    for b in range(2):
        mine = data.block_of_users(batch[0]) == b
        p = blocked.user_embedding[batch[0][mine]]
        rows = data.block_of_users(batch[1]) == b
        y = (blocked.user_embedding[batch[1][rows]] * blocked.item_embedding[batch[2][rows]]).sum(1)
        expected = expected + whole_data_loss(p, y, blocked.item_embedding[b * n_items:(b + 1) * n_items], 0.3)
    assert torch.allclose(total, expected)


def test_blocked_lightgcn_graph_is_block_diagonal():
    users, items, n_users, n_items = tiny_problem()
    shard = np.arange(n_users) % 3
    data = TrainingData.from_blocks(users, items, shard[users], n_users, n_items, 3)
    model = LightGCN(3 * n_users, 3 * n_items, 4, torch.Generator().manual_seed(0), n_blocks=3)
    model.prepare(data)
    dense = model.adjacency.to_dense()
    block_of_node = np.r_[np.arange(3 * n_users) // n_users, np.arange(3 * n_items) // n_items]
    rows, cols = np.nonzero(dense.numpy())
    assert (block_of_node[rows] == block_of_node[cols]).all()


# --- the pipeline ---------------------------------------------------------------------------------

def run_pipeline(monkeypatch, model_cls, shard, deleted, timing="batched"):
    users, items, n_users, n_items = tiny_problem()
    seen = []
    real_train = exact.train_until_converged

    def spy(model, data, *args, **kwargs):  # a shard trained as a model of its own is marked "alone"
        alone = model.n_blocks == 1 and len(np.unique(shard)) > 1
        seen.append((data.users.clone(), "alone" if alone else kwargs.get("blocks")))
        return real_train(model, data, *args, **kwargs)

    monkeypatch.setattr(exact, "train_until_converged", spy)
    valid = sp.csr_matrix((np.ones(n_users), (np.arange(n_users), np.arange(n_users) % n_items)),
                          shape=(n_users, n_items))
    train = sp.csr_matrix((np.ones(len(users)), (users, items)), shape=(n_users, n_items))
    build = lambda k, g: model_cls(n_users * k, n_items * k, 4, g, n_blocks=k, batch_size=16)  # noqa: E731
    result = exact.unlearn_exactly(users, items, n_users, n_items, shard, deleted, build, train, valid, seed=0,
                                   train_kwargs=dict(max_epochs=3, patience=2, progress=False), timing=timing)
    return result, seen, n_users


@pytest.mark.parametrize("model_cls", [WMF, BPR, LightGCN])
@pytest.mark.parametrize("timing", ["batched", "sequential", "alone"])
def test_unlearned_users_never_reach_retrained_shards(monkeypatch, model_cls, timing):
    shard = np.arange(24) % 4
    deleted = np.array([1, 5, 2])  # shards 1 and 2
    result, seen, n_users = run_pipeline(monkeypatch, model_cls, shard, deleted, timing)
    assert result.affected_shards.tolist() == [1, 2]
    stage3 = [(users, blocks) for users, blocks in seen
              if isinstance(blocks, str) or (blocks is not None and set(np.atleast_1d(blocks)) <= {1, 2})]
    assert stage3, "stage III trained nothing"
    assert len(stage3) == (1 if timing == "batched" else 2)
    for users, blocks in stage3:
        assert not np.isin(users.numpy() % n_users, deleted).any()
        if isinstance(blocks, str):  # a shard alone sees only its own users' rows
            assert len(np.unique(shard[users.numpy()])) == 1
    assert result.unaffected_unchanged is True and result.deleted_rows_at_init is True
    if timing != "batched":
        assert result.timings["unlearn_seconds"] <= result.timings["unlearn_sum_seconds"]


@pytest.mark.parametrize("model_cls", [WMF, BPR, LightGCN])
def test_a_shard_trained_alone_is_the_shard_trained_inside_the_blocked_model(monkeypatch, model_cls):
    """``alone`` changes what is timed (no cost of the other K - 1 shards per step), not the model: the
    retrained shards equal those of ``sequential`` (bit for bit for the pairwise models; WMF's whole-data
    loss sums in another order)."""
    shard, deleted = np.arange(24) % 4, np.array([1, 5, 2])
    inside, _, _ = run_pipeline(monkeypatch, model_cls, shard, deleted, "sequential")
    alone, _, _ = run_pipeline(monkeypatch, model_cls, shard, deleted, "alone")
    for block in (1, 2):
        for (a, rows), (b, _) in zip(inside.model.block_parameters(block), alone.model.block_parameters(block)):
            if model_cls is WMF:
                torch.testing.assert_close(a[rows], b[rows], rtol=0, atol=1e-6)
            else:
                assert torch.equal(a[rows], b[rows])
    assert [r.epochs_run for r in inside.stage3] == [r.epochs_run for r in alone.stage3]


def test_unaffected_shards_are_bit_identical_before_and_after(monkeypatch):
    shard = np.arange(24) % 3
    captured = {}
    real = exact.shard_fingerprint

    def record(model, shards):
        captured.setdefault("calls", []).append({int(s): [p[r].detach().clone() for p, r in model.block_parameters(s)]
                                                 for s in shards})
        return real(model, shards)

    monkeypatch.setattr(exact, "shard_fingerprint", record)
    result, _, _ = run_pipeline(monkeypatch, BPR, shard, np.array([0, 3]))  # only shard 0 affected
    before, after = captured["calls"]
    assert set(before) == {1, 2}
    for s in before:
        for x, y in zip(before[s], after[s]):
            assert torch.equal(x, y)
    assert result.unaffected_unchanged


def test_affected_shards_must_hold_every_deleted_row_without_a_learned_model():
    """Naming affected shards that leave out a deleted user's shard would train that shard on the rows
    to forget: refused before any training."""
    users, items, n_users, n_items = tiny_problem()
    train = sp.csr_matrix((np.ones(len(users)), (users, items)), shape=(n_users, n_items))
    build = lambda k, g: WMF(n_users * k, n_items * k, 4, g, n_blocks=k)  # noqa: E731
    with pytest.raises(ValueError, match=r"leaves out shard\(s\) \[1\]"):
        exact.unlearn_exactly(users, items, n_users, n_items, np.arange(24) % 4, np.array([1]), build, train, train,
                              seed=0, train_kwargs=dict(max_epochs=1, progress=False), affected_shards=[0])


def test_retrain_is_one_shard_trained_on_the_rest(monkeypatch):
    result, seen, n_users = run_pipeline(monkeypatch, WMF, np.zeros(24, dtype=int), np.array([4, 7]))
    assert len(seen) == 1 and result.stage1 is None and result.affected_shards.tolist() == [0]


def validation_items(n_users, n_items, train_users, train_items, seed, per_user=2):
    """``per_user`` random non-training items per user, as a CSR matrix."""
    rng = np.random.default_rng(seed)
    trained = sp.csr_matrix((np.ones(len(train_users)), (train_users, train_items)), shape=(n_users, n_items))
    rows = [rng.choice(np.flatnonzero(trained[u].toarray().ravel() == 0), per_user, replace=False)
            for u in range(n_users)]
    return sp.csr_matrix((np.ones(n_users * per_user), (np.repeat(np.arange(n_users), per_user), np.concatenate(rows))),
                         shape=(n_users, n_items))


def replace_rows(matrix, other, users):
    """``matrix`` with the rows of ``users`` taken from ``other``."""
    mask = sp.diags(np.isin(np.arange(matrix.shape[0]), users).astype(float))
    return sp.csr_matrix(matrix - mask @ matrix + mask @ other)


@pytest.mark.parametrize("n_shards", [1, 3], ids=["retrain", "sisa"])
def test_model_selection_never_reads_the_unlearned_users_validation_items(monkeypatch, n_shards):
    """Changing only the unlearned users' validation items gives a bit-identical model; changing
    the remaining users' changes the validation set stage III selects on, and the model. (Without
    the filter the unlearned users' items move the best epoch here: 5 -> 16 for Retrain.)"""
    users, items, n_users, n_items = tiny_problem()
    shard = np.arange(n_users) % n_shards
    deleted = np.arange(8)  # every shard affected when sharded
    train = sp.csr_matrix((np.ones(len(users)), (users, items)), shape=(n_users, n_items))
    base = validation_items(n_users, n_items, users, items, seed=1)
    other = validation_items(n_users, n_items, users, items, seed=2)
    remaining = np.setdiff1d(np.arange(n_users), deleted)
    selected = []
    real_train = exact.train_until_converged

    def spy(model, data, generator, exclude, relevant, **kwargs):
        selected.append(relevant.copy())
        return real_train(model, data, generator, exclude, relevant, **kwargs)

    monkeypatch.setattr(exact, "train_until_converged", spy)

    def unlearned_model(valid):
        build = lambda k, g: BPR(n_users * k, n_items * k, 4, g, n_blocks=k, batch_size=16)  # noqa: E731
        result = exact.unlearn_exactly(users, items, n_users, n_items, shard, deleted, build, train, valid, seed=0,
                                       train_kwargs=dict(lr=0.02, max_epochs=30, patience=2, progress=False))
        assert result.deleted_rows_at_init
        return [p.detach().clone() for p in result.model.parameters()]

    reference = unlearned_model(base)
    stage3 = selected[-1]
    assert np.diff(stage3.indptr)[deleted].sum() == 0 and (stage3[remaining] != base[remaining]).nnz == 0
    same = unlearned_model(replace_rows(base, other, deleted))
    assert all(torch.equal(p, q) for p, q in zip(reference, same))
    changed = unlearned_model(replace_rows(base, other, remaining))
    assert (selected[-1] != stage3).nnz > 0
    assert not all(torch.equal(p, q) for p, q in zip(reference, changed))


def test_without_users_empties_only_their_rows():
    matrix = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 5.0, 0.0]]))
    out = exact.without_users(matrix, [1, 2])
    assert out.shape == matrix.shape and out.dtype == matrix.dtype
    assert out.toarray().tolist() == [[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert np.diff(out.indptr).tolist() == [2, 0, 0]


def test_shard_statistics_by_hand():
    per_user = {"user": np.arange(6), "ndcg_untruncated": np.array([0.1, 0.3, 0.2, 0.2, 0.9, 0.5]),
                "ndcg": np.array([0.1, 0.3, 0.2, 0.2, 0.9, 0.5])}
    shard = np.array([0, 0, 1, 1, 2, 2])
    active = np.array([False, False, True, False, True, True])
    out = shard_statistics(per_user, shard, active, 3)
    assert np.isclose(out["shard_gf"], np.var([0.2, 0.2, 0.7]))
    assert out["shard_active"] == [0, 1, 2] and out["shard_inactive"] == [2, 1, 0]


@pytest.mark.parametrize("name", ["attention", "linear"])
@pytest.mark.parametrize("backbone", ["wmf", "bpr"])
def test_combiners_serve_every_user_and_learn(name, backbone):
    users, items, n_users, n_items = tiny_problem()
    shard = np.arange(n_users) % 3
    blocked = BPR(3 * n_users, 3 * n_items, 4, torch.Generator().manual_seed(0), n_blocks=3)
    combiner = build_combiner(name, blocked, shard, backbone, torch.Generator().manual_seed(0), batch_size=8)
    user_emb, item_emb = combiner.embeddings()
    assert user_emb.shape == (n_users, 4) and item_emb.shape == (n_items, 4)
    data = TrainingData.from_pairs(users, items, n_users, n_items)
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(combiner.parameters(), lr=0.05)
    combiner.eval()
    losses = []
    for _ in range(30):
        total = 0.0
        for batch in combiner.batches(data, generator):
            optimizer.zero_grad()
            loss = combiner.batch_loss(batch)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total)
    assert losses[-1] < losses[0]
