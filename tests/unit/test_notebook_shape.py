"""Every study notebook is parameters -> one builder call -> show: its first code cell shows every
parameter of its page (:func:`recunlearn.report.pages.page_grid`), its second builds the page with the
builder module named after the chapter and the notebook
(:func:`recunlearn.report.pages.builder_module`: ``<chapter>_<notebook stem with underscores>``), every
other code cell only shows, checks, glances at or publishes the page (once), one cell is the
nbval-checked ``page.check()``, and the page ends with its downloads."""

from __future__ import annotations

import json
import re

import pytest

from recunlearn import paths
from recunlearn.report.glance import parameters_table
from recunlearn.report.pages import builder_module, page_grid

NOTEBOOKS = sorted((paths.REPO_ROOT / "notebooks").glob("*/[!.]*.ipynb"))


def page_of(path) -> str:
    return f"{path.parent.name}/{path.stem}"


def test_every_chapter_has_notebooks():
    assert {p.parent.name for p in NOTEBOOKS} == {"cure4rec", "casper", "sru", "bystanders"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_notebook_is_parameters_build_show_publish(path):
    notebook = json.loads(path.read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"
            and not {"parameters", "injected-parameters"} & set(c["metadata"].get("tags", []))]
    sources = ["".join(c["source"]) for c in code]
    page = page_of(path)
    assert sources[0] == f'from recunlearn.report import show_parameters\n\nshow_parameters(globals(), "{page}")'
    assert sources[1].startswith(f"from recunlearn.report.pages import notebook_parameters\n"
                                 f"from {builder_module(page)} import build\n\n"
                                 "page = build(**notebook_parameters(globals()))")
    for source in sources[2:]:
        lines = [line for line in source.splitlines() if line and not line.startswith("#")]
        shows = r'page\.(show\("\w+"\)|check\(\)|glance\(\)|publish\(\))'
        assert all(re.fullmatch(shows, line) for line in lines), source
    assert sum("page.publish()" in s for s in sources) == 1
    checked = [s for c, s in zip(code, sources) if "nbval-check-output" in c["metadata"].get("tags", [])]
    assert len(checked) == 1 and checked[0].endswith("page.check()")
    assert notebook["cells"][-1]["metadata"].get("tags") == ["downloads"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_parameter_of_a_notebook_is_one_of_its_page_and_described(path):
    """The parameters cell sets only parameters of the page's GRID, and the Parameters table describes
    every parameter in words a reader can use (no type names, no missing default)."""
    cell = next(c for c in json.loads(path.read_text())["cells"] if "parameters" in c["metadata"].get("tags", []))
    namespace: dict = {}
    exec("".join(cell["source"]), {}, namespace)
    table = parameters_table(namespace, page_of(path))
    assert set(table["parameter"]) == {name.upper() for name in page_grid(page_of(path)).parameter_names()}
    assert not table["allowed"].str.contains(r"typing\.|<class|MISSING|not a parameter", regex=True).any(), table
    assert not table["value used"].str.contains("MISSING").any()


def test_page_grid_names_what_is_not_a_page():
    for name in ("casper", "casper/no-such-page", "casper/runs", "a/b/c"):
        with pytest.raises(KeyError, match="no page"):
            page_grid(name)


def test_a_page_drawing_one_value_of_a_field_it_lacks_is_a_programming_error():
    from recunlearn.experiments.casper import CasperGrid
    from recunlearn.report.pages import require_one

    with pytest.raises(ValueError, match="'modells', which is not a parameter of CasperGrid"):
        require_one(CasperGrid(), ("modells",), "Figure 7")
    assert require_one(CasperGrid(), ("models", "datasets"), "Figure 7") == CasperGrid()

