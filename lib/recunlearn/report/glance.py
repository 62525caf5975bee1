"""What a page states at a glance: the scale it was computed at, what is pending and why, how much of
the paper it covers, how far it is from the paper, and the parameters the render used.

:func:`page_facts` returns every text :func:`recunlearn.report.claims.glue_page` glues for a page's
"at a glance" box and for the scoreboard (:mod:`recunlearn.report.scoreboard`); the rest are its parts.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import typing
from collections import Counter
from typing import Any, Mapping

import pandas as pd

from ..experiments.records import pending_reason
from .names import DISPLAY_NAMES, display_name  # noqa: F401  (re-exported)

CURE4REC_DATASETS = ("ml-100k", "ml-1m", "adm")
NOT_RUN_REASON = "not run yet (need a GPU or many CPU-hours)"
"""Why a dataset of the paper is missing from a page's grid, when the compute plan cannot say more."""
PAGE_ENV = "RECUNLEARN_PAGE"
"""Set by the notebook runner to the page being rendered (``<paper>/<notebook stem>``)."""


def plan_text() -> str:
    """``~H CPU-hours left: <command>``: the compute plan's CPU-hours left and command for the page being
    rendered (``RECUNLEARN_PAGE``, set by the notebook runner); "" outside a render, outside the plan or
    when the plan cannot be read."""
    import os

    from ..compute.summary import page_text

    page = os.environ.get(PAGE_ENV)
    status = _plan_status() if page else None
    return "" if status is None else page_text(status, page, markdown=False, counts=False)


@functools.lru_cache(maxsize=None)
def _plan_status():
    """:func:`~recunlearn.report.status.compute_plan_status`, read once per process; None if unreadable."""
    from .status import compute_plan_status

    try:
        return compute_plan_status()
    except (OSError, ValueError):
        return None


PARAMETER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _count(n: int, word: str) -> str:
    """``"1 seed"``, ``"3 seeds"``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _names(values) -> str:
    return ", ".join(display_name(v) for v in values)


def _settings(grid) -> dict[str, Any]:
    """A grid's settings by lower-case name: a config's fields, or a mapping of notebook parameters."""
    if dataclasses.is_dataclass(grid):
        return {f.name: getattr(grid, f.name) for f in dataclasses.fields(grid)}
    return {str(k).lower(): v for k, v in dict(grid or {}).items()}


def _listed(value) -> list:
    if value is None:
        return []
    return [value] if isinstance(value, (str, int, float)) else list(value)


# --- parameters -------------------------------------------------------------------------------------

def format_parameter(value, in_list: bool = False) -> str:
    """A parameter value for a reader: lists joined by commas, whole numbers with thousands separators
    (thin spaces inside a list, so that the commas separate its items)."""
    if isinstance(value, (list, tuple)):
        return ", ".join(format_parameter(v, in_list=True) for v in value) if value else "(empty)"
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}".replace(",", "\u2009" if in_list else ",")
    return str(value)


def parameters_table(namespace: Mapping[str, Any], page: str | None = None) -> pd.DataFrame:
    """The notebook's parameters (its UPPER_SNAKE names: the values in effect after papermill's
    injection) as a frame ``parameter | value used``, in the order they were set. With ``page``
    (``<chapter>/<notebook stem>``), every parameter the page accepts (its builder's ``GRID``): the
    notebook's, then the others at their defaults, with ``set by`` (papermill, for a value injected into
    the run as the book's profiles and ``-p`` are; the parameters cell; or the default) and ``allowed``
    (:func:`allowed_text`; a name the page does not accept says so)."""
    given = [(name, value) for name, value in namespace.items() if PARAMETER_NAME.match(name)]
    shown = [(name, value) for name, value in given
             if isinstance(value, (str, int, float, bool, list, tuple, type(None)))]
    if page is None:
        return pd.DataFrame([(name, format_parameter(value)) for name, value in shown],
                            columns=["parameter", "value used"])
    from ..experiments.config import injected_names
    from .pages import page_grid, page_one_value

    grid = page_grid(page)
    fields = {f.name.upper(): f for f in dataclasses.fields(grid)}
    hints, one = typing.get_type_hints(grid), page_one_value(page)

    def allowed(name: str) -> str:
        spec = fields.get(name)
        if spec is None:
            return "not a parameter of this page"
        return allowed_text(spec, hints[spec.name], one_value=spec.name in one)

    injected = injected_names(namespace)
    rows = [(name, format_parameter(value), "papermill" if name in injected else "parameters cell", allowed(name))
            for name, value in given]
    rows += [(name, format_parameter(_default(spec)), "default", allowed(name))
             for name, spec in fields.items() if name not in dict(given)]
    return pd.DataFrame(rows, columns=["parameter", "value used", "set by", "allowed"])


def _default(spec: dataclasses.Field):
    return spec.default_factory() if spec.default is dataclasses.MISSING else spec.default


def allowed_text(spec: dataclasses.Field, hint, one_value: bool = False) -> str:
    """What a parameter accepts, for a reader: its choices, else its kind of value and bounds
    (``a list of whole numbers ≥ 0``, ``None or a whole number ≥ 1``), then its meaning where the
    library documents it. ``one_value``: a list the page draws one value of (``a list of one of``)."""
    meta = spec.metadata
    values = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = typing.get_origin(hint) is not None and not _is_list(hint) and len(values) < len(typing.get_args(hint))
    inner = values[0] if optional and len(values) == 1 else hint
    if meta.get("choices"):
        kind = ("a list of one of " if one_value else "any of " if _is_list(inner) else "one of ") + \
            ", ".join(str(c) for c in meta["choices"] if c is not None)
    else:
        low, high = (None if v is None else _bound(v) for v in (meta.get("min"), meta.get("max")))
        bounds = (f"from {low} to {high}" if low is not None and high is not None
                  else f"≥ {low}" if low is not None else f"≤ {high}" if high is not None else "")
        kind = " ".join(filter(None, [_kind(inner), bounds]))
    kind = f"None or {kind}" if optional and inner is not hint else kind
    return f"{kind} ({meta['doc']})" if meta.get("doc") else kind


def _bound(value: float) -> str:
    """A parameter's bound as a reader writes it: ``0``, ``100``, ``0.5``, ``1e-05``."""
    return format_parameter(int(value)) if float(value).is_integer() else f"{value:g}"


def _is_list(hint) -> bool:
    return typing.get_origin(hint) is tuple


KINDS = {bool: ("True or False", "True or False values"), int: ("a whole number", "whole numbers"),
         float: ("a number", "numbers"), str: ("a text", "texts")}
"""How a parameter's type reads: one value, and a list of them."""


def _kind(hint) -> str:
    """``a whole number``, ``a list of numbers``, ``True or False`` (a type it does not know: its name)."""
    if _is_list(hint):
        item = typing.get_args(hint)[0]
        return "a list of " + (KINDS[item][1] if item in KINDS else str(item))
    return KINDS[hint][0] if hint in KINDS else str(hint)


def show_parameters(namespace: Mapping[str, Any], page: str | None = None):
    """:func:`parameters_table` for display, without the row index (with ``page``, captioned)."""
    styled = parameters_table(namespace, page).style.hide(axis="index").set_properties(
        **{"text-align": "left", "padding-right": "1em"})
    return styled.set_caption("Every parameter of this page: papermill's -p NAME VALUE changes one") if page else styled


# --- scale ------------------------------------------------------------------------------------------

def paper_datasets(grid) -> tuple[str, ...]:
    """The datasets the paper item of ``grid`` covers: its class's ``PAPER_DATASETS`` when declared;
    CURE4Rec's three for a CURE4Rec grid (its
    sweeps over shards or ratios are on ML-100K only), the grid's own datasets otherwise (CASPER's
    paper-profile grids list the paper's datasets)."""
    settings = _settings(grid)
    datasets = tuple(_listed(settings.get("datasets")))
    declared = getattr(type(grid), "PAPER_DATASETS", None)
    if declared:
        return tuple(declared)
    if "cure4rec" in type(grid).__module__:
        sweep = len(_listed(settings.get("shard_counts"))) > 1 or len(_listed(settings.get("ratios"))) > 1
        return ("ml-100k",) if sweep else CURE4REC_DATASETS
    return datasets


def datasets_not_run(grid, comparison: pd.DataFrame | None = None) -> list[str]:
    """The paper's datasets (:func:`paper_datasets`) that ``grid`` does not run and whose paper cells
    ``comparison`` does not already list (as pending)."""
    computed = set(_listed(_settings(grid).get("datasets")))
    listed = set(comparison["dataset"]) if comparison is not None and "dataset" in comparison else set()
    return [d for d in paper_datasets(grid) if d not in computed and d not in listed]


SCALE_PARAMETERS = {"max_epochs": "epochs", "epochs": "epochs", "mio_epochs": "oracle epochs",
                    "aggregator_epochs": "aggregator epochs", "max_rows": "rows", "max_sessions": "sessions"}
"""The training-scale settings compared with a page's paper profile (:func:`below_paper_settings`)."""
EPOCHS = ("max_epochs", "epochs")
"""Settings that say a page trains; without one, a prefix of the data is only an extra view beside the
whole files (the SRU statistics page), not a reduced scale."""


def below_paper_settings(page: str, grid) -> str:
    """Where ``grid`` trains below the paper profile of ``page`` (``<paper>/<notebook>``, its
    ``notebooks/params/<page>.paper.yml``, which for a page of reduced scale is itself below the
    paper's setting): fewer epochs, or a prefix of the data where the profile reads more of it, as
    ``"up to 2 epochs, not 500"``; empty when it does not, when the page has no paper profile, or for a
    prefix on a page that trains nothing. A render below its paper profile checks the pipeline."""
    import yaml

    from .. import paths

    path = paths.REPO_ROOT / "notebooks" / "params" / f"{page}.paper.yml"
    if grid is None or not path.is_file():
        return ""
    paper = {str(k).lower(): v for k, v in (yaml.safe_load(path.read_text()) or {}).items()}
    ours, below = _settings(grid), []
    trains = any(name in ours for name in EPOCHS)
    for name, unit in SCALE_PARAMETERS.items():
        if name not in paper or name not in ours:
            continue
        mine, theirs = ours[name], paper[name]
        if unit.endswith("epochs"):
            if mine is not None and theirs is not None and mine < theirs:
                below.append(f"up to {mine} {unit}, not {theirs}")
        elif trains and mine is not None and (theirs is None or mine < theirs):
            below.append(f"the first {mine:,} {unit}, not " + (f"{theirs:,}" if theirs is not None else "all"))
    return "; ".join(below)


def scale_text(grid) -> str:
    """The scale a grid computes, in a reader's words: ``"ML-100K; WMF, BPR, LightGCN; core, random,
    edge users; 3 seeds; up to 500 epochs; CPU"``. Accepts a config or a mapping of parameters."""
    s = _settings(grid)
    parts = []
    datasets = _listed(s.get("datasets"))
    beside = _listed(s.get("reduced_datasets")) if s.get("max_sessions") else []  # a prefix beside the whole files
    if datasets and beside:
        parts.append(f"{_names(datasets)} (whole files); also the first {s['max_sessions']:,} sessions of "
                     f"{_names(beside)}")
    elif datasets:
        rows, sessions = s.get("max_rows"), s.get("max_sessions")
        prefix = f"first {rows:,} rows of " if rows else f"first {sessions:,} sessions of " if sessions else ""
        parts.append(prefix + _names(datasets))
    for name in ("models", "methods"):
        if _listed(s.get(name)):
            parts.append(_names(s[name]))
    if _listed(s.get("selections")):
        parts.append(f"{', '.join(map(str, s['selections']))} users")
    if _listed(s.get("selectors")):
        perturbations = _listed(s.get("perturbations"))
        parts.append(f"selectors {_names(s['selectors'])}" + (f" ({_names(perturbations)})" if perturbations else ""))
    ratios = _listed(s.get("ratios"))
    if len(ratios) > 1:
        parts.append(f"{', '.join(f'{r:g}' for r in ratios)} % of users unlearned")
    for name, words in (("shard_counts", "shards"), ("ks", "perturbed interactions")):
        values = _listed(s.get(name))
        if len(values) > 1:
            parts.append(f"{', '.join(map(str, values))} {words}")
    seeds = _listed(s.get("seeds"))
    if seeds:
        parts.append(_count(len(seeds), "seed"))
    if s.get("max_epochs"):
        parts.append(f"up to {s['max_epochs']} epochs")
    elif s.get("epochs"):
        parts.append(_count(s["epochs"], "epoch"))
    if s.get("device"):
        parts.append({"cpu": "CPU", "cuda": "GPU"}.get(s["device"], str(s["device"])))
    sizes = _listed(s.get("scaling_sizes"))
    if sizes:
        parts.append(f"timing on {display_name(s.get('scaling_dataset', ''))} prefixes of {min(sizes):,} to "
                     f"{max(sizes):,} rows, {_count(s.get('scaling_repeats', 1), 'repeat')}")
    if datasets and not parts[1:] and not beside:
        parts[0] += " (whole files)"
    return "; ".join(parts) if parts else "not stated"


# --- runs: what has a record, what is pending and why ---------------------------------------------

def with_page_runs(runs: pd.DataFrame, total: int, pending: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (a copy) carrying the count of every run a page draws on (``total``, over all its
    experiments) and those without a record (``pending``), so that its at-a-glance counts agree with
    its table of runs."""
    out = runs.copy()
    out.attrs["run_total"] = total
    out.attrs["pending"] = pending.to_dict("records") if len(pending) else []
    return out


def run_counts(grid, runs: pd.DataFrame | None) -> tuple[int, Counter]:
    """``(runs the grid needs, pending runs by reason)``. A ``status`` column (CASPER) gives the
    reason of each pending run; ``runs.attrs["pending"]`` (exact unlearning) lists runs without a
    record; otherwise every run of ``grid.runs()`` was computed. A page drawing on several
    experiments' runs states their number in ``runs.attrs["run_total"]`` (see :func:`with_page_runs`)."""
    if runs is None:
        return 0, Counter()
    if "status" in runs:
        reasons = Counter(str(s) for s in runs["status"] if s != "computed")
        return len(runs), reasons
    pending = list(runs.attrs.get("pending", []))
    total = runs.attrs.get("run_total") or (len(grid.runs()) if hasattr(grid, "runs") else len(runs) + len(pending))
    if not pending:
        return total, Counter()
    device = _settings(grid).get("device")
    reason = pending_reason(device)
    return total, Counter({reason: len(pending)})


def _pending_detail(runs: pd.DataFrame | None) -> str:
    """Which models (and datasets) the pending runs of an exact-unlearning grid belong to."""
    pending = pd.DataFrame(runs.attrs.get("pending", [])) if runs is not None and "status" not in runs else None
    if pending is None or pending.empty or "model" not in pending:
        return ""
    counts = pending.groupby("model").size()
    return ": " + ", ".join(f"{display_name(m)} {n}" for m, n in counts.items())


def _in_order(values, listed) -> list:
    """``values`` in the order ``listed`` names them, the others after them sorted."""
    present = set(values)
    return [v for v in listed if v in present] + sorted(present - set(listed), key=str)


def _seeds_text(seeds) -> str:
    seeds = sorted(int(s) for s in seeds)
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def recorded_text(grid, runs: pd.DataFrame | None) -> str:
    """What of a partly computed grid has a record so far, per dataset and model (models with the same
    seeds together): ``"so far 5 of 108 runs, with a record for Games: GRU4Rec (seeds 0, 1), SASRec
    (seed 0)"``; ``""`` when every run has one or the runs do not say. A model is named when any of
    its runs (any method or setting) has a record."""
    total, reasons = run_counts(grid, runs)
    if runs is None or not total or not reasons or "dataset" not in runs:
        return ""
    computed = runs[runs["status"] == "computed"] if "status" in runs else runs
    done = total - sum(reasons.values())
    if computed.empty:
        return f"so far no run has a record (0 of {total})"
    settings = _settings(grid)
    parts = []
    for dataset in _in_order(computed["dataset"].unique(), _listed(settings.get("datasets"))):
        rows = computed[computed["dataset"] == dataset]
        if "model" not in rows:
            parts.append(display_name(dataset))
            continue
        groups: dict[tuple, list] = {}
        for model in _in_order(rows["model"].unique(), _listed(settings.get("models"))):
            seeds = tuple(sorted(rows.loc[rows["model"] == model, "seed"].dropna().unique())) if "seed" in rows else ()
            groups.setdefault(seeds, []).append(model)
        parts.append(f"{display_name(dataset)}: " + ", ".join(
            _names(models) + (f" ({_seeds_text(seeds)})" if seeds else "") for seeds, models in groups.items()))
    return f"so far {done:,} of {total:,} runs, with a record for " + "; ".join(parts)


def pending_text(grid, runs: pd.DataFrame | None = None) -> str:
    """What the page is still missing and why: the paper's datasets not in the grid, the grid's runs
    without a record with their reason, then the compute plan's CPU-hours left and command for the page
    being rendered (:func:`plan_text`; runs are counted once, the page's own: the plan's runs of a page
    can include runs another table of it reads); ``"nothing"`` when complete."""
    plan = plan_text()
    parts = []
    if grid is not None:
        computed = set(_listed(_settings(grid).get("datasets")))
        missing = [d for d in paper_datasets(grid) if d not in computed]
        if missing:
            names = " and ".join([", ".join(map(display_name, missing[:-1])), display_name(missing[-1])]) \
                if len(missing) > 1 else display_name(missing[0])
            parts.append(f"{names}: not run yet" if plan else f"{names}: {NOT_RUN_REASON}")
    total, reasons = run_counts(grid, runs)
    detail = _pending_detail(runs)
    for reason, n in reasons.most_common():
        parts.append(f"{n} of {total} runs {reason}{detail}")
    if parts and plan:
        parts.append(f"the compute plan has them: {plan}")
    return "; ".join(parts) if parts else "nothing"


def datasets_with_runs(runs: pd.DataFrame | None) -> set | None:
    """The datasets holding at least one computed run of ``runs`` (None when ``runs`` does not say:
    no frame or no dataset column). A ``status`` column marks the computed rows; otherwise every row is
    a computed run and the pending ones are in ``runs.attrs["pending"]``."""
    if runs is None or "dataset" not in runs:
        return None
    computed = runs[runs["status"] == "computed"] if "status" in runs else runs
    return set(computed["dataset"])


def dataset_substitutes(grid) -> dict[str, str]:
    """The datasets of ``grid`` that stand in for one of its paper's (dataset -> the paper's): SRU's
    (:data:`recunlearn.report.sru.SUBSTITUTES`) for every grid of that chapter, none for the others."""
    from ..experiments.sru import SruGrid, SruStatisticsParams

    if isinstance(grid, (SruGrid, SruStatisticsParams)):
        from .sru import SUBSTITUTES

        return SUBSTITUTES
    return {}


def coverage_text(grid=None, runs: pd.DataFrame | None = None, comparison: pd.DataFrame | None = None) -> str:
    """How much of the paper the page covers: ``"12 of 36 paper cells computed; 1 of 3 paper
    datasets; 324 of 324 runs have a record"`` (each part only where it is known); a dataset the page
    lists but holding no computed run yet is told apart: ``"2 of 2 paper datasets (1 with a computed
    run)"``, and so is a dataset standing in for one of the paper's (:func:`dataset_substitutes`). A
    grid of the book's own questions (class attribute ``OWN_QUESTION``) has
    no paper: its datasets are "datasets of the question"."""
    parts = []
    if comparison is not None and len(comparison) and "paper" in comparison:
        cells = comparison[comparison["paper"].notna()]
        if len(cells):
            parts.append(f"{int(cells['ours'].notna().sum())} of {len(cells)} paper cells computed")
    if grid is not None:
        paper = paper_datasets(grid)
        computed = set(_listed(_settings(grid).get("datasets")))
        if paper:
            word = "datasets of the question" if getattr(type(grid), "OWN_QUESTION", False) else "paper datasets"
            parts.append(f"{sum(d in computed for d in paper)} of {len(paper)} {word}")
            with_runs = datasets_with_runs(runs)
            if with_runs is not None and computed - with_runs:
                parts[-1] += f" ({sum(d in with_runs for d in paper)} with a computed run)"
            substitutes = dataset_substitutes(grid)
            standing_in = [d for d in paper if d in computed and d in substitutes]
            if standing_in:
                parts[-1] += (f", {len(standing_in)} of them a substitute ("
                              + ", ".join(f"{display_name(d)} for {substitutes[d]}" for d in standing_in) + ")")
    total, reasons = run_counts(grid, runs)
    if total:
        parts.append(f"{total - sum(reasons.values())} of {total} runs have a record")
    return "; ".join(parts) if parts else "not stated"


def difference_text(comparison: pd.DataFrame | None) -> str:
    """How far our numbers are from the paper's: the median absolute difference over the computed
    paper cells, also relative to the paper's value."""
    if comparison is None or not len(comparison) or "paper" not in comparison:
        return "no paper numbers compared on this page"
    cells = comparison[comparison["paper"].notna() & comparison["ours"].notna()]
    if cells.empty:
        return "no paper cell computed yet"
    delta = (cells["ours"] - cells["paper"]).abs()
    nonzero = cells["paper"].abs() > 0
    relative = (delta[nonzero] / cells["paper"].abs()[nonzero]).median() if nonzero.any() else float("nan")
    text = f"median |ours - paper| {delta.median():.3g}"
    if pd.notna(relative):
        text += f" ({'< 0.1' if relative < 1e-3 else f'{100 * relative:.1f}'} % of the paper value)"
    return text + f" over {len(cells)} computed cells"


# --- claims and the page's facts --------------------------------------------------------------------

def claims_json(claims: pd.DataFrame | None) -> str:
    """The page's claims as a JSON list of ``{id, claim, verdict, holds, p_value, test, evidence,
    kind, so_far}`` (``verdict`` as the page shows it; ``kind``: a paper claim or a self-check;
    ``so_far``: the verdict on the runs computed so far where some of the claim's runs wait, else ""),
    for the scoreboard."""
    from .claims import PAPER_CLAIM, claim_text
    from .significance import format_p

    rows = []
    for _, row in (claims.iterrows() if claims is not None else []):
        kind, so_far = row.get("kind", PAPER_CLAIM), row.get("so far", "")
        rows.append({"id": str(row["id"]), "claim": str(row["claim"]), "verdict": claim_text(row),
                     "holds": str(row["holds in"]),
                     "p_value": format_p(row["p_value"]) if pd.notna(row["p_value"]) else "",
                     "test": str(row["test"]), "evidence": str(row["evidence"]),
                     "kind": kind if isinstance(kind, str) else PAPER_CLAIM,
                     "so_far": so_far if isinstance(so_far, str) else ""})
    return json.dumps(rows, ensure_ascii=False)


def _with_recorded(scale: str, recorded: str) -> str:
    return f"{scale} ({recorded})" if recorded else scale


def parts_summary(parts: Mapping[str, str]) -> str:
    """``"wikipedia: partly reproduced; lastfm: not reproduced"`` for a page judged part by part."""
    return "; ".join(f"{display_name(name)}: {verdict}" for name, verdict in parts.items())


def page_facts(claims: pd.DataFrame | None, comparison: pd.DataFrame | None = None, grid=None,
               runs: pd.DataFrame | None = None, parts: Mapping[str, str] | None = None,
               page: str | None = None) -> dict[str, str]:
    """Every page-level text a page publishes, by glue name: ``page_verdict`` and ``page_summary``
    (:func:`~recunlearn.report.verdicts.page_verdict` of the claims and paper cells, or of ``parts``,
    verdicts of the page's parts such as one per dataset, and of the runs without a record),
    ``page_scale`` (the grid's scale; while runs are pending, what has a record so far,
    :func:`recorded_text`; below the paper profile of ``page``, :func:`below_paper_settings` says so),
    ``page_pending``, ``page_coverage``, ``page_difference`` and ``page_claims`` (JSON,
    :func:`claims_json`)."""
    from .verdicts import cells_summary, page_summary, page_verdict

    not_run = len(datasets_not_run(grid, comparison)) if grid is not None else 0
    total, reasons = run_counts(grid, runs)
    waiting = (sum(reasons.values()), total)
    if parts is not None:
        verdict = page_verdict(pd.DataFrame({"id": list(parts), "verdict": list(parts.values())}), comparison,
                               not_run, waiting)
        cells = cells_summary(comparison)  # the parts' verdicts, then the paper cells they judged
        summary = parts_summary(parts) + (f"; {cells}" if cells else "")
    else:
        verdict, summary = page_verdict(claims, comparison, not_run, waiting), page_summary(claims, comparison)
    scale = _with_recorded(scale_text(grid), recorded_text(grid, runs)) if grid is not None else "not stated"
    below = below_paper_settings(page, grid) if page else ""
    if below:
        compared = comparison is not None and len(comparison) and comparison["paper"].notna().any()
        scale += (f" — below this page's paper profile ({below}): a check of the pipeline, "
                  + ("whose comparison with the paper's numbers tests nothing" if compared
                     else "whose verdicts say nothing about the paper"))
    return {"page_verdict": verdict, "page_summary": summary, "page_scale": scale,
            "page_pending": pending_text(grid, runs),
            "page_coverage": coverage_text(grid, runs, comparison),
            "page_difference": difference_text(comparison),
            "page_claims": claims_json(claims)}
