"""Command line: run experiments and grids without Jupyter, execute notebooks, write the status page.

    python -m recunlearn run cure4rec-learn dataset=ml-1m model='["wmf","bpr"]' seed='[0,1,2]' device=cuda
    python -m recunlearn grid grids/cure4rec-gpu.json
    python -m recunlearn notebooks --profile smoke [NAME ...]
    python -m recunlearn status
    python -m recunlearn audit [--write-grid FILE]
    python -m recunlearn compute [--plan FILE] [--workers N] [--hours H] [--finish-within H] [--only ENTRY ...]
                                 [--dry-run] [--device cuda --gpu-minutes M] [--stage DIR]

``compute`` runs the compute plan (``grids/plan.yml``: every paper-scale run of the book, in
priority order) until every run has a record, ``--hours`` pass or a SIGINT/SIGTERM stops it; run
again, it resumes (see :mod:`recunlearn.compute`).

``run`` and ``grid`` write records into ``--records`` (default: ``RECUNLEARN_RECORDS``, else the
committed ``book/_results/records``, which is refused unless ``lib/`` is committed);
``--recompute unclean`` replaces only records made from uncommitted code, so an interrupted grid
resumes where it stopped. ``audit`` counts the committed records by state (current or stale, clean
commit or not, strict JSON or not) and can write the grid that recomputes the others.

In ``run``, each ``key=value`` value is parsed as JSON when it can be (else taken as a string); a
list value is a grid axis, and the runs are the cartesian product. Every config is validated, and
its device checked, before the first run starts. User errors (a bad parameter, an unknown
experiment or notebook, a missing or malformed grid file, a missing or corrupt dataset file, no
GPU for ``device=cuda``) print one ``error: ...`` line and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path

from . import paths
from .compute.plan import ComputeError
from .data.errors import DatasetError
from .experiments import RUNNERS, ConfigError, record_key, run_or_load
from .experiments.config import require_device
from .experiments.records import expand
from .provenance import ProvenanceError


class UsageError(ValueError):
    """A command line or input file that cannot be used as given."""


USER_ERRORS = (UsageError, ConfigError, DatasetError, ProvenanceError, ComputeError)
"""Reported as one ``error:`` line (exit status 2) instead of a traceback."""


def _parse_value(text: str, key: str = "value"):
    """A ``key=value`` value: JSON where it parses (numbers, lists, true/false/null), else the plain
    string; a value that opens like a JSON list or object but does not parse is refused."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if text.lstrip()[:1] in ("[", "{"):
            raise UsageError(f"{key}={text}: not valid JSON; write a list as JSON, quoted for the shell, e.g. "
                             f"{key}='[\"wmf\", \"bpr\"]'") from None
        return text


def _cli_names(message: str) -> str:
    """A configuration error as the command line spells parameters (``model``, not the notebooks' ``MODEL``)."""
    return re.sub(r"\bparameters? ([A-Z][A-Z0-9_]*)\b", lambda m: m.group(0).replace(m.group(1), m.group(1).lower()),
                  message)


def read_grid_file(path: Path) -> list[dict]:
    """The ``[{"experiment": ..., "params": {...}}, ...]`` list of a grid file, or :class:`UsageError`."""
    try:
        specs = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"grid file {path} not found") from None
    except OSError as exc:
        raise UsageError(f"grid file {path} cannot be read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"grid file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
                         f"column {exc.colno}") from None
    if not isinstance(specs, list):
        raise UsageError(f"grid file {path}: expected a list of {{\"experiment\": ..., \"params\": {{...}}}}, "
                         f"got {type(specs).__name__}")
    for index, spec in enumerate(specs):
        if not (isinstance(spec, dict) and set(spec) == {"experiment", "params"} and isinstance(spec["params"], dict)):
            raise UsageError(f"grid file {path}: entry {index} must be {{\"experiment\": name, \"params\": "
                             f"{{...}}}}, got {json.dumps(spec)[:200]}")
    return specs


def run_configs(configs: list, records: Path | None, recompute: bool | str) -> None:
    for device in sorted({getattr(config, "device", "cpu") for config in configs}):
        require_device(device)  # before the first run, not after hours of others
    for index, config in enumerate(configs, 1):
        start = time.perf_counter()
        record = run_or_load(config, records, recompute)
        summary = {k: round(v, 4) for k, v in record.get("metrics", {}).items() if isinstance(v, float)}
        print(f"[{index}/{len(configs)}] {config.experiment} {record_key(config)} "
              f"({time.perf_counter() - start:.1f}s) {json.dumps(summary)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recunlearn", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one experiment or a grid given as key=value pairs")
    run.add_argument("experiment", help=f"one of: {', '.join(sorted(RUNNERS))}")
    run.add_argument("assignments", nargs="*", metavar="key=value",
                     help="configuration fields (a JSON list is a grid axis); an unknown key is an error that lists "
                          "the experiment's keys")
    grid = sub.add_parser("grid", help="run every grid in a JSON file: [{experiment, params}, ...]")
    grid.add_argument("file", type=Path)
    for p in (run, grid):
        p.add_argument("--records", type=Path, help="run-record directory (default: RECUNLEARN_RECORDS, else the "
                                                    "committed book/_results/records)")
        p.add_argument("--recompute", nargs="?", const="all", choices=("all", "unclean"),
                       help="all: recompute even if a record exists; unclean: only records not made from a clean "
                            "commit")
    nb = sub.add_parser("notebooks", help="execute notebooks with papermill at a profile")
    nb.add_argument("--profile", choices=("smoke", "paper"), required=True)
    nb.add_argument("names", nargs="*", help="notebooks as <paper>/<name>, e.g. cure4rec/learn-baselines (default: "
                                             "all); an unknown name is an error that lists them")
    sub.add_parser("status", help="regenerate book/status.md")
    audit = sub.add_parser("audit", help="count committed records by state; optionally write the grid that "
                                         "recomputes stale, dirty or non-strict ones")
    audit.add_argument("--records", type=Path, help="record directory (default: the committed one)")
    audit.add_argument("--write-grid", type=Path, metavar="FILE", help="write the recompute grid here")
    audit.add_argument("--strict", action="store_true", help="exit with status 1 if any record needs recomputing")
    _add_compute_parser(sub)
    args = parser.parse_args(argv)

    with warnings.catch_warnings():
        warnings.showwarning = _print_warning
        try:
            return _dispatch(args)
        except USER_ERRORS as exc:
            text = _cli_names(str(exc)) if isinstance(exc, ConfigError) and args.command in ("run", "grid") \
                else str(exc)
            print(f"error: {text}", file=sys.stderr)
            return 2


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one ``warning: ...`` line (e.g. a percentage below 1)."""
    print(f"warning: {message}", file=sys.stderr)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the parsed command; user errors propagate to :func:`main`."""
    if args.command == "run":
        pairs = dict(a.split("=", 1) for a in args.assignments if "=" in a)
        malformed = [a for a in args.assignments if "=" not in a]
        if malformed:
            raise UsageError(f"expected key=value, got {malformed}")
        run_configs(expand(args.experiment, {k: _parse_value(v, k) for k, v in pairs.items()}),
                    args.records or paths.records_dir(), _recompute(args.recompute))
    elif args.command == "grid":
        specs = read_grid_file(args.file)
        configs = [c for spec in specs for c in expand(spec["experiment"], spec["params"])]
        print(f"{len(configs)} runs validated", flush=True)
        run_configs(configs, args.records or paths.records_dir(), _recompute(args.recompute))
    elif args.command == "notebooks":
        from .report.notebooks import execute, find_notebook, list_notebooks
        try:
            targets = [find_notebook(n) for n in args.names] if args.names else list_notebooks()
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        for notebook in targets:
            start = time.perf_counter()
            out = execute(notebook, args.profile)
            print(f"{notebook.relative_to(notebook.parents[2])} -> {out} ({time.perf_counter() - start:.0f}s)")
    elif args.command == "status":
        from .report.status import write_status_page
        write_status_page()
    elif args.command == "audit":
        return _audit(args)
    elif args.command == "compute":
        from .compute.command import ComputeOptions, compute

        return compute(ComputeOptions(
            plan=args.plan, records=args.records, workers=args.workers, hours=args.hours,
            finish_within=args.finish_within, only=tuple(args.only or ()),
            dry_run=args.dry_run, device=args.device, gpu_minutes=args.gpu_minutes, executor=args.executor,
            address=args.address, gpus_per_run=args.gpus_per_run, timings_from=tuple(args.timings_from),
            stage=args.stage))
    return 0


def _add_compute_parser(sub) -> None:
    from .compute.command import DEFAULT_PLAN, DEVICES, EXECUTORS

    comp = sub.add_parser("compute", help="run the compute plan's pending runs in plan order (resumable)",
                          description="Run the runs of the compute plan that have no done record, in plan order, "
                                      "at low priority; stop cleanly on SIGINT/SIGTERM (runs in progress finish; a "
                                      "second signal ends them, writing nothing) or after --hours; resume by running "
                                      "it again.")
    comp.add_argument("--plan", type=Path, default=DEFAULT_PLAN, help=f"plan file (default: {DEFAULT_PLAN})")
    comp.add_argument("--records", type=Path, help="run-record directory (default: RECUNLEARN_RECORDS, else the "
                                                   "committed book/_results/records)")
    comp.add_argument("--workers", type=int, help="runs at once (default: one per core; 1 on cuda; Ray: the "
                                                  "cluster's CPUs)")
    comp.add_argument("--hours", type=float, help="start no run after this many hours")
    comp.add_argument("--finish-within", type=float, metavar="H",
                      help="start a run only when it is expected to finish within H hours (its estimate at the "
                           "pace so far, plus 25%%); a batch whose first run would not is passed over for later ones")
    comp.add_argument("--only", nargs="+", metavar="ENTRY", help="only the runs of these plan entries")
    comp.add_argument("--dry-run", action="store_true",
                      help="print runs done and CPU-hours left per entry; run nothing")
    comp.add_argument("--device", choices=DEVICES, default="cpu", help="device of every run (default: cpu)")
    comp.add_argument("--gpu-minutes", type=float, metavar="M", help="with --device cuda: the runs whose estimates "
                                                                     "fit in M minutes, none started after M minutes")
    comp.add_argument("--executor", choices=EXECUTORS, default="local", help="local processes or Ray tasks")
    comp.add_argument("--address", help="Ray cluster address (default: the running instance, else a new local one)")
    comp.add_argument("--gpus-per-run", type=float, help="Ray with --device cuda: GPU fraction of each run (default 1)")
    comp.add_argument("--timings-from", type=Path, nargs="+", default=[], metavar="DIR",
                      help="more record directories read only for the cost model (besides --records and the "
                           "committed records)")
    comp.add_argument("--stage", type=Path, metavar="DIR",
                      help="run nothing: copy the dataset files the selected runs read into DIR, a data directory "
                           "for a machine without one (RECUNLEARN_DATA=DIR there), and list in DIR/NEEDS the "
                           "optional packages they import")


def _recompute(option: str | None) -> bool | str:
    return {None: False, "all": True, "unclean": "unclean"}[option]


def _audit(args: argparse.Namespace) -> int:
    from .experiments.audit import audit_records, audit_summary, needs_recompute, stale_or_dirty_grid
    from .io import write_json_atomic

    audit = audit_records(args.records)
    print(audit_summary(audit).to_string(index=False))
    todo = needs_recompute(audit)
    print(f"{len(todo)} of {len(audit)} records need recomputing (stale, from a dirty commit, not made by the "
          "code of the commit they name, or not strict JSON)")
    if args.write_grid:
        write_json_atomic(args.write_grid, stale_or_dirty_grid(audit, args.records))
        other_code = int(todo["commit_code"].eq(False).sum())
        how = "all" if other_code else "unclean"  # a record naming the wrong commit is clean: only 'all' redoes it
        print(f"wrote {args.write_grid}: python -m recunlearn grid {args.write_grid} --recompute {how}")
    return 1 if args.strict and len(todo) else 0
