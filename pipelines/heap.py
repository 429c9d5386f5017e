"""Hand the C heap's free pages back to the system between shards (glibc's `malloc_trim`).

Why: the shard writer unpacks a shard's rows (many small strings and dicts), converts them to
Arrow and frees them, shard after shard. glibc keeps what was freed in its heap, and where a
live block sits above the free ones the heap cannot shrink: a 1,600-task retail blueprint build
crept from 700 to 860 MB of RSS over the shards before its largest (`step_prefix`) one and
peaked at 944 MB; trimmed after each shard, 708 MB before it and 874 MB at the peak (issue 30,
benchmarks/README.md). A trim costs a few milliseconds. Elsewhere than glibc (macOS, musl)
this is a no-op: those allocators return memory on their own terms.

Arrow's memory pool (mimalloc in the pyarrow wheels) is released too: it keeps the pages of
freed tables cached, so a shard's 64 MB row group stayed resident after the shard: the RSS left after each shard of a
1,600-task build crept from 496 to 656 MB with an unchanged Python heap; released, it stays at
455-500 MB and the writer stage's peak went 661-686 -> 637 MB (traced builds, issue 30).
"""

from __future__ import annotations

import pyarrow as pa

from trajforge.pipelines import allocators


def release_free_heap() -> bool:
    """Return Arrow's cached and the C heap's free pages to the system; False where there is
    no `malloc_trim` (Arrow's pool is released everywhere)."""
    pa.default_memory_pool().release_unused()
    libc = allocators.glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
