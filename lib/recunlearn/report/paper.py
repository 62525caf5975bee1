"""The papers' numbers, transcribed once into ``notebooks/paper/<name>.csv``."""

from __future__ import annotations

import pandas as pd

from ..paths import REPO_ROOT

PAPER_DIR = REPO_ROOT / "notebooks" / "paper"


def paper_table(name: str) -> pd.DataFrame:
    """The transcribed table ``name`` (e.g. ``"cure4rec-learn"``), with its ``source`` column."""
    path = PAPER_DIR / f"{name}.csv"
    if not path.is_file():
        available = sorted(p.stem for p in PAPER_DIR.glob("*.csv"))
        raise FileNotFoundError(f"no transcribed paper table {name!r} at {path}; available: {available}")
    return pd.read_csv(path)
