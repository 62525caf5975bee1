"""Parsers, preprocessing (implicit, k-core, contiguous ids) and the split protocols."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from local_data import skip_if_absent
from recunlearn.data import (DatasetNotFoundError, contiguous_ids, interaction_statistics, k_core, load_released_tables,
                             load_split, preprocess_raw, to_implicit)
from recunlearn.data import parsers
from recunlearn.data.splits import random_split, split_each_user_half


def pair_keys(frame: pd.DataFrame, n_items: int) -> np.ndarray:
    return frame["user"].to_numpy(np.int64) * n_items + frame["item"].to_numpy(np.int64)


def or_skip(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, skipped when a dataset file it reads is not on this machine (and failed
    when the file is there but was reported missing: :func:`conftest.skip_if_absent`)."""
    try:
        return fn(*args, **kwargs)
    except DatasetNotFoundError as exc:
        skip_if_absent(exc)


@pytest.fixture(scope="module")
def ml100k_released():
    return or_skip(load_released_tables, "ml-100k")


@pytest.fixture(scope="module")
def ml100k_split():
    return or_skip(load_split, "ml-100k", "released", 0)


# --- parsers ----------------------------------------------------------------------------------------

def test_parsers_of_each_format(tmp_path):
    tab = tmp_path / "u.data"
    tab.write_text("196\t242\t3\t881250949\n186\t302\t3\t891717742\n")
    colons = tmp_path / "ratings.dat.gz"
    colons.write_bytes(gzip.compress(b"1::1193::5::978300760\n1::661::3::978302109\n"))
    amazon = tmp_path / "ratings.csv"
    amazon.write_text("A1B2,B00X,5.0,1400000000\nA9,0001,1.0,1300000000\n")
    released = tmp_path / "train.csv"
    released.write_text("uid,iid,val\n0,3,1\n2,1,1\n")
    frames = {"tab": parsers.parse_grouplens_tab(tab), "colons": parsers.parse_grouplens_colons(colons),
              "amazon": parsers.parse_amazon_csv(amazon), "released": parsers.parse_cure4rec_csv(released)}
    for frame in frames.values():
        assert list(frame.columns) == parsers.COLUMNS
        assert frame["rating"].dtype == np.float32 and str(frame["timestamp"].dtype) == "Int64"
    assert frames["tab"].iloc[0].tolist() == [196, 242, 3.0, 881250949]
    assert frames["colons"][["user", "item"]].values.tolist() == [[1, 1193], [1, 661]]
    assert frames["colons"]["timestamp"].tolist() == [978300760, 978302109]
    assert frames["amazon"]["item"].tolist() == ["B00X", "0001"]  # string ids keep leading zeros
    assert frames["released"]["timestamp"].isna().all()
    bad = tmp_path / "bad.csv"
    bad.write_text("user,item\n1,2\n")
    with pytest.raises(ValueError, match="uid"):
        parsers.parse_cure4rec_csv(bad)


# --- preprocessing on hand-made tables --------------------------------------------------------------

def table(pairs, ratings=None) -> pd.DataFrame:
    users, items = zip(*pairs)
    return pd.DataFrame({"user": users, "item": items,
                         "rating": np.asarray(ratings if ratings is not None else [1.0] * len(pairs), np.float32),
                         "timestamp": pd.array([None] * len(pairs), dtype="Int64")})


def test_to_implicit_keeps_first_duplicate_and_thresholds():
    frame = table([(1, 10), (1, 10), (2, 10), (2, 11)], ratings=[2.0, 5.0, 4.0, 1.0])
    out = to_implicit(frame)
    assert out[["user", "item"]].values.tolist() == [[1, 10], [2, 10], [2, 11]]
    assert (out["rating"] == 1.0).all()
    assert to_implicit(frame, min_rating=4.0)[["user", "item"]].values.tolist() == [[1, 10], [2, 10]]


def test_k_core_iterative_cascade():
    # 2-core: item 'c' has one interaction -> removed; then user 3 has one left -> removed;
    # then item 'b' has one left -> removed; then user 2 has one left -> removed. Users 0 and 1 with
    # items 'a' and 'd' survive. A single pass would keep users 2 and 3 and item 'b'.
    pairs = [(0, "a"), (0, "d"), (1, "a"), (1, "d"), (2, "a"), (2, "b"), (3, "b"), (3, "c")]
    out = k_core(table(pairs), min_user=2, min_item=2)
    assert out[["user", "item"]].values.tolist() == [[0, "a"], [0, "d"], [1, "a"], [1, "d"]]
    one_pass = table(pairs)
    counts_ok = (one_pass["item"].map(one_pass["item"].value_counts()) >= 2)
    assert counts_ok.sum() == 7  # one pass would only have dropped (3, 'c')


def test_k_core_can_empty_the_table_and_keeps_a_core_unchanged():
    assert len(k_core(table([(0, 1), (1, 2), (2, 3)]), 2, 2)) == 0
    full = table([(u, i) for u in range(3) for i in range(3)])
    pd.testing.assert_frame_equal(k_core(full, 3, 3), full)


def test_contiguous_ids_orders():
    frame = table([(30, "z"), (10, "y"), (20, "z"), (10, "x")])
    out = contiguous_ids(frame)
    assert out["user"].tolist() == [2, 0, 1, 0]  # sorted source ids
    assert out["item"].tolist() == [0, 1, 0, 2]  # first appearance
    assert contiguous_ids(frame, item_order="sorted")["item"].tolist() == [2, 1, 2, 0]
    with pytest.raises(ValueError, match="item_order"):
        contiguous_ids(frame, item_order="random")


def test_interaction_statistics():
    stats = interaction_statistics(table([(0, 0), (0, 1), (1, 1)]))
    assert stats == {"users": 2, "items": 2, "interactions": 3, "sparsity": pytest.approx(0.25)}


def test_random_split_fractions_disjoint_and_seeded():
    frame = pd.DataFrame({"user": np.arange(1003) % 37, "item": np.arange(1003)})
    parts = random_split(frame, seed=5)
    assert [len(p) for p in parts] == [round(0.8 * 1003), round(0.9 * 1003) - round(0.8 * 1003),
                                       1003 - round(0.9 * 1003)]
    items = np.concatenate([p["item"].to_numpy() for p in parts])
    assert len(np.unique(items)) == 1003  # disjoint and complete
    assert all(np.all(np.diff(p["item"].to_numpy()) > 0) for p in parts)  # source row order kept
    again = random_split(frame, seed=5)
    assert all(a.equals(b) for a, b in zip(parts, again))
    assert not random_split(frame, seed=6)[0].equals(parts[0])
    assert [len(p) for p in random_split(frame, 0, (0.5, 0.5))] == [502, 501]
    with pytest.raises(ValueError, match="fractions"):
        random_split(frame, 0, (0.8, 0.1))


def test_split_each_user_half_small():
    frame = pd.DataFrame({"user": [0] * 5 + [1] + [2] * 2, "item": range(8)})
    first, second = split_each_user_half(frame, seed=3)
    assert first["user"].value_counts().to_dict() == {0: 2, 2: 1}
    assert second["user"].value_counts().to_dict() == {0: 3, 1: 1, 2: 1}
    assert sorted(first["item"].tolist() + second["item"].tolist()) == list(range(8))


# --- raw data, the authors' recipe ------------------------------------------------------------------

def test_ml100k_raw_preprocessed_equals_released_ratings(ml100k_released):
    table_ = or_skip(preprocess_raw, "ml-100k")
    stats = interaction_statistics(table_)
    assert (stats["users"], stats["items"], stats["interactions"]) == (943, 1349, 99287)
    assert table_["user"].max() == 942 and table_["item"].max() == 1348  # contiguous, 0-based
    ours = table_[["user", "item"]].sort_values(["user", "item"]).to_numpy()
    released = ml100k_released["ratings"][["user", "item"]].sort_values(["user", "item"]).to_numpy()
    np.testing.assert_array_equal(ours, released)


def test_ml1m_raw_preprocessed_counts():
    table_ = or_skip(preprocess_raw, "ml-1m")
    stats = interaction_statistics(table_)
    assert (stats["users"], stats["items"], stats["interactions"]) == (6040, 3416, 999611)
    assert table_["user"].max() == 6039 and table_["item"].max() == 3415


# --- the released split -----------------------------------------------------------------------------

def test_released_split_invariants(ml100k_split, ml100k_released):
    split = ml100k_split
    n = split.n_items
    assert (split.n_users, split.n_items) == (943, 1349)
    train, valid, test = (pair_keys(getattr(split, part), n) for part in ("train", "valid", "test"))
    for keys in (train, valid, test):
        assert len(np.unique(keys)) == len(keys)
    assert not np.intersect1d(train, valid).size
    assert not np.intersect1d(train, test).size
    assert not np.intersect1d(valid, test).size
    released_test = pair_keys(ml100k_released["test"], n)  # ML-100K ids are already 0-based contiguous
    np.testing.assert_array_equal(np.sort(np.r_[valid, test]), np.sort(released_test))
    np.testing.assert_array_equal(np.sort(train), np.sort(pair_keys(ml100k_released["train"], n)))
    assert (len(split.train), len(split.valid) + len(split.test)) == (79045, 20242)

    held = np.bincount(ml100k_released["test"]["user"], minlength=split.n_users)
    in_valid = np.bincount(split.valid["user"], minlength=split.n_users)
    in_test = np.bincount(split.test["user"], minlength=split.n_users)
    np.testing.assert_array_equal(in_valid, held // 2)
    np.testing.assert_array_equal(in_test, held - held // 2)
    single = np.flatnonzero(held == 1)
    assert np.all(in_test[single] == 1) and np.all(in_valid[single] == 0)
    np.testing.assert_array_equal(split.user_train_counts(), np.bincount(split.train["user"], minlength=943))
    assert split.train_matrix.shape == (943, 1349) and split.train_matrix.nnz == 79045


def test_single_held_out_item_stays_in_test():
    """ML-100K has no user with one held-out item; ADM has many (mean 1.8 test items per user)."""
    split = or_skip(load_split, "adm", "released", 0)
    held = np.bincount(np.r_[split.valid["user"], split.test["user"]], minlength=split.n_users)
    single = np.flatnonzero(held == 1)
    assert len(single) > 1000
    in_test = np.bincount(split.test["user"], minlength=split.n_users)
    in_valid = np.bincount(split.valid["user"], minlength=split.n_users)
    assert np.all(in_test[single] == 1) and np.all(in_valid[single] == 0)
    np.testing.assert_array_equal(in_valid, held // 2)


def test_released_split_seeds(ml100k_split):
    same = load_split("ml-100k", "released", 0)
    other = load_split("ml-100k", "released", 1)
    assert same.valid.equals(ml100k_split.valid) and same.test.equals(ml100k_split.test)
    assert same.train.equals(ml100k_split.train)
    assert not np.array_equal(np.sort(pair_keys(other.valid, 1349)), np.sort(pair_keys(ml100k_split.valid, 1349)))
    assert other.train.equals(ml100k_split.train)  # the seed only moves held-out items


def test_validation_on_test_variant(ml100k_released):
    split = or_skip(load_split, "ml-100k", "released", 0, validation="test")
    assert split.valid.equals(split.test) and len(split.test) == 20242
    with pytest.raises(ValueError, match="validation"):
        load_split("ml-100k", validation="train")
    with pytest.raises(ValueError, match="protocol"):
        load_split("ml-100k", protocol="temporal")


def test_adm_ids_remapped_to_contiguous_zero_based():
    tables = or_skip(load_released_tables, "adm")
    split = load_split("adm", "released", 0)
    assert (split.n_users, split.n_items) == (22878, 115082)
    for part in (split.train, split.valid, split.test):
        assert part["user"].min() >= 0 and part["user"].max() < split.n_users
        assert part["item"].min() >= 0 and part["item"].max() < split.n_items
    users = np.unique(np.r_[split.train["user"], split.valid["user"], split.test["user"]])
    items = np.unique(np.r_[split.train["item"], split.valid["item"], split.test["item"]])
    np.testing.assert_array_equal(users, np.arange(split.n_users))
    np.testing.assert_array_equal(items, np.arange(split.n_items))
    # the released ids are 1-based and contiguous, so the remap is "minus one", row by row
    np.testing.assert_array_equal(split.train["user"].to_numpy(), tables["train"]["user"].to_numpy() - 1)
    np.testing.assert_array_equal(split.train["item"].to_numpy(), tables["train"]["item"].to_numpy() - 1)
    assert len(split.train) == 197188 and len(split.valid) + len(split.test) == 41504


def test_raw_protocol_split(ml100k_released):
    split = or_skip(load_split, "ml-100k", "raw", 3)
    sizes = [len(split.train), len(split.valid), len(split.test)]
    assert sum(sizes) == 99287 and sizes[0] == round(0.8 * 99287)
    keys = np.concatenate([pair_keys(getattr(split, p), split.n_items) for p in ("train", "valid", "test")])
    assert len(np.unique(keys)) == 99287
    assert (split.n_users, split.n_items) == (943, 1349)


def test_restrict_train(ml100k_split):
    keep = np.arange(0, 943, 2)
    restricted = ml100k_split.restrict_train(keep)
    assert set(restricted.train["user"]) == set(keep) & set(ml100k_split.train["user"])
    assert restricted.test is ml100k_split.test and restricted.n_items == ml100k_split.n_items
