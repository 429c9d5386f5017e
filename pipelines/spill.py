"""Packed rows spilled to the run directory while the shard GroupByKey groups small references.

Why: Beam's local runner holds a GroupByKey's whole input in memory until the consuming stage
ends (encoded, and decoded again by the worker). The shard GroupByKey's input was every
record's packed rows of every output (~26 KB of zstd frames per retail record, `packed_rows`),
about 42 MB at 1,600 tasks, held more than once at the build's peak (issue 30,
benchmarks/README.md). Written to one file per record here, next to the shards, the group
carries a `SpillRef` per record and output (~100 bytes coded) and the shard writer reads each
record's frame back when it streams the shard.

The file system is the run directory's (`ownership`, so a gs:// run spills to gs://), which
every worker of a distributed runner can read. Each file is written under a temporary name and
renamed into place (`ownership.create`: recorded in the run's ledger first), named by a hash of
the record id alone, so a retried bundle replaces the same file with the same bytes instead of
leaving a second one. `clear` deletes only the recorded paths under the spill folder (what
this module wrote, temporaries of killed writers included), never anything else there; a
build killed before it ran leaves them in the staging folder, which `--resume` and
`--overwrite` clear as the run's own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

from trajforge.pipelines import files, ownership, packed_rows

#: The spill folder inside the build's staging folder (`STAGING_DIR`), and at the run's top
#: level when the output transform is used on its own (no staging folder: tests).
FOLDER = "spill"
STANDALONE_FOLDER = ".trajforge-spill"
SUFFIX = ".zst"


class SpillError(RuntimeError):
    """A spilled file cannot be written or read back: the message names the file and the fix."""


class SpillRef(NamedTuple):
    """Where one record's packed rows of one output lie in its spill file: what the shard
    GroupByKey carries instead of the rows (a named tuple: Beam codes it in ~105 bytes, where a
    pydantic model would be pickled with its class)."""

    record_id: str
    offset: int
    length: int
    size: int  # the pickle's size, which decompression needs (`packed_rows.pack`)


def folder_of(base: str) -> str:
    """The spill folder (relative to the run) for outputs staged under `base` ("" none)."""
    return f"{base}/{FOLDER}" if base else STANDALONE_FOLDER


def file_rel(folder: str, record_id: str) -> str:
    """A record's spill file: named by a hash of its id only (any id gives a safe, fixed-length
    name, and a retry of the same record gives the same name)."""
    digest = hashlib.sha256(record_id.encode("utf-8")).hexdigest()[:32]
    return f"{folder}/{digest}{SUFFIX}"


def write(
    run_dir: str, folder: str, record_id: str, blobs: Sequence[tuple[int, bytes]]
) -> list[SpillRef]:
    """Write one record's packed blobs (one per output, in order) into its spill file, whole
    or not at all; their references, in the same order."""
    refs, offset = [], 0
    for size, blob in blobs:
        refs.append(SpillRef(record_id, offset, len(blob), size))
        offset += len(blob)
    rel = file_rel(folder, record_id)
    try:
        with ownership.create(run_dir, rel) as f:
            for _, blob in blobs:
                f.write(blob)
    except OSError as err:
        raise SpillError(
            f"cannot write the packed rows of record {record_id} to "
            f"{files.join(run_dir, *rel.split('/'))}: {err}. The build spills every record's "
            "rows to its run directory until the shards are written; free space there or fix "
            "its permissions, then rerun with --resume"
        ) from err
    return refs


def read(run_dir: str, folder: str, ref: SpillRef) -> tuple[int, bytes]:
    """The packed blob `ref` points at (`packed_rows.unpack` gives its rows)."""
    path = files.join(run_dir, *file_rel(folder, ref.record_id).split("/"))
    try:
        with files.open_read(path) as f:
            f.seek(ref.offset)
            blob = f.read(ref.length)
    except OSError as err:
        raise _lost(ref, path, str(err)) from err
    if len(blob) != ref.length:
        raise _lost(ref, path, f"{len(blob)} bytes at offset {ref.offset}, {ref.length} expected")
    return ref.size, blob


def read_rows(run_dir: str, folder: str, ref: SpillRef) -> list:
    """The rows `ref` points at; a damaged frame is a `SpillError` naming its file."""
    size, blob = read(run_dir, folder, ref)
    try:
        return packed_rows.unpack((size, blob))
    except Exception as err:  # zstd or pickle refusing the bytes: the file was changed
        path = files.join(run_dir, *file_rel(folder, ref.record_id).split("/"))
        raise _lost(ref, path, f"{type(err).__name__}: {err}") from err


def _lost(ref: SpillRef, path: str, why: str) -> SpillError:
    return SpillError(
        f"the packed rows of record {ref.record_id} cannot be read back from {path} ({why}): "
        "the spill files were changed or removed while the build ran. Rerun with --resume "
        "(nothing in the run's staging folder is kept)"
    )


def clear(run_dir: str, folder: str) -> int:
    """Delete what the run recorded under `folder` (the spill files, killed writers'
    temporaries, the folder once empty) and nothing else; how many recorded paths went."""
    prefix = folder + "/"
    before = ownership.recorded(run_dir)
    chosen = {p for p in before if p == folder or p.startswith(prefix)}
    left = ownership.delete_recorded(run_dir, lambda rel: rel in chosen)
    return len(chosen - left)
