"""Allocator settings for a build's processes (the launcher and its local workers), so that
memory freed by one stage is handed back or reused instead of staying resident.

A build's peak RSS is set by the shard writer on top of what the earlier stages left behind
(issue 30; at 1,600 blueprint tasks the largest worker process started the writer at
482-515 MB and peaked at 600-660 while converting a shard to Arrow). Two allocators held most
of what was free but resident:

- **glibc's arenas** (`limit_arenas`): one per thread by default, up to 8 per core. A build
  process runs ~18 threads (Beam's gRPC and worker threads, the LLM event loop), and memory
  freed in one thread's arena serves no other thread's allocations, so each arena kept its own
  free holes, which `malloc_trim` cannot return where they share pages with live blocks. At
  the writer's start a worker's heap spanned 282-378 MB for 117-136 MB in use; with two
  arenas, 180-208 MB for the same use and 404-420 MB of RSS (traced builds).
- **mimalloc**, Arrow's pool in the pyarrow wheels (`ARROW_POOL_ENV`): it keeps freed pages
  committed for a while and commits its arenas eagerly, so converting rows to Arrow (whose
  builders grow by doubling) left ~3x the array's size resident: 98 MB for a 31 MB column;
  with the two options below, 32 MB. The writer of a 742-row canonical shard added 126 MB
  of RSS, 78 MB with them (same file bytes; ~0.1-0.3 s more CPU per build in purges).

mimalloc reads its options when the library loads, so `arrow_pool_env` must run before this
process imports pyarrow (the CLI's build command does it first), and local worker processes
inherit it through the environment. A library caller that already imported pyarrow keeps
mimalloc's defaults (the build's outputs do not depend on either setting).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import MutableMapping

#: glibc's `mallopt` parameter for the arena cap (malloc.h), and the cap a build sets: the
#: main arena and one for the other threads (1 measured the same; most allocations happen
#: under the GIL, so the threads rarely contend for an arena)
M_ARENA_MAX = -8
MAX_ARENAS = 2

#: mimalloc options (read from the environment when pyarrow loads): hand freed pages back at
#: once, commit arena memory when used rather than when reserved
ARROW_POOL_ENV = {"MIMALLOC_PURGE_DELAY": "0", "MIMALLOC_ARENA_EAGER_COMMIT": "0"}


def arrow_pool_env(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Set `ARROW_POOL_ENV` in `environ` (this process's environment by default) where the
    user has not set the variable; the names set. Effective in a process that imports pyarrow
    after this (and in the processes it starts)."""
    env = os.environ if environ is None else environ
    chosen = [name for name in ARROW_POOL_ENV if name not in env]
    for name in chosen:
        env[name] = ARROW_POOL_ENV[name]
    return chosen


def limit_arenas(arenas: int = MAX_ARENAS) -> bool:
    """Cap glibc's malloc arenas (the module docstring says why); False where there is no
    glibc. Call it before the process starts its threads: arenas made before the call stay,
    and glibc fixes its cap once a ninth arena is made."""
    libc = glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, arenas))


@functools.lru_cache(maxsize=1)
def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (loaded once: a handle, not state)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
