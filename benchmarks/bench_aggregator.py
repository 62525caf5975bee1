"""SRU's aggregator training: sub-model states computed once (frozen features) vs once per batch.

RecEraser-style and SRU aggregation train an attentive aggregator over K frozen sub-models
(``recunlearn.unlearning.sru.ShardEnsemble``). The library computes the sub-models' final hidden
states of every training and validation window once and trains every epoch from them (the session
trainer's frozen features); the reference computes the states of each batch and validation chunk
again in every epoch, as a straightforward training loop over the ensemble does. For each model this
script

1. builds K sub-models of the model (seeds 0..K-1; untrained: training them does not change the cost
   of their forward pass) and one aggregator (with centroids, as SRU's) per variant from one seed;
2. trains the aggregator for ``--epochs`` epochs, validated every epoch (the SRU runner's setting),
   with each variant, alternately, ``--repeats`` times, on the SRU reduced scale (Games' first
   5,000 sessions, the ``sru-reduced-scale`` plan entry);
3. fails unless the two variants' curves agree (each epoch's mean loss to ``--tolerance`` relative;
   the states of a batch can differ in their last bits between the two), and reports
   ``reference / frozen`` of the fit's CPU seconds (``time.process_time``: training and validation).

Run: ``.venv/bin/python benchmarks/bench_aggregator.py --threads 1`` -> benchmarks/results/bench_aggregator.json
"""

from __future__ import annotations

import argparse
import time

import torch

from _common import add_session_options, apply_thread_option, environment, median, table, timed_alternately, write_rows
from recunlearn.experiments.sru import sru_data
from recunlearn.models.session import make_session_model, train_session_model
from recunlearn.unlearning.sru import AttentiveAggregator, ShardEnsemble

VARIANTS = ("reference", "frozen")


class PerBatchEnsemble(ShardEnsemble):
    """The reference: the same ensemble, computing its sub-models' states for every batch and chunk."""

    @property
    def has_frozen_features(self) -> bool:
        return False


def fit(variant: str, subs, data, args) -> dict:
    hidden = subs[0].hidden_size
    centroids = torch.randn(len(subs), hidden, generator=torch.Generator().manual_seed(args.seed))
    aggregator = AttentiveAggregator(len(subs), hidden, data.n_items, centroids,
                                     torch.Generator().manual_seed(args.seed + 1))
    ensemble = (PerBatchEnsemble if variant == "reference" else ShardEnsemble)(subs, aggregator)
    start = time.process_time()
    result = train_session_model(ensemble, data, torch.Generator().manual_seed(args.seed + 2), max_epochs=args.epochs,
                                 validate_every=1, patience=args.epochs)
    return {"cpu_seconds": time.process_time() - start, "losses": [e["loss"] for e in result["curve"]],
            "valid_ndcg@10": [e.get("valid_ndcg@10") for e in result["curve"]],
            "frozen_features_seconds": result.get("frozen_features_seconds")}


def compare(name: str, data, args) -> dict:
    subs = [make_session_model(name, data.n_items, data.maxlen, torch.Generator().manual_seed(k))
            for k in range(args.shards)]
    runs = {variant: [] for variant in VARIANTS}

    def runner(variant):
        return lambda: runs[variant].append(fit(variant, subs, data, args))

    timed_alternately({variant: runner(variant) for variant in VARIANTS}, args.repeats)
    reference, frozen = runs["reference"][-1], runs["frozen"][-1]
    loss_difference = max(abs(a - b) / abs(a) for a, b in zip(reference["losses"], frozen["losses"]))
    out = {"model": name, "runs": runs, "max_loss_relative_difference": loss_difference,
           "agree": loss_difference <= args.tolerance}
    for variant in VARIANTS:
        out[f"{variant}_cpu_s"] = median([r["cpu_seconds"] for r in runs[variant]])
    out["speedup"] = out["reference_cpu_s"] / out["frozen_cpu_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_session_options(parser, tolerance=1e-5)
    parser.add_argument("--shards", type=int, default=8, help="K sub-models")
    parser.add_argument("--epochs", type=int, default=3, help="aggregator epochs (the runner's default is 10)")
    args = parser.parse_args()
    apply_thread_option(args)
    env = environment()
    data = sru_data(args.dataset, 0, args.max_sessions)
    rows = []
    for name in args.models:
        row = {"dataset": args.dataset, "max_sessions": args.max_sessions, "train_pairs": int(data.train.n_pairs()),
               "n_items": int(data.n_items), **compare(name, data, args)}
        rows.append(row)
        print(table([row], [("model", "model", ""), ("reference_cpu_s", "per-batch states CPU s", ".1f"),
                            ("frozen_cpu_s", "frozen features CPU s", ".1f"), ("speedup", "speed-up", ".2f"),
                            ("max_loss_relative_difference", "max loss rel. diff", ".1e"),
                            ("agree", "agree", "")]), flush=True)
    write_rows("bench_aggregator", env, args, "models", rows, "agree",
               "training from frozen features disagrees with training from per-batch states")


if __name__ == "__main__":
    main()
