"""One run, whichever device computed it; staging a data directory for a machine that has none.

A record's key includes its device, so a GPU record and a CPU record of the same run are two files.
The plan counts a run done when either exists, and a page reads the record made on the device it asks
for, else the other's. ``--stage`` copies what the selected runs read, verified, for a machine without
the data directory (the lent GPU machine).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from compute_fakes import FAKE_ON_DEVICE, DeviceSleepConfig, SleepConfig, run_sleep
from local_data import skip_if_absent
from recunlearn import paths
from recunlearn.compute.command import ComputeOptions, check_options, compute, fit_in
from recunlearn.compute.costs import CostModel, Estimate
from recunlearn.compute.plan import ComputeError, batches, load_plan
from recunlearn.compute.staging import files_read, packages_needed, stage
from recunlearn.compute.summary import plan_status
from recunlearn.data import registry
from recunlearn.data.errors import DatasetNotFoundError
from recunlearn.experiments.casper import CasperConfig
from recunlearn.experiments.cure4rec_exact import UnlearnConfig
from recunlearn.experiments.records import LEDGER_ENV, RUNNERS, device_twins, load_record, record_key
from recunlearn.io import write_json_atomic

CLEAN = "0" * 40


@pytest.fixture(autouse=True)
def fake_experiment(monkeypatch):
    monkeypatch.setitem(RUNNERS, FAKE_ON_DEVICE, (DeviceSleepConfig, run_sleep))


def store(records: Path, config, **extra) -> dict:
    record = {"experiment": config.experiment, "key": record_key(config), "config": config.to_dict(),
              "git_commit": CLEAN, "source_fingerprint": "other", "device": config.device, "metrics": {}, **extra}
    write_json_atomic(records / config.experiment / f"{record['key']}.json", record)
    return record


def test_the_twins_of_a_config_are_the_same_run_on_each_other_device():
    cpu = DeviceSleepConfig(seed=3)
    assert device_twins(cpu) == [cpu, DeviceSleepConfig(seed=3, device="cuda")]
    assert device_twins(cpu.replace(device="cuda")) == [cpu.replace(device="cuda"), cpu]
    assert record_key(cpu) != record_key(cpu.replace(device="cuda"))
    assert device_twins(SleepConfig(seed=3)) == [SleepConfig(seed=3)]  # no device, no twin


def test_a_record_is_read_on_the_asked_device_first_then_on_the_other(tmp_path, monkeypatch):
    cpu = DeviceSleepConfig(seed=1)
    cuda = cpu.replace(device="cuda")
    assert load_record(cpu, tmp_path) is None
    store(tmp_path, cuda)
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    found = load_record(cpu, tmp_path)
    assert (found["key"], found["device"]) == (record_key(cuda), "cuda")
    line = json.loads(ledger.read_text().splitlines()[-1])
    assert (line["key"], line["device"], line["status"]) == (record_key(cuda), "cuda", "loaded")  # the file read
    store(tmp_path, cpu)
    assert load_record(cpu, tmp_path)["key"] == record_key(cpu)
    assert load_record(cuda, tmp_path)["key"] == record_key(cuda)


def _plan(tmp_path: Path) -> Path:
    entry = {"name": "a", "title": "a", "pages": ["fake/page"],
             "grids": [{"experiment": FAKE_ON_DEVICE, "params": {"seed": [0, 1, 2]}}]}
    path = tmp_path / "plan.yml"
    path.write_text(yaml.safe_dump({"entries": [entry]}))
    return path


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_a_run_computed_on_either_device_is_done_on_both(tmp_path, device):
    records = tmp_path / "records"
    store(records, DeviceSleepConfig(seed=0, device="cuda"))
    store(records, DeviceSleepConfig(seed=1, device="cpu"))
    status = plan_status(_plan(tmp_path), records, device)
    assert [(run.config.seed, run.config.device) for run in status.pending(status.plan.runs)] == [(2, device)]


def test_a_gpu_estimate_from_cpu_records_says_so_until_a_gpu_record_measures_the_kind(tmp_path):
    records = tmp_path / "records"
    store(records, DeviceSleepConfig(seed=1, device="cpu"), cost={"wall_seconds": 3600.0, "cpu_seconds": 3600.0})

    def estimate(config):
        return CostModel(json.loads(path.read_text()) for path in sorted(records.glob("*/*.json"))).estimate(config)

    on_gpu = estimate(DeviceSleepConfig(seed=0, device="cuda"))
    assert (on_gpu.seconds, on_gpu.basis, on_gpu.on_device) == (3600.0, "measured", False)
    assert "(CPU records)" in on_gpu.source
    assert estimate(DeviceSleepConfig(seed=0)).on_device  # a CPU config from CPU records
    store(records, DeviceSleepConfig(seed=2, device="cuda"), cost={"wall_seconds": 600.0, "cpu_seconds": 590.0})
    on_gpu = estimate(DeviceSleepConfig(seed=0, device="cuda"))
    assert (on_gpu.seconds, on_gpu.on_device) == (600.0, True)  # wall seconds of the GPU record


def test_gpu_minutes_keep_a_batch_of_unknown_gpu_time_and_pass_over_one_that_does_not_fit(tmp_path):
    plan = load_plan(_plan(tmp_path), "cuda")

    class Costs:  # seed 0: 600 s measured on a GPU; seed 1: GPU time unknown; seed 2: 120 s measured
        def estimate(self, config):
            return Estimate({0: 600.0, 1: 3600.0, 2: 120.0}[config.seed], 0.0, "measured", "", config.seed != 1)

        def batch_seconds(self, configs):
            return sum(self.estimate(config).seconds for config in configs)

    chosen = fit_in(batches(plan.runs), Costs(), 5 * 60)
    assert [run.config.seed for batch in chosen for run in batch] == [1, 2]


# --- staging ---------------------------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_files_and_packages_runs_need_are_those_their_configs_name():
    casper = CasperConfig(dataset="foursquare", model="lstm", seed=0)
    ultrare = UnlearnConfig(dataset="ml-100k", model="wmf", method="ultrare", selection="core", seed=0)
    sisa = ultrare.replace(method="sisa")
    assert files_read([casper, sisa]) == {"foursquare": ("raw",),
                                          "ml-100k": ("released_ratings", "released_test", "released_train")}
    assert packages_needed([casper, sisa]) == ()
    assert packages_needed([casper, ultrare]) == ("POT",)


def test_stage_copies_the_verified_files_as_a_data_directory(tmp_path):
    casper = CasperConfig(dataset="foursquare", model="lstm", seed=0)
    try:
        source = registry.locate("foursquare", "raw", download=False)
    except DatasetNotFoundError as exc:
        skip_if_absent(exc)
    staged = stage([casper, casper.replace(seed=1)], tmp_path / "data")
    spec = registry.get_file("foursquare", "raw")
    copy = tmp_path / "data" / "foursquare" / spec.path
    assert staged.files == {f"foursquare/{spec.path}": source.stat().st_size}
    assert _sha256(copy) == spec.sha256 == _sha256(source)
    assert (tmp_path / "data" / "NEEDS").read_text() == ""


def test_stage_of_a_missing_dataset_names_the_file_its_checksum_and_source(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "local_data_dir", lambda: tmp_path / "nothing")
    monkeypatch.setattr(paths, "cache_dir", lambda: tmp_path / "cache")
    with pytest.raises(DatasetNotFoundError) as raised:
        stage([CasperConfig(dataset="foursquare", model="lstm", seed=0)], tmp_path / "data")
    spec = registry.get_file("foursquare", "raw")
    assert spec.path in str(raised.value) and spec.sha256 in str(raised.value)


def test_stage_refuses_a_directory_that_is_not_empty_and_a_dry_run(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(ComputeError, match="not empty"):
        check_options(ComputeOptions(stage=tmp_path / "full"))
    with pytest.raises(ComputeError, match="choose one"):
        check_options(ComputeOptions(stage=tmp_path / "new", dry_run=True))


def test_compute_stage_runs_nothing_and_stages_the_selected_runs(tmp_path, monkeypatch):
    records = tmp_path / "records"
    lines = []
    assert compute(ComputeOptions(plan=_plan(tmp_path), records=records, device="cuda", gpu_minutes=5,
                                  stage=tmp_path / "data"), out=lines.append) == 0
    assert lines == [f"staged 0 dataset file(s), 0.0 MiB, for 3 runs into {tmp_path / 'data'}"]
    assert not records.exists()
