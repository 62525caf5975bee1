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
from ..models import TrainingData
from ..seeding import seed_everything
from ..unlearning import EXACT_METHODS
from ..unlearning.exact import TIMINGS
from ..unlearning.scif import DAMPING_FRACTION, DAMPING_PROBES, DAMPING_RULES, scif_unlearn
from .config import option
from .cure4rec import (TrainingSettings, UnlearningGrid, _require_device, evaluate_remaining, remaining_after,
                       train_original_model)
from .cure4rec_exact import exact_unlearning
from .records import register, run_or_load

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
    learn, split, learn_training, learn_wall = train_original_model(config)
    train_users, train_items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    deleted = select_unlearning_users(train_users, train_items, split.n_users, config.selection, config.ratio,
                                      config.scoring, seed=config.selection_seed)
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


DAMPING_SWEEP_FRACTIONS = (1e-3, 1e-2, 1e-1, 1.0)


def run_scif_damping_sweep(grid: ScifGrid, fractions=DAMPING_SWEEP_FRACTIONS, absolute=(1e-3,),
                           records_dir=None) -> pd.DataFrame:
    """How SCIF's MIO and utility move with its damping, on every run of ``grid``.

    Each run of ``grid`` is run (or loaded) once per damping: the relative rule at each of
    ``fractions`` and the absolute rule at each δ of ``absolute`` (every damping is a full
    :class:`ScifConfig` record; its Learn and Retrain do not depend on the damping). One row per run
    and damping: the cell, ``damping_rule``, ``damping_fraction`` (NaN for absolute), the Hutchinson
    ``mean_eigenvalue`` (NaN for absolute), ``initial_damping`` (the rule's δ), ``damping`` (δ of the
    last CG attempt), ``update_norm``, ``cg_converged``, SCIF's metrics, and Learn's and Retrain's
    ``mio_accuracy`` and ``ndcg_untruncated`` (suffixes ``_learn``, ``_retrain``) for reference."""
    variants = ([{"damping_rule": "relative", "damping_fraction": float(f)} for f in fractions]
                + [{"damping_rule": "absolute", "damping": float(d)} for d in absolute])
    rows = []
    for config, variant in itertools.product(grid.runs(), variants):
        record = run_or_load(config.replace(**variant), records_dir)
        scif, metrics = record["scif"], record["metrics"]
        relative = variant["damping_rule"] == "relative"
        rows.append({"dataset": config.dataset, "model": config.model, "selection": config.selection,
                     "ratio": config.ratio, "seed": config.seed, "damping_rule": variant["damping_rule"],
                     "damping_fraction": variant["damping_fraction"] if relative else np.nan,
                     "mean_eigenvalue": scif["mean_eigenvalue"] if relative else np.nan,
                     **{k: scif[k] for k in ("initial_damping", "damping", "update_norm", "cg_converged")},
                     **{k: v for k, v in metrics["scif"].items() if not isinstance(v, list)},
                     **{f"{k}_{m}": metrics[m][k] for m in ("learn", "retrain")
                        for k in ("mio_accuracy", "ndcg_untruncated")},
                     "record": record["key"]})
    return pd.DataFrame(rows)


def damping_sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """The damping sweep for a page: one row per model and damping (relative fractions in increasing
    order, then the absolute rule), with the damping used, SCIF's update size, MIO and NDCG, and
    Learn's and Retrain's MIO beside them; δ as text in scientific notation, the rest to 4 decimals."""
    label = np.where(sweep["damping_rule"] == "relative",
                     [f"{f:g} x mean eigenvalue" for f in sweep["damping_fraction"].fillna(0)],
                     [f"absolute {d:g}" for d in sweep["initial_damping"]])
    table = sweep.assign(damping_label=label, absolute=sweep["damping_rule"] == "absolute")
    table = table.sort_values(["model", "absolute", "initial_damping"])
    columns = {"model": "model", "damping_label": "damping rule", "initial_damping": "δ (rule)",
               "damping": "δ (used)", "update_norm": "update size", "mio_accuracy": "SCIF MIO",
               "mio_accuracy_learn": "Learn MIO", "mio_accuracy_retrain": "Retrain MIO",
               "ndcg_untruncated": "SCIF NDCG@20", "ndcg_untruncated_retrain": "Retrain NDCG@20"}
    table = table[list(columns)].rename(columns=columns).reset_index(drop=True)
    for column in ("δ (rule)", "δ (used)"):
        table[column] = table[column].map(lambda v: f"{v:.2e}")
    return table.round(4)


def compare_scif(runs: pd.DataFrame, paper: pd.DataFrame, learn_paper: pd.DataFrame, metrics: list[str],
                 tol: float | None = None) -> pd.DataFrame:
    """Mean ± std over seeds beside the paper's Tables 1/5 (Retrain and SCIF rows) and its Learn row
    (``learn_paper``, keyed by dataset and model). Our Learn model is the same for every selection,
    but its utility is measured on that selection's remaining users and its MIO on that selection's
    unlearned users, so it is shown per selection beside the paper's single Learn value. Tolerance
    per cell: the paper's rounding or two standard errors of our mean
    (:func:`recunlearn.report.compare.cell_tolerance`) unless ``tol`` fixes it."""
    from ..report.compare import compare, summarize_runs

    keys = ["dataset", "model", "method", "selection"]
    ours = summarize_runs(runs, keys, metrics)
    selections = pd.DataFrame({"selection": runs["selection"].unique()})
    learn = learn_paper[learn_paper["metric"].isin(metrics)].assign(method="learn").merge(selections, how="cross")
    theirs = pd.concat([learn, paper[paper["metric"].isin(metrics)]], ignore_index=True)
    extra = ["resolution"] if "resolution" in theirs else []
    return compare(ours, theirs[keys + ["metric", "value"] + extra], keys, tol=tol)


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

def overview_aspects_by_seed(scif_runs: pd.DataFrame, exact_runs: pd.DataFrame, selection: str = "random",
                             exact_mio: pd.DataFrame | None = None, records_dir=None) -> pd.DataFrame:
    """:func:`overview_aspects` computed seed by seed (a ``seed`` column), for the claims' paired
    tests, with each row's record time (``created``, from the runs' ``record`` keys; see
    :func:`recunlearn.report.claims.record_times`)."""
    from ..report.claims import record_times

    frames = []
    for seed in sorted(set(scif_runs["seed"]) & set(exact_runs["seed"])):
        mio = exact_mio[exact_mio["seed"] == seed] if exact_mio is not None and len(exact_mio) else None
        frames.append(overview_aspects(scif_runs[scif_runs["seed"] == seed], exact_runs[exact_runs["seed"] == seed],
                                       selection, mio).assign(seed=seed))
    if not frames:
        return pd.DataFrame(columns=["dataset", "model", "method", "seed", *ASPECTS, "created"])
    frame = pd.concat(frames, ignore_index=True)
    keys = ["dataset", "model", "method", "seed"]
    timed = pd.concat([scif_runs[(scif_runs["method"] == "scif") & (scif_runs["selection"] == selection)],
                       exact_runs[exact_runs["selection"] == selection]], ignore_index=True)
    if "record" in timed:
        timed = timed[keys + ["record"]].assign(
            created=lambda t: record_times(t, ["cure4rec-scif", "cure4rec-exact"], records_dir))
        frame = frame.merge(timed[keys + ["created"]].drop_duplicates(keys), on=keys, how="left")
    return frame


def overview_claims(aspects: pd.DataFrame) -> pd.DataFrame:
    """CURE4Rec §5 on Figures 2/5, per (dataset, model), on the raw aspects of
    :func:`overview_aspects`, paired by seed (``aspects`` from :func:`overview_aspects_by_seed`;
    without a ``seed`` column every row counts as one seed):

    - ``scif_beats_eu_efficiency``, ``scif_beats_eu_fairness``, ``scif_beats_eu_utility``: SCIF above
      every EU method (SISA, RecEraser, UltraRE);
    - ``eu_more_complete_than_scif``: every EU method more complete than SCIF.

    Efficiency is a time: a SCIF time is compared only with an EU time of the same seed recorded at
    most 30 minutes from it (``created`` column; the timing rule of :mod:`recunlearn.report.claims`;
    without record times no pair qualifies and the claim is inconclusive)."""
    from ..report.claims import PAIR_WINDOW, claims_frame, ordering_claim

    eu = ["sisa", "receraser", "ultrare"]
    frame = aspects if "seed" in aspects else aspects.assign(seed=0)
    if "created" not in frame:
        frame = frame.assign(created=pd.NaT)
    cells = ["dataset", "model"]
    rows = []
    for aspect in ["efficiency", "fairness", "utility"]:
        timing = aspect == "efficiency"
        rows.append(ordering_claim(
            f"scif_beats_eu_{aspect}", f"SCIF beats every EU method in {aspect}", frame, "method",
            [("scif", m) for m in eu], aspect, cells, max_apart=PAIR_WINDOW if timing else None,
            note=("Timing rule: a SCIF time is compared only with an EU time of the same seed whose record was "
                  "written at most 30 minutes from it.") if timing else ""))
    rows.append(ordering_claim("eu_more_complete_than_scif", "EU methods are more complete than SCIF", frame, "method",
                               [(m, "scif") for m in eu], "completeness", cells))
    return claims_frame(rows)


def scif_claims(runs: pd.DataFrame, records_dir=None) -> pd.DataFrame:
    """CURE4Rec §5.1-5.3 on seed-level runs (one row per run and method), paired by seed within
    each cell (dataset, model, selection) or, across unlearning sets, within (dataset, model):

    - ``mio_well_below_learn``: Retrain and SCIF both bring MIO accuracy well below Learn's (by more
      than 0.05);
    - ``scif_mio_gap_about_4pc``: "SCIF's MIO accuracy is about 4 % above Retrain's", checked as the
      seed-paired gap SCIF − Retrain lying in [0.01, 0.08] (the paper's gap is 0.041 on average);
    - ``scif_worst_on_edge``: SCIF's MIO accuracy is highest on edge data;
    - ``scif_most_utility_loss_on_core``: SCIF loses most utility (NDCG@20 drop from Learn) on core users;
    - ``scif_slower_on_core``: SCIF takes longer on core users than on random or edge users
      (CURE4Rec §5.3), a time compared only with the same seed's time recorded at most 30 minutes
      from it (the timing rule of :mod:`recunlearn.report.claims`)."""
    from ..report.claims import PAIR_WINDOW, band_claim, claims_frame, ordering_claim, paired_differences, record_times

    cell = ["dataset", "model", "selection"]
    gap = paired_differences(runs, "method", "scif", "retrain", "mio_accuracy", cell)
    scif = runs[runs["method"] == "scif"]
    learn = runs[runs["method"] == "learn"][cell + ["seed", "ndcg_untruncated"]]
    drops = scif.merge(learn, on=cell + ["seed"], suffixes=("", "_learn"))
    drops["ndcg_drop"] = drops["ndcg_untruncated_learn"] - drops["ndcg_untruncated"]
    timed = scif.assign(created=record_times(scif, [ScifConfig.experiment], records_dir))
    selections = [("core", "random"), ("core", "edge")]
    return claims_frame([
        ordering_claim("mio_well_below_learn", "Retrain and SCIF both bring MIO accuracy well below Learn's", runs,
                       "method", [("learn", "retrain"), ("learn", "scif")], "mio_accuracy", cell, margin=0.05),
        band_claim("scif_mio_gap_about_4pc", "SCIF's MIO accuracy is about 4 % above Retrain's (0.01-0.08 above)",
                   gap, "diff", cell, low=0.01, high=0.08, note="SCIF − Retrain MIO accuracy, paired by seed;"),
        ordering_claim("scif_worst_on_edge", "SCIF is worst (highest MIO accuracy) on edge data", scif, "selection",
                       [("edge", "core"), ("edge", "random")], "mio_accuracy", ["dataset", "model"]),
        ordering_claim("scif_most_utility_loss_on_core",
                       "SCIF loses most utility (NDCG@20 drop from Learn) on core users", drops, "selection",
                       selections, "ndcg_drop", ["dataset", "model"]),
        ordering_claim("scif_slower_on_core", "SCIF is slower on core users than on random or edge users", timed,
                       "selection", selections, "unlearn_seconds", ["dataset", "model"], max_apart=PAIR_WINDOW,
                       note="Timing rule: a time is compared only with the same seed's time whose record was "
                            "written at most 30 minutes from it."),
    ])


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
    from ..metrics.membership import as_csr, mio_samples, oracle_scores

    _require_device(config.device)
    seed_everything(config.seed)
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    train_users, train_items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    deleted = select_unlearning_users(train_users, train_items, split.n_users, config.selection, config.ratio,
                                      config.scoring, seed=config.selection_seed)
    n_shards = 1 if config.method == "retrain" else config.n_shards
    result, _ = exact_unlearning(config, split, deleted, config.method, n_shards, timing=config.timing)
    user_shard = result.user_shard
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
    ``EU <method>``; their Retrain is the same model as the SCIF runs' Retrain, with its own MIO
    featurisation and oracle draws; ``not run`` where a cell has no run). 0.5 = nothing to infer."""
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
    from .records import load_record

    rows = []
    for d, m, s, seed in itertools.product(datasets, models, selections, seeds):
        record = load_record(ScifConfig(dataset=d, model=m, selection=s, seed=seed, max_epochs=max_epochs,
                                        device=device), records_dir)
        if record is not None:
            rows.append({"dataset": d, "model": m, "method": "scif", "selection": s, "seed": seed,
                         "unlearn_seconds": record["timings"]["scif_seconds"],
                         "scif_cg_seconds": record["timings"]["scif_cg_seconds"],
                         "cg_iterations": record["scif"]["cg_iterations"]})
    return pd.DataFrame(rows, columns=["dataset", "model", "method", "selection", "seed", "unlearn_seconds",
                                       "scif_cg_seconds", "cg_iterations"])
