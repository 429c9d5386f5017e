"""`json_length` is exactly `len(json.dumps(value, default=str))` (issue 30): the split plan's
shard counts come from these lengths, so a difference of one byte could move a shard boundary."""

from __future__ import annotations

import datetime
import glob
import json
import random

import pyarrow.parquet as pq

from trajforge.pipelines import shards
from trajforge.pipelines.json_size import Seen, json_length
from trajforge.schemas import DatasetRecord

OUTPUTS = (shards.CANONICAL, "messages", "step_prefix", "steps", "sharegpt")


def dumped(value) -> int:
    return len(json.dumps(value, default=str))


def random_value(rng: random.Random, depth: int = 0):
    leaves = [
        None, True, False, 0, -7, 2**70, 1.5, float("nan"), float("inf"), -0.0, 1e-300,
        "", "plain", "é ü 中文 \u2028 emoji \U0001f600", 'quote " back \\ tab \t nl \n',
        datetime.date(2026, 12, 5),
    ]  # fmt: skip
    if depth > 4 or rng.random() < 0.3:
        return rng.choice(leaves)
    if rng.random() < 0.5:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["a", "b c", "ü", '"q"', "", "k" * 9]
    if rng.random() < 0.1:
        keys = [1, 2.5, None, True]  # json converts them: measured whole
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_random_values_measure_as_dumped():
    rng = random.Random(7)
    for _ in range(3000):
        value = random_value(rng)
        assert json_length(value, {}) == dumped(value), value
    shared = {"role": "user", "content": "hé"}
    rows = [{"prompt": [shared] * k, "t": (shared,)} for k in range(5)]
    seen: Seen = {}
    assert [json_length(r, seen) for r in rows] == [dumped(r) for r in rows]


def test_real_rows_measure_as_dumped(built_run):
    files = sorted(glob.glob(f"{built_run}/data/*.parquet"))
    records = [DatasetRecord.model_validate(r) for f in files for r in pq.read_table(f).to_pylist()]
    for record in records:
        seen: Seen = {}  # shared by outputs whose rows are gone: ids are not reused
        for output in OUTPUTS:
            rows = shards.rows_of(output, record)
            assert sum(json_length(r, seen) for r in rows) == sum(dumped(r) for r in rows)
