"""Parsers from each source format to one interaction table.

The table is a :class:`pandas.DataFrame` with columns ``user``, ``item`` (source ids, int64 or
string), ``rating`` (float32) and ``timestamp`` (nullable Int64; missing where the source has none),
in the source's row order.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import ChecksumMismatchError

COLUMNS = ["user", "item", "rating", "timestamp"]


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reindex(columns=COLUMNS)
    frame["rating"] = frame["rating"].astype("float32")
    frame["timestamp"] = frame["timestamp"].astype("Int64")
    return frame.reset_index(drop=True)


def parse_grouplens_tab(path: Path) -> pd.DataFrame:
    """MovieLens ``u.data``: tab-separated ``user item rating timestamp``, no header."""
    frame = pd.read_csv(path, sep="\t", header=None, names=COLUMNS, dtype="int64")
    return _typed(frame)


def parse_grouplens_colons(path: Path) -> pd.DataFrame:
    """MovieLens ``ratings.dat``: ``user::item::rating::timestamp`` (plain or gzipped)."""
    # Splitting on single ':' keeps pandas' C parser; the empty columns between '::' are dropped.
    raw = pd.read_csv(path, sep=":", header=None, usecols=[0, 2, 4, 6], dtype="int64")
    raw.columns = COLUMNS
    return _typed(raw)


def parse_amazon_csv(path: Path) -> pd.DataFrame:
    """Amazon 2014 ratings-only CSV: ``user,item,rating,timestamp``, no header, string ids."""
    frame = pd.read_csv(path, header=None, names=COLUMNS,
                        dtype={"user": str, "item": str, "rating": "float32", "timestamp": "int64"})
    return _typed(frame)


def parse_cure4rec_csv(path: Path) -> pd.DataFrame:
    """CURE4Rec released CSV: header ``uid,iid,val[,tag]`` (``tag`` is the timestamp where present)."""
    frame = pd.read_csv(path, dtype="int64")
    expected = {"uid", "iid", "val"}
    if not expected <= set(frame.columns):
        raise ValueError(f"{path}: expected columns {sorted(expected)} (+ optional 'tag'), got {list(frame.columns)}")
    frame = frame.rename(columns={"uid": "user", "iid": "item", "val": "rating", "tag": "timestamp"})
    return _typed(frame)


def load_pos_dict(path: Path, expected_sha256: str) -> dict[int, np.ndarray]:
    """The authors' ``pos_dict.npy`` (a numpy pickle, plain or gzipped). The bytes are read once,
    hashed, and unpickled only if their SHA-256 equals ``expected_sha256`` -- there is no window
    between checking the file and loading it."""
    raw = Path(path).read_bytes()
    try:
        content = gzip.decompress(raw) if Path(path).suffix == ".gz" else raw
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise ChecksumMismatchError(path, expected_sha256, f"{hashlib.sha256(raw).hexdigest()} (the compressed file)",
                                    "Refusing to unpickle it.", of="uncompressed content",
                                    problem=f"it is not a readable gzip stream ({type(exc).__name__}: {exc})") from None
    actual = hashlib.sha256(content).hexdigest()
    if actual != expected_sha256:
        raise ChecksumMismatchError(path, expected_sha256, actual, "Refusing to unpickle it.")
    obj = np.load(io.BytesIO(content), allow_pickle=True).item()
    return {int(user): np.asarray(items, dtype=np.int64) for user, items in obj.items()}


def parse_casper_tsv(path: Path) -> pd.DataFrame:
    """CASPER-family interaction stream: tab-separated, no header, ``[index] user item timestamp``.

    The last three columns are taken (wikipedia.tsv has a leading row index, the others do not).
    ``rating`` is 1. Unlike the other parsers, ``timestamp`` stays ``float64``: Wikipedia's
    timestamps have fractional seconds. Rows keep the file's (chronological) order.
    """
    raw = pd.read_csv(path, sep="\t", header=None)
    if raw.shape[1] not in (3, 4):
        raise ValueError(f"{path}: expected 3 or 4 tab-separated columns, got {raw.shape[1]}")
    last = raw.iloc[:, -3:]
    return pd.DataFrame({"user": last.iloc[:, 0].to_numpy(np.int64), "item": last.iloc[:, 1].to_numpy(np.int64),
                         "rating": np.ones(len(raw), np.float32),
                         "timestamp": last.iloc[:, 2].to_numpy(np.float64)})


def parse_sasrec_lines(path: Path) -> pd.DataFrame:
    """SASRec/BERT4Rec format: ``user item`` per line, space-separated, ids from 1, grouped by user and
    time-ordered within a user, no ratings or timestamps. Returned as the library's interaction
    table (``rating`` 1, ``timestamp`` missing), in file order."""
    raw = pd.read_csv(path, sep=" ", header=None, names=["user", "item"], dtype="int64")
    return pd.DataFrame({"user": raw["user"].to_numpy(), "item": raw["item"].to_numpy(),
                         "rating": np.ones(len(raw), np.float32),
                         "timestamp": pd.array([pd.NA] * len(raw), dtype="Int64")})


PARSERS = {
    "grouplens_tab": parse_grouplens_tab,
    "grouplens_colons": parse_grouplens_colons,
    "amazon_csv": parse_amazon_csv,
    "cure4rec_csv": parse_cure4rec_csv,
    "casper_tsv": parse_casper_tsv,
    "sasrec_lines": parse_sasrec_lines,
}
