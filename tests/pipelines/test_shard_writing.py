"""Shards converted to Arrow in chunks (`shards.CONVERT_ROWS`) by pyarrow alone are
byte-identical to the whole-shard conversion through `datasets` they replaced, for every
output's features."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datasets import Dataset, Features

from trajforge.pipelines import shards
from trajforge.schemas import DatasetRecord

TOOL = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"a": 1}}}


def message(i: int) -> dict:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": {"x": i}}}
    return {"role": "assistant", "content": f"m{i} é", "tool_calls": [call], "tool_call_id": None}


def prefix_row(i: int) -> dict:
    return {
        "id": f"row-{(i * 7919) % 1000:04d}",  # unsorted input; some ids repeat (stable order)
        "task_id": f"t{i % 13}",
        "domain": "retail",
        "step_index": i % 5,
        "prompt": [message(j) for j in range(i % 4)],
        "completion": [message(i)],
        "tools": [TOOL],
        "num_tokens": i,
        "pass_rate": None if i % 3 else 0.5,
        "pass_hat_k": [0.25, float(i % 2)],
    }


def hf(features) -> Features:
    """The `datasets` features a shard's schema metadata describes."""
    return Features.from_arrow_schema(features.arrow_schema)


def whole_shard(path: Path, rows: list[dict], features) -> None:
    """The previous write: encode and convert every row at once, through `datasets`."""
    encoded = sorted((shards.encode_json(dict(features), r) for r in rows), key=lambda r: r["id"])
    table = Dataset.from_list(encoded, features=hf(features)).data.table
    rows_per_group = shards.row_group_rows(table.num_rows, table.nbytes)
    pq.write_table(table, str(path), compression="zstd", row_group_size=rows_per_group)


@pytest.mark.parametrize("n", [1, 5, 255, 600])
@pytest.mark.parametrize("chunk", [1, 7, 256])
def test_chunked_equals_whole(tmp_path: Path, monkeypatch, n: int, chunk: int):
    monkeypatch.setattr(shards, "CONVERT_ROWS", chunk)
    features = shards.features_of("step_prefix")
    rows = [prefix_row(i) for i in range(n)]
    whole_shard(tmp_path / "whole.parquet", rows, features)
    assert shards.write_shard(str(tmp_path / "chunked.parquet"), rows, features) == n
    assert (tmp_path / "chunked.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()


def output_rows(run: Path, output: str) -> list[dict]:
    """The rows the build wrote for `output`, made again from its canonical records."""
    rows = []
    for path in sorted(run.glob(f"{shards.output_dir('data')}/*.parquet")):
        for row in pq.read_table(str(path)).to_pylist():
            rows += shards.rows_of(output, DatasetRecord.model_validate(row))
    return rows


@pytest.mark.parametrize("group_bytes", [shards.ROW_GROUP_BYTES, 40_000])
@pytest.mark.parametrize("chunk", [1, 3, 1024])
@pytest.mark.parametrize("output", ["data", "messages", "step_prefix", "steps", "sharegpt"])
def test_built_rows_written_without_datasets_give_the_same_bytes(
    built_run, tmp_path, monkeypatch, chunk, output, group_bytes
):
    """pyarrow converts the rows itself (no fingerprint; `Json` through its storage and a
    cast): the file `datasets` wrote, for a build's rows of every output. With small row
    groups (40 KB), a shard over one row group's bytes is measured part by part and written a
    row group at a time (issue 30): the same file."""
    monkeypatch.setattr(shards, "CONVERT_ROWS", chunk)
    monkeypatch.setattr(shards, "ROW_GROUP_BYTES", group_bytes)
    features = shards.features_of(output)
    rows = output_rows(built_run, output)
    assert len(rows) > 3
    cases = {"all": rows}
    if output == "data":  # the optional columns unset, non-ASCII text, empty lists
        cases["varied"] = [
            {**rows[0], "pass_rate": None, "pass_hat_k": None, "cluster_id": None},
            {**rows[1], "messages_json": rows[1]["messages_json"] + " é ✓ 日本", "split_keys": []},
            *rows[2:4],
        ]
    for name, some in cases.items():
        whole_shard(tmp_path / f"{name}-whole.parquet", some, features)
        shards.write_shard(str(tmp_path / f"{name}.parquet"), some, features)
        expected = (tmp_path / f"{name}-whole.parquet").read_bytes()
        assert (tmp_path / f"{name}.parquet").read_bytes() == expected, name
    if group_bytes < shards.ROW_GROUP_BYTES:  # written a row group at a time
        assert pq.ParquetFile(str(tmp_path / "all.parquet")).num_row_groups > 1


@pytest.mark.parametrize("output", ["data", "messages", "step_prefix", "steps", "sharegpt"])
def test_empty_shards_have_the_schema_datasets_gives(tmp_path, output):
    features = shards.features_of(output)
    expected = Dataset.from_dict({k: [] for k in features}, features=hf(features)).data.table.schema
    pq.ParquetWriter(str(tmp_path / "expected.parquet"), expected, compression="zstd").close()
    assert shards.write_shard(str(tmp_path / "e.parquet"), [], features) == 0
    assert (tmp_path / "e.parquet").read_bytes() == (tmp_path / "expected.parquet").read_bytes()
    plain = output in ("data", "sharegpt")  # the outputs without a `Json` column
    assert features.has_json == (not plain)


def test_rows_sharing_a_list_share_its_encoding():
    """A record's step_prefix rows hold one tools list: its structs are encoded once per
    chunk, not once per row (issue 30), and the rows still encode to equal values."""
    features = shards.features_of("step_prefix")
    tools = [{"type": "function", "function": {"name": "f", "description": "d",
                                               "parameters": {"type": "object"}}}]  # fmt: skip
    rows = [{**prefix_row(i), "tools": tools} for i in range(3)]
    encode, encoded = shards.row_encoder(features), {}
    out = [encode(r, encoded) for r in rows]
    assert out[0]["tools"] is out[2]["tools"]
    assert out[0]["tools"] == shards.encode_json(features, rows[0])["tools"]
    assert out[0] is not out[1]  # rows themselves are never shared
