"""Content-addressed run records, bound to the code that made them.

A record is a small strict-JSON file ``<records>/<experiment>/<key>.json`` holding the config,
metrics, per-epoch curve, timings, the run's ``cost`` (wall and CPU seconds of the whole runner, which
the compute plan's cost model reads; with ``resumed``, the seconds that trainings it resumed had spent
in earlier processes, included in both), seed, device, library versions, the processor's model, the git
commit (``-dirty`` when ``lib/`` had uncommitted changes), the fingerprint of the library source that ran
(:func:`recunlearn.provenance.source_fingerprint`) and the dataset checksums. Undefined values are
``null``. Records are written atomically (temporary file + rename).

The ``key`` hashes the experiment, the config (:meth:`Config.key_dict`: a field added later for a
named variant counts only where it leaves its default), the checksums of the dataset files it reads
and the experiment's ``results_version`` (a class attribute of its config, bumped by hand whenever a code
change alters what an existing config computes). It leaves out the commit, so committed records stay
valid across commits that do not change results; ``python -m recunlearn audit`` and CI's re-run of a
sample of committed records check that promise.

Where records go:

- read: ``records_dir`` when given, else ``RECUNLEARN_RECORDS`` when set, else the committed
  ``book/_results/records`` and this process's scratch directory; a run's record made on the device
  its config names is preferred, else one made on another device (:func:`device_twins`);
- written: ``records_dir`` when given, else ``RECUNLEARN_RECORDS`` when set, else a scratch directory
  removed when the process exits -- a notebook or smoke run never writes into the committed records
  unless asked (the CLI's ``run`` / ``grid`` ask, with ``--records`` defaulting to the book's).
- Writing into the committed directory is refused unless ``lib/`` is committed.

With ``RECUNLEARN_LEDGER`` naming a file, every record looked up is noted there as a JSON line
(experiment, key, ``loaded`` / ``computed`` / ``pending``, device, commit): the paper-profile
notebook runner uses it to state which records stand behind a page.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime as _dt
import hashlib
import itertools
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from .. import __version__, paths
from ..data import registry
from ..io import read_json_strict, strict_json_value, write_json_atomic
from ..models.resume import earlier_seconds
from ..provenance import git_commit, is_clean_commit, require_clean, source_fingerprint
from ..threads import cpu_threads
from .config import Config, ConfigError

RUNNERS: dict[str, tuple[type[Config], Callable[[Config], dict]]] = {}
"""Experiment name -> (config class, function computing the record's payload)."""

LEDGER_ENV = "RECUNLEARN_LEDGER"


def register(config_cls: type[Config]):
    """Decorator registering ``fn(config) -> payload`` as the runner of ``config_cls.experiment``."""
    def wrap(fn):
        RUNNERS[config_cls.experiment] = (config_cls, fn)
        return fn
    return wrap


def expand(experiment: str, assignments: dict) -> list[Config]:
    """Validated configs of ``experiment`` for the cartesian product of list-valued assignments (how
    grid files, ``run`` and the compute plan turn parameters into runs)."""
    if experiment not in RUNNERS:
        raise ConfigError(f"unknown experiment {experiment!r}; known: {sorted(RUNNERS)}")
    config_cls, _ = RUNNERS[experiment]
    axes = {k: (v if isinstance(v, list) else [v]) for k, v in assignments.items()}
    return [config_cls.from_dict(dict(zip(axes, combo))) for combo in itertools.product(*axes.values())]


PENDING_GPU = "pending GPU"
PENDING_CPU = "waiting for CPU time"


def pending_reason(device: str) -> str:
    """Why a run of a grid on ``device`` has no record: it waits for a GPU or for CPU-hours (the
    compute plan's)."""
    return PENDING_GPU if device == "cuda" else PENDING_CPU


def results_version(config: Config) -> str:
    """The results version of this config's records: its class's ``results_version``, or the version
    its class gives some of its values (:meth:`Config.value_results_version`)."""
    return config.value_results_version() or type(config).results_version


def dataset_checksums(config: Config) -> dict[str, str]:
    """SHA-256 of every dataset file the config reads (``config.dataset_files()`` roles)."""
    files = getattr(config, "dataset_files", lambda: {})()
    return {f"{ds}/{role}": registry.get_file(ds, role).sha256 for ds, roles in files.items() for role in roles}


def record_key(config: Config) -> str:
    blob = json.dumps({"experiment": config.experiment, "config": config.key_dict(),
                       "data": dataset_checksums(config), "results_version": results_version(config)},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


# --- where records are read and written -----------------------------------------------------------------

_scratch: Path | None = None


def _scratch_dir() -> Path:
    """This process's scratch record directory (created on first use, removed at exit)."""
    global _scratch
    if _scratch is None:
        _scratch = Path(tempfile.mkdtemp(prefix="recunlearn-records-"))
        atexit.register(shutil.rmtree, _scratch, True)
    return _scratch


def read_dirs(records_dir: Path | None = None) -> list[Path]:
    """Directories a record is looked up in, in order."""
    if records_dir is not None:
        return [Path(records_dir)]
    if os.environ.get(paths.RECORDS_ENV):
        return [paths.records_dir()]
    return [paths.committed_records_dir()] + ([_scratch] if _scratch is not None else [])


def write_dir(records_dir: Path | None = None) -> Path:
    """Directory a newly computed record is written to."""
    if records_dir is not None:
        return Path(records_dir)
    if os.environ.get(paths.RECORDS_ENV):
        return paths.records_dir()
    return _scratch_dir()


def record_path(config: Config, records_dir: Path | None = None) -> Path:
    """Where the record of ``config`` is written (``records_dir`` or the default write directory)."""
    return write_dir(records_dir) / config.experiment / f"{record_key(config)}.json"


def device_twins(config: Config) -> list[Config]:
    """``config``, then the same run on each other device its class allows. A run is one run whichever
    device computed it: its record is looked up on the asked device first, then on the others (the
    device is part of the key, so each device's record is a file of its own, and the record names
    the device that made it)."""
    spec = next((field for field in dataclasses.fields(config) if field.name == "device"), None)
    if spec is None:
        return [config]
    others = [device for device in spec.metadata.get("choices") or () if device != config.device]
    return [config, *(config.replace(device=device) for device in others)]


def _find(config: Config, records_dir: Path | None) -> Path | None:
    for twin in device_twins(config):
        name = Path(twin.experiment) / f"{record_key(twin)}.json"
        found = next((folder / name for folder in read_dirs(records_dir) if (folder / name).is_file()), None)
        if found is not None:
            return found
    return None


def _is_committed_dir(folder: Path) -> bool:
    return folder.resolve() == paths.committed_records_dir().resolve()


def _note(config: Config, status: str, record: dict | None) -> None:
    ledger = os.environ.get(LEDGER_ENV)
    if not ledger:
        return
    line = {"experiment": config.experiment, "key": (record or {}).get("key") or record_key(config),  # the file read
            "status": status,
            "device": (record or {}).get("device", getattr(config, "device", None)),
            "git_commit": (record or {}).get("git_commit"), "source_fingerprint": (record or {}).get("source_fingerprint")}
    with open(ledger, "a") as handle:
        handle.write(json.dumps(line) + "\n")


# --- records ------------------------------------------------------------------------------------------

def cpu_model() -> str | None:
    """The processor's model name as Linux reports it (else ``platform.processor()``, else None): a
    number that depends on the vector instructions a CPU offers reproduces bit for bit on its kind."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def environment() -> dict[str, Any]:
    import numpy
    import torch
    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
            "recunlearn": __version__, "platform": platform.platform(), "cpu": cpu_model(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),  # the vector instructions torch's kernels use
            "torch_threads": torch.get_num_threads(),
            "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def compute_record(config: Config) -> dict[str, Any]:
    """Run the registered runner of ``config`` (on the library's CPU thread count) and wrap its payload
    as a record (undefined values as ``None``, exactly as it is stored)."""
    if config.experiment not in RUNNERS:
        raise KeyError(f"no runner registered for experiment {config.experiment!r}; known: {sorted(RUNNERS)}")
    _config_cls, runner = RUNNERS[config.experiment]
    with cpu_threads():
        wall, cpu, before = time.perf_counter(), time.process_time(), earlier_seconds()
        payload = runner(config)
        cost = {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu}
        resumed = {key: value - before[key] for key, value in earlier_seconds().items()}
        if any(resumed.values()):  # trainings resumed from an earlier process: their seconds there count too
            cost = {key: cost[key] + resumed[key] for key in cost} | {"resumed": resumed}
        env = environment()
    return strict_json_value({"experiment": config.experiment, "key": record_key(config), "config": config.to_dict(),
            "dataset_sha256": dataset_checksums(config), "results_version": results_version(config),
            "git_commit": git_commit(), "source_fingerprint": source_fingerprint(), "environment": env,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "cost": cost, **payload})


def run_or_load(config: Config, records_dir: Path | None = None, recompute: bool | str = False) -> dict[str, Any]:
    """The record of ``config``: loaded if it exists, else computed by the registered runner and written
    atomically to :func:`write_dir`. ``recompute=True`` computes it anew in any case;
    ``recompute="unclean"`` only when the stored record does not name a clean commit (or is not strict
    JSON) -- a resumable way to replace records made from uncommitted code."""
    if config.experiment not in RUNNERS:
        raise KeyError(f"no runner registered for experiment {config.experiment!r}; known: {sorted(RUNNERS)}")
    if recompute not in (False, True, "unclean"):
        raise ValueError(f"recompute must be False, True or 'unclean', got {recompute!r}")
    found = None if recompute is True else _find(config, records_dir)
    if found is not None:
        try:
            record = read_json_strict(found)
        except ValueError:
            if recompute != "unclean":
                raise
            record = {}  # not strict JSON: recomputed like an unclean record
        if recompute != "unclean" or is_clean_commit(record.get("git_commit")):
            _note(config, "loaded", record)
            return record
    target = write_dir(records_dir)
    if _is_committed_dir(target):
        require_clean(("lib",), f"writing a run record into {paths.committed_records_dir()}")
    record = compute_record(config)
    write_json_atomic(target / config.experiment / f"{record['key']}.json", record)
    _note(config, "computed", record)
    return record


def load_record(config: Config, records_dir: Path | None = None) -> dict[str, Any] | None:
    """The stored record of ``config``, or None (noted as pending) if it has not been computed."""
    found = _find(config, records_dir)
    record = read_json_strict(found) if found is not None else None
    _note(config, "loaded" if record else "pending", record)
    return record


def load_records(experiment: str, records_dir: Path | None = None) -> list[dict[str, Any]]:
    """Every stored record of ``experiment`` in the read directories."""
    return [read_json_strict(p) for folder in read_dirs(records_dir)
            for p in sorted((Path(folder) / experiment).glob("*.json"))]


def collect_records(configs, compute_missing: bool, row, records_dir=None, columns=()):
    """One row ``row(config, record)`` per config with a record (computed first when
    ``compute_missing``); the configs without one are listed, as dicts, in ``frame.attrs["pending"]``.
    ``columns``: the frame's columns when no run has a record."""
    import pandas as pd

    rows, pending = [], []
    for config in configs:
        record = run_or_load(config, records_dir) if compute_missing else load_record(config, records_dir)
        if record is None:
            pending.append(config.to_dict())
        else:
            rows.append(row(config, record))
    frame = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(columns))
    frame.attrs["pending"] = pending
    return frame
