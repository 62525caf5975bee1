"""Validated configs and content-addressed run records."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from recunlearn.experiments import ConfigError, records
from recunlearn.experiments.cure4rec import LearnConfig, LearnGrid
from recunlearn.experiments.config import option
from recunlearn.experiments.records import RUNNERS, record_key, record_path, run_or_load


# --- configs ------------------------------------------------------------------------------------------

def test_unknown_parameter_is_named_with_the_allowed_names():
    with pytest.raises(ConfigError) as info:
        LearnGrid.from_params({"MODELS": ["wmf"], "MODLES": 1})
    message = str(info.value)
    assert "MODLES" in message
    for allowed in ("DATASETS", "MODELS", "SEEDS", "VALIDATIONS", "MAX_EPOCHS", "DEVICE"):
        assert allowed in message


def test_from_params_ignores_names_that_are_not_upper_snake():
    grid = LearnGrid.from_params({"MODELS": ["bpr"], "np": object(), "_private": 1, "Mixed": 2, "lower": 3})
    assert grid.models == ("bpr",)


def test_bad_choice_names_parameter_and_allowed_values():
    with pytest.raises(ConfigError) as info:
        LearnGrid.from_params({"MODELS": ["wmf", "xgboost"]})
    message = str(info.value)
    assert "MODELS" in message and "'xgboost'" in message
    for allowed in ("wmf", "bpr", "lightgcn"):
        assert allowed in message
    with pytest.raises(ConfigError, match=r"DATASET .*ml-10m.*ml-100k"):
        LearnConfig(dataset="ml-10m")


@pytest.mark.parametrize("changes", [{"dim": "32"}, {"dim": 32.0}, {"dim": True}, {"lr": "0.01"}, {"l2": "none"},
                                     {"model": 1}, {"seed": None}])
def test_wrong_type_is_rejected(changes):
    name = next(iter(changes)).upper()
    with pytest.raises(ConfigError, match=f"parameter {name} "):
        LearnConfig(**changes)


def test_wrong_type_in_a_grid():
    with pytest.raises(ConfigError, match="MODELS.*a list of str"):
        LearnGrid(models="wmf")
    with pytest.raises(ConfigError, match="SEEDS"):
        LearnGrid.from_params({"SEEDS": [0, "1"]})
    with pytest.raises(ConfigError, match="must not be empty"):
        LearnGrid.from_params({"MODELS": []})


@pytest.mark.parametrize("changes, text", [({"dim": 0}, ">= 1"), ({"active_fraction": 1.5}, "<= 1.0"),
                                           ({"l2": -1.0}, ">= 0.0"), ({"seed": -1}, ">= 0")])
def test_bounds(changes, text):
    with pytest.raises(ConfigError, match=text):
        LearnConfig(**changes)


def test_accepted_values():
    config = LearnConfig(lr=1, l2=None, dim=64)  # an int is a valid float; None where allowed
    assert config.lr == 1 and config.l2 is None
    assert LearnConfig(l2=1e-4).l2 == 1e-4


def test_lists_become_tuples_and_round_trip():
    grid = LearnGrid.from_params({"MODELS": ["wmf", "bpr"], "SEEDS": [3], "DATASETS": ["ml-100k"]})
    assert grid.models == ("wmf", "bpr") and grid.seeds == (3,)
    hash(grid)  # frozen and hashable
    assert grid.to_dict()["models"] == ["wmf", "bpr"]
    assert LearnGrid.from_dict(json.loads(json.dumps(grid.to_dict()))) == grid
    runs = grid.runs()
    assert [(r.model, r.seed) for r in runs] == [("wmf", 3), ("bpr", 3)]
    assert all(isinstance(r, LearnConfig) for r in runs)
    with pytest.raises(ConfigError, match="unknown parameter"):
        LearnConfig.from_dict({"dataset": "ml-100k", "epochs": 3})


def test_from_params_fixed_values_win():
    assert LearnGrid.from_params({"DEVICE": "cuda"}, device="cpu").device == "cpu"


# --- records ------------------------------------------------------------------------------------------

@pytest.fixture
def fake_runner(monkeypatch):
    """Replace the registered Learn runner by a cheap one; ``calls`` lists the configs it ran."""
    calls = []

    def runner(config):
        calls.append(config)
        return {"metrics": {"ndcg": 0.25 + config.seed}, "curve": [{"epoch": 1, "loss": 2.0}],
                "timings": {}, "training": {}, "split": "fake", "seed": config.seed, "device": config.device}

    monkeypatch.setitem(RUNNERS, LearnConfig.experiment, (LearnConfig, runner))
    monkeypatch.setattr(records, "git_commit", lambda: "0" * 40)
    return calls


def test_run_or_load_second_call_loads_without_running(tmp_path, fake_runner, monkeypatch):
    config = LearnConfig(seed=1)
    first = run_or_load(config, tmp_path)
    assert len(fake_runner) == 1
    path = record_path(config, tmp_path)
    assert path.is_file() and path.parent.name == config.experiment and path.stem == record_key(config)

    def must_not_run(config):
        pytest.fail("the runner was called although a record exists")

    monkeypatch.setitem(RUNNERS, LearnConfig.experiment, (LearnConfig, must_not_run))
    second = run_or_load(config, tmp_path)
    assert second == first == json.loads(path.read_text())
    assert second["metrics"] == {"ndcg": 1.25} and second["config"] == config.to_dict()
    assert second["key"] == record_key(config) and second["git_commit"] == "0" * 40
    for field in ("dataset_sha256", "results_version", "environment", "created"):
        assert field in second


def test_recompute_runs_again(tmp_path, fake_runner):
    config = LearnConfig()
    run_or_load(config, tmp_path)
    run_or_load(config, tmp_path, recompute=True)
    assert len(fake_runner) == 2
    assert len(list((tmp_path / config.experiment).iterdir())) == 1


def test_failed_write_leaves_no_file(tmp_path, fake_runner, monkeypatch):
    config = LearnConfig()

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        run_or_load(config, tmp_path)
    folder = tmp_path / config.experiment
    assert list(folder.iterdir()) == []  # neither a .json nor a temporary file


def test_failed_rewrite_keeps_the_old_record(tmp_path, fake_runner, monkeypatch):
    config = LearnConfig()
    path = record_path(config, tmp_path)
    run_or_load(config, tmp_path)
    old = path.read_text()
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        run_or_load(config, tmp_path, recompute=True)
    assert path.read_text() == old
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_runner_failure_writes_nothing(tmp_path, monkeypatch):
    def failing(config):
        raise RuntimeError("diverged")

    monkeypatch.setitem(RUNNERS, LearnConfig.experiment, (LearnConfig, failing))
    with pytest.raises(RuntimeError, match="diverged"):
        run_or_load(LearnConfig(), tmp_path)
    assert not (tmp_path / LearnConfig.experiment).exists()


def test_record_key_changes_with_the_config():
    base = LearnConfig()
    assert record_key(base) == record_key(LearnConfig())
    keys = {record_key(base)}
    for changes in ({"seed": 1}, {"model": "bpr"}, {"dim": 64}, {"validation": "test"}, {"lr": 0.001},
                    {"protocol": "raw"}, {"l2": 0.0}):
        keys.add(record_key(base.replace(**changes)))
    assert len(keys) == 8


def test_record_key_depends_on_results_version_and_data_but_not_git_commit(tmp_path, fake_runner, monkeypatch):
    config = LearnConfig()
    key = record_key(config)
    monkeypatch.setattr(records, "git_commit", lambda: "a" * 40)
    first = run_or_load(config, tmp_path)
    monkeypatch.setattr(records, "git_commit", lambda: "b" * 40 + "-dirty")
    assert record_key(config) == key
    second = run_or_load(config, tmp_path, recompute=True)
    assert first["key"] == second["key"] == key
    assert (first["git_commit"], second["git_commit"]) == ("a" * 40, "b" * 40 + "-dirty")
    assert len(list((tmp_path / config.experiment).iterdir())) == 1

    assert set(records.dataset_checksums(config)) == {"ml-100k/released_ratings", "ml-100k/released_train",
                                                      "ml-100k/released_test"}
    assert set(records.dataset_checksums(config.replace(protocol="raw"))) == {"ml-100k/raw"}
    assert record_key(config.replace(protocol="raw", validation="split_test")) != key
    files = records.registry.DATASETS["ml-100k"].files
    original = files["released_train"]
    monkeypatch.setitem(files, "released_train", dataclasses.replace(original, sha256="f" * 64))
    assert record_key(config) != key  # another copy of the data -> another record
    monkeypatch.setitem(files, "released_train", original)
    assert record_key(config) == key
    monkeypatch.setattr(LearnConfig, "results_version", "999")
    assert record_key(config) != key


def test_unregistered_experiment_is_refused(tmp_path, monkeypatch):
    monkeypatch.delitem(RUNNERS, LearnConfig.experiment)
    with pytest.raises(KeyError, match="no runner"):
        run_or_load(LearnConfig(), tmp_path)


def test_equal_configs_have_equal_keys():
    assert LearnConfig(lr=1) == LearnConfig(lr=1.0)
    assert record_key(LearnConfig(lr=1)) == record_key(LearnConfig(lr=1.0))


def test_a_model_results_version_invalidates_only_that_models_records():
    from recunlearn.experiments.casper import MODEL_RESULTS_VERSIONS, CasperConfig

    lstm, tisasrec = CasperConfig(model="lstm"), CasperConfig(model="tisasrec")
    assert records.results_version(lstm) == CasperConfig.results_version
    assert records.results_version(tisasrec) == MODEL_RESULTS_VERSIONS["tisasrec"] != CasperConfig.results_version
    assert records.results_version(LearnConfig()) == LearnConfig.results_version


def test_model_results_versions_stay_above_the_class_version():
    """Bumping CasperConfig.results_version must also invalidate the models with their own version."""
    from recunlearn.experiments.casper import MODEL_RESULTS_VERSIONS, CasperConfig

    assert all(int(v) > int(CasperConfig.results_version) for v in MODEL_RESULTS_VERSIONS.values())


def test_a_field_added_for_a_variant_keeps_every_existing_key_at_its_default():
    """A named variant added later (``option(..., added=True)``) must not invalidate the records made before it."""

    @dataclasses.dataclass(frozen=True)
    class WithVariant(LearnConfig):
        experiment = LearnConfig.experiment
        variant: str = option("paper", choices=("paper", "code"), added=True)

    before, after = LearnConfig(seed=2), WithVariant(seed=2)
    assert record_key(after) == record_key(before)                       # the old record is still found
    assert after.to_dict() == {**before.to_dict(), "variant": "paper"}   # and the new record names the variant
    assert WithVariant.from_dict(before.to_dict()) == after             # an old record's config reads back
    assert record_key(after.replace(variant="code")) != record_key(before)
    assert "variant" in after.replace(variant="code").key_dict() and "variant" not in after.key_dict()

    @dataclasses.dataclass(frozen=True)
    class WithField(LearnConfig):  # the same field not marked as added changes every key: a new results set
        experiment = LearnConfig.experiment
        variant: str = option("paper", choices=("paper", "code"))

    assert record_key(WithField(seed=2)) != record_key(before)
