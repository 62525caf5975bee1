"""Rev.Adv: the surrogate's loss, the learned fake user, and the row it selects."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recunlearn.data.sequences import load_stream
from recunlearn.perturb.revadv import (SurrogateSettings, _batch_loss, head_targets, learn_fake_user,
                                       nearest_real_user, select_revadv, training_matrix)


def test_the_sparse_surrogate_loss_equals_the_dense_weighted_loss():
    torch.manual_seed(0)
    x = (torch.rand(30, 20) < 0.2).float()
    fake = torch.rand(20)  # continuous while it is learned
    s = SurrogateSettings(dim=8)
    p, q = torch.randn(31, 8), torch.randn(20, 8)
    users = torch.randperm(31)[:17]
    observed_user, observed_item = torch.nonzero(x, as_tuple=True)
    sparse = _batch_loss(p, q, users, 30, observed_user, observed_item, fake, s)
    full = torch.cat([x, fake[None]])[users]
    weight = 1 + (s.weight_observed - 1) * full
    dense = (weight * (full - p[users] @ q.T) ** 2).sum() + s.l2 * (p[users].pow(2).sum() + q.pow(2).sum())
    assert float(sparse) == pytest.approx(float(dense), rel=1e-5)


def two_communities():
    """Users 0-19 consume items 0-9, users 20-39 items 10-19; the targets are community B's items 15-19."""
    rng = np.random.default_rng(0)
    x = torch.zeros(40, 20)
    for u in range(40):
        x[u, rng.choice(np.arange(10) if u < 20 else np.arange(10, 20), size=4, replace=False)] = 1
    return x, np.arange(15, 20)


def test_the_fake_user_bridges_the_communities_and_raises_the_target_hit_rate():
    x, targets = two_communities()
    settings = SurrogateSettings(dim=8, epochs=60, unroll=10, outer_epochs=10, top_k=3, batch_users=16, lr=0.05)
    fake, history = learn_fake_user(x, targets, 0, settings)
    assert max(history) > history[0]  # the attack finds a better profile than the real user it starts from
    items = np.flatnonzero(fake)
    assert (items < 10).any() and np.isin(items, targets).sum() >= 2  # community A's items with the targets
    again, _ = learn_fake_user(x, targets, 0, settings)
    assert np.array_equal(fake, again)


def test_nearest_user_and_head_targets():
    x, _ = two_communities()
    assert nearest_real_user(x, x[7].numpy().astype(bool)) == 7
    counts = x.sum(0).numpy()
    targets = head_targets(x, 2, seed=1, head_share=0.2)
    assert len(targets) == 2 and all(counts[t] >= np.sort(counts)[-4] for t in targets)


def test_select_revadv_returns_a_training_row_of_the_nearest_user(need_local):
    need_local("foursquare", "raw")
    stream = load_stream("foursquare", max_rows=1500)
    settings = SurrogateSettings(dim=8, epochs=6, unroll=2, outer_epochs=2)
    (position,), info = select_revadv(stream, "earliest", np.random.default_rng(0), seed=0, settings=settings)
    assert not stream.is_test[position] and stream.user[position] == info["user"]
    user_rows = stream.train_positions[stream.user[stream.train_positions] == info["user"]]
    assert position == user_rows[0] and len(info["targets"]) == 5
    x = training_matrix(stream)
    assert x.max() == 1 and x.sum() <= len(stream.train_positions)  # repeated (user, item) rows count once
    with pytest.raises(ValueError, match="Rev.Adv mode"):
        select_revadv(stream, "latest", np.random.default_rng(0), seed=0, settings=settings)


def test_revadv_row_is_the_users_first_or_a_seeded_random_training_row(need_local):
    from recunlearn.perturb.revadv import revadv_row

    need_local("foursquare", "raw")
    stream = load_stream("foursquare", max_rows=900)
    user = int(stream.user[stream.train_positions[0]])
    rows = stream.train_positions[stream.user[stream.train_positions] == user]
    assert revadv_row(stream, user, "earliest", np.random.default_rng(0)).tolist() == [rows[0]]
    a = revadv_row(stream, user, "random", np.random.default_rng(5))
    assert a.tolist() == revadv_row(stream, user, "random", np.random.default_rng(5)).tolist() and a[0] in rows
    with pytest.raises(ValueError, match="mode"):
        revadv_row(stream, user, "latest", np.random.default_rng(0))
