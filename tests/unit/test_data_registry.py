"""Dataset registry: lookup order, checksums, downloads and the pickle guard."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import shutil
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy
import pandas as pd
import pytest

from recunlearn import paths
from recunlearn.data import parsers, registry
from recunlearn.data.errors import ChecksumMismatchError, DatasetError, DatasetNotFoundError

WRONG = b"uid,iid,val\n0,0,1\n0,1,1\n"
REAL_DATA = paths.local_data_dir()  # resolved at import, before any test points RECUNLEARN_DATA elsewhere


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def put(root: Path, relative: str, data: bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def real_file(dataset: str, role: str) -> Path:
    """The real local copy of a registered file (looked up before any env change), or skip."""
    spec = registry.get_file(dataset, role)
    local = REAL_DATA
    for path in ([local / dataset / spec.path, local / dataset / (spec.path + ".gz")] if local else []):
        if path.is_file():
            return path
    pytest.skip(f"{dataset}/{spec.path} not in the local data directory")


def read_content(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


class FakeResponse:
    """Enough of ``http.client.HTTPResponse`` for ``download_file``; ``fail_after`` blocks raise."""

    def __init__(self, data: bytes, fail_after: int | None = None):
        self.stream, self.fail_after, self.reads = io.BytesIO(data), fail_after, 0
        self.headers = {"Content-Length": str(len(data))}

    def read(self, size=-1):
        if self.fail_after is not None and self.reads >= self.fail_after:
            raise ConnectionResetError("connection reset by peer")
        self.reads += 1
        return self.stream.read(min(size, 7) if size and size > 0 else 7)  # several small blocks

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def fake_urlopen(monkeypatch, data: bytes | None = None, error: Exception | None = None, fail_after=None):
    calls = []

    def urlopen(url, timeout=None):
        calls.append(url)
        if error is not None:
            raise error
        return FakeResponse(data, fail_after)

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return calls


# --- registry entries -------------------------------------------------------------------------------

def test_unknown_names_list_the_registered_ones():
    with pytest.raises(KeyError, match="ml-100k"):
        registry.get_dataset("ml-10m")
    with pytest.raises(KeyError, match="released_train"):
        registry.get_file("ml-100k", "released_valid")


def test_pickled_flag_marks_exactly_the_pos_dicts():
    for name, entry in registry.DATASETS.items():
        for role, spec in entry.files.items():
            assert spec.pickled == spec.path.endswith(".npy"), (name, role)
            assert len(spec.sha256) == 64 and int(spec.sha256, 16) >= 0


# --- lookup and checksum errors ---------------------------------------------------------------------

def test_candidate_order_local_plain_then_gz_then_cache(data_env):
    data, cache = data_env
    spec = registry.get_file("ml-100k", "released_train")
    assert registry.candidate_paths("ml-100k", spec) == [
        data / "ml-100k" / "cure4rec" / "train.csv", data / "ml-100k" / "cure4rec" / "train.csv.gz",
        cache / "ml-100k" / "cure4rec" / "train.csv"]


def test_corrupt_local_file_raises_checksum_mismatch_naming_path_and_both_digests(data_env):
    data, _ = data_env
    path = put(data, "ml-100k/cure4rec/train.csv", WRONG)
    spec = registry.get_file("ml-100k", "released_train")
    with pytest.raises(ChecksumMismatchError) as info:
        registry.locate("ml-100k", "released_train")
    message = str(info.value)
    assert str(path) in message
    assert spec.sha256 in message
    assert sha256(WRONG) in message
    assert (info.value.path, info.value.expected, info.value.actual) == (path, spec.sha256, sha256(WRONG))
    assert isinstance(info.value, DatasetError)


def test_missing_file_offline_names_paths_url_and_variable(data_env):
    spec = registry.get_file("ml-100k", "released_test")
    with pytest.raises(DatasetNotFoundError) as info:
        registry.locate("ml-100k", "released_test")
    message = str(info.value)
    for candidate in registry.candidate_paths("ml-100k", spec):
        assert str(candidate) in message
    assert spec.url in message
    assert "RECUNLEARN_DATA" in message
    assert isinstance(info.value, FileNotFoundError)  # callers may catch the builtin


def test_missing_raw_file_names_the_archive_member(data_env):
    spec = registry.get_file("ml-1m", "raw")
    with pytest.raises(DatasetNotFoundError) as info:
        registry.locate("ml-1m", "raw")
    assert spec.url in str(info.value) and spec.member in str(info.value)


def test_download_false_never_touches_the_network(data_env, monkeypatch):
    monkeypatch.setenv("RECUNLEARN_OFFLINE", "0")
    calls = fake_urlopen(monkeypatch, error=AssertionError("network used"))
    with pytest.raises(DatasetNotFoundError):
        registry.locate("ml-100k", "released_test", download=False)
    assert calls == []


# --- downloads ----------------------------------------------------------------------------------------

def made_up_spec(content: bytes, member: str | None = None) -> registry.DataFile:
    return registry.DataFile("part/file.csv", sha256(content), "https://example.invalid/file", member=member)


def test_download_with_wrong_bytes_raises_and_leaves_no_partial_file(tmp_path, monkeypatch):
    fake_urlopen(monkeypatch, data=b"not the file you are looking for")
    target = tmp_path / "cache" / "toy" / "file.csv"
    with pytest.raises(ChecksumMismatchError) as info:
        registry.download_file("toy", made_up_spec(b"the real content"), target)
    assert info.value.actual == sha256(b"not the file you are looking for")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_download_from_file_url_with_wrong_content(tmp_path):
    source = put(tmp_path, "server/file.csv", b"tampered")
    spec = registry.DataFile("file.csv", sha256(b"original"), source.as_uri())
    target = tmp_path / "cache" / "toy" / "file.csv"
    with pytest.raises(ChecksumMismatchError):
        registry.download_file("toy", spec, target)
    assert list(target.parent.iterdir()) == []


@pytest.mark.parametrize("how", ["refused", "reset_mid_stream"])
def test_failed_transfer_leaves_no_partial_file(tmp_path, monkeypatch, how):
    content = b"0123456789" * 10
    if how == "refused":
        fake_urlopen(monkeypatch, error=urllib.error.URLError("connection refused"))
        expected = DatasetNotFoundError
    else:
        fake_urlopen(monkeypatch, data=content, fail_after=3)
        expected = ConnectionResetError
    target = tmp_path / "cache" / "toy" / "file.csv"
    with pytest.raises(expected) as info:
        registry.download_file("toy", made_up_spec(content), target)
    if how == "refused":
        assert "https://example.invalid/file" in str(info.value)
    assert list(target.parent.iterdir()) == []


def test_successful_download_and_zip_member(tmp_path, monkeypatch):
    content = b"1\t2\t5\t881250949\n" * 50
    fake_urlopen(monkeypatch, data=content)
    target = tmp_path / "cache" / "toy" / "plain.csv"
    assert registry.download_file("toy", made_up_spec(content), target) == target
    assert target.read_bytes() == content
    assert [p.name for p in target.parent.iterdir()] == ["plain.csv"]

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("toy/README", "readme")
        handle.writestr("toy/u.data", content)
    fake_urlopen(monkeypatch, data=archive.getvalue())
    target = tmp_path / "cache" / "toy" / "u.data"
    registry.download_file("toy", made_up_spec(content, member="toy/u.data"), target)
    assert target.read_bytes() == content
    assert sorted(p.name for p in target.parent.iterdir()) == ["plain.csv", "u.data"]


def test_locate_downloads_into_cache_then_reuses_it(data_env, monkeypatch):
    _, cache = data_env
    content = WRONG + b"1,2,1\n"
    monkeypatch.setitem(registry.DATASETS, "toy", registry.Dataset("toy", {"released_train": made_up_spec(content)}))
    calls = fake_urlopen(monkeypatch, data=content)
    path = registry.locate("toy", "released_train", download=True)
    assert path == cache / "toy" / "part" / "file.csv" and path.read_bytes() == content
    assert len(calls) == 1
    assert registry.locate("toy", "released_train", download=True) == path
    assert len(calls) == 1  # second lookup finds the verified cache copy


# --- gzipped copies -----------------------------------------------------------------------------------

def test_gzipped_copy_verifies_against_the_content_checksum(data_env):
    original = real_file("ml-100k", "released_test")
    content = read_content(original)
    data, _ = data_env
    path = put(data, "ml-100k/cure4rec/test.csv.gz", gzip.compress(content))
    assert registry.locate("ml-100k", "released_test") == path
    assert registry.content_sha256(path) == registry.get_file("ml-100k", "released_test").sha256
    pd.testing.assert_frame_equal(parsers.parse_cure4rec_csv(path), parsers.parse_cure4rec_csv(original))
    with registry.open_text(path) as handle:
        assert handle.readline().strip().startswith("uid,iid,val")


def test_corrupt_gzipped_copy_reports_the_content_digest(data_env):
    data, _ = data_env
    put(data, "ml-100k/cure4rec/test.csv.gz", gzip.compress(WRONG))
    with pytest.raises(ChecksumMismatchError) as info:
        registry.locate("ml-100k", "released_test")
    assert info.value.actual == sha256(WRONG)


# --- pickled files ------------------------------------------------------------------------------------

class _Payload:
    """A pickle that creates a marker file when unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_tampered_pos_dict_is_never_unpickled(data_env, monkeypatch, tmp_path):
    data, _ = data_env
    marker = tmp_path / "unpickled"
    put(data, "ml-100k/cure4rec/pos_dict.npy", pickle.dumps(_Payload(marker)))

    def forbidden(*args, **kwargs):
        pytest.fail("numpy.load was called on an unverified pickle")

    monkeypatch.setattr(numpy, "load", forbidden)
    with pytest.raises(ChecksumMismatchError):
        registry.load_pos_dict("ml-100k")
    assert not marker.exists()


def test_real_pos_dict_equals_released_train(need_local):
    need_local("ml-100k", "released_pos_dict", "released_train")
    pos = registry.load_pos_dict("ml-100k")
    train = parsers.parse_cure4rec_csv(registry.locate("ml-100k", "released_train"))
    grouped = train.groupby("user")["item"].apply(lambda s: sorted(s.tolist())).to_dict()
    assert set(pos) == set(grouped)
    assert all(sorted(pos[u].tolist()) == grouped[u] for u in grouped)


def test_gzipped_pos_dict_loads(data_env):
    original = real_file("ml-100k", "released_pos_dict")
    data, _ = data_env
    put(data, "ml-100k/cure4rec/pos_dict.npy.gz", gzip.compress(original.read_bytes()))
    pos = registry.load_pos_dict("ml-100k")
    assert len(pos) == 943


def test_rewritten_file_is_hashed_again(data_env):
    data, _ = data_env
    good = real_file("ml-100k", "released_pos_dict").read_bytes()
    path = put(data, "ml-100k/cure4rec/pos_dict.npy", good)
    registry.locate("ml-100k", "released_pos_dict")  # verified and cached
    before = path.stat()
    tampered = bytearray(good)
    tampered[-1] ^= 0xFF  # same size, different content
    path.write_bytes(bytes(tampered))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(ChecksumMismatchError):
        registry.locate("ml-100k", "released_pos_dict")


# --- the real files -------------------------------------------------------------------------------

REAL_FILES = [(name, role) for name in ("ml-100k", "ml-1m", "adm") for role in registry.DATASETS[name].files]


@pytest.mark.parametrize("dataset, role", REAL_FILES, ids=[f"{d}-{r}" for d, r in REAL_FILES])
def test_registered_local_files_verify(dataset, role, need_local):
    need_local(dataset, role)  # e.g. the ADM raw file is not available
    path = registry.locate(dataset, role, download=False)
    assert registry.content_sha256(path) == registry.get_file(dataset, role).sha256
    assert sha256(read_content(path)) == registry.get_file(dataset, role).sha256  # no cached digest involved


def test_local_copy_in_a_fresh_directory_still_verifies(data_env):
    """Copying a verified file elsewhere (new path, new mtime) verifies again from its content."""
    original = real_file("ml-100k", "released_test")
    data, _ = data_env
    target = data / "ml-100k" / "cure4rec" / original.name
    target.parent.mkdir(parents=True)
    shutil.copyfile(original, target)
    assert registry.locate("ml-100k", "released_test") == target


def test_a_file_not_on_the_machine_skips_but_one_reported_missing_while_present_fails(need_local):
    """The tests' ``local_data.skip_if_absent``: a data file in none of the looked-up places skips the test; a
    file that is there but was reported missing (a loader or registry bug) fails it."""
    from local_data import skip_if_absent

    need_local("ml-100k", "raw")
    present = DatasetNotFoundError("reported missing", file=f"ml-100k/{registry.get_file('ml-100k', 'raw').path}")
    with pytest.raises(DatasetNotFoundError, match="reported missing"):
        skip_if_absent(present)
    with pytest.raises(pytest.skip.Exception):
        skip_if_absent(DatasetNotFoundError("absent", file="ml-100k/no-such-file.csv"))
