"""One record's rows of one output, packed as one compressed blob for the shard GroupByKey.

Why: Beam's local runner holds every PCollection that crosses a GroupByKey in memory, encoded,
two or three times over (the runner's grouping buffer, the bundle it sends, the worker's copy),
and the worker decodes a shard's rows all at once. Sent row by row, the `step_prefix` view is
quadratic in a conversation's length (each row repeats its prefix: 190 KB of coded rows for a
4-turn retail record), so the rows of a 400-task build peaked at 1.2 GB of RSS in the shard
writer (issue 30). Pickled together, the rows of one record share their message objects (the
prefixes are slices of one list, and pickle writes a shared object once: 17 KB), and LZ4 halves
what is left, at well under a millisecond per record. The writer unpickles the same rows, so the
shards are byte-identical to the ones written from rows sent one by one.

Pickle is safe here: a blob is made and read by the same build's code, never from outside.
"""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa

#: LZ4 frames (pyarrow's bundled codec: no extra dependency); zstd packs ~25% smaller but
#: costs ~4x the CPU per record, and the blobs live only for the length of a build.
CODEC = "lz4"


def pack(rows: list[dict[str, Any]]) -> tuple[int, bytes]:
    """(the pickle's size, its LZ4 frame): the size is what decompression needs up front."""
    raw = pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
    return len(raw), pa.Codec(CODEC).compress(raw, asbytes=True)


def unpack(packed: tuple[int, bytes]) -> list[dict[str, Any]]:
    """The rows `pack` was given (equal values, shared objects shared again)."""
    size, blob = packed
    return pickle.loads(pa.Codec(CODEC).decompress(blob, decompressed_size=size, asbytes=True))
