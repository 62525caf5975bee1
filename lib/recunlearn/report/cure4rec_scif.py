"""CURE4Rec's approximate unlearning against the paper: SCIF beside Learn and Retrain (Tables 1/5), the
exact methods' MIO, SCIF's damping sweep and the four-aspect overview (Figures 2 and 5): the
paper-vs-ours comparisons, the tables the pages show and the paper's claims (stable ids). The runs come
from :mod:`recunlearn.experiments.cure4rec_scif`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..experiments.cure4rec_exact import EXACT_KEYS, UnlearnConfig
from ..experiments.cure4rec_scif import SCIF_METHODS, ExactMioConfig, ScifConfig
from ..unlearning import EXACT_METHODS
from .claims import (SELF_CHECK, band_claim, check_claim, claims_frame, ordering_claim, paired_differences, pairs_text,
                     split_waiting, with_pending_rows, with_waiting_rows)
from .timed_together import record_clocks, record_values
from .compare import compare, summarize_runs
from .cure4rec import EU_METHODS, RETRAIN_BESIDE, exact_speedups, speedup_ordering
from .names import by_dataset, display_name, display_names, format_number, paper_sorted, span_text
from .paper import paper_range


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
                 tol: float | None = None, selections=None) -> pd.DataFrame:
    """Mean ± std over seeds beside the paper's Tables 1/5 (Retrain and SCIF rows) and its Learn row
    (``learn_paper``, keyed by dataset and model). Our Learn model is the same for every selection,
    but its utility is measured on that selection's remaining users and its MIO on that selection's
    unlearned users, so it is shown per selection beside the paper's single Learn value. Tolerance
    per cell: the paper's rounding or two standard errors of our mean
    (:func:`recunlearn.report.compare.cell_tolerance`) unless ``tol`` fixes it. The paper's Learn row
    is set beside every one of ``selections`` (default: those run)."""
    keys = ["dataset", "model", "method", "selection"]
    ours = summarize_runs(runs, keys, metrics)
    if selections is None:
        selections = runs["selection"].unique() if "selection" in runs else []
    selections = pd.DataFrame({"selection": list(selections)})
    learn = learn_paper[learn_paper["metric"].isin(metrics)].assign(method="learn").merge(selections, how="cross")
    theirs = pd.concat([learn, paper[paper["metric"].isin(metrics)]], ignore_index=True)
    extra = ["resolution"] if "resolution" in theirs else []
    return compare(ours, theirs[keys + ["metric", "value"] + extra], keys, tol=tol)


ASPECTS = ["completeness", "utility", "efficiency", "fairness"]
OVERVIEW_METHODS = [*EXACT_METHODS, "scif"]  # Retrain, SISA, RecEraser, UltraRE, SCIF


def overview_aspects(scif_runs: pd.DataFrame, exact_runs: pd.DataFrame, selection: str = "random",
                     exact_mio: pd.DataFrame | None = None, records_dir=None) -> pd.DataFrame:
    """The four aspects of Figures 2 and 5 for Retrain, SISA, RecEraser, UltraRE and SCIF on the
    ``selection`` sets, per dataset and model (mean over seeds), raw and min-max normalised.

    - completeness = 1 − 2·|MIO accuracy − 0.5| (1: nothing to infer). SCIF's MIO comes from the
      SCIF runs; the exact methods' (Retrain included) from ``exact_mio`` (runs of
      :func:`recunlearn.experiments.cure4rec_scif.collect_exact_mio`) where given; an exact method
      without a measured value gets the SCIF runs' Retrain value (the paper: "EU methods inherently
      achieve the highest level of completeness");
    - utility = NDCG@20 (code variant) on the remaining users;
    - efficiency = speed-up over the Retrain timed beside the run (:func:`scif_speedups`,
      :func:`exact_speedups`): SCIF's gradient + CG + update against the Retrain of its own process;
      an exact method's time (of :func:`with_parallel_times`, shards in parallel) against the Retrain
      run of the same cell and seed timed within 30 minutes of it (Retrain: 1). The two grids ran in
      different sessions under different load, which scales both times of a ratio alike;
    - fairness = −|A-IGF − A-IGF of Retrain| (Retrain of the exact runs: 0 for itself).

    ``<aspect>_norm`` rescales each aspect to [0, 1] across the methods of one dataset and model
    (best = 1); equal values give 1."""
    keys = ["dataset", "model", "method"]
    exact = exact_runs[exact_runs["selection"] == selection]
    exact = exact.assign(speedup=exact_speedups(exact, records_dir)).groupby(keys, as_index=False).mean(
        numeric_only=True)
    scif = scif_runs[scif_runs["selection"] == selection]
    scif = scif.assign(speedup=scif_speedups(scif))
    scif = scif[scif["method"] == "scif"].groupby(keys, as_index=False).mean(numeric_only=True)
    retrain_mio = scif_runs[(scif_runs["selection"] == selection) & (scif_runs["method"] == "retrain")].groupby(
        ["dataset", "model"])["mio_accuracy"].mean().rename("retrain_mio")
    frame = pd.concat([exact[keys + ["ndcg_untruncated", "a_igf", "unlearn_seconds", "speedup"]],
                       scif[keys + ["ndcg_untruncated", "a_igf", "unlearn_seconds", "speedup", "mio_accuracy"]]],
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
    frame["efficiency"] = frame.pop("speedup")
    frame["fairness"] = -(frame["a_igf"] - frame["a_igf_retrain"]).abs()
    for aspect in ASPECTS:
        group = frame.groupby(["dataset", "model"])[aspect]
        low, high = group.transform("min"), group.transform("max")
        span = (high - low).where(high > low)
        frame[f"{aspect}_norm"] = ((frame[aspect] - low) / span).fillna(1.0)
    return frame.drop(columns=["retrain_mio"])


# --- the paper's claims (§5.1-5.2) ------------------------------------------------------------------

def own_retrain_seconds(scif_runs: pd.DataFrame) -> pd.Series:
    """For each row of the SCIF runs (:func:`recunlearn.experiments.cure4rec_scif.collect`: rows Learn,
    Retrain and SCIF of one record), the seconds of the Retrain that its own process trained minutes
    before SCIF ran (the Retrain row of the same record)."""
    keys = [k for k in RETRAIN_BESIDE + ["record"] if k in scif_runs]
    retrain = scif_runs.loc[scif_runs["method"] == "retrain", keys + ["unlearn_seconds"]].drop_duplicates(keys)
    beside = scif_runs[keys].merge(retrain, on=keys, how="left")["unlearn_seconds"]
    return pd.Series(beside.to_numpy(dtype=float), index=scif_runs.index)


def scif_speedups(scif_runs: pd.DataFrame) -> pd.Series:
    """Each row's speed-up over Retrain in the SCIF runs: :func:`own_retrain_seconds` over the row's
    own seconds. Retrain: 1; Learn: NaN."""
    return own_retrain_seconds(scif_runs) / scif_runs["unlearn_seconds"].astype(float)


def scif_times(scif_runs: pd.DataFrame) -> pd.DataFrame:
    """SCIF's rows of the SCIF runs (one per dataset, model, unlearning set and seed: ``unlearn_seconds``
    = gradient + CG + update, ``scif_cg_seconds``, ``cg_iterations``) with ``retrain_seconds``, the
    Retrain its own process trained first (:func:`own_retrain_seconds`), and ``speedup`` =
    retrain_seconds / unlearn_seconds."""
    keys = ["dataset", "model", "method", "selection", "seed"]
    shown = keys + ["unlearn_seconds", "scif_cg_seconds", "cg_iterations", "retrain_seconds", "speedup"]
    if scif_runs.empty or "method" not in scif_runs:
        return pd.DataFrame(columns=shown)
    scif = scif_runs[scif_runs["method"] == "scif"]
    out = scif.reindex(columns=keys + ["unlearn_seconds", "scif_cg_seconds", "cg_iterations"]).assign(
        retrain_seconds=own_retrain_seconds(scif_runs)[scif.index])
    return out.assign(speedup=out["retrain_seconds"] / out["unlearn_seconds"].astype(float)).reset_index(drop=True)


def with_pending_scif_rows(scif_runs: pd.DataFrame) -> pd.DataFrame:
    """The SCIF runs (rows of :func:`recunlearn.experiments.cure4rec_scif.collect`, one per run and method)
    with each run without a record as one row ``pending`` per method it reports (Learn, Retrain, SCIF)."""
    return with_pending_rows(scif_runs, methods=SCIF_METHODS)


def scif_times_with_pending(scif_runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`scif_times` with a ``status`` column and a row ``pending`` for each SCIF run without a record
    (:func:`with_pending_scif_rows`), for a claim on SCIF's speed-ups to count it."""
    waiting = split_waiting(with_pending_scif_rows(scif_runs))[1]
    waiting = waiting[waiting["method"] == "scif"] if len(waiting) else waiting
    return with_waiting_rows(scif_times(scif_runs), waiting, ["dataset", "model", "selection", "seed"])


def scif_slower_cells(scif: pd.DataFrame) -> str:
    """How many cells (dataset, model, unlearning set) of :func:`scif_times` have SCIF slower than
    the Retrain of its own process (mean speed-up over seeds below 1): ``"10 of 18 cells of dataset,
    backbone and unlearning set"``; ``"no cell yet (no SCIF run)"``."""
    if not len(scif):
        return "no cell yet (no SCIF run)"
    cells = scif.groupby(["dataset", "model", "selection"])["speedup"].mean()
    return f"{int((cells < 1).sum())} of {len(cells)} cells of dataset, backbone and unlearning set"


def scif_speedup_text(aspects: pd.DataFrame) -> str:
    """SCIF's mean speed-up over the Retrain of its own process per dataset, from the rows of
    :func:`overview_aspects` (their ``efficiency``, averaged over models): ``"ML-100K 0.55, ML-1M 2.3"``;
    ``"none yet"`` without a SCIF row."""
    scif = aspects[aspects["method"] == "scif"] if len(aspects) else aspects
    if not len(scif):
        return "none yet"
    means = scif.groupby("dataset")["efficiency"].mean()
    return ", ".join(f"{display_name(d)} {means[d]:.2g}" for d in paper_sorted("dataset", means.index))


def exact_mio_sources(aspects: pd.DataFrame, exact_mio: pd.DataFrame, selection: str = "random") -> dict:
    """Where the exact methods' completeness in :func:`overview_aspects` (rows ``aspects``) is measured
    by their own MIO runs (``exact_mio``, rows of ``selection``) for every exact method of a dataset
    and model, and where it is Retrain's value from the SCIF runs, assumed: ``{"measured": text,
    "assumed": text}``, each ``"ML-100K; ML-1M (WMF, BPR)"`` or ``"none"``. A dataset and model with
    some exact methods measured and others not counts as assumed."""
    drawn = aspects[["dataset", "model"]].drop_duplicates() if len(aspects) else pd.DataFrame(columns=["dataset", "model"])
    mine = exact_mio[exact_mio["selection"] == selection] if len(exact_mio) else exact_mio
    methods = mine.groupby(["dataset", "model"])["method"].nunique() if len(mine) else pd.Series(dtype=int)
    measured = {(d, m) for (d, m), n in methods.items() if n == len(EXACT_METHODS)}
    texts = {}
    for kind in ("measured", "assumed"):
        parts = []
        for dataset in paper_sorted("dataset", drawn["dataset"].unique()):
            models = paper_sorted("model", drawn.loc[drawn["dataset"] == dataset, "model"])
            chosen = [m for m in models if ((dataset, m) in measured) == (kind == "measured")]
            if chosen:
                parts.append(display_name(dataset) if chosen == models
                             else f"{display_name(dataset)} ({', '.join(display_names(chosen))})")
        texts[kind] = "; ".join(parts) or "none"
    return texts


RETRAIN_EXPERIMENTS = (UnlearnConfig.experiment, ExactMioConfig.experiment, ScifConfig.experiment)
"""Where the records of the Retrains :func:`retrain_pairs` pairs are found (keys are unique across them)."""


def retrain_pairs(exact_runs: pd.DataFrame, scif_runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """The Retrain each SCIF process trains beside the exact runs' Retrain of the same dataset, model,
    unlearning set and seed, computed on the same device (:func:`~recunlearn.report.timed_together.record_clocks`:
    a GPU's Retrain is not the CPU's model bit for bit, nor timed on its clock): those keys and ``column``
    of each, as ``<column>_exact`` and ``<column>_scif``; empty (with those columns) where either side has
    no such Retrain."""
    keys = ["dataset", "model", "selection", "seed"]
    out = keys + [f"{column}_exact", f"{column}_scif"]
    if not all(set(keys + ["method", column]) <= set(frame) for frame in (exact_runs, scif_runs)):
        return pd.DataFrame(columns=out)
    exact, own = (frame.loc[frame["method"] == "retrain"] for frame in (exact_runs, scif_runs))
    exact, own = (part[keys + [column]].assign(clock=record_clocks(part, RETRAIN_EXPERIMENTS)) for part in (exact, own))
    return exact.merge(own, on=keys + ["clock"], suffixes=("_exact", "_scif"))[out]


def retrain_session_ratios(exact_runs: pd.DataFrame, scif_runs: pd.DataFrame) -> pd.Series:
    """For each of :func:`retrain_pairs`: the exact runs' Retrain seconds over the seconds of the same
    Retrain in the SCIF run's process (one model, timed in two sessions): how much the sessions' load
    differed."""
    both = retrain_pairs(exact_runs, scif_runs, "unlearn_seconds")
    return (both["unlearn_seconds_exact"].astype(float) / both["unlearn_seconds_scif"].astype(float)).rename("ratio")


SAME_MODEL_TOLERANCE = 1e-9
"""Largest |NDCG@20| difference between two Retrains that :func:`same_retrain_check` calls the same model."""


def same_retrain_check(exact_runs: pd.DataFrame, scif_runs: pd.DataFrame) -> dict:
    """Self-check behind the speed-ups (:func:`scif_times`, :func:`~recunlearn.report.cure4rec.exact_speedups`):
    the Retrain that each SCIF process trains and the exact runs' Retrain of the same dataset, model,
    unlearning set and seed are the same model (NDCG@20 equal within :data:`SAME_MODEL_TOLERANCE`), so
    their seconds time the same work. Cells: dataset and model; pending without a pair."""
    pairs = retrain_pairs(exact_runs, scif_runs, "ndcg_untruncated").rename(
        columns={"ndcg_untruncated_scif": "ndcg_scif", "ndcg_untruncated_exact": "ndcg_exact"})
    evidence = (f"{pairs_text(len(pairs))} (dataset, model, unlearning set, seed); largest |difference| "
                f"{(pairs['ndcg_scif'] - pairs['ndcg_exact']).abs().max():.3g}" if len(pairs)
                else "no Retrain in both grids yet")
    return check_claim(
        "same_retrain_in_both_grids", "SCIF's own Retrain and this page's Retrain are the same model "
        "(equal NDCG@20), so speed-ups over them compare the same work", pairs, ["dataset", "model"],
        lambda cell: bool(((cell["ndcg_scif"] - cell["ndcg_exact"]).abs() <= SAME_MODEL_TOLERANCE).all()),
        evidence=evidence,
        kind=SELF_CHECK)


def retrain_mio_agreement(exact_mio: pd.DataFrame, scif_runs: pd.DataFrame) -> str:
    """Whether the two audits of one Retrain model agree: the MIO of each seed's Retrain in the SCIF
    runs against the exact pipeline's (``exact_mio``) for the same dataset, model, unlearning set and
    seed (:func:`retrain_pairs`). ``"equal in all 54 pairs"``, or the pairs that differ, by dataset
    and model, with the largest difference; ``"no pair yet"``. (The oracle's floating-point results
    depend on the CPU, so records made on different machines can differ by a few decisions.)"""
    pairs = retrain_pairs(exact_mio, scif_runs, "mio_accuracy")
    if not len(pairs):
        return "no pair yet"
    gap = (pairs["mio_accuracy_scif"] - pairs["mio_accuracy_exact"]).abs()
    differ = pairs[gap > 0]
    if not len(differ):
        return f"equal in all {len(pairs)} pairs"
    where = differ.groupby(["dataset", "model"]).size()
    cells = "; ".join(f"{display_name(d)} {display_name(m)}: {where[(d, m)]}"
                      for d in paper_sorted("dataset", where.index.get_level_values("dataset").unique())
                      for m in paper_sorted("model", where[d].index))
    return (f"equal in {len(pairs) - len(differ)} of {len(pairs)} pairs; different in {cells} "
            f"(largest difference {gap.max():.3f})")


def with_parallel_times(exact_runs: pd.DataFrame, parallel_runs: pd.DataFrame) -> pd.DataFrame:
    """The exact runs of Figures 2 and 5 (``exact_runs``: affected shards trained together, the runs
    whose utility and fairness Table 2 and Figures 3, 6, 7 show) with each run's ``unlearn_seconds``
    and ``record`` (and ``created`` where given) taken from the run of the same cell
    (:data:`EXACT_KEYS`) with each affected shard trained alone (``parallel_runs``: Table 3's runs,
    the slowest shard's time); a run without that counterpart is left out, its efficiency not
    computed yet."""
    if exact_runs.empty or parallel_runs.empty:
        return exact_runs.iloc[:0]
    taken = ["unlearn_seconds", "record", "created"]
    times = parallel_runs[EXACT_KEYS + [c for c in taken if c in parallel_runs]].drop_duplicates(EXACT_KEYS)
    return exact_runs.drop(columns=taken, errors="ignore").merge(times, on=EXACT_KEYS)


def complete_cells(aspects: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`overview_aspects` whose (dataset, model) holds every method of the figures
    (Retrain, the exact methods and SCIF): a cell that lacks one was normalised over fewer methods and
    would make a dataset's mean over models mix unlike cells."""
    methods = set(OVERVIEW_METHODS)
    held = aspects.groupby(["dataset", "model"])["method"].transform(lambda m: methods <= set(m))
    return aspects[held.astype(bool)]


def overview_aspects_by_seed(scif_runs: pd.DataFrame, exact_runs: pd.DataFrame, selection: str = "random",
                             exact_mio: pd.DataFrame | None = None, records_dir=None) -> pd.DataFrame:
    """:func:`overview_aspects` computed seed by seed (a ``seed`` column), for the claims' paired tests."""
    frames = []
    for seed in sorted(set(scif_runs["seed"]) & set(exact_runs["seed"])):
        mio = exact_mio[exact_mio["seed"] == seed] if exact_mio is not None and len(exact_mio) else None
        frames.append(overview_aspects(scif_runs[scif_runs["seed"] == seed], exact_runs[exact_runs["seed"] == seed],
                                       selection, mio, records_dir).assign(seed=seed))
    if not frames:
        return pd.DataFrame(columns=["dataset", "model", "method", "seed", *ASPECTS])
    return pd.concat(frames, ignore_index=True)


def with_pending_aspects(aspects: pd.DataFrame, scif_runs: pd.DataFrame, *exact_runs: pd.DataFrame,
                         selection: str = "random") -> pd.DataFrame:
    """``aspects`` (:func:`overview_aspects_by_seed`) with a ``status`` column and one row ``pending`` per
    (dataset, model, method, seed) on ``selection`` that a run without a record would add: a SCIF run's
    (``scif_runs``: Learn, Retrain and SCIF) or one of the exact runs' behind the aspects (``exact_runs``:
    rows of :func:`recunlearn.experiments.cure4rec_exact.collect` and the like, each with its
    ``attrs["pending"]``), for the claims to count them."""
    parts = [with_pending_scif_rows(scif_runs), *(with_pending_rows(runs) for runs in exact_runs)]
    waiting = pd.concat([split_waiting(part)[1] for part in parts], ignore_index=True)
    waiting = waiting[waiting["selection"] == selection] if len(waiting) else waiting
    return with_waiting_rows(aspects, waiting, ["dataset", "model", "method", "seed"])


def overview_claims(aspects: pd.DataFrame) -> pd.DataFrame:
    """CURE4Rec §5 on Figures 2/5, per (dataset, model), on the raw aspects of
    :func:`overview_aspects`, paired by seed (``aspects`` from :func:`overview_aspects_by_seed`;
    without a ``seed`` column every row counts as one seed):

    - ``scif_beats_eu_efficiency``, ``scif_beats_eu_fairness``, ``scif_beats_eu_utility``: SCIF above
      every EU method (SISA, RecEraser, UltraRE);
    - ``eu_more_complete_than_scif``: every EU method more complete than SCIF.

    Efficiency is a speed-up over the Retrain timed beside each run (:func:`overview_aspects`), so a
    SCIF run and an EU run are compared whenever both have one; an EU run without a Retrain recorded
    within 30 minutes of it has none, is left out, and the evidence counts it. Rows still waiting for
    their runs (:func:`with_pending_aspects`) count as pending."""
    frame = aspects if "seed" in aspects else aspects.assign(seed=0)
    cells = ["dataset", "model"]
    rows = [speedup_ordering("scif_beats_eu_efficiency", "SCIF beats every EU method in efficiency", frame,
                             "efficiency", cells)]
    rows += [ordering_claim(f"scif_beats_eu_{aspect}", f"SCIF beats every EU method in {aspect}", frame, "method",
                            [("scif", m) for m in EU_METHODS], aspect, cells) for aspect in ["fairness", "utility"]]
    rows.append(ordering_claim("eu_more_complete_than_scif", "EU methods are more complete than SCIF", frame, "method",
                               [(m, "scif") for m in EU_METHODS], "completeness", cells))
    return claims_frame(rows)


def learn_seconds(scif_runs: pd.DataFrame, records_dir=None) -> pd.Series:
    """The seconds each SCIF run's process spent training its Learn model (``learn_train_seconds`` of the
    run's record; a ``learn_seconds`` column is used as is); NaN where unknown."""
    if "learn_seconds" in scif_runs:
        return scif_runs["learn_seconds"].astype(float)
    values = record_values(scif_runs, [ScifConfig.experiment], lambda r: r["timings"]["learn_train_seconds"],
                           records_dir)
    return pd.to_numeric(values, errors="coerce").astype(float)


MIO_GAP_BAND = (0.01, 0.08)
"""Our reading of "SCIF's MIO accuracy is about 4 % above Retrain's": the gap SCIF − Retrain in this band."""


def paper_mio_gaps(paper: pd.DataFrame) -> pd.Series:
    """The paper's SCIF − Retrain MIO accuracy per (dataset, model, selection), from the rows of
    ``paper_table("cure4rec-table-01-05")``; cells without both values are left out."""
    mio = paper[paper["metric"] == "mio_accuracy"].pivot_table(index=["dataset", "model", "selection"],
                                                              columns="method", values="value")
    return (mio["scif"] - mio["retrain"]).dropna()


def paper_gap_text(paper: pd.DataFrame) -> str:
    """The paper's own SCIF − Retrain MIO accuracy gaps, cell by cell (:func:`paper_mio_gaps`): how many,
    their range and mean, and how many lie in :data:`MIO_GAP_BAND` — what the band is read against."""
    gaps = paper_mio_gaps(paper)
    low, high = MIO_GAP_BAND
    inside = int(gaps.between(low, high).sum())
    held = "all inside the band" if inside == len(gaps) else f"{inside} of them inside the band"
    return (f"its own {len(gaps)} cells lie between {gaps.min():.3f} and {gaps.max():.3f} "
            f"(mean {gaps.mean():.3f}), {held}")


def scif_claims(runs: pd.DataFrame, records_dir=None) -> pd.DataFrame:
    """CURE4Rec §5.1-5.3 on seed-level runs (one row per run and method), paired by seed within
    each cell (dataset, model, selection) or, across unlearning sets, within (dataset, model):

    - ``mio_well_below_learn``: Retrain and SCIF both bring MIO accuracy well below Learn's (by more
      than 0.05);
    - ``scif_mio_gap_about_4pc``: "SCIF's MIO accuracy is about 4 % above Retrain's", checked as the
      seed-paired gap SCIF − Retrain lying in :data:`MIO_GAP_BAND` (the paper's own gaps:
      :func:`paper_gap_text`);
    - ``scif_worst_on_edge``: SCIF's MIO accuracy is highest on edge data;
    - ``scif_most_utility_loss_on_core``: SCIF loses most utility (NDCG@20 drop from Learn) on core users;
    - ``scif_slower_on_core``: SCIF takes longer on core users than on random or edge users
      (CURE4Rec §5.3), each SCIF time in units of the Learn training of its own process
      (:func:`learn_seconds`): the same model for every unlearning set of a seed, so the load of the
      session a record was made in cancels.

    ``runs`` may hold rows of runs without a record (``status``; :func:`with_pending_scif_rows`): each claim
    counts those of its scope as pending."""
    cell = ["dataset", "model", "selection"]
    done, waiting = split_waiting(runs)
    waiting_scif = waiting[waiting["method"] == "scif"] if len(waiting) else waiting
    gap = paired_differences(runs, "method", "scif", "retrain", "mio_accuracy", cell, waiting=True)
    computed_scif = done[done["method"] == "scif"]
    learn = done[done["method"] == "learn"][cell + ["seed", "ndcg_untruncated"]]
    drops = computed_scif.merge(learn, on=cell + ["seed"], suffixes=("", "_learn"))
    drops["ndcg_drop"] = drops["ndcg_untruncated_learn"] - drops["ndcg_untruncated"]
    seconds = computed_scif["unlearn_seconds"].astype(float) if "unlearn_seconds" in computed_scif else np.nan
    timed = computed_scif.assign(scif_per_learn=seconds / learn_seconds(computed_scif, records_dir))
    drops, timed = (with_waiting_rows(frame, waiting_scif, cell + ["seed"]) for frame in (drops, timed))
    scif = runs[runs["method"] == "scif"]
    selections = [("core", "random"), ("core", "edge")]
    return claims_frame([
        ordering_claim("mio_well_below_learn",
                       "Retrain and SCIF both bring MIO accuracy well below Learn's (more than 0.05 below)", runs,
                       "method", [("learn", "retrain"), ("learn", "scif")], "mio_accuracy", cell, margin=0.05),
        band_claim("scif_mio_gap_about_4pc",
                   "SCIF's MIO accuracy is about 4 % above Retrain's ({:.2f}-{:.2f} above)".format(*MIO_GAP_BAND),
                   gap, "diff", cell, low=MIO_GAP_BAND[0], high=MIO_GAP_BAND[1],
                   note="SCIF − Retrain MIO accuracy, paired by seed;"),
        ordering_claim("scif_worst_on_edge", "SCIF is worst (highest MIO accuracy) on edge data", scif, "selection",
                       [("edge", "core"), ("edge", "random")], "mio_accuracy", ["dataset", "model"]),
        ordering_claim("scif_most_utility_loss_on_core",
                       "SCIF loses most utility (NDCG@20 drop from Learn) on core users", drops, "selection",
                       selections, "ndcg_drop", ["dataset", "model"]),
        ordering_claim("scif_slower_on_core", "SCIF is slower on core users than on random or edge users", timed,
                       "selection", selections, "scif_per_learn", ["dataset", "model"],
                       note="Each SCIF time is divided by the seconds its own process spent training the Learn "
                            "model, the same model for every unlearning set of a seed, so that the load of the "
                            "session each record was made in cancels."),
    ])


def exact_mio_table(exact_mio: pd.DataFrame, scif_runs: pd.DataFrame) -> pd.DataFrame:
    """MIO accuracy (mean ± std over run seeds) per (dataset, model, selection): Learn, Retrain and
    SCIF of the SCIF runs, and every exact method of the ``cure4rec-exact-mio`` runs (columns
    ``EU <method>``; their Retrain is the same model as the SCIF runs' Retrain, with its own MIO
    featurisation and oracle draws; ``not run`` where a cell has no run). 0.5 = nothing to infer."""
    columns = ["dataset", "model", "method", "selection", "seed", "mio_accuracy"]
    exact = exact_mio[columns].assign(method="EU " + exact_mio["method"])
    both = pd.concat([part for part in (scif_runs[columns], exact) if len(part)] or [exact], ignore_index=True)
    stats = both.groupby(["dataset", "model", "selection", "method"])["mio_accuracy"].agg(["mean", "std"])
    cells = pd.Series([f"{m:.3f} ± {sd:.3f}" if pd.notna(sd) else f"{m:.3f}" for m, sd in stats.to_numpy()],
                      index=stats.index)
    order = ["learn", "retrain", "scif", *(f"EU {m}" for m in EXACT_METHODS)]
    table = cells.unstack("method").reindex(columns=[m for m in order if m in set(both["method"])])
    return table.fillna("not run")


# --- the Tables 1/5 page's derived tables and glued values --------------------------------------

SCIF_CELL = ["dataset", "model", "selection"]
"""A cell of Tables 1/5: the paper's numbers and ours are compared per method in each."""
SCIF_EXTRA = ["mio_auc", "mio_train_accuracy", "ndcg", "hit_ratio", "a_igf_standard", "unlearn_seconds",
              "cg_iterations", "damping"]
"""The run's measures shown beside the paper's, in the page's extra table."""
MIO_CLOSE_TO_CHANCE = 0.05
"""An exact method's MIO accuracy within this of 0.5 is consistent with complete unlearning."""


def mio_gap_values(runs: pd.DataFrame, paper: pd.DataFrame, learn_paper: pd.DataFrame) -> dict:
    """The glued gaps of the page, per dataset over the cells (dataset, model, selection) that both the
    paper and our runs have: SCIF − Retrain MIO accuracy (ours ``mio_gap``, the paper's
    ``paper_mio_gap``) and SCIF's NDCG@20 loss from Learn (``ndcg_drop``, ``paper_ndcg_drop``)."""
    theirs = paper.pivot_table(index=SCIF_CELL, columns=["metric", "method"], values="value")
    learn = learn_paper[learn_paper["metric"] == "ndcg_untruncated"].set_index(["dataset", "model"])["value"]
    learn_per_cell = pd.Series(learn.reindex(theirs.index.droplevel("selection")).to_numpy(), index=theirs.index)
    papers = {"mio_gap": paper_mio_gaps(paper), "ndcg_drop": learn_per_cell - theirs[("ndcg_untruncated", "scif")]}
    values = {}
    for name, ours in [("mio_gap", method_difference(runs, "mio_accuracy", "scif", "retrain")),
                       ("ndcg_drop", method_difference(runs, "ndcg_untruncated", "learn", "scif"))]:
        both = pd.concat({"ours": ours, "paper": papers[name]}, axis=1).dropna()
        means = both.groupby(level="dataset").mean()
        spec = "+.3f" if name == "mio_gap" else ".4f"  # the NDCG loss can be a few ten-thousandths
        values[name], values[f"paper_{name}"] = by_dataset(means["ours"], spec), by_dataset(means["paper"], spec)
    return values


def paper_quote_values(paper: pd.DataFrame, learn_paper: pd.DataFrame) -> dict:
    """The paper's numbers the page's prose quotes: its Learn MIO accuracy range
    (``paper_learn_mio_range``) and its own SCIF − Retrain gaps cell by cell (``paper_mio_gap_cells``)
    against our band for "about 4 %" (``mio_gap_band``)."""
    return {"paper_learn_mio_range": paper_range(learn_paper, 2, metric="mio_accuracy").replace("-", "–"),
            "paper_mio_gap_cells": paper_gap_text(paper), "mio_gap_band": "{:.2f}-{:.2f}".format(*MIO_GAP_BAND)}


def method_difference(runs: pd.DataFrame, metric: str, first: str, second: str) -> pd.Series:
    """Per cell (mean over seeds): ``metric`` of method ``first`` minus that of ``second``."""
    table = runs.pivot_table(index=SCIF_CELL, columns="method", values=metric) if len(runs) else pd.DataFrame()
    if first not in table or second not in table:  # nothing to compare yet
        return pd.Series(dtype=float, index=pd.MultiIndex.from_tuples([], names=SCIF_CELL))
    return table[first] - table[second]


def mio_gap_table(runs: pd.DataFrame) -> pd.DataFrame:
    """MIO accuracy of Learn, Retrain and SCIF per cell (mean over seeds) and SCIF − Retrain."""
    if runs.empty:
        return pd.DataFrame()
    gap = runs.pivot_table(index=SCIF_CELL, columns="method", values="mio_accuracy")
    gap["scif_minus_retrain"] = gap["scif"] - gap["retrain"]
    return gap.round(3)


def exact_mio_values(exact_mio: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """The glued MIO ranges of the exact methods and of SCIF, the largest distance of an exact cell from
    0.5 and what it says (``pending`` where nothing is computed)."""
    exact_means = exact_mio.groupby(["dataset", "model", "method", "selection"])["mio_accuracy"].mean()
    scif_means = runs[runs["method"] == "scif"].groupby(SCIF_CELL)["mio_accuracy"].mean()
    distance = (exact_means.astype(float) - 0.5).abs()
    if not len(exact_means):
        verdict = "pending"
    elif bool((distance <= MIO_CLOSE_TO_CHANCE).all()):
        verdict = f"every exact cell is within {MIO_CLOSE_TO_CHANCE:g} of 0.5, consistent with complete unlearning"
    else:
        verdict = f"not every exact cell is within {MIO_CLOSE_TO_CHANCE:g} of 0.5: see the table"
    return {"exact_mio_range": span_text(exact_means, 3),
            "exact_mio_maxdev": format_number(distance.max(), 3, missing="pending"),
            "scif_mio_range": span_text(scif_means, 3), "exact_verdict": verdict,
            "retrain_mio_agreement": retrain_mio_agreement(exact_mio, runs)}


def scif_extra_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per setting, means over seeds of the run's other measures (:data:`SCIF_EXTRA`), four decimals except
    the damping δ, which is written with three significant digits (BPR's and LightGCN's are ~1e-6)."""
    table = runs.groupby(["dataset", "model", "method", "selection"])[SCIF_EXTRA].mean()
    rounded = table.drop(columns="damping").round(4)
    return rounded.assign(damping=table["damping"].map(lambda v: f"{v:.3g}" if pd.notna(v) else None))
