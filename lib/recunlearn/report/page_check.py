"""Check executed notebooks the way the book will show them, before a strict build.

For every notebook: each glue name its markdown uses (``{glue:text}`name```, ``{glue}`name```, a
``{glue:figure}`` directive) is glued by one of its outputs (a missing one fails ``jupyter-book build
-W``); it opens with an "At a glance" box; every code cell is folded (``hide-input``); exactly one
cell is tagged ``nbval-check-output``.

    python -m recunlearn.report.page_check                 # the book's renders, book/*/*.ipynb
    python -m recunlearn.report.page_check notebooks/*/*.ipynb

prints one line per problem and exits with status 1 if there is any.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .scoreboard import glued_texts

GLUE_ROLE = re.compile(r"\{glue(?::[\w-]+)?\}`([^`]+)`")
GLUE_DIRECTIVE = re.compile(r"^\s*(?:`{3,}|:{3,})\{glue(?::[\w-]+)?\}\s+(\S+)", re.MULTILINE)
GLANCE_TITLE = "At a glance"


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def glue_references(notebook: dict) -> set[str]:
    """Every glue name the notebook's markdown uses (a role's ``:format`` suffix dropped)."""
    names = set()
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = _source(cell)
            names |= {ref.split(":")[0] for ref in GLUE_ROLE.findall(text)}
            names |= set(GLUE_DIRECTIVE.findall(text))
    return names


def missing_glue(notebook: dict) -> list[str]:
    """Glue names the markdown uses that no output of the notebook glues."""
    return sorted(glue_references(notebook) - set(glued_texts(notebook)))


def glance_box_index(notebook: dict) -> int | None:
    """Index of the markdown cell holding the "At a glance" admonition, None if there is none."""
    for i, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") == "markdown" and re.search(r"\{admonition\}\s*" + GLANCE_TITLE, _source(cell)):
            return i
    return None


def problems(notebook: dict) -> list[str]:
    """Everything that keeps ``notebook`` from reading as the book intends (empty: nothing)."""
    found = [f"glue name used in markdown but not glued: {name}" for name in missing_glue(notebook)]
    box = glance_box_index(notebook)
    if box is None:
        found.append("no 'At a glance' box")
    elif box != 1:
        found.append(f"the 'At a glance' box is cell {box}, not the one right after the title")
    code = [(i, c) for i, c in enumerate(notebook.get("cells", [])) if c.get("cell_type") == "code"]
    unfolded = [i for i, c in code  # a removed cell is not shown at all
                if not {"hide-input", "remove-cell"} & set(c.get("metadata", {}).get("tags", []))]
    if unfolded:
        found.append(f"code cells without hide-input: {unfolded}")
    checked = [i for i, c in code if "nbval-check-output" in c.get("metadata", {}).get("tags", [])]
    if len(checked) != 1:
        found.append(f"{len(checked)} cells tagged nbval-check-output (expected exactly one)")
    return found


def main(argv: list[str] | None = None) -> int:
    """Check the notebooks named in ``argv`` (default: the book's renders); 1 if any has a problem."""
    from .notebooks import BOOK_DIR

    paths = [Path(a) for a in (sys.argv[1:] if argv is None else argv)] or sorted(BOOK_DIR.glob("*/*.ipynb"))
    bad = 0
    for path in paths:
        for problem in problems(json.loads(path.read_text())):
            print(f"{path}: {problem}")
            bad += 1
    print(f"{len(paths)} notebooks checked, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
