"""Batched vs sequential training of K shard models (exact unlearning's stage III) on ML-100K.

SISA's random partition into ``--shards`` user shards; each backbone (paper settings) trains all
shards for ``--epochs`` epochs (no early stopping) in two ways, timed without validation:

- ``batched``: one blocked model with a shard dimension (``TrainingData.from_blocks``), every step
  holding a batch of every shard -- how ``recunlearn.unlearning.exact`` trains shards;
- ``sequential``: the reference, one shard after another, each alone (a one-shard dataset).

It reports seconds and the speed-up ``sequential / batched`` measured in the same run; only the
ratio is comparable across machines (on a GPU the batched form also runs the shards in parallel).

Run: ``.venv/bin/python benchmarks/bench_shard_training.py`` -> benchmarks/results/bench_shard_training.json
"""

from __future__ import annotations

import argparse
import time

import torch

from _common import add_thread_option, apply_thread_option, environment, median, now, table, write_result
from recunlearn.data import load_split
from recunlearn.experiments.cure4rec import LearnConfig, build_model
from recunlearn.models import TrainingData
from recunlearn.unlearning.partition import random_partition


def train_epochs(model, data, epochs: int, lr: float) -> float:
    """Seconds of ``epochs`` plain Adam epochs over ``model.batches`` (graph built before timing)."""
    model.prepare(data)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    for _ in range(epochs):
        for batch in model.batches(data, generator):
            optimizer.zero_grad(set_to_none=True)
            model.batch_loss(batch).backward()
            optimizer.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["wmf", "bpr", "lightgcn"])
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)

    env = environment()
    split = load_split("ml-100k", "released", 0)
    users, items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    shard = random_partition(split.n_users, args.shards, seed=0)
    rows = []
    for name in args.models:
        config = LearnConfig(model=name)
        batched_times, sequential_times = [], []
        for _ in range(args.repeats):
            data = TrainingData.from_blocks(users, items, shard[users], split.n_users, split.n_items, args.shards)
            model = build_model(config, split.n_users, split.n_items, torch.Generator().manual_seed(0), args.shards)
            batched_times.append(train_epochs(model, data, args.epochs, config.lr))
            total = 0.0
            for s in range(args.shards):
                mine = shard[users] == s
                alone = TrainingData.from_pairs(users[mine], items[mine], split.n_users, split.n_items)
                single = build_model(config, split.n_users, split.n_items, torch.Generator().manual_seed(s))
                total += train_epochs(single, alone, args.epochs, config.lr)
            sequential_times.append(total)
        batched, sequential = median(batched_times), median(sequential_times)
        rows.append({"model": name, "batched_seconds": batched, "sequential_seconds": sequential,
                     "speedup": sequential / batched})
    print(table(rows, [("model", "model", ""), ("batched_seconds", "batched s", ".2f"),
                       ("sequential_seconds", "sequential s", ".2f"), ("speedup", "sequential/batched", ".2f")]))
    path = write_result("bench_shard_training", {
        "benchmark": "bench_shard_training", "created": now(), "environment": env,
        "setup": {"dataset": "ml-100k", "shards": args.shards, "epochs": args.epochs, "repeats": args.repeats,
                  "partition": "random (SISA)", "statistic": "median", "reference": "sequential shard training"},
        "results": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
