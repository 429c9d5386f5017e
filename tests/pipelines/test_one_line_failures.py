"""`publish` without a network and the report check without Chromium fail with one line naming
the cause and the fix (they ended in 72-line and 20-line tracebacks)."""

import time

from trajforge.pipelines.cli import main
from trajforge.pipelines.finished import report_check


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_publish_without_a_network_is_one_line(built_run, monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token_0000")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")
    started = time.monotonic()
    assert main(["publish", str(built_run), "--repo-id", "org/name"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "cannot reach the Hugging Face Hub" in line and "check the network" in line
    assert "hf_not_a_real_token" not in line
    assert time.monotonic() - started < 60


def test_report_check_without_chromium_is_one_line(built_run, monkeypatch, capsys):
    monkeypatch.setattr(report_check, "browser", lambda: None)
    assert report_check.main([str(built_run / "report.html")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "no Chromium found" in line and "apt-get install chromium" in line


def test_report_check_of_a_missing_file_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(report_check, "browser", lambda: "/usr/bin/chromium")
    assert report_check.main([str(tmp_path / "nope.html")]) == 2
    assert "is not a file" in one_line(capsys.readouterr().err)
