"""``python -m recunlearn compute``: the plan's pending runs, in plan order, on local workers or Ray.

Every option is checked before anything runs. ``--dry-run`` prints, per plan entry, the runs done
and the CPU-hours left, and how each pending run's cost was estimated. Without it the pending
batches run (:mod:`recunlearn.compute.scheduler`): one worker per core by default (one on a GPU),
until all are done, ``--hours`` pass or a SIGINT/SIGTERM asks for a stop. ``--finish-within H``
starts a run only when it is expected to end within H hours (see :mod:`~recunlearn.compute.scheduler`),
for a machine lent for a fixed time: its runs end written, none is cut off in its middle.

``--device cuda --gpu-minutes M`` keeps, in plan order, the batches whose estimated seconds fit
together in M minutes (a batch that does not fit is passed over for later, smaller ones; a batch that
no GPU record lets us estimate is kept, its GPU time being unknown) and starts no run after M minutes.
A run is done whichever device computed it, so a GPU takes up the plan where the CPU workers are.
``--stage DIR`` runs nothing: it copies the dataset files of the runs it would start into ``DIR``
(:mod:`recunlearn.compute.staging`), for a machine that has no data directory.

Local workers keep the trained models a batch's runs share (CASPER's originals, SRU's full-data and
shard models) in ``<cache>/models`` (``RECUNLEARN_MODELS`` when set), so a batch stopped midway does
not train them again when a later session resumes it (see :mod:`recunlearn.experiments.stored_models`),
and a long training in progress keeps its state there every five minutes, so a process that ends in its
middle loses at most those minutes (:mod:`recunlearn.models.resume`); runs on a prefix of their data keep theirs in its ``reduced-scale`` subfolder
(:func:`~recunlearn.compute.executors.models_dir`).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time
from pathlib import Path
from typing import Callable, Iterable

from .. import paths
from ..experiments.config import require_device
from ..provenance import require_clean
from .costs import CostModel
from .executors import LocalExecutor, RayExecutor, import_ray, remove_unfinished_writes
from .plan import ComputeError, Run, batches
from .scheduler import StopRequest, Tally, minutes, run_batches
from .staging import stage
from .summary import PlanStatus, computed_elsewhere, entry_rows, hours, plan_status

DEFAULT_PLAN = paths.REPO_ROOT / "grids" / "plan.yml"
DEVICES = ("cpu", "cuda")
EXECUTORS = ("local", "ray")


@dataclasses.dataclass(frozen=True)
class ComputeOptions:
    """The command's options (see ``python -m recunlearn compute --help``)."""

    plan: Path = DEFAULT_PLAN
    records: Path | None = None
    workers: int | None = None
    hours: float | None = None
    finish_within: float | None = None
    only: tuple[str, ...] = ()
    dry_run: bool = False
    device: str = "cpu"
    gpu_minutes: float | None = None
    executor: str = "local"
    address: str | None = None
    gpus_per_run: float | None = None
    timings_from: tuple[Path, ...] = ()
    stage: Path | None = None

    @property
    def records_dir(self) -> Path:
        return Path(self.records) if self.records else paths.records_dir()


def check_options(options: ComputeOptions) -> None:
    """:class:`ComputeError` for an option that cannot be used, before anything is computed."""
    problems = []
    if options.device not in DEVICES:
        problems.append(f"--device must be one of {list(DEVICES)}, got {options.device!r}")
    if options.executor not in EXECUTORS:
        problems.append(f"--executor must be one of {list(EXECUTORS)}, got {options.executor!r}")
    if options.workers is not None and options.workers < 1:
        problems.append(f"--workers must be at least 1, got {options.workers}")
    if options.hours is not None and not options.hours > 0:
        problems.append(f"--hours must be positive, got {options.hours}")
    if options.finish_within is not None and not options.finish_within > 0:
        problems.append(f"--finish-within must be positive, got {options.finish_within}")
    if options.gpu_minutes is not None and not options.gpu_minutes > 0:
        problems.append(f"--gpu-minutes must be positive, got {options.gpu_minutes}")
    if options.gpu_minutes is not None and options.device != "cuda":
        problems.append("--gpu-minutes needs --device cuda")
    if options.address is not None and options.executor != "ray":
        problems.append("--address needs --executor ray")
    if options.gpus_per_run is not None and (options.executor != "ray" or options.device != "cuda"):
        problems.append("--gpus-per-run needs --executor ray and --device cuda")
    if options.gpus_per_run is not None and not 0 < options.gpus_per_run <= 1:
        problems.append(f"--gpus-per-run must be in (0, 1], got {options.gpus_per_run}")
    for folder in options.timings_from:
        if not Path(folder).is_dir():
            problems.append(f"--timings-from {folder}: not a directory")
    if options.stage is not None and options.dry_run:
        problems.append("--stage and --dry-run: choose one")
    if options.stage is not None and Path(options.stage).exists() and not Path(options.stage).is_dir():
        problems.append(f"--stage {options.stage}: a file, not a directory (stage into a new or empty directory)")
    elif options.stage is not None and Path(options.stage).exists() and any(Path(options.stage).iterdir()):
        problems.append(f"--stage {options.stage}: not empty (stage into a new or empty directory)")
    if problems:
        raise ComputeError("; ".join(problems))
    if options.executor == "ray" and not options.dry_run and options.stage is None:
        import_ray()


def default_workers(device: str) -> int:
    """One worker per core this process may use on a CPU; one on a GPU."""
    if device == "cuda":
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def fit_in(todo: list[list[Run]], costs: CostModel, seconds: float) -> list[list[Run]]:
    """The batches of ``todo``, in order, whose estimated seconds fit together in ``seconds``. A batch
    whose estimate no record of its own device stands behind (a GPU run estimated from CPU records) is
    kept and counted as nothing: its time on that device is unknown, and the command's deadline bounds it."""
    chosen, used = [], 0.0
    for batch in todo:
        configs = [run.config for run in batch]
        if not all(costs.estimate(config).on_device for config in configs):
            chosen.append(batch)
            continue
        cost = costs.batch_seconds(configs)
        if used + cost <= seconds:
            chosen.append(batch)
            used += cost
    return chosen


def compute(options: ComputeOptions, out: Callable[[str], None] = print) -> int:
    """Run (or with ``dry_run`` describe) the pending runs of the plan; the exit status."""
    check_options(options)
    status = plan_status(options.plan, options.records_dir, options.device,
                         [paths.committed_records_dir(), *options.timings_from])
    runs = status.plan.runs_of(options.only) if options.only else list(status.plan.runs)
    pending = status.pending(runs)
    todo = batches(pending)
    if options.gpu_minutes is not None:
        todo = fit_in(todo, status.costs, options.gpu_minutes * 60)
    workers = options.workers or (None if options.executor == "ray" else default_workers(options.device))
    if options.dry_run:
        describe(status, runs, todo, workers or default_workers(options.device), out, options.only)
        return 0
    if options.stage is not None:
        staged = stage([run.config for batch in todo for run in batch], options.stage)
        out(f"staged {len(staged.files)} dataset file(s), {staged.bytes / 2**20:.1f} MiB, for {sum(map(len, todo))} "
            f"runs into {options.stage}" + (f"; they also import {', '.join(staged.packages)}" if staged.packages
                                            else ""))
        return 0
    if not todo:
        out(f"nothing to compute: all {len(runs)} runs of {status.plan.path} on {options.device} are done"
            if not pending else f"nothing to compute: none of the {len(pending)} pending runs fits in "
                                f"{options.gpu_minutes:g} minutes")
        return 0
    if options.executor == "local":
        require_device(options.device)  # on Ray, the executor checks that the cluster has a GPU
    if options.records_dir.resolve() == paths.committed_records_dir().resolve():
        require_clean(("lib",), f"computing run records into {paths.committed_records_dir()}")
        from ..experiments.audit import checkout_matches_its_commit

        if checkout_matches_its_commit() is False:
            raise ComputeError("the library's files here are not those of the commit (files git ignores, e.g. under "
                               "lib/**/.ipynb_checkpoints/, change its fingerprint): records made here would not "
                               "name the code that made them; remove those files or compute from a fresh worktree")
    limit = options.gpu_minutes * 60 if options.gpu_minutes is not None else (
        options.hours * 3600 if options.hours is not None else None)
    deadline = time.time() + limit if limit is not None else None
    finish_by = time.time() + options.finish_within * 3600 if options.finish_within is not None else None
    stop = StopRequest()
    before = os.environ.get(paths.MODELS_ENV)
    os.environ[paths.MODELS_ENV] = before or str(paths.cache_dir() / "models")  # inherited by local workers
    files, size = remove_unfinished_writes(Path(os.environ[paths.MODELS_ENV]))
    if files:
        out(f"removed {files} unfinished write(s) of stored models ({size / 2**30:.2f} GiB) left by killed processes")
    if options.device == "cuda":  # deterministic cuBLAS (see recunlearn.seeding), set before a worker starts CUDA
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    with stop.on_signals():
        executor = _executor(options, min(workers, len(todo)) if workers else None)
        try:
            out(f"{sum(map(len, todo))} runs in {len(todo)} batches on {executor.capacity} {options.executor} "
                f"worker(s), device {options.device}, records {options.records_dir}"
                + (f", none started after {minutes(limit)}" if limit else "")
                + (f", each started only if expected to finish within {minutes(options.finish_within * 3600)}"
                   if finish_by else ""))
            tally = run_batches(todo, executor, status.costs, deadline=deadline, finish_by=finish_by, stop=stop,
                                out=out)
        finally:
            executor.close()
            if before is None:
                os.environ.pop(paths.MODELS_ENV, None)
    out(_summary(tally))
    return 0 if tally.ok else 1


def _executor(options: ComputeOptions, workers: int | None):
    if options.executor == "ray":
        share = options.gpus_per_run if options.gpus_per_run is not None else (1.0 if options.device == "cuda" else 0.0)
        return RayExecutor(options.records_dir, options.address, workers, share)
    return LocalExecutor(workers, options.records_dir)


def _summary(tally: Tally) -> str:
    parts = [f"{tally.computed} computed", f"{tally.loaded} already done", f"{tally.failed} failed"]
    if tally.lost:
        parts.append(f"{tally.lost} lost with their worker")
    if tally.interrupted:
        parts.append(f"{tally.interrupted} interrupted")
    left = tally.skipped + tally.not_started + tally.lost + tally.interrupted
    text = ", ".join(parts)
    if tally.stopped_by:
        text += f"; stopped ({tally.stopped_by}) with {left} run(s) not done: run the same command to resume"
    return text


def describe(status: PlanStatus, runs: list[Run], todo: list[list[Run]], workers: int, out,
             only: Iterable[str] | None = None) -> None:
    """The dry run: per entry (the ``only`` entries where given), runs done and CPU-hours left; the
    estimate behind each pending run, and a warning where estimates could not be scaled to a dataset's
    size because its file is not on this machine."""
    plan = status.plan
    scheduled = [run for batch in todo for run in batch]
    seconds = sum(status.costs.batch_seconds(run.config for run in batch) for batch in todo)
    unmeasured = 0 if plan.device == "cpu" else sum(not status.costs.estimate(run.config).on_device
                                                    for run in scheduled)
    out(f"plan {plan.path} on {plan.device}: {len(runs)} runs, {len(runs) - len(status.pending(runs))} done, "
        f"{len(scheduled)} to compute, ~{hours(seconds)} {plan.device.upper()}-hours (~{minutes(seconds / workers)} "
        f"on {workers} worker(s))" + (f"; {unmeasured} of these runs have no {plan.device.upper()} record of their "
                                     "kind yet: estimated from CPU records" if unmeasured else ""))
    out("")
    header = ["entry", "listed", "done", "computes", "pending", f"{plan.device.upper()}-h left", "estimates", "pages"]
    chosen = set(only or ())
    rows = [[r["entry"], r["listed"], r["done"], r["computes"], r["pending"], f"{r['cpu_hours_left']:.1f}",
             r["estimates"], r["pages"]] for r in entry_rows(status) if not chosen or r["entry"] in chosen]
    for line in _table(header, rows):
        out(line)
    out("")
    out("listed: the runs the entry lists; done: those with a record; computes: the runs first listed by this "
        "entry (a run listed by an earlier entry too is computed and counted there); pending: those of them "
        f"without a record; {plan.device.upper()}-h left: their estimated hours; pages: the book pages that read "
        "them. --only takes entry names (the first column) and computes every run the entry lists.")
    elsewhere = {name: counts for name, counts in computed_elsewhere(status).items() if not chosen or name in chosen}
    if elsewhere:
        out("runs not done that an earlier entry computes (so not in the entry's own pending):")
        for name, counts in elsewhere.items():
            out(f"  {name}: " + ", ".join(f"{n} by {other}" for other, n in counts.items()))
    if not scheduled:
        return
    out("")
    out("estimates of the runs to compute, by experiment, dataset and model (measured: median of records of the "
        "same kind; scaled: the same kind on other data, x data rows x epochs; proxy: a related experiment; "
        "sibling: other kinds of the experiment; default: a placeholder):")
    groups = collections.defaultdict(list)
    for run in scheduled:
        values = run.config.to_dict()
        estimate = status.costs.estimate(run.config)
        groups[(run.experiment, values.get("dataset", ""), values.get("model", ""), estimate.basis)].append(estimate)
    unscaled = sum(e.unscaled for group in groups.values() for e in group)
    if unscaled:
        out(f"  warning: {unscaled} of these estimates are not scaled to their dataset's size (its file is not on "
            f"this machine; set {paths.DATA_ENV}): they can be far off")
    for (experiment, dataset, model, basis), estimates in groups.items():
        seconds = [e.seconds for e in estimates]
        spread = minutes(min(seconds)) + (f" to {minutes(max(seconds))}" if max(seconds) > min(seconds) else "")
        out(f"  {len(estimates):4d} runs  {experiment} {dataset} {model}: {spread} each, {basis} "
            f"(e.g. {estimates[0].source})")


def _table(header: list[str], rows: list[list]) -> list[str]:
    widths = [max(len(str(value)) for value in column) for column in zip(header, *rows)]
    return ["  ".join(str(value).ljust(width) for value, width in zip(row, widths)).rstrip()
            for row in [header, *rows]]
