"""Command line: run experiments and grids without Jupyter, execute notebooks, write the status page.

    python -m recunlearn run cure4rec-learn dataset=ml-1m model='["wmf","bpr"]' seed='[0,1,2]' device=cuda
    python -m recunlearn grid grids/cure4rec-gpu.json
    python -m recunlearn notebooks --profile smoke [NAME ...]
    python -m recunlearn status

In ``run``, each ``key=value`` value is parsed as JSON when it can be (else taken as a string); a
list value is a grid axis, and the runs are the cartesian product. Every config is validated
before the first run starts.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

from .experiments import RUNNERS, ConfigError, record_key, run_or_load


def _parse_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def expand(experiment: str, assignments: dict) -> list:
    """Validated configs of ``experiment`` for the cartesian product of list-valued assignments."""
    if experiment not in RUNNERS:
        raise ConfigError(f"unknown experiment {experiment!r}; known: {sorted(RUNNERS)}")
    config_cls, _ = RUNNERS[experiment]
    axes = {k: (v if isinstance(v, list) else [v]) for k, v in assignments.items()}
    return [config_cls.from_dict(dict(zip(axes, combo))) for combo in itertools.product(*axes.values())]


def run_configs(configs: list, records: Path | None, recompute: bool) -> None:
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
    run.add_argument("experiment")
    run.add_argument("assignments", nargs="*", metavar="key=value")
    grid = sub.add_parser("grid", help="run every grid in a JSON file: [{experiment, params}, ...]")
    grid.add_argument("file", type=Path)
    for p in (run, grid):
        p.add_argument("--records", type=Path, help="run-record directory (default: RECUNLEARN_RECORDS or book)")
        p.add_argument("--recompute", action="store_true", help="recompute even if a record exists")
    nb = sub.add_parser("notebooks", help="execute notebooks with papermill at a profile")
    nb.add_argument("--profile", choices=("smoke", "paper"), required=True)
    nb.add_argument("names", nargs="*", help="notebooks (default: all)")
    sub.add_parser("status", help="regenerate book/status.md")
    args = parser.parse_args(argv)

    try:
        if args.command == "run":
            pairs = dict(a.split("=", 1) for a in args.assignments if "=" in a)
            malformed = [a for a in args.assignments if "=" not in a]
            if malformed:
                raise ConfigError(f"expected key=value, got {malformed}")
            run_configs(expand(args.experiment, {k: _parse_value(v) for k, v in pairs.items()}),
                        args.records, args.recompute)
        elif args.command == "grid":
            specs = json.loads(args.file.read_text())
            configs = [c for spec in specs for c in expand(spec["experiment"], spec["params"])]
            print(f"{len(configs)} runs validated", flush=True)
            run_configs(configs, args.records, args.recompute)
        elif args.command == "notebooks":
            from .report.notebooks import execute, find_notebook, list_notebooks
            targets = [find_notebook(n) for n in args.names] if args.names else list_notebooks()
            for notebook in targets:
                start = time.perf_counter()
                out = execute(notebook, args.profile)
                print(f"{notebook.relative_to(notebook.parents[2])} -> {out} ({time.perf_counter() - start:.0f}s)")
        elif args.command == "status":
            from .report.status import write_status_page
            write_status_page()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
