"""One training epoch and one full-ranking evaluation of WMF, BPR and LightGCN on ML-100K.

Models and hyper-parameters are the paper settings (``LearnConfig`` defaults through ``build_model``:
d = 32, batch 512, Adam lr 0.01, 4 negatives, whole-data WMF, 3-layer LightGCN) on the released
split. For each model and each of ``--repeats`` fresh models (same seed) the script times

- ``epoch``: one pass over ``model.batches`` with Adam steps (LightGCN's graph is built beforehand,
  once per training, and not counted);
- ``eval``: ``evaluate_model`` -- the vectorised full ranking the trainer runs after every epoch
  (training items excluded, validation items relevant, K = 20, all six metrics);
- ``loop_eval``: the reference, the same evaluation of the same model with a per-user Python loop
  (``numpy.argsort`` per user, see ``_common.loop_evaluate``).

It reports medians in seconds and as ratios to ``loop_eval`` measured in the same run, e.g.
``epoch / loop_eval``; only the ratios are comparable across machines.

Run: ``.venv/bin/python benchmarks/bench_epoch_time.py`` -> benchmarks/results/bench_epoch_time.json
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from _common import (METRIC_NAMES, add_thread_option, apply_thread_option, environment, loop_evaluate, median, now,
                     table, timed, write_result)
from recunlearn.data import load_split
from recunlearn.experiments.cure4rec import LearnConfig, build_model
from recunlearn.models import LightGCN, TrainingData, evaluate_model


def one_epoch(model, data: TrainingData, optimizer, generator) -> float:
    model.train()
    total = 0.0
    for batch in model.batches(data, generator):
        optimizer.zero_grad(set_to_none=True)
        loss = model.batch_loss(batch)
        loss.backward()
        optimizer.step()
        total += float(loss.detach())
    return total


def loop_eval(model, exclude, relevant, k, users):
    model.eval()
    with torch.no_grad():
        user_emb, item_emb = (e.detach().cpu().numpy() for e in model.embeddings())
    return loop_evaluate(lambda u: item_emb @ user_emb[u], exclude, relevant, k, users)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["wmf", "bpr", "lightgcn"])
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)

    env = environment()
    split = load_split("ml-100k", "released", 0)
    data = TrainingData.from_pairs(split.train.user, split.train.item, split.n_users, split.n_items)
    exclude, relevant = split.train_matrix, split.matrix("valid")
    users = np.flatnonzero(np.diff(relevant.indptr) > 0)
    rows, raw = [], {}
    for name in args.models:
        config = LearnConfig(model=name)
        times = {"epoch": [], "eval": [], "loop_eval": []}
        max_diff = 0.0
        for _ in range(args.repeats):
            model = build_model(config, split.n_users, split.n_items, torch.Generator().manual_seed(config.seed))
            if isinstance(model, LightGCN):
                model.set_graph(data)
            optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
            generator = torch.Generator().manual_seed(config.seed)
            seconds, loss = timed(lambda: one_epoch(model, data, optimizer, generator))
            times["epoch"].append(seconds)
            seconds, fast = timed(lambda: evaluate_model(model, exclude, relevant, config.k, users=users))
            times["eval"].append(seconds)
            seconds, slow = timed(lambda: loop_eval(model, exclude, relevant, config.k, users))
            times["loop_eval"].append(seconds)
            # float32 scores can tie; report the largest per-user difference instead of asserting
            max_diff = max(max_diff, max(float(np.max(np.abs(fast[m] - slow[m]))) for m in METRIC_NAMES))
        med = {key: median(values) for key, values in times.items()}
        rows.append({"model": name, "epoch_seconds": med["epoch"], "eval_seconds": med["eval"],
                     "loop_eval_seconds": med["loop_eval"], "epoch_over_loop_eval": med["epoch"] / med["loop_eval"],
                     "eval_over_loop_eval": med["eval"] / med["loop_eval"],
                     "epoch_plus_eval_over_loop_eval": (med["epoch"] + med["eval"]) / med["loop_eval"],
                     "epoch_loss": loss, "valid_ndcg_untruncated": float(fast["ndcg_untruncated"].mean()),
                     "max_abs_metric_difference_vs_loop": max_diff})
        raw[name] = times
    print(table(rows, [("model", "model", ""), ("epoch_seconds", "epoch s", ".3f"), ("eval_seconds", "eval s", ".3f"),
                       ("loop_eval_seconds", "loop eval s", ".3f"), ("epoch_over_loop_eval", "epoch/loop", ".2f"),
                       ("eval_over_loop_eval", "eval/loop", ".3f"),
                       ("epoch_plus_eval_over_loop_eval", "(epoch+eval)/loop", ".2f"),
                       ("max_abs_metric_difference_vs_loop", "max |diff|", ".1e")]))
    path = write_result("bench_epoch_time", {
        "benchmark": "bench_epoch_time", "created": now(), "environment": env,
        "setup": {"dataset": "ml-100k", "split": split.description, "config": LearnConfig().to_dict(),
                  "repeats": args.repeats, "statistic": "median", "reference": "loop_eval (per-user Python loop)"},
        "results": rows, "times": raw,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
