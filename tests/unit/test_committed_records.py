"""The committed run records: strict JSON, made from clean commits, and reproduced by today's code.

``test_a_sample_of_committed_records_reproduces`` re-runs the cheapest current CPU record of every
experiment (by its stored wall time; at most ``SAMPLE_SECONDS`` of stored time in all) into a
temporary directory and compares. Rank metrics must be identical where the record was made with the
vector instructions this machine's torch kernels use (its ``environment.cpu_capability``, e.g. AVX2
or AVX512): a CPU run is single-threaded and uses deterministic kernels, so the same code gives the
same bits. Where the record was made with other instructions, or does not say (records before the
field), float sums may round differently in their last bits, and a near-tie of two scores may then
order the other way: values must agree to ``CROSS_CPU_TOLERANCE`` (relative; measured: an AO of a
stability record 1.7e-9 apart between two machines). Membership-inference values (MIO) may move by
``MIO_TOLERANCE``: the MIO is a balanced accuracy over about a hundred users, so one user classified
differently moves it by about 0.01, and the oracle's float results depend on which vector
instructions the CPU offers; two such flips are allowed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from recunlearn import paths
from recunlearn.experiments import RUNNERS
from recunlearn.experiments.audit import audit_records
from recunlearn.experiments.records import compute_record
from recunlearn.io import read_json_strict

COMMITTED = paths.committed_records_dir()
SAMPLE_SECONDS = 240.0
MIO_TOLERANCE = 0.025
CROSS_CPU_TOLERANCE = 1e-6
SAMPLED_EXPERIMENTS = ("cure4rec-learn", "cure4rec-exact", "cure4rec-scif", "cure4rec-exact-mio", "casper-rls",
                       "cure4rec-bystander", "cure4rec-stability")
"""Experiments whose cheapest record is re-run: CASPER's at the CPU-sized scale take seconds; SRU's
cheapest takes minutes and is left out."""


def _audit():
    return audit_records(COMMITTED)


def test_every_committed_record_is_strict_json():
    audit = _audit()
    assert not audit.empty
    bad = audit[~audit["strict"]]["file"].tolist()
    assert not bad, f"{len(bad)} records are not strict JSON, e.g. {bad[:3]}"


def test_every_committed_record_is_current_and_from_the_clean_commit_that_made_it():
    audit = _audit()
    stale = audit[~audit["current"]]["file"].tolist()
    dirty = audit[~audit["clean"]]["file"].tolist()
    assert not stale, f"{len(stale)} records no page can find (stale key), e.g. {stale[:3]}"
    assert not dirty, f"{len(dirty)} records name a dirty or unknown commit, e.g. {dirty[:3]}"
    other_code = audit[audit["commit_code"].eq(False)]["file"].tolist()
    assert not other_code, (f"{len(other_code)} records name a commit whose files are not the code that made them "
                            f"(or carry no fingerprint), e.g. {other_code[:3]}")
    if audit["commit_code"].isna().all():  # a shallow clone: no commit's files can be read from git
        pytest.skip("no record's commit is in this clone: whether each names the code that made it cannot be "
                    "checked (fetch the full history)")


def _stored_seconds(record: dict) -> float:
    """The wall seconds a record took: its ``cost`` where it has one, else its timings (inf: unknown)."""
    cost = (record.get("cost") or {}).get("wall_seconds")
    if isinstance(cost, (int, float)):
        return float(cost)
    timings = record.get("timings") or {}
    walls = [v for k, v in timings.items() if "wall" in k and isinstance(v, (int, float))]
    return float(sum(walls) or sum(v for v in timings.values() if isinstance(v, (int, float))) or math.inf)


def sample_records() -> list[Path]:
    """The cheapest current, clean record of each sampled experiment, within the time budget."""
    audit = _audit()
    usable = audit[audit["current"] & audit["clean"] & audit["strict"]]
    chosen, budget = [], SAMPLE_SECONDS
    for experiment in SAMPLED_EXPERIMENTS:
        files = [COMMITTED / f for f in usable[usable["experiment"] == experiment]["file"]]
        files = [f for f in files if read_json_strict(f).get("device") == "cpu"]  # a GPU record needs its GPU
        if not files:
            continue
        cheapest = min(files, key=lambda f: _stored_seconds(read_json_strict(f)))
        cost = _stored_seconds(read_json_strict(cheapest))
        if cost <= budget or not chosen:
            chosen.append(cheapest)
            budget -= cost if math.isfinite(cost) else 0.0
    return chosen


def _numbers(block: dict | None, prefix: str = "") -> dict[str, float]:
    """Every number of a record's ``metrics``, nested blocks (SCIF's per method) and lists (per seed)
    included, by its dotted path (``scif.mio_accuracy``, ``mio_per_seed_accuracy.2``)."""
    items = enumerate(block) if isinstance(block, list) else (block or {}).items()
    out: dict[str, float] = {}
    for key, value in items:
        if isinstance(value, (dict, list)):
            out.update(_numbers(value, f"{prefix}{key}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = value
    return out


def _is_mio(name: str) -> bool:
    """Whether a dotted metric path names a membership-inference value (any ``mio_`` part)."""
    return any(part.startswith("mio") for part in name.split("."))


def test_the_sample_reruns_a_record_of_every_sampled_experiment_with_numbers_to_compare():
    """Every sampled experiment with a CPU record is in the sample (none left out by an unknown cost),
    and every sampled record has numbers to compare, MIO values among them where it measures any."""
    sample = sample_records()
    audit = _audit()
    with_records = {e for e in SAMPLED_EXPERIMENTS if (audit["experiment"] == e).any()}
    assert {p.parent.name for p in sample} == with_records
    for path in sample:
        numbers = _numbers(read_json_strict(path).get("metrics"))
        assert numbers, f"{path}: no number to compare"
        if "mio" in path.parent.name or "scif" in path.parent.name:
            assert any(_is_mio(name) for name in numbers), f"{path}: no MIO value to compare"


def test_numbers_reach_nested_blocks_and_lists():
    metrics = {"ndcg": 0.5, "ok": True, "scif": {"mio_accuracy": 0.6, "n": 3}, "mio_per_seed": [0.1, 0.2]}
    assert _numbers(metrics) == {"ndcg": 0.5, "scif.mio_accuracy": 0.6, "scif.n": 3, "mio_per_seed.0": 0.1,
                                 "mio_per_seed.1": 0.2}
    assert [_is_mio(n) for n in ("scif.mio_accuracy", "mio_per_seed.1", "scif.ndcg")] == [True, True, False]


@pytest.mark.parametrize("path", sample_records(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_sample_of_committed_records_reproduces(path):
    stored = read_json_strict(path)
    config_cls = RUNNERS[stored["experiment"]][0]
    fresh = compute_record(config_cls.from_dict(stored["config"]))
    assert fresh["key"] == stored["key"] == path.stem
    old, new = _numbers(stored.get("metrics")), _numbers(fresh.get("metrics"))
    assert set(old) == set(new)
    same_cpu = same_instructions(stored, fresh)
    for name in old:
        if _is_mio(name):
            assert abs(new[name] - old[name]) <= MIO_TOLERANCE, (name, old[name], new[name])
        elif same_cpu:
            assert new[name] == old[name], (name, old[name], new[name])
        else:
            assert new[name] == pytest.approx(old[name], rel=CROSS_CPU_TOLERANCE, abs=1e-12), (name, old[name],
                                                                                                  new[name])


def same_instructions(stored: dict, fresh: dict) -> bool:
    """Whether two records were computed with the same vector instructions (a record that does not say
    is taken to differ)."""
    made = (stored.get("environment") or {}).get("cpu_capability")
    return made is not None and made == (fresh.get("environment") or {}).get("cpu_capability")


def test_records_name_the_vector_instructions_they_were_computed_with():
    import torch

    from recunlearn.experiments.records import environment

    assert environment()["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert same_instructions({"environment": {"cpu_capability": "AVX2"}}, {"environment": {"cpu_capability": "AVX2"}})
    assert not same_instructions({"environment": {}}, {"environment": {"cpu_capability": "AVX2"}})
    assert not same_instructions({"environment": {"cpu_capability": "AVX512"}},
                                 {"environment": {"cpu_capability": "AVX2"}})
