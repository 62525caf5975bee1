"""RLS metrics: invariants, closed forms, and a cross-check against the ``rbo`` package."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recunlearn.metrics import rls


def pairs(n: int, b: int, seed: int, swaps: int | None = None):
    """``b`` pairs of permutations of n items: random, or the second = the first with ``swaps`` swaps."""
    rng = np.random.default_rng(seed)
    a = np.stack([rng.permutation(n) for _ in range(b)])
    if swaps is None:
        return a, np.stack([rng.permutation(n) for _ in range(b)])
    out = a.copy()
    for row in out:
        for _ in range(swaps):
            i, j = rng.integers(n, size=2)
            row[i], row[j] = row[j], row[i]
    return a, out


def test_identical_lists_score_one():
    a, _ = pairs(50, 4, 0)
    m = rls.rls_metrics(a, a)
    assert np.all(m["ao"] == 1.0) and np.all(m["jaccard"] == 1.0)
    np.testing.assert_allclose(m["rbo_ext"], 1.0, atol=1e-15)
    np.testing.assert_allclose(m["rbo_min"], 1 - 0.9 ** 50, atol=1e-15)  # truncated RBO of identical lists


@pytest.mark.parametrize("n", [5, 20, 101])
def test_reversed_lists_closed_form(n):
    a = np.arange(n)[None, :]
    b = a[:, ::-1].copy()
    X = rls.overlap_counts(a, b).numpy()[0]
    d = np.arange(1, n + 1)
    np.testing.assert_array_equal(X, np.maximum(0, 2 * d - n))
    assert rls.average_overlap(torch.as_tensor(X[None]))[0] == pytest.approx(np.mean(np.maximum(0, 2 * d - n) / d),
                                                                             abs=1e-15)
    if n >= 20:
        assert rls.jaccard_at_k(torch.as_tensor(X[None]), 10)[0] == 0.0


def test_random_permutations_average_near_half():
    a, b = pairs(1001, 200, 1)
    ao = rls.rls_metrics(a, b)["ao"].mean()
    assert abs(ao - rls.ao_of_random_permutations(1001)) < 0.01


@pytest.mark.parametrize("n", [2, 3, 4])
def test_expected_ao_of_random_permutations_is_exact_over_every_pair(n):
    """The closed form (n+1)/(2n) against the mean AO over all n!**2 pairs of permutations."""
    import itertools

    perms = np.array(list(itertools.permutations(range(n))))
    a, b = np.repeat(perms, len(perms), axis=0), np.tile(perms, (len(perms), 1))
    assert rls.rls_metrics(a, b)["ao"].mean() == pytest.approx(rls.ao_of_random_permutations(n), abs=1e-12)


def test_jaccard_of_lists_shorter_than_k_uses_their_length():
    """Lists of 4 compared at k = 10: the top-4 sets, {0, 1, 2, 3} and {0, 1, 2, 9}: 3 / 5."""
    a = np.array([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]])
    b = np.array([[9, 2, 1, 0, 3, 4, 5, 6, 7, 8, 10, 11]])
    assert rls.rls_metrics(a, b, k=10, lengths=[4])["jaccard"][0] == pytest.approx(3 / 5)
    assert rls.rls_metrics(a, b, k=10)["jaccard"][0] == pytest.approx(1.0)   # the full top 10 sets are equal


def test_jaccard_is_set_overlap_of_top_k():
    a, b = pairs(30, 20, 2, swaps=5)
    jac = rls.rls_metrics(a, b)["jaccard"]
    for x, y, j in zip(a, b, jac):
        sa, sb = set(x[:10]), set(y[:10])
        assert j == pytest.approx(len(sa & sb) / len(sa | sb), abs=1e-15)


def test_rank_lists_are_stable_and_target_ranks_count_strictly_better():
    scores = torch.tensor([[0.5, 0.9, 0.5, 0.1], [1.0, 1.0, 1.0, 1.0]])
    assert rls.rank_lists(scores).tolist() == [[1, 0, 2, 3], [0, 1, 2, 3]]
    assert rls.rank_lists(-scores, descending=False).tolist() == [[1, 0, 2, 3], [0, 1, 2, 3]]
    assert rls.target_ranks(scores, torch.tensor([2, 3])).tolist() == [2, 1]
    ranks = np.array([1, 2, 20])
    assert rls.mrr(ranks) == pytest.approx((1 + 0.5 + 0.05) / 3)
    assert rls.recall_at_k(ranks, 10) == pytest.approx(2 / 3)


@pytest.mark.parametrize("n, swaps", [(5, None), (20, 3), (1001, None), (1001, 50), (5598, 200)])
def test_matches_rbo_package(n, swaps):
    import rbo  # a pinned test requirement: this cross-check never skips
    a, b = pairs(n, 3, n, swaps)
    m = rls.rls_metrics(a, b, p=0.9)
    for i in range(len(a)):
        ref = rbo.RankingSimilarity(a[i], b[i])
        assert abs(m["ao"][i] - ref.rbo()) <= 1e-12
        assert abs(m["rbo_min"][i] - ref.rbo(p=0.9)) <= 1e-12
        assert abs(m["rbo_ext"][i] - ref.rbo(p=0.9, ext=True)) <= 1e-12


def test_lengths_compare_only_the_leading_ranks_of_each_pair():
    """Lists whose tails are the same excluded items in the same order: metrics over the leading
    ``length`` ranks equal the metrics of the truncated lists, computed pair by pair."""
    rng = np.random.default_rng(3)
    n, lengths = 30, [30, 12, 20]
    a, b = [], []
    for length in lengths:
        head = rng.permutation(length)
        shuffled = head.copy()
        shuffled[: length // 2] = rng.permutation(shuffled[: length // 2])
        tail = np.arange(length, n)  # the shared excluded items
        a.append(np.r_[head, tail])
        b.append(np.r_[shuffled, tail])
    together = rls.rls_metrics(np.array(a), np.array(b), lengths=np.array(lengths))
    for row, length in enumerate(lengths):
        alone = rls.rls_metrics(np.array([a[row][:length]]), np.array([b[row][:length]]))
        for metric, values in together.items():
            assert values[row] == pytest.approx(alone[metric][0], abs=1e-12), (metric, length)
    full = rls.rls_metrics(np.array(a), np.array(b))
    assert full["ao"][1] > together["ao"][1]  # the shared tail would inflate AO


@pytest.mark.parametrize("descending", [True, False])
def test_rank_lists_by_composite_key_equal_a_stable_sort(descending):
    """Float32 scores take the composite-key path: the same order as a stable sort, ties included
    (many repeated values, -0.0 and +0.0, infinities, subnormals)."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.randint(-5, 6, (50, 300), generator=gen).float() / 4
    scores[:, :7] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1e-45, -1e-45, 3.4e38])
    scores[10] = torch.randn(300, generator=gen)
    keys = -scores.double() if descending else scores.double()
    expected = torch.sort(keys, dim=1, stable=True).indices
    assert torch.equal(rls.rank_lists(scores, descending=descending), expected)
    assert torch.equal(rls.rank_lists(scores.double(), descending=descending), expected)


def test_rank_lists_refuse_nan():
    with pytest.raises(ValueError, match="NaN"):
        rls.rank_lists(torch.tensor([[0.0, float("nan")]]))


def test_rank_lists_take_scores_that_track_gradients():
    scores = torch.tensor([[0.1, 0.3, 0.2]], requires_grad=True)
    assert rls.rank_lists(scores).tolist() == [[1, 2, 0]]
