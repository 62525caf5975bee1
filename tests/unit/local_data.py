"""Whether the test machine has a dataset's files: tests that read real data skip without them, and
fail when a file that is there is reported missing (a loader or registry bug must not pass as a skip).
A module of its own (not the conftest) so that test modules can import it whatever other conftest
files a pytest session collects."""

from __future__ import annotations

import pytest


def available(dataset: str, role: str) -> bool:
    """Whether ``dataset``'s file ``role`` is present (not necessarily verified) without downloading."""
    from recunlearn.data import registry

    spec = registry.get_file(dataset, role)
    return any(path.is_file() for path in registry.candidate_paths(dataset, spec))


def skip_if_absent(error) -> None:
    """For a ``DatasetNotFoundError`` raised inside a test: skip when the file it names is in none of
    the looked-up places; re-raise when the file is there, since then a loader or the registry looked
    for it wrongly (a bug that must not pass as a skip)."""
    from recunlearn.data import registry

    dataset, _, path = (error.file or "").partition("/")
    spec = registry.DATASETS.get(dataset)
    roles = [role for role, file in (spec.files.items() if spec else ()) if file.path == path]
    if roles and all(available(dataset, role) for role in roles):
        raise error
    pytest.skip(f"dataset file not available: {error}")
