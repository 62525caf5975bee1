"""The fused full-softmax output layer: loss and gradients equal to F.cross_entropy(F.linear(...))."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from recunlearn.models import output_layer
from recunlearn.models.output_layer import LinearCrossEntropy, blocked_target_ranks, linear, linear_cross_entropy


def _inputs(rows=37, dim=8, classes=501, seed=0):
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(rows, dim, generator=gen)
    weight, bias = torch.randn(classes, dim, generator=gen), torch.randn(classes, generator=gen)
    target = torch.randint(0, classes, (rows,), generator=gen)
    return z, weight, bias, target


def _grads(loss_fn, z, weight, bias):
    leaves = [t.clone().requires_grad_() for t in (z, weight, bias)]
    loss = loss_fn(*leaves)
    loss.backward()
    return [loss.detach()] + [t.grad for t in leaves]


@pytest.mark.parametrize("products", output_layer.PRODUCTS)
@pytest.mark.parametrize("rows", [None, 5, 37, 64])
def test_mean_loss_and_gradients_equal_autograd_of_the_unfused_layer(products, rows):
    z, weight, bias, target = _inputs()
    expected = _grads(lambda z, w, b: F.cross_entropy(F.linear(z, w, b), target), z, weight, bias)
    mean = torch.full((len(z),), 1.0 / len(z))
    actual = _grads(lambda z, w, b: LinearCrossEntropy.apply(z, w, b, target, mean, 0, rows, products)[0],
                    z, weight, bias)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


def test_row_weights_scores_and_a_scaled_incoming_gradient():
    z, weight, bias, target = _inputs(rows=20)
    row_weight = torch.rand(20, generator=torch.Generator().manual_seed(1))
    expected = _grads(lambda z, w, b: 3.0 * (F.cross_entropy(F.linear(z, w, b), target, reduction="none")
                                             * row_weight).sum(), z, weight, bias)
    leaves = [t.clone().requires_grad_() for t in (z, weight, bias)]
    loss, scores = LinearCrossEntropy.apply(*leaves, target, row_weight, 7)
    (3.0 * loss).backward()
    for a, e in zip([3.0 * loss.detach()] + [t.grad for t in leaves], expected):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(scores, F.linear(z, weight, bias)[:, :7], rtol=1e-5, atol=1e-5)
    assert not scores.requires_grad


def test_large_logits_do_not_overflow_and_the_default_is_a_mean():
    z, weight, bias, target = _inputs(rows=9)
    z = z * 200.0  # logits in the thousands: exp would overflow without the max shift
    loss = linear_cross_entropy(z, weight, bias, target)
    torch.testing.assert_close(loss, F.cross_entropy(F.linear(z, weight, bias), target), rtol=1e-5, atol=1e-3)
    assert torch.isfinite(loss)


def test_the_torch_products_are_bit_identical_run_to_run():
    z, weight, bias, target = _inputs()
    runs = [_grads(lambda z, w, b: linear_cross_entropy(z, w, b, target), z, weight, bias) for _ in range(2)]
    assert all(torch.equal(a, b) for a, b in zip(*runs))


def test_linear_and_blocked_ranks():
    z, weight, bias, target = _inputs(rows=50, classes=300)
    torch.testing.assert_close(linear(z, weight, bias), F.linear(z, weight, bias), rtol=1e-5, atol=1e-5)
    ranks = blocked_target_ranks(z, weight, bias, target, lambda s, t: (s > s.gather(1, t[:, None])).sum(1))
    scores = F.linear(z, weight, bias)
    assert torch.equal(ranks, (scores > scores.gather(1, target[:, None])).sum(1))


def test_unknown_products_are_refused():
    z, weight, bias, target = _inputs(rows=3)
    with pytest.raises(ValueError, match="products"):
        LinearCrossEntropy.apply(z, weight, bias, target, torch.ones(3), 0, None, "blas")
