"""CASPER's sequential models: one training epoch of the fast formulation vs the reference formulation.

Every model in ``recunlearn.models.sequential`` has two implementations of the same network (same
parameters, same initial weights for a seed): ``implementation="reference"`` is the straightforward
formulation (padded windows through ``nn.LSTM``, one-hot inputs through dense layers, gathered
(B, L, L, d) interval tensors, ...), ``"fast"`` the library's default. For each model this script

1. builds both from one seed and checks their initial ``state_dict``s are identical;
2. compares ``probe`` (loss of the first training batch, the gradient of every parameter, the scores of
   the first test chunk; dropout off) of the two: they must agree to ``--tolerance`` (relative to the
   largest magnitude of each tensor; for a gradient at least 1e-3 of the largest gradient of any
   parameter, since a gradient that is zero in exact arithmetic -- a key bias that cancels in the
   softmax -- is rounding noise in both implementations), else the script fails;
3. times one training epoch of each, alternately, ``--repeats`` times (fresh models every time), and
   optionally (``--test-pass``) one pass of ``test_scores`` over every test row, and reports
   ``reference / fast``.

``latentcross-gru`` is LatentCross with the paper's GRU cell (``cell="gru"``), a variant the CASPER
pages compare with the authors' LSTM cell. Rows of models not measured in a run are kept from the
previous result file (each row says when it was ``measured`` and with which ``setup``).

Run: ``.venv/bin/python benchmarks/bench_sequential.py --threads 1`` -> benchmarks/results/bench_sequential.json
"""

from __future__ import annotations

import argparse
import functools
import json

import torch

from _common import (RESULTS_DIR, add_thread_option, apply_thread_option, environment, median, now,
                     probe_agreement, table, timed_alternately, write_rows)
from recunlearn.data.sequences import load_stream
from recunlearn.models.sequential import SEQUENTIAL_MODELS, LatentCrossRecommender

IMPLEMENTATIONS = ("reference", "fast")
MODELS = {**SEQUENTIAL_MODELS, "latentcross-gru": functools.partial(LatentCrossRecommender, cell="gru")}
"""The networks measured: the CASPER models and the variant with a fast path of its own."""


def build(name: str, stream, implementation: str, seed: int, epochs: int = 1):
    return MODELS[name](stream.n_items, torch.Generator().manual_seed(seed), epochs=epochs,
                        implementation=implementation)


def kept_rows(measured: list[str]) -> list[dict]:
    """The previous result's rows of the models not in ``measured`` (none without a previous result), each
    with when and how it was measured (the previous result's time, setup and note where the row has none)."""
    path = RESULTS_DIR / "bench_sequential.json"
    if not path.is_file():
        return []
    previous = json.loads(path.read_text())
    context = {"measured": previous["created"], "setup": previous["setup"], "note": previous.get("note")}
    return [{**{k: v for k, v in context.items() if v is not None}, **row} for row in previous["models"]
            if row["model"] not in measured]


def agreement(name: str, stream, seed: int) -> dict:
    """Identical initial weights, and the largest relative difference of every probed tensor."""
    models = {impl: build(name, stream, impl, seed) for impl in IMPLEMENTATIONS}
    fit_first = getattr(models["reference"], "net", None) is None  # models that build their net on the first stream
    if fit_first:
        for model in models.values():
            model._ensure_net(stream.n_users)
    ref_state, fast_state = (models[impl].net.state_dict() for impl in IMPLEMENTATIONS)
    return probe_agreement(ref_state, fast_state, *(models[impl].probe(stream) for impl in IMPLEMENTATIONS))


def epoch_times(name: str, stream, seed: int, repeats: int, test_pass: bool) -> dict:
    def epoch(impl):
        return lambda: build(name, stream, impl, seed).fit(stream)["train_seconds"]

    functions = {impl: epoch(impl) for impl in IMPLEMENTATIONS}
    seconds, _ = timed_alternately(functions, repeats)
    out = {"epoch_seconds": seconds, "epoch_speedup": median(seconds["reference"]) / median(seconds["fast"])}
    if test_pass:
        trained = {impl: build(name, stream, impl, seed) for impl in IMPLEMENTATIONS}
        for model in trained.values():
            model.fit(stream)

        def scores(impl):
            return lambda: sum(s.shape[0] for _, _, s in trained[impl].test_scores(stream))

        test_seconds, _ = timed_alternately({impl: scores(impl) for impl in IMPLEMENTATIONS}, repeats)
        out["test_seconds"] = test_seconds
        out["test_speedup"] = median(test_seconds["reference"]) / median(test_seconds["fast"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(SEQUENTIAL_MODELS), choices=list(MODELS))
    parser.add_argument("--dataset", default="wikipedia")
    parser.add_argument("--max-rows", type=int, default=None, help="first rows of the file only (default: all)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--test-pass", action="store_true", help="also time test_scores over every test row")
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)
    env = environment()
    stream = load_stream(args.dataset, max_rows=args.max_rows)
    rows = []
    for name in args.models:
        check = agreement(name, stream, args.seed)
        timing = epoch_times(name, stream, args.seed, args.repeats, args.test_pass)
        row = {"model": name, "measured": now(), "setup": vars(args), "dataset": args.dataset,
               "train_rows": int(len(stream.train_positions)), **check,
               **timing, "reference_epoch_s": median(timing["epoch_seconds"]["reference"]),
               "fast_epoch_s": median(timing["epoch_seconds"]["fast"]),
               "agree": check["same_initial_weights"] and not check["missing_keys"]
               and check["max_relative_difference"] <= args.tolerance}
        rows.append(row)
        print(table([row], [("model", "model", ""), ("reference_epoch_s", "reference s/epoch", ".2f"),
                            ("fast_epoch_s", "fast s/epoch", ".2f"), ("epoch_speedup", "speed-up", ".1f"),
                            ("max_relative_difference", "max rel. diff", ".1e"), ("agree", "agree", "")]), flush=True)
    order = list(MODELS)
    rows = sorted(kept_rows(args.models) + rows, key=lambda row: order.index(row["model"]))
    write_rows("bench_sequential", env, args, "models", rows, "agree", "a fast implementation disagrees with its reference")


if __name__ == "__main__":
    main()
