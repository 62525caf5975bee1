"""Vectorised full-ranking evaluation vs a per-user Python loop, on the ML-100K released split.

Scores are a seeded random float64 matrix (943 x 1,349; no ties), candidates exclude each user's
training items, relevant items are the released test items. Both evaluators compute the same six
metrics at K = 20; the script checks that they agree, then reports the median seconds of each over
``--repeats`` runs and the speed-up (loop / vectorised).

Run: ``.venv/bin/python benchmarks/bench_metrics.py`` -> benchmarks/results/bench_metrics.json
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from _common import (METRIC_NAMES, add_thread_option, apply_thread_option, environment, loop_evaluate, median, now,
                     table, timed_alternately, write_result)
from recunlearn.data import load_split
from recunlearn.metrics import evaluate_full_ranking


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)

    env = environment()
    split = load_split("ml-100k", "released", 0, validation="test")  # relevant = the whole released test set
    exclude, relevant = split.train_matrix, split.matrix("test")
    users = np.flatnonzero(np.diff(relevant.indptr) > 0)
    scores = np.random.default_rng(args.seed).standard_normal((split.n_users, split.n_items))
    scores_t = torch.as_tensor(scores)

    def vectorised():
        return evaluate_full_ranking(lambda u: scores_t[u], exclude, relevant, k=args.k, users=users)

    def loop():
        return loop_evaluate(lambda u: scores[u], exclude, relevant, args.k, users)

    vectorised(), loop()  # warm-up
    times, results = timed_alternately({"vectorised": vectorised, "loop": loop}, args.repeats)
    (vec_times, loop_times), (vec_result, loop_result) = times.values(), results.values()

    max_diff = {name: float(np.max(np.abs(vec_result[name] - loop_result[name]))) for name in METRIC_NAMES}
    agree = all(value <= 1e-12 for value in max_diff.values())
    means = {name: float(vec_result[name].mean()) for name in METRIC_NAMES}
    row = {"evaluated_users": int(len(users)), "n_items": split.n_items, "k": args.k,
           "vectorised_seconds": median(vec_times), "loop_seconds": median(loop_times),
           "speedup_loop_over_vectorised": median(loop_times) / median(vec_times), "values_agree": agree}
    print(table([row], [("evaluated_users", "users", ""), ("k", "K", ""), ("vectorised_seconds", "vectorised s", ".4f"),
                        ("loop_seconds", "loop s", ".4f"), ("speedup_loop_over_vectorised", "speed-up", ".1f"),
                        ("values_agree", "same values", "")]))
    print("means:", ", ".join(f"{name} {value:.4f}" for name, value in means.items()))
    path = write_result("bench_metrics", {
        "benchmark": "bench_metrics", "created": now(), "environment": env,
        "setup": {"dataset": "ml-100k", "split": split.description, "scores": f"standard normal float64, seed {args.seed}",
                  "exclude": "training items", "relevant": "released test items", "repeats": args.repeats,
                  "statistic": "median"},
        "result": row, "times": {"vectorised": vec_times, "loop": loop_times},
        "max_abs_difference": max_diff, "metric_means": means,
    })
    print(f"wrote {path}")
    if not agree:
        raise SystemExit(f"vectorised and loop evaluations differ: {max_diff}")


if __name__ == "__main__":
    main()
