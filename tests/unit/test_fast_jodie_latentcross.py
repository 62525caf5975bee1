"""Fast JODIE and fast LatentCross (with the authors' LSTM cell and with the paper's GRU cell): each the
same model as its reference formulation (initial weights, loss, gradients, scores), and the fast path
deterministic. What only one of them has is tested in
``test_fast_jodie.py`` and ``test_fast_latentcross.py``."""

from __future__ import annotations

import functools

import pytest
import torch

from recunlearn.models.sequential import JODIERecommender, LatentCrossRecommender

MODELS = {"jodie": JODIERecommender, "latentcross": LatentCrossRecommender,
          "latentcross-gru": functools.partial(LatentCrossRecommender, cell="gru")}


def stored_states(model) -> list[torch.Tensor]:
    """The end-of-training states a model keeps for scoring (JODIE: user and item embeddings)."""
    return list(model.final[:2]) if isinstance(model, JODIERecommender) else [model.final_states]


@pytest.fixture
def stream(wikipedia_head):
    return wikipedia_head


def pair(name, stream, seed=0, **kw):
    """The fast and the reference implementation from the same seed."""
    models = [MODELS[name](stream.n_items, torch.Generator().manual_seed(seed), implementation=impl, **kw)
              for impl in ("fast", "reference")]
    for model in models:
        if isinstance(model, JODIERecommender):
            model._ensure_net(stream.n_users)  # its network needs |U|; fit and probe build it the same way
    return models


def close(actual, expected, rtol):
    actual, expected = actual.detach(), expected.detach()
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=rtol * float(expected.abs().max()))


@pytest.mark.parametrize("name", MODELS)
def test_same_initial_weights(name, stream):
    fast, reference = pair(name, stream)
    a, b = fast.net.state_dict(), reference.net.state_dict()
    assert list(a) == list(b)
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("batch", [0, 1])
@pytest.mark.parametrize("name", MODELS)
def test_probe_matches_the_reference(name, stream, batch):
    fast, reference = pair(name, stream, seed=1)
    before = {k: v.clone() for k, v in fast.net.state_dict().items()}
    a, b = fast.probe(stream, batch), reference.probe(stream, batch)
    assert set(a) == set(b) and {f"grad/{n}" for n, _ in fast.net.named_parameters()} < set(a)
    assert a["scores"].shape == (len(stream.test_positions[:1024]), stream.n_items)
    for key in b:
        close(a[key], b[key], 1e-5)
    assert all(torch.equal(before[k], v) for k, v in fast.net.state_dict().items())  # probe changes nothing
    assert all(p.grad is None for p in fast.net.parameters())


@pytest.mark.parametrize("name", MODELS)
def test_one_epoch_agrees_and_the_fast_path_is_deterministic(name, stream):
    fast, reference = pair(name, stream, epochs=1)
    again = MODELS[name](stream.n_items, torch.Generator().manual_seed(0), epochs=1)
    scores = {}
    for label, model in (("fast", fast), ("reference", reference), ("again", again)):
        loss = model.fit(stream)["loss"]
        scores[label] = (loss, torch.cat([s for _, _, s in model.test_scores(stream)]))
    close(scores["fast"][1], scores["reference"][1], 1e-3)
    assert scores["fast"][0] == pytest.approx(scores["reference"][0], rel=1e-4)
    assert scores["fast"][0] == scores["again"][0] and torch.equal(scores["fast"][1], scores["again"][1])
    kept = [s.clone() for s in stored_states(fast)]
    probe = fast.probe(stream)  # after fit: scores from the end-of-training states
    close(probe["scores"], reference.probe(stream)["scores"], 1e-3)
    assert all(torch.equal(a, b) for a, b in zip(kept, stored_states(fast)))  # stored states unchanged


@pytest.mark.parametrize("name", MODELS)
def test_bad_implementation_is_refused(name):
    with pytest.raises(ValueError, match="implementation.*'fast', 'reference'"):
        MODELS[name](10, implementation="vectorised")


def kept_optimizer_state(model) -> dict:
    """The optimiser state a model's test pass starts its online steps from."""
    return model.final[2] if isinstance(model, JODIERecommender) else model._optimizer_state


@pytest.mark.parametrize("implementation", ["fast", "reference"])
@pytest.mark.parametrize("name", MODELS)
def test_a_frozen_test_pass_is_the_online_pass_with_steps_of_size_zero(name, implementation, stream, monkeypatch):
    """Spec D9's switch: ``online=False`` keeps the trained parameters while the states follow the test
    rows. Known answer: the online pass with a zero learning rate (its steps change nothing), bit for
    bit, although the frozen pass computes without gradients."""
    model = MODELS[name](stream.n_items, torch.Generator().manual_seed(0), epochs=1, window=32,
                         implementation=implementation)
    model.fit(stream)

    def scores(**options):
        return [s for _, _, s in model.test_scores(stream, **options)]

    online, frozen = scores(), scores(online=False)
    assert len(frozen) > 2
    assert torch.equal(online[0], frozen[0])  # the first window is scored before any step
    assert not torch.equal(torch.cat(online), torch.cat(frozen))  # later windows see the online steps
    for group in kept_optimizer_state(model)["param_groups"]:
        group["lr"] = 0.0
    assert torch.equal(torch.cat(scores()), torch.cat(frozen))
    assert torch.equal(torch.cat(scores(online=False)), torch.cat(frozen))  # the trained model is untouched

    grad_mode = []  # whether each window of the frozen pass ran with gradients
    window_pass = "_pass_fast" if implementation == "fast" else "_pass"
    run = getattr(model, window_pass)
    monkeypatch.setattr(model, window_pass, lambda *a, **k: grad_mode.append(torch.is_grad_enabled()) or run(*a, **k))
    assert torch.equal(torch.cat(scores(online=False)), torch.cat(frozen))
    assert len(grad_mode) == len(frozen) and not any(grad_mode) and torch.is_grad_enabled()
