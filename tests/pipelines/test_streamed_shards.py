"""The shard writer streams a shard's rows from their packed records (one record's rows
unpacked at a time, read twice: measured, then written) and writes the bytes `write_shard`
writes from all the rows at once (issue 30: the largest `step_prefix` shard's unpacked rows
were part of a build's peak)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.pipelines.test_shard_writing import prefix_row
from trajforge.pipelines import packed_rows, shards, spill
from trajforge.pipelines.transforms.outputs import _write
from trajforge.schemas import DatasetRecord


def records_rows(built_run: Path, output: str) -> list[tuple[str, list[dict]]]:
    """(record id, that record's rows of `output`) for every record of the build, as if in
    the train split (the canonical rows' split is the shard's)."""
    import pyarrow.parquet as pq

    out = []
    for path in sorted(built_run.glob(f"{shards.output_dir('data')}/*.parquet")):
        for row in pq.read_table(str(path)).to_pylist():
            record = DatasetRecord.model_validate({**row, "split": "train"})
            out.append((record.id, shards.rows_of(output, record)))
    return out


class _Plan:
    """The clusters of the build's records (what the writer reads of the plan)."""

    def __init__(self, built_run: Path):
        rows = records_rows(built_run, "data")
        self.cluster_of = {rid: rs[0]["cluster_id"] for rid, rs in rows}


@pytest.mark.parametrize("group_bytes", [shards.ROW_GROUP_BYTES, 40_000])
@pytest.mark.parametrize("output", ["data", "messages", "step_prefix", "steps", "sharegpt"])
def test_writer_streams_packed_records_to_the_same_bytes(
    built_run, tmp_path, monkeypatch, output, group_bytes
):
    monkeypatch.setattr(shards, "CONVERT_ROWS", 3)
    monkeypatch.setattr(shards, "ROW_GROUP_BYTES", group_bytes)
    features = shards.features_of(output)
    per_record = records_rows(built_run, output)
    assert len(per_record) > 2
    rows = [r for _, rs in per_record for r in rs]
    assert shards.write_shard(str(tmp_path / "whole.parquet"), rows, features) == len(rows)
    run, folder = str(tmp_path / "run"), spill.folder_of("")
    values = [
        spill.write(run, folder, rid, [packed_rows.pack(list(reversed(rs)))])[0]
        for rid, rs in per_record
    ]
    random.Random(0).shuffle(values)  # the group's order is the runner's
    streamed_only = pytest.fail  # the rows come in id order: never gathered and sorted
    monkeypatch.setattr(shards, "write_shard", lambda *a, **k: streamed_only("gathered"))
    written = _write(((output, "train", 0, 1), values), run, "", _Plan(built_run))
    assert Path(written).read_bytes() == (tmp_path / "whole.parquet").read_bytes()


@pytest.mark.parametrize("n", [0, 1, 40])
def test_rows_out_of_order_are_sorted_as_write_shard_does(tmp_path, monkeypatch, n):
    monkeypatch.setattr(shards, "CONVERT_ROWS", 4)
    monkeypatch.setattr(shards, "ROW_GROUP_BYTES", 8_000)
    features = shards.features_of("step_prefix")
    rows = [prefix_row(i) for i in range(n)]  # ids unsorted, some repeated
    assert shards.write_shard(str(tmp_path / "whole.parquet"), rows, features) == n
    count = shards.write_streamed(str(tmp_path / "s.parquet"), lambda: iter(rows), features)
    assert count == n
    assert (tmp_path / "s.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()


def test_sorted_rows_are_read_a_chunk_at_a_time(tmp_path, monkeypatch):
    """A row group's worth at most is taken from the source before it is written."""
    monkeypatch.setattr(shards, "CONVERT_ROWS", 4)
    monkeypatch.setattr(shards, "ROW_GROUP_BYTES", 8_000)
    features = shards.features_of("step_prefix")
    rows = sorted((prefix_row(i) for i in range(300)), key=lambda r: r["id"])
    rows = [{**r, "id": f"{r['id']}-{i:03d}"} for i, r in enumerate(rows)]  # distinct, ascending
    taken, converted, ahead = [0], [0], [0]
    real = shards._convert

    def convert(chunk, feats):
        converted[0] += len(chunk)
        return real(chunk, feats)

    def source():
        converted[0] = taken[0] = 0
        for row in rows:
            taken[0] += 1
            ahead[0] = max(ahead[0], taken[0] - converted[0])
            yield row

    monkeypatch.setattr(shards, "_convert", convert)
    assert shards.write_streamed(str(tmp_path / "s.parquet"), source, features) == len(rows)
    assert shards.write_shard(str(tmp_path / "w.parquet"), rows, features) == len(rows)
    assert (tmp_path / "s.parquet").read_bytes() == (tmp_path / "w.parquet").read_bytes()
    group = shards.row_group_rows(len(rows), 8_000 * 10)  # rows per group is well under 300
    assert 0 < ahead[0] < len(rows) / 2, (ahead[0], group)
