"""The fast LSTM path computes the reference model's function: same weights, loss, gradients, scores."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from recunlearn.data.sequences import load_stream
from recunlearn.models.sequential.lstm import LSTMRecommender, packed_lstm


def _pair(stream, seed=3, **kw):
    return (LSTMRecommender(stream.n_items, torch.Generator().manual_seed(seed), implementation="reference", **kw),
            LSTMRecommender(stream.n_items, torch.Generator().manual_seed(seed), implementation="fast", **kw))


def _assert_probe_close(reference: dict, fast: dict, rtol: float):
    """Each entry equal up to ``rtol`` times the entry's largest magnitude (float32 rounding)."""
    assert reference.keys() == fast.keys()
    for key, value in reference.items():
        scale = float(value.abs().max()) or 1.0
        torch.testing.assert_close(fast[key].to(value.dtype), value, rtol=rtol, atol=rtol * scale, msg=key)


@pytest.fixture
def small(need_local):
    need_local("wikipedia", "raw")
    return load_stream("wikipedia", max_rows=3000)  # 1,608 training rows: two batches, the second partial


def test_bad_implementation_names_the_parameter_and_the_choices():
    with pytest.raises(ValueError, match=r"implementation.*'fast'.*'reference'"):
        LSTMRecommender(10, implementation="quick")


def test_packed_lstm_is_nn_lstm_with_gradcheck():
    torch.manual_seed(0)
    vocab, dim, hidden, length = 7, 5, 3, 6
    emb = torch.randn(vocab, dim, dtype=torch.float64)
    lstm = nn.LSTM(dim, hidden, batch_first=True).double()
    windows = torch.randint(1, vocab, (12, length))
    for row, pad in enumerate([0, 2, 6, 3, 0, 1, 6, 4, 5, 0, 2, 2]):  # leading padding, all-padding rows
        windows[row, :pad] = 0
    windows[3, 4] = 0  # an interior 0 is read as a token
    windows[9] = windows[0]  # a repeated window
    windows[10, :4] = windows[1, :4]  # a shared prefix, then different tokens
    windows[10, 4:] = (windows[1, 4:] % (vocab - 1)) + 1
    windows[11, :5] = windows[1, :5]
    weights = [lstm.weight_ih_l0, lstm.bias_ih_l0, lstm.bias_hh_l0, lstm.weight_hh_l0]
    inputs = [emb.clone().requires_grad_()] + [w.detach().clone().requires_grad_() for w in weights]
    assert torch.autograd.gradcheck(lambda *a: packed_lstm(*a, windows), inputs)
    x = emb.clone().requires_grad_()
    expected = lstm(nn.functional.embedding(windows, x))[0][:, -1]
    got = packed_lstm(*inputs, windows)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    with torch.no_grad():
        torch.testing.assert_close(packed_lstm(*inputs, windows), expected, rtol=1e-12, atol=1e-12)
    weight = torch.randn_like(expected)
    for a, b in zip(torch.autograd.grad((got * weight).sum(), inputs),
                    torch.autograd.grad((expected * weight).sum(), [x] + weights)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_same_initial_weights_and_probe(small):
    reference, fast = _pair(small)
    ref_state, fast_state = reference.net.state_dict(), fast.net.state_dict()
    assert list(ref_state) == list(fast_state)
    assert all(torch.equal(ref_state[k], fast_state[k]) for k in ref_state)
    before = {k: v.clone() for k, v in fast_state.items()}
    probe = fast.probe(small, batch=1)
    assert all(torch.equal(before[k], v) for k, v in fast.net.state_dict().items())  # probe changes nothing
    assert all(p.grad is None for p in fast.net.parameters())
    assert {k for k in probe if k.startswith("grad/")} == {
        "grad/lstm.weight_ih_l0", "grad/lstm.weight_hh_l0", "grad/lstm.bias_ih_l0", "grad/lstm.bias_hh_l0",
        "grad/fc.weight", "grad/fc.bias"}
    # The bias gradients sum ~10^4 terms: float32 reference and fast path each differ from the float64
    # value by up to ~3e-5 (reference) and ~5e-6 (fast) of the largest entry.
    _assert_probe_close(reference.probe(small, batch=1), probe, rtol=5e-5)
    exact = LSTMRecommender(small.n_items, torch.Generator().manual_seed(3), implementation="reference")
    exact.net.double()
    _assert_probe_close(exact.probe(small, batch=1), probe, rtol=1e-5)


def test_trainable_embeddings_probe(small):
    reference, fast = _pair(small, trainable_embeddings=True)
    ref, got = reference.probe(small), fast.probe(small)
    assert float(got["grad/embedding.weight"][0].abs().max()) == 0.0  # padding row, as Embedding(padding_idx=0)
    _assert_probe_close(ref, got, rtol=5e-5)


def test_one_epoch_agrees_and_the_fast_rerun_is_bit_identical(small):
    reference, fast = _pair(small, seed=5, epochs=1)
    _, again = _pair(small, seed=5, epochs=1)
    curves = [m.fit(small)["loss"] for m in (reference, fast, again)]
    assert curves[1] == curves[2]
    assert curves[0] == pytest.approx(curves[1], rel=1e-5)
    scores = [torch.cat([s for _, _, s in m.test_scores(small)]) for m in (reference, fast, again)]
    assert torch.equal(scores[1], scores[2])
    assert all(torch.equal(a, b) for a, b in zip(fast.net.state_dict().values(), again.net.state_dict().values()))
    torch.testing.assert_close(scores[1], scores[0], rtol=1e-3, atol=1e-3 * float(scores[0].abs().max()))
