"""The CURE4Rec SCIF runner: Learn, Retrain and SCIF with utility, MIO and time in one record."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from recunlearn.experiments import RUNNERS, ConfigError, record_key, run_or_load
from recunlearn.experiments.cure4rec_exact import UnlearnConfig
from recunlearn.experiments.cure4rec_scif import SCIF_METHODS, ScifConfig, ScifGrid, run_scif_grid
from recunlearn.report.cure4rec_scif import scif_claims

ROLES = ("released_ratings", "released_train", "released_test")
TINY = dict(max_epochs=2, mio_seeds=1, mio_epochs=5)


def test_registered_and_keys_of_exact_configs_unchanged():
    assert "cure4rec-scif" in RUNNERS and "cure4rec-exact-mio" in RUNNERS
    assert ScifConfig.experiment == "cure4rec-scif"
    assert ScifConfig().mio_seeds == 5 and ScifConfig().mio_epochs == 100
    assert "mio" not in UnlearnConfig.parameter_names()  # exact configs keep their record keys


def test_grid_expands_and_rejects_unknown_parameters():
    grid = ScifGrid.from_params({"MODELS": ["wmf", "bpr"], "SELECTIONS": ["core", "edge"], "SEEDS": [0, 1],
                                 "MAX_EPOCHS": 3})
    runs = grid.runs()
    assert len(runs) == 8 and {r.max_epochs for r in runs} == {3}
    with pytest.raises(ConfigError):
        ScifGrid.from_params({"MODELS": ["wmf"], "METHODS": ["scif"]})


def test_tiny_end_to_end_run_is_complete_and_deterministic(need_local):
    need_local("ml-100k", *ROLES)
    config = ScifConfig(**TINY)
    record = run_or_load(config)
    assert record["key"] == record_key(config)
    for method in SCIF_METHODS:
        metrics = record["metrics"][method]
        for name in ("ndcg_untruncated", "hr_cure4rec", "a_igf", "mio_accuracy", "mio_accuracy_std", "mio_auc",
                     "n_eval_users"):
            assert name in metrics and np.isfinite(metrics[name]), (method, name)
        assert 0.0 <= metrics["mio_accuracy"] <= 1.0
    for name in ("scif_seconds", "scif_gradient_seconds", "scif_cg_seconds", "scif_update_seconds",
                 "retrain_seconds", "learn_train_seconds"):
        assert record["timings"][name] >= 0.0
    scif = record["scif"]
    assert scif["cg_iterations"] >= 1 and scif["damping"] >= scif["initial_damping"] > 0
    assert scif["damping_rule"] == "relative" and scif["damping_probes"] == config.damping_probes
    assert scif["initial_damping"] == pytest.approx(config.damping_fraction * scif["mean_eigenvalue"], rel=1e-12)
    assert record["unlearning"]["n_deleted"] == int(943 * 5 / 100)
    assert record["unlearning"]["deleted_rows_at_init"] is True
    # every method is evaluated on the same remaining users
    assert len({record["metrics"][m]["n_eval_users"] for m in SCIF_METHODS}) == 1

    again = run_or_load(config, recompute=True)
    for method in SCIF_METHODS:
        for name, value in record["metrics"][method].items():
            assert again["metrics"][method][name] == pytest.approx(value, abs=1e-9), (method, name)
    assert again["scif"]["update_norm"] == pytest.approx(record["scif"]["update_norm"])

    runs = run_scif_grid(ScifGrid(models=("wmf",), selections=("random",), seeds=(0,), max_epochs=2, mio_seeds=1,
                                    mio_epochs=5))
    assert set(runs["method"]) == set(SCIF_METHODS) and len(runs) == 3


def test_scif_runs_retrain_is_the_exact_pipelines_retrain(need_local, monkeypatch):
    """One Retrain definition: the SCIF runner's Retrain model is bit-identical to the exact
    pipeline's Retrain of the same training settings (both stop right after Retrain)."""
    need_local("ml-100k", *ROLES)
    from recunlearn.experiments import cure4rec_exact
    from recunlearn.experiments.cure4rec_exact import run_exact_unlearning
    from recunlearn.experiments.cure4rec_scif import run_scif

    class Stop(Exception):
        pass

    models = []
    real = cure4rec_exact.unlearn_exactly

    def capture(*args, **kwargs):
        models.append(real(*args, **kwargs).model)
        raise Stop

    monkeypatch.setattr(cure4rec_exact, "unlearn_exactly", capture)
    for run, config in ((run_scif, ScifConfig(model="wmf", **TINY)),
                        (run_exact_unlearning, UnlearnConfig(model="wmf", method="retrain", max_epochs=2))):
        with pytest.raises(Stop):
            run(config)
    scif_retrain, exact_retrain = (dict(m.named_parameters()) for m in models)
    assert scif_retrain.keys() == exact_retrain.keys()
    for name, value in scif_retrain.items():
        assert torch.equal(value, exact_retrain[name]), name


def test_damping_sweep_moves_scif_only(need_local):
    need_local("ml-100k", *ROLES)
    from recunlearn.experiments.cure4rec_scif import run_scif_damping_sweep

    grid = ScifGrid(models=("wmf",), selections=("random",), seeds=(0,), max_epochs=2, mio_seeds=1, mio_epochs=5)
    sweep = run_scif_damping_sweep(grid, fractions=(0.01, 1.0), absolute=(1e-3,))
    assert list(sweep["damping_rule"]) == ["relative", "relative", "absolute"]
    relative = sweep[sweep["damping_rule"] == "relative"]
    assert relative["mean_eigenvalue"].nunique() == 1 and relative["mean_eigenvalue"].iloc[0] > 0
    assert relative["initial_damping"].tolist() == pytest.approx([0.01 * relative["mean_eigenvalue"].iloc[0],
                                                                  relative["mean_eigenvalue"].iloc[0]])
    assert sweep["initial_damping"].iloc[2] == 1e-3 and np.isnan(sweep["mean_eigenvalue"].iloc[2])
    for name in ("mio_accuracy", "ndcg_untruncated", "update_norm"):
        assert sweep[name].notna().all()
    for column in ("mio_accuracy_retrain", "ndcg_untruncated_learn"):  # the damping moves SCIF only
        assert sweep[column].nunique() == 1
    # the default fraction's record is the grid's own record
    default = run_scif_grid(grid)
    assert default.loc[default["method"] == "scif", "record"].iloc[0] == relative["record"].iloc[0]


def test_claims_on_a_hand_made_frame():
    rows = []
    rng = np.random.default_rng(0)
    for seed in range(6):
        for sel, (learn, retrain, scif, drop) in {"core": (0.72, 0.54, 0.57, 0.08), "random": (0.72, 0.54, 0.56, 0.03),
                                                   "edge": (0.72, 0.54, 0.60, 0.02)}.items():
            for method, mio, ndcg in (("learn", learn, 0.32), ("retrain", retrain, 0.31), ("scif", scif, 0.32 - drop)):
                rows.append({"dataset": "ml-100k", "model": "wmf", "method": method, "selection": sel, "seed": seed,
                             "mio_accuracy": mio + rng.normal(scale=0.002),
                             "ndcg_untruncated": ndcg + rng.normal(scale=0.0005)})
    claims = scif_claims(pd.DataFrame(rows)).set_index("id")
    assert list(claims["verdict"][:4]) == ["reproduced"] * 4
    assert claims.loc["scif_slower_on_core", "verdict"] == "pending"          # no times in this frame
    one_seed = scif_claims(pd.DataFrame(rows)[lambda r: r["seed"] == 0]).set_index("id")
    for id in ("scif_mio_gap_about_4pc", "scif_worst_on_edge", "scif_most_utility_loss_on_core"):
        assert one_seed.loc[id, "verdict"] == "inconclusive"                # one run per comparison: no test
    pooled = one_seed.loc["mio_well_below_learn"]                            # 3 selections x 1 seed: 3 pairs
    assert pooled["verdict"] == "reproduced" and pooled["test"].startswith("one-sided paired t-test")


def test_exact_mio_runs_on_routed_shard_models(need_local):
    need_local("ml-100k", *ROLES)
    from recunlearn.experiments.cure4rec_scif import ExactMioConfig

    record = run_or_load(ExactMioConfig(method="sisa", n_shards=3, **TINY))
    assert record["unlearning"]["n_shards"] == 3 and record["unlearning"]["n_deleted"] == 47
    for name in ("mio_accuracy", "mio_auc", "mio_train_accuracy"):
        assert 0.0 <= record["metrics"][name] <= 1.0


def test_exact_mio_table_puts_scif_runs_beside_the_exact_methods():
    from recunlearn.report.cure4rec_scif import exact_mio_table

    base = {"dataset": "ml-100k", "model": "wmf", "selection": "random"}
    scif_runs = pd.DataFrame([{**base, "method": m, "seed": s, "mio_accuracy": v}
                              for m, v in (("learn", 0.7), ("retrain", 0.5), ("scif", 0.6)) for s in (0, 1)])
    exact = pd.DataFrame([{**base, "method": m, "seed": s, "mio_accuracy": 0.5 + 0.01 * s}
                          for m in ("retrain", "sisa") for s in (0, 1)])
    table = exact_mio_table(exact, scif_runs)
    assert list(table.columns) == ["learn", "retrain", "scif", "EU retrain", "EU sisa"]
    assert table.loc[("ml-100k", "wmf", "random"), "scif"] == "0.600 ± 0.000"
    assert table.loc[("ml-100k", "wmf", "random"), "EU sisa"] == "0.505 ± 0.007"


def test_oracle_scores_equals_mio_accuracy_on_its_own_samples():
    from recunlearn.metrics.membership import as_csr, mio_accuracy, mio_samples, oracle_scores

    rng = np.random.default_rng(0)
    user_emb, item_emb = rng.normal(size=(40, 4)), rng.normal(size=(30, 4))
    member = as_csr({u: rng.choice(30, 6, replace=False) for u in range(40)}, 40, 30)
    non_member = as_csr({u: rng.choice(30, 3, replace=False) for u in range(40)}, 40, 30)
    non_member = as_csr(non_member - non_member.multiply(member), 40, 30)
    train, evaluate = np.arange(30), np.arange(30, 40)
    direct = mio_accuracy(user_emb, item_emb, member, non_member, train, evaluate, seed=3, epochs=3)
    sample_rng = np.random.default_rng(3)
    x_train, y_train, _ = mio_samples(user_emb, item_emb, member, non_member, train, sample_rng)
    x_eval, y_eval, _ = mio_samples(user_emb, item_emb, member, non_member, evaluate, sample_rng)
    assert oracle_scores(x_train, y_train, x_eval, y_eval, seed=3, epochs=3) == direct


def test_overview_uses_measured_exact_mio_and_normalises_per_model():
    from recunlearn.report.cure4rec_scif import overview_aspects

    base = {"dataset": "ml-100k", "model": "wmf", "selection": "random", "seed": 0}
    scif_runs = pd.DataFrame([{**base, "method": "retrain", "mio_accuracy": 0.50, "ndcg_untruncated": 0.30,
                               "a_igf": 0.05, "unlearn_seconds": 10.0},
                              {**base, "method": "scif", "mio_accuracy": 0.70, "ndcg_untruncated": 0.31,
                               "a_igf": 0.06, "unlearn_seconds": 1.0}])
    exact_runs = pd.DataFrame([{**base, "method": m, "ndcg_untruncated": n, "a_igf": 0.05 + d, "unlearn_seconds": t,
                                "created": pd.Timestamp("2026-01-01", tz="UTC")}
                               for m, n, d, t in (("retrain", 0.30, 0.0, 10.0), ("sisa", 0.25, 0.02, 2.0))])
    exact_mio = pd.DataFrame([{**base, "method": "sisa", "mio_accuracy": 0.52}])
    aspects = overview_aspects(scif_runs, exact_runs, exact_mio=exact_mio).set_index("method")
    assert aspects.loc["sisa", "mio_accuracy"] == 0.52          # measured
    assert aspects.loc["retrain", "mio_accuracy"] == 0.50       # not measured here: the SCIF runs' Retrain
    assert aspects.loc["scif", "completeness"] == pytest.approx(0.6)
    assert aspects.loc["retrain", "completeness_norm"] == 1.0 and aspects.loc["scif", "completeness_norm"] == 0.0
    assert aspects.loc["scif", "efficiency_norm"] == 1.0 and aspects.loc["retrain", "fairness"] == 0.0
    assert aspects["efficiency"].to_dict() == {"retrain": 1.0, "scif": 10.0, "sisa": 5.0}  # speed-ups over Retrain


def test_texts_of_scif_speed_ups_and_of_where_exact_completeness_is_measured():
    """The overview and Table 3 say in numbers what they once said in words ("SCIF is slower than
    retraining", "measured on ML-100K"), so a new record cannot leave the sentence wrong."""
    from recunlearn.report.cure4rec_scif import exact_mio_sources, scif_slower_cells, scif_speedup_text
    from recunlearn.unlearning import EXACT_METHODS

    scif = pd.DataFrame([{"dataset": d, "model": "wmf", "selection": s, "seed": seed, "speedup": v}
                         for d, s, seed, v in (("ml-1m", "core", 0, 2.0), ("ml-1m", "core", 1, 0.2),   # mean 1.1
                                               ("ml-100k", "core", 0, 0.5), ("ml-100k", "edge", 0, 0.9))])
    assert scif_slower_cells(scif) == "2 of 3 cells of dataset, backbone and unlearning set"
    assert scif_slower_cells(scif.iloc[:0]) == "no cell yet (no SCIF run)"

    aspects = pd.DataFrame([{"dataset": d, "model": m, "method": meth, "efficiency": e}
                            for d, m, meth, e in (("ml-1m", "wmf", "scif", 2.0), ("ml-1m", "bpr", "scif", 3.0),
                                                  ("ml-100k", "wmf", "scif", 0.5), ("ml-100k", "wmf", "sisa", 9.0),
                                                  ("ml-100k", "bpr", "scif", 0.6))])
    assert scif_speedup_text(aspects) == "ML-100K 0.55, ML-1M 2.5"  # paper order, mean over models
    assert scif_speedup_text(aspects.iloc[:0]) == "none yet"

    full = [{"dataset": "ml-100k", "model": m, "method": meth, "selection": "random"}
            for m in ("wmf", "bpr") for meth in EXACT_METHODS]
    part = [{"dataset": "ml-1m", "model": "wmf", "method": "retrain", "selection": "random"}] + [
        {"dataset": "ml-1m", "model": "bpr", "method": meth, "selection": "core"} for meth in EXACT_METHODS]
    sources = exact_mio_sources(aspects, pd.DataFrame(full + part))
    assert sources == {"measured": "ML-100K", "assumed": "ML-1M"}  # ML-1M: one method, or another selection
    sources = exact_mio_sources(aspects, pd.DataFrame(full[:4]))
    assert sources == {"measured": "ML-100K (WMF)", "assumed": "ML-100K (BPR); ML-1M"}
    assert exact_mio_sources(aspects, pd.DataFrame()) == {"measured": "none", "assumed": "ML-100K; ML-1M"}


def test_speedups_divide_by_the_retrain_timed_beside_each_run():
    from recunlearn.report.cure4rec_scif import exact_speedups, scif_speedups

    base = {"dataset": "ml-100k", "model": "bpr", "selection": "random", "ratio": 5.0}
    at = lambda minutes: pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(minutes=minutes)  # noqa: E731
    exact = pd.DataFrame([{**base, "method": m, "seed": s, "unlearn_seconds": t, "created": at(c)}
                          for m, s, t, c in (("retrain", 0, 12.0, 0), ("sisa", 0, 3.0, 10), ("ultrare", 0, 4.0, 31),
                                             ("retrain", 1, 30.0, 500), ("sisa", 1, 6.0, 490), ("receraser", 2, 1.0, 0))])
    speedups = exact_speedups(exact).tolist()
    assert speedups[:2] == [1.0, 4.0] and np.isnan(speedups[2])        # UltraRE: 31 minutes from its Retrain
    assert speedups[3:5] == [1.0, 5.0] and np.isnan(speedups[5])       # seed 2: no Retrain at all
    assert exact_speedups(exact.drop(columns="created")).isna().all()  # unknown record times never pair
    on_gpu = exact.assign(clock=["cpu", "cuda: NVIDIA H200", "cpu", "cpu", "cpu", "cpu"])
    assert np.isnan(exact_speedups(on_gpu).tolist()[1])                # a GPU time over a CPU Retrain: never
    # SCIF: the Retrain of the same record (its own process), whatever the other records' times
    scif = pd.DataFrame([{**base, "seed": 0, "method": m, "unlearn_seconds": t, "record": r}
                         for m, t, r in (("learn", np.nan, "a"), ("retrain", 2.0, "a"), ("scif", 8.0, "a"),
                                         ("retrain", 4.0, "b"), ("scif", 1.0, "b"))])
    assert scif_speedups(scif).tolist()[1:] == [1.0, 0.25, 1.0, 4.0] and np.isnan(scif_speedups(scif).iloc[0])


def test_overview_claims_compare_scif_with_every_eu_method():
    from recunlearn.report.cure4rec_scif import ASPECTS, overview_claims

    rows = []
    for method, (c, u, e, f) in {"scif": (0.2, 0.9, 1.0, 0.5), "sisa": (1.0, 0.5, 0.4, 0.6),
                                 "receraser": (0.9, 0.6, 0.2, 0.1), "ultrare": (0.95, 0.7, 0.3, 0.2)}.items():
        norm = dict(zip([f"{a}_norm" for a in ASPECTS], (c, u, e, f)))
        for seed in range(6):
            raw = {a: v + 0.001 * seed for a, v in zip(ASPECTS, (c, u, e, f))}
            rows.append({"dataset": "ml-100k", "model": "wmf", "method": method, "seed": seed, **raw, **norm})
    claims = overview_claims(pd.DataFrame(rows))
    assert list(claims["id"]) == ["scif_beats_eu_efficiency", "scif_beats_eu_fairness", "scif_beats_eu_utility",
                                  "eu_more_complete_than_scif"]
    assert list(claims["verdict"]) == ["reproduced", "not reproduced", "reproduced", "reproduced"]
    frame = pd.DataFrame(rows)
    frame.loc[(frame["method"] == "sisa") & (frame["seed"] < 2), "efficiency"] = np.nan  # no Retrain timed beside
    untimed = overview_claims(frame).set_index("id").loc["scif_beats_eu_efficiency"]
    assert "SCIF > SISA: n = 4 pairs" in untimed["evidence"]
    assert "2 EU runs without a Retrain recorded within 30 minutes, left out" in untimed["evidence"]
    slower = overview_claims(frame.assign(efficiency=np.where(frame["method"] == "scif", 0.1, frame["efficiency"])))
    assert slower["verdict"].iloc[0] == "not reproduced"                     # a speed-up below every EU method's


def test_overview_claims_count_the_runs_still_waiting_on_the_random_set():
    """Figures 2/5: a (dataset, model, method, seed) whose SCIF or exact run has no record yet is one pending
    row of the aspects (SCIF's Learn row and the other unlearning sets' runs are not), counted by each claim
    whose methods it has."""
    from recunlearn.report.cure4rec_scif import ASPECTS, overview_claims, with_pending_aspects

    rows = [{"dataset": "ml-100k", "model": "wmf", "method": method, "seed": seed,
             **{a: v + 0.001 * seed for a, v in zip(ASPECTS, values)}}
            for method, values in {"scif": (0.2, 0.9, 1.0, 0.5), "sisa": (1.0, 0.5, 0.4, 0.6),
                                   "receraser": (0.9, 0.6, 0.2, 0.1), "ultrare": (0.95, 0.7, 0.3, 0.2)}.items()
            for seed in range(6)]
    scif_runs = pd.DataFrame(columns=["dataset", "model", "method", "selection", "seed", "record"])
    scif_runs.attrs["pending"] = [{"dataset": "adm", "model": "wmf", "selection": sel, "seed": seed}
                                  for sel in ("random", "core") for seed in range(2)]
    exact = pd.DataFrame(columns=["dataset", "model", "method", "selection", "seed", "record"])
    exact.attrs["pending"] = [{"dataset": "adm", "model": "wmf", "method": method, "selection": "random",
                               "seed": seed} for method in ("retrain", "sisa", "receraser", "ultrare")
                              for seed in range(2)]
    aspects = with_pending_aspects(pd.DataFrame(rows), scif_runs, exact)
    assert (aspects["status"] == "pending").sum() == 2 * 6   # learn, retrain, scif and the 3 EU methods, 2 seeds
    claims = overview_claims(aspects).set_index("id")
    assert list(claims["verdict"]) == ["partly reproduced", "not reproduced", "partly reproduced",
                                       "partly reproduced"]
    assert all(text.endswith("; 8 of 32 runs pending") for text in claims["holds in"])


def test_damping_sweep_grid_and_table():
    from recunlearn.experiments.cure4rec_scif import ScifGrid
    from recunlearn.report.cure4rec_scif import damping_sweep_table

    grid = ScifGrid(models=("wmf", "bpr"), selections=("core", "random"), seeds=(2, 0), damping_sweep_models=("bpr",))
    sweep_grid = grid.damping_sweep_grid()
    assert (sweep_grid.models, sweep_grid.selections, sweep_grid.seeds) == (("bpr",), ("random",), (2,))
    assert sweep_grid.damping_sweep_grid() is None and ScifGrid().damping_sweep_grid() is None
    sweep = pd.DataFrame({
        "model": ["bpr"] * 3, "damping_rule": ["relative", "absolute", "relative"],
        "damping_fraction": [0.1, np.nan, 0.01], "initial_damping": [1.3e-5, 1e-3, 1.3e-6],
        "damping": [1.3e-5, 1e-3, 1.3e-6], "update_norm": [1.0, 0.5, 2.0], "mio_accuracy": [0.6, 0.7, 0.55],
        "mio_accuracy_learn": [0.7] * 3, "mio_accuracy_retrain": [0.5] * 3, "ndcg_untruncated": [0.3] * 3,
        "ndcg_untruncated_retrain": [0.31] * 3})
    table = damping_sweep_table(sweep)
    assert table["damping rule"].tolist() == ["0.01 x mean eigenvalue", "0.1 x mean eigenvalue", "absolute 0.001"]
    assert table["δ (rule)"].tolist() == ["1.30e-06", "1.30e-05", "1.00e-03"]
    assert table["SCIF MIO"].tolist() == [0.55, 0.6, 0.7]


def test_same_retrain_check_compares_the_two_grids_retrain_models():
    from recunlearn.report.cure4rec_scif import same_retrain_check

    keys = {"dataset": "ml-100k", "selection": "core", "seed": 0}
    exact = pd.DataFrame([{**keys, "model": m, "method": "retrain", "ndcg_untruncated": v}
                          for m, v in (("wmf", 0.29), ("bpr", 0.26))] + [{**keys, "model": "wmf", "method": "sisa",
                                                                          "ndcg_untruncated": 0.2}])
    scif = pd.DataFrame([{**keys, "model": m, "method": meth, "ndcg_untruncated": v}
                         for m, meth, v in (("wmf", "retrain", 0.29), ("wmf", "scif", 0.3), ("bpr", "retrain", 0.25))])
    row = same_retrain_check(exact, scif)
    assert row["kind"] == "self-check" and row["verdict"] == "partly reproduced"   # BPR's Retrains differ
    assert row["holds in"] == "1 of 2 cells" and "2 pairs" in row["evidence"]
    assert same_retrain_check(exact, scif.assign(ndcg_untruncated=[0.29, 0.3, 0.26]))["verdict"] == "reproduced"
    untested = same_retrain_check(exact, scif.drop(columns="ndcg_untruncated"))
    assert untested["verdict"] == "pending" and untested["evidence"] == "no Retrain in both grids yet"
    # a Retrain computed on a GPU is not paired with the CPU's (not the same model bit for bit)
    on_gpu = scif.assign(clock=["cpu", "cpu", "cuda: NVIDIA H200"])
    assert same_retrain_check(exact, on_gpu)["verdict"] == "reproduced"
    assert same_retrain_check(exact, on_gpu)["evidence"].startswith("1 pair (dataset")


def test_retrain_session_ratios_divide_the_two_timings_of_one_retrain():
    from recunlearn.report.cure4rec_scif import retrain_session_ratios

    keys = {"dataset": "ml-100k", "model": "wmf", "selection": "random"}
    exact = pd.DataFrame([{**keys, "seed": s, "method": m, "unlearn_seconds": t}
                          for s, m, t in ((0, "retrain", 9.0), (0, "sisa", 1.0), (1, "retrain", 2.0), (2, "retrain", 5.0))])
    scif = pd.DataFrame([{**keys, "seed": s, "method": m, "unlearn_seconds": t}
                         for s, m, t in ((0, "retrain", 3.0), (0, "scif", 7.0), (1, "retrain", 4.0))])
    assert sorted(retrain_session_ratios(exact, scif)) == [0.5, 3.0]   # seed 2: no SCIF run; SISA: not a Retrain
    assert retrain_session_ratios(exact, scif.iloc[:0]).empty


def test_the_two_audits_of_one_retrain_are_compared_seed_by_seed():
    from recunlearn.report.cure4rec_scif import retrain_mio_agreement

    key = {"model": "wmf", "selection": "core"}
    scif = pd.DataFrame([{**key, "dataset": d, "seed": s, "method": m, "mio_accuracy": v}
                         for d, s, m, v in (("ml-1m", 0, "retrain", 0.50), ("ml-1m", 1, "retrain", 0.51),
                                            ("ml-100k", 0, "retrain", 0.49), ("ml-100k", 0, "scif", 0.7))])
    exact = pd.DataFrame([{**key, "dataset": d, "seed": s, "method": m, "mio_accuracy": v}
                          for d, s, m, v in (("ml-1m", 0, "retrain", 0.50), ("ml-1m", 1, "retrain", 0.52),
                                             ("ml-100k", 0, "retrain", 0.49), ("ml-100k", 0, "sisa", 0.6),
                                             ("ml-100k", 1, "retrain", 0.5))])
    assert retrain_mio_agreement(exact, scif) == ("equal in 2 of 3 pairs; different in ML-1M WMF: 1 "
                                                  "(largest difference 0.010)")
    same = exact.assign(mio_accuracy=lambda f: f["mio_accuracy"].where(f["seed"] != 1, 0.51))
    assert retrain_mio_agreement(same, scif) == "equal in all 3 pairs"
    assert retrain_mio_agreement(exact.iloc[:0], scif) == "no pair yet"


def test_exact_mio_values_say_whether_every_exact_cell_is_close_to_chance():
    """An exact method's MIO accuracy (mean over seeds) within MIO_CLOSE_TO_CHANCE of 0.5 in every cell is
    consistent with complete unlearning; one cell further away is not; nothing computed is pending."""
    from recunlearn.report.cure4rec_scif import MIO_CLOSE_TO_CHANCE, exact_mio_values

    def runs(sisa: float) -> pd.DataFrame:
        return pd.DataFrame([{"dataset": "ml-100k", "model": "wmf", "method": method, "selection": "random",
                              "seed": seed, "mio_accuracy": value + 0.01 * seed}
                             for method, value in (("retrain", 0.49), ("sisa", sisa)) for seed in (0, 1)])

    scif = pd.DataFrame([{"dataset": "ml-100k", "model": "wmf", "method": "scif", "selection": "random", "seed": 0,
                          "mio_accuracy": 0.6}])
    assert MIO_CLOSE_TO_CHANCE == 0.05
    close = exact_mio_values(runs(0.52), scif)   # means 0.495 and 0.525: at most 0.025 from 0.5
    assert close["exact_verdict"] == "every exact cell is within 0.05 of 0.5, consistent with complete unlearning"
    assert close["exact_mio_maxdev"] == "0.025" and close["exact_mio_range"] == "0.495-0.525"
    assert close["scif_mio_range"] == "0.600-0.600"
    far = exact_mio_values(runs(0.55), scif)     # SISA's mean 0.555
    assert far["exact_verdict"] == "not every exact cell is within 0.05 of 0.5: see the table"
    assert far["exact_mio_maxdev"] == "0.055"
    none = exact_mio_values(runs(0.5).iloc[:0], scif.iloc[:0])
    assert none["exact_verdict"] == "pending" and none["exact_mio_maxdev"] == "pending"
