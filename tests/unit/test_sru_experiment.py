"""SRU's experiment runner: configs, the shared unlearning set, what each method trains on, records."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from recunlearn import provenance
from recunlearn.experiments import sru as exp
from recunlearn.experiments.config import ConfigError
from recunlearn.experiments.records import record_key, run_or_load
from recunlearn.models.session import make_session_model
from recunlearn.unlearning.partition import random_partition
from recunlearn.unlearning.sru import (AttentiveAggregator, ShardEnsemble, UnlearningRequests, average_probabilities,
                                       remaining_part)

from sru_synthetic import TINY, config, synthetic_data

CODE = "recunlearn.experiments.sru"
"""The module whose trainings the stored-model tests name."""


@pytest.fixture(autouse=True)
def no_shared_sub_models():
    """Each test starts without sub-models cached by another (a test noting what is trained would miss them)."""
    exp._SHARD_MODELS.clear()
    yield
    exp._SHARD_MODELS.clear()


class Recorder:
    """Wraps the runner's trainer, noting the sessions every model was trained on (None: all of
    ``data.train``) and whether it was the aggregate of sub-models."""

    def __init__(self, trainer):
        self.trainer, self.calls = trainer, []

    def __call__(self, model, data, generator=None, **kwargs):
        self.calls.append((isinstance(model, ShardEnsemble), kwargs.get("sessions")))
        return self.trainer(model, data, generator, **kwargs)


@pytest.fixture(scope="module")
def runs():
    """Every method once on the synthetic data, with the sessions each model trained on."""
    data = synthetic_data()
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        recorder = Recorder(exp.train_session_model)
        patch.setattr(exp, "train_session_model", recorder)
        exp._FULL_MODELS.clear()
        for method in exp.METHODS:
            exp._SHARD_MODELS.clear()  # every run trains its own sub-models here (sharing: tested below)
            recorder.calls = []
            out[method] = (exp.unlearn_sessions(config(method=method), data), list(recorder.calls))
    return data, out


# --- configs ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, name", [
    ({"dataset": "steam"}, "DATASET"), ({"model": "caser"}, "MODEL"), ({"method": "ultrare"}, "METHOD"),
    ({"truncation": "prefix"}, "TRUNCATION"), ({"extra_deletion": "all"}, "EXTRA_DELETION"),
    ({"n_extra": -1}, "N_EXTRA"), ({"centroid": "median"}, "CENTROID"), ({"retrain": "some"}, "RETRAIN"),
    ({"request_fraction": 0.0}, "REQUEST_FRACTION"), ({"request_fraction": 1.5}, "REQUEST_FRACTION"),
    ({"max_sessions": 10}, "MAX_SESSIONS"), ({"device": "tpu"}, "DEVICE"), ({"n_shards": 0}, "N_SHARDS"),
    ({"max_epochs": 0}, "MAX_EPOCHS"), ({"partition": "kmeans"}, "PARTITION"),
])
def test_bad_values_name_the_parameter(changes, name):
    with pytest.raises(ConfigError, match=name):
        exp.SruConfig(**changes)


def test_bad_choice_lists_the_allowed_values():
    with pytest.raises(ConfigError, match=r"allowed: \['retrain', 'sisa', 'receraser', 'sru'\]"):
        exp.SruConfig(method="scif")


def test_ignored_fields_are_normalised_so_equal_runs_share_a_record():
    retrain = exp.SruConfig(method="retrain", n_shards=4, centroid="scalar", retrain="all", aggregator_epochs=3)
    assert (retrain.n_shards, retrain.centroid, retrain.retrain, retrain.aggregator_epochs) == (1, "mean", "affected",
                                                                                                10)
    assert record_key(retrain) == record_key(exp.SruConfig(method="retrain"))
    assert exp.SruConfig(extra_deletion="none", n_extra=3).n_extra == 0
    assert exp.SruConfig(extra_deletion="ced", n_extra=3).n_extra == 3
    assert exp.SruConfig(method="sru", centroid="scalar").centroid == "scalar"


def test_grid_expands_lists_and_lists_equal_runs_once():
    grid = exp.SruGrid(methods=("retrain", "sru"), extra_deletions=("none", "ned"), n_extras=(1, 2), seeds=(0, 1))
    runs = grid.runs()
    # per seed: (none) x {retrain, sru} + (ned, 1 | 2) x {retrain, sru}
    assert len(runs) == 2 * (2 + 4)
    assert len({record_key(r) for r in runs}) == len(runs)
    with pytest.raises(ConfigError, match="MAX_SESSIONS"):
        exp.SruGrid(max_sessions=12)


def test_collect_without_records_lists_every_run_as_pending():
    grid = exp.SruGrid(methods=("retrain", "sisa"), compute_missing=False)
    frame = exp.collect_sru(grid)
    assert frame.empty and [p["method"] for p in frame.attrs["pending"]] == ["retrain", "sisa"]


def test_cost_alone_adds_back_a_cached_full_model_and_cached_sub_models():
    from recunlearn.compute.costs import rule_of

    cost_alone = rule_of("sru-unlearning").alone
    record = {"timings": {"full_model_wall_seconds": 10.0, "full_model_cached": True}}
    assert cost_alone(record, 6.0, 3.0) == (26.0, 20.0)  # 10 wall seconds = 20 CPU seconds at this run's ratio
    record["timings"]["full_model_cached"] = False
    assert cost_alone(record, 6.0, 3.0) == (6.0, 20.0)
    record["shards"] = [{"train_seconds": 4.0, "cached": True}, {"train_seconds": 5.0, "cached": False}]
    assert cost_alone(record, 6.0, 3.0) == (14.0, 20.0)  # + the cached shard's 4 wall seconds, as CPU seconds


# --- the unlearning set ------------------------------------------------------------------------------------

def test_one_unlearning_set_per_seed_for_every_method_and_strategy(runs):
    data, out = runs
    hashes = {result["unlearning"]["request_hash"] for result, _ in out.values()}
    assert len(hashes) == 1
    requests = exp.unlearning_requests(data, 0)
    assert hashes == {exp.request_hash(data, requests)}
    assert len(requests) == int(0.2 * len(data.train))
    other = exp.unlearning_requests(data, 1)
    assert exp.request_hash(data, other) != exp.request_hash(data, requests)
    # a deletion strategy changes what is deleted, never who asked
    ned = exp.unlearn_sessions(config(method="retrain", extra_deletion="ned", n_extra=1, truncation="item"), data)
    assert ned["unlearning"]["request_hash"] in hashes
    assert len(requests) < ned["unlearning"]["deleted_interactions"] <= 2 * len(requests)  # the item + one neighbour


# --- every method ------------------------------------------------------------------------------------------

def test_every_method_returns_metrics_hits_and_positive_timings(runs):
    _, out = runs
    for method, (result, _) in out.items():
        metrics = result["metrics"]
        for k in (5, 10, 20):
            assert 0.0 <= metrics[f"recall@{k}"] <= 1.0 and 0.0 <= metrics[f"ndcg@{k}"] <= metrics[f"recall@{k}"]
        for k in (1, 5, 10, 20):
            assert 0.0 <= metrics[f"hit@{k}"] <= 1.0 and 0.0 <= metrics[f"hit_before_retraining@{k}"] <= 1.0
        timings = result["timings"]
        assert timings["unlearn_seconds"] > 0 and all(s > 0 for s in timings["retrained_shard_seconds"])
        assert timings["unlearn_all_retrained_seconds"] >= timings["unlearn_seconds"]
        assert (timings["aggregator_seconds"] > 0) == (method in ("receraser", "sru"))
        assert (timings["full_retrain_seconds"] is not None) == (method == "retrain")
        assert result["unlearning"]["n_shards"] == (1 if method == "retrain" else 2)
        assert math.isfinite(timings["full_model_seconds"])
        assert timings["unlearn_cpu_seconds"] > 0 and timings["full_model_cpu_seconds"] > 0
        assert (timings["full_retrain_cpu_seconds"] is not None) == (method == "retrain")


def test_the_full_data_model_is_shared_and_its_hit_is_the_same_for_every_method(runs):
    _, out = runs
    before = {tuple(v for k, v in r["metrics"].items() if k.startswith("hit_before")) for r, _ in out.values()}
    assert len(before) == 1
    assert [r["timings"]["full_model_cached"] for r, _ in out.values()] == [False, True, True, True]


def test_no_model_after_unlearning_sees_a_deleted_item(runs):
    """Every model but the full-data one trains on post-deletion sessions: each unlearning session is
    cut before its position (suffix); every training session is in exactly one shard."""
    data, out = runs
    requests = exp.unlearning_requests(data, 0)
    cut = {int(data.train.ids[s]): (data.train[s], int(p)) for s, p in zip(requests.session, requests.position)}
    for method, (result, calls) in out.items():
        if not result["timings"]["full_model_cached"]:
            assert calls[0] == (False, None)  # the full-data model: all original training sessions
            calls = calls[1:]
        trained = calls
        shard_calls = [sessions for is_ensemble, sessions in trained if not is_ensemble]
        assert len(shard_calls) == result["unlearning"]["n_shards"]
        ids = np.concatenate([s.ids for s in shard_calls])
        assert sorted(ids.tolist()) == sorted(data.train.ids.tolist())
        aggregated = [sessions for is_ensemble, sessions in trained if is_ensemble]
        assert len(aggregated) == (method in ("receraser", "sru"))
        for sessions in shard_calls + aggregated:
            for k, session_id in enumerate(sessions.ids):
                if int(session_id) in cut:
                    original, position = cut[int(session_id)]
                    assert len(sessions[k]) <= position
                    assert np.array_equal(sessions[k], remaining_part(original, position))


def test_affected_retrains_only_the_shards_holding_an_unlearning_session():
    data = synthetic_data()
    shard = random_partition(len(data.train), 2, 0)  # SISA's partition for seed 0
    chosen = np.flatnonzero(shard == 0)[:5]
    position = data.train.lengths[chosen] - 1
    requests = UnlearningRequests(chosen, position, data.train.items[data.train.offsets[chosen] + position])
    assert exp.shards_to_retrain(shard, requests, 2).tolist() == [0]
    assert exp.shards_to_retrain(shard, requests, 2, "all").tolist() == [0, 1]
    with pytest.raises(ValueError, match="retrain"):
        exp.shards_to_retrain(shard, requests, 2, "some")
    result = exp.unlearn_sessions(config(method="sisa"), data, requests=requests)
    assert result["unlearning"]["retrained_shards"] == [0]
    assert [s["retrained"] for s in result["shards"]] == [True, False]
    assert [s["requests"] for s in result["shards"]] == [5, 0]
    assert len(result["timings"]["retrained_shard_seconds"]) == 1 == len(result["timings"]["learned_shard_seconds"])
    everything = exp.unlearn_sessions(config(method="sisa", retrain="all"), data, requests=requests)
    assert everything["unlearning"]["retrained_shards"] == [0, 1]
    assert result["shards"][1]["pairs"] == everything["shards"][1]["pairs"]  # shard 1 lost nothing


def test_the_same_config_reruns_to_identical_metrics(runs):
    data, out = runs
    exp._FULL_MODELS.clear()  # retrain the full-data model too
    again = exp.unlearn_sessions(config(method="sru"), data)
    assert not again["timings"]["full_model_cached"]
    assert again["metrics"] == out["sru"][0]["metrics"]
    assert again["full_model"]["test"] == out["sru"][0]["full_model"]["test"]


def _without_times(result: dict) -> dict:
    """A run's payload without what differs between two computations of it (seconds, cache flags)."""
    def keep(key):
        return not key.endswith(("seconds", "cached", "stored"))
    timing_free = {k: v for k, v in result.items() if k not in ("timings", "shards", "full_model", "aggregator")}
    aggregator = result["aggregator"] and {k: v for k, v in result["aggregator"].items() if keep(k)}
    return {**timing_free, "shards": [{k: v for k, v in s.items() if keep(k)} for s in result["shards"]],
            "full_model": {k: v for k, v in result["full_model"].items() if keep(k)}, "aggregator": aggregator}


@pytest.mark.parametrize("model", ["gru4rec", "sasrec"])
def test_runs_with_equal_shard_sessions_share_sub_models_and_give_what_each_gives_alone(runs, model):
    """RecEraser and SRU train on the same similarity shards, SISA and SRU-on-random-shards on the same
    random ones: a later run of the process takes them from the cache, with the same results bit for
    bit as computing it alone, and says so (the seconds are those measured when they were trained)."""
    data, out = runs
    exp._FULL_MODELS.clear()
    exp._SHARD_MODELS.clear()
    pairs = [(config(model=model, method="receraser"), config(model=model, method="sru")),
             (config(model=model, method="sisa"), config(model=model, method="sru", partition="random"))]
    for first, second in pairs:
        trained = exp.unlearn_sessions(first, data)
        shared = exp.unlearn_sessions(second, data)
        assert trained["timings"]["shards_cached"] == 0 and shared["timings"]["shards_cached"] == 2
        assert [s["train_seconds"] for s in shared["shards"]] == [s["train_seconds"] for s in trained["shards"]]
        exp._SHARD_MODELS.clear()
        alone = exp.unlearn_sessions(second, data)
        assert alone["timings"]["shards_cached"] == 0
        assert _without_times(shared) == _without_times(alone)
    if model == "gru4rec":
        assert _without_times(alone) != _without_times(out["sisa"][0])  # the comparison can fail
    # other shard sessions (an extra deletion) are other sub-models
    exp._SHARD_MODELS.clear()
    exp.unlearn_sessions(config(model=model, method="receraser"), data)
    ned = exp.unlearn_sessions(config(model=model, method="sru", extra_deletion="ned", n_extra=1), data)
    assert ned["timings"]["shards_cached"] == 0


@pytest.mark.parametrize("model", ["sasrec", "bert4rec"])
def test_aggregating_dropout_and_cloze_sub_models(model):
    result = exp.unlearn_sessions(config(model=model, method="sru", max_epochs=1), synthetic_data(n_sessions=80))
    assert all(0.0 <= v <= 1.0 for v in result["metrics"].values())


# --- the ensemble ------------------------------------------------------------------------------------------

def test_ensemble_keeps_sub_models_frozen_in_eval_mode_and_averages_for_sisa():
    subs = [make_session_model("sasrec", 30, 4, torch.Generator().manual_seed(s)) for s in range(3)]
    windows = torch.randint(0, 31, (7, 4), generator=torch.Generator().manual_seed(0))
    sisa = ShardEnsemble(subs, chunk_elements=31 * 3 * 2)  # two rows per chunk
    with torch.no_grad():
        expected = average_probabilities(torch.stack([m.eval().scores(windows) for m in subs], 1))
    assert torch.allclose(sisa.scores(windows), expected)
    aggregated = ShardEnsemble(subs, AttentiveAggregator(3, 64, 30))
    aggregated.train()
    assert aggregated.training and not any(m.training for m in subs)
    aggregated.training_loss(windows, torch.randint(1, 31, (7,))).backward()
    assert all(p.grad is None for m in subs for p in m.parameters())
    assert all(p.grad is not None for p in aggregated.aggregator.parameters())
    with pytest.raises(ValueError, match="nothing to train"):
        sisa.training_loss(windows, torch.ones(7, dtype=torch.long))


@pytest.mark.parametrize("model", ["gru4rec", "sasrec", "bert4rec"])
def test_frozen_features_give_the_windows_loss_and_the_same_validation_ranks(model):
    from recunlearn.models.session.training import feature_ranks, pair_ranks

    subs = [make_session_model(model, 30, 4, torch.Generator().manual_seed(s)) for s in range(3)]
    windows = torch.randint(0, 31, (11, 4), generator=torch.Generator().manual_seed(0))
    targets = torch.randint(1, 31, (11,), generator=torch.Generator().manual_seed(1))
    for centroids in (None, torch.randn(3, 64, generator=torch.Generator().manual_seed(2))):
        ensemble = ShardEnsemble(subs, AttentiveAggregator(3, 64, 30, centroids, torch.Generator().manual_seed(3)))
        assert ensemble.has_frozen_features
        features = ensemble.frozen_features(windows, 4)  # chunks of 4, 4, 3
        assert features.shape == (11, 3, 64) and not features.requires_grad
        # ranks: bit for bit those of the windows, chunk by chunk
        assert np.array_equal(feature_ranks(ensemble, features, targets.numpy(), 4),
                              pair_ranks(ensemble, windows.numpy(), targets.numpy(), 4))
        # loss and gradients: those of the windows (the states of a batch agree to float rounding)
        losses, grads = [], []
        for loss in (ensemble.features_loss(features, targets), ensemble.training_loss(windows, targets)):
            ensemble.aggregator.zero_grad()
            loss.backward()
            losses.append(loss.detach())
            grads.append([p.grad.clone() for p in ensemble.aggregator.parameters() if p.grad is not None])
        assert torch.allclose(*losses, rtol=1e-6)
        assert all(torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(*grads))
    assert not ShardEnsemble(subs).has_frozen_features  # SISA: nothing to train
    reference = [make_session_model(model, 30, 4, torch.Generator().manual_seed(s), implementation="reference")
                 for s in range(3)]
    assert not ShardEnsemble(reference, AttentiveAggregator(3, 64, 30)).has_frozen_features


def test_the_aggregator_reads_each_window_s_states_once_and_trains_as_from_the_windows(monkeypatch):
    """Training the aggregator computes the sub-models' states of every training and validation window
    once, whatever the epochs; the run matches one that computes every batch's states (to rounding)."""
    from recunlearn.models.session import training

    data = synthetic_data()
    subs = [make_session_model("gru4rec", data.n_items, data.maxlen, torch.Generator().manual_seed(s))
            for s in range(2)]
    for sub in subs:
        sub.eval()
    rows = []
    hidden = type(subs[0]).hidden

    def counting(self, windows):
        rows.append(len(windows))
        return hidden(self, windows)

    monkeypatch.setattr(type(subs[0]), "hidden", counting)
    fits = []
    for frozen in (True, False):
        ensemble = ShardEnsemble(subs, AttentiveAggregator(2, 64, data.n_items, None, torch.Generator().manual_seed(5)))
        if not frozen:
            monkeypatch.setattr(ShardEnsemble, "has_frozen_features", property(lambda self: False))
        rows.clear()
        fits.append(training.train_session_model(ensemble, data, torch.Generator().manual_seed(6), max_epochs=3,
                                                 validate_every=1, patience=3, batch_size=16))
        n_train, n_valid = fits[-1]["n_train_pairs"], fits[-1]["n_valid_pairs"]
        per_pass = 2 * (n_train + n_valid)  # two sub-models
        assert sum(rows) == (per_pass if frozen else 3 * per_pass)
    with_features, per_batch = fits
    assert 0 < with_features["frozen_features_seconds"] and "frozen_features_seconds" not in per_batch
    assert with_features["best_epoch"] == per_batch["best_epoch"]
    for a, b in zip(with_features["curve"], per_batch["curve"]):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["valid_ndcg@10"] == pytest.approx(b["valid_ndcg@10"], rel=1e-4)


def test_aggregated_methods_have_their_own_results_version():
    versions = {m: exp.SruConfig(method=m).value_results_version() for m in exp.METHODS}
    assert versions == {"retrain": None, "sisa": None, "receraser": exp.AGGREGATOR_RESULTS_VERSION,
                        "sru": exp.AGGREGATOR_RESULTS_VERSION}
    from recunlearn.experiments.records import results_version

    assert results_version(exp.SruConfig(method="sisa")) == exp.SruConfig.results_version  # their records stay
    assert results_version(exp.SruConfig(method="sru")) == exp.AGGREGATOR_RESULTS_VERSION


# --- real data ---------------------------------------------------------------------------------------------

def test_reduced_scale_games_run(need_local):
    need_local("games", "raw")
    data = exp.sru_data("games", 0, 300)
    assert len(data.sessions) == 300 and data.n_items == 23715 and "first 300 of 31013" in data.description
    result = run_or_load(exp.SruConfig(dataset="games", method="sru", max_sessions=300, max_epochs=1,
                                       aggregator_epochs=1, n_shards=2))  # a strict-JSON record
    assert result["unlearning"]["n_requests"] == int(0.2 * len(data.train))
    assert all(0.0 <= v <= 1.0 for v in result["metrics"].values())
    assert result["unlearning"]["request_hash"] == exp.request_hash(data, exp.unlearning_requests(data, 0))


# --- partitions, unaffected shards (parts 4 and 9 of the chapter's issue) ------------------------------------

def test_partition_names_the_methods_own_once_and_centroid_only_matters_for_similarity_shards():
    assert exp.SruConfig(method="sru", partition="similarity") == exp.SruConfig(method="sru")
    assert exp.SruConfig(method="sisa", partition="random") == exp.SruConfig(method="sisa")
    swapped = exp.SruConfig(method="sru", partition="random", centroid="scalar")
    assert swapped.shard_partition == "random" and swapped.centroid == "mean"  # no k-means: anchors unused
    sisa = exp.SruConfig(method="sisa", partition="similarity", centroid="scalar")
    assert sisa.shard_partition == "similarity" and sisa.centroid == "scalar"
    assert exp.SruConfig(method="retrain", partition="random").partition == "own"
    assert record_key(swapped) != record_key(exp.SruConfig(method="sru"))


def test_partition_sessions_by_name():
    data = synthetic_data()
    states = np.repeat(np.eye(2), [len(data.train) // 2, len(data.train) - len(data.train) // 2], axis=0)

    class States:  # a stand-in full-data model whose session states are two separated groups
        maxlen, hidden_size = 5, 2

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exp, "session_hidden_states", lambda model, sessions: torch.as_tensor(states))
        similar = exp.partition_sessions("similarity", 2, 0, States(), data.train)
    assert len(set(similar[:10])) == 1 and similar[0] != similar[-1]  # each group in its own shard
    assert exp.partition_sessions("random", 2, 0, None, data.train).tolist() == random_partition(
        len(data.train), 2, 0).tolist()
    assert set(exp.partition_sessions("one shard", 2, 0, None, data.train)) == {0}
    with pytest.raises(ValueError, match="partition"):
        exp.partition_sessions("kmeans", 2, 0, None, data.train)


def test_grid_crosses_methods_and_partitions_and_lists_equal_runs_once():
    grid = exp.SruGrid(methods=("retrain", "sisa", "sru"), partitions=("random", "similarity"), **TINY)
    runs = [(c.method, c.shard_partition) for c in grid.runs()]
    assert runs == [("retrain", "one shard"), ("sisa", "random"), ("sisa", "similarity"), ("sru", "random"),
                    ("sru", "similarity")]


def test_unaffected_shards_keep_the_sub_model_learned_before_the_request_bit_for_bit():
    data = synthetic_data()
    shard = random_partition(len(data.train), 2, 0)
    chosen = np.flatnonzero(shard == 0)[:5]
    position = data.train.lengths[chosen] - 1
    requests = UnlearningRequests(chosen, position, data.train.items[data.train.offsets[chosen] + position])
    trained = {}
    original = exp._train_shard

    def noting(config, data_, sessions, shard_, stage, key=None):
        net, fit = original(config, data_, sessions, shard_, stage, key)
        trained[shard_] = (stage, {k: v.clone() for k, v in net.state_dict().items()})
        return net, fit

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exp, "_train_shard", noting)
        exp.unlearn_sessions(config(method="sisa"), data, requests=requests)
    assert trained[0][0] == exp._UNLEARN and trained[1][0] == exp._LEARN
    before, _ = original(config(method="sisa"), data, data.train.take(np.flatnonzero(shard == 1)), 1, exp._LEARN)
    for name, value in before.state_dict().items():  # shard 1 serves the model learned before the request
        assert torch.equal(value, trained[1][1][name]), name


def test_an_ignored_partition_does_not_change_what_else_is_ignored():
    """Retrain ignores the partition: asking for a similarity partition (whose centroid variant would
    otherwise count) names the same run as its own partition."""
    a = exp.SruConfig(method="retrain", partition="similarity", centroid="scalar")
    b = exp.SruConfig(method="retrain", partition="own", centroid="scalar")
    assert record_key(a) == record_key(b) == record_key(exp.SruConfig(method="retrain"))


def test_the_process_cache_computes_once_and_drops_the_oldest_beyond_its_capacity():
    from recunlearn.experiments.process_cache import cached

    cache, calls = {}, []
    compute = lambda v: (lambda: calls.append(v) or v)  # noqa: E731
    assert cached(cache, "a", 2, compute(1)) == (1, False)
    assert cached(cache, "a", 2, compute(9)) == (1, True) and calls == [1]
    cached(cache, "b", 2, compute(2))
    cached(cache, "c", 2, compute(3))
    assert list(cache) == ["b", "c"]  # "a", the oldest, was dropped


# --- models kept between processes ------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["gru4rec", "sasrec"])
def test_a_run_resumed_in_a_new_process_reuses_the_stored_models_and_trains_only_unfinished_shards(tmp_path,
                                                                                                   monkeypatch, model):
    """As after a compute session stopped in the middle of a run: the full-data model and the shards
    already trained are read from ``RECUNLEARN_MODELS``, only the missing shard is trained, and the run
    gives the record of the run that trained everything, bit for bit (timings and cache flags aside)."""
    data = synthetic_data()
    monkeypatch.setenv("RECUNLEARN_MODELS", str(tmp_path))
    recorder = Recorder(exp.train_session_model)
    monkeypatch.setattr(exp, "train_session_model", recorder)
    exp._FULL_MODELS.clear()
    trained = exp.unlearn_sessions(config(method="sru", model=model), data)
    assert not trained["timings"]["full_model_stored"] and trained["timings"]["shards_stored"] == 0
    shard_files = sorted((tmp_path / "sru-shards").glob("*.pt"))
    assert len(shard_files) == 2 and len(list((tmp_path / "sru-full-data").glob("*.pt"))) == 1

    shard_files[0].unlink()                                   # that shard was being trained at the stop
    exp._FULL_MODELS.clear()
    exp._SHARD_MODELS.clear()                                 # a new process: nothing in memory
    recorder.calls = []
    resumed = exp.unlearn_sessions(config(method="sru", model=model), data)
    sub_models_trained = [call for call in recorder.calls if not call[0] and call[1] is not None]
    assert len(sub_models_trained) == 1                       # the missing shard; not the full-data model
    assert resumed["timings"]["full_model_cached"] and resumed["timings"]["full_model_stored"]
    assert resumed["timings"]["shards_stored"] == 1 == resumed["timings"]["shards_cached"]
    assert resumed["timings"]["full_model_cpu_seconds"] == trained["timings"]["full_model_cpu_seconds"]
    assert _without_times(resumed) == _without_times(trained)


def test_stored_models_are_named_by_key_code_and_threads_and_pruned_to_capacity(tmp_path, monkeypatch):
    from recunlearn.experiments import stored_models

    monkeypatch.delenv("RECUNLEARN_MODELS", raising=False)
    calls = []
    train = lambda: calls.append(1) or {"weights": len(calls)}  # noqa: E731
    assert stored_models.stored_path("kind", ("a",), CODE) is None           # unset: nothing kept on disk
    assert stored_models.load_or_train("kind", ("a",), CODE, 2, train) == ({"weights": 1}, False)
    assert stored_models.load_or_train("kind", ("a",), CODE, 2, train) == ({"weights": 2}, False)

    monkeypatch.setenv("RECUNLEARN_MODELS", str(tmp_path))
    path = stored_models.stored_path("kind", ("a",), CODE)
    assert path.parent == tmp_path / "kind" and stored_models.stored_path("kind", ("b",), CODE) != path
    assert stored_models.stored_path("other", ("a",), CODE).parent == tmp_path / "other"
    assert stored_models.load_or_train("kind", ("a",), CODE, 2, train) == ({"weights": 3}, False)
    assert stored_models.load_or_train("kind", ("a",), CODE, 2, train) == ({"weights": 3}, True)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 97)
    assert stored_models.stored_path("kind", ("a",), CODE) != path           # other threads: other weights
    monkeypatch.undo()
    monkeypatch.setenv("RECUNLEARN_MODELS", str(tmp_path))
    monkeypatch.setattr("recunlearn.provenance.source_fingerprint", lambda module=None: "other code")
    assert stored_models.stored_path("kind", ("a",), CODE) != path
    monkeypatch.undo()
    monkeypatch.setenv("RECUNLEARN_MODELS", str(tmp_path))
    fingerprint = provenance.source_fingerprint
    monkeypatch.setattr("recunlearn.provenance.source_fingerprint",  # a change the training never runs
                        lambda module=None: fingerprint(module) if module == CODE else "other code")
    assert stored_models.stored_path("kind", ("a",), CODE) == path
    monkeypatch.undo()
    monkeypatch.setenv("RECUNLEARN_MODELS", str(tmp_path))

    stored_models.load_or_train("kind", ("b",), CODE, 2, train)
    stored_models.load_or_train("kind", ("c",), CODE, 2, train)             # capacity 2: the oldest goes
    assert not path.exists() and len(list(path.parent.glob("*.pt"))) == 2
    stored = stored_models.stored_path("kind", ("c",), CODE)
    stored.write_bytes(b"not a model")                                       # unreadable: trained again
    assert stored_models.load_or_train("kind", ("c",), CODE, 2, train)[1] is False
    assert stored_models.load(stored, usable=lambda value: False) is None    # rejected by the caller
