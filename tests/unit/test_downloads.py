"""Downloads: the runs CSV written beside a paper render, and the commit list of the status page."""

import json

import pandas as pd

from recunlearn.report.downloads import downloads_markdown, runs_table
from recunlearn.report.status import _commit_text, commit_label, commit_rows


def test_runs_table_flattens_records_and_keeps_pending_runs(tmp_path):
    folder = tmp_path / "cure4rec-learn"
    folder.mkdir()
    record = {"experiment": "cure4rec-learn", "key": "abc", "git_commit": "f" * 40, "source_fingerprint": "1234",
              "created": "2026-12-01T00:00:00+00:00", "device": "cpu", "seed": 2,
              "config": {"model": "wmf", "dataset": "ml-100k"}, "metrics": {"ndcg": 0.5, "curve": [1, 2], "gf": None},
              "timings": {"train_seconds": 3.0}}
    (folder / "abc.json").write_text(json.dumps(record))
    lines = [{"experiment": "cure4rec-learn", "key": "abc", "status": "pending"},
             {"experiment": "cure4rec-learn", "key": "abc", "status": "loaded"},  # the last status wins
             {"experiment": "cure4rec-learn", "key": "zzz", "status": "pending"}]
    table = runs_table(lines, tmp_path)
    assert table["status"].tolist() == ["loaded", "pending"]
    row = table.iloc[0]
    assert row["config.model"] == "wmf" and row["metrics.ndcg"] == 0.5 and row["timings.train_seconds"] == 3.0
    assert pd.isna(row["metrics.gf"]) and "metrics.curve" not in table  # lists stay in the JSON record
    assert row["git_commit"] == "f" * 40 and pd.isna(table.iloc[1]["record"])


def test_runs_table_of_a_page_without_runs_has_its_header():
    assert list(runs_table([])) == ["experiment", "key", "status", "record"]


def test_downloads_cell_links_the_runs_and_the_paper_tables(tmp_path):
    text = downloads_markdown(tmp_path / "cure4rec" / "table-02-eu-utility.ipynb", ["cure4rec-table-02"])
    assert "<../_results/pages/cure4rec/table-02-eu-utility.runs.csv>" in text
    assert "<../../notebooks/paper/cure4rec-table-02.csv>" in text
    statistics = downloads_markdown(tmp_path / "casper" / "table-02-dataset-statistics.ipynb", [])
    assert "runs.csv" not in statistics and "Nothing to download" in statistics


def test_commits_link_to_their_entry_when_listed():
    sha = "0123456789abcdef" * 2 + "01234567"
    assert _commit_text({sha: 3}, None, {sha}) == f"{{ref}}`0123456789ab <{commit_label(sha)}>`"
    assert _commit_text({sha: 3}, None, set()) == "`0123456789ab`"


def test_commit_rows_count_records_per_experiment():
    audit = pd.DataFrame({"git_commit": ["a" * 40, "a" * 40, None], "experiment": ["x", "y", "x"]})
    rows = {row["commit"]: row for row in commit_rows(audit)}
    assert rows["a" * 40]["records"] == 2 and rows["a" * 40]["by_experiment"] == "x 1, y 1"
    assert rows["a" * 40]["subject"] == "(not in this clone)" and rows["unknown"]["records"] == 1
