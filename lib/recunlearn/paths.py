"""Where the library reads data and writes caches and run records.

- ``RECUNLEARN_DATA``: a read-only local data directory looked in first (here ``../shared/data``).
- ``RECUNLEARN_CACHE``: per-user cache for downloads and derived files (default ``~/.cache/recunlearn``).
- ``RECUNLEARN_MODELS``: a directory where runs keep the trained models that several runs share
  (CASPER's originals, SRU's full-data and shard models) between processes (unset: kept in memory
  only; ``python -m recunlearn compute`` sets it to ``<cache>/models``), see
  :mod:`recunlearn.experiments.stored_models`.
- ``RECUNLEARN_RECORDS``: run-record directory read and written instead of the defaults (see
  :mod:`recunlearn.experiments.records`: by default records are read from the committed
  ``book/_results/records`` and written to a per-process scratch directory).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_ENV = "RECUNLEARN_DATA"
CACHE_ENV = "RECUNLEARN_CACHE"
RECORDS_ENV = "RECUNLEARN_RECORDS"
MODELS_ENV = "RECUNLEARN_MODELS"


def local_data_dir() -> Path | None:
    """The read-only local data directory, if ``RECUNLEARN_DATA`` is set or ``../shared/data`` exists."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    sibling = REPO_ROOT.parent / "shared" / "data"
    return sibling if sibling.is_dir() else None


def cache_dir() -> Path:
    """Per-user cache for downloaded datasets and derived files (created by whoever writes into it)."""
    base = os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "recunlearn"
    return Path(base).expanduser()


def committed_records_dir() -> Path:
    """The run records committed with the book."""
    return REPO_ROOT / "book" / "_results" / "records"


def records_dir() -> Path:
    """``RECUNLEARN_RECORDS`` when set, else the committed record directory."""
    return Path(os.environ.get(RECORDS_ENV) or committed_records_dir()).expanduser()
