"""Beam's `get_dofn_specs` answered once per DoFn while a build constructs and runs its graph.

Why: Beam asks `userstate.get_dofn_specs(dofn)` (which state and timers a DoFn declares) about
8 times per ParDo of a local build: constructing it, translating it to the runner API, and again
for the DoFn unpickled in its bundle processor (`is_stateful_dofn`, `validate_stateful_dofn`,
the timer specs). Each call walks every attribute of the DoFn and inspects every method's
signature (`inspect.signature`), ~0.4 ms of CPU, the same answer every time: ~400 calls,
~165 ms of a 1-task blueprint build's ~1.8 s fixed cost (issue 30, benchmarks/README.md).

`dofn_specs_once()` replaces it, for the `with` block only, by one that keeps each DoFn's answer
while the DoFn lives (a weak reference: nothing is kept alive by it) and hands out copies of
the two sets, so a caller that changed one could not change another's. The answer depends on
the DoFn's methods and their defaults, which Beam's and ours set when the DoFn is made. A DoFn
that cannot be weakly referenced or hashed is asked every time, as before. Beam's other callers
(`runners/common.py`, `runners/worker/operations.py`, `transforms/core.py`) look the function
up on the module at each call, so they get this one; it is used only on the Beam releases
`sdk_worker.CHECKED_BEAM` lists (tests/pipelines/test_dofn_specs.py pins what it relies on).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

from apache_beam.transforms import userstate

from trajforge.pipelines.sdk_worker import beam_checked


@contextlib.contextmanager
def dofn_specs_once() -> Iterator[None]:
    """Within the block, `userstate.get_dofn_specs` computes each live DoFn's answer once."""
    if not beam_checked():
        yield
        return
    original = userstate.get_dofn_specs
    found: weakref.WeakKeyDictionary[Any, tuple[set, set]] = weakref.WeakKeyDictionary()

    def get_dofn_specs(dofn: Any) -> tuple[set, set]:
        try:
            specs = found.get(dofn)
        except TypeError:  # not hashable or not weakly referable: asked every time
            return original(dofn)
        if specs is None:
            specs = original(dofn)
            found[dofn] = specs
        return set(specs[0]), set(specs[1])

    userstate.get_dofn_specs = get_dofn_specs
    try:
        yield
    finally:
        userstate.get_dofn_specs = original
