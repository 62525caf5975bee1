"""The SRU chapter's page: the abstract's four claims judged on our runs.

No table or number of the SRU paper was available, so nothing is compared with a paper value; the
claims are those of its abstract, each a test on seed-level runs:

- ``sru_deleted_item_inferable``: after plain deletion (the model trained before the request,
  queried with what remains of the session) the deleted item ranks in the top 10 of 501 candidates
  far more often than a random ranking would (HIT@10 above 10 / 501);
- ``sru_accuracy_above_baselines``: SRU's NDCG@10 is above SISA's (random shards, averaged
  probabilities) and RecEraser-style aggregation's (the same shards, attention without centroids);
- ``sru_accuracy_near_retrain``: SRU keeps at least 90 % of Retrain's NDCG@10;
- ``sru_unlearns_faster``: SRU's unlearning time (one retrained shard + the aggregator) is below a
  full retrain's (times compared only between runs recorded at most 30 minutes apart);
- ``sru_extra_deletion_lowers_hit``: for CED, NED and RED, HIT@10 falls as more items are deleted.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from .claims import PAIR_WINDOW, band_claim, claims_frame, ordering_claim, record_times, trend_claim
from .names import display_frame, sort_paper_order

CELLS = ["dataset", "model"]
HIT_RANDOM = {k: k / 501 for k in (1, 5, 10, 20)}
"""HIT@K of a random ranking of the unlearning item and its 500 negatives."""
ACCURACY = ["recall@10", "ndcg@10", "recall@20", "ndcg@20"]
FORGETTING = ["hit@10", "hit_before_retraining@10"]
TIME = ["unlearn_seconds", "unlearn_all_retrained_seconds"]


def sru_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds per dataset, model and method (no extra deletion)."""
    main = runs[runs["extra_deletion"] == "none"] if len(runs) else runs
    if main.empty:
        return pd.DataFrame()
    keys = ["dataset", "model", "method"]
    columns = [c for c in ACCURACY + FORGETTING + TIME if c in main]
    grouped = main.groupby(keys)[columns]
    table = grouped.mean().round(4).astype(str) + " ± " + grouped.std().fillna(0).round(4).astype(str)
    table.insert(0, "seeds", grouped.size())
    return display_frame(sort_paper_order(table.reset_index(), keys), index=keys)


def extra_deletion_points(runs: pd.DataFrame) -> pd.DataFrame:
    """SRU's runs by extra-deletion strategy and number of items ``n``; the run without extra deletion
    is each strategy's point at n = 0."""
    sru = runs[runs["method"] == "sru"] if len(runs) else runs
    if sru.empty:
        return sru
    base = sru[sru["extra_deletion"] == "none"]
    ways = sorted(set(sru["extra_deletion"]) - {"none"})
    parts = [sru[sru["extra_deletion"] != "none"]] + [base.assign(extra_deletion=w, n_extra=0) for w in ways]
    return pd.concat(parts, ignore_index=True)


def sru_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The claims of the module docstring, on seed-level runs."""
    needed = CELLS + ["seed", "method", "extra_deletion", "n_extra", "ndcg@10", "hit@10", "hit_before_retraining@10",
                      "unlearn_seconds"]
    runs = runs.reindex(columns=list(dict.fromkeys([*runs.columns, *needed])))  # no record yet: empty columns
    main = runs[runs["extra_deletion"] == "none"]
    ratio = pd.DataFrame()
    if len(main) and {"sru", "retrain"} <= set(main["method"]):
        table = main.pivot_table(index=CELLS + ["seed"], columns="method", values="ndcg@10")
        ratio = (table["sru"] / table["retrain"]).rename("sru_share_of_retrain").dropna().reset_index()
    before = main.drop_duplicates(CELLS + ["seed"])
    return claims_frame([
        band_claim("sru_deleted_item_inferable",
                   "After plain deletion the deleted item can still be inferred: HIT@10 above a random ranking's "
                   "10/501", before, "hit_before_retraining@10", CELLS, low=HIT_RANDOM[10]),
        ordering_claim("sru_accuracy_above_baselines",
                       "SRU recommends more accurately (NDCG@10) than SISA and than RecEraser-style aggregation",
                       main, "method", [("sru", "sisa"), ("sru", "receraser")], "ndcg@10", CELLS),
        band_claim("sru_accuracy_near_retrain", "SRU keeps at least 90 % of Retrain's NDCG@10",
                   ratio, "sru_share_of_retrain", CELLS, low=0.9) if len(ratio) else
        band_claim("sru_accuracy_near_retrain", "SRU keeps at least 90 % of Retrain's NDCG@10",
                   pd.DataFrame(columns=CELLS + ["sru_share_of_retrain"]), "sru_share_of_retrain", CELLS, low=0.9),
        ordering_claim("sru_unlearns_faster",
                       "SRU unlearns faster (one shard + the aggregator) than a full retrain", main, "method",
                       [("sru", "retrain")], "unlearn_seconds", CELLS, higher=False, max_apart=PAIR_WINDOW),
        trend_claim("sru_extra_deletion_lowers_hit",
                    "Extra deletion (CED, NED, RED) lowers HIT@10 as more items are deleted",
                    extra_deletion_points(runs), "n_extra", "hit@10", -1, CELLS + ["extra_deletion"]),
    ])


def grids(grid):
    """The page's two grids: every method without extra deletion, and SRU with each extra deletion
    (None when the page asks for none)."""
    from ..experiments.sru import SruGrid

    plain = SruGrid(**{f.name: getattr(grid, f.name) for f in dataclasses.fields(SruGrid)})
    main = dataclasses.replace(plain, extra_deletions=("none",), n_extras=(0,))
    ways = tuple(w for w in grid.extra_deletions if w != "none")
    counts = tuple(n for n in grid.n_extras if n > 0)
    extra = dataclasses.replace(plain, methods=("sru",), extra_deletions=ways, n_extras=counts) \
        if ways and counts else None
    return main, extra


def page_grid_class():
    """The page's grid: :class:`~recunlearn.experiments.sru.SruGrid`'s parameters, whose runs are
    those of :func:`grids` (so a page's run counts are the runs it reads)."""
    from ..experiments.sru import SruGrid

    @dataclasses.dataclass(frozen=True)
    class SruPageGrid(SruGrid):
        def runs(self):
            main, extra = grids(self)
            listed = SruGrid.runs(main) + (SruGrid.runs(extra) if extra else [])
            return list(dict.fromkeys(listed))  # a run listed by both grids once

    return SruPageGrid


@dataclasses.dataclass
class SruPage:
    """What the page shows: runs, the table, the claims; ``figure()`` and ``publish()``."""

    grid: object
    runs: pd.DataFrame
    table: pd.DataFrame
    claims: pd.DataFrame

    @property
    def pending_notice(self) -> str | None:
        """One sentence when nothing is computed yet, else None."""
        if len(self.runs):
            return None
        n = len(self.grid.runs())
        return (f"Pending: none of the {n} runs of this page has a record yet. They are in the compute plan "
                "(`python -m recunlearn compute --only sru-reduced-scale`).")

    def show(self):
        """The table, or the pending notice as one Markdown admonition."""
        from IPython.display import Markdown

        if self.pending_notice:
            return Markdown(f":::{{note}}\n{self.pending_notice}\n:::")
        return self.table

    def figure(self):
        """HIT@10 against the number of extra deleted items per strategy, one panel per model (None when
        there is nothing to draw)."""
        points = extra_deletion_points(self.runs)
        if self.pending_notice or points.empty or points["n_extra"].nunique() < 2:
            return None
        from .plots import sweep_lines

        return sweep_lines(points.assign(**{"hit@10": points["hit@10"]}), "n_extra", ["hit@10"], "extra_deletion",
                           "SRU: HIT@10 of the unlearned items against the number of extra deleted items")

    def show_claims(self):
        from .claims import show_claims

        return show_claims(self.claims)

    def publish(self) -> None:
        from .claims import glue_page

        glue_page(self.claims, None, grid=self.grid, runs=self.runs)


def build(namespace) -> SruPage:
    """Validate the notebook's parameters (UPPER_SNAKE names of ``namespace``), collect the runs of
    both grids (computing missing ones unless ``COMPUTE_MISSING`` is false), judge the claims."""
    from ..experiments.sru import collect_sru

    grid = page_grid_class().from_params(namespace)
    main, extra = grids(grid)
    parts = [collect_sru(main)] + ([collect_sru(extra)] if extra else [])
    pending = [p for part in parts for p in part.attrs.get("pending", [])]
    runs = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else parts[0]
    if len(runs):
        runs = runs.drop_duplicates("record")
        runs = runs.assign(created=record_times(runs, ["sru-unlearning"]))  # times pair only when recorded together
    runs.attrs["pending"] = pending
    return SruPage(grid, runs, sru_table(runs), sru_claims(runs))
