"""Fast session models: the same model as the reference formulation (weights, loss, gradients, scores,
rankings), and bit-identical reruns."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recunlearn.data.sessions import SessionData, Sessions
from recunlearn.models.session import (SESSION_MODELS, SessionModelError, candidate_ranks, make_session_model,
                                       pair_ranks, probe_session_model, train_session_model)
from recunlearn.models.session.base import dropout, length_buckets

N_ITEMS, MAXLEN = 40, 8
NAMES = tuple(SESSION_MODELS)


def random_windows(n, seed=0, min_len=1):
    rng = np.random.default_rng(seed)
    out = np.zeros((n, MAXLEN), dtype=np.int64)
    for row, length in enumerate(rng.integers(min_len, MAXLEN + 1, n)):
        out[row, MAXLEN - length:] = rng.integers(1, N_ITEMS + 1, length)
    return out


def pair(name, seed=0):
    return [make_session_model(name, N_ITEMS, MAXLEN, torch.Generator().manual_seed(seed), implementation=impl)
            for impl in ("fast", "reference")]


def _close(actual, expected, rtol, floor=0.0):
    """Equal to ``rtol`` relative to the tensor's largest magnitude (or ``floor`` when larger)."""
    scale = max(float(expected.abs().max()), floor, 1e-6)
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("name", NAMES)
def test_same_initial_weights(name):
    fast, reference = pair(name)
    a, b = fast.state_dict(), reference.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    assert fast.implementation == "fast" and reference.implementation == "reference"


@pytest.mark.parametrize("name", NAMES)
def test_loss_gradients_and_scores_match_the_reference(name):
    fast, reference = pair(name, seed=3)
    windows, eval_windows = random_windows(50, seed=1), random_windows(30, seed=2)
    targets = np.random.default_rng(4).integers(1, N_ITEMS + 1, 50)
    a, b = (probe_session_model(m, windows, targets, eval_windows, seed=5) for m in (fast, reference))
    assert set(a) == set(b) and {f"grad/{n}" for n, _ in fast.named_parameters()} < set(a)
    largest_gradient = max(float(v.abs().max()) for k, v in b.items() if k.startswith("grad/"))
    for key in b:
        # a gradient that is zero in exact arithmetic (a key bias cancelling in the softmax) is rounding noise
        _close(a[key], b[key], 1e-4, largest_gradient * 1e-3 if key.startswith("grad/") else 0.0)
    assert all(p.grad is None for p in fast.parameters())  # the probe changes nothing


@pytest.mark.parametrize("name", NAMES)
def test_rankings_match_the_reference(name):
    fast, reference = pair(name, seed=1)
    windows = random_windows(60, seed=6)
    targets = np.random.default_rng(7).integers(1, N_ITEMS + 1, 60)
    candidates = np.stack([np.random.default_rng(r).permutation(np.arange(1, N_ITEMS + 1))[:10] for r in range(60)])
    assert np.array_equal(pair_ranks(fast, windows, targets, 16), pair_ranks(reference, windows, targets, 16))
    assert np.array_equal(candidate_ranks(fast, windows, candidates, 16),
                          candidate_ranks(reference, windows, candidates, 16))


def cycle_data(n_items=N_ITEMS, n_sessions=60, seed=0):
    rng = np.random.default_rng(seed)
    sequences = [[(s + j) % n_items + 1 for j in range(int(length))]
                 for s, length in zip(rng.integers(0, n_items, n_sessions), rng.integers(2, 12, n_sessions))]
    return SessionData.from_sessions("cycle", Sessions.from_lists(sequences), n_items, MAXLEN, seed=0)


@pytest.mark.parametrize("name", NAMES)
def test_two_fits_are_bit_identical(name):
    data = cycle_data()
    runs = []
    for _ in range(2):
        model = make_session_model(name, N_ITEMS, MAXLEN, torch.Generator().manual_seed(0))
        fit = train_session_model(model, data, torch.Generator().manual_seed(1), max_epochs=2, batch_size=32,
                                  validate_every=1)
        runs.append((model.state_dict(), [e["loss"] for e in fit["curve"]], fit["best_valid"]))
    (a, loss_a, valid_a), (b, loss_b, valid_b) = runs
    assert loss_a == loss_b and valid_a == valid_b
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_fast_dropout_keeps_the_share_and_the_scale():
    x = torch.ones(200_000)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        out = dropout(x, 0.3, True, fast=True)
    values = torch.unique(out).tolist()
    assert len(values) == 2 and values[0] == 0.0 and values[1] == pytest.approx(1 / 0.7)
    assert float((out == 0).float().mean()) == pytest.approx(0.3, abs=0.005)
    assert dropout(x, 0.3, False, fast=True) is x and dropout(x, 0.0, True, fast=True) is x


def test_length_buckets_cover_every_row_once_with_room_for_its_items():
    windows = torch.as_tensor(random_windows(100, seed=3))
    groups = length_buckets(windows)
    rows = torch.cat([r for r, _ in groups])
    assert sorted(rows.tolist()) == list(range(100))
    for r, width in groups:
        assert not bool((windows[r][:, :MAXLEN - width] != 0).any())  # everything left of the width is padding
    assert [w for _, w in groups] == sorted({w for _, w in groups})


def test_unknown_implementation_is_refused():
    with pytest.raises(SessionModelError, match="implementation"):
        make_session_model("gru4rec", N_ITEMS, MAXLEN, implementation="quick")


def test_gru_without_repeated_padding_is_the_same_function_in_double_precision():
    """All-padding windows, full windows, one item, a zero inside a window: states and gradients equal
    ``nn.GRU`` over the whole padded window to double rounding."""
    fast, reference = (make_session_model("gru4rec", 30, 6, torch.Generator().manual_seed(0), implementation=impl,
                                          hidden_size=5, embedding_size=4).double() for impl in ("fast", "reference"))
    windows = torch.tensor([[0, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 7], [0, 0, 3, 0, 4, 5],
                            [0, 0, 0, 0, 0, 0], [0, 9, 8, 7, 6, 5]])
    weights = torch.randn(6, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    results = []
    for model in (fast, reference):
        hidden = model.hidden(windows)
        params = [p for name, p in model.named_parameters() if not name.startswith("output")]
        results.append([hidden.detach(), *torch.autograd.grad((hidden * weights).sum(), params)])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_sasrec_with_trimmed_padding_is_the_same_function_in_double_precision():
    fast, reference = (make_session_model("sasrec", 30, 6, torch.Generator().manual_seed(0), implementation=impl,
                                          hidden_size=4, n_heads=2).double().eval() for impl in ("fast", "reference"))
    windows = torch.tensor([[1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 7], [0, 0, 3, 4, 4, 5], [0, 9, 8, 7, 6, 5],
                            [0, 0, 0, 0, 2, 1]])
    weights = torch.randn(5, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    results = []
    for model in (fast, reference):
        hidden = model.hidden(windows)
        params = [p for name, p in model.named_parameters() if not name.startswith("output")]
        results.append([hidden.detach(), *torch.autograd.grad((hidden * weights).sum(), params, allow_unused=True)])
    for a, b in zip(*results):
        if b is None:
            assert a is None
        else:
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_trimmed_padding_keys_get_the_attention_dropout_of_the_keys_they_replace():
    """Training mode, dropout 0.5: over many draws, the attention output with the padding keys
    folded into one (Binomial factor) has the mean and spread of the output with every padding key."""
    from recunlearn.models.session.sasrec import SelfAttention

    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        reference, fast = SelfAttention(4, 1, 0.5).double(), SelfAttention(4, 1, 0.5, fast=True).double()
        fast.load_state_dict(reference.state_dict())
        with torch.no_grad():
            reference.in_proj_bias.copy_(torch.randn(12, generator=gen, dtype=torch.float64))
            fast.in_proj_bias.copy_(reference.in_proj_bias)
        x = torch.randn(1, 6, 4, generator=gen, dtype=torch.float64)
        x[:, :4] = 0.0  # four padded positions, then two items
        causal = torch.ones(6, 6, dtype=torch.bool).triu(1)
        draws = 20_000
        with torch.no_grad():
            full = reference(x.expand(draws, -1, -1), x.expand(draws, -1, -1), causal)[:, -1]
            trimmed = fast(x[:, -2:].expand(draws, -1, -1), x[:, -2:].expand(draws, -1, -1), causal[-2:, -2:], 4)[:, -1]
    standard_error = 2 ** 0.5 * float(full.std(0).max()) / draws ** 0.5  # of a difference of two means
    torch.testing.assert_close(trimmed.mean(0), full.mean(0), rtol=0, atol=5 * standard_error)
    torch.testing.assert_close(trimmed.std(0), full.std(0), rtol=0.05, atol=1e-3)


@pytest.mark.parametrize("with_centroids", [False, True])
def test_an_ensemble_of_fast_sub_models_matches_the_reference_ensemble(with_centroids):
    from recunlearn.unlearning.sru import AttentiveAggregator, ShardEnsemble

    ensembles = []
    for impl in ("fast", "reference"):
        shards = [make_session_model("gru4rec", N_ITEMS, MAXLEN, torch.Generator().manual_seed(s), implementation=impl)
                  for s in range(3)]
        centroids = torch.randn(3, 64, generator=torch.Generator().manual_seed(9)) if with_centroids else None
        aggregator = AttentiveAggregator(3, 64, N_ITEMS, centroids, torch.Generator().manual_seed(4))
        ensembles.append(ShardEnsemble(shards, aggregator))
    fast, reference = ensembles
    assert (fast.implementation, reference.implementation) == ("fast", "reference")
    windows, eval_windows = random_windows(40, seed=1), random_windows(25, seed=2)
    targets = np.random.default_rng(3).integers(1, N_ITEMS + 1, 40)
    a, b = (probe_session_model(e, windows, targets, eval_windows) for e in (fast, reference))
    assert set(a) == set(b) and all(k.startswith(("grad/aggregator", "loss", "scores")) for k in a)
    for key in b:
        _close(a[key], b[key], 1e-4)
    candidates = np.stack([np.random.default_rng(r).permutation(np.arange(1, N_ITEMS + 1))[:10] for r in range(40)])
    assert np.array_equal(pair_ranks(fast, windows, targets, 16), pair_ranks(reference, windows, targets, 16))
    assert np.array_equal(candidate_ranks(fast, windows, candidates, 16),
                          candidate_ranks(reference, windows, candidates, 16))
