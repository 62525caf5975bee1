"""Is the model deployed after unlearning as stable as the one before? CASPER's one-interaction
perturbation applied to an exact unlearning method's model (the book's own chapter, question 3).

One :class:`StabilityConfig` = one (dataset, backbone, method, state, selector, seed). The **state**
is the model a deployer serves:

- ``learn``: the method's learned model (every shard trained on all training data);
- ``unlearned``: that model once the config's unlearning set is unlearned (as on the CURE4Rec pages).

One training interaction ``r`` of a user who is not in the unlearning set is left out (CASPER's
leave-one-out): ``random`` = drawn uniformly (seeded by ``seed``), ``casper`` = the interaction with
the highest cascade score (:mod:`.cascades`, on the graph of those users' rows; the same in both
states, so the two states are compared on the same interaction). Leaving ``r`` out is served the way
the method serves any deletion: only the shard holding ``r`` is re-initialised and retrained (Retrain:
its one model). So that ``r`` is the only difference, both models compared are made by that retraining
from the same initialisation and seeds: **reference** = the shard retrained on its data, **perturbed**
= retrained without ``r``; every other shard keeps the state's parameters. For every user not in the
unlearning set with a candidate item, the two rank lists (candidates as on the bystander pages) are
compared with AO, RBO(0.9) and Jaccard@10 (:mod:`recunlearn.metrics.rls`), overall and split into
the users of the retrained shard and the others (whose lists cannot move).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd

from ..metrics import rls
from ..seeding import seed_everything
from ..unlearning import EXACT_METHODS
from .bystanders import rank_lists_of
from .cascades import TIMED_PROTOCOL, top_cascade_row
from .config import ConfigError, option
from .cure4rec import UnlearningGrid, _require_device, test_exclusions
from .cure4rec_exact import UnlearnConfig, exact_unlearning, learned_model, unlearning_set
from .records import collect_records, register

STATES = ("learn", "unlearned")
SELECTORS = ("random", "casper")


@dataclasses.dataclass(frozen=True)
class StabilityConfig(UnlearnConfig):
    """One interaction left out of an exact unlearning method's model, before or after unlearning."""

    experiment = "cure4rec-stability"
    results_version = "1"

    state: str = option("unlearned", choices=STATES, doc="learn: the learned model; unlearned: after the "
                                                         "unlearning set is unlearned")
    selector: str = option("random", choices=SELECTORS, doc="which interaction is left out: random (seeded by "
                                                            "seed) or the top cascade score (casper)")
    top_k: int = option(10, min=1, doc="depth of the Jaccard overlap")

    def validate(self) -> None:
        super().validate()
        if self.combiner != "route":
            raise ConfigError(f"parameter combiner = {self.combiner!r}: stability runs serve each user by the "
                              "user's own shard; allowed: 'route'")
        if self.selector == "casper" and self.protocol != TIMED_PROTOCOL:
            raise ConfigError(f"parameter selector = 'casper' needs interaction timestamps, which only protocol "
                              f"{TIMED_PROTOCOL!r} has; got protocol = {self.protocol!r} (allowed with it: "
                              "selector 'random')")


def left_out_row(config: StabilityConfig, candidates: np.ndarray) -> tuple[int, int | None]:
    """``(row of split.train, cascade score or None)``: the interaction left out, among the rows
    ``candidates`` (bool mask)."""
    if config.selector == "casper":
        return top_cascade_row(config, candidates)
    return int(np.random.default_rng([config.seed, 11]).choice(np.flatnonzero(candidates))), None


@register(StabilityConfig)
def run_stability(config: StabilityConfig) -> dict:
    """Reference vs perturbed rank lists of every remaining user (see the module docstring)."""
    _require_device(config.device)
    seed_everything(config.seed)
    split, deleted = unlearning_set(config)
    train_users = split.train["user"].to_numpy()
    remaining_rows = ~np.isin(train_users, deleted)
    row, cascade_score = left_out_row(config, remaining_rows)
    nobody = np.array([], dtype=np.int64)

    def run(unlearned, **control):
        seed_everything(config.seed)
        return exact_unlearning(config, split, unlearned, config.method, config.n_shards, config.partition_order,
                                config.timing, **control)[0]

    gone = deleted if config.state == "unlearned" else nobody
    learned_seconds, learned_cached = 0.0, False
    if config.method == "retrain":  # one model, retrained whole: no state model to keep shards from
        state_model, user_shard = None, np.zeros(split.n_users, dtype=np.int64)
    else:
        learned, learned_seconds, learned_cached = learned_model(config, split)
        state_model, user_shard = learned.model, learned.user_shard
        if config.state == "unlearned":
            state_model = run(deleted, learned=state_model).model
    shard = int(user_shard[train_users[row]])
    one = np.zeros(len(train_users), dtype=bool)
    one[row] = True
    reference = run(gone, learned=state_model, affected_shards=[shard])
    perturbed = run(gone, learned=state_model, affected_shards=[shard], dropped_rows=one)

    users = np.setdiff1d(np.arange(split.n_users), deleted)
    exclude = test_exclusions(split, config).tocsr()
    lists_a, lengths = rank_lists_of(reference.model, users, exclude, user_shard, config.device)
    lists_b, _ = rank_lists_of(perturbed.model, users, exclude, user_shard, config.device)
    keep = lengths > 0
    per_user = rls.rls_metrics(lists_a[keep], lists_b[keep], k=config.top_k, lengths=lengths[keep])
    users = users[keep]
    same_shard = user_shard[users] == shard
    owner = users == train_users[row]
    summary = {m: float(v.mean()) for m, v in per_user.items()}
    for name, mask in (("shard", same_shard), ("other_shards", ~same_shard), ("owner", owner)):
        summary.update({f"{m}_{name}": (float(v[mask].mean()) if mask.any() else None) for m, v in per_user.items()})
    summary["share_identical_top_k"] = float((per_user["jaccard"] == 1.0).mean())
    shard_rows = remaining_rows if config.state == "unlearned" else np.ones(len(train_users), dtype=bool)
    return {
        "metrics": {**summary, "n_users": int(len(users)), "n_shard_users": int(same_shard.sum())},
        "quantiles": {m: np.quantile(v, [0.1, 0.5, 0.9]).round(6).tolist() for m, v in per_user.items()},
        "perturbation": {"row": row, "user": int(train_users[row]), "item": int(split.train["item"].iat[row]),
                         "shard": shard, "cascade_score": cascade_score,
                         "shard_training_rows": int((shard_rows & (user_shard[train_users] == shard)).sum()),
                         "n_deleted": int(len(deleted)), "n_shards": int(user_shard.max()) + 1,
                         "other_shards_unchanged": perturbed.unaffected_unchanged},
        "timings": {"reference_seconds": reference.timings["unlearn_seconds"],
                    "perturbed_seconds": perturbed.timings["unlearn_seconds"],
                    "learned_wall_seconds": learned_seconds, "learned_cached": learned_cached},
        "split": split.description, "seed": config.seed, "device": config.device,
    }


@dataclasses.dataclass(frozen=True)
class StabilityGrid(UnlearningGrid):
    """Parameters of the stability page (question 3): lists expand into one run each."""

    OWN_QUESTION = True  # the book's own question: no paper, so no "paper datasets"

    experiment = "cure4rec-stability"

    methods: tuple[str, ...] = option(tuple(EXACT_METHODS), choices=tuple(EXACT_METHODS))
    states: tuple[str, ...] = option(STATES, choices=STATES)
    selectors: tuple[str, ...] = option(("random",), choices=SELECTORS)
    selections: tuple[str, ...] = option(("random",), choices=("core", "random", "edge"),
                                         doc="the unlearning set (and the users left out of the comparison)")
    n_shards: int = option(10, min=1)
    compute_missing: bool = option(True, doc="False: show only stored records, list the rest as pending")

    def runs(self) -> list[StabilityConfig]:
        return [StabilityConfig(dataset=d, model=m, method=method, state=state, selector=selector, selection=sel,
                                ratio=ratio, n_shards=self.n_shards, seed=seed, validation=self.validation,
                                max_epochs=self.max_epochs, device=self.device)
                for d, m, method, state, selector, sel, ratio, seed in itertools.product(
                    self.datasets, self.models, self.methods, self.states, self.selectors, self.selections,
                    self.ratios, self.seeds)]


def collect_stability(grid: StabilityGrid, records_dir=None) -> pd.DataFrame:
    """One row per run of ``grid`` (config, metrics, the interaction left out); runs without a record
    are listed in ``frame.attrs["pending"]`` when ``compute_missing`` is false."""
    def row(config, record):
        return {"dataset": config.dataset, "model": config.model, "method": config.method, "state": config.state,
                "selector": config.selector, "selection": config.selection, "seed": config.seed,
                **record["metrics"], "shard_training_rows": record["perturbation"]["shard_training_rows"],
                "record": record["key"]}

    return collect_records(grid.runs(), grid.compute_missing, row, records_dir,
                           ["dataset", "model", "method", "state", "selector", "selection", "seed", "ao", "ao_shard",
                            "jaccard", "jaccard_shard", "share_identical_top_k", "n_shard_users", "record"])
