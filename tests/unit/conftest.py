"""Shared fixtures of the unit tests.

Every test runs with ``RECUNLEARN_OFFLINE=1`` (no test may download anything) and with run records
and the derived-data cache redirected to temporary directories (nothing is read from ``~/.cache``). Torch runs single-threaded: on a small shared machine OpenMP
threads that wait for each other make tiny tensors many times slower, and one thread also makes the
CPU kernels deterministic (multi-threaded ``index_put_(accumulate=True)`` -- the backward of embedding
lookups -- adds in a varying order unless ``torch.use_deterministic_algorithms(True)`` is set). Tests that need a real dataset file use the ``need_local``
fixture, a function that skips the test when a file is in none of the library's lookup places.
"""

from __future__ import annotations

import functools

import pytest

from local_data import available
from recunlearn import paths


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_torch():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _compute_process_starts_afresh(monkeypatch):
    """Each test is a fresh compute process: the commit it started from is taken anew
    (:func:`recunlearn.compute.executors.started_at`), under whatever commit the test makes records name."""
    from recunlearn.compute import executors

    monkeypatch.setattr(executors, "_STARTED_AT", None)


@pytest.fixture(scope="session")
def _private_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _offline_and_private_records(monkeypatch, tmp_path_factory, _private_cache):
    """No downloads; records and derived-data caches in temporary directories, never the home cache;
    none of the developer's stored models, page, ledger or thread count (the tests that use one set it)."""
    monkeypatch.setenv("RECUNLEARN_OFFLINE", "1")
    monkeypatch.setenv("RECUNLEARN_RECORDS", str(tmp_path_factory.mktemp("records")))
    monkeypatch.setenv("RECUNLEARN_CACHE", str(_private_cache))
    for name in ("RECUNLEARN_MODELS", "RECUNLEARN_PAGE", "RECUNLEARN_LEDGER", "RECUNLEARN_THREADS"):
        monkeypatch.delenv(name, raising=False)


def _need_local(dataset: str, *roles: str) -> None:
    """Skip the calling test unless every file ``roles`` of ``dataset`` is available locally."""
    missing = [role for role in roles if not available(dataset, role)]
    if missing:
        pytest.skip(f"{dataset} files {missing} not available locally (set RECUNLEARN_DATA)")


@pytest.fixture
def need_local():
    """``need_local(dataset, *roles)`` skips the test unless those files are available locally."""
    return _need_local


@functools.lru_cache(maxsize=None)
def _wikipedia_head():
    from recunlearn.data.sequences import load_stream

    return load_stream("wikipedia", max_rows=3000)


@pytest.fixture
def wikipedia_head(need_local):
    """Wikipedia's first 3,000 rows as a CASPER stream (two training windows, one test window), loaded
    once per test session; the test is skipped without the file."""
    need_local("wikipedia", "raw")
    return _wikipedia_head()


@pytest.fixture
def data_env(tmp_path, monkeypatch):
    """An empty local data directory and cache, offline: ``(data_dir, cache_dir)``."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    monkeypatch.setenv(paths.DATA_ENV, str(data))
    monkeypatch.setenv(paths.CACHE_ENV, str(cache))
    monkeypatch.setenv("RECUNLEARN_OFFLINE", "1")
    return data, cache


@pytest.fixture(autouse=True)
def _no_figures_left():
    """Pages draw with the non-interactive backend; every test closes the figures it drew."""
    import matplotlib

    matplotlib.use("Agg")
    yield
    import matplotlib.pyplot as plt

    plt.close("all")
