"""CASPER: IDAG variants, exact cascade scores vs BFS, selectors and perturbation operations."""

from __future__ import annotations

import numpy as np
import pytest

from recunlearn.data.sequences import Stream, first_appearance_map, split_last_fraction
from recunlearn.perturb.idag import build_idag, cascade_scores, cascade_scores_bfs, descendants, top_roots
from recunlearn.perturb.operations import (apply_perturbation, perturb, replacement_items, select_earliest_random,
                                           select_latest_random, select_rows)
from recunlearn.perturb.toy import figure_4b_stream


def random_stream(n_rows: int, n_users: int, n_items: int, seed: int, ties: bool = False) -> Stream:
    rng = np.random.default_rng(seed)
    user, item = rng.integers(n_users, size=n_rows), rng.integers(n_items, size=n_rows)
    ts = np.sort(rng.integers(0, n_rows // 3, size=n_rows)).astype(float) if ties else np.arange(n_rows, dtype=float)
    return Stream(user=user, item=item, timestamp=ts, is_test=split_last_fraction(user, 0.1), row=np.arange(n_rows),
                  n_users=n_users, n_items=n_items)


def test_figure_4b_x3_has_eight_descendants_and_is_the_argmax():
    graph = build_idag(figure_4b_stream(), None, "paper")
    roots, scores = cascade_scores(graph)
    assert dict(zip(roots.tolist(), scores.tolist())) == {0: 4, 1: 5, 2: 8}  # X1, X2, X3
    assert top_roots(roots, scores)[0] == 2
    assert graph.pred_user[3] == 0 and graph.pred_item[4] == 2  # X1 -> X4 (user), X3 -> X5 (item)


@pytest.mark.parametrize("variant", ["paper", "code-rel", "code-2021"])
@pytest.mark.parametrize("max_len", [None, 3, 8])
@pytest.mark.parametrize("seed", [0, 1])
def test_bitset_sweep_equals_bfs_on_random_graphs(variant, max_len, seed):
    stream = random_stream(600, 30, 25, seed, ties=True)
    graph = build_idag(stream, max_len, variant)
    roots, fast = cascade_scores(graph, chunk=50)
    roots_bfs, slow = cascade_scores_bfs(graph)
    np.testing.assert_array_equal(roots, roots_bfs)
    np.testing.assert_array_equal(fast, slow)
    assert len(roots) > 1


def test_descendants_of_one_root_number_its_cascade_score_and_of_a_set_their_union():
    graph = build_idag(random_stream(500, 25, 20, 4, ties=True), None, "paper")
    roots, scores = cascade_scores_bfs(graph)
    reached = []
    for root, score in list(zip(roots.tolist(), scores.tolist()))[:6]:
        mask = np.zeros(len(graph), dtype=bool)
        mask[root] = True
        reached.append(descendants(graph, mask))
        assert reached[-1].sum() == score and reached[-1][root]
    both = np.zeros(len(graph), dtype=bool)
    both[roots[:2]] = True
    np.testing.assert_array_equal(descendants(graph, both), reached[0] | reached[1])
    x3 = np.zeros(8, dtype=bool)
    x3[2] = True  # Figure 4(b): X3 reaches 8 interactions, itself included
    assert descendants(build_idag(figure_4b_stream(), None, "paper"), np.r_[x3, np.zeros(
        len(figure_4b_stream().train_positions) - 8, dtype=bool)]).sum() == 8


def test_paper_variant_drops_equal_timestamp_edges_and_keeps_latest_l():
    stream = random_stream(400, 10, 8, 3, ties=True)
    graph = build_idag(stream, 5, "paper")
    ts = stream.timestamp[graph.nodes]
    for pred in (graph.pred_user, graph.pred_item):
        has = pred >= 0
        assert np.all(ts[pred[has]] < ts[has])
    users = stream.user[graph.nodes]
    assert np.bincount(users).max() <= 5
    assert len(build_idag(stream, None, "paper")) == len(stream.train_positions)
    everything = build_idag(stream, None, "code-rel")  # L = inf: same nodes, equal-ts edges kept
    assert everything.n_edges >= build_idag(stream, None, "paper").n_edges


def check_one_row_changed(stream, new, kind):
    if kind == "insert":
        assert len(new) == len(stream) + 1
        assert (new.row == -1).sum() == 1
    elif kind == "loo":
        assert len(new) == len(stream) - 1
    else:
        assert len(new) == len(stream) and (new.item != stream.item).sum() <= 1
    # test rows are untouched and in the same order
    np.testing.assert_array_equal(new.row[new.is_test], stream.row[stream.is_test])
    np.testing.assert_array_equal(new.item[new.is_test], stream.item[stream.is_test])
    assert (~new.is_test).sum() - (~stream.is_test).sum() == {"loo": -1, "replace": 0, "insert": 1}[kind]


@pytest.mark.parametrize("kind", ["loo", "replace", "insert"])
@pytest.mark.parametrize("selector", ["random", "earliest", "latest", "casper"])
def test_a_perturbation_changes_exactly_one_training_row(kind, selector):
    stream = random_stream(300, 12, 20, 4)
    new, info = perturb(stream, selector, kind, np.random.default_rng(0), replacement="unpopular")
    check_one_row_changed(stream, new, kind)
    p = info.positions[0]
    if kind == "insert":
        assert new.user[p] == stream.user[p] and new.timestamp[p] == stream.timestamp[p] - 1
        assert new.row[p + 1] == stream.row[p] and new.item[p] == info.new_items[0]
    if kind == "loo":
        assert stream.row[p] not in set(new.row.tolist())


def test_selectors_pick_first_and_last_training_rows():
    stream = random_stream(300, 12, 20, 5)
    rng = np.random.default_rng(1)
    first, last = select_earliest_random(stream, rng, 3), select_latest_random(stream, rng, 3)
    train = stream.train_positions
    for p in first:
        assert p == train[stream.user[train] == stream.user[p]][0]
    for p in last:
        assert p == train[stream.user[train] == stream.user[p]][-1]


def test_more_perturbations_than_candidates_is_a_clear_error():
    stream = random_stream(300, 12, 20, 5)
    n_users = len(np.unique(stream.user[stream.train_positions]))
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match=f"k = {n_users + 1} .* only {n_users} users with training rows"):
        select_earliest_random(stream, rng, n_users + 1)
    with pytest.raises(ValueError, match="only .* training rows"):
        select_rows(stream, "random", rng, len(stream.train_positions) + 1)
    with pytest.raises(ValueError, match="only .* roots"):
        select_rows(stream, "casper", rng, len(stream.train_positions) + 1)


def test_replacement_items_popularity_and_ties():
    stream = Stream(user=np.zeros(6, np.int64), item=np.array([2, 2, 0, 3, 3, 1]), timestamp=np.arange(6.0),
                    is_test=np.array([0, 0, 0, 0, 0, 1], bool), row=np.arange(6), n_users=1, n_items=5)
    rng = np.random.default_rng(0)
    assert replacement_items(stream, "popular", rng)[0] == 2  # tie 2 vs 3 -> smallest id
    assert replacement_items(stream, "unpopular", rng)[0] == 0  # items 1 (test only) and 4 (absent) excluded


def test_multiple_insertions_land_before_their_rows():
    stream = random_stream(50, 4, 6, 6)
    positions = np.array([stream.train_positions[7], stream.train_positions[2]])
    new, _ = apply_perturbation(stream, positions, "insert", np.array([5, 4]))
    inserted = np.flatnonzero(new.row == -1)
    assert new.row[inserted + 1].tolist() == sorted(stream.row[positions].tolist())
    assert new.item[inserted].tolist() == [4, 5]


def test_first_appearance_map_renumbers_by_first_occurrence():
    new_id = first_appearance_map(np.array([3, 1, 3, 0]), 5)
    assert new_id.tolist() == [2, 1, 3, 0, 4]
