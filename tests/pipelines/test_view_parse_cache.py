"""Views share one parse of a record's trajectory: the rows are the ones fresh parses give."""

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
            fresh.append(views.view_rows(name, record))
    views._parse.cache_clear()
    shared = [views.view_rows(name, r) for r in found for name in names for _ in range(2)]
    assert shared[::2] == fresh and shared[1::2] == fresh
    assert views._parse.cache_info().hits >= len(found) * (2 * len(names) - 1)
