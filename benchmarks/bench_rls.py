"""CASPER: vectorised RLS metrics vs the ``rbo`` package, and the bitset cascade scorer vs BFS per root.

1. RLS metrics: ``--pairs`` pairs of rank lists over all Foursquare items (n = 5,596), the second
   list a partial shuffle of the first (as two similar models give). ``recunlearn.metrics.rls``
   computes AO, RBO(0.9), RBO_ext(0.9) and Jaccard@10 for all pairs at once; the reference calls
   ``rbo.RankingSimilarity(A, B).rbo()`` (AO: the package default, the authors' call) and
   ``.rbo(p=0.9)`` per pair. Values must agree to 1e-12.
2. CASPER scoring: exact cascade scores of all IDAG roots (paper variant) on each dataset, with
   L = 50 (LSTM/TiSASRec) and unbounded L (JODIE/LatentCross), by the library's bitset sweep and
   by one breadth-first search per root (the paper's Algorithm 1). Scores must be identical.
3. Rank lists: ``rls.rank_lists`` (one integer sort of a unique composite key per item) against
   torch's stable sort of the negated scores, on ``--rank-rows`` float32 score rows with ties. The
   lists must be identical.

``--parts`` runs some parts only; the JSON keeps the other parts' last results.

Run: ``.venv/bin/python benchmarks/bench_rls.py`` -> benchmarks/results/bench_rls.json
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from _common import (RESULTS_DIR, add_thread_option, apply_thread_option, environment, median, now, table, timed,
                     timed_alternately, write_result)
from recunlearn.data.sequences import load_stream
from recunlearn.metrics import rls
from recunlearn.perturb.idag import build_idag, cascade_scores, cascade_scores_bfs


PARTS = {"metrics": "RLS metrics vs the rbo package", "ranking": "rank lists: composite key vs stable sort",
         "scores": "cascade scores: bitset sweep vs BFS"}


def previous_result(name: str) -> dict:
    """The last results of benchmark ``name`` (empty if none), so a run of some parts keeps the others."""
    path = RESULTS_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def similar_pairs(n: int, pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.stack([rng.permutation(n) for _ in range(pairs)])
    b = a.copy()
    for row in b:  # shuffle a random 20 % of the positions among themselves
        idx = np.sort(rng.choice(n, size=n // 5, replace=False))
        row[idx] = row[rng.permutation(idx)]
    return a, b


def bench_metrics(args) -> dict:
    import rbo

    a, b = similar_pairs(args.n_items, args.pairs, args.seed)
    vec = lambda: rls.rls_metrics(torch.as_tensor(a), torch.as_tensor(b))  # noqa: E731

    def reference():
        out = {"ao": [], "rbo_min": []}
        for x, y in zip(a, b):
            sim = rbo.RankingSimilarity(x, y)
            out["ao"].append(sim.rbo())
            out["rbo_min"].append(sim.rbo(p=0.9))
        return {k: np.array(v) for k, v in out.items()}

    vec()
    times, results = timed_alternately({"vectorised": vec, "reference": reference}, args.repeats)
    (vec_times, ref_times), (ours, ref) = times.values(), results.values()
    diff = {k: float(np.max(np.abs(ours[k] - ref[k]))) for k in ref}
    return {"pairs": args.pairs, "n_items": args.n_items, "vectorised_seconds": median(vec_times),
            "rbo_package_seconds": median(ref_times), "speedup": median(ref_times) / median(vec_times),
            "max_abs_difference": diff, "agree": all(v <= 1e-12 for v in diff.values()),
            "mean_ao": float(ours["ao"].mean()), "mean_rbo_min": float(ours["rbo_min"].mean()),
            "times": {"vectorised": vec_times, "rbo_package": ref_times}}


def bench_ranking(args) -> dict:
    """Rank lists of ``--rank-rows`` score rows over ``--n-items`` items (float32, many ties): the
    library's composite-key sort against torch's stable sort of the negated scores; identical lists."""
    gen = torch.Generator().manual_seed(args.seed)
    scores = (torch.randn(args.rank_rows, args.n_items, generator=gen) * 8).round() / 8  # ties in every row
    fast = lambda: rls.rank_lists(scores)  # noqa: E731
    stable = lambda: torch.sort(-scores, dim=1, stable=True).indices  # noqa: E731
    times, results = timed_alternately({"composite_key": fast, "stable_sort": stable}, args.repeats)
    (fast_times, stable_times), (ours, ref) = times.values(), results.values()
    return {"rows": args.rank_rows, "n_items": args.n_items, "composite_key_seconds": median(fast_times),
            "stable_sort_seconds": median(stable_times), "speedup": median(stable_times) / median(fast_times),
            "identical": bool(torch.equal(ours, ref)), "times": {"composite_key": fast_times, "stable_sort": stable_times}}


def bench_scores(args) -> list[dict]:
    rows = []
    for dataset in args.datasets:
        stream = load_stream(dataset)
        for max_len in (50, None):
            graph = build_idag(stream, max_len, "paper")
            fast_seconds, (roots, fast) = timed(lambda: cascade_scores(graph))
            bfs_seconds, (_, slow) = timed(lambda: cascade_scores_bfs(graph))
            rows.append({"dataset": dataset, "L": "inf" if max_len is None else max_len, "nodes": len(graph),
                         "edges": graph.n_edges, "roots": len(roots), "max_score": int(fast.max()),
                         "bitset_seconds": fast_seconds, "bfs_seconds": bfs_seconds,
                         "speedup": bfs_seconds / fast_seconds, "identical": bool(np.array_equal(fast, slow))})
            print(table([rows[-1]], [("dataset", "dataset", ""), ("L", "L", ""), ("nodes", "nodes", ""),
                                      ("roots", "roots", ""), ("max_score", "max score", ""),
                                      ("bitset_seconds", "bitset s", ".3f"), ("bfs_seconds", "BFS s", ".2f"),
                                      ("speedup", "speed-up", ".0f"), ("identical", "identical", "")]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--n-items", type=int, default=5596)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--datasets", nargs="*", default=["wikipedia", "reddit", "foursquare", "lastfm"])
    parser.add_argument("--rank-rows", type=int, default=2000, help="score rows ranked by the ranking part")
    parser.add_argument("--parts", nargs="*", default=list(PARTS), choices=list(PARTS),
                        help="which parts to run; the others keep their last results in the JSON")
    add_thread_option(parser)
    args = parser.parse_args()
    apply_thread_option(args)
    env = environment()
    result = previous_result("bench_rls")
    if "metrics" in args.parts:
        metrics = result["rls_metrics"] = bench_metrics(args)
        print(table([metrics], [("pairs", "pairs", ""), ("n_items", "n", ""),
                                ("vectorised_seconds", "vectorised s", ".4f"), ("rbo_package_seconds", "rbo package s", ".3f"),
                                ("speedup", "speed-up", ".0f"), ("agree", "agree to 1e-12", "")]), flush=True)
    if "ranking" in args.parts:
        ranking = result["rank_lists"] = bench_ranking(args)
        print(table([ranking], [("rows", "rows", ""), ("n_items", "n", ""),
                                ("composite_key_seconds", "composite key s", ".3f"),
                                ("stable_sort_seconds", "stable sort s", ".3f"), ("speedup", "speed-up", ".1f"),
                                ("identical", "identical", "")]), flush=True)
    if "scores" in args.parts:
        result["cascade_scores"] = bench_scores(args)
    result.update({"benchmark": "bench_rls", "created": now(), "environment": env, "setup": vars(args)})
    path = write_result("bench_rls", result)
    print(f"wrote {path}")
    if (not result.get("rls_metrics", {}).get("agree", True) or not result.get("rank_lists", {}).get("identical", True)
            or not all(r["identical"] for r in result.get("cascade_scores", []))):
        raise SystemExit("a fast implementation disagrees with its reference")


if __name__ == "__main__":
    main()
