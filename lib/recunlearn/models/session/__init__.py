"""Session-based next-item models of the SRU chapter (GRU4Rec, SASRec, BERT4Rec) sharing one contract.

``model = SESSION_MODELS[name](n_items, maxlen, generator=..., **hyper)`` (or
:func:`make_session_model`) is an ``nn.Module`` with ``hidden(windows) -> (B, d)``,
``scores(windows) -> (B, n_items + 1)``, ``item_embeddings() -> (n_items + 1, e)`` and
``training_loss(windows, targets, generator)`` (:mod:`.base`); ``implementation="fast"`` (default)
or ``"reference"`` computes the same model two ways (:mod:`.base`). :func:`train_session_model` trains
any of them on a :class:`~recunlearn.data.sessions.SessionData` (or a shard of its training
sessions); :func:`evaluate_session_model` gives Recall@K / NDCG@K over prefix -> next-item pairs;
:func:`session_hidden_states` gives the final hidden state of whole sessions (for the partition),
:func:`prefix_hidden_centroid` a shard's mean hidden state (for the aggregator) and
:func:`candidate_ranks` the rank of an item among sampled candidates (for HIT@K).

A name not in the registry raises :class:`UnknownModelError`, both a ``ValueError`` and a
``KeyError``; a wrong hyper-parameter name or value raises a ``ValueError`` naming it.
"""

from __future__ import annotations

from .base import IMPLEMENTATIONS, SessionModel, SessionModelError, UnknownModelError
from .bert4rec import BERT4Rec, cloze_mask
from .gru4rec import GRU4Rec
from .sasrec import SASRec
from .training import (EVAL_BATCH, candidate_ranks, evaluate_session_model, hidden_states, last_windows,
                       metrics_from_ranks, ndcg_at_k_from_ranks, pair_ranks, prefix_hidden_centroid,
                       probe_session_model,
                       recall_at_k_from_ranks, session_hidden_states, target_ranks, train_session_model)


class _Registry(dict):
    def __missing__(self, name):
        raise UnknownModelError(f"unknown session model {name!r}; allowed: {', '.join(self)}")


SESSION_MODELS = _Registry(gru4rec=GRU4Rec, sasrec=SASRec, bert4rec=BERT4Rec)
"""Session model classes by the name used in configs (the SRU code's ``--model`` values)."""


def make_session_model(name: str, n_items: int, maxlen: int, generator=None, implementation: str = "fast",
                       **hyper) -> SessionModel:
    """``SESSION_MODELS[name](n_items, maxlen, generator=generator, implementation=..., **hyper)``."""
    return SESSION_MODELS[name](n_items, maxlen, generator=generator, implementation=implementation, **hyper)


__all__ = ["SESSION_MODELS", "IMPLEMENTATIONS", "make_session_model", "SessionModel", "SessionModelError",
           "UnknownModelError",
           "GRU4Rec", "SASRec", "BERT4Rec", "cloze_mask", "EVAL_BATCH", "train_session_model",
           "evaluate_session_model", "pair_ranks", "target_ranks", "metrics_from_ranks", "recall_at_k_from_ranks",
           "ndcg_at_k_from_ranks", "hidden_states", "session_hidden_states", "last_windows", "prefix_hidden_centroid",
           "candidate_ranks", "probe_session_model"]
