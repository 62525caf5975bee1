"""The compute plan, the cost model and the ``compute`` command (known answers on small, fake or synthetic
runs; the fake experiment ``fake-sleep`` lives in ``compute_fakes.py`` so that spawned workers can import it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from compute_fakes import FAKE, SleepConfig, run_sleep
from recunlearn import paths
from recunlearn.cli import main
from recunlearn.compute import costs as costs_module
from recunlearn.compute.command import ComputeOptions, check_options, compute, fit_in
from recunlearn.compute.costs import DEFAULT_SECONDS, CostModel, Estimate, record_seconds
from recunlearn.compute.executors import BatchDone, Outcome, run_batch
from recunlearn.compute.plan import ComputeError, Run, batches, load_plan
from recunlearn.compute.scheduler import StopRequest, run_batches
from recunlearn.compute.summary import page_text, plan_status
from recunlearn.experiments.records import RUNNERS, record_key
from recunlearn.io import read_json_strict, write_json_atomic
from recunlearn.provenance import source_fingerprint

RUNNERS.pop(FAKE)  # registered for each test by the fixture below, so no other test sees it
HERE = Path(__file__).resolve().parent
CLEAN = "0" * 40  # a clean commit as a record names it


@pytest.fixture(autouse=True)
def fake_experiment(monkeypatch):
    monkeypatch.setitem(RUNNERS, FAKE, (SleepConfig, run_sleep))


def write_plan(path: Path, entries: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"entries": entries}, sort_keys=False))
    return path


def fake_entry(name: str, pages=("fake/page",), **params) -> dict:
    return {"name": name, "title": name, "pages": list(pages), "grids": [{"experiment": FAKE, "params": params}]}


def fake_record(config, commit=CLEAN, fingerprint="other", **extra) -> dict:
    return {"experiment": config.experiment, "key": record_key(config), "config": config.to_dict(),
            "git_commit": commit, "source_fingerprint": fingerprint, "metrics": {}, **extra}


def store(records: Path, record: dict) -> None:
    write_json_atomic(records / record["experiment"] / f"{record['key']}.json", record)


# --- the plan -------------------------------------------------------------------------------------------

def test_runs_are_in_plan_order_and_a_shared_run_is_one_run(tmp_path):
    plan = load_plan(write_plan(tmp_path / "plan.yml", [fake_entry("first", seed=[0, 1]),
                                                        fake_entry("second", pages=["fake/other"], seed=[1, 2])]))
    assert [run.config.seed for run in plan.runs] == [0, 1, 2]
    assert [run.entries for run in plan.runs] == [("first",), ("first", "second"), ("second",)]
    assert [run.config.seed for run in plan.runs_of(["second"])] == [1, 2]
    assert plan.entries_of_page("fake/other") == ["second"]


def test_a_grid_can_serve_some_of_its_entry_s_pages_and_the_page_counts_only_its_runs(tmp_path):
    entry = fake_entry("both", pages=["fake/a", "fake/b"], seed=[0, 1])
    entry["grids"].append({"experiment": FAKE, "pages": ["fake/b"], "params": {"seed": [1, 2]}})
    plan_file = write_plan(tmp_path / "plan.yml", [entry])
    plan = load_plan(plan_file)
    assert [run.config.seed for run in plan.runs] == [0, 1, 2] and plan.entries_of_page("fake/a") == ["both"]
    assert [run.config.seed for run in plan.runs_of_page("fake/a")] == [0, 1]
    assert [run.config.seed for run in plan.runs_of_page("fake/b")] == [0, 1, 2]
    status = plan_status(plan_file, tmp_path / "records")
    assert page_text(status, "fake/a").startswith("0 of 2 runs done")
    assert page_text(status, "fake/b").startswith("0 of 3 runs done")


def test_a_page_s_command_names_only_the_entries_with_a_pending_run_of_it(tmp_path):
    plan_file = write_plan(tmp_path / "plan.yml", [fake_entry("finished", seed=[0]), fake_entry("open", seed=[1, 2])])
    store(tmp_path / "records", fake_record(SleepConfig(seed=0)))
    text = page_text(plan_status(plan_file, tmp_path / "records"), "fake/page")
    assert text.startswith("1 of 3 runs done") and text.endswith("`python -m recunlearn compute --only open`")
    hours_only = page_text(plan_status(plan_file, tmp_path / "records"), "fake/page", counts=False)
    assert hours_only.startswith("~") and text.endswith(hours_only)
    for seed in (1, 2):
        store(tmp_path / "records", fake_record(SleepConfig(seed=seed)))
    done = plan_status(plan_file, tmp_path / "records")
    assert page_text(done, "fake/page") == "all 3 runs done" and page_text(done, "fake/page", counts=False) == ""


def test_the_status_page_plan_table_counts_a_shared_run_once_in_its_total(tmp_path):
    from recunlearn.report.status import plan_table

    plan_file = write_plan(tmp_path / "plan.yml", [fake_entry("first", seed=[0, 1]),
                                                   fake_entry("second", pages=["fake/other"], seed=[1, 2])])
    store(tmp_path / "records", fake_record(SleepConfig(seed=1)))  # the run both entries list
    lines = plan_table(plan_status(plan_file, tmp_path / "records"))
    assert lines[2].startswith("| `first` | fake/page | 2 | 1 | 2 | 1 |")
    assert lines[3].startswith("| `second` | fake/other | 2 | 1 | 1 | 1 |")
    assert lines[-1].startswith("| **the whole plan** | | | 1 | 3 | 2 |")
    left = [float(line.rsplit("|", 2)[1]) for line in lines[2:]]
    assert left[-1] == pytest.approx(left[0] + left[1], abs=0.11)


def test_the_dry_run_names_the_entry_that_computes_a_shared_run(tmp_path, capsys):
    plan_file = write_plan(tmp_path / "plan.yml", [fake_entry("first", seed=[0, 1]),
                                                   fake_entry("second", pages=["fake/other"], seed=[1, 2])])
    assert main(["compute", "--plan", str(plan_file), "--records", str(tmp_path / "r"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "listed: the runs the entry lists" in out       # the columns are explained
    assert "  second: 1 by first" in out                    # seed 1: listed by both, computed by the first


@pytest.mark.parametrize("entries, message", [
    ([{**fake_entry("a"), "grids": [{"experiment": FAKE, "pages": ["fake/other"], "params": {}}]}],
     "a grid's pages must be a non-empty list of the entry's pages"),
    ([{**fake_entry("a"), "grids": [{"experiment": FAKE, "params": {}, "note": 1}]}], "optionally pages"),
    ([fake_entry("a", seed=-1)], "entry a: parameter SEED = -1: must be >= 0"),
    ([fake_entry("a"), fake_entry("a")], "entry names must be unique; repeated: ['a']"),
    ([fake_entry("a", device="cpu")], "must not set the device"),
    ([{"name": "a", "pages": [], "grids": []}], "expected the fields"),
    ([{**fake_entry("a"), "grids": [{"experiment": "nope", "params": {}}]}], "unknown experiment 'nope'"),
])
def test_a_bad_plan_is_refused_naming_the_entry(tmp_path, entries, message):
    with pytest.raises(ComputeError) as error:
        load_plan(write_plan(tmp_path / "plan.yml", entries))
    assert message in str(error.value)


def test_unknown_entry_in_only_is_an_error_line(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.yml", [fake_entry("a")])
    status = main(["compute", "--plan", str(plan), "--records", str(tmp_path / "r"), "--only", "b", "--dry-run"])
    assert status == 2
    assert "error: unknown plan entry ['b']; entries of" in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    (ComputeOptions(gpu_minutes=10), "--gpu-minutes needs --device cuda"),
    (ComputeOptions(address="auto"), "--address needs --executor ray"),
    (ComputeOptions(workers=0), "--workers must be at least 1"),
    (ComputeOptions(hours=0), "--hours must be positive"),
    (ComputeOptions(finish_within=-1.0), "--finish-within must be positive, got -1.0"),
    (ComputeOptions(executor="ray", gpus_per_run=0.5), "--gpus-per-run needs --executor ray and --device cuda"),
])
def test_a_wrong_option_fails_before_anything_runs(options, message):
    with pytest.raises(ComputeError, match=message):
        check_options(options)


def test_a_stage_path_that_is_a_file_or_not_empty_fails_before_anything_runs(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ComputeError, match="a file, not a directory"):
        check_options(ComputeOptions(stage=tmp_path / "file"))
    with pytest.raises(ComputeError, match="not empty"):
        check_options(ComputeOptions(stage=tmp_path))


def test_batches_group_the_runs_sharing_an_original_model_within_an_entry(tmp_path):
    casper = {"dataset": "foursquare", "model": ["lstm", "jodie"], "selector": ["none", "random"], "epochs": 50}
    later = {"dataset": "foursquare", "model": "lstm", "selector": "latest", "epochs": 50}
    plan = load_plan(write_plan(tmp_path / "plan.yml", [
        {"name": "a", "title": "", "pages": [], "grids": [{"experiment": "casper-rls", "params": casper}]},
        {"name": "b", "title": "", "pages": [], "grids": [{"experiment": "casper-rls", "params": later},
                                                          {"experiment": FAKE, "params": {"seed": [0, 1]}}]}]))
    grouped = [[(run.config.experiment, getattr(run.config, "model", None), getattr(run.config, "selector", None))
                for run in batch] for batch in batches(plan.runs)]
    assert grouped == [[("casper-rls", "lstm", "none"), ("casper-rls", "lstm", "random")],
                       [("casper-rls", "jodie", "none"), ("casper-rls", "jodie", "random")],
                       [("casper-rls", "lstm", "latest")], [(FAKE, None, None)], [(FAKE, None, None)]]


def test_batches_give_the_sru_runs_sharing_a_full_data_model_to_one_worker(tmp_path):
    methods = {"dataset": "games", "model": ["gru4rec", "sasrec"], "seed": [0, 1], "method": ["sisa", "sru"]}
    plan = load_plan(write_plan(tmp_path / "plan.yml", [
        {"name": "a", "title": "", "pages": [], "grids": [{"experiment": "sru-unlearning", "params": methods}]}]))
    grouped = [[(run.config.model, run.config.seed, run.config.method) for run in batch] for batch in batches(plan.runs)]
    assert grouped == [[("gru4rec", s, "sisa"), ("gru4rec", s, "sru")] for s in (0, 1)] + \
                      [[("sasrec", s, "sisa"), ("sasrec", s, "sru")] for s in (0, 1)]


def test_done_means_strict_and_clean_or_made_by_this_code(tmp_path):
    plan_file = write_plan(tmp_path / "plan.yml", [fake_entry("a", seed=[0, 1, 2, 3, 4])])
    records = tmp_path / "records"
    configs = [SleepConfig(seed=s) for s in range(5)]
    store(records, fake_record(configs[0]))                                             # clean: done
    store(records, fake_record(configs[1], commit=CLEAN + "-dirty"))                   # dirty, other code
    store(records, fake_record(configs[2], commit=CLEAN + "-dirty", fingerprint=source_fingerprint()))  # this code
    bad = records / FAKE / f"{record_key(configs[3])}.json"
    bad.write_text('{"value": NaN}')                                                    # not strict JSON
    status = plan_status(plan_file, records)
    assert [run.config.seed for run in status.pending(status.plan.runs)] == [1, 3, 4]
    assert page_text(status, "fake/page").startswith("2 of 5 runs done, ~")
    assert "`python -m recunlearn compute --only a`" in page_text(status, "fake/page")


# --- the cost model -------------------------------------------------------------------------------------

@pytest.fixture
def known_rows(monkeypatch):
    """Data rows by dataset, without reading data files."""
    rows = {"ml-100k": 100, "ml-1m": 1000, "foursquare": 2000}
    monkeypatch.setattr(costs_module, "file_rows", lambda dataset, role: rows.get(dataset))


def _learn(**values):
    return RUNNERS["cure4rec-learn"][0](**values)


def _casper(**values):
    return RUNNERS["casper-rls"][0](**values)


def test_estimates_from_a_synthetic_record_set(known_rows):
    learn = [fake_record(_learn(model="wmf", seed=s), cost={"cpu_seconds": 10.0 * (s + 1), "wall_seconds": 99.0})
             for s in range(3)]
    legacy = fake_record(_learn(model="bpr"), timings={"wall_seconds": 7.0})  # no cost: read from its timings
    exact = fake_record(RUNNERS["cure4rec-exact"][0](model="wmf", method="sisa"), timings={"unlearn_wall_seconds": 5.0})
    model = CostModel([*learn, legacy, exact])

    measured = model.estimate(_learn(model="wmf", seed=7))
    assert (measured.seconds, measured.basis) == (20.0, "measured")  # median; seeds do not change the cost
    assert model.estimate(_learn(model="bpr")).seconds == 7.0
    scaled = model.estimate(_learn(model="wmf", dataset="ml-1m"))
    assert (scaled.seconds, scaled.basis) == (200.0, "scaled")  # x 1000 / 100 data rows
    assert not scaled.unscaled and not measured.unscaled
    unknown = model.estimate(_learn(model="wmf", dataset="adm"))  # no rows known for ADM here: not scaled by data
    assert unknown.basis == "scaled" and unknown.unscaled and "data rows unknown" in unknown.source
    gpu = model.estimate(_learn(model="wmf", device="cuda"))
    assert (gpu.seconds, gpu.source) == (20.0, "median of 3 record(s) (CPU records)")
    proxied = model.estimate(RUNNERS["cure4rec-exact-mio"][0](model="wmf", method="sisa", dataset="ml-1m"))
    assert (proxied.seconds, proxied.basis) == (50.0, "proxy")
    sibling = model.estimate(_learn(model="lightgcn"))
    assert (sibling.seconds, sibling.basis) == (13.5, "sibling")  # median of wmf's 20 and bpr's 7
    assert model.estimate(SleepConfig()).seconds == DEFAULT_SECONDS


def test_a_measured_learn_ratio_between_datasets_replaces_the_ratio_of_rows(known_rows):
    learn = [fake_record(_learn(model="lightgcn", dataset=d), cost={"cpu_seconds": c, "wall_seconds": c})
             for d, c in (("ml-100k", 10.0), ("ml-1m", 400.0))]  # 40x slower on 10x the rows
    exact = fake_record(RUNNERS["cure4rec-exact"][0](model="lightgcn", method="sisa"), timings={"unlearn_wall_seconds": 5.0})
    other = fake_record(RUNNERS["cure4rec-exact"][0](model="wmf", method="sisa"), timings={"unlearn_wall_seconds": 5.0})
    model = CostModel([*learn, exact, other])
    scaled = model.estimate(RUNNERS["cure4rec-exact"][0](model="lightgcn", method="sisa", dataset="ml-1m"))
    assert (scaled.seconds, scaled.basis) == (200.0, "scaled") and "measured x 40" in scaled.source
    by_other = model.estimate(RUNNERS["cure4rec-exact"][0](model="wmf", method="sisa", dataset="ml-1m"))
    assert by_other.seconds == 200.0  # no Learn records of WMF: LightGCN's ratio, the only model measured on both
    assert "wmf not measured on both: cure4rec-learn lightgcn" in by_other.source
    by_rows = CostModel([learn[0], exact]).estimate(
        RUNNERS["cure4rec-exact"][0](model="lightgcn", method="sisa", dataset="ml-1m"))
    assert by_rows.seconds == 50.0  # no model's Learn measured on both datasets: the ratio of data rows


def test_a_model_never_measured_on_a_dataset_scales_by_the_largest_other_model_s_ratio(known_rows):
    learn = [fake_record(_learn(model=m, dataset=d), cost={"cpu_seconds": c, "wall_seconds": c})
             for m, ratio in (("wmf", 40.0), ("bpr", 25.0))
             for d, c in (("ml-100k", 2.0), ("ml-1m", 2.0 * ratio))]
    small = fake_record(_learn(model="lightgcn"), cost={"cpu_seconds": 30.0, "wall_seconds": 30.0})
    scaled = CostModel([*learn, small]).estimate(_learn(model="lightgcn", dataset="ml-1m"))
    assert (scaled.seconds, scaled.basis) == (1200.0, "scaled")  # 30 s x WMF's 40, not BPR's 25 nor the rows' 10
    assert "cure4rec-learn wmf, the largest other model's" in scaled.source


def test_other_kinds_of_the_same_experiment_measured_on_both_datasets_give_the_ratio_first(known_rows):
    exact = RUNNERS["cure4rec-exact"][0]
    learn = [fake_record(_learn(model="lightgcn", dataset=d), cost={"cpu_seconds": c, "wall_seconds": c})
             for d, c in (("ml-100k", 10.0), ("ml-1m", 400.0))]                      # Learn: x 40
    both = [fake_record(exact(model="lightgcn", method=m, dataset=d), cost={"cpu_seconds": c, "wall_seconds": c})
            for m, ratio in (("sisa", 20.0), ("retrain", 30.0), ("receraser", 90.0))
            for d, c in (("ml-100k", 2.0), ("ml-1m", 2.0 * ratio))]                 # own kinds: x 20, 30, 90
    only_small = fake_record(exact(model="lightgcn", method="ultrare"), cost={"cpu_seconds": 5.0, "wall_seconds": 5.0})
    model = CostModel([*learn, *both, only_small])
    scaled = model.estimate(exact(model="lightgcn", method="ultrare", dataset="ml-1m"))
    assert (scaled.seconds, scaled.basis) == (150.0, "scaled")  # 5 s x the median of 20, 30, 90
    assert "3 other kind(s) measured on both" in scaled.source
    measured = model.estimate(exact(model="lightgcn", method="sisa", dataset="ml-1m"))
    assert (measured.seconds, measured.basis) == (40.0, "measured")


def test_casper_costs_count_the_original_once_per_batch(known_rows):
    trainings = {"train_original_seconds": 10.0, "train_perturbed_seconds": 15.0}
    trained = fake_record(_casper(selector="none", epochs=10, max_rows=1000),
                          timings={"wall_seconds": 30.0, **trainings})
    cached = fake_record(_casper(selector="random", epochs=10, max_rows=1000),  # its original came from the cache
                         timings={"wall_seconds": 18.0, **trainings})
    model = CostModel([trained, cached])
    estimate = model.estimate(_casper(selector="latest", epochs=10, max_rows=1000))
    assert (estimate.seconds, estimate.shared_seconds) == (29.0, 10.0)  # median of 30 and 18 + 10
    paper = model.estimate(_casper(selector="latest", epochs=50))
    assert (paper.seconds, paper.shared_seconds) == (290.0, 100.0)  # x 2000 / 1000 rows x 50 / 10 epochs
    three = [_casper(selector=s, epochs=50) for s in ("none", "random", "latest")]
    assert model.batch_seconds(three) == 3 * (290.0 - 100.0) + 100.0


def test_latentcross_with_a_gru_cell_is_a_kind_of_its_own(known_rows):
    """The paper's GRU cell costs more per epoch than the code's LSTM cell: a GRU-cell run is estimated
    from GRU-cell records (here scaled from a smaller prefix), never from the LSTM cell's."""
    lstm = fake_record(_casper(model="latentcross", selector="none", epochs=50),
                       timings={"wall_seconds": 600.0, "train_original_seconds": 300.0, "train_perturbed_seconds": 300.0})
    gru = fake_record(_casper(model="latentcross", latentcross_cell="gru", selector="none", epochs=10, max_rows=1000),
                      timings={"wall_seconds": 40.0, "train_original_seconds": 20.0, "train_perturbed_seconds": 20.0})
    model = CostModel([lstm, gru])
    assert model.estimate(_casper(model="latentcross", selector="random", epochs=50)).seconds == 600.0
    paper_gru = model.estimate(_casper(model="latentcross", latentcross_cell="gru", selector="random", epochs=50))
    assert (paper_gru.basis, paper_gru.seconds) == ("scaled", 400.0)  # x 2000 / 1000 rows x 50 / 10 epochs


def test_jodie_scales_by_rows_times_users_plus_items_and_its_siblings_by_their_own_size(known_rows, monkeypatch):
    """JODIE's dense prediction layer spans users and items: its estimate scales by training rows x
    (users + items); estimated from another model's records (no JODIE record yet), it is that model's
    estimate at the same data, not scaled by JODIE's size."""
    from recunlearn.experiments import casper as casper_experiment

    streams = {("foursquare", 1000): (900, 100, 400), ("foursquare", None): (1800, 300, 700)}
    monkeypatch.setattr(casper_experiment, "_stream_size", lambda dataset, max_rows: streams[dataset, max_rows])
    small = fake_record(_casper(model="jodie", selector="none", epochs=10, max_rows=1000),
                        timings={"wall_seconds": 30.0, "train_original_seconds": 10.0, "train_perturbed_seconds": 15.0})
    lstm = fake_record(_casper(model="lstm", selector="none", epochs=10, max_rows=1000),
                       timings={"wall_seconds": 20.0, "train_original_seconds": 8.0, "train_perturbed_seconds": 8.0})
    full = _casper(model="jodie", selector="none", epochs=10)
    scaled = CostModel([small, lstm]).estimate(full)
    assert scaled.basis == "scaled" and scaled.seconds == pytest.approx(30.0 * (1800 * 1000) / (900 * 500))
    sibling = CostModel([lstm]).estimate(full)
    assert sibling.basis == "sibling" and sibling.seconds == pytest.approx(20.0 * 2000 / 1000)  # LSTM: x data rows


SRU_WORK = {("games", 5000): 70_000 * 23_716, ("games", None): 287_000 * 23_716, ("beauty", None): 354_000 * 54_543}


@pytest.fixture
def sru_work(monkeypatch):
    """SRU run sizes by (dataset, max_sessions), without reading data files."""
    from recunlearn.experiments import sru as sru_experiment

    monkeypatch.setattr(sru_experiment, "_work", lambda dataset, split_seed, max_sessions: SRU_WORK[dataset, max_sessions])


def _sru_record(config, cpu_seconds, full=None, shards=()):
    """A record of an SRU run whose full-data model and shards ran these epochs (None: not recorded)."""
    trainings = {} if full is None else {"full_model": {"epochs_run": full},
                                         "shards": [{"epochs_run": e, "cached": False} for e in shards]}
    return fake_record(config, cost={"cpu_seconds": cpu_seconds, "wall_seconds": 2 * cpu_seconds},
                       timings={"full_model_cached": False}, **trainings)


def test_sru_estimates_scale_by_the_softmax_work_of_the_sessions_read(sru_work):
    sru = RUNNERS["sru-unlearning"][0]
    reduced = fake_record(sru(method="retrain", max_epochs=30, max_sessions=5000),
                          cost={"cpu_seconds": 750.0, "wall_seconds": 1500.0}, timings={"full_model_cached": False})
    model = CostModel([reduced])
    games = model.estimate(sru(method="retrain", max_epochs=100))
    assert games.basis == "scaled" and games.seconds == pytest.approx(750.0 * 287 / 70 * 100 / 30)
    beauty = model.estimate(sru(method="retrain", dataset="beauty", max_epochs=100))
    assert beauty.seconds == pytest.approx(750.0 * (354_000 * 54_543) / (70_000 * 23_716) * 100 / 30)
    assert model.estimate(sru(method="sru", max_epochs=30, max_sessions=5000)).basis == "sibling"


def test_sru_epochs_are_those_trainings_reach_not_max_epochs(sru_work):
    sru = RUNNERS["sru-unlearning"][0]
    reduced = [_sru_record(sru(method="retrain", max_epochs=30, max_sessions=5000, seed=s), 750.0, 30, [30])
               for s in range(3)]  # stopped by max_epochs
    full_scale = _sru_record(sru(method="sisa", dataset="beauty", max_epochs=100), 9000.0, 30, [30] * 8)  # stopped early
    model = CostModel([*reduced, full_scale])
    games = model.estimate(sru(method="retrain", max_epochs=100))
    assert games.basis == "scaled"
    assert games.seconds == pytest.approx(750.0 * 287 / 70)  # x 30 reached / 30 reached, not x 100 / 30
    assert "30 epochs (reached 30)" in games.source and "(epochs reached: 30 of 100)" in games.source


def test_sru_epochs_without_a_record_at_the_target_epochs_keep_the_max_epochs_ratio(sru_work):
    sru = RUNNERS["sru-unlearning"][0]
    reduced = _sru_record(sru(method="retrain", max_epochs=30, max_sessions=5000), 750.0, 30, [30])
    longer = _sru_record(sru(method="retrain", max_epochs=50, max_sessions=5000, seed=1), 750.0, 30, [30])
    games = CostModel([reduced, longer]).estimate(sru(method="retrain", max_epochs=100))
    assert games.seconds == pytest.approx(750.0 * 287 / 70 * 100 / 30)  # no record configured for 100: the bound
    assert "epochs reached:" not in games.source
    stopped = _sru_record(sru(method="retrain", max_epochs=30, max_sessions=5000), 750.0, 25, [25])
    games = CostModel([stopped]).estimate(sru(method="retrain", max_epochs=100))
    assert games.seconds == pytest.approx(750.0 * 287 / 70 * 100 / 25)  # 100 epochs at the measured cost of 25


def test_sru_epochs_reached_is_the_mean_over_the_trainings_a_record_lists():
    from recunlearn.experiments.sru import epochs_reached

    assert epochs_reached({"full_model": {"epochs_run": 30}, "shards": [{"epochs_run": 30}, {"epochs_run": 15}]}) == 25
    assert epochs_reached({}) is None
    assert epochs_reached({"full_model": {"train_seconds": 1.0}, "shards": [{"cached": True}]}) is None


def test_a_record_cost_is_cpu_seconds_and_a_cached_original_is_added_back_in_cpu_seconds():
    timings = {"wall_seconds": 17.0, "train_original_seconds": 10.0, "train_perturbed_seconds": 15.0}
    cached = fake_record(_casper(selector="random"), cost={"cpu_seconds": 12.0, "wall_seconds": 24.0}, timings=timings)
    assert record_seconds(cached) == (17.0, 5.0)  # 12 CPU s + the original's 10 s at the run's CPU/wall ratio 0.5
    trained = fake_record(_casper(selector="random"), cost={"cpu_seconds": 30.0, "wall_seconds": 40.0}, timings=timings)
    assert record_seconds(trained) == (30.0, 7.5)
    on_gpu = fake_record(_learn(device="cuda"), cost={"cpu_seconds": 30.0, "wall_seconds": 40.0})
    assert record_seconds(on_gpu) == (40.0, 0.0)  # a GPU record counts wall seconds


def test_gpu_minutes_keep_the_batches_that_fit_in_plan_order(tmp_path):
    plan = load_plan(write_plan(tmp_path / "plan.yml", [fake_entry("a", seconds=[1800.0, 3000.0, 1200.0])]))

    class Seconds:  # every estimate measured on the device
        def estimate(self, config):
            return Estimate(config.seconds, 0.0, "measured", "")

        def batch_seconds(self, configs):
            return sum(config.seconds for config in configs)

    chosen = fit_in(batches(plan.runs), Seconds(), 60 * 60)
    assert [[run.config.seconds for run in batch] for batch in chosen] == [[1800.0], [1200.0]]


# --- running: scheduler rules on an in-process executor -----------------------------------------------------

class InlineExecutor:
    """Runs one submitted batch at a time inside the test process, through the same ``run_batch``."""

    capacity = 1

    def __init__(self, records: Path):
        self.records, self.waiting, self.stopped = records, [], False

    def free_slots(self):
        return 0 if self.waiting else 1

    def submit(self, batch_id, configs, deadlines):
        self.waiting.append((batch_id, configs, deadlines))

    def poll(self, timeout):
        if not self.waiting:
            return []
        batch_id, configs, deadlines = self.waiting.pop(0)
        messages = []
        run_batch(batch_id, configs, self.records,
                  lambda i: self.stopped or (deadlines[i] is not None and time.time() >= deadlines[i]),
                  messages.append)
        return messages + [BatchDone(batch_id)]

    def stop(self):
        self.stopped = True

    def terminate(self):
        self.waiting.clear()


def _plan_batches(tmp_path, **params):
    return batches(load_plan(write_plan(tmp_path / "plan.yml", [fake_entry("a", **params)])).runs)


def test_a_deadline_stops_new_runs_and_lets_the_running_one_finish(tmp_path):
    records, lines = tmp_path / "records", []
    todo = _plan_batches(tmp_path, seed=[0, 1, 2, 3], seconds=2.0)  # runs start at about 0 and 2 s
    tally = run_batches(todo, InlineExecutor(records), CostModel([]), deadline=time.time() + 3.0, out=lines.append)
    assert (tally.computed, tally.not_started, tally.stopped_by) == (2, 2, "deadline")
    assert len(list((records / FAKE).glob("*.json"))) == 2
    assert any(line.startswith("stopping (deadline reached)") for line in lines)


class EstimatedAs:
    """Costs that estimate each run at ``estimate(config)`` seconds, measured, nothing shared."""

    def __init__(self, estimate):
        self.seconds = estimate

    def estimate(self, config):
        return Estimate(self.seconds(config), 0.0, "measured", "")

    def batch_seconds(self, configs):
        return sum(self.seconds(config) for config in configs)


def test_with_a_finishing_time_a_batch_that_would_not_end_before_it_is_passed_over_for_later_ones(tmp_path):
    records, lines = tmp_path / "records", []
    todo = _plan_batches(tmp_path, seed=[0, 1, 2], seconds=0.0)
    long_seed = EstimatedAs(lambda config: 1000.0 if config.seed == 1 else 1.0)
    tally = run_batches(todo, InlineExecutor(records), long_seed, finish_by=time.time() + 100.0, out=lines.append)
    assert (tally.computed, tally.not_started, tally.stopped_by) == (2, 1, "time left")
    assert sorted(json.loads(f.read_text())["config"]["seed"] for f in (records / FAKE).glob("*.json")) == [0, 2]
    assert any(line.startswith("stopping: none of the 1 run(s) left is expected to finish") for line in lines)


def test_a_finishing_time_that_every_batch_fits_changes_nothing(tmp_path):
    todo = _plan_batches(tmp_path, seed=[0, 1], seconds=0.0)
    tally = run_batches(todo, InlineExecutor(tmp_path / "records"), EstimatedAs(lambda config: 1.0),
                        finish_by=time.time() + 100.0, out=[].append)
    assert (tally.computed, tally.not_started, tally.stopped_by) == (2, 0, "")


def test_a_finishing_time_counts_the_pace_and_the_margin(tmp_path):
    """Runs estimated at 0.02 s that take 0.4 s: after the first, the pace is at least 20, so the
    second is expected to take at least 0.02 x 20 x 1.25 = 0.5 s and does not fit in the 0.1 s or less
    left of 0.5 s. By its bare estimate (0.02 s) it would have fitted."""
    from recunlearn.compute.scheduler import FINISH_MARGIN

    assert FINISH_MARGIN == 1.25
    todo = _plan_batches(tmp_path, seed=[0, 1], seconds=0.4)
    tally = run_batches(todo, InlineExecutor(tmp_path / "records"), EstimatedAs(lambda config: 0.02),
                        finish_by=time.time() + 0.5, out=[].append)
    assert (tally.computed, tally.not_started, tally.stopped_by) == (1, 1, "time left")


def test_each_run_of_a_started_batch_starts_only_while_it_is_expected_to_end_in_time(tmp_path):
    """A batch longer than the time given still makes progress: it starts because its first run fits,
    and each later run starts only before its own latest start. Runs estimated at 0.4 s (x 1.25 = 0.5 s)
    that take 0.5 s, 1.2 s given: the first starts at 0 (latest 0.7), the second at 0.5 (latest 0.7),
    the third would start at 1.0 or later and is skipped."""
    plan = load_plan(write_plan(tmp_path / "plan.yml", [fake_entry("a", seed=[0], seconds=[0.5, 0.51, 0.52])]))
    batch = [run for batch in batches(plan.runs) for run in batch]
    tally = run_batches([batch], InlineExecutor(tmp_path / "records"), EstimatedAs(lambda config: 0.4),
                        finish_by=time.time() + 1.2, out=[].append)
    assert (tally.computed, tally.skipped) == (2, 1)


def test_the_latest_starts_count_a_batchs_shared_work_in_its_first_run_only():
    from recunlearn.compute.scheduler import _Schedule

    class Costs:
        def estimate(self, config):
            return Estimate(100.0, 60.0, "measured", "made up")

    runs = [Run(SleepConfig(seed=seed), f"k{seed}", ("a",)) for seed in range(3)]
    schedule = _Schedule([runs], Costs())
    assert schedule.latest_starts(runs, None, 50.0) == [50.0, 50.0, 50.0]
    assert schedule.latest_starts(runs, 1000.0, None) == [1000.0 - 125.0, 1000.0 - 50.0, 1000.0 - 50.0]
    assert schedule.latest_starts(runs, 1000.0, 900.0) == [875.0, 900.0, 900.0]


def test_the_eta_runs_at_the_pace_the_computed_runs_kept_against_their_estimates(tmp_path):
    records, lines = tmp_path / "records", []
    todo = _plan_batches(tmp_path, seed=[0, 1, 2], seconds=0.3)
    run_batches(todo, InlineExecutor(records), CostModel([]), out=lines.append)  # estimated: an hour each
    first = next(line for line in lines if line.startswith("[1/3]"))
    assert "left: 2 runs, ~2.0 CPU-h by the estimates, ETA 0.0 min on 1 worker(s) at the pace so far" in first


def test_a_run_that_resumed_trainings_counts_the_seconds_spent_before_a_restart(tmp_path, monkeypatch):
    """A run whose trainings went on from a state saved by an earlier process (recunlearn.models.resume):
    its record's cost and its progress line count the seconds spent there, so the pace is not flattered."""
    calls = iter([{"cpu_seconds": 0.0, "wall_seconds": 0.0}, {"cpu_seconds": 50.0, "wall_seconds": 60.0}])
    monkeypatch.setattr("recunlearn.experiments.records.earlier_seconds", lambda: next(calls))
    records, lines = tmp_path / "records", []
    run_batches(_plan_batches(tmp_path, seed=[0]), InlineExecutor(records), CostModel([]), out=lines.append)
    record = json.loads(next((records / FAKE).glob("*.json")).read_text())
    assert record["cost"]["resumed"] == {"cpu_seconds": 50.0, "wall_seconds": 60.0}
    assert record["cost"]["wall_seconds"] >= 60.0 and record["cost"]["cpu_seconds"] >= 50.0
    line = next(line for line in lines if line.startswith("[1/1] computed"))
    assert ", 1.0 min of it before a restart (estimate" in line, lines


def test_the_pace_expects_a_batchs_shared_work_once():
    """The first computed run of a batch is expected to take its estimate alone; its later runs reuse
    the batch's shared work (a CASPER batch's original model) and are expected to take the rest. Known
    answer: runs that take exactly that keep the pace at 1."""
    from recunlearn.compute.scheduler import _Schedule

    class Costs:
        def estimate(self, config):
            return Estimate(100.0, 60.0, "measured", "made up")

        def batch_seconds(self, configs):
            return 100.0 + 40.0 * (len(list(configs)) - 1)

    runs = [Run(SleepConfig(seed=seed), f"k{seed}", ("a",)) for seed in range(3)]
    schedule = _Schedule([runs[:2], runs[2:]], Costs())
    assert schedule.seconds_left() == 140.0 + 100.0
    for batch, run, took in ((0, runs[0], 100.0), (0, runs[1], 40.0), (1, runs[2], 100.0)):
        assert schedule.computed(Outcome(batch, FAKE, run.key, "computed", took), run) == took
    assert schedule.pace() == 1.0


def test_a_stop_request_starts_no_new_run(tmp_path):
    records, stop = tmp_path / "records", StopRequest()
    todo = _plan_batches(tmp_path, seed=[0, 1], seconds=0.0)
    lines = []

    def out(line):  # the first progress line stands for a SIGTERM arriving during the first run
        lines.append(line)
        stop.ask()

    tally = run_batches(todo, InlineExecutor(records), CostModel([]), stop=stop, out=out)
    assert (tally.computed, tally.not_started, tally.stopped_by) == (1, 1, "signal")


def test_failed_runs_are_reported_and_the_others_go_on(tmp_path):
    records, lines = tmp_path / "records", []
    todo = _plan_batches(tmp_path, seed=0, fail=[True, False])
    tally = run_batches(todo, InlineExecutor(records), CostModel([]), out=lines.append)
    assert (tally.failed, tally.computed, tally.ok) == (1, 1, False)
    assert "RuntimeError: asked to fail" in lines[0]


def test_reduced_scale_runs_keep_their_stored_models_apart_from_the_paper_scale_ones(tmp_path, monkeypatch):
    """A run on a prefix of its data stores its shared models in a subfolder, so that cheap models never
    push the paper-scale ones (tens of CPU-minutes each) out of a kind's most recently used files."""
    from recunlearn.compute import executors
    from recunlearn.experiments.casper import CasperConfig
    from recunlearn.experiments.sru import SruConfig

    base = str(tmp_path / "models")
    assert executors.models_dir(CasperConfig(epochs=50), base) == base
    assert executors.models_dir(SruConfig(), base) == base
    assert executors.models_dir(CasperConfig(max_rows=20000), base) == str(tmp_path / "models" / "reduced-scale")
    assert executors.models_dir(SruConfig(max_sessions=5000), base) == str(tmp_path / "models" / "reduced-scale")
    seen = []
    monkeypatch.setattr("recunlearn.experiments.records.run_or_load",
                        lambda config, *a, **k: seen.append(os.environ.get(paths.MODELS_ENV)) or {})
    monkeypatch.setenv(paths.MODELS_ENV, base)
    for config in (CasperConfig(max_rows=20000), CasperConfig()):
        assert executors.compute_run(config, tmp_path / "records")[0] == "computed"
        assert os.environ[paths.MODELS_ENV] == base  # set around the run only
    assert seen == [str(tmp_path / "models" / "reduced-scale"), base]


# --- running: the command with local worker processes --------------------------------------------------------

def test_compute_writes_each_record_and_resumes_where_it_stopped(tmp_path):
    plan = write_plan(tmp_path / "plan.yml", [fake_entry("a", seed=[0, 1, 2], label="abc")])
    records, lines = tmp_path / "records", []
    assert compute(ComputeOptions(plan=plan, records=records, workers=2), out=lines.append) == 0
    stored = [read_json_strict(p) for p in sorted((records / FAKE).glob("*.json"))]
    assert sorted(r["metrics"]["value"] for r in stored) == [3.0, 4.0, 5.0]
    assert all(r["cost"]["cpu_seconds"] >= 0 for r in stored)
    assert sum(line.startswith("[") and " computed fake-sleep " in line for line in lines) == 3
    again = []
    assert compute(ComputeOptions(plan=plan, records=records), out=again.append) == 0
    assert again == [f"nothing to compute: all 3 runs of {plan} on cpu are done"]


def _compute_process(plan: Path, records: Path) -> subprocess.Popen:
    script = textwrap.dedent(f"""
        import sys
        import compute_fakes  # registers the fake experiment
        from recunlearn.cli import main
        sys.exit(main(["compute", "--plan", {str(plan)!r}, "--records", {str(records)!r}, "--workers", "1"]))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _wait_for_records(folder: Path, count: int, process: subprocess.Popen, timeout: float = 120.0) -> None:
    end = time.time() + timeout
    while len(list(folder.glob("*.json"))) < count:
        assert process.poll() is None, process.communicate()[0]
        assert time.time() < end, "no record appeared in time"
        time.sleep(0.1)


def _assert_whole_records(folder: Path) -> list[dict]:
    stored = [read_json_strict(p) for p in folder.glob("*.json")]
    assert all(r["key"] and "metrics" in r and "cost" in r for r in stored)
    return stored


@pytest.mark.parametrize("signals", [1, 2], ids=["one SIGTERM: the running run finishes", "two: it ends now"])
def test_sigterm_stops_cleanly_and_leaves_no_partial_record(tmp_path, signals):
    plan = write_plan(tmp_path / "plan.yml", [fake_entry("a", seed=[0, 1, 2, 3], seconds=3.0)])
    records = tmp_path / "records"
    process = _compute_process(plan, records)
    _wait_for_records(records / FAKE, 1, process)
    time.sleep(1.0)  # the second run (3 s) is in progress
    for _ in range(signals):
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    stored = _assert_whole_records(records / FAKE)
    if signals == 1:  # the run in progress when the signal came finished and was written; none started after it
        assert len(stored) == 2 and "2 computed" in output and "stopping (stop requested)" in output
    else:
        assert len(stored) == 1 and "second stop request" in output
    assert "run the same command to resume" in output


# --- the book's plan ---------------------------------------------------------------------------------------------

BOOK_PLAN = paths.REPO_ROOT / "grids" / "plan.yml"
PARAMS = paths.REPO_ROOT / "notebooks" / "params"
CURE4REC_DATASETS = ["ml-100k", "ml-1m", "adm"]


def page_configs(page: str, params: dict) -> list:
    """The configs a page reads at ``params``, expanded the way its notebook does (on CPU)."""
    from recunlearn.experiments.casper import Figure8Grid
    from recunlearn.experiments.cure4rec import LearnGrid
    from recunlearn.experiments.cure4rec_exact import COMBINERS, ExactGrid
    from recunlearn.experiments.cure4rec_scif import (DAMPING_SWEEP_FRACTIONS, ExactMioConfig, ScifConfig,
                                                      ScifGrid)

    paper, stem = page.split("/")
    params = {**params, **({"DEVICE": "cpu"} if "DEVICE" in params else {})}
    if paper == "sru":
        from recunlearn.report.pages import page_grid

        return page_grid(page).from_params(params).runs()
    if paper == "bystanders":
        from recunlearn.report.pages import page_grid

        return page_grid(page).from_params(params).runs()
    if stem.startswith("figure-08") and paper == "casper":
        grid = Figure8Grid.from_params(params)
        return grid.runs() + [grid.scaling_config()]
    if paper == "casper":
        from recunlearn.report.pages import page_grid

        return page_grid(page).from_params(params).runs()
    if stem == "learn-baselines":
        return LearnGrid.from_params(params).runs()
    if stem in ("table-01-05-scif-completeness", "figure-02-05-overview"):
        grid = ScifGrid.from_params(params)
        mio = [ExactMioConfig(dataset=d, model=m, method=method, selection=s, seed=seed, validation=grid.validation,
                              max_epochs=grid.max_epochs, mio_seeds=grid.mio_seeds, mio_epochs=grid.mio_epochs,
                              device=grid.device)
               for d in grid.datasets for m in grid.exact_mio_models or grid.models
               for method in ("retrain", "sisa", "receraser", "ultrare") for s in grid.selections
               for seed in grid.seeds]
        configs = grid.runs() + mio
        if stem == "figure-02-05-overview":  # utility, fairness: batched; efficiency: each affected shard alone
            for timing in ("batched", "alone"):
                configs += ExactGrid(datasets=grid.datasets, models=grid.models, selections=grid.selections,
                                     seeds=grid.seeds, max_epochs=grid.max_epochs, device=grid.device,
                                     timing=timing).runs()
        sweep = grid.damping_sweep_grid()
        variants = [{"damping_rule": "relative", "damping_fraction": f} for f in DAMPING_SWEEP_FRACTIONS]
        variants += [{"damping_rule": "absolute", "damping": 1e-3}]
        return configs + ([c.replace(**v) for c in sweep.runs() for v in variants] if sweep else [])
    grid = ExactGrid.from_params(params)
    configs = grid.runs()
    if stem == "table-02-eu-utility":  # combiner_variants
        base = grid.replace(methods=("receraser", "ultrare"), selections=("random",), seeds=grid.seeds[:1],
                            models=tuple(m for m in grid.models if m != "lightgcn") or ("wmf",))
        configs += [c for combiner in COMBINERS for c in base.replace(combiner=combiner).runs()]
    if stem in ("figure-04-shard-number", "figure-08-unlearning-ratio"):  # parallel_grid: shards alone
        configs += grid.replace(methods=("sisa", "receraser", "ultrare"), timing="alone").runs()
    if stem == "table-03-unlearning-time":  # its SCIF runs (collect of a ScifGrid)
        configs += [ScifConfig(dataset=d, model=m, selection=s, seed=seed, max_epochs=grid.max_epochs,
                               device=grid.device)
                    for d in grid.datasets for m in grid.models for s in grid.selections for seed in grid.seeds]
    return configs


def notebook_defaults(page: str) -> dict:
    """The UPPER_SNAKE values a page's notebook sets in its first code cell: what a paper-profile
    render uses wherever the profile's file does not override them (papermill injects its values after
    that cell)."""
    import json

    notebook = json.loads((paths.REPO_ROOT / "notebooks" / f"{page}.ipynb").read_text())
    first = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    namespace: dict = {}
    exec("".join(first["source"]), {}, namespace)
    return {k: v for k, v in namespace.items() if k.isupper()}


def paper_pages() -> list[tuple[str, dict]]:
    """Every page with runs and its paper-profile parameters (the notebook's defaults, then the profile's
    values over them), CURE4Rec pages with all of the paper's datasets."""
    pages = []
    for path in sorted(PARAMS.glob("*/*.paper.yml")):
        page = f"{path.parent.name}/{path.name.removesuffix('.paper.yml')}"
        profile = yaml.safe_load(path.read_text())
        params = {**notebook_defaults(page), **profile}
        if "statistics" in page:
            continue  # dataset statistics: no run records
        if path.parent.name == "cure4rec" and "DATASETS" in profile:  # a page of one dataset keeps it
            params["DATASETS"] = CURE4REC_DATASETS
        pages.append((page, params))
    return pages


def test_the_book_plan_validates_and_each_page_gets_exactly_its_runs():
    plan = load_plan(BOOK_PLAN)
    by_page = {}
    for entry in plan.entries:
        for page in entry.pages:
            assert (paths.REPO_ROOT / "notebooks" / f"{page}.ipynb").is_file(), page
            by_page.setdefault(page, set())
    pages = paper_pages()
    assert sorted(by_page) == sorted(page for page, _ in pages)
    for page, params in pages:
        wanted = {record_key(config) for config in page_configs(page, params)}
        listed = {run.key for run in plan.runs_of_page(page)}
        assert listed <= {run.key for run in plan.runs_of(plan.entries_of_page(page))}
        assert listed == wanted, (page, len(listed - wanted), len(wanted - listed))
    first = [entry.name for entry in plan.entries if entry.name.startswith("casper-")]
    assert first[first.index("casper-table-3a"):first.index("casper-table-3a") + 6] == [
        "casper-table-3a", "casper-figure-2", "casper-figure-3", "casper-figure-4a", "casper-figures-5-6",
        "casper-figure-8a"]


# --- Ray ----------------------------------------------------------------------------------------------------------

VOLATILE = {"created", "environment", "cost", "timings"}
"""Record fields that differ between two computations of the same run (when, where, how long)."""


def without_volatile(value):
    """A record without ``VOLATILE`` fields and without any ``*_seconds`` value (e.g. in its curve)."""
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE and not k.endswith("_seconds")}
    if isinstance(value, list):
        return [without_volatile(v) for v in value]
    return value


def test_without_ray_the_ray_executor_is_an_error_line_and_the_rest_works(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    plan = write_plan(tmp_path / "plan.yml", [fake_entry("a")])
    with pytest.raises(ComputeError, match=r"pip install -e '\.\[ray\]'"):
        check_options(ComputeOptions(plan=plan, executor="ray"))
    check_options(ComputeOptions(plan=plan, executor="ray", dry_run=True))  # planning needs no Ray


def test_ray_tasks_write_the_same_records_as_local_workers(tmp_path, need_local, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    need_local("ml-100k", "released_ratings", "released_train", "released_test")
    grid = {"experiment": "cure4rec-learn", "params": {"dataset": "ml-100k", "model": "bpr", "max_epochs": 1,
                                                       "seed": [0, 1, 2]}}
    plan = write_plan(tmp_path / "plan.yml", [{"name": "tiny", "title": "", "pages": [], "grids": [grid]}])
    local, on_ray, lines = tmp_path / "local", tmp_path / "ray", []
    assert compute(ComputeOptions(plan=plan, records=local, workers=2), out=lines.append) == 0
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # a private test instance: no token written to ~/.ray
    ray_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths must stay short
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=ray_dir)
    try:
        assert compute(ComputeOptions(plan=plan, records=on_ray, executor="ray"), out=lines.append) == 0
    finally:
        ray.shutdown()
        shutil.rmtree(ray_dir, ignore_errors=True)
    names = sorted(p.relative_to(local) for p in local.glob("*/*.json"))
    assert len(names) == 3 and names == sorted(p.relative_to(on_ray) for p in on_ray.glob("*/*.json"))
    for name in names:
        mine, theirs = read_json_strict(local / name), read_json_strict(on_ray / name)
        assert mine["metrics"] == theirs["metrics"], name
        assert without_volatile(mine) == without_volatile(theirs), name


def test_a_worker_exits_when_its_scheduler_is_gone():
    """A local worker whose parent is no longer the scheduler (killed with SIGKILL) exits instead of
    computing on; with its parent alive it keeps running."""
    import os
    import threading

    from recunlearn.compute.executors import exit_when_orphaned

    exited = threading.Event()
    exit_when_orphaned(os.getppid() + 10**6, interval=0.01, exit=lambda code: exited.set()).join(timeout=5)
    assert exited.is_set()
    alive = threading.Event()
    watcher = exit_when_orphaned(os.getppid(), interval=0.01, exit=lambda code: alive.set())
    watcher.join(timeout=0.2)
    assert watcher.is_alive() and not alive.is_set()


def test_unfinished_writes_of_killed_processes_are_removed_once_stale(tmp_path):
    """A process killed while writing a stored model or a training's state leaves its temporary file;
    the next compute command removes those older than an hour, never a write that may be in progress."""
    from recunlearn.compute.executors import remove_unfinished_writes

    stale = tmp_path / "resume" / "casper-perturbed" / ".abc.pt.x1.tmp"
    fresh = tmp_path / "casper-originals" / ".def.pt.x2.tmp"
    kept = tmp_path / "casper-originals" / "def.pt"
    for path in (stale, fresh, kept):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"12345")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    os.utime(kept, (old, old))
    assert remove_unfinished_writes(tmp_path) == (1, 5)
    assert not stale.exists() and fresh.exists() and kept.exists()
    assert remove_unfinished_writes(tmp_path / "absent") == (0, 0)
