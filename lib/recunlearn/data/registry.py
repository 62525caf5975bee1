"""Registry of datasets: name -> files, each with its official URL and SHA-256.

Every file is looked up in this order (see :func:`locate`):

1. the local data directory (``RECUNLEARN_DATA``; here ``../shared/data``), as ``<dataset>/<path>``
   or ``<dataset>/<path>.gz``;
2. the per-user cache (``RECUNLEARN_CACHE``);
3. a download from the official source into the cache (progress bar, checksum, atomic rename).

Every copy is verified before it is used, wherever it was found (see :func:`verify`). The
registered checksum is that of the file's *content*, so a compressed local copy and a downloaded
plain copy verify against the same value; a ``.gz`` copy shipped in the data directory also has the
checksum of its compressed bytes, checked first, so a damaged stream is reported with its path, both
digests and where to get the file instead of a bare gzip error.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tempfile
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .. import paths
from .errors import ChecksumMismatchError, DatasetError, DatasetNotFoundError

CURE4REC_COMMIT = "7b39d6ff53809e4d04480df6098333342b243e91"
CURE4REC_RAW = f"https://raw.githubusercontent.com/xiye7lai/CURE4Rec/{CURE4REC_COMMIT}/data"
GROUPLENS = "https://files.grouplens.org/datasets/movielens"


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset.

    ``path`` is relative to the dataset's folder; ``sha256`` is of the uncompressed content;
    ``url`` is the official source, and ``member`` the file's name inside a zip archive at ``url``.
    ``pickled`` marks files that must never be deserialised before their checksum matched.
    ``gz_sha256`` is of the compressed bytes of the ``<path>.gz`` copy in the data directory
    (made with ``gzip -n -9``), where one is shipped.
    """

    path: str
    sha256: str
    url: str
    member: str | None = None
    pickled: bool = False
    gz_sha256: str | None = None


@dataclass(frozen=True)
class Dataset:
    """A registered dataset: its files by role (``raw``, ``released_train``, ...) and a parser name."""

    name: str
    files: dict[str, DataFile]
    raw_format: str | None = None  # parser of the ``raw`` file, see ``recunlearn.data.parsers``
    note: str = ""
    papers: tuple[str, ...] = field(default_factory=tuple)


def _released(dataset: str, sha: dict[str, str], gz_sha: dict[str, str] | None = None) -> dict[str, DataFile]:
    """The CURE4Rec authors' released split files of ``dataset`` (GitHub xiye7lai/CURE4Rec, pinned commit);
    ``gz_sha`` holds the compressed checksums of the files shipped gzipped."""
    roles = {"released_ratings": "ratings.csv", "released_train": "train.csv",
             "released_test": "test.csv", "released_pos_dict": "pos_dict.npy"}
    return {
        role: DataFile(f"cure4rec/{name}", sha[name], f"{CURE4REC_RAW}/{dataset}/{name}", pickled=name.endswith(".npy"),
                       gz_sha256=(gz_sha or {}).get(name))
        for role, name in roles.items()
    }


DATASETS: dict[str, Dataset] = {
    "ml-100k": Dataset(
        name="ml-100k",
        files={
            "raw": DataFile("u.data", "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490",
                            f"{GROUPLENS}/ml-100k.zip", member="ml-100k/u.data"),
            **_released("ml-100k", {
                "ratings.csv": "574a8f444c3b8672ad02b6315e90ed4c31e69cd340b7f422e4fa8abd86d3cd06",
                "train.csv": "235e21f7ef0929183b2100f0816ba0c499c1e19a68c1556ea1a5a4f168417e13",
                "test.csv": "e623c93a13da0cedaca5b39c2e5ab497068102bc7000344780dcc9933015df37",
                "pos_dict.npy": "8ff294a9e28c5c2bfa6b2b7d95ffb8746130556d3c54e00b9b85e5dffc7f66cc",
            }),
        },
        raw_format="grouplens_tab",
        papers=("cure4rec",),
    ),
    "ml-1m": Dataset(
        name="ml-1m",
        files={
            "raw": DataFile("ratings.dat", "506d64ca44484487c11dc2d9a28de5c54948213e6b96285e298afe28d6ea4e0f",
                            f"{GROUPLENS}/ml-1m.zip", member="ml-1m/ratings.dat",
                            gz_sha256="286bf74147e03c483e5eaef1480df636c39c538c05201ac024f3c9caddd92b58"),
            **_released("ml-1m", {
                "ratings.csv": "bfcddd42ef5520cd6ff482c084c7f6ddf9d88262171db082057bb09e1f795331",
                "train.csv": "044f7a055dd6dcbbad0d8b8f94df7aef7e0f1b2664c054dd4aa8e4fa13006abf",
                "test.csv": "5a1442c02b8c69bb4b083488ea3d7f504825ab27fbc6244ce522f55d2fc1a9a1",
                "pos_dict.npy": "4238f8c8ca5b95efe3b25203a3d11bc35381950578e1387765ae32c19b8bf71e",
            }, gz_sha={  # shared/data/ml-1m/SOURCE.md
                "ratings.csv": "edb27a1465eb1fd2a5ec6a1c34a7f3e7381ec466ae6027a4b265d4b5d136bc54",
                "train.csv": "01b368919ca3cca297d1a177c6cf4dfa2d73c7b3a7bd86a65b88c571167a0a76",
            }),
        },
        raw_format="grouplens_colons",
        papers=("cure4rec",),
    ),
    "adm": Dataset(
        name="adm",
        files={
            # The raw 2014 ratings-only file; its SHA-256 is the Git-LFS oid recorded in shared/data/adm/SOURCE.md.
            "raw": DataFile("ratings_Digital_Music.csv",
                            "fdf164882460ff26fa2521e01f6a9cf8005ad252ddce308dd03519064f02d80e",
                            "http://snap.stanford.edu/data/amazon/productGraph/categoryFiles/ratings_Digital_Music.csv"),
            **_released("adm", {
                "ratings.csv": "359eb36b426f3fd65c733e6f2de440f6d3f8027a7952db1551f2f7bb86e9a01b",
                "train.csv": "84f8c32bc8586862d21feef66b68f7363bcc668cd32a05b31525bedff1726838",
                "test.csv": "19c65cbde92ff33e613761d4c4bdf7671898b453dae9b629e797e392a6cb3406",
                "pos_dict.npy": "a1c57d7169031792321cac6888519dfc3f86436f6084c079bcbd20ec320665dd",
            }),
        },
        raw_format="amazon_csv",
        note="The released copy has no timestamps and 1-based ids; the raw file is not in the local data directory.",
        papers=("cure4rec",),
    ),
    # --- CASPER (sequential interaction streams: user, item, timestamp; see shared/data/<name>/SOURCE.md) ---
    **{name: Dataset(
        name=name,
        files={"raw": DataFile(path, sha, url)},
        raw_format="casper_tsv",
        note=note,
        papers=("casper",),
    ) for name, path, sha, url, note in [
        ("wikipedia", "wikipedia.tsv", "fc69bede6343799da691b139a5875cf8dede5d0a0fe14dffe5e40820ccd04ea0",
         "https://raw.githubusercontent.com/claws-lab/casper/23012d867ef5c4d69dd939240596988f0f38bed4/data/wikipedia.tsv",
         "JODIE Wikipedia edits as released by the CASPER authors (4 columns: index, user, item, ts)."),
        ("reddit", "reddit.tsv", "0f33a2821d11218a8a0fb5e370a769caf516e1a780baa8e69eaf5440f241e88b",
         "https://raw.githubusercontent.com/claws-lab/iscon/69b76a72ee595652c7366c2c347f12216d1b6157/data/reddit.tsv",
         "JODIE Reddit, chronological first 20 %, the CASPER/ISCON/FINEST file (3 columns)."),
        ("foursquare", "foursquare.tsv", "d81515f14120f5cc2c50292857dee7eadd9f6ebc1e270aeab6947ac4d9ff0e66",
         "https://raw.githubusercontent.com/claws-lab/finest-recsys/5652996fe2c44244e73fa7dd5e92674e8d6e2a5d/data/foursquare.tsv",
         "Foursquare check-ins, the CASPER/FINEST file (3 columns; ts in relative units)."),
        ("lastfm", "lastfm_first10pct.tsv", "0b15b33a5bc2dec51afab7786d9485991a794bebcb095633b1a396147a68bcd1",
         "https://raw.githubusercontent.com/vivek2000anand/recsys-filterbubbles/d21639bce515ffef5ba2db530dc2505eee1f83c0/data/lastfm.tsv",
         "LastFM-10%: ONLY the chronological first 10 % (129,310 rows) of JODIE lastfm; the paper used all of it."),
    ]},
    # --- SRU (SASRec-format `user item` lines, ids from 1, time-ordered per user; shared/data/<name>/SOURCE.md) ---
    "games": Dataset(
        name="games",
        files={"raw": DataFile(
            "Video.txt", "b7376fe24430743f411dc7f567285657b2adb3f74361cc7ba0aee94f3024b651",
            "https://raw.githubusercontent.com/kang205/SASRec/e3738967fddab206d6eeb4fda433e7a7034dd8b1/data/Video.txt")},
        raw_format="sasrec_lines",  # parser registered by recunlearn.data.sessions
        note="Amazon Video Games 2014 as preprocessed by SASRec (single-pass >= 5 user / >= 5 item filter).",
        papers=("sru",),
    ),
    "beauty": Dataset(
        name="beauty",
        files={"raw": DataFile(
            "beauty_bert4rec.txt", "f480b7a7403852342ffd8f9809bb30697dd669be31813d0e204b698fec86ef49",
            "https://raw.githubusercontent.com/FeiSun/BERT4Rec/615eaf2004abecda487a38d5b0c72f3dcfcae5b3/data/beauty.txt")},
        raw_format="sasrec_lines",  # parser registered by recunlearn.data.sessions
        note="Beauty (BERT4Rec version): a SUBSTITUTE for SASRec's Beauty.txt, which SRU used and which could not be "
             "obtained; differently filtered (40,226 users, 54,542 items), not comparable with SRU's numbers.",
        papers=("sru",),
    ),
}


def get_dataset(name: str) -> Dataset:
    """The registry entry of ``name``; an unknown name lists the registered ones."""
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; registered datasets: {sorted(DATASETS)}")
    return DATASETS[name]


def get_file(dataset: str, role: str) -> DataFile:
    entry = get_dataset(dataset)
    if role not in entry.files:
        raise KeyError(f"dataset {dataset!r} has no file {role!r}; it has: {sorted(entry.files)}")
    return entry.files[role]


# --- checksums -------------------------------------------------------------------------------

_digests: dict[tuple, str] = {}
"""SHA-256 by (resolved path, inode, size, mtime, ctime, decompressed?) computed in this process."""

_GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)
"""What reading a truncated or damaged gzip stream raises."""


def _hash(path: Path, decompress: bool, use_cache: bool) -> str:
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, decompress)
    if key not in _digests or not use_cache:
        digest = hashlib.sha256()
        with (gzip.open if decompress else open)(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _digests[key] = digest.hexdigest()
    return _digests[key]


def file_sha256(path: Path, use_cache: bool = True) -> str:
    """SHA-256 of the bytes as stored (the compressed bytes of a ``.gz``). Cached per process by
    (path, inode, size, mtime, ctime) unless ``use_cache`` is false."""
    return _hash(path, False, use_cache)


def content_sha256(path: Path, use_cache: bool = True) -> str:
    """SHA-256 of the file's content, gunzipped first when the name ends in ``.gz`` (cached like
    :func:`file_sha256`). A damaged gzip stream raises ``BadGzipFile``, ``EOFError`` or ``zlib.error``."""
    return _hash(path, Path(path).suffix == ".gz", use_cache)


def downloads_allowed() -> bool:
    """Downloads are on unless ``RECUNLEARN_OFFLINE`` is ``1`` / ``true`` / ``yes`` (CI and the GPU machine set it)."""
    return os.environ.get("RECUNLEARN_OFFLINE", "0").strip().lower() not in ("1", "true", "yes")


def _how_to_obtain(dataset: str, spec: DataFile, bad_copy: Path | None = None) -> str:
    """How to get a good copy of ``spec``; accurate for whether downloads are on and where a bad copy lies."""
    source = f"{spec.url} (member {spec.member})" if spec.member else spec.url
    wanted = f"{dataset}/{spec.path}"
    cached = paths.cache_dir() / dataset / spec.path
    online = downloads_allowed()
    if bad_copy is not None and Path(bad_copy) == cached:
        then = ("the next lookup downloads it again (downloads are on)" if online else
                f"then unset RECUNLEARN_OFFLINE (it is {os.environ.get('RECUNLEARN_OFFLINE')!r}) so that the "
                f"library downloads it again, or put a good copy there from {source}")
        return f"Delete {bad_copy}: {then}."
    if bad_copy is not None:
        return (f"Replace {bad_copy} with a good copy of {wanted} from {source} (plain, or gzipped as {spec.path}.gz), "
                f"or set {paths.DATA_ENV} to a directory holding one; a copy in the data directory is used "
                "before the cache and is never replaced by a download.")
    text = f"Obtain it from {source}, or set {paths.DATA_ENV} to a directory holding {wanted} (plain or .gz)"
    if not online:
        text += (f", or unset RECUNLEARN_OFFLINE (it is {os.environ.get('RECUNLEARN_OFFLINE')!r}) to let the "
                 f"library download it into {cached}")
    return text + "."


def verify(path: Path, dataset: str, spec: DataFile, hint: str | None = None) -> Path:
    """``path`` if its content has ``spec``'s SHA-256, else :class:`ChecksumMismatchError`.

    A ``.gz`` copy is checked on its compressed bytes first (``spec.gz_sha256``); only a copy compressed
    differently is decompressed to check its content, and a stream that cannot be decompressed is a
    checksum error naming the path, the expected and actual digests and how to get the file.
    Pickled files are always hashed afresh; others once per (path, inode, size, mtime, ctime).
    """
    path = Path(path)
    hint = _how_to_obtain(dataset, spec, path) if hint is None else hint
    use_cache = not spec.pickled
    stored = file_sha256(path, use_cache)
    if path.suffix != ".gz":
        if stored != spec.sha256:
            raise ChecksumMismatchError(path, spec.sha256, stored, hint)
        return path
    if spec.gz_sha256 is not None and stored == spec.gz_sha256:
        return path
    try:
        actual = content_sha256(path, use_cache)
    except _GZIP_ERRORS as exc:
        problem = f"it is not a readable gzip stream ({type(exc).__name__}: {exc})"
        if spec.gz_sha256 is not None:
            raise ChecksumMismatchError(path, spec.gz_sha256, stored, hint, of="compressed file",
                                        problem=problem) from None
        raise ChecksumMismatchError(path, spec.sha256, f"{stored} (the compressed file)", hint,
                                    of="uncompressed content", problem=problem) from None
    if actual != spec.sha256:
        raise ChecksumMismatchError(path, spec.sha256, actual, hint, of="uncompressed content")
    return path


# --- lookup ----------------------------------------------------------------------------------

def candidate_paths(dataset: str, spec: DataFile) -> list[Path]:
    """The places looked in, in order: local data directory (plain, then .gz), then the cache."""
    found: list[Path] = []
    local = paths.local_data_dir()
    if local is not None:
        found += [local / dataset / spec.path, local / dataset / (spec.path + ".gz")]
    found.append(paths.cache_dir() / dataset / spec.path)
    return found


def locate(dataset: str, role: str, download: bool | None = None) -> Path:
    """Path of a verified copy of ``dataset``'s file ``role``, downloading it if needed and allowed.

    Raises :class:`DatasetNotFoundError` (naming the paths looked in, the URL and the variable to
    set) or :class:`ChecksumMismatchError` (file, expected and actual SHA-256).
    """
    spec = get_file(dataset, role)
    candidates = candidate_paths(dataset, spec)
    for path in candidates:
        if path.is_file():
            return verify(path, dataset, spec)
    if download is None:
        download = downloads_allowed()
    if not download:
        note = " (downloads are on, but this lookup was made with download=False)" if downloads_allowed() else ""
        raise DatasetNotFoundError(
            f"{dataset} file {spec.path!r} (sha256 {spec.sha256}) not found; looked in: "
            + ", ".join(map(str, candidates)) + f"{note}. " + _how_to_obtain(dataset, spec),
            file=f"{dataset}/{spec.path}", url=spec.url or "")
    return download_file(dataset, spec, candidates[-1])


def download_file(dataset: str, spec: DataFile, target: Path) -> Path:
    """Download ``spec`` from its official URL into ``target``: progress bar, checksum, atomic rename.

    On any failure no partial file is left at ``target``.
    """
    from tqdm import tqdm  # the text bar: tqdm.auto warns inside a notebook kernel without ipywidgets

    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                response = urllib.request.urlopen(spec.url, timeout=60)
            except OSError as exc:
                raise DatasetNotFoundError(
                    f"could not download {dataset} file {spec.path!r} from {spec.url}: {exc}. Check the "
                    "network, or get the file by hand: " + _how_to_obtain(dataset, spec),
                    file=f"{dataset}/{spec.path}", url=spec.url or "") from exc
            total = int(response.headers.get("Content-Length") or 0) or None
            with response, tqdm(total=total, unit="B", unit_scale=True, desc=f"{dataset}/{spec.path}") as bar:
                for block in iter(lambda: response.read(1 << 20), b""):
                    out.write(block)
                    bar.update(len(block))
        not_registered = (f"The file downloaded from {spec.url} is not the registered one (changed upstream "
                          "or damaged in transit). " + _how_to_obtain(dataset, spec))
        if spec.member is not None:
            try:
                with zipfile.ZipFile(tmp) as archive:
                    content = archive.read(spec.member)
            except (zipfile.BadZipFile, KeyError) as exc:
                raise ChecksumMismatchError(spec.url, spec.sha256, file_sha256(tmp, use_cache=False), not_registered,
                                            of=f"member {spec.member}",
                                            problem=f"the download is not a zip archive holding it ({exc})") from None
            tmp.write_bytes(content)
        verify(tmp, dataset, spec, hint=not_registered)
        os.replace(tmp, target)
        return target
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_pos_dict(dataset: str) -> dict:
    """The authors' training positives ``{user: items}`` of ``dataset`` (source ids), unpickled only
    after the bytes read matched the registry's checksum."""
    from .parsers import load_pos_dict as _load

    spec = get_file(dataset, "released_pos_dict")
    return _load(locate(dataset, "released_pos_dict"), spec.sha256)


def open_text(path: Path) -> io.TextIOBase:
    """Open a (possibly gzipped) verified text file."""
    path = Path(path)
    return gzip.open(path, "rt") if path.suffix == ".gz" else open(path, "rt")


__all__ = ["DATASETS", "DataFile", "Dataset", "DatasetError", "get_dataset", "get_file", "locate", "verify",
           "content_sha256", "file_sha256", "download_file", "candidate_paths", "open_text"]
