"""Every study notebook is parameters -> one builder call -> show: its first code cell shows every
parameter of its page (:func:`recunlearn.report.pages.page_grid`), its second builds the page with the builder module named after the chapter and the
notebook (``recunlearn.report.pages.<chapter>_<notebook stem with underscores>``), every other code
cell only shows, checks, glances at or publishes the page (once), one cell is the nbval-checked
``page.check()``, and the page ends with its downloads."""

from __future__ import annotations

import json
import re

import pytest

from recunlearn import paths

NOTEBOOKS = sorted((paths.REPO_ROOT / "notebooks").glob("*/[!.]*.ipynb"))


def builder_module(path) -> str:
    return f"recunlearn.report.pages.{path.parent.name}_{path.stem.replace('-', '_')}"


def test_every_chapter_has_notebooks():
    assert {p.parent.name for p in NOTEBOOKS} == {"cure4rec", "casper", "sru", "bystanders"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_notebook_is_parameters_build_show_publish(path):
    notebook = json.loads(path.read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"
            and not {"parameters", "injected-parameters"} & set(c["metadata"].get("tags", []))]
    sources = ["".join(c["source"]) for c in code]
    page = f"{path.parent.name}/{path.stem}"
    assert sources[0] == f'from recunlearn.report import show_parameters\n\nshow_parameters(globals(), "{page}")'
    assert sources[1].startswith(f"from recunlearn.report.pages import notebook_parameters\n"
                                 f"from {builder_module(path)} import build\n\n"
                                 "page = build(**notebook_parameters(globals()))")
    for source in sources[2:]:
        lines = [line for line in source.splitlines() if line and not line.startswith("#")]
        assert all(re.fullmatch(r'page\.(show\("\w+"\)|check\(\)|glance\(\)|publish\(\))', line) for line in lines), source
    assert sum("page.publish()" in s for s in sources) == 1
    checked = [s for c, s in zip(code, sources) if "nbval-check-output" in c["metadata"].get("tags", [])]
    assert len(checked) == 1 and checked[0].endswith("page.check()")
    assert notebook["cells"][-1]["metadata"].get("tags") == ["downloads"]
