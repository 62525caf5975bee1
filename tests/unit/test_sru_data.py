"""SRU data: registry entries, the SASRec filter, sessions, the session-level split, prefix pairs."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from recunlearn.data import registry
from recunlearn.data.errors import ChecksumMismatchError, DatasetNotFoundError
from recunlearn.data.sessions import (MAXLEN, SRU_DATASETS, SessionData, Sessions, load_sessions,
                                      prefix_pairs, sasrec_filter, sequences_from_table, session_statistics,
                                      split_sessions)

# (sessions, items, interactions) of the files as published (shared/data/<name>/SOURCE.md), and of ML-1M
# after the SASRec recipe (SASRec's paper: 6,040 users, 3,416 items, ~1.0M actions)
EXPECTED = {"games": (31013, 23715, 287107), "beauty": (40226, 54542, 353962), "ml-1m": (6040, 3416, 999611)}


def naive_pairs(sequences, maxlen):
    """Reference: one Python step per pair."""
    inputs, targets = [], []
    for s in sequences:
        for t in range(1, len(s)):
            window = list(s[max(0, t - maxlen):t])
            inputs.append([0] * (maxlen - len(window)) + window)
            targets.append(s[t])
    return np.array(inputs, dtype=np.int64).reshape(-1, maxlen), np.array(targets, dtype=np.int64)


# --- registry ---------------------------------------------------------------------------------------

def test_registry_entries_pin_the_official_files():
    games, beauty = registry.get_file("games", "raw"), registry.get_file("beauty", "raw")
    assert games.url == ("https://raw.githubusercontent.com/kang205/SASRec/"
                         "e3738967fddab206d6eeb4fda433e7a7034dd8b1/data/Video.txt")
    assert beauty.url == ("https://raw.githubusercontent.com/FeiSun/BERT4Rec/"
                          "615eaf2004abecda487a38d5b0c72f3dcfcae5b3/data/beauty.txt")
    assert (games.path, beauty.path) == ("Video.txt", "beauty_bert4rec.txt")
    assert games.sha256 == "b7376fe24430743f411dc7f567285657b2adb3f74361cc7ba0aee94f3024b651"
    assert beauty.sha256 == "f480b7a7403852342ffd8f9809bb30697dd669be31813d0e204b698fec86ef49"
    assert "SUBSTITUTE" in registry.get_dataset("beauty").note
    assert all("sru" in registry.get_dataset(name).papers for name in ("games", "beauty"))


def test_corrupt_games_copy_names_path_expected_checksum_and_source(data_env):
    data, _ = data_env
    path = data / "games" / "Video.txt"
    path.parent.mkdir()
    path.write_bytes(b"1 1\n1 2\n")
    spec = registry.get_file("games", "raw")
    with pytest.raises(ChecksumMismatchError) as info:
        registry.locate("games", "raw")
    message = str(info.value)
    assert str(path) in message and spec.sha256 in message and spec.url in message
    assert hashlib.sha256(b"1 1\n1 2\n").hexdigest() in message


def test_missing_beauty_names_where_it_was_looked_for_and_the_source(tmp_path, monkeypatch):
    from recunlearn import paths

    spec = registry.get_file("beauty", "raw")
    if any(path.is_file() for path in registry.candidate_paths("beauty", spec)):
        load_sessions("beauty")  # sessions built from a real copy must not hide that no copy is found below
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path / "data"))
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(DatasetNotFoundError) as info:
        load_sessions("beauty")
    message = str(info.value)
    assert spec.sha256 in message and spec.url in message and "RECUNLEARN_DATA" in message
    assert all(str(p) in message for p in registry.candidate_paths("beauty", spec))


# --- known answers on tiny inputs ---------------------------------------------------------------------

def test_prefix_pairs_of_a_four_item_session_with_maxlen_2():
    inputs, targets = prefix_pairs([[7, 8, 9, 10]], maxlen=2)
    assert inputs.tolist() == [[0, 7], [7, 8], [8, 9]] and targets.tolist() == [8, 9, 10]
    inputs, targets = prefix_pairs([[5], [7, 8, 9, 10], [], [3, 4]], maxlen=2)  # length 0/1 sessions give no pair
    assert inputs.tolist() == [[0, 7], [7, 8], [8, 9], [0, 3]] and targets.tolist() == [8, 9, 10, 4]


def test_prefix_pairs_equal_a_per_pair_loop():
    rng = np.random.default_rng(1)
    sequences = [rng.integers(1, 50, rng.integers(1, 30)).tolist() for _ in range(40)]
    for maxlen in (1, 3, 20, 40):
        got, want = prefix_pairs(Sessions.from_lists(sequences), maxlen), naive_pairs(sequences, maxlen)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert Sessions.from_lists(sequences).n_pairs() == len(want[1])


def test_split_is_disjoint_complete_sized_and_deterministic():
    parts = split_sessions(1003, seed=3)
    assert [len(p) for p in parts] == [802, 101, 100]  # round(802.4), round(902.7) - 802, rest
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(1003))
    again = split_sessions(1003, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    assert not np.array_equal(parts[2], split_sessions(1003, seed=4)[2])
    assert [len(p) for p in split_sessions(10, 0, (0.6, 0.2, 0.2))] == [6, 2, 2]
    with pytest.raises(ValueError):
        split_sessions(10, 0, (0.8, 0.1, 0.2))


def test_session_data_parts_are_whole_sessions_and_unseen_targets_are_kept():
    sequences = [[1, 2, 3], [2, 3], [1, 3, 2, 1], [4, 1], [2, 5, 1], [3, 1, 2]]
    data = SessionData.from_sessions("toy", Sessions.from_lists(sequences), n_items=5, maxlen=2, seed=0,
                                     split=(4 / 6, 1 / 6, 1 / 6))
    ids = [set(data.part(p).ids.tolist()) for p in ("train", "valid", "test")]
    assert ids[0].isdisjoint(ids[1]) and ids[0].isdisjoint(ids[2]) and ids[1].isdisjoint(ids[2])
    assert set().union(*ids) == set(range(6))
    for name in ("train", "valid", "test"):
        part = data.part(name)
        assert part.tolist() == [sequences[k] for k in part.ids]  # sessions move whole, in id order
    # Force a held-out session with items 4 and 5, which then never occur in training.
    forced = SessionData(
        "toy", data.sessions, data.sessions.take([0, 1, 2, 5]), data.sessions.take([3]), data.sessions.take([4]),
        n_items=5, maxlen=2, seed=0, split=(4 / 6, 1 / 6, 1 / 6))
    assert forced.train_items().tolist() == [False, True, True, True, False, False]
    inputs, targets = forced.pairs("test")  # [2, 5, 1]: target 5 is unseen in training but stays
    assert inputs.tolist() == [[0, 2], [2, 5]] and targets.tolist() == [5, 1]
    assert forced.unseen_target_pairs("test") == 1 and forced.unseen_target_pairs("valid") == 0  # [4, 1] -> 1


def test_single_pass_filter_differs_from_the_iterated_core():
    # u1 has 5 rows, but two are on item "rare" (3 rows): one pass drops those rows and leaves u1 with 3.
    rows = ([("u1", i) for i in "abc"] + [("u1", "rare"), ("u1", "d")] + [("u2", "rare"), ("u3", "rare")]
            + [(u, i) for u in ("u2", "u3", "u4", "u5") for i in "abcd"])
    table = pd.DataFrame(rows, columns=["user", "item"])
    once = sasrec_filter(table, min_user=5, min_item=5)
    assert set(once["user"]) == {"u1", "u2", "u3"} and "rare" not in set(once["item"])
    assert once.groupby("user").size().to_dict() == {"u1": 4, "u2": 4, "u3": 4}  # each lost "rare": now < 5
    assert list(once.itertuples(index=False)) == [r for r in rows if r[1] != "rare" and r[0] in ("u1", "u2", "u3")]
    assert sasrec_filter(table, min_user=5, min_item=5, iterate=True).empty  # the 5-core is empty


def test_sasrec_recipe_numbers_by_first_appearance_and_sorts_stably_by_time():
    table = pd.DataFrame({"user": [20, 20, 10, 20, 10, 10], "item": [900, 800, 800, 700, 900, 600],
                          "timestamp": pd.array([5, 3, 9, 3, 1, 9], dtype="Int64")})
    sessions, n_items = sequences_from_table(table)
    # users: 20 -> session 0, 10 -> session 1; items: 900 -> 1, 800 -> 2, 700 -> 3, 600 -> 4
    # user 20: (t3, 800) and (t3, 700) tie -> file order; user 10: (t9, 800), (t9, 600) tie -> file order
    assert sessions.tolist() == [[2, 3, 1], [1, 2, 4]] and n_items == 4


def test_parse_sasrec_lines(tmp_path):
    from recunlearn.data import parsers

    assert parsers.PARSERS["sasrec_lines"] is parsers.parse_sasrec_lines  # the registry's raw_format of games, beauty
    (tmp_path / "d.txt").write_text("1 3\n1 1\n2 2\n")
    table = parsers.parse_sasrec_lines(tmp_path / "d.txt")
    assert table[["user", "item"]].values.tolist() == [[1, 3], [1, 1], [2, 2]]
    assert table["timestamp"].isna().all() and (table["rating"] == 1).all()


# --- the real files -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SRU_DATASETS)
def test_real_counts_split_and_pairs(name, need_local):
    need_local(name, "raw")
    data = load_sessions(name, seed=0)
    lengths = data.sessions.lengths
    assert (len(data.sessions), data.n_items, int(lengths.sum())) == EXPECTED[name]
    assert np.array_equal(np.unique(data.sessions.items), np.arange(1, data.n_items + 1))  # ids 1..N, all used
    assert data.maxlen == MAXLEN[name] == (10 if name == "beauty" else 20)
    n = len(data.sessions)
    assert [len(data.part(p)) for p in ("train", "valid", "test")] == [round(0.8 * n), round(0.9 * n) - round(0.8 * n),
                                                                       n - round(0.9 * n)]
    assert np.intersect1d(data.train.ids, data.test.ids).size == 0
    assert np.array_equal(data.test.ids, load_sessions(name, seed=0).test.ids)
    inputs, targets = data.pairs("test")
    assert inputs.shape == (int((data.test.lengths - 1).clip(0).sum()), data.maxlen) and len(targets) == len(inputs)
    assert targets.min() >= 1 and inputs.max() <= data.n_items
    row = session_statistics(name)
    assert row["test_pairs"] == len(targets) and row["interactions"] == EXPECTED[name][2]


def test_ml1m_recipe_is_a_fixed_point_and_time_ordered(need_local):
    need_local("ml-1m", "raw")
    from recunlearn.data import preprocess
    from recunlearn.data.splits import load_raw_table

    raw = load_raw_table("ml-1m")
    assert not raw.duplicated(["user", "item"]).any()
    once = sasrec_filter(preprocess.to_implicit(raw))
    assert once.equals(sasrec_filter(preprocess.to_implicit(raw), iterate=True))  # single pass == 5-core here
    data = load_sessions("ml-1m")
    first = data.sessions[0]  # user 1 (first line: 1::1193::5::978300760 -> item 1)
    times = once[once["user"] == 1].sort_values("timestamp", kind="stable")
    movie_to_id = dict(zip(pd.unique(once["item"]), range(1, data.n_items + 1)))
    assert first.tolist() == [movie_to_id[m] for m in times["item"]] and movie_to_id[1193] == 1
