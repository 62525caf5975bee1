"""Execute the study's notebooks with papermill at a named profile.

- ``smoke``: CPU, seconds. Executes ``notebooks/<paper>/<name>.ipynb`` in place with
  ``notebooks/params/<paper>/<name>.smoke.yml``; the outputs are nbval's references. Run
  records are computed afresh into a temporary directory removed afterwards: never into the book,
  never into a cache that a later run would trust.
- ``paper``: the paper's settings. Writes ``book/<paper>/<name>.ipynb`` with
  ``notebooks/params/<paper>/<name>.paper.yml``, reading (and, where a page computes, writing) the
  committed ``book/_results/records``. Refused unless ``lib/`` and ``notebooks/`` are committed.
  The executed copy carries ``metadata.recunlearn``: profile, parameters, the full commit, time, and
  a summary of the run records behind the page (how many loaded, computed and pending; their devices
  and commits), which the status page reads.
"""

from __future__ import annotations

import collections
import datetime as _dt
import json
import os
import tempfile
from pathlib import Path

import yaml

from .. import paths
from ..experiments.records import LEDGER_ENV
from ..provenance import git_commit, require_clean
from .downloads import write_runs_csv
from .glance import PAGE_ENV

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


def summarize_ledger(lines: list[dict]) -> dict:
    """What stands behind a page: counts of records loaded / computed / pending (distinct keys), and
    the devices and commits of the records it shows."""
    latest = {(line["experiment"], line["key"]): line for line in lines}
    status = collections.Counter(line["status"] for line in latest.values())
    shown = [line for line in latest.values() if line["status"] != "pending"]
    return {"records": len(shown), "computed": status["computed"], "pending": status["pending"],
            "devices": sorted({str(line.get("device")) for line in shown}),
            "commits": dict(collections.Counter(str(line.get("git_commit")) for line in shown)),
            "fingerprints": dict(collections.Counter(str(line.get("source_fingerprint")) for line in shown))}


def execute(notebook: Path, profile: str, extra_parameters: dict | None = None) -> Path:
    """Run ``notebook`` with papermill at ``profile`` (plus ``extra_parameters``); returns the output path."""
    import nbformat
    import papermill

    params = {**parameters(notebook, profile), **(extra_parameters or {})}
    commit = (require_clean(("lib", "notebooks"), f"rendering {notebook.stem} at the paper profile")
              if profile == "paper" else git_commit())
    target = output_path(notebook, profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    env_backup = {k: os.environ.get(k) for k in (paths.RECORDS_ENV, LEDGER_ENV, PAGE_ENV, "JUPYTER_PREFER_ENV_PATH")}
    scratch = tempfile.TemporaryDirectory(prefix="recunlearn-notebook-")
    ledger = Path(scratch.name) / "ledger.jsonl"
    ledger.touch()
    os.environ[paths.RECORDS_ENV] = str(paths.committed_records_dir() if profile == "paper"
                                         else Path(scratch.name) / "records")
    os.environ[LEDGER_ENV] = str(ledger)
    os.environ[PAGE_ENV] = f"{notebook.parent.name}/{notebook.stem}"
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
            if cell.cell_type == "code" and "hide-input" not in cell.metadata.get("tags", []):
                cell.metadata["tags"] = [*cell.metadata.get("tags", []), "hide-input"]  # papermill's injected cell
        if profile == "paper":
            lines = [json.loads(line) for line in ledger.read_text().splitlines() if line]
            behind = summarize_ledger(lines)
            write_runs_csv(notebook, lines)
            executed.metadata["recunlearn"] = {
                "profile": profile, "parameters": params, "git_commit": commit, "run_records": behind,
                "device": ", ".join(behind["devices"]) or "none (no trained model)",
                "executed": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
        nbformat.write(executed, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        scratch.cleanup()
        for key, value in env_backup.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return target
