"""Which code made a result: the git commit, whether the tree was clean, and a source fingerprint.

- ``git_commit()``: the full commit of the checkout, with ``-dirty`` appended when files under
  ``lib/`` differ from it or are not committed (``unknown`` outside a git checkout).
- ``source_fingerprint()``: SHA-256 (first 16 hex digits) over the path and bytes of every ``.py``
  file of the library that can change a result -- every module except the presentation package
  ``report/``, the run scheduler ``compute/`` and the command line. Two records with the same
  fingerprint were computed by the same code, whatever the commit.
- ``source_fingerprint(module)``: the same over the computing files that ``module`` imports, directly
  or through other library modules (:func:`imported_files`: a static reading of the ``import``
  statements, those inside functions included). A model kept between processes is named by the
  fingerprint of the module that trains it, so a change to code it never runs (another paper's)
  leaves it usable.
- ``require_clean(paths, purpose)``: raises :class:`ProvenanceError` unless ``paths`` are committed;
  records written into the committed record directory and paper-profile renders call it.
"""

from __future__ import annotations

import ast
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


@functools.lru_cache(maxsize=None)
def source_fingerprint(module: str | None = None) -> str:
    """Fingerprint of the library's computing code (every ``.py`` outside ``PRESENTATION``); with
    ``module`` (e.g. ``"recunlearn.experiments.casper"``), of the computing files it imports."""
    digest = hashlib.sha256()
    for path in sorted(LIBRARY.rglob("*.py")) if module is None else imported_files(module):
        relative = path.relative_to(LIBRARY)
        if relative.parts[0] in PRESENTATION:
            continue
        digest.update(relative.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _module_file(module: str) -> Path | None:
    """The file of library module ``module`` (dotted, from the package name), or None."""
    parts = module.split(".")[1:]
    candidates = [LIBRARY.joinpath(*parts, "__init__.py")]
    if parts:
        candidates.insert(0, LIBRARY.joinpath(*parts).with_suffix(".py"))
    return next((path for path in candidates if path.is_file()), None)


def _imported_names(module: str, path: Path) -> set[str]:
    """The library modules whose code the ``import`` statements of ``module`` (at ``path``) use: for
    ``from X import a``, the submodule X.a where there is one, else X (a is a name defined in X)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.update(f"{base}.{alias.name}" if _module_file(f"{base}.{alias.name}") else base
                         for alias in node.names)
    return {name for name in names if name.split(".")[0] == LIBRARY.name}


@functools.lru_cache(maxsize=None)
def imported_files(module: str) -> tuple[Path, ...]:
    """The library files behind ``module``: its own, those of the library modules it imports (and they
    import, transitively), and the ``__init__.py`` of every package above each of them. What such a
    package imports is followed only where a module imports a name from the package itself: importing
    a computing module binds names of its own and changes nothing another module computes
    (``tests/unit/test_provenance.py`` checks that), so the rest of a package cannot change what
    ``module`` computes."""
    if _module_file(module) is None:
        raise ValueError(f"no library module {module!r} under {LIBRARY}")
    files, seen, todo = set(), set(), [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is not None:
            files.add(path)
            todo += _imported_names(name, path)
    for path in list(files):
        for folder in path.relative_to(LIBRARY).parents:
            files.add(LIBRARY / folder / "__init__.py")
    return tuple(sorted(path for path in files if path.is_file()))


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
