"""Recommenders: training data sampling, losses against brute force, LightGCN propagation, determinism."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from local_data import skip_if_absent
from recunlearn.models import BPR, LightGCN, TrainingData, WMF, normalized_adjacency, propagate

N_USERS, N_ITEMS = 60, 40


@pytest.fixture(scope="module")
def synthetic_pairs():
    """60 users x 40 items in two taste groups (users prefer the items of their group), plus one user
    and one item without any interaction."""
    rng = np.random.default_rng(0)
    users, items = [], []
    for u in range(N_USERS - 1):
        group = u % 2
        liked = rng.choice(np.arange(group * 19, group * 19 + 19), size=rng.integers(4, 12), replace=False)
        other = rng.choice(np.arange(39), size=1)
        chosen = np.unique(np.r_[liked, other])
        users += [u] * len(chosen)
        items += chosen.tolist()
    return np.array(users), np.array(items)  # user 59 and item 39 are isolated


@pytest.fixture
def data(synthetic_pairs):
    users, items = synthetic_pairs
    order = np.random.default_rng(1).permutation(len(users))  # from_pairs must sort
    return TrainingData.from_pairs(users[order], items[order], N_USERS, N_ITEMS)


def positives(data: TrainingData) -> set[tuple[int, int]]:
    return set(zip(data.users.tolist(), data.items.tolist()))


# --- TrainingData -------------------------------------------------------------------------------------

def test_from_pairs_sorted_with_indptr(data, synthetic_pairs):
    assert len(data) == len(synthetic_pairs[0])
    keys = data.users * N_ITEMS + data.items
    assert torch.all(keys[1:] > keys[:-1]) and torch.equal(keys, data.keys)
    counts = np.bincount(synthetic_pairs[0], minlength=N_USERS)
    assert data.indptr.tolist() == np.r_[0, np.cumsum(counts)].tolist()
    pairs = positives(data)
    query_u, query_i = torch.meshgrid(torch.arange(N_USERS), torch.arange(N_ITEMS), indexing="ij")
    flags = data.is_positive(query_u.flatten(), query_i.flatten())
    expected = [(u, i) in pairs for u, i in zip(query_u.flatten().tolist(), query_i.flatten().tolist())]
    assert flags.tolist() == expected


def test_sample_negatives_never_returns_a_training_positive():
    # user 0 has 38 of 40 items: only items 17 and 39 (the largest id) are negatives
    users = np.r_[[0] * 38, [1] * 3]
    items = np.r_[[i for i in range(40) if i not in (17, 39)], [0, 1, 2]]
    data = TrainingData.from_pairs(users, items, 2, 40)
    pairs = positives(data)
    generator = torch.Generator().manual_seed(0)
    query = torch.tensor([0] * 4000 + [1] * 4000)
    negatives = data.sample_negatives(query, generator)
    assert not any((u, i) in pairs for u, i in zip(query.tolist(), negatives.tolist()))
    of_user0 = negatives[:4000]
    assert set(of_user0.tolist()) == {17, 39}
    assert 0.45 < (of_user0 == 39).float().mean().item() < 0.55  # uniform over the allowed items
    assert set(negatives[4000:].tolist()) == set(range(3, 40))


def test_positive_triples_cover_every_row_with_valid_negatives(data):
    generator = torch.Generator().manual_seed(0)
    batches = list(data.positive_triples(batch_size=50, n_negatives=3, generator=generator))
    users = torch.cat([b[0] for b in batches])
    pos = torch.cat([b[1] for b in batches])
    neg = torch.cat([b[2] for b in batches])
    assert len(users) == 3 * len(data) and all(len(b[0]) <= 150 for b in batches)
    pairs = positives(data)
    assert sorted(set(zip(users.tolist(), pos.tolist()))) == sorted(pairs)
    assert not any((u, j) in pairs for u, j in zip(users.tolist(), neg.tolist()))


def test_rows_of_users_returns_exactly_their_rows(data):
    requested = torch.tensor([7, 59, 0, 33, 7, 58])  # includes a user without rows and a repeat
    rows = data.rows_of_users(requested)
    user_np = data.users.numpy()
    expected = np.concatenate([np.flatnonzero(user_np == u) for u in requested.tolist()])
    assert rows.tolist() == expected.tolist()
    assert data.rows_of_users(torch.tensor([59], dtype=torch.long)).numel() == 0
    assert torch.equal(data.rows_of_users(torch.arange(N_USERS)), torch.arange(len(data)))


# --- losses -------------------------------------------------------------------------------------------

def dense_positive_mask(data: TrainingData) -> torch.Tensor:
    mask = torch.zeros(data.n_users, data.n_items, dtype=torch.bool)
    mask[data.users, data.items] = True
    return mask


@pytest.mark.parametrize("batch_users", [None, [3, 10, 11, 59, 42]])
def test_wmf_whole_data_loss_equals_brute_force_minus_constant(data, batch_users):
    model = WMF(N_USERS, N_ITEMS, 8, torch.Generator().manual_seed(0), c0=0.3, init_std=0.5).double()
    users = torch.arange(N_USERS) if batch_users is None else torch.tensor(batch_users)
    rows = data.rows_of_users(users)
    loss = model.batch_loss((users, data.users[rows], data.items[rows]))

    y = model.user_embedding @ model.item_embedding.T
    mask = dense_positive_mask(data)
    in_batch = torch.zeros(N_USERS, dtype=torch.bool)
    in_batch[users] = True
    observed = mask & in_batch[:, None]
    unobserved = ~mask & in_batch[:, None]
    brute = ((1 - y[observed]) ** 2).sum() + 0.3 * (y[unobserved] ** 2).sum()
    constant = observed.sum()  # sum over the batch's positives of 1
    torch.testing.assert_close(loss, brute - constant, rtol=1e-10, atol=1e-10)
    grad = torch.autograd.grad(loss, model.user_embedding, retain_graph=True)[0]
    brute_grad = torch.autograd.grad(brute, model.user_embedding)[0]
    torch.testing.assert_close(grad, brute_grad, rtol=1e-10, atol=1e-10)


def test_bpr_loss_formula(data):
    model = BPR(N_USERS, N_ITEMS, 8, torch.Generator().manual_seed(0), n_negatives=2, l2=0.1).double()
    batch = next(model.batches(data, torch.Generator().manual_seed(1)))
    users, pos, neg = batch
    p, qi, qj = model.user_embedding[users], model.item_embedding[pos], model.item_embedding[neg]
    expected = (-torch.log(torch.sigmoid((p * qi).sum(1) - (p * qj).sum(1)))).mean() \
        + 0.5 * 0.1 * (p.square().sum() + qi.square().sum() + qj.square().sum()) / len(users)
    torch.testing.assert_close(model.batch_loss(batch), expected, rtol=1e-10, atol=1e-10)


def test_wmf_bce_sampled_loss_formula(data):
    model = WMF(N_USERS, N_ITEMS, 8, torch.Generator().manual_seed(0), loss="bce_sampled").double()
    users, pos, neg = next(model.batches(data, torch.Generator().manual_seed(1)))
    p = model.user_embedding[users]
    pos_logit, neg_logit = (p * model.item_embedding[pos]).sum(1), (p * model.item_embedding[neg]).sum(1)
    expected = -(F.logsigmoid(pos_logit).sum() + F.logsigmoid(-neg_logit).sum()) / (2 * len(users))
    loss = model.batch_loss((users, pos, neg))
    torch.testing.assert_close(loss.double(), expected, rtol=1e-6, atol=1e-6)  # labels are float32 (see report)
    with pytest.raises(ValueError, match="whole_data"):
        WMF(3, 3, 2, torch.Generator(), loss="mse")


def make(name: str):
    generator = torch.Generator().manual_seed(0)
    if name == "wmf_whole_data":
        return WMF(N_USERS, N_ITEMS, 8, generator, loss="whole_data", c0=0.2, batch_size=16)
    if name == "wmf_bce_sampled":
        return WMF(N_USERS, N_ITEMS, 8, generator, loss="bce_sampled", n_negatives=4, batch_size=64)
    if name == "bpr":
        return BPR(N_USERS, N_ITEMS, 8, generator, batch_size=64, n_negatives=4)
    return LightGCN(N_USERS, N_ITEMS, 8, generator, n_layers=2, batch_size=128, n_negatives=4, l2=1e-4)


def full_loss(model, data) -> float:
    """The loss over all training rows, with negatives drawn from a fixed generator (comparable)."""
    saved, model.batch_size = model.batch_size, 10 ** 6
    try:
        with torch.no_grad():
            return float(sum(model.batch_loss(b) for b in model.batches(data, torch.Generator().manual_seed(99))))
    finally:
        model.batch_size = saved


@pytest.mark.parametrize("name", ["wmf_whole_data", "wmf_bce_sampled", "bpr", "lightgcn"])
def test_training_lowers_the_loss(data, name):
    model = make(name)
    model.prepare(data)
    before = full_loss(model, data)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(1)
    for _ in range(15):
        for batch in model.batches(data, generator):
            optimizer.zero_grad()
            model.batch_loss(batch).backward()
            optimizer.step()
    after = full_loss(model, data)
    assert after < before - 0.2 * abs(before), (before, after)
    assert np.isfinite(after)


# --- LightGCN propagation -----------------------------------------------------------------------------

def dense_normalized_adjacency(data: TrainingData) -> np.ndarray:
    n = data.n_users + data.n_items
    adjacency = np.zeros((n, n))
    u, i = data.users.numpy(), data.items.numpy() + data.n_users
    adjacency[u, i] = adjacency[i, u] = 1.0
    degree = adjacency.sum(1)
    inv_sqrt = np.zeros(n)
    inv_sqrt[degree > 0] = degree[degree > 0] ** -0.5
    return inv_sqrt[:, None] * adjacency * inv_sqrt[None, :]


def test_normalized_adjacency_and_propagate_equal_dense_reference(data):
    a_hat = dense_normalized_adjacency(data)
    sparse = normalized_adjacency(data)
    np.testing.assert_allclose(sparse.to_dense().numpy(), a_hat, atol=1e-7)
    ego = torch.randn(N_USERS + N_ITEMS, 8, generator=torch.Generator().manual_seed(0))
    layers, current = [ego.double().numpy()], ego.double().numpy()
    for _ in range(3):
        current = a_hat @ current
        layers.append(current)
    reference = np.mean(layers, axis=0)
    np.testing.assert_allclose(propagate(sparse, ego, 3).numpy(), reference, atol=1e-5, rtol=0)
    assert np.abs(reference[N_USERS - 1]).max() == pytest.approx(np.abs(ego[N_USERS - 1].numpy()).max() / 4)


def test_propagate_gradients_equal_autograd_through_dense_reference(data):
    a_hat = torch.as_tensor(dense_normalized_adjacency(data))
    sparse = normalized_adjacency(data)
    generator = torch.Generator().manual_seed(0)
    ego = torch.randn(N_USERS + N_ITEMS, 8, generator=generator)
    weights = torch.randn(N_USERS + N_ITEMS, 8, generator=generator)

    x = ego.clone().requires_grad_(True)
    (propagate(sparse, x, 3) * weights).sum().backward()

    x_ref = ego.double().clone().requires_grad_(True)
    layers, current = [x_ref], x_ref
    for _ in range(3):
        current = a_hat @ current
        layers.append(current)
    (torch.stack(layers).mean(0) * weights.double()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x_ref.grad.numpy(), atol=1e-5, rtol=0)


def test_lightgcn_embeddings_are_the_propagated_free_embeddings(data):
    model = LightGCN(N_USERS, N_ITEMS, 8, torch.Generator().manual_seed(0), n_layers=3)
    with pytest.raises(RuntimeError, match="set_graph"):
        model.embeddings()
    model.set_graph(data)
    users, items = model.embeddings()
    final = propagate(normalized_adjacency(data), torch.cat([model.user_embedding, model.item_embedding]), 3)
    torch.testing.assert_close(users, final[:N_USERS])
    torch.testing.assert_close(items, final[N_USERS:])
    torch.testing.assert_close(model.score_users(torch.tensor([4, 2])), final[[4, 2]] @ final[N_USERS:].T)


def test_a_trained_lightgcn_deep_copies_with_its_graph_shared_and_its_parameters_copied(data):
    import copy

    model = LightGCN(N_USERS, N_ITEMS, 8, torch.Generator().manual_seed(0), n_layers=2)
    model.set_graph(data)  # a sparse CSR tensor: torch alone refuses to deep-copy it
    copied = copy.deepcopy(model)
    assert copied.adjacency is model.adjacency
    torch.testing.assert_close(copied.score_users(torch.tensor([1, 3])), model.score_users(torch.tensor([1, 3])))
    with torch.no_grad():
        copied.user_embedding.add_(1.0)
    assert not torch.equal(copied.user_embedding, model.user_embedding)


def test_propagation_matches_dgl_graphconv(data):
    dgl = pytest.importorskip("dgl")
    from dgl.nn import GraphConv

    n = N_USERS + N_ITEMS
    src = torch.cat([data.users, data.items + N_USERS])
    dst = torch.cat([data.items + N_USERS, data.users])
    graph = dgl.graph((src, dst), num_nodes=n)
    conv = GraphConv(8, 8, norm="both", weight=False, bias=False, allow_zero_in_degree=True)
    ego = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))
    layers, current = [ego], ego
    for _ in range(3):
        current = conv(graph, current)
        layers.append(current)
    torch.testing.assert_close(propagate(normalized_adjacency(data), ego, 3), torch.stack(layers).mean(0),
                               atol=1e-5, rtol=0)


def test_32_bit_graph_indices_give_the_bits_of_64_bit_ones(data):
    """The graph with 32-bit CSR indices (default) and with 64-bit ones: same propagation, gradient and
    gradient's gradient (SCIF's Hessian products), bit for bit."""
    fast_graph, reference_graph = normalized_adjacency(data), normalized_adjacency(data, torch.int64)
    assert fast_graph.crow_indices().dtype == torch.int32 and reference_graph.crow_indices().dtype == torch.int64
    assert torch.equal(fast_graph.to_dense(), reference_graph.to_dense())
    generator = torch.Generator().manual_seed(0)
    ego, weights = (torch.randn(N_USERS + N_ITEMS, 8, generator=generator) for _ in range(2))
    for n_layers, dtype in ((1, torch.float32), (2, torch.float32), (3, torch.float32), (3, torch.float64)):
        results = []
        for graph in (fast_graph.to(dtype), reference_graph.to(dtype)):
            x = ego.to(dtype, copy=True).requires_grad_(True)
            final = propagate(graph, x, n_layers)
            (grad,) = torch.autograd.grad((final * weights.to(dtype)).square().sum(), x, create_graph=True)
            (second,) = torch.autograd.grad((grad * weights.to(dtype)).sum(), x)
            results.append((final.detach(), grad.detach(), second))
        for fast, reference in zip(*results):
            assert torch.equal(fast, reference)


def test_fast_lightgcn_trains_bit_identically_to_the_reference(data):
    trained = {}
    for implementation in ("reference", "fast"):
        model = LightGCN(N_USERS, N_ITEMS, 8, torch.Generator().manual_seed(0), n_layers=3,
                         batch_size=64, implementation=implementation)
        model.prepare(data)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        losses = []
        for _ in range(3):
            for batch in model.batches(data, torch.Generator().manual_seed(1)):
                optimizer.zero_grad(set_to_none=True)
                loss = model.batch_loss(batch)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        trained[implementation] = (losses, *model.embeddings())
    for reference, fast in zip(trained["reference"], trained["fast"]):
        assert reference == fast if isinstance(reference, list) else torch.equal(reference, fast)
    with pytest.raises(ValueError, match="implementation"):
        LightGCN(N_USERS, N_ITEMS, 8, torch.Generator().manual_seed(0), implementation="dense")


# --- determinism --------------------------------------------------------------------------------------

TIMING_KEYS = {"train_seconds", "validation_seconds"}


def test_run_learn_is_deterministic(tmp_path):
    """Same config twice -> identical record apart from timings (torch is single-threaded in these
    tests, see conftest.py; with several threads the loss can differ in the last digits)."""
    from recunlearn.data import DatasetNotFoundError
    from recunlearn.experiments import run_or_load
    from recunlearn.experiments.cure4rec import LearnConfig

    config = LearnConfig(dataset="ml-100k", model="bpr", max_epochs=2)
    try:
        first = run_or_load(config, records_dir=tmp_path, recompute=True)
    except DatasetNotFoundError as exc:
        skip_if_absent(exc)
    second = run_or_load(config, records_dir=tmp_path, recompute=True)
    assert first["metrics"] == second["metrics"]
    assert first["training"] == second["training"]
    strip = lambda curve: [{k: v for k, v in row.items() if k not in TIMING_KEYS} for row in curve]  # noqa: E731
    assert strip(first["curve"]) == strip(second["curve"])
    assert len(first["curve"]) == 2 and first["training"]["epochs_run"] == 2
    assert 0.0 < first["metrics"]["ndcg"] <= 1.0
