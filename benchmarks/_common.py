"""Shared pieces of the benchmarks: the per-user loop reference evaluator, timing, result writing."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

RESULTS_DIR = Path(__file__).resolve().parent / "results"
METRIC_NAMES = ("ndcg", "ndcg_untruncated", "hit_ratio", "recall", "hr_cure4rec", "mrr")


def loop_evaluate(score_row: Callable[[int], np.ndarray], exclude: sp.csr_matrix, relevant: sp.csr_matrix,
                  k: int, users: np.ndarray) -> dict[str, np.ndarray]:
    """Reference full-ranking evaluation: one user at a time, ``numpy.argsort`` of that user's scores
    with excluded items set to -inf, then the textbook formulas (same metrics as
    ``recunlearn.metrics.evaluate_full_ranking``)."""
    discounts = 1.0 / np.log2(np.arange(2, exclude.shape[1] + 2))
    cumulative = np.r_[0.0, np.cumsum(discounts)]
    out = {name: np.empty(len(users)) for name in METRIC_NAMES}
    for row, user in enumerate(users):
        scores = np.array(score_row(user), dtype=np.float64)
        scores[exclude.indices[exclude.indptr[user]:exclude.indptr[user + 1]]] = -np.inf
        top = np.argsort(-scores, kind="stable")[:k]
        targets = relevant.indices[relevant.indptr[user]:relevant.indptr[user + 1]]
        hits = np.isin(top, targets)
        n, n_hits = len(targets), int(hits.sum())
        dcg = float(discounts[:k][hits].sum())
        out["ndcg"][row] = dcg / cumulative[min(n, k)]
        out["ndcg_untruncated"][row] = dcg / cumulative[n]
        out["hit_ratio"][row] = float(n_hits > 0)
        out["recall"][row] = n_hits / min(n, k)
        out["hr_cure4rec"][row] = n_hits / n
        out["mrr"][row] = 1.0 / (np.argmax(hits) + 1) if n_hits else 0.0
    return out


ABSOLUTE_FLOOR = 1e-6
"""float32 rounding: a gradient that is zero in exact arithmetic (a bias that cancels in a softmax)
is ~1e-10 of noise in both implementations, whose ratio means nothing."""


def relative_difference(a: torch.Tensor, b: torch.Tensor, floor: float = 0.0) -> float:
    """Largest |a - b| relative to the tensor's largest magnitude, or to ``floor`` when that is larger
    (for gradients: 1e-3 of the largest gradient of any parameter), at least :data:`ABSOLUTE_FLOOR`."""
    if not a.numel():
        return 0.0
    scale = max(float(a.abs().max()), float(b.abs().max()), 1e-3 * floor, ABSOLUTE_FLOOR)
    return float((a.double() - b.double()).abs().max()) / scale


def probe_agreement(ref_state: dict, fast_state: dict, ref: dict, fast: dict) -> dict:
    """How two implementations of one model agree: identical initial weights (``*_state``), and the
    largest relative difference of every probed tensor (``ref``, ``fast``: name -> tensor; gradients,
    keys ``grad/...``, relative to the largest gradient of any parameter)."""
    import torch

    same_init = ref_state.keys() == fast_state.keys() and all(torch.equal(ref_state[k], fast_state[k])
                                                              for k in ref_state)
    gradient_scale = max((float(v.abs().max()) for k, v in ref.items() if k.startswith("grad/") and v.numel()),
                         default=0.0)
    diffs = {key: relative_difference(ref[key], fast[key], gradient_scale if key.startswith("grad/") else 0.0)
             for key in ref}
    return {"same_initial_weights": bool(same_init), "missing_keys": sorted(set(ref) ^ set(fast)),
            "max_relative_difference": max(diffs.values()), "worst": max(diffs, key=diffs.get), "per_key": diffs}


def add_thread_option(parser) -> None:
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's own choice). Use 1 on a machine shared with "
                             "other CPU-heavy processes: OpenMP threads that wait for each other slow small "
                             "kernels down many times there.")


def add_session_options(parser, tolerance: float) -> None:
    """The options of the SRU session-model benchmarks: models, dataset, its first N sessions, repeats,
    seed, the agreement tolerance and the thread count."""
    from recunlearn.models.session import SESSION_MODELS

    parser.add_argument("--models", nargs="*", default=list(SESSION_MODELS), choices=list(SESSION_MODELS))
    parser.add_argument("--dataset", default="games")
    parser.add_argument("--max-sessions", type=int, default=5000, help="first N sessions before the split")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=tolerance)
    add_thread_option(parser)


def apply_thread_option(args) -> None:
    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)


def timed(fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> tuple[float, object]:
    start = clock()
    value = fn()
    return clock() - start, value


def timed_alternately(functions: dict[str, Callable[[], object]], repeats: int,
                      clock: Callable[[], float] = time.perf_counter) -> tuple[dict, dict]:
    """Time every function once per repeat, in turn (a drift of the machine's speed hits all of them
    alike): ``(seconds per name, last result per name)``. ``clock``: wall time by default;
    ``time.process_time`` gives the CPU seconds of this process, which on a machine shared with
    other jobs leave out the time spent waiting for a core."""
    seconds = {name: [] for name in functions}
    results = {}
    for _ in range(repeats):
        for name, fn in functions.items():
            elapsed, results[name] = timed(fn, clock)
            seconds[name].append(elapsed)
    return seconds, results


def median(values) -> float:
    return float(statistics.median(values))


def environment() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "torch_threads": torch.get_num_threads(), "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "load_average_at_start": list(os.getloadavg()), "argv": sys.argv}


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_result(name: str, payload: dict) -> Path:
    from recunlearn.io import write_json_atomic

    path = RESULTS_DIR / f"{name}.json"
    write_json_atomic(path, payload)
    return path


def write_rows(name: str, env: dict, args, key: str, rows: list[dict], passed: str, failure: str) -> Path:
    """Write benchmark ``name``'s result (its ``rows`` under ``key``), print where, and fail with
    ``failure`` unless every row's ``passed`` flag holds (the fast code agrees with its reference)."""
    path = write_result(name, {"benchmark": name, "created": now(), "environment": env, "setup": vars(args), key: rows})
    print(f"wrote {path}")
    if not all(row[passed] for row in rows):
        raise SystemExit(failure)
    return path


def table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """A plain-text table: ``columns`` are (key, header, format)."""
    cells = [[header for _, header, _ in columns]]
    cells += [[format(row[key], fmt) if fmt else str(row[key]) for key, _, fmt in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(line, widths)) for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
