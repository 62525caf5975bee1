"""A page's missing paper datasets name the compute plan's command and CPU-hours for that page."""

from recunlearn.report.glance import NOT_RUN_REASON, PAGE_ENV, not_run_reason, pending_text


def test_without_a_page_the_reason_is_the_fixed_sentence(monkeypatch):
    monkeypatch.delenv(PAGE_ENV, raising=False)
    assert not_run_reason() == NOT_RUN_REASON


def test_a_page_of_the_plan_gets_its_command(monkeypatch):
    monkeypatch.setenv(PAGE_ENV, "cure4rec/table-02-eu-utility")
    reason = not_run_reason()
    assert "CPU-hours left" in reason and "python -m recunlearn compute --only" in reason
    assert "cure4rec-ml1m-table-2" in reason
    text = pending_text({"DATASETS": ["ml-100k"]}, None)
    assert text == "nothing"  # a grid that is not CURE4Rec's lists only its own datasets


def test_a_page_outside_the_plan_keeps_the_fixed_sentence(monkeypatch):
    monkeypatch.setenv(PAGE_ENV, "cure4rec/no-such-page")
    assert not_run_reason() == NOT_RUN_REASON


def test_runs_without_a_record_name_the_plans_command(monkeypatch):
    import pandas as pd

    monkeypatch.setenv(PAGE_ENV, "casper/figure-02-random-loo")
    runs = pd.DataFrame({"status": ["computed", "waiting for CPU time", "waiting for CPU time"]})
    text = pending_text(None, runs)
    assert text.startswith("2 of 3 runs waiting for CPU time; the compute plan has them: ")
    assert "python -m recunlearn compute --only casper-" in text
    monkeypatch.delenv(PAGE_ENV)
    assert pending_text(None, runs) == "2 of 3 runs waiting for CPU time"
