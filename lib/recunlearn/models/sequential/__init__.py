"""Sequential next-item recommenders for the CASPER chapter, sharing one small contract:

``model = SEQUENTIAL_MODELS[name](n_items, generator=..., **hyper)``; ``model.fit(stream)`` trains on
the stream's training rows (in their chronological order); ``model.test_scores(stream)`` yields
``(row, scores)`` chunks: the source rows of the test interactions and a (b, n_items) score matrix,
higher = more likely. The runner copies the untrained model, so a perturbed run starts from the same
initial weights.
"""

from .lstm import LSTMRecommender, user_windows
from .jodie import JODIERecommender
from .latentcross import LatentCrossRecommender
from .tisasrec import TiSASRecRecommender

SEQUENTIAL_MODELS = {"lstm": LSTMRecommender, "tisasrec": TiSASRecRecommender, "jodie": JODIERecommender,
                     "latentcross": LatentCrossRecommender}
"""Implemented models by config name."""

__all__ = ["SEQUENTIAL_MODELS", "LSTMRecommender", "TiSASRecRecommender", "LatentCrossRecommender", "JODIERecommender",
           "user_windows"]
