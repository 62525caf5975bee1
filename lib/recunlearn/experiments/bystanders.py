"""Bystanders of unlearning: how far an exact unlearning method moves the rank lists of the users
who asked for nothing (a question none of the three papers asks; the book's own chapter).

One :class:`BystanderConfig` = one (dataset, backbone, method, unlearning set, seed):

- **before**: the method's learned model — every shard trained on all training data (stage I of
  :func:`~recunlearn.unlearning.exact.unlearn_exactly` with nobody unlearned; for Retrain the one
  full model, i.e. the Learn model of the exact pipeline);
- **after**: the same model once the unlearning set is unlearned (stage III from a copy of
  *before*: unaffected shards stay bit-identical, affected shards are re-initialised and retrained
  on their remaining data, exactly as the method runs on the CURE4Rec pages);
- for every **bystander** (a user not unlearned, with at least one candidate item), the rank lists
  of *before* and *after* over the user's candidate items (all items minus the user's training and
  validation items, which are the same in both models) are compared with AO, RBO(0.9) and
  Jaccard@10 (:mod:`recunlearn.metrics.rls`, over each user's candidates only).

``control = "unlearn"`` is the method itself. Controls, each the same comparison with a different *after*:

- ``reinit-only``: the affected shards are re-initialised and retrained **with no row removed** — what
  retraining from a fresh initialisation alone does to the lists (the floor an exact method cannot
  go below; retraining from the *same* initialisation on the same data gives 1.0 exactly on CPU,
  checked by the tests);
- ``random-rows``: instead of the unlearning set's rows, the same number of training rows drawn
  uniformly from all users (seeded by ``selection_seed``) is removed — is it *who* is unlearned or
  only *how much* that moves the lists?
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import numpy as np
import pandas as pd
import torch

from ..metrics import rls
from ..models.trainer import evaluate_model, frozen_scorer
from ..seeding import seed_everything
from ..unlearning import EXACT_METHODS
from .cascades import deletion_cascade
from .config import ConfigError, option
from .cure4rec import UnlearningGrid, _require_device, remaining_after, test_exclusions
from .cure4rec_exact import UnlearnConfig, exact_unlearning, learned_model, unlearning_set
from .records import collect_records, record_key, register

CONTROLS = ("unlearn", "reinit-only", "random-rows")
SCORE_BATCH = 512


@dataclasses.dataclass(frozen=True)
class BystanderConfig(UnlearnConfig):
    """An exact unlearning run compared, user by user, with the model it started from."""

    experiment = "cure4rec-bystander"
    results_version = "1"

    control: str = option("unlearn", choices=CONTROLS, doc="unlearn: the method itself; reinit-only: affected "
                                                           "shards retrained with no row removed; random-rows: as "
                                                           "many random rows removed instead of the set's")
    top_k: int = option(10, min=1, doc="depth of the Jaccard overlap")

    def validate(self) -> None:
        super().validate()
        if self.combiner != "route":
            raise ConfigError(f"parameter combiner = {self.combiner!r}: bystander runs serve each user by the "
                              "user's own shard; allowed: 'route'")


def rank_lists_of(model, users: np.ndarray, exclude, user_shard, device) -> tuple[torch.Tensor, np.ndarray]:
    """Rank lists (item ids, best first) of ``users`` with each user's excluded items moved to the
    end in id order, and each user's number of candidates."""
    score = frozen_scorer(model, user_shard)
    lists, lengths = [], []
    excluded = exclude[users]
    for lo in range(0, len(users), SCORE_BATCH):
        batch = users[lo:lo + SCORE_BATCH]
        with torch.no_grad():
            scores = score(torch.as_tensor(batch, device=device)).double().cpu()
        rows = excluded[lo:lo + SCORE_BATCH].tocoo()
        scores[torch.as_tensor(rows.row, dtype=torch.long), torch.as_tensor(rows.col, dtype=torch.long)] = -np.inf
        lists.append(rls.rank_lists(scores))
        lengths.append(scores.shape[1] - np.diff(excluded[lo:lo + SCORE_BATCH].indptr))
    return torch.cat(lists), np.concatenate(lengths)


def random_rows(n_rows: int, count: int, seed: int) -> np.ndarray:
    """A bool mask of ``count`` training rows drawn uniformly without replacement (seeded)."""
    mask = np.zeros(n_rows, dtype=bool)
    mask[np.random.default_rng([seed, 7]).choice(n_rows, size=count, replace=False)] = True
    return mask


@register(BystanderConfig)
def run_bystanders(config: BystanderConfig) -> dict:
    """Before/after rank-list similarity of every bystander (see the module docstring)."""
    _require_device(config.device)
    seed_everything(config.seed)
    split, deleted = unlearning_set(config)
    train_users = split.train["user"].to_numpy()

    def run(unlearned, **control):
        seed_everything(config.seed)
        return exact_unlearning(config, split, unlearned, config.method, config.n_shards, config.partition_order,
                                config.timing, **control)[0]

    first, learned_seconds, learned_cached = learned_model(config, split)
    before, user_shard = first.model, first.user_shard
    set_rows = np.isin(train_users, deleted)
    if config.control == "unlearn":
        after = run(deleted, learned=before)
    elif config.control == "reinit-only":
        after = run(np.array([], dtype=np.int64), learned=before, affected_shards=np.unique(user_shard[deleted]))
    else:
        after = run(np.array([], dtype=np.int64), learned=before,
                    dropped_rows=random_rows(len(train_users), int(set_rows.sum()), config.selection_seed))
    removed = {"unlearn": int(set_rows.sum()), "reinit-only": 0, "random-rows": int(set_rows.sum())}[config.control]
    bystanders = np.setdiff1d(np.arange(split.n_users), deleted if config.control != "random-rows" else [])
    exclude = test_exclusions(split, config).tocsr()
    lists_before, lengths = rank_lists_of(before, bystanders, exclude, user_shard, config.device)
    lists_after, _ = rank_lists_of(after.model, bystanders, exclude, user_shard, config.device)
    keep = lengths > 0
    per_user = rls.rls_metrics(lists_before[keep], lists_after[keep], k=config.top_k, lengths=lengths[keep])
    bystanders = bystanders[keep]
    in_affected = np.isin(user_shard[bystanders], after.affected_shards)
    summary = {m: float(v.mean()) for m, v in per_user.items()}
    for name, mask in (("affected", in_affected), ("unaffected", ~in_affected)):
        summary.update({f"{m}_{name}_shards": (float(v[mask].mean()) if mask.any() else None)
                        for m, v in per_user.items()})
    summary["share_identical_top_k"] = float((per_user["jaccard"] == 1.0).mean())
    remaining = remaining_after(split, deleted)
    utility = {}
    for label, model in (("before", before), ("after", after.model)):
        per = evaluate_model(model, exclude, split.matrix("test"), config.k, users=remaining.eval_users,
                             device=config.device, metrics=("ndcg_untruncated",), user_block=user_shard)
        utility[f"ndcg_untruncated_{label}"] = float(per["ndcg_untruncated"].mean())
    quantiles = {m: np.quantile(v, [0.1, 0.5, 0.9]).round(6).tolist() for m, v in per_user.items()}
    return {
        "metrics": {**summary, **utility, "n_bystanders": int(len(bystanders)),
                    "n_in_affected_shards": int(in_affected.sum())},
        "quantiles": quantiles,
        "unlearning": {"n_deleted": int(len(deleted)), "removed_rows": removed,
                       "n_shards": int(user_shard.max()) + 1, "affected_shards": after.affected_shards.tolist(),
                       "unaffected_shards_unchanged": after.unaffected_unchanged},
        "timings": {**after.timings, "learned_wall_seconds": learned_seconds, "learned_cached": learned_cached},
        "split": split.description, "seed": config.seed, "device": config.device,
    }


@dataclasses.dataclass(frozen=True)
class BystanderGrid(UnlearningGrid):
    """Parameters of the bystander pages: lists expand into one run each (``random-rows`` for Retrain only:
    rows drawn from all users touch every shard, which for a sharded method is a full retrain)."""

    OWN_QUESTION = True  # the book's own question: no paper, so no "paper datasets"

    experiment = "cure4rec-bystander"

    methods: tuple[str, ...] = option(tuple(EXACT_METHODS), choices=tuple(EXACT_METHODS))
    controls: tuple[str, ...] = option(CONTROLS, choices=CONTROLS)
    n_shards: int = option(10, min=1)
    compute_missing: bool = option(True, doc="False: show only stored records, list the rest as pending")

    def runs(self) -> list[BystanderConfig]:
        runs = []
        for d, m, method, control, sel, ratio, seed in itertools.product(
                self.datasets, self.models, self.methods, self.controls, self.selections, self.ratios, self.seeds):
            if control == "random-rows" and method != "retrain":
                continue  # random rows touch every shard: for a sharded method that is a full retrain
            runs.append(BystanderConfig(dataset=d, model=m, method=method, control=control, selection=sel,
                                        ratio=ratio, n_shards=self.n_shards, seed=seed, validation=self.validation,
                                        max_epochs=self.max_epochs, device=self.device))
        return runs


def collect_bystanders(grid: BystanderGrid, records_dir=None) -> pd.DataFrame:
    """One row per run of ``grid`` (config and metrics); runs without a record are listed in
    ``frame.attrs["pending"]`` when ``compute_missing`` is false."""
    def row(config, record):
        return {"dataset": config.dataset, "model": config.model, "method": config.method, "control": config.control,
                "selection": config.selection, "seed": config.seed, **record["metrics"], "record": record["key"]}

    return collect_records(grid.runs(), grid.compute_missing, row, records_dir)


# --- question 2: who is unlearned -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CascadeGrid(BystanderGrid):
    """Parameters of question 2: the method's own unlearning (Retrain by default) of many unlearning sets
    of one size -- core and edge users, and random users drawn with each of ``selection_seeds``
    (core and edge sets do not depend on it: seed 0 only)."""

    methods: tuple[str, ...] = option(("retrain",), choices=tuple(EXACT_METHODS))
    controls: tuple[str, ...] = option(("unlearn",), choices=("unlearn",))
    selection_seeds: tuple[int, ...] = option(tuple(range(10)), min=0, doc="seeds of the random unlearning sets")

    def runs(self) -> list[BystanderConfig]:
        return [config.replace(selection_seed=s) for config in super().runs()
                for s in (self.selection_seeds if config.selection == "random" else (0,))]


def deleted_rows_of(config: UnlearnConfig) -> np.ndarray:
    """Bool mask over the training rows: the rows of ``config``'s unlearning set."""
    split, deleted = unlearning_set(config)
    return np.isin(split.train["user"].to_numpy(), deleted)


@functools.lru_cache(maxsize=64)
def _set_cascade(dataset, protocol, split_seed, validation, selection, ratio, scoring, selection_seed) -> dict:
    config = UnlearnConfig(dataset=dataset, protocol=protocol, split_seed=split_seed, validation=validation,
                           selection=selection, ratio=ratio, scoring=scoring, selection_seed=selection_seed)
    return deletion_cascade(config, deleted_rows_of(config))


def unlearning_set_cascade(config: UnlearnConfig) -> dict:
    """The deletion cascade (:func:`~recunlearn.experiments.cascades.deletion_cascade`) of the rows of
    ``config``'s unlearning set; it depends on the data and the set only (cached)."""
    return _set_cascade(config.dataset, config.protocol, config.split_seed, config.validation, config.selection,
                        config.ratio, config.scoring, config.selection_seed)


CASCADE_COLUMNS = ["dataset", "model", "method", "selection", "selection_seed", "seed", "removed_rows",
                   "cascade_reach", "cascade_share", "ao", "disturbance", "jaccard", "record"]


def collect_cascades(grid: CascadeGrid, records_dir=None) -> pd.DataFrame:
    """One row per run of ``grid``: the unlearning set (selection, its seed, rows removed, its deletion
    cascade) and the bystanders' similarity, with ``disturbance`` = 1 − AO; pending runs in
    ``frame.attrs["pending"]``."""
    def row(config, record):
        return {"dataset": config.dataset, "model": config.model, "method": config.method,
                "selection": config.selection, "selection_seed": config.selection_seed, "seed": config.seed,
                "removed_rows": record["unlearning"]["removed_rows"], **unlearning_set_cascade(config),
                "ao": record["metrics"]["ao"], "disturbance": 1.0 - record["metrics"]["ao"],
                "jaccard": record["metrics"]["jaccard"], "record": record["key"]}

    return collect_records(grid.runs(), grid.compute_missing, row, records_dir, CASCADE_COLUMNS)


# --- question 4: completeness vs disturbance --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TradeoffGrid(BystanderGrid):
    """Parameters of question 4: every exact method's bystander run (its own unlearning) and its MIO run
    (``cure4rec-exact-mio``, the same cells)."""

    controls: tuple[str, ...] = option(("unlearn",), choices=("unlearn",))
    mio_seeds: int = option(5, min=1, doc="oracle seeds of the MIO runs")
    mio_epochs: int = option(100, min=1, doc="oracle training epochs of the MIO runs")

    def mio_runs(self) -> list:
        from .cure4rec_scif import ExactMioConfig

        return [ExactMioConfig(dataset=c.dataset, model=c.model, method=c.method, selection=c.selection, seed=c.seed,
                               ratio=c.ratio, scoring=c.scoring, selection_seed=c.selection_seed, timing=c.timing,
                               validation=c.validation, max_epochs=c.max_epochs, mio_seeds=self.mio_seeds,
                               mio_epochs=self.mio_epochs, n_shards=c.n_shards, device=c.device)
                for c in super().runs()]

    def learn_mio_runs(self) -> list:
        """The SCIF runs (``cure4rec-scif``, Table 1's) of the same unlearning sets: their Learn model's
        MIO, the oracle's AUC on the model before anyone is unlearned, tells whether the oracle can
        tell members at all (the positive control of the completeness claim)."""
        from .cure4rec_scif import ScifConfig

        configs = {}
        for c in self.mio_runs():
            config = ScifConfig(dataset=c.dataset, model=c.model, selection=c.selection, seed=c.seed, ratio=c.ratio,
                                scoring=c.scoring, selection_seed=c.selection_seed, validation=c.validation,
                                max_epochs=c.max_epochs, mio_seeds=c.mio_seeds, mio_epochs=c.mio_epochs,
                                device=c.device)
            configs.setdefault(record_key(config), config)
        return list(configs.values())

    def runs(self) -> list:
        return super().runs() + self.mio_runs() + self.learn_mio_runs()


TRADEOFF_KEYS = ["dataset", "model", "method", "selection", "ratio", "seed"]
LEARN_KEYS = ["dataset", "model", "selection", "ratio", "seed"]


def collect_tradeoff(grid: TradeoffGrid, records_dir=None) -> pd.DataFrame:
    """One row per cell of ``grid`` with both a bystander and a MIO record: AO, RBO(0.9), Jaccard@10,
    ``disturbance`` = 1 − AO, MIO accuracy and AUC (means over the oracle seeds), and ``learn_mio_auc``,
    the oracle's AUC on the Learn model of the same unlearning set and seed (NaN without its record);
    every run without a record in ``frame.attrs["pending"]``."""
    bystander = collect_records(BystanderGrid.runs(grid), grid.compute_missing, lambda c, r: {
        **{k: getattr(c, k) for k in TRADEOFF_KEYS}, "ao": r["metrics"]["ao"], "rbo_min": r["metrics"]["rbo_min"],
        "jaccard": r["metrics"]["jaccard"], "disturbance": 1.0 - r["metrics"]["ao"]}, records_dir, TRADEOFF_KEYS)
    mio = collect_records(grid.mio_runs(), grid.compute_missing, lambda c, r: {
        **{k: getattr(c, k) for k in TRADEOFF_KEYS}, "mio_accuracy": r["metrics"]["mio_accuracy"],
        "mio_auc": r["metrics"]["mio_auc"]}, records_dir, TRADEOFF_KEYS)
    learn = collect_records(grid.learn_mio_runs(), grid.compute_missing, lambda c, r: {
        **{k: getattr(c, k) for k in LEARN_KEYS}, "learn_mio_auc": r["metrics"]["learn"]["mio_auc"]}, records_dir,
        LEARN_KEYS + ["learn_mio_auc"])
    frame = bystander.merge(mio, on=TRADEOFF_KEYS, how="inner") if len(bystander) and len(mio) else \
        pd.DataFrame(columns=TRADEOFF_KEYS + ["ao", "disturbance", "mio_accuracy", "mio_auc"])
    frame = frame.merge(learn, on=LEARN_KEYS, how="left")
    frame.attrs["pending"] = bystander.attrs["pending"] + mio.attrs["pending"] + learn.attrs["pending"]
    return frame
