"""Where batches run: local worker processes or Ray tasks. Both call :func:`run_batch`, so a record
is made and written the same way everywhere: by ``run_or_load`` (atomically, as each run finishes)
into the records directory given.

An executor has ``capacity`` (batches it runs at once) and:

- ``submit(batch_id, configs, deadlines)``: start a batch on a free slot; its runs start one after
  another, each only while no stop was asked for and its own deadline (``deadlines``: one
  ``time.time()`` value or None per run) has not passed (a run not started is reported ``skipped``);
- ``poll(timeout)``: the messages that arrived: one :class:`Outcome` per run, then a
  :class:`BatchDone` per batch (``lost`` when its process died: runs not reported are lost too);
- ``stop()``: no run of a running batch starts any more (local workers; a Ray batch ends at its
  deadlines or when its runs are done); ``terminate()``: end running runs now (nothing is written for
  them: a record is written only when its run finished); ``close()``: release the workers.

Workers run at the lowest CPU priority (``os.nice(19)``), with a malloc that keeps freed memory for
reuse (:mod:`recunlearn.allocator`), one run at a time, single-threaded unless
``RECUNLEARN_THREADS`` says otherwise (the thread count is set around every run by ``compute_record``).
Local workers are started with ``spawn`` (torch and ``fork`` do not mix).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import queue
import signal
import threading
import time
from pathlib import Path
from typing import Callable

from ..allocator import keep_freed_memory
from .plan import ComputeError, is_done, read_record

NICENESS = 19
_prepared = False


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What became of one run: ``computed``, ``loaded`` (a done record was there), ``failed`` or ``skipped``;
    ``seconds`` of it in all, ``resumed`` of them spent by earlier processes (trainings resumed from
    their saved state, :mod:`recunlearn.models.resume`)."""

    batch: int
    experiment: str
    key: str
    status: str
    seconds: float = 0.0
    error: str = ""
    resumed: float = 0.0


@dataclasses.dataclass(frozen=True)
class BatchDone:
    """A batch ended; ``lost``: its process died (its unreported runs did not finish)."""

    batch: int
    lost: bool = False
    error: str = ""


def prepare_worker_process() -> None:
    """Give this process the lowest CPU priority and a malloc that keeps freed memory for reuse
    (:func:`~recunlearn.allocator.keep_freed_memory`); once per process."""
    global _prepared
    if not _prepared:
        os.nice(NICENESS)
        keep_freed_memory()
        _prepared = True


REDUCED_SCALE_MODELS = "reduced-scale"
"""The subfolder of the stored-models directory that keeps the models of runs on a prefix of their data."""


def models_dir(config, base: str) -> str:
    """Where the run of ``config`` keeps the models its batch shares (``RECUNLEARN_MODELS``): ``base``,
    or its :data:`REDUCED_SCALE_MODELS` subfolder for a run on a prefix of its data (``max_rows`` or
    ``max_sessions`` set). Each kind of stored model keeps its most recently used files only, and a
    reduced-scale model (seconds to train again) must not push out a paper-scale one (tens of
    CPU-minutes)."""
    reduced = any(getattr(config, name, None) is not None for name in ("max_rows", "max_sessions"))
    return str(Path(base) / REDUCED_SCALE_MODELS) if reduced else base


def remove_unfinished_writes(models_root: Path, older_than_seconds: float = 3600.0) -> tuple[int, int]:
    """Remove the temporary files that an atomic write into ``models_root`` (a stored model, a training's
    saved state) left behind when its process was killed in the middle of it, and that are older than
    ``older_than_seconds`` (a write in progress takes seconds); returns (files, bytes) removed."""
    files = size = 0
    for path in Path(models_root).rglob(".*.tmp") if Path(models_root).is_dir() else ():
        try:
            stat = path.stat()
            if time.time() - stat.st_mtime > older_than_seconds:
                path.unlink()
                files, size = files + 1, size + stat.st_size
        except FileNotFoundError:  # removed by another compute process meanwhile
            continue
    return files, size


_STARTED_AT: str | None = None
"""The commit this process's code came from (:func:`started_at`)."""


def started_at() -> str:
    """The commit (``git_commit``) of the checkout when this process first asked, with the library's
    fingerprint taken at the same moment: a worker asks as it starts, before any run, so that a record
    it writes later can be checked against the code it started with (:func:`compute_run`)."""
    global _STARTED_AT
    if _STARTED_AT is None:
        from ..experiments import records

        records.source_fingerprint()  # cached from now on: what every record of this process names
        _STARTED_AT = records.git_commit()  # as a record reads it
    return _STARTED_AT


def compute_run(config, records_dir: Path) -> tuple[str, float, str, float]:
    """(status, seconds, error, resumed) of making ``config``'s record in ``records_dir``: loaded when a
    done record is there, else computed and written by ``run_or_load`` with its stored models in
    :func:`models_dir`; an exception is a failed run. ``seconds`` are the run's wall seconds, those
    its resumed trainings had spent in earlier processes (``resumed``, the record's ``cost.resumed``)
    included. A record naming another commit than the one this process started from (the checkout
    moved, or its library changed, while the process ran) is removed and the run counts as failed."""
    from ..experiments.records import record_key, run_or_load
    from ..paths import MODELS_ENV

    start = time.perf_counter()
    base = os.environ.get(MODELS_ENV)
    started = started_at()
    try:
        if is_done(read_record(Path(records_dir) / config.experiment / f"{record_key(config)}.json")):
            return "loaded", time.perf_counter() - start, "", 0.0
        if base is not None:
            os.environ[MODELS_ENV] = models_dir(config, base)
        record = run_or_load(config, Path(records_dir), recompute=True)
    except Exception as exc:  # noqa: BLE001 - a failed run is reported, the others go on
        return "failed", time.perf_counter() - start, f"{type(exc).__name__}: {exc}", 0.0
    finally:
        if base is not None:
            os.environ[MODELS_ENV] = base
    if "git_commit" in record and record["git_commit"] != started:  # the checkout changed under this process
        (Path(records_dir) / config.experiment / f"{record['key']}.json").unlink(missing_ok=True)
        return "failed", time.perf_counter() - start, (
            f"record removed: this process started from commit {started[:12]}, and the checkout is now at "
            f"{record['git_commit'][:12]}: the record would name code that did not make it; run compute from a "
            "worktree that stays at one commit"), 0.0
    resumed = float(((record.get("cost") or {}).get("resumed") or {}).get("wall_seconds") or 0.0)
    return "computed", time.perf_counter() - start + resumed, "", resumed


def run_batch(batch_id: int, configs: list, records_dir: Path, should_stop: Callable[[int], bool],
              report: Callable[[Outcome], None]) -> None:
    """Run ``configs`` one after another, reporting each; the run at position ``i`` is skipped when
    ``should_stop(i)`` as it is due to start."""
    from ..experiments.records import record_key

    for position, config in enumerate(configs):
        key = record_key(config)
        if should_stop(position):
            report(Outcome(batch_id, config.experiment, key, "skipped"))
            continue
        status, seconds, error, resumed = compute_run(config, records_dir)
        report(Outcome(batch_id, config.experiment, key, status, seconds, error, resumed))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.time() >= deadline


# --- local worker processes -----------------------------------------------------------------------------

def exit_when_orphaned(parent: int, interval: float = 5.0, exit=os._exit) -> threading.Thread:
    """Watch from a daemon thread that the process ``parent`` is still this process's parent; when it is
    not (the scheduler was killed, e.g. with SIGKILL, which it cannot catch), ``exit(1)``: a worker never
    computes on for nobody. The run in progress writes no record (records are written atomically)."""
    def watch():
        while os.getppid() == parent:
            time.sleep(interval)
        exit(1)

    thread = threading.Thread(target=watch, name="exit-when-orphaned", daemon=True)
    thread.start()
    return thread


def _local_worker(inbox, outbox, stop, records_dir: str, parent: int) -> None:
    """A local worker: batches from ``inbox`` until ``None``; messages to ``outbox``. It ignores SIGINT
    (a Ctrl-C reaches the whole process group; the parent decides what stops) and exits when its
    parent ``parent`` is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_when_orphaned(parent)
    prepare_worker_process()
    import recunlearn.experiments  # noqa: F401 - registers the runners

    started_at()  # the commit and fingerprint of the code this worker runs, before any run
    for batch_id, configs, deadlines in iter(inbox.get, None):
        run_batch(batch_id, configs, Path(records_dir), lambda i: stop.is_set() or _past(deadlines[i]), outbox.put)
        outbox.put(BatchDone(batch_id))


@dataclasses.dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    inbox: object
    batch: int | None = None


class LocalExecutor:
    """``workers`` processes on this machine, each running one batch at a time."""

    def __init__(self, workers: int, records_dir: Path):
        self._context = multiprocessing.get_context("spawn")
        self._stop, self._outbox = self._context.Event(), self._context.Queue()
        self._records_dir = str(records_dir)
        self._workers = [self._start_worker() for _ in range(workers)]
        self.capacity = workers

    def _start_worker(self) -> _Worker:
        inbox = self._context.Queue()
        process = self._context.Process(target=_local_worker,
                                        args=(inbox, self._outbox, self._stop, self._records_dir, os.getpid()),
                                        daemon=True)
        process.start()
        return _Worker(process, inbox)

    def free_slots(self) -> int:
        return sum(worker.batch is None for worker in self._workers)

    def submit(self, batch_id: int, configs: list, deadlines: list[float | None]) -> None:
        worker = next(w for w in self._workers if w.batch is None)
        worker.batch = batch_id
        worker.inbox.put((batch_id, configs, deadlines))

    def poll(self, timeout: float) -> list:
        messages = []
        try:
            messages.append(self._outbox.get(timeout=timeout))
            while True:
                messages.append(self._outbox.get_nowait())
        except queue.Empty:
            pass
        done = {message.batch for message in messages if isinstance(message, BatchDone)}
        for worker in self._workers:
            if worker.batch in done:
                worker.batch = None
        return messages + self._lost_batches()

    def _lost_batches(self) -> list[BatchDone]:
        """Batches whose worker died; a new worker takes its place."""
        lost = []
        for index, worker in enumerate(self._workers):
            if worker.batch is not None and not worker.process.is_alive():
                lost.append(BatchDone(worker.batch, lost=True,
                                      error=f"worker process ended with exit code {worker.process.exitcode}"))
                self._workers[index] = self._start_worker()
        return lost

    def stop(self) -> None:
        self._stop.set()

    def terminate(self) -> None:
        for worker in self._workers:
            worker.process.terminate()
        for worker in self._workers:
            worker.process.join(timeout=10)

    def close(self) -> None:
        for worker in self._workers:
            if worker.process.is_alive():
                worker.inbox.put(None)
        for worker in self._workers:
            worker.process.join(timeout=30)
            if worker.process.is_alive():
                worker.process.terminate()


# --- Ray -------------------------------------------------------------------------------------------------

def _ray_batch(batch_id: int, configs: list, records_dir: str, deadlines: list[float | None]) -> list[Outcome]:
    """A Ray task: one batch, exactly as a local worker runs it; its outcomes."""
    prepare_worker_process()
    started_at()
    outcomes: list[Outcome] = []
    run_batch(batch_id, configs, Path(records_dir), lambda i: _past(deadlines[i]), outcomes.append)
    return outcomes


def import_ray():
    """The ``ray`` module, or :class:`ComputeError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ComputeError("--executor ray needs Ray, an optional extra: pip install -e '.[ray]'") from None
    return ray


class RayExecutor:
    """Batches as Ray tasks (``num_cpus=1``, ``num_gpus=gpus_per_run``) on the cluster at ``address``
    (None: the running Ray instance, else a new local one). The records directory must be one every
    node writes to (a shared filesystem), or each node's records are merged afterwards by copying files."""

    def __init__(self, records_dir: Path, address: str | None = None, workers: int | None = None,
                 gpus_per_run: float = 0.0):
        self._ray = ray = import_ray()
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        self._records_dir = str(Path(records_dir).resolve())
        self._task = ray.remote(_ray_batch).options(num_cpus=1, num_gpus=gpus_per_run, max_retries=0)
        resources = ray.cluster_resources()
        if gpus_per_run and not resources.get("GPU"):
            self.close()
            raise ComputeError(f"--device cuda: the Ray cluster has no GPU (its resources: {resources})")
        slots = resources.get("GPU", 0) / gpus_per_run if gpus_per_run else resources.get("CPU", 1)
        self.capacity = workers or max(1, int(slots))
        self._running: dict = {}

    def free_slots(self) -> int:
        return self.capacity - len(self._running)

    def submit(self, batch_id: int, configs: list, deadlines: list[float | None]) -> None:
        self._running[self._task.remote(batch_id, configs, self._records_dir, deadlines)] = batch_id

    def poll(self, timeout: float) -> list:
        if not self._running:
            return []
        ready, _ = self._ray.wait(list(self._running), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = self._ray.wait(list(self._running), num_returns=len(self._running), timeout=0)
        messages = []
        for ref in ready:
            batch_id = self._running.pop(ref)
            try:
                messages += self._ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - a task that died loses its batch, not the command
                messages.append(BatchDone(batch_id, lost=True, error=f"{type(exc).__name__}: {exc}"))
                continue
            messages.append(BatchDone(batch_id))
        return messages

    def stop(self) -> None:
        """Ray batches cannot be told to stop: they end at their deadline or when done."""

    def terminate(self) -> None:
        for ref in self._running:
            self._ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._owns_ray:
            self._ray.shutdown()
