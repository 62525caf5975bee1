"""Frozen, validated experiment configs.

A config is a frozen dataclass whose fields carry their constraints in ``metadata``:
``choices`` (allowed values, or allowed items for a tuple field), ``min`` / ``max``, ``percent``
(warn below 1: the value is a percentage, not a fraction). Every value is checked when the config
is built, then :meth:`Config.validate` checks what involves several fields, so a bad name or value
fails before any compute with one message naming the parameter and what is allowed.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import typing
import warnings
from typing import Any, ClassVar, Mapping

_PARAMETER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class ConfigError(ValueError):
    """A parameter name or value is not allowed."""


def option(default, *, choices=None, min=None, max=None, percent=False, doc="", added=False):  # noqa: A002
    """A config field with its constraints (a tuple default is stored as given). ``added``: a field
    added after records of its class existed (a named variant of a model or method); it enters the
    record key only when it differs from its default, so every record computed before it was added
    keeps its key and stays valid (see :meth:`Config.key_dict`)."""
    return dataclasses.field(default=default, metadata={"choices": choices, "min": min, "max": max,
                                                        "percent": percent, "doc": doc, "added": added})


def require_device(device: str) -> None:
    """ConfigError unless ``device`` can run here; call it before compute (a record made on a GPU
    can still be read on a machine without one)."""
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ConfigError(f"parameter DEVICE = {device!r}: no CUDA device is available "
                              "(torch.cuda.is_available() is False); use 'cpu'")


def injected_names(namespace: Mapping[str, Any]) -> set[str]:
    """Names assigned in papermill's injected cell (the one starting ``# Parameters``), read from
    IPython's input history ``In`` in ``namespace``; empty outside IPython."""
    history = namespace.get("In")
    names: set[str] = set()
    for source in history if isinstance(history, list) else []:
        if not (isinstance(source, str) and source.startswith("# Parameters\n")):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        names |= {target.id for node in tree.body if isinstance(node, ast.Assign)
                  for target in node.targets if isinstance(target, ast.Name)}
    return names


@dataclasses.dataclass(frozen=True)
class Config:
    """Base class: validation, (de)serialisation, and construction from notebook parameters."""

    experiment: ClassVar[str] = ""
    results_version: ClassVar[str] = "1"
    """Part of every record key: bump it when a code change alters what an existing config computes."""

    def value_results_version(self) -> str | None:
        """A results version for this config's values that replaces the class's (None: the class's).
        Lets a change that alters only some configs' results (one model of several) invalidate only
        their records."""
        return None

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
        self.validate()

    def validate(self) -> None:
        """Checks that involve several fields (subclasses extend it); raise :class:`ConfigError`."""

    @classmethod
    def parameter_names(cls) -> list[str]:
        return [spec.name for spec in dataclasses.fields(cls)]

    @classmethod
    def from_params(cls, namespace: Mapping[str, Any], **fixed):
        """Build from a notebook's namespace (``globals()``); ``fixed`` values are set by the notebook.

        Parameters are the fields' UPPER_SNAKE names, and names are case-sensitive: an UPPER_SNAKE
        name that is no parameter, a name equal to a parameter but for case (``datasets``), and a
        name papermill injected that is no parameter are errors listing the allowed names. Other
        names (imports, helpers) are ignored. A list parameter given as a JSON list in a string
        (papermill ``-p DATASETS '["ml-1m"]'``) is parsed."""
        allowed = {name.upper() for name in cls.parameter_names()}
        listing = f"allowed: {sorted(allowed)}"
        miscased = sorted(name for name in namespace if name.upper() in allowed and name not in allowed)
        if miscased:
            raise ConfigError(f"parameter names are case-sensitive: {miscased} for {cls.__name__} must be written "
                              f"{[name.upper() for name in miscased]}; {listing}")
        named = {name for name in namespace if _PARAMETER_NAME.match(name)} | injected_names(namespace)
        unknown = sorted(named - allowed)
        if unknown:
            raise ConfigError(f"unknown parameter(s) {unknown} for {cls.__name__}; {listing}")
        hints = typing.get_type_hints(cls)
        given = {name.lower(): _list_from_json(hints[name.lower()], value)
                 for name, value in namespace.items() if name in allowed}
        return cls(**{**given, **fixed})

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]):
        allowed = set(cls.parameter_names())
        unknown = sorted(set(values) - allowed)
        if unknown:
            miscased = [name for name in unknown if name.lower() in allowed]
            hint = f" (names are lower case here: {[name.lower() for name in miscased]})" if miscased else ""
            raise ConfigError(f"unknown parameter(s) {unknown} for {cls.__name__}{hint}; allowed: {sorted(allowed)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {spec.name: (list(v) if isinstance(v := getattr(self, spec.name), tuple) else v)
                for spec in dataclasses.fields(self)}

    def key_dict(self) -> dict[str, Any]:
        """The values a record key hashes: :meth:`to_dict` without the ``added`` fields (see
        :func:`option`) that hold their default, i.e. exactly what the config held before they existed."""
        values = self.to_dict()
        for spec in dataclasses.fields(self):
            if spec.metadata.get("added") and getattr(self, spec.name) == spec.default:
                del values[spec.name]
        return values

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def _list_from_json(hint, value):
    """``value`` parsed when the field is a list and ``value`` is a string holding a JSON list."""
    if typing.get_origin(hint) is tuple and isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, list) else value
    return value


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
        papermill = (" (papermill's -p passes text: give a list with -y, e.g. "
                     f"-y '{name.upper()}: [a, b]', or as JSON, -p {name.upper()} '[\"a\", \"b\"]')"
                     if typing.get_origin(hint) is tuple and isinstance(value, str) else "")
        raise ConfigError(f"parameter {name.upper()} = {value!r}: expected {_describe(hint)}{papermill}")
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
        if meta.get("percent") and 0 < v < 1:
            warnings.warn(f"parameter {name.upper()} = {value!r} is a percentage: {v!r} means {v!r} %, not "
                          f"{v * 100:g} % (for {v * 100:g} %, write {v * 100:g})", UserWarning, stacklevel=4)
    if isinstance(value, tuple) and not value:
        raise ConfigError(f"parameter {name.upper()}: must not be empty")


def _describe(hint) -> str:
    origin = typing.get_origin(hint)
    if origin is tuple:
        return f"a list of {_describe(typing.get_args(hint)[0])}"
    if origin is not None:
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    return "None" if hint is type(None) else hint.__name__
