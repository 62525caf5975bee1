"""One build of the book per test session, shared by the build and browser tests."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """``(returncode, log, html_dir)`` of ``jupyter-book build . -W -n --keep-going`` into a temporary directory."""
    out = tmp_path_factory.mktemp("book")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run([str(jupyter_book), "build", str(REPO), "-W", "-n", "--keep-going",
                             "--path-output", str(out)], capture_output=True, text=True, timeout=900)
    yield result.returncode, result.stdout[-4000:] + result.stderr[-4000:], out / "_build" / "html"
    shutil.rmtree(out / "_build", ignore_errors=True)
