"""CURE4Rec approximate unlearning: SCIF beside Learn and Retrain, with utility, fairness (A-IGF),
unlearning completeness (MIO accuracy) and unlearning time (CURE4Rec §5.1-5.3, Tables 1, 3, 5,
Figures 2 and 5).

One run (:class:`ScifConfig`) learns the original model, selects the unlearned users and then

- **SCIF**: one influence-function update of the unlearned users' rows and their items' rows
  (:func:`~recunlearn.unlearning.scif.scif_unlearn`, deletion form), timed as gradient + CG +
  update (evaluation excluded), damped by default with δ = 1 % of the Hessian's mean eigenvalue
  (``damping_rule="relative"``; :func:`run_scif_damping_sweep` shows how MIO and utility move with it);
- **Retrain**: the exact pipeline's Retrain (:func:`~recunlearn.experiments.cure4rec_exact.exact_unlearning`,
  the same model, seeds and early stopping as on the exact pages): a fresh model trained on the
  remaining users' training data only, selecting its epoch on the remaining users' validation
  items; the unlearned users' rows are never touched by the optimiser and stay at their
  initialisation (so the MIO sees untrained rows for them; checked and recorded as
  ``deleted_rows_at_init``).

Learn, Retrain and SCIF are evaluated on the remaining users' test items exactly as
:func:`~recunlearn.experiments.cure4rec_exact.run_exact_unlearning` does (active users recomputed
on the remaining users' training counts), and each gets an MIO trained on *its
own* scoring embeddings for the retained users and evaluated on the unlearned users (5 oracle
seeds: mean ± std of accuracy and AUC).

The separate experiment ``cure4rec-exact-mio`` (:class:`ExactMioConfig`) re-runs an exact method
(:func:`~recunlearn.unlearning.unlearn_exactly`) and measures the MIO of the routed shard models:
each user is described by its own shard's user row and that shard's item table (for the unlearned
users: the shard that held them), which the paper does not report.

``collect(grid)``, :func:`collect_exact_mio` and :func:`collect_damping_sweep` return a grid's runs and
the runs still without a record; comparing them with the paper, the overview's aspects and the
claims are in :mod:`recunlearn.report.cure4rec_scif`.
"""

from __future__ import annotations

import dataclasses
import itertools
import time

import numpy as np
import pandas as pd
import torch

from ..data import load_split
from ..data.selection import RULES, SCORINGS
from ..metrics.membership import mio_accuracy_seeds, membership_sets
from ..models import TrainingData
from ..seeding import seed_everything
from ..unlearning import EXACT_METHODS
from ..unlearning.exact import TIMINGS
from ..unlearning.scif import DAMPING_FRACTION, DAMPING_PROBES, DAMPING_RULES, scif_unlearn
from .config import option
from .cure4rec import (Collected, TrainingSettings, UnlearningGrid, _require_device, evaluate_remaining,
                       pending_frame, remaining_after, train_original_model, users_to_unlearn)
from .cure4rec_exact import exact_unlearning
from .records import load_record, register, run_or_load

SCIF_METHODS = ("learn", "retrain", "scif")
MIO_FIELDS = ("accuracy", "accuracy_std", "auc", "auc_std", "train_accuracy", "train_accuracy_std", "restarts")


@dataclasses.dataclass(frozen=True)
class ScifConfig(TrainingSettings):
    """One approximate-unlearning run: Learn, Retrain and SCIF for one unlearning set."""

    experiment = "cure4rec-scif"
    results_version = "2"  # 2: Retrain is the exact pipeline's; damping relative to the Hessian's mean eigenvalue

    selection: str = option("random", choices=RULES)
    ratio: float = option(5.0, min=0.0, max=100.0, percent=True, doc="percentage of users to unlearn")
    scoring: str = option("degree", choices=SCORINGS, doc="core/edge ranking: degree (code) or importance (Eq. 1)")
    selection_seed: int = option(0, min=0, doc="seed of the random unlearning set (same for every run seed)")
    damping: float = option(1e-3, min=0.0, doc="damping_rule='absolute': the initial CG damping δ (×10 until CG "
                                                "converges); ignored by the relative rule")
    damping_rule: str = option("relative", choices=DAMPING_RULES,
                               doc="relative: δ = damping_fraction × the Hessian's mean eigenvalue (Hutchinson "
                                   "estimate); absolute: δ = damping")
    damping_fraction: float = option(DAMPING_FRACTION, min=0.0, doc="relative rule: δ as a fraction of the "
                                                                    "Hessian's mean eigenvalue")
    damping_probes: int = option(DAMPING_PROBES, min=1, doc="relative rule: Hutchinson probes (seeded by SEED)")
    cg_iterations: int = option(100, min=1)
    cg_tolerance: float = option(1e-5, min=0.0)
    scif_l2: float = option(1e-4, min=0.0, doc="L2 on the selected rows in the SCIF objective")
    mio_seeds: int = option(5, min=1, doc="MIO oracle seeds (mean ± std)")
    mio_epochs: int = option(100, min=1, doc="MIO oracle training epochs (paper: 100)")


def _mio(model, member, non_member, train_users, eval_users, n_seeds: int, seed: int, epochs: int = 100) -> dict:
    """MIO scores of ``model``'s scoring embeddings (oracle on ``train_users``, scored on ``eval_users``)."""
    model.eval()
    with torch.no_grad():
        user_emb, item_emb = model.embeddings()
    out = mio_accuracy_seeds(user_emb, item_emb, member, non_member, train_users, eval_users, n_seeds=n_seeds,
                             seed=seed, epochs=epochs)
    per_seed = out.pop("per_seed")
    out["n_train_samples"] = per_seed[0]["n_train_samples"]
    out["n_eval_samples"] = per_seed[0]["n_eval_samples"]
    out["per_seed_accuracy"] = [run["accuracy"] for run in per_seed]
    return out


@register(ScifConfig)
def run_scif(config: ScifConfig) -> dict:
    """Learn, select, unlearn by SCIF (timed) and by Retrain, evaluate all three on the remaining
    users and measure each one's MIO on the unlearned users."""
    _require_device(config.device)
    deleted = users_to_unlearn(config, load_split(config.dataset, config.protocol, config.split_seed,
                                                  config.validation))  # before training: RATIO is checked
    learn, split, learn_training, learn_wall = train_original_model(config)
    train_users, train_items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    remaining = remaining_after(split, deleted)
    kept = remaining.kept_rows

    # SCIF on a copy of the Learn model (Hessian sample and Hutchinson probes seeded like the model)
    data_all = TrainingData.from_pairs(train_users, train_items, split.n_users, split.n_items, config.device)
    scif = scif_unlearn(learn, data_all, deleted, damping_rule=config.damping_rule,
                        damping=config.damping if config.damping_rule == "absolute" else None,
                        damping_fraction=config.damping_fraction, damping_probes=config.damping_probes,
                        probe_seed=config.seed, cg_iterations=config.cg_iterations, cg_tolerance=config.cg_tolerance,
                        l2=config.scif_l2, generator=torch.Generator(device=config.device).manual_seed(config.seed))

    # Retrain: the exact pipeline's, on the remaining users' training and validation data only
    retrain, _ = exact_unlearning(config, split, deleted, "retrain")
    retrain_training = retrain.stage3[0]

    models = {"learn": learn, "retrain": retrain.model, "scif": scif.model}
    metrics = {name: evaluate_remaining(model, split, config, remaining)[1] for name, model in models.items()}
    member, non_member = membership_sets(split)
    start = time.perf_counter()
    for name, model in models.items():
        mio = _mio(model, member, non_member, remaining.users, deleted, config.mio_seeds, config.seed,
                   config.mio_epochs)
        metrics[name].update({f"mio_{key}": value for key, value in mio.items()})
    mio_seconds = time.perf_counter() - start

    scif_info = scif.as_dict()
    return {
        "metrics": metrics,
        "timings": {
            "learn_train_seconds": learn_training.train_seconds, "learn_wall_seconds": learn_wall,
            "retrain_seconds": retrain.timings["unlearn_seconds"],
            "retrain_wall_seconds": retrain.timings["unlearn_wall_seconds"],
            "scif_seconds": scif.total_seconds, "scif_gradient_seconds": scif.gradient_seconds,
            "scif_cg_seconds": scif.cg_seconds, "scif_update_seconds": scif.update_seconds,
            "mio_seconds": mio_seconds,
        },
        "training": {"learn_best_epoch": learn_training.best_epoch, "learn_epochs_run": learn_training.epochs_run,
                     "retrain_best_epoch": retrain_training.best_epoch,
                     "retrain_epochs_run": retrain_training.epochs_run},
        "scif": scif_info,
        "unlearning": {"n_deleted": int(len(deleted)), "deleted_interactions": int((~kept).sum()),
                       "deleted_rows_at_init": retrain.deleted_rows_at_init},
        "curve": {"learn": learn_training.curve, "retrain": retrain_training.curve},
        "split": split.description, "seed": config.seed, "device": config.device,
    }


@dataclasses.dataclass(frozen=True)
class ScifGrid(UnlearningGrid):
    """Notebook parameters of the SCIF pages: lists expand into one :class:`ScifConfig` each."""

    experiment = "cure4rec-scif"

    mio_seeds: int = option(5, min=1)
    mio_epochs: int = option(100, min=1)
    exact_mio_models: tuple[str, ...] | None = option(None, choices=("wmf", "bpr", "lightgcn", None),
                                                      doc="models of the exact methods' MIO; None: MODELS")
    damping_sweep_models: tuple[str, ...] | None = option(
        None, choices=("wmf", "bpr", "lightgcn", None),
        doc="models of the damping sweep (random users, first dataset, ratio and seed); None: no sweep")
    compute_missing: bool = option(True, doc="False: show only stored records, list the rest as pending")

    def damping_sweep_grid(self) -> "ScifGrid | None":
        """The grid the damping sweep runs on: ``damping_sweep_models`` on random users, first dataset,
        ratio and seed (None when no sweep is asked for)."""
        if self.damping_sweep_models is None:
            return None
        return self.replace(datasets=self.datasets[:1], models=self.damping_sweep_models, selections=("random",),
                            ratios=self.ratios[:1], seeds=self.seeds[:1], damping_sweep_models=None)

    def runs(self) -> list[ScifConfig]:
        return [ScifConfig(dataset=d, model=m, selection=s, ratio=r, seed=seed, validation=self.validation,
                           max_epochs=self.max_epochs, mio_seeds=self.mio_seeds, mio_epochs=self.mio_epochs,
                           device=self.device)
                for d, m, s, r, seed in itertools.product(self.datasets, self.models, self.selections, self.ratios,
                                                          self.seeds)]


SCIF_METRICS = ["ndcg_untruncated", "hr_cure4rec", "mio_accuracy", "a_igf", "mio_auc", "ndcg", "hit_ratio",
                "recall", "a_igf_standard"]


SCIF_KEYS = ["dataset", "model", "selection", "ratio", "seed"]
SCIF_COLUMNS = ["dataset", "model", "method", "selection", "ratio", "seed", "ndcg_untruncated", "hr_cure4rec",
                "mio_accuracy", "a_igf", "unlearn_seconds", "scif_cg_seconds", "cg_iterations", "damping", "record"]
"""Columns of a grid's runs frame when no run has a record."""


def _record(config, grid, records_dir):
    """The record of ``config``: computed when missing unless ``grid.compute_missing`` is false (None then)."""
    return run_or_load(config, records_dir) if grid.compute_missing else load_record(config, records_dir)


def collect(grid: ScifGrid, records_dir=None) -> Collected:
    """Every run of ``grid`` (computed first when missing, unless ``grid.compute_missing`` is false):
    ``runs`` has one row per run and method (learn, retrain, scif) with the metrics (``mio_accuracy`` =
    mean over oracle seeds, ``mio_accuracy_std`` their std) and the method's time (``unlearn_seconds``:
    SCIF gradient + CG + update, of which ``scif_cg_seconds`` the CG solve; Retrain training time; NaN
    for Learn); ``pending`` the runs without a record."""
    rows, pending = [], []
    for config in grid.runs():
        record = _record(config, grid, records_dir)
        if record is None:
            pending.append(config)
            continue
        seconds = {"learn": np.nan, "retrain": record["timings"]["retrain_seconds"],
                   "scif": record["timings"]["scif_seconds"]}
        for method in SCIF_METHODS:
            values = {k: v for k, v in record["metrics"][method].items() if not isinstance(v, list)}
            rows.append({"dataset": config.dataset, "model": config.model, "method": method,
                         "selection": config.selection, "ratio": config.ratio, "seed": config.seed, **values,
                         "unlearn_seconds": seconds[method],
                         "scif_cg_seconds": record["timings"]["scif_cg_seconds"] if method == "scif" else np.nan,
                         "cg_iterations": record["scif"]["cg_iterations"] if method == "scif" else np.nan,
                         "damping": record["scif"]["damping"] if method == "scif" else np.nan,
                         "record": record["key"]})
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=SCIF_COLUMNS)
    frame.attrs["pending"] = [config.to_dict() for config in pending]
    return Collected(frame, pending_frame(pending, grid.device, SCIF_KEYS))


def run_scif_grid(grid: ScifGrid, records_dir=None) -> pd.DataFrame:
    """The ``runs`` of :func:`collect`."""
    return collect(grid, records_dir).runs


DAMPING_SWEEP_FRACTIONS = (1e-3, 1e-2, 1e-1, 1.0)


def damping_sweep_configs(grid: ScifGrid, fractions=DAMPING_SWEEP_FRACTIONS, absolute=(1e-3,)) -> list[ScifConfig]:
    """Every run of ``grid`` once per damping: the relative rule at each of ``fractions``, then the
    absolute rule at each δ of ``absolute``."""
    variants = ([{"damping_rule": "relative", "damping_fraction": float(f)} for f in fractions]
                + [{"damping_rule": "absolute", "damping": float(d)} for d in absolute])
    return [config.replace(**variant) for config, variant in itertools.product(grid.runs(), variants)]


def collect_damping_sweep(grid: ScifGrid, fractions=DAMPING_SWEEP_FRACTIONS, absolute=(1e-3,),
                          records_dir=None) -> Collected:
    """How SCIF's MIO and utility move with its damping, on every run of ``grid``.

    Each run of ``grid`` is run (or loaded) once per damping: the relative rule at each of
    ``fractions`` and the absolute rule at each δ of ``absolute`` (every damping is a full
    :class:`ScifConfig` record; its Learn and Retrain do not depend on the damping). ``runs``: one row
    per run and damping: the cell, ``damping_rule``, ``damping_fraction`` (NaN for absolute), the
    Hutchinson ``mean_eigenvalue`` (NaN for absolute), ``initial_damping`` (the rule's δ), ``damping``
    (δ of the last CG attempt), ``update_norm``, ``cg_converged``, SCIF's metrics, and Learn's and
    Retrain's ``mio_accuracy`` and ``ndcg_untruncated`` (suffixes ``_learn``, ``_retrain``) for
    reference; ``pending`` the runs without a record."""
    rows, pending = [], []
    for config in damping_sweep_configs(grid, fractions, absolute):
        record = _record(config, grid, records_dir)
        if record is None:
            pending.append(config)
            continue
        scif, metrics = record["scif"], record["metrics"]
        relative = config.damping_rule == "relative"
        rows.append({"dataset": config.dataset, "model": config.model, "selection": config.selection,
                     "ratio": config.ratio, "seed": config.seed, "damping_rule": config.damping_rule,
                     "damping_fraction": config.damping_fraction if relative else np.nan,
                     "mean_eigenvalue": scif["mean_eigenvalue"] if relative else np.nan,
                     **{k: scif[k] for k in ("initial_damping", "damping", "update_norm", "cg_converged")},
                     **{k: v for k, v in metrics["scif"].items() if not isinstance(v, list)},
                     **{f"{k}_{m}": metrics[m][k] for m in ("learn", "retrain")
                        for k in ("mio_accuracy", "ndcg_untruncated")},
                     "record": record["key"]})
    return Collected(pd.DataFrame(rows), pending_frame(pending, grid.device, SCIF_KEYS + ["damping_rule"]))


def run_scif_damping_sweep(grid: ScifGrid, fractions=DAMPING_SWEEP_FRACTIONS, absolute=(1e-3,),
                           records_dir=None) -> pd.DataFrame:
    """The ``runs`` of :func:`collect_damping_sweep`."""
    return collect_damping_sweep(grid, fractions, absolute, records_dir).runs


# --- MIO of the exact methods (not in the paper) ----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ExactMioConfig(TrainingSettings):
    """MIO of one exact unlearning run (same pipeline as ``cure4rec-exact``, routed shard models)."""

    experiment = "cure4rec-exact-mio"
    results_version = "2"  # 2: model selection after unlearning ignores the unlearned users

    method: str = option("retrain", choices=tuple(EXACT_METHODS))
    selection: str = option("random", choices=RULES)
    ratio: float = option(5.0, min=0.0, max=100.0, percent=True, doc="percentage of users to unlearn")
    scoring: str = option("degree", choices=SCORINGS)
    selection_seed: int = option(0, min=0)
    n_shards: int = option(10, min=1, doc="ignored by retrain (one shard)")
    timing: str = option("batched", choices=TIMINGS)
    mio_seeds: int = option(5, min=1)
    mio_epochs: int = option(100, min=1)


def routed_embeddings(model, user_shard: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each user's own-shard user row, and the item table of every shard."""
    with torch.no_grad():
        user_emb, item_emb = model.embeddings()
    user_emb, item_emb = user_emb.detach().float().cpu().numpy(), item_emb.detach().float().cpu().numpy()
    users = np.arange(model.block_users)
    rows = user_emb[user_shard * model.block_users + users]
    items = item_emb.reshape(model.n_blocks, model.block_items, -1)
    return rows, [items[b] for b in range(model.n_blocks)]


@register(ExactMioConfig)
def run_exact_mio(config: ExactMioConfig) -> dict:
    """Re-run the exact pipeline and measure the MIO of the served (routed) shard models: an oracle
    per method trained on the retained users and scored on the unlearned users, where every user
    is featurised by its own shard's user row and item table."""
    from ..metrics.membership import as_csr, mio_samples, oracle_scores_seeds

    _require_device(config.device)
    seed_everything(config.seed)
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    deleted = users_to_unlearn(config, split)
    n_shards = 1 if config.method == "retrain" else config.n_shards
    result, _ = exact_unlearning(config, split, deleted, config.method, n_shards, timing=config.timing)
    user_shard = result.user_shard
    user_rows, item_tables = routed_embeddings(result.model, user_shard)
    member, non_member = (as_csr(m, split.n_users, split.n_items) for m in membership_sets(split))
    remaining = np.setdiff1d(np.arange(split.n_users), deleted)
    seeds = list(range(config.seed, config.seed + config.mio_seeds))
    samples = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        parts = []
        for users in (remaining, deleted):
            xs, ys = [], []
            for shard in range(n_shards):
                mine = users[user_shard[users] == shard]
                if len(mine):
                    x, y, _ = mio_samples(user_rows, item_tables[shard], member, non_member, mine, rng)
                    xs.append(x)
                    ys.append(y)
            parts += [np.concatenate(xs), np.concatenate(ys)]
        samples.append(tuple(parts))
    runs = oracle_scores_seeds(samples, seeds, epochs=config.mio_epochs)  # the seeds' oracles trained together
    metrics = {}
    for name in ("accuracy", "auc", "train_accuracy"):
        values = np.array([run[name] for run in runs])
        metrics[f"mio_{name}"], metrics[f"mio_{name}_std"] = float(values.mean()), float(values.std())
    return {"metrics": metrics, "per_seed": runs,
            "unlearning": {"n_deleted": int(len(deleted)), "n_shards": n_shards,
                           "affected_shards": result.affected_shards.tolist()},
            "split": split.description, "seed": config.seed, "device": config.device}


EXACT_MIO_KEYS = ["dataset", "model", "method", "selection", "seed"]


def exact_mio_configs(grid: ScifGrid, methods=tuple(EXACT_METHODS)) -> list[ExactMioConfig]:
    """The exact methods' MIO runs on the cells of ``grid`` (its datasets, ``exact_mio_models`` or else
    its models, selections, seeds, epochs and MIO settings)."""
    models = grid.models if grid.exact_mio_models is None else grid.exact_mio_models
    return [ExactMioConfig(dataset=d, model=m, method=method, selection=s, seed=seed, validation=grid.validation,
                           max_epochs=grid.max_epochs, mio_seeds=grid.mio_seeds, mio_epochs=grid.mio_epochs,
                           device=grid.device)
            for d, m, method, s, seed in itertools.product(grid.datasets, models, methods, grid.selections,
                                                           grid.seeds)]


def collect_exact_mio(grid: ScifGrid, methods=tuple(EXACT_METHODS), records_dir=None) -> Collected:
    """MIO of the exact methods on the cells of ``grid`` (its datasets, ``exact_mio_models`` or else
    its models, selections, seeds, epochs and MIO settings): ``runs`` has one row per run with
    ``mio_accuracy`` / ``mio_auc`` (mean over oracle seeds) and their std; ``pending`` the runs
    without a record."""
    rows, pending = [], []
    for config in exact_mio_configs(grid, methods):
        record = _record(config, grid, records_dir)
        if record is None:
            pending.append(config)
            continue
        rows.append({**{k: getattr(config, k) for k in EXACT_MIO_KEYS}, **record["metrics"], "record": record["key"]})
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=EXACT_MIO_KEYS + ["mio_accuracy", "record"])
    return Collected(frame, pending_frame(pending, grid.device, EXACT_MIO_KEYS))


def run_exact_mio_grid(grid: ScifGrid, methods=tuple(EXACT_METHODS), records_dir=None) -> pd.DataFrame:
    """The ``runs`` of :func:`collect_exact_mio`."""
    return collect_exact_mio(grid, methods, records_dir).runs
