"""Trained models kept on disk between processes, so that a compute session stopped in the middle of
a batch does not train the batch's shared models again when the next session resumes it.

Only where ``RECUNLEARN_MODELS`` names a directory (``python -m recunlearn compute`` sets it to
``<cache>/models`` for its local workers; unset, models are kept in memory only). A model is stored
under ``<dir>/<kind>/<hash>.pt``, the hash taken over everything its weights depend on: the caller's
key, the fingerprint of the library code that trains it (``code``, the module of its experiment, and
every library module that module imports: :func:`recunlearn.provenance.source_fingerprint`), torch's
version and its thread count. A stored model is therefore only reused where training it again would
give the same weights bit for bit, and a change to code its training never runs (another paper's)
leaves it usable. Each kind keeps its ``capacity`` most recently used files.

A training in progress keeps its state in the same directory (:func:`resume_point`,
:mod:`recunlearn.models.resume`), so a process stopped in the middle of a long training does not
start it again from the first epoch.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Callable, TypeVar

import torch

T = TypeVar("T")


def stored_path(kind: str, key: tuple, code: str) -> Path | None:
    """Where the model of ``kind`` and ``key`` trained by module ``code`` (e.g. the caller's
    ``__name__``) is kept (None when ``RECUNLEARN_MODELS`` is unset)."""
    from ..paths import MODELS_ENV
    from ..provenance import source_fingerprint

    root = os.environ.get(MODELS_ENV)
    if not root:
        return None
    what = repr((key, source_fingerprint(code), torch.__version__, torch.get_num_threads()))
    return Path(root) / kind / f"{hashlib.sha256(what.encode()).hexdigest()[:24]}.pt"


def load(path: Path | None, usable: Callable[[object], bool] = lambda stored: True):
    """The object stored at ``path``, or None when there is none, it cannot be read or ``usable``
    rejects it (the caller then trains it again and stores it over the old file)."""
    if path is None or not path.is_file():
        return None
    try:
        stored = torch.load(path, weights_only=False)
    except Exception:  # an unreadable file is trained again and replaced
        return None
    if not usable(stored):
        return None
    path.touch()  # recently used: kept by the pruning of store()
    return stored


def store(path: Path | None, value, capacity: int) -> None:
    """Write ``value`` to ``path`` atomically, then keep only the ``capacity`` most recently used files
    of its directory."""
    if path is None:
        return
    from ..io import write_bytes_atomic

    buffer = io.BytesIO()
    torch.save(value, buffer)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, buffer.getvalue())
    kept = sorted(path.parent.glob("*.pt"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[capacity:]:
        old.unlink(missing_ok=True)


def resume_point(kind: str, key: tuple, code: str, every_seconds: float | None = None):
    """The :class:`~recunlearn.models.resume.ResumePoint` of the training of ``kind`` and ``key`` by
    module ``code``: its state kept under ``<dir>/resume/<kind>/`` (hashed like a stored model, so only
    the same training by the same code and torch finds it), or an inert one when ``RECUNLEARN_MODELS``
    is unset."""
    from ..models.resume import SAVE_EVERY_SECONDS, ResumePoint

    path = stored_path(f"resume/{kind}", key, code)
    return ResumePoint(path, SAVE_EVERY_SECONDS if every_seconds is None else every_seconds)


def load_or_train(kind: str, key: tuple, code: str, capacity: int, train: Callable[[], T]) -> tuple[T, bool]:
    """``(value, was_stored)``: the stored model of ``kind`` and ``key`` trained by module ``code``, else
    ``train()``, stored."""
    path = stored_path(kind, key, code)
    value = load(path)
    if value is not None:
        return value, True
    value = train()
    store(path, value, capacity)
    return value, False
