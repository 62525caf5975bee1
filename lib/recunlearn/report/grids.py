"""Helpers for the page grids: a page's grid class extends an experiment's grid with fields that say
which further runs the page reads."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

Grid = TypeVar("Grid")


def as_base(grid, base: type[Grid], **changes) -> Grid:
    """The ``base`` grid with the values of ``grid`` (an instance of a subclass of ``base``) for every
    field ``base`` has, then ``changes`` applied: the page's own fields dropped."""
    values = {field.name: getattr(grid, field.name) for field in dataclasses.fields(base)}
    return base(**{**values, **changes})
