"""The built book in a real (headless) browser: math typeset, tables inside the column, images load.

Skipped when no Chromium is installed. The first test shows the check can fail: a page with raw
math, an over-wide table and a missing image is reported on all three counts.
"""

import pytest

from browser_check import check_pages, find_browser, problems

pytestmark = pytest.mark.skipif(find_browser() is None, reason="no Chromium on PATH")

PAGES = ["book/scoreboard.html", "book/casper/index.html", "book/cure4rec/table-02-eu-utility.html",
         "book/cure4rec/table-03-unlearning-time.html"]


def test_the_check_reports_a_broken_page(tmp_path):
    cells = "".join(f"<td>column {i} with a long heading</td>" for i in range(40))
    (tmp_path / "bad.html").write_text(
        '<html><body><main style="width: 600px"><div class="math">\\(x^2\\)</div>'
        f'<table><tr>{cells}</tr></table><img src="missing.png"></main></body></html>')
    report = check_pages(tmp_path, ["bad.html"])
    assert report["bad.html"]["math_untypeset"] == 1
    assert len(report["bad.html"]["tables_overflowing"]) == 1
    assert report["bad.html"]["images_broken"] == ["missing.png"]
    assert len(problems(report)) == 3


def test_scoreboard_and_item_pages_read_well(built_book):
    returncode, log, html = built_book
    assert returncode == 0, log
    report = check_pages(html, PAGES)
    assert report["book/casper/index.html"]["math_blocks"] >= 1  # the AO formula
    assert all(report[page]["images"] > 0 for page in PAGES[2:])
    assert problems(report) == []
