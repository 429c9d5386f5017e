"""Local worker processes that end without the interpreter's teardown (issue 14).

A multi-process local build (`runner.local_processes`) runs Beam's SDK harness in N
subprocesses. At the end of the pipeline Beam's `FnApiRunner` closes them one after the
other, waiting for each to exit, and each tore down its interpreter (modules, heap) after its
last bundle, memory the operating system frees anyway: 1.7-2.1 s of wall time with two
workers at 1,600 tasks, 0.11-0.12 s without (`benchmarks/bench_phases.py`; benchmarks/README.md,
"Eighth round").

`python -m trajforge.pipelines.sdk_worker` runs Beam's own worker
(`apache_beam.runners.worker.sdk_worker_main`, its `main` unchanged), then the exit handlers
(`atexit`: temporary files, logging's shutdown, closed client sessions), flushes the standard
streams and leaves with `os._exit`, with the harness's own exit status: 0 when it returned,
1 (and the traceback) when it raised, a `SystemExit`'s code as given. Non-daemon threads are
not joined: when the harness returns it has finished its bundles and torn down its DoFns.
`FastExitFnApiRunner` is Beam's `FnApiRunner` that starts that command instead of Beam's for
`--direct_running_mode=multi_processing`; everything else about the runner is Beam's. The
worker also caps glibc's arenas and hands freed heap back after each bundle (`trimming`,
`allocators.py`): what the launcher's runner does for the bundles it runs itself.

What it relies on in Beam (tests/pipelines/test_sdk_worker.py pins each): the worker command
`FnApiRunner` builds (`<python> -m apache_beam.runners.worker.sdk_worker_main` in an
environment of urn `SUBPROCESS_SDK`), `FnApiRunner.run_via_runner_api`, and
`sdk_worker_main.main(argv)`; in CPython, `atexit._run_exitfuncs`. Only the Beam releases in
`CHECKED_BEAM` get the fast exit; on any other the runner is Beam's own, unchanged, and the
version test fails until someone checks that release and adds it. Measured worth at whole-build
level (two worker processes, 1,600 tasks): benchmarks/README.md, "Issue 31".
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

import apache_beam
from apache_beam.portability import python_urns
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

#: Beam releases (major, minor) this module was checked on: the tests pass and the
#: whole-build benchmark still shows the gain (benchmarks/README.md, "Issue 31"). 2.78: its
#: source diffed against 2.77's: the worker command (`fn_runner.py`, `worker_handlers.py`) and
#: `userstate.get_dofn_specs` with its callers are unchanged; `sdk_worker_main.main(argv)` only
#: sets the metrics flag from the options, `SdkWorker.process_bundle(self, request,
#: instruction_id)` is the same, the harness only answers runner-cancelled work itself (the
#: tests pass on it; the whole-build comparison, `v31-noexit`, was not rerun on 2.78).
CHECKED_BEAM: tuple[tuple[int, int], ...] = ((2, 77), (2, 78))


def beam_checked(version: str = apache_beam.__version__) -> bool:
    """Whether `version` (Beam's by default) is a release listed in `CHECKED_BEAM`."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) in CHECKED_BEAM


#: The command Beam's FnApiRunner starts for each worker under `multi_processing`
#: (`fn_runner.FnApiRunner.run_pipeline`).
BEAM_WORKER_MODULE = "apache_beam.runners.worker.sdk_worker_main"
WORKER_MODULE = "trajforge.pipelines.sdk_worker"


def sdk_worker_command(module: str) -> bytes:
    """A worker command line as the runner's environment payload carries it."""
    return f"{sys.executable} -m {module}".encode()


class FastExitFnApiRunner(FnApiRunner):
    """Beam's FnApiRunner whose subprocess workers run `WORKER_MODULE` (on a checked Beam)."""

    def run_via_runner_api(self, pipeline_proto, options):
        if beam_checked():
            use_fast_exit_workers(pipeline_proto)
        return super().run_via_runner_api(pipeline_proto, options)


def use_fast_exit_workers(pipeline_proto) -> int:
    """Point every environment that runs Beam's subprocess worker at ours; how many did."""
    beam_command, ours = sdk_worker_command(BEAM_WORKER_MODULE), sdk_worker_command(WORKER_MODULE)
    changed = 0
    for environment in pipeline_proto.components.environments.values():
        if environment.urn == python_urns.SUBPROCESS_SDK and environment.payload == beam_command:
            environment.payload = ours
            changed += 1
    return changed


def exit_status(code: object) -> int:
    """The status a `SystemExit(code)` gives the process, as the interpreter decides it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def leave(status: int) -> None:
    """Exit handlers (logging's shutdown among them), flushed streams, then exit with
    `status` at once."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed or broken: nothing to flush
            stream.flush()
    os._exit(status)


def trimming(process_bundle: Callable[..., Any], release: Callable[[], object]):
    """`SdkWorker.process_bundle` that calls `release` (the heap's free pages back,
    `heap.release_free_heap`) when each bundle ends, as the launcher's runner does after each
    bundle it runs itself (`local_runner.py`). Why: a worker process runs the build's fused
    stages one after the other, and each left freed memory resident for the next: at 1,600
    blueprint tasks a worker climbed 369 -> 385 -> 456 -> 506 -> 515 MB over the stages between
    generation and the shard writer, and peaked at 542-551 in them; trimmed after each bundle,
    347-413 and 489 (traced builds, issue 30). A trim costs a few milliseconds; a worker runs
    about one bundle per fused stage."""

    @functools.wraps(process_bundle)
    def process_and_release(self, request, instruction_id):
        try:
            return process_bundle(self, request, instruction_id)
        finally:
            release()

    return process_and_release


def main() -> None:
    # lazy: the launcher imports this module for its checks; only a worker process needs the
    # harness (Beam's worker modules, ~1 s)
    from apache_beam.runners.worker import sdk_worker, sdk_worker_main

    # lazy, as the harness: `heap` loads pyarrow, which the launcher (it imports this module)
    # must load only after `allocators.arrow_pool_env`
    from trajforge.pipelines import allocators, heap

    allocators.limit_arenas()  # before the harness starts its threads (allocators.py says why)
    worker = sdk_worker.SdkWorker
    worker.process_bundle = trimming(worker.process_bundle, heap.release_free_heap)

    try:
        sdk_worker_main.main(sys.argv)
    except SystemExit as stop:
        status = exit_status(stop.code)
    except BaseException:  # noqa: BLE001 - reported as the interpreter would, then status 1
        traceback.print_exc()
        status = 1
    else:
        status = 0
    leave(status)


if __name__ == "__main__":
    main()
