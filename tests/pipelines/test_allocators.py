"""Allocator settings of a build's processes (issue 30, `pipelines/allocators.py`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from trajforge.pipelines import allocators


def test_pool_env_sets_what_the_user_did_not():
    env = {"MIMALLOC_PURGE_DELAY": "25", "PATH": "/bin"}
    assert allocators.arrow_pool_env(env) == ["MIMALLOC_ARENA_EAGER_COMMIT"]
    assert env == {
        "MIMALLOC_PURGE_DELAY": "25",  # the user's value stays
        "MIMALLOC_ARENA_EAGER_COMMIT": "0",
        "PATH": "/bin",
    }
    assert allocators.arrow_pool_env(env) == []


@pytest.mark.skipif(allocators.glibc() is None, reason="glibc only")
def test_arenas_are_capped_on_glibc():
    assert allocators.limit_arenas() is True


def test_no_arena_cap_off_linux(off_linux):
    assert allocators.limit_arenas() is False


#: RSS growth (MB) of converting a 24 MB string column to Arrow, in a fresh process
CONVERT = """
import os, sys
if sys.argv[1] == "tuned":
    from trajforge.pipelines import allocators
    allocators.arrow_pool_env()
import pyarrow as pa
if pa.default_memory_pool().backend_name != "mimalloc":
    print("skip"); raise SystemExit
values = [("x" * 1000) + str(i) for i in range(24_000)]
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
before = rss()
array = pa.array(values, type=pa.string())
print(rss() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_pool_env_keeps_a_conversion_near_its_size():
    """The premise: with mimalloc's defaults a conversion leaves several times the array
    resident (its builders grow by doubling and the freed pages stay: +121 MB for this 23 MB
    array, +98 for a 31 MB `step_prefix` prompt column); with `ARROW_POOL_ENV`, +73 and +32."""
    grown = {}
    # without mimalloc's variables (a `trajforge build` run in this process sets them)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    for mode in ("default", "tuned"):
        out = subprocess.run(
            [sys.executable, "-c", CONVERT, mode],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout.split()
        if out == ["skip"]:
            pytest.skip("Arrow's default pool is not mimalloc here")
        grown[mode] = float(out[-1])
    assert grown["tuned"] < 0.75 * grown["default"], grown
