"""Records bound to the code that made them: strict JSON, fingerprints, where records go, refusals."""

from __future__ import annotations

import ast
import json
import re

import pytest

from recunlearn import paths, provenance
from recunlearn.experiments import records
from recunlearn.experiments.audit import audit_records, audit_summary, stale_or_dirty_grid
from recunlearn.experiments.cure4rec import LearnConfig
from recunlearn.experiments.records import RUNNERS, cpu_model, load_record, record_key, run_or_load
from recunlearn.io import loads_strict, read_json_strict, write_json_atomic
from recunlearn.report.notebooks import summarize_ledger


@pytest.fixture
def fake_runner(monkeypatch):
    calls = []

    def runner(config):
        calls.append(config)
        return {"metrics": {"ndcg": 0.5, "shard_gf": float("nan")}, "timings": {"wall_seconds": 1.0}, "training": {},
                "device": config.device}

    monkeypatch.setitem(RUNNERS, LearnConfig.experiment, (LearnConfig, runner))
    monkeypatch.setattr(records, "git_commit", lambda: "c" * 40)
    return calls


def test_undefined_values_are_written_as_null_and_nan_text_is_rejected(tmp_path):
    import numpy as np

    write_json_atomic(tmp_path / "r.json", {"a": float("nan"), "b": [np.float64("inf"), 1.5], "c": np.float32(2)})
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert read_json_strict(tmp_path / "r.json") == {"a": None, "b": [None, 1.5], "c": 2.0}
    with pytest.raises(ValueError, match="NaN is not strict JSON"):
        loads_strict('{"x": NaN}')


def test_a_record_names_commit_fingerprint_and_threads(tmp_path, fake_runner):
    record = run_or_load(LearnConfig(), tmp_path)
    assert record["git_commit"] == "c" * 40
    assert re.fullmatch(r"[0-9a-f]{16}", record["source_fingerprint"])
    assert record["environment"]["torch_threads"] == 1
    assert record["environment"]["cpu"] == cpu_model()
    assert cpu_model() is None or cpu_model().strip() == cpu_model() != ""
    assert record["metrics"]["shard_gf"] is None


def test_fingerprint_covers_computing_code_but_not_presentation(tmp_path, monkeypatch):
    (tmp_path / "report").mkdir()
    (tmp_path / "model.py").write_text("x = 1\n")
    (tmp_path / "report" / "page.py").write_text("y = 1\n")
    monkeypatch.setattr(provenance, "LIBRARY", tmp_path)

    def fingerprint():
        provenance.source_fingerprint.cache_clear()
        return provenance.source_fingerprint()

    try:
        before = fingerprint()
        (tmp_path / "report" / "page.py").write_text("y = 2\n")
        assert fingerprint() == before
        (tmp_path / "model.py").write_text("x = 2\n")
        assert fingerprint() != before
    finally:
        provenance.source_fingerprint.cache_clear()


def _fake_library(root):
    """A library ``recunlearn`` under ``root``: module ``pkg.a`` imports ``pkg.b`` (at the top),
    submodule ``pkg.b2`` (``from . import``) and ``c`` (inside a function); ``pkg``'s ``__init__``
    gathers a name from ``pkg.heavy``, which ``pkg.a`` never uses; ``d`` and ``report.r`` are apart."""
    library = root / "recunlearn"
    files = {"__init__.py": "", "c.py": "G = 1\n", "d.py": "D = 1\n", "report/__init__.py": "", "report/r.py": "",
             "pkg/__init__.py": "from .heavy import H\n", "pkg/heavy.py": "H = 1\n", "pkg/b.py": "F = 1\n",
             "pkg/b2.py": "", "pkg/a.py": "from .b import F\nfrom . import b2\n\n\ndef g():\n    from ..c import G\n"}
    for name, text in files.items():
        (library / name).parent.mkdir(parents=True, exist_ok=True)
        (library / name).write_text(text)
    return library


def test_a_module_s_fingerprint_covers_what_it_imports_and_nothing_else(tmp_path, monkeypatch):
    library = _fake_library(tmp_path)
    monkeypatch.setattr(provenance, "LIBRARY", library)

    def fingerprint(module=None):
        provenance.source_fingerprint.cache_clear()
        provenance.imported_files.cache_clear()
        return provenance.source_fingerprint(module)

    try:
        fingerprint()
        assert {p.relative_to(library).as_posix() for p in provenance.imported_files("recunlearn.pkg.a")} == {
            "__init__.py", "pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/b2.py", "c.py"}
        before, whole = fingerprint("recunlearn.pkg.a"), fingerprint()
        for other in ("d.py", "pkg/heavy.py", "report/r.py"):  # code pkg.a never runs
            (library / other).write_text("changed = True\n")
            assert fingerprint("recunlearn.pkg.a") == before
        assert fingerprint() != whole  # the library's fingerprint (records) still sees every computing file
        (library / "c.py").write_text("G = 2\n")  # imported inside a function
        assert fingerprint("recunlearn.pkg.a") != before
        with pytest.raises(ValueError, match="no library module 'recunlearn.nothing'"):
            fingerprint("recunlearn.nothing")
    finally:
        provenance.source_fingerprint.cache_clear()
        provenance.imported_files.cache_clear()


def test_each_paper_s_trainings_are_named_by_its_own_code():
    """A stored CASPER model does not depend on the SRU or CURE4Rec code, nor an SRU model on CASPER's."""
    def files(module):
        return {p.relative_to(provenance.LIBRARY).as_posix() for p in provenance.imported_files(module)}

    casper, sru = files("recunlearn.experiments.casper"), files("recunlearn.experiments.sru")
    assert {"experiments/casper.py", "models/sequential/jodie.py", "models/resume.py", "perturb/tracin.py"} <= casper
    assert not any(f.startswith(("models/session/", "unlearning/")) or f in ("models/trainer.py", "experiments/sru.py")
                   for f in casper)
    assert {"experiments/sru.py", "models/session/training.py", "unlearning/sru.py", "models/resume.py"} <= sru
    assert not any(f.startswith(("models/sequential/", "perturb/")) or f == "experiments/casper.py" for f in sru)


def test_importing_a_computing_module_only_binds_its_own_names():
    """What :func:`provenance.imported_files` assumes when it leaves out what a package's ``__init__``
    imports: importing a module changes nothing another module computes. Its top-level statements are
    imports, definitions and assignments to plain names: no bare call, no assignment to an attribute or
    an item of another object. The one decorator that writes elsewhere, ``records.register``, adds each
    experiment's runner under a name no other module registers."""
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.Expr)
    registered = 0
    for path in sorted(provenance.LIBRARY.rglob("*.py")):
        relative = path.relative_to(provenance.LIBRARY)
        if relative.parts[0] in provenance.PRESENTATION:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            where = f"{relative}:{node.lineno}"
            assert isinstance(node, allowed), f"{where} runs a {type(node).__name__} statement at import"
            if isinstance(node, ast.Expr):
                assert isinstance(node.value, ast.Constant), f"{where} runs an expression at import"
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for target in targets:
                assert all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store)) for n in ast.walk(target)), \
                    f"{where} assigns to something other than a name of its own"
            decorators = getattr(node, "decorator_list", [])
            registered += sum(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "register" for d in decorators)
    library_runners = [fn for _, fn in RUNNERS.values() if fn.__module__.startswith(provenance.LIBRARY.name + ".")]
    assert registered == len(library_runners)  # no name registered twice (a second would replace the first)


def test_without_a_records_directory_computed_records_go_to_scratch_not_the_book(tmp_path, fake_runner,
                                                                                  monkeypatch):
    monkeypatch.delenv(paths.RECORDS_ENV, raising=False)
    monkeypatch.setattr(paths, "committed_records_dir", lambda: tmp_path / "book-records")
    monkeypatch.setattr(records, "_scratch", None)
    config = LearnConfig(seed=4)
    run_or_load(config)
    assert not (tmp_path / "book-records").exists()
    scratch = records._scratch
    assert (scratch / config.experiment / f"{record_key(config)}.json").is_file()
    assert load_record(config)["metrics"]["ndcg"] == 0.5  # found again in this process
    assert len(fake_runner) == 1


def test_writing_into_the_committed_records_from_uncommitted_code_is_refused(tmp_path, fake_runner, monkeypatch):
    monkeypatch.setattr(paths, "committed_records_dir", lambda: tmp_path)
    monkeypatch.setattr(provenance, "uncommitted", lambda paths_=("lib",): ["lib/recunlearn/models/mf.py"])
    with pytest.raises(provenance.ProvenanceError, match=r"uncommitted changes in lib/recunlearn/models/mf.py"):
        run_or_load(LearnConfig(), tmp_path)
    assert fake_runner == [] and not any(tmp_path.iterdir())
    monkeypatch.setattr(provenance, "uncommitted", lambda paths_=("lib",): [])
    run_or_load(LearnConfig(), tmp_path)
    assert len(fake_runner) == 1


def test_ledger_notes_what_stands_behind_a_page(tmp_path, fake_runner, monkeypatch):
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(records.LEDGER_ENV, str(ledger))
    run_or_load(LearnConfig(seed=0), tmp_path / "r")            # computed
    run_or_load(LearnConfig(seed=0), tmp_path / "r")            # loaded (same key)
    assert load_record(LearnConfig(seed=1), tmp_path / "r") is None  # pending
    summary = summarize_ledger([json.loads(line) for line in ledger.read_text().splitlines()])
    assert (summary["records"], summary["pending"]) == (1, 1)
    assert summary["devices"] == ["cpu"] and summary["commits"] == {"c" * 40: 1}


def test_audit_flags_dirty_stale_and_non_strict_records(tmp_path, fake_runner, monkeypatch):
    run_or_load(LearnConfig(seed=0), tmp_path)
    monkeypatch.setattr(records, "git_commit", lambda: "d" * 40 + "-dirty")
    run_or_load(LearnConfig(seed=1), tmp_path)
    folder = tmp_path / LearnConfig.experiment
    nan_file = folder / f"{record_key(LearnConfig(seed=2))}.json"
    nan_file.write_text(json.dumps({"experiment": LearnConfig.experiment, "config": LearnConfig(seed=2).to_dict(),
                                    "git_commit": "e" * 40, "metrics": {"x": float("nan")}}))
    audit = audit_records(tmp_path)
    assert len(audit) == 3
    assert audit["clean"].sum() == 2 and audit["strict"].sum() == 2 and audit["current"].all()
    monkeypatch.setattr(LearnConfig, "results_version", "changed")
    audit = audit_records(tmp_path)
    assert not audit["current"].any()
    summary = audit_summary(audit).set_index("experiment").loc[LearnConfig.experiment]
    assert (summary["records"], summary["stale"], summary["dirty"], summary["not_strict"]) == (3, 3, 1, 1)
    grid = stale_or_dirty_grid(audit, tmp_path)
    assert len(grid) == 3 and all(value == [value[0]] for spec in grid for value in spec["params"].values())


def test_recompute_unclean_replaces_only_records_from_uncommitted_code(tmp_path, fake_runner, monkeypatch):
    monkeypatch.setattr(records, "git_commit", lambda: "d" * 40 + "-dirty")
    run_or_load(LearnConfig(seed=0), tmp_path)
    monkeypatch.setattr(records, "git_commit", lambda: "c" * 40)
    run_or_load(LearnConfig(seed=1), tmp_path)
    assert len(fake_runner) == 2
    again = [run_or_load(LearnConfig(seed=s), tmp_path, recompute="unclean") for s in (0, 1)]
    assert len(fake_runner) == 3 and fake_runner[-1].seed == 0
    assert all(r["git_commit"] == "c" * 40 for r in again)
    with pytest.raises(ValueError, match="recompute must be"):
        run_or_load(LearnConfig(), tmp_path, recompute="sometimes")


def test_learn_grid_without_compute_missing_lists_runs_without_a_record_as_pending(tmp_path, fake_runner):
    from recunlearn.experiments.cure4rec import LearnGrid, run_learn_grid

    grid = LearnGrid(models=("wmf", "bpr"), seeds=(0,), compute_missing=False)
    run_or_load(LearnConfig(model="wmf", seed=0), tmp_path)
    fake_runner.clear()
    runs = run_learn_grid(grid, tmp_path)
    assert fake_runner == []  # nothing computed
    assert runs["model"].tolist() == ["wmf"]
    assert [p["model"] for p in runs.attrs["pending"]] == ["bpr"]


def test_an_uncommitted_new_file_makes_the_tree_unclean(tmp_path, monkeypatch):
    import subprocess

    repo = tmp_path / "repo"
    (repo / "lib").mkdir(parents=True)
    (repo / "lib" / "a.py").write_text("x = 1\n")
    for args in (["init", "-q"], ["add", "."], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    monkeypatch.setattr(paths, "REPO_ROOT", repo)
    assert provenance.uncommitted(("lib",)) == []
    assert not provenance.git_commit().endswith("-dirty")
    (repo / "lib" / "new_module.py").write_text("y = 2\n")
    assert provenance.uncommitted(("lib",)) == ["lib/new_module.py"]
    assert provenance.git_commit().endswith("-dirty")


def _head() -> str | None:
    result = provenance._git("rev-parse", "HEAD")
    return result.stdout.strip() if result is not None and result.returncode == 0 else None


def test_a_commits_fingerprint_read_from_git_equals_the_fingerprint_of_its_files_on_disk(tmp_path, monkeypatch):
    """``commit_fingerprints`` (git's tree and blobs) against ``source_fingerprint`` computed over the same
    commit's files written out by ``git archive`` (the library's own walk of a folder)."""
    import io
    import subprocess
    import tarfile

    from recunlearn.experiments.audit import commit_fingerprints

    head = _head()
    if head is None:
        pytest.skip("not a git checkout")
    archive = subprocess.run(["git", "archive", head, "lib/recunlearn"], cwd=paths.REPO_ROOT, capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp_path, filter="data")
    monkeypatch.setattr(provenance, "LIBRARY", tmp_path / "lib" / "recunlearn")
    on_disk = provenance.source_fingerprint.__wrapped__()
    assert commit_fingerprints([head]) == {head: on_disk}
    assert commit_fingerprints(["f" * 40]) == {"f" * 40: None}  # a commit this clone does not have


def test_audit_flags_a_record_whose_commit_does_not_hold_the_code_that_made_it(tmp_path, fake_runner, monkeypatch):
    """A record stamped with a commit whose files are other code (the checkout moved while it ran), or
    with no fingerprint, needs recomputing; an unknown commit cannot be checked."""
    from recunlearn.experiments.audit import commit_fingerprints, needs_recompute

    head = _head()
    if head is None:
        pytest.skip("not a git checkout")
    fingerprint = commit_fingerprints([head])[head]
    monkeypatch.setattr(records, "git_commit", lambda: head)
    monkeypatch.setattr(records, "source_fingerprint", lambda: fingerprint)
    run_or_load(LearnConfig(seed=0), tmp_path)                    # its commit's code
    monkeypatch.setattr(records, "source_fingerprint", lambda: "0" * 16)
    run_or_load(LearnConfig(seed=1), tmp_path)                    # another code under HEAD's name
    monkeypatch.setattr(records, "git_commit", lambda: "f" * 40)
    run_or_load(LearnConfig(seed=2), tmp_path)                    # a commit this clone lacks: unchecked
    folder = tmp_path / LearnConfig.experiment
    without = read_json_strict(folder / f"{record_key(LearnConfig(seed=0))}.json")
    without.pop("source_fingerprint")
    without["config"]["seed"] = 3
    write_json_atomic(folder / f"{record_key(LearnConfig(seed=3))}.json", without)
    audit = audit_records(tmp_path).set_index("file")
    code = {int(read_json_strict(tmp_path / f)["config"]["seed"]): value for f, value in audit["commit_code"].items()}
    assert code == {0: True, 1: False, 2: None, 3: False}
    assert sorted(read_json_strict(tmp_path / f)["config"]["seed"] for f in needs_recompute(audit.reset_index())["file"]) \
        == [1, 3]
    assert audit_summary(audit.reset_index()).iloc[0]["not_its_commit"] == 2


def test_the_compute_command_removes_a_record_made_after_the_checkout_moved(tmp_path, fake_runner, monkeypatch):
    """A worker notes the commit it started from before any run; a record that names another one (the
    checkout moved while the worker ran) is removed as soon as it is written, and the run fails."""
    from recunlearn.compute import executors

    monkeypatch.setattr(executors, "_STARTED_AT", "a" * 40)
    monkeypatch.setattr(records, "git_commit", lambda: "a" * 40)
    assert executors.compute_run(LearnConfig(seed=0), tmp_path)[0] == "computed"
    monkeypatch.setattr(records, "git_commit", lambda: "b" * 40)  # the worktree was checked out elsewhere
    status, _, error, _ = executors.compute_run(LearnConfig(seed=1), tmp_path)
    assert status == "failed" and "started from commit aaaaaaaaaaaa" in error
    folder = tmp_path / LearnConfig.experiment
    assert (folder / f"{record_key(LearnConfig(seed=0))}.json").exists()
    assert not (folder / f"{record_key(LearnConfig(seed=1))}.json").exists()


def test_a_checkout_whose_fingerprint_differs_from_its_commits_is_caught_before_computing(tmp_path, monkeypatch):
    """What an ignored .py file under lib/ (a notebook checkpoint) does: it changes the fingerprint a
    record carries but not the commit's, so the checkout no longer matches its commit (the audit would
    flag every record made there). The checkout's fingerprint is set here rather than by writing a file
    into the library other processes read."""
    from recunlearn.experiments import audit

    if _head() is None:
        pytest.skip("not a git checkout")
    monkeypatch.setattr(audit, "git_commit", lambda: _head())
    expected = audit.commit_fingerprints([_head()])[_head()]
    monkeypatch.setattr(audit, "source_fingerprint", lambda: expected)
    assert audit.checkout_matches_its_commit() is True
    monkeypatch.setattr(audit, "source_fingerprint", lambda: "0" * 16)
    assert audit.checkout_matches_its_commit() is False
    monkeypatch.setattr(audit, "_git_bytes", lambda *a, **k: b"zzz missing\n" if a[0] == "cat-file" else
                        provenance._git(*a).stdout.encode())
    assert audit.commit_fingerprints([_head()]) == {_head(): None}  # git without the file contents: unchecked
