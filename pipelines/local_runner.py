"""The local runner of a build: Beam's `FnApiRunner` with fast-exit workers
(`sdk_worker.FastExitFnApiRunner`) that hands freed memory back after each bundle.

Why: a one-process build runs ~30 fused stages one after the other, and each leaves freed
memory behind in the C heap and Arrow's pool (`heap.py`): at 1,600 blueprint tasks 130-190 MB
of glibc's heap was free but resident when the shard writer started, and the stages between
generation and the writer (dedup, split keys, near-duplicate buckets, keying) sat at 600-640 MB
of RSS in some builds; trimmed after every bundle they stayed at or under 580 (traced builds,
issue 30, benchmarks/README.md). A trim costs a few milliseconds; the local runner runs about
one bundle per fused stage.

What it relies on in Beam: `FnApiRunner._execute_bundle` runs one bundle in the runner's
process (`tests/pipelines/test_local_runner.py` pins it, as `sdk_worker` pins what it uses).
With `--direct_running_mode=multi_processing` the bundles run in the worker processes, which
trim after each bundle themselves (`sdk_worker.trimming`).
"""

from __future__ import annotations

from typing import Any

from trajforge.pipelines import heap
from trajforge.pipelines.sdk_worker import FastExitFnApiRunner


class TrimmingFnApiRunner(FastExitFnApiRunner):
    """`FastExitFnApiRunner` that releases free heap pages after each bundle it runs."""

    def _execute_bundle(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super()._execute_bundle(*args, **kwargs)
        finally:
            heap.release_free_heap()
