"""Frozen, validated experiment configs.

A config is a frozen dataclass whose fields carry their constraints in ``metadata``:
``choices`` (allowed values, or allowed items for a tuple field), ``min`` / ``max``. Every value
is checked when the config is built, so a bad name or value fails before any compute with one
message naming the parameter and what is allowed.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any, ClassVar, Mapping

_PARAMETER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class ConfigError(ValueError):
    """A parameter name or value is not allowed."""


def option(default, *, choices=None, min=None, max=None, doc=""):  # noqa: A002 - mirrors the metadata keys
    """A config field with its constraints (a tuple default is stored as given)."""
    return dataclasses.field(default=default, metadata={"choices": choices, "min": min, "max": max, "doc": doc})


@dataclasses.dataclass(frozen=True)
class Config:
    """Base class: validation, (de)serialisation, and construction from notebook parameters."""

    experiment: ClassVar[str] = ""

    def __post_init__(self):
        hints = typing.get_type_hints(type(self))
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, list):
                value = tuple(value)
            if _accepts_float(hints[spec.name]) and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)  # lr=1 and lr=1.0 are the same config and must get the same record key
            object.__setattr__(self, spec.name, value)
            _check_value(spec, hints[spec.name], value)

    @classmethod
    def parameter_names(cls) -> list[str]:
        return [spec.name for spec in dataclasses.fields(cls)]

    @classmethod
    def from_params(cls, namespace: Mapping[str, Any], **fixed):
        """Build from a notebook's namespace: every UPPER_SNAKE name must be a field (in lower
        case); anything else in ``namespace`` is ignored. ``fixed`` values are set by the notebook."""
        given = {name.lower(): value for name, value in namespace.items() if _PARAMETER_NAME.match(name)}
        allowed = set(cls.parameter_names())
        unknown = sorted(set(given) - allowed)
        if unknown:
            raise ConfigError(f"unknown parameter(s) {[u.upper() for u in unknown]} for {cls.__name__}; "
                              f"allowed: {sorted(a.upper() for a in allowed)}")
        return cls(**{**given, **fixed})

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]):
        allowed = set(cls.parameter_names())
        unknown = sorted(set(values) - allowed)
        if unknown:
            raise ConfigError(f"unknown parameter(s) {unknown} for {cls.__name__}; allowed: {sorted(allowed)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {spec.name: (list(v) if isinstance(v := getattr(self, spec.name), tuple) else v)
                for spec in dataclasses.fields(self)}

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def _accepts_float(hint) -> bool:
    return hint is float or (typing.get_origin(hint) in (typing.Union, __import__("types").UnionType)
                             and float in typing.get_args(hint))


def _type_ok(hint, value) -> bool:
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is getattr(__import__("types"), "UnionType", None):
        return any(_type_ok(arg, value) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is tuple:
        (item_hint, *_rest) = typing.get_args(hint)
        return isinstance(value, tuple) and all(_type_ok(item_hint, v) for v in value)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _check_value(spec: dataclasses.Field, hint, value) -> None:
    name, meta = spec.name, spec.metadata
    if not _type_ok(hint, value):
        raise ConfigError(f"parameter {name.upper()} = {value!r}: expected {_describe(hint)}")
    items = value if isinstance(value, tuple) else (value,)
    if meta.get("choices") is not None:
        bad = [v for v in items if v not in meta["choices"]]
        if bad:
            raise ConfigError(f"parameter {name.upper()} = {value!r}: {bad[0]!r} is not allowed; "
                              f"allowed: {list(meta['choices'])}")
    for v in items:
        if v is None or isinstance(v, str):
            continue
        if meta.get("min") is not None and v < meta["min"]:
            raise ConfigError(f"parameter {name.upper()} = {value!r}: must be >= {meta['min']}")
        if meta.get("max") is not None and v > meta["max"]:
            raise ConfigError(f"parameter {name.upper()} = {value!r}: must be <= {meta['max']}")
    if isinstance(value, tuple) and not value:
        raise ConfigError(f"parameter {name.upper()}: must not be empty")


def _describe(hint) -> str:
    origin = typing.get_origin(hint)
    if origin is tuple:
        return f"a list of {_describe(typing.get_args(hint)[0])}"
    if origin is not None:
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    return "None" if hint is type(None) else hint.__name__
