"""Files a reader can download from a page: the runs behind it, as one CSV.

A paper-profile render notes every record the page looked up (the ledger of
:mod:`recunlearn.experiments.records`). :func:`write_runs_csv` turns that list into
``book/_results/pages/<paper>/<page>.runs.csv``: one row per distinct run, computed or pending, with
the record's file in the repository, the commit and code fingerprint that made it, its
configuration (``config.*``), its metrics (``metrics.*``) and its timings (``timings.*``). Nested
values that are not scalars (per-shard lists, loss curves) stay in the JSON record only.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from .. import paths
from ..io import read_json_strict, write_bytes_atomic

PAGES_DIR = paths.REPO_ROOT / "book" / "_results" / "pages"
FLATTENED = ("config", "metrics", "timings")


def runs_csv_path(notebook: Path) -> Path:
    """Where the runs of ``notebooks/<paper>/<page>.ipynb`` are written: ``book/_results/pages/<paper>/<page>.runs.csv``."""
    return PAGES_DIR / notebook.parent.name / f"{notebook.stem}.runs.csv"


def _scalars(prefix: str, values: dict | None) -> dict:
    return {f"{prefix}.{k}": v for k, v in (values or {}).items()
            if v is None or isinstance(v, (bool, int, float, str))}


def runs_table(lines: list[dict], records_dir: Path | None = None) -> pd.DataFrame:
    """One row per distinct (experiment, key) of the ledger ``lines`` (the last status wins), sorted."""
    records_dir = records_dir or paths.committed_records_dir()
    latest = {(line["experiment"], line["key"]): line for line in lines}
    rows = []
    for (experiment, key), line in sorted(latest.items()):
        path = records_dir / experiment / f"{key}.json"
        row = {"experiment": experiment, "key": key, "status": line["status"], "record": None}
        if line["status"] != "pending" and path.is_file():
            record = read_json_strict(path)
            row.update(record=str(path.relative_to(paths.REPO_ROOT)) if path.is_relative_to(paths.REPO_ROOT)
                       else str(path), git_commit=record.get("git_commit"),
                       source_fingerprint=record.get("source_fingerprint"), created=record.get("created"),
                       device=record.get("device"), seed=record.get("seed"))
            for part in FLATTENED:
                row.update(_scalars(part, record.get(part)))
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["experiment", "key", "status", "record"])


def write_runs_csv(notebook: Path, lines: list[dict], records_dir: Path | None = None) -> Path | None:
    """Write the runs behind a paper render of ``notebook`` atomically; returns the path (None, and no
    file, for a page that looked up no run)."""
    target = runs_csv_path(notebook)
    if not lines:
        target.unlink(missing_ok=True)
        return None
    buffer = io.StringIO()
    runs_table(lines, records_dir).to_csv(buffer, index=False)
    write_bytes_atomic(target, buffer.getvalue().encode())
    return target


DATASET_PAGES = {"table-04-dataset-statistics", "table-02-dataset-statistics", "table-dataset-statistics"}
"""Pages computed from the data files alone: no run records stand behind them."""


def downloads_markdown(notebook: Path, paper_tables: list[str]) -> str:
    """The closing "Downloads" cell of a notebook: its runs CSV (pages with runs) and the paper's
    transcribed tables ``paper_tables`` (names of ``notebooks/paper/<name>.csv``)."""
    lines = ["## Downloads", ""]
    if notebook.stem not in DATASET_PAGES:
        lines.append(f"- {{download}}`The runs behind this page (CSV) <../_results/pages/{notebook.parent.name}/"
                     f"{notebook.stem}.runs.csv>`: one row per run the page reads, computed or pending: for a "
                     "computed run its configuration, metrics and timings, the commit and code fingerprint that "
                     "made it and its record's file under `book/_results/records/` in the repository; for a "
                     "pending run its experiment and record key.")
    for name in paper_tables:
        lines.append(f"- {{download}}`The paper's numbers as transcribed for this page: {name}.csv "
                     f"<../../notebooks/paper/{name}.csv>`, with the page and table each value was read from.")
    if len(lines) == 2:
        lines.append("Nothing to download: the page is computed from the data files alone.")
    return "\n".join(lines)
