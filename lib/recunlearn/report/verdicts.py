"""The one verdict vocabulary of every page, and how a page's verdict follows from its parts.

A page has two kinds of evidence: the paper's **numeric cells** (see
:func:`recunlearn.report.compare.compare`) and the paper's **claims** (see
:mod:`recunlearn.report.claims`). Each part ends in one *outcome*:

- ``pass``: a cell within tolerance; a claim ``reproduced``;
- ``fail``: a cell outside tolerance; a claim ``not reproduced``;
- ``mixed``: a claim ``partly reproduced`` (it passes somewhere and not everywhere);
- ``noise``: a claim ``inconclusive`` (the evidence is within noise);
- ``pending``: a paper cell we have not computed; a claim with nothing to test yet.

:func:`combine` turns outcomes into a verdict; pending parts count as *not yet reproduced*, never
as absent, and are named in the verdict ("partly reproduced (12 of 36 cells pending)").
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

import pandas as pd

REPRODUCED, PARTLY, NOT_REPRODUCED, INCONCLUSIVE, PENDING = VERDICTS = (
    "reproduced", "partly reproduced", "not reproduced", "inconclusive", "pending")
"""Every verdict a page, a claim or a set of cells can get."""

PAPER_CLAIM, SELF_CHECK, OWN_EXPECTATION, OTHER_READING = CLAIM_KINDS = (
    "paper", "self-check", "own expectation", "other reading")
"""A claim row's ``kind``:

- ``paper``: a claim of the paper (or, beyond the papers, our hypothesis);
- ``self-check``: a check of our own implementation or protocol (e.g. "the bitset scorer equals a
  breadth-first search"), part of its page's evidence and verdict, but says nothing about whether
  the paper reproduces;
- ``own expectation``: what the chapter expects where the paper says nothing (e.g. that SRU unlearns
  faster with more shards), part of its page's verdict but not a claim of the paper;
- ``other reading``: a second reading of a paper claim that the page also tests (e.g. unlearning time
  with the affected shards retrained one after another, beside the paper's parallel shards), shown
  beside the claim it reads but neither deciding the page's verdict nor counted.

Only ``paper`` rows are counted among a paper's claims (:func:`paper_claims_of`)."""
RUNS_PENDING = "runs pending"


def runs_pending_text(waiting: int, total: int) -> str:
    """``"3 of 12 runs pending"``: what a claim or page says while ``waiting`` of its ``total`` runs
    have no record (:func:`waits_for_runs` reads it back)."""
    return f"{waiting} of {total} {RUNS_PENDING}"


def waits_for_runs(text) -> bool:
    """Whether a claim's verdict or ``holds in`` text says some of its runs are pending."""
    return f" {RUNS_PENDING}" in str(text)


KIND_PREFIX = {SELF_CHECK: "Self-check: ", OWN_EXPECTATION: "Our expectation: ", OTHER_READING: "Other reading: "}
"""How a claim of each kind other than ``paper`` is introduced wherever it is listed."""

ALPHA = 0.05
"""Significance level of every claim test (one-sided, in the claimed direction and in the opposite one)."""

OUTCOMES = ("pass", "fail", "mixed", "noise", "pending")
CLAIM_OUTCOME = {REPRODUCED: "pass", NOT_REPRODUCED: "fail", PARTLY: "mixed", INCONCLUSIVE: "noise",
                 PENDING: "pending"}


def base_verdict(text: str) -> str:
    """The vocabulary word a verdict text starts with (``"partly reproduced (3 of 9 cells pending)"``
    -> ``"partly reproduced"``)."""
    for word in VERDICTS:
        if text == word or text.startswith(word + " ("):
            return word
    raise ValueError(f"{text!r} is not a verdict; the vocabulary is {VERDICTS}")


def combine(outcomes: Iterable[str]) -> str:
    """The verdict of a set of outcomes (``pass``, ``fail``, ``mixed``, ``noise``, ``pending``):

    1. nothing but ``pending`` (or nothing at all) -> ``pending``;
    2. every part ``pass`` -> ``reproduced``;
    3. no ``pass`` or ``mixed`` part, at least one ``fail`` -> ``not reproduced``;
    4. no ``pass``, ``mixed`` or ``fail`` part (only ``noise`` and ``pending``) -> ``inconclusive``;
    5. otherwise -> ``partly reproduced``: something passes, but not everything (a part that fails,
       is within noise or is still pending).

    A pending part therefore keeps a page from ``reproduced``; see :func:`pending_note` for the
    count that goes with it."""
    counts = Counter(outcomes)
    unknown = set(counts) - set(OUTCOMES)
    if unknown:
        raise ValueError(f"unknown outcomes {sorted(unknown)}; known: {OUTCOMES}")
    done = sum(counts.values()) - counts["pending"]
    if done == 0:
        return PENDING
    if counts["pass"] == sum(counts.values()):
        return REPRODUCED
    if counts["pass"] == 0 and counts["mixed"] == 0:
        return NOT_REPRODUCED if counts["fail"] else INCONCLUSIVE
    return PARTLY


def pending_note(verdict: str, pending: int, total: int, unit: str = "cells") -> str:
    """``verdict`` with ``" (k of m <unit> pending)"`` appended when ``0 < k`` and the verdict is not
    already ``pending``."""
    if pending and verdict != PENDING:
        return f"{verdict} ({pending} of {total} {unit} pending)"
    return verdict


def cell_outcomes(comparison: pd.DataFrame) -> list[str]:
    """One outcome per paper cell of a :func:`~recunlearn.report.compare.compare` frame: ``pass``
    (within tolerance), ``fail`` (outside), ``pending`` (a paper value without ours). Cells of ours
    without a paper value are not paper cells and are left out."""
    if comparison is None or len(comparison) == 0:
        return []
    part = comparison[comparison["paper"].notna()]
    return ["pending" if pd.isna(o) else "pass" if w else "fail" for o, w in zip(part["ours"], part["within_tol"])]


def claim_outcomes(claims: pd.DataFrame | None) -> list[str]:
    """One outcome per claim row, from its ``verdict`` (see the module docstring)."""
    if claims is None or len(claims) == 0:
        return []
    return [CLAIM_OUTCOME[base_verdict(v)] for v in claims["verdict"]]


def page_verdict(claims: pd.DataFrame | None, comparison: pd.DataFrame | None = None,
                 datasets_not_run: int = 0, runs_pending: tuple[int, int] = (0, 0)) -> str:
    """The verdict of a page from its claims (rows with a ``verdict``) and its numeric cells (a
    :func:`~recunlearn.report.compare.compare` frame; only cells with a paper value count).

    Every claim and every paper cell is one part, with the outcome of the module docstring, and the
    parts are combined by :func:`combine`: ``reproduced`` only when every claim is reproduced and
    every paper cell is computed and within tolerance; ``not reproduced`` when nothing passes and
    something fails; ``inconclusive`` when nothing passes or fails (all within noise); ``pending``
    when nothing is computed; ``partly reproduced`` otherwise. Pending parts are named:
    ``"partly reproduced (12 of 36 cells pending)"``, ``"… (1 of 4 claims pending)"``.
    ``datasets_not_run`` counts the paper's datasets the page has not run and whose cells are not in
    ``comparison``: each is one pending part ("2 datasets not run"), so a page whose claims hold on
    one of the paper's three datasets is never ``reproduced``. ``runs_pending`` is ``(k, m)``: k of
    the page's m runs have no record yet; where no paper cell is pending already (the cells say it),
    they are one pending part ("k of m runs pending"): the claims were tested on the runs there are,
    so a page whose claims hold on part of its runs is never ``reproduced`` either. A page judged by
    self-checks alone (no paper claim, no paper cell) says so in its note."""
    cells, said = cell_outcomes(comparison), claim_outcomes(deciding_claims(claims))
    waiting, of = runs_pending
    runs_part = ["pending"] if waiting and "pending" not in cells else []
    verdict = combine(cells + said + ["pending"] * datasets_not_run + runs_part)
    paper_claims = claim_outcomes(paper_claims_of(claims))  # self-checks decide too, but are not "claims"
    others = [(claim_outcomes(of_kind(claims, kind)), unit) for kind, unit in
              ((SELF_CHECK, "self-checks"), (OWN_EXPECTATION, "expectations of our own"))]
    notes = [f"{n} of {len(parts)} {unit} pending" for parts, unit in
             ((cells, "cells"), (paper_claims, "claims"), *others) if (n := parts.count("pending"))]
    if runs_part:
        notes.append(runs_pending_text(waiting, of))
    if datasets_not_run:
        notes.append(f"{datasets_not_run} paper dataset{'s' if datasets_not_run > 1 else ''} not run")
    if said and not paper_claims and not cells:
        judged = [unit for parts, unit in others if parts]
        notes.append(f"{' and '.join(judged) or 'other readings'} only: no paper claim or number tested")
    return f"{verdict} ({'; '.join(notes)})" if notes and verdict != PENDING else verdict


def _kinds(claims: pd.DataFrame) -> pd.Series:
    return claims["kind"].fillna(PAPER_CLAIM) if "kind" in claims else pd.Series(PAPER_CLAIM, index=claims.index)


def of_kind(claims: pd.DataFrame | None, kind: str) -> pd.DataFrame | None:
    """The rows of ``claims`` of one kind (:data:`CLAIM_KINDS`; a row without ``kind`` is a paper claim)."""
    return claims if claims is None else claims[_kinds(claims) == kind]


def paper_claims_of(claims: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of ``claims`` that are the paper's claims (kind ``paper``; a frame without ``kind``:
    all of them)."""
    return of_kind(claims, PAPER_CLAIM)


def deciding_claims(claims: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of ``claims`` that decide a page's verdict: all but the other readings."""
    return claims if claims is None else claims[_kinds(claims) != OTHER_READING]


def page_summary(claims: pd.DataFrame | None, comparison: pd.DataFrame | None = None) -> str:
    """One line of counts behind :func:`page_verdict`: the paper's claims by verdict, self-checks of
    our implementation by whether they pass, and paper cells by outcome (only ``"N pending"`` when no
    paper cell is computed)."""
    parts = []
    if claims is not None and len(claims):
        kinds = _kinds(claims)
        for kind, label in ((PAPER_CLAIM, "claims"), (OWN_EXPECTATION, "our expectations"),
                            (OTHER_READING, "other readings")):
            part = claims[kinds == kind]
            if len(part):
                counts = Counter(base_verdict(v) for v in part["verdict"])
                parts.append(f"{label}: {', '.join(f'{counts[v]} {v}' for v in VERDICTS if counts[v])}")
        checks = claims[kinds == SELF_CHECK]
        if len(checks):
            passing = sum(base_verdict(v) == REPRODUCED for v in checks["verdict"])
            said = checks["holds in"] if "holds in" in checks else checks["verdict"]
            waiting = sum(waits_for_runs(v) for v in said)
            parts.append(f"self-checks: {passing} of {len(checks)} pass"
                         + (f" ({waiting} waiting for runs)" if waiting else ""))
    cells = cells_summary(comparison)
    if cells:
        parts.append(cells)
    return "; ".join(parts) if parts else "nothing to check"


def cells_summary(comparison: pd.DataFrame | None) -> str:
    """The paper cells of a :func:`~recunlearn.report.compare.compare` frame by outcome: ``"paper cells:
    3 of 12 within tolerance, 5 outside, 4 pending"`` (only ``"paper cells: 12 pending"`` when none is
    computed; :func:`cell_counts` reads it back); empty without paper cells."""
    cells = cell_outcomes(comparison)
    if not cells:
        return ""
    c = Counter(cells)
    if c["pending"] == len(cells):  # nothing computed: no count of cells within tolerance
        return f"paper cells: {c['pending']} pending"
    return f"paper cells: {c['pass']} of {len(cells)} within tolerance, {c['fail']} outside, {c['pending']} pending"


_CELLS_TEXT = re.compile(r"paper cells: (?:(?P<pass>\d+) of (?P<total>\d+) within tolerance, (?P<fail>\d+) outside, "
                         r"(?P<pending>\d+) pending|(?P<only>\d+) pending)")


def cell_counts(summary: str) -> Counter:
    """The paper cells a :func:`page_summary` line counts, by outcome (``pass``, ``fail``, ``pending``);
    empty for a page without paper cells."""
    match = _CELLS_TEXT.search(summary or "")
    if match is None:
        return Counter()
    if match["only"] is not None:
        return Counter(pending=int(match["only"]))
    return Counter({"pass": int(match["pass"]), "fail": int(match["fail"]), "pending": int(match["pending"])})
