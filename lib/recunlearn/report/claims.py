"""Checking a paper's qualitative claims against our runs, with evidence beyond noise.

Every claim row has a stable ``id`` (pages glue ``claim_<id>``, never a position), the claim, a
verdict from :data:`recunlearn.report.verdicts.VERDICTS`, ``holds in`` (how many cells support
the claim, with the unit that says how: ``"3 of 4 cells significant"`` where each cell is tested,
``"3 of 4 cells in the claimed direction by mean"`` where one pooled test decides and the cells'
means only show where the claim holds, ``"3 of 4 cells"`` for exact checks), a ``p_value`` (one-sided in the claimed direction,
the largest over the claim's links and cells -- its weakest evidence; NaN for exact checks), ``p_tests``
(how many tests that largest p was taken over), the ``test`` used and the ``evidence`` behind the verdict.

How a claim is decided (alpha = :data:`~recunlearn.report.verdicts.ALPHA` = 0.05):

- **ordering claims** ("A above B", "A ≥ B ≥ C" as links A > B, B > C): a one-sided Wilcoxon
  signed-rank test over the seed-paired differences A − B, pooled over the cells (or per cell when
  the paper claims significance per setting); where a test has 2 to 4 pairs, too few for the
  signed-rank test ever to reach alpha = 0.05 (its smallest one-sided p is 1 / 2**n), a one-sided
  paired t-test decides instead (:func:`~recunlearn.report.significance.paired_p`), so that three
  seeds can fail a claim as well as pass it; where several tests share Holm's correction (m links,
  or m cells), the level a test must
  be able to reach is alpha / m (6 pairs cannot reach 0.05 / 4: the t-test decides there too), and a
  link or cell of a single pair, no test at all, stays outside the corrected family. ``reproduced``
  when every link is significant in the claimed direction and the means agree in every cell (``partly reproduced`` when they do not in
  some, or when only some links are significant); ``not reproduced`` when a link is significant in
  the opposite direction (a claim of several links is their conjunction); ``inconclusive``
  otherwise (within noise);
- **trend claims** ("falls with K"): per cell, Spearman's ρ between the swept value and the
  metric over seed-level points (not means), with a seeded permutation p-value (exact for up to 7
  points); a cell holds when p < alpha in the claimed direction and fails when p < alpha in the
  opposite one; cells combine by :func:`~recunlearn.report.verdicts.combine`;
- **rank agreement claims** ("the methods rank alike by utility and by disturbance"): per cell,
  Spearman's ρ between the units' (methods') means over seeds of two metrics; the mean ρ over the
  cells is tested by a permutation test that swaps the units' labels the same way in every cell (the
  units, not the seeds, are the points ranked, and the same units recur in every cell); reproduced
  when significant and the two orders are the same in every cell, partly reproduced when significant but the orders differ somewhere
  (:func:`rank_agreement_claim`);
- **band claims** ("between 0.75 and 0.95"): per cell, one-sided t-tests of the seed values'
  mean against both ends; holds when the mean is significantly inside both, fails when it is
  significantly outside one;
- **several tests of one claim** (its cells tested one by one, or its links): when every test
  passes at alpha the claim is reproduced, with no correction (the claim is their conjunction: an
  intersection-union test). Otherwise the cells (links) that hold, and those significantly against,
  are counted after Holm's correction for the number of tests
  (:func:`~recunlearn.report.significance.corrected_outcomes`), so that
  chance passes among many cells do not make a claim *partly reproduced*; where the correction
  changed a count, ``holds in`` says so and gives the uncorrected count;
- **exact checks** (:func:`check_claim`: the control run gives AO = 1 exactly): deterministic, no
  noise, all cells must hold.
- **runs without a record**: a runs frame may carry them as rows whose ``status`` is not
  ``computed`` (:func:`with_pending_rows`; their metrics are NaN). Every test above reads the
  computed rows only, and the claim then counts the waiting rows of its own scope (for an ordering,
  the rows of the factor values its links compare) as one pending part (:func:`with_waiting`): a
  claim that holds on the runs there are while some of its runs are still to come reads *partly
  reproduced*, with "k of m runs pending" in ``holds in`` -- the runs to come may still break it.
- **timing**: times are compared only where they were measured together, on one clock and close in
  time (:mod:`recunlearn.report.timed_together`); levels or pairs that fail that rule are left out
  and named in the evidence, and a claim left without usable timings is ``inconclusive``.

The tests themselves are in :mod:`recunlearn.report.significance`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import math
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from .names import display_name
from .significance import (N_PERMUTATIONS, PAIRED_T, SIGNED_RANK, band_p, centred_ranks, corrected_outcomes,
                           difference, format_p, paired_p, paired_test_name, permutation_p, smallest_spearman_p,
                           spearman_permutation, testable)
from .timed_together import record_clocks, record_times
from .verdicts import (ALPHA, CLAIM_KINDS, CLAIM_OUTCOME, INCONCLUSIVE, KIND_PREFIX, NOT_REPRODUCED,  # noqa: F401
                       OTHER_READING, OWN_EXPECTATION, PAPER_CLAIM, PARTLY, PENDING, REPRODUCED, SELF_CHECK, VERDICTS,
                       base_verdict, combine, page_summary, page_verdict, runs_pending_text)

CLAIM_COLUMNS = ["id", "claim", "verdict", "holds in", "p_value", "p_tests", "test", "evidence", "kind", "note",
                 "so far"]

_CELL = {"holds": "pass", "fails": "fail", "noise": "noise"}


def claim_row(id: str, claim: str, verdict: str, holds_in: str = "", p_value: float = float("nan"),
              test: str = "", evidence: str = "", kind: str = PAPER_CLAIM, p_tests: int = 1, note: str = "") -> dict:
    """One row of a claims frame (:data:`CLAIM_COLUMNS`); ``kind`` from :data:`CLAIM_KINDS`; ``p_tests``:
    the number of tests (cells, links) whose largest p is ``p_value``; ``note``: the rule the evidence
    opens with, if any (:func:`findings`); ``so far`` (set by :func:`with_waiting`): the verdict on the
    runs computed so far, where runs of the claim's scope still wait ("" otherwise)."""
    if verdict not in VERDICTS:
        raise ValueError(f"{verdict!r} is not in the verdict vocabulary {VERDICTS}")
    if kind not in CLAIM_KINDS:
        raise ValueError(f"claim kind {kind!r} is not one of {CLAIM_KINDS}")
    return {"id": id, "claim": claim, "verdict": verdict, "holds in": holds_in, "p_value": p_value,
            "p_tests": p_tests, "test": test, "evidence": evidence, "kind": kind, "note": note, "so far": ""}


def findings(row) -> str:
    """A claim's evidence without the rule it opens with (its ``note``), for a page whose text states
    the rule itself: what the test found, cell by cell."""
    evidence, note = str(row["evidence"]), str(row.get("note") or "")
    return evidence[len(note):].lstrip(" ;") if note and evidence.startswith(note) else evidence


def claims_frame(rows: Iterable[dict]) -> pd.DataFrame:
    """Claim rows as a frame with :data:`CLAIM_COLUMNS` (a row without ``kind`` is a paper claim, one
    without ``p_tests`` has one test); ids must be unique."""
    frame = pd.DataFrame(list(rows), columns=CLAIM_COLUMNS)
    frame["kind"] = frame["kind"].fillna(PAPER_CLAIM)
    frame["p_tests"] = frame["p_tests"].fillna(1).astype(int)
    frame["note"] = frame["note"].fillna("")
    frame["so far"] = frame["so far"].fillna("")
    duplicated = frame["id"][frame["id"].duplicated()].tolist()
    if duplicated:
        raise ValueError(f"claim ids must be unique per frame; repeated: {duplicated}")
    return frame


def joined_claims(*frames: pd.DataFrame) -> pd.DataFrame:
    """One claims frame from several (a page testing claims of several groups); ids must stay unique."""
    return claims_frame(pd.concat(frames, ignore_index=True).to_dict("records"))


STATUS, COMPUTED = "status", "computed"
"""A runs frame's column naming whether a row's run has a record (``computed``) or is waiting for one."""

RUN = "record"
"""The column naming each row's run (its record key): rows derived from one run share it."""


def with_pending_rows(frame: pd.DataFrame, keys: list[str] | None = None,
                      methods: Iterable[str] | None = None) -> pd.DataFrame:
    """``frame`` (rows of a ``collect_*`` function) with a ``status`` column: its rows ``computed``, and
    the configs of its ``attrs["pending"]`` (runs without a record) appended as rows ``pending``,
    their parameters in the frame's columns and their metrics NaN -- so that a claim built on any
    selection of the frame counts the runs of that selection still to come (:func:`with_waiting`).
    ``keys``: where one row of the frame joins several runs (of several experiments), the columns
    naming a row: a pending config without all of them is not one of the frame's rows, and configs
    of one row count once. ``methods``: where one run gives one row per method (a SCIF run's Learn,
    Retrain and SCIF), each pending config becomes one row per method."""
    waiting = pd.DataFrame(frame.attrs.get("pending") or [])
    if RUN in frame:  # one identity per run (:func:`count_runs`), shared by the rows of its methods
        waiting[RUN] = [f"pending-{i}" for i in range(len(waiting))]
    if methods is not None and len(waiting):
        waiting = waiting.drop(columns="method", errors="ignore").merge(
            pd.DataFrame({"method": list(methods)}), how="cross")
    waiting = waiting[[c for c in waiting.columns if c in frame.columns]] if len(frame.columns) else waiting
    if keys is not None and len(waiting):
        keys = [key for key in keys if key in frame.columns]  # the keys the frame's rows have
        waiting = waiting.reindex(columns=list(dict.fromkeys([*waiting.columns, *keys])))
        waiting = waiting.dropna(subset=keys).drop_duplicates(keys)
    out = pd.concat([frame.assign(**{STATUS: COMPUTED}), waiting.assign(**{STATUS: "pending"})], ignore_index=True) \
        if len(waiting) else frame.assign(**{STATUS: COMPUTED})
    out.attrs = dict(frame.attrs)
    return out


def with_waiting_rows(derived: pd.DataFrame, waiting: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Values derived from the computed runs (margins, shares, seed pairs: ``derived``, one row per
    ``keys``) with a ``status`` column, and one pending row per ``keys`` of the ``waiting`` runs
    appended (their keys only, and, where ``derived`` names its rows' runs, a :data:`RUN` of their own so
    that :func:`count_runs` counts them), for a claim on the derived values to count what is still to
    come. The ``status`` column is there even when nothing waits: frames of several such parts are
    concatenated, and a part without it would read as waiting (its status NaN)."""
    if waiting.empty:
        out = derived.assign(**{STATUS: COMPUTED})
        out.attrs = dict(derived.attrs)
        return out
    pending = waiting[keys].drop_duplicates(keys).assign(**{STATUS: "pending"})
    if RUN in derived:
        named = waiting.loc[pending.index, RUN] if RUN in waiting else pd.Series(pd.NA, index=pending.index)
        pending[RUN] = [run if isinstance(run, str) else f"pending-{i}" for i, run in enumerate(named)]
    out = pd.concat([derived.assign(**{STATUS: COMPUTED}), pending], ignore_index=True)
    out.attrs = dict(derived.attrs)
    return out


def count_runs(frame: pd.DataFrame) -> int:
    """The runs behind ``frame``'s rows: its distinct :data:`RUN` values (rows derived from one run, e.g.
    one per MRR group, count once; rows with none, e.g. means over runs, not at all), else its rows."""
    return int(frame[RUN].nunique()) if RUN in frame else len(frame)


def split_waiting(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(computed rows, waiting rows) of ``runs``: the rows whose ``status`` names a state other than
    computed wait; a frame without a ``status`` column is all computed, and so is a row without a
    status (one from a part of a concatenated frame that had no such column)."""
    if STATUS not in runs:
        return runs, runs.iloc[0:0]
    waiting = (runs[STATUS].notna() & (runs[STATUS] != COMPUTED)).to_numpy()
    return runs[~waiting], runs[waiting]


def with_waiting(row: dict, waiting: int, computed: int) -> dict:
    """Claim ``row``, tested on ``computed`` runs while ``waiting`` more runs of its scope have no record:
    its verdict combined with one pending part (:func:`~recunlearn.report.verdicts.combine`: reproduced
    becomes partly reproduced, the others stand) and ``"k of m runs pending"`` added to ``holds in``; the
    verdict on the computed runs is kept as ``so far`` (a claim whose test passes on the runs computed so
    far is told apart from one that holds in some of its cells only)."""
    if not waiting or base_verdict(row["verdict"]) == PENDING:
        return row
    pending = runs_pending_text(waiting, waiting + computed)
    return {**row, "verdict": combine([CLAIM_OUTCOME[base_verdict(row["verdict"])], "pending"]),
            "holds in": f"{row['holds in']}; {pending}" if row["holds in"] else pending,
            "so far": row.get("so far") or base_verdict(row["verdict"])}


def with_valueless(row: dict, valueless: int, computed: int) -> dict:
    """Claim ``row``, tested on ``computed`` runs while ``valueless`` more have a record but no value of the
    claim's measure (NaN: a diverged or undefined measurement): like runs still pending, they keep the
    claim from ``reproduced`` (:func:`with_waiting`), and ``"k of m runs without a value"`` is added to
    ``holds in``, so that a run cannot leave a claim's sample unnoticed."""
    if not valueless or base_verdict(row["verdict"]) == PENDING:
        return row
    text = f"{valueless} of {valueless + computed} runs without a value"
    return {**row, "verdict": combine([CLAIM_OUTCOME[base_verdict(row["verdict"])], "pending"]),
            "holds in": f"{row['holds in']}; {text}" if row["holds in"] else text}


def _whole_frame(frame: pd.DataFrame, arguments: dict) -> pd.DataFrame:
    return frame


def counts_waiting(scope: Callable[[pd.DataFrame, dict], pd.DataFrame] = _whole_frame):
    """Decorate a claim builder ``(id, claim, runs, ...)``: it is given the computed rows of ``runs``
    only (and, where it has a ``waiting`` parameter, the others there), and its row counts the waiting
    rows within ``scope(rows, arguments)`` (:func:`with_waiting`) and the computed runs there (rows with a
    :data:`RUN`: rows derived from runs, e.g. means, are not runs) none of whose rows has a value of its
    ``metric`` (or of its measure ``x``, where that is a column: a rank agreement's) (:func:`with_valueless`;
    a run with a value in some rows, e.g. an MRR group left empty, has one)."""
    def decorate(builder):
        signature = inspect.signature(builder)

        @functools.wraps(builder)
        def claim(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            done, waiting = split_waiting(bound.arguments["runs"])
            bound.arguments["runs"] = done
            if "waiting" in signature.parameters:
                bound.arguments["waiting"] = waiting
            row = builder(*bound.args, **bound.kwargs)
            measured = [bound.arguments[name] for name in ("x", "metric")  # a rank agreement measures both
                        if isinstance(bound.arguments.get(name), str) and bound.arguments[name] in done]
            if RUN in done and measured and done[measured].isna().to_numpy().any():
                in_scope = scope(done, bound.arguments)
                has_value = in_scope[measured].notna().groupby(in_scope[RUN]).any().all(axis=1)
                row = with_valueless(row, int((~has_value).sum()), int(has_value.sum()))
            if waiting.empty:
                return row
            return with_waiting(row, count_runs(scope(waiting, bound.arguments)),
                                count_runs(scope(done, bound.arguments)))
        return claim
    return decorate


def _link_rows(frame: pd.DataFrame, arguments: dict) -> pd.DataFrame:
    """The rows an ordering claim compares: those whose factor takes a value its links name."""
    members = {value for link in arguments["links"] for value in link}
    return frame[frame[arguments["factor"]].isin(members)] if arguments["factor"] in frame else frame.iloc[0:0]


def cells_verdict(outcomes: Iterable[str | None]) -> str:
    """Verdict of a claim from its cells' outcomes (``holds``, ``fails``, ``noise``; None = not
    testable): ``pending`` with no testable cell, ``reproduced`` when every cell holds, ``not
    reproduced`` when none holds and one fails, ``inconclusive`` when none holds or fails,
    ``partly reproduced`` otherwise (see :func:`~recunlearn.report.verdicts.combine`)."""
    return combine(_CELL[o] for o in outcomes if o is not None)


def most_cells_verdict(outcomes: Iterable[str | None], pending_cells: int = 0) -> str:
    """Verdict of a claim made "in most cases" from its cells' outcomes (as :func:`cells_verdict`) and
    the number of its cells still without a computed run: ``reproduced`` when more than half of all
    cells hold, ``not reproduced`` when half of them or more fail (most cannot hold then, whatever the
    pending cells show), ``inconclusive`` when none holds and fewer than half fail, ``partly
    reproduced`` otherwise; ``pending`` with no testable cell."""
    outcomes = [o for o in outcomes if o is not None]
    if not outcomes:
        return PENDING
    holds, fails, cells = outcomes.count("holds"), outcomes.count("fails"), len(outcomes) + pending_cells
    if 2 * holds > cells:
        return REPRODUCED
    if 2 * fails >= cells:
        return NOT_REPRODUCED
    return PARTLY if holds else INCONCLUSIVE


def with_columns(runs: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``runs`` with every one of ``columns`` (empty where no run has a value yet, e.g. every run still
    pending), the ones it has kept as they are."""
    return runs.reindex(columns=list(dict.fromkeys([*runs.columns, *columns])))


def _known_kind(kind: str) -> str:
    if kind not in CLAIM_KINDS:
        raise ValueError(f"claim kind {kind!r} is not one of {CLAIM_KINDS}")
    return kind


def with_kind(claims: pd.DataFrame, kind: str, ids: Iterable[str]) -> pd.DataFrame:
    """``claims`` (a claims frame) with the claims ``ids`` of ``kind`` (:data:`CLAIM_KINDS`)."""
    return claims.assign(kind=claims["kind"].where(~claims["id"].isin(list(ids)), _known_kind(kind)))


def as_kind(row: dict, kind: str) -> dict:
    """One claim row (of a claim builder) of ``kind`` (:data:`CLAIM_KINDS`): :func:`with_kind` for a row."""
    return {**row, "kind": _known_kind(kind)}


def cannot_reach(what: str, alpha: float, smallest: str = "") -> str:
    """``"; 3 methods cannot reach p < 0.05 (smallest p 1/6)"``: the note of a test that could not pass
    at ``alpha`` whatever the data."""
    return f"; {what} cannot reach p < {alpha:g}" + (f" (smallest p {smallest})" if smallest else "")


def unreachable(pairs: int, alpha: float, per: str = "") -> str:
    """``"; 1 pair cannot reach p < 0.05"`` when :func:`~recunlearn.report.significance.paired_p` over ``pairs`` pairs cannot pass
    at ``alpha`` whatever the data (not :func:`~recunlearn.report.significance.testable`); else empty."""
    return "" if testable(pairs) else cannot_reach(f"{pairs} pair{'' if pairs == 1 else 's'}{per}", alpha)


def holds_in_text(count: int, total: int, unit: str) -> str:
    """``"3 of 4 cells"`` for a claim's ``holds in``; empty when no cell was tested (a claim never
    counts nothing: it reads as its verdict alone, e.g. ``pending``)."""
    return f"{count} of {total} {unit}" if total else ""


def significant_text(outcomes: list[str], raw: list[str], unit: str) -> str:
    """``holds in`` of tests decided by :func:`~recunlearn.report.significance.corrected_outcomes` (``outcomes``; ``raw``: uncorrected;
    cells that could not be tested are ``noise`` in both): ``"2 of 3 cells significant; 1
    significantly against"``, and where the correction changed a count, the counts after it with
    the uncorrected ones, each beside the count it belongs to: ``"0 of 18 cells significant after Holm's
    correction (1 uncorrected); 6 significantly against after Holm's correction (12 uncorrected)"``."""
    count, total, failing = outcomes.count("holds"), len(outcomes), outcomes.count("fails")
    text = holds_in_text(count, total, f"{unit} significant")
    if not text:
        return text
    raw_count, raw_failing = raw.count("holds"), raw.count("fails")
    corrected = " after Holm's correction ({} uncorrected)"  # beside the count the correction changed
    if raw_count != count:
        text += corrected.format(raw_count)
    if failing or raw_failing:
        text += f"; {failing} significantly against" + (corrected.format(raw_failing) if raw_failing != failing
                                                        else "")
    return text


def claim_text(row) -> str:
    """What a page shows for a claim: ``"reproduced (3 of 3 cells; p = 0.002)"``. Where the p is the
    largest of several tests (``p_tests`` > 1: cells or links tested one by one), it says so:
    ``"partly reproduced (3 of 4 cells significant; largest p = 0.86)"``, so that a weak cell's p is
    not read as the whole claim's."""
    details = [str(row["holds in"])] if row["holds in"] else []
    if pd.notna(row["p_value"]):
        several = row.get("p_tests", 1) > 1
        details.append(("largest " if several else "") + format_p(row["p_value"]))
    return f"{row['verdict']} ({'; '.join(details)})" if details else str(row["verdict"])


def glue_claims(claims: pd.DataFrame, prefix: str = "claim_") -> pd.DataFrame:
    """Glue every claim under ``<prefix><id>`` (its :func:`claim_text`), its evidence under
    ``<prefix><id>_evidence`` and its :func:`findings` under ``<prefix><id>_found``, for the page's
    markdown; returns the frame, for display."""
    from myst_nb import glue

    for _, row in claims.iterrows():
        glue(f"{prefix}{row['id']}", claim_text(row), display=False)
        glue(f"{prefix}{row['id']}_evidence", str(row["evidence"]), display=False)
        glue(f"{prefix}{row['id']}_found", findings(row), display=False)
    return claims


def show_claims(claims: pd.DataFrame):
    """The claims for display (a pandas Styler), one row per claim: the claim, its verdict, where it
    holds, the p-value (one-sided, claimed direction; the largest over the claim's links and cells,
    headed so), and the test with its evidence in full. The
    id (the name the page's text glues) is left out; the cells wrap and align at the top."""
    kinds = claims["kind"] if "kind" in claims else pd.Series(PAPER_CLAIM, index=claims.index)
    shown = pd.DataFrame({
        "Claim": [KIND_PREFIX.get(k, "") + c for c, k in zip(claims["claim"], kinds)],
        "Verdict": claims["verdict"], "Holds in": claims["holds in"],
        "p (largest)": [format_p(p) if pd.notna(p) else "—" for p in claims["p_value"]],
        "Test and evidence": [f"{t}: {e}" if t and e else t or e for t, e in zip(claims["test"], claims["evidence"])]})
    cell = {"text-align": "left", "vertical-align": "top", "white-space": "normal"}
    widths = [("th.col0, td.col0", "min-width: 10em"),
              ("th.col4, td.col4", "min-width: 15em; font-size: 0.85em; overflow-wrap: anywhere")]
    return (shown.style.hide(axis="index").set_properties(**cell)
            .set_table_styles([{"selector": sel, "props": props} for sel, props in widths]))


def glue_page(claims: pd.DataFrame | None, comparison: pd.DataFrame | None = None, *, grid=None,
              runs: pd.DataFrame | None = None, parts: dict[str, str] | None = None, page: str | None = None):
    """Glue everything a page publishes: its claims (:func:`glue_claims`), and the page-level texts
    of :func:`recunlearn.report.glance.page_facts`: ``page_verdict`` (of the claims and the paper
    cells, or of ``parts``: verdicts of the page's parts, e.g. one per dataset), ``page_summary``,
    ``page_scale`` (of ``grid``), ``page_pending`` (the paper's datasets not in ``grid`` and the
    ``runs`` without a record, with why), ``page_coverage``, ``page_difference`` and ``page_claims``
    (JSON, for the scoreboard); ``page`` names the page, whose paper profile ``page_scale`` is compared
    with. Returns the claims for display (:func:`show_claims`)."""
    from myst_nb import glue

    from .glance import page_facts

    if claims is not None:
        glue_claims(claims)
    for name, text in page_facts(claims, comparison, grid=grid, runs=runs, parts=parts, page=page).items():
        glue(name, text, display=False)
    return show_claims(claims) if claims is not None else None


def check_claim(id: str, claim: str, means: pd.DataFrame, cells: list[str],
                test: Callable[[pd.DataFrame], bool | None], evidence: str = "exact check (no noise)",
                kind: str = PAPER_CLAIM, waiting: int = 0, computed: int = 0) -> dict:
    """A deterministic claim: apply ``test`` to the rows of every cell (groups of ``cells``); None
    means not testable. Holds everywhere -> ``reproduced``; nowhere -> ``not reproduced``; in some
    cells -> ``partly reproduced``; no testable cell -> ``pending``. For claims about values with
    no noise (exact equalities, counts); noisy claims use the tests below. ``kind``: a paper claim
    or a :data:`SELF_CHECK` of our implementation. ``waiting`` runs of its scope without a record yet,
    beside ``computed`` ones, keep it from ``reproduced`` (:func:`with_waiting`)."""
    results = [test(group) for _, group in means.groupby(cells)] if cells else [test(means)]
    tested = [bool(r) for r in results if r is not None]
    holds = sum(tested)
    verdict = cells_verdict("holds" if t else "fails" for t in tested)
    return with_waiting(claim_row(id, claim, verdict, holds_in_text(holds, len(tested), "cells"), test="exact",
                                  evidence=evidence, kind=kind), waiting, computed)


def _groups(frame: pd.DataFrame, cells: list[str]):
    if not cells:
        yield (), frame
        return
    for key, group in frame.groupby(cells, sort=True):
        yield (key if isinstance(key, tuple) else (key,)), group


def _label(cells: list[str], key: tuple) -> str:
    """A cell as a reader reads it: ``ML-100K/WMF/RecEraser`` (``all`` for no cell)."""
    return "/".join(display_name(k) for k in key) if key else "all"


# --- claim builders ---------------------------------------------------------------------------------

def pairs_text(n: int) -> str:
    """``"1 pair"``, ``"8 pairs"``."""
    return f"{n} pair" + ("" if n == 1 else "s")


def paired_differences(runs: pd.DataFrame, factor: str, a, b, metric: str, cells: list[str],
                       pair_on: Iterable[str] = ("seed",), max_apart: pd.Timedelta | None = None,
                       waiting: bool = False) -> pd.DataFrame:
    """``cells + pair_on + [diff]``: ``metric`` of ``factor == a`` minus that of ``factor == b``,
    for every (cell, pair) where both exist (e.g. the same seed of the same dataset and model). Two runs
    of one factor value in one (cell, pair) are an error: averaging them would merge settings unnoticed.

    ``max_apart`` (times): a pair counts only when both runs' records were written at most that far
    apart (``created`` column, see :func:`~recunlearn.report.timed_together.record_times`); runs of unknown time never pair. The
    frame's ``attrs["left_out"]`` counts the pairs dropped by that rule.

    ``waiting``: ``runs`` may hold runs without a record (:func:`split_waiting`); the differences are
    taken over the computed ones, and each pair still waiting for a run of ``a`` or ``b`` is added as
    a row of ``status`` pending (``diff`` NaN), for a claim on the differences to count
    (:func:`with_waiting`)."""
    if waiting and STATUS in runs:
        done, left = split_waiting(runs)
        out = paired_differences(done, factor, a, b, metric, cells, pair_on, max_apart)
        left = left[left[factor].isin([a, b])] if factor in left else left.iloc[0:0]
        return with_waiting_rows(out, left, list(cells) + list(pair_on))
    index = list(cells) + list(pair_on)
    empty = pd.DataFrame(columns=index + ["diff"])
    empty.attrs["left_out"] = 0
    if metric not in runs or factor not in runs:
        return empty
    part = runs[runs[factor].isin([a, b])]
    if part.empty:
        return empty
    keyed = part.dropna(subset=index + [factor])  # rows without a key never pair (pivot_table drops them)
    repeated = keyed[keyed.duplicated(index + [factor], keep=False)]
    if len(repeated):  # two runs in one place of a pair: a setting missing from ``cells`` would be averaged away
        raise ValueError(f"{len(repeated)} runs share their {index + [factor]} with another: a column that tells "
                         f"them apart is missing from the cells or pair_on given; the first: "
                         f"{repeated[index + [factor]].iloc[0].to_dict()}")
    table = part.pivot_table(index=index, columns=factor, values=metric, aggfunc="mean")
    if a not in table or b not in table:
        return empty
    both = table[[a, b]].dropna()
    diff = pd.Series(difference(both[a], both[b]), index=both.index, name="diff")  # rounding is a tie
    left_out = 0
    if max_apart is not None:
        times = record_times(part, [])
        seconds = (times - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
        clock = pd.Series(pd.factorize(record_clocks(part, []))[0], index=part.index)
        stamped = part.assign(created_s=seconds, clock_id=clock)
        created = stamped.pivot_table(index=index, columns=factor, values="created_s", aggfunc="max", dropna=False)
        clocks = stamped.pivot_table(index=index, columns=factor, values="clock_id", aggfunc="max", dropna=False)
        both = a in created and b in created
        apart = (created[a] - created[b]).abs().reindex(diff.index) if both else pd.Series(np.nan, index=diff.index)
        same_clock = (clocks[a] == clocks[b]).reindex(diff.index, fill_value=False) if both else False
        keep = apart.notna() & (apart <= max_apart.total_seconds()) & same_clock
        left_out = int((~keep).sum())
        diff = diff[keep.to_numpy()]
    out = diff.reset_index()
    out.attrs["left_out"] = left_out
    return out


@counts_waiting(_link_rows)
def ordering_claim(id: str, claim: str, runs: pd.DataFrame, factor: str, links: list[tuple], metric: str,
                   cells: list[str], higher: bool = True, pair_on: Iterable[str] = ("seed",),
                   per_cell: bool = False, alpha: float = ALPHA, note: str = "", margin: float = 0.0,
                   max_apart: pd.Timedelta | None = None, exceptions: int = 0) -> dict:
    """An ordering claim on seed-level ``runs``: for every link ``(a, b)``, ``metric`` of ``factor
    == a`` is above (``higher``) or below that of ``factor == b``, the two paired by ``pair_on``
    (the seed) within each cell; times also pass ``max_apart``.

    Pooled (default): one one-sided Wilcoxon signed-rank test per link over every paired
    difference of every cell. ``reproduced`` when every link is significant (p < ``alpha``) in
    the claimed direction and the mean difference agrees in every cell; ``partly reproduced``
    when every link is significant but some cell's mean disagrees, or when some links are
    significant and none is significant the other way; ``not reproduced`` when any link is
    significant in the opposite direction (the claim is the conjunction of its links); when not
    every link passes, links hold or are against only after Holm's correction over the links
    (:func:`~recunlearn.report.significance.corrected_outcomes`);
    ``inconclusive`` otherwise; ``pending`` without pairs. ``holds in`` counts the cells whose mean
    differences all agree (``"cells in the claimed direction by mean"``) and, for several links, the
    links significant each way (``"2 of 3 links significant, 1 significantly against"``: "SISA, RecEraser and UltraRE below
    Retrain" with SISA significantly above, or a margin significantly not met).

    ``per_cell``: the test is run in each cell (a cell's p is its links' largest, so it holds when
    every link is significant there; it fails when one link is significant the other way, with
    Bonferroni's correction over the links, each link's test chosen so that it can reach that level)
    and the cells, decided by :func:`~recunlearn.report.significance.corrected_outcomes`, combine by :func:`cells_verdict` -- for
    claims the paper makes with a test per setting.

    ``exceptions`` (pooled): cells whose means may disagree while the claim still reads ``reproduced``,
    for a claim the paper makes "in all but one setting"; allowed only among more than twice as many
    cells (all but one of two cells is no "all but one").

    ``margin``: a link claims a difference larger than ``margin`` ("well below": a > b + margin);
    the tests and the cell means use ``sign * (a - b) - margin``.

    ``max_apart`` (times): only pairs recorded at most that far apart (:func:`paired_differences`);
    pairs left out are counted in the evidence, and a claim whose pairs are all left out is
    ``inconclusive``. A link without any pair (its runs not computed yet, or all left out) stays
    in the claim as a part within noise, named in the evidence ("no pairs"), so the claim cannot read
    ``reproduced`` on the links it has (pooled, it stays outside Holm's family like a single-pair link:
    where every link tested passes, that is still a level-``alpha`` statement about those links); per
    cell, a cell lacking one of the links cannot hold, but fails when a link it has is reversed.

    Each test is :func:`~recunlearn.report.significance.paired_p`: the signed-rank test, or a paired t-test where the pairs are
    too few for the signed-rank test to reach ``alpha`` (marked "paired t" in the evidence and
    named in ``test``). ``p_value`` is the largest claimed-direction p over the links (and cells) with
    two pairs or more: a single pair is no test and shows no p.
    An inconclusive claim with a single pair (no test can pass) says so in ``holds in``."""
    if exceptions and per_cell:
        raise ValueError("exceptions apply to a pooled ordering claim, not per_cell")
    sign = 1.0 if higher else -1.0
    relation = (">" if higher else "<") + (f" (by more than {margin:g})" if margin else "")
    diffs = {link: paired_differences(runs, factor, *link, metric, cells, pair_on, max_apart) for link in links}
    left_out = sum(d.attrs.get("left_out", 0) for d in diffs.values())
    unpaired = [link for link, d in diffs.items() if not len(d)]  # a link never compared cannot hold: it stays
    diffs = {link: d.assign(diff=sign * d["diff"].astype(float) - margin) for link, d in diffs.items() if len(d)}
    unpaired_parts = [f"{display_name(a)} {relation} {display_name(b)}: no pairs" for a, b in unpaired]
    layout = ("per cell" if per_cell else "pooled over cells") + f", pairs by {' and '.join(pair_on)}"
    test_name = f"{paired_test_name({SIGNED_RANK})}, {layout}"
    if left_out:
        note = (note + " " if note else "") + (f"{pairs_text(left_out)} left out: recorded more than "
                                               f"{max_apart.total_seconds() / 60:g} minutes apart.")
    if not diffs:
        return claim_row(id, claim, INCONCLUSIVE if left_out else PENDING,
                         f"{pairs_text(left_out)} not timed together, left out" if left_out else "", test=test_name,
                         note=note,
                         evidence=(note + " " if note else "") + ("no pair timed together" if left_out
                                                                  else "no paired runs yet"))
    keys = sorted(set().union(*(set(map(tuple, d[cells].to_numpy())) if cells else {()} for d in diffs.values())))
    cell_hold = []
    for key in keys:
        means = []
        for d in diffs.values():
            part = d[(d[cells] == pd.Series(key, index=cells)).all(axis=1)] if cells else d
            if len(part):
                means.append(part["diff"].mean())
        if means:
            cell_hold.append(all(m > 0 for m in means))  # a tie (difference 0) is not the claimed direction
    holds_in = holds_in_text(sum(cell_hold), len(cell_hold), "cells in the claimed direction by mean")
    allowed = exceptions if len(cell_hold) > 2 * exceptions else 0
    if allowed:
        holds_in += f" ({allowed} against allowed)"
    if per_cell:  # the cells' own outcomes replace the count of cells by mean
        result = _ordering_per_cell(diffs, keys, cells, len(links), relation, alpha)
        holds_in = result.holds_in
    else:
        result = _ordering_pooled(diffs, len(unpaired), relation, sign, margin, alpha,
                                  REPRODUCED if cell_hold.count(False) <= allowed else PARTLY)
        holds_in += result.holds_in
    if left_out:
        holds_in += f"; {pairs_text(left_out)} not timed together, left out"
    evidence = ((note + " " if note else "") + f"{display_name(metric)}; " + "; ".join(result.parts + unpaired_parts)
                + f"; alpha = {alpha}")
    p_value = max(result.p_values) if result.p_values else float("nan")  # the largest p of the tests (one pair: none)
    return claim_row(id, claim, result.verdict, holds_in, p_value, f"{paired_test_name(result.tests)}, {layout}",
                     evidence, note=note, p_tests=result.n_tests)


@dataclasses.dataclass
class _LinkTests:
    """What an ordering claim's tests give (:func:`_ordering_per_cell`, :func:`_ordering_pooled`): the
    verdict, the ``holds in`` text (per cell: all of it; pooled: what follows the cell count), the
    evidence parts, the claimed-direction p values shown (pooled: one per link; per cell: one per cell,
    the largest of its links'), how many tests are behind them, and the names of the tests used."""

    verdict: str
    holds_in: str
    parts: list
    p_values: list
    n_tests: int
    tests: set


def _ordering_per_cell(diffs: dict, keys: list, cells: list[str], n_links: int, relation: str,
                       alpha: float) -> _LinkTests:
    """:func:`ordering_claim` with ``per_cell``: each cell tested on its own (its p the largest of its
    links'; failed by one link reversed at the Bonferroni level over its links), the cells decided by
    :func:`~recunlearn.report.significance.corrected_outcomes` and combined by :func:`cells_verdict`."""
    def in_cell(d, key):
        return d[(d[cells] == pd.Series(key, index=cells)).all(axis=1)] if cells else d

    def cell_testable(key):  # every link with pairs in the cell has two or more
        sizes = [len(in_cell(d, key)) for d in diffs.values()]
        return any(sizes) and all(testable(n) for n in sizes if n)

    family = sum(cell_testable(key) for key in keys)
    # what a link must reach: Holm's level over the cells, and for a reversal, which fails the cell, that level
    # shared by the cell's links (Bonferroni below, over the links with pairs there, at most all of them); the
    # test is chosen so that it can reach it with every link present
    level = alpha / max(family, 1) / n_links
    parts, p_values, tests, tested = [], [], set(), 0
    cell_up, cell_down, largest_cell, untested = [], [], 0, 0
    for key in keys:
        ups, downs, shown = [], [], []
        for (a, b), d in diffs.items():
            part = in_cell(d, key)
            if len(part) == 0:
                continue
            largest_cell = max(largest_cell, len(part))
            up, down, used = paired_p(part["diff"], level)
            tests.add(used)
            ups.append(up)
            downs.append(down)
            if testable(len(part)):
                shown.append(up)
            parts.append(f"{_label(cells, key)}: {display_name(a)} {relation} {display_name(b)} "
                         f"{_tested(len(part), used, up)}")
        complete = len(ups) == n_links  # a link without pairs here: the cell cannot hold, but can fail
        if ups and cell_testable(key):  # a cell holds when all its links do; fails when one is reversed
            cell_up.append(max(ups) if complete else 1.0)  # (Bonferroni over links)
            cell_down.append(min(1.0, min(downs) * len(downs)))
        elif ups:  # a link of one pair, or none: the cell cannot be decided, and stays outside the corrected family
            untested += 1
        if shown:
            p_values.append(max(shown))
            tested += len(shown)
    outcomes, raw = corrected_outcomes(cell_up, cell_down, alpha)
    outcomes, raw = outcomes + ["noise"] * untested, raw + ["noise"] * untested
    verdict = cells_verdict(outcomes)
    holds_in = significant_text(outcomes, raw, "cells")
    if verdict == INCONCLUSIVE:
        holds_in += unreachable(largest_cell, alpha, " per cell")
    return _LinkTests(verdict, holds_in, parts, p_values, tested, tests)


def _ordering_pooled(diffs: dict, n_unpaired: int, relation: str, sign: float, margin: float, alpha: float,
                     all_hold: str) -> _LinkTests:
    """:func:`ordering_claim` pooled over cells: one test per link, Holm's correction over the links
    with two pairs or more (the ``n_unpaired`` links without pairs stay outside it, within noise);
    ``all_hold``: the verdict when every link holds (``reproduced`` unless cell means disagree)."""
    parts, tests, ups, downs = [], set(), [], []
    family = [i for i, d in enumerate(diffs.values()) if testable(len(d))]  # a single pair is no test
    level = alpha / max(len(family), 1)  # what a link must reach under Holm's correction: the test must be able to
    for (a, b), d in diffs.items():
        up, down, used = paired_p(d["diff"], level)
        tests.add(used)
        ups.append(up)
        downs.append(down)
        tested_here = testable(len(d))
        parts.append(f"{display_name(a)} {relation} {display_name(b)}: n = {pairs_text(len(d))}"
                     f"{_t_mark(used) if tested_here else ''}, mean {display_name(a)} − {display_name(b)} "
                     f"{sign * (d['diff'].mean() + margin):+.4g}, " + (format_p(up) if tested_here else "no test")
                     + (f" (opposite direction: {format_p(down)})" if down < alpha else ""))
    p_values = [up for up, d in zip(ups, diffs.values()) if testable(len(d))]  # a single pair has no p
    link_outcomes, raw_links = ["noise"] * len(ups), ["noise"] * len(ups)  # untestable links: outside the family
    for i, corrected, uncorrected in zip(family, *corrected_outcomes([ups[i] for i in family],
                                                                       [downs[i] for i in family], alpha)):
        link_outcomes[i], raw_links[i] = corrected, uncorrected
    link_outcomes, raw_links = link_outcomes + ["noise"] * n_unpaired, raw_links + ["noise"] * n_unpaired
    if "fails" in link_outcomes:
        verdict = NOT_REPRODUCED
    elif all(o == "holds" for o in link_outcomes):
        verdict = all_hold
    elif "holds" in link_outcomes:
        verdict = PARTLY
    else:
        verdict = INCONCLUSIVE
    holds_in = unreachable(max(len(d) for d in diffs.values()), alpha) if verdict == INCONCLUSIVE else ""
    if len(link_outcomes) > 1:
        holds_in += "; " + significant_text(link_outcomes, raw_links, "links").replace("; ", ", ", 1)
    return _LinkTests(verdict, holds_in, parts, p_values, len(p_values), tests)


def _t_mark(used: str) -> str:
    return " (paired t)" if used == PAIRED_T else ""


def _tested(n: int, used: str, p: float) -> str:
    """A per-cell link's pairs and p: ``"n = 3 (paired t), p = 0.04"``, or ``"n = 1, no test"``."""
    return f"n = {n}{_t_mark(used)}, {format_p(p)}" if testable(n) else f"n = {n}, no test"


@counts_waiting()
def trend_claim(id: str, claim: str, runs: pd.DataFrame, x: str, metric: str, sign: int, cells: list[str],
                alpha: float = ALPHA, n_permutations: int = N_PERMUTATIONS, seed: int = 0, note: str = "",
                usable: Callable[[pd.DataFrame], tuple[pd.DataFrame, str]] | None = None) -> dict:
    """A trend claim: ``metric`` rises (``sign`` = +1) or falls (-1) with ``x``, in every cell.

    Per cell, Spearman's ρ over the seed-level points (one per run, not means) with a permutation
    p-value (:func:`~recunlearn.report.significance.spearman_permutation`); the cell holds when the claimed-direction p < ``alpha``,
    fails when the opposite one is, and is noise otherwise -- after Holm's correction over the
    cells unless every cell holds (:func:`~recunlearn.report.significance.corrected_outcomes`); cells combine by :func:`cells_verdict`.
    ``usable(group) -> (points, note)`` may restrict a cell's points first (timing: one session,
    interleaved levels); a cell left with fewer than 3 levels is noise, and the note says why. A cell
    whose points could not reach ``alpha`` even perfectly ordered (:func:`~recunlearn.report.significance.smallest_spearman_p`) is
    noise too, outside the corrected family, and says so in the evidence: it cannot be decided with
    these runs; one that could not reach Holm's first level (``alpha`` over the cells tested) says that.
    ``p_value`` is the largest claimed-direction p over the cells."""
    parts, p_values, p_opposites, untested, tested = [], [], [], 0, []
    for key, group in _groups(with_columns(runs, [metric]).dropna(subset=[metric]), cells):
        if group[x].nunique() < 2:
            continue
        points, why = usable(group) if usable else (group, "")
        label = _label(cells, key)
        if points[x].nunique() < 3:
            untested += 1
            parts.append(f"{label}: {why or 'fewer than 3 levels'}")
            continue
        rho, up, down = spearman_permutation(points[x], points[metric], n_permutations, seed)
        p_claimed, p_opposite = (up, down) if sign > 0 else (down, up)
        floor = smallest_spearman_p(points[x], n_permutations)
        text = f"{label}: ρ = {rho:+.2f} over {len(points)} runs, {format_p(p_claimed)}" + (f" ({why})" if why else "")
        if floor >= alpha:  # no order of these points can pass or fail: outside the corrected family, like one pair
            untested += 1
            parts.append(text + f" ({len(points)} runs at these levels cannot reach p < {alpha:g}: the smallest p is "
                                f"{floor:.3g})")
            continue
        tested.append(floor)
        parts.append((text, floor))  # its Holm note is known once every cell is
        p_values.append(p_claimed)
        p_opposites.append(p_opposite)
    holm_level = alpha / max(len(tested), 1)  # what the first cell must reach when not every cell holds
    parts = [part if isinstance(part, str) else part[0] + (
        f" (cannot reach p < {holm_level:.3g}, the level Holm's correction over {len(tested)} cells asks when not "
        f"every cell holds: the smallest p is {part[1]:.3g})" if part[1] >= holm_level else "") for part in parts]
    outcomes, raw = corrected_outcomes(p_values, p_opposites, alpha)
    outcomes, raw = outcomes + ["noise"] * untested, raw + ["noise"] * untested  # outside the corrected family
    verdict = cells_verdict(outcomes)
    test = "Spearman ρ over seed-level points, one-sided permutation p-value"
    evidence = (note + " " if note else "") + ("; ".join(parts) if parts else "no cell with two levels yet")
    return claim_row(id, claim, verdict, significant_text(outcomes, raw, "cells"),
                     max(p_values) if p_values else float("nan"), test, evidence + f"; alpha = {alpha}",
                     p_tests=len(p_values), note=note)


@counts_waiting()
def rank_agreement_claim(id: str, claim: str, runs: pd.DataFrame, unit: str, x: str, metric: str, cells: list[str],
                         sign: int = +1, alpha: float = ALPHA, n_permutations: int = N_PERMUTATIONS,
                         seed: int = 0, note: str = "") -> dict:
    """A claim that the ``unit``s (e.g. the methods) rank in the same order by their mean ``x`` as by
    their mean ``metric`` (``sign`` = -1: in reverse order), in every cell.

    Per cell, Spearman's ρ between the units' means over seeds (ties averaged) of ``x`` and of
    ``metric``, over the set of units most cells have, in the cells that have all of them (the others
    are left out, and named): the units are what is ranked, so the seeds of one unit are not counted
    as independent points. The statistic is the mean ρ over the cells; its one-sided
    p-value is a permutation test that swaps the units' labels on the ``metric`` means, one
    permutation applied to every cell: the same units recur in every cell, so the cells are not
    independent evidence (with 4 units the smallest p is 1/24, however many cells agree). Exact for up
    to 7 units (every permutation), else ``n_permutations`` draws from a generator seeded with
    ``seed``. ``reproduced`` when the p in the claimed direction is below ``alpha`` and the two
    orders are the same in every cell (ρ = ``sign``); ``partly reproduced`` when the p is below
    ``alpha`` but the orders differ in some cell (the association holds, the orders do not match);
    ``not reproduced`` when the opposite direction's p is below ``alpha``; ``inconclusive``
    otherwise; ``pending`` without a cell of 3 units with both means. ``holds in`` counts the cells
    whose two orders are the same (``"cells in the same order"``); the evidence gives each cell's ρ
    and its two orders."""
    test = (f"Spearman ρ between per-{unit} means in each cell, averaged over the cells; one-sided permutation "
            f"p-value ({unit} labels swapped the same way in every cell)")
    frame = with_columns(runs, [x, metric])
    frame = frame.dropna(subset=[x, metric]) if len(frame) else frame
    cell_means = [(key, group.groupby(unit)[[x, metric]].mean()) for key, group in _groups(frame, cells)] \
        if len(frame) else []
    sets = [frozenset(m.index) for _, m in cell_means]
    candidates = sorted(set(sets), key=lambda units: sorted(map(str, units)))  # ties: the same set on every run
    common = sorted(max(candidates, key=lambda units: (sets.count(units), len(units)))) if sets else []
    partial = [key for key, m in cell_means if not set(common) <= set(m.index)]  # a unit without a run there yet
    ranked, parts, agreeing = [], [], []
    for key, means in cell_means:
        if key in partial:  # one labelling of the units is permuted in every cell: each cell must have them all
            continue
        means = means.loc[common]
        if len(means) < 3 or means[x].nunique() < 2 or means[metric].nunique() < 2:
            continue
        ranks = centred_ranks(means[x], means[metric])
        rho = ranks.rho()
        ranked.append(ranks)
        agreeing.append(sign * rho > 1 - 1e-9)  # the same order
        parts.append(f"{_label(cells, key)}: ρ = {rho:+.2f} ({display_name(x)}: {_order(means[x])}; "
                     f"{display_name(metric)}: {_order(means[metric])})")
    if not ranked:
        return claim_row(id, claim, PENDING, test=test, evidence=(note + " " if note else "") + "no cell with 3 units yet",
                         note=note)
    observed = float(np.mean([ranks.rho() for ranks in ranked]))
    k = len(common)
    exact = math.factorial(k) <= 5040
    orders = (np.array(list(itertools.permutations(range(k)))) if exact
              else np.random.default_rng(seed).permuted(np.tile(np.arange(k), (n_permutations, 1)), axis=1))
    null = np.mean([ranks.y[orders] @ ranks.x / ranks.scale for ranks in ranked], axis=0)
    up, down = permutation_p(observed, null, exact, n_permutations)
    p_claimed, p_opposite = (up, down) if sign > 0 else (down, up)
    if p_claimed < alpha:
        verdict = REPRODUCED if all(agreeing) else PARTLY
    else:
        verdict = NOT_REPRODUCED if p_opposite < alpha else INCONCLUSIVE
    smallest = 1 / math.factorial(k) if exact else 1 / (1 + n_permutations)
    cannot = (cannot_reach(f"{k} {unit}s", alpha, f"1/{math.factorial(k)}")
              if verdict == INCONCLUSIVE and smallest >= alpha else "")
    left_out = (f"; {len(partial)} cell{'s' if len(partial) > 1 else ''} without a run of every {unit} left out "
                f"({', '.join(_label(cells, key) for key in partial)})" if partial else "")
    evidence = ((note + " " if note else "") + f"mean ρ over {len(ranked)} cells {observed:+.2f}, {format_p(p_claimed)}"
                + (f" (opposite direction: {format_p(p_opposite)})" if p_opposite < alpha else "")
                + "; " + "; ".join(parts) + left_out + f"; alpha = {alpha}")
    return claim_row(id, claim, verdict, holds_in_text(sum(agreeing), len(agreeing), "cells in the same order")
                     + cannot, p_claimed, test, evidence, note=note)


def _order(means: pd.Series) -> str:
    """Units from the highest mean to the lowest: ``RecEraser > UltraRE > Retrain > SISA``."""
    return " > ".join(display_name(u) for u in means.sort_values(ascending=False).index)


@counts_waiting()
def band_claim(id: str, claim: str, runs: pd.DataFrame, metric: str, cells: list[str], low: float = -np.inf,
               high: float = np.inf, alpha: float = ALPHA, note: str = "", most: bool = False,
               waiting: pd.DataFrame | None = None) -> dict:
    """A claim that ``metric`` (seed-level values) lies in ``[low, high]`` in every cell: per cell
    :func:`~recunlearn.report.significance.band_p`; holds when significantly inside (p < ``alpha``), fails when significantly
    outside, noise otherwise (after Holm's correction over the cells unless every cell holds, see
    :func:`~recunlearn.report.significance.corrected_outcomes`; a cell of one run cannot be tested and is noise); cells combine by
    :func:`cells_verdict`, or with ``most`` (a claim made "in most cases") by :func:`most_cells_verdict`,
    counting the cells of the runs without a record (``waiting``, given by :func:`counts_waiting`) that
    have no computed run yet.
    ``holds in`` counts the cells significantly inside (``"cells significant"``); the evidence gives
    every cell's mean."""
    parts, p_values, p_outside, single = [], [], [], 0
    for key, group in _groups(with_columns(runs, [metric]).dropna(subset=[metric]), cells):
        values = group[metric].to_numpy(dtype=float)
        parts.append(f"{_label(cells, key)}: mean {values.mean():.4g} over {len(values)}, "
                     + (format_p(band_p(values, low, high)[0]) if len(values) > 1 else "no test"))
        if len(values) < 2:  # no test possible: noise, outside the family that is corrected
            single += 1
            continue
        p_in, p_out = band_p(values, low, high)
        p_values.append(p_in)
        p_outside.append(p_out)
    outcomes, raw = corrected_outcomes(p_values, p_outside, alpha)
    outcomes, raw = outcomes + ["noise"] * single, raw + ["noise"] * single  # outside the corrected family
    tested = {key for key, _ in _groups(with_columns(runs, [metric]).dropna(subset=[metric]), cells)}
    untested = {key for key, _ in _groups(waiting, cells)} - tested if waiting is not None and len(waiting) else set()
    verdict = most_cells_verdict(outcomes, len(untested)) if most else cells_verdict(outcomes)
    evidence = (note + " " if note else "") + (f"{display_name(metric)} {band_text(low, high)}; " + "; ".join(parts)
                                               if parts else "no computed cell yet")
    holds_in = significant_text(outcomes, raw, "cells")
    if single:
        holds_in += f"; {single} with a single run (no test possible)"
    if most and outcomes:
        holds_in += "; holds when most cells are significantly inside"
    return claim_row(id, claim, verdict, holds_in, max(p_values) if p_values else
                     float("nan"), "one-sided t-tests against both ends, per cell", evidence + f"; alpha = {alpha}",
                     p_tests=len(p_values), note=note)


def band_text(low: float, high: float) -> str:
    """``"in [0.75, 0.95]"``, ``"≥ 0.02"`` or ``"≤ 0.01"`` (an open end is not printed as infinity)."""
    if np.isinf(high):
        return f"≥ {low:.4g}"
    if np.isinf(low):
        return f"≤ {high:.4g}"
    return f"in [{low:.4g}, {high:.4g}]"
