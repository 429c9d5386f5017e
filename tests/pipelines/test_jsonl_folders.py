"""Several JSON Lines folders written by one `WriteJsonlFolders` get the files each would get
alone (`WriteShardedJsonl`), an empty folder its empty summary."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam

from trajforge.pipelines import io
from trajforge.pipelines.transforms.jsonl import WriteJsonlFolders, WriteShardedJsonl
from trajforge.schemas import Rejection


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


def test_folders_together_write_what_each_writes_alone(tmp_path):
    together, alone = tmp_path / "together", tmp_path / "alone"
    with beam.Pipeline() as p:
        folders = {
            io.REJECTED_DIR: p | "R" >> beam.Create(REJECTED),
            "other": p | "O" >> beam.Create(OTHER),
            io.DEAD_LETTER_DIR: p | "D" >> beam.Create([]).with_output_types(Rejection),
        }
        _ = folders | WriteJsonlFolders(str(together), shard_bytes=SHARD_BYTES)
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
    assert (
        written[f"{io.DEAD_LETTER_DIR}/{io.JSONL_SUMMARY_FILE}"]
        == b'{"counts": [], "shards": []}\n'
    )
