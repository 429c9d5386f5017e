"""Shards converted to Arrow in chunks (`shards.CONVERT_ROWS`) are byte-identical to the
whole-shard conversion they replaced, for every output's features."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datasets import Dataset

from trajforge.pipelines import shards

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


def whole_shard(path: Path, rows: list[dict], features) -> None:
    """The previous write: encode and convert every row at once."""
    encoded = sorted((shards.encode_json(dict(features), r) for r in rows), key=lambda r: r["id"])
    table = Dataset.from_list(encoded, features=features).data.table
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
