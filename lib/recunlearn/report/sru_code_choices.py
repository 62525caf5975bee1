"""Choices of the SRU authors' code, each measured against the version the chapter uses.

Two fields of :class:`~recunlearn.experiments.sru.SruConfig` hold a choice of the authors' code as a
named variant (:class:`CodeChoice`): ``centroid="scalar"`` (the balanced k-means moves each anchor to
one number, the mean over all its members' coordinates, repeated in every dimension; ours: the
per-dimension mean) and ``truncation="suffix-code"`` (an unlearning request also deletes the item just
before the unlearning item; ours: the unlearning item and everything after it). For each, SRU is run
with the code's value on the seeds of the page's method comparison, and each run is paired with the
comparison's SRU run of the same dataset, model and seed (:func:`choice_pairs`): NDCG@10, Recall@10,
HIT@10 and the unlearning CPU seconds, their mean difference (code − ours) and a two-sided paired
test (:func:`~recunlearn.report.significance.paired_two_sided`). Times pair only runs made by the same code
(:data:`TIMES`): the library grew faster between commits without changing a result.

A third choice, the code's retraining of every shard (``retrain="all"``), needs no runs of its own where
every shard holds an unlearning session (then both retrain the same shards): :func:`retrain_text`
says from the runs whether that is the case.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd

from .. import paths
from ..experiments.sru import SruConfig, SruGrid
from .claims import paired_differences
from .significance import difference_text, format_p, paired_two_sided
from .compare import format_mean_std
from .names import format_number

CELLS = ["dataset", "model"]
MEASURES = {"ndcg@10": "NDCG@10", "recall@10": "Recall@10", "hit@10": "HIT@10",
            "unlearn_cpu_seconds": "unlearning time (CPU s)"}
"""What each comparison reads of a run, and its name in tables."""
TIMES = ("unlearn_cpu_seconds",)
"""Measures compared only between runs made by the same code (:func:`with_code_version`): the code's
speed changes between commits, its results do not (records keep their key only while a rerun would give
the same numbers)."""


@dataclasses.dataclass(frozen=True)
class CodeChoice:
    """One choice of the authors' code: config ``field`` at ``code`` against the chapter's ``ours``;
    ``grid_option`` lists the field's values in a page grid (the values every other table of the page
    reads); ``choice`` names it on the scoreboard; ``labels`` name each value in sentences, ``short`` in
    table headers."""

    field: str
    grid_option: str
    ours: str
    code: str
    choice: str
    labels: dict
    short: dict

    @property
    def section(self) -> str:
        return f"code_{self.field}"


CENTROID = CodeChoice(
    "centroid", "centroids", "mean", "scalar",
    "SRU's balanced k-means moves each anchor to one number repeated in every dimension (the mean over all "
    "coordinates of its members) instead of the per-dimension mean",
    {"mean": "per-dimension mean anchors", "scalar": "scalar anchors (the authors' code)"},
    {"mean": "per-dimension means", "scalar": "scalar means"})
TRUNCATION = CodeChoice(
    "truncation", "truncations", "suffix", "suffix-code",
    "An unlearning request also deletes the item just before the unlearning item, besides the item and "
    "everything after it",
    {"suffix": "the unlearning item and its suffix deleted",
     "suffix-code": "the item before it deleted too (the authors' code)"},
    {"suffix": "item and suffix", "suffix-code": "also the item before"})
CODE_CHOICES = {choice.field: choice for choice in (CENTROID, TRUNCATION)}
"""Every measured choice, by config field, in the order pages show them."""


def code_choice_runs(grid, fields) -> list[SruConfig]:
    """The runs a page adds for the choices ``fields``: the grid's own expansion (:class:`SruGrid`) of
    SRU on its own partition, without extra deletion, with each choice's code value in place of ours."""
    from .grids import as_base

    return [config for field in fields
            for config in SruGrid.runs(as_base(grid, SruGrid, methods=("sru",), partitions=("own",),
                                               extra_deletions=("none",), n_extras=(0,),
                                               **{CODE_CHOICES[field].grid_option: (CODE_CHOICES[field].code,)}))]


def without_code_choices(runs: pd.DataFrame, grid) -> pd.DataFrame:
    """The rows of ``runs`` (runs or configs) whose every choice field takes a value the grid lists:
    the code-choice runs a page adds for its comparisons left out."""
    keep = pd.Series(True, index=runs.index)
    for choice in CODE_CHOICES.values():
        if choice.field in runs and len(runs):
            keep &= runs[choice.field].isin(getattr(grid, choice.grid_option))
    return runs[keep]


def choice_part(runs: pd.DataFrame, choice: CodeChoice, n_shards: int) -> pd.DataFrame:
    """The SRU runs of ``choice``'s comparison (either value; the other choice fields at ours): SRU's
    runs of the method comparison (:func:`~recunlearn.report.sru.main_runs`) and their code-choice twins."""
    from .sru import main_runs  # not at the top: that module builds its grids from this one

    part = main_runs(runs, n_shards)
    part = part[part["method"] == "sru"] if len(part) else part
    for other in CODE_CHOICES.values():
        if other is not choice and other.field in part:
            part = part[part[other.field] == other.ours]
    return part[part[choice.field].isin([choice.ours, choice.code])] if choice.field in part else part.iloc[:0]


def with_code_version(runs: pd.DataFrame, records_dir: Path | None = None) -> pd.DataFrame:
    """``runs`` with a ``code_version`` column: the source fingerprint of the library that made each run
    (its ``source_fingerprint`` column, else read from its record, ``record`` being the key, in
    ``records_dir``, default the committed records); a run of unknown code gets a version of its own."""
    if "source_fingerprint" in runs:
        known = runs["source_fingerprint"]
    else:
        root = Path(records_dir or paths.committed_records_dir()) / SruConfig.experiment
        known = pd.Series([_fingerprint(root / f"{key}.json") for key in runs.get("record", [None] * len(runs))],
                          index=runs.index, dtype=object)
    unknown = pd.Series([f"unknown run {i}" for i in range(len(runs))], index=runs.index)
    return runs.assign(code_version=known.where(known.notna(), unknown))


def _fingerprint(path: Path) -> str | None:
    try:
        return json.loads(path.read_text()).get("source_fingerprint")
    except (OSError, ValueError):
        return None


def choice_pairs(runs: pd.DataFrame, choice: CodeChoice, n_shards: int, measure: str) -> pd.DataFrame:
    """``dataset, model, seed, diff``: ``measure`` with the code's value minus with ours, per seed-paired
    run; a time (:data:`TIMES`) only where both runs were made by the same code (``code_version``)."""
    part = choice_part(runs, choice, n_shards)
    if measure in TIMES:
        return paired_differences(with_code_version(part), choice.field, choice.code, choice.ours, measure, CELLS,
                                  pair_on=("seed", "code_version"))
    return paired_differences(part, choice.field, choice.code, choice.ours, measure, CELLS)


def _paired(runs: pd.DataFrame, choice: CodeChoice, n_shards: int, measure: str) -> dict | None:
    """``measure`` over the seed-paired runs of ``choice`` (:func:`choice_pairs`): each value's runs
    (``ours``, ``code``), the differences (``diff``), the two-sided p and the test (NaN and "none (1
    pair)" for a single pair); None without a pair."""
    diff = choice_pairs(runs, choice, n_shards, measure)
    if diff.empty:
        return None
    part = choice_part(runs, choice, n_shards).set_index(CELLS + ["seed"])
    keys = pd.MultiIndex.from_frame(diff[CELLS + ["seed"]])
    d = diff["diff"].astype(float)
    p, test = paired_two_sided(d)
    return {"ours": part[part[choice.field] == choice.ours][measure].reindex(keys).astype(float),
            "code": part[part[choice.field] == choice.code][measure].reindex(keys).astype(float), "diff": d,
            "p": p, "test": test}


def choice_table(runs: pd.DataFrame, choice: CodeChoice, n_shards: int) -> pd.DataFrame:
    """Per measure (:data:`MEASURES`): mean ± std over the paired seeds with ours and with the code's
    value (columns ``ours: ...`` and ``code: ...``), the mean difference (code − ours), the pairs (how many
    the code's value raised and lowered) and the two-sided paired test's p."""
    rows, compared = [], len(choice_pairs(runs, choice, n_shards, "ndcg@10"))
    for measure, name in MEASURES.items():
        paired = _paired(runs, choice, n_shards, measure)
        if paired is None:
            if measure in TIMES and compared:
                rows.append({"measure": name, "pairs (code higher / lower)":
                             f"0 of {compared}: no pair made by the same code"})
            continue
        d, digits = paired["diff"], 1 if measure in TIMES else 4
        rows.append({"measure": name,
                     **{f"{who}: {choice.short[v]}": format_mean_std(paired[who].mean(), paired[who].std(), n=len(d),
                                                                     digits=digits)
                        for who, v in (("ours", choice.ours), ("code", choice.code))},
                     "code − ours (mean)": format_number(d.mean(), digits, signed=True),
                     "pairs (code higher / lower)": f"{len(d)} ({int((d > 0).sum())} / {int((d < 0).sum())})",
                     "p (two-sided)": "—" if pd.isna(paired["p"]) else format_p(paired["p"]),
                     "test used": paired["test"]})
    return pd.DataFrame(rows).set_index("measure").fillna("—") if rows else pd.DataFrame()


def choice_text(runs: pd.DataFrame, choice: CodeChoice, n_shards: int, alpha: float = 0.05) -> str:
    """What the comparison found, in one sentence: the means of NDCG@10 and HIT@10 each way over the
    seed-paired runs and the two-sided paired test of each; ``pending`` without a paired run."""
    parts = []
    for measure in ("ndcg@10", "hit@10"):
        paired = _paired(runs, choice, n_shards, measure)
        if paired is None:
            return f"pending (no seed-paired runs with {choice.labels[choice.code]} yet)"
        n = len(paired["diff"])
        parts.append(f"{MEASURES[measure]} is {paired['code'].mean():.4f} against {paired['ours'].mean():.4f} "
                     f"({n} seed pair{'' if n == 1 else 's'}, {difference_text(paired['p'], paired['test'], alpha)})")
    return f"with {choice.labels[choice.code]}, " + "; ".join(parts)


def retrain_text(runs: pd.DataFrame) -> str:
    """Whether the code's retraining of every shard differs from retraining the affected ones in these
    runs: how many of the sharded runs retrained every shard."""
    sharded = runs[runs["method"] != "retrain"] if len(runs) else runs
    if sharded.empty or "n_retrained_shards" not in sharded:
        return "pending (no sharded run yet)"
    every = int((sharded["n_retrained_shards"] == sharded["n_shards"]).sum())
    if every == len(sharded):
        return (f"every shard held an unlearning session in all {len(sharded)} sharded runs, so retraining the "
                "affected shards retrained them all: the authors' retrain-everything would have retrained the "
                "same shards, and needs no runs of its own here")
    return (f"{every} of {len(sharded)} sharded runs retrained every shard; in the others the authors' "
            "retrain-everything would retrain more shards than the affected ones (no runs of it here)")


def code_choice_values(runs: pd.DataFrame, grid, fields) -> tuple[dict, list[dict]]:
    """The glued sentences of a page's choices ``fields`` (``code_<field>_effect``, and
    ``code_retrain_effect``) and the scoreboard's entries (section, choice, used, finding)."""
    values, published = {}, []
    for field in fields:
        choice = CODE_CHOICES[field]
        values[f"{choice.section}_effect"] = choice_text(runs, choice, grid.n_shards)
        published.append({"section": choice.section, "choice": choice.choice, "used": choice.labels[choice.ours],
                          "finding": values[f"{choice.section}_effect"]})
    values["code_retrain_effect"] = retrain_text(without_code_choices(runs, grid))
    return values, published
