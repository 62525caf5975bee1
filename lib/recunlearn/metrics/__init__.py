"""Metrics: ranking (NDCG, HR, Recall, MRR and the CURE4Rec code variants), fairness, evaluation."""

from .evaluate import evaluate_full_ranking
from .fairness import a_igf, active_user_mask
from .ranking import (METRICS, dcg_at_k, hit_ratio_at_k, hr_at_k_cure4rec, mrr_at_k, ndcg_at_k,
                      ndcg_at_k_untruncated, recall_at_k, top_k_hits)

__all__ = ["evaluate_full_ranking", "a_igf", "active_user_mask", "METRICS", "dcg_at_k", "hit_ratio_at_k",
           "hr_at_k_cure4rec", "mrr_at_k", "ndcg_at_k", "ndcg_at_k_untruncated", "recall_at_k", "top_k_hits"]
