"""TracIn's closed-form last-layer self-influence against a per-row backward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from recunlearn.perturb.tracin import (authors_proxy, bce_hidden_self_influence, logit_error_norms_sq,
                                       mse_self_influence, softmax_self_influence, top_rows)


def per_row_squared_gradient(layer: nn.Linear, features, loss_of_row) -> np.ndarray:
    out = []
    for row in range(len(features)):
        layer.zero_grad()
        loss_of_row(layer(features[row:row + 1]), row).backward()
        out.append(float(layer.weight.grad.pow(2).sum() + layer.bias.grad.pow(2).sum()))
    return np.array(out)


def test_softmax_cross_entropy_closed_form_equals_backprop():
    torch.manual_seed(0)
    layer, features, targets = nn.Linear(6, 9).double(), torch.randn(12, 6).double(), torch.randint(0, 9, (12,))
    reference = per_row_squared_gradient(layer, features, lambda out, r: F.cross_entropy(out, targets[r:r + 1]))
    ours = softmax_self_influence(features, layer(features).detach(), targets, lr=1.0).numpy()
    np.testing.assert_allclose(ours, reference, rtol=1e-10)


def test_mean_squared_error_closed_form_equals_backprop():
    torch.manual_seed(1)
    layer, features, truth = nn.Linear(5, 7).double(), torch.randn(10, 5).double(), torch.randn(10, 7).double()
    reference = per_row_squared_gradient(layer, features, lambda out, r: F.mse_loss(out, truth[r:r + 1]))
    ours = mse_self_influence(features, layer(features).detach(), truth, lr=1.0).numpy()
    np.testing.assert_allclose(ours, reference, rtol=1e-10)


def test_binary_cross_entropy_hidden_gradient_equals_backprop():
    torch.manual_seed(2)
    hidden, pos, neg = (torch.randn(8, 4).double() for _ in range(3))
    reference = []
    for row in range(8):
        h = hidden[row].clone().requires_grad_(True)
        loss = F.binary_cross_entropy_with_logits(torch.stack([h @ pos[row], h @ neg[row]]),
                                                  torch.tensor([1.0, 0.0]).double(), reduction="sum")
        (grad,) = torch.autograd.grad(loss, h)
        reference.append(float(grad.pow(2).sum()))
    np.testing.assert_allclose(bce_hidden_self_influence(hidden, pos, neg, lr=1.0).numpy(), reference, rtol=1e-10)


def test_learning_rate_scales_and_proxy_and_top_rows():
    torch.manual_seed(3)
    f, logits, t = torch.randn(4, 3), torch.randn(4, 5), torch.tensor([0, 1, 2, 3])
    assert torch.allclose(softmax_self_influence(f, logits, t, lr=1e-3), 1e-3 * softmax_self_influence(f, logits, t, lr=1.0))
    proxy = authors_proxy(f.pow(2).sum(1), logit_error_norms_sq(logits, t))
    assert proxy.shape == (4,) and (proxy >= 0).all()
    assert top_rows(np.array([0.1, 0.5, 0.5, 0.2]), np.array([10, 30, 20, 40]), k=1).tolist() == [20]
    assert top_rows(np.array([0.1, 0.5, 0.5, 0.2]), np.array([10, 30, 20, 40]), k=2).tolist() == [20, 30]


# --- checkpoints and the models' last-layer terms -------------------------------------------------------

from recunlearn.perturb.tracin import TracInRecorder, checkpoint_epochs  # noqa: E402


def test_checkpoint_epochs_are_the_ends_of_five_fifths():
    assert checkpoint_epochs(50) == (10, 20, 30, 40, 50)
    assert checkpoint_epochs(10) == (2, 4, 6, 8, 10)
    assert checkpoint_epochs(2) == (1, 2)
    assert checkpoint_epochs(1) == (1,)
    assert checkpoint_epochs(7) == (2, 3, 5, 6, 7)
    with pytest.raises(ValueError):
        checkpoint_epochs(0)


@pytest.fixture
def small_stream(need_local):
    from recunlearn.data.sequences import load_stream

    need_local("foursquare", "raw")
    return load_stream("foursquare", max_rows=900)


@pytest.mark.parametrize("name, implementation", [("lstm", "fast"), ("lstm", "reference"), ("latentcross", "fast"),
                                                  ("jodie", "fast"), ("tisasrec", "reference"), ("tisasrec", "fast")])
def test_recording_checkpoints_changes_nothing_in_training(small_stream, name, implementation):
    import copy

    from recunlearn.models.sequential import SEQUENTIAL_MODELS

    model = SEQUENTIAL_MODELS[name](small_stream.n_items, generator=torch.Generator().manual_seed(0), epochs=3,
                                    implementation=implementation)
    plain = copy.deepcopy(model)
    torch.manual_seed(0)
    plain.fit(small_stream)
    recorder = TracInRecorder(small_stream, 3)
    torch.manual_seed(0)
    model.fit(small_stream, checkpoint=recorder)
    assert recorder.recorded == [1, 2, 3]
    for p, q in zip(model.net.parameters(), plain.net.parameters()):
        assert torch.equal(p, q)
    exact, proxy = recorder.scores("exact"), recorder.scores("proxy")
    assert exact.shape == proxy.shape == (len(small_stream.train_positions),)
    assert (exact >= 0).all() and (proxy >= 0).all() and exact.max() > 0
    assert recorder.select("exact")[0] == small_stream.train_positions[np.argmax(exact)]
    if name == "tisasrec":  # a user's first training row is no target: no gradient
        first = np.unique(small_stream.user[small_stream.train_positions], return_index=True)[1]
        assert (exact[first] == 0).all()
    else:
        assert (exact > 0).all()


def test_recorder_refuses_scores_before_every_checkpoint(small_stream):
    recorder = TracInRecorder(small_stream, 50)
    with pytest.raises(RuntimeError, match="checkpoints"):
        recorder.scores()
    with pytest.raises(ValueError, match="variant"):
        TracInRecorder(small_stream, 1).scores("nope")


def test_lstm_terms_equal_a_per_row_backward_pass_through_the_reference_network(small_stream):
    from recunlearn.models.sequential import LSTMRecommender

    model = LSTMRecommender(small_stream.n_items, generator=torch.Generator().manual_seed(1), epochs=1,
                            implementation="reference")
    model.fit(small_stream)
    terms = model.last_layer_terms(small_stream, lr=1.0)
    windows = model._windows(small_stream)
    rows = small_stream.train_positions[:25]
    fc = model.net.fc
    reference = []
    for row in rows:
        fc.zero_grad()
        logits = model.net(torch.as_tensor(windows[row:row + 1]), True)
        F.cross_entropy(logits, torch.as_tensor([small_stream.item[row] + 1])).backward()
        reference.append(float(fc.weight.grad.double().pow(2).sum() + fc.bias.grad.double().pow(2).sum()))
    np.testing.assert_allclose(terms["influence"][:25], reference, rtol=1e-4)
