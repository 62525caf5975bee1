"""Unlearning methods: exact (Retrain, SISA, RecEraser, UltraRE) via shard partitions and one
pipeline, and approximate (SCIF)."""

from .exact import ExactUnlearningResult, unlearn_exactly
from .methods import EXACT_METHODS
from .partition import balanced_kmeans, ot_partition, random_partition

__all__ = ["ExactUnlearningResult", "unlearn_exactly", "EXACT_METHODS", "balanced_kmeans", "ot_partition",
           "random_partition"]
