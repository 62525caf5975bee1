"""The SRU page's claims and table on fixed runs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recunlearn.report.sru import extra_deletion_points, page_grid_class, sru_claims, sru_table


def fake_runs(seeds=range(6)):
    rows, rng = [], np.random.default_rng(0)
    created = pd.Timestamp("2026-12-01", tz="UTC")
    for seed in seeds:
        for method, ndcg, seconds in (("retrain", 0.10, 100.0), ("sisa", 0.07, 10.0), ("receraser", 0.08, 20.0),
                                      ("sru", 0.095, 20.0)):
            rows.append(dict(dataset="games", model="gru4rec", method=method, extra_deletion="none", n_extra=0,
                             seed=seed, **{"ndcg@10": ndcg + 0.001 * rng.random(), "hit@10": 0.2,
                                           "hit_before_retraining@10": 0.3 + 0.01 * rng.random(),
                                           "unlearn_seconds": seconds + rng.random()}, created=created))
        for way in ("ced", "ned"):
            for n in (1, 2, 4):
                rows.append(dict(dataset="games", model="gru4rec", method="sru", extra_deletion=way, n_extra=n,
                                 seed=seed, **{"ndcg@10": 0.09, "hit@10": 0.2 - 0.04 * n + 0.001 * rng.random(),
                                               "hit_before_retraining@10": 0.3, "unlearn_seconds": 20.0},
                                 created=created))
    return pd.DataFrame(rows)


def test_claims_hold_on_runs_built_to_satisfy_them():
    claims = sru_claims(fake_runs()).set_index("id")["verdict"]
    assert all(v.startswith("reproduced") for v in claims), claims.to_dict()


def test_without_runs_every_claim_is_pending_and_nothing_is_drawn():
    claims = sru_claims(pd.DataFrame())
    assert set(claims["verdict"]) == {"pending"}
    assert sru_table(pd.DataFrame()).empty


def test_extra_deletion_curves_start_at_the_run_without_extra_deletion():
    points = extra_deletion_points(fake_runs(seeds=[0]))
    assert sorted(points[points["extra_deletion"] == "ced"]["n_extra"]) == [0, 1, 2, 4]


def test_the_page_grid_lists_main_and_extra_runs_once():
    grid = page_grid_class().from_params({"METHODS": ["retrain", "sru"], "EXTRA_DELETIONS": ["none", "ned"],
                                          "N_EXTRAS": [0, 2], "SEEDS": [0]})
    runs = grid.runs()
    kinds = sorted((c.method, c.extra_deletion, c.n_extra) for c in runs)
    assert kinds == [("retrain", "none", 0), ("sru", "ned", 2), ("sru", "none", 0)]
