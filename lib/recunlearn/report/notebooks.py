"""Execute the study's notebooks with papermill at a named profile.

- ``smoke``: CPU, seconds. Executes ``notebooks/<paper>/<name>.ipynb`` in place with
  ``notebooks/params/<paper>/<name>.smoke.yml``; the outputs are nbval's references. Run
  records go to the per-user cache, never into the book.
- ``paper``: the paper's settings. Writes ``book/<paper>/<name>.ipynb`` with
  ``notebooks/params/<paper>/<name>.paper.yml``; run records go to ``book/_results/records``.
  The executed copy carries ``metadata.recunlearn`` (profile, parameters, commit, device, time),
  which the status page reads.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

import yaml

from .. import paths
from ..experiments.records import git_commit

PROFILES = ("smoke", "paper")
NOTEBOOK_DIR = paths.REPO_ROOT / "notebooks"
BOOK_DIR = paths.REPO_ROOT / "book"


def list_notebooks() -> list[Path]:
    """Every study notebook, ``notebooks/<paper>/<name>.ipynb``, sorted."""
    return sorted(p for p in NOTEBOOK_DIR.glob("*/*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts and not p.name.startswith("."))


def find_notebook(name: str) -> Path:
    """A notebook by ``<paper>/<name>``, by stem, or by a unique stem prefix (e.g. ``table-04``)."""
    matches = [p for p in list_notebooks()
               if name in (f"{p.parent.name}/{p.stem}", p.stem) or p.stem.startswith(name)
               or f"{p.parent.name}/{p.stem}".startswith(name)]
    if len(matches) != 1:
        known = [f"{p.parent.name}/{p.stem}" for p in list_notebooks()]
        raise ValueError(f"notebook {name!r} matches {len(matches)} notebooks; known: {known}")
    return matches[0]


def parameters(notebook: Path, profile: str) -> dict:
    """The parameters of ``notebook`` at ``profile`` from its YAML file (empty if none)."""
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    path = NOTEBOOK_DIR / "params" / notebook.parent.name / f"{notebook.stem}.{profile}.yml"
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def output_path(notebook: Path, profile: str) -> Path:
    return notebook if profile == "smoke" else BOOK_DIR / notebook.parent.name / notebook.name


def execute(notebook: Path, profile: str, extra_parameters: dict | None = None) -> Path:
    """Run ``notebook`` with papermill at ``profile`` (plus ``extra_parameters``); returns the output path."""
    import nbformat
    import papermill

    params = {**parameters(notebook, profile), **(extra_parameters or {})}
    target = output_path(notebook, profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    records = paths.records_dir() if profile == "paper" else paths.cache_dir() / "records-smoke"
    env_backup = {k: os.environ.get(k) for k in (paths.RECORDS_ENV, "JUPYTER_PREFER_ENV_PATH")}
    os.environ[paths.RECORDS_ENV] = str(records)
    os.environ["JUPYTER_PREFER_ENV_PATH"] = "1"
    tmp = target.with_name(f".{target.stem}.running.ipynb")
    try:
        papermill.execute_notebook(str(notebook), str(tmp), parameters=params, kernel_name="python3",
                                   cwd=str(notebook.parent), progress_bar=False)
        executed = nbformat.read(tmp, as_version=4)
        executed.metadata.pop("papermill", None)
        for cell in executed.cells:
            cell.metadata.pop("papermill", None)
            cell.metadata.pop("execution", None)
        if profile == "paper":
            executed.metadata["recunlearn"] = {
                "profile": profile, "parameters": params, "git_commit": git_commit(),
                "device": params.get("DEVICE", "cpu"),
                "executed": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        nbformat.write(executed, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        for key, value in env_backup.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return target
