"""Strict JSON and atomic file writes (a temporary file in the target directory, fsync, ``os.replace``).

JSON written here is strict: NaN and infinities become ``null`` (undefined values), never the
``NaN`` tokens that Python's encoder emits by default and other parsers reject.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the complete new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def strict_json_value(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, ±inf, also numpy's) replaced by ``None``."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {key: strict_json_value(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json_value(value) for value in obj]
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "shape", None) == ():  # numpy scalars
        return strict_json_value(obj.item())
    return obj


def dumps_strict(obj: Any) -> str:
    """Indented, key-sorted strict JSON of ``obj`` (undefined values as ``null``)."""
    return json.dumps(strict_json_value(obj), indent=1, sort_keys=True, allow_nan=False)


def _reject_constant(token: str):
    raise ValueError(f"{token} is not strict JSON (undefined values must be null)")


def loads_strict(text: str) -> Any:
    """Parse strict JSON: ``NaN``/``Infinity`` tokens are an error."""
    return json.loads(text, parse_constant=_reject_constant)


def read_json_strict(path: Path) -> Any:
    """The strict JSON in ``path``; an error names the file."""
    try:
        return loads_strict(Path(path).read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc


def write_json_atomic(path: Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented, key-sorted strict JSON."""
    write_bytes_atomic(path, (dumps_strict(obj) + "\n").encode())
