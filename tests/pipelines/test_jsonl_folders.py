"""Several JSON Lines folders written by one `WriteJsonlFolders` get the files each would get
alone (`WriteShardedJsonl`), an empty folder its empty summary; the build sends dead letters
to their own folder."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam

from trajforge.pipelines import io
from trajforge.pipelines.build import failure_folder
from trajforge.pipelines.transforms.jsonl import WriteJsonlFolders, WriteShardedJsonl
from trajforge.schemas import DeadLetter, Rejection


def rejection(i: int, reason: str) -> Rejection:
    return Rejection(
        record_id=f"r{i:04d}", stage="dedup", reason=reason, detail="d", payload_json="x" * 200
    )


REJECTED = [rejection(i, "near_duplicate") for i in range(30)]
OTHER = [rejection(100 + i, "exact_duplicate") for i in range(12)]
SHARD_BYTES = 2_000  # several shards per folder, different counts


def files(root: Path) -> dict[str, bytes]:
    return {
        str(f.relative_to(root)): f.read_bytes()
        for f in sorted(root.rglob("*"))
        if f.is_file() and not f.name.startswith(".")
    }


def folder_of(record: Rejection) -> str:
    return io.REJECTED_DIR if record.reason == "near_duplicate" else "other"


FOLDERS = (io.REJECTED_DIR, "other", io.DEAD_LETTER_DIR)


def test_folders_together_write_what_each_writes_alone(tmp_path):
    together, alone = tmp_path / "together", tmp_path / "alone"
    with beam.Pipeline() as p:
        records = p | beam.Create(REJECTED + OTHER)
        _ = records | WriteJsonlFolders(str(together), folder_of, FOLDERS, SHARD_BYTES)
    with beam.Pipeline() as p:
        for name, records in (
            (io.REJECTED_DIR, REJECTED),
            ("other", OTHER),
            (io.DEAD_LETTER_DIR, []),
        ):
            created = p | f"C{name}" >> beam.Create(records).with_output_types(Rejection)
            _ = created | f"W{name}" >> WriteShardedJsonl(str(alone), name, SHARD_BYTES)
    written = files(together)
    assert written == files(alone)
    assert sum(name.startswith(f"{io.REJECTED_DIR}/") for name in written) > 2  # shards + summary
    assert sum(name.startswith("other/") for name in written) > 2
    assert (
        written[f"{io.DEAD_LETTER_DIR}/{io.JSONL_SUMMARY_FILE}"]
        == b'{"counts": [], "shards": []}\n'
    )


def test_dead_letters_have_their_own_folder():
    dead = DeadLetter(
        record_id="d1", stage="verify_task", error="E: boom", traceback="", element_json="{}"
    )
    assert failure_folder(dead) == io.DEAD_LETTER_DIR
    assert failure_folder(REJECTED[0]) == io.REJECTED_DIR
