"""SCIF: conjugate gradient, the influence step on a quadratic, dense-Hessian references built from the
models' own ``batch_loss``, the zero-deletion identity, LightGCN's serving graph."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from recunlearn.models import BPR, LightGCN, TrainingData, WMF, normalized_adjacency
from recunlearn.unlearning.scif import (ScifObjective, choose_damping, conjugate_gradient, copy_model,
                                        hutchinson_mean_eigenvalue, influence_step, remove_users, scif_unlearn)

N_USERS, N_ITEMS, DIM = 12, 10, 3
DELETED = [2, 7]


@pytest.fixture(scope="module")
def pairs():
    """12 users x 10 items, 3-5 items per user; user 11 has none."""
    rng = np.random.default_rng(0)
    users, items = [], []
    for u in range(N_USERS - 1):
        chosen = rng.choice(N_ITEMS, size=rng.integers(3, 6), replace=False)
        users += [u] * len(chosen)
        items += sorted(chosen.tolist())
    return np.array(users), np.array(items)


@pytest.fixture
def data(pairs):
    return TrainingData.from_pairs(*pairs, N_USERS, N_ITEMS)


def make_model(kind: str, data: TrainingData, dtype=torch.float64, train_steps: int = 150):
    generator = torch.Generator().manual_seed(0)
    if kind == "wmf":
        model = WMF(N_USERS, N_ITEMS, DIM, generator, loss="whole_data", c0=0.2, l2=0.01)
    elif kind == "bce":
        model = WMF(N_USERS, N_ITEMS, DIM, generator, loss="bce_sampled", n_negatives=2, batch_size=16)
    elif kind == "bpr":
        model = BPR(N_USERS, N_ITEMS, DIM, generator, n_negatives=2, batch_size=16, l2=0.01)
    else:
        model = LightGCN(N_USERS, N_ITEMS, DIM, generator, n_layers=2, n_negatives=2, batch_size=16, l2=0.01)
        model.set_graph(data)
        model.adjacency = model.adjacency.to(dtype)
    model = model.to(dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    sampler = torch.Generator().manual_seed(1)
    for _ in range(train_steps // 5):
        for batch in model.batches(data, sampler):
            optimizer.zero_grad()
            model.batch_loss(batch).backward()
            optimizer.step()
    return model


# --- conjugate gradient -------------------------------------------------------------------------------

def test_cg_converges_on_random_spd_matrix():
    generator = torch.Generator().manual_seed(0)
    m = torch.randn(40, 40, generator=generator, dtype=torch.float64)
    a = m @ m.T / 40 + 0.05 * torch.eye(40, dtype=torch.float64)
    b = torch.randn(40, generator=generator, dtype=torch.float64)
    for damping in (0.0, 0.3):
        result = conjugate_gradient(lambda v: a @ v, b, damping=damping, max_iter=200, tol=1e-12)
        expected = torch.linalg.solve(a + damping * torch.eye(40, dtype=torch.float64), b)
        assert result.converged and not result.negative_curvature
        assert result.residual <= 1e-12 and result.iterations <= 200
        torch.testing.assert_close(result.x, expected, rtol=0, atol=1e-9)
    # matrix-shaped right-hand side, operator acting on rows
    b2 = torch.randn(8, 5, generator=generator, dtype=torch.float64)
    a2 = a[:8, :8]
    result = conjugate_gradient(lambda v: a2 @ v, b2, max_iter=100, tol=1e-12)
    torch.testing.assert_close(a2 @ result.x, b2, rtol=0, atol=1e-9)


def test_cg_zero_rhs_and_negative_curvature_and_iteration_cap():
    a = torch.diag(torch.tensor([1.0, 2.0, -3.0], dtype=torch.float64))
    zero = conjugate_gradient(lambda v: a @ v, torch.zeros(3, dtype=torch.float64))
    assert zero.iterations == 0 and zero.converged and torch.equal(zero.x, torch.zeros(3, dtype=torch.float64))
    indefinite = conjugate_gradient(lambda v: a @ v, torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
    assert indefinite.negative_curvature and not indefinite.converged
    spd = torch.diag(torch.arange(1.0, 11.0, dtype=torch.float64))
    capped = conjugate_gradient(lambda v: spd @ v, torch.ones(10, dtype=torch.float64), max_iter=3, tol=1e-14)
    assert capped.iterations == 3 and not capped.converged and capped.residual > 1e-14


# --- the influence step on a quadratic ----------------------------------------------------------------

def test_influence_step_on_quadratic_equals_exact_newton_step():
    """Terms l_k(θ) = ½(a_kᵀθ - b_k)²: H = AᵀA/n + λI is known. At the minimiser θ̂ of L the influence
    step is exactly (H + δI)^{-1} g / n, and the newton form (δ = 0) lands exactly on the retrained
    minimiser of L_rest."""
    generator = torch.Generator().manual_seed(0)
    n, dim, lam = 30, 6, 0.1
    a = torch.randn(n, dim, generator=generator, dtype=torch.float64)
    b = torch.randn(n, generator=generator, dtype=torch.float64)
    removed = torch.tensor([3, 11, 17])
    kept = torch.tensor([k for k in range(n) if k not in removed.tolist()])
    eye = torch.eye(dim, dtype=torch.float64)
    hessian = a.T @ a / n + lam * eye
    theta_hat = torch.linalg.solve(hessian, a.T @ b / n)
    losses = lambda theta, rows: 0.5 * (a[rows] @ theta - b[rows]).square().sum()  # noqa: E731
    full = lambda theta: losses(theta, torch.arange(n)) / n + 0.5 * lam * theta.square().sum()  # noqa: E731
    rest = lambda theta: losses(theta, kept) / n + 0.5 * lam * theta.square().sum()  # noqa: E731

    damping = 1e-3
    step = influence_step(theta_hat, lambda t: losses(t, removed), full, n, damping_rule="absolute", damping=damping,
                          cg_tolerance=1e-13)
    g = a[removed].T @ (a[removed] @ theta_hat - b[removed])
    expected = torch.linalg.solve(hessian + damping * eye, g / n)
    torch.testing.assert_close(step.delta, expected, rtol=0, atol=1e-10)
    assert step.objective_gradient_norm < 1e-10  # θ̂ is the minimiser of L
    assert step.attempts[-1]["converged"] and step.attempts[-1]["iterations"] <= dim

    retrained = torch.linalg.solve(a[kept].T @ a[kept] / n + lam * eye, a[kept].T @ b[kept] / n)
    newton = influence_step(theta_hat, lambda t: losses(t, removed), rest, n, form="newton",
                            damping_rule="absolute", damping=0.0, cg_tolerance=1e-13)
    torch.testing.assert_close(theta_hat + newton.delta, retrained, rtol=0, atol=1e-10)
    # the influence (full-Hessian) form is only first-order close to the retrained optimum
    assert (theta_hat + step.delta - retrained).norm() < 0.2 * (theta_hat - retrained).norm()


# --- damping ------------------------------------------------------------------------------------------

def test_hutchinson_estimates_the_mean_eigenvalue_of_an_explicit_matrix():
    generator = torch.Generator().manual_seed(0)
    dim = 40
    diagonal = torch.diag(torch.linspace(1e-5, 1e-3, dim, dtype=torch.float64))
    like = torch.zeros(dim, dtype=torch.float64)
    exact, stderr = hutchinson_mean_eigenvalue(lambda v: diagonal @ v, like, 3, torch.Generator().manual_seed(1))
    assert exact == pytest.approx(float(torch.trace(diagonal)) / dim, rel=1e-12) and stderr == pytest.approx(0.0)

    root = torch.randn(dim, dim, generator=generator, dtype=torch.float64)
    matrix = root @ root.T / dim + torch.diag(torch.rand(dim, generator=generator, dtype=torch.float64))
    truth = float(torch.trace(matrix)) / dim
    estimate, stderr = hutchinson_mean_eigenvalue(lambda v: matrix @ v, like, 400, torch.Generator().manual_seed(2))
    assert estimate == pytest.approx(truth, rel=0.05) and abs(estimate - truth) < 4 * stderr
    again = hutchinson_mean_eigenvalue(lambda v: matrix @ v, like, 400, torch.Generator().manual_seed(2))
    assert again == (estimate, stderr)  # seeded
    # the probes may have any shape: an (n, d) block of rows is one vector of n·d entries
    block = hutchinson_mean_eigenvalue(lambda v: (matrix @ v.flatten()).reshape(v.shape), like.reshape(8, 5), 400,
                                       torch.Generator().manual_seed(2))
    assert block[0] == pytest.approx(estimate, rel=1e-12)


def test_relative_damping_is_a_fraction_of_the_mean_eigenvalue_and_scales_with_the_loss():
    generator = torch.Generator().manual_seed(0)
    n, dim, lam = 30, 6, 1e-2
    a = torch.randn(n, dim, generator=generator, dtype=torch.float64)
    b = torch.randn(n, generator=generator, dtype=torch.float64)
    hessian = a.T @ a / n + lam * torch.eye(dim, dtype=torch.float64)
    theta_hat = torch.linalg.solve(hessian, a.T @ b / n)
    removed = torch.tensor([3, 11])

    def step(scale, **kwargs):
        losses = lambda theta, rows: scale * 0.5 * (a[rows] @ theta - b[rows]).square().sum()  # noqa: E731
        full = lambda theta: losses(theta, torch.arange(n)) / n + 0.5 * scale * lam * theta.square().sum()  # noqa: E731
        return influence_step(theta_hat, lambda t: losses(t, removed), full, n, cg_tolerance=1e-12, **kwargs)

    base = step(1.0, damping_probes=2000)
    assert base.damping.rule == "relative" and base.damping.probes == 2000
    assert base.damping.mean_eigenvalue == pytest.approx(float(torch.trace(hessian)) / dim, rel=0.05)
    assert base.damping.damping == pytest.approx(0.01 * base.damping.mean_eigenvalue, rel=1e-12)
    assert base.attempts[0]["damping"] == base.damping.damping
    for c in (1e-3, 7.0):
        scaled = step(c, damping_probes=2000)
        assert scaled.damping.damping == pytest.approx(c * base.damping.damping, rel=1e-9)
        # the damped update is invariant to the loss's scale, as the undamped one
        torch.testing.assert_close(scaled.delta, base.delta, rtol=1e-7, atol=1e-12)
    absolute = step(7.0, damping_rule="absolute")
    assert absolute.damping.damping == 1e-3 and absolute.damping.mean_eigenvalue is None


def test_damping_rules_validate_their_arguments():
    hvp = lambda v: v  # noqa: E731
    like = torch.zeros(3, dtype=torch.float64)
    assert choose_damping(hvp, like, "relative", fraction=0.5).damping == pytest.approx(0.5)  # identity: μ = 1
    assert choose_damping(hvp, like, "absolute", damping=0.2).damping == 0.2
    for kwargs in ({"rule": "bogus"}, {"rule": "relative", "damping": 1e-3}, {"rule": "absolute", "damping": -1.0},
                   {"rule": "relative", "probes": 0}, {"rule": "relative", "fraction": -0.1}):
        with pytest.raises(ValueError):
            choose_damping(hvp, like, **kwargs)


def test_scif_records_the_relative_damping_of_the_models_hessian(data, pairs):
    """BPR: the recorded mean eigenvalue is the dense Hessian's tr/n (within the estimator's error)
    and the initial δ is the fraction of it."""
    model = make_model("bpr", data)
    l2, seed = 1e-3, 5
    result = scif_unlearn(model, data, torch.tensor(DELETED), l2=l2, damping_fraction=0.1, damping_probes=200,
                          probe_seed=3, generator=torch.Generator().manual_seed(seed), serve_graph="original")
    theta0, total, _removed, n = _reference("bpr", model, data, pairs, seed)
    objective = lambda theta: total(theta) / n + 0.5 * l2 * theta.square().sum()  # noqa: E731
    grad = lambda theta: torch.autograd.grad(objective(theta), theta, create_graph=True)[0]  # noqa: E731
    hessian = torch.autograd.functional.jacobian(grad, theta0.clone().requires_grad_(True))
    truth = float(torch.trace(hessian.reshape(theta0.numel(), theta0.numel()))) / theta0.numel()
    assert result.damping_rule == "relative" and result.damping_probes == 200 and result.damping_fraction == 0.1
    assert abs(result.mean_eigenvalue - truth) < 4 * result.mean_eigenvalue_stderr + 1e-12
    assert result.initial_damping == pytest.approx(0.1 * result.mean_eigenvalue, rel=1e-12)
    info = result.as_dict()
    assert {"mean_eigenvalue", "damping_probes", "initial_damping", "damping"} <= set(info)


# --- zero deleted users -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["wmf", "bpr", "lightgcn"])
def test_zero_deleted_users_leave_the_model_bit_identical(kind, data):
    model = make_model(kind, data, dtype=torch.float32, train_steps=5)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    result = scif_unlearn(model, data, torch.tensor([], dtype=torch.long))
    assert result.model is not model
    for name, p in result.model.named_parameters():
        assert torch.equal(p, before[name]), name
        assert torch.equal(getattr(model, name), before[name]), name
    assert result.update_norm == 0.0 and result.cg_iterations == 0 and result.n_parameters == 0
    assert scif_unlearn(model, data, [], inplace=True).model is model
    if kind == "lightgcn":
        assert result.model.adjacency is model.adjacency  # graph unchanged, shared not copied


# --- dense references from the models' own batch_loss ------------------------------------------------

class _BatchLoss(nn.Module):
    """``forward(batch) = inner.batch_loss(batch)``, so that ``torch.func.functional_call`` can swap
    the embedding tables for tables built from θ."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, batch):
        return self.inner.batch_loss(batch)


def _reference(kind, model, data, pairs, seed):
    """(θ0, L(θ), Σ_{deleted} ℓ(θ), n) written with the model's ``batch_loss`` on an independently drawn
    copy of the fixed negative sample; S = deleted users, then their items in increasing id order."""
    users_np, items_np = pairs
    users_s = torch.tensor(DELETED)
    items_s = torch.tensor(np.unique(items_np[np.isin(users_np, DELETED)]))
    wrapper = _BatchLoss(model)

    def call(theta, batch):
        p = model.user_embedding.detach().index_copy(0, users_s, theta[: len(users_s)])
        q = model.item_embedding.detach().index_copy(0, items_s, theta[len(users_s):])
        return torch.func.functional_call(wrapper, {"inner.user_embedding": p, "inner.item_embedding": q}, (batch,))

    theta0 = torch.cat([model.user_embedding[users_s], model.item_embedding[items_s]]).detach()
    if kind == "wmf":
        members = torch.unique(data.users)  # whole-data batches cover users with training rows
        n = len(members)
        full_batch = (members, data.users, data.items)
        rows = torch.isin(data.users, users_s)
        del_batch = (users_s, data.users[rows], data.items[rows])
        total = lambda theta: call(theta, full_batch)  # noqa: E731 - whole-data loss is a sum
        removed = lambda theta: call(theta, del_batch)  # noqa: E731
    else:
        users = data.users.repeat_interleave(model.n_negatives)
        positives = data.items.repeat_interleave(model.n_negatives)
        negatives = data.sample_negatives(users, torch.Generator().manual_seed(seed))
        rows = torch.isin(users, users_s)
        per_term = 2 if kind == "bce" else 1  # logits per row (bce: one positive and one negative)
        n = per_term * len(users)
        total = lambda theta: n * call(theta, (users, positives, negatives))  # noqa: E731 - batch_loss is a mean
        removed = lambda theta: per_term * int(rows.sum()) * call(  # noqa: E731
            theta, (users[rows], positives[rows], negatives[rows]))
    return theta0, total, removed, n


@pytest.mark.parametrize("kind", ["wmf", "bce", "bpr", "lightgcn"])
def test_scif_update_equals_dense_solve(kind, data, pairs):
    model = make_model(kind, data)
    l2, damping, seed = 1e-3, 1e-2, 5
    result = scif_unlearn(model, data, torch.tensor(DELETED), damping_rule="absolute", damping=damping, l2=l2,
                          cg_iterations=100, cg_tolerance=1e-12, generator=torch.Generator().manual_seed(seed),
                          serve_graph="original")
    theta0, total, removed, n = _reference(kind, model, data, pairs, seed)
    objective = lambda theta: total(theta) / n + 0.5 * l2 * theta.square().sum()  # noqa: E731
    shape = theta0.shape
    grad = lambda theta: torch.autograd.grad(objective(theta), theta, create_graph=True)[0]  # noqa: E731
    hessian = torch.autograd.functional.jacobian(grad, theta0.clone().requires_grad_(True))
    hessian = hessian.reshape(theta0.numel(), theta0.numel())
    torch.testing.assert_close(hessian, hessian.T, rtol=0, atol=1e-10)
    theta = theta0.clone().requires_grad_(True)
    g = torch.autograd.grad(removed(theta), theta)[0]
    expected = torch.linalg.solve(hessian + result.damping * torch.eye(len(hessian), dtype=hessian.dtype),
                                  g.flatten() / n).reshape(shape)

    assert result.cg_converged and result.n_terms == n and result.n_parameters == theta0.numel()
    users_s = torch.tensor(DELETED)
    items_s = torch.tensor(np.unique(pairs[1][np.isin(pairs[0], DELETED)]))
    new_theta = torch.cat([result.model.user_embedding[users_s], result.model.item_embedding[items_s]]).detach()
    torch.testing.assert_close(new_theta - theta0, expected, rtol=0, atol=1e-6)
    assert result.update_norm == pytest.approx(float(expected.norm()), abs=1e-6)
    assert result.gradient_norm == pytest.approx(float(g.norm()), rel=1e-9)
    # nothing outside S moved, and the input model is untouched
    other_users = torch.tensor([u for u in range(N_USERS) if u not in DELETED])
    other_items = torch.tensor([i for i in range(N_ITEMS) if i not in items_s.tolist()])
    assert torch.equal(result.model.user_embedding[other_users], model.user_embedding[other_users])
    assert torch.equal(result.model.item_embedding[other_items], model.item_embedding[other_items])
    assert torch.equal(torch.cat([model.user_embedding[users_s], model.item_embedding[items_s]]), theta0)
    assert result.total_seconds == pytest.approx(result.gradient_seconds + result.cg_seconds + result.update_seconds)


def test_objective_matches_the_models_batch_loss(data):
    """With every user deleted (S = all rows) the objective at θ̂ without L2 is the loss the model
    minimises per batch: whole-data WMF summed over the users with training rows / their number,
    sampled losses as one batch."""
    everyone = torch.arange(N_USERS)
    for kind in ("wmf", "bce", "bpr", "lightgcn"):
        model = make_model(kind, data, train_steps=5)
        objective = ScifObjective(model, data, everyone, torch.Generator().manual_seed(3), l2=0.0)
        value = objective.objective(objective.theta0.clone(), "all")
        if kind == "wmf":
            members = torch.unique(data.users)  # user 11 has no rows: not in the whole-data loss
            expected = model.batch_loss((members, data.users, data.items)) / len(members)
        else:
            expected = model.batch_loss(objective.sample)
        torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)


# --- behaviour ----------------------------------------------------------------------------------------

def test_one_step_moves_toward_the_retrained_optimum_of_the_selected_rows(data):
    """Whole-data WMF (deterministic loss), θ̂_S minimised exactly with the rest frozen, θ*_S =
    argmin L_rest from θ̂_S. The newton form is exact here (L_rest is quadratic in the item rows and
    only L2 acts on the deleted users' rows); the influence form moves the item rows toward θ*_S but,
    being first-order, leaves the deleted users' rows nearly where they were (their g/n = -λ p_u)."""
    model = make_model("wmf", data, train_steps=300)
    deleted = torch.tensor(DELETED)
    objective = ScifObjective(model, data, deleted, l2=1e-3)

    def minimise(part, start):
        theta = start.clone().requires_grad_(True)
        optimizer = torch.optim.LBFGS([theta], lr=1, max_iter=500, tolerance_grad=1e-13, tolerance_change=1e-15,
                                      line_search_fn="strong_wolfe")

        def closure():
            optimizer.zero_grad()
            loss = objective.objective(theta, part)
            loss.backward()
            return loss
        optimizer.step(closure)
        return theta.detach()

    theta_hat = minimise("all", objective.theta0)
    with torch.no_grad():
        model.user_embedding[objective.users_s] = theta_hat[: objective.n_users_s]
        model.item_embedding[objective.items_s] = theta_hat[objective.n_users_s:]
    theta_rest = minimise("retained", theta_hat)
    k = objective.n_users_s
    before_users, before_items = (theta_hat - theta_rest)[:k].norm(), (theta_hat - theta_rest)[k:].norm()

    def new_rows(result):
        return torch.cat([result.model.user_embedding[objective.users_s],
                          result.model.item_embedding[objective.items_s]]).detach()

    influence = scif_unlearn(model, data, deleted, l2=1e-3, damping_rule="absolute", damping=1e-6,
                             cg_tolerance=1e-12)
    assert influence.cg_converged and influence.objective_gradient_norm < 1e-6  # θ̂ is stationary
    error = new_rows(influence) - theta_rest
    assert error[k:].norm() < 0.8 * before_items
    assert error[:k].norm() > 0.9 * before_users
    newton = scif_unlearn(model, data, deleted, l2=1e-3, damping_rule="absolute", damping=1e-6, cg_tolerance=1e-12,
                          form="newton")
    error = new_rows(newton) - theta_rest
    assert error[k:].norm() < 1e-3 * before_items and error[:k].norm() < 1e-2 * before_users


def test_lightgcn_serves_with_the_retained_graph(data):
    model = make_model("lightgcn", data, dtype=torch.float32, train_steps=5)
    original = model.adjacency
    result = scif_unlearn(model, data, torch.tensor(DELETED))
    assert model.adjacency is original
    expected = normalized_adjacency(remove_users(data, torch.tensor(DELETED)))
    torch.testing.assert_close(result.model.adjacency.to_dense(), expected.to_dense())
    kept = scif_unlearn(model, data, torch.tensor(DELETED), serve_graph="original").model
    assert kept.adjacency is original


def test_remove_users_and_copy_model(data, pairs):
    reduced = remove_users(data, torch.tensor(DELETED))
    keep = ~np.isin(pairs[0], DELETED)
    expected = TrainingData.from_pairs(pairs[0][keep], pairs[1][keep], N_USERS, N_ITEMS)
    for name in ("users", "items", "indptr", "keys"):
        assert torch.equal(getattr(reduced, name), getattr(expected, name)), name
    model = make_model("bpr", data, dtype=torch.float32, train_steps=5)
    clone = copy_model(model)
    with torch.no_grad():
        clone.user_embedding.add_(1.0)
    assert not torch.equal(clone.user_embedding, model.user_embedding)


def test_scif_is_deterministic_and_validates_arguments(data):
    model = make_model("bpr", data, dtype=torch.float32, train_steps=5)
    first = scif_unlearn(model, data, DELETED, generator=torch.Generator().manual_seed(0)).model
    second = scif_unlearn(model, data, DELETED).model  # default generator: seed 0
    assert torch.equal(first.item_embedding, second.item_embedding)
    with pytest.raises(ValueError):
        scif_unlearn(model, data, DELETED, form="bogus")
    with pytest.raises(TypeError):
        scif_unlearn(nn.Linear(2, 2), data, DELETED)
