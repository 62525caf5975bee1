"""The book builds from the committed results, offline, with warnings as errors."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_book_builds_without_warnings(built_book):
    returncode, log, html = built_book
    assert returncode == 0, log
    for page in ["book/intro.html", "book/scoreboard.html", "book/status.html",
                 "book/cure4rec/table-04-dataset-statistics.html", "book/cure4rec/learn-baselines.html"]:
        assert (html / page).is_file(), f"missing {page}"
    intro = (html / "book/intro.html").read_text()             # the scoreboard's picture on the first page
    assert 'alt="Claim tests by verdict, per paper"' in intro and (html / "_images/scoreboard.svg").is_file()
    for page in html.rglob("*.html"):  # the book reads offline: no script from a CDN (MathJax is served locally)
        assert "https://cdn" not in page.read_text(), f"{page} loads a script from a CDN"


def test_every_notebook_has_a_book_page_and_parameters():
    notebooks = sorted((REPO / "notebooks").glob("*/*.ipynb"))
    toc = (REPO / "_toc.yml").read_text()
    for notebook in notebooks:
        rel = f"book/{notebook.parent.name}/{notebook.stem}"
        assert rel in toc, f"{rel} is not in _toc.yml"
        assert (REPO / f"{rel}.ipynb").is_file(), f"{rel}.ipynb (paper profile) is not built"
        for profile in ("smoke", "paper"):
            params = REPO / "notebooks" / "params" / notebook.parent.name / f"{notebook.stem}.{profile}.yml"
            assert params.is_file(), f"missing {params}"
