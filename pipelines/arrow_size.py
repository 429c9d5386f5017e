"""The `nbytes` a table would have once its chunks are combined, without combining them.

Why: a shard's row groups are sized from its whole table's `nbytes` (`shards.row_group_rows`),
and the writer built the whole shard as one contiguous Arrow table to learn it: a
`step_prefix` train shard of a 1,600-task retail build is ~145 MB of Arrow, held twice while
its chunks were combined (issue 30). Computed from the chunks instead, the writer converts the
rows once to measure and again one row group at a time to write, holding one chunk or one row
group, and the row groups are the ones the whole table gave.

`Table.nbytes` is the bytes of every buffer range the arrays reference. A combined array
of length n has: a validity bitmap of ceil(n / 8) bytes when any chunk has nulls (none
otherwise), 4 n bytes of offsets for strings and lists (Arrow counts n of the n + 1), the
values; a struct's fields and a list's values are arrays of their own. Each chunk gives its part; the test checks the sum
against `combine_chunks().nbytes` on every output's rows, nulls and empty lists included
(`tests/pipelines/test_arrow_size.py`).
"""

from __future__ import annotations

import pyarrow as pa


class UnsizedType(TypeError):
    """A column type the computation does not cover (the writer then combines the table)."""


#: path of an array in the table (column, field, list values) -> what its size needs:
#: [body kind, length, has nulls, bytes of string values]
Footprint = dict[str, list]


def footprint(table: pa.Table) -> Footprint:
    """What `combined_nbytes` needs of one part: lengths, null flags, string bytes."""
    nodes: Footprint = {}
    for i, field in enumerate(table.schema):
        _add(nodes, field.name, list(table.column(i).chunks))
    return nodes


def merge(total: Footprint, part: Footprint) -> Footprint:
    """The footprint of two parts one after the other (the parts of one table)."""
    for path, (kind, length, nulls, span) in part.items():
        node = total.setdefault(path, [kind, 0, False, 0])
        node[1] += length
        node[2] = node[2] or nulls
        node[3] += span
    return total


def nbytes(nodes: Footprint) -> int:
    """`nbytes` of the table the footprint's parts make once combined."""
    size = 0
    for kind, length, nulls, span in nodes.values():
        size += _bitmap(length) if nulls else 0
        if kind == "offsets":  # strings and lists: Arrow counts n of the n + 1 offsets
            size += 4 * length + span
        elif kind == "bits":
            size += _bitmap(length)
        else:  # fixed width, bytes per value; a struct: 0
            size += length * kind
    return size


def combined_nbytes(parts: list[pa.Table]) -> int:
    """`pa.concat_tables(parts).combine_chunks().nbytes`, from the parts."""
    total: Footprint = {}
    for part in parts:
        merge(total, footprint(part))
    return nbytes(total)


def _bitmap(length: int) -> int:
    return (length + 7) // 8


def _add(nodes: Footprint, path: str, chunks: list[pa.Array]) -> None:
    chunks = [c.storage if isinstance(c, pa.ExtensionArray) else c for c in chunks]
    kind = chunks[0].type if chunks else None
    length = sum(len(c) for c in chunks)
    nulls = any(c.null_count for c in chunks)
    if kind is None:
        return
    if pa.types.is_boolean(kind):
        body, span = "bits", 0
    elif pa.types.is_integer(kind) or pa.types.is_floating(kind):
        body, span = kind.bit_width // 8, 0
    elif pa.types.is_string(kind) or pa.types.is_binary(kind):
        body, span = "offsets", sum(_values_span(c) for c in chunks)
    elif pa.types.is_list(kind):
        body, span = "offsets", 0
        children = [c.values.slice(_offset_range(c)[0], _values_span(c)) for c in chunks]
        _add(nodes, f"{path}[]", children)
    elif pa.types.is_struct(kind):
        body, span = 0, 0
        for i in range(kind.num_fields):
            _add(nodes, f"{path}.{kind.field(i).name}", [_field(c, i) for c in chunks])
    else:
        raise UnsizedType(f"no combined size for Arrow type {kind}")
    merge(nodes, {path: [body, length, nulls, span]})


def _values_span(array: pa.Array) -> int:
    """Bytes (strings) or child values (lists) the array's offsets span."""
    first, last = _offset_range(array)
    return last - first


def _offset_range(array: pa.Array) -> tuple[int, int]:
    """The first and last of a string or list array's 32-bit offsets, over its own slice."""
    if len(array) == 0:
        return 0, 0
    offsets = array.buffers()[1]
    first, last = array.offset, array.offset + len(array)
    values = memoryview(offsets).cast("B")[4 * first : 4 * (last + 1)].cast("i")
    return values[0], values[len(array)]


def _field(array: pa.StructArray, index: int) -> pa.Array:
    """The struct's field `index` over the struct's own slice."""
    child = array.field(index)
    if len(child) != len(array):
        child = child.slice(array.offset, len(array))
    return child
