"""The library's CPU thread choice against torch's default, on one WMF and one BPR epoch + evaluation.

Every CPU run of the library executes inside ``recunlearn.threads.cpu_threads()`` (one thread unless
``RECUNLEARN_THREADS`` says otherwise). This benchmark times, alternately in one run, one training
epoch plus the full-ranking validation of WMF and BPR on ML-100K (paper settings) with

- ``default``: torch's own intra-op thread count (one per core), as a plain script would run;
- ``library``: the library's choice.

With ``--busy N`` it first starts N processes that keep a core busy each, as on a machine shared with
the background compute. It reports medians and the ratio ``default / library`` (> 1: the library's
choice is faster); only the ratio is comparable across machines.

Run: ``.venv/bin/python benchmarks/bench_threads.py [--busy 1]`` -> benchmarks/results/bench_threads.json
"""

from __future__ import annotations

import argparse
import multiprocessing

import numpy as np
import torch

from _common import environment, median, now, table, timed_alternately, write_result
from bench_epoch_time import one_epoch
from recunlearn.data import load_split
from recunlearn.experiments.cure4rec import LearnConfig, build_model
from recunlearn.models import TrainingData, evaluate_model
from recunlearn.threads import chosen_threads, cpu_threads


def _spin() -> None:
    while True:
        pass


def epoch_and_evaluation(name: str, split, data, threads: int | None):
    """One epoch and one validation of a fresh model at ``threads`` (None: torch's default)."""
    config = LearnConfig(model=name)
    exclude, relevant = split.train_matrix, split.matrix("valid")
    users = np.flatnonzero(np.diff(relevant.indptr) > 0)

    def run():
        model = build_model(config, split.n_users, split.n_items, torch.Generator().manual_seed(config.seed))
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        one_epoch(model, data, optimizer, torch.Generator().manual_seed(config.seed))
        return float(evaluate_model(model, exclude, relevant, config.k, users=users)["ndcg"].mean())

    def at_threads():
        if threads is None:
            return run()
        with cpu_threads(threads):
            return run()
    return at_threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0, help="processes that keep a core busy during the timing")
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for process in spinners:
        process.start()
    env = environment()
    try:
        split = load_split("ml-100k", "released", 0)
        data = TrainingData.from_pairs(split.train.user, split.train.item, split.n_users, split.n_items)
        rows, raw = [], {}
        for name in ("wmf", "bpr"):
            seconds, results = timed_alternately(
                {"default": epoch_and_evaluation(name, split, data, None),
                 "library": epoch_and_evaluation(name, split, data, chosen_threads())}, args.repeats)
            med = {key: median(values) for key, values in seconds.items()}
            rows.append({"model": name, "default_seconds": med["default"], "library_seconds": med["library"],
                         "default_over_library": med["default"] / med["library"],
                         "same_ndcg": results["default"] == results["library"]})
            raw[name] = seconds
    finally:
        for process in spinners:
            process.terminate()
    print(f"torch default threads: {default_threads}; library: {chosen_threads()}; busy processes: {args.busy}")
    print(table(rows, [("model", "model", ""), ("default_seconds", "default s", ".3f"),
                       ("library_seconds", "library s", ".3f"), ("default_over_library", "default/library", ".2f"),
                       ("same_ndcg", "same NDCG", "")]))
    path = write_result(f"bench_threads_busy{args.busy}", {
        "benchmark": "bench_threads", "created": now(), "environment": env,
        "setup": {"dataset": "ml-100k", "models": ["wmf", "bpr"], "work": "one epoch + full validation ranking",
                  "repeats": args.repeats, "statistic": "median", "busy_processes": args.busy,
                  "default_threads": default_threads, "library_threads": chosen_threads()},
        "results": rows, "times": raw})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
