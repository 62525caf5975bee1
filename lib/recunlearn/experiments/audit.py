"""Audit of stored run records: are they strict JSON, made from a clean commit, and still current?

For every record file:

- ``strict``: the file parses as strict JSON (no ``NaN`` tokens);
- ``clean``: its ``git_commit`` names a clean commit (not ``-dirty``, not ``unknown``);
- ``current``: the config it stores, read by today's config class, still has the key the file is
  named by -- i.e. today's code would look this record up. A record whose experiment's
  ``results_version`` was bumped, or whose config no longer validates, is ``stale``: no page uses it;
- ``same_code``: it was made by the library source of this checkout (same fingerprint). Records of
  other fingerprints are trusted only while CI's re-run of a sample of them reproduces them.
- ``commit_code``: its ``source_fingerprint`` is the fingerprint of the library files its
  ``git_commit`` holds (:func:`commit_fingerprints`, read from git): the commit it names is the code
  that made it. False also for a record without a fingerprint; None where that cannot be checked (a
  dirty or unknown commit, or one this clone does not have, as in a shallow clone).

``stale_or_dirty_grid`` turns the records that need recomputing into a grid file for
``python -m recunlearn grid`` (one run per record).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path, PurePosixPath

import pandas as pd

from .. import paths
from ..io import loads_strict
from ..provenance import LIBRARY, PRESENTATION, git_commit, is_clean_commit, source_fingerprint
from .config import ConfigError
from .records import RUNNERS, record_key

COLUMNS = ["experiment", "file", "strict", "clean", "current", "same_code", "commit_code", "git_commit",
           "source_fingerprint"]


def _git_bytes(*args: str, stdin: bytes | None = None) -> bytes | None:
    try:
        result = subprocess.run(["git", *args], cwd=paths.REPO_ROOT, input=stdin, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout if result.returncode == 0 else None


def commit_fingerprints(commits) -> dict[str, str | None]:
    """For each commit, :func:`~recunlearn.provenance.source_fingerprint` of the library files that
    commit holds (read from git, not from the checkout): the fingerprint a record made at that commit
    carries. None for a commit git does not have here, and for every commit when git cannot be read
    (no git, a clone without the files' contents)."""
    commits = list(dict.fromkeys(commits))
    try:
        return _commit_fingerprints(commits)
    except (ValueError, IndexError, OSError):  # an answer of git's this parser does not expect: cannot check
        return dict.fromkeys(commits)


def _commit_fingerprints(commits: list[str]) -> dict[str, str | None]:
    library = LIBRARY.relative_to(paths.REPO_ROOT.resolve()).as_posix()
    trees: dict[str, list[tuple[PurePosixPath, str]] | None] = {}
    for commit in commits:
        listing = _git_bytes("ls-tree", "-r", "-z", commit, "--", library)
        if listing is None:
            trees[commit] = None
            continue
        files = []
        for entry in filter(None, listing.split(b"\0")):
            meta, _, name = entry.decode("utf-8", "surrogateescape").partition("\t")
            relative = PurePosixPath(name).relative_to(library)
            if meta.split()[1] == "blob" and relative.suffix == ".py" and relative.parts[0] not in PRESENTATION:
                files.append((relative, meta.split()[2]))
        trees[commit] = sorted(files)  # the order of source_fingerprint's sorted paths
    blobs = sorted({sha for files in trees.values() if files for _, sha in files})
    contents, output = {}, _git_bytes("cat-file", "--batch", stdin="".join(f"{sha}\n" for sha in blobs).encode())
    at = 0
    for sha in blobs if output is not None else ():
        header_end = output.index(b"\n", at)
        header = output[at:header_end].split()
        if len(header) < 3:  # "<sha> missing": the clone lacks the file's contents
            return dict.fromkeys(commits)
        size = int(header[2])
        contents[sha] = output[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
    fingerprints = {}
    for commit, files in trees.items():
        if files is None or output is None:
            fingerprints[commit] = None
            continue
        digest = hashlib.sha256()
        for relative, sha in files:
            digest.update(relative.as_posix().encode() + b"\0" + contents[sha] + b"\0")
        fingerprints[commit] = digest.hexdigest()[:16]
    return fingerprints


def _commit_code(record: dict, fingerprints: dict[str, str | None]) -> bool | None:
    commit = record.get("git_commit")
    if not is_clean_commit(commit) or fingerprints.get(commit) is None:
        return None
    return record.get("source_fingerprint") == fingerprints[commit]


def checkout_matches_its_commit() -> bool | None:
    """Whether the library files this process would fingerprint are the files of the checkout's commit:
    False where files git does not track (ignored ones, e.g. under ``.ipynb_checkpoints``) change the
    fingerprint, so that records made here would not name their code; None when it cannot be checked."""
    commit = git_commit()
    if not is_clean_commit(commit):
        return None
    expected = commit_fingerprints([commit])[commit]
    return None if expected is None else expected == source_fingerprint()


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
    records = []
    for path in sorted(root.glob("*/*.json")):
        text = path.read_text()
        try:
            records.append((path, loads_strict(text), True))
        except ValueError:
            records.append((path, json.loads(text), False))
    fingerprints = commit_fingerprints(r.get("git_commit") for _, r, _ in records
                                       if is_clean_commit(r.get("git_commit")))
    rows = []
    for path, record, strict in records:
        commit = record.get("git_commit")
        rows.append({"experiment": path.parent.name, "file": str(path.relative_to(root)), "strict": strict,
                     "clean": is_clean_commit(commit), "current": _current_key(record) == path.stem,
                     "same_code": record.get("source_fingerprint") == fingerprint,
                     "commit_code": _commit_code(record, fingerprints), "git_commit": commit,
                     "source_fingerprint": record.get("source_fingerprint")})
    return pd.DataFrame(rows, columns=COLUMNS)


def audit_summary(audit: pd.DataFrame) -> pd.DataFrame:
    """Counts per experiment: records, current, stale, from a dirty or unknown commit, whose commit does
    not hold the code that made them, not strict JSON, made by this checkout's code."""
    if audit.empty:
        return pd.DataFrame(columns=["experiment", "records", "current", "stale", "dirty", "not_its_commit",
                                     "not_strict", "this_code"])
    grouped = audit.groupby("experiment")
    return pd.DataFrame({"records": grouped.size(), "current": grouped["current"].sum(),
                         "stale": (~audit["current"]).groupby(audit["experiment"]).sum(),
                         "dirty": (~audit["clean"]).groupby(audit["experiment"]).sum(),
                         "not_its_commit": audit["commit_code"].eq(False).groupby(audit["experiment"]).sum(),
                         "not_strict": (~audit["strict"]).groupby(audit["experiment"]).sum(),
                         "this_code": grouped["same_code"].sum()}).reset_index()


def needs_recompute(audit: pd.DataFrame) -> pd.DataFrame:
    """Records that are stale, dirty, not made by the code of the commit they name, or not strict JSON."""
    return audit[~(audit["current"] & audit["clean"] & audit["strict"]) | audit["commit_code"].eq(False)]


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
