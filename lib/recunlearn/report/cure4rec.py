"""CURE4Rec runs against the paper: dataset statistics (Table 4), the Learn models (Tables 1/5, row
Learn) and exact unlearning (Tables 2, 3, 6-8; Figures 3-4, 6-8): the paper-vs-ours comparisons, the
tables the pages show and the paper's claims (stable ids). The runs come from
:mod:`recunlearn.experiments.cure4rec` and :mod:`recunlearn.experiments.cure4rec_exact`."""

from __future__ import annotations

import pandas as pd

from ..experiments.cure4rec_exact import UnlearnConfig
from .claims import (COMPUTED, INCONCLUSIVE, OTHER_READING, PENDING, RUN, STATUS, as_kind, claim_row, claims_frame,
                     ordering_claim, split_waiting, trend_claim, with_waiting_rows)
from .compare import compare, printed_resolution, summarize_runs
from .names import display_name, paper_sorted
from .timed_together import PAIR_WINDOW, timed_together, with_sessions, with_times

# --- Table 4 ----------------------------------------------------------------------------------------


STATISTICS = ["users", "items", "interactions", "sparsity"]
"""Table 4's statistics, in its order."""


def compare_statistics(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Paper's Table 4 beside ours (both sources), long format: counts must agree exactly, sparsity
    within the rounding of the paper's printed value (0.92195 stands for 0.921945-0.921955)."""
    ours_long = ours.melt(id_vars=["dataset", "source"], value_vars=STATISTICS, var_name="metric", value_name="mean")
    ours_long["std"] = 0.0
    paper_long = paper.melt(id_vars=["dataset"], value_vars=STATISTICS, var_name="metric")
    paper_long["resolution"] = [printed_resolution(v) if m == "sparsity" else 0.0
                                for m, v in zip(paper_long["metric"], paper_long["value"])]
    paper_long = paper_long.merge(ours[["dataset", "source"]].drop_duplicates(), on="dataset")
    return compare(ours_long, paper_long, ["dataset", "source"], pending_label="not available")


# --- Learn --------------------------------------------------------------------------------------------

LEARN_METRICS = ["ndcg_untruncated", "hr_cure4rec", "a_igf", "ndcg", "hit_ratio", "recall", "mrr", "a_igf_standard"]
"""Metrics on the Learn page: the paper's (code-variant) NDCG/HR and A-IGF first, then the standard ones."""


def compare_learn(runs: pd.DataFrame, paper: pd.DataFrame, tol: float | None = None,
                  validations=None) -> pd.DataFrame:
    """Mean ± std over seeds beside the paper's "Learn" rows, for every validation rule of
    ``validations`` (default: those run); paper cells of datasets/models not run stay as pending.
    Tolerance per cell: the paper's rounding or two standard errors of our mean
    (:func:`recunlearn.report.compare.cell_tolerance`) unless ``tol`` fixes it."""
    keys = ["dataset", "model", "validation"]
    ours = summarize_runs(runs, keys, LEARN_METRICS)
    if validations is None:
        validations = runs["validation"].unique() if "validation" in runs else []
    validations = pd.DataFrame({"validation": list(validations)})
    paper_rows = paper[paper["metric"].isin(LEARN_METRICS)].merge(validations, how="cross")
    return compare(ours, paper_rows.drop(columns="source"), keys, tol=tol)


# --- exact unlearning ---------------------------------------------------------------------------------

EU_METHODS = ["sisa", "receraser", "ultrare"]


def with_retrain_gap(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with ``a_igf_gap`` = A-IGF minus the mean A-IGF of Retrain (same dataset, model,
    selection, ratio) and its absolute value ``a_igf_gap_abs`` (the paper's "approaching Retrain");
    undefined (NaN, shown as a dash) for Retrain itself, the reference, whose distance to its own mean
    is only its seed spread."""
    keys = ["dataset", "model", "selection", "ratio"]
    retrain = (runs[runs["method"] == "retrain"].groupby(keys)["a_igf"].mean().rename("a_igf_retrain").reset_index())
    out = runs.merge(retrain, on=keys, how="left")
    out["a_igf_gap"] = (out["a_igf"] - out["a_igf_retrain"]).where(out["method"] != "retrain")
    out["a_igf_gap_abs"] = out["a_igf_gap"].abs()
    return out


def compare_exact(runs: pd.DataFrame, paper: pd.DataFrame, metrics: list[str],
                  tol: float | None = None) -> pd.DataFrame:
    """Mean ± std over seeds beside the paper, keyed by dataset, model, method and selection; paper
    cells of datasets/models not run are kept as pending. Tolerance per cell: the paper's rounding
    or two standard errors of our mean (:func:`recunlearn.report.compare.cell_tolerance`) unless
    ``tol`` fixes it."""
    keys = ["dataset", "model", "method", "selection"]
    ours = summarize_runs(runs, keys, metrics)
    return compare(ours, paper[paper["metric"].isin(metrics)].drop(columns="source"), keys, tol=tol)


def retrain_in_two_tables(table_2: pd.DataFrame, tables_1_5: pd.DataFrame, runs: pd.DataFrame | None = None,
                          metrics: tuple[str, ...] = ("ndcg_untruncated", "hr_cure4rec")) -> pd.DataFrame:
    """The paper against itself: every Retrain cell (dataset, model, selection, metric) that both its
    Table 2 and its Tables 1/5 print, the two values, ``ratio`` = Table 2 / Tables 1/5, ``agree`` (the
    two equal) and, where ``runs`` has that cell, ``ours`` (mean over seeds) -- the same model trained on
    the same data twice cannot have two utilities."""
    keys = ["dataset", "model", "method", "selection", "metric"]

    def retrain(table, name):
        part = table[(table["method"] == "retrain") & table["metric"].isin(metrics)]
        return part[keys + ["value"]].rename(columns={"value": name})

    both = retrain(table_2, "table_2").merge(retrain(tables_1_5, "tables_1_5"), on=keys)
    both["ratio"] = both["table_2"] / both["tables_1_5"]
    both["agree"] = (both["ratio"] - 1).abs() < 1e-9
    if runs is not None and len(runs):
        ours = summarize_runs(runs[runs["method"] == "retrain"], keys[:-1], list(metrics))
        both = both.merge(ours[keys + ["mean"]].rename(columns={"mean": "ours"}), on=keys, how="left")
    else:
        both["ours"] = float("nan")
    return both.drop(columns="method")


def paper_agreement_text(both: pd.DataFrame) -> str:
    """Where the paper's Table 2 and Tables 1/5 agree on Retrain and where not, from
    :func:`retrain_in_two_tables`: ``"equal in ML-100K and ML-1M (24 cells); in ADM Table 2 is 6.9 to
    17.2 times Tables 1/5 (12 cells), ours 1.0 to 1.4 times Tables 1/5 (6 cells computed)"``;
    datasets in the paper's order."""
    agree, texts = [], []
    for dataset in paper_sorted("dataset", both["dataset"]):
        part = both[both["dataset"] == dataset]
        if part["agree"].all():
            agree.append(part)
            continue
        ours = (part["ours"] / part["tables_1_5"]).dropna()
        texts.append(f"in {display_name(dataset)} Table 2 is {part['ratio'].min():.1f} to {part['ratio'].max():.1f} "
                     f"times Tables 1/5 ({_cells(len(part))})"
                     + (f", ours {ours.min():.1f} to {ours.max():.1f} times Tables 1/5 ({_cells(len(ours))} computed)"
                        if len(ours) else ", ours pending"))
    if agree:
        names = " and ".join(display_name(p["dataset"].iloc[0]) for p in agree)
        texts.insert(0, f"equal in {names} ({_cells(sum(map(len, agree)))})")
    return "; ".join(texts) or "no Retrain cell in both tables"


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def shard_composition(shards: pd.DataFrame, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """Active / inactive remaining users per shard of our runs (``shards``, one row per run and shard,
    see :func:`recunlearn.experiments.cure4rec_exact.collect`; ``source`` "ours") and the paper's
    Tables 6-8 for the same datasets when given (``source`` "paper", shards numbered from 0). Shards
    are numbered arbitrarily by every method, so ``rank`` orders them by active users (1 = most)."""
    frame = shards.assign(source="ours")
    if paper is not None:  # the paper's groups are numbered from 1; its "source" column is a citation
        theirs = paper[paper["dataset"].isin(frame["dataset"].unique())].copy()
        theirs["shard"] -= 1
        theirs["model"], theirs["seed"], theirs["source"] = "(paper)", -1, "paper"
        frame = pd.concat([frame, theirs], ignore_index=True) if len(theirs) else frame
    keys = ["source", "dataset", "model", "method", "selection", "seed"]
    frame["rank"] = frame.groupby(keys)["active"].rank(method="first", ascending=False).astype(int)
    return frame


def active_concentration(composition: pd.DataFrame) -> pd.DataFrame:
    """Per source, method and selection: the share of all active users held by the shard with the
    most of them, and the coefficient of variation of active users across shards (mean over seeds)."""
    keys = ["source", "dataset", "method", "selection", "seed"]
    per_run = composition.groupby(keys)["active"].agg(
        top_shard_share=lambda a: a.max() / max(a.sum(), 1), cv=lambda a: a.std(ddof=0) / max(a.mean(), 1e-12))
    return per_run.groupby(["source", "dataset", "method", "selection"]).mean().reset_index()


RETRAIN_BESIDE = ["dataset", "model", "selection", "ratio", "seed"]
"""What a run shares with the Retrain its speed-up is measured against (:func:`exact_speedups`)."""


def exact_speedups(exact_runs: pd.DataFrame, records_dir=None) -> pd.Series:
    """Each exact run's speed-up over Retrain: the seconds of the Retrain run of the same dataset, model,
    selection, ratio and seed (:data:`RETRAIN_BESIDE`) over the run's own, only when the two records were
    timed on the same clock and written at most :data:`~recunlearn.report.timed_together.PAIR_WINDOW` (30 minutes)
    apart (record times and clocks as :func:`~recunlearn.report.timed_together.with_times` finds them, ``created``
    and ``clock`` columns first); NaN otherwise. Retrain's own speed-up is 1. Both times of a ratio
    scale alike with the machine's load, so speed-ups of runs made in different sessions can be
    compared where their seconds cannot."""
    if exact_runs.empty:
        return pd.Series(dtype=float, index=exact_runs.index)
    keys = [k for k in RETRAIN_BESIDE if k in exact_runs]
    timed = with_times(exact_runs, [UnlearnConfig.experiment], records_dir)
    frame = exact_runs[keys + ["method", "unlearn_seconds"]].assign(created=timed["created"], clock=timed["clock"])
    retrain = frame.loc[frame["method"] == "retrain", keys + ["unlearn_seconds", "created", "clock"]]
    retrain = retrain.drop_duplicates(keys).rename(
        columns={"unlearn_seconds": "retrain_seconds", "created": "retrain_created", "clock": "retrain_clock"})
    paired = frame.merge(retrain, on=keys, how="left")
    together = ((paired["created"] - paired["retrain_created"]).abs() <= PAIR_WINDOW) & \
        (paired["clock"] == paired["retrain_clock"])
    speedup = (paired["retrain_seconds"] / paired["unlearn_seconds"]).where(together.to_numpy())
    return pd.Series(speedup.to_numpy(dtype=float), index=exact_runs.index)


SPEEDUP_RULE = ("Times are compared as speed-ups over the Retrain timed beside each run: SCIF's against the Retrain "
                "its own process trained, an EU method's against the Retrain run of the same cell and seed "
                "recorded at most 30 minutes from it, so that load, which differed between the sessions that "
                "ran the two grids, cancels.")


TIME_COLUMNS = ["unlearn_seconds", "unlearn_sum_seconds", "partition_seconds", "unlearn_plus_partition_seconds"]


def time_table(runs: pd.DataFrame, scif: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 3 (``paper_seconds``) beside our mean times over seeds of the exact runs and
    the stored SCIF runs (``scif``), with each method's time relative to Retrain in the same setting:
    ``paper_vs_retrain`` and ``ours_vs_retrain`` (slowest shard; SCIF's against the Retrain of its own
    runs where ``scif`` has their ``retrain_seconds``, since the two grids ran in different sessions).
    One row per paper cell."""
    keys = ["dataset", "model", "method", "selection"]
    timed = pd.concat([runs, scif], ignore_index=True) if len(scif) else runs
    ours = timed.groupby(keys)[[c for c in TIME_COLUMNS if c in timed]].mean()
    paper = paper.rename(columns={"value": "paper_seconds"})
    table = paper.drop(columns=["metric", "source", "resolution"]).merge(ours.reset_index(), how="left", on=keys)
    table["paper_vs_retrain"] = table["paper_seconds"] / table.groupby(["dataset", "model", "selection"])[
        "paper_seconds"].transform(lambda s: s[table.loc[s.index, "method"] == "retrain"].iloc[0])
    retrain = table[table["method"] == "retrain"].set_index(["dataset", "model", "selection"])["unlearn_seconds"]
    table["ours_vs_retrain"] = table["unlearn_seconds"] / table.set_index(["dataset", "model", "selection"]).index.map(
        retrain)
    if len(scif) and "retrain_seconds" in scif:  # SCIF against the Retrain of its own runs, timed beside it
        own = scif.groupby(["dataset", "model", "selection"])[["unlearn_seconds", "retrain_seconds"]].mean()
        own = (own["unlearn_seconds"] / own["retrain_seconds"]).rename("scif_vs_own_retrain").reset_index()
        table = table.merge(own.assign(method="scif"), on=keys, how="left")
        table["ours_vs_retrain"] = table.pop("scif_vs_own_retrain").where(table["method"] == "scif",
                                                                          table["ours_vs_retrain"])
    return table


# --- the paper's claims (§5.2-5.5, B.3-B.4) ---------------------------------------------------------


def utility_claims(runs: pd.DataFrame, metric: str = "ndcg_untruncated") -> pd.DataFrame:
    """CURE4Rec §5.2 on seed-level runs, cells = (dataset, model, selection), pairs = seeds (see
    :func:`recunlearn.report.claims.ordering_claim`):

    - ``eu_below_retrain``: every EU method below Retrain;
    - ``receraser_ultrare_beat_sisa``: RecEraser and UltraRE above SISA;
    - ``ultrare_ge_receraser_ge_sisa``: UltraRE ≥ RecEraser ≥ SISA (links UltraRE > RecEraser and
      RecEraser > SISA);
    - ``core_highest_utility``: for EU methods, unlearning core users leaves higher utility than
      random and edge users (cells = dataset, model, method)."""
    cell = ["dataset", "model", "selection"]
    eu = runs[runs["method"].isin(EU_METHODS)]
    return claims_frame([
        ordering_claim("eu_below_retrain", "every EU method is below Retrain in utility", runs, "method",
                       [("retrain", m) for m in EU_METHODS], metric, cell),
        ordering_claim("receraser_ultrare_beat_sisa", "RecEraser and UltraRE beat SISA in utility", runs, "method",
                       [("receraser", "sisa"), ("ultrare", "sisa")], metric, cell),
        ordering_claim("ultrare_ge_receraser_ge_sisa", "UltraRE ≥ RecEraser ≥ SISA in utility", runs, "method",
                       [("ultrare", "receraser"), ("receraser", "sisa")], metric, cell),
        ordering_claim("core_highest_utility",
                       "EU methods: unlearning core users leaves higher utility than random or edge users", eu,
                       "selection", [("core", "random"), ("core", "edge")], metric, ["dataset", "model", "method"]),
    ])


def eu_and_scif(fair: pd.DataFrame, scif: pd.DataFrame | None) -> pd.DataFrame:
    """The exact methods' rows of ``fair`` and SCIF's rows of ``scif`` (rows of
    :func:`recunlearn.experiments.cure4rec_scif.collect`), with a ``status`` column: SCIF's runs without a
    record (its ``attrs["pending"]`` configs) are rows ``pending``, for a claim to count them."""
    keep = ["dataset", "model", "method", "selection", *(["ratio"] if "ratio" in fair else []), "seed", "a_igf",
            "record"]
    eu = fair[fair["method"].isin(EU_METHODS)].reindex(columns=keep + [STATUS])
    eu[STATUS] = eu[STATUS].fillna(COMPUTED)
    computed = scif[scif["method"] == "scif"] if scif is not None and len(scif) else pd.DataFrame(columns=keep)
    waiting = pd.DataFrame((scif.attrs.get("pending") if scif is not None else None) or [])
    waiting = waiting.reindex(columns=keep).assign(method="scif", record=[f"scif-pending-{i}" for i in
                                                                       range(len(waiting))])
    parts = [eu, computed.reindex(columns=keep).assign(**{STATUS: COMPUTED}), waiting.assign(**{STATUS: "pending"})]
    return pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else eu


def fairness_claims(runs: pd.DataFrame, scif: pd.DataFrame | None = None) -> pd.DataFrame:
    """CURE4Rec §5.4 on seed-level runs, cells = (dataset, model, selection), pairs = seeds:

    - ``eu_a_igf_above_scif``: "compared to the AU method (SCIF), EU methods notably worsen unfairness,
      tending to favor active users": each EU method's A-IGF above SCIF's, seed by seed (``scif``: the
      rows of :func:`recunlearn.experiments.cure4rec_scif.collect`, whose ``scif`` rows are used; SCIF
      unlearns the same users for a (selection, seed); pending without them);
    - ``eu_a_igf_above_retrain``, another reading (the figures' reference is Retrain): EU methods favour
      active users more than Retrain (A-IGF above Retrain's);
    - ``receraser_ultrare_a_igf_further_than_sisa``: RecEraser and UltraRE move A-IGF further from
      Retrain (|A-IGF − Retrain's mean A-IGF|) than SISA;
    - ``receraser_ultrare_shardgf_above_sisa``: RecEraser and UltraRE have larger shardGF than SISA."""
    fair = with_retrain_gap(runs)
    cell = ["dataset", "model", "selection"]
    against_scif = eu_and_scif(fair, scif)
    return claims_frame([
        ordering_claim("eu_a_igf_above_scif", "EU methods favour active users more than SCIF (A-IGF above SCIF's)",
                       against_scif, "method", [(m, "scif") for m in EU_METHODS], "a_igf",
                       cell + (["ratio"] if "ratio" in fair else [])),
        as_kind(ordering_claim("eu_a_igf_above_retrain", "EU methods worsen A-IGF towards active users (A-IGF "
                               "above Retrain's)", fair, "method", [(m, "retrain") for m in EU_METHODS], "a_igf",
                               cell), OTHER_READING),
        ordering_claim("receraser_ultrare_a_igf_further_than_sisa",
                       "RecEraser and UltraRE move A-IGF further from Retrain than SISA", fair, "method",
                       [("receraser", "sisa"), ("ultrare", "sisa")], "a_igf_gap_abs", cell),
        ordering_claim("receraser_ultrare_shardgf_above_sisa", "RecEraser and UltraRE have larger shardGF than SISA",
                       fair, "method", [("receraser", "sisa"), ("ultrare", "sisa")], "shard_gf", cell),
    ])


TIME_METRICS = ("unlearn_seconds", "unlearn_sum_seconds", "unlearn_plus_partition_seconds", "unlearn_wall_seconds")

TIMING_RULE = ("Timing rule: times are compared only between runs timed in one session (records written at most "
               "10 minutes apart), and a sweep's levels must be interleaved in time.")
PAIR_TIMING_RULE = ("Timing rule: a time is compared only with the same seed's time whose record was written at "
                    "most 30 minutes from it.")


def sweep_claims(runs: pd.DataFrame, x: str, expected: dict[str, int], label: str,
                 records_dir=None) -> pd.DataFrame:
    """For each metric of ``expected`` (+1 rises, -1 falls with ``x``), one trend claim with id
    ``<metric>_rises`` / ``<metric>_falls``, tested per (dataset, model, method) over seed-level
    runs (:func:`recunlearn.report.claims.trend_claim`). Time metrics (:data:`TIME_METRICS`) use
    only runs timed together: the session holding most levels, levels interleaved in time
    (:func:`recunlearn.report.timed_together.timed_together`); runs' record times come from their records."""
    rows = []
    for metric, sign in expected.items():
        direction = "rises" if sign > 0 else "falls"
        timing = metric in TIME_METRICS
        frame = with_sessions(runs, [UnlearnConfig.experiment], records_dir) if timing else runs
        rows.append(trend_claim(f"{metric}_{direction}", f"{display_name(metric)} {direction} with {label}", frame, x, metric, sign,
                                ["dataset", "model", "method"], usable=timed_together(x) if timing else None,
                                note=TIMING_RULE if timing else ""))
    return claims_frame(rows)


def concentration_claims(composition: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Appendix B.3 on :func:`shard_composition` (our runs), one value per run: the share of all
    active users held by the shard with the most of them.

    - ``receraser_ultrare_concentrate_active_users``: that share is larger for RecEraser and UltraRE
      than for SISA (seed-paired, cells = dataset, model, selection; see
      :func:`recunlearn.report.claims.ordering_claim`); the page's ``runs`` without a record
      (:func:`~recunlearn.report.claims.with_pending_rows`) count as pending."""
    keys = ["dataset", "model", "method", "selection", "seed"]
    ours = composition[composition["source"] == "ours"]
    per_run = ours.groupby(keys)["active"].agg(lambda a: a.max() / max(a.sum(), 1)).rename("top_shard_share")
    waiting = split_waiting(runs)[1] if runs is not None else per_run.reset_index().iloc[0:0]
    shares = with_waiting_rows(per_run.reset_index(), waiting, keys)
    return claims_frame([
        ordering_claim("receraser_ultrare_concentrate_active_users",
                       "RecEraser and UltraRE group active users together, SISA spreads them (top shard's share)",
                       shares, "method", [("receraser", "sisa"), ("ultrare", "sisa")],
                       "top_shard_share", ["dataset", "model", "selection"]),
    ])


def time_claims(runs: pd.DataFrame, metric: str = "unlearn_seconds", records_dir=None,
                scif: pd.DataFrame | None = None) -> pd.DataFrame:
    """CURE4Rec §5.3 on seed-level runs, cells = (dataset, model, selection), a time compared only
    with the same seed's time of another method recorded at most 30 minutes from it
    (:data:`recunlearn.report.timed_together.PAIR_WINDOW`):

    - ``sisa_faster_than_receraser_ultrare``: SISA is faster than RecEraser and UltraRE;
    - ``ultrare_faster_than_receraser``: UltraRE is faster than RecEraser;
    - ``eu_faster_than_retrain``: every EU method is faster than Retrain;
    - ``eu_faster_on_core``: EU methods unlearn core users faster than random or edge users
      (cells = dataset, model, method);
    - ``scif_faster_than_eu``: SCIF is faster than every EU method, compared as speed-ups over the
      Retrain timed beside each (``scif``: SCIF's runs with their ``speedup``, see
      :func:`recunlearn.report.cure4rec_scif.scif_times`; the EU runs' from
      :func:`exact_speedups`), since the SCIF runs were timed in other sessions; pending without
      ``scif``.

    ``runs`` and ``scif`` may hold rows of runs without a record (``status``,
    :func:`~recunlearn.report.claims.with_pending_rows`): each claim counts those of its scope as pending."""
    timed = with_times(runs, [UnlearnConfig.experiment], records_dir)
    cell, pair = ["dataset", "model", "selection"], ("seed",)
    note = PAIR_TIMING_RULE
    eu = timed[timed["method"].isin(EU_METHODS)]
    return claims_frame([
        ordering_claim("sisa_faster_than_receraser_ultrare", "SISA is faster than RecEraser and UltraRE", timed,
                       "method", [("sisa", "receraser"), ("sisa", "ultrare")], metric, cell, higher=False,
                       pair_on=pair, note=note, max_apart=PAIR_WINDOW),
        ordering_claim("ultrare_faster_than_receraser", "UltraRE is faster than RecEraser", timed, "method",
                       [("ultrare", "receraser")], metric, cell, higher=False, pair_on=pair, note=note,
                       max_apart=PAIR_WINDOW),
        ordering_claim("eu_faster_than_retrain", "every EU method is faster than Retrain", timed, "method",
                       [(m, "retrain") for m in EU_METHODS], metric, cell, higher=False, pair_on=pair, note=note,
                       max_apart=PAIR_WINDOW),
        ordering_claim("eu_faster_on_core", "EU methods unlearn core users faster than random or edge users", eu,
                       "selection", [("core", "random"), ("core", "edge")], metric, ["dataset", "model", "method"],
                       higher=False, pair_on=pair, note=note, max_apart=PAIR_WINDOW),
        speedup_claim("scif_faster_than_eu", "SCIF is faster than every EU method (speed-up over Retrain)",
                      runs, scif, cell, records_dir),
    ])


def speedup_claim(id: str, claim: str, runs: pd.DataFrame, scif: pd.DataFrame | None, cells: list[str],
                  records_dir=None) -> dict:
    """SCIF's speed-up over Retrain above every EU method's, seed-paired within ``cells``
    (:func:`recunlearn.report.claims.ordering_claim` on ``speedup``): the EU runs' speed-ups from
    :func:`exact_speedups`, SCIF's from ``scif`` (a ``speedup`` column; None: no SCIF run, pending).
    EU runs without a Retrain timed beside them are left out and counted in the evidence; rows of runs
    still waiting (``status``) are counted as pending."""
    eu = runs[runs["method"].isin(EU_METHODS)]
    eu = eu.assign(speedup=exact_speedups(split_waiting(runs)[0], records_dir).reindex(eu.index))
    columns = cells + ["method", "seed", "speedup", STATUS]  # a part without a status is computed (split_waiting)
    frames = [eu.reindex(columns=columns)] + ([scif.assign(method="scif").reindex(columns=columns)]
                                              if scif is not None and len(scif) else [])
    return speedup_ordering(id, claim, pd.concat(frames, ignore_index=True), "speedup", cells)


def speedup_ordering(id: str, claim: str, frame: pd.DataFrame, metric: str, cells: list[str]) -> dict:
    """SCIF above every EU method in ``metric`` (a speed-up over Retrain; NaN for an EU run without a
    Retrain timed beside it), seed-paired within ``cells`` (:func:`~recunlearn.report.claims.ordering_claim`).
    EU runs without a speed-up are left out and counted; a claim left without pairs by them is
    *inconclusive*, not pending. Rows still waiting for their run (``status``, :func:`~recunlearn.report.claims.
    split_waiting`) are not left out: the claim counts them as pending."""
    done = split_waiting(frame)[0] if len(frame) else frame
    untimed = int((done["method"].isin(EU_METHODS) & done[metric].isna()).sum()) if len(done) else 0
    runs = "EU run" if untimed == 1 else "EU runs"
    note = SPEEDUP_RULE + (f" {untimed} {runs} without a Retrain recorded within 30 minutes, left out."
                           if untimed else "")
    # the untimed runs stay in the claim's scope, so it counts every run, but they pair with nothing; without a
    # run column they are not read as runs without a value (:func:`~recunlearn.report.claims.counts_waiting`)
    timed = frame.drop(columns=RUN, errors="ignore")
    row = ordering_claim(id, claim, timed, "method", [("scif", m) for m in EU_METHODS], metric, cells, note=note)
    if untimed and row["verdict"] == PENDING and (frame["method"] == "scif").any():
        row = claim_row(id, claim, INCONCLUSIVE, f"{untimed} {runs} without a Retrain timed beside them",
                        test=row["test"], evidence=note)
    return row
