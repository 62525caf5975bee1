"""CASPER TiSASRec, LatentCross and JODIE: time features, row-tied negatives, t-batches, determinism."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recunlearn.data.sequences import load_stream
from recunlearn.experiments.casper import CasperConfig, run_casper


@pytest.fixture(scope="module")
def tiny():
    return dict(dataset="foursquare", max_rows=1200, epochs=1)


def test_tisasrec_relative_times_and_row_tied_negatives():
    from recunlearn.data.sequences import Stream
    from recunlearn.models.sequential.tisasrec import relative_times, row_negatives
    from recunlearn.perturb.operations import apply_perturbation

    stream = Stream(user=np.array([0, 1, 0, 0, 1, 1]), item=np.array([0, 1, 2, 0, 3, 1]),
                    timestamp=np.array([10.0, 11, 14, 22, 15, 31]), is_test=np.zeros(6, bool), row=np.arange(6),
                    n_users=2, n_items=4)
    # user 0: times 0, 4, 12 -> scale 4 -> 1, 2, 4; user 1: 1, 5, 21 -> scale 4 -> 1, 2, 6
    assert relative_times(stream).tolist() == [1, 1, 2, 4, 2, 6]
    neg = row_negatives(stream, seed=7)
    assert np.all(neg != stream.item)
    for deleted in (1, 5):  # a deletion, also of the last source row, leaves every other row's negative
        shorter, _ = apply_perturbation(stream, np.array([deleted]), "loo")
        np.testing.assert_array_equal(row_negatives(shorter, seed=7), np.delete(neg, deleted))


def test_tisasrec_control_run_is_identical_on_cpu(need_local, tiny):
    need_local("foursquare", "raw")
    m = run_casper(CasperConfig(model="tisasrec", selector="none", **tiny))["metrics"]
    assert m["ao"] == 1.0 and m["jaccard"] == 1.0
    m = run_casper(CasperConfig(model="tisasrec", selector="random", **tiny))["metrics"]
    assert 0 < m["ao"] < 1


def test_latentcross_t_batches_match_the_sequential_rule():
    from recunlearn.models.sequential.latentcross import t_batches

    rng = np.random.default_rng(0)
    user, item = rng.integers(8, size=300), rng.integers(6, size=300)
    fast = t_batches(user, item, window=64)
    for start in range(0, 300, 64):  # reference: one interaction at a time, as the authors' loop
        last_u, last_i = {}, {}
        for r in range(start, min(start + 64, 300)):
            level = 1 + max(last_u.get(user[r], -1), last_i.get(item[r], -1))
            assert fast[r] == level
            last_u[user[r]], last_i[item[r]] = level, level
    for start in range(0, 300, 64):  # each user and item at most once per t-batch
        for t in np.unique(fast[start:start + 64]):
            rows = start + np.flatnonzero(fast[start:start + 64] == t)
            assert len(set(user[rows])) == len(rows) and len(set(item[rows])) == len(rows)


def test_latentcross_control_identical_and_test_time_learning_leaves_the_model_unchanged(need_local, tiny):
    need_local("foursquare", "raw")
    from recunlearn.models.sequential import LatentCrossRecommender

    stream = load_stream("foursquare", max_rows=1200)
    model = LatentCrossRecommender(stream.n_items, torch.Generator().manual_seed(0), epochs=1)
    model.fit(stream)
    first = torch.cat([s for _, _, s in model.test_scores(stream)])
    second = torch.cat([s for _, _, s in model.test_scores(stream)])
    assert torch.equal(first, second)
    m = run_casper(CasperConfig(model="latentcross", selector="none", **tiny))["metrics"]
    assert m["ao"] == 1.0 and m["jaccard"] == 1.0


def test_first_appearance_id_maps(need_local, tiny):
    need_local("foursquare", "raw")
    from recunlearn.experiments.casper import relabel

    stream = load_stream("foursquare", max_rows=1200)
    relabelled, new_id = relabel(stream, "first_appearance")
    assert relabelled.item[0] == 0 and np.all(np.diff(np.maximum.accumulate(relabelled.item)) <= 1)
    np.testing.assert_array_equal(np.argsort(new_id)[relabelled.item], stream.item)
    for id_map in ("first_appearance", "first_appearance_labels"):
        record = run_casper(CasperConfig(model="latentcross", selector="none", id_map=id_map, **tiny))
        assert record["metrics"]["ao"] == 1.0 and record["renumbered_items"] == 0
    record = run_casper(CasperConfig(model="latentcross", selector="earliest", perturbation="replace",
                                     replacement="unpopular", id_map="first_appearance_labels", **tiny))
    assert record["renumbered_items"] > 0


def test_jodie_previous_items_and_control_run(need_local, tiny):
    need_local("foursquare", "raw")
    from recunlearn.data.sequences import Stream
    from recunlearn.models.sequential.jodie import previous_items

    stream = Stream(user=np.array([0, 1, 0, 1]), item=np.array([2, 0, 1, 1]), timestamp=np.arange(4.0),
                    is_test=np.zeros(4, bool), row=np.arange(4), n_users=2, n_items=3)
    assert previous_items(stream).tolist() == [3, 3, 2, 0]  # 3 = "none"
    m = run_casper(CasperConfig(model="jodie", selector="none", **tiny))["metrics"]
    assert m["ao"] == 1.0 and m["jaccard"] == 1.0
