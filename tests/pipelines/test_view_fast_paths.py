"""Views' fast paths (one parse per record, token estimates from item lengths) give the rows
the plain computation gives."""

from __future__ import annotations

import glob

import pyarrow.parquet as pq

from trajforge.pipelines import views
from trajforge.schemas import DatasetRecord


def records(run) -> list[DatasetRecord]:
    out = []
    for path in sorted(glob.glob(str(run / "data" / "*.parquet"))):
        for row in pq.read_table(path).to_pylist():
            out.append(DatasetRecord.model_validate(row))
    return out


def test_views_with_the_shared_parse_equal_fresh_parses(built_run):
    found = records(built_run)
    assert len(found) > 3
    names = list(views.ROW_BUILDERS)
    fresh = []
    for record in found:
        for name in names:
            views._parse.cache_clear()
            views._chat.cache_clear()
            fresh.append(views.view_rows(name, record))
    views._parse.cache_clear()
    views._chat.cache_clear()
    shared = [views.view_rows(name, r) for r in found for name in names for _ in range(2)]
    assert shared[::2] == fresh and shared[1::2] == fresh
    # each record parsed once, its chat messages built once, for all views and both passes
    assert views._parse.cache_info().misses == len(found)
    assert views._chat.cache_info().misses == len(found)


def test_list_json_chars_is_the_length_of_the_dumped_list():
    import json
    import random

    rng = random.Random(3)
    alphabet = ["a", '"', "\\", "é", "日", "\n", " ", "{", "✓", "\u2028"]
    for _ in range(500):
        items = [
            {"role": "user", "content": "".join(rng.choices(alphabet, k=rng.randint(0, 20)))}
            if rng.random() < 0.7
            else [rng.randint(-5, 5), None, rng.random()]
            for _ in range(rng.randint(0, 6))
        ]
        chars = [len(json.dumps(i, ensure_ascii=False)) for i in items]
        assert views.list_json_chars(chars) == len(json.dumps(items, ensure_ascii=False))


def test_step_prefix_token_estimates_equal_the_dumped_rows(built_run):
    rows = [r for rec in records(built_run) for r in views.view_rows("step_prefix", rec)]
    assert len(rows) > 10
    for row in rows:
        expected = views.estimate_tokens(row["prompt"], row["completion"], row["tools"])
        assert row["num_tokens"] == expected
