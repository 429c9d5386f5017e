"""Garbage-collector settings for build processes (the driver, and each Beam worker process).

A build allocates many short-lived containers (pydantic records, dumped world states, JSON
walks) while holding large long-lived ones (imported modules, cached worlds as plain data).
With CPython's default thresholds (700, 10, 10) a 100-task rollout build ran ~3,100 young and
~18 full collections, and each full collection walked every long-lived container: 3.5 s of
the build's 16 s of CPU (gc callbacks, thread CPU; benchmarks/README.md "Third round"). Larger
thresholds keep collecting young cycles (a rejection's traceback, an asyncio task) but run
full collections about once per 10 million net allocations; freezing what start-up built
(modules, the pipeline graph) takes it out of every later full collection and out of the one
the interpreter runs at exit (~0.9 s of a small build).

Collection timing changes no output: nothing in a stage reads object identities or weak
references to decide a row (`tests/pipelines/test_identical_outputs.py`).
"""

from __future__ import annotations

import gc

#: (young, middle, full): a young collection per 10,000 net allocations (default 700).
BUILD_THRESHOLDS = (10_000, 50, 20)
_PYTHON_DEFAULTS = (700, 10, 10)


def tune_gc() -> bool:
    """Set `BUILD_THRESHOLDS` unless the process already chose its own; True when set."""
    if gc.get_threshold() != _PYTHON_DEFAULTS:
        return False
    gc.set_threshold(*BUILD_THRESHOLDS)
    return True


def freeze_startup() -> None:
    """Move every object alive now into the permanent generation (never scanned again).

    Called once start-up is over (imports done, pipeline built): those objects live until the
    process ends anyway, so scanning them in each full collection is pure cost."""
    gc.freeze()
