"""The fast TiSASRec path computes the reference model's function (and the reference stays selectable)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recunlearn.data.sequences import load_stream
from recunlearn.models.sequential import user_windows
from recunlearn.models.sequential.tisasrec import TiSASRecRecommender, _Noise, windows_at


def _pair(stream, **kw):
    return [TiSASRecRecommender(stream.n_items, torch.Generator().manual_seed(3), implementation=impl, **kw)
            for impl in ("reference", "fast")]


@pytest.fixture(scope="module")
def small():
    return load_stream("foursquare", max_rows=1500)


def test_bad_implementation_is_rejected():
    with pytest.raises(ValueError, match=r"implementation.*fast.*reference"):
        TiSASRecRecommender(10, implementation="quick")


def test_same_initial_weights(need_local, small):
    need_local("foursquare", "raw")
    ref, fast = _pair(small)
    a, b = ref.net.state_dict(), fast.net.state_dict()
    assert list(a) == list(b)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_probe_agrees_and_leaves_the_model_alone(need_local, small):
    need_local("foursquare", "raw")
    ref, fast = _pair(small)
    before = {k: v.clone() for k, v in fast.net.state_dict().items()}
    for batch in (0, 2):  # 39 users: batch 2 is a partial one
        a, b = ref.probe(small, batch), fast.probe(small, batch)
        assert a.keys() == b.keys() and len([k for k in a if k.startswith("grad/")]) == len(before)
        for key in a:
            torch.testing.assert_close(b[key], a[key], rtol=1e-5, atol=1e-6, msg=key)
    assert a["scores"].shape == (min(256, len(small.test_positions)), small.n_items)
    assert all(torch.equal(before[k], v) for k, v in fast.net.state_dict().items())
    assert all(p.grad is None for p in fast.net.parameters()) and fast.net.training


def _scores(model, stream):
    return torch.cat([s for _, _, s in model.test_scores(stream)])


def test_one_epoch_without_dropout_gives_the_same_scores(need_local, small):
    need_local("foursquare", "raw")
    ref, fast = _pair(small, dropout=0.0, epochs=1)
    ref.fit(small)
    fast.fit(small)
    a, b = _scores(ref, small), _scores(fast, small)
    torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-3 * float(a.abs().max()))


def test_fast_training_reruns_bit_identically(need_local, small):
    need_local("foursquare", "raw")
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        model = TiSASRecRecommender(small.n_items, torch.Generator().manual_seed(3), epochs=2)
        loss = model.fit(small)["loss"]
        runs.append((loss, model.net.state_dict(), _scores(model, small)))
    (l0, s0, c0), (l1, s1, c1) = runs
    assert l0 == l1 and all(torch.equal(s0[k], s1[k]) for k in s0) and torch.equal(c0, c1)


def _synthetic(n_blocks=2):
    """A tiny reference model and a batch with odd padding (an empty row, holes, a padded last position)."""
    model = TiSASRecRecommender(30, torch.Generator().manual_seed(5), implementation="reference", dim=16,
                                n_blocks=n_blocks, max_len=12, time_span=8)
    gen = torch.Generator().manual_seed(0)
    seq = torch.randint(1, 31, (6, 12), generator=gen)
    seq[0] = 0
    seq[1, :7] = 0
    seq[2, 3] = 0
    seq[3, -1] = 0
    seq[4, ::2] = 0
    times = torch.randint(1, 20, (6, 12), generator=gen) * (seq != 0)
    return model.net, seq, times


@pytest.mark.parametrize("n_blocks", [1, 2, 3])
def test_fast_forms_equal_the_reference_without_dropout(n_blocks):
    net, seq, times = _synthetic(n_blocks)
    net.eval()
    ref = net(seq, times)
    torch.testing.assert_close(net.forward_fast(seq, times), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(net.last_states(seq, times, rows=4), ref[:, -1], rtol=1e-5, atol=1e-5)
    # the training form (packed pairs, masks from the noise stream) with dropout 0, gradients included
    params = list(net.parameters())
    weights = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1))
    grad_ref = torch.autograd.grad((ref * weights).sum(), params)
    noise = _Noise(0.0, 1)
    noise.start(0, range(len(seq)))
    packed = net.forward_fast(seq, times, noise)
    torch.testing.assert_close(packed, ref, rtol=1e-5, atol=1e-5)
    for a, b in zip(torch.autograd.grad((packed * weights).sum(), params), grad_ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_training_masks_keep_with_probability_one_minus_p():
    for p in (0.2, 0.5, 0.9):
        keep = _Noise(p, 7).keep01(400_000).double().mean().item()
        assert abs(keep - (1 - p)) < 5 * np.sqrt(p * (1 - p) / 400_000)


def test_windows_at_equal_user_windows():
    rng = np.random.default_rng(0)
    user, item = rng.integers(0, 7, 300), rng.integers(0, 20, 300)
    at = np.sort(rng.choice(300, 40, replace=False))
    for length in (1, 5, 50):
        np.testing.assert_array_equal(windows_at(user, item, at, length), user_windows(user, item, length)[at])


def test_dropout_masks_of_a_user_depend_on_that_user_only():
    """Changing one user's sequence leaves every other user's training output (dropout on) unchanged:
    each user draws its masks from its own stream, whatever the others draw."""
    net, seq, times = _synthetic()
    net.train()
    users = [11, 3, 7, 40, 41, 2]

    def run(seq, times, users=users, epoch=0):
        noise = _Noise(0.2, seed=9)
        noise.start(epoch, users)
        return net.forward_fast(seq, times, noise)

    base = run(seq, times)
    changed_seq, changed_times = seq.clone(), times.clone()
    changed_seq[4, 1:9] = 5  # user 41: a different sequence and a different number of tokens and pairs
    changed_times[4] = torch.arange(12) * (changed_seq[4] != 0)
    changed = run(changed_seq, changed_times)
    others = [0, 1, 2, 3, 5]
    assert torch.equal(changed[others], base[others])
    assert not torch.equal(changed[4], base[4])
    assert not torch.equal(run(seq, times, epoch=1)[others], base[others])  # a new epoch draws new masks
    moved = run(seq, times, users=[11, 3, 8, 40, 41, 2])  # another user in row 2 draws other masks
    assert torch.equal(moved[[0, 1, 3, 4, 5]], base[[0, 1, 3, 4, 5]]) and not torch.equal(moved[2], base[2])


def test_drawing_masks_needs_the_batch_users():
    net, seq, times = _synthetic()
    noise = _Noise(0.2, seed=9)
    noise.start(0, [1, 2])
    with pytest.raises(RuntimeError, match="6 rows.*2 users"):
        net.forward_fast(seq, times, noise)
