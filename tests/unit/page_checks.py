"""Checks shared by the page tests: what a page's ``show`` puts on the page, and no published text that
counts nothing ("0 of 0 cells")."""

from __future__ import annotations

from recunlearn.report.pages import EMPTY_COUNT, Page


def shown(page: Page, name: str, monkeypatch) -> list:
    """What ``page.show(name)`` puts on the page: the figures it drew (left for the inline backend to
    show), the objects it displayed, then the table it returned."""
    import IPython.display
    import matplotlib.pyplot as plt

    out = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **_: out.append(obj))
    before = set(plt.get_fignums())
    result = page.show(name)
    drawn = [plt.figure(n) for n in plt.get_fignums() if n not in before]
    return drawn + out + ([result] if result is not None else [])


def no_empty_count(page: Page) -> None:
    """Fails naming every published text of ``page`` that counts nothing."""
    texts = page.texts()
    assert {name: text for name, text in texts.items() if EMPTY_COUNT.search(text)} == {}
