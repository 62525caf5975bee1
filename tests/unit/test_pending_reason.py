"""A page's pending line: its missing paper datasets and runs without a record, then the compute plan's
CPU-hours and command for that page."""

import dataclasses

import pandas as pd
import pytest

from recunlearn import paths
from recunlearn.report import glance
from recunlearn.report.glance import NOT_RUN_REASON, PAGE_ENV, pending_text


@pytest.fixture
def no_records(monkeypatch, tmp_path):
    """The plan read against an empty records folder: every run pending, whatever is committed."""
    monkeypatch.setattr(paths, "committed_records_dir", lambda: tmp_path)
    glance._plan_status.cache_clear()
    yield
    glance._plan_status.cache_clear()


@dataclasses.dataclass
class ThreeDatasetGrid:
    """A page's grid over one of the paper's three datasets."""

    PAPER_DATASETS = ("ml-100k", "ml-1m", "adm")
    datasets: tuple = ("ml-100k",)


def test_without_a_page_a_missing_dataset_gets_the_fixed_sentence(monkeypatch):
    monkeypatch.delenv(PAGE_ENV, raising=False)
    assert pending_text(ThreeDatasetGrid(), None) == f"ML-1M and ADM: {NOT_RUN_REASON}"


def test_a_page_of_the_plan_gets_its_command(monkeypatch, no_records):
    monkeypatch.setenv(PAGE_ENV, "cure4rec/table-02-eu-utility")
    text = pending_text(ThreeDatasetGrid(), None)
    assert text.startswith("ML-1M and ADM: not run yet; the compute plan has them: ~")
    assert "CPU-hours left" in text and "runs done" not in text
    assert text.endswith("python -m recunlearn compute --only cure4rec-ml100k-table-2 cure4rec-ml1m-table-2 "
                         "cure4rec-adm-table-2")
    assert pending_text({"DATASETS": ["ml-100k"]}, None) == "nothing"  # not CURE4Rec's: only its own datasets


def test_a_page_outside_the_plan_keeps_the_fixed_sentence(monkeypatch):
    monkeypatch.setenv(PAGE_ENV, "cure4rec/no-such-page")
    assert pending_text(ThreeDatasetGrid(), None) == f"ML-1M and ADM: {NOT_RUN_REASON}"


def test_runs_without_a_record_name_the_plans_command(monkeypatch, no_records):
    monkeypatch.setenv(PAGE_ENV, "casper/figure-02-random-loo")
    runs = pd.DataFrame({"status": ["computed", "waiting for CPU time", "waiting for CPU time"]})
    text = pending_text(None, runs)
    assert text.startswith("2 of 3 runs waiting for CPU time; the compute plan has them: ~")
    assert "runs done" not in text  # one count of runs: the page's own (the plan's runs of a page can differ)
    assert text.endswith("python -m recunlearn compute --only casper-figure-2")
    monkeypatch.delenv(PAGE_ENV)
    assert pending_text(None, runs) == "2 of 3 runs waiting for CPU time"


def test_every_chapters_notice_of_runs_is_the_same_notice():
    """CASPER's runs say what is pending in a status column, CURE4Rec's and SRU's in a pending frame, the
    bystanders' in config dicts: the three readings give one notice."""
    from recunlearn.report.pages import pending_runs_notice, status_notice
    from recunlearn.report.pages.bystanders_runs import WHY, pending_configs_notice

    status = pd.DataFrame({"model": ["wmf", "bpr", "bpr"], "status": ["computed", WHY, WHY]})
    pending = status[status["status"] == WHY].rename(columns={"status": "reason"})
    computed = status[status["status"] == "computed"].copy()
    computed.attrs["pending"] = pending.drop(columns="reason").to_dict("records")
    notices = [status_notice("The table", status, "cmd"), pending_runs_notice("The table", 3, pending, "cmd"),
               pending_configs_notice("The table", computed, 3, "cmd")]
    assert notices[0] == notices[1] == notices[2]
    assert notices[0].why == f"2 of 3 runs {WHY} (BPR)" and notices[0].partial
    assert status_notice("The table", status.assign(status="computed")) is None
    assert pending_runs_notice("The table", 0, None).why == "no run in this page's parameters"
