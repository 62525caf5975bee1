"""Which code made a result: the git commit, whether the tree was clean, and a source fingerprint.

- ``git_commit()``: the full commit of the checkout, with ``-dirty`` appended when files under
  ``lib/`` differ from it or are not committed (``unknown`` outside a git checkout).
- ``source_fingerprint()``: SHA-256 (first 16 hex digits) over the path and bytes of every ``.py``
  file of the library that can change a result -- every module except the presentation package
  ``report/``, the run scheduler ``compute/`` and the command line. Two records with the same
  fingerprint were computed by the same code, whatever the commit.
- ``require_clean(paths, purpose)``: raises :class:`ProvenanceError` unless ``paths`` are committed;
  records written into the committed record directory and paper-profile renders call it.
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path

from . import paths

LIBRARY = Path(__file__).resolve().parent
PRESENTATION = ("report", "compute", "cli.py", "__main__.py")
"""Library parts that only present results or schedule runs; they are left out of the fingerprint."""


class ProvenanceError(RuntimeError):
    """A result would be stored or rendered from code that is not committed."""


def _git(*args: str) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", *args], cwd=paths.REPO_ROOT, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None


def uncommitted(paths_: tuple[str, ...] = ("lib",)) -> list[str] | None:
    """Files under ``paths_`` (relative to the repository) that differ from HEAD, untracked ones included
    (a new module that is not committed would run too); git-ignored files are not counted. None without git."""
    result = _git("status", "--porcelain", "--untracked-files=all", "--", *paths_)
    if result is None or result.returncode != 0:
        return None
    return [line[3:] for line in result.stdout.splitlines() if line.strip()]


def git_commit() -> str:
    """``<full sha>``, ``<full sha>-dirty`` when ``lib/`` has uncommitted changes or files, or ``unknown``."""
    head = _git("rev-parse", "HEAD")
    changed = uncommitted(("lib",))
    if head is None or head.returncode != 0 or changed is None:
        return "unknown"
    return head.stdout.strip() + ("-dirty" if changed else "")


def is_clean_commit(commit: str | None) -> bool:
    """Whether ``commit`` (as stored in a record) names a clean commit."""
    return bool(commit) and commit != "unknown" and not commit.endswith("-dirty")


@functools.lru_cache(maxsize=1)
def source_fingerprint() -> str:
    """Fingerprint of the library's computing code (every ``.py`` outside ``PRESENTATION``)."""
    digest = hashlib.sha256()
    for path in sorted(LIBRARY.rglob("*.py")):
        relative = path.relative_to(LIBRARY)
        if relative.parts[0] in PRESENTATION:
            continue
        digest.update(relative.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def require_clean(paths_: tuple[str, ...], purpose: str) -> str:
    """The clean commit of the checkout, or :class:`ProvenanceError` naming what is uncommitted."""
    changed = uncommitted(paths_)
    if changed is None:
        raise ProvenanceError(f"{purpose} needs a git checkout (to name the commit that made it); none found "
                              f"at {paths.REPO_ROOT}")
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        raise ProvenanceError(f"{purpose} is refused: uncommitted changes in {shown}. Commit first (and run from "
                              f"a `git worktree` of that commit), or write to another directory with --records.")
    return git_commit()
