"""`combined_nbytes` is the `nbytes` of the combined table, whatever the chunking (issue 30):
a shard's row groups are sized from it, so it must be exact."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trajforge.pipelines import shards
from trajforge.pipelines.arrow_size import UnsizedType, combined_nbytes
from trajforge.schemas import DatasetRecord

OUTPUTS = ["data", "messages", "step_prefix", "steps", "sharegpt"]


def parts(rows: list[dict], features, size: int) -> list[pa.Table]:
    spec = dict(features)
    return [
        shards._convert([shards.encode_json(spec, r) for r in rows[s : s + size]], features)
        for s in range(0, len(rows), size)
    ]


@pytest.mark.parametrize("output", OUTPUTS)
def test_combined_size_of_built_rows(built_run, output):
    features = shards.features_of(output)
    rows = []
    for path in sorted(built_run.glob("data/*.parquet")):
        for row in pq.read_table(str(path)).to_pylist():
            rows += shards.rows_of(output, DatasetRecord.model_validate(row))
    if "pass_rate" in features:
        rows[0] = {**rows[0], "pass_rate": None}  # nulls in one chunk only
    for size in (1, 3, 1024):
        for n in (1, 2, 9, len(rows)):
            chunks = parts(rows[:n], features, size)
            assert combined_nbytes(chunks) == pa.concat_tables(chunks).combine_chunks().nbytes


def test_unknown_types_are_refused():
    table = pa.table({"d": pa.array([{"a": 1}], pa.map_(pa.string(), pa.int64()))})
    with pytest.raises(UnsizedType):
        combined_nbytes([table])
