"""Synthetic session data and a tiny SRU config shared by the SRU experiment and resume tests."""

from __future__ import annotations

import numpy as np

from recunlearn.data.sessions import Sessions, SessionData
from recunlearn.experiments import sru as exp

CYCLE = 40
TINY = dict(n_shards=2, max_epochs=2, aggregator_epochs=1)


def synthetic_data(n_sessions=150, n_items=560, maxlen=5) -> SessionData:
    """Walks round a cycle of 40 items (so a deleted item is inferable from what precedes it); the
    catalogue is larger so that HIT@K can draw 500 negatives."""
    rng = np.random.default_rng(0)
    sequences = [[(start + j) % CYCLE + 1 for j in range(length)]
                 for start, length in zip(rng.integers(0, CYCLE, n_sessions), rng.integers(2, 10, n_sessions))]
    return SessionData.from_sessions("games", Sessions.from_lists(sequences), n_items, maxlen, seed=0,
                                     label="synthetic", description="synthetic cycle walks")


def config(**changes) -> exp.SruConfig:
    """A two-shard SRU config of two epochs, with ``changes``."""
    return exp.SruConfig(**{**TINY, **changes})
