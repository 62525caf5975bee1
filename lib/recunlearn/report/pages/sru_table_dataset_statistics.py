"""SRU dataset statistics (the paper's table was not available): sessions, items, interactions, session
lengths and the evaluated prefix -> next-item pairs of Games, Beauty (BERT4Rec's version) and ML-1M
(SASRec's recipe, for Steam) as this chapter builds them, and of the reduced scale its CPU runs use."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...experiments.sru import SruStatisticsParams, dataset_statistics
from ..claims import SELF_CHECK, check_claim, claims_frame
from ..names import display_name
from ..plots import degree_ccdf
from . import Page, validated

PAGE = "sru/table-dataset-statistics"
GRID = SruStatisticsParams  # the parameters of this page (its notebook's), validated before any compute
SHOWN = {"sessions": "Sessions", "items": "Items (catalogue)", "items_occurring": "Items occurring",
         "interactions": "Interactions", "mean_length": "Mean session length", "median_length": "Median length",
         "sessions_length_1": "Sessions of length 1", "maxlen": "Window", "train_sessions": "Train sessions",
         "valid_sessions": "Validation sessions", "test_sessions": "Test sessions", "train_pairs": "Training pairs",
         "valid_pairs": "Validation pairs evaluated", "test_pairs": "Test pairs evaluated",
         "test_pairs_unseen_target": "Test pairs with a target unseen in training",
         "items_not_in_train": "Items in no training session"}
DECIMALS = {"mean_length", "median_length"}
CARD_WINDOW = {"games": 20, "beauty": 10, "ml-1m": 20}
"""The evaluation card's input windows: the last 10 items for Beauty, 20 for Games and Steam (ML-1M
stands in for Steam)."""
CHECKED = ["dataset", "scale", "sessions", "items", "interactions", "train_pairs", "valid_pairs", "test_pairs"]


def statistics_view(ours: pd.DataFrame) -> pd.DataFrame:
    """The statistics as the page shows them: one column per dataset and scale, one row per statistic."""
    shown = ours.assign(column=[f"{display_name(d)}, {s}" for d, s in zip(ours["dataset"], ours["scale"])])
    shown = shown.set_index("column")[list(SHOWN)]
    text = shown.apply(lambda col: col.map(lambda v: f"{v:,.2f}" if col.name in DECIMALS else f"{int(v):,}"))
    table = text.rename(columns=SHOWN).T
    table.columns.name = None
    return table


def build(ours: pd.DataFrame | None = None, **params) -> Page:
    """The statistics page at notebook parameters ``params``: the statistics (``ours``, by default
    computed from the dataset files), the session-length distributions and the glued counts."""
    grid = validated(GRID, params)
    ours = dataset_statistics(grid) if ours is None else ours
    values = {}
    for row in ours[ours["scale"] == "all sessions"].itertuples():
        for column in ("sessions", "items", "interactions", "test_pairs"):
            values[f"{row.dataset}_{column}"] = f"{getattr(row, column):,}"
        values[f"{row.dataset}_mean_length"] = f"{row.mean_length:.2f}"

    def lengths():
        from ...experiments.sru import sru_data

        tables = {}
        for name in grid.datasets:
            sessions = sru_data(name, grid.split_seed).sessions
            tables[name] = pd.DataFrame({"session": np.repeat(sessions.ids, sessions.lengths)})
        degree_ccdf(tables, "session", "Sessions: interactions per session (all sessions)")

    return Page(PAGE, grid, claims=statistics_claims(ours), tables={"statistics": statistics_view(ours)},
                figures={"lengths": lengths}, values=values, checks=[ours[CHECKED].to_string(index=False)])


def statistics_claims(ours: pd.DataFrame) -> pd.DataFrame:
    """Exact checks of the data as built against what the chapter relies on: the card's input windows,
    and a session-level split whose parts hold every session once and whose pairs are every prefix
    (sessions of length L give L - 1 pairs)."""
    def window(group):
        return bool((group["maxlen"] == group["dataset"].map(CARD_WINDOW)).all())

    def accounted(group):
        parts = group["train_sessions"] + group["valid_sessions"] + group["test_sessions"]
        pairs = group["train_pairs"] + group["valid_pairs"] + group["test_pairs"]
        return bool(((parts == group["sessions"]) & (pairs == group["interactions"] - group["sessions"])).all())

    return claims_frame([
        check_claim("sru_input_window", "Inputs are the last 10 items on Beauty and the last 20 on Games and Steam "
                    "(here ML-1M), as the evaluation card states", ours, ["dataset"], window, kind=SELF_CHECK),
        check_claim("sru_split_whole_sessions", "Train, validation and test parts hold every session once and "
                    "every prefix -> next-item pair of each session", ours, ["dataset", "scale"], accounted,
                    kind=SELF_CHECK),
    ])
