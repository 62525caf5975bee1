"""CURE4Rec's MIO oracles: the seeds trained together (``OracleStack``) vs one network at a time.

The membership-inference oracle (``recunlearn.metrics.membership``) is an MLP ``2d -> 64 -> 16 -> 4
-> 2`` trained with Adam for 100 epochs in batches of 32, once per oracle seed (5 per run). For each
dataset this script

1. builds the oracle samples of every seed as the runs do (``seed_samples``: the released split's
   member / held-out item sets, 95 % of the users to train on and 5 % to score, features from random
   d = 32 embeddings -- the cost does not depend on the embedding values);
2. checks that ``oracle_scores_seeds(..., implementation="fast")`` returns exactly the reference's
   results (``implementation="reference"``: ``train_oracle`` seed by seed) after ``--check-epochs``
   epochs, and that every trained parameter of every seed is bit-identical; else the script fails;
3. times both at ``--epochs`` epochs, alternately, ``--repeats`` times, in CPU seconds of the process
   (``time.process_time``: on a machine shared with other jobs, wall time mostly measures waiting for
   a core), and reports reference / fast and the microseconds per optimiser step of one network.

Run: ``.venv/bin/python benchmarks/bench_mio.py --threads 1`` -> benchmarks/results/bench_mio.json
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from _common import (add_thread_option, apply_thread_option, environment, median, table, timed_alternately,
                     write_rows)
from recunlearn.data import load_split
from recunlearn.metrics.membership import (make_oracle, membership_sets, oracle_scores_seeds, seed_samples,
                                           train_oracle)
from recunlearn.metrics.oracle_stack import OracleStack

IMPLEMENTATIONS = ("reference", "fast")


def samples_of(dataset: str, n_seeds: int, dim: int = 32):
    """The oracle samples of seeds ``0..n_seeds-1`` on ``dataset`` (random embeddings, 5 % of users scored)."""
    split = load_split(dataset, "released", 0, "split_test")
    member, non_member = membership_sets(split)
    rng = np.random.default_rng(0)
    user_emb = rng.normal(size=(split.n_users, dim)).astype(np.float32)
    item_emb = rng.normal(size=(split.n_items, dim)).astype(np.float32)
    scored = np.sort(rng.choice(split.n_users, size=max(1, split.n_users // 20), replace=False))
    trained = np.setdiff1d(np.arange(split.n_users), scored)
    seeds = list(range(n_seeds))
    return [seed_samples(user_emb, item_emb, member, non_member, trained, scored, s) for s in seeds], seeds


def parameters_identical(samples, seeds, epochs: int) -> bool:
    """Every parameter of every seed's network, trained in one stack and alone, bit for bit."""
    x = np.stack([s[0] for s in samples])
    y = np.stack([s[1] for s in samples])
    stack = OracleStack([make_oracle(x.shape[2], seed=seed) for seed in seeds])
    stack.fit(torch.as_tensor(x), torch.as_tensor(y), seeds, epochs=epochs)
    for index, seed in enumerate(seeds):
        alone = train_oracle(x[index], y[index], seed, epochs=epochs)
        if not all(torch.equal(a, b) for a, b in zip(alone.parameters(), stack.network(index).parameters())):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ml-100k", "ml-1m"])
    parser.add_argument("--epochs", nargs="+", type=int, default=[100, 10],
                        help="timed oracle epochs per dataset (the runs use 100; time is linear in epochs)")
    parser.add_argument("--check-epochs", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=5, help="oracle seeds per run (the runs use 5)")
    parser.add_argument("--repeats", type=int, default=3)
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)
    if len(args.epochs) != len(args.datasets):
        parser.error("give one --epochs value per dataset")
    env = environment()
    rows = []
    for dataset, epochs in zip(args.datasets, args.epochs):
        samples, seeds = samples_of(dataset, args.seeds)
        check = {impl: oracle_scores_seeds(samples, seeds, epochs=args.check_epochs, implementation=impl)
                 for impl in IMPLEMENTATIONS}
        identical = check["reference"] == check["fast"] and parameters_identical(samples, seeds, args.check_epochs)

        def run(impl):
            return lambda: oracle_scores_seeds(samples, seeds, epochs=epochs, implementation=impl)

        seconds, results = timed_alternately({impl: run(impl) for impl in IMPLEMENTATIONS}, args.repeats,
                                              time.process_time)
        n_train = len(samples[0][1])
        steps = epochs * -(-n_train // 32) * (len(seeds) + sum(r["restarts"] for r in results["fast"]))
        row = {"dataset": dataset, "train_samples": n_train, "eval_samples": len(samples[0][3]), "seeds": len(seeds),
               "epochs": epochs, "network_steps": steps, "clock": "process_time", "seconds": seconds,
               "reference_s": median(seconds["reference"]), "fast_s": median(seconds["fast"]),
               "speedup": median(seconds["reference"]) / median(seconds["fast"]),
               "reference_us_per_network_step": 1e6 * median(seconds["reference"]) / steps,
               "fast_us_per_network_step": 1e6 * median(seconds["fast"]) / steps,
               "identical": bool(identical and results["reference"] == results["fast"]),
               "accuracy": [r["accuracy"] for r in results["fast"]]}
        rows.append(row)
        print(table([row], [("dataset", "dataset", ""), ("epochs", "epochs", ""), ("reference_s", "reference s", ".2f"),
                            ("fast_s", "fast s", ".2f"), ("speedup", "speed-up", ".1f"),
                            ("reference_us_per_network_step", "ref us/step", ".0f"),
                            ("fast_us_per_network_step", "fast us/step", ".0f"), ("identical", "identical", "")]),
              flush=True)
    write_rows("bench_mio", env, args, "datasets", rows, "identical", "the stacked oracles differ from the one-at-a-time reference")


if __name__ == "__main__":
    main()
