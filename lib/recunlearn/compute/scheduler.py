"""Running batches on an executor: plan order, progress with an ETA, a deadline and a clean stop.

- Batches start in the order given while the executor has a free slot, no stop was asked for and
  the deadline has not passed; a run starts only under the same conditions (a batch's later runs
  are ``skipped`` once they fail).
- The first SIGINT or SIGTERM (:class:`StopRequest`) or the deadline: no run starts any more; runs in
  progress finish and write their records, then the command ends. A second SIGINT or SIGTERM ends
  the runs in progress at once (local workers terminated, Ray tasks cancelled); nothing is written
  for them.
- A record is written whole (temporary file + rename) when its run finishes, so a stopped command
  leaves no partial record, and running it again resumes where it stopped: done runs are not
  scheduled again.
- With a finishing time (``finish_by``), a run starts only when it is expected to end before it:
  its estimated seconds (its batch's shared work counted in the first run), times the pace so far
  (never below 1), times :data:`FINISH_MARGIN`, must fit in the time left. A batch whose first run
  would not fit is passed over for later ones; a started batch's later runs are checked as they
  are due (each gets its own latest start); when nothing runs and no queued batch can start, the
  command ends (``stopped_by`` "time left"). A machine lent for a fixed time thus ends with its
  runs written rather than cut off in their middle, and a batch longer than that time still makes
  progress run by run.
- ETA: the estimated seconds of the runs not yet finished (:class:`~recunlearn.compute.costs.CostModel`),
  times the *pace* (the seconds the runs computed so far took over their estimates: the machine's
  load and the estimates' errors, measured), divided by the executor's capacity. A batch pays its
  shared work (a CASPER batch's original model) once: its first computed run is expected to take
  its estimate alone, its later runs the estimate without the shared seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import time
from collections import deque
from typing import Callable

from .costs import CostModel
from .executors import BatchDone, Outcome
from .plan import Run

POLL_SECONDS = 1.0
FINISH_MARGIN = 1.25  # a batch must be expected to end this much before the finishing time, in proportion


class StopRequest:
    """Stop requests: the first asks for a clean stop, the second forces one."""

    def __init__(self):
        self.count = 0

    @property
    def requested(self) -> bool:
        return self.count >= 1

    @property
    def forced(self) -> bool:
        return self.count >= 2

    def ask(self, *_signal_args) -> None:
        self.count += 1

    @contextlib.contextmanager
    def on_signals(self, signals=(signal.SIGINT, signal.SIGTERM)):
        """Count these signals as stop requests while the block runs."""
        previous = {sig: signal.signal(sig, self.ask) for sig in signals}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


@dataclasses.dataclass
class Tally:
    """Runs by what became of them (``lost``: their worker died; ``interrupted``: ended by a second stop
    request; ``skipped``, ``not_started``: not started after a stop); ``stopped_by``: "signal",
    "deadline" or "" (every batch ran)."""

    computed: int = 0
    loaded: int = 0
    failed: int = 0
    skipped: int = 0
    lost: int = 0
    interrupted: int = 0
    not_started: int = 0
    stopped_by: str = ""

    @property
    def ok(self) -> bool:
        return not (self.failed or self.lost)


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


class _Schedule:
    """Batches queued and running, and the runs of each not yet reported."""

    def __init__(self, batches: list[list[Run]], costs: CostModel):
        self.costs = costs
        self.queued = deque(enumerate(batches))
        self.unreported: dict[int, dict[str, Run]] = {}
        self.total = sum(len(batch) for batch in batches)
        self.took = self.estimated = 0.0  # of the runs computed so far
        self.paid: set[int] = set()  # batches whose shared work a computed run has paid

    def expected(self, batch: int, run: Run) -> float:
        """Seconds ``run`` of ``batch`` should take by its estimate: alone, or without the shared work
        when an earlier run of its batch has paid it."""
        estimate = self.costs.estimate(run.config)
        return estimate.seconds - (estimate.shared_seconds if batch in self.paid else 0.0)

    def computed(self, outcome: Outcome, run: Run) -> float:
        """Count a computed run in the pace; returns the seconds it was expected to take."""
        expected = self.expected(outcome.batch, run)
        self.took += outcome.seconds
        self.estimated += expected
        self.paid.add(outcome.batch)
        return expected

    def pace(self) -> float:
        """Seconds the runs computed so far took over their estimates (1 before any)."""
        return self.took / self.estimated if self.took > 0 and self.estimated > 0 else 1.0

    def latest_starts(self, batch: list[Run], finish_by: float | None, deadline: float | None) -> list[float | None]:
        """When each run of a batch about to start may start at the latest: by ``deadline``, and with
        ``finish_by`` early enough to end before it (its estimate, the batch's shared work in the first
        run only, times the pace so far, never below 1, times :data:`FINISH_MARGIN`)."""
        if finish_by is None:
            return [deadline] * len(batch)
        slack = max(1.0, self.pace()) * FINISH_MARGIN
        latest = []
        for position, run in enumerate(batch):
            estimate = self.costs.estimate(run.config)
            seconds = estimate.seconds - (estimate.shared_seconds if position else 0.0)
            latest.append(min(finish_by - seconds * slack, deadline if deadline is not None else float("inf")))
        return latest

    def start(self, finish_by: float | None = None, deadline: float | None = None
              ) -> tuple[int, list[Run], list[float | None]] | None:
        """Take the first queued batch off the queue (with ``finish_by``, the first whose first run may
        still start), with the latest start of each of its runs (:meth:`latest_starts`); None when no
        batch may start."""
        now = time.time()
        for position, (batch_id, batch) in enumerate(self.queued):
            latest = self.latest_starts(batch, finish_by, deadline)
            if finish_by is None or now <= latest[0]:
                del self.queued[position]
                self.unreported[batch_id] = {run.key: run for run in batch}
                return batch_id, batch, latest
        return None

    def seconds_left(self) -> float:
        waiting = [[run.config for run in batch] for _, batch in self.queued]
        running = [[run.config for run in runs.values()] for runs in self.unreported.values()]
        return sum(self.costs.batch_seconds(configs) for configs in waiting + running)

    def runs_left(self) -> int:
        return sum(len(batch) for _, batch in self.queued) + sum(len(runs) for runs in self.unreported.values())


def run_batches(batches: list[list[Run]], executor, costs: CostModel, *, deadline: float | None = None,
                finish_by: float | None = None, stop: StopRequest | None = None,
                out: Callable[[str], None] = print) -> Tally:
    """Run ``batches`` in order on ``executor`` (see the module's rules); progress lines go to ``out``.
    ``deadline``: no run starts after it; ``finish_by``: no run starts that is not expected to end
    before it (both are times as ``time.time()`` gives them)."""
    stop = stop or StopRequest()
    schedule, tally, finished = _Schedule(batches, costs), Tally(), 0
    stopping = False
    while schedule.queued or schedule.unreported:
        if stop.forced:
            executor.terminate()
            tally.interrupted += sum(len(runs) for runs in schedule.unreported.values())
            schedule.unreported.clear()
            tally.stopped_by = "signal"
            out("second stop request: runs in progress ended, nothing written for them")
            break
        if not stopping and (stop.requested or (deadline is not None and time.time() >= deadline)):
            stopping = True
            tally.stopped_by = "signal" if stop.requested else "deadline"
            executor.stop()
            out(f"stopping ({'stop requested' if stop.requested else 'deadline reached'}): no new run starts, "
                f"runs in progress finish (a second SIGINT/SIGTERM ends them now)")
        while schedule.queued and not stopping and executor.free_slots() > 0:
            started = schedule.start(finish_by, deadline)
            if started is None:
                break
            batch_id, batch, latest_starts = started
            executor.submit(batch_id, [run.config for run in batch], latest_starts)
        if stopping and not schedule.unreported:
            break
        if finish_by is not None and not stopping and schedule.queued and not schedule.unreported:  # none fits
            tally.stopped_by = "time left"
            out(f"stopping: none of the {schedule.runs_left()} run(s) left is expected to finish in the "
                f"{minutes(max(finish_by - time.time(), 0.0))} left (estimates at the pace so far, "
                f"plus {FINISH_MARGIN - 1:.0%})")
            break
        for message in executor.poll(POLL_SECONDS):
            if isinstance(message, Outcome):
                run = schedule.unreported.get(message.batch, {}).pop(message.key, None)
                finished += message.status != "skipped"
                _count(tally, message)
                if run is not None and message.status != "skipped":
                    expected = (schedule.computed(message, run) if message.status == "computed"
                                else schedule.expected(message.batch, run))
                    _report(message, run, expected, schedule, executor.capacity, finished, out)
            elif isinstance(message, BatchDone):
                lost = schedule.unreported.pop(message.batch, {})
                tally.lost += len(lost)
                if message.lost:
                    out(f"batch lost ({message.error}): {len(lost)} run(s) did not finish")
    tally.not_started = sum(len(batch) for _, batch in schedule.queued)
    return tally


def _count(tally: Tally, outcome: Outcome) -> None:
    setattr(tally, outcome.status, getattr(tally, outcome.status) + 1)


def _report(outcome: Outcome, run: Run, expected: float, schedule: _Schedule, capacity: int, finished: int,
            out) -> None:
    """One progress line: the run, its time beside the seconds it was ``expected`` to take, what is left
    and when it should end."""
    before = f", {minutes(outcome.resumed)} of it before a restart" if outcome.resumed else ""
    took = f"{minutes(outcome.seconds)}{before} (estimate {minutes(expected)})"
    detail = f"after {took}: {outcome.error}" if outcome.status == "failed" else f"in {took}"
    left, pace = schedule.seconds_left(), schedule.pace()
    at_pace = f" at the pace so far (runs took {pace:.2g}x their estimates)" if abs(pace - 1.0) >= 0.1 else ""
    out(f"[{finished}/{schedule.total}] {outcome.status} {run.experiment} {run.key} ({run.entry}) {detail}; "
        f"left: {schedule.runs_left()} runs, ~{left / 3600:.1f} CPU-h by the estimates, "
        f"ETA {minutes(pace * left / max(capacity, 1))} on {capacity} worker(s){at_pace}")
