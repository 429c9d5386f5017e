"""`trajforge show` and the HTML report (opened in headless Chromium when it is installed)."""

import re

import pytest

from trajforge.pipelines.cli import main
from trajforge.pipelines.finished import report_check


def test_show_renders_roles_calls_diffs_and_outcome(built_run, capsys):
    assert main(["show", str(built_run), "--split", "train", "--n", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("== ") == 2 and "[train]" in out
    for label in ("system |", "user |", "assistant |", "tool |", "outcome |"):
        assert label in out
    assert re.search(r"-> call \w+\(\{", out)  # tool calls with their arguments
    assert "-> state " in out  # a write's state diff
    assert "passed:" in out


def test_show_rejected_by_reason(empty_run, capsys):
    assert main(["show", str(empty_run), "--rejected", "--n", "1"]) == 0
    out = capsys.readouterr().out
    assert "rejected at" in out and "reason:" in out
    assert main(["show", str(empty_run), "--rejected", "exact_duplicate"]) == 0
    assert "no rejected trajectories with reason 'exact_duplicate'" in capsys.readouterr().out
    assert main(["show", str(empty_run.parent)]) == 2  # not a run


def test_report_is_self_contained_with_every_section(built_run, capsys):
    assert main(["report", str(built_run)]) == 0
    html = (built_run / "report.html").read_text()
    for title in (
        "Rejection waterfall",
        "Turns and tool calls",
        "Tool usage",
        "Judge scores",
        "Coverage",
        "Diversity",
        "Tokens and cost",
        "Kept samples",
        "Rejected samples",
    ):
        assert f"<h2>{title}" in html
    assert html.count("<svg") >= 6
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", html)  # nothing fetched at view time
    assert "judge: task_success" in html  # the judge ran in this build


def test_empty_build_has_a_report(empty_run):
    html = (empty_run / "report.html").read_text()
    assert "Rejected samples" in html and "<details>" in html


@pytest.mark.slow  # a whole build or long run: the tier CI also runs
@pytest.mark.skipif(report_check.browser() is None, reason="Chromium not installed")
def test_report_opens_in_headless_chromium(built_run):
    result = report_check.check_report(str(built_run / "report.html"))
    assert result.console_messages == ()
    assert result.ink_fraction > 0.01 and result.colours > 16, result
