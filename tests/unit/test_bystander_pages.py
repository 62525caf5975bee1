"""The pages of the book's own chapter (bystanders/q1-q4) built from made-up runs: tables, notices,
claims and checks, with no training."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from recunlearn.experiments.config import ConfigError
from recunlearn.report.pages import Page
from recunlearn.report.pages import bystanders_q1_unlearning_moves_bystanders as q1

Q1_PARAMS = dict(DATASETS=["ml-100k"], MODELS=["wmf"], METHODS=["retrain", "sisa"], SELECTIONS=["random"],
                 SEEDS=[0, 1, 2], MAX_EPOCHS=2, COMPUTE_MISSING=False)


def made_up_q1_runs(pending: int = 0) -> pd.DataFrame:
    """Seed-level bystander runs where unlearning moves lists more than its controls and SISA less than
    Retrain; the last ``pending`` configs are listed as pending instead."""
    from recunlearn.experiments.bystanders import BystanderGrid

    grid = BystanderGrid.from_params(Q1_PARAMS)
    configs = grid.runs()
    rows = []
    for config in configs[:len(configs) - pending]:
        base = {"retrain": 0.75, "sisa": 0.9}[config.method]
        shift = {"unlearn": 0.0, "reinit-only": 0.02, "random-rows": 0.03}[config.control]
        value = base + shift + 0.001 * config.seed
        rows.append({"dataset": config.dataset, "model": config.model, "method": config.method,
                     "control": config.control, "selection": config.selection, "seed": config.seed,
                     "ao": value, "rbo_min": value - 0.2, "jaccard": value - 0.4, "share_identical_top_k": 0.1,
                     "ndcg_untruncated_before": 0.3, "ndcg_untruncated_after": 0.29, "n_bystanders": 896,
                     "record": f"k{len(rows)}"})
    frame = pd.DataFrame(rows)
    frame.attrs["pending"] = [c.to_dict() for c in configs[len(configs) - pending:]] if pending else []
    return frame


def test_q1_page_from_made_up_runs_judges_its_hypotheses():
    page = q1.build(runs=made_up_q1_runs(), **Q1_PARAMS)
    assert isinstance(page, Page) and list(page.notices) == ["claims"]
    assert page.notice("claims").what == "Our hypotheses" and "1 of 4" in page.notice("claims").why
    claims = page.claims.set_index("id")["verdict"]
    assert claims["bystanders_unlearning_moves_lists"] == "reproduced"  # 6 pairs, all one way: p = 1/64
    assert claims["bystanders_who_matters"] == "inconclusive"  # Retrain only: 3 pairs, p = 1/8 at best
    assert claims["bystanders_core_moves_more"] == "pending"
    assert len(page.tables["table"]) == 5 and "seeds" in page.tables["table"]
    assert page.checks[0].splitlines()[0].split() == q1.CHECKED


def test_q1_page_with_pending_runs_says_so_and_how_to_compute_them():
    page = q1.build(runs=made_up_q1_runs(pending=3), **Q1_PARAMS)
    notice = page.notice("table")
    assert notice.partial and "3 of 15 runs" in notice.text() and "python -m recunlearn" in notice.command
    empty = q1.build(runs=made_up_q1_runs(pending=15), **Q1_PARAMS)
    assert empty.is_pending("table") and empty.is_pending("figure") and empty.checks == ["pending"]


def test_q1_page_refuses_a_wrong_parameter_before_any_compute():
    with pytest.raises(ConfigError, match="METHOD"):
        q1.build(runs=made_up_q1_runs(), **{**Q1_PARAMS, "METHOD": ["retrain"]})
