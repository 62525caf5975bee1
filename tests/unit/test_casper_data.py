"""CASPER data: registry entries, the stream recipe (users >= 10, last 10 % test, stable time sort)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recunlearn.data import registry
from recunlearn.data.parsers import parse_casper_tsv
from recunlearn.data.sequences import CASPER_DATASETS, load_stream, split_last_fraction

EXPECTED = {  # spec §2, verified: (users, items, interactions) after the users >= 10 filter
    "wikipedia": (1914, 1000, 142142), "reddit": (4675, 952, 113219),
    "foursquare": (2106, 5596, 192602), "lastfm": (268, 789, 129186)}


def test_registry_entries_point_to_pinned_official_files():
    for name in CASPER_DATASETS:
        spec = registry.get_file(name, "raw")
        assert spec.url.startswith("https://raw.githubusercontent.com/") and len(spec.sha256) == 64
        assert "casper" in registry.get_dataset(name).papers
    assert "10 %" in registry.get_dataset("lastfm").note


@pytest.mark.parametrize("name", CASPER_DATASETS)
def test_local_files_verify_and_filtered_counts_match_the_spec(name, need_local):
    need_local(name, "raw")
    path = registry.locate(name, "raw", download=False)
    assert registry.content_sha256(path, use_cache=False) == registry.get_file(name, "raw").sha256
    stream = load_stream(name)
    assert (stream.n_users, stream.n_items, len(stream)) == EXPECTED[name]
    assert np.all(np.diff(stream.timestamp) >= 0)
    ties = np.flatnonzero(np.diff(stream.timestamp) == 0)
    assert np.all(stream.row[ties] < stream.row[ties + 1])  # stable: equal times keep file order


def test_parser_takes_the_last_three_columns(tmp_path):
    (tmp_path / "a.tsv").write_text("0\t5\t7\t1.500\n1\t6\t7\t2.000\n")
    (tmp_path / "b.tsv").write_text("5\t7\t1\n6\t7\t2\n")
    a, b = parse_casper_tsv(tmp_path / "a.tsv"), parse_casper_tsv(tmp_path / "b.tsv")
    assert a["user"].tolist() == b["user"].tolist() == [5, 6] and a["timestamp"].tolist() == [1.5, 2.0]


def test_split_marks_the_last_floor_tenth_of_each_user():
    user = np.array([0] * 25 + [1] * 9 + [2] * 10)
    is_test = split_last_fraction(user, 0.1)
    assert is_test[:25].tolist() == [False] * 23 + [True] * 2  # floor(2.5) = 2
    assert not is_test[25:34].any()  # floor(0.9) = 0
    assert is_test[34:].tolist() == [False] * 9 + [True]
    frame = pd.DataFrame({"user": user, "t": is_test})
    assert frame.groupby("user")["t"].sum().tolist() == [2, 0, 1]


def test_first_appearance_renumbering_matches_the_spec(need_local):
    """Spec §11.4 (Foursquare): CASPER LOO renumbers 143 items, CASPER replacement with the least
    popular item 5,374 of 5,596; a random deletion renumbers none."""
    need_local("foursquare", "raw")
    from recunlearn.experiments.casper import renumbering_artifact

    assert renumbering_artifact("foursquare", "casper", "loo")["renumbered_items"] == 143
    unpopular = renumbering_artifact("foursquare", "casper", "replace", "unpopular")
    assert unpopular["renumbered_items"] == 5374 and abs(unpopular["ao_floor"] - 0.607) < 0.01
    assert renumbering_artifact("foursquare", "latest", "loo")["ao_floor"] == 1.0
