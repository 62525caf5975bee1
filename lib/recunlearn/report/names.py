"""How code names are written for a reader, and the order the papers list them in.

One mapping (:data:`DISPLAY_NAMES`) and one ordering (:data:`PAPER_ORDER`) for every table, figure and
sentence of the book; :func:`display_frame` applies both to a frame for display, and
:func:`format_number` writes a number without ``NaN`` or ``-0.0000``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

DISPLAY_NAMES = {
    # datasets
    "ml-100k": "ML-100K", "ml-1m": "ML-1M", "adm": "ADM", "wikipedia": "Wikipedia", "reddit": "Reddit",
    "foursquare": "Foursquare", "lastfm": "LastFM-10%", "games": "Games", "beauty": "Beauty (BERT4Rec version)",
    # models
    "wmf": "WMF", "bpr": "BPR", "lightgcn": "LightGCN", "lstm": "LSTM", "tisasrec": "TiSASRec", "jodie": "JODIE",
    "latentcross": "LatentCross",
    # methods, CASPER selectors and perturbations
    "learn": "Learn", "retrain": "Retrain", "sisa": "SISA", "receraser": "RecEraser", "ultrare": "UltraRE",
    "scif": "SCIF", "none": "control", "random": "Random", "earliest": "Earliest-Random", "latest": "Latest-Random",
    "casper": "CASPER", "tracin": "TracIn", "tracin-proxy": "TracIn (authors' proxy)",
    "revadv-random": "Rev.Adv. (random)", "revadv-earliest": "Rev.Adv. (earliest)", "loo": "LOO", "replace": "replacement", "insert": "insertion",
    # SRU
    "gru4rec": "GRU4Rec", "sasrec": "SASRec", "bert4rec": "BERT4Rec", "sru": "SRU", "ced": "CED", "ned": "NED",
    "red": "RED", "extra_deletion": "Extra deletion", "n_extra": "Extra deleted items", "hit@10": "HIT@10",
    "ndcg@10": "NDCG@10", "recall@10": "Recall@10", "ndcg@20": "NDCG@20 (sessions)", "recall@20": "Recall@20",
    "hit_before_retraining@10": "HIT@10 before retraining", "unlearn_all_retrained_seconds": "all retraining (s, wall)",
    "hit@1": "HIT@1", "hit@5": "HIT@5", "hit@20": "HIT@20", "similarity": "Similarity", "partition": "Partition",
    "aggregation": "Aggregation", "n_retrained_shards": "shards retrained",
    "share_of_full_training": "unlearning / full training (CPU)", "unlearn_cpu_seconds": "unlearning (CPU s)",
    # bystander controls (the book's own chapter)
    "unlearn": "the method's unlearning", "reinit-only": "re-initialisation only", "random-rows": "as many random rows",
    "control": "After", "n_bystanders": "Bystanders", "share_identical_top_k": "identical top 10",
    "ndcg_untruncated_before": "NDCG@20 before", "ndcg_untruncated_after": "NDCG@20 after",
    "state": "Model served", "unlearned": "Unlearned", "ao_shard": "AO, retrained shard",
    "jaccard_shard": "Jaccard@10, retrained shard", "disturbance": "1 − AO", "cascade_share": "deletion cascade",
    "removed_rows": "rows removed", "selection_seed": "set seed", "mio_auc": "MIO AUC",
    "learn_mio_auc": "Learn's MIO AUC",
    # CURE4Rec selections of the users to forget
    "core": "Core", "edge": "Edge",
    # metrics
    "ndcg_untruncated": "NDCG@20", "hr_cure4rec": "HR@20", "mio_accuracy": "MIO accuracy", "a_igf": "A-IGF",
    "a_igf_gap": "A-IGF − Retrain's", "a_igf_gap_abs": "|A-IGF − Retrain's|", "shard_gf": "shardGF",
    "unlearn_seconds": "unlearning time (s)", "speedup": "speed-up over Retrain",
    "scif_per_learn": "SCIF time ÷ its Learn training time",
    "retrain_seconds": "its Retrain (s)", "top_shard_share": "top shard's share of active users",
    "cv": "CV of active users per shard", "ao": "AO (paper's \"RBO\")", "rbo_min": "RBO(0.9)",
    "rbo_ext": "RBO_ext(0.9)", "jaccard": "Jaccard@10", "mrr_original": "MRR of M", "mrr_perturbed": "MRR of M'",
    # column names
    "dataset": "Dataset", "model": "Model", "method": "Method", "selection": "Selection", "selector": "Selection",
    "perturbation": "Perturbation", "replacement": "Replacement", "validation": "Validation", "ratio": "Unlearning ratio (% of users)",
    "n_shards": "Shards", "shard": "Shard", "k": "Perturbed interactions k", "metric": "Metric", "seed": "Seed",
    "epoch": "Epoch", "source": "Source", "verdict": "Verdict",
    # CURE4Rec: the standard metrics beside the code's variants, validation rules, costs and times
    "ndcg": "NDCG@20 (standard)", "hit_ratio": "Hit ratio@20", "recall": "Recall@20", "mrr": "MRR@20",
    "a_igf_standard": "A-IGF (standard NDCG)", "shard_gf_standard": "shardGF (standard NDCG)",
    "mio_train_accuracy": "MIO training accuracy", "cg_iterations": "CG iterations",
    "scif_minus_retrain": "SCIF − Retrain", "split_test": "half of test", "test": "test (authors' code)",
    "epochs_run": "epochs run", "best_epoch": "best epoch", "train_seconds": "training time (s)",
    "validation_seconds": "validation time (s)", "unlearn_sum_seconds": "all affected shards, summed (s)",
    "unlearn_seconds_parallel": "unlearning time, shards in parallel (s)",
    "unlearn_seconds_together": "unlearning time, shards together (s)",
    "partition_seconds": "partition time (s)", "unlearn_plus_partition_seconds": "unlearning + partition (s)",
    "scif_cg_seconds": "SCIF's CG solve (s)", "paper_seconds": "paper's time (s)",
    "paper_vs_retrain": "paper: time / Retrain's", "ours_vs_retrain": "ours: time / Retrain's",
    # comparisons with the paper
    "ours_std": "ours, std", "n": "runs", "delta": "ours − paper", "tol": "tolerance",
    "within_tol": "within tolerance",
    # CASPER: costs, groups and the label-renumbering floor
    "jaccard_high": "Jaccard@10, high-MRR users", "jaccard_mid": "Jaccard@10, mid-MRR users",
    "jaccard_low": "Jaccard@10, low-MRR users", "recall10_original": "Recall@10 of M",
    "recall10_perturbed": "Recall@10 of M'", "renumbered_items": "items renumbered", "ao_floor": "AO floor",
    "lowest": "lowest AO", "casper_lowest": "CASPER lowest", "n_methods": "methods compared",
    "raw_rows": "raw rows", "train_rows": "training rows", "max_score": "largest cascade score",
    "build_seconds": "graph build (s)", "score_seconds": "cascade scores (s)", "select_seconds": "selection (s)",
    "total_seconds": "total (s)",
    # quantities that claims test
    "abs_a_igf": "|A-IGF|", "mrr_change": "MRR of M' − MRR of M", "ndcg_drop": "NDCG@20 lost from Learn's",
    "sru_share_of_retrain": "SRU's NDCG@10 as a share of Retrain's",
    "served": "Model and users", "group": "Group",
}
DISPLAY_NAMES.update({f"EU {m}": f"EU {DISPLAY_NAMES[m]}" for m in ("retrain", "sisa", "receraser", "ultrare")})
"""Code name -> the name a reader sees (LastFM is only its first 10 %, and always labelled so); the
exact methods' MIO columns (``EU sisa``) read ``EU SISA``."""

PAPER_ORDER = {
    "dataset": ("ml-100k", "ml-1m", "adm", "wikipedia", "reddit", "foursquare", "lastfm", "games", "beauty"),
    "model": ("wmf", "bpr", "lightgcn", "lstm", "tisasrec", "jodie", "latentcross", "gru4rec", "sasrec", "bert4rec"),
    "method": ("learn", "retrain", "sisa", "receraser", "ultrare", "scif", "sru"),
    "selection": ("core", "random", "edge"),
    "selector": ("none", "random", "earliest", "latest", "tracin", "tracin-proxy", "revadv-random", "revadv-earliest",
                 "casper"),
    "perturbation": ("loo", "replace", "insert"),
    "replacement": ("random", "popular", "unpopular"),
    "control": ("unlearn", "reinit-only", "random-rows"),
    "state": ("learn", "unlearned"),
}
"""The order the papers list the values of a key in; values not listed come after, in their own order."""

MISSING_TEXT = "—"


def display_name(name) -> str:
    """``"lightgcn"`` -> ``"LightGCN"``, ``"ndcg_untruncated"`` -> ``"NDCG@20"``; unknown names unchanged."""
    return DISPLAY_NAMES.get(str(name), str(name))


def display_names(values) -> list[str]:
    return [display_name(v) for v in values]


def by_dataset(values: pd.Series, spec: str = ".2f", notes: dict | None = None) -> str:
    """``values`` (indexed by dataset) as ``"0.10 on ML-100K, 0.12 on ML-1M"`` in the paper's dataset
    order, each written with the format ``spec`` (``".3f"``, ``"+.3f"``, ``".1%"``) and followed by its
    dataset's note in ``notes``, if any (``"0.40 on ADM (RecEraser only)"``); ``pending`` when there is
    none. A number per dataset, never one mean over several."""
    values, notes = values.dropna(), notes or {}
    if values.empty:
        return "pending"
    return ", ".join(f"{values[d]:{spec}} on {display_name(d)}" + (f" ({notes[d]})" if notes.get(d) else "")
                     for d in paper_sorted("dataset", values.index))


def paper_rank(key: str, value) -> tuple[int, int]:
    """Sort key of ``value`` of column ``key`` in the paper's order (unknown values last)."""
    order = PAPER_ORDER.get(key, ())
    value = str(value)
    return (0, order.index(value)) if value in order else (1, 0)


def paper_sorted(key: str, values) -> list:
    """Distinct ``values`` of column ``key`` in the paper's order (unknown ones last, as first met)."""
    distinct = list(dict.fromkeys(values))
    return sorted(distinct, key=lambda v: paper_rank(key, v))


def sort_paper_order(frame: pd.DataFrame, keys: list[str] | None = None) -> pd.DataFrame:
    """Rows of ``frame`` sorted by ``keys`` (columns or index levels; default: the index levels, else
    every column of :data:`PAPER_ORDER`), each in the paper's order; a stable sort otherwise."""
    if keys is None:
        names = [n for n in frame.index.names if n is not None]
        keys = names or [c for c in frame.columns if c in PAPER_ORDER]
    keys = [k for k in keys if k in frame.columns or k in frame.index.names]
    if not keys or frame.empty:
        return frame

    def rank(values: pd.Index) -> pd.Index:
        seen = list(dict.fromkeys(values))
        return pd.Index([(paper_rank(values.name, v), seen.index(v)) for v in values])

    def level_rank(level: pd.Index) -> pd.Index:
        ranks = rank(level)
        ordered = sorted(set(ranks))
        return pd.Index([ordered.index(r) for r in ranks], name=level.name)

    return frame.sort_values(keys, key=level_rank, kind="stable") if all(k in frame.columns for k in keys) \
        else frame.sort_index(level=keys, key=level_rank, sort_remaining=False, kind="stable")


def span_text(values, decimals: int, empty: str = "pending") -> str:
    """``"0.491-0.518"``: the smallest and largest of ``values`` (missing ones ignored) at ``decimals``
    decimals; ``empty`` when there is none."""
    values = pd.Series(values, dtype=float).dropna()
    return f"{values.min():.{decimals}f}-{values.max():.{decimals}f}" if len(values) else empty


def clean_zero(value: float) -> float:
    """``-0.0`` -> ``0.0`` (and any value that rounds to zero at ``digits`` stays unsigned when printed)."""
    return 0.0 if value == 0 else value


def format_number(value, digits: int = 4, missing: str = MISSING_TEXT, signed: bool = False) -> str:
    """``0.3215`` -> ``"0.3215"``; ``NaN`` / ``None`` -> ``missing``; never ``"-0.0000"``. With
    ``signed``, a leading ``+`` on positive values (differences)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value):
        return missing
    value = float(value)
    text = f"{value:{'+' if signed else ''}.{digits}f}"
    if float(text) == 0:  # -0.0000 or +0.0000: no sign on a zero
        text = f"{0.0:.{digits}f}"
    return text


def display_frame(frame: pd.DataFrame, index: list[str] | None = None, digits: int | None = None,
                  missing: str = MISSING_TEXT) -> pd.DataFrame:
    """A frame for display: rows in the paper's order, ``index`` columns as the (named) row index
    instead of a row number, code names replaced by display names in headers and key values, numbers
    written with ``digits`` decimals (when given) without ``NaN`` or ``-0.0000``."""
    out = frame.copy()
    if index:
        out = sort_paper_order(out, index).set_index(index)
    else:
        out = sort_paper_order(out)
    for column in out.columns:
        if out[column].dtype == object:  # built as objects: map() would turn counts beside a None into floats
            out[column] = pd.Series([display_name(v) if isinstance(v, str) else v for v in out[column]],
                                    index=out.index, dtype=object)
        elif digits is not None and pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].map(lambda v: format_number(v, digits, missing))
        elif pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].map(lambda v: v if pd.isna(v) else clean_zero(v))
    if out.index.nlevels > 1:
        out.index = pd.MultiIndex.from_tuples([tuple(display_name(v) for v in t) for t in out.index],
                                              names=display_names(out.index.names))
    elif out.index.name is not None:
        out.index = pd.Index(display_names(out.index), name=display_name(out.index.name))
    out.columns = _display_columns(out.columns)
    return out.fillna(missing)


_SHOWN = frozenset(DISPLAY_NAMES.values())


def _label(value):
    """A code name as a reader reads it; other values (numbers, names already written for a reader,
    e.g. "control") unchanged, so labelling twice changes nothing."""
    return DISPLAY_NAMES.get(value, value) if isinstance(value, str) and value not in _SHOWN else value


def _labelled_index(index: pd.Index) -> pd.Index:
    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(_label(v) for v in t) for t in index],
                                         names=[_label(n) for n in index.names])
    return pd.Index([_label(v) for v in index], name=_label(index.name))


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the code names in its row and column labels and in its text columns written as a
    reader reads them (a missing text as ``—``), rows in the paper's order (by the index levels);
    numbers untouched. Idempotent."""
    out = (sort_paper_order(frame) if any(n is not None for n in frame.index.names) else frame).copy()
    for i, dtype in enumerate(out.dtypes):
        if dtype == object or pd.api.types.is_string_dtype(dtype):
            out.isetitem(i, out.iloc[:, i].map(_label).fillna(MISSING_TEXT))
    out.index, out.columns = _labelled_index(out.index), _labelled_index(out.columns)
    return out


WIDE_TABLE_CHARACTERS = 70
"""A table whose text is wider than this (:func:`text_width`) is marked ``wide``: the book's style
sheet lays its cell over the page's margin too (the text column holds about 70 characters of a table)."""


class BookTable(pd.DataFrame):
    """A labelled frame as a page shows it in HTML: every row (never pandas' ``...`` in the middle of a
    table), a missing number as ``—``, whole-number columns (counts, seeds, sizes) without decimals and
    with thousands separators, measured numbers to a column's precision (:func:`measured_formatters`),
    no row numbers where the index is only that, a value's line break as a line break, and the class
    ``wide`` on a table wider than :data:`WIDE_TABLE_CHARACTERS`. Otherwise a plain DataFrame."""

    @property
    def _constructor(self):
        return BookTable

    def _repr_html_(self) -> str:
        formatters = {**measured_formatters(self), **yes_no_formatters(self)}
        index = not only_row_numbers(self.index)
        wide = text_width(self, formatters, index) > WIDE_TABLE_CHARACTERS
        html = self.to_html(na_rep=MISSING_TEXT, notebook=True, max_rows=None, max_cols=None,
                            formatters=formatters, index=index, classes=["wide"] if wide else None)
        return html.replace("\\n", "<br>")  # pandas writes a value's line break as the two characters \n


def text_width(frame: pd.DataFrame, formatters: dict | None = None, index: bool = True) -> int:
    """Rough width of ``frame`` as a table, in characters: each index level and column as wide as its
    longest line of a label or value (values through ``formatters`` where given), two characters of
    padding each."""
    formatters = formatters or {}

    def widest(labels, values) -> int:
        lines = [line for text in [*labels, *values] for line in str(text).split("\n")]
        return max([len(line) for line in lines] + [0])

    width = 0
    if index:
        for level, name in enumerate(frame.index.names):
            width += widest([name or ""], frame.index.get_level_values(level)) + 2
    for position, column in enumerate(frame.columns):
        values = frame.iloc[:, position]
        shown = map(formatters[column], values) if column in formatters else values
        width += widest(column if isinstance(column, tuple) else [column], shown) + 2
    return width


def yes_no_formatters(frame: pd.DataFrame) -> dict:
    """A formatter for each boolean column of ``frame``: ``yes`` / ``no`` (a reader's words, not
    Python's ``True`` / ``False``), ``—`` when missing."""
    def text(value) -> str:
        return MISSING_TEXT if pd.isna(value) else "yes" if value else "no"

    return {column: text for position, column in enumerate(frame.columns)
            if pd.api.types.is_bool_dtype(frame.iloc[:, position])}


def measured_formatters(frame: pd.DataFrame) -> dict:
    """A formatter for each float column of ``frame`` that is not a whole-number column: decimals by
    the column's largest value -- 4 up to 1 (scores: ``0.7866``), 2 up to 100 (``16.06``), 1 above
    (``3,880.3``), fewer where the column is already rounded to fewer (``0.09``, not ``0.0900``) --
    and 2 significant digits for a nonzero value those decimals would show as zero (``8.5e-04``,
    never ``0.0000``); ``—`` when missing."""
    whole = whole_number_formatters(frame)
    out = {}
    for position, column in enumerate(frame.columns):
        values = frame.iloc[:, position]
        if column in whole or not pd.api.types.is_float_dtype(values):
            continue
        largest = values.abs().max()
        decimals = 4 if not largest > 1 else 2 if largest < 100 else 1
        present = values.dropna().to_numpy(dtype=float)
        decimals = next((d for d in range(decimals) if np.allclose(present, np.round(present, d), rtol=0, atol=1e-12)),
                        decimals)  # a column rounded to 2 decimals keeps 2, not 0.0900

        def text(value, decimals=decimals) -> str:
            if pd.isna(value):
                return MISSING_TEXT
            if value != 0 and abs(value) < 0.5 * 10 ** -decimals:
                return f"{value:.1e}"
            return f"{value:,.{decimals}f}"
        out[column] = text
    return {**out, **whole}


def only_row_numbers(index: pd.Index) -> bool:
    """Whether ``index`` carries nothing but row positions: unnamed, one level, and the integers
    0 … n−1 in any order (a default index, perhaps reordered by sorting the rows)."""
    if index.nlevels != 1 or index.name is not None or not pd.api.types.is_integer_dtype(index):
        return False
    return bool((np.sort(index.to_numpy()) == np.arange(len(index))).all())


def whole_number_formatters(frame: pd.DataFrame) -> dict:
    """A formatter (``99287.0`` -> ``"99,287"``, a missing value -> ``—``) for each numeric column of
    ``frame`` whose values are all whole numbers and not all within [-1, 1] (those are shares and
    scores, e.g. an AO of exactly 1.0, and keep their decimals); booleans excluded."""
    def whole(value) -> str:
        return MISSING_TEXT if pd.isna(value) else f"{value:,.0f}"

    out = {}
    for position, column in enumerate(frame.columns):
        values = frame.iloc[:, position]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        present = values.dropna().astype(float)
        if len(present) and (present == present.round()).all() and present.abs().max() > 1:
            out[column] = whole
    return out


def _display_columns(columns: pd.Index) -> pd.Index:
    if isinstance(columns, pd.MultiIndex):
        return pd.MultiIndex.from_tuples([tuple(display_name(v) for v in t) for t in columns],
                                         names=columns.names)
    return pd.Index(display_names(columns), name=columns.name)
