"""The compute workers' malloc setting changes speed only, never a number."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from recunlearn import allocator, paths

TRAIN = textwrap.dedent("""
    import hashlib, resource, sys, torch
    from recunlearn.allocator import keep_freed_memory
    if sys.argv[1] == "keep":
        assert keep_freed_memory()
    torch.set_num_threads(1)
    from recunlearn.data.sequences import load_stream
    from recunlearn.models.sequential import JODIERecommender
    stream = load_stream("wikipedia", max_rows=3000)
    model = JODIERecommender(stream.n_items, torch.Generator().manual_seed(0), epochs=2)
    model.fit(stream)
    digest = hashlib.sha256()
    for name, value in model.net.state_dict().items():
        digest.update(name.encode()); digest.update(value.numpy().tobytes())
    print(digest.hexdigest(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
""")


def test_keeping_freed_memory_is_set_once_where_malloc_is_glibcs():
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's mallopt only")
    assert allocator.keep_freed_memory() is True and allocator.keep_freed_memory() is True


def test_training_is_bit_identical_with_and_without_it(need_local):
    """JODIE (a dense gradient of its prediction layer every window) trained in two fresh processes,
    one with the setting: the same weights bit for bit."""
    need_local("wikipedia", "raw")
    out = {}
    for mode in ("keep", "default"):
        result = subprocess.run([sys.executable, "-c", TRAIN, mode], capture_output=True, text=True, check=True,
                                cwd=paths.REPO_ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
        out[mode] = result.stdout.split()
    assert out["keep"][0] == out["default"][0]
