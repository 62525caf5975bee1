"""MIO oracles trained together (OracleStack) give the bits of one network trained at a time
(``train_oracle``, the reference), whatever the other networks of the stack, and are deterministic."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recunlearn.metrics.membership import make_oracle, oracle_scores_seeds, train_oracle
from recunlearn.metrics.oracle_stack import OracleStack


def _data(n_networks, n_samples, dim=12, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n_samples // 2), np.zeros(n_samples - n_samples // 2)].astype(np.int64)
    shift = 0.8 * labels[:, None]  # a learnable signal, different noise per network
    features = (rng.normal(size=(n_networks, n_samples, dim)) + shift).astype(np.float32)
    return features, labels


def _stack(features, labels, seeds, **kwargs):
    n_networks, n_samples, dim = features.shape
    networks = [make_oracle(dim, seed=seed) for seed in seeds]
    return OracleStack(networks).fit(torch.as_tensor(features), torch.as_tensor(labels).expand(n_networks, n_samples),
                                     seeds, **kwargs)


@pytest.mark.parametrize("optimizer, momentum, lr, n_samples", [("adam", 0.0, 1e-3, 70), ("adam", 0.0, 1e-2, 64),
                                                                ("sgd", 0.9, 1e-2, 45), ("sgd", 0.0, 1e-1, 33)])
def test_stack_is_bit_identical_to_one_network_at_a_time(optimizer, momentum, lr, n_samples):
    """Three networks, a last batch shorter than the others (70 = 2 x 32 + 6) or not (64): every
    parameter and every probability equal to the reference's, bit for bit."""
    seeds = [4, 7, 1_000_007]
    features, labels = _data(len(seeds), n_samples)
    kwargs = dict(optimizer=optimizer, lr=lr, momentum=momentum, epochs=4, batch_size=32)
    stack = _stack(features, labels, seeds, **kwargs)
    probabilities = stack.probabilities(torch.as_tensor(features))
    for index, seed in enumerate(seeds):
        reference = train_oracle(features[index], labels, seed, **kwargs)
        for expected, got in zip(reference.parameters(), stack.network(index).parameters()):
            assert torch.equal(expected, got)
        with torch.no_grad():
            expected = torch.softmax(reference(torch.as_tensor(features[index])), 1)[:, 1]
        assert torch.equal(expected, probabilities[index])


def test_a_network_does_not_depend_on_its_stack_companions():
    features, labels = _data(3, 50)
    alone = _stack(features[1:2], labels, [11], epochs=3)
    together = _stack(features, labels, [10, 11, 12], epochs=3)
    for expected, got in zip(alone.network(0).parameters(), together.network(1).parameters()):
        assert torch.equal(expected, got)


def _samples(n_seeds, n_train=60, n_eval=20, dim=8):
    out = []
    for seed in range(n_seeds):
        x, y = _data(1, n_train, dim, seed)
        x_eval, y_eval = _data(1, n_eval, dim, 100 + seed)
        out.append((x[0], y, x_eval[0], y_eval))
    return out


@pytest.mark.parametrize("lr", [1e-3, 10.0])
def test_oracle_scores_fast_equal_reference_with_restarts(lr):
    """lr = 10 kills the ReLU bottleneck of some oracles: the restarted ones are trained together in
    later rounds; scores, restart counts and all equal the one-at-a-time reference exactly."""
    samples, seeds = _samples(4), [3, 4, 5, 6]
    kwargs = dict(lr=lr, epochs=3, max_restarts=2)
    fast = oracle_scores_seeds(samples, seeds, **kwargs)
    reference = oracle_scores_seeds(samples, seeds, implementation="reference", **kwargs)
    assert fast == reference
    if lr == 10.0:
        assert sum(run["restarts"] for run in fast) > 0  # the restart path was exercised
    assert oracle_scores_seeds(samples, seeds, **kwargs) == fast  # deterministic


def test_oracle_scores_with_different_sample_counts_and_bad_arguments():
    samples = _samples(2) + [_samples(1, n_train=40, n_eval=10)[0]]
    seeds = [0, 1, 2]
    assert oracle_scores_seeds(samples, seeds, epochs=2) == oracle_scores_seeds(samples, seeds, epochs=2,
                                                                                 implementation="reference")
    with pytest.raises(ValueError, match="implementation"):
        oracle_scores_seeds(samples, seeds, implementation="gpu")
    with pytest.raises(ValueError, match="seeds"):
        oracle_scores_seeds(samples, seeds[:2])
    with pytest.raises(ValueError, match="optimizer"):
        oracle_scores_seeds(samples, seeds, optimizer="rmsprop")


def test_stack_refuses_networks_of_different_shapes():
    with pytest.raises(ValueError, match="same layer shapes"):
        OracleStack([make_oracle(8, seed=0), make_oracle(9, seed=1)])


def test_stack_fit_names_the_allowed_optimizers():
    features, labels = torch.zeros(1, 4, 8), torch.zeros(1, 4, dtype=torch.long)
    with pytest.raises(ValueError, match=r"optimizer = 'rmsprop': allowed \['adam', 'sgd'\]"):
        OracleStack([make_oracle(8, seed=0)]).fit(features, labels, [0], optimizer="rmsprop")
