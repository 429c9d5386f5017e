"""Local worker processes run trajforge's SDK worker command, which ends without the
interpreter's teardown yet keeps the harness's exit status and runs the exit handlers."""

from __future__ import annotations

import os
import subprocess
import sys

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from trajforge.pipelines.sdk_worker import (
    BEAM_WORKER_MODULE,
    CHECKED_BEAM,
    WORKER_MODULE,
    FastExitFnApiRunner,
    beam_checked,
    exit_status,
    sdk_worker_command,
    use_fast_exit_workers,
)


def test_installed_beam_is_a_release_the_fast_exit_was_checked_on():
    """Fails on a Beam bump: the fast exit then falls back to Beam's own worker (slower, not
    broken). Check the new release (this file, and `bench_build.py --compare` with the exit
    removed: benchmarks/README.md "Issue 31"), then add it to `CHECKED_BEAM`."""
    assert beam_checked(), (
        f"Beam {beam.__version__} is not in sdk_worker.CHECKED_BEAM {CHECKED_BEAM}: check the "
        "fast-exit worker on it (tests/pipelines/test_sdk_worker.py, benchmarks/README.md "
        '"Issue 31") and add it'
    )
    assert beam_checked("2.77.3") and beam_checked("2.78.1")
    assert not beam_checked("2.79.0") and not beam_checked("3.0.0")


def test_the_beam_internals_it_relies_on_are_there():
    """Each private path the fast exit uses, so a Beam release that moves one fails here."""
    import atexit
    import inspect

    from apache_beam.portability import python_urns
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner, fn_runner
    from apache_beam.runners.worker import sdk_worker, sdk_worker_main

    assert callable(getattr(FnApiRunner, "run_via_runner_api", None))
    assert python_urns.SUBPROCESS_SDK
    assert f"-m {BEAM_WORKER_MODULE}" in inspect.getsource(fn_runner)
    assert len(inspect.signature(sdk_worker_main.main).parameters) == 1  # main(argv)
    assert callable(getattr(atexit, "_run_exitfuncs", None))
    # `trimming` wraps it and passes its arguments through by position
    params = list(inspect.signature(sdk_worker.SdkWorker.process_bundle).parameters)
    assert params == ["self", "request", "instruction_id"]


def test_multi_process_workers_run_trajforge_worker_module():
    options = PipelineOptions(["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    with beam.Pipeline(runner=FastExitFnApiRunner(), options=options) as p:
        # a lambda travels by value (this test module is not importable in a worker): the
        # module the worker process was started with
        entry = lambda _: sys.modules["__main__"].__spec__.name  # noqa: E731
        entries = p | beam.Create([1, 2, 3, 4]) | beam.Map(entry) | beam.Distinct()
        assert_that(entries, equal_to([WORKER_MODULE]))


def test_in_memory_runs_are_left_as_they_are():
    with beam.Pipeline(runner=FastExitFnApiRunner()) as p:
        out = p | beam.Create([1, 2]) | beam.Map(lambda x: x * 10)
        assert_that(out, equal_to([10, 20]))


def test_only_beams_subprocess_worker_is_replaced():
    from apache_beam.portability import python_urns
    from apache_beam.portability.api import beam_runner_api_pb2

    proto = beam_runner_api_pb2.Pipeline()
    envs = proto.components.environments
    envs["beam"].urn = python_urns.SUBPROCESS_SDK
    envs["beam"].payload = sdk_worker_command(BEAM_WORKER_MODULE)
    envs["custom"].urn = python_urns.SUBPROCESS_SDK
    envs["custom"].payload = b"/opt/python -m my.worker"
    envs["embedded"].urn = python_urns.EMBEDDED_PYTHON
    assert use_fast_exit_workers(proto) == 1
    assert envs["beam"].payload == sdk_worker_command(WORKER_MODULE)
    assert envs["custom"].payload == b"/opt/python -m my.worker"


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), ("bad config", 1)])
def test_exit_status_is_the_interpreters(code, status):
    assert exit_status(code) == status


def run_worker_module(code: str) -> subprocess.CompletedProcess:
    """`leave` run in a child as the worker runs it, after `code`."""
    script = f"from trajforge.pipelines.sdk_worker import leave\n{code}"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)


def test_leave_runs_exit_handlers_flushes_and_keeps_the_status():
    done = run_worker_module(
        "import atexit, sys\n"
        "atexit.register(lambda: print('handler ran'))\n"
        "sys.stdout.write('buffered')\n"
        "leave(7)\n"
    )
    assert done.returncode == 7
    assert done.stdout == "bufferedhandler ran\n"


def test_a_harness_that_fails_to_start_exits_non_zero():
    """No control endpoint in the environment: Beam's harness raises; the status says so."""
    env = {k: v for k, v in os.environ.items() if "API_SERVICE_DESCRIPTOR" not in k}
    done = subprocess.run(
        [sys.executable, "-m", WORKER_MODULE],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" in done.stderr


def test_each_bundle_releases_the_heap_when_it_ends():
    """The worker's `SdkWorker.process_bundle`, wrapped by `trimming`: the heap is released
    after each bundle, a failed one too, and the bundle's response is returned (issue 30)."""
    import inspect

    from apache_beam.runners.worker import sdk_worker

    from trajforge.pipelines.sdk_worker import trimming

    params = list(inspect.signature(sdk_worker.SdkWorker.process_bundle).parameters)
    assert params == ["self", "request", "instruction_id"]  # what `trimming` passes on
    released = []

    def process(self, request, instruction_id):
        if request == "bad":
            raise RuntimeError(instruction_id)
        return f"done {instruction_id}"

    wrapped = trimming(process, lambda: released.append(1))
    assert wrapped(None, "ok", "b1") == "done b1" and released == [1]
    with pytest.raises(RuntimeError):
        wrapped(None, "bad", "b2")
    assert released == [1, 1]
