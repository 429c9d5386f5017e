"""`read_status`: whether a run's build ended, from its manifest.json, for `show` and `report`
on a failed build. Only the status is read, so a failed run of another trajforge version still
counts as ended; a manifest that cannot be read means the build did not end."""

from __future__ import annotations

import re

import pytest

from trajforge.pipelines.cli import UsageError, _finished
from trajforge.pipelines.manifest import read_status

NOT_FINISHED = re.escape(
    "is not a finished run (no _SUCCESS): its build was interrupted or is still running; finish it "
    "with `trajforge build ... --resume`"
)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        (None, None),  # no manifest yet
        (b'{"half": ', None),  # a writer killed mid-file
        (b"\xff\xfe not utf-8", None),
        (b"[1, 2]", None),  # JSON, but not an object
        (b'{"status": "running"}', None),  # no status this version knows
        (b'{"name": "x"}', None),
        (b'{"status": "failed", "from_a_later_version": {"any": 1}}', "failed"),
        (b'{"status": "succeeded"}', "succeeded"),
    ],
)
def test_the_status_or_none_when_it_cannot_be_read(tmp_path, text, status):
    if text is not None:
        (tmp_path / "manifest.json").write_bytes(text)
    assert read_status(str(tmp_path)) == status


def test_a_failed_run_of_another_version_is_finished_for_show(tmp_path):
    (tmp_path / "manifest.json").write_text('{"status": "failed", "outputs": "older shape"}')
    assert _finished(str(tmp_path)) == str(tmp_path)
    with pytest.raises(UsageError, match=NOT_FINISHED):  # eval and finetune want `_SUCCESS`
        _finished(str(tmp_path), failed_ok=False)


@pytest.mark.parametrize("text", ['{"half": ', '{"status": "succeeded"}'])
def test_a_half_written_or_unmarked_manifest_is_not_finished(tmp_path, text):
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(UsageError, match=NOT_FINISHED):
        _finished(str(tmp_path))
