"""CASPER baselines: TracIn's closed-form scoring against a per-row backward pass, and Rev.Adv.'s attack time.

1. TracIn: one checkpoint's last-layer self-influence of every training row of a Foursquare prefix, for
   LSTM and LatentCross trained briefly at the paper's architecture. The library
   (``model.last_layer_terms``) takes one pass without gradients and the closed form
   ``lr ‖softmax - onehot‖² (‖a‖² + 1)``; the reference runs, for every row alone, the output layer on
   that row's input, the cross-entropy of its target and a backward pass, and sums the squared
   gradients of the layer's weight and bias. The reference's inputs come from the straightforward
   formulation of each model (LSTM: ``nn.LSTM`` over the padded window; LatentCross: the t-batch loop
   of the original code, one-hot LSTMCell updates), so the check also covers the fast recurrences.
   Scores must agree to 1e-6 relative.
2. Rev.Adv.: the seconds of one attack (surrogate WMF, 30 outer epochs with the last 10 inner epochs
   unrolled; :func:`recunlearn.perturb.revadv.revadv_attack`) on a Foursquare prefix, and its result.

Run: ``.venv/bin/python benchmarks/bench_tracin.py --threads 1`` -> benchmarks/results/bench_tracin.json
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from torch.nn import functional as F

from _common import add_thread_option, apply_thread_option, environment, median, now, table, timed, write_result
from recunlearn.data.sequences import load_stream
from recunlearn.models.sequential import LatentCrossRecommender, LSTMRecommender
from recunlearn.models.sequential.latentcross import t_batches
from recunlearn.perturb.revadv import revadv_attack

LR = 1e-3


def squared_gradient(layer: torch.nn.Linear, features: torch.Tensor, target: int) -> float:
    """‖∇_{W,b} CE(layer(features), target)‖² by a backward pass for one row."""
    layer.zero_grad()
    F.cross_entropy(layer(features[None]), torch.tensor([target])).backward()
    return float(layer.weight.grad.double().pow(2).sum() + layer.bias.grad.double().pow(2).sum())


def lstm_reference(model: LSTMRecommender, stream) -> np.ndarray:
    net = model.net
    windows = torch.as_tensor(model._windows(stream)[stream.train_positions])
    with torch.no_grad():
        out, _ = net.lstm(net.embedding(windows))
    hidden = out[:, -1]
    targets = stream.item[stream.train_positions] + 1
    return LR * np.array([squared_gradient(net.fc, hidden[r], int(targets[r])) for r in range(len(targets))])


def latentcross_reference(model: LatentCrossRecommender, stream) -> np.ndarray:
    """The state before every training row by the original t-batch loop, then one backward per row."""
    net = model.net
    user, item, context = model._rows(stream, stream.train_positions)
    level = t_batches(user, item, model.window)
    states = net.initial_state.detach().expand(stream.n_users, -1).clone()
    before = torch.empty(len(user), states.shape[1])
    with torch.no_grad():
        for lo in range(0, len(user), model.window):
            for t in range(int(level[lo:lo + model.window].max()) + 1):
                rows = lo + np.flatnonzero(level[lo:lo + model.window] == t)
                u, i = torch.as_tensor(user[rows]), torch.as_tensor(item[rows])
                before[rows] = states[u]
                states[u] = net.update(states[u], i, context[rows])
        features = net.fused(before, context)
    return LR * np.array([squared_gradient(net.out, features[r], int(item[r])) for r in range(len(item))])


def bench_tracin(args) -> list[dict]:
    stream = load_stream("foursquare", max_rows=args.rows)
    rows = []
    for name, cls, reference in (("lstm", LSTMRecommender, lstm_reference),
                                 ("latentcross", LatentCrossRecommender, latentcross_reference)):
        model = cls(stream.n_items, generator=torch.Generator().manual_seed(args.seed), epochs=args.epochs)
        model.fit(stream)
        ours_times, ref_times = [], []
        for _ in range(args.repeats):
            seconds, terms = timed(lambda: model.last_layer_terms(stream, LR))
            ours_times.append(seconds)
            seconds, ref = timed(lambda: reference(model, stream))
            ref_times.append(seconds)
        ours = terms["influence"]
        relative = float(np.max(np.abs(ours - ref) / np.abs(ref)))
        rows.append({"model": name, "train_rows": len(ours), "closed_form_seconds": median(ours_times),
                     "per_row_backward_seconds": median(ref_times),
                     "speedup": median(ref_times) / median(ours_times), "max_relative_difference": relative,
                     "agree": relative <= 1e-6, "same_top_row": int(np.argmax(ours)) == int(np.argmax(ref))})
    return rows


def bench_revadv(args) -> dict:
    stream = load_stream("foursquare", max_rows=args.revadv_rows)
    seconds, attack = timed(lambda: revadv_attack(stream, args.seed))
    return {"raw_rows": args.revadv_rows, "users": int(stream.n_users), "items": int(stream.n_items),
            "train_rows": int(len(stream.train_positions)), "attack_seconds": seconds, "user": attack["user"],
            "fake_items": attack["fake_items"], "targets": attack["targets"],
            "best_target_hit_rate": max(attack["target_hit_rate"]), "first_target_hit_rate": attack["target_hit_rate"][0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3000, help="Foursquare prefix (raw rows) for TracIn")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--revadv-rows", type=int, default=20000, help="Foursquare prefix for the Rev.Adv. attack")
    parser.add_argument("--seed", type=int, default=0)
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)
    started = now()
    tracin = bench_tracin(args)
    print(table(tracin, [("model", "model", ""), ("train_rows", "rows", ","), ("closed_form_seconds", "closed form s", ".3f"),
                         ("per_row_backward_seconds", "per-row backward s", ".2f"), ("speedup", "ratio", ".0f"),
                         ("max_relative_difference", "max rel. diff", ".1e"), ("agree", "agree", "")]))
    revadv = bench_revadv(args)
    print(f"Rev.Adv. attack on the first {revadv['raw_rows']:,} rows ({revadv['users']:,} users, {revadv['items']:,} "
          f"items): {revadv['attack_seconds']:.1f} s; nearest user {revadv['user']}, fake profile "
          f"{revadv['fake_items']} items, TargetHR@50 {revadv['first_target_hit_rate']:.3f} -> "
          f"{revadv['best_target_hit_rate']:.3f}")
    path = write_result("bench_tracin", {"started": started, "setup": vars(args), "tracin": tracin, "revadv": revadv,
                                         "check": "TracIn closed form equals a per-row backward pass to 1e-6 relative",
                                         "passed": all(r["agree"] for r in tracin), "environment": environment()})
    print(f"written {path}")
    if not all(r["agree"] for r in tracin):
        raise SystemExit("TracIn closed form and per-row backward pass differ")


if __name__ == "__main__":
    main()
