"""How many CPU threads a run uses.

Every CPU run of the study trains a small model (tens of thousands of parameters to a few million),
where OpenMP threads mostly wait for each other: on a 2-core machine shared with a second job, torch's
default of one thread per core made CURE4Rec epochs 10-50x slower and erratic. One thread per run is
also what makes a CPU run bit-identical whatever the machine's core count. Parallelism comes from
running several runs at once (one per core), not from threads inside a run.

``RECUNLEARN_THREADS`` overrides the choice (e.g. one large model on a many-core machine); the
thread count used is stored in every record's ``environment``.
"""

from __future__ import annotations

import contextlib
import os

THREADS_ENV = "RECUNLEARN_THREADS"


def chosen_threads() -> int:
    """``RECUNLEARN_THREADS`` when set (a positive integer), else 1."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if not text:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{THREADS_ENV}={text!r}: expected a positive integer")
    return int(text)


@contextlib.contextmanager
def cpu_threads(threads: int | None = None):
    """Run the enclosed block with torch's intra-op threads and the BLAS/OpenMP pools of numpy and
    scipy limited to ``threads`` (default: :func:`chosen_threads`)."""
    import torch
    from threadpoolctl import threadpool_limits

    count = threads or chosen_threads()
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        with threadpool_limits(limits=count):
            yield
    finally:
        torch.set_num_threads(before)
