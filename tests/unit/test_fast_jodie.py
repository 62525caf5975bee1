"""Fast JODIE: the same model as the reference formulation (weights, loss, gradients, scores)."""

from __future__ import annotations

import functools

import pytest
import torch

from recunlearn.data.sequences import load_stream
from recunlearn.models.sequential import JODIERecommender


@functools.lru_cache(maxsize=None)
def _stream():
    return load_stream("wikipedia", max_rows=3000)  # two training windows, one test window


@pytest.fixture
def stream(need_local):
    need_local("wikipedia", "raw")
    return _stream()


def _pair(stream, seed=0, **kw):
    models = [JODIERecommender(stream.n_items, torch.Generator().manual_seed(seed), implementation=impl, **kw)
              for impl in ("fast", "reference")]
    for model in models:
        model._ensure_net(stream.n_users)  # the network needs |U|; fit and probe build it the same way
    return models


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
    again = JODIERecommender(stream.n_items, torch.Generator().manual_seed(0), epochs=1)
    scores = {}
    for name, model in (("fast", fast), ("reference", reference), ("again", again)):
        loss = model.fit(stream)["loss"]
        scores[name] = (loss, torch.cat([s for _, _, s in model.test_scores(stream)]))
    _close(scores["fast"][1], scores["reference"][1], 1e-3)
    assert scores["fast"][0] == pytest.approx(scores["reference"][0], rel=1e-4)
    assert scores["fast"][0] == scores["again"][0] and torch.equal(scores["fast"][1], scores["again"][1])
    kept = [s.clone() for s in fast.final[:2]]
    probe = fast.probe(stream)  # after fit: scores from the end-of-training states
    _close(probe["scores"], reference.probe(stream)["scores"], 1e-3)
    assert all(torch.equal(a, b) for a, b in zip(kept, fast.final[:2]))  # stored states unchanged


def test_bad_implementation_is_refused():
    with pytest.raises(ValueError, match="implementation.*'fast', 'reference'"):
        JODIERecommender(10, implementation="vectorised")


def test_recycled_gradient_and_transposed_adam_change_no_bit(stream):
    """The fast path stores the prediction weight column by column, reuses its gradient buffer from
    window to window and gives fused Adam the weight's contiguous transpose: one epoch gives the same
    weights and test scores, bit for bit, as a fresh zero gradient every window and Adam on the
    parameter itself."""
    from recunlearn.models.sequential import jodie

    recycled = []

    def train(shortcuts):
        model = JODIERecommender(stream.n_items, torch.Generator().manual_seed(0), epochs=1)
        if shortcuts:
            recycle = model._recycled.recycle

            def counted(weight):
                recycle(weight)
                recycled.append(model._recycled._buffer is not None)
            model._recycled.recycle = counted
        else:
            model._recycled.recycle = lambda weight: None
            model._optimizer = lambda net: jodie.adam(net, model.lr, model.weight_decay, "fast")
        model.fit(stream)
        in_training = list(recycled)
        scores = torch.cat([s for _, _, s in model.test_scores(stream)])
        recycled[:] = in_training  # the test pass trains a copy of the net: its first window starts afresh
        return {k: v.clone() for k, v in model.net.state_dict().items()}, scores, model

    (fast, fast_scores, model), (plain, plain_scores, _) = train(True), train(False)
    weight = model.net.predict.weight
    assert weight.stride() == (1, weight.shape[0])  # column by column
    assert recycled[0] is False and all(recycled[1:]) and len(recycled) > 1  # every window after the first reuses it
    assert fast.keys() == plain.keys() and all(torch.equal(fast[k], plain[k]) for k in fast)
    assert torch.equal(fast_scores, plain_scores)
