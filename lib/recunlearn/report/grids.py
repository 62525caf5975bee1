"""Helpers for the page grids: a page's grid class extends an experiment's grid with fields that say
which further runs the page reads."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

Grid = TypeVar("Grid")


def as_base(grid, base: type[Grid], **changes) -> Grid:
    """A ``base`` grid with ``grid``'s value of every field both have, then ``changes`` applied: a page
    grid's own fields are dropped, and ``changes`` set those of ``base`` that ``grid`` lacks (e.g. the
    overview page's grid turned into the ablation page's)."""
    values = {f.name: getattr(grid, f.name) for f in dataclasses.fields(base) if hasattr(grid, f.name)}
    return base(**{**values, **changes})
