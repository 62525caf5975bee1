"""SRU's model-independent parts: partition, requests, deletion, HIT@K, aggregators."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recunlearn.data.sessions import Sessions
from recunlearn.unlearning.partition import balanced_kmeans
from recunlearn.unlearning.sru import (AttentiveAggregator, apply_requests, average_probabilities, draw_negatives,
                                       draw_requests, extra_deletion, hit_at_k, remaining_part,
                                       session_partition)


def blobs(n_per=40, k=4, dim=6, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=10, size=(k, dim))
    return np.concatenate([c + rng.normal(size=(n_per, dim)) for c in centres]), np.repeat(np.arange(k), n_per)


def test_session_partition_recovers_separated_blobs_within_capacity():
    points, truth = blobs()
    labels = session_partition(points, 4, seed=0)
    assert np.bincount(labels).max() <= len(points) // 4 + 6
    # every blob lands in one shard: the partition equals the truth up to renaming
    assert all(len(np.unique(labels[truth == b])) == 1 for b in range(4))


def test_scalar_centroids_reproduce_the_codes_degenerate_anchors():
    points, truth = blobs(seed=1)
    scalar = balanced_kmeans(points, 4, seed=0, n_iterations=10, centroid="scalar")
    mean = balanced_kmeans(points, 4, seed=0, n_iterations=10)
    purity = lambda labels: np.mean([np.bincount(labels[truth == b]).max() / 40 for b in range(4)])  # noqa: E731
    assert purity(mean) == 1.0 and purity(scalar) < 1.0


def test_requests_take_a_fifth_of_every_shard_from_the_latter_half():
    sessions = Sessions.from_lists([list(range(1, 2 + i % 9)) for i in range(100)])
    shards = np.arange(100) % 4
    requests = draw_requests(sessions, shards, seed=3)
    assert len(requests) == 4 * int(25 * 0.2)
    assert all((shards[requests.session] == s).sum() == 5 for s in range(4))
    lengths = sessions.lengths[requests.session]
    assert np.all(requests.position >= lengths // 2) and np.all(requests.position < lengths)
    assert np.array_equal(requests.item, [sessions[s][p] for s, p in zip(requests.session, requests.position)])
    again = draw_requests(sessions, shards, seed=3)
    assert np.array_equal(requests.session, again.session) and np.array_equal(requests.position, again.position)


def test_truncations():
    s = np.array([5, 6, 7, 8, 9])
    assert remaining_part(s, 3).tolist() == [5, 6, 7]
    assert remaining_part(s, 3, "suffix-code").tolist() == [5, 6]
    assert remaining_part(s, 3, "item").tolist() == [5, 6, 7, 9]
    assert remaining_part(s[:1], 0, "suffix-code").tolist() == []  # never wraps round to s[:-1]
    with pytest.raises(ValueError, match="truncation"):
        remaining_part(s, 1, "prefix")


def test_extra_deletions():
    remaining = np.array([1, 2, 3, 4])
    embeddings = np.zeros((6, 2))
    embeddings[5] = [1, 0]  # the unlearning item
    embeddings[1:5] = [[0, 1], [-1, 0.1], [1, 1], [0.2, 1]]
    assert extra_deletion(remaining, 5, 2, "ced", embeddings).tolist() == [1, 4]  # |cos| largest: items 2 and 3
    assert extra_deletion(remaining, 5, 2, "ned").tolist() == [1, 2]
    red = extra_deletion(remaining, 5, 2, "red", rng=np.random.default_rng(0))
    assert len(red) == 2 and set(red) <= {1, 2, 3, 4}
    assert extra_deletion(remaining, 5, 9, "ned").tolist() == [] and extra_deletion(remaining, 5, 0, "red").tolist() == [1, 2, 3, 4]


def test_apply_requests_changes_only_the_requested_sessions():
    sessions = Sessions.from_lists([[1, 2, 3, 4], [5, 6, 7], [8, 9]])
    requests = draw_requests(sessions, np.zeros(3, dtype=int), seed=0, fraction=0.4)  # one session
    after = apply_requests(sessions, requests, way="ned", n_extra=1)
    (k,) = requests.session
    for j in range(3):
        expected = sessions[j].tolist() if j != k else sessions[j][:requests.position[0]][:-1].tolist()
        assert after[j].tolist() == expected


def test_negatives_avoid_the_query_and_the_target_and_repeat_nothing():
    queries = [np.array([1, 2, 3]), np.array([], dtype=np.int64)]
    negatives = draw_negatives(queries, np.array([4, 5]), n_items=600, n_negatives=500, seed=1)
    assert negatives.shape == (2, 500)
    assert not np.isin(negatives[0], [1, 2, 3, 4]).any() and not np.isin(negatives[1], [5]).any()
    assert all(len(np.unique(row)) == 500 for row in negatives)
    assert negatives.min() >= 1 and negatives.max() <= 600


class FixedScores(torch.nn.Module):
    """A stand-in session model whose next-item scores are fixed per call."""

    def __init__(self, n_items, best=None):
        super().__init__()
        self.n_items, self.best = n_items, best
        self.anchor = torch.nn.Parameter(torch.zeros(1))

    @property
    def device(self):
        return self.anchor.device

    def scores(self, windows):
        scores = torch.zeros(len(windows), self.n_items + 1)
        if self.best is not None:
            scores[torch.arange(len(windows)), torch.as_tensor(self.best[:len(windows)])] = 1.0
        return scores


def test_hit_at_k_known_answers():
    n_items = 600
    queries = [np.array([1, 2]), np.array([3])]
    targets = np.array([10, 11])
    assert hit_at_k(FixedScores(n_items, targets), queries, targets, n_items, maxlen=3)["hit@1"] == 1.0
    flat = hit_at_k(FixedScores(n_items), queries, targets, n_items, maxlen=3)
    assert flat["hit@20"] == 0.0  # a tie counts against the unlearning item
    assert hit_at_k(FixedScores(n_items), [], np.array([]), n_items, maxlen=3)["hit@1"] is None


def test_aggregators():
    torch.manual_seed(0)
    hidden = torch.randn(5, 3, 8)
    centroids = torch.randn(3, 8)
    sru = AttentiveAggregator(3, 8, 20, centroids, torch.Generator().manual_seed(1))
    receraser = AttentiveAggregator(3, 8, 20, None, torch.Generator().manual_seed(1))
    assert sru(hidden).shape == (5, 21)
    assert torch.allclose(sru.weights(hidden).sum(1), torch.ones(5))
    for name, p in sru.named_parameters():  # same initial weights; only the attention input differs
        assert torch.equal(p, dict(receraser.named_parameters())[name])
    assert not torch.allclose(sru.weights(hidden), receraser.weights(hidden))
    probs = average_probabilities(torch.randn(5, 3, 21))
    assert torch.allclose(probs.sum(1), torch.ones(5))


def test_a_single_shard_aggregator_reduces_to_its_shard():
    torch.manual_seed(0)
    hidden = torch.randn(4, 1, 8)
    for centroids in (None, torch.randn(1, 8)):
        one = AttentiveAggregator(1, 8, 20, centroids, torch.Generator().manual_seed(2))
        assert torch.equal(one.weights(hidden), torch.ones(4, 1))  # softmax over one shard
        mapped = hidden[:, 0] @ one.weight[0] + one.bias[0]
        assert torch.allclose(one(hidden), one.output(mapped), atol=1e-6)
    logits = torch.randn(4, 1, 21)
    assert torch.allclose(average_probabilities(logits), torch.softmax(logits[:, 0], dim=-1))
