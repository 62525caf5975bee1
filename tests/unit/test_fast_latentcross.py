"""Fast LatentCross: the same model as the reference formulation (weights, loss, gradients, scores)."""

from __future__ import annotations

import functools

import pytest
import torch

from recunlearn.data.sequences import load_stream
from recunlearn.models.sequential import LatentCrossRecommender


@functools.lru_cache(maxsize=None)
def _stream():
    return load_stream("wikipedia", max_rows=3000)  # two training windows, one test window


@pytest.fixture
def stream(need_local):
    need_local("wikipedia", "raw")
    return _stream()


def _pair(stream, seed=0, **kw):
    return [LatentCrossRecommender(stream.n_items, torch.Generator().manual_seed(seed), implementation=impl, **kw)
            for impl in ("fast", "reference")]


def _close(actual, expected, rtol):
    actual, expected = actual.detach(), expected.detach()
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=rtol * float(expected.abs().max()))


def test_same_initial_weights(stream):
    fast, reference = _pair(stream)
    a, b = fast.net.state_dict(), reference.net.state_dict()
    assert list(a) == list(b)
    for name in a:
        assert torch.equal(a[name], b[name]), name


@pytest.mark.parametrize("batch", [0, 1])
def test_probe_matches_the_reference(stream, batch):
    fast, reference = _pair(stream, seed=1)
    before = {k: v.clone() for k, v in fast.net.state_dict().items()}
    a, b = fast.probe(stream, batch), reference.probe(stream, batch)
    assert set(a) == set(b) and {f"grad/{n}" for n, _ in fast.net.named_parameters()} < set(a)
    assert a["scores"].shape == (len(stream.test_positions[:1024]), stream.n_items)
    for key in b:
        _close(a[key], b[key], 1e-5)
    assert all(torch.equal(before[k], v) for k, v in fast.net.state_dict().items())  # probe changes nothing
    assert all(p.grad is None for p in fast.net.parameters())


def test_one_epoch_agrees_and_the_fast_path_is_deterministic(stream):
    fast, reference = _pair(stream, epochs=1)
    again = LatentCrossRecommender(stream.n_items, torch.Generator().manual_seed(0), epochs=1)
    scores = {}
    for name, model in (("fast", fast), ("reference", reference), ("again", again)):
        loss = model.fit(stream)["loss"]
        scores[name] = (loss, torch.cat([s for _, _, s in model.test_scores(stream)]))
    _close(scores["fast"][1], scores["reference"][1], 1e-3)
    assert scores["fast"][0] == pytest.approx(scores["reference"][0], rel=1e-4)
    assert scores["fast"][0] == scores["again"][0] and torch.equal(scores["fast"][1], scores["again"][1])
    kept = [fast.final_states.clone()]
    probe = fast.probe(stream)  # after fit: scores from the end-of-training states
    _close(probe["scores"], reference.probe(stream)["scores"], 1e-3)
    assert all(torch.equal(a, b) for a, b in zip(kept, [fast.final_states]))  # stored states unchanged


def test_bad_implementation_is_refused():
    with pytest.raises(ValueError, match="implementation.*'fast', 'reference'"):
        LatentCrossRecommender(10, implementation="vectorised")


def test_input_gates_give_autograds_gradients_bit_for_bit():
    """``ItemColumnGates`` writes the gradient of W_ih itself: every gradient equals autograd's through
    the gather, the slice and the bias sum, bit for bit (duplicate items in the batch included)."""
    from torch.nn import functional as F

    from recunlearn.models.sequential.latentcross import LatentCrossNet

    def autograd_gates(net, item, context):
        w1, b1 = net.pre.weight, net.pre.bias
        scale = 1 + ((w1.index_select(0, item) * context).sum(1) + b1.index_select(0, item))[:, None]
        tail = context * (1 + F.linear(context, w1[-2:], b1[-2:]))
        w = net.cell.weight_ih
        return w.t().index_select(0, item) * scale + F.linear(tail, w[:, -2:], net.cell.bias_ih + net.cell.bias_hh)

    torch.manual_seed(3)
    net = LatentCrossNet(n_items=50, hidden=8)
    item = torch.randint(0, 51, (200,))  # 0..|I|: the extra class too, and many repeats
    assert len(item.unique()) < len(item)
    context = torch.randn(200, 2)
    upstream = torch.randn(200, 32)
    results = []
    for gates in (net.input_gates, lambda i, c: autograd_gates(net, i, c)):
        net.zero_grad(set_to_none=True)
        out = gates(item, context)
        (out * upstream).sum().backward()
        results.append((out.detach().clone(), {n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None}))
    (out_fast, grads_fast), (out_ref, grads_ref) = results
    assert torch.equal(out_fast, out_ref)
    assert grads_fast.keys() == grads_ref.keys() and {"cell.weight_ih", "pre.weight", "cell.bias_ih"} <= grads_ref.keys()
    for name in grads_ref:
        assert torch.equal(grads_fast[name], grads_ref[name]), name
