"""LightGCN on ML-1M: training steps and graph propagation, 32-bit vs 64-bit CSR graph indices.

Every LightGCN step propagates the whole graph (3 sparse products forward, 3 backward). torch's CPU
sparse kernel (MKL) takes 32-bit indices and converts 64-bit ones on every product; the library's
graph (``implementation="fast"``, the default) has 32-bit indices, the reference
(``implementation="reference"``) the 64-bit ones ``to_sparse_csr`` returns. For each dataset this
script

1. trains both from one seed (the runs' settings: d = 32, 3 layers, batch 512, 4 negatives, Adam
   lr 0.01, l2 1e-4) for ``--check-batches`` steps and fails unless every loss and both embedding
   tables are bit-identical;
2. times ``--batches`` training steps of each, alternately, ``--repeats`` times (fresh models), and
   projects one epoch (batches per epoch x median seconds per step);
3. times one sparse product ``A_hat @ E`` (d = 32) with 64-bit CSR, 32-bit CSR and COO indices, alternately.

All times are CPU seconds of the process (``time.process_time``, one thread): on a machine shared
with other jobs, wall time mostly measures waiting for a core.

Run: ``.venv/bin/python benchmarks/bench_lightgcn.py --threads 1`` -> benchmarks/results/bench_lightgcn.json
"""

from __future__ import annotations

import argparse
import time
import itertools
import warnings

import torch

from _common import (add_thread_option, apply_thread_option, environment, median, now, table, timed_alternately,
                     write_result)
from recunlearn.data import load_split
from recunlearn.experiments.cure4rec import LearnConfig, build_model
from recunlearn.models import LightGCN, TrainingData, normalized_adjacency

IMPLEMENTATIONS = ("reference", "fast")


def build(split, implementation: str, seed: int) -> LightGCN:
    """The runs' LightGCN (``build_model`` of a default config), propagating as ``implementation``."""
    generator = torch.Generator().manual_seed(seed)
    model = build_model(LearnConfig(model="lightgcn"), split.n_users, split.n_items, generator)
    model.implementation = implementation  # read when the graph is set (model.prepare)
    return model


def train_steps(split, data, implementation: str, seed: int, n_batches: int):
    """``n_batches`` Adam steps (lr 0.01) of a fresh model: ``(losses, user table, item table)``."""
    model = build(split, implementation, seed)
    model.prepare(data)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for batch in itertools.islice(model.batches(data, torch.Generator().manual_seed(seed)), n_batches):
        optimizer.zero_grad(set_to_none=True)
        loss = model.batch_loss(batch)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return losses, model.user_embedding.detach(), model.item_embedding.detach()


def product_times(data, repeats: int, dim: int = 32) -> dict:
    graphs = {"csr_int64": normalized_adjacency(data, torch.int64), "csr_int32": normalized_adjacency(data)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        graphs["coo"] = graphs["csr_int64"].to_sparse_coo()
    x = torch.randn(graphs["coo"].shape[0], dim, generator=torch.Generator().manual_seed(0))
    products = {name: (lambda g=graph: torch.sparse.mm(g, x)) for name, graph in graphs.items()}
    seconds, results = timed_alternately(products, repeats, time.process_time)
    return {"product_seconds": seconds,
            "product_ms": {name: 1e3 * median(values) for name, values in seconds.items()},
            "product_int32_equal_int64": bool(torch.equal(results["csr_int32"], results["csr_int64"])),
            "product_coo_equal_int64": bool(torch.equal(results["coo"], results["csr_int64"]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ml-1m"])
    parser.add_argument("--batches", type=int, default=150, help="timed training steps per repeat")
    parser.add_argument("--check-batches", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--product-repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)
    env = environment()
    rows = []
    for dataset in args.datasets:
        split = load_split(dataset, "released", 0, "split_test")
        data = TrainingData.from_pairs(split.train.user, split.train.item, split.n_users, split.n_items)
        check = {impl: train_steps(split, data, impl, args.seed, args.check_batches) for impl in IMPLEMENTATIONS}
        identical = check["reference"][0] == check["fast"][0] and all(
            torch.equal(a, b) for a, b in zip(check["reference"][1:], check["fast"][1:]))

        def steps(impl):
            return lambda: train_steps(split, data, impl, args.seed, args.batches)

        seconds, _ = timed_alternately({impl: steps(impl) for impl in IMPLEMENTATIONS}, args.repeats,
                                       time.process_time)
        batches_per_epoch = -(-len(data) // 512)
        row = {"dataset": dataset, "train_rows": len(data), "nodes": split.n_users + split.n_items,
               "batches_per_epoch": batches_per_epoch, "timed_batches": args.batches, "clock": "process_time",
               "step_seconds": seconds,
               "reference_ms_per_step": 1e3 * median(seconds["reference"]) / args.batches,
               "fast_ms_per_step": 1e3 * median(seconds["fast"]) / args.batches,
               "speedup": median(seconds["reference"]) / median(seconds["fast"]), "identical": bool(identical),
               **product_times(data, args.product_repeats)}
        row["reference_epoch_s"] = row["reference_ms_per_step"] * batches_per_epoch / 1e3
        row["fast_epoch_s"] = row["fast_ms_per_step"] * batches_per_epoch / 1e3
        row["product_speedup"] = row["product_ms"]["csr_int64"] / row["product_ms"]["csr_int32"]
        rows.append(row)
        print(table([row], [("dataset", "dataset", ""), ("reference_ms_per_step", "ref ms/step", ".1f"),
                            ("fast_ms_per_step", "fast ms/step", ".1f"), ("speedup", "speed-up", ".2f"),
                            ("reference_epoch_s", "ref s/epoch", ".0f"), ("fast_epoch_s", "fast s/epoch", ".0f"),
                            ("product_speedup", "A@E int64/int32", ".2f"), ("identical", "identical", "")]),
              flush=True)
        print("one product A_hat @ E (ms): " + ", ".join(f"{k} {v:.2f}" for k, v in row["product_ms"].items()))
    path = write_result("bench_lightgcn", {"benchmark": "bench_lightgcn", "created": now(), "environment": env,
                                           "setup": vars(args), "datasets": rows})
    print(f"wrote {path}")
    if not all(r["identical"] and r["product_int32_equal_int64"] for r in rows):
        raise SystemExit("the 32-bit graph differs from the 64-bit reference")


if __name__ == "__main__":
    main()
