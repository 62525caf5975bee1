"""The papers' numbers, transcribed once into ``notebooks/paper/<name>.csv``."""

from __future__ import annotations

import pandas as pd

from ..paths import REPO_ROOT

PAPER_DIR = REPO_ROOT / "notebooks" / "paper"


def paper_table(name: str) -> pd.DataFrame:
    """The transcribed table ``name`` (e.g. ``"cure4rec-learn"``), with its ``source`` column and, for
    long tables (a ``value`` column), the paper's rounding of each value in ``resolution`` (half a unit
    of its last printed digit, read from the text as transcribed: "0.540" -> 0.0005)."""
    path = PAPER_DIR / f"{name}.csv"
    if not path.is_file():
        available = sorted(p.stem for p in PAPER_DIR.glob("*.csv"))
        raise FileNotFoundError(f"no transcribed paper table {name!r} at {path}; available: {available}")
    table = pd.read_csv(path)
    if "value" in table:
        from .compare import printed_resolution

        text = pd.read_csv(path, dtype=str, keep_default_na=False)["value"]
        table["resolution"] = [printed_resolution(t) if t else float("nan") for t in text]
    return table
