"""The CURE4Rec page builders: parameters checked before any compute, one notice for pending content
(never an empty table or an all-pending one), no glued sentence counting nothing ("0 of 0"), tables
that hold what the notebooks computed before the builders existed (on made-up runs), and notebooks
that are parameters -> build -> show -> publish, with ``experiments`` never importing ``report``."""

from __future__ import annotations

import ast
import importlib
import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from page_checks import no_empty_count, shown
from recunlearn import paths
from recunlearn.experiments.config import ConfigError
from recunlearn.experiments.cure4rec import Collected, LearnGrid, pending_frame, pending_reason
from recunlearn.experiments.cure4rec_exact import (EXACT_KEYS, SHARD_COLUMNS, ExactCollected, ExactGrid,
                                                   combiner_variant_grids)
from recunlearn.experiments.cure4rec_scif import (SCIF_METHODS, ScifGrid, damping_sweep_configs, exact_mio_configs)
from recunlearn.report.compare import paper_vs_ours_table, verdict, within_text
from recunlearn.report.cure4rec import (EU_METHODS, active_concentration, compare_exact, compare_learn,
                                        concentration_claims, fairness_claims, shard_composition, sweep_claims,
                                        time_table, utility_claims, with_retrain_gap)
from recunlearn.report.names import display_name, labelled
from recunlearn.report.pages import Notice, Page
from recunlearn.report.pages.cure4rec_runs import PARALLEL, TOGETHER, parallel_grid
from recunlearn.report.claims import OTHER_READING, with_kind
from recunlearn.report.paper import paper_table

NOTEBOOKS = paths.REPO_ROOT / "notebooks" / "cure4rec"
PARAMS = paths.REPO_ROOT / "notebooks" / "params" / "cure4rec"
STEMS = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
EXACT_PAGES = ["table-02-eu-utility", "figure-03-06-07-eu-fairness", "figure-04-shard-number",
               "figure-08-unlearning-ratio", "table-03-unlearning-time", "table-06-08-shard-composition"]
SCIF_PAGES = ["table-01-05-scif-completeness", "figure-02-05-overview"]
RUN_PAGES = EXACT_PAGES + SCIF_PAGES + ["learn-baselines"]
LEVEL = {"retrain": 0.32, "sisa": 0.25, "receraser": 0.28, "ultrare": 0.281}
SELECTION_SHIFT = {"core": 0.01, "random": 0.0, "edge": -0.01}


def module(stem: str):
    return importlib.import_module(f"recunlearn.report.pages.cure4rec_{stem.replace('-', '_')}")


def params(stem: str, profile: str = "smoke", **changes) -> dict:
    """The notebook's parameters cell, overridden by its profile file and ``changes``."""
    notebook = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())
    cell = next(c for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
    values: dict = {}
    exec("".join(cell["source"]), {}, values)  # the cell holds literals only
    values.update(yaml.safe_load((PARAMS / f"{stem}.{profile}.yml").read_text()) or {})
    return {**values, **changes}


# --- made-up runs ----------------------------------------------------------------------------------------

def fake_exact(grid: ExactGrid, pending_models=()) -> ExactCollected:
    """Made-up runs of ``grid``: NDCG by method (:data:`LEVEL`) plus a shift by unlearning set and 0.001
    per seed, less 0.001 per extra shard and 0.01 per ratio step; A-IGF higher for the clustered
    methods; SISA spreads active users over its shards, RecEraser and UltraRE pack them into one.
    Runs of ``pending_models`` have no record."""
    rows, pending, shards = [], [], []
    for c in grid.runs():
        if c.model in pending_models:
            pending.append(c)
            continue
        n_shards = 1 if c.method == "retrain" else c.n_shards
        ndcg = (LEVEL[c.method] + SELECTION_SHIFT[c.selection] + 0.001 * c.seed
                - 0.001 * (n_shards - 10) * (n_shards > 1) - 0.002 * (c.ratio - 5.0))
        clustered = c.method in ("receraser", "ultrare")
        rows.append({"dataset": c.dataset, "model": c.model, "method": c.method, "selection": c.selection,
                     "ratio": c.ratio, "n_shards": n_shards, "seed": c.seed, "ndcg_untruncated": ndcg,
                     "hr_cure4rec": ndcg + 0.05, "ndcg": ndcg + 0.01, "hit_ratio": 0.9, "recall": ndcg + 0.03,
                     "a_igf": -0.02 + 0.02 * clustered + 0.0005 * c.seed, "a_igf_standard": 0.2,
                     "shard_gf": np.nan if n_shards == 1 else 0.002 + 0.003 * clustered - 0.0001 * n_shards,
                     "shard_gf_standard": np.nan if n_shards == 1 else 0.003,
                     "unlearn_seconds": 10.0 if c.method == "retrain" else 2.0 + 0.1 * c.seed,
                     "unlearn_sum_seconds": 10.0 if c.method == "retrain" else 15.0,
                     "partition_seconds": 0.5 * clustered, "unlearn_plus_partition_seconds": 2.5, "record": None})
        if c.method != "retrain":
            active = [50 // n_shards] * n_shards if not clustered else [50 - (n_shards - 1)] + [1] * (n_shards - 1)
            shards += [{"dataset": c.dataset, "model": c.model, "method": c.method, "selection": c.selection,
                        "seed": c.seed, "shard": s, "active": a, "inactive": 90 - a} for s, a in enumerate(active)]
    runs = pd.DataFrame(rows, columns=None if rows else EXACT_KEYS)
    runs.attrs["pending"] = [c.to_dict() for c in pending]
    return ExactCollected(runs, pending_frame(pending, grid.device, EXACT_KEYS),
                          pd.DataFrame(shards, columns=SHARD_COLUMNS))



def fake_variants(grid: ExactGrid) -> Collected:
    """Made-up combiner variants: the original combiners a little below routing."""
    parts = []
    for variant in combiner_variant_grids(grid):
        runs = fake_exact(variant).runs.assign(combiner=variant.combiner)
        if variant.combiner == "original":
            runs["ndcg_untruncated"] -= 0.05
        parts.append(runs)
    return Collected(pd.concat(parts, ignore_index=True), pending_frame([], grid.device, EXACT_KEYS))


def fake_learn(grid: LearnGrid) -> Collected:
    rows = [{"dataset": c.dataset, "model": c.model, "validation": c.validation, "seed": c.seed,
             "ndcg_untruncated": 0.30 + 0.01 * c.seed, "hr_cure4rec": 0.33, "a_igf": -0.03, "ndcg": 0.31,
             "hit_ratio": 0.9, "recall": 0.35, "mrr": 0.5, "a_igf_standard": 0.2, "epochs_run": 10 + c.seed,
             "best_epoch": 5 + c.seed + 10 * (c.dataset == "ml-1m"), "train_seconds": 3.0,
             "validation_seconds": 0.1} for c in grid.runs()]
    runs = pd.DataFrame(rows)
    runs.attrs["pending"] = []
    return Collected(runs, pending_frame([], grid.device, ["dataset", "model", "validation", "seed"]))


SCIF_LEVEL = {"learn": (0.72, 0.32), "retrain": (0.52, 0.31), "scif": (0.58, 0.30)}


def fake_scif(grid: ScifGrid) -> Collected:
    """Made-up SCIF runs: MIO accuracy and NDCG of Learn, Retrain and SCIF by :data:`SCIF_LEVEL`."""
    rows = []
    for c in grid.runs():
        for method in SCIF_METHODS:
            mio, ndcg = SCIF_LEVEL[method]
            rows.append({"dataset": c.dataset, "model": c.model, "method": method, "selection": c.selection,
                         "ratio": c.ratio, "seed": c.seed, "ndcg_untruncated": ndcg + 0.001 * c.seed,
                         "hr_cure4rec": ndcg + 0.03, "mio_accuracy": mio + 0.002 * c.seed, "a_igf": -0.02,
                         "mio_auc": mio, "mio_train_accuracy": 0.7, "ndcg": ndcg, "hit_ratio": 0.9,
                         "a_igf_standard": 0.2, "unlearn_seconds": {"learn": np.nan, "retrain": 10.0,
                                                                    "scif": 3.0}[method],
                         "cg_iterations": 20.0 if method == "scif" else np.nan,
                         "damping": 0.01 if method == "scif" else np.nan, "record": None})
    runs = pd.DataFrame(rows)
    runs.attrs["pending"] = []
    return Collected(runs, pending_frame([], grid.device, ["dataset", "model", "selection", "ratio", "seed"]))


def fake_exact_mio(grid: ScifGrid) -> Collected:
    rows = [{"dataset": c.dataset, "model": c.model, "method": c.method, "selection": c.selection, "seed": c.seed,
             "mio_accuracy": 0.5 + 0.01 * (c.method == "sisa"), "record": None} for c in exact_mio_configs(grid)]
    return Collected(pd.DataFrame(rows), pending_frame([], grid.device, ["dataset", "model", "method", "selection",
                                                                          "seed"]))


def fake_sweep(grid: ScifGrid) -> Collected:
    rows = []
    for c in damping_sweep_configs(grid.damping_sweep_grid()):
        relative = c.damping_rule == "relative"
        delta = c.damping_fraction * 0.01 if relative else c.damping
        rows.append({"dataset": c.dataset, "model": c.model, "selection": c.selection, "ratio": c.ratio,
                     "seed": c.seed, "damping_rule": c.damping_rule,
                     "damping_fraction": c.damping_fraction if relative else np.nan, "initial_damping": delta,
                     "damping": delta, "update_norm": 1.0 / delta, "cg_converged": True,
                     "mio_accuracy": 0.55 + delta, "ndcg_untruncated": 0.3, "mio_accuracy_learn": 0.72,
                     "mio_accuracy_retrain": 0.52, "ndcg_untruncated_learn": 0.32, "ndcg_untruncated_retrain": 0.31})
    return Collected(pd.DataFrame(rows), pending_frame([], grid.device, ["dataset", "model"]))


def fake_statistics() -> pd.DataFrame:
    rows = []
    for dataset, (users, items, interactions) in {"ml-100k": (943, 1349, 99287), "ml-1m": (6040, 3416, 999611),
                                                  "adm": (22878, 115082, 238692)}.items():
        stats = {"users": users, "items": items, "interactions": interactions,
                 "sparsity": 1 - interactions / (users * items)}
        if dataset == "adm":
            rows.append({"dataset": dataset, "source": "raw, 5-core", "note": "not available here: made up"})
        else:
            rows.append({"dataset": dataset, "source": "raw, 5-core", **stats, "note": ""})
        rows.append({"dataset": dataset, "source": "released", **stats, "note": ""})
    return pd.DataFrame(rows).astype({"users": "Int64", "items": "Int64", "interactions": "Int64"})


def fake_page(stem: str, profile: str = "smoke", pending_models=(), **changes) -> Page:
    """The page of ``stem`` built on made-up runs at ``profile``'s parameters (plus ``changes``)."""
    values = params(stem, profile, **changes)
    build = module(stem).build
    if stem in EXACT_PAGES:
        grid = ExactGrid.from_params(values)
        extra = {"variants": fake_variants(grid)} if stem == "table-02-eu-utility" else {}
        if stem == "table-03-unlearning-time":
            extra["scif_runs"] = pd.DataFrame(columns=["dataset", "model", "method", "selection", "seed",
                                                       "unlearn_seconds", "scif_cg_seconds", "cg_iterations",
                                                       "record"])
        return build(collected=fake_exact(grid, pending_models), **extra, **values)
    if stem == "learn-baselines":
        return build(collected=fake_learn(LearnGrid.from_params(values)), **values)
    if stem == "table-04-dataset-statistics":
        return build(ours=fake_statistics(), **values)
    grid = ScifGrid.from_params(values)
    if stem == "figure-02-05-overview":
        batched = fake_exact(module(stem).exact_grid(grid))
        batched.runs["unlearn_seconds"] = 99.0  # the batched time never reaches the overview: Table 3's runs do
        parallel = fake_exact(module(stem).timing_grid(grid))
        parallel.runs["created"] = pd.Timestamp("2026-01-01", tz="UTC")  # timed together: speed-ups over Retrain
        return build(collected=fake_scif(grid), exact=batched, parallel=parallel, exact_mio=fake_exact_mio(grid),
                     **values)
    sweep = fake_sweep(grid) if grid.damping_sweep_grid() is not None else None
    return build(collected=fake_scif(grid), exact_mio=fake_exact_mio(grid), sweep=sweep, **values)


# --- no package cycle; notebooks are parameters -> build -> show -> publish ---------------------------------

def test_experiments_never_import_report():
    for path in sorted((paths.REPO_ROOT / "lib" / "recunlearn" / "experiments").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                name = ("." * node.level) + (node.module or "")
                assert not re.match(r"^(\.\.report|recunlearn\.report)", name), (path.name, name)


@pytest.mark.parametrize("stem", STEMS)
def test_every_item_a_notebook_shows_exists_and_every_glue_name_is_published(stem):
    notebook = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())
    page = fake_page(stem, "paper")
    code = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    assert set(re.findall(r'page\.show\("(\w+)"\)', code)) <= set(page.items)
    markdown = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    used = {name.split(":")[0] for name in re.findall(r"\{glue:text\}`([^`]+)`", markdown)}
    evidence = {f"claim_{i}_{part}" for i in (page.claims["id"] if page.claims is not None else [])
                for part in ("evidence", "found")}
    assert used - set(page.texts()) - evidence == set()


# --- parameters ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stem", STEMS)
@pytest.mark.parametrize("bad, message", [
    ({"MODELS": ["wmf", "no-such-model"]}, r"MODELS = .*'no-such-model' is not allowed"),
    ({"datasets": ["ml-100k"]}, r"case-sensitive: \['datasets'\].*DATASETS"),
    ({"EPOCHS": 3}, r"unknown parameter\(s\) \['EPOCHS'\].*allowed"),
    ({"DATASETS": ["movielens"]}, r"DATASETS = .*'movielens' is not allowed; allowed: \['ml-100k'"),
])
def test_a_wrong_parameter_fails_before_any_compute(stem, bad, message, monkeypatch):
    from recunlearn.experiments import cure4rec, cure4rec_exact, cure4rec_scif
    from recunlearn.report.pages import cure4rec_runs

    page = module(stem)  # imported before the patches: a page first imported under them would keep `fail`
    # (its `from ... import collect` binds the patched function for every later test)

    def fail(*args, **kwargs):
        pytest.fail("runs collected before the parameters were checked")

    for target, name in [(cure4rec, "collect"), (cure4rec_exact, "collect"), (cure4rec_runs, "collect"),
                         (cure4rec_scif, "collect"), (cure4rec, "dataset_statistics")]:
        monkeypatch.setattr(target, name, fail)
    for name in ("collect", "dataset_statistics", "collect_exact_mio", "collect_damping_sweep",
                 "collect_combiner_variants"):
        if hasattr(page, name):
            monkeypatch.setattr(page, name, fail)
    values = params(stem)
    if "MODELS" in bad and "MODELS" not in values:
        pytest.skip("the page has no MODELS parameter")
    with pytest.raises(ConfigError, match=message):
        page.build(**{**values, **bad})


@pytest.mark.parametrize("stem", ["figure-08-unlearning-ratio", "table-02-eu-utility"])
def test_a_ratio_that_unlearns_nobody_fails_before_any_compute(stem, monkeypatch):
    from recunlearn.report.pages import cure4rec_runs

    monkeypatch.setattr(cure4rec_runs, "collect", lambda *a, **k: pytest.fail("runs collected"))
    with pytest.warns(UserWarning, match="is a percentage"), \
            pytest.raises(ConfigError, match=r"RATIOS = 0\.05: .*nobody would be unlearned"):
        module(stem).build(**params(stem, RATIOS=[0.05]))


# --- pending content: one notice --------------------------------------------------------------------------

@pytest.mark.parametrize("stem", RUN_PAGES)
def test_a_grid_without_records_shows_one_notice_per_item_and_no_empty_count(stem, monkeypatch):
    """The paper profile with no record at all (the tests' records directory is empty) and nothing
    computed: every table and figure is one notice naming why and the compute plan's command; every
    claim reads ``pending``; no glued text counts nothing."""
    page = module(stem).build(**params(stem, "paper", COMPUTE_MISSING=False))
    assert len(page.pending) and set(page.pending["reason"]) == {pending_reason("cpu")}
    for name in page.items:
        out = shown(page, name, monkeypatch)
        assert len(out) == 1 and isinstance(out[0], Notice), (name, out)
        if name in ("scif_times", "scif_figure"):  # read from the SCIF page's records, never computed here
            assert out[0].why.startswith("no stored SCIF run at this page's settings")
            continue
        assert "waiting for CPU time" in out[0].why or "pending (no computed run to test them on)" in out[0].why, \
            out[0].why
        if name != "claims":
            assert out[0].command.startswith("python -m recunlearn compute --only cure4rec-ml100k-"), out[0].command
    no_empty_count(page)
    texts = page.texts()
    assert all(texts[f"claim_{c}"] == "pending" for c in (page.claims["id"] if page.claims is not None else []))
    assert "0 of" not in texts.get("within_tol", "")
    for name in ("mio_gap", "ndcg_drop", "exact_mio_range", "exact_mio_maxdev", "exact_verdict",
                 "sisa_top_share", "clustered_top_share"):
        if name in texts:
            assert texts[name] == "pending", (name, texts[name])


def test_runs_of_one_model_pending_leave_partly_computed_tables_with_a_notice(monkeypatch):
    page = fake_page("table-02-eu-utility", "paper", pending_models=("bpr",), DATASETS=["ml-100k"])
    table, notice = shown(page, "comparison", monkeypatch)
    assert "BPR" not in set(table.index.get_level_values("Model"))
    assert notice.partial and "24 waiting for CPU time" in notice.why
    assert notice.why == ("168 of 216 paper cells without our value: 144 for ML-1M, ADM, not run yet; "
                          "24 waiting for CPU time")
    runs_table, runs_notice = shown(page, "runs", monkeypatch)
    assert runs_table["runs"].to_dict() == {"computed": 76, "waiting for CPU time": 36}  # with the 4 combiner variants
    assert runs_notice.why == "36 of 112 runs waiting for CPU time (BPR)" and runs_notice.partial
    no_empty_count(page)


def test_no_sweep_asked_for_is_one_notice(monkeypatch):
    page = fake_page("table-01-05-scif-completeness", DAMPING_SWEEP_MODELS=None)
    (notice,) = shown(page, "damping_figure", monkeypatch)
    assert notice.why == "not asked for at these parameters (DAMPING_SWEEP_MODELS = None)"


@pytest.mark.parametrize("stem", STEMS)
def test_made_up_runs_give_every_item_and_no_empty_count(stem, monkeypatch):
    page = fake_page(stem, "paper")
    for name in page.items:
        if name == "item_degrees":  # reads the dataset files
            continue
        out = shown(page, name, monkeypatch)
        assert out and not any(isinstance(o, pd.DataFrame) and o.empty for o in out), name
    no_empty_count(page)
    assert page.checks and all(page.checks)


# --- the tables hold the values the notebooks computed before ----------------------------------------------

def exact_runs(stem: str, profile: str = "paper", **changes) -> tuple[dict, ExactGrid, ExactCollected]:
    values = params(stem, profile, **changes)
    grid = ExactGrid.from_params(values)
    return values, grid, fake_exact(grid)


def test_table_2_values_equal_the_notebook_pipeline(monkeypatch):
    values, grid, collected = exact_runs("table-02-eu-utility", DATASETS=["ml-100k"])
    runs = collected.runs
    page = module("table-02-eu-utility").build(collected=collected, variants=fake_variants(grid), **values)
    # what the notebook computed inline before the builder
    comparison = compare_exact(runs, paper_table("cure4rec-table-02"), ["ndcg_untruncated", "hr_cure4rec"])
    pd.testing.assert_frame_equal(page.comparison, comparison)
    computed = comparison[comparison["dataset"].isin(grid.datasets) & comparison["model"].isin(grid.models)]
    before = paper_vs_ours_table(computed, ["dataset", "model", "method", "selection"],
                                 ["ndcg_untruncated", "hr_cure4rec"], metrics_as_rows=True)
    table = shown(page, "comparison", monkeypatch)[0]
    pd.testing.assert_frame_equal(table, before)  # every cell of the grid computed: the same table
    assert table.loc[("ML-100K", "WMF", "Retrain", "Core", "NDCG@20"), "ours"] == "0.3310 ± 0.0010"
    pd.testing.assert_frame_equal(page.tables["standard_metrics"], runs.groupby(
        ["dataset", "model", "method", "selection"])[["ndcg_untruncated", "hr_cure4rec", "ndcg", "hit_ratio",
                                                       "recall"]].mean().round(4))
    pd.testing.assert_frame_equal(page.claims, utility_claims(runs))
    claims = page.claims.set_index("id")["verdict"]
    assert claims["eu_below_retrain"] == "reproduced" and claims["core_highest_utility"] == "reproduced"
    assert page.texts()["within_tol"] == within_text(comparison)
    assert page.texts()["page_coverage"] == "72 of 216 paper cells computed; 1 of 3 paper datasets; 112 of 112 runs " \
                                           "have a record"
    assert page.checks[0] == runs.groupby(["dataset", "model", "method", "selection"])[
        ["ndcg_untruncated", "hr_cure4rec"]].mean().round(2).to_string()


def test_fairness_and_sweep_tables_equal_the_notebook_pipeline():
    values, grid, collected = exact_runs("figure-03-06-07-eu-fairness")
    page = module("figure-03-06-07-eu-fairness").build(collected=collected, scif_runs=pd.DataFrame(), **values)
    fair = with_retrain_gap(collected.runs)
    shown_columns = ["a_igf", "a_igf_gap", "a_igf_gap_abs", "shard_gf", "a_igf_standard", "shard_gf_standard"]
    pd.testing.assert_frame_equal(page.tables["fairness"], fair.groupby(["dataset", "model", "method", "selection"])[
        shown_columns].agg(["mean", "std"]).round(4))
    pd.testing.assert_frame_equal(page.claims, fairness_claims(collected.runs))
    assert page.claims.set_index("id").loc["eu_a_igf_above_retrain", "verdict"] == "partly reproduced"
    assert page.claims.set_index("id").loc["eu_a_igf_above_scif", "verdict"] == "pending"  # no SCIF run given

    values, grid, collected = exact_runs("figure-04-shard-number")
    figure_4 = module("figure-04-shard-number")
    second = parallel_grid(grid)
    assert second.timing == "alone" and "retrain" not in second.methods and second.selections == grid.selections
    alone = fake_exact(second)
    alone.runs["unlearn_seconds"] = 10.0 / alone.runs["n_shards"]  # the slowest shard: smaller with more shards
    page = figure_4.build(collected=collected, parallel=alone, **values)
    eu = with_retrain_gap(collected.runs)
    eu = eu[eu["method"] != "retrain"]
    keys = ["dataset", "model", "method", "selection", "n_shards", "seed"]
    eu = eu.merge(alone.runs[keys + ["unlearn_seconds"]].rename(columns={"unlearn_seconds": PARALLEL}),
                  on=keys, how="left")
    metrics = ["ndcg_untruncated", TOGETHER, PARALLEL, "a_igf_gap_abs", "shard_gf"]
    expected = eu.rename(columns={"unlearn_seconds": TOGETHER}).groupby(
        ["dataset", "model", "method", "n_shards"])[metrics].agg(["mean", "std"]).round(4)
    pd.testing.assert_frame_equal(page.tables["sweep"], expected)
    claims = page.claims.set_index("id")
    assert claims.loc["ndcg_untruncated_falls", "verdict"] == "reproduced"  # 0.001 less per extra shard
    assert claims.loc["unlearn_seconds_falls", "verdict"] == "inconclusive"  # no record times: nothing timed
    assert claims.loc["unlearn_seconds_parallel_falls", "verdict"] == "inconclusive"  # the same rule applies
    for timed in ("unlearn_seconds_falls", "unlearn_seconds_parallel_falls"):  # the times fall: the rule decides
        assert "record times unknown" in claims.loc[timed, "evidence"]
    assert "in parallel" in claims.loc["unlearn_seconds_parallel_falls", "claim"]
    assert "together in one process" in claims.loc["unlearn_seconds_falls", "claim"]
    assert len(page.runs) == len(collected.runs) + len(alone.runs)       # both readings' runs are the page's
    assert page.runs.attrs["run_total"] == len(grid.runs()) + len(second.runs())   # and its at-a-glance count
    expected_claims = sweep_claims(eu, "n_shards", {"ndcg_untruncated": -1, "unlearn_seconds": -1,
                                                    "a_igf_gap_abs": +1, "shard_gf": -1}, "the number of shards")
    expected_claims = with_kind(expected_claims, OTHER_READING, ["unlearn_seconds_falls"])  # the parallel reading is the paper's
    pd.testing.assert_frame_equal(page.claims.iloc[:4].drop(columns="claim"), expected_claims.drop(columns="claim"))

    values, grid, collected = exact_runs("figure-08-unlearning-ratio")
    alone = fake_exact(parallel_grid(grid))   # the same parallel reading as Figure 4's
    alone.runs["unlearn_seconds"] = 2.0 - alone.runs["ratio"] / 20.0
    page = module("figure-08-unlearning-ratio").build(collected=collected, parallel=alone, **values)
    sweep = with_retrain_gap(collected.runs)
    sweep = sweep.assign(abs_a_igf=sweep["a_igf"].abs())
    keys = keys + ["ratio"]
    sweep = sweep.merge(alone.runs[keys + ["unlearn_seconds"]].rename(columns={"unlearn_seconds": PARALLEL}),
                        on=keys, how="left").rename(columns={"unlearn_seconds": TOGETHER})
    claims = page.claims.set_index("id")
    assert claims.loc["ndcg_untruncated_falls", "verdict"] == "reproduced"
    assert "in parallel" in claims.loc["unlearn_seconds_parallel_falls", "claim"]
    assert "together in one process" in claims.loc["unlearn_seconds_falls", "claim"]
    shown = ["ndcg_untruncated", TOGETHER, PARALLEL, "a_igf", "abs_a_igf", "a_igf_gap_abs"]
    pd.testing.assert_frame_equal(page.tables["sweep"], sweep.groupby(["dataset", "model", "method", "ratio"])[
        shown].agg(["mean", "std"]).round(4))
    assert page.runs.attrs["run_total"] == len(grid.runs()) + len(alone.runs)


def test_every_timing_has_its_reading():
    from recunlearn.report.pages.cure4rec_runs import TIMING_READS
    from recunlearn.unlearning.exact import TIMINGS

    assert set(TIMING_READS) == set(TIMINGS)


@pytest.mark.parametrize("stem", ["figure-04-shard-number", "figure-08-unlearning-ratio"])
@pytest.mark.parametrize("timing, says, together", [
    ("batched", "the affected shards retrained together in one process", True),
    ("sequential", "the slowest affected shard, trained in turn inside the K-shard model", False),
    ("alone", "the slowest affected shard, each a model of its own", False)])
def test_a_sweep_page_says_how_its_timing_measured_unlearning_time(stem, timing, says, together):
    """Figures 4 and 8 share one rule: the grid's own time claim names its TIMING; the parallel reading
    (absent when the grid already times each shard alone) is the paper's claim, the grid's own another
    reading; only a batched time is shown as the shards' time together."""
    values, grid, collected = exact_runs(stem, TIMING=timing)
    second = parallel_grid(grid)
    page = module(stem).build(collected=collected, parallel=fake_exact(second) if second else None, **values)
    claims = page.claims.set_index("id")
    assert claims.loc["unlearn_seconds_falls", "claim"].endswith(f"({says})")
    assert (second is None) == (timing == "alone") == ("unlearn_seconds_parallel_falls" not in claims.index)
    assert (claims.loc["unlearn_seconds_falls", "kind"] == OTHER_READING) == (second is not None)
    columns = set(page.tables["sweep"].columns.get_level_values(0))
    assert (TOGETHER in columns) == together and ("unlearn_seconds" in columns) == (not together)
    assert (PARALLEL in columns) == (second is not None)


def test_by_dataset_lists_each_dataset_in_the_papers_order():
    from recunlearn.report.names import by_dataset

    values = pd.Series({"adm": 0.5, "ml-1m": 0.123, "ml-100k": float("nan")})
    assert by_dataset(values) == "0.12 on ML-1M, 0.50 on ADM"
    assert by_dataset(pd.Series(dtype=float)) == "pending"


def test_shard_composition_ranks_shards_and_measures_concentration(monkeypatch):
    values, grid, collected = exact_runs("table-06-08-shard-composition")
    page = module("table-06-08-shard-composition").build(collected=collected, **values)
    composition = shard_composition(collected.shards, paper_table("cure4rec-table-06-08"))
    ours = composition[composition["source"] == "ours"]
    assert set(ours["dataset"]) == set(grid.datasets) and len(grid.datasets) > 1  # ranks are per run: per dataset too
    assert set(ours.groupby(["dataset", "method", "selection", "seed"])["rank"].apply(sorted).map(tuple)) == {
        tuple(range(1, 11))}
    theirs = composition[composition["source"] == "paper"]
    assert theirs["shard"].min() == 0 and (theirs["model"] == "(paper)").all() and (theirs["seed"] == -1).all()
    concentration = active_concentration(composition)
    assert set(concentration["dataset"]) == set(grid.datasets)
    concentration = concentration[concentration["dataset"] == "ml-100k"].set_index(["source", "method", "selection"])
    assert concentration.loc[("ours", "sisa", "core"), "top_shard_share"] == pytest.approx(5 / 50)
    assert concentration.loc[("ours", "receraser", "core"), "top_shard_share"] == pytest.approx(41 / 50)
    texts = page.texts()
    assert texts["sisa_top_share"] == "0.10 on ML-100K, 0.10 on ML-1M, 0.10 on ADM"  # one per dataset, never averaged
    assert texts["clustered_top_share"] == "0.82 on ML-100K, 0.82 on ML-1M, 0.82 on ADM"
    pd.testing.assert_frame_equal(page.claims, concentration_claims(composition))
    assert texts["claim_receraser_ultrare_concentrate_active_users"].startswith("reproduced")
    table = shown(page, "composition", monkeypatch)[0]
    assert table.loc[("ML-100K", "RecEraser", "Core", "ours"), 1] == 41.0  # labels as a reader reads them
    drawn = shown(page, "figure", monkeypatch)  # one figure per dataset, never the two mixed
    assert [figure.texts[0].get_text().split(":")[0] for figure in drawn] == ["ML-100K", "ML-1M", "ADM"]


def test_table_3_times_relative_to_retrain(monkeypatch):
    values, grid, collected = exact_runs("table-03-unlearning-time")
    from recunlearn.report.cure4rec_scif import scif_times

    scif_runs = pd.DataFrame([{"dataset": "ml-100k", "model": "wmf", "selection": "core", "seed": seed, "method": m,
                               "unlearn_seconds": t, "record": f"scif-{seed}",
                               "scif_cg_seconds": 3.0 if m == "scif" else np.nan,
                               "cg_iterations": 30.0 if m == "scif" else np.nan}
                              for seed, own in ((0, 2.0), (1, 3.0)) for m, t in (("retrain", own), ("scif", 4.0 + 2 * seed))])
    page = module("table-03-unlearning-time").build(collected=collected, scif_runs=scif_runs, **values)
    scif = scif_times(scif_runs)
    assert scif["retrain_seconds"].tolist() == [2.0, 3.0] and scif["speedup"].tolist() == [0.5, 0.5]
    table = time_table(collected.runs, scif, paper_table("cure4rec-table-03"))
    times = shown(page, "times", monkeypatch)[0]
    expected = table[table["dataset"].isin(grid.datasets) & table["unlearn_seconds"].notna()]
    assert set(expected["method"]) == {"retrain", "scif", *EU_METHODS}  # SCIF: its one stored cell
    pd.testing.assert_frame_equal(times, labelled(expected.set_index(["dataset", "model", "method", "selection"])
                                                  .round(3)))
    # SISA's slowest shard 2.1 s against Retrain's 10 s
    assert times.loc[("ML-100K", "WMF", "SISA", "Core"), display_name("ours_vs_retrain")] == pytest.approx(0.21)
    assert times.loc[("ML-100K", "WMF", "Retrain", "Core"), display_name("paper_vs_retrain")] == 1.0
    scif_times = shown(page, "scif_times", monkeypatch)[0]
    assert scif_times.loc[("ML-100K", "WMF", "Core"), "unlearning time (s)"] == 5.0
    assert scif_times.loc[("ML-100K", "WMF", "Core"), "speed-up over Retrain"] == 0.5  # 2/4 and 3/6
    # SCIF against the Retrain of its own runs (2.5 s), not the exact runs' Retrain (10 s) of another session
    assert times.loc[("ML-100K", "WMF", "SCIF", "Core"), display_name("ours_vs_retrain")] == 2.0
    relative = shown(page, "paper_table", monkeypatch)[0]   # the paper's layout, Retrain's own row left out
    assert "Retrain" not in relative.index.get_level_values("Method")
    assert relative.loc[("SISA", "Core"), ("ML-100K", "WMF")] == "0.210\n(0.094)"   # 402 s / 4296 s in the paper
    assert relative.loc[("SCIF", "Core"), ("ML-100K", "WMF")] == "2.000\n(0.067)"
    claim = page.claims.set_index("id").loc["scif_faster_than_eu"]
    assert claim["verdict"].startswith("inconclusive")  # two pairs per link (the made-up runs have no record times)


def test_learn_values_equal_the_notebook_pipeline(monkeypatch):
    values = params("learn-baselines", "paper", DATASETS=["ml-100k", "ml-1m"])  # ADM left out: "not run"
    grid = LearnGrid.from_params(values)
    collected = fake_learn(grid)
    page = module("learn-baselines").build(collected=collected, **values)
    comparison = compare_learn(collected.runs, paper_table("cure4rec-learn"))
    pd.testing.assert_frame_equal(page.comparison, comparison[comparison["paper"].notna()])
    texts = page.texts()
    assert float(texts["ml-100k_wmf_test_ndcg_untruncated"]) == pytest.approx(0.31)
    assert texts["ml-100k_bpr_split_test_best_epoch"] == "6.0"  # per dataset, never pooled
    assert texts["ml-1m_bpr_split_test_best_epoch"] == "16.0"
    test_cells = comparison[(comparison["validation"] == "test") & comparison["paper"].notna()]
    assert texts["verdict_test"] == verdict(test_cells) and "(6 of 18 cells pending)" in texts["verdict_test"]
    assert texts["within_test"] == within_text(test_cells)
    table, notice = shown(page, "comparison", monkeypatch)
    assert "ADM" not in set(table.index.get_level_values("Dataset"))
    assert notice.why == "12 of 36 paper cells without our value: 12 for ADM, not run yet"
    assert notice.command == "python -m recunlearn compute --only cure4rec-adm-learn"


def test_scif_gaps_compare_ours_and_the_papers_on_the_same_cells():
    from recunlearn.report.cure4rec_scif import mio_gap_values

    paper = pd.DataFrame(
        [{"dataset": d, "model": "wmf", "method": m, "selection": s, "metric": "mio_accuracy", "value": v}
         for d, s, m, v in [("ml-100k", "core", "retrain", 0.5), ("ml-100k", "core", "scif", 0.6),
                            ("ml-100k", "edge", "retrain", 0.5), ("ml-100k", "edge", "scif", 0.9),
                            ("ml-1m", "core", "retrain", 0.5), ("ml-1m", "core", "scif", 0.7)]]
        + [{"dataset": d, "model": "wmf", "method": "scif", "selection": s, "metric": "ndcg_untruncated", "value": v}
           for d, s, v in [("ml-100k", "core", 0.3), ("ml-100k", "edge", 0.1), ("ml-1m", "core", 0.2)]])
    learn = pd.DataFrame([{"dataset": d, "model": "wmf", "metric": "ndcg_untruncated", "value": 0.4}
                          for d in ("ml-100k", "ml-1m")])
    # ours: ML-100K core only (edge pending), plus a LightGCN cell the paper does not have; no ML-1M
    runs = pd.DataFrame([{"dataset": "ml-100k", "model": model, "selection": "core", "method": m, "seed": 0,
                          "mio_accuracy": v, "ndcg_untruncated": n}
                         for model in ("wmf", "lightgcn")
                         for m, v, n in [("learn", 0.7, 0.35), ("retrain", 0.55, 0.34), ("scif", 0.6, 0.33)]])
    assert mio_gap_values(runs, paper, learn) == {"mio_gap": "+0.050 on ML-100K", "paper_mio_gap": "+0.100 on ML-100K",
                                              "ndcg_drop": "0.0200 on ML-100K", "paper_ndcg_drop": "0.1000 on ML-100K"}
    assert set(mio_gap_values(runs.iloc[:0], paper, learn).values()) == {"pending"}


def test_scif_page_values_on_made_up_runs(monkeypatch):
    page = fake_page("table-01-05-scif-completeness", "paper")
    texts = page.texts()
    assert texts["mio_gap"] == "+0.060 on ML-100K, +0.060 on ML-1M, +0.060 on ADM"  # 0.58 - 0.52
    assert texts["ndcg_drop"] == "0.0200 on ML-100K, 0.0200 on ML-1M, 0.0200 on ADM"  # 0.32 - 0.30
    # the paper's, over the same cells (WMF, BPR x core, random, edge), checked by hand from its CSVs
    assert texts["paper_mio_gap"] == "+0.041 on ML-100K, +0.043 on ML-1M, +0.020 on ADM"
    assert texts["paper_ndcg_drop"] == "0.0521 on ML-100K, 0.0313 on ML-1M, 0.0060 on ADM"
    assert texts["exact_mio_range"] == "0.500-0.510" and texts["exact_mio_maxdev"] == "0.010"
    assert texts["exact_verdict"].startswith("every exact cell is within 0.05 of 0.5")
    assert texts["scif_mio_range"] == "0.582-0.582"  # mean over seeds 0, 1, 2 of 0.58 + 0.002 * seed
    gap = shown(page, "mio_gap", monkeypatch)[0]
    assert gap[display_name("scif_minus_retrain")].round(3).eq(0.06).all()
    claims = page.claims.set_index("id")["verdict"]
    assert claims["mio_well_below_learn"] == "reproduced"
    # the made-up gap is 0.06 in every seed: no spread, so three seeds get the sign-flip floor 1/8 in each cell
    assert claims["scif_mio_gap_about_4pc"] == "inconclusive"
    sweep = shown(page, "damping_table", monkeypatch)[0]
    assert list(sweep["damping rule"][:5]) == ["0.001 x mean eigenvalue", "0.01 x mean eigenvalue",
                                               "0.1 x mean eigenvalue", "1 x mean eigenvalue", "absolute 0.001"]


def test_overview_figures_name_the_datasets_and_models_they_average(monkeypatch):
    values = params("figure-02-05-overview", "paper", DATASETS=["ml-100k", "ml-1m"])
    grid = ScifGrid.from_params(values)
    scif = fake_scif(grid)  # ML-1M: only WMF computed, the other backbones pending
    scif = Collected(scif.runs[(scif.runs["dataset"] == "ml-100k") | (scif.runs["model"] == "wmf")], scif.pending)
    overview = module("figure-02-05-overview")
    page = overview.build(collected=scif, exact=fake_exact(overview.exact_grid(grid)),
                          parallel=fake_exact(overview.timing_grid(grid)), exact_mio=fake_exact_mio(grid), **values)
    drawn = shown(page, "figures", monkeypatch)
    titles = [figure.axes[0].get_title() or figure.texts[0].get_text() for figure in drawn]
    assert set(page.tables["normalised"].reset_index().query("dataset == 'ml-1m'")["method"]) == {
        "retrain", "sisa", "receraser", "ultrare", "scif"}
    assert titles == [
        "Figure 5 (ML-100K): normalised aspects, mean over WMF, BPR, LightGCN",
        "Figure 5 (ML-1M): normalised aspects, mean over WMF",  # BPR and LightGCN lack SCIF: not averaged in
        "Figure 2: mean over ML-100K, ML-1M"]


def test_overview_claims_on_made_up_runs():
    page = fake_page("figure-02-05-overview", "paper", DATASETS=["ml-100k"])
    raw = page.tables["raw"]
    assert set(raw.index.get_level_values("method")) == {"retrain", "scif", *EU_METHODS}
    normalised = page.tables["normalised"].reset_index().set_index("method")
    assert normalised.loc["retrain", "efficiency"] == 0.0 and normalised.loc["sisa", "efficiency"] == 1.0
    assert 0 < normalised.loc["scif", "efficiency"] < 1  # 3 s: slower than the shards (2.1 s), faster than 10 s
    assert page.texts()["models"] == "WMF, BPR, LightGCN"
    assert page.texts()["retrain_session_ratio"] == "1 to 1 times (median 1, over 9 Retrains)"  # both Retrains 10 s
    assert page.checks[0] == "runs: 27 SCIF-page rows, 36 exact, 36 exact timed alone, 36 exact MIO"


def test_overview_takes_utility_from_the_batched_runs_and_time_from_the_runs_with_shards_alone():
    from recunlearn.report.cure4rec_scif import with_parallel_times

    keys = {"dataset": "ml-100k", "model": "bpr", "selection": "random", "ratio": 5.0, "n_shards": 10}
    batched = pd.DataFrame([{**keys, "method": m, "seed": s, "ndcg_untruncated": 0.2 + s / 100, "a_igf": 0.01,
                             "unlearn_seconds": 50.0, "record": f"b-{m}-{s}"}
                            for m in ("retrain", "sisa") for s in (0, 1)])
    alone = pd.DataFrame([{**keys, "method": m, "seed": s, "ndcg_untruncated": 0.9, "unlearn_seconds": 1.0 + s,
                           "record": f"a-{m}-{s}"} for m, s in (("retrain", 0), ("sisa", 0), ("sisa", 1))])
    merged = with_parallel_times(batched, alone).set_index(["method", "seed"])
    assert list(merged.index) == [("retrain", 0), ("sisa", 0), ("sisa", 1)]   # retrain seed 1: time pending
    assert merged["ndcg_untruncated"].tolist() == pytest.approx([0.2, 0.2, 0.21])  # utility of the batched runs
    assert merged["unlearn_seconds"].tolist() == [1.0, 1.0, 2.0]             # time of the runs alone
    assert merged.loc[("sisa", 1), "record"] == "a-sisa-1"                   # the record the time comes from
    assert with_parallel_times(batched, alone.iloc[:0]).empty


def test_table_4_counts_must_match_exactly_and_sparsity_to_the_papers_rounding():
    from recunlearn.report.cure4rec import compare_statistics

    paper = pd.DataFrame({"dataset": ["ml-100k", "adm"], "users": [943.0, 478235.0], "items": [1349.0, 266414.0],
                          "interactions": [99287.0, 836006.0], "sparsity": [0.92195, 0.99999]})
    ours = pd.DataFrame({"dataset": ["ml-100k", "adm"], "source": ["released", "released"], "users": [943, 478236],
                         "items": [1349, 266414], "interactions": [99287, 836006], "sparsity": [0.921953, 0.99991]})
    within = compare_statistics(ours, paper).set_index(["dataset", "metric"])["within_tol"]
    assert within[("ml-100k", "sparsity")] and within[("ml-100k", "users")]   # 0.921953 rounds to 0.92195
    assert not within[("adm", "users")]                                       # one user off is a difference
    assert not within[("adm", "sparsity")]                                    # 0.99991 is not 0.99999


def test_the_paper_against_itself_finds_the_retrain_cells_its_two_tables_print_differently():
    from recunlearn.report.cure4rec import paper_agreement_text, retrain_in_two_tables

    def table(values):
        return pd.DataFrame([{"dataset": d, "model": "wmf", "method": m, "selection": "core", "metric": "ndcg_untruncated",
                              "value": v} for (d, m), v in values.items()])

    table_2 = table({("ml-100k", "retrain"): 0.3, ("adm", "retrain"): 0.36, ("adm", "sisa"): 0.2})
    tables_1_5 = table({("ml-100k", "retrain"): 0.3, ("adm", "retrain"): 0.02, ("ml-1m", "retrain"): 0.2})
    runs = pd.DataFrame([{"dataset": "adm", "model": "wmf", "method": "retrain", "selection": "core", "seed": s,
                          "ndcg_untruncated": v, "hr_cure4rec": 0.1} for s, v in ((0, 0.02), (1, 0.03))])
    both = retrain_in_two_tables(table_2, tables_1_5, runs)
    assert list(both["dataset"]) == ["ml-100k", "adm"]          # Retrain cells printed by both tables only
    assert both["ratio"].tolist() == pytest.approx([1.0, 18.0])
    assert both["agree"].tolist() == [True, False]
    assert both["ours"].tolist()[1] == pytest.approx(0.025)
    assert paper_agreement_text(both) == ("equal in ML-100K (1 cell); in ADM Table 2 is 18.0 to 18.0 times "
                                          "Tables 1/5 (1 cell), ours 1.2 to 1.2 times Tables 1/5 (1 cell computed)")
    assert paper_agreement_text(retrain_in_two_tables(table_2, tables_1_5)).endswith("ours pending")


def test_a_run_two_grids_of_a_page_list_counts_once():
    from recunlearn.experiments.cure4rec_scif import ScifConfig
    from recunlearn.report.pages import distinct_runs

    default, other = ScifConfig(), ScifConfig(seed=1)
    assert distinct_runs([default, other, ScifConfig(), other]) == [default, other]


def test_pending_runs_two_collections_list_count_once():
    from recunlearn.report.pages import distinct_pending

    main = pd.DataFrame({"key": ["a", "b"], "model": ["wmf", "bpr"]})
    variants = pd.DataFrame({"key": ["b", "c"], "model": ["bpr", "bpr"]})
    assert distinct_pending(main, variants)["key"].tolist() == ["a", "b", "c"]
    assert distinct_pending(main.iloc[:0], None).empty


def test_table_3_counts_scifs_paper_cells_of_a_dataset_it_renders_as_waiting_not_outside_its_parameters():
    """Table 3 reads SCIF's times from the Tables 1/5 runs: a SCIF paper cell of a dataset in the render
    without a run waits for CPU time; it is not outside the render's parameters (its grid trains the exact
    methods only)."""
    from recunlearn.report.pages.cure4rec_runs import grid_cells_notice

    grid = ExactGrid.from_params({"DATASETS": ["ml-100k", "adm"], "MODELS": ["wmf"], "SELECTIONS": ["core"],
                                  "SEEDS": [0], "MAX_EPOCHS": 2, "COMPUTE_MISSING": False})
    cells = pd.DataFrame([{"dataset": d, "model": "wmf", "method": m, "selection": "core", "paper": 1.0,
                           "ours": 2.0 if d == "ml-100k" else np.nan} for d in ("ml-100k", "adm")
                          for m in ("retrain", "sisa", "scif")])
    keys = ["model", "method", "selection"]
    assert grid_cells_notice("t", cells, grid, keys, "waiting").why == (
        "3 of 6 paper cells without our value: 1 outside this render's parameters; 2 waiting")
    assert grid_cells_notice("t", cells, grid, keys, "waiting", read={"method": ["scif"]}).why == (
        "3 of 6 paper cells without our value: 3 waiting")
