"""The shard GroupByKey carries references; the packed rows wait in spill files on the run
directory (issue 30, `pipelines/spill.py`): written whole or not at all, a retry replaces the
same file, only the run's own files are cleared, a lost file is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajforge.pipelines import ownership, packed_rows, spill
from trajforge.pipelines.transforms import outputs

FOLDER = spill.folder_of(".trajforge-partial")


def blobs(n: int, tag: str = "x") -> list[tuple[int, bytes]]:
    return [packed_rows.pack([{"id": f"r:{i}", "text": tag * (50 + i)}]) for i in range(n)]


def spill_files(run: Path) -> list[Path]:
    return sorted(p for p in (run / FOLDER).rglob("*") if p.is_file())


def test_references_read_back_each_blob(tmp_path):
    run = str(tmp_path)
    given = blobs(3)
    refs = spill.write(run, FOLDER, "rec1", given)
    assert [spill.read(run, FOLDER, ref) for ref in refs] == given
    assert spill.read_rows(run, FOLDER, refs[2]) == packed_rows.unpack(given[2])
    assert [p.name for p in spill_files(tmp_path)] == [Path(spill.file_rel(FOLDER, "rec1")).name]


def test_the_file_name_is_the_record_ids_alone():
    """A retried bundle names the same file (no orphan); any id gives a plain file name."""
    assert spill.file_rel(FOLDER, "abc") == spill.file_rel(FOLDER, "abc")
    assert spill.file_rel(FOLDER, "abc") != spill.file_rel(FOLDER, "abd")
    odd = spill.file_rel(FOLDER, "../a/b:c")
    assert odd.startswith(FOLDER + "/") and "/" not in odd[len(FOLDER) + 1 :]


def test_a_retry_overwrites_the_same_file(tmp_path):
    run = str(tmp_path)
    spill.write(run, FOLDER, "rec1", blobs(2, "a"))
    refs = spill.write(run, FOLDER, "rec1", blobs(2, "b"))  # the bundle, run again
    assert len(spill_files(tmp_path)) == 1
    assert spill.read_rows(run, FOLDER, refs[1])[0]["text"].startswith("b")


def test_a_failed_write_leaves_no_file_under_the_final_name(tmp_path, monkeypatch):
    """Atomic: written under a temporary name (recorded) and renamed only when whole."""
    run = str(tmp_path)

    class Broken:
        def __init__(self, real):
            self.real, self.calls = real, 0

        def write(self, data):
            self.calls += 1
            if self.calls == 2:
                raise OSError(28, "No space left on device")
            return self.real.write(data)

        def __enter__(self):
            self.real.__enter__()
            return self

        def __exit__(self, *exc):
            return self.real.__exit__(*exc)

    real_create = ownership.files.create
    monkeypatch.setattr(ownership.files, "create", lambda path: Broken(real_create(path)))
    with pytest.raises(spill.SpillError, match=r"rec1 .*No space left.*--resume"):
        spill.write(run, FOLDER, "rec1", blobs(3))
    assert spill_files(tmp_path) == []  # neither the final name nor a temporary one
    assert spill.file_rel(FOLDER, "rec1") in ownership.recorded(run)  # recorded before


def test_clear_deletes_only_what_the_run_wrote(tmp_path):
    run = str(tmp_path)
    ownership.start(run, "h")
    spill.write(run, FOLDER, "rec1", blobs(2))
    spill.write(run, FOLDER, "rec2", blobs(1))
    theirs = tmp_path / FOLDER / "notes.txt"  # a user's file in the folder: not ours
    theirs.write_text("keep me")
    beside = tmp_path / ".trajforge-partial" / "data" / "train-00000-of-00001.parquet"
    ownership.write_bytes(run, ".trajforge-partial/data/train-00000-of-00001.parquet", b"x")
    assert spill.clear(run, FOLDER) >= 2
    assert spill_files(tmp_path) == [theirs]  # the folder stays: it holds their file
    assert theirs.read_text() == "keep me" and beside.read_bytes() == b"x"


def test_clear_removes_the_folder_when_only_ours_was_there(tmp_path):
    run = str(tmp_path)
    ownership.start(run, "h")
    spill.write(run, FOLDER, "rec1", blobs(1))
    spill.clear(run, FOLDER)
    assert not (tmp_path / FOLDER).exists()
    assert (tmp_path / ".trajforge-partial").is_dir()  # the staging folder is not ours to clear


@pytest.mark.parametrize("damage", ["removed", "truncated", "garbled"])
def test_a_lost_spill_file_is_a_clear_error(tmp_path, damage):
    run = str(tmp_path)
    refs = spill.write(run, FOLDER, "rec1", blobs(2))
    path = tmp_path / spill.file_rel(FOLDER, "rec1")
    if damage == "removed":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:-5])
    else:
        path.write_bytes(b"\0" * len(path.read_bytes()))
    with pytest.raises(spill.SpillError, match=r"record rec1 cannot be read back .*--resume"):
        spill.read_rows(run, FOLDER, refs[1])


def test_a_build_leaves_no_spill_behind(built_run):
    """The shards were written from spill files, then the files went (and the ledger, compacted
    at the end of the build, no longer names them)."""
    assert not (built_run / ".trajforge-partial").exists()
    assert list(built_run.glob("data/*.parquet"))
    ledger = (built_run / ownership.LEDGER).read_text().splitlines()[1:]
    assert not [p for p in map(json.loads, ledger) if f"/{spill.FOLDER}/" in f"/{p}"]


def test_the_writer_reads_the_spill_folder_of_its_base(tmp_path):
    """`_write` reads the refs from the folder `KeyRows` spilled into for the same base."""
    run = str(tmp_path)
    refs = [spill.write(run, FOLDER, f"r{i}", [packed_rows.pack([_row(i)])])[0] for i in range(3)]
    written = outputs._write((("sharegpt", "train", 0, 1), refs[::-1]), run, ".trajforge-partial")
    assert Path(written).is_file()


def _row(i: int) -> dict:
    turns = [{"from": "human", "value": f"hi {i}"}, {"from": "gpt", "value": "hello"}]
    return {"id": f"r{i}", "task_id": "t", "domain": "toy", "system": "s", "tools": "[]",
            "conversations": turns}  # fmt: skip
