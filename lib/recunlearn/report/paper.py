"""The papers' numbers, transcribed once into ``notebooks/paper/<name>.csv``."""

from __future__ import annotations

import math

import pandas as pd

from ..paths import REPO_ROOT
from .names import span_text

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


def paper_range(table: pd.DataFrame, decimals: int, **where) -> str:
    """The smallest and largest transcribed ``value`` of ``table``'s rows whose columns equal ``where``
    (a list allows any of its values), as ``"0.756-0.793"`` at ``decimals`` decimals: how a page's prose
    quotes a span of the paper's numbers without typing them. An empty selection is an error."""
    rows = table
    for column, wanted in where.items():
        if column not in table:
            raise KeyError(f"the transcribed table has no column {column!r}; it has {list(table.columns)}")
        rows = rows[rows[column].isin(wanted if isinstance(wanted, (list, tuple)) else [wanted])]
    if rows.empty:
        raise ValueError(f"no transcribed row has {where}")
    return span_text(rows["value"], decimals)


def paper_values(table: pd.DataFrame, keys: list[str], prefix: str = "paper") -> dict[str, str]:
    """Every transcribed value of ``table`` as the paper prints it (its digits, a minus sign for
    negatives), named ``prefix`` and the row's ``keys`` joined by ``_`` (``paper_ml-100k_wmf_a_igf``):
    glued into prose that quotes the paper's numbers."""
    def printed(value: float, resolution: float) -> str:
        decimals = max(0, int(round(-math.log10(2 * resolution))))
        return f"{value:.{decimals}f}".replace("-", "−")

    return {"_".join([prefix, *(str(row[key]) for key in keys)]): printed(row["value"], row["resolution"])
            for _, row in table.iterrows()}
