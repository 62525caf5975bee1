"""Audit of stored run records: are they strict JSON, made from a clean commit, and still current?

For every record file:

- ``strict``: the file parses as strict JSON (no ``NaN`` tokens);
- ``clean``: its ``git_commit`` names a clean commit (not ``-dirty``, not ``unknown``);
- ``current``: the config it stores, read by today's config class, still has the key the file is
  named by -- i.e. today's code would look this record up. A record whose experiment's
  ``results_version`` was bumped, or whose config no longer validates, is ``stale``: no page uses it;
- ``same_code``: it was made by the library source of this checkout (same fingerprint). Records of
  other fingerprints are trusted only while CI's re-run of a sample of them reproduces them.

``stale_or_dirty_grid`` turns the records that need recomputing into a grid file for
``python -m recunlearn grid`` (one run per record).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .. import paths
from ..io import loads_strict
from ..provenance import is_clean_commit, source_fingerprint
from .config import ConfigError
from .records import RUNNERS, record_key

COLUMNS = ["experiment", "file", "strict", "clean", "current", "same_code", "git_commit", "source_fingerprint"]


def _current_key(record: dict) -> str | None:
    entry = RUNNERS.get(record.get("experiment", ""))
    if entry is None:
        return None
    try:
        return record_key(entry[0].from_dict(record["config"]))
    except (ConfigError, KeyError, TypeError):
        return None


def audit_records(records_dir: Path | None = None) -> pd.DataFrame:
    """One row per record file under ``records_dir`` (default: the committed records)."""
    root = Path(records_dir or paths.committed_records_dir())
    fingerprint = source_fingerprint()
    rows = []
    for path in sorted(root.glob("*/*.json")):
        text = path.read_text()
        try:
            record, strict = loads_strict(text), True
        except ValueError:
            record, strict = json.loads(text), False
        commit = record.get("git_commit")
        rows.append({"experiment": path.parent.name, "file": str(path.relative_to(root)), "strict": strict,
                     "clean": is_clean_commit(commit), "current": _current_key(record) == path.stem,
                     "same_code": record.get("source_fingerprint") == fingerprint, "git_commit": commit,
                     "source_fingerprint": record.get("source_fingerprint")})
    return pd.DataFrame(rows, columns=COLUMNS)


def audit_summary(audit: pd.DataFrame) -> pd.DataFrame:
    """Counts per experiment: records, current, stale, from a dirty or unknown commit, not strict JSON,
    made by this checkout's code."""
    if audit.empty:
        return pd.DataFrame(columns=["experiment", "records", "current", "stale", "dirty", "not_strict",
                                     "this_code"])
    grouped = audit.groupby("experiment")
    return pd.DataFrame({"records": grouped.size(), "current": grouped["current"].sum(),
                         "stale": (~audit["current"]).groupby(audit["experiment"]).sum(),
                         "dirty": (~audit["clean"]).groupby(audit["experiment"]).sum(),
                         "not_strict": (~audit["strict"]).groupby(audit["experiment"]).sum(),
                         "this_code": grouped["same_code"].sum()}).reset_index()


def needs_recompute(audit: pd.DataFrame) -> pd.DataFrame:
    """Records that are stale, dirty or not strict JSON."""
    return audit[~(audit["current"] & audit["clean"] & audit["strict"])]


def stale_or_dirty_grid(audit: pd.DataFrame, records_dir: Path | None = None) -> list[dict]:
    """A grid file's content (``[{experiment, params}]``) recomputing every record of ``needs_recompute``
    with today's code, one run each (every value a one-element axis), in the order of ``audit``."""
    root = Path(records_dir or paths.committed_records_dir())
    specs = []
    for file in needs_recompute(audit)["file"]:
        record = json.loads((root / file).read_text())
        config_cls = RUNNERS[record["experiment"]][0]
        allowed = set(config_cls.parameter_names())
        specs.append({"experiment": record["experiment"],
                      "params": {k: [v] for k, v in record["config"].items() if k in allowed}})
    return specs
