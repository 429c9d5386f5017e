"""Parquet shards of every output (canonical records and views): layout, schema, writing.

A shard is written whole by one worker: zstd, row groups of at most `ROW_GROUP_BYTES`
(uncompressed) or `ROW_GROUP_MAX_ROWS` rows, whichever is smaller, so readers (datasets
streaming, the Hub viewer, DuckDB) fetch a bounded slice at a time. Rows are sorted by id, so a
retried write produces the same file. Schemas are `features.Features` (what `datasets.Features`
writes, without importing `datasets`): the Hugging Face schema metadata stored in each file
makes `load_dataset` decode `Json` columns back to dicts.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trajforge.pipelines import arrow_size, files, heap, io, ownership, views
from trajforge.pipelines.features import Features, Json, List
from trajforge.schemas import DatasetRecord

CANONICAL = "data"
ROW_GROUP_BYTES = 64 * 1024 * 1024
ROW_GROUP_MAX_ROWS = 10_000


def output_dir(output: str) -> str:
    """`data` for the canonical records, `views/<name>` for a view."""
    return io.DATA_DIR if output == CANONICAL else f"{io.VIEWS_DIR}/{output}"


def features_of(output: str) -> Features:
    if output == CANONICAL:
        return Features.from_arrow_schema(io.dataset_arrow_schema())
    return views.FEATURES[output]  # type: ignore[index]


def rows_of(output: str, record: DatasetRecord) -> list[dict[str, Any]]:
    if output == CANONICAL:
        return [io.dataset_row(record)]
    return views.view_rows(output, record)  # type: ignore[arg-type]


def shard_name(split: str, shard: int, num_shards: int) -> str:
    return f"{split}-{shard:05d}-of-{num_shards:05d}.parquet"


def shard_path(run_dir: str, output: str, split: str, shard: int, num_shards: int) -> str:
    return io.join(run_dir, *output_dir(output).split("/"), shard_name(split, shard, num_shards))


def row_group_rows(num_rows: int, nbytes: int) -> int:
    if num_rows == 0:
        return 1
    per_row = max(nbytes / num_rows, 1.0)
    return max(1, min(ROW_GROUP_MAX_ROWS, int(ROW_GROUP_BYTES / per_row)))


#: id -> (a `Json` value already encoded, its text), and (encoder id, id) -> (a list or dict
#: already encoded, its encoding): the value is held so its id is not reused
Encoded = dict[Any, tuple[Any, Any]]


def encode_json(feature: Any, value: Any, encoded: Encoded | None = None) -> Any:
    """Pre-encode every `Json` value as JSON text. `Json.encode_example` keeps a string that
    already parses as JSON, so a plain string such as "43131" would come back as the number
    43131; encoding it ourselves makes every value round-trip exactly. `encoded`: texts of the
    dicts and lists already encoded, by identity: a record's `step_prefix` rows share their
    prefix messages (`packed_rows` keeps them shared), which were dumped once per row they
    appear in, quadratic in the conversation (issue 30)."""
    if value is None:
        return None
    if isinstance(feature, Json):
        if encoded is None or not isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False)
        known = encoded.get(id(value))
        if known is None:
            known = encoded[id(value)] = (value, json.dumps(value, ensure_ascii=False))
        return known[1]
    if isinstance(feature, List):
        return [encode_json(feature.feature, v, encoded) for v in value]
    if isinstance(feature, Mapping):
        return {k: encode_json(feature[k], v, encoded) for k, v in value.items()}
    return value


#: One value's encoding (`encode_json`'s, for one feature), given the shared texts
ValueEncoder = Callable[[Any, Encoded], Any]


def row_encoder(features: Mapping[str, Any]) -> ValueEncoder:
    """`encode_json(features, row, encoded)` as one function per feature, built once per shard:
    the recursive walk asked each value's feature its type again for every row (800,000 calls
    for a 400-task build's step_prefix rows, issue 30). Same values out: the shards are
    compared byte for byte with `encode_json`'s (`tests/pipelines/test_shard_writing.py`)."""
    return _encoder(features, shared=False) or (lambda value, encoded: value)


def _encoder(feature: Any, shared: bool = True) -> ValueEncoder | None:
    """None: the value goes through unchanged. `shared`: the encoding of a list or dict is
    shared by the rows holding the same object (`_once`); not for the rows themselves, which
    are never shared, so each is dropped once encoded."""
    if isinstance(feature, Json):
        return _json_text
    if isinstance(feature, List):
        item = _encoder(feature.feature)
        if item is None:
            return None
        return _once(lambda value, encoded: [item(v, encoded) for v in value])
    if isinstance(feature, Mapping):
        fields = {k: _encoder(f) for k, f in feature.items()}
        if all(f is None for f in fields.values()):
            return None

        def mapping(value: Any, encoded: Encoded) -> Any:
            if value is None:
                return None
            return {k: v if fields[k] is None else fields[k](v, encoded) for k, v in value.items()}

        return _once(mapping) if shared else mapping
    return None


def _once(encode: ValueEncoder) -> ValueEncoder:
    """`encode` of a list or dict, the result shared by every row that holds the same object
    (kept in `encoded` by identity, as the JSON texts are): a record's `step_prefix` rows share
    its tools list, whose encoded structs were built again for every row, ~25 MB of a 4,500-row
    row group's 56 MB of Python objects while it was converted (issue 30). The rows convert to
    the same Arrow values: they are equal, only no longer copies."""

    def shared(value: Any, encoded: Encoded) -> Any:
        if value is None:
            return None
        key = (id(encode), id(value))
        known = encoded.get(key)
        if known is None:
            known = encoded[key] = (value, encode(value, encoded))
        return known[1]

    return shared


def _json_text(value: Any, encoded: Encoded) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    known = encoded.get(id(value))
    if known is None:
        known = encoded[id(value)] = (value, json.dumps(value, ensure_ascii=False))
    return known[1]


#: Rows encoded and converted to Arrow at a time. Converting a whole shard at once held its
#: rows three times (as given, JSON-encoded, datasets' intermediates), so the peak grew with
#: the shard: a 2,517-row step_prefix shard (41 MB of JSON) peaked at 156 MB of Python heap
#: in the conversion alone (17 MB in chunks of 256 rows; CPU within noise at 1,024).
CONVERT_ROWS = 1024


def _convert(chunk: list[dict[str, Any]], features: Features) -> pa.Table:
    """Encoded rows -> Arrow, the table `datasets.Dataset.from_list` gives (without the
    fingerprint it hashes over every value, ~5x the conversion). pyarrow's row converter
    cannot build an extension type, so rows with a `Json` column are converted to the storage
    schema (JSON text as strings) and cast to the extension type, which keeps the buffers."""
    if not features.has_json:
        return pa.Table.from_pylist(chunk, schema=features.arrow_schema)
    table = pa.Table.from_pylist(chunk, schema=features.storage_schema)
    return table.cast(features.arrow_schema)


def _parts(
    rows: Iterable[dict[str, Any]], features: Features, size: int | None = None
) -> Iterator[pa.Table]:
    """Rows (in order) -> Arrow tables of `size` (`CONVERT_ROWS`) rows, one at a time: only
    one chunk of `rows` is taken from the iterable at a time."""
    encode = row_encoder(features)
    size = size or CONVERT_ROWS
    stream = iter(rows)
    while True:
        encoded: Encoded = {}  # per chunk: the texts live as long as the chunk's rows
        # encoded as taken: a row as given is dropped once encoded (what it shares with the
        # chunk's other rows is kept by `encoded`)
        chunk = [encode(r, encoded) for r in itertools.islice(stream, size)]
        if not chunk:
            return
        yield _convert(chunk, features)
        del chunk, encoded


def arrow_table(rows: list[dict[str, Any]], features: Features) -> pa.Table:
    """Rows (in order) -> one contiguous Arrow table, `CONVERT_ROWS` at a time; the table is the
    one a single conversion gives (`tests/pipelines/test_shard_writing.py`)."""
    return pa.concat_tables(list(_parts(rows, features))).combine_chunks()


def _measured(rows: Iterable[dict[str, Any]], features: Features) -> tuple[int, pa.Table | None]:
    """(the shard's table's `nbytes`, the table itself when it fits one row group's bytes).
    A larger shard is measured part by part and not kept (`arrow_size` says why)."""
    parts: list[pa.Table] | None = []
    total: arrow_size.Footprint = {}
    for part in _parts(rows, features):
        arrow_size.merge(total, arrow_size.footprint(part))
        if parts is not None:
            parts.append(part)
            if arrow_size.nbytes(total) > ROW_GROUP_BYTES:
                parts = None  # more than one row group: written a row group at a time
    if parts is None:
        return arrow_size.nbytes(total), None
    if not parts:
        return 0, None  # no rows: an empty shard
    table = pa.concat_tables(parts).combine_chunks()
    return table.nbytes, table


def _create(path: str, run_dir: str | None):
    """A run's file is written by `ownership.create` (recorded, temporary name, renamed into
    place; `path` relative to `run_dir`); a file outside a run is written directly."""
    if run_dir is None:
        return files.create(path)
    return ownership.create(run_dir, path)


def write_shard(
    path: str, rows: list[dict[str, Any]], features: Features, run_dir: str | None = None
) -> int:
    """Write one shard (rows sorted by id); returns the number of rows. With `run_dir`, `path`
    is relative to it and the shard is the run's (recorded, renamed into place when whole)."""
    ordered = sorted(rows, key=lambda r: r["id"])
    return _write_ordered(path, lambda: iter(ordered), len(ordered), features, run_dir)


#: Rows in id order, each call a fresh pass over the same rows
RowSource = Callable[[], Iterator[dict[str, Any]]]


class OutOfOrder(ValueError):
    """A row source whose ids are not ascending (`write_streamed` then sorts its rows)."""


def write_streamed(
    path: str, source: RowSource, features: Features, run_dir: str | None = None
) -> int:
    """`write_shard` of the rows `source` yields, the same bytes, holding one chunk or one row
    group of rows at a time instead of the whole shard: `source` is read twice (measured, then
    written), so it should be cheap to repeat (the shard writer's source unpacks one record's
    packed rows at a time). Its rows should come in id order; if they do not (checked while
    measuring, before the file is opened), they are gathered and sorted as `write_shard` does."""
    count = [0]
    try:
        nbytes, table = _measured(_checked(source(), count), features)
    except (OutOfOrder, arrow_size.UnsizedType):
        return write_shard(path, list(source()), features, run_dir)
    return _write_measured(path, source, count[0], nbytes, table, features, run_dir)


def _checked(rows: Iterator[dict[str, Any]], count: list[int]) -> Iterator[dict[str, Any]]:
    """`rows`, counted into `count[0]`, raising `OutOfOrder` at the first id not above the last."""
    last = None
    for row in rows:
        if last is not None and not row["id"] > last:
            raise OutOfOrder(f"row id {row['id']!r} after {last!r}")
        last = row["id"]
        count[0] += 1
        yield row


def _write_ordered(
    path: str, source: RowSource, num_rows: int, features: Features, run_dir: str | None
) -> int:
    if not num_rows:
        return _write_empty(path, features, run_dir)
    try:
        nbytes, table = _measured(source(), features)
    except arrow_size.UnsizedType:
        table = arrow_table(list(source()), features)
        nbytes = table.nbytes
    return _write_measured(path, source, num_rows, nbytes, table, features, run_dir)


def _write_measured(
    path: str,
    source: RowSource,
    num_rows: int,
    nbytes: int,
    table: pa.Table | None,
    features: Features,
    run_dir: str | None,
) -> int:
    """Write the measured shard: the kept `table` whole, or (None) `source` again, a row group
    at a time."""
    if not num_rows:
        return _write_empty(path, features, run_dir)
    group = row_group_rows(num_rows, nbytes)
    with _create(path, run_dir) as f:
        if table is not None:
            # what converting freed (Arrow's builders grow by doubling; mimalloc keeps the
            # pages), before the writer's own buffers: a 742-row canonical shard (32 MB of
            # Arrow) added 166 MB to the writer's RSS, 127 with this (issue 30)
            heap.release_free_heap()
            pq.write_table(table, f, compression="zstd", row_group_size=group)
            return num_rows
        # the row groups `write_table` makes of the whole table, one at a time, each converted
        # in one piece (contiguous, as the writer needs it, without a second copy to combine
        # parts): a group's JSON texts are shared by its rows, so its Python side stays small
        heap.release_free_heap()  # what measuring freed, before the largest allocations
        pieces = _parts(source(), features, size=group)
        with pq.ParquetWriter(f, features.arrow_schema, compression="zstd") as writer:
            for piece in pieces:
                writer.write_table(piece, row_group_size=group)
                del piece
    return num_rows


def _write_empty(path: str, features: Features, run_dir: str | None = None) -> int:
    """A file with the schema and no row group: pyarrow, pandas and streaming `load_dataset`
    read it as zero rows (a zero-row row group would make `datasets` pick a batch size of 0)."""
    schema = features.arrow_schema  # what `Dataset.from_dict` of no rows has (metadata too)
    with _create(path, run_dir) as f:
        pq.ParquetWriter(f, schema, compression="zstd").close()
    return 0


def output_files(run_dir: str, output: str) -> dict[str, list[str]]:
    """split -> shard paths of one output."""
    base = io.join(run_dir, *output_dir(output).split("/"))
    found = {s: io.matching(io.join(base, f"{s}-*.parquet")) for s in io.SPLITS}
    return {s: files for s, files in found.items() if files}


def shard_rel(output: str, split: str, shard: int, num_shards: int) -> str:
    """A shard's path relative to the folder that holds the outputs."""
    return f"{output_dir(output)}/{shard_name(split, shard, num_shards)}"


def ensure_loadable(run_dir: str, outputs: list[str], base: str = "") -> list[str]:
    """An output with no rows at all gets one empty train shard, so `load_dataset` works on an
    empty build (zero rows, the right columns) instead of failing on missing files. `base`:
    the folder of the run (relative) that holds the outputs (the build's staging folder)."""
    written = []
    root = io.join(run_dir, base) if base else run_dir
    for output in outputs:
        if not output_files(root, output):
            rel = shard_rel(output, "train", 0, 1)
            write_shard(f"{base}/{rel}" if base else rel, [], features_of(output), run_dir)
            written.append(io.join(root, rel))
    return written
