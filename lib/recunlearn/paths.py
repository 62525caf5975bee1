"""Where the library reads data and writes caches and run records.

- ``RECUNLEARN_DATA``: a read-only local data directory looked in first (here ``../shared/data``).
- ``RECUNLEARN_CACHE``: per-user cache for downloads and derived files (default ``~/.cache/recunlearn``).
- ``RECUNLEARN_RECORDS``: run-record directory (default ``book/_results/records`` in the repository).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_ENV = "RECUNLEARN_DATA"
CACHE_ENV = "RECUNLEARN_CACHE"
RECORDS_ENV = "RECUNLEARN_RECORDS"


def local_data_dir() -> Path | None:
    """The read-only local data directory, if ``RECUNLEARN_DATA`` is set or ``../shared/data`` exists."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    sibling = REPO_ROOT.parent / "shared" / "data"
    return sibling if sibling.is_dir() else None


def cache_dir() -> Path:
    """Per-user cache for downloaded datasets and derived files (created on demand)."""
    base = os.environ.get(CACHE_ENV) or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "recunlearn"
    path = Path(base).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def records_dir() -> Path:
    """Directory of run records (JSON files named by content hash)."""
    return Path(os.environ.get(RECORDS_ENV) or REPO_ROOT / "book" / "_results" / "records").expanduser()
