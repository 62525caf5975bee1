"""One notebook executed as a new machine would: an empty home directory, empty caches, no records."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "cure4rec" / "learn-baselines.ipynb"


def _checked_output(path: Path) -> str:
    cells = json.loads(path.read_text())["cells"]
    (cell,) = [c for c in cells if "nbval-check-output" in c.get("metadata", {}).get("tags", [])]
    return "".join(o.get("text", "") if isinstance(o.get("text"), str) else "".join(o.get("text", []))
                   for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def test_a_notebook_runs_from_an_empty_home_and_matches_its_smoke_reference(tmp_path):
    home, out = tmp_path / "home", tmp_path / "out.ipynb"
    home.mkdir()
    params = REPO / "notebooks" / "params" / "cure4rec" / "learn-baselines.smoke.yml"
    env = {key: value for key, value in os.environ.items() if not key.startswith("RECUNLEARN_")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), JUPYTER_PREFER_ENV_PATH="1",
               RECUNLEARN_OFFLINE="1", OMP_NUM_THREADS="1", RECUNLEARN_DATA=os.environ.get(
                   "RECUNLEARN_DATA", str(REPO.parent / "shared" / "data")))
    papermill = Path(sys.executable).with_name("papermill")
    result = subprocess.run([str(papermill), "-k", "python3", "--no-progress-bar", str(NOTEBOOK), str(out),
                             "-f", str(params), "--cwd", str(NOTEBOOK.parent)],
                            env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert _checked_output(out) == _checked_output(NOTEBOOK)
    leftovers = [p for p in home.rglob("*") if "recunlearn" in p.name]
    assert not leftovers, f"the run wrote into the home directory: {leftovers}"
    assert yaml.safe_load(params.read_text())  # the smoke profile exists and is not empty
