"""Ranking metrics, full-ranking evaluation and fairness: known answers and independent references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from recunlearn.metrics import (METRICS, a_igf, active_user_mask, dcg_at_k, evaluate_full_ranking, hit_ratio_at_k,
                                hr_at_k_cure4rec, mrr_at_k, ndcg_at_k, ndcg_at_k_untruncated, recall_at_k,
                                top_k_hits)


def hits_row(k: int, ranks) -> torch.Tensor:
    """One user's (1, k) hit vector with hits at the given 1-based ranks."""
    row = torch.zeros(1, k, dtype=torch.bool)
    for rank in ranks:
        row[0, rank - 1] = True
    return row


def n_rel(*values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long)


def dcg(ranks) -> float:
    return sum(1.0 / math.log2(r + 1) for r in ranks)


# --- hand-worked known answers ----------------------------------------------------------------------

def test_perfect_ranking_scores_one_everywhere():
    k = 20
    for n in (1, 5, 20):
        hits = hits_row(k, range(1, n + 1))
        for fn in (ndcg_at_k, ndcg_at_k_untruncated, recall_at_k, hr_at_k_cure4rec):
            assert fn(hits, n_rel(n)).item() == pytest.approx(1.0), (fn.__name__, n)
        assert hit_ratio_at_k(hits).item() == 1.0
        assert mrr_at_k(hits).item() == 1.0


def test_single_hit_at_rank_three():
    hits, n = hits_row(20, [3]), n_rel(1)
    assert ndcg_at_k(hits, n).item() == pytest.approx(1.0 / math.log2(4))  # = 0.5
    assert ndcg_at_k_untruncated(hits, n).item() == pytest.approx(1.0 / math.log2(4))
    assert dcg_at_k(hits).item() == pytest.approx(0.5)
    assert mrr_at_k(hits).item() == pytest.approx(1.0 / 3.0)
    assert hit_ratio_at_k(hits).item() == 1.0
    assert recall_at_k(hits, n).item() == 1.0
    assert hr_at_k_cure4rec(hits, n).item() == 1.0


def test_untruncated_vs_standard_ndcg_for_25_relevant_all_top_20_hits():
    k, n = 20, n_rel(25)
    hits = hits_row(k, range(1, 21))
    assert ndcg_at_k(hits, n).item() == pytest.approx(1.0)
    expected = dcg(range(1, 21)) / dcg(range(1, 26))
    assert ndcg_at_k_untruncated(hits, n).item() == pytest.approx(expected)
    assert expected < 1.0
    # recall capped at K vs the CURE4Rec code's recall-like "HR" = hits / |T|
    assert recall_at_k(hits, n).item() == pytest.approx(20 / min(25, 20))
    assert hr_at_k_cure4rec(hits, n).item() == pytest.approx(20 / 25)
    assert hit_ratio_at_k(hits).item() == 1.0


def test_two_hits_among_three_relevant():
    k, n = 10, n_rel(3)
    hits = hits_row(k, [2, 5])
    assert ndcg_at_k(hits, n).item() == pytest.approx(dcg([2, 5]) / dcg([1, 2, 3]))
    assert ndcg_at_k_untruncated(hits, n).item() == pytest.approx(dcg([2, 5]) / dcg([1, 2, 3]))
    assert recall_at_k(hits, n).item() == pytest.approx(2 / 3)
    assert hr_at_k_cure4rec(hits, n).item() == pytest.approx(2 / 3)
    assert mrr_at_k(hits).item() == pytest.approx(1 / 2)
    assert hit_ratio_at_k(hits).item() == 1.0


def test_capped_recall_differs_from_cure4rec_hr_only_above_k():
    k = 5
    hits = hits_row(k, [1, 4])
    # |T| = 8 > K: recall = 2 / 5, CURE4Rec HR = 2 / 8
    assert recall_at_k(hits, n_rel(8)).item() == pytest.approx(2 / 5)
    assert hr_at_k_cure4rec(hits, n_rel(8)).item() == pytest.approx(2 / 8)
    # |T| = 4 <= K: both are 2 / 4
    assert recall_at_k(hits, n_rel(4)).item() == pytest.approx(2 / 4)
    assert hr_at_k_cure4rec(hits, n_rel(4)).item() == pytest.approx(2 / 4)


def test_no_hit_gives_zero():
    hits, n = hits_row(20, []), n_rel(3)
    for name, fn in METRICS.items():
        assert fn(hits, n).item() == 0.0, name


def test_metrics_of_a_batch_equal_metrics_of_each_user_alone():
    """The untruncated IDCG table is sized by the batch maximum; each user's value must not depend on it."""
    k = 20
    rows = [([1, 2, 3], 3), ([3], 1), (list(range(1, 21)), 25), ([7, 19], 60), ([], 2)]
    hits = torch.cat([hits_row(k, ranks) for ranks, _ in rows])
    n = n_rel(*[count for _, count in rows])
    for name, fn in METRICS.items():
        together = fn(hits, n)
        alone = torch.cat([fn(hits[i:i + 1], n[i:i + 1]) for i in range(len(rows))])
        torch.testing.assert_close(together, alone, msg=name)
    assert ndcg_at_k_untruncated(hits, n)[3].item() == pytest.approx(dcg([7, 19]) / dcg(range(1, 61)))


# --- cross-check against scikit-learn -------------------------------------------------------------

def test_ndcg_matches_sklearn_ndcg_score():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    n_users, n_items, k = 60, 80, 10
    y_score = np.stack([rng.permutation(n_items) for _ in range(n_users)]).astype(np.float64)  # distinct scores
    y_true = (rng.random((n_users, n_items)) < rng.uniform(0.02, 0.4, size=(n_users, 1))).astype(np.int64)
    y_true[np.arange(n_users), rng.integers(n_items, size=n_users)] = 1  # every user has >= 1 relevant item
    relevant = sp.csr_matrix(y_true)
    no_exclusion = sp.csr_matrix((n_users, n_items))
    result = evaluate_full_ranking(lambda users: torch.as_tensor(y_score)[users], no_exclusion, relevant, k=k,
                                   metrics=("ndcg",))
    np.testing.assert_array_equal(result["user"], np.arange(n_users))
    expected = np.array([sklearn_metrics.ndcg_score(y_true[[u]], y_score[[u]], k=k) for u in range(n_users)])
    np.testing.assert_allclose(result["ndcg"], expected, rtol=1e-12, atol=1e-12)
    assert result["ndcg"].mean() == pytest.approx(sklearn_metrics.ndcg_score(y_true, y_score, k=k), abs=1e-12)


# --- full-ranking evaluation ----------------------------------------------------------------------

def loop_reference(scores: np.ndarray, exclude: sp.csr_matrix, relevant: sp.csr_matrix, k: int,
                   users: np.ndarray) -> dict[str, np.ndarray]:
    """Independent per-user implementation: numpy argsort per user and the textbook formulas."""
    out = {name: [] for name in METRICS}
    discounts = 1.0 / np.log2(np.arange(2, scores.shape[1] + 2))
    for u in users:
        s = scores[u].astype(np.float64).copy()
        s[exclude[u].indices] = -np.inf
        top = np.argsort(-s, kind="stable")[:k]
        targets = set(relevant[u].indices.tolist())
        n = len(targets)
        hits = np.array([item in targets for item in top], dtype=float)
        gain = float((hits * discounts[:k]).sum())
        out["ndcg"].append(gain / discounts[:min(n, k)].sum())
        out["ndcg_untruncated"].append(gain / discounts[:n].sum())
        out["hit_ratio"].append(float(hits.any()))
        out["recall"].append(hits.sum() / min(n, k))
        out["hr_cure4rec"].append(hits.sum() / n)
        first = np.flatnonzero(hits)
        out["mrr"].append(1.0 / (first[0] + 1) if len(first) else 0.0)
    return {name: np.array(values) for name, values in out.items()}


def random_problem(seed: int, n_users=70, n_items=90):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n_users, n_items))  # float64: ties have probability 0
    state = rng.random((n_users, n_items))
    exclude = sp.csr_matrix(state < 0.25)
    dense_relevant = (state >= 0.25) & (state < 0.25 + rng.uniform(0.0, 0.3, size=(n_users, 1)))
    dense_relevant[[3, 10]] = False  # some users without relevant items (left out by default)
    return scores, exclude, sp.csr_matrix(dense_relevant)


@pytest.mark.parametrize("batch_size", [None, 1, 7])
def test_evaluate_full_ranking_matches_loop_reference(batch_size):
    scores, exclude, relevant = random_problem(1)
    k = 10
    result = evaluate_full_ranking(lambda users: torch.as_tensor(scores)[users], exclude, relevant, k=k,
                                   batch_size=batch_size)
    users = np.flatnonzero(np.diff(relevant.indptr) > 0)
    np.testing.assert_array_equal(result["user"], users)
    assert 3 not in result["user"] and 10 not in result["user"]
    np.testing.assert_array_equal(result["n_relevant"], np.diff(relevant.indptr)[users])
    reference = loop_reference(scores, exclude, relevant, k, users)
    for name in METRICS:
        np.testing.assert_allclose(result[name], reference[name], rtol=1e-12, atol=1e-12, err_msg=name)


def test_evaluate_full_ranking_given_users_and_metrics():
    scores, exclude, relevant = random_problem(2)
    users = np.array([40, 5, 22, 5])
    result = evaluate_full_ranking(lambda u: torch.as_tensor(scores)[u], exclude, relevant, k=5, users=users,
                                   metrics=("mrr", "recall"))
    assert set(result) == {"user", "n_relevant", "mrr", "recall"}
    np.testing.assert_array_equal(result["user"], users)
    reference = loop_reference(scores, exclude, relevant, 5, users)
    for name in ("mrr", "recall"):
        np.testing.assert_allclose(result[name], reference[name], rtol=1e-12)
    with pytest.raises(ValueError, match="unknown metrics"):
        evaluate_full_ranking(lambda u: torch.as_tensor(scores)[u], exclude, relevant, metrics=("auc",))


def test_excluded_item_with_highest_score_is_never_ranked():
    n_items, k = 30, 5
    scores = np.tile(np.arange(n_items, 0, -1, dtype=np.float64), (2, 1))  # item 0 highest, then 1, ...
    # user 0: item 0 is excluded and also (artificially) relevant; the other relevant item is last
    # user 1: item 0 is excluded, item 1 is relevant -> must be at rank 1
    exclude = sp.csr_matrix(([1.0, 1.0], ([0, 1], [0, 0])), shape=(2, n_items))
    relevant = sp.csr_matrix(([1.0, 1.0, 1.0], ([0, 0, 1], [0, n_items - 1, 1])), shape=(2, n_items))
    result = evaluate_full_ranking(lambda u: torch.as_tensor(scores)[u], exclude, relevant, k=k)
    assert result["hit_ratio"][0] == 0.0  # the excluded top item did not count as a hit
    assert result["mrr"][1] == 1.0  # the next item moved up to rank 1
    assert result["ndcg"][1] == 1.0


def test_top_k_hits_masks_excluded_items():
    scores = torch.tensor([[9.0, 8.0, 7.0, 6.0, 5.0, 4.0]])
    empty = torch.zeros(0, dtype=torch.long)
    relevant_rows, relevant_cols = torch.tensor([0, 0]), torch.tensor([0, 3])
    plain = top_k_hits(scores, empty, empty, relevant_rows, relevant_cols, k=3)
    assert plain.tolist() == [[True, False, False]]
    masked = top_k_hits(scores, torch.tensor([0, 0]), torch.tensor([0, 1]), relevant_rows, relevant_cols, k=3)
    assert masked.tolist() == [[False, True, False]]  # ranking is now items 2, 3, 4
    assert scores[0, 0] == 9.0  # the caller's scores are not modified


def test_fewer_candidates_than_k_pads_with_misses():
    # 4 items, 3 excluded (item 0 is excluded *and* relevant), K = 4: one candidate, then the three
    # excluded items fill the list (item 0 among them) and must count as misses.
    scores = torch.tensor([[1.0, 4.0, 3.0, 2.0]])
    exclude_rows, exclude_cols = torch.tensor([0, 0, 0]), torch.tensor([0, 1, 2])
    relevant_rows, relevant_cols = torch.tensor([0, 0]), torch.tensor([0, 3])
    hits = top_k_hits(scores, exclude_rows, exclude_cols, relevant_rows, relevant_cols, k=4)
    assert hits.tolist() == [[True, False, False, False]]  # item 3 at rank 1, then the excluded items
    exclude = sp.csr_matrix((np.ones(3), ([0, 0, 0], [0, 1, 2])), shape=(1, 4))
    relevant = sp.csr_matrix((np.ones(2), ([0, 0], [0, 3])), shape=(1, 4))
    result = evaluate_full_ranking(lambda u: scores[u], exclude, relevant, k=4)
    assert result["hr_cure4rec"][0] == 0.5  # 1 hit of |T_u| = 2, not 2 of 2
    assert result["ndcg"][0] == pytest.approx(1.0 / (1.0 + 1.0 / math.log2(3)))
    assert result["mrr"][0] == 1.0


# --- fairness ---------------------------------------------------------------------------------------

def test_active_user_mask_count_and_tie_break_by_user_id():
    n = 60
    counts = np.full(n, 10)
    counts[[50, 7, 33, 12]] = 40  # four users tie for the most interactions
    users = np.arange(n)
    mask = active_user_mask(counts, users)
    assert mask.sum() == int(0.05 * n) == 3
    assert set(users[mask]) == {7, 12, 33}  # lowest ids among the tied users
    # the users argument may be a shuffled subset: the mask is aligned with it
    rng = np.random.default_rng(0)
    subset = rng.permutation(np.r_[np.arange(0, 40), [50]])  # 41 users -> int(2.05) = 2 active
    sub_mask = active_user_mask(counts, subset)
    assert sub_mask.sum() == 2
    assert set(subset[sub_mask]) == {7, 12}


@pytest.mark.parametrize("n_users, expected", [(943, 47), (896, 44), (19, 0), (20, 1), (22878, 1143)])
def test_active_user_count_is_int_of_five_percent(n_users, expected):
    counts = np.random.default_rng(n_users).integers(1, 100, size=n_users)
    mask = active_user_mask(counts, np.arange(n_users))
    assert mask.sum() == expected == int(0.05 * n_users)
    if expected:
        assert counts[mask].min() >= counts[~mask].max()


def test_active_user_mask_other_fraction():
    counts = np.arange(100)
    mask = active_user_mask(counts, np.arange(100), fraction=0.1)
    assert np.flatnonzero(mask).tolist() == list(range(90, 100))


def test_a_igf_is_undefined_without_both_groups():
    values = np.array([0.1, 0.2, 0.3])
    assert math.isnan(a_igf(values, np.ones(3, dtype=bool)))    # no inactive user
    assert math.isnan(a_igf(values, np.zeros(3, dtype=bool)))   # no active user


def test_a_igf_known_value():
    values = np.array([1.0, 0.5, 0.2, 0.1, 0.3])
    active = np.array([True, False, False, True, False])
    assert a_igf(values, active) == pytest.approx((1.0 + 0.1) / 2 - (0.5 + 0.2 + 0.3) / 3)
    assert a_igf(values, ~active) == pytest.approx(-a_igf(values, active))
    assert a_igf(np.full(5, 0.4), active) == pytest.approx(0.0)
