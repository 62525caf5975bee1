"""Bad input fails before any compute with one clear message (issue 9, item 7).

Corrupt compressed data files, mis-cased or unknown notebook parameters, a fraction given where a
percentage is expected, sizes too small to run, a CUDA device that is not there, and the command
line's ``error:`` lines.
"""

from __future__ import annotations

import gzip
import hashlib
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import numpy
import pytest
import torch
import yaml

from recunlearn import cli, paths
from recunlearn.data import registry
from recunlearn.data.errors import ChecksumMismatchError, DatasetNotFoundError
from recunlearn.data.sequences import CASPER_DATASETS, load_stream
from recunlearn.experiments import Config, ConfigError, cure4rec
from recunlearn.experiments.casper import (SMALLEST_MAX_ROWS, CasperConfig, CasperGrid, Figure8Grid,
                                           ScalingConfig)
from recunlearn.experiments.config import require_device
from recunlearn.experiments.cure4rec import LearnConfig, LearnGrid
from recunlearn.experiments.cure4rec_exact import ExactGrid, UnlearnConfig
from recunlearn.experiments.cure4rec_scif import ExactMioConfig, ScifConfig, ScifGrid

REAL_DATA = paths.local_data_dir()  # resolved at import, before a test points RECUNLEARN_DATA elsewhere


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()



def shipped_gz(dataset: str, role: str) -> Path:
    """The real ``.gz`` copy of a registered file in the local data directory, or skip."""
    spec = registry.get_file(dataset, role)
    path = REAL_DATA / dataset / (spec.path + ".gz") if REAL_DATA else None
    if path is None or not path.is_file():
        pytest.skip(f"{dataset}/{spec.path}.gz not in the local data directory")
    return path


def copy_into(data: Path, source: Path, dataset: str, damage=None) -> Path:
    """``source`` copied to ``data/<dataset>/...`` (same relative path), its bytes passed through ``damage``."""
    target = data / dataset / source.relative_to(REAL_DATA / dataset)
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = source.read_bytes()
    target.write_bytes(damage(raw) if damage else raw)
    return target


def flip_middle_byte(raw: bytes) -> bytes:
    damaged = bytearray(raw)
    damaged[len(raw) // 2] ^= 0x01
    return bytes(damaged)


def truncate_half(raw: bytes) -> bytes:
    return raw[: len(raw) // 2]


# --- 1. corrupt compressed files ----------------------------------------------------------------------

@pytest.mark.parametrize("damage", [flip_middle_byte, truncate_half], ids=["flipped-byte", "truncated"])
def test_damaged_shipped_gz_names_path_both_digests_and_source(data_env, damage):
    data, _ = data_env
    path = copy_into(data, shipped_gz("ml-1m", "released_train"), "ml-1m", damage)
    spec = registry.get_file("ml-1m", "released_train")
    with pytest.raises(ChecksumMismatchError) as info:
        registry.locate("ml-1m", "released_train")
    message = str(info.value)
    assert str(path) in message
    assert spec.gz_sha256 in message and sha256(path.read_bytes()) in message
    assert "not a readable gzip stream" in message
    assert spec.url in message and paths.DATA_ENV in message
    assert "RECUNLEARN_OFFLINE=0" not in message  # a bad copy in the data directory is never downloaded over


def test_shipped_gz_is_verified_on_its_compressed_bytes_without_decompressing(data_env, monkeypatch):
    data, _ = data_env
    path = copy_into(data, shipped_gz("ml-1m", "released_train"), "ml-1m")

    def no_decompression(*args, **kwargs):
        pytest.fail("a shipped .gz copy was decompressed to verify it")

    monkeypatch.setattr(registry.gzip, "open", no_decompression)
    assert registry.locate("ml-1m", "released_train") == path


def test_damaged_gz_without_a_registered_compressed_digest(data_env):
    data, _ = data_env
    content = b"uid,iid,val\n" + b"0,1,1\n" * 2000
    path = data / "ml-100k" / "cure4rec" / "test.csv.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(truncate_half(gzip.compress(content)))
    spec = registry.get_file("ml-100k", "released_test")
    with pytest.raises(ChecksumMismatchError, match="not a readable gzip stream") as info:
        registry.locate("ml-100k", "released_test")
    assert spec.sha256 in str(info.value) and sha256(path.read_bytes()) in str(info.value)


def test_damaged_gz_pos_dict_is_reported_and_never_unpickled(data_env, monkeypatch):
    data, _ = data_env
    path = data / "ml-100k" / "cure4rec" / "pos_dict.npy.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(truncate_half(gzip.compress(pickle.dumps({0: [1, 2]}) * 50)))
    monkeypatch.setattr(numpy, "load", lambda *a, **k: pytest.fail("numpy.load on an unverified pickle"))
    with pytest.raises(ChecksumMismatchError, match="not a readable gzip stream"):
        registry.load_pos_dict("ml-100k")


def toy_dataset(monkeypatch, content: bytes) -> registry.DataFile:
    spec = registry.DataFile("part/file.csv", sha256(content), "https://example.invalid/file.csv")
    monkeypatch.setitem(registry.DATASETS, "toy", registry.Dataset("toy", {"released_train": spec}))
    return spec


@pytest.mark.parametrize("offline", ["1", "0"])
def test_corrupt_cached_copy_says_how_to_replace_it_for_the_download_setting(data_env, monkeypatch, offline):
    _, cache = data_env
    monkeypatch.setenv("RECUNLEARN_OFFLINE", offline)
    toy_dataset(monkeypatch, b"good\n")
    bad = cache / "toy" / "part" / "file.csv"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"bad\n")
    with pytest.raises(ChecksumMismatchError) as info:
        registry.locate("toy", "released_train")
    message = str(info.value)
    assert f"Delete {bad}" in message
    if offline == "1":
        assert "unset RECUNLEARN_OFFLINE" in message
    else:
        assert "downloads are on" in message and "RECUNLEARN_OFFLINE" not in message


def test_verification_is_cached_per_path_and_stat(data_env, monkeypatch):
    data, _ = data_env
    path = copy_into(data, shipped_gz("ml-1m", "released_train"), "ml-1m")
    registry.locate("ml-1m", "released_train")
    calls = []
    real = registry.hashlib.sha256
    monkeypatch.setattr(registry.hashlib, "sha256", lambda *a: calls.append(1) or real(*a))
    registry.locate("ml-1m", "released_train")
    assert calls == []  # unchanged file: not hashed again in this process
    path.write_bytes(flip_middle_byte(path.read_bytes()))
    with pytest.raises(ChecksumMismatchError):
        registry.locate("ml-1m", "released_train")
    assert calls


def test_download_that_is_not_a_zip_archive_is_a_checksum_error(tmp_path, monkeypatch):
    import io
    import urllib.request

    class Response(io.BytesIO):
        headers = {"Content-Length": "9"}

    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: Response(b"<html>404"))
    spec = registry.DataFile("u.data", sha256(b"x"), "https://example.invalid/a.zip", member="a/u.data")
    target = tmp_path / "cache" / "toy" / "u.data"
    with pytest.raises(ChecksumMismatchError, match="not a zip archive"):
        registry.download_file("toy", spec, target)
    assert list(target.parent.iterdir()) == []


# --- 6. the download hint is accurate for both settings ---------------------------------------------

def test_missing_file_offline_suggests_turning_downloads_on(data_env):
    with pytest.raises(DatasetNotFoundError) as info:
        registry.locate("ml-100k", "released_test")
    assert "unset RECUNLEARN_OFFLINE (it is '1')" in str(info.value)


def test_missing_file_with_downloads_on_does_not_suggest_turning_them_on(data_env, monkeypatch):
    monkeypatch.setenv("RECUNLEARN_OFFLINE", "0")
    with pytest.raises(DatasetNotFoundError) as info:
        registry.locate("ml-100k", "released_test", download=False)
    assert "RECUNLEARN_OFFLINE" not in str(info.value) and "download=False" in str(info.value)


def test_failed_download_does_not_suggest_turning_downloads_on(data_env, monkeypatch):
    import urllib.error
    import urllib.request

    monkeypatch.setenv("RECUNLEARN_OFFLINE", "0")
    toy_dataset(monkeypatch, b"good\n")

    def refuse(url, timeout=None):
        raise urllib.error.URLError("connection refused")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    with pytest.raises(DatasetNotFoundError) as info:
        registry.locate("toy", "released_train")
    assert "could not download" in str(info.value) and "RECUNLEARN_OFFLINE" not in str(info.value)


# --- 2. parameter names are case-sensitive ----------------------------------------------------------

@pytest.mark.parametrize("name", ["datasets", "Datasets", "max_Epochs"])
def test_miscased_parameter_names_the_parameter_and_the_allowed_names(name):
    with pytest.raises(ConfigError) as info:
        LearnGrid.from_params({name: ["ml-1m"], "MODELS": ["wmf"]})
    message = str(info.value)
    assert repr(name) in message and repr(name.upper()) in message and "case-sensitive" in message
    for allowed in LearnGrid.parameter_names():
        assert allowed.upper() in message


def test_other_lower_case_names_of_a_notebook_are_ignored():
    namespace = {"pd": object(), "glue": print, "grid": None, "runs": [], "In": ["", "import pandas as pd"],
                 "_": None, "MODELS": ["bpr"]}
    assert LearnGrid.from_params(namespace).models == ("bpr",)


def test_a_name_injected_by_papermill_must_be_a_parameter():
    injected = "# Parameters\nMODELS = [\"bpr\"]\nepochs = 3\n"
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['epochs'\].*MAX_EPOCHS"):
        LearnGrid.from_params({"In": ["", injected], "MODELS": ["bpr"], "epochs": 3})
    grid = LearnGrid.from_params({"In": ["", "# Parameters\nMODELS = [\"bpr\"]\n"], "MODELS": ["bpr"]})
    assert grid.models == ("bpr",)


def test_a_json_list_in_a_string_is_a_list_and_other_strings_are_refused():
    assert LearnGrid.from_params({"DATASETS": '["ml-1m"]'}).datasets == ("ml-1m",)
    with pytest.raises(ConfigError, match=r"DATASETS = 'ml-1m': expected a list of str .*-y 'DATASETS: \[a, b\]'"):
        LearnGrid.from_params({"DATASETS": "ml-1m"})
    with pytest.raises(ConfigError, match="expected a list of str"):
        LearnGrid.from_params({"DATASETS": "[ml-1m]"})  # YAML, not JSON: use papermill -y


def test_no_notebook_binds_a_name_that_differs_from_its_parameters_only_by_case():
    """The case rule must not trip over a notebook's own variables (imports, loop variables), even
    when a cell is re-run interactively after later cells."""
    import ast
    import re

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    configs = {cls.__name__: cls for cls in subclasses(Config)}
    offenders = []
    for path in sorted((paths.REPO_ROOT / "notebooks").glob("*/[!.]*.ipynb")):
        cells = ["\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
                 for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
        used = re.search(r"(\w+)\.from_params\(", "\n".join(cells))
        if used is None:
            continue
        parameters = {name.upper() for name in configs[used.group(1)].parameter_names()}
        for source in cells:
            for node in ast.walk(ast.parse(source)):
                bound = ([alias.asname or alias.name.split(".")[0] for alias in node.names]
                         if isinstance(node, (ast.Import, ast.ImportFrom)) else
                         [node.id] if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) else [])
                offenders += [(path.name, name) for name in bound if name.upper() in parameters and name != name.upper()]
    assert offenders == []


def test_papermill_reads_every_parameter_of_every_notebook():
    """papermill skips a parameters-cell line it cannot parse (e.g. a comment holding a second '='),
    then warns "Passed unknown parameter" when that parameter is given and leaves it out of
    ``--help-notebook``: every assignment of every parameters cell must be one papermill reads."""
    import re

    from papermill.translators import PythonTranslator

    unread = []
    for path in sorted((paths.REPO_ROOT / "notebooks").glob("*/[!.]*.ipynb")):
        cell = next(c for c in nbformat.read(path, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
        assigned = re.findall(r"^([A-Za-z_]\w*)\s*=", cell.source, flags=re.M)
        read = {parameter.name for parameter in PythonTranslator.inspect(cell)}
        unread += [(path.name, name) for name in assigned if name not in read]
    assert unread == []


def test_a_parameters_comment_gives_the_value_the_paper_profile_renders_with():
    """A reader re-running a page reads ``NAME = smoke value  # paper profile: VALUE`` (``full profile``
    in the book's own chapter, whose profile file is named ``paper`` too) in its parameters cell: VALUE
    (where it starts with a Python literal) must be what the page's paper profile sets, or the
    notebook's own value where the profile does not set it; a file the cell names must exist."""
    import ast
    import re

    not_a_literal = object()

    def leading_literal(text: str):
        """The value a comment starts with; words may follow it only after "(" or ";"."""
        for end in range(len(text), 0, -1):
            if text[end:].strip()[:1] not in ("", "(", ";"):
                continue
            try:
                return ast.literal_eval(text[:end].strip())
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
        return not_a_literal

    wrong, checked = [], 0
    for path in sorted((paths.REPO_ROOT / "notebooks").glob("*/[!.]*.ipynb")):
        cell = next(c for c in nbformat.read(path, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
        namespace: dict = {}
        exec(cell.source, {}, namespace)
        profile_file = paths.REPO_ROOT / "notebooks" / "params" / path.parent.name / f"{path.stem}.paper.yml"
        profile = {**namespace, **yaml.safe_load(profile_file.read_text())}
        for name, comment in re.findall(r"^([A-Z_]\w*)\s*=.*#.*?(?:paper|full) profile:\s*(.*)$", cell.source, flags=re.M):
            stated = leading_literal(comment)
            if stated is not_a_literal:
                continue  # words, e.g. "1..8, CASPER deleting k interactions"
            checked += 1
            if stated != profile[name]:
                wrong.append((path.name, name, stated, profile[name]))
        wrong += [(path.name, named) for named in re.findall(r"grids/[\w.-]+", cell.source)
                  if not (paths.REPO_ROOT / named).is_file()]
    assert checked > 50
    assert wrong == []


# --- 3. a percentage below 1 -------------------------------------------------------------------------

def test_ratio_below_one_percent_warns_that_it_is_a_percentage():
    with pytest.warns(UserWarning, match=r"RATIO = 0.5 is a percentage: 0.5 means 0.5 %, not 50 %"):
        config = UnlearnConfig(ratio=0.5)  # 4 of 943 users: allowed, but probably not meant
    assert config.ratio == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        UnlearnConfig(ratio=5.0)


@pytest.mark.parametrize("build", [lambda: UnlearnConfig(ratio=0.05), lambda: ScifConfig(ratio=0.05),
                                   lambda: ExactMioConfig(ratio=0.05), lambda: UnlearnConfig(ratio=0.0),
                                   lambda: ExactGrid(ratios=(5.0, 0.05)), lambda: ScifGrid(ratios=(0.05,))],
                         ids=["exact", "scif", "exact-mio", "zero", "exact-grid", "scif-grid"])
def test_ratio_that_unlearns_nobody_fails_when_the_config_is_built(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError, match=r"RATIOS? = .*0 users, so nobody would be unlearned.*at least 0.107"):
            build()


def test_a_small_ratio_on_a_large_dataset_only_warns():
    with pytest.warns(UserWarning, match="percentage"):
        assert UnlearnConfig(dataset="ml-1m", ratio=0.05).ratio == 0.05  # 3 of 6,040 users


def test_training_user_counts_match_the_data(need_local):
    from recunlearn.data import load_split
    from recunlearn.data.selection import select_unlearning_users

    need_local("ml-100k", "released_ratings", "released_train", "released_test")
    split = load_split("ml-100k", "released", 0, "split_test")
    users, items = split.train["user"].to_numpy(), split.train["item"].to_numpy()
    assert len(numpy.unique(users)) == cure4rec.TRAINING_USERS[("ml-100k", "released")]
    assert len(select_unlearning_users(users, items, split.n_users, "random", 0.107)) == 1
    assert len(select_unlearning_users(users, items, split.n_users, "random", 0.106)) == 0


# --- 4. sizes too small to run ----------------------------------------------------------------------

def test_casper_max_rows_too_small_for_the_dataset():
    with pytest.raises(ConfigError, match=r"MAX_ROWS = 100: the first 100 rows of foursquare .* smallest value "
                                          r"for foursquare is 212"):
        CasperConfig(max_rows=100)
    assert CasperConfig(dataset="wikipedia", max_rows=100).max_rows == 100
    with pytest.raises(ConfigError, match="reddit is 224"):
        CasperGrid(datasets=("wikipedia", "reddit"), max_rows=200)
    with pytest.raises(ConfigError, match="SIZES = 100"):
        ScalingConfig(dataset="reddit", sizes=(100, 1000))
    with pytest.raises(ConfigError, match="SCALING_SIZES = 10"):
        Figure8Grid(scaling_sizes=(10, 1000))
    with pytest.raises(ConfigError, match=">= 1"):
        CasperConfig(max_rows=0)


@pytest.mark.parametrize("dataset", CASPER_DATASETS)
def test_smallest_max_rows_is_the_first_prefix_with_data(dataset, need_local):
    need_local(dataset, "raw")
    smallest = SMALLEST_MAX_ROWS[dataset]
    assert load_stream(dataset, max_rows=smallest - 1).n_users == 0
    stream = load_stream(dataset, max_rows=smallest)
    assert stream.n_users == 1 and stream.is_test.any() and (~stream.is_test).any()


@pytest.mark.parametrize("fraction", [0.0, 1.0])
def test_active_fraction_must_leave_active_and_inactive_users(fraction):
    with pytest.raises(ConfigError, match="ACTIVE_FRACTION"):
        LearnConfig(active_fraction=fraction)


# --- 5. a CUDA device that is not there -------------------------------------------------------------

CUDA_MESSAGE = ("parameter DEVICE = 'cuda': no CUDA device is available (torch.cuda.is_available() is False); "
                "use 'cpu'")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_missing_cuda_device_is_a_config_error(no_gpu):
    with pytest.raises(ConfigError) as info:
        require_device("cuda")
    assert str(info.value) == CUDA_MESSAGE
    with pytest.raises(ConfigError, match="no CUDA device"):
        cure4rec._require_device("cuda")
    require_device("cpu")
    assert LearnConfig(device="cuda").device == "cuda"  # building (e.g. to read a GPU record) still works


def test_casper_runner_checks_the_device_before_loading_data(no_gpu, monkeypatch):
    from recunlearn.experiments import casper

    monkeypatch.setattr(casper, "load_stream", lambda *a, **k: pytest.fail("data loaded before the device check"))
    with pytest.raises(ConfigError, match="no CUDA device"):
        casper.run_casper(CasperConfig(device="cuda"))


# --- 7. the command line prints error lines ---------------------------------------------------------

def run_cli(capsys, *argv) -> tuple[int, str]:
    code = cli.main(list(argv))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_cli_missing_cuda_device_is_an_error_line_before_any_run(no_gpu, capsys, monkeypatch):
    monkeypatch.setattr(cli, "run_or_load", lambda *a, **k: pytest.fail("a run started"))
    code, err = run_cli(capsys, "run", "cure4rec-learn", "seed=[0,1]", "device=cuda")
    assert code == 2 and err.strip() == "error: " + CUDA_MESSAGE.replace("DEVICE", "device")  # the CLI's spelling


@pytest.mark.parametrize("argv, text", [
    (["run", "cure4rec-lern"], "unknown experiment 'cure4rec-lern'; known: ["),
    (["run", "cure4rec-learn", "dim=0"], "parameter dim = 0: must be >= 1"),  # the command line's spelling
    (["run", "cure4rec-learn", "model=[wmf, bpr]"], """write a list as JSON, quoted for the shell, e.g. model='["wmf"""),
    (["run", "cure4rec-learn", "DIM=4"], "names are lower case here: ['dim']"),
    (["run", "cure4rec-learn", "dim"], "expected key=value, got ['dim']"),
    (["run", "casper-rls", "max_rows=100"], "smallest value for foursquare is 212"),
    (["run", "cure4rec-exact", "ratio=0.05"], "nobody would be unlearned"),
    (["notebooks", "--profile", "smoke", "no-such-notebook"], "matches 0 notebooks"),
])
def test_cli_user_errors_are_error_lines(capsys, argv, text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, err = run_cli(capsys, *argv)
    assert code == 2 and err.startswith("error: ") and text in err


@pytest.mark.parametrize("content, text", [
    (None, "not found"),
    ('[{"experiment": "cure4rec-learn", "params": {}},]', "is not valid JSON: Expecting value at line 1"),
    ('{"experiment": "cure4rec-learn"}', "expected a list of"),
    ('[{"experiment": "cure4rec-learn"}]', "entry 0 must be"),
    ('[{"experiment": "cure4rec-learn", "params": {"dim": -1}}]', "parameter dim = -1"),
])
def test_cli_bad_grid_file_is_an_error_line(tmp_path, capsys, content, text):
    path = tmp_path / "grid.json"
    if content is not None:
        path.write_text(content)
    code, err = run_cli(capsys, "grid", str(path))
    assert code == 2 and err.startswith("error: ") and text in err


def test_cli_percentage_below_one_is_a_warning_line(capsys, monkeypatch):
    monkeypatch.setattr(cli, "run_or_load", lambda *a, **k: {"metrics": {}})
    code, err = run_cli(capsys, "run", "cure4rec-exact", "ratio=0.5")
    assert code == 0
    assert err.strip() == "warning: parameter RATIO = 0.5 is a percentage: 0.5 means 0.5 %, not 50 % (for 50 %, write 50)"


def test_cli_missing_or_corrupt_dataset_is_an_error_line(data_env, capsys, monkeypatch):
    data, _ = data_env
    monkeypatch.setattr(cli, "require_device", lambda device: None)
    code, err = run_cli(capsys, "run", "cure4rec-learn", "max_epochs=1")
    assert code == 2 and err.startswith("error: ml-100k file") and "not found" in err
    copy_into(data, shipped_gz("ml-1m", "released_ratings"), "ml-1m", truncate_half)
    code, err = run_cli(capsys, "run", "cure4rec-learn", "dataset=ml-1m", "max_epochs=1")
    assert code == 2 and err.startswith("error: checksum mismatch for ") and "ratings.csv.gz" in err


def test_cli_error_in_a_fresh_process_has_no_traceback():
    result = subprocess.run([sys.executable, "-m", "recunlearn", "run", "casper-rls", "max_rows=100"],
                            capture_output=True, text=True, cwd=paths.REPO_ROOT, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("error: parameter max_rows = 100") and "Traceback" not in result.stderr


def test_a_ratio_that_unlearns_nobody_on_data_of_unknown_size_fails_once_the_users_are_counted(need_local, monkeypatch):
    """Where the user count is not known beforehand (ADM's raw file), the run counts the users of its
    split and stops before training, naming RATIO, instead of unlearning nobody."""
    from recunlearn.experiments import cure4rec
    from recunlearn.experiments.cure4rec_exact import unlearning_set

    need_local("ml-100k", "released_ratings", "released_train", "released_test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.delitem(cure4rec.TRAINING_USERS, ("ml-100k", "released"))
        config = UnlearnConfig(ratio=0.05)  # built while the count is unknown: no check yet
    with pytest.raises(ConfigError, match=r"RATIO = 0.05: .* of the 943 users of ml-100k is .*0 users"):
        unlearning_set(config)
