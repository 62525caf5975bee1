"""Trainings that survive their process: the state at an epoch boundary kept on disk, so that a
training stopped by the end of its process (a compute session that ends, SIGKILL) continues from its
last saved epoch in the next process, with the same weights bit for bit as if it had not stopped.

A :class:`ResumePoint` is given to a training loop by its caller, which chooses the file (keyed so
that only the same training from the same code finds it: :func:`recunlearn.experiments.stored_models.
resume_point`). The loop

1. builds its model, optimiser and generators as usual, then calls ``saved = point.restore(net=...,
   optimizer=..., ...)``: when a state is on disk it is loaded into those objects (anything with
   ``state_dict``/``load_state_dict``, or ``get_state``/``set_state`` like a ``torch.Generator``) and
   torch's global random states (CPU, and CUDA where it is in use) are restored; ``saved`` is the loop's
   own progress (curve, seconds, ...), ``{}`` for a fresh start;
2. calls ``point.epoch_done(epoch, epochs, curve=..., ...)`` after every epoch: the objects' state and
   the progress are written atomically when ``every_seconds`` have passed since the last write (never
   after the last epoch: a finished training has nothing to resume);
3. calls ``point.finish()`` at the end, which removes the file.

Resuming changes no value: the state is the exact tensors, and every random stream of the loop is
either restored or derived from the epoch. What it cannot restore is the time already spent, which
the progress carries (a loop adds it to its ``train_seconds``); :func:`earlier_seconds` adds up the
CPU and wall seconds that the resumed trainings of this process had spent in earlier processes, so a
record can count the whole cost of its run.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import torch

SAVE_EVERY_SECONDS = 300.0
"""Default interval between two writes of a training's state (a JODIE state on Foursquare, weights
and Adam moments of its 45.6 M-value prediction layer, is about 0.55 GB)."""

_EARLIER = {"cpu_seconds": 0.0, "wall_seconds": 0.0}


def earlier_seconds() -> dict[str, float]:
    """CPU and wall seconds that the trainings resumed in this process had spent before (a copy of
    the running totals: a caller takes the difference around a run)."""
    return dict(_EARLIER)


def _state_of(obj):
    return obj.get_state() if isinstance(obj, torch.Generator) else obj.state_dict()


def _load_into(obj, state) -> None:
    if isinstance(obj, torch.Generator):
        obj.set_state(state)
    else:
        obj.load_state_dict(state)


class ResumePoint:
    """Where one training keeps its state between processes (``path`` None: nothing is kept, and
    every method is a no-op; see the module docstring)."""

    def __init__(self, path: Path | None, every_seconds: float = SAVE_EVERY_SECONDS, capacity: int = 8):
        self.path = None if path is None else Path(path)
        self.every_seconds, self.capacity = float(every_seconds), int(capacity)
        self._objects: dict = {}
        self._spent = (0.0, 0.0)  # (cpu, wall) seconds spent before this process
        self._start_clock()
        self.resumed_epoch = 0

    def _start_clock(self) -> None:
        """This process's share of the training (and the time to the next write) counts from now."""
        self._since = (time.process_time(), time.perf_counter())
        self._last_write = self._since[1]

    def restore(self, **objects) -> dict:
        """Register the training's stateful objects (None values are skipped) and load the saved state
        into them; the saved progress, or ``{}`` when there is none or it cannot be read."""
        self._objects = {name: obj for name, obj in objects.items() if obj is not None}
        self._start_clock()
        if self.path is None or not self.path.is_file():
            return {}
        try:
            saved = torch.load(self.path, weights_only=False)
            if set(saved["objects"]) != set(self._objects):
                return {}
        except Exception:  # an unreadable or foreign file: train from the start (it is overwritten)
            return {}
        for name, obj in self._objects.items():
            _load_into(obj, saved["objects"][name])
        torch.set_rng_state(saved["torch_rng"])
        if saved.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        self._spent = (saved["cpu_seconds"], saved["wall_seconds"])
        _EARLIER["cpu_seconds"] += saved["cpu_seconds"]
        _EARLIER["wall_seconds"] += saved["wall_seconds"]
        self.resumed_epoch = int(saved["epoch"])
        self.path.touch()
        return saved["progress"]

    def spent(self) -> tuple[float, float]:
        """(CPU, wall) seconds of the training so far, earlier processes included."""
        cpu, wall = self._since
        return self._spent[0] + time.process_time() - cpu, self._spent[1] + time.perf_counter() - wall

    def epoch_done(self, epoch: int, epochs: int, **progress) -> None:
        """After epoch ``epoch`` (1-based) of ``epochs``: write the state when it is due."""
        if self.path is None or epoch >= epochs or time.perf_counter() - self._last_write < self.every_seconds:
            return
        self.save(epoch, **progress)

    def save(self, epoch: int, **progress) -> None:
        """Write the objects' state, torch's global random state and ``progress`` now (atomically),
        then keep only the ``capacity`` most recently used files of the directory."""
        if self.path is None:
            return
        from ..io import write_bytes_atomic

        cpu, wall = self.spent()
        state = {"epoch": int(epoch), "objects": {name: _state_of(obj) for name, obj in self._objects.items()},
                 "torch_rng": torch.get_rng_state(), "progress": progress,
                 "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None,
                 "cpu_seconds": cpu, "wall_seconds": wall}
        buffer = io.BytesIO()
        torch.save(state, buffer)
        write_bytes_atomic(self.path, buffer.getvalue())
        self._last_write = time.perf_counter()
        kept = sorted(self.path.parent.glob("*.pt"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[self.capacity:]:
            old.unlink(missing_ok=True)

    def finish(self) -> None:
        """The training is complete: remove its saved state."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def stateful(obj):
    """``obj`` when it has state to keep (``state_dict`` or a generator's state), else None: a
    training's per-epoch callback is kept only when it carries state (a TracIn recorder's sums)."""
    return obj if isinstance(obj, torch.Generator) or hasattr(obj, "state_dict") else None


def resume_point(point: ResumePoint | None) -> ResumePoint:
    """``point``, or an inert one for a training run without a file."""
    return point if point is not None else ResumePoint(None)


def resume_epochs(point: ResumePoint | None, start: float, **objects) -> tuple[ResumePoint, list, float]:
    """For a loop that keeps a per-epoch ``curve`` and times itself from ``start``
    (``time.perf_counter``): ``(point, curve, start)`` after :meth:`ResumePoint.restore` of
    ``objects``, the curve of the epochs done (empty for a fresh start; the loop goes on at epoch
    ``len(curve)``) and ``start`` moved back by the training seconds already spent."""
    point = resume_point(point)
    saved = point.restore(**objects)
    return point, saved.get("curve", []), start - saved.get("train_seconds", 0.0)
