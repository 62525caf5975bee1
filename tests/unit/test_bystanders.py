"""Bystanders of unlearning: before/after rank lists of the users who were not unlearned."""

from __future__ import annotations

import numpy as np
import pytest

from recunlearn.data import load_split
from recunlearn.experiments.bystanders import BystanderConfig, random_rows, rank_lists_of, run_bystanders
from recunlearn.experiments.cure4rec_exact import exact_unlearning
from recunlearn.experiments.config import ConfigError
from recunlearn.experiments import cure4rec
from recunlearn.metrics import rls

ROLES = ("released_ratings", "released_train", "released_test")
TINY = dict(dataset="ml-100k", model="wmf", max_epochs=2, ratio=2.0)


def test_retraining_from_the_same_initialisation_on_the_same_data_moves_nothing(need_local):
    need_local("ml-100k", *ROLES)
    config = BystanderConfig(method="sisa", **TINY)
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    nobody = np.array([], dtype=np.int64)
    (first, _), (second, _) = (exact_unlearning(config, split, nobody, "sisa", config.n_shards) for _ in range(2))
    user_shard, first, second = first.user_shard, first.model, second.model
    users = np.arange(split.n_users)
    exclude = cure4rec.test_exclusions(split, config).tocsr()
    a, lengths = rank_lists_of(first, users, exclude, user_shard, "cpu")
    b, _ = rank_lists_of(second, users, exclude, user_shard, "cpu")
    metrics = rls.rls_metrics(a, b, lengths=lengths)
    assert all(np.all(v == 1.0) for v in metrics.values())
    assert np.array_equal(lengths, split.n_items - np.diff(exclude.indptr))


def test_sisa_leaves_the_lists_of_unaffected_shards_exactly_unchanged(need_local):
    need_local("ml-100k", *ROLES)
    record = run_bystanders(BystanderConfig(method="sisa", n_shards=10, **{**TINY, "ratio": 1.0}))
    m = record["metrics"]
    assert record["unlearning"]["unaffected_shards_unchanged"] is True
    assert len(record["unlearning"]["affected_shards"]) < 10  # 0.5 % of the users: some shards untouched
    assert m["ao_unaffected_shards"] == 1.0 and m["jaccard_unaffected_shards"] == 1.0
    assert 0 < m["ao_affected_shards"] < 1.0
    assert m["n_bystanders"] == 943 - record["unlearning"]["n_deleted"]


def test_retrain_and_its_controls_move_every_bystander(need_local):
    need_local("ml-100k", *ROLES)
    unlearned = run_bystanders(BystanderConfig(method="retrain", **TINY))
    reinit = run_bystanders(BystanderConfig(method="retrain", control="reinit-only", **TINY))
    random = run_bystanders(BystanderConfig(method="retrain", control="random-rows", **TINY))
    for record in (unlearned, reinit, random):
        m = record["metrics"]
        assert 0 < m["ao"] < 1 and 0 <= m["jaccard"] <= 1 and m["n_in_affected_shards"] == m["n_bystanders"]
    assert random["unlearning"]["removed_rows"] == unlearned["unlearning"]["removed_rows"] > 0
    assert reinit["unlearning"]["removed_rows"] == 0


def test_random_rows_are_seeded_and_of_the_requested_count():
    a, b = random_rows(1000, 37, seed=4), random_rows(1000, 37, seed=4)
    assert a.sum() == 37 and np.array_equal(a, b) and not np.array_equal(a, random_rows(1000, 37, seed=5))


def test_only_routed_serving_is_accepted():
    with pytest.raises(ConfigError, match="combiner"):
        BystanderConfig(method="sisa", combiner="original")


# --- question 2: cascades of a deletion; question 3: one interaction left out ------------------------------------

def test_every_training_row_has_its_rating_timestamp_and_a_bigger_deletion_reaches_more(need_local):
    from recunlearn.data.splits import released_train_timestamps
    from recunlearn.experiments.cascades import deletion_cascade, training_graph

    need_local("ml-100k", *ROLES)
    config = BystanderConfig(method="retrain", **TINY)
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    stamps = released_train_timestamps(config.dataset, split)
    assert len(stamps) == len(split.train) and stamps.min() > 8e8  # Unix seconds, 1997-98
    graph, train_row = training_graph(config)
    assert len(graph) == len(split.train) and np.array_equal(np.sort(train_row), np.arange(len(split.train)))
    assert np.all(np.diff(stamps[train_row]) >= 0)  # nodes in time order
    small = random_rows(len(split.train), 10, seed=0)
    large = small | random_rows(len(split.train), 200, seed=1)
    a, b = deletion_cascade(config, small), deletion_cascade(config, large)
    assert 10 <= a["cascade_reach"] <= b["cascade_reach"] <= len(split.train)
    assert b["cascade_share"] == b["cascade_reach"] / len(split.train)


def test_one_interaction_left_out_moves_only_its_shard_and_retrain_everyone(need_local):
    from recunlearn.experiments.stability import StabilityConfig, run_stability

    need_local("ml-100k", *ROLES)
    sisa = run_stability(StabilityConfig(method="sisa", **TINY))
    m, left_out = sisa["metrics"], sisa["perturbation"]
    assert left_out["other_shards_unchanged"] is True and left_out["n_shards"] == 10
    assert m["ao_other_shards"] == 1.0 and m["jaccard_other_shards"] == 1.0
    assert 0 < m["ao_shard"] <= 1 and m["n_shard_users"] < m["n_users"] == 943 - left_out["n_deleted"]
    retrain = run_stability(StabilityConfig(method="retrain", state="learn", **TINY))
    assert retrain["metrics"]["n_shard_users"] == retrain["metrics"]["n_users"]
    assert retrain["metrics"]["ao_other_shards"] is None
    assert retrain["perturbation"]["row"] == left_out["row"]  # the same interaction for every method and state
    assert retrain["perturbation"]["shard_training_rows"] == 79045


def test_the_casper_selector_leaves_out_the_top_cascade_interaction(need_local):
    from recunlearn.experiments.cascades import top_cascade_row
    from recunlearn.experiments.stability import StabilityConfig, left_out_row

    need_local("ml-100k", *ROLES)
    config = StabilityConfig(method="retrain", selector="casper", **TINY)
    split, deleted = cure4rec_exact_set(config)
    remaining = ~np.isin(split.train["user"].to_numpy(), deleted)
    row, score = left_out_row(config, remaining)
    assert (row, score) == top_cascade_row(config, remaining) and remaining[row] and score > 1
    random_row, none = left_out_row(config.replace(selector="random"), remaining)
    assert none is None and remaining[random_row]
    with pytest.raises(ConfigError, match="STATE"):
        StabilityConfig(state="deployed")


def test_the_casper_selector_is_refused_before_compute_without_timestamps():
    from recunlearn.experiments.stability import StabilityConfig

    with pytest.raises(ConfigError, match="selector = 'casper'.*protocol = 'raw'"):
        StabilityConfig(selector="casper", protocol="raw")
    assert StabilityConfig(selector="random", protocol="raw").protocol == "raw"


def cure4rec_exact_set(config):
    from recunlearn.experiments.cure4rec_exact import unlearning_set

    return unlearning_set(config)


# --- one learned model per process, shared by the runs of a plan batch ------------------------------------------

def _without_timings(record: dict) -> dict:
    return {key: value for key, value in record.items() if key != "timings"}


def test_runs_sharing_the_learned_model_give_the_records_they_give_alone(need_local):
    """A bystander or stability run that takes its method's learned model from the process cache gives
    the same payload bit for bit as the run computed in a fresh process state, and says so."""
    from recunlearn.experiments import cure4rec_exact
    from recunlearn.experiments.stability import StabilityConfig, run_stability

    need_local("ml-100k", *ROLES)
    sisa = dict(method="sisa", n_shards=4, **TINY)
    configs = [BystanderConfig(**sisa), BystanderConfig(control="reinit-only", selection="core", **sisa),
               StabilityConfig(**sisa)]
    runners = [run_bystanders, run_bystanders, run_stability]
    assert len({cure4rec_exact.learned_model_key(c) for c in configs}) == 1

    cure4rec_exact._LEARNED.clear()
    shared = [run(c) for run, c in zip(runners, configs)]
    assert [r["timings"]["learned_cached"] for r in shared] == [False, True, True]
    for run, config, with_cache in zip(runners, configs, shared):
        cure4rec_exact._LEARNED.clear()
        alone = run(config)
        assert not alone["timings"]["learned_cached"]
        assert _without_timings(alone) == _without_timings(with_cache)
    # the comparison can fail: another seed's learned model gives other lists
    cure4rec_exact._LEARNED.clear()
    assert _without_timings(run_bystanders(configs[0].replace(seed=1))) != _without_timings(shared[0])


def test_the_learned_model_key_ignores_who_is_unlearned_and_not_the_method_or_partition():
    from recunlearn.experiments.cure4rec_exact import learned_model_key

    base = BystanderConfig(method="sisa", **TINY)
    same = [base.replace(selection="core"), base.replace(ratio=1.0), base.replace(control="random-rows"),
            base.replace(selection_seed=3), base.replace(top_k=5)]
    assert all(learned_model_key(c) == learned_model_key(base) for c in same)
    other = [base.replace(method="receraser"), base.replace(n_shards=5), base.replace(seed=1),
             base.replace(model="bpr"), base.replace(max_epochs=3), base.replace(partition_order="farthest_first")]
    assert all(learned_model_key(c) != learned_model_key(base) for c in other)
    # Retrain is one shard whatever n_shards says
    retrain = BystanderConfig(method="retrain", **TINY)
    assert learned_model_key(retrain) == learned_model_key(retrain.replace(n_shards=5))


@pytest.mark.parametrize("experiment", ["cure4rec-bystander", "cure4rec-stability"])
def test_cost_alone_adds_back_a_cached_learned_model(experiment):
    from recunlearn.compute.costs import rule_of

    learned_cost_alone = rule_of(experiment).alone

    record = {"timings": {"learned_wall_seconds": 10.0, "learned_cached": True}}
    assert learned_cost_alone(record, 6.0, 3.0) == (26.0, 20.0)  # 10 wall s at the run's 2 CPU s per wall s
    record["timings"]["learned_cached"] = False
    assert learned_cost_alone(record, 6.0, 3.0) == (6.0, 20.0)
    assert learned_cost_alone({"timings": {}}, 6.0, 3.0) == (6.0, 0.0)  # older records


def test_the_plan_gives_the_runs_sharing_a_learned_model_to_one_worker(tmp_path):
    import yaml

    from recunlearn.compute.plan import batches, load_plan

    params = {"dataset": "ml-100k", "model": "wmf", "method": ["retrain", "sisa"], "control": ["unlearn", "reinit-only"],
              "selection": ["core", "random"], "seed": [0, 1]}
    plan_file = tmp_path / "plan.yml"
    plan_file.write_text(yaml.safe_dump({"entries": [{"name": "a", "title": "", "pages": [], "grids": [
        {"experiment": "cure4rec-bystander", "params": params}]}]}))
    grouped = batches(load_plan(plan_file).runs)
    assert sorted({(run.config.method, run.config.seed) for run in batch}.pop() for batch in grouped) == \
        [("retrain", 0), ("retrain", 1), ("sisa", 0), ("sisa", 1)]
    assert all(len({(run.config.method, run.config.seed) for run in batch}) == 1 and len(batch) == 4
               for batch in grouped)  # one (method, seed) per batch, its 2 controls x 2 selections
