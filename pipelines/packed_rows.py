"""One record's rows of one output, packed as one compressed blob for the shard GroupByKey.

Why: Beam's local runner holds every PCollection that crosses a GroupByKey in memory, encoded,
two or three times over (the runner's grouping buffer, the bundle it sends, the worker's copy),
and the worker decodes a shard's rows all at once. Sent row by row, the `step_prefix` view is
quadratic in a conversation's length (each row repeats its prefix: 190 KB of coded rows for a
4-turn retail record), so the rows of a 400-task build peaked at 1.2 GB of RSS in the shard
writer (issue 30). Pickled together, the rows of one record share their message objects (the
prefixes are slices of one list, and pickle writes a shared object once: 17 KB), and zstd
packs what is left to a third, at well under a millisecond per record. The writer unpickles the
same rows, so the shards are byte-identical to the ones written from rows sent one by one.

Pickle is safe here: a blob is made and read by the same build's code, never from outside.
"""

from __future__ import annotations

import pickle
from typing import Any

import pyarrow as pa

#: zstd level 1 frames (pyarrow's bundled codec: no extra dependency). LZ4 was first: ~2.5x
#: faster, but the shard GroupByKey's input is held whole (and more than once) by the local
#: runner at the build's peak, and zstd packs a retail record's five outputs in 26 KB instead
#: of 36 KB for ~0.3 ms more per record (issue 30).
CODEC = "zstd"
LEVEL = 1


def pack(rows: list[dict[str, Any]]) -> tuple[int, bytes]:
    """(the pickle's size, its zstd frame): the size is what decompression needs up front."""
    raw = pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)
    return len(raw), pa.Codec(CODEC, compression_level=LEVEL).compress(raw, asbytes=True)


def unpack(packed: tuple[int, bytes]) -> list[dict[str, Any]]:
    """The rows `pack` was given (equal values, shared objects shared again)."""
    size, blob = packed
    return pickle.loads(pa.Codec(CODEC).decompress(blob, decompressed_size=size, asbytes=True))
