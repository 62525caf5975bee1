"""CURE4Rec approximate unlearning: SCIF beside Learn and Retrain, with utility, fairness (A-IGF),
unlearning completeness (MIO accuracy) and unlearning time (CURE4Rec §5.1-5.3, Tables 1, 3, 5,
Figures 2 and 5; spec §1.6, §3, §7, §8, D17-D19).

One run (:class:`ScifConfig`) learns the original model, selects the unlearned users and then

- **SCIF**: one influence-function update of the unlearned users' rows and their items' rows
  (:func:`~recunlearn.unlearning.scif.scif_unlearn`, deletion form), timed as gradient + CG +
  update (spec D16);
- **Retrain**: a fresh model of the same config and seed trained on the remaining users' training
  data only; the unlearned users' rows are never touched by the optimiser and stay at their
  initialisation (spec §3; checked and recorded as ``deleted_rows_at_init``).

Learn, Retrain and SCIF are evaluated on the remaining users' test items exactly as
:func:`~recunlearn.experiments.cure4rec_exact.run_exact_unlearning` does (active users recomputed
on the remaining users' training counts), and each gets an MIO (spec §8.3, D19) trained on *its
own* scoring embeddings for the retained users and evaluated on the unlearned users (5 oracle
seeds: mean ± std of accuracy and AUC).

The separate experiment ``cure4rec-exact-mio`` (:class:`ExactMioConfig`) re-runs an exact method
(:func:`~recunlearn.unlearning.unlearn_exactly`) and measures the MIO of the routed shard models:
each user is described by its own shard's user row and that shard's item table (for the unlearned
users: the shard that held them), which the paper does not report.
"""

from __future__ import annotations

import dataclasses
import itertools
import time

import numpy as np
import pandas as pd
import torch

from ..data import load_split
from ..data.selection import RULES, SCORINGS, select_unlearning_users
from ..metrics.membership import mio_accuracy_seeds, membership_sets
from ..models import TrainingData, train_until_converged
from ..models.trainer import synchronize
from ..seeding import seed_everything
from ..unlearning import EXACT_METHODS, unlearn_exactly
from ..unlearning.exact import TIMINGS
from ..unlearning.scif import scif_unlearn
from .config import option
from .cure4rec import (TrainingSettings, UnlearningGrid, _require_device, build_model, evaluate_remaining,
                       remaining_after, train_original_model)
from .cure4rec_exact import pretrained_user_embeddings
from .records import register, run_or_load

SCIF_METHODS = ("learn", "retrain", "scif")
MIO_FIELDS = ("accuracy", "accuracy_std", "auc", "auc_std", "train_accuracy", "train_accuracy_std", "restarts")


@dataclasses.dataclass(frozen=True)
class ScifConfig(TrainingSettings):
    """One approximate-unlearning run: Learn, Retrain and SCIF for one unlearning set."""

    experiment = "cure4rec-scif"

    selection: str = option("random", choices=RULES)
    ratio: float = option(5.0, min=0.0, max=100.0, doc="percentage of users to unlearn")
    scoring: str = option("degree", choices=SCORINGS, doc="core/edge ranking: degree (code) or importance (Eq. 1)")
    selection_seed: int = option(0, min=0, doc="seed of the random unlearning set (same for every run seed)")
    damping: float = option(1e-3, min=0.0, doc="initial CG damping δ (×10 until CG converges, spec D17)")
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
    learn, split, learn_training, learn_wall = train_original_model(config)
    train_users, train_items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    deleted = select_unlearning_users(train_users, train_items, split.n_users, config.selection, config.ratio,
                                      config.scoring, seed=config.selection_seed)
    remaining = remaining_after(split, deleted)
    kept = remaining.kept_rows

    # SCIF on a copy of the Learn model (Hessian sample drawn from a generator seeded like the model)
    data_all = TrainingData.from_pairs(train_users, train_items, split.n_users, split.n_items, config.device)
    scif = scif_unlearn(learn, data_all, deleted, damping=config.damping, cg_iterations=config.cg_iterations,
                        cg_tolerance=config.cg_tolerance, l2=config.scif_l2,
                        generator=torch.Generator(device=config.device).manual_seed(config.seed))

    # Retrain: a fresh model (same seed) on the remaining users' training data only
    seed_everything(config.seed)
    retrain = build_model(config, split.n_users, split.n_items, torch.Generator().manual_seed(config.seed))
    retrain = retrain.to(config.device)
    initial_rows = retrain.user_embedding.detach()[torch.as_tensor(deleted, device=config.device)].clone()
    data_kept = TrainingData.from_pairs(train_users[kept], train_items[kept], split.n_users, split.n_items,
                                        config.device)
    synchronize(config.device)
    start = time.perf_counter()
    retrain_training = train_until_converged(
        retrain, data_kept, torch.Generator(device=config.device).manual_seed(config.seed), split.train_matrix,
        split.matrix("valid"), lr=config.lr, max_epochs=config.max_epochs, patience=config.patience, k=config.k,
        progress=False)
    synchronize(config.device)
    retrain_wall = time.perf_counter() - start
    at_init = bool(torch.equal(retrain.user_embedding.detach()[torch.as_tensor(deleted, device=config.device)],
                               initial_rows))

    models = {"learn": learn, "retrain": retrain, "scif": scif.model}
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
            "retrain_seconds": retrain_training.train_seconds, "retrain_wall_seconds": retrain_wall,
            "scif_seconds": scif.total_seconds, "scif_gradient_seconds": scif.gradient_seconds,
            "scif_cg_seconds": scif.cg_seconds, "scif_update_seconds": scif.update_seconds,
            "mio_seconds": mio_seconds,
        },
        "training": {"learn_best_epoch": learn_training.best_epoch, "learn_epochs_run": learn_training.epochs_run,
                     "retrain_best_epoch": retrain_training.best_epoch,
                     "retrain_epochs_run": retrain_training.epochs_run},
        "scif": scif_info,
        "unlearning": {"n_deleted": int(len(deleted)), "deleted_interactions": int((~kept).sum()),
                       "deleted_rows_at_init": at_init},
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

    def runs(self) -> list[ScifConfig]:
        return [ScifConfig(dataset=d, model=m, selection=s, ratio=r, seed=seed, validation=self.validation,
                           max_epochs=self.max_epochs, mio_seeds=self.mio_seeds, mio_epochs=self.mio_epochs,
                           device=self.device)
                for d, m, s, r, seed in itertools.product(self.datasets, self.models, self.selections, self.ratios,
                                                          self.seeds)]


SCIF_METRICS = ["ndcg_untruncated", "hr_cure4rec", "mio_accuracy", "a_igf", "mio_auc", "ndcg", "hit_ratio",
                "recall", "a_igf_standard"]


def run_scif_grid(grid: ScifGrid, records_dir=None) -> pd.DataFrame:
    """Run (or load) every run of ``grid``: one row per run and method (learn, retrain, scif) with
    the metrics (``mio_accuracy`` = mean over oracle seeds, ``mio_accuracy_std`` their std) and the
    method's time (``unlearn_seconds``: SCIF gradient + CG + update; Retrain training time; NaN for Learn)."""
    rows = []
    for config in grid.runs():
        record = run_or_load(config, records_dir)
        seconds = {"learn": np.nan, "retrain": record["timings"]["retrain_seconds"],
                   "scif": record["timings"]["scif_seconds"]}
        for method in SCIF_METHODS:
            values = {k: v for k, v in record["metrics"][method].items() if not isinstance(v, list)}
            rows.append({"dataset": config.dataset, "model": config.model, "method": method,
                         "selection": config.selection, "ratio": config.ratio, "seed": config.seed, **values,
                         "unlearn_seconds": seconds[method],
                         "cg_iterations": record["scif"]["cg_iterations"] if method == "scif" else np.nan,
                         "damping": record["scif"]["damping"] if method == "scif" else np.nan,
                         "record": record["key"]})
    return pd.DataFrame(rows)


def compare_scif(runs: pd.DataFrame, paper: pd.DataFrame, learn_paper: pd.DataFrame, metrics: list[str],
                 tol: float) -> pd.DataFrame:
    """Mean ± std over seeds beside the paper's Tables 1/5 (Retrain and SCIF rows) and its Learn row
    (``learn_paper``, keyed by dataset and model). Our Learn model is the same for every selection,
    but its utility is measured on that selection's remaining users and its MIO on that selection's
    unlearned users, so it is shown per selection beside the paper's single Learn value."""
    from ..report.compare import compare, summarize_runs

    keys = ["dataset", "model", "method", "selection"]
    ours = summarize_runs(runs, keys, metrics)
    selections = pd.DataFrame({"selection": runs["selection"].unique()})
    learn = learn_paper[learn_paper["metric"].isin(metrics)].assign(method="learn").merge(selections, how="cross")
    theirs = pd.concat([learn, paper[paper["metric"].isin(metrics)]], ignore_index=True)
    return compare(ours, theirs[keys + ["metric", "value"]], keys, tol=tol)


ASPECTS = ["completeness", "utility", "efficiency", "fairness"]


def overview_aspects(scif_runs: pd.DataFrame, exact_runs: pd.DataFrame, selection: str = "random",
                     exact_mio: pd.DataFrame | None = None) -> pd.DataFrame:
    """The four aspects of Figures 2 and 5 for Retrain, SISA, RecEraser, UltraRE and SCIF on the
    ``selection`` sets, per dataset and model (mean over seeds), raw and min-max normalised.

    - completeness = 1 − 2·|MIO accuracy − 0.5| (1: nothing to infer). SCIF's MIO comes from the
      SCIF runs; the exact methods' (Retrain included) from ``exact_mio`` (rows of
      :func:`run_exact_mio_grid`) where given; an exact method without a measured value gets the
      SCIF runs' Retrain value (the paper: "EU methods inherently achieve the highest level of
      completeness");
    - utility = NDCG@20 (code variant) on the remaining users;
    - efficiency = 1 / unlearning seconds (SCIF: gradient + CG + update; exact methods: the
      ``cure4rec-exact`` unlearning time, shards in parallel);
    - fairness = −|A-IGF − A-IGF of Retrain| (Retrain of the exact runs: 0 for itself).

    ``<aspect>_norm`` rescales each aspect to [0, 1] across the methods of one dataset and model
    (best = 1); equal values give 1."""
    keys = ["dataset", "model", "method"]
    exact = exact_runs[exact_runs["selection"] == selection].groupby(keys, as_index=False).mean(numeric_only=True)
    scif = scif_runs[(scif_runs["selection"] == selection) & (scif_runs["method"] == "scif")]
    scif = scif.groupby(keys, as_index=False).mean(numeric_only=True)
    retrain_mio = scif_runs[(scif_runs["selection"] == selection) & (scif_runs["method"] == "retrain")].groupby(
        ["dataset", "model"])["mio_accuracy"].mean().rename("retrain_mio")
    frame = pd.concat([exact[keys + ["ndcg_untruncated", "a_igf", "unlearn_seconds"]],
                       scif[keys + ["ndcg_untruncated", "a_igf", "unlearn_seconds", "mio_accuracy"]]],
                      ignore_index=True)
    frame = frame.merge(retrain_mio.reset_index(), on=["dataset", "model"], how="left")
    if exact_mio is not None and len(exact_mio):
        measured = exact_mio[exact_mio["selection"] == selection].groupby(keys)["mio_accuracy"].mean()
        frame = frame.merge(measured.rename("exact_mio").reset_index(), on=keys, how="left")
        frame["mio_accuracy"] = frame["mio_accuracy"].fillna(frame.pop("exact_mio"))
    frame["mio_accuracy"] = frame["mio_accuracy"].fillna(frame["retrain_mio"])
    retrain_igf = exact[exact["method"] == "retrain"].set_index(["dataset", "model"])["a_igf"].rename("a_igf_retrain")
    frame = frame.merge(retrain_igf.reset_index(), on=["dataset", "model"], how="left")
    frame["completeness"] = 1.0 - 2.0 * (frame["mio_accuracy"] - 0.5).abs()
    frame["utility"] = frame["ndcg_untruncated"]
    frame["efficiency"] = 1.0 / frame["unlearn_seconds"]
    frame["fairness"] = -(frame["a_igf"] - frame["a_igf_retrain"]).abs()
    for aspect in ASPECTS:
        group = frame.groupby(["dataset", "model"])[aspect]
        low, high = group.transform("min"), group.transform("max")
        span = (high - low).where(high > low)
        frame[f"{aspect}_norm"] = ((frame[aspect] - low) / span).fillna(1.0)
    return frame.drop(columns=["retrain_mio"])


# --- the paper's claims (§5.1-5.2) ------------------------------------------------------------------

def overview_claims(aspects: pd.DataFrame) -> pd.DataFrame:
    """§5 on Figures 2/5, per (dataset, model) on the normalised aspects of :func:`overview_aspects`:
    SCIF above every EU method (SISA, RecEraser, UltraRE) in efficiency, fairness and utility, and
    every EU method more complete than SCIF."""
    from ..report.claims import check_claim

    eu = ["sisa", "receraser", "ultrare"]
    normed = aspects.drop(columns=ASPECTS).rename(columns={f"{a}_norm": a for a in ASPECTS})

    def compare_to_eu(aspect, scif_better):
        def test(g):
            scif = g.loc[g["method"] == "scif", aspect]
            others = g.loc[g["method"].isin(eu), aspect]
            if scif.empty or others.empty:
                return None
            return bool(scif.iloc[0] > others.max()) if scif_better else bool(others.min() > scif.iloc[0])
        return test

    cells = ["dataset", "model"]
    return pd.DataFrame([check_claim(f"SCIF beats every EU method in {a}", normed, cells, compare_to_eu(a, True))
                         for a in ["efficiency", "fairness", "utility"]]
                        + [check_claim("EU methods are more complete than SCIF", normed, cells,
                                       compare_to_eu("completeness", False))])


def scif_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """§5.1: "SCIF's MIO accuracy is about 4 % above Retrain's" (checked as: above Retrain by 0.01 to
    0.08 in absolute accuracy; the paper's gap is 0.041 on average), "SCIF is worst (highest MIO) on
    edge data"; §5.2/Table 1: "SCIF loses most utility on core users" (largest NDCG@20 drop from
    Learn), and "Retrain and SCIF both lower MIO accuracy well below Learn's"."""
    from ..report.claims import check_claim, value

    means = runs.groupby(["dataset", "model", "method", "selection"], as_index=False).mean(numeric_only=True)
    cell = ["dataset", "model", "selection"]
    mio = lambda g, m: value(g, "method", "mio_accuracy", m)  # noqa: E731

    def gap(g):
        s, r = mio(g, "scif"), mio(g, "retrain")
        return None if None in (s, r) else 0.01 <= s - r <= 0.08

    def both_below_learn(g):
        learn, s, r = mio(g, "learn"), mio(g, "scif"), mio(g, "retrain")
        return None if None in (learn, s, r) else max(s, r) < learn - 0.05

    scif = means[means["method"] == "scif"]
    learn = means[means["method"] == "learn"][["dataset", "model", "selection", "ndcg_untruncated"]]
    drops = scif.merge(learn, on=["dataset", "model", "selection"], suffixes=("", "_learn"))
    drops["ndcg_drop"] = drops["ndcg_untruncated_learn"] - drops["ndcg_untruncated"]

    def worst(metric, selection, frame):
        def test(g):
            if value(g, "selection", metric, selection) is None or len(g) < 3:
                return None
            return value(g, "selection", metric, selection) >= g[metric].max()
        return test

    return pd.DataFrame([
        check_claim("Retrain and SCIF both bring MIO accuracy well below Learn's", means, cell, both_below_learn),
        check_claim("SCIF's MIO accuracy is about 4 % above Retrain's (0.01-0.08 above)", means, cell, gap),
        check_claim("SCIF is worst (highest MIO accuracy) on edge data", scif, ["dataset", "model"],
                    worst("mio_accuracy", "edge", scif)),
        check_claim("SCIF loses most utility (NDCG@20 drop from Learn) on core users", drops, ["dataset", "model"],
                    worst("ndcg_drop", "core", drops)),
    ])


# --- MIO of the exact methods (not in the paper) ----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ExactMioConfig(TrainingSettings):
    """MIO of one exact unlearning run (same pipeline as ``cure4rec-exact``, routed shard models)."""

    experiment = "cure4rec-exact-mio"

    method: str = option("retrain", choices=tuple(EXACT_METHODS))
    selection: str = option("random", choices=RULES)
    ratio: float = option(5.0, min=0.0, max=100.0)
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
    from ..metrics.membership import as_csr, mio_samples, oracle_scores

    _require_device(config.device)
    seed_everything(config.seed)
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    train_users, train_items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    deleted = select_unlearning_users(train_users, train_items, split.n_users, config.selection, config.ratio,
                                      config.scoring, seed=config.selection_seed)
    method = EXACT_METHODS[config.method]
    n_shards = 1 if config.method == "retrain" else config.n_shards
    embeddings = pretrained_user_embeddings(config) if method.needs_embeddings else None
    user_shard = method.partition(split.n_users, n_shards, config.seed, embeddings, order="nearest_first")
    train_kwargs = dict(lr=config.lr, max_epochs=config.max_epochs, patience=config.patience, k=config.k,
                        progress=False)
    result = unlearn_exactly(
        train_users, train_items, split.n_users, split.n_items, user_shard, deleted,
        lambda blocks, generator: build_model(config, split.n_users, split.n_items, generator, blocks),
        split.train_matrix, split.matrix("valid"), config.seed, train_kwargs, config.device, config.timing)
    user_rows, item_tables = routed_embeddings(result.model, user_shard)
    member, non_member = (as_csr(m, split.n_users, split.n_items) for m in membership_sets(split))
    remaining = np.setdiff1d(np.arange(split.n_users), deleted)
    runs = []
    for seed in range(config.seed, config.seed + config.mio_seeds):
        rng = np.random.default_rng(seed)
        parts = {}
        for name, users in (("train", remaining), ("eval", deleted)):
            xs, ys = [], []
            for shard in range(n_shards):
                mine = users[user_shard[users] == shard]
                if len(mine):
                    x, y, _ = mio_samples(user_rows, item_tables[shard], member, non_member, mine, rng)
                    xs.append(x)
                    ys.append(y)
            parts[name] = (np.concatenate(xs), np.concatenate(ys))
        (x_train, y_train), (x_eval, y_eval) = parts["train"], parts["eval"]
        runs.append(oracle_scores(x_train, y_train, x_eval, y_eval, seed, epochs=config.mio_epochs))
    metrics = {}
    for name in ("accuracy", "auc", "train_accuracy"):
        values = np.array([run[name] for run in runs])
        metrics[f"mio_{name}"], metrics[f"mio_{name}_std"] = float(values.mean()), float(values.std())
    return {"metrics": metrics, "per_seed": runs,
            "unlearning": {"n_deleted": int(len(deleted)), "n_shards": n_shards,
                           "affected_shards": result.affected_shards.tolist()},
            "split": split.description, "seed": config.seed, "device": config.device}


def run_exact_mio_grid(grid: ScifGrid, methods=tuple(EXACT_METHODS), records_dir=None) -> pd.DataFrame:
    """MIO of the exact methods on the cells of ``grid`` (its datasets, ``exact_mio_models`` or else
    its models, selections, seeds, epochs and MIO settings): one row per run with ``mio_accuracy`` / ``mio_auc`` (mean over oracle
    seeds) and their std."""
    rows = []
    models = grid.models if grid.exact_mio_models is None else grid.exact_mio_models
    for d, m, method, s, seed in itertools.product(grid.datasets, models, methods, grid.selections, grid.seeds):
        config = ExactMioConfig(dataset=d, model=m, method=method, selection=s, seed=seed, validation=grid.validation,
                                max_epochs=grid.max_epochs, mio_seeds=grid.mio_seeds, mio_epochs=grid.mio_epochs,
                                device=grid.device)
        record = run_or_load(config, records_dir)
        rows.append({"dataset": d, "model": m, "method": method, "selection": s, "seed": seed,
                     **record["metrics"], "record": record["key"]})
    return pd.DataFrame(rows)


def exact_mio_table(exact_mio: pd.DataFrame, scif_runs: pd.DataFrame) -> pd.DataFrame:
    """MIO accuracy (mean ± std over run seeds) per (dataset, model, selection): Learn, Retrain and
    SCIF of the SCIF runs, and every exact method of the ``cure4rec-exact-mio`` runs (columns
    ``EU <method>``; their Retrain is the exact pipeline's, trained separately; ``not run`` where a
    cell has no run). 0.5 = nothing to infer."""
    columns = ["dataset", "model", "method", "selection", "seed", "mio_accuracy"]
    exact = exact_mio[columns].assign(method="EU " + exact_mio["method"])
    both = pd.concat([scif_runs[columns], exact], ignore_index=True)
    stats = both.groupby(["dataset", "model", "selection", "method"])["mio_accuracy"].agg(["mean", "std"])
    cells = pd.Series([f"{m:.3f} ± {sd:.3f}" if pd.notna(sd) else f"{m:.3f}" for m, sd in stats.to_numpy()],
                      index=stats.index)
    order = ["learn", "retrain", "scif", *(f"EU {m}" for m in EXACT_METHODS)]
    table = cells.unstack("method").reindex(columns=[m for m in order if m in set(both["method"])])
    return table.fillna("not run")


def stored_scif_times(datasets, models, selections, seeds, max_epochs: int = 500, device: str = "cpu",
                      records_dir=None) -> pd.DataFrame:
    """SCIF's unlearning time (gradient + CG + update) from the *stored* ``cure4rec-scif`` records
    of every combination (default SCIF and MIO settings); combinations without a record are left
    out, never computed. Columns: dataset, model, method (``"scif"``), selection, seed,
    unlearn_seconds, scif_cg_seconds, cg_iterations."""
    from .records import record_path
    import json

    rows = []
    for d, m, s, seed in itertools.product(datasets, models, selections, seeds):
        path = record_path(ScifConfig(dataset=d, model=m, selection=s, seed=seed, max_epochs=max_epochs,
                                      device=device), records_dir)
        if path.is_file():
            record = json.loads(path.read_text())
            rows.append({"dataset": d, "model": m, "method": "scif", "selection": s, "seed": seed,
                         "unlearn_seconds": record["timings"]["scif_seconds"],
                         "scif_cg_seconds": record["timings"]["scif_cg_seconds"],
                         "cg_iterations": record["scif"]["cg_iterations"]})
    return pd.DataFrame(rows, columns=["dataset", "model", "method", "selection", "seed", "unlearn_seconds",
                                       "scif_cg_seconds", "cg_iterations"])
