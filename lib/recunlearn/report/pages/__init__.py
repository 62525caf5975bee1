"""Page builders: one module per paper item, named after its notebook (``casper_figure_02_random_loo``
for ``notebooks/casper/figure-02-random-loo.ipynb``), whose ``build(**params)`` validates the
notebook's parameters, collects the runs, compares them with the paper, judges the claims and returns
a :class:`Page`. A notebook is then

    page = build(**notebook_parameters(globals()))
    page.show("comparison")          # one call per table or figure
    page.check()                     # the nbval-checked counts and rounded metrics
    page.publish()                   # glue: the page's values, claims and at-a-glance facts

A table or figure without a computed cell is shown as one :class:`Notice` (what is pending, why, and
the command that computes it), never as empty axes or an all-pending table; a partly computed one is
shown with a notice saying how much is pending.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
from collections import Counter
from typing import Any, Callable, Iterable, Mapping

import pandas as pd

from ...experiments.config import Config, ConfigError, injected_names
from ..claims import claim_text, glue_page, show_claims
from ..glance import page_facts
from ..names import BookTable, display_name, labelled, paper_sorted
from ..verdicts import OTHER_READING, OWN_EXPECTATION, PAPER_CLAIM, PENDING, SELF_CHECK

PARAMETER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
EMPTY_COUNT = re.compile(r"(?<![\d,.])0 of 0(?![\d,.])")
"""A count of nothing ("0 of 0 cells"): no sentence of a page may state one."""


# --- parameters -------------------------------------------------------------------------------------

def notebook_parameters(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a notebook passes to its builder: its UPPER_SNAKE names and every name papermill
    injected (so that an injected name that is not a parameter, e.g. ``datasets``, still fails)."""
    injected = injected_names(namespace)
    return {name: value for name, value in namespace.items() if PARAMETER_NAME.match(name) or name in injected}


def validated(cls: type[Config], params: Mapping[str, Any]) -> Config:
    """``cls`` built from notebook parameters (UPPER_SNAKE names). Raises :class:`ConfigError` before any
    compute for a name that is not a parameter of ``cls`` (names are case-sensitive) or a value it does
    not allow; the message names the parameter and what is allowed."""
    allowed = {name.upper() for name in cls.parameter_names()}
    unknown = sorted(name for name in params
                     if name not in allowed and name.upper() not in allowed and not PARAMETER_NAME.match(name))
    if unknown:
        raise ConfigError(f"unknown parameter(s) {unknown} for {cls.__name__}; allowed: {sorted(allowed)}")
    return cls.from_params(params)


def builder_module(page: str) -> str:
    """The module whose ``build`` renders ``page`` (``<chapter>/<notebook stem>``)."""
    chapter, stem = page.split("/", 1)
    return f"{__name__}.{chapter}_{stem.replace('-', '_')}"


def _builder(page: str):
    """The builder module of ``page``; ``KeyError`` for a name that is not ``<chapter>/<stem>`` of a page
    with a builder (an import error inside an existing builder is raised as it is)."""
    import importlib

    if page.count("/") != 1:
        raise KeyError(f"no page {page!r}: pages are named <chapter>/<notebook stem>")
    try:
        module = importlib.import_module(builder_module(page))
    except ModuleNotFoundError as error:
        if error.name != builder_module(page):
            raise
        raise KeyError(f"no page {page!r} (no module {builder_module(page)})") from error
    if not hasattr(module, "GRID"):
        raise KeyError(f"no page {page!r}: {builder_module(page)} builds no page (no GRID)")
    return module


def page_grid(page: str) -> type[Config]:
    """The class of ``page``'s parameters: its builder's ``GRID``, every parameter its notebook accepts,
    validated before any compute (most pages read its ``runs()``; some read more, e.g. the sweeps'
    parallel reading). ``KeyError`` for a name that is not a page with a builder."""
    return _builder(page).GRID


def page_one_value(page: str) -> tuple[str, ...]:
    """The list parameters ``page`` draws one value of (its builder's ``ONE_VALUE``, checked by
    :func:`require_one`; none by default)."""
    return tuple(getattr(_builder(page), "ONE_VALUE", ()))


def require_one(grid: Config, names: tuple[str, ...], what: str) -> Config:
    """``grid`` when each of its list parameters ``names`` (e.g. ``("models", "datasets")``) holds one
    value: a page that draws one model or dataset (its titles name it, its tables do not key by it)
    would otherwise average several under one label. Raises :class:`ConfigError` naming the parameter,
    ``what`` the page draws and the values allowed, before any compute."""
    fields = {f.name: f for f in dataclasses.fields(grid)}
    for name in names:
        if name not in fields:
            raise ValueError(f"{what} draws one value of {name!r}, which is not a parameter of {type(grid).__name__}")
        values = getattr(grid, name)
        if len(values) != 1:
            choices = fields[name].metadata.get("choices")
            allowed = f"one of {list(choices)}" if choices else "one value"
            raise ConfigError(f"parameter {name.upper()} = {list(values)!r}: {what} is drawn for one "
                              f"{name.removesuffix('s')} at a time; give a list of {allowed}")
    return grid


# --- what is pending --------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Notice:
    """A short admonition about pending content: ``what`` is pending, ``why``, and the ``command`` that
    computes it. ``partial``: shown below a table or figure that has computed cells too; otherwise
    shown instead of it."""

    what: str
    why: str
    command: str | None = None
    partial: bool = False

    def text(self) -> str:
        """The notice as one or two sentences of plain text."""
        out = f"{self.what}: {self.why.rstrip('.')}."  # a reason quoting an error may end in its own period
        return out + (f" To compute: `{self.command}`" if self.command else "")

    def _repr_html_(self) -> str:
        command = (f" To compute: <code>{html.escape(self.command)}</code>" if self.command else "")
        return (f'<div class="admonition note"><p class="admonition-title">Pending</p>'
                f"<p>{html.escape(self.what)}: {html.escape(self.why.rstrip('.'))}.{command}</p></div>")

    def __repr__(self) -> str:
        return f"Pending — {self.text()}"


def _names(column: str, values) -> str:
    """Distinct ``values`` of ``column`` as display names, in the paper's order."""
    return ", ".join(display_name(v) for v in paper_sorted(column, values))


def reasons_text(reasons: Iterable[str], total: int, unit: str = "runs") -> str:
    """``"36 of 36 runs pending GPU"``, one part per reason, most frequent first."""
    counts = Counter(str(r) for r in reasons)
    return "; ".join(f"{n:,} of {total:,} {unit} {reason}" for reason, n in counts.most_common())


def pending_notice(what: str, total: int, reasons: Iterable[str], pending: pd.DataFrame | None = None,
                   command: str | None = None, by: str | None = "model", partial: bool | None = None
                   ) -> Notice | None:
    """The notice of a table or figure drawn from ``total`` runs, one of ``reasons`` per run without a
    record: None when there is none; partial (shown below what is drawn) when some runs have a record
    (or as ``partial`` says); shown instead of it when none has. ``by`` names the column of the
    ``pending`` runs whose values the notice lists (display names). Every chapter's notice of runs is
    this one, read from the way its runs say what is pending (:func:`status_notice`,
    :func:`pending_runs_notice`, :func:`~.bystanders_runs.pending_configs_notice`)."""
    reasons = list(reasons)
    if total == 0:
        return Notice(what, "no run in this page's parameters")
    if not reasons:
        return None
    why = reasons_text(reasons, total)
    if by and pending is not None and by in pending:
        why += f" ({_names(by, pending[by])})"
    return Notice(what, why, command, partial=len(reasons) < total if partial is None else partial)


def status_notice(what: str, runs: pd.DataFrame | None, command: str | None = None,
                  by: str | None = "model") -> Notice | None:
    """:func:`pending_notice` of ``runs`` with a ``status`` column (CASPER's: ``computed`` or why not)."""
    if runs is None or "status" not in runs:
        return Notice(what, "no run in this page's parameters")
    pending = runs[runs["status"] != "computed"]
    return pending_notice(what, len(runs), pending["status"], pending, command, by)


def runs_table(total: int, pending: pd.DataFrame) -> pd.Series:
    """How many of the ``total`` runs have a record and how many are pending, by reason."""
    counts = {"computed": total - len(pending), **pending["reason"].value_counts().to_dict()}
    return pd.Series({k: v for k, v in counts.items() if v}, name="runs", dtype=int).rename_axis("status")


def pending_runs_notice(what: str, total: int, pending: pd.DataFrame | None, command: str | None = None,
                        by: str | None = "model") -> Notice | None:
    """:func:`pending_notice` of ``total`` runs of which ``pending`` (rows with
    a ``reason``; CURE4Rec's and SRU's) have no record."""
    reasons = [] if pending is None or pending.empty else pending["reason"]
    return pending_notice(what, total, reasons, pending, command, by)


def cells_notice(what: str, comparison: pd.DataFrame | None, command: str | None = None,
                 by: str | None = "model") -> Notice | None:
    """The notice of a paper-vs-ours table (a :func:`~recunlearn.report.compare.compare` frame): None
    when every paper cell is computed, else how many paper cells are pending and why (their
    ``status``; ``by`` lists the pending values of that column)."""
    if comparison is None or "paper" not in comparison:
        return None
    cells = comparison[comparison["paper"].notna()]
    pending = cells[cells["ours"].isna()]
    if pending.empty:
        return None
    parts = []
    for reason, part in pending.groupby("status", sort=False):
        parts.append(f"{len(part):,} {reason}" + (f" for {_names(by, part[by])}" if by and by in part else ""))
    why = f"{len(pending):,} of {len(cells):,} paper cells without our value: " + "; ".join(parts)
    return Notice(what, why, command, partial=bool(comparison["ours"].notna().any()))


def computed_cells(comparison: pd.DataFrame) -> pd.DataFrame:
    """The rows of a comparison that hold our value (what a partly computed table shows)."""
    return comparison[comparison["ours"].notna()]


def published_claims(claims: pd.DataFrame | None) -> pd.DataFrame | None:
    """The claims as a page states them: a claim tested on no cell says only its verdict (``pending``),
    never ``0 of 0 cells``."""
    if claims is None:
        return None
    out = claims.copy()
    out.loc[out["holds in"].astype(str).str.contains(EMPTY_COUNT), "holds in"] = ""
    return out


def count_text(count: int, total: int, sentence: str, pending: str) -> str:
    """``sentence`` with ``{count}`` and ``{total}`` filled in, or ``pending`` when ``total`` is 0."""
    return sentence.format(count=count, total=total) if total else pending


# --- the compute plan -------------------------------------------------------------------------------

def plan_entries(page: str, keys: Iterable[str], device: str) -> list[str]:
    """The compute plan's entries serving ``page`` (``<paper>/<notebook stem>``) whose runs on
    ``device`` include any of the record ``keys``, in plan order."""
    from ...compute.command import DEFAULT_PLAN
    from ...compute.plan import entry_configs, read_entries
    from ...experiments.records import record_key

    wanted = set(keys)
    names = []
    for entry in read_entries(DEFAULT_PLAN):
        if page in entry.pages and wanted & {record_key(c) for c in entry_configs(entry, device, page)}:
            names.append(entry.name)
    return names


def distinct_runs(configs: Iterable[Config]) -> list[Config]:
    """``configs`` without repeats: a page drawing on several grids counts a run two of them list
    (e.g. a damping sweep's point at the default damping) once, as its records directory holds it."""
    from ...experiments.records import record_key

    seen, out = set(), []
    for config in configs:
        key = (config.experiment, record_key(config))
        if key not in seen:
            seen.add(key)
            out.append(config)
    return out


def distinct_pending(*frames: pd.DataFrame | None) -> pd.DataFrame:
    """The pending runs of several collections as one frame, a run two of them list once (by record
    ``key``, as :func:`distinct_runs` counts the configs)."""
    present = [f for f in frames if f is not None]
    pending = pd.concat([f for f in present if len(f)] or present[:1], ignore_index=True)
    return pending.drop_duplicates("key", ignore_index=True) if "key" in pending else pending


def run_command(configs: list[Config]) -> str:
    """``python -m recunlearn run <experiment> key=value ...`` computing every config of ``configs`` (one
    experiment; a list value is an axis of the command's grid, so other combinations of the values run
    too). Values equal to the config's default are left out."""
    cls = type(configs[0])
    defaults = {field.name: field.default for field in dataclasses.fields(cls)}
    parts = []
    for name in cls.parameter_names():
        values = list(dict.fromkeys(getattr(c, name) for c in configs))
        if values == [defaults[name]]:
            continue
        value = values[0] if len(values) == 1 else values
        text = json.dumps(value, separators=(",", ":"))
        parts.append(f"{name}={text if isinstance(value, (int, float)) or value is None else repr(text)}"
                     if not isinstance(value, str) else f"{name}={value}")
    return f"python -m recunlearn run {cls.experiment} " + " ".join(parts)


def computing_command(page: str, device: str, keys: set[str], configs: Iterable[Config]) -> str | None:
    """The one command that computes the runs of record ``keys`` for ``page``: the compute plan's entries
    listing them, else a ``python -m recunlearn run`` per experiment for the ``configs`` among them; None
    when there is nothing to compute (no key, or no config of a key outside the plan)."""
    from ...experiments.records import record_key

    if not keys:
        return None
    entries = plan_entries(page, keys, device)
    if entries:
        return compute_command(entries, device)
    by_experiment: dict[str, list[Config]] = {}
    for config in configs:
        if record_key(config) in keys:
            by_experiment.setdefault(config.experiment, []).append(config)
    return " && ".join(run_command(group) for group in by_experiment.values()) or None


def pending_command(page: str, device: str, pending: pd.DataFrame | None, configs: Iterable[Config]) -> str | None:
    """:func:`computing_command` of the ``pending`` runs (rows with a record ``key``, the pending frame
    every chapter's collection gives) of ``page``; None when nothing is pending."""
    return computing_command(page, device, set() if pending is None or pending.empty else set(pending["key"]),
                             configs)


def compute_command(entries: list[str], device: str) -> str:
    """``python -m recunlearn compute --only <entries>`` (with ``--device cuda`` for GPU runs)."""
    return (f"python -m recunlearn compute --only {' '.join(entries)}"
            + (f" --device {device}" if device != "cpu" else ""))


CLAIM_UNITS = {OWN_EXPECTATION: "expectations of our own", SELF_CHECK: "self-checks", OTHER_READING: "other readings"}


def pending_claims_notice(claims: pd.DataFrame, command: str | None = None, hypotheses: bool = False
                          ) -> Notice | None:
    """The notice of a page's claims still ``pending`` (None when none is): how many of each kind
    (the paper's claims, or with ``hypotheses`` the book's own; expectations of our own; self-checks;
    other readings), so that a page's own expectations are never counted as the paper's claims."""
    kinds = claims["kind"].fillna(PAPER_CLAIM) if "kind" in claims else pd.Series(PAPER_CLAIM, index=claims.index)
    waiting = (claims["verdict"] == PENDING).to_numpy()
    if not waiting.any():
        return None
    if (kinds == PAPER_CLAIM).all():
        what = "Our hypotheses" if hypotheses else "The paper's claims"
        counts = f"{waiting.sum()} of {len(claims)} {'hypotheses' if hypotheses else 'claims'}"
    else:
        units = {PAPER_CLAIM: "hypotheses" if hypotheses else "paper claims", **CLAIM_UNITS}
        parts = [f"{int((waiting & is_kind).sum())} of {int(is_kind.sum())} {unit}" for kind, unit in units.items()
                 if (waiting & (is_kind := (kinds == kind).to_numpy())).any()]
        what, counts = "The claims tested here", " and ".join(parts)
    return Notice(what, f"{counts} pending (no computed run to test them on)", command, partial=not waiting.all())


# --- the page -----------------------------------------------------------------------------------------

@dataclasses.dataclass
class Page:
    """What a page shows and publishes.

    ``runs`` (one row per run, with ``status``), ``pending`` (the runs without a record and why),
    ``comparison`` (the paper cells behind the page verdict), ``claims`` (stable ids), ``tables``
    (frames, or objects that display themselves), ``figures`` (callables drawing one or more
    matplotlib figures), ``values`` (glued under their names for the page's text), ``parts`` (verdicts
    of a page judged part by part), ``notices`` (by table or figure name, see :class:`Notice`; a None
    notice, a fully computed item, is dropped) and ``checks`` (the text the nbval-checked cell prints)."""

    name: str
    grid: Any = None
    runs: pd.DataFrame | None = None
    pending: pd.DataFrame | None = None
    comparison: pd.DataFrame | None = None
    claims: pd.DataFrame | None = None
    tables: dict[str, Any] = dataclasses.field(default_factory=dict)
    figures: dict[str, Callable[[], Any]] = dataclasses.field(default_factory=dict)
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    parts: dict[str, str] | None = None
    notices: dict[str, Notice | None] = dataclasses.field(default_factory=dict)
    checks: list[str] = dataclasses.field(default_factory=list)
    claims_command: str | None = None
    hypotheses: bool = False
    """Whether the page's claims of kind ``paper`` are the book's own hypotheses (its own chapter)."""
    said: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)
    """The output each partial notice :meth:`show` displayed was first said under, by (why, command)."""

    def __post_init__(self):
        self.notices = {name: notice for name, notice in self.notices.items() if notice is not None}
        if self.claims is not None and "claims" not in self.tables:
            shown = published_claims(self.claims)
            tested = shown[shown["verdict"] != "pending"]
            self.tables["claims"] = show_claims(tested)
            notice = pending_claims_notice(shown, self.claims_command, self.hypotheses)
            if notice is not None:
                self.notices.setdefault("claims", notice)

    @property
    def items(self) -> list[str]:
        """Every table and figure the page can show, by name."""
        return [*self.tables, *self.figures]

    def notice(self, name: str) -> Notice | None:
        """The notice of table or figure ``name`` (None: fully computed)."""
        return self.notices.get(name)

    def is_pending(self, name: str) -> bool:
        """Whether table or figure ``name`` has no computed cell (it is shown as its notice alone)."""
        table = self.tables.get(name)
        if isinstance(table, (pd.DataFrame, pd.Series)) and table.empty:
            return True
        notice = self.notice(name)
        return notice is not None and not notice.partial

    def shown_table(self, name: str):
        """Table ``name`` as :meth:`show` displays it: code names in its labels written for a reader, rows
        in the paper's order (:func:`~recunlearn.report.names.labelled`), rendered whole with a missing
        number as ``—`` (:class:`~recunlearn.report.names.BookTable`), and a Series (a count by status,
        say) as a one-column frame, which renders as a table rather than as pandas' plain-text printout."""
        table = self.tables[name]
        table = table.to_frame() if isinstance(table, pd.Series) else table
        return BookTable(labelled(table)) if isinstance(table, pd.DataFrame) else table  # a Styler is laid out

    def show(self, name: str):
        """Display table or figure ``name``: its pending notice alone when nothing of it is computed;
        a partly computed one with a notice saying how much is pending, unless the page has already
        said the same (same reason and command: the runs pending under a table are the runs pending
        under the figure drawn from them). Returns a fully computed table (displayed as the cell's
        result), else None."""
        from IPython.display import display

        if name not in self.tables and name not in self.figures:
            raise KeyError(f"page {self.name} has no table or figure {name!r}; it has {self.items}")
        notice = self.notice(name)
        if self.is_pending(name):
            display(notice or Notice(name, "nothing computed"))
            return None
        if name in self.figures:
            import matplotlib.pyplot as plt

            before = set(plt.get_fignums())
            self.figures[name]()  # alone, the inline backend shows the figures at the end of the cell
            if notice is not None and self._new(notice, name):  # the figures first, then the notice below them
                for number in [n for n in plt.get_fignums() if n not in before]:
                    display(plt.figure(number))
                    plt.close(number)
                display(notice)
            return None
        if notice is None or not self._new(notice, name):
            return self.shown_table(name)
        display(self.shown_table(name))
        display(notice)
        return None

    def _new(self, notice: Notice, name: str) -> bool:
        """Whether partial ``notice`` of output ``name`` says something no other output of this page has
        said (showing ``name`` again, as a re-run cell does, says it again)."""
        return self.said.setdefault((notice.why, notice.command), name) == name

    def check(self) -> None:
        """Print the counts and rounded metrics that nbval compares with the stored smoke output."""
        for text in self.checks:
            print(text)

    def texts(self) -> dict[str, str]:
        """Every text :meth:`publish` glues, by glue name: the values, each claim (``claim_<id>``) and the
        page-level facts (``page_verdict``, ``page_summary``, ``page_scale``, ``page_pending``, ...)."""
        claims = published_claims(self.claims)
        out = {name: str(value) for name, value in self.values.items()}
        for _, row in (claims.iterrows() if claims is not None else []):
            out[f"claim_{row['id']}"] = claim_text(row)
        out.update(page_facts(claims, self.comparison, grid=self.grid, runs=self.runs, parts=self.parts,
                              page=self.name))
        return out

    def glance_text(self) -> str:
        """The page's "At a glance" facts in plain text (verdict, scale, coverage, what is pending, each
        claim with its verdict), for a notebook read outside the book, where the glued values of the box
        are not filled in."""
        from ..verdicts import KIND_PREFIX

        texts = self.texts()
        lines = [f"Verdict: {texts['page_verdict']} — {texts['page_summary']}",
                 f"Computed at: {texts['page_scale']}", f"Coverage: {texts['page_coverage']}",
                 f"Pending, and why: {texts['page_pending']}"]
        claims = published_claims(self.claims)
        for _, row in (claims.iterrows() if claims is not None else []):
            lines.append(f"- {KIND_PREFIX.get(row['kind'], '')}{row['claim']}: {texts['claim_' + row['id']]}")
        return "\n".join(lines)

    def glance(self) -> None:
        """Print :meth:`glance_text` (a notebook's cell after its build: removed from the book, which fills
        in the box itself)."""
        print(self.glance_text())

    def publish(self) -> None:
        """Glue the page's values, its claims and its at-a-glance facts
        (:func:`~recunlearn.report.claims.glue_page`)."""
        from myst_nb import glue

        for name, value in self.values.items():
            glue(name, value, display=False)
        glue_page(published_claims(self.claims), self.comparison, grid=self.grid, runs=self.runs, parts=self.parts,
                  page=self.name)
