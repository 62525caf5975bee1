"""Recommenders sharing one contract (see :mod:`.base`), the registry ``MODELS`` and the trainer."""

from .base import Recommender, TrainingData
from .lightgcn import LightGCN, normalized_adjacency, propagate
from .mf import BPR, WMF
from .trainer import TrainingResult, evaluate_model, frozen_scorer, train_until_converged

MODELS = {"wmf": WMF, "bpr": BPR, "lightgcn": LightGCN}
"""Model classes by the name used in configs."""

__all__ = ["MODELS", "Recommender", "TrainingData", "LightGCN", "WMF", "BPR", "normalized_adjacency", "propagate",
           "TrainingResult", "evaluate_model", "frozen_scorer", "train_until_converged"]
