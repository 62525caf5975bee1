"""The book's scoreboard: every paper item, its claims and verdicts, the scale computed and the
coverage of the paper, on one page, read from the rendered paper-profile notebooks ``book/*/*.ipynb``.

A page publishes its facts by glue (:func:`recunlearn.report.claims.glue_page`): ``page_verdict``,
``page_summary``, ``page_scale``, ``page_coverage``, ``page_difference``, ``page_pending`` and
``page_claims`` (JSON: id, claim, verdict, holds, p-value, test, evidence); a page that trains a choice
of the authors' code both ways also glues ``page_variants`` (JSON: section, choice, used, finding), which
the scoreboard lists under each paper's claims. Pages rendered before
``page_claims`` existed still count: their claims are the glued ``claim_<id>`` verdicts (``claims_<n>``
on the oldest renders), listed by id with "statement not published". The scale and the run records
come from the notebook's ``metadata.recunlearn``.

``python -m recunlearn status`` writes ``book/scoreboard.md`` and ``book/scoreboard-summary.md`` (the
one line per paper that the introduction includes) with :func:`write_scoreboard`.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

from .glance import display_name, scale_text
from .verdicts import (KIND_PREFIX, OTHER_READING, OWN_EXPECTATION, PAPER_CLAIM, PENDING, SELF_CHECK, VERDICTS,
                       base_verdict, cell_counts, waits_for_runs)

SCOREBOARD = "scoreboard.md"
SUMMARY = "scoreboard-summary.md"
FIGURE = "scoreboard.svg"
PAPERS = ("CURE4Rec", "CASPER", "SRU", "Beyond the papers")
NOT_PUBLISHED = "statement not published"
CHOICE_NOT_STATED = {
    None: "a choice the paper does not state (or states otherwise)",
    "SRU": ("a choice that the paper's abstract and evaluation card do not settle (its full text was not "
            "available to us)"),
}
"""What makes a choice of the authors' code worth measuring, per paper (``None``: any paper not named)."""
_LEGACY_CLAIM = re.compile(r"^claims?_(?P<id>.+)$")


def reduced_scale(params: dict, profile: str | None) -> bool:
    """Whether a paper-profile page trains at a deliberately reduced scale: a prefix of the data
    (``MAX_ROWS``, or ``MAX_SESSIONS`` with training epochs). A statistics page that also describes a
    prefix next to the whole files (``MAX_SESSIONS`` without epochs) is not reduced."""
    prefix = params.get("MAX_ROWS") or (params.get("MAX_SESSIONS") and params.get("MAX_EPOCHS"))
    return bool(prefix) and profile == "paper"


def rendered_datasets(params: dict, default) -> list[str]:
    """The datasets a page was rendered with: its ``DATASETS`` (or ``DATASET``) parameter, else
    ``default`` (the paper item's); a parameter left empty (None) counts as none."""
    value = params.get("DATASETS", params.get("DATASET", list(default or [])))
    return [value] if isinstance(value, str) else list(value or [])


def glued_texts(notebook: dict) -> dict[str, str]:
    """Every value a notebook glued (``myst_nb.glue``), by name, as the text it glued (the ``repr``
    in the notebook read back, so quotes and escapes inside a text survive)."""
    out = {}
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            text = output.get("data", {}).get("application/papermill.record/text/plain")
            if not name or text is None:
                continue
            text = "".join(text) if isinstance(text, list) else text
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text.strip("'\"")
            out[name] = value if isinstance(value, str) else str(value)
    return out


def _verdict_word(text: str) -> str | None:
    try:
        return base_verdict(text)
    except ValueError:
        return None


def page_claims(glued: dict[str, str]) -> list[dict]:
    """A page's claims: its ``page_claims`` JSON, else (older renders) one claim per glued verdict
    named ``claim_<id>`` or ``claims_<id>``, with the id as statement."""
    if "page_claims" in glued:
        claims = json.loads(glued["page_claims"])
        return [{**c, "published": True} for c in claims]
    out = []
    for name, text in glued.items():
        match = _LEGACY_CLAIM.match(name)
        if match and not name.endswith(("_evidence", "_found")) and _verdict_word(text):
            out.append({"id": match["id"], "claim": "", "verdict": text, "holds": "", "p_value": "", "test": "",
                        "evidence": glued.get(f"{name}_evidence", ""), "published": False})
    return out


def page_title(notebook: dict, fallback: str) -> str:
    """The page's title after its paper and item (``# CURE4Rec Table 2 — utility of ...``)."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = "".join(cell.get("source", ""))
            for line in source.splitlines():
                if line.startswith("# "):
                    title = line[2:].strip()
                    return title.split(" — ", 1)[1].strip() if " — " in title else title
    return fallback


def _records_text(meta: dict) -> str:
    behind = meta.get("run_records")
    if behind is None:
        return "run records not traced (rendered before they were)"
    if not behind.get("records"):
        return "no run record (nothing trained)"
    records = f"{behind['records']} run record{'' if behind['records'] == 1 else 's'}"
    text = f"{records} ({', '.join(behind.get('devices', [])) or 'device unknown'})"
    return text + (f", {behind['pending']} runs without a record" if behind.get("pending") else "")


def _pending_fallback(datasets: list[str], computed: list[str], meta: dict) -> str:
    """What a page rendered before ``page_pending`` existed is missing: the paper's datasets it did
    not run and the runs its record summary counts as pending."""
    parts = [f"{display_name(d)}: not run" for d in datasets if d not in computed]
    behind = meta.get("run_records") or {}
    if behind.get("pending"):
        parts.append(f"{behind['pending']} runs without a record")
    return "; ".join(parts) if parts else "none listed"


def page_entry(page: dict) -> dict:
    """What the scoreboard shows of one page. ``page`` has ``paper``, ``item``, ``title``, ``link``
    (the page, relative to ``book/``), ``datasets`` (the paper item's) and ``notebook`` (the executed
    notebook as a dict, or None when the page is not rendered)."""
    notebook = page.get("notebook")
    base = {**{k: page.get(k) for k in ("paper", "item", "title", "link")}, "rendered": notebook is not None,
            "claims": [], "variants": [], "reduced": False}
    if notebook is None:
        return {**base, "verdict": f"{PENDING} (not started)", "summary": "", "scale": "not started",
                "coverage": "0 paper cells computed", "difference": "", "pending": "everything"}
    glued = glued_texts(notebook)
    meta = notebook.get("metadata", {}).get("recunlearn", {})
    params = meta.get("parameters", {})
    datasets = list(page.get("datasets") or [])
    computed = rendered_datasets(params, datasets)
    scale = glued.get("page_scale") or scale_text({**params, "DATASETS": computed})
    reduced = reduced_scale(params, meta.get("profile"))
    if meta.get("profile") != "paper":
        scale = f"smoke profile only: {scale}"
    if reduced:
        scale = f"reduced scale, not the paper's: {scale}"
    coverage = glued.get("page_coverage") or (
        f"{sum(d in computed for d in datasets)} of {len(datasets)} paper datasets (paper cells not published)"
        if datasets and computed else "not published")
    pending = glued.get("page_pending") or _pending_fallback(datasets, computed, meta)
    return {**base, "title": page_title(notebook, page.get("title") or ""), "reduced": reduced,
            "not_run": [d for d in datasets if d not in computed] if computed else [],
            "verdict": glued.get("page_verdict", "not published (rendered before page verdicts)"),
            "summary": glued.get("page_summary", ""), "scale": f"{scale}; {_records_text(meta)}",
            "coverage": coverage, "difference": glued.get("page_difference", ""),
            "pending": pending, "claims": page_claims(glued), "variants": page_variants(glued)}


def page_variants(glued: dict[str, str]) -> list[dict]:
    """A page's comparisons of the authors' choices with their alternatives (its ``page_variants`` JSON;
    none on pages without it)."""
    return json.loads(glued["page_variants"]) if "page_variants" in glued else []


def claim_kind(claim: dict) -> str:
    """A published claim's kind (:data:`~recunlearn.report.verdicts.CLAIM_KINDS`; ``paper`` when the page
    published none)."""
    return claim.get("kind") or PAPER_CLAIM


def is_self_check(claim: dict) -> bool:
    """Whether a published claim is a self-check of our implementation, not a claim of the paper."""
    return claim_kind(claim) == SELF_CHECK


def is_waiting(claim: dict) -> bool:
    """Whether a claim's verdict still waits for some of its runs ("k of m runs pending")."""
    return waits_for_runs(claim["verdict"])


def paper_totals(entries: list[dict]) -> dict:
    """Per paper: pages, pages rendered, claim tests by verdict word (one per claim and page: a claim
    tested on two pages, e.g. at a reduced scale and at the paper's, counts twice), the distinct
    claims among them (by id and statement), tests at a reduced scale, the claim tests by verdict word
    that still wait for some of their runs (``waiting``: "k of m runs pending" in their verdict), the
    paper cells of its pages by outcome (``cells``), and apart, since they are not claims of the
    paper: the self-checks (``checks``, ``checks_passed``, ``checks_waiting``), the chapter's own
    expectations (``own``) and the other readings of a claim (``readings``), each by verdict word."""
    totals = {}
    for entry in entries:
        t = totals.setdefault(entry["paper"], {"pages": 0, "rendered": 0, "claims": 0, "reduced": 0,
                                               "verdicts": Counter(), "statements": set(), "checks": 0,
                                               "checks_passed": 0, "checks_waiting": 0, "waiting": Counter(),
                                               "own": Counter(), "readings": Counter(), "cells": Counter()})
        t["pages"] += 1
        t["rendered"] += entry["rendered"]
        t["cells"] += cell_counts(entry.get("summary", ""))
        for claim in entry["claims"]:
            word = _word(claim)
            kind = claim_kind(claim)
            if kind == SELF_CHECK:
                t["checks"] += 1
                t["checks_passed"] += word == "reproduced"
                t["checks_waiting"] += word != "reproduced" and is_waiting(claim)
                continue
            if kind in (OWN_EXPECTATION, OTHER_READING):
                t["own" if kind == OWN_EXPECTATION else "readings"][word] += 1
                continue
            t["claims"] += 1
            t["statements"].add((claim["id"], claim.get("claim") or ""))
            t["reduced"] += entry["reduced"]
            t["verdicts"][word] += 1
            t["waiting"][word] += is_waiting(claim)
    for t in totals.values():
        t["distinct"] = len(t.pop("statements"))
    return totals


def totals_text(total: dict | None) -> str:
    """``"26 claims: 10 reproduced, 4 partly reproduced, 12 not reproduced, 0 inconclusive, 0 pending
    (10 of 10 pages rendered)"``; ``"16 tests of 11 claims (5 of them at a reduced scale, not the
    paper's): …"`` when claims are tested on several pages; the self-checks after, apart."""
    if total is None or total["rendered"] == 0:
        return "not started"
    waiting = total.get("waiting", Counter())
    counts = ", ".join(f"{total['verdicts'][v]} {v}" + (f" ({waiting[v]} of them with runs still pending)"
                                                         if waiting[v] else "") for v in VERDICTS)
    claims, distinct = total["claims"], total.get("distinct", total["claims"])
    text = (f"{claims} claim{'s' if claims != 1 else ''}" if distinct == claims
            else f"{claims} tests of {distinct} claim{'s' if distinct != 1 else ''}")
    if total["reduced"]:
        text += (f" ({total['reduced']} of them {'tested ' if distinct == claims else ''}at a reduced scale, "
                 "not the paper's)")
    text += f": {counts}; {total['rendered']} of {total['pages']} pages rendered"
    for key, what in (("own", "expectation{s} of our own"), ("readings", "other reading{s} of a claim")):
        counted = total.get(key) or Counter()
        if sum(counted.values()):
            n = sum(counted.values())
            text += (f"; also {n} {what.format(s='s' if n != 1 else '')} (not counted: "
                     + ", ".join(f"{counted[v]} {v}" for v in VERDICTS if counted[v]) + ")")
    if total.get("checks"):
        waiting = total.get("checks_waiting", 0)
        text += (f"; also {total['checks']} self-check{'s' if total['checks'] != 1 else ''} of our implementation, "
                 f"{total['checks_passed']} passing" + (f", {waiting} still waiting for runs" if waiting else ""))
    return text


def cells_text(total: dict | None) -> str:
    """How our pages' numbers compare with the paper's printed ones: ``"paper numbers: 14 of 120
    comparisons within tolerance; 300 more waiting for runs"``; empty where no page compares a paper
    number. A comparison is one paper cell on one page: a printed number that a page compares under several of
    our settings (e.g. the Learn row under each validation rule and each unlearning selection), or
    that two pages compare, counts once for each."""
    cells = (total or {}).get("cells") or Counter()
    computed = cells["pass"] + cells["fail"]
    if not computed and not cells["pending"]:
        return ""
    text = f"paper numbers: {cells['pass']} of {computed} computed comparisons within tolerance"
    return text + (f"; {cells['pending']} more waiting for runs" if cells["pending"] else "")


def _cell(text) -> str:
    """Text safe inside a markdown table cell."""
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _link(entry: dict) -> str:
    return f"[{_cell(entry['item'])}]({entry['link']})" if entry["rendered"] else _cell(entry["item"])


def _evidence(claim: dict) -> str:
    parts = [p for p in (claim.get("test"), claim.get("p_value")) if p]
    if not parts and not claim.get("published"):
        return claim.get("evidence") or "not published"
    return "; ".join(parts)


def _statement(claim: dict) -> str:
    """The claim as a reader reads it (``Self-check:`` first for a self-check), its stable id (what a
    page glues, ``claim_<id>``) after it."""
    text = f"`{claim['id']}`"
    if not claim.get("claim"):
        return f"{text} ({NOT_PUBLISHED})"
    return KIND_PREFIX.get(claim_kind(claim), "") + f"{claim['claim']} ({text})"


FULL_WIDTH, END_FULL_WIDTH = ":::{div} full-width", ":::"
"""The fence around a wide table: the theme lays it over the page's margin as well."""


def render_scoreboard_from(entries: list[dict]) -> str:
    """Markdown of the scoreboard for :func:`page_entry` results."""
    totals = paper_totals(entries)
    lines = ["# Scoreboard", "",
             "What reproduces, paper by paper, read from the rendered pages (generated by `python -m recunlearn",
             "status`). Every verdict uses one vocabulary: *reproduced*, *partly reproduced*, *not reproduced*,",
             "*inconclusive* (within noise) and *pending* (not computed yet); the [introduction](intro.md) says",
             "how claims are tested and pages judged, and the [status page](status.md) lists the devices, commits",
             "and compute plan behind each page. *Beyond the papers* holds the book's own questions: there a",
             "claim is our hypothesis, and *reproduced* reads *holds in our runs*. A claim tested on two pages",
             "(say at a reduced scale and at the paper's) counts once per page, as a test. Listed with the",
             "claims but not counted among them: self-checks of our own implementation, a chapter's own",
             "expectations where the paper says nothing, and a second reading of a paper claim (e.g. unlearning",
             "time with shards retrained one after another, beside the paper's parallel shards). The last",
             "column counts our comparisons with the paper's printed numbers that fall within tolerance (a",
             "printed number compared under several of our settings, or on two pages, counts once for each).", "",
             FULL_WIDTH,
             "| paper | claim tests | " + " | ".join(VERDICTS) + " | pages | paper numbers within tolerance |",
             "|---|---|" + "---|" * len(VERDICTS) + "---|---|"]
    papers = [p for p in PAPERS if any(e["paper"] == p for e in entries)]
    papers += sorted({e["paper"] for e in entries} - set(papers))
    for paper in papers:
        t = totals[paper]
        cells = t["cells"]
        computed = cells["pass"] + cells["fail"]
        numbers = (f"{cells['pass']} of {computed} computed" + (f" ({cells['pending']} pending)" if cells["pending"]
                                                                 else "") if computed or cells["pending"] else "none known")
        lines.append(f"| {paper} | {t['claims']} | " + " | ".join(str(t["verdicts"][v]) for v in VERDICTS)
                     + f" | {t['rendered']} of {t['pages']} | {numbers} |")
    lines.append(END_FULL_WIDTH)
    for paper in papers:
        part = [e for e in entries if e["paper"] == paper]
        cells = cells_text(totals[paper])
        lines += ["", f"## {paper}", "", f"**{totals_text(totals[paper])}.**" + (f" {cells[0].upper() + cells[1:]}."
                                                                                 if cells else "")]
        if not any(e["rendered"] for e in part):
            continue
        lines += ["", "### Pages", "", FULL_WIDTH,
                  "| item | page verdict | scale computed | coverage of the paper; difference from it "
                  "| pending, and why |",
                  "|---|---|---|---|---|"]
        for e in part:
            verdict = f"**{_cell(e['verdict'])}**" + (f"<br>{_cell(e['summary'])}" if e["summary"] else "")
            coverage = _cell(e["coverage"]) + (f"<br>{_cell(e['difference'])}" if e["difference"] else "")
            lines.append(f"| {_link(e)}<br>{_cell(e['title'])} | {verdict} | {_cell(e['scale'])} | {coverage} | "
                         f"{_cell(e['pending'])} |")
        lines.append(END_FULL_WIDTH)
        claimed = [(e, c) for e in part for c in e["claims"]]
        if claimed:
            lines += ["", "### Claims", "", FULL_WIDTH, "| item | claim | verdict | evidence |", "|---|---|---|---|"]
            for e, c in claimed:
                lines.append(f"| {_link(e)} | {_cell(_statement(c))} | **{_cell(c['verdict'])}** | "
                             f"{_cell(_evidence(c))} |")
            lines.append(END_FULL_WIDTH)
        varied = [(e, v) for e in part for v in e.get("variants", [])]
        if varied:
            not_stated = CHOICE_NOT_STATED.get(paper, CHOICE_NOT_STATED[None])
            lines += ["", "### Choices of the authors' code, measured", "",
                      f"Where the authors' code makes {not_stated}, the page trains both versions and compares "
                      "them seed by seed; every other number of the page uses the version in the third column. "
                      "These comparisons are not claims of the paper and are not counted among them.", "", FULL_WIDTH,
                      "| item | the authors' choice | the page's other numbers use | what we found |",
                      "|---|---|---|---|"]
            for e, v in varied:
                lines.append(f"| {_link(e)}<br>{_cell(e['scale'].split(';')[0])} | {_cell(v['choice'])} | "
                             f"{_cell(v.get('used'))} | {_cell(v['finding'])} |")
            lines.append(END_FULL_WIDTH)
    return "\n".join(lines) + "\n"


SUMMARY_VERDICTS = ("reproduced", "not reproduced")
"""The verdicts whose claims the introduction's lead names one by one (the others it only counts)."""
SO_FAR = "partly reproduced, passing so far"
"""The lead's name for a claim that is partly reproduced only because some of its runs wait: its test on
the runs computed so far reproduces it (its ``so_far`` verdict, :func:`recunlearn.report.claims.with_waiting`),
and the runs to come may still change that."""
OWN_QUESTION_WORDS = {"reproduced": "holds in our runs", SO_FAR: "holds in our runs so far, runs pending",
                      "not reproduced": "does not hold in our runs"}
"""How those verdicts read for the book's own hypotheses (*Beyond the papers*): nothing to reproduce."""


def render_summary_from(entries: list[dict]) -> str:
    """The introduction's lead: one line per paper from the scoreboard's totals, and under it the claims
    that reproduce and those that do not (:data:`SUMMARY_VERDICTS`), each with a link to its page, and
    between them those whose test passes on the runs computed so far while some of their runs wait
    (:data:`SO_FAR`, named with the runs pending);
    self-checks and claims whose statement was not published are left to the scoreboard. A claim a
    reduced-scale page tests is named with the verdicts pages at the paper's scale have reached on the
    same claim (by id), and not at all where one of those is itself named: the reduced scale never
    speaks alone for a claim the paper's scale has tested."""
    totals = paper_totals(entries)
    papers = [p for p in PAPERS if p in totals] + sorted(set(totals) - set(PAPERS))
    lines = ["**What reproduces so far** (the [scoreboard](scoreboard.md) has every claim and page; "
             "{ref}`the terms <terms>` are defined below):", "",
             f"![Claim tests by verdict, per paper]({FIGURE})", "",
             "*Claim tests by verdict; self-checks of our implementation, the chapters' own expectations and "
             "second readings of a claim are not counted. Beyond the papers holds the book's own hypotheses, "
             "where reproduced reads holds in our runs. A claim's verdict and how many of the paper's numbers "
             "we match are two different things: both are given. A claim whose test passes on the runs computed "
             "so far while some of its runs wait is partly reproduced, and named here as passing so far, with "
             "its runs pending: the runs to come may still change it. A claim "
             "tested at a reduced scale is named with its verdict at the paper's scale where a page has one, and "
             "only by that one where it reproduces or not.*", ""]
    for paper in papers:
        cells = cells_text(totals[paper])  # the paper's own numbers first: the plainest answer
        lines.append(f"- **{paper}**: " + (f"**{cells[0].upper() + cells[1:]}.** " if cells else "")
                     + f"{totals_text(totals[paper])}.")
        at_paper_scale = {}
        for e in entries:
            for c in (e["claims"] if e["paper"] == paper and not e["reduced"] else []):
                if _word(c) != PENDING:
                    at_paper_scale.setdefault(c.get("id"), []).append((e, c))
        claimed = [(e, c) for e in entries if e["paper"] == paper for c in e["claims"]
                   if c.get("claim") and claim_kind(c) == PAPER_CLAIM
                   and not (e["reduced"] and any(_lead_word(t) in (*SUMMARY_VERDICTS, SO_FAR) for _, t in
                                                 at_paper_scale.get(c.get("id"), [])))]
        for verdict in (SUMMARY_VERDICTS[0], SO_FAR, *SUMMARY_VERDICTS[1:]):
            named = [f"{_cell(c['claim'])} ({_link(e)}{_scope(e)}" + _runs_pending(c, verdict)
                     + ("".join(f"; at the paper's scale {_word(t)}, {_link(o)}" for o, t in
                                at_paper_scale.get(c.get("id"), [])) if e["reduced"] else "") + ")"
                     for e, c in claimed if _lead_word(c) == verdict]
            if named:
                label = OWN_QUESTION_WORDS[verdict] if paper == PAPERS[-1] else verdict
                lines.append(f"  - *{label}*: " + "; ".join(named) + ".")
    return "\n".join(lines) + "\n"


def _lead_word(claim: dict) -> str:
    """Where the lead names a claim: its verdict word, or :data:`SO_FAR` for a claim partly reproduced
    whose verdict on the runs computed so far is reproduced."""
    word = _word(claim)
    return SO_FAR if word == "partly reproduced" and claim.get("so_far") == "reproduced" else word


def _runs_pending(claim: dict, verdict: str) -> str:
    """``"; 108 of 324 runs pending"`` for a claim named as :data:`SO_FAR` (from its ``holds``), else ""."""
    found = re.search(r"\d+ of \d+ runs pending", claim.get("holds") or "") if verdict == SO_FAR else None
    return f"; {found.group(0)}" if found else ""


def _word(claim: dict) -> str:
    """A claim's verdict word (``partly reproduced``, ...), its counts left out."""
    return _verdict_word(claim["verdict"]) or claim["verdict"]


def _scope(entry: dict) -> str:
    """What a claim named in the lead was not tested on: a reduced scale, the paper's datasets its page
    has not run (``, ADM not run``)."""
    scope = ", at a reduced scale" if entry["reduced"] else ""
    not_run = [display_name(d) for d in entry.get("not_run") or []]
    if not_run:
        scope += f", {' and '.join(not_run)} not run"
    return scope


def book_pages(book_dir: Path | None = None, items=None) -> list[dict]:
    """One :func:`page_entry` input per page: the paper items of :data:`recunlearn.report.status.ITEMS`
    (items sharing a notebook make one page), then any other rendered notebook under ``book_dir``."""
    from .notebooks import BOOK_DIR
    from .status import ITEMS

    book_dir = Path(book_dir or BOOK_DIR)
    pages: dict[str, dict] = {}
    for n, item in enumerate(ITEMS if items is None else items):
        key = item.notebook or f"not-started-{n}"
        if key in pages:
            pages[key]["item"] += f", {item.item}"
            continue
        path = book_dir / f"{item.notebook}.ipynb" if item.notebook else None
        pages[key] = {"paper": item.paper, "item": item.item, "title": item.title, "datasets": item.datasets,
                      "link": f"{item.notebook}.ipynb" if item.notebook else "",
                      "notebook": json.loads(path.read_text()) if path and path.is_file() else None}
    for path in sorted(book_dir.glob("*/*.ipynb")):
        key = f"{path.parent.name}/{path.stem}"
        if key not in pages and not path.name.startswith("."):
            paper = next((p for p in PAPERS if p.lower() == path.parent.name), path.parent.name)
            pages[key] = {"paper": paper, "item": path.stem, "title": path.stem, "datasets": (),
                          "link": f"{key}.ipynb", "notebook": json.loads(path.read_text())}
    return list(pages.values())


def render_scoreboard(book_dir: Path | None = None, items=None) -> str:
    """Markdown of ``book/scoreboard.md`` from the rendered notebooks in ``book_dir`` (default ``book/``)."""
    return render_scoreboard_from([page_entry(p) for p in book_pages(book_dir, items)])


def scoreboard_figure(entries: list[dict]):
    """The introduction's picture of the scoreboard: one bar per paper, its claim tests by verdict."""
    from .plots import verdict_bars

    totals = paper_totals(entries)
    papers = [p for p in PAPERS if p in totals] + sorted(set(totals) - set(PAPERS))
    counts = {f"{paper} ({totals[paper]['claims']})": totals[paper]["verdicts"] for paper in papers}
    return verdict_bars(counts, "Claim tests by verdict (in brackets: tests per paper)")


def write_scoreboard(book_dir: Path | None = None, items=None) -> None:
    """Write ``scoreboard.md``, the introduction's ``scoreboard-summary.md`` and its figure
    (``scoreboard.svg``) into ``book_dir``."""
    from ..io import write_bytes_atomic
    from .notebooks import BOOK_DIR
    from .plots import svg_bytes

    book_dir = Path(book_dir or BOOK_DIR)
    entries = [page_entry(p) for p in book_pages(book_dir, items)]
    write_bytes_atomic(book_dir / SCOREBOARD, render_scoreboard_from(entries).encode())
    write_bytes_atomic(book_dir / SUMMARY, render_summary_from(entries).encode())
    write_bytes_atomic(book_dir / FIGURE, svg_bytes(scoreboard_figure(entries)))
