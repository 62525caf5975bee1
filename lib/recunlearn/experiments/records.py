"""Content-addressed run records.

A record is a small JSON file ``<records>/<experiment>/<key>.json`` holding the config, metrics,
per-epoch curve, timings, seed, device, library versions, git commit and dataset checksums. Its
``key`` hashes the experiment name, the config, the checksums of the dataset files it reads and
``RESULTS_VERSION`` -- not the git commit, so committed records stay valid across commits that do
not change results. Records are written atomically (temporary file + rename).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
import subprocess
from pathlib import Path
from typing import Any, Callable

from .. import RESULTS_VERSION, __version__, paths
from ..data import registry
from ..io import write_json_atomic
from .config import Config

RUNNERS: dict[str, tuple[type[Config], Callable[[Config], dict]]] = {}
"""Experiment name -> (config class, function computing the record's payload)."""


def register(config_cls: type[Config]):
    """Decorator registering ``fn(config) -> payload`` as the runner of ``config_cls.experiment``."""
    def wrap(fn):
        RUNNERS[config_cls.experiment] = (config_cls, fn)
        return fn
    return wrap


def dataset_checksums(config: Config) -> dict[str, str]:
    """SHA-256 of every dataset file the config reads (``config.dataset_files()`` roles)."""
    files = getattr(config, "dataset_files", lambda: {})()
    return {f"{ds}/{role}": registry.get_file(ds, role).sha256 for ds, roles in files.items() for role in roles}


def record_key(config: Config) -> str:
    blob = json.dumps({"experiment": config.experiment, "config": config.to_dict(),
                       "data": dataset_checksums(config), "results_version": RESULTS_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def record_path(config: Config, records_dir: Path | None = None) -> Path:
    return Path(records_dir or paths.records_dir()) / config.experiment / f"{record_key(config)}.json"


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.REPO_ROOT, capture_output=True, text=True,
                             timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "lib"],
                               cwd=paths.REPO_ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment() -> dict[str, str]:
    import numpy
    import torch
    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
            "recunlearn": __version__, "platform": platform.platform(),
            "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def run_or_load(config: Config, records_dir: Path | None = None, recompute: bool = False) -> dict[str, Any]:
    """The record of ``config``: loaded if it exists (and ``recompute`` is false), else computed by the
    registered runner and written atomically."""
    if config.experiment not in RUNNERS:
        raise KeyError(f"no runner registered for experiment {config.experiment!r}; known: {sorted(RUNNERS)}")
    path = record_path(config, records_dir)
    if path.is_file() and not recompute:
        return json.loads(path.read_text())
    _config_cls, runner = RUNNERS[config.experiment]
    payload = runner(config)
    record = {"experiment": config.experiment, "key": record_key(config), "config": config.to_dict(),
              "dataset_sha256": dataset_checksums(config), "results_version": RESULTS_VERSION,
              "git_commit": git_commit(), "environment": environment(),
              "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **payload}
    write_json_atomic(path, record)
    return record


def load_record(config: Config, records_dir: Path | None = None) -> dict[str, Any] | None:
    """The stored record of ``config``, or None if it has not been computed."""
    path = record_path(config, records_dir)
    return json.loads(path.read_text()) if path.is_file() else None


def load_records(experiment: str, records_dir: Path | None = None) -> list[dict[str, Any]]:
    """Every stored record of ``experiment``."""
    folder = Path(records_dir or paths.records_dir()) / experiment
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
