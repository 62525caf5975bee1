"""The bystander page (the book's own chapter, question 1): tables, figure and claims from the runs
of :mod:`recunlearn.experiments.bystanders`.

The claims are this study's hypotheses, not a paper's; they are judged with the same tests and
vocabulary as the papers' claims (``reproduced`` reads "holds in our runs"):

- ``bystanders_unlearning_moves_lists``: unlearning moves bystanders' top 10 beyond what retraining
  from a fresh initialisation alone does (Jaccard@10 of ``unlearn`` below ``reinit-only``);
- ``bystanders_who_matters``: removing the unlearning set moves Retrain's bystanders more than
  removing as many random rows (Jaccard@10 of ``unlearn`` below ``random-rows``);
- ``bystanders_shards_shelter``: SISA, RecEraser and UltraRE move bystanders' lists less than Retrain
  (AO above Retrain's), because the users of unaffected shards keep their exact lists;
- ``bystanders_core_moves_more`` (question 2, who is unlearned): unlearning the most active (core)
  users moves bystanders' top 10 more than unlearning random users, and random users more than the
  least active (edge) ones.
"""

from __future__ import annotations

import pandas as pd

from .claims import claims_frame, ordering_claim
from .names import display_frame, sort_paper_order

METRICS = ["ao", "rbo_min", "jaccard", "share_identical_top_k", "ndcg_untruncated_before", "ndcg_untruncated_after"]
CELLS = ["dataset", "model", "selection"]


def bystander_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds per dataset, model, method and control, display names, in the papers' order."""
    if runs.empty:
        return pd.DataFrame()
    keys = ["dataset", "model", "selection", "method", "control"]
    grouped = runs.groupby(keys)[METRICS]
    table = grouped.mean().round(4).astype(str) + " ± " + grouped.std().fillna(0).round(4).astype(str)
    table.insert(0, "seeds", grouped.size())
    return display_frame(sort_paper_order(table.reset_index(), keys), index=keys)


def bystander_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The hypotheses of the module docstring, each tested on seed-paired runs."""
    unlearn = runs[runs["control"] == "unlearn"] if len(runs) else runs
    retrain = runs[runs["method"] == "retrain"] if len(runs) else runs
    return claims_frame([
        ordering_claim("bystanders_unlearning_moves_lists",
                       "Unlearning moves bystanders' top 10 more than re-initialising and retraining the same "
                       "shards on unchanged data", runs, "control", [("unlearn", "reinit-only")], "jaccard",
                       CELLS + ["method"], higher=False),
        ordering_claim("bystanders_who_matters",
                       "Retrain moves bystanders' top 10 more when the unlearning set is removed than when as many "
                       "random rows are", retrain, "control", [("unlearn", "random-rows")], "jaccard", CELLS,
                       higher=False),
        ordering_claim("bystanders_shards_shelter",
                       "SISA, RecEraser and UltraRE move bystanders' rank lists less than Retrain", unlearn, "method",
                       [("sisa", "retrain"), ("receraser", "retrain"), ("ultrare", "retrain")], "ao", CELLS),
        ordering_claim("bystanders_core_moves_more",
                       "Unlearning core users moves bystanders' top 10 more than unlearning random users, and random "
                       "users more than edge users", unlearn, "selection", [("core", "random"), ("random", "edge")],
                       "jaccard", ["dataset", "model", "method"], higher=False),
    ])
