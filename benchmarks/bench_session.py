"""SRU's session models: one training epoch of the fast formulation vs the reference formulation.

Every model in ``recunlearn.models.session`` (GRU4Rec, SASRec, BERT4Rec) has two implementations of
the same network (same parameters, same initial weights for a seed): ``implementation="reference"``
is the straightforward formulation (``F.cross_entropy`` of the full (batch x |I|) logits, PyTorch's
dropout, full score matrices for every ranking, PyTorch's default Adam), ``"fast"`` the library's
default (the fused output layer of ``recunlearn.models.output_layer``, blocked rankings, cheaper
dropout masks, fused Adam, BERT4Rec by length buckets). For each model this script

1. builds both from one seed and checks their initial ``state_dict``s are identical;
2. compares ``probe_session_model`` (loss of the first training batch, the gradient of every
   parameter, the scores of the first evaluation chunk of validation windows; dropout off, the
   same cloze draws) of the two: they must agree to ``--tolerance`` (relative to the largest
   magnitude of each tensor; for a gradient at least 1e-3 of the largest gradient of any parameter),
   else the script fails;
3. times one training epoch of each on the SRU reduced scale (Games' first 5,000 sessions, the
   ``sru-reduced-scale`` plan entry), alternately, ``--repeats`` times (fresh models every time),
   with the validation pass the trainer runs after it, and reports ``reference / fast`` of the
   epoch's CPU seconds (``time.process_time``, which a busy machine inflates less than wall time)
   and of the validation pass, with the system CPU seconds and minor page faults of each fit
   (epoch and validation).

Run: ``.venv/bin/python benchmarks/bench_session.py --threads 1`` -> benchmarks/results/bench_session.json
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from _common import (add_session_options, apply_thread_option, environment, median, probe_agreement, table,
                     timed_alternately, write_rows)
from recunlearn.data.sessions import prefix_pairs
from recunlearn.experiments.sru import sru_data
from recunlearn.models.session import EVAL_BATCH, make_session_model, probe_session_model
from recunlearn.models.session import train_session_model

IMPLEMENTATIONS = ("reference", "fast")
BATCH = 256


def build(name: str, data, implementation: str, seed: int):
    return make_session_model(name, data.n_items, data.maxlen, torch.Generator().manual_seed(seed),
                              implementation=implementation)


def agreement(name: str, data, seed: int) -> dict:
    """Identical initial weights, and the largest relative difference of every probed tensor."""
    models = {impl: build(name, data, impl, seed) for impl in IMPLEMENTATIONS}
    ref_state, fast_state = (models[impl].state_dict() for impl in IMPLEMENTATIONS)
    windows, targets = prefix_pairs(data.train, data.maxlen)
    eval_windows, _ = data.pairs("valid")
    probes = (probe_session_model(models[impl], windows[:BATCH], targets[:BATCH], eval_windows[:EVAL_BATCH], seed)
              for impl in IMPLEMENTATIONS)
    return probe_agreement(ref_state, fast_state, *probes)


def epoch_times(name: str, data, seed: int, repeats: int) -> dict:
    def epoch(impl):
        def run():
            model = build(name, data, impl, seed)
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
            fit = train_session_model(model, data, torch.Generator().manual_seed(seed + 1), max_epochs=1,
                                      batch_size=BATCH)
            cpu, after = time.process_time() - start, resource.getrusage(resource.RUSAGE_SELF)
            return {"cpu_seconds": cpu, "system_seconds": after.ru_stime - before.ru_stime,
                    "minor_page_faults": after.ru_minflt - before.ru_minflt, "train_seconds": fit["train_seconds"],
                    "validation_seconds": fit["validation_seconds"], "loss": fit["curve"][0]["loss"],
                    "valid_ndcg@10": fit["best_valid"]}
        return run

    runs = {impl: [] for impl in IMPLEMENTATIONS}

    def recorder(impl):
        def run():
            runs[impl].append(epoch(impl)())
        return run

    timed_alternately({impl: recorder(impl) for impl in IMPLEMENTATIONS}, repeats)
    # CPU seconds of the epoch alone: the fit's CPU time less its validation's share (wall ratio)
    out = {"runs": runs}
    for impl, values in runs.items():
        out[f"{impl}_epoch_cpu_s"] = median([r["cpu_seconds"] * r["train_seconds"]
                                             / (r["train_seconds"] + r["validation_seconds"]) for r in values])
        out[f"{impl}_epoch_wall_s"] = median([r["train_seconds"] for r in values])
        out[f"{impl}_validation_s"] = median([r["validation_seconds"] for r in values])
        out[f"{impl}_minor_page_faults"] = median([r["minor_page_faults"] for r in values])
        out[f"{impl}_system_s"] = median([r["system_seconds"] for r in values])
    out["epoch_speedup"] = out["reference_epoch_cpu_s"] / out["fast_epoch_cpu_s"]
    out["validation_speedup"] = out["reference_validation_s"] / out["fast_validation_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_session_options(parser, tolerance=1e-4)
    args = parser.parse_args()
    apply_thread_option(args)
    env = environment()
    data = sru_data(args.dataset, 0, args.max_sessions)
    rows = []
    for name in args.models:
        check = agreement(name, data, args.seed)
        timing = epoch_times(name, data, args.seed, args.repeats)
        row = {"model": name, "dataset": args.dataset, "max_sessions": args.max_sessions,
               "train_pairs": int(data.train.n_pairs()), "n_items": int(data.n_items), **check, **timing,
               "agree": check["same_initial_weights"] and not check["missing_keys"]
               and check["max_relative_difference"] <= args.tolerance}
        rows.append(row)
        print(table([row], [("model", "model", ""), ("reference_epoch_cpu_s", "reference CPU s/epoch", ".2f"),
                            ("fast_epoch_cpu_s", "fast CPU s/epoch", ".2f"), ("epoch_speedup", "speed-up", ".2f"),
                            ("validation_speedup", "validation speed-up", ".2f"),
                            ("max_relative_difference", "max rel. diff", ".1e"), ("agree", "agree", "")]), flush=True)
    write_rows("bench_session", env, args, "models", rows, "agree", "a fast implementation disagrees with its reference")


if __name__ == "__main__":
    main()
